"""Atomic output folders for every command that writes one (``run``, ``compare``, ``sensitivity``).

Files are written into a temporary folder beside the target and moved into place only when
all are written, so a failure leaves nothing half-written and an earlier folder as it was. A
folder holding files the command did not write is refused.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

__all__ = ["ReportError", "check_own_dir", "move_into_place", "write_dir"]


class ReportError(ValueError):
    """The output folder cannot be used (bad input, exit code 2)."""


def move_into_place(tmp: Path, out_dir: Path) -> None:
    """Put the finished folder ``tmp`` in place of ``out_dir`` (an earlier one is replaced)."""
    os.chmod(tmp, 0o755)
    backup = None
    if out_dir.exists():
        backup = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        out_dir.rename(backup)
    tmp.rename(out_dir)
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def check_own_dir(out_dir: Path, own: Collection[str], option: str = "--out") -> None:
    """Refuse ``out_dir`` unless it is absent, empty, or holds only files named in ``own``.

    Raises
    ------
    ReportError
        When ``out_dir`` is a file, or a folder holding other files.
    """
    out_dir = Path(out_dir)
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ReportError(f"{out_dir}: {option} exists and is not a folder")
    foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in own)
    if foreign:
        raise ReportError(
            f"{out_dir}: {option} holds files hwsim did not write ({', '.join(foreign[:3])}); "
            f"choose an empty or new folder"
        )


def write_dir(out_dir: Path, own: Collection[str], write: Callable[[Path], None]) -> list[Path]:
    """Call ``write(tmp)`` to fill a temporary folder, then put it in place of ``out_dir``.

    Parameters
    ----------
    out_dir : Path
        The folder to create or replace (see :func:`check_own_dir`).
    own : collection of str
        The file names this command writes; ``write`` must write only these.
    write : callable
        Writes the files into the folder it is given.

    Returns
    -------
    list of Path
        The files now in ``out_dir``, sorted.
    """
    out_dir = Path(out_dir)
    check_own_dir(out_dir, own)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        write(tmp)
        stray = sorted(p.name for p in tmp.iterdir() if p.name not in own)
        if stray:
            raise RuntimeError(f"wrote files it does not own: {', '.join(stray)}")
        move_into_place(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(out_dir.iterdir())
