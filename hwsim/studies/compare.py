"""Runs side by side: chips, policies or what-if variants of one model, or earlier report folders.

Everything works on ``summary.json`` content (:meth:`hwsim.report.summary.Summary.to_json`), whether it was just
simulated or read back from a folder, so both kinds of input give the same table, JSON and plot.

>>> rows = [Variant("a", {"chip": "x", "model": "m", "latency_ms": 2.0, "energy_mj": 1.0,
...                       "critical_path_ms": 1.5, "units": {"npu": {"utilization": 0.5}}}),
...         Variant("b", {"chip": "y", "model": "m", "latency_ms": 1.0, "energy_mj": 2.0,
...                       "critical_path_ms": 1.0, "units": {"npu": {"utilization": 0.25}}})]
>>> print(format_table(rows))  # doctest: +NORMALIZE_WHITESPACE
hwsim compare: 2 runs of m
  run  latency ms  speed-up  energy mJ  crit path ms  cross-domain  util npu
  a         2.000     x1.00      1.000         1.500           0 B     50.0%
  b         1.000     x2.00      2.000         1.000           0 B     25.0%
  fastest: b (1.000 ms); lowest energy: a (1.000 mJ)
  speed-up: the first run's latency / this run's (x2.00 = twice as fast as a)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph_ir.files import field_path, finite_number

__all__ = [
    "REQUIRED_FIELDS",
    "CompareError",
    "Variant",
    "compare_json",
    "cross_domain_bytes",
    "format_table",
    "load_summary",
    "unit_names",
]

#: ``summary.json`` fields a run folder must have to be compared (with their JSON types).
REQUIRED_FIELDS: dict[str, type | tuple[type, ...]] = {
    "chip": str,
    "model": str,
    "latency_ms": (int, float),
    "energy_mj": (int, float),
    "critical_path_ms": (int, float),
    "units": dict,
}


class CompareError(ValueError):
    """A run to compare is missing or malformed (bad input, exit code 2)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """One run to compare: its label and its ``summary.json`` content."""

    label: str
    summary: Mapping[str, Any]


