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

**Fusion is a decision, per group and per chip** (``mode="auto"``): a fused
group keeps its intermediate on chip, so its *working set* per output tile (the head's output
tile, at :data:`ACCUMULATOR_BYTES` per element after a conv/matmul on a unit whose accumulators
sit in that buffer (an NPU's), the largest
epilogue result tile, and the epilogue's other operands: a tile of a residual ``Add``'s second
input, a per-channel constant whole) must fit the unit's on-chip buffer
(:meth:`chips.schema.Unit.onchip_bytes`). What does not fit spills: per tile it is written to
DRAM and read back (:func:`spill_bytes`; a head that ran in one tile is re-tiled instead),
extra traffic on the head. The group's members are
costed fused (spill included) and unfused (a folded BatchNormalization stays folded: folding
changes weights, it keeps nothing on chip), each as the sum of its members' latencies, and the
cheaper is kept, with a one-line reason (:class:`FusionDecision`). ``mode="on"`` fuses every
legal group, ``mode="off"`` none; both still record the decisions they overrode. A kept group
that spills runs with its spill charged, in either mode.

>>> sorted(model_for("npu").default_fuses)[:3]
['Add', 'BatchNormalization', 'Clip']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from chips.schema import Chip, Unit
from cost_models.base import OpCost, model_for, unit_bandwidth_gbps
from cost_models.energy import dram_energy_pj, energy_pj
from cost_models.table import CostTable
from graph_ir.categories import EPILOGUE_CATEGORIES, GEMM_CATEGORIES
from graph_ir.ir import ModelGraph, Op, Tensor, deployed_bytes

__all__ = [
    "ACCUMULATOR_BYTES", "FUSE_MODES", "FusedPair", "FusionDecision", "FusionResult", "can_fuse", "folds_into", "fuse", "fuses",
    "least_fused_table", "spill_bytes", "working_set_bytes",
]  # fmt: skip

#: ``fuse`` modes: ``auto`` keeps a group where fused is the cheaper, ``on`` fuses every legal
#: group, ``off`` none (``hwsim run --fuse``).
FUSE_MODES: tuple[str, ...] = ("auto", "on", "off")

#: Bytes per element of a conv/matmul's accumulator, which a fused epilogue reads before the
#: result is narrowed to the deployed dtype: int32 behind integer MACs, fp32 behind float ones
#: (assumption: no unit here accumulates narrower).
ACCUMULATOR_BYTES = 4

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
class FusionDecision:
    """Whether one candidate group was fused on ``unit``, and why.

    ``members`` is the whole legal group, head first. ``unfused_ns`` and ``fused_ns`` are the
    sums of the members' latencies without and with fusion (spill included; "without" keeps a
    folded BatchNormalization folded); ``saved_dram_bytes`` what fusing saves in DRAM traffic
    against that (spill deducted, negative when the spill moves more than fusion saves).
    ``working_set_bytes`` is the fused group's on-chip bytes per tile (:func:`working_set_bytes`)
    against the unit's ``onchip_bytes``; ``spill_bytes`` what does not fit, over all tiles.
    """

    head: str
    members: tuple[str, ...]
    unit: str
    kept: bool
    unfused_ns: float
    fused_ns: float
    saved_dram_bytes: int
    working_set_bytes: int
    onchip_bytes: int
    spill_bytes: int
    reason: str

    @property
    def gain_ns(self) -> float:
        """Predicted latency fusing saves (negative: fused is slower), ns."""
        return self.unfused_ns - self.fused_ns


@dataclass(frozen=True, slots=True)
class FusionResult:
    """The cost table with fusion applied, what was fused, the DRAM bytes it saved, the mode and
    one decision per candidate group (in graph order of their heads)."""

    table: CostTable
    pairs: tuple[FusedPair, ...]
    saved_dram_bytes: int
    mode: str = "on"
    decisions: tuple[FusionDecision, ...] = ()

    @property
    def kept(self) -> int:
        """Candidate groups fused."""
        return sum(1 for d in self.decisions if d.kept)

    @property
    def rolled_back(self) -> int:
        """Candidate groups left unfused."""
        return len(self.decisions) - self.kept


@dataclass(frozen=True, slots=True)
class _Memo:
    """What :func:`fuse` keeps between calls on the same graph, chip and cost table (a run
    fuses one graph once per schedule it simulates): the graph's wiring, and each legal group's
    decision by ``(members, unit name, mode)``. A group's decision reads only its members'
    costs on its unit, which :func:`fuse` has not changed yet (a member is in no other group)."""

    graph: ModelGraph
    chip: Chip
    table: CostTable
    wiring: _Wiring
    decided: dict[tuple[tuple[str, ...], str, str], tuple[FusionDecision, _Variant]]

    @classmethod
    def of(cls, graph: ModelGraph, chip: Chip, table: CostTable) -> _Memo:
        """The memo of the last call when it was on these very objects, else a new one."""
        last = _LAST[0] if _LAST else None
        if last is not None and last.graph is graph and last.chip is chip and last.table is table:
            return last
        _LAST[:] = [cls(graph, chip, table, _Wiring.of(graph), {})]
        return _LAST[0]


#: The memo of the last :func:`fuse` (at most one).
_LAST: list[_Memo] = []


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


def can_fuse(op: Op, unit: Unit) -> bool:
    """Whether ``op`` may be part of a fusion group on ``unit`` (as its head or in its epilogue);
    whether a group forms depends on the placement and the wiring (:func:`fuse`)."""
    allowed = fuses(unit)
    return _can_head(op, allowed) or _joins(op, allowed)


def fuse(
    graph: ModelGraph, chip: Chip, table: CostTable, placement: Mapping[str, str], mode: str = "auto",
    forced: Mapping[str, bool] | None = None,
) -> FusionResult:
    """Apply fusion to the costs of ops placed by ``placement`` (op name -> unit name).

    ``mode`` is one of :data:`FUSE_MODES`: ``auto`` fuses a legal group where fused is the
    cheaper (see the module docstring), ``on`` every legal group, ``off`` none. ``forced``
    (op name -> fused or not, a mapping's ``fusion`` knob) overrides ``mode`` for the legal group
    holding that op (its first member so named, head first, decides).

    Returns a new :class:`CostTable` in which only the placed unit's entry of a fused op
    changes, the fused (head, member) pairs in graph order, the DRAM bytes saved and the
    decisions.

    Raises
    ------
    ValueError
        An unknown ``mode``.
    """
    if mode not in FUSE_MODES:
        raise ValueError(f"unknown fusion mode {mode!r}; have {', '.join(FUSE_MODES)}")
    memo = _Memo.of(graph, chip, table)
    wiring = memo.wiring
    grouped: set[str] = set()
    # rows copied on write: only a fused op's row changes, the others are the table's own (no
    # row of a cost table is changed in place once made; 100,000 copies per call otherwise)
    costs: dict[str, Mapping[str, OpCost]] = dict(table.costs)
    pairs: list[FusedPair] = []
    decisions: list[FusionDecision] = []
    saved = 0
    units: dict[str, tuple[Unit, frozenset[str]]] = {}  # a placed unit and what it fuses
    for head in graph.order:
        unit_name = placement.get(head)
        if head in grouped or unit_name is None:
            continue
        if unit_name not in units:
            units[unit_name] = (chip.unit(unit_name), fuses(chip.unit(unit_name)))
        unit, allowed = units[unit_name]
        if not _can_head(graph.op(head), allowed):  # most ops: no group starts here
            continue
        group = _group(wiring, head, unit, allowed, placement, grouped, costs[head][unit_name])
        if len(group) == 1:
            continue
        override = next((forced[m] for m in group if m in forced), None) if forced else None
        group_mode = mode if override is None else ("on" if override else "off")
        key = (tuple(group), unit_name, group_mode)
        if key not in memo.decided:
            memo.decided[key] = _decide(wiring, group, costs, unit, chip, group_mode)
        decision, applied = memo.decided[key]
        decisions.append(decision)
        grouped.update(applied.costs)
        for m, cost in applied.costs.items():
            costs[m] = {**costs[m], unit_name: cost}  # a member is in no other group: copied once
            if m != head:
                pairs.append(FusedPair(head, m, unit_name))
        saved += applied.saved_dram_bytes
    fused_into = MappingProxyType({p.consumer: p.producer for p in pairs})
    return FusionResult(replace(table, costs=costs, fused_into=fused_into), tuple(pairs), saved, mode, tuple(decisions))


def least_fused_table(graph: ModelGraph, chip: Chip, table: CostTable, placement: Mapping[str, str]) -> CostTable:
    """``table`` with each op placed by ``placement`` that :func:`fuse` might change (in any mode,
    forced or not) costed as cheaply as any group could make it, untiled: a lower bound found
    without forming a group (a whole :func:`fuse` call costs seconds at 100,000 ops).

    A tensor may stay on chip only where its producer may head or join a group on its unit, it
    is no graph output, and every reader joins on that unit; the bound takes all such bytes off
    its producer's writes and its readers' reads (a group removes only some), the dispatch
    overhead off every op that may join, the DRAM latency off an op left with no DRAM bytes, and
    the compute off a BatchNormalization that may be folded; a spill only adds. So each field
    of a changed op's cost is at most the same field of its cost fused or not, and with one tile
    its latency is at most either cost's latency, which a tiled cost's engine time only exceeds
    (:func:`hwsim.sim.blocks.op_time_ns`). Ops no group may change keep their cost object.
    """
    wiring = _Memo.of(graph, chip, table).wiring
    allowed = {u.name: fuses(u) for u in chip.units}
    read: dict[str, int] = {}
    write: dict[str, int] = {}
    joins: set[str] = set()
    for name in graph.order:
        on = placement.get(name)
        if on is None or not allowed[on]:
            continue
        op = graph.op(name)
        if _joins(op, allowed[on]):
            joins.add(name)
        elif not _can_head(op, allowed[on]):
            continue
        for t in op.outputs:
            readers = wiring.consumers.get(t.name, [])
            if t.name in wiring.outputs or not readers or any(
                placement.get(c) != on or not _joins(graph.op(c), allowed[on]) for c in readers
            ):
                continue
            b = deployed_bytes(t, table.costs[name][on].dtype)
            write[name] = write.get(name, 0) + b
            for c in set(readers):
                read[c] = read.get(c, 0) + b
    costs: dict[str, Mapping[str, OpCost]] = dict(table.costs)
    for name in joins | write.keys():
        unit_name = placement[name]
        unit, cost = chip.unit(unit_name), table.costs[name][unit_name]
        folded = name if name in joins and graph.op(name).op_type in _AFFINE else None
        r, w = min(read.get(name, 0), cost.dram_read_bytes), min(write.get(name, 0), cost.dram_write_bytes)
        if folded is not None:
            r, w = cost.dram_read_bytes, cost.dram_write_bytes
        head = "" if name in joins else name  # a joining op may be a group's member: no dispatch
        least = _fused_cost(cost, name, head, folded, unit, chip, r, w)
        costs[name] = {**costs[name], unit_name: replace(least, tiles=1)}
    return replace(table, costs=costs)


@dataclass(frozen=True, slots=True)
class _Variant:
    """One way to run a group: the fused costs of the members it fuses (head first; none: no
    fusion), the DRAM bytes that saves (spill deducted) and its members' summed latency (ns)."""

    costs: Mapping[str, OpCost]
    saved_dram_bytes: int
    latency_ns: float


def _variant(
    wiring: _Wiring, group: list[str], fused: list[str], costs: Mapping[str, Mapping[str, OpCost]], unit: Unit,
    chip: Chip, spill: int = 0,
) -> _Variant:
    """``group`` run with the members ``fused`` (part of it, head first, or none) fused on
    ``unit``, ``spill`` bytes of the working set spilled by the head (charged to its cost)."""
    if len(fused) < 2:
        return _Variant({}, 0, sum(costs[m][unit.name].latency_ns for m in group))
    head = fused[0]
    folded = _folded(wiring.graph, head, fused, wiring.consumers)
    removed_read, removed_write = _internal_bytes(wiring, fused, costs, unit.name)
    out: dict[str, OpCost] = {}
    saved = -spill
    for m in fused:
        cost = costs[m][unit.name]
        r = min(removed_read.get(m, 0), cost.dram_read_bytes)
        w = min(removed_write.get(m, 0), cost.dram_write_bytes)
        if m == folded:  # its scale and shift live in the head's weights and bias now
            r, w = cost.dram_read_bytes, cost.dram_write_bytes
        out[m] = _fused_cost(cost, m, head, folded, unit, chip, r, w)
        saved += r + w
    if spill:
        out[head] = _spilled(out[head], spill, unit, chip)
    latency = sum((out[m] if m in out else costs[m][unit.name]).latency_ns for m in group)
    return _Variant(out, saved, latency)


def _spilled(cost: OpCost, spill: int, unit: Unit, chip: Chip) -> OpCost:
    """The fused head's ``cost`` with ``spill`` more DRAM bytes, half written, half read back."""
    memory_ns = cost.memory_ns + spill / unit_bandwidth_gbps(unit, chip)
    extra_ns = max(cost.compute_ns, memory_ns) - max(cost.compute_ns, cost.memory_ns)
    energy = cost.energy_pj + dram_energy_pj(chip.dram, spill) + energy_pj(unit.active_w, extra_ns)
    return replace(
        cost,
        memory_ns=memory_ns,
        dram_read_bytes=cost.dram_read_bytes + spill // 2,
        dram_write_bytes=cost.dram_write_bytes + spill - spill // 2,
        energy_pj=energy,
        note=cost.note + f", spills {spill} B of its fused working set",
    )


def _decide(
    wiring: _Wiring, group: list[str], costs: Mapping[str, Mapping[str, OpCost]], unit: Unit, chip: Chip,
    mode: str = "auto",
) -> tuple[FusionDecision, _Variant]:
    """Fused or not: the legal ``group`` (head first) on ``unit`` costed both ways, and the way
    ``mode`` keeps (``auto``: the cheaper; a tie goes to fusing unless it moves more bytes).

    Unfused, a BatchNormalization the head folds stays folded. Returns the decision and the
    variant to apply.
    """
    head = group[0]
    head_cost = costs[head][unit.name]
    accumulator = model_for(unit.kind).accumulates_in_buffer
    ws = working_set_bytes(wiring.graph, group, head_cost.dtype, head_cost.tiles, accumulator)
    onchip = int(unit.onchip_bytes())
    spill = spill_bytes(ws, onchip, head_cost.tiles)
    fused = _variant(wiring, group, group, costs, unit, chip, spill)
    folded = _folded(wiring.graph, head, group, wiring.consumers)
    unfused = _variant(wiring, group, [head, folded] if folded is not None else [], costs, unit, chip)
    saved = fused.saved_dram_bytes - unfused.saved_dram_bytes
    cheaper = fused.latency_ns < unfused.latency_ns or (fused.latency_ns == unfused.latency_ns and saved >= 0)
    kept = mode == "on" or (mode == "auto" and cheaper)
    decision = FusionDecision(
        head, tuple(group), unit.name, kept, unfused.latency_ns, fused.latency_ns, saved, ws, onchip, spill, "",
    )  # fmt: skip
    decision = replace(decision, reason=_reason(decision, mode, unit, folded))
    return decision, fused if kept else unfused


def working_set_bytes(
    graph: ModelGraph, group: list[str], dtype: str, tiles: int, accumulator: bool = False
) -> int:
    """On-chip bytes a fused ``group`` (head first) holds per output tile of its head, the head
    cut into ``tiles``: the head's output tile, the largest epilogue result tile, a tile of each
    other streamed operand of the epilogue and each constant operand whole. With ``accumulator``
    (the unit's accumulators sit in that buffer:
    :attr:`cost_models.base.CostModel.accumulates_in_buffer`) a conv/matmul head's output tile
    counts :data:`ACCUMULATOR_BYTES` per element, else its deployed bytes.
    """
    head = graph.op(group[0])
    made = {t.name for m in group for t in graph.op(m).outputs}
    if accumulator and head.category in GEMM_CATEGORIES:
        head_out = sum(t.elements for t in head.outputs) * ACCUMULATOR_BYTES
    else:
        head_out = sum(deployed_bytes(t, dtype) for t in head.outputs)
    result = max((deployed_bytes(t, dtype) for m in group[1:] for t in graph.op(m).outputs), default=0)
    operands = {t.name: t for m in group[1:] for t in graph.op(m).inputs if t.name not in made}
    streamed = sum(deployed_bytes(t, dtype) for t in operands.values() if not t.is_weight)
    constant = sum(deployed_bytes(t, dtype) for t in operands.values() if t.is_weight)
    return math.ceil((head_out + result + streamed) / max(1, tiles)) + constant


def spill_bytes(working_set: int, onchip_bytes: int, tiles: int) -> int:
    """DRAM bytes a fused group moves because its ``working_set`` (bytes per tile of its head,
    cut into ``tiles``) overflows ``onchip_bytes``: per tile the excess is written out and read
    back. A head that ran in one tile spills nothing: its layer fitted whole, so the fused layer
    can be cut into tiles that fit at no DRAM cost; a tiled head already streams in the finest
    tiles its unit runs (:func:`cost_models.base.pipeline_tiles`), which the group keeps.

    >>> spill_bytes(1000, 4096, 8), spill_bytes(5000, 4096, 8), spill_bytes(5000, 4096, 1)
    (0, 14464, 0)
    """
    if tiles <= 1:
        return 0
    return 2 * max(0, working_set - onchip_bytes) * tiles


def _size(n: float) -> str:
    """Bytes in binary units, as buffers are quoted.

    >>> _size(512), _size(384 * 1024), _size(1.2 * 2**20)
    ('512 B', '384 KiB', '1.2 MiB')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _reason(d: FusionDecision, mode: str, unit: Unit, folded: str | None) -> str:
    """One line: why ``d`` is kept or rolled back."""
    us = abs(d.gain_ns) / 1e3
    fits = f"fused working set {_size(d.working_set_bytes)}"
    where = f"{_size(d.onchip_bytes)} {unit.onchip_level}"
    if d.gain_ns > 0 or (d.gain_ns == 0 and d.saved_dram_bytes >= 0):
        if d.saved_dram_bytes >= 0:
            why = f"saves {us:.3g} us and {d.saved_dram_bytes} DRAM bytes"
        else:
            why = f"saves {us:.3g} us though it moves {-d.saved_dram_bytes} more DRAM bytes"
        if d.spill_bytes:
            why += f" despite a spill ({fits} > {where})"
        if mode == "off":
            return f"not fused (--fuse off); fusing would have {why.replace('saves', 'saved', 1)}"
        return why
    if d.spill_bytes:
        why = f"{fits} > {where}: spills cost {us:.3g} us more"
    else:
        why = f"fused costs {us:.3g} us more"
    if mode == "on":
        return f"fused (--fuse on) although {why}"
    if mode == "off":
        return f"not fused (--fuse off); {why}"
    return why + (f"; {folded} stays folded into {d.head}'s weights" if folded is not None else "")


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
    wiring: _Wiring, head: str, unit: Unit, allowed: frozenset[str], placement: Mapping[str, str],
    grouped: set[str], head_cost: OpCost,
) -> list[str]:
    """The ops fused with ``head`` on ``unit``, ``head`` first (only ``head``: no fusion).

    The group grows a step at a time by every reader of its outputs, as long as all of them
    join (placed on ``unit``, not in another group, of a type it fuses, their other inputs ready)
    and an output tile of the group, coming in and going out, fits the unit's on-chip buffer.
    """
    graph = wiring.graph
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
    """The group's BatchNormalization folded into the head's weights, if any (:func:`folds_into`)."""
    op = graph.op(head)
    readers = consumers.get(op.outputs[0].name, []) if op.outputs else []
    if len(readers) == 1 and readers[0] in group and folds_into(graph, readers[0], consumers) == head:
        return readers[0]
    return None


def folds_into(graph: ModelGraph, name: str, consumers: Mapping[str, list[str]]) -> str | None:
    """The conv/matmul whose weights BatchNormalization ``name`` folds into, if any: it reads that
    head's only output, which nothing else reads and is no graph output (``consumers``: tensor ->
    the names of the ops that read it). A BatchNormalization after anything else (a residual
    ``Add``) runs as a pass of its own."""
    op = graph.op(name)
    head = graph.producer.get(op.inputs[0].name) if op.op_type in _AFFINE and op.inputs else None
    if head is None:
        return None
    h = graph.op(head)
    if h.category not in GEMM_CATEGORIES or len(h.outputs) != 1 or h.outputs[0] in graph.outputs:
        return None
    return head if consumers.get(h.outputs[0].name, []) == [name] else None
