"""One typed pipeline: graph -> chip -> costs -> schedule -> trace -> analysis.

Each step is a plain function a test can call alone; :func:`run` chains them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from chips.schema import Chip, load_chip
from cost_models.fusion import FusedPair, fuse
from cost_models.table import CostTable, cost_table
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from hwsim.analysis import Analysis, analyze
from hwsim.engine import EngineOptions, Trace, simulate
from hwsim.pipelining import FrameStats, frame_stats
from scheduler import Schedule, schedule

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


def run_graph(
    graph: ModelGraph,
    chip: Chip,
    precision: str = "int8",
    policy: str = "affinity-locality",
    frames: int = 1,
    options: EngineOptions | None = None,
    in_flight: int | None = None,
    fuse_ops: bool = True,
) -> RunResult:
    """Cost, schedule, simulate and analyze an already loaded graph on a chip.

    ``frames > 1`` also streams that many inputs through the schedule (``stream``), at most
    ``in_flight`` at a time if given; ``options`` switch engine features (double buffering, op
    splitting) for what-if runs. ``fuse_ops``
    applies :func:`cost_models.fusion.fuse` to the placed ops between scheduling and simulation.
    """
    table = cost_table(graph, chip, precision)
    sched = schedule(graph, chip, table, policy)
    fusion = fuse(graph, chip, table, {n: p.unit for n, p in sched.placements.items()}) if fuse_ops else None
    table = fusion.table if fusion is not None else table
    trace = simulate(graph, chip, table, sched, options)
    stream_trace = simulate(graph, chip, table, sched, options, frames, in_flight) if frames > 1 else None
    stream = frame_stats(chip, stream_trace if stream_trace is not None else trace)
    return RunResult(
        graph, chip, precision, table, sched, trace, analyze(graph, chip, trace), stream, stream_trace,
        fusion.pairs if fusion is not None else (),
    )


def run(
    chip: str | Path,
    model: str | Path,
    precision: str = "int8",
    policy: str = "affinity-locality",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> RunResult:
    """Load ``chip`` (a YAML path or bundled name) and ``model`` (an ONNX path) and run them."""
    spec = load_chip(chip)
    graph = load_onnx(model, input_shapes)
    return run_graph(graph, spec, precision, policy)
