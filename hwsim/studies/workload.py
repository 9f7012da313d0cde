"""Several models on one chip at once, each at its own rate and criticality (``hwsim run CHIP --workload W.yaml``).

A workload file lists models, each with a rate (``fps`` or ``period_ms``), a criticality
(``high``, ``medium``, ``low`` or an integer, higher served first), an optional ``deadline_ms``
(relative to each instance's release) and a start ``offset_ms``, over a window (``window_ms``).
Each model is scheduled alone (:func:`hwsim.pipeline.run_graph`, the chip's default policy);
then every instance ``(model, k)``, released at ``offset + k * period`` inside the window, runs
in ONE engine run where they share the units, DMA channels and memory bandwidth: the graphs are
merged, each instance's ops and tensors renamed ``MODEL#K/name``, its inputs arriving at its
release (:class:`hwsim.sim.frames.Release`), and a free core serves, among ready ops, the one
of the most critical instance, then the earliest released (:class:`hwsim.sim.frames.Prioritized`).
Cores are not preempted: an op runs to its end once started.

Per model: latency p50 / p99 over its instances, the deadline misses (which instances), the
achieved rate (instances completed inside the window over the window).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chips.schema import Chip
from chips.units import PS_PER_MS
from cost_models.table import CostTable
from graph_ir import files
from graph_ir.files import field_path, read_yaml_mapping
from graph_ir.ir import ModelGraph, Op, Tensor
from hwsim.pipeline import RunResult
from hwsim.sim.engine import EngineOptions, Trace, simulate
from hwsim.sim.frames import Release
from scheduler import DEFAULT_POLICY
from scheduler.schedule import Placement, Schedule, Transfer

__all__ = [
    "CRITICALITY_LEVELS",
    "InstanceResult",
    "ModelResult",
    "Workload",
    "WorkloadError",
    "WorkloadModel",
    "WorkloadRun",
    "check_size",
    "instance_tag",
    "load_workload",
    "run_workload",
]

#: Named criticality levels (an integer may be given instead; higher is served first).
CRITICALITY_LEVELS: Mapping[str, int] = {"low": 0, "medium": 1, "high": 2}


class WorkloadError(ValueError):
    """A workload file is missing, malformed or names a model file that is not there (exit 2)."""


class WorkloadModel(BaseModel):
    """One model of a workload: what runs, how often, how critical, by when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[^#/\s]+$", description="Name in the report (no '#', '/', space).")
    model: str = Field(min_length=1, description="ONNX file, relative to the workload file's folder.")
    fps: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    period_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    criticality: Literal["low", "medium", "high"] | int = "low"
    deadline_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    offset_ms: float = Field(default=0.0, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_rate(self) -> WorkloadModel:
        if (self.fps is None) == (self.period_ms is None):
            raise ValueError("give exactly one of fps and period_ms")
        if not math.isfinite(self.period):  # fps 5e-324: its period, 1000 / fps, is infinite
            raise ValueError(f"fps {self.fps:g} is a period of 1000 / fps ms, past the largest float")
        return self

    @property
    def period(self) -> float:
        """Time between releases, ms."""
        return self.period_ms if self.period_ms is not None else 1000.0 / float(self.fps or 1.0)

    @property
    def level(self) -> int:
        """Criticality as an integer (higher is served first)."""
        c = self.criticality
        return CRITICALITY_LEVELS[c] if isinstance(c, str) else c


class Workload(BaseModel):
    """A workload file: the models and the time window they are released in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    window_ms: float = Field(gt=0, allow_inf_nan=False, description="Instances are released in [0, window_ms).")
    models: tuple[WorkloadModel, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> Workload:
        names = [m.name for m in self.models]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ValueError(f"model name {dup!r} given twice")
        return self



def load_workload(path: str | Path) -> Workload:
    """Read and check a workload file; model paths come back resolved against its folder.

    Raises
    ------
    WorkloadError
        One line: the file, the key and what is wrong with it (an unknown key, a rate <= 0, an
        empty model list, a model file that is not there, a model released no time in the window,
        more instances than one graph holds).
    """
    path = Path(path)
    data = read_yaml_mapping(path, WorkloadError, "window_ms and models")
    try:
        spec = Workload.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if p not in ("int", "literal['low','medium','high']"))
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            fields = Workload.model_fields if len(loc) == 1 else WorkloadModel.model_fields
            msg = f"unknown key (fields: {', '.join(fields)})"
        raise WorkloadError(f"{path}: {field_path(loc)}: {msg}") from None
    models = []
    for i, m in enumerate(spec.models):
        file = Path(m.model) if Path(m.model).is_absolute() else path.parent / m.model
        if not file.is_file():
            raise WorkloadError(f"{path}: models[{i}].model: no such file {file}")
        models.append(m.model_copy(update={"model": str(file)}))
    _check_instances(spec, str(path))
    return spec.model_copy(update={"models": tuple(models)})


def _check_instances(spec: Workload, source: str) -> None:
    """Refuse a model released no time in the window, and more instances than one graph holds
    (each has at least one op: :data:`graph_ir.files.MAX_GRAPH_OPS`)."""
    total = 0
    for i, m in enumerate(spec.models):
        if m.offset_ms >= spec.window_ms:
            raise WorkloadError(
                f"{source}: models[{i}].offset_ms: {m.offset_ms:g} is not before window_ms {spec.window_ms:g}: "
                "the model would never run"
            )
        total += _instance_count(m, spec.window_ms)
        if total > files.MAX_GRAPH_OPS:
            raise WorkloadError(
                f"{source}: window_ms: {spec.window_ms:g} ms releases over {files.MAX_GRAPH_OPS:,} instances "
                f"(models[{i}] and before), over the limit of ops one graph holds"
            )


def check_size(spec: Workload, ops_per_model: Sequence[int], source: str) -> None:
    """Refuse a workload whose instances hold more ops than :data:`graph_ir.files.MAX_GRAPH_OPS`.

    Raises
    ------
    WorkloadError
        One line naming ``source`` and the total.
    """
    total = sum(n * len(_releases_ms(m, spec.window_ms)) for m, n in zip(spec.models, ops_per_model, strict=True))
    if total > files.MAX_GRAPH_OPS:
        raise WorkloadError(
            f"{source}: window_ms: the instances of {spec.window_ms:g} ms hold {total:,} ops, over the limit "
            f"of {files.MAX_GRAPH_OPS:,} one graph holds"
        )


def instance_tag(model: str, k: int) -> str:
    """The prefix of instance ``k`` of ``model``'s ops and tensors in the merged graph.

    >>> instance_tag("kws", 3)
    'kws#3/'
    """
    return f"{model}#{k}/"


def _instance_count(m: WorkloadModel, window_ms: float) -> int:
    """How many instances of ``m`` are released inside ``[0, window_ms)``: one at ``offset_ms``
    whenever that is inside, however short the window (a window of 1e-10 ms released none, and
    the run failed); a release a rounding error short of the window's end is not counted. Past
    the ops one graph holds, one more than that (a period of 1e-320 ms made the count infinite).

    >>> m = WorkloadModel(name="m", model="m.onnx", period_ms=10.0)
    >>> _instance_count(m, 100.0), _instance_count(m, 100.5), _instance_count(m, 1e-10)
    (10, 11, 1)
    >>> _instance_count(m.model_copy(update={"period_ms": 1e-320}), 100.0) == files.MAX_GRAPH_OPS + 1
    True
    """
    if m.offset_ms >= window_ms:
        return 0
    periods = (window_ms - m.offset_ms) / m.period
    if periods > files.MAX_GRAPH_OPS:
        return files.MAX_GRAPH_OPS + 1
    return max(1, math.ceil(periods - 1e-9))


def _releases_ms(m: WorkloadModel, window_ms: float) -> list[float]:
    """Release times of ``m``'s instances inside ``[0, window_ms)``, ms."""
    return [m.offset_ms + k * m.period for k in range(_instance_count(m, window_ms))]


@dataclass(frozen=True, slots=True)
class InstanceResult:
    """One instance of a model: when it was released, when it finished, ms."""

    model: str
    instance: int
    release_ms: float
    finish_ms: float
    deadline_ms: float | None

    @property
    def latency_ms(self) -> float:
        return self.finish_ms - self.release_ms

    @property
    def missed(self) -> bool:
        return self.deadline_ms is not None and self.latency_ms > self.deadline_ms


@dataclass(frozen=True, slots=True)
class ModelResult:
    """What one model of the workload got: its instances and their statistics."""

    name: str
    criticality: int
    period_ms: float
    solo_latency_ms: float
    instances: tuple[InstanceResult, ...]
    window_ms: float

    @property
    def latencies_ms(self) -> list[float]:
        return [i.latency_ms for i in self.instances]

    def percentile_ms(self, q: float) -> float:
        """Latency percentile ``q`` (0-100) over the instances, ms (0 with none)."""
        lat = self.latencies_ms
        return float(np.percentile(lat, q)) if lat else 0.0

    @property
    def misses(self) -> tuple[int, ...]:
        """Instances that missed their deadline."""
        return tuple(i.instance for i in self.instances if i.missed)

    @property
    def achieved_fps(self) -> float:
        """Instances completed inside the window per second of window."""
        done = sum(1 for i in self.instances if i.finish_ms <= self.window_ms)
        return done / (self.window_ms / 1000.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "criticality": self.criticality,
            "period_ms": self.period_ms,
            "target_fps": 1000.0 / self.period_ms,
            "instances": len(self.instances),
            "solo_latency_ms": self.solo_latency_ms,
            "latency_p50_ms": self.percentile_ms(50),
            "latency_p99_ms": self.percentile_ms(99),
            "latency_max_ms": max(self.latencies_ms, default=0.0),
            "deadline_ms": self.instances[0].deadline_ms if self.instances else None,
            "deadline_misses": len(self.misses),
            "missed_instances": list(self.misses),
            "achieved_fps": self.achieved_fps,
        }


@dataclass(frozen=True, slots=True)
class WorkloadRun:
    """A workload simulated: the merged run (for the trace) and each model's result."""

    window_ms: float
    models: tuple[ModelResult, ...]
    merged: RunResult

    def to_json(self) -> dict[str, Any]:
        """The ``workload`` section of ``summary.json``."""
        return {
            "window_ms": self.window_ms,
            "makespan_ms": self.merged.trace.makespan_ps / PS_PER_MS,
            "instances": sum(len(m.instances) for m in self.models),
            "models": {m.name: m.to_json() for m in self.models},
        }


def _rename_tensor(t: Tensor, tag: str) -> Tensor:
    return replace(t, name=tag + t.name)


def _rename_op(op: Op, tag: str) -> Op:
    return replace(
        op, name=tag + op.name, inputs=tuple(_rename_tensor(t, tag) for t in op.inputs),
        outputs=tuple(_rename_tensor(t, tag) for t in op.outputs),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Merged:
    graph: ModelGraph
    table: CostTable
    schedule: Schedule


def _merge(parts: Sequence[tuple[str, RunResult]], name: str) -> _Merged:
    """One graph, cost table and schedule holding every instance (``tag``, solo run) renamed by its tag."""
    g: nx.DiGraph = nx.DiGraph()
    inputs: list[Tensor] = []
    outputs: list[Tensor] = []
    producer: dict[str, str] = {}
    order: list[str] = []
    costs: dict[str, Any] = {}
    dtypes: dict[str, str] = {}
    placements: dict[str, Placement] = {}
    core_order: dict[tuple[str, int], list[str]] = {}
    transfers: list[Transfer] = []
    for tag, r in parts:
        for n in r.graph.order:
            g.add_node(tag + n, op=_rename_op(r.graph.op(n), tag))
        for a, b, d in r.graph.g.edges(data=True):
            g.add_edge(tag + a, tag + b, tensors=tuple(tag + t for t in d.get("tensors", ())))
        inputs += [_rename_tensor(t, tag) for t in r.graph.inputs]
        outputs += [_rename_tensor(t, tag) for t in r.graph.outputs]
        producer.update({tag + t: tag + op for t, op in r.graph.producer.items()})
        order += [tag + n for n in r.graph.order]
        costs.update({tag + n: c for n, c in r.table.costs.items()})
        dtypes.update({tag + n: d for n, d in r.table.dtypes.items()})
        placements.update({tag + n: replace(p, op=tag + n) for n, p in r.schedule.placements.items()})
        for core, ops in r.schedule.core_order.items():
            core_order.setdefault(core, []).extend(tag + n for n in ops)
        transfers += [
            replace(x, tensor=tag + x.tensor, producer=tag + x.producer if x.producer else "",
                    consumers=tuple(tag + c if c else "" for c in x.consumers))
            for x in r.schedule.transfers
        ]  # fmt: skip
    graph = ModelGraph(name, g, tuple(inputs), tuple(outputs), producer, tuple(order))
    precision = parts[0][1].table.precision
    table = CostTable(precision, costs, dtypes)
    schedule = Schedule(
        "workload", placements, {k: tuple(v) for k, v in core_order.items()}, tuple(transfers), 0.0
    )
    return _Merged(graph, table, schedule)


def _finish_ps(trace: Trace) -> dict[str, int]:
    """The end of each instance's last op or transfer, by tag, ps."""
    finish: dict[str, int] = {}
    for name, end in [(r.op, r.end_ps) for r in trace.ops] + [(x.tensor, x.end_ps) for x in trace.transfers]:
        tag = name[: name.index("/") + 1]
        finish[tag] = max(finish.get(tag, 0), end)
    return finish


def _solo_runs(
    spec: Workload, chip: Chip, precision: str, policy: str, options: EngineOptions | None, load: Any,
) -> list[RunResult]:  # fmt: skip
    """Each model scheduled and simulated alone."""
    from hwsim.pipeline import run_graph

    return [run_graph(load(m.model), chip, precision, policy, options=options) for m in spec.models]


def run_workload(
    spec: Workload, chip: Chip, precision: str = "int8", options: EngineOptions | None = None,
    load: Any = None, policy: str = DEFAULT_POLICY, source: str = "workload",
) -> WorkloadRun:  # fmt: skip
    """Schedule each model alone, then run every instance in the window through one engine run.

    ``load`` reads a model file into a :class:`~graph_ir.ir.ModelGraph` (default
    :func:`graph_ir.onnx_import.load_onnx`); each model is scheduled by ``policy``. Instances are served by criticality (highest
    first), then release time, then the model's place in the file. ``source`` (the file) names
    the workload in an error.

    Returns
    -------
    WorkloadRun
        Per model its instances (release and finish, ms) and statistics; the merged run.
    """
    from graph_ir.onnx_import import load_onnx
    from hwsim.analysis.analyze import analyze

    solo = _solo_runs(spec, chip, precision, policy, options, load or load_onnx)
    check_size(spec, [len(r.graph.order) for r in solo], source)
    instances = [
        (-m.level, rel, i, k)
        for i, m in enumerate(spec.models)
        for k, rel in enumerate(_releases_ms(m, spec.window_ms))
    ]
    instances.sort()
    parts = [(instance_tag(spec.models[i].name, k), solo[i]) for _, _, i, k in instances]
    merged = _merge(parts, "+".join(m.name for m in spec.models))
    releases = [
        Release(
            tuple(tag + n for n in r.graph.order), tuple(tag + t.name for t in r.graph.inputs),
            round(rel * PS_PER_MS),
        )
        for (tag, r), (_, rel, _, _) in zip(parts, instances, strict=True)
    ]  # fmt: skip
    trace = simulate(merged.graph, chip, merged.table, merged.schedule, options, releases=releases)
    finish = _finish_ps(trace)
    results = []
    for i, m in enumerate(spec.models):
        mine = sorted((k, rel) for _, rel, j, k in instances if j == i)
        insts = tuple(
            InstanceResult(m.name, k, rel, finish.get(instance_tag(m.name, k), 0) / PS_PER_MS, m.deadline_ms)
            for k, rel in mine
        )
        solo_ms = solo[i].trace.makespan_ps / PS_PER_MS
        results.append(ModelResult(m.name, m.level, m.period, solo_ms, insts, spec.window_ms))
    run = RunResult(
        merged.graph, chip, solo[0].precision, merged.table, merged.schedule, trace,
        analyze(merged.graph, chip, trace),
    )  # fmt: skip
    return WorkloadRun(spec.window_ms, tuple(results), run)
