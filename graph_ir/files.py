"""How big an input file hwsim reads: a size check before any reader loads a file whole.

Every reader (ONNX models, chip and calibration YAML, task graphs, sweep and quantization
binding files) stats its file first and refuses one over its limit with one line, so that a
2 GB file by mistake (a video, a disk image, a weight dump) is neither read into memory nor
parsed for minutes. The limits are far above any real input: a chip file is a few KiB, a
million-task graph in JSON is about 100 MiB.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeGuard

import yaml

__all__ = [
    "MAX_GRAPH_OPS", "MAX_ONNX_BYTES", "MAX_TEXT_BYTES", "field_path", "finite_number", "oversize", "read_yaml_mapping",
]

#: Largest text input (YAML, JSON, STG) any reader loads, bytes.
MAX_TEXT_BYTES = 256 * 2**20
#: Largest ONNX file: protobuf cannot parse a message of 2 GiB or more (weights beyond that
#: live in external data files, which hwsim does not read).
MAX_ONNX_BYTES = 2**31 - 1
#: Most ops one simulated graph may hold (an ONNX graph's nodes, a workload's instances' ops):
#: a 100k-op run takes about 30 s and 1.6 GiB (docs/fidelity.md), a 1-million-node ONNX ran past
#: 4 minutes and 3.3 GiB still importing, so bigger graphs are refused up front (docs/fuzzing.md).
MAX_GRAPH_OPS = 200_000


def oversize(path: str | Path, limit_bytes: int) -> str | None:
    """Why ``path`` is too big to read (its size against ``limit_bytes``), or None.

    None too when the file cannot be stat'ed: the reader's own open reports that.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     os.truncate(f.name, 3 * 2**20)
    ...     print(oversize(f.name, 2**20))
    ...     print(oversize(f.name, 2**30))
    file is 3.0 MiB, over the 1.0 MiB limit for this kind of file
    None
    """
    try:
        size = Path(path).stat().st_size
    except OSError:
        return None
    if size <= limit_bytes:
        return None
    return f"file is {size / 2**20:.1f} MiB, over the {limit_bytes / 2**20:.1f} MiB limit for this kind of file"


def read_yaml_mapping(path: Path, error: Callable[[str], Exception], expected: str) -> dict[str, object]:
    """Read ``path`` as a YAML mapping, or raise ``error(message)``: one line naming the file and
    what is wrong (over the size limit, unreadable, not UTF-8, not YAML, not a mapping of
    ``expected``). The one reader behind the sweep, workload and quantization binding files.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "w.yaml"
    ...     _ = p.write_bytes(b"\\xff\\xfe")
    ...     try:
    ...         read_yaml_mapping(p, ValueError, "models")
    ...     except ValueError as exc:
    ...         print(str(exc).split(": ", 1)[1])
    not a text file (not UTF-8)
    """
    if (why := oversize(path, MAX_TEXT_BYTES)) is not None:
        raise error(f"{path}: {why}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file (not UTF-8)") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping with {expected}")
    return data


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a user reads it: ``models[0].fps``; a key that is empty or
    not printable on one line (a newline in a YAML key) is quoted, so the error stays one line.

    >>> field_path(("models", 0, "fps")), field_path(()), field_path(("models", ""))
    ('models[0].fps', '(top level)', "models.''")
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        text = text if text.isprintable() and text.strip() == text and text else repr(text)
        out += f".{text}" if out else text
    return out or "(top level)"


def finite_number(x: object) -> TypeGuard[float]:
    """A value read from a file that is a finite int or float (a bool is not a number here).

    >>> finite_number(3), finite_number(2.5), finite_number(True), finite_number(float("nan")), finite_number("1")
    (True, True, False, False, False)
    """
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
