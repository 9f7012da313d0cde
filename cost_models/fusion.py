"""Operator fusion as the cost model sees it: activations and elementwise ops that a unit runs
in the epilogue of the conv/matmul before them, without a DRAM round trip in between.

A *fusion group* starts at a conv or matmul (the head) and takes in, step by step, the ops that
read the group's outputs, but only when **every** such reader qualifies: it is placed on the
head's unit, its op type is one the unit fuses (the unit's ``fuses`` field, else its kind's
:attr:`~cost_models.base.CostModel.default_fuses`), and an output tile (the head's output split
into its :attr:`~cost_models.base.OpCost.tiles`) fits the unit's on-chip buffer
(:meth:`chips.schema.Unit.onchip_bytes`) twice: the tile coming in and the epilogue's result
going out. So ``Conv -> Relu`` fuses, ``Conv -> Sigmoid -> Mul`` (SiLU, the Mul also
reading the conv's output) fuses whole, ``Conv -> Add -> Relu`` (residual) fuses, and a conv
whose output also feeds another conv does not fuse at all (its output must reach DRAM anyway).

A reader joins only when its other inputs are ready when the head runs (weights, graph inputs,
or tensors of ops before the head or inside the group): a pre-activation ResNet's residual
``Add`` whose second operand comes from a later conv stays out of the group before it.

``BatchNormalization`` is a per-channel affine. When the unit fuses it and it reads a conv's (or
matmul's) output that nothing else reads, it is **folded** into that layer's weights and bias
(exact arithmetic, as RKNN's and every NPU converter do): it keeps no compute, no dispatch and
no DRAM traffic. Elsewhere in a group (after a fused ``Add``) it is an epilogue stage like an
activation. A BatchNormalization that follows no conv (after a residual ``Add`` that also feeds
the skip path, after a pool, on the graph input) cannot be folded into weights: it heads a group
of its own, one vector-unit layer that carries the activation after it (``BN -> ReLU`` is one
layer, one set-up, one DRAM round trip); it cannot fold into the *next* conv across the ReLU.

A tensor produced and consumed only inside a group, and not a graph output, never touches
DRAM: its producer does not write it and its readers do not read it back. A fused op's compute
stays (a folded BatchNormalization's excepted); its per-op dispatch overhead goes (it runs as
part of the head's layer).

>>> sorted(model_for("npu").default_fuses)[:3]
['Add', 'Clip', 'HardSigmoid']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from chips.schema import Chip, Unit
from cost_models.base import OpCost, model_for, unit_bandwidth_gbps
from cost_models.energy import dram_energy_pj, energy_pj
from cost_models.table import CostTable
from graph_ir.categories import EPILOGUE_CATEGORIES, GEMM_CATEGORIES
from graph_ir.ir import ModelGraph, Op, Tensor, deployed_bytes

__all__ = ["FusedPair", "FusionResult", "fuse", "fuses"]

#: Per-channel affine ops: an epilogue stage, folded into the weights right after a conv/matmul,
#: and a group head of their own (carrying their activation) anywhere else.
_AFFINE = frozenset(("BatchNormalization",))


@dataclass(frozen=True, slots=True)
class FusedPair:
    """``consumer`` runs fused into ``producer``'s layer (the group's conv/matmul) on ``unit``."""

    producer: str
    consumer: str
    unit: str


@dataclass(frozen=True, slots=True)
class FusionResult:
    """The cost table with fusion applied, what was fused, and the DRAM bytes it saved."""

    table: CostTable
    pairs: tuple[FusedPair, ...]
    saved_dram_bytes: int


def fuses(unit: Unit) -> frozenset[str]:
    """Op types ``unit`` fuses: its own ``fuses`` field, else its kind's default
    (:attr:`cost_models.base.CostModel.default_fuses`)."""
    if unit.fuses is not None:
        return frozenset(unit.fuses)
    return model_for(unit.kind).default_fuses


@dataclass(frozen=True, slots=True)
class _Wiring:
    """Who reads and who writes each tensor of a graph, and where each op sits in its order."""

    graph: ModelGraph
    consumers: Mapping[str, list[str]]
    producer: Mapping[str, str]
    position: Mapping[str, int]
    outputs: frozenset[str]

    @classmethod
    def of(cls, graph: ModelGraph) -> _Wiring:
        consumers: dict[str, list[str]] = {}
        for name in graph.order:
            for t in graph.op(name).inputs:
                consumers.setdefault(t.name, []).append(name)
        return cls(
            graph,
            consumers,
            {t.name: name for name in graph.order for t in graph.op(name).outputs},
            {name: i for i, name in enumerate(graph.order)},
            frozenset(t.name for t in graph.outputs),
        )

    def readers(self, ops: list[str], excluded: set[str]) -> list[str]:
        """Ops outside ``excluded`` that read an output of ``ops``, in graph order."""
        found = {c for m in ops for t in self.graph.op(m).outputs for c in self.consumers.get(t.name, ())}
        return sorted(found - excluded, key=self.position.__getitem__)


def fuse(graph: ModelGraph, chip: Chip, table: CostTable, placement: Mapping[str, str]) -> FusionResult:
    """Apply fusion to the costs of ops placed by ``placement`` (op name -> unit name).

    Returns a new :class:`CostTable` in which only the placed unit's entry of a fused op
    changes, the fused (head, member) pairs in graph order and the DRAM bytes saved.
    """
    wiring = _Wiring.of(graph)
    grouped: set[str] = set()
    costs: dict[str, dict[str, OpCost]] = {op: dict(row) for op, row in table.costs.items()}
    pairs: list[FusedPair] = []
    saved = 0
    for head in graph.order:
        unit_name = placement.get(head)
        if head in grouped or unit_name is None:
            continue
        unit = chip.unit(unit_name)
        group = _group(wiring, head, unit, placement, grouped, costs[head][unit_name])
        if len(group) == 1:
            continue
        grouped.update(group)
        folded = _folded(graph, head, group, wiring.consumers)
        removed_read, removed_write = _internal_bytes(wiring, group, costs, unit_name)
        for m in group:
            cost = costs[m][unit_name]
            r = min(removed_read.get(m, 0), cost.dram_read_bytes)
            w = min(removed_write.get(m, 0), cost.dram_write_bytes)
            if m == folded:  # its scale and shift live in the head's weights and bias now
                r, w = cost.dram_read_bytes, cost.dram_write_bytes
            costs[m][unit_name] = _fused_cost(cost, m, head, folded, unit, chip, r, w)
            saved += r + w
            if m != head:
                pairs.append(FusedPair(head, m, unit_name))
    return FusionResult(replace(table, costs=costs), tuple(pairs), saved)


def _can_head(op: Op, allowed: frozenset[str]) -> bool:
    """Whether ``op`` may start a group on a unit that fuses ``allowed``: a conv or matmul, or a
    per-channel affine op the unit fuses; nothing on a unit that fuses nothing."""
    if not allowed:
        return False
    return op.category in GEMM_CATEGORIES or (op.op_type in _AFFINE and op.op_type in allowed)


def _joins(op: Op, allowed: frozenset[str]) -> bool:
    """Whether ``op``'s type may run in a group's epilogue on a unit that fuses ``allowed``."""
    return op.op_type in allowed and (op.category in EPILOGUE_CATEGORIES or op.op_type in _AFFINE)


def _group(
    wiring: _Wiring, head: str, unit: Unit, placement: Mapping[str, str], grouped: set[str], head_cost: OpCost
) -> list[str]:
    """The ops fused with ``head`` on ``unit``, ``head`` first (only ``head``: no fusion).

    The group grows a step at a time by every reader of its outputs, as long as all of them
    join (placed on ``unit``, not in another group, of a type it fuses, their other inputs ready)
    and an output tile of the group, coming in and going out, fits the unit's on-chip buffer.
    """
    graph = wiring.graph
    allowed = fuses(unit)
    if not _can_head(graph.op(head), allowed):
        return [head]
    buffer = unit.onchip_bytes()
    group = [head]
    members = {head}
    head_at = wiring.position[head]
    while True:
        readers = wiring.readers(group, members)
        inside = members | set(readers)
        if not readers or any(
            placement.get(c) != unit.name
            or c in grouped
            or not _joins(graph.op(c), allowed)
            or not _ready(graph.op(c).inputs, inside, wiring.producer, wiring.position, head_at)
            for c in readers
        ):
            return group
        largest = max(deployed_bytes(t, head_cost.dtype) for m in (*group, *readers) for t in graph.op(m).outputs)
        if 2 * largest / max(1, head_cost.tiles) > buffer:  # a tile in and its epilogue's result out
            return group
        group += readers
        members.update(readers)


def _internal_bytes(
    wiring: _Wiring, group: list[str], costs: Mapping[str, Mapping[str, OpCost]], unit_name: str
) -> tuple[dict[str, int], dict[str, int]]:
    """DRAM bytes each member no longer reads and writes: the tensors made and read only inside
    the group (graph outputs excepted), as ``(read, written)`` by op name."""
    members = set(group)
    removed_read: dict[str, int] = {}
    removed_write: dict[str, int] = {}
    for m in group:
        for t in wiring.graph.op(m).outputs:
            readers_of_t = wiring.consumers.get(t.name, [])
            if t.name in wiring.outputs or not readers_of_t or any(c not in members for c in readers_of_t):
                continue
            b = deployed_bytes(t, costs[m][unit_name].dtype)
            removed_write[m] = removed_write.get(m, 0) + b
            for c in set(readers_of_t):
                removed_read[c] = removed_read.get(c, 0) + b
    return removed_read, removed_write


def _fused_cost(
    cost: OpCost, m: str, head: str, folded: str | None, unit: Unit, chip: Chip, r: int, w: int
) -> OpCost:
    """``cost`` of group member ``m`` with ``r`` bytes less read and ``w`` less written: its
    dispatch overhead gone unless it is the head, the DRAM latency gone with its last DRAM byte,
    and its compute gone if it is the BatchNormalization ``folded`` into the head's weights."""
    bw = unit_bandwidth_gbps(unit, chip)
    overhead = cost.overhead_ns
    if m != head:
        overhead = max(0.0, overhead - unit.op_overhead_ns)
    left = cost.dram_bytes - r - w
    if cost.dram_bytes > 0 and left == 0:
        overhead = max(0.0, overhead - chip.dram.latency_ns)
    compute_ns = 0.0 if m == folded else cost.compute_ns
    memory_ns = max(0.0, cost.memory_ns - (r + w) / bw)
    saved_ns = cost.latency_ns - (max(compute_ns, memory_ns) + overhead)
    energy = cost.energy_pj - dram_energy_pj(chip.dram, r + w) - energy_pj(unit.active_w, saved_ns)
    if m == head:
        note = ", fused epilogue"
    elif m == folded:
        note = f", folded into {head}'s weights"
    else:
        note = f", fused into {head}"
    return replace(
        cost,
        compute_ns=compute_ns,
        memory_ns=memory_ns,
        overhead_ns=overhead,
        dram_read_bytes=cost.dram_read_bytes - r,
        dram_write_bytes=cost.dram_write_bytes - w,
        energy_pj=max(0.0, energy),
        note=cost.note + note,
    )


def _ready(
    inputs: tuple[Tensor, ...], members: set[str], producer: Mapping[str, str], position: Mapping[str, int], head_at: int
) -> bool:
    """Whether every input is there when the group's head runs: a weight, a graph input, the
    output of a group member, or the output of an op before the head."""
    for t in inputs:
        src = producer.get(t.name)
        if t.is_weight or src is None or src in members:
            continue
        if position[src] >= head_at:
            return False
    return True


def _folded(graph: ModelGraph, head: str, group: list[str], consumers: Mapping[str, list[str]]) -> str | None:
    """The group's BatchNormalization folded into the head's weights, if any: one that reads a
    conv/matmul head's only output, which nothing else reads."""
    op = graph.op(head)
    if op.category not in GEMM_CATEGORIES or len(op.outputs) != 1 or op.outputs[0] in graph.outputs:
        return None
    readers = consumers.get(op.outputs[0].name, [])
    if len(readers) == 1 and readers[0] in group and graph.op(readers[0]).op_type in _AFFINE:
        return readers[0]
    return None
