"""Where a run came from: the hwsim version, the chip and model digests and the options used.

Every ``summary.json`` and every schedule file carries these facts, so that a result can be
traced to its inputs. They are deterministic: no time stamps, paths as the user gave them.

>>> from chips.schema import load_chip
>>> len(chip_sha256(load_chip("rk3588")))
64
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chips.schema import Chip

__all__ = ["Provenance", "chip_sha256", "file_sha256", "hwsim_version", "plain_options"]


def hwsim_version() -> str:
    """The installed hwsim's version (the package's own ``__version__`` when not installed)."""
    try:
        return importlib.metadata.version("hwsim")
    except importlib.metadata.PackageNotFoundError:
        from hwsim import __version__

        return __version__


def chip_sha256(chip: Chip) -> str:
    """The sha256 (hex) of the chip as simulated (after ``--set`` and ``--units``): its canonical
    JSON (``model_dump(mode="json")``, keys sorted, no spaces)."""
    text = json.dumps(chip.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def plain_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as JSON values, keys sorted (paths as given, tuples as lists)."""
    return {k: _plain(options[k]) for k in sorted(options)}


@dataclass(frozen=True, slots=True)
class Provenance:
    """hwsim's version, the sha256 of the chip (canonical JSON) and of the model file, the options."""

    hwsim_version: str
    chip_sha256: str
    model_sha256: str
    options: Mapping[str, Any]
    #: The schedule file a replay ran and its sha256 (None: not a replay). Not in ``to_json``: a
    #: replay's ``summary.json`` equals the original's; the report folder's ``schedule.json``
    #: records them (:mod:`hwsim.report.replay`).
    replayed_from: str | None = None
    replayed_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "hwsim_version": self.hwsim_version,
            "chip_sha256": self.chip_sha256,
            "model_sha256": self.model_sha256,
            "options": plain_options(self.options),
        }
