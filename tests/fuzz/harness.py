"""What every reader fuzzer shares: drive ``hwsim`` in process and check how it failed.

A reader given any bytes must either accept them (the command runs, exit 0) or refuse them
the one way the CLI promises for bad input: exit 2, no traceback, stderr whose error line starts
with ``hwsim`` and names the file (a chip's several problems follow it, one indented line each),
and nothing written in the ``--out`` folder. Exit 1 with ``internal error`` is a crash: a bug.

The number of examples per fuzzer is :func:`fuzz_settings`'s ``default`` in the test suite;
``HWSIM_FUZZ_EXAMPLES=N`` (what ``benchmarks/fuzz_readers.py --examples N`` sets) makes it N.
:data:`CALLS` counts the inputs each reader was given, for the benchmark's table.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings

from hwsim.cli import main

__all__ = ["CALLS", "Outcome", "check_refusal_or_run", "fuzz_settings", "run_cli"]

#: Inputs given to each reader in this process (reader name -> count).
CALLS: Counter[str] = Counter()


def fuzz_settings(default: int) -> settings:
    """Hypothesis settings: ``default`` examples, or ``$HWSIM_FUZZ_EXAMPLES`` when set."""
    n = int(os.environ.get("HWSIM_FUZZ_EXAMPLES", "0")) or default
    return settings(
        max_examples=n,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one ``main([...])`` call did."""

    code: int
    stdout: str
    stderr: str


def run_cli(argv: list[str]) -> Outcome:
    """``hwsim.cli.main(argv)`` with stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return Outcome(code, out.getvalue(), err.getvalue())


def check_refusal_or_run(
    reader: str,
    argv: list[str],
    file: Path | tuple[Path, ...],
    out_dir: Path | None = None,
    ok: tuple[int, ...] = (0,),
) -> Outcome:
    """Run ``argv``; assert it ran (an exit code in ``ok``) or refused ``file`` properly (exit 2).

    ``file`` may be several files (a chip and its calibration): the error names one of them.

    Raises
    ------
    AssertionError
        A traceback, an internal error, an exit code other than ``ok`` or 2, an error line that
        does not start with ``hwsim`` or does not name ``file``, or files left in ``out_dir``
        after a refusal.
    """
    CALLS[reader] += 1
    res = run_cli(argv)
    assert "Traceback" not in res.stderr, res.stderr
    assert "internal error" not in res.stderr, res.stderr
    if res.code in ok:
        return res
    assert res.code == 2, f"exit {res.code}: {res.stderr}"
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    errors = [
        k
        for k, ln in enumerate(lines)
        if not ln.startswith(("hwsim: WARNING", "hwsim: INFO", "  "))
    ]
    assert len(errors) == 1, f"expected one error line, got: {res.stderr!r}"
    line = lines[errors[0]]
    assert line.startswith("hwsim"), line
    files = file if isinstance(file, tuple) else (file,)
    assert any(f.name in line for f in files), f"error does not name {files}: {line}"
    assert all(ln.startswith("  ") for ln in lines[errors[0] + 1 :]), res.stderr
    if out_dir is not None:
        assert not out_dir.exists() or not any(out_dir.iterdir()), f"{out_dir} written on a refusal"
    return res


# --- strategies shared by the structured readers -------------------------------------------

from typing import Any

from hypothesis import strategies as st

#: Numbers at the edges, drawn more often than ``st.floats()`` and ``st.integers()`` draw them: a
#: subnormal that underflows a rate to zero, a float whose product overflows, counts of lanes
#: (cores, channels, instances) that make a run take hours.
EXTREMES = (5e-324, 1e-320, 1e-10, 1e300, 1.7976931348623157e308, -0.0, 10**6, 10**12, 2**63)

#: Any value JSON or YAML can hold (NaN and infinities included: YAML reads ``.nan``, JSON ``NaN``).
VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(EXTREMES) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in ``data`` (dict keys and list indices), the empty path first."""
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for k, v in enumerate(data):
            out += _paths(v, (*prefix, k))
    return out


@st.composite
def mutated(draw: st.DrawFn, data: Any) -> Any:
    """``data`` (plain JSON/YAML data) with one to three edits at random key paths: a value
    replaced by any value, a key deleted, or an unknown key added."""
    import copy

    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        if not path:
            data = draw(VALUES)
            continue
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(VALUES)
        else:
            parent.insert(path[-1], draw(VALUES))
    return data
