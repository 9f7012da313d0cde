"""The schedule resolved for the event loop: per-op and per-transfer facts as arrays by index.

An op's index is its place in the graph's order, a transfer's its place in the schedule's
transfers; the loop runs ``frames`` copies of both (:mod:`hwsim.sim.frames`). Everything here
is fixed before time 0: costs, placements, which inputs each op waits for, which link carries
each transfer, how fast, and which memories it streams through.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from chips.schema import Chip, Unit
from chips.units import GBPS_PER_BYTES_PER_PS, PS_PER_NS
from cost_models.base import OpCost
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from hwsim.sim.frames import Core
from hwsim.sim.options import SimulationError
from scheduler.schedule import Schedule, Transfer

__all__ = ["Plan", "TransferPlan", "memory_capacity", "memory_of", "plan", "runs_in_lockstep", "splits"]

#: ``(tensor, domain)``: a tensor present in a domain.
Where = tuple[str, str]


def memory_of(chip: Chip, domain: str) -> str:
    """The memory whose bandwidth a stream into or out of ``domain`` uses: ``"dram"`` or the SRAM domain."""
    return "dram" if chip.domain(domain).kind == "dram" else domain


def memory_capacity(chip: Chip) -> dict[str, float]:
    """Bandwidth of each memory in bytes/ps: ``"dram"``, then every SRAM domain."""
    capacity = {"dram": chip.dram.bandwidth_gbps / GBPS_PER_BYTES_PER_PS}
    for d in chip.domains:
        if d.kind == "sram":
            capacity[d.name] = float(d.bandwidth_gbps or 0) / GBPS_PER_BYTES_PER_PS
    return capacity


@dataclass(frozen=True, slots=True)
class TransferPlan:
    """The schedule's transfers, each with its link and the memories it streams through."""

    transfers: tuple[Transfer, ...]
    #: ``(tensor, source domain)`` -> transfers that start when the tensor is there.
    outgoing: Mapping[Where, tuple[int, ...]]
    #: :attr:`chips.schema.Link.key` of each transfer's link.
    link: tuple[str, ...]
    latency_ps: tuple[int, ...]
    rate_bytes_per_ps: tuple[float, ...]
    #: Memory -> bytes of its bandwidth per byte moved (a DRAM-to-DRAM copy: 2 for ``"dram"``).
    uses: tuple[dict[str, float], ...]
    #: DMA channels of each link used, in order of first use.
    channels: Mapping[str, int]


def _transfer_plan(chip: Chip, schedule: Schedule) -> TransferPlan:
    transfers = tuple(schedule.transfers)
    outgoing: dict[Where, list[int]] = {}
    for j, tr in enumerate(transfers):
        outgoing.setdefault((tr.tensor, tr.src_domain), []).append(j)
    keys, latency, rate, uses_all = [], [], [], []
    channels: dict[str, int] = {}
    # what a transfer's (source, destination) domains decide, once per pair (a run has a few
    # pairs and up to hundreds of thousands of transfers): link key, latency, rate, memory uses
    by_pair: dict[tuple[str, str], tuple[str, int, float, dict[str, float]]] = {}
    for tr in transfers:
        pair = (tr.src_domain, tr.dst_domain)
        facts = by_pair.get(pair)
        if facts is None:
            facts = by_pair[pair] = _pair_facts(chip, tr, channels)
        keys.append(facts[0])
        latency.append(facts[1])
        rate.append(facts[2])
        uses_all.append(facts[3])  # one dict per pair: the engine only reads it
    return TransferPlan(
        transfers, {k: tuple(v) for k, v in outgoing.items()}, tuple(keys), tuple(latency),
        tuple(rate), tuple(uses_all), channels,
    )  # fmt: skip


def _pair_facts(
    chip: Chip, tr: Transfer, channels: dict[str, int]
) -> tuple[str, int, float, dict[str, float]]:
    """The link a transfer's domains use (its DMA channels noted in ``channels``): its key,
    latency (ps), rate (bytes/ps) and the memories' bandwidth per byte moved.

    Raises
    ------
    SimulationError
        If no link joins the two domains.
    """
    link = chip.link_between(tr.src_domain, tr.dst_domain)
    if link is None:
        raise SimulationError(f"no link from {tr.src_domain!r} to {tr.dst_domain!r} for tensor {tr.tensor!r}")
    channels[link.key] = link.dma_channels
    uses: dict[str, float] = {}
    for end in (tr.src_domain, tr.dst_domain):
        uses[memory_of(chip, end)] = uses.get(memory_of(chip, end), 0.0) + 1.0
    return link.key, math.ceil(link.latency_ns * PS_PER_NS), link.bandwidth_gbps / GBPS_PER_BYTES_PER_PS, uses


