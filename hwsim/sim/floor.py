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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from chips.units import PS_PER_NS
from cost_models.base import OpCost
from hwsim.sim.blocks import op_time_ns
from hwsim.sim.plan import Plan

__all__ = ["FLOAT_SLACK", "makespan_floor_ps"]

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
    # each cost's time by its id (identical ops share one cost object); the cost is kept with
    # it, so no other cost gets its id meanwhile
    time_of: dict[int, tuple[OpCost, float]] = {}

    def time_ns(cost: OpCost) -> float:
        got = time_of.get(id(cost))
        if got is None:
            got = time_of[id(cost)] = (cost, op_time_ns(cost, double_buffer))
        return got[1]

    least_ns: list[float] = []
    core_ns = dict.fromkeys(p.unit_cores, 0.0)
    for i, cost in enumerate(p.cost):
        fixed = p.fixed_cores[i]
        if fixed is None and split and p.splittable[i]:
            ks: Iterable[int] = range(1, p.unit_cores[p.unit[i]] + 1)
        elif fixed is None or fixed == 1:
            least_ns.append(t := time_ns(cost))
            core_ns[p.unit[i]] += t
            continue
        else:
            ks = (fixed,)
        times = [(k, time_ns(c)) for k in ks if (c := shard_cost(i, k)) is not None]
        least_ns.append(min(t for _, t in times))
        core_ns[p.unit[i]] += min(k * t for k, t in times)
    floor_ns = max(
        max((sum(least_ns[i] for i in ops) for ops in p.core_order.values()), default=0.0),
        max((ns / p.unit_cores[u] for u, ns in core_ns.items()), default=0.0),
        _longest_chain_ns(p, least_ns),
    )
    return max(0, math.floor(floor_ns * PS_PER_NS * (1.0 - FLOAT_SLACK)) - len(p.cost))


def _longest_chain_ns(p: Plan, least_ns: list[float]) -> float:
    """The longest chain of ops, each reading the one before it, by ``least_ns`` (ops are in
    the graph's topological order)."""
    producer = {t: i for i, outs in enumerate(p.outputs) for t in outs}
    reads: list[list[int]] = [[] for _ in p.cost]
    for (tensor, _), ops in p.waiting.items():
        j = producer.get(tensor)
        if j is not None:
            for i in ops:
                reads[i].append(j)
    end: list[float] = []
    for i, ns in enumerate(least_ns):
        end.append(ns + max((end[j] for j in reads[i]), default=0.0))
    return max(end, default=0.0)
