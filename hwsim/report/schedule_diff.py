"""What changed between two schedules: per op (unit, time, traffic) and in the run's totals.

:func:`diff_runs` compares two :class:`RunRecord` (a schedule file, or a report folder: its
``summary.json`` and, when present, its ``schedule.json``). Op changes are sorted by their
effect on latency: ops on either critical path first, then by the size of their finish-time
change. Times are simulated ns per op, ms in the totals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chips.units import NS_PER_MS
from hwsim.report.schedule_file import ScheduleFile, ScheduleFileError, load_schedule_file

__all__ = ["Delta", "OpChange", "RunDiff", "RunRecord", "diff_runs", "load_run"]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One side of a diff: its schedule file and/or its ``summary.json`` (a report folder)."""

    source: str
    schedule: ScheduleFile | None = None
    summary: Mapping[str, Any] | None = None


def load_run(path: str | Path) -> RunRecord:
    """A schedule file, or a report folder (``summary.json``, ``schedule.json`` if there).

    Raises
    ------
    ScheduleFileError
        Neither a readable schedule file nor a report folder with a ``summary.json``.
    """
    p = Path(path)
    if not p.is_dir():
        return RunRecord(str(path), schedule=load_schedule_file(p))
    try:
        summary = json.loads((p / "summary.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ScheduleFileError(f"{path}: not a report folder: cannot read summary.json ({exc})") from None
    if not isinstance(summary, dict):
        raise ScheduleFileError(f"{path}/summary.json: not a JSON object")
    sched = load_schedule_file(p / "schedule.json") if (p / "schedule.json").exists() else None
    return RunRecord(str(path), schedule=sched, summary=summary)


@dataclass(frozen=True, slots=True)
class OpChange:
    """One op that ran differently: unit/core, finish time (ns) and DRAM bytes on each side."""

    op: str
    unit_a: str
    unit_b: str
    core_a: int
    core_b: int
    finish_a_ns: float
    finish_b_ns: float
    dram_a_bytes: int
    dram_b_bytes: int
    critical: bool

    @property
    def finish_delta_ns(self) -> float:
        return self.finish_b_ns - self.finish_a_ns

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op, "unit_a": f"{self.unit_a}.{self.core_a}", "unit_b": f"{self.unit_b}.{self.core_b}",
            "finish_a_ns": self.finish_a_ns, "finish_b_ns": self.finish_b_ns,
            "finish_delta_ns": self.finish_delta_ns, "dram_a_bytes": self.dram_a_bytes,
            "dram_b_bytes": self.dram_b_bytes, "dram_delta_bytes": self.dram_b_bytes - self.dram_a_bytes,
            "on_critical_path": self.critical,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Delta:
    """One total on both sides (None: that side does not say)."""

    name: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass(frozen=True, slots=True)
class RunDiff:
    """The diff of two runs: totals, changed ops (latency effect first), ops on one side only."""

    a: str
    b: str
    totals: tuple[Delta, ...]
    changes: tuple[OpChange, ...]
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()
    same_ops: int = field(default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b,
            "totals": {d.name: {"a": d.a, "b": d.b, "delta": d.delta} for d in self.totals},
            "changed_ops": [c.to_json() for c in self.changes], "unchanged_ops": self.same_ops,
            "only_in_a": list(self.only_a), "only_in_b": list(self.only_b),
        }  # fmt: skip


def _totals(run: RunRecord) -> dict[str, float]:
    """latency_ms, energy_mj, dram_bytes and busy_ms.UNIT: from summary.json, else the schedule."""
    out: dict[str, float] = {}
    s, sf = run.summary, run.schedule
    if s is not None:
        for key in ("latency_ms", "energy_mj", "dram_bytes"):
            if isinstance(s.get(key), int | float):
                out[key] = float(s[key])
        units = s.get("units")
        if isinstance(units, dict):
            for name, u in units.items():
                if isinstance(u, dict) and isinstance(u.get("busy_ms"), int | float):
                    out[f"busy_ms.{name}"] = float(u["busy_ms"])
    elif sf is not None:
        out["latency_ms"] = sf.latency_ns / NS_PER_MS
        out["dram_bytes"] = float(sum(o.dram_bytes for o in sf.ops))
        for o in sf.ops:
            key = f"busy_ms.{o.unit}"
            out[key] = out.get(key, 0.0) + (o.finish_ns - o.start_ns) * len(o.cores) / NS_PER_MS
    return out


def _changes(a: ScheduleFile, b: ScheduleFile) -> tuple[tuple[OpChange, ...], int, tuple[str, ...], tuple[str, ...]]:
    ops_b = {o.op: o for o in b.ops}
    names_a = {o.op for o in a.ops}
    changes = []
    same = 0
    for x in a.ops:
        y = ops_b.get(x.op)
        if y is None:
            continue
        if (x.unit, x.core, x.finish_ns, x.dram_bytes) == (y.unit, y.core, y.finish_ns, y.dram_bytes):
            same += 1
            continue
        critical = x.on_critical_path or y.on_critical_path
        changes.append(
            OpChange(x.op, x.unit, y.unit, x.core, y.core, x.finish_ns, y.finish_ns, x.dram_bytes, y.dram_bytes, critical)
        )
    changes.sort(key=lambda c: (not c.critical, -abs(c.finish_delta_ns), c.op))
    only_a = tuple(o.op for o in a.ops if o.op not in ops_b)
    only_b = tuple(o.op for o in b.ops if o.op not in names_a)
    return tuple(changes), same, only_a, only_b


def diff_runs(a: RunRecord, b: RunRecord) -> RunDiff:
    """Compare two runs (see the module docstring); per-op changes need a schedule on both sides."""
    ta, tb = _totals(a), _totals(b)
    names: list[str] = [k for k in ("latency_ms", "energy_mj", "dram_bytes") if k in ta or k in tb]
    names += sorted(k for k in set(ta) | set(tb) if k.startswith("busy_ms."))
    totals = tuple(Delta(n, ta.get(n), tb.get(n)) for n in names)
    if a.schedule is None or b.schedule is None:
        return RunDiff(a.source, b.source, totals, ())
    changes, same, only_a, only_b = _changes(a.schedule, b.schedule)
    return RunDiff(a.source, b.source, totals, changes, only_a, only_b, same)
