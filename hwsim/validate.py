"""Predicted against measured: run a model with onnxruntime on this machine and compare with
hwsim's CPU prediction, per model, per node and per op type.

The prediction is hwsim's cost model for the chip's CPU unit, restricted to ``threads`` cores,
at the model's own precision, summed over the nodes the way onnxruntime's sequential executor
runs them. Which nodes onnxruntime fuses is read from the structure of its optimized graph
(profiled node names mapped back with :func:`~hwsim.measure.attribute_nodes`; no timing enters
the prediction): a node that still runs as its own kernel costs its full estimate, per-op
overhead included; a node fused into another (Conv+BatchNormalization+Relu, MatMul+Add, the
Gelu and LayerNormalization patterns) costs its roofline time without overhead. Kernels
onnxruntime inserts (NCHWc reorders, reshapes around Gemm) are not predicted; their measured
time is reported separately.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chips.schema import Chip, CpuUnit, chip_from_dict
from cost_models.base import OpCost
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph
from hwsim.fidelity_errors import ValidateError
from hwsim.measure import (
    Timing,
    attribute_nodes,
    load_with_random_weights,
    make_session,
    profile_nodes,
    random_inputs,
    time_session,
)

__all__ = [
    "NodeResult",
    "OpTypeRow",
    "ValidateError",
    "Validation",
    "append_record",
    "cpu_chip",
    "format_validation",
    "op_type_rows",
    "predict_nodes",
    "record",
    "repredict",
    "validate_model",
]


@dataclass(frozen=True, slots=True)
class NodeResult:
    """One node of the model: prediction and measurement in nanoseconds.

    ``fused`` nodes run inside another node's kernel; their ``measured_ns`` is 0 and their
    prediction has no overhead. ``roof_ns`` is the node's roofline time at efficiency 1 and
    no overhead (what calibration divides by).
    """

    name: str
    op_type: str
    fused: bool
    predicted_ns: float
    measured_ns: float
    roof_ns: float


@dataclass(frozen=True, slots=True)
class Validation:
    """One model on one chip: whole-model and per-node prediction against measurement."""

    model: str
    chip: str
    threads: int
    opt: str
    measured: Timing
    nodes: tuple[NodeResult, ...]
    inserted_ns: float
    inserted_ops: tuple[str, ...]
    profiled_total_ns: float

    @property
    def predicted_ns(self) -> float:
        return sum(n.predicted_ns for n in self.nodes)

    @property
    def error(self) -> float:
        """Signed relative error of the whole-model prediction (+0.10: 10 % too slow)."""
        return self.predicted_ns / self.measured.median_ns - 1.0


@dataclass(frozen=True, slots=True)
class OpTypeRow:
    """Per op type: how many kernels, summed prediction and measurement (ns), median node error."""

    op_type: str
    nodes: int
    predicted_ns: float
    measured_ns: float
    median_abs_error: float


def cpu_chip(chip: Chip, threads: int, unit: str | None = None) -> Chip:
    """``chip`` reduced to one CPU unit with ``threads`` cores (the first CPU unless ``unit``)."""
    cpus = [u for u in chip.units if isinstance(u, CpuUnit) and (unit is None or u.name == unit)]
    if not cpus:
        want = f"a CPU unit named {unit!r}" if unit else "a CPU unit"
        raise ValidateError(f"chip {chip.name!r} has no {want} (units: {', '.join(u.name for u in chip.units)})")
    cpu = cpus[0]
    if threads < 1:
        raise ValidateError(f"--threads {threads}: must be at least 1")
    data = chip.model_dump()
    u = next(x for x in data["units"] if x["name"] == cpu.name)
    u["cores"] = threads
    data["units"] = [u]
    data["domains"] = [d for d in data["domains"] if d["name"] == cpu.domain]
    data["host_domain"] = cpu.domain
    data["links"] = []
    data["affinity"] = {}
    data["default_affinity"] = [cpu.name]
    return chip_from_dict(data, source=f"{chip.name} (CPU {cpu.name}, {threads} threads)")


def _roofline_chip(chip: Chip, op_types: Iterable[str]) -> Chip:
    """The CPU chip with efficiency 1 for every op type and no per-op overhead."""
    data = chip.model_dump()
    u = data["units"][0]
    u["efficiency"] = {t: 1.0 for t in op_types}
    u["op_overhead_ns"] = 0.0
    return chip_from_dict(data, source=f"{chip.name} (roofline)")


def _time(c: OpCost, threads: int, with_overhead: bool) -> float:
    roof = max(c.compute_ns, c.memory_ns) / threads
    return roof + (c.overhead_ns if with_overhead else 0.0)


def predict_nodes(graph: ModelGraph, chip: Chip, threads: int, fused: set[str]) -> dict[str, tuple[float, float]]:
    """``{node: (predicted ns, roofline ns)}`` on the one-CPU ``chip`` (see :func:`cpu_chip`).

    With ``threads > 1`` each op's roofline time is divided by ``threads`` (an ideal intra-op
    split); the per-op overhead is not. Nodes in ``fused`` cost their roofline time only; view
    ops (free in hwsim) that onnxruntime runs as kernels of their own cost the unit's overhead.
    """
    unit = chip.units[0].name
    table = cost_table(graph, chip, "model")
    roof_table = cost_table(graph, _roofline_chip(chip, {op.op_type for op in graph.ops()}), "model")
    overhead = chip.units[0].op_overhead_ns
    out = {}
    for op in graph.ops():
        c = table.costs[op.name][unit]
        r = roof_table.costs[op.name][unit]
        own = op.name not in fused
        # hwsim's views are free; onnxruntime still dispatches a kernel for each one that runs
        view = overhead if own and op.category == "layout" else 0.0
        out[op.name] = (_time(c, threads, own) + view, _time(r, threads, False))
    return out


def validate_model(
    chip: Chip,
    model_path: str | Path,
    threads: int = 1,
    opt: str = "all",
    runs: int = 20,
    min_total_s: float = 1.0,
    shapes: Mapping[str, Sequence[int]] | None = None,
    seed: int = 0,
) -> Validation:
    """Measure ``model_path`` with onnxruntime and predict it on ``chip``'s CPU.

    Raises
    ------
    ValidateError, MeasureError, ModelError
        For a chip without a CPU, a model onnxruntime cannot run, a model hwsim cannot read.
    """
    from graph_ir.onnx_import import load_onnx

    graph = load_onnx(model_path, shapes)
    one = cpu_chip(chip, threads)
    model = load_with_random_weights(model_path, seed)
    feeds = random_inputs(model, seed, shapes)
    sess = make_session(model, threads, opt)
    measured = time_session(sess, feeds, runs=runs, warmup=3, min_total_s=min_total_s)
    prof = profile_nodes(model, feeds, threads, runs=max(5, runs // 2), opt=opt)
    where = attribute_nodes(model, {p: kind for p, (kind, _) in prof.items()})
    meas: dict[str, float] = {}
    inserted = 0.0
    inserted_ops: set[str] = set()
    for p, (kind, ns) in prof.items():
        hit = where[p]
        if hit is None:
            inserted += ns
            inserted_ops.add(kind)
        else:
            meas[hit] = meas.get(hit, 0.0) + ns
    fused = {op.name for op in graph.ops() if op.name not in meas}
    pred = predict_nodes(graph, one, threads, fused)
    nodes = tuple(
        NodeResult(op.name, op.op_type, op.name in fused, pred[op.name][0], meas.get(op.name, 0.0), pred[op.name][1])
        for op in graph.ops()
    )
    return Validation(
        model=graph.name, chip=chip.name, threads=threads, opt=opt, measured=measured, nodes=nodes,
        inserted_ns=inserted, inserted_ops=tuple(sorted(inserted_ops)),
        profiled_total_ns=sum(ns for _, ns in prof.values()),
    )  # fmt: skip


def op_type_rows(validations: Iterable[Validation], min_ns: float = 0.0) -> list[OpTypeRow]:
    """Per op type over the kernels that ran on their own (fused nodes excluded), slowest first.

    ``min_ns`` drops nodes measured faster than that from the median error (timer noise).
    """
    by: dict[str, list[NodeResult]] = {}
    for v in validations:
        for n in v.nodes:
            if not n.fused and n.measured_ns > 0:
                by.setdefault(n.op_type, []).append(n)
    rows = []
    for t, ns in by.items():
        errs = [abs(n.predicted_ns / n.measured_ns - 1) for n in ns if n.measured_ns >= min_ns] or [
            abs(n.predicted_ns / n.measured_ns - 1) for n in ns
        ]
        rows.append(OpTypeRow(t, len(ns), sum(n.predicted_ns for n in ns), sum(n.measured_ns for n in ns),
                              statistics.median(errs)))  # fmt: skip
    return sorted(rows, key=lambda r: -r.measured_ns)


def format_validation(vs: Sequence[Validation]) -> str:
    """Terminal text: one line per model, then the per-op-type table."""
    lines = [f"{'model':<16} {'predicted':>11} {'measured':>11} {'spread':>7} {'error':>7}  fused  inserted kernels"]
    for v in vs:
        nf = sum(n.fused for n in v.nodes)
        ins = f"{v.inserted_ns / 1e6:.3f} ms ({', '.join(v.inserted_ops)})" if v.inserted_ops else "-"
        lines.append(
            f"{v.model:<16} {v.predicted_ns / 1e6:>8.3f} ms {v.measured.median_ns / 1e6:>8.3f} ms "
            f"{v.measured.spread:>6.1%} {v.error:>+7.1%}  {nf:>5}  {ins}"
        )
    lines.append("")
    lines.append(f"{'op type':<24} {'kernels':>7} {'predicted':>11} {'measured':>11} {'median |err|':>12}")
    for r in op_type_rows(vs):
        lines.append(f"{r.op_type:<24} {r.nodes:>7} {r.predicted_ns / 1e6:>8.3f} ms {r.measured_ns / 1e6:>8.3f} ms "
                     f"{r.median_abs_error:>12.1%}")  # fmt: skip
    return "\n".join(lines)


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record(v: Validation, model_path: str | Path, chip: Chip, chip_path: str | Path | None) -> dict[str, Any]:
    """The JSON record of one validation (model, chip, fingerprint, prediction, measurement)."""
    from hwsim.fingerprint import read_fingerprint

    fp = read_fingerprint(Path(chip_path)) if chip_path is not None and Path(chip_path).is_file() else None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": {"name": v.model, "path": str(model_path), "sha256": _sha256(model_path)},
        "chip": {"name": chip.name, "path": str(chip_path) if chip_path else None, "calibration": chip.calibration,
                 "unit": chip.model_dump(mode="json")["units"][0] if len(chip.units) == 1 else None},
        "fingerprint": fp,
        "threads": v.threads,
        "opt": v.opt,
        "predicted_ns": v.predicted_ns,
        "measured": {"median_ns": v.measured.median_ns, "spread": v.measured.spread, "samples_ns": list(v.measured.samples_ns)},
        "error": v.error,
        "inserted_ns": v.inserted_ns,
        "profiled_total_ns": v.profiled_total_ns,
        "nodes": [[n.name, n.op_type, n.fused, n.predicted_ns, n.measured_ns, n.roof_ns] for n in v.nodes],
    }  # fmt: skip


def append_record(path: Path, rec: Mapping[str, Any]) -> None:
    """Append one JSON line to ``path`` (created with its folder if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")


def repredict(v: Validation, chip: Chip, model_path: str | Path,
              shapes: Mapping[str, Sequence[int]] | None = None) -> Validation:  # fmt: skip
    """``v`` with its predictions redone on ``chip`` (same measurement, same fused nodes)."""
    from dataclasses import replace

    from graph_ir.onnx_import import load_onnx

    graph = load_onnx(model_path, shapes)
    fused = {n.name for n in v.nodes if n.fused}
    pred = predict_nodes(graph, cpu_chip(chip, v.threads), v.threads, fused)
    nodes = tuple(replace(n, predicted_ns=pred[n.name][0], roof_ns=pred[n.name][1]) for n in v.nodes)
    return replace(v, chip=chip.name, nodes=nodes)
