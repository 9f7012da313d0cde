"""The cost of every op on every unit that can run it: the scheduler's input."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from chips.schema import Chip, CpuUnit, Unit
from cost_models.base import (
    DEFAULT_KNOBS,
    KernelKnobs,
    OpCost,
    applicable_knobs,
    model_for,
    weight_bytes_read,
)
from cost_models.cpu import loop_cache_bytes
from cost_models.quant import with_scale_read
from graph_ir.ir import ModelGraph, Op, constant_tensors, deployed_bytes

if TYPE_CHECKING:
    from cost_models.mapping import OpMapping

__all__ = ["PRECISIONS", "CostTable", "UnplaceableError", "cost_table", "estimate", "op_signature", "run_activation_bytes", "run_weight_bytes", "steady_state_unit"]

PRECISIONS = ("int4", "int8", "fp16", "bf16", "fp32", "model")


class UnplaceableError(ValueError):
    """No unit of the chip can run some op (bad input: the chip and model do not fit)."""


@dataclass(frozen=True, slots=True)
class CostTable:
    """``costs[op][unit]`` for every unit able to run ``op`` (at least one per op).

    ``precision`` is the whole model's; ``dtypes`` the ops deployed in another one (a
    quantization binding, :mod:`graph_ir.quant_binding`), read through :meth:`precision_of`;
    ``knobs`` the ops costed with mapping knobs (:mod:`cost_models.mapping`), read through
    :meth:`knobs_of` (the engine costs their shards the same way); ``fused_into`` the ops a
    fusion runs in the layer of the conv/matmul before them.
    """

    precision: str
    costs: Mapping[str, Mapping[str, OpCost]]
    dtypes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    knobs: Mapping[str, KernelKnobs] = field(default_factory=lambda: MappingProxyType({}))
    #: Op -> the head of the fusion group it runs in as part of one layer (:func:`cost_models.fusion.fuse`).
    fused_into: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def precision_of(self, op: str) -> str:
        """The precision ``op`` was costed at: its own dtype, else the table's precision."""
        return self.dtypes.get(op, self.precision)

    def knobs_of(self, op: str) -> KernelKnobs:
        """The kernel knobs ``op`` was costed with (the default for most)."""
        return self.knobs.get(op, DEFAULT_KNOBS)

    def eligible(self, op: str) -> tuple[str, ...]:
        return tuple(self.costs[op])

    def best(self, op: str) -> OpCost:
        """The fastest unit's cost for ``op`` (ties: the unit listed first in the chip)."""
        return min(self.costs[op].values(), key=lambda c: c.latency_ns)


def estimate(op: Op, chip: Chip, unit_name: str, precision: str = "int8") -> OpCost | None:
    """Cost of ``op`` on one core of the named unit, or None if it cannot run it."""
    unit = chip.unit(unit_name)
    return model_for(unit.kind).estimate(op, unit, chip, precision)