@dataclass(frozen=True, slots=True)
class Plan:
    """One frame of the schedule, by op index (the graph's order)."""

    names: tuple[str, ...]
    op_types: tuple[str, ...]
    unit: tuple[str, ...]
    core: tuple[int, ...]
    #: The memory whose bandwidth the op streams through (:func:`memory_of` its unit's domain).
    memory: tuple[str, ...]
    domain: tuple[str, ...]
    cost: tuple[OpCost, ...]
    #: Cores the placement fixes (``Placement.cores``; None: the engine may split).
    fixed_cores: tuple[int | None, ...]
    #: The unit has several cores and lists the op's type in ``split_ops``.
    splittable: tuple[bool, ...]
    #: Names of each op's output tensors.
    outputs: tuple[tuple[str, ...], ...]
    #: How many distinct activations (tensor, domain) each op waits for.
    inputs_needed: tuple[int, ...]
    #: ``(tensor, domain)`` -> ops waiting for it.
    waiting: Mapping[Where, tuple[int, ...]]
    #: Cores of each unit, in the chip's order.
    unit_cores: Mapping[str, int]
    #: Each core's ops, in the schedule's order (every core of every unit, maybe empty).
    core_order: Mapping[Core, tuple[int, ...]]
    graph_inputs: tuple[str, ...]
    host: str
    capacity_bytes_per_ps: Mapping[str, float]
    transfers: TransferPlan


def _fixed_cores(
    graph: ModelGraph, units: list[Unit], schedule: Schedule
) -> tuple[int | None, ...]:
    """``Placement.cores`` of each op (``units``: each op's unit), checked against its unit."""
    fixed: list[int | None] = []
    for n, u in zip(graph.order, units, strict=True):
        k = schedule.placements[n].cores
        if k is not None and not 1 <= k <= u.cores:
            raise SimulationError(
                f"op {n!r} asks for {k} cores of unit {u.name!r}, which has {u.cores}"
            )
        if k is not None and k > 1 and graph.op(n).op_type not in u.split_ops:
            raise SimulationError(
                f"op {n!r} ({graph.op(n).op_type}) cannot be split on unit {u.name!r}"
            )
        fixed.append(k)
    return tuple(fixed)


def _lockstep(
    unit: str,
    cores: int,
    units: list[Unit],
    start_ns: list[float],
    core: list[int],
    core_order: dict[Core, tuple[int, ...]],
) -> None:
    """Run ``unit``'s ops as its cores do in lockstep (``core_mode: lockstep``): one op at a
    time, all issued from core 0, in the order the schedule planned to start them (ties in the
    graph's order), which keeps every other core's order satisfiable; a splittable op still
    spreads over the idle cores (the engine splits it), so the other cores only run shards.

    ``core`` (each op's core) and ``core_order`` are changed in place.
    """
    ops = sorted((i for i, u in enumerate(units) if u.name == unit), key=lambda i: (start_ns[i], i))
    for i in ops:
        core[i] = 0
    core_order[(unit, 0)] = tuple(ops)
    for c in range(1, cores):
        core_order[(unit, c)] = ()


def runs_in_lockstep(unit: Unit) -> bool:
    """Whether ``unit`` issues all its ops from its first core, one at a time (:func:`_lockstep`)."""
    return unit.core_mode == "lockstep" and unit.cores > 1


def splits(op_type: str, unit: Unit) -> bool:
    """Whether the engine may split an op of ``op_type`` over ``unit``'s cores."""
    return unit.cores > 1 and op_type in unit.split_ops


def plan(graph: ModelGraph, chip: Chip, table: CostTable, schedule: Schedule) -> Plan:
    """Resolve ``schedule`` of ``graph`` on ``chip`` into a :class:`Plan`.

    Raises
    ------
    SimulationError
        If a placement asks for more cores than its unit has, or splits an op its unit cannot
        split, or a transfer has no link.
    """
    names = tuple(graph.order)
    index = {n: i for i, n in enumerate(names)}
    ops = [graph.op(n) for n in names]
    by_name = {u.name: u for u in chip.units}
    units = [by_name[schedule.placements[n].unit] for n in names]
    fixed = _fixed_cores(graph, units, schedule)
    domain = tuple(u.domain for u in units)
    memory = {d.name: memory_of(chip, d.name) for d in chip.domains}
    waiting: dict[Where, list[int]] = {}
    needed = []
    for i, op in enumerate(ops):
        keys = {(t.name, domain[i]) for t in op.activations}
        needed.append(len(keys))
        for key in keys:
            waiting.setdefault(key, []).append(i)
    unit_cores = {u.name: u.cores for u in chip.units}
    core_order = {
        (u, c): tuple(index[n] for n in schedule.core_order.get((u, c), ()))
        for u, cores in unit_cores.items()
        for c in range(cores)
    }
    core = [schedule.placements[n].core for n in names]
    for u in chip.units:
        if runs_in_lockstep(u):
            start_ns = [schedule.placements[n].est_start_ns for n in names]
            _lockstep(u.name, u.cores, units, start_ns, core, core_order)
    return Plan(
        names, tuple(op.op_type for op in ops), tuple(u.name for u in units),
        tuple(core), tuple(memory[d] for d in domain),
        domain, tuple(table.costs[n][units[i].name] for i, n in enumerate(names)), fixed,
        tuple(splits(op.op_type, u) for op, u in zip(ops, units, strict=True)),
        tuple(tuple(t.name for t in op.outputs) for op in ops), tuple(needed),
        {k: tuple(v) for k, v in waiting.items()}, unit_cores, core_order,
        tuple(t.name for t in graph.inputs), chip.host, memory_capacity(chip),
        _transfer_plan(chip, schedule),
    )  # fmt: skip
