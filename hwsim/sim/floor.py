"""A lower bound on the engine's makespan, known before the run (:func:`makespan_floor_ps`).

What the engine does can only make a run longer than three simple sums of each op's least
uncontended time (:func:`~hwsim.sim.blocks.op_time_ns`, over the shard counts the engine may
run it as, :meth:`hwsim.sim.engine.Simulation.shard_cost`):

- a core runs its ops one at a time in its order (:attr:`~hwsim.sim.plan.Plan.core_order`,
  a lockstep unit's ops all on its first core), so the run lasts at least each core's sum;
- an op split ``k`` ways holds ``k`` cores of its unit for its time, so the run lasts at least
  each unit's least core-time over its cores;
- an op starts after the ops whose outputs it reads have finished: the longest chain.

Contention, DMA transfers, waiting for cores or power and a hot chip's throttled clock only
add time (the engine's blocks last at least their uncontended time: a stream is capped at its
own rate, a fixed-length block and an overhead are rounded up to whole picoseconds), so the
floor holds for every run of the plan; frames after the first only add work.

:func:`placement_floor_ps` finds the same floor from where each op is placed (unit and core),
before a schedule, a fusion or a plan is made: the re-planning rules out a probe with it at
100,000 ops, given costs no fusion of that placement can undercut
(:func:`cost_models.fusion.least_fused_table`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from chips.schema import Chip, Unit
from chips.units import PS_PER_NS
from cost_models.base import OpCost
from cost_models.table import CostTable, op_signature
from graph_ir.ir import ModelGraph, Op
from hwsim.sim.blocks import op_time_ns
from hwsim.sim.plan import Plan, runs_in_lockstep, splits
from hwsim.sim.splitting import shard_cost

__all__ = ["FLOAT_SLACK", "any_schedule_floor_ns", "makespan_floor_ps", "placement_floor_ps"]

#: The floor is lowered by this share (and 1 ps per op): the engine's times are sums of
#: floats rounded up per event, never exactly the sums here.
FLOAT_SLACK = 1e-9


def makespan_floor_ps(
    run_plan: Plan, shard_cost: Callable[[int, int], OpCost | None], double_buffer: bool = True, split: bool = True
) -> int:
    """A makespan no run of ``run_plan`` can beat, in picoseconds (see the module docstring).

    ``shard_cost(i, k)``: op ``i``'s cost run as ``k`` shards (None: it does not split so), as
    the engine costs it; ``double_buffer`` and ``split`` are the engine's options.
    """
    p = run_plan
    producer = {t: i for i, outs in enumerate(p.outputs) for t in outs}
    reads: list[list[int]] = [[] for _ in p.cost]
    for (tensor, _), ops in p.waiting.items():
        j = producer.get(tensor)
        if j is not None:
            for i in ops:
                reads[i].append(j)
    cores = _Cores(p.unit, p.fixed_cores, p.splittable, p.unit_cores, list(p.core_order.values()))
    return _floor_ps(p.cost, cores, reads, shard_cost, double_buffer, split)


def placement_floor_ps(
    graph: ModelGraph, chip: Chip, table: CostTable, placement: Mapping[str, tuple[str, int]],
    double_buffer: bool = True, split: bool = True,
) -> int:  # fmt: skip
    """:func:`makespan_floor_ps` of the plan the engine would make of a schedule that places each
    op of ``graph`` as ``placement`` says (op name -> ``(unit, core)``; no ``Placement.cores``
    fixed) with ``table``'s costs, found without the schedule or the plan: each core's ops are
    the same (:func:`hwsim.sim.plan.plan`: a lockstep unit's all on its first core), so is each
    op's least time and the chains of activations it reads."""
    names = graph.order
    index = {n: i for i, n in enumerate(names)}
    units = {u.name: u for u in chip.units}
    on = [units[placement[n][0]] for n in names]
    ops = [graph.op(n) for n in names]
    by_core: dict[tuple[str, int], list[int]] = {}
    for i, n in enumerate(names):
        u = on[i]
        by_core.setdefault((u.name, 0 if runs_in_lockstep(u) else placement[n][1]), []).append(i)
    reads = [[index[graph.producer[t.name]] for t in op.activations if t.name in graph.producer] for op in ops]
    cores = _Cores(
        [u.name for u in on], [None] * len(names), [splits(op.op_type, u) for op, u in zip(ops, on, strict=True)],
        {u.name: u.cores for u in chip.units}, list(by_core.values()),
    )  # fmt: skip
    costs = [table.costs[n][u.name] for n, u in zip(names, on, strict=True)]
    shards: dict[tuple[object, ...], OpCost | None] = {}  # identical ops split alike

    def shard_cost_of(i: int, k: int) -> OpCost | None:  # as the engine's Simulation.shard_cost
        if k == 1:
            return costs[i]
        n, u = names[i], on[i]
        precision, knobs = table.precision_of(n), table.knobs_of(n)
        key = (op_signature(ops[i]), u.name, precision, knobs, k)
        if key not in shards:
            shards[key] = shard_cost(ops[i], u, chip, precision, k, knobs)
        return shards[key]

    return _floor_ps(costs, cores, reads, shard_cost_of, double_buffer, split)


@dataclass(frozen=True, slots=True)
class _Cores:
    """Where a plan's ops run: each op's unit, fixed core count and splittability, each unit's
    cores, and each core's ops."""

    unit: Sequence[str]
    fixed: Sequence[int | None]
    splittable: Sequence[bool]
    unit_cores: Mapping[str, int]
    core_ops: list[Sequence[int]]


def _floor_ps(
    costs: Sequence[OpCost], where: _Cores, reads: Sequence[Sequence[int]],
    shard_cost: Callable[[int, int], OpCost | None], double_buffer: bool, split: bool,
) -> int:  # fmt: skip
    # each cost's time by its id (identical ops share one cost object); the cost is kept with
    # it, so no other cost gets its id meanwhile
    time_of: dict[int, tuple[OpCost, float]] = {}

    def time_ns(cost: OpCost) -> float:
        got = time_of.get(id(cost))
        if got is None:
            got = time_of[id(cost)] = (cost, op_time_ns(cost, double_buffer))
        return got[1]

    least_ns: list[float] = []
    core_ns = dict.fromkeys(where.unit_cores, 0.0)
    for i, cost in enumerate(costs):
        fixed = where.fixed[i]
        if fixed is None and split and where.splittable[i]:
            ks: Iterable[int] = range(1, where.unit_cores[where.unit[i]] + 1)
        elif fixed is None or fixed == 1:
            least_ns.append(t := time_ns(cost))
            core_ns[where.unit[i]] += t
            continue
        else:
            ks = (fixed,)
        times = [(k, time_ns(c)) for k in ks if (c := shard_cost(i, k)) is not None]
        least_ns.append(min(t for _, t in times))
        core_ns[where.unit[i]] += min(k * t for k, t in times)
    floor_ns = max(
        max((sum(least_ns[i] for i in ops) for ops in where.core_ops), default=0.0),
        max((ns / where.unit_cores[u] for u, ns in core_ns.items()), default=0.0),
        _longest_chain_ns(reads, least_ns),
    )
    return max(0, math.floor(floor_ns * PS_PER_NS * (1.0 - FLOAT_SLACK)) - len(costs))


def _longest_chain_ns(reads: Sequence[Sequence[int]], least_ns: list[float]) -> float:
    """The longest chain of ops, each reading the one before it, by ``least_ns`` (ops are in
    the graph's topological order; ``reads[i]``: the ops whose outputs op ``i`` reads)."""
    end: list[float] = []
    for i, ns in enumerate(least_ns):
        end.append(ns + max((end[j] for j in reads[i]), default=0.0))
    return max(end, default=0.0)


def any_schedule_floor_ns(graph: ModelGraph, chip: Chip, table: CostTable) -> float:
    """A makespan no schedule of ``graph`` on ``chip`` can beat, in ns: the longest chain and
    the load over every core (:func:`scheduler.bounds.critical_path_bound_ns` and
    :func:`~scheduler.bounds.load_bound_ns`), with each op
    at its least uncontended time over its units *and the shard counts the engine may split it
    into* (:func:`hwsim.sim.splitting.shard_cost`), its load at its least core-time (``k`` cores
    for a shard's time). The scheduler's bound takes each op unsplit, which a split op beats: on
    the RK3588 ResNet-18 runs in 3.05 ms against that bound's 3.47.
    """
    units = {u.name: u for u in chip.units}
    least: dict[tuple[object, ...], tuple[float, float]] = {}  # identical ops split alike
    least_ns, core_ns = [], []
    for n in graph.order:
        if n in table.fused_into:  # run inside the op it is fused into, which is costed with it
            least_ns.append(0.0)
            core_ns.append(0.0)
            continue
        op = graph.op(n)
        key = (op_signature(op), table.precision_of(n), table.knobs_of(n), tuple(sorted(table.costs[n])))
        if key not in least:
            least[key] = _least_split_ns(op, units, table, n, chip)
        t, core_t = least[key]
        least_ns.append(t)
        core_ns.append(core_t)
    index = {n: i for i, n in enumerate(graph.order)}
    reads = [[index[p] for p in graph.g.pred[n]] for n in graph.order]
    load = sum(core_ns) / max(sum(u.cores for u in chip.units), 1)
    return max(_longest_chain_ns(reads, least_ns), load) * (1.0 - FLOAT_SLACK)


def _least_split_ns(op: Op, units: Mapping[str, Unit], table: CostTable, name: str, chip: Chip) -> tuple[float, float]:
    """``op``'s least uncontended time over its units and shard counts, and its least core-time."""
    best, best_core = math.inf, math.inf
    precision, knobs = table.precision_of(name), table.knobs_of(name)
    for unit_name, cost in table.costs[name].items():
        u = units[unit_name]
        for k in range(1, u.cores + 1) if splits(op.op_type, u) else (1,):
            c = cost if k == 1 else shard_cost(op, u, chip, precision, k, knobs)
            if c is not None:
                t = op_time_ns(c, True)
                best, best_core = min(best, t), min(best_core, k * t)
    return best, best_core