def load_summary(folder: str | Path) -> dict[str, Any]:
    """Read and check ``folder/summary.json`` of an earlier ``hwsim run``.

    Raises
    ------
    CompareError
        One line naming the folder or file and the problem: no such folder, no
        summary.json, invalid JSON, a missing or mistyped field.
    """
    folder = Path(folder)
    path = folder / "summary.json"
    if not folder.is_dir():
        raise CompareError(f"{folder}: no such run folder")
    if not path.is_file():
        raise CompareError(f"{folder}: no summary.json (not a folder written by `hwsim run`)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a JSON object")
    for key, kind in REQUIRED_FIELDS.items():
        if key not in data:
            raise CompareError(f"{path}: missing field {key!r}")
        value = data[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CompareError(f"{path}: field {key!r} has the wrong type ({type(value).__name__})")
        if isinstance(value, float) and not math.isfinite(value):
            raise CompareError(f"{path}: field {key!r} is not finite")
    for unit, usage in data["units"].items():
        u = usage.get("utilization") if isinstance(usage, dict) else None
        if not finite_number(u):
            raise CompareError(
                f"{path}: field '{field_path(('units', unit, 'utilization'))}' is missing or not a finite number"
            )
    _check_optional(path, data)
    return data


def _check_optional(path: Path, data: Mapping[str, Any]) -> None:
    """The fields a comparison reads when present: ``cross_domain_bytes``, ``dram_bytes``
    (non-negative integers or null), ``traffic`` (a list of objects with integer ``bytes``),
    ``policy`` and ``precision`` (strings or null)."""
    for key in ("cross_domain_bytes", "dram_bytes"):
        v = data.get(key)
        if v is not None and not _byte_count(v):
            raise CompareError(f"{path}: field {key!r} is not a byte count ({json.dumps(v)[:40]})")
    for key in ("policy", "precision"):
        if not isinstance(data.get(key), (str, type(None))):
            raise CompareError(f"{path}: field {key!r} is not a string")
    traffic = data.get("traffic", [])
    if not isinstance(traffic, list):
        raise CompareError(f"{path}: field 'traffic' is not a list")
    for i, t in enumerate(traffic):
        if not _byte_count(t.get("bytes", 0) if isinstance(t, dict) else None):
            raise CompareError(f"{path}: field 'traffic[{i}].bytes' is not a byte count")


def _byte_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def cross_domain_bytes(summary: Mapping[str, Any]) -> int:
    """Bytes moved between domains (``cross_domain_bytes``, else the sum of ``traffic``)."""
    if summary.get("cross_domain_bytes") is not None:
        return int(summary["cross_domain_bytes"])
    return sum(int(t.get("bytes", 0)) for t in summary.get("traffic", []))


def unit_names(variants: Sequence[Variant]) -> list[str]:
    """Every unit of every run, in order of first appearance."""
    names: dict[str, None] = {}
    for v in variants:
        names.update(dict.fromkeys(v.summary["units"]))
    return list(names)


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def compare_json(variants: Sequence[Variant]) -> dict[str, Any]:
    """The ``compare.json`` content: one row per run, plus which run is fastest and leanest.

    Each row has ``label``, ``chip``, ``model``, ``policy``, ``precision``, ``latency_ms``,
    ``speedup_vs_first`` (first run's latency over this run's), ``energy_mj``,
    ``critical_path_ms``, ``cross_domain_bytes``, ``dram_bytes`` (``None`` if unknown) and
    ``utilization`` (unit -> fraction, for the units the run has).
    """
    if not variants:
        raise CompareError("nothing to compare")
    first = float(variants[0].summary["latency_ms"])
    rows = []
    for v in variants:
        s = v.summary
        lat = float(s["latency_ms"])
        rows.append(
            {
                "label": v.label,
                "chip": s["chip"],
                "model": s["model"],
                "policy": s.get("policy"),
                "precision": s.get("precision"),
                "latency_ms": lat,
                "speedup_vs_first": first / lat if lat > 0 else None,
                "energy_mj": float(s["energy_mj"]),
                "critical_path_ms": float(s["critical_path_ms"]),
                "cross_domain_bytes": cross_domain_bytes(s),
                "dram_bytes": s.get("dram_bytes"),
                "utilization": {u: float(x["utilization"]) for u, x in s["units"].items()},
            }
        )
    fastest = min(rows, key=lambda r: r["latency_ms"])
    leanest = min(rows, key=lambda r: r["energy_mj"])
    return {"runs": rows, "fastest": fastest["label"], "lowest_energy": leanest["label"]}


def format_table(variants: Sequence[Variant]) -> str:
    """The comparison as a text table for the terminal (one row per run)."""
    data = compare_json(variants)
    units = unit_names(variants)
    models = sorted({str(r["model"]) for r in data["runs"]})
    label_w = max(3, *(len(r["label"]) for r in data["runs"]))
    head = f"  {'run':<{label_w}}  latency ms  speed-up  energy mJ  crit path ms  cross-domain"
    head += "".join(f"  {'util ' + u:>{max(6, len(u) + 5)}}" for u in units)
    lines = [f"hwsim compare: {len(variants)} runs of {', '.join(models)}", head]
    for r in data["runs"]:
        speedup = r["speedup_vs_first"]
        speed = f"x{speedup:.2f}" if speedup is not None else "-"
        line = (
            f"  {r['label']:<{label_w}}  {r['latency_ms']:10.3f}  {speed:>8}  {r['energy_mj']:9.3f}"
            f"  {r['critical_path_ms']:12.3f}  {_bytes(r['cross_domain_bytes']):>12}"
        )
        for u in units:
            util = r["utilization"].get(u)
            cell = f"{100 * util:.1f}%" if util is not None else "-"
            line += f"  {cell:>{max(6, len(u) + 5)}}"
        lines.append(line)
    by_label = {r["label"]: r for r in data["runs"]}
    lines.append(
        f"  fastest: {data['fastest']} ({by_label[data['fastest']]['latency_ms']:.3f} ms); "
        f"lowest energy: {data['lowest_energy']} ({by_label[data['lowest_energy']]['energy_mj']:.3f} mJ)"
    )
    lines.append(
        f"  speed-up: the first run's latency / this run's (x2.00 = twice as fast as {data['runs'][0]['label']})"
    )
    return "\n".join(lines)
