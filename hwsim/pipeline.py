"""One typed pipeline: graph -> chip -> costs -> schedule -> trace -> analysis.

Each step is a plain function a test can call alone; :func:`run` chains them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from chips.schema import Chip, load_chip
from cost_models.base import element_precision, requested_dtype
from cost_models.fusion import FusedPair, FusionResult
from cost_models.mapping import OpMapping
from cost_models.table import CostTable, cost_table
from graph_ir.ir import FLOAT_DTYPES, ModelGraph
from graph_ir.onnx_import import load_onnx
from graph_ir.qdq import fold_qdq
from graph_ir.quant_binding import Conversion, ResolvedBinding, insert_conversions, wider
from hwsim.analysis.analyze import Analysis, analyze
from hwsim.analysis.frames import FrameStats, frame_stats
from hwsim.analysis.memory import MemoryUse, fit_memory
from hwsim.policy_check import Chosen, Deadline, ScheduleChoice, choose_schedule, replay_schedule
from hwsim.sim.engine import EngineOptions, Trace, simulate
from scheduler import DEFAULT_POLICY, Schedule

__all__ = ["RunResult", "deployed", "run", "run_graph"]


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
    #: The quantization binding the ops were costed in (``run --quant``), None: ``precision``
    #: for all; and the conversion ops it inserted into ``graph``.
    quant: ResolvedBinding | None = None
    conversions: tuple[Conversion, ...] = ()
    #: Fusion mode and the decision on each candidate group (:func:`cost_models.fusion.fuse`).
    fusion: FusionResult | None = None
    #: The power cap the run honoured (``EngineOptions.max_power_w``; None: none), and the same
    #: schedule simulated without it, one frame (what the cap cost).
    max_power_w: float | None = None
    uncapped_trace: Trace | None = None
    #: Memory over ``trace`` per domain, after the spills that keep SRAM domains to capacity
    #: (:func:`hwsim.analysis.memory.fit_memory`; ``table`` and ``trace`` include their cost).
    memory: MemoryUse | None = None
    #: The per-op mapping signatures the run applied (``mapping`` of :func:`run_graph`; None: none).
    mapping: Mapping[str, OpMapping] | None = None


def run_graph(
    graph: ModelGraph,
    chip: Chip,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
    frames: int = 1,
    options: EngineOptions | None = None,
    in_flight: int | None = None,
    fuse_ops: bool | None = None,
    objective: str = "latency",
    latency_budget_ms: float | None = None,
    deadlines: Sequence[Deadline] = (),
    quant: ResolvedBinding | None = None,
    fuse: str = "auto",
    schedule: Schedule | Callable[[ModelGraph, CostTable], Schedule] | None = None,
    replay_label: str = "replayed",
    mapping: Mapping[str, OpMapping] | None = None,
) -> RunResult:
    """Cost, schedule, simulate and analyze an already loaded graph on a chip.

    ``frames > 1`` also streams that many inputs through the schedule (``stream``), at most
    ``in_flight`` at a time if given; ``options`` switch engine features (double buffering, op
    splitting, a power cap) for what-if runs; under a cap the same schedule is also simulated
    without it (``uncapped_trace``). ``fuse`` (``auto``, ``on``, ``off``) is how
    :func:`cost_models.fusion.fuse` treats the placed ops between scheduling and simulation:
    each legal group fused where that is cheaper on this chip, every one, or none.
    ``fuse_ops`` is the older switch: ``False`` means ``fuse="off"``, ``True`` ``fuse="on"``.
    The schedule comes from :func:`hwsim.policy_check.choose_schedule`: the default policy is
    checked through the engine against HEFT, the best single unit and affinity-list on graphs of
    up to 5k ops; ``objective="energy"`` minimizes energy within ``latency_budget_ms``;
    ``deadlines`` (from :func:`hwsim.policy_check.resolve_deadlines`) are served first.
    ``quant`` costs each op in its bound dtype instead of ``precision`` (which becomes the
    binding's default) and inserts the conversions where dtypes change
    (:func:`graph_ir.quant_binding.insert_conversions`; each is costed at the wider of its two
    dtypes).
    ``schedule`` replays a given schedule instead (:func:`hwsim.policy_check.replay_schedule`:
    no policy, no engine check; ``policy`` and ``objective`` are not used), or a function that
    makes it from the graph and the cost table as costed (conversions inserted); ``replay_label`` is
    what ``requested_policy`` then says.
    ``mapping`` (op name -> :class:`cost_models.mapping.OpMapping`, checked with
    :func:`cost_models.mapping.legality` by the caller) costs each mapped op with its kernel
    knobs, lets the policies place a pinned op only on its unit, splits it over its ``cores``
    and forces its fusion group on or off; None or all-default mappings change nothing.
    """
    if fuse_ops is not None:
        fuse = "on" if fuse_ops else "off"
    graph, quant = deployed(graph, precision, quant)
    conversions: tuple[Conversion, ...] = ()
    mapped = {n: m for n, m in (mapping or {}).items() if not m.is_default()} or None
    if quant is None:
        table = cost_table(graph, chip, precision, mapping=mapped)
    else:
        precision = quant.default
        graph, conversions = insert_conversions(graph, quant.dtypes, quant.default)
        dtypes = {**quant.dtypes, **{c.op: wider(c.src_dtype, c.dst_dtype) for c in conversions}}
        table = cost_table(graph, chip, precision, dtypes, quant.granularity, mapping=mapped)
    if schedule is not None:
        given = schedule(graph, table) if callable(schedule) else schedule
        chosen = replay_schedule(
            graph, chip, table, given, options=options, fuse=fuse, deadlines=deadlines, label=replay_label,
            mapping=mapped,
        )
    else:
        chosen = choose_schedule(
            graph, chip, table, policy, options=options, fuse=fuse, objective=objective,
            latency_budget_ms=latency_budget_ms, deadlines=deadlines, mapping=mapped,
        )  # fmt: skip
    sched = chosen.schedule
    table, trace, memory = _fitted(graph, chip, chosen, options)
    stream_trace = simulate(graph, chip, table, sched, options, frames, in_flight) if frames > 1 else None
    stream = frame_stats(chip, stream_trace) if stream_trace is not None else None
    uncapped = None
    if options is not None and options.max_power_w is not None:
        uncapped = simulate(graph, chip, table, sched, replace(options, max_power_w=None))
    return RunResult(
        graph, chip, precision, table, sched, trace, analyze(graph, chip, trace), stream, stream_trace,
        chosen.fused, chosen.choice, quant, conversions, chosen.fusion,
        options.max_power_w if options is not None else None, uncapped, memory, mapped,
    )


def _fitted(
    graph: ModelGraph, chip: Chip, chosen: Chosen, options: EngineOptions | None
) -> tuple[CostTable, Trace, MemoryUse]:
    """The kept schedule's table, trace and memory with the SRAM spills that keep its domains to
    capacity (:func:`hwsim.analysis.memory.fit_memory`; the check fitted it already where the chip
    has capped SRAM domains)."""
    if chosen.memory is not None:
        return chosen.table, chosen.trace, chosen.memory
    fit = fit_memory(graph, chip, chosen.table, chosen.schedule, chosen.trace, options)
    return fit.table, fit.trace, fit.memory


def deployed(
    graph: ModelGraph, precision: str, quant: ResolvedBinding | None
) -> tuple[ModelGraph, ResolvedBinding | None]:
    """``graph`` and its binding as deployed: a QDQ model folded (:func:`graph_ir.qdq.fold_qdq`)
    and bound by its QDQ nodes, each quantized op in its integer dtype and every other op in
    ``precision`` (``model``: its own float dtype), unless ``quant`` binds the ops (it keeps only
    the ops left after folding). A model without QDQ nodes comes back as it is.
    """
    folded = fold_qdq(graph)
    if folded is None:
        return graph, quant
    g = folded.graph
    if quant is not None:
        kept = set(g.order)
        dtypes = {n: d for n, d in quant.dtypes.items() if n in kept}
        granularity = {n: v for n, v in quant.granularity.items() if n in kept}
        return g, ResolvedBinding(quant.source, quant.default, dtypes, granularity)
    floats = [t.dtype for t in g.inputs if t.dtype in FLOAT_DTYPES]  # the graph inputs' dtype
    default = precision if precision != "model" else (element_precision(floats[0]) if floats else None) or "fp32"
    dtypes = {op.name: folded.dtypes.get(op.name) or requested_dtype(op, precision) for op in g.ops()}
    granularity = {n: folded.granularity.get(n, "per-tensor") for n in g.order}
    source = f"the QDQ nodes of {graph.name} ({len(folded.removed)} folded)"
    return g, ResolvedBinding(source, default, dtypes, granularity)


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
