"""One typed pipeline: graph -> chip -> costs -> schedule -> trace -> analysis.

Each step is a plain function a test can call alone; :func:`run` chains them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from chips.schema import Chip, load_chip
from cost_models.fusion import FusedPair
from cost_models.table import CostTable, cost_table
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from hwsim.analysis.analyze import Analysis, analyze
from hwsim.analysis.frames import FrameStats, frame_stats
from hwsim.analysis.memory import MemoryUse, fit_memory
from hwsim.policy_check import Deadline, ScheduleChoice, choose_schedule
from hwsim.sim.engine import EngineOptions, Trace, simulate
from scheduler import DEFAULT_POLICY, Schedule

__all__ = ["RunResult", "run", "run_graph"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything one simulation produced."""

    graph: ModelGraph
    chip: Chip
    precision: str
    table: CostTable
    schedule: Schedule
    trace: Trace
    analysis: Analysis
    #: Frames streamed through the schedule (``frames`` of :func:`run_graph`): throughput,
    #: initiation interval, per-frame latency; and the trace of that stream (None: one frame,
    #: which is ``trace`` itself).
    stream: FrameStats | None = None
    stream_trace: Trace | None = None
    #: Ops run fused into the conv/matmul before them (``table`` already has their fused costs).
    fused: tuple[FusedPair, ...] = ()
    #: How the schedule was chosen: candidates checked through the engine, energy mode, deadlines.
    choice: ScheduleChoice | None = None
    #: Memory over ``trace`` per domain, after the spills that keep SRAM domains to capacity
    #: (:func:`hwsim.analysis.memory.fit_memory`; ``table`` and ``trace`` include their cost).
    memory: MemoryUse | None = None


def run_graph(
    graph: ModelGraph,
    chip: Chip,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
    frames: int = 1,
    options: EngineOptions | None = None,
    in_flight: int | None = None,
    fuse_ops: bool = True,
    objective: str = "latency",
    latency_budget_ms: float | None = None,
    deadlines: Sequence[Deadline] = (),
) -> RunResult:
    """Cost, schedule, simulate and analyze an already loaded graph on a chip.

    ``frames > 1`` also streams that many inputs through the schedule (``stream``), at most
    ``in_flight`` at a time if given; ``options`` switch engine features (double buffering, op
    splitting) for what-if runs. ``fuse_ops``
    applies :func:`cost_models.fusion.fuse` to the placed ops between scheduling and simulation.
    The schedule comes from :func:`hwsim.policy_check.choose_schedule`: the default policy is
    checked through the engine against HEFT, the best single unit and affinity-list on graphs of
    up to 5k ops; ``objective="energy"`` minimizes energy within ``latency_budget_ms``;
    ``deadlines`` (from :func:`hwsim.policy_check.resolve_deadlines`) are served first.
    """
    table = cost_table(graph, chip, precision)
    chosen = choose_schedule(
        graph, chip, table, policy, options=options, fuse_ops=fuse_ops, objective=objective,
        latency_budget_ms=latency_budget_ms, deadlines=deadlines,
    )  # fmt: skip
    sched = chosen.schedule
    fit = fit_memory(graph, chip, chosen.table, sched, chosen.trace, options)
    table, trace = fit.table, fit.trace
    stream_trace = simulate(graph, chip, table, sched, options, frames, in_flight) if frames > 1 else None
    stream = frame_stats(chip, stream_trace) if stream_trace is not None else None
    return RunResult(
        graph, chip, precision, table, sched, trace, analyze(graph, chip, trace), stream, stream_trace,
        chosen.fused, chosen.choice, fit.memory,
    )


def run(
    chip: str | Path,
    model: str | Path,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> RunResult:
    """Load ``chip`` (a YAML path or bundled name) and ``model`` (an ONNX path) and run them."""
    spec = load_chip(chip)
    graph = load_onnx(model, input_shapes)
    return run_graph(graph, spec, precision, policy)
