"""Re-planning the default policy with what the engine observed.

The default search (:mod:`scheduler.affinity_locality`) plans on an abstract problem: each op
takes its cost-table time on one core, transfers never queue, DRAM is never shared. The
engine differs both ways: it splits an op over a unit's idle cores (an NPU with three cores
runs a chain of convs up to three times faster than planned) and stretches ops and transfers
that share DRAM bandwidth or wait for a DMA channel. A plan made with the table's times can
therefore prefer a split over several units that the engine runs slower than one unit alone.

:func:`replan` closes the loop: simulate the search's schedule, take every op's observed time
(contention, splitting and queueing included) and every transfer's, re-run the search on the
problem with those times (an op never observed keeps its plan, scaled by what was observed on
the same unit; an edge never observed keeps its volume; an observed one takes its observed
time, latency and queueing included), simulate the new schedule, and repeat for
:data:`REPLAN_ROUNDS` rounds, every observation kept (a round whose search repeats a placement
simulated already learns that run's times instead); the schedule with the shortest simulated
makespan wins (the first on ties).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal, Protocol, TypeVar

import numpy as np

from chips.schema import Chip
from chips.units import PS_PER_NS
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from hwsim.sim.engine import Trace
from scheduler import DEFAULT_POLICY, Schedule, get_policy
from scheduler.heft import heft
from scheduler.list_scheduling import retime
from scheduler.onnx_policies import (
    COLOCATED_MAX_OPS,
    INPUTS,
    OUTPUTS,
    core_orders,
    model_options,
    model_problem,
    schedule_from_solution,
)
from scheduler.problem import Problem, Solution, make_problem
from scheduler.single_unit import fastest_single_units

__all__ = ["REPLAN_ROUNDS", "SLOWER", "Observed", "Simulated", "default_plan", "observed_problem", "replan"]

#: Re-planning rounds after the first plan (each one search and one simulation).
REPLAN_ROUNDS = 3
#: Units alone probed before re-planning: at most this many, the ones planned fastest ...
MAX_PROBES = 3
#: ... and within this factor of the fastest (the engine runs a unit alone up to ~2x faster
#: than planned, when it splits each op over the unit's cores).
PROBE_FACTOR = 2.5
#: Above this many ops (each round re-times and simulates the whole graph: seconds at 10k ops)
#: one probe and one re-plan only.
LARGE_OPS = 5000
#: What :func:`replan`'s ``probe`` returns for a probe it did not run: it cannot win.
SLOWER: Final = "slower"


@dataclass(slots=True)
class Observed:
    """What the engine showed so far: op run times (ns) by ``(task, unit)`` index, and per edge
    ``(producer task, consumer task)`` the observed transfer time (queueing included) over the
    planned one; the latest observation wins."""

    exec_ns: dict[tuple[int, int], float] = field(default_factory=dict)
    edge_ratio: dict[tuple[int, int], float] = field(default_factory=dict)
    #: per observed edge, its link's latency in units of volume (latency / time per unit of
    #: volume, the producer's unit's volume scale included): what turns the ratio into a volume
    edge_lat_volume: dict[tuple[int, int], float] = field(default_factory=dict)

    def learn(self, problem: Problem, chip: Chip, trace: Trace) -> None:
        """Record the first frame's op and transfer times of ``trace`` (a run of ``problem``'s
        graph on ``chip``; its domains indexed as :func:`scheduler.onnx_policies.problem_from_graph` does)."""
        task = {name: i for i, name in enumerate(problem.tasks)}
        unit = {name: u for u, name in enumerate(problem.units)}
        dom = {d.name: k for k, d in enumerate(chip.domains)}
        ran_on: dict[str, int] = {}
        for r in trace.ops:
            if r.frame == 0 and r.op in task:
                self.exec_ns[task[r.op], unit[r.unit]] = r.duration_ps / PS_PER_NS
                ran_on[r.op] = unit[r.unit]
        for t in trace.transfers:
            if t.frame or t.producer not in task:
                continue
            a, b = dom[t.src_domain], dom[t.dst_domain]
            scale, lat = float(problem.comm_scale[a, b]), float(problem.comm_lat[a, b])
            planned = t.bytes * scale + lat
            if planned <= 0:
                continue
            ratio = (t.end_ps - t.queued_ps) / PS_PER_NS / planned
            per_volume = scale * problem.volume_scale[ran_on[t.producer]]
            lat_volume = lat / per_volume if per_volume > 0 else 0.0
            for c in t.consumers:
                if c in task:
                    self.edge_ratio[task[t.producer], task[c]] = ratio
                    self.edge_lat_volume[task[t.producer], task[c]] = lat_volume


def _unit_ratios(problem: Problem, seen: Mapping[tuple[int, int], float]) -> np.ndarray:
    """Per unit: observed time / planned time over the ops observed on it (1 where none)."""
    obs = np.zeros(problem.n_units)
    plan = np.zeros(problem.n_units)
    for (i, u), ns in seen.items():
        obs[u] += ns
        plan[u] += problem.exec_ns[i, u]
    return np.where(plan > 0, obs / np.where(plan > 0, plan, 1.0), 1.0)


def observed_problem(problem: Problem, seen: Observed, cores: tuple[int, ...] | None = None) -> Problem:
    """``problem`` with the observed times: an op's own on a unit where it ran, else its plan
    scaled by its unit's observed/planned ratio; an edge's volume rescaled so that crossing
    domains takes the observed time (edges never observed keep theirs). ``cores``: per unit,
    the cores to plan with (default: ``problem``'s)."""
    ex = problem.exec_ns * _unit_ratios(problem, seen.exec_ns)[None, :]
    for (i, u), ns in seen.exec_ns.items():
        ex[i, u] = ns
    ex[~np.isfinite(problem.exec_ns)] = np.inf
    ratio, lat_volume = seen.edge_ratio, seen.edge_lat_volume
    edges = [
        (i, j, _observed_volume(vol, ratio.get((i, j), 1.0), lat_volume.get((i, j), 0.0)))
        for i, succ in enumerate(problem.succs)
        for j, vol in succ
    ]
    return make_problem(
        problem.tasks,
        problem.units,
        ex,
        edges,
        kinds=problem.kinds,
        cores=problem.cores if cores is None else cores,
        unit_domain=problem.unit_domain,
        comm_scale=problem.comm_scale,
        comm_lat=problem.comm_lat,
        affinity=problem.affinity,
        volume_scale=problem.volume_scale,
    )


def _observed_volume(volume: float, ratio: float, lat_volume: float) -> float:
    """The volume that takes ``ratio`` times an edge's planned time on the link it was observed
    on: its latency (``lat_volume``, in units of volume) stretched too. Only the volume was
    scaled before, so an edge of a few KB behind a 20 us DMA latency that waited 60 us for the
    link's one channel was re-planned at about 21 us."""
    if ratio == 1.0 or volume == 0.0:
        return volume
    return max(0.0, ratio * volume + (ratio - 1.0) * lat_volume)


class Simulated(Protocol):
    """A simulated schedule (:class:`hwsim.policy_check` keeps one per candidate)."""

    @property
    def schedule(self) -> Schedule: ...

    @property
    def trace(self) -> Trace: ...


S = TypeVar("S", bound=Simulated)


def replan(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    first: S,
    simulate: Callable[[Schedule], S | None],
    rounds: int = REPLAN_ROUNDS,
    problem: Problem | None = None,
    probe: Callable[[Schedule, int], S | None | Literal["slower"]] | None = None,
    floor: Callable[[Mapping[str, tuple[str, int]]], int] | None = None,
) -> list[S]:
    """``first`` (the default policy's simulated schedule) and up to ``rounds`` re-plans, each
    simulated by ``simulate`` (None: the run ruled it out, e.g. a power cap). Stops early when
    a re-plan is ruled out, or repeats the placement of the run it last learned (one repeating
    another simulated placement learns that run and searches again: :func:`_rounds`). ``problem``: the one
    ``first`` was planned on (:func:`default_plan`), else built again.

    ``probe(schedule, beat_ps)``, above :data:`LARGE_OPS` ops, simulates the probe instead of
    ``simulate`` (None: ruled out), or returns :data:`SLOWER` without running it when it cannot
    finish before ``beat_ps``, the shortest makespan simulated so far
    (:func:`hwsim.sim.engine.simulate_unless_slower`): it could not win (ties keep the first),
    and with no probe's times to learn from, no re-plan follows (at 10k ops, one learned from
    the first schedule's times alone cost a whole simulation and lost to it). ``floor(placement)``
    (op -> ``(unit, core)``), above :data:`LARGE_OPS` ops, a makespan no schedule so placed can
    beat: a probe whose floor already reaches ``beat_ps`` is not even built (seconds at 100k ops)."""
    if problem is None:
        problem = default_plan(graph, chip, table)[1]
    large = len(graph.order) > LARGE_OPS
    rounds = min(rounds, 1) if large else rounds
    out = [first]
    seen = Observed()
    ran = {_order(first.schedule.core_order)}
    # Above LARGE_OPS ops, where no engine check follows: the plan on plain costs as well where
    # the default planned on colocated ones, kept when the engine runs it faster.
    extra = _plain_cost_try(graph, chip, table, first, ran, simulate, probe) if large else None
    if extra is not None:
        ran.add(_order(extra.schedule.core_order))
        out.append(extra)
    # Probes: every unit alone (its single-unit schedule) that the plan puts within
    # PROBE_FACTOR of the best, as the engine runs it (ops split over idle cores, no transfers).
    # One whose placement was simulated in another order still runs: the engine runs each
    # core's ops in the schedule's order, and the order alone can decide (an NPU of one core).
    for sol in _probes(problem, 1 if large else MAX_PROBES):
        if _order(core_orders(problem, sol)) in ran:  # one already simulated is not built again
            continue
        beat_ps = min(s.trace.makespan_ps for s in out)
        if large and floor is not None and floor(_solution_where(problem, sol)) >= beat_ps:
            return out  # as SLOWER, before the schedule is built
        sched = schedule_from_solution(graph, chip, table, problem, sol, DEFAULT_POLICY)
        got = probe(sched, beat_ps) if large and probe else simulate(sched)
        if got == SLOWER:
            return out
        if got is not None:
            ran.add(_order(got.schedule.core_order))
            seen.learn(problem, chip, got.trace)
            out.append(got)
    return _rounds(graph, chip, table, problem, out, seen, simulate, rounds)


def _rounds(
    graph: ModelGraph, chip: Chip, table: CostTable, problem: Problem, out: list[S], seen: Observed,
    simulate: Callable[[Schedule], S | None], rounds: int,
) -> list[S]:  # fmt: skip
    """:func:`replan`'s re-plans after its probes: up to ``rounds`` searches on what ``seen``
    holds, each new placement simulated and appended to ``out``.

    A search that returns a placement simulated already learns that run's times and searches
    again (a search's time per op and unit is the latest seen, and a probe running every op
    fused on its unit overwrites what a mixed plan showed: on a phone-like chip a GPU Sigmoid
    planned fused at 4.8 us ran 72 us away from its conv, and the first re-plan repeated that
    plan); it stops when the repeated run was the last one learned.

    A unit whose cores run in lockstep is searched as one core (:attr:`chips.schema.Unit.ops_at_once`):
    its observed times are its ops split over every core, or run one at a time, so planning
    several side by side at those times counted its cores twice (Inception-v1 on rk3588: the
    re-plans estimated 2.74 ms and ran 4.48; as one core, 3.30 and 3.36)."""
    solve = get_policy(DEFAULT_POLICY).solve
    assert solve is not None  # the default is a problem policy
    one_at_a_time = tuple(chip.unit(u).ops_at_once for u in problem.units)
    # the placements simulated so far (made only now: a large graph's probe often ends it above)
    by_placement = {_placement(s.schedule): s for s in out}
    learn = out[-1]
    for _ in range(rounds):
        seen.learn(problem, chip, learn.trace)
        p2 = observed_problem(problem, seen, one_at_a_time)
        solved = solve(p2, model_options())
        key = _solution_placement(p2, solved.solution)  # a repeat is not built into a schedule
        if key in by_placement:
            if by_placement[key] is learn:
                break
            learn = by_placement[key]
            continue
        sched = schedule_from_solution(graph, chip, table, p2, solved.solution, solved.label, solved.reasons)
        got = simulate(sched)
        if got is None:
            break
        by_placement[key] = learn = got
        out.append(got)
    return out


def default_plan(graph: ModelGraph, chip: Chip, table: CostTable) -> tuple[Schedule, Problem]:
    """The default policy's schedule of ``graph`` and the problem it planned on (what
    :func:`replan` re-plans from).

    Above :data:`LARGE_OPS` ops a unit whose cores run in lockstep is planned as one core
    (``serial_lockstep``: the engine runs its ops one at a time). Nothing corrects the plan
    there but one probe, and a plan that put up to three NPU ops side by side was simulated
    ~2.5x longer than estimated (10k-op layered DAG on rk3588: 101 ms against 40; planned
    as one core, 52 ms against 47). Below, the probes, re-plans and engine check correct it,
    and the plan with every core was as good (see docs/scheduling.md, "Above 5,000 ops").
    There HEFT's placement as if every core ran its own ops (:func:`_as_if_side_by_side`)
    is kept instead when, re-timed on the one-core problem, it is shorter than the search's.
    """
    policy = get_policy(DEFAULT_POLICY)
    assert policy.solve is not None and policy.model is None  # the default is a problem policy
    serial = len(graph.order) > LARGE_OPS
    problem = model_problem(graph, chip, table, colocated=policy.colocated, serial_lockstep=serial)
    solved = policy.solve(problem, model_options())
    sol, reasons = solved.solution, solved.reasons
    if serial and (alt := _as_if_side_by_side(problem, chip)) is not None and alt.makespan_ns < sol.makespan_ns:
        sol, reasons = alt, None
    return schedule_from_solution(graph, chip, table, problem, sol, solved.label, reasons), problem


def _plain_cost_try(
    graph: ModelGraph, chip: Chip, table: CostTable, first: S, ran: set[_OrderKey],
    simulate: Callable[[Schedule], S | None], probe: Callable[[Schedule, int], S | None | Literal["slower"]] | None,
) -> S | None:  # fmt: skip
    """HEFT's plan on plain costs, simulated, where the default planned on colocated costs (up
    to :data:`COLOCATED_MAX_OPS` ops); None where it did not, where the plan's placement and
    order were simulated already (``ran``, :func:`_order` keys), where ``probe`` finds it cannot
    beat ``first`` (:data:`SLOWER`) or where it was ruled out. (The probes' placement floor is
    not asked: on the six 10k-op pairs of the benchmark it was 1-64 % below ``first`` and ruled
    nothing out, at 0.1-0.3 s each.)

    The colocated costs assume each op fused with its neighbours on one unit; what the engine
    makes of that plan depends on the DRAM contention its concurrency causes, which no plan
    estimates. On 10k- and 15k-op layered DAGs on jetson_orin_nano the colocated plan was
    estimated 0.8 % shorter than this one and simulated 0.5 % longer (docs/scheduling.md)."""
    if not get_policy(DEFAULT_POLICY).colocated or len(graph.order) > COLOCATED_MAX_OPS:
        return None
    plain = model_problem(graph, chip, table, colocated=False, serial_lockstep=True)
    sol = heft(plain)
    if _order(core_orders(plain, sol)) in ran:
        return None
    sched = schedule_from_solution(graph, chip, table, plain, sol, DEFAULT_POLICY)
    got = probe(sched, first.trace.makespan_ps) if probe is not None else simulate(sched)
    return None if got is None or got == SLOWER else got


def _as_if_side_by_side(problem: Problem, chip: Chip) -> Solution | None:
    """HEFT's placement on ``problem`` with every unit's cores running ops side by side,
    re-timed on ``problem`` (None: ``problem`` already has them all).

    Where a lockstep unit is one core, HEFT's greedy pass can pile work on it that the
    placement with every core left elsewhere (100k-op transformer on rk3588: 80% of the ops on
    the NPU, estimated 2613 ms and simulated 2408, against 2464 and 2345 for this one).
    """
    wide = tuple(u.cores for u in chip.units)
    if problem.cores == wide:
        return None
    return retime(problem, heft(replace(problem, cores=wide)).unit)


def _probes(problem: Problem, most: int) -> list[Solution]:
    """The ``most`` (at most :data:`MAX_PROBES`) units planned fastest alone, within
    :data:`PROBE_FACTOR` of the fastest (only those are built into schedules: seconds at 100k ops)."""
    return fastest_single_units(problem, min(most, MAX_PROBES), PROBE_FACTOR)


def _placement(sched: Schedule) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((n, p.unit) for n, p in sched.placements.items()))


#: :func:`_order`'s key: a schedule's placement and per-core order.
_OrderKey = tuple[tuple[tuple[str, int], tuple[str, ...]], ...]


def _order(order: Mapping[tuple[str, int], tuple[str, ...]]) -> _OrderKey:
    """A schedule's placement and per-core order as one key (cores running nothing left out)."""
    return tuple(sorted((k, ops) for k, ops in order.items() if ops))


def _solution_where(problem: Problem, sol: Solution) -> dict[str, tuple[str, int]]:
    """Each op's unit and core in the schedule :func:`schedule_from_solution` makes of ``sol``."""
    return {
        n: (problem.units[sol.unit[i]], sol.core[i]) for i, n in enumerate(problem.tasks) if n not in (INPUTS, OUTPUTS)
    }


def _solution_placement(problem: Problem, sol: Solution) -> tuple[tuple[str, str], ...]:
    """:func:`_placement` of the schedule :func:`schedule_from_solution` makes of ``sol``."""
    return tuple(
        sorted((n, problem.units[sol.unit[i]]) for i, n in enumerate(problem.tasks) if n not in (INPUTS, OUTPUTS))
    )