def steady_state_unit(
    unit: Unit, graph: ModelGraph, precision: str, dtypes: Mapping[str, str] | None = None
) -> Unit:
    """``unit`` as it runs ``graph`` in a loop: a CPU whose last-level cache holds all the
    model's weights keeps them there between inferences, so its GEMMs do not stall on weights
    from DRAM (``weight_stream_gbps`` dropped; :func:`cost_models.cpu.weight_stream_ns`; kept where
    the fingerprint measured what such a loop keeps, ``weight_cache_kib``, which can be far less
    than the last level: then the GEMMs stall on the share it does not keep) and every
    op reads its weights from the smallest cache level that holds all of them (``weights_in_cache``,
    ``resident_weight_bytes``: the loop streams them cyclically; the 784-256-256-10 MLP's 1 MB of
    weights came out 45 us from DRAM, where onnxruntime runs the whole model in 10-20 us, and the
    784-512-512-10 one's 2.7 MB run from L3, not from the L2 each layer's 1.6 MB would fit).
    ``dtypes`` gives ops deployed in another dtype than ``precision``. An embedding lookup counts
    the rows it reads, not its table (:func:`cost_models.base.weight_bytes_read`): a loop of runs
    over the same ids reads the same rows, and a DLRM's 2.6 MB of rows from 205 MB of tables stayed
    in the L3 between runs (21 ns a row, against 80-180 ns from DRAM). Only a fingerprinted CPU
    (one with a measured weight stream or GEMV rate) runs in such a loop: on a host whose weight
    stream shows no stall (an AMD EPYC here: the same MatMul with its weights in DRAM and in cache)
    the GEMV rate marks it. Where they do not fit beside the run's other bytes (the largest working
    set, or all the run touches besides its weights, :func:`run_activation_bytes`: a static
    key/value cache fed as an input), ``resident_weight_bytes`` alone says how many bytes the loop
    streams cyclically, the weights and those (:func:`cost_models.cpu.stream_ns`: the part the last
    level keeps from one pass to the next). A decoding step over an 18 MB static cache with 20 MB of
    weights (AMD EPYC, 25 MiB of L3 the sweep keeps) ran its one-row products at the DRAM's rate,
    82-117 us where a pass over the weights alone, all kept, priced 33."""
    if not isinstance(unit, CpuUnit) or (unit.weight_stream_gbps is None and unit.gemv_gbps is None):
        return unit
    dtypes = dtypes or {}

    def deployed(op_name: str) -> str | None:
        p = dtypes.get(op_name, precision)
        return None if p == "model" else p

    weights = run_weight_bytes(graph, deployed)
    other = max(largest_working_set(graph, deployed), run_activation_bytes(graph, deployed))
    if weights + other > loop_cache_bytes(unit):  # streamed with the run's other bytes, not kept
        return unit.model_copy(update={"resident_weight_bytes": float(weights + other)})
    # a measured weight cache keeps its share (cost_models.cpu.weight_stream_ns); else all of them
    stream = unit.weight_stream_gbps if unit.weight_cache_kib is not None else None
    return unit.model_copy(
        update={"weight_stream_gbps": stream, "weights_in_cache": True, "resident_weight_bytes": float(weights)}
    )


def run_weight_bytes(graph: ModelGraph, deployed: Callable[[str], str | None] = lambda name: None) -> int:
    """Bytes of weights one run of ``graph`` reads, each op at its ``deployed`` precision: every
    weight tensor once, however many ops read it (an unrolled decoder's cell and output layer, used
    at each of its steps), but a table only embedding lookups read counts the rows they gather
    (:func:`cost_models.base.weight_bytes_read`, summed over its lookups, at most the table). A
    greedy decoder unrolled over 16 steps, 4.1 MB of weights, had counted 53 MB, past the L3:
    its output layer's 1 MB priced from DRAM at each step, 41.5 us, where it ran 13.5 (AMD EPYC,
    2026-12-06)."""
    dense: dict[str, int] = {}
    rows: dict[str, int] = {}
    tables: dict[str, int] = {}
    for op in graph.ops():
        precision = deployed(op.name)
        if op.op_type == "Gather" and op.inputs and op.inputs[0].is_weight:
            name = op.inputs[0].name
            rows[name] = rows.get(name, 0) + weight_bytes_read(op, precision)
            tables[name] = deployed_bytes(op.inputs[0], precision)
            continue
        for t in op.weights:
            dense[t.name] = max(dense.get(t.name, 0), deployed_bytes(t, precision))
    looked_up = sum(min(n, tables[name]) for name, n in rows.items() if name not in dense)
    return sum(dense.values()) + looked_up


def run_activation_bytes(graph: ModelGraph, deployed: Callable[[str], str | None] = lambda name: None) -> int:
    """Bytes besides its weights that one run of ``graph`` touches, each op at its ``deployed``
    precision: the graph's inputs and outputs, and its intermediates at the most of them live at
    once in the graph's order (a runtime that reuses freed buffers touches at least that many
    distinct bytes); tensors computed from weights alone left out. What passes through the
    last-level cache between two runs' uses of the same weights."""
    const = constant_tensors(graph)
    outputs = {t.name for t in graph.outputs}
    ops = graph.ops()
    last = {t.name: i for i, op in enumerate(ops) for t in op.inputs}
    freed = [0] * (len(ops) + 1)
    live = peak = 0
    for i, op in enumerate(ops):
        p = deployed(op.name)
        made = [t for t in op.outputs if t.name not in const and t.name not in outputs]
        live += sum(deployed_bytes(t, p) for t in made)
        peak = max(peak, live)
        for t in made:
            freed[max(i, last.get(t.name, i))] += deployed_bytes(t, p)
        live -= freed[i]
    io = [*graph.inputs, *graph.outputs]
    return peak + sum(deployed_bytes(t, None) for t in io)


