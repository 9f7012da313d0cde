"""Operator fusion as the cost model sees it: activations and elementwise ops that a unit runs
in the epilogue of the conv/matmul before them, without a DRAM round trip in between.

A *fusion group* starts at a conv or matmul (the head) and takes in, step by step, the ops that
read the group's outputs, but only when **every** such reader qualifies: it is placed on the
head's unit, its op type is one the unit fuses (the unit's ``fuses`` field, else
:data:`DEFAULT_FUSES` for its kind), and an output tile (the head's output split into its
:attr:`~cost_models.base.OpCost.tiles`) fits the unit's on-chip buffer twice: the tile coming
in and the epilogue's result going out. So ``Conv -> Relu`` fuses, ``Conv -> Sigmoid -> Mul`` (SiLU, the Mul also
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

>>> sorted(DEFAULT_FUSES["npu"])[:3]
['Add', 'Clip', 'HardSigmoid']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from chips.schema import Chip, CpuUnit, DspUnit, GpuUnit, NpuUnit, Unit
from cost_models.base import OpCost, unit_bandwidth_gbps
from cost_models.energy import dram_energy_pj, energy_pj
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph, Tensor, deployed_bytes

__all__ = ["DEFAULT_FUSES", "FusedPair", "FusionResult", "fuse", "fuses"]

_ACTIVATIONS = ("Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh")

#: Op types each unit kind fuses into a preceding conv/matmul when the unit does not say.
#: NPU: RKNN-class compilers emit Conv+activation, Conv+Add(+activation) and Conv+Sigmoid+Mul
#: (SiLU) as one layer (assumption from rknn-toolkit2's fused-layer listings); GPU: epilogue
#: fusion as cuDNN/TensorRT do; CPU: the activations onnxruntime's FusedConv/MLAS applies in the
#: kernel (Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid); DSP: none.
DEFAULT_FUSES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "npu": frozenset((*_ACTIVATIONS, "Add", "Mul")),
        "gpu": frozenset((*_ACTIVATIONS, "Add", "Mul")),
        "cpu": frozenset(("Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid")),
        "dsp": frozenset(),
    }
)

_HEADS = frozenset(("conv", "matmul"))
_EPILOGUES = frozenset(("activation", "elementwise"))
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
    """Op types ``unit`` fuses: its own ``fuses`` field, else its kind's default."""
    if unit.fuses is not None:
        return frozenset(unit.fuses)
    return DEFAULT_FUSES.get(unit.kind, frozenset())


def _onchip_bytes(unit: Unit) -> float:
    """The buffer a fused epilogue's tile lives in between the head and its readers."""
    if isinstance(unit, (NpuUnit, DspUnit)):
        return unit.sram_kib * 1024
    if isinstance(unit, GpuUnit):
        return unit.l2_kib * 1024
    if isinstance(unit, CpuUnit):
        return unit.l2_kib * 1024
    return 0.0


def fuse(graph: ModelGraph, chip: Chip, table: CostTable, placement: Mapping[str, str]) -> FusionResult:
    """Apply fusion to the costs of ops placed by ``placement`` (op name -> unit name).

    Returns a new :class:`CostTable` in which only the placed unit's entry of a fused op
    changes, the fused (head, member) pairs in graph order and the DRAM bytes saved.
    """
    consumers: dict[str, list[str]] = {}
    for name in graph.order:
        for t in graph.op(name).inputs:
            consumers.setdefault(t.name, []).append(name)
    graph_outputs = {t.name for t in graph.outputs}
    position = {name: i for i, name in enumerate(graph.order)}
    producer = {t.name: name for name in graph.order for t in graph.op(name).outputs}
    grouped: set[str] = set()
    costs: dict[str, dict[str, OpCost]] = {op: dict(row) for op, row in table.costs.items()}
    pairs: list[FusedPair] = []
    saved = 0
    for head in graph.order:
        op = graph.op(head)
        unit_name = placement.get(head)
        if head in grouped or unit_name is None:
            continue
        unit = chip.unit(unit_name)
        allowed = fuses(unit)
        if op.category not in _HEADS and not (op.op_type in _AFFINE and op.op_type in allowed):
            continue
        if not allowed:
            continue
        head_cost = costs[head][unit_name]
        buffer = _onchip_bytes(unit)
        group = [head]
        members = {head}
        while True:
            readers = sorted(
                {c for m in group for t in graph.op(m).outputs for c in consumers.get(t.name, ()) if c not in members},
                key=position.__getitem__,
            )
            if not readers or any(
                placement.get(c) != unit_name
                or c in grouped
                or graph.op(c).op_type not in allowed
                or (graph.op(c).category not in _EPILOGUES and graph.op(c).op_type not in _AFFINE)
                or not _ready(graph.op(c).inputs, members | set(readers), producer, position, position[head])
                for c in readers
            ):
                break
            largest = max(deployed_bytes(t, head_cost.dtype) for m in (*group, *readers) for t in graph.op(m).outputs)
            if 2 * largest / max(1, head_cost.tiles) > buffer:  # a tile in and its epilogue's result out
                break
            group += readers
            members.update(readers)
        if len(group) == 1:
            continue
        grouped.update(group)
        bw = unit_bandwidth_gbps(unit, chip)
        removed_read: dict[str, int] = {}
        removed_write: dict[str, int] = {}
        for m in group:
            for t in graph.op(m).outputs:
                readers_of_t = consumers.get(t.name, [])
                if t.name in graph_outputs or not readers_of_t or any(c not in members for c in readers_of_t):
                    continue
                b = deployed_bytes(t, costs[m][unit_name].dtype)
                removed_write[m] = removed_write.get(m, 0) + b
                for c in set(readers_of_t):
                    removed_read[c] = removed_read.get(c, 0) + b
        folded = _folded(graph, head, group, consumers)
        for m in group:
            cost = costs[m][unit_name]
            r = min(removed_read.get(m, 0), cost.dram_read_bytes)
            w = min(removed_write.get(m, 0), cost.dram_write_bytes)
            if m == folded:  # its scale and shift live in the head's weights and bias now
                r, w = cost.dram_read_bytes, cost.dram_write_bytes
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
            costs[m][unit_name] = replace(
                cost,
                compute_ns=compute_ns,
                memory_ns=memory_ns,
                overhead_ns=overhead,
                dram_read_bytes=cost.dram_read_bytes - r,
                dram_write_bytes=cost.dram_write_bytes - w,
                energy_pj=max(0.0, energy),
                note=cost.note + note,
            )
            saved += r + w
            if m != head:
                pairs.append(FusedPair(head, m, unit_name))
    return FusionResult(CostTable(table.precision, costs), tuple(pairs), saved)


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
    if op.category not in _HEADS or len(op.outputs) != 1 or op.outputs[0] in graph.outputs:
        return None
    readers = consumers.get(op.outputs[0].name, [])
    if len(readers) == 1 and readers[0] in group and graph.op(readers[0]).op_type in _AFFINE:
        return readers[0]
    return None