def largest_working_set(graph: ModelGraph, deployed: Callable[[str], str | None] = lambda name: None) -> int:
    """Bytes of the largest activation working set (inputs and outputs) of one op of ``graph``,
    each op at its ``deployed`` precision, tensors computed from weights alone (a QDQ model's
    dequantized weights, which onnxruntime folds or fuses into the integer kernel) left out: what
    passes through the last-level cache between two uses of the same weights, at least. A loop
    keeps the weights cached only where they and this fit together: on an AMD EPYC (16 MiB of L3
    that the read sweep holds) MobileNetV2's 14 MB of weights beside its 5.6 MB expansion conv
    left the classifier's 5 MB Gemm at 21 GB/s, a DRAM rate."""
    const = constant_tensors(graph)
    largest = 0
    for op in graph.ops():
        live = [t for t in op.inputs if t.name not in const]
        if not live:
            continue
        p = deployed(op.name)
        largest = max(largest, sum(deployed_bytes(t, p) for t in (*live, *op.outputs)))
    return largest


def op_signature(op: Op) -> tuple[object, ...]:
    """What an op's estimate depends on besides the unit, precision and knobs: two ops with the
    same signature cost the same (type, category, shapes, dtypes, scalar attributes, work)."""
    return (
        op.op_type,
        op.category,
        tuple((t.shape, t.dtype, t.is_weight) for t in op.inputs),
        tuple((t.shape, t.dtype) for t in op.outputs),
        tuple(sorted((k, v) for k, v in op.attrs.items() if isinstance(v, (int, float, str, tuple)))),
        op.macs,
        op.flops,
        op.repeat,
    )


def cost_table(
    graph: ModelGraph,
    chip: Chip,
    precision: str = "int8",
    dtypes: Mapping[str, str] | None = None,
    granularity: Mapping[str, str] | None = None,
    mapping: Mapping[str, OpMapping] | None = None,
) -> CostTable:
    """Estimate every op of ``graph`` on every unit of ``chip``.

    Identical ops (same type, shapes, attributes, precision and mapping knobs) are estimated
    once per unit.

    Parameters
    ----------
    precision
        The precision of every op ``dtypes`` does not name.
    dtypes
        Op name -> the precision it is deployed in (a quantization binding), else ``precision``.
    granularity
        Op name -> ``per-tensor`` or ``per-channel`` (its weights' scales); per-channel int8 and
        int4 ops also read their scales (:func:`cost_models.quant.with_scale_read`).
    mapping
        Op name -> its :class:`~cost_models.mapping.OpMapping`: a pinned op's row keeps only its
        unit; its kernel knobs apply on every unit that offers them
        (:func:`cost_models.base.applicable_knobs`). Check it first with
        :func:`cost_models.mapping.legality`.

    Raises
    ------
    UnplaceableError
        When no unit can run an op (or its pinned unit cannot), naming the node, its op type and
        the precision.
    """
    dtypes = dict(dtypes or {})
    granularity = granularity or {}
    for p in {precision, *dtypes.values()}:
        if p not in PRECISIONS:
            raise ValueError(f"precision {p!r} is not one of {PRECISIONS}")
    mapping = mapping or {}
    memo: dict[tuple[object, ...], dict[str, OpCost]] = {}
    models = [(steady_state_unit(u, graph, precision, dtypes), model_for(u.kind)) for u in chip.units]
    costs: dict[str, dict[str, OpCost]] = {}
    knobs: dict[str, KernelKnobs] = {}
    for op in graph.ops():
        p = dtypes.get(op.name, precision)
        gran = granularity.get(op.name, "per-tensor")
        m = mapping.get(op.name)
        pin, k = (m.unit, m.kernel()) if m is not None else (None, DEFAULT_KNOBS)
        key = (op_signature(op), p, gran, pin, k)
        row = memo.get(key)
        if row is None:
            row = {}
            for unit, model in models:
                if pin is not None and unit.name != pin:
                    continue
                c = model.estimate(op, unit, chip, p, applicable_knobs(model, op, unit, chip, p, k))
                if c is not None:
                    row[unit.name] = with_scale_read(c, op, unit, chip, gran)
            memo[key] = row
        if not row:
            who = f"its pinned unit {pin!r} cannot" if pin is not None else f"no unit of chip {chip.name!r} can"
            raise UnplaceableError(f"node {op.name!r} ({op.op_type}): {who} run it at precision {p}")
        costs[op.name] = row
        if not k.is_default():
            knobs[op.name] = k
    kept = {n: d for n, d in dtypes.items() if d != precision}
    return CostTable(precision, costs, MappingProxyType(kept), MappingProxyType(knobs))
