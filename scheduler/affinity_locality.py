"""The default policy, ``affinity-locality``: several list schedules, then a local search.

1. Seeds: HEFT, PEFT (look-ahead), CPOP, upward ranks with communication weighted 0x and 2x,
   the best single unit (all locality, no parallelism), the one-pass ``affinity-list``
   (:func:`scheduler.affinity_list.affinity_list`: each op on the unit its type prefers unless
   another finishes clearly earlier) where the problem has preferences, and, on small graphs,
   the linear clusters (:mod:`scheduler.clustering`: the heaviest chains, each kept on one unit)
   mapped to units.
2. Local search from the best seeds: move one task, or a task together with its
   heaviest-communicating neighbour (locality), to another unit; on small graphs (``RICH``)
   also the task's whole linear cluster, the task with all its neighbours, and a swap with a
   task on the target unit, and only for tasks on a binding chain to the makespan
   (:func:`critical_tasks`); re-time the whole schedule exactly (tasks by upward rank computed
   for the *actual* placement, transfers weighted ``TIMED_COMM_WEIGHT`` on small graphs, idle
   gaps filled) and keep the move if the makespan (then the sum of finish times) drops.
   Iterated: kick the best (a few tasks, one task's neighbourhood or linear cluster moved, or
   the order jittered) and descend again, until the budget is spent or ``STALL_KICKS`` kicks in
   a row found nothing better; on small graphs each walk starts from another descended seed.
   On small graphs where every unit has one core, the best is then descended again from every
   exchange of two units' tasks (:func:`unit_swaps`: whole load groups change unit, which no
   path of one-task moves does), with ``budget // SWAP_SHARE`` evaluations more; then ruin and
   recreate (:mod:`scheduler.ruin_recreate`): a connected region or a window of time of the best
   taken off its units and put back by earliest finish, descended when at most ``RUIN_ACCEPT``
   longer, with ``budget // RUIN_SHARE`` evaluations more; then, on graphs up to
   :data:`~scheduler.exact_cpsat.POLISH_MAX_SIZE` tasks + edges where every unit has one core,
   OR-Tools CP-SAT warm-started from the best (:func:`scheduler.exact_cpsat.polish`: one worker,
   a deterministic time limit, so the same answer on every run) replaces it when shorter.
3. Order: keep the units and start a late task just before an earlier task on its unit when
   that shortens the makespan.
4. Affinity: a task is moved to the unit its operator type prefers when that costs nothing.

The effort is a count of schedule evaluations that shrinks with the graph
(``work_budget // (tasks + edges)``, at most ``MAX_EVALUATIONS``; ``RICH_WORK_BUDGET`` and
``RICH_MAX_EVALUATIONS`` up to ``RICH`` where every unit has one core, and only ``LARGE_WORK_BUDGET // (tasks + edges)`` above
``SMALL``), and the kicks draw from a generator seeded from the problem's size, so the result is
deterministic: a 10k-op graph gets a handful of evaluations, a graph above ``HUGE`` only the
HEFT seed. A smaller ``work_budget`` (a model's, :data:`scheduler.onnx_policies.ONNX_WORK_BUDGET`,
a twentieth) shrinks the one-core budget and the CP-SAT polish's time in proportion: before,
they ignored it, and a 150-op model on a chip of one-core units spent 10-17 s in the search
(`docs/scheduling.md`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from scheduler.affinity_list import affinity_list
from scheduler.clustering import cluster_seed, linear_clusters, moved
from scheduler.cpop import cpop
from scheduler.exact_cpsat import polish
from scheduler.heft import heft
from scheduler.list_scheduling import list_schedule, retime
from scheduler.peft import peft
from scheduler.problem import Problem, Solution, evaluate, evaluate_within, priority_order
from scheduler.ranks import placement_rank, upward_rank
from scheduler.ruin_recreate import connected_region, recreate, window_region
from scheduler.single_unit import single_unit

__all__ = ["DEFAULT_WORK_BUDGET", "affinity_locality", "critical_tasks", "order_search", "unit_swaps"]

#: Task+edge visits the local search may spend in total (evaluations = this // (n + edges)).
DEFAULT_WORK_BUDGET = 600_000
#: At most this many evaluations however small the graph.
MAX_EVALUATIONS = 8000
#: The iterated local search stops after this many kicks in a row that found nothing better.
STALL_KICKS = 100
#: A descent after a kick may spend at most ``budget // KICK_DESCENT`` evaluations.
KICK_DESCENT = 10
#: Independent iterated-local-search walks sharing the budget.
WALKS = 2
#: The iterated local search walks on from schedules at most this much longer than the best.
ACCEPT_WORSE = 0.02
#: Share of the kicks that hand all of one unit's tasks to another unit.
RELABEL_KICKS = 0.15
#: Graphs up to this many tasks + edges get the richer moves (clusters and swaps).
RICH = 400
#: Graphs up to ``RICH`` on units of one core each get ``RICH_WORK_BUDGET // size`` evaluations,
#: at most this many (a unit of several cores keeps the budget above).
RICH_MAX_EVALUATIONS = 40_000
#: Task+edge visits of the search on graphs up to ``RICH``.
RICH_WORK_BUDGET = 6_000_000
#: Share of the neighbourhood kicks that move a task's whole linear cluster instead.
CHAIN_KICKS = 0.5
#: On small graphs, after the walks, each exchange of two units' tasks (:func:`unit_swaps`) is
#: descended with ``budget // SWAP_DESCENT`` evaluations: on related units the optimum was often
#: one such exchange away, a move no path of one-task moves takes (each step is much longer).
SWAP_DESCENT = 40
#: :func:`_swap_descents` spends at most ``budget // SWAP_SHARE`` evaluations in all.
SWAP_SHARE = 6
#: On small graphs where every unit has one core, after the exchanges, ruin and recreate
#: (:mod:`scheduler.ruin_recreate`) from the best spends at most ``budget // RUIN_SHARE``
#: evaluations in all (0: none) ...
RUIN_SHARE = 6
#: ... each descent from a recreated schedule at most ``budget // RUIN_DESCENT`` ...
RUIN_DESCENT = 40
#: ... and only a recreated schedule at most this much longer than the best is descended.
RUIN_ACCEPT = 0.05
#: A connected region has 3 to this many tasks; a window spans 10% to 30% of the makespan.
RUIN_TASKS = 20
#: On small graphs the search re-times an assignment by placement rank with transfers weighted
#: this much (a task feeding another unit goes earlier): on the optima's own units that order
#: was 1.067x the optimum at n=50, against 1.095x with weight 1.
TIMED_COMM_WEIGHT = 1.5
#: Seeds beyond HEFT and PEFT are tried only below this size (tasks + edges).
SMALL = 20_000
#: Above ``SMALL`` the search gets ``LARGE_WORK_BUDGET // size`` evaluations (each one re-times
#: the whole graph; ~0.1 s at 10k ops), so a 10k-op model is scheduled in a few seconds.
LARGE_WORK_BUDGET = 150_000
#: Above this size (tasks + edges) only HEFT seeds the search (PEFT's look-ahead table is m^2 per edge).
HUGE = 100_000


def _key(sol: Solution) -> tuple[float, float]:
    return (round(sol.makespan_ns, 9), round(sum(sol.finish_ns), 9))


def _seeds(problem: Problem, chain_of: list[tuple[int, ...]] | None) -> list[Solution]:
    size = problem.n + problem.n_edges()
    out = [heft(problem)]
    if chain_of is not None:
        out.append(cluster_seed(problem, sorted(set(chain_of), key=lambda c: (-len(c), c))))
    if size <= HUGE:
        out.append(peft(problem))
    if size <= SMALL:
        out.append(cpop(problem))
        for w in (0.0, 2.0):
            out.append(list_schedule(problem, priority_order(problem, upward_rank(problem, comm_weight=w))))
        out.append(single_unit(problem))
        if _has_preferences(problem):
            out.append(affinity_list(problem))
    return out


def _has_preferences(problem: Problem) -> bool:
    """Whether some task prefers one of its units over another (a model's problem; a
    task-graph file has no preferences, and ``affinity-list`` there is a plain list schedule)."""
    aff = problem.affinity
    return bool(aff.size) and bool((aff.max(axis=1) != aff.min(axis=1)).any())


def _neighbours(problem: Problem) -> tuple[list[int], list[tuple[int, ...]]]:
    """Per task: its heaviest-communicating neighbour (-1: none) and all its neighbours."""
    partner: list[int] = []
    around: list[tuple[int, ...]] = []
    for i in range(problem.n):
        nb = [(vol, j) for j, vol in problem.preds[i]] + [(vol, j) for j, vol in problem.succs[i]]
        partner.append(max(nb)[1] if nb else -1)
        around.append(tuple(sorted({j for _, j in nb})))
    return partner, around


def _moves(
    problem: Problem,
    cur: Solution,
    i: int,
    u: int,
    partner: int,
    around: tuple[int, ...],
    chain: tuple[int, ...] | None,
) -> list[dict[int, int]]:
    """Candidate reassignments (task -> unit) that put task ``i`` on unit ``u``.

    Always: ``i`` alone, and ``i`` with its heaviest-communicating neighbour. On small graphs
    (given ``chain``, ``i``'s linear cluster) also: the whole chain (when longer than two), ``i``
    with every neighbour that can run on ``u`` (a cluster kept in one place when transfers
    dominate), and a swap with the task on ``u`` that starts nearest to ``i`` (load kept level).
    """
    unit, cap = cur.unit, problem.capable
    out: list[dict[int, int]] = [{i: u}]
    if partner >= 0 and unit[partner] != u and u in cap[partner]:
        out.append({i: u, partner: u})
    if chain is not None:
        if len(chain) > 2:
            out.append({j: u for j in chain if u in cap[j]})
        group = {j: u for j in around if unit[j] != u and u in cap[j]}
        if len(group) > 1 or (group and partner not in group):
            group[i] = u
            out.append(group)
        v = unit[i]
        others = [j for j in range(problem.n) if unit[j] == u and v in cap[j]]
        if others:
            j = min(others, key=lambda k: (abs(cur.start_ns[k] - cur.start_ns[i]), k))
            out.append({i: u, j: v})
    return out


def unit_swaps(problem: Problem, assign: Sequence[int]) -> list[list[int]]:
    """``assign`` with everything two units run exchanged, one candidate per pair of units.

    A pair is left out when a task on one unit cannot run on the other, or when both run nothing.

    Examples
    --------
    >>> from scheduler.problem import make_problem
    >>> import numpy as np
    >>> p = make_problem(["a", "b", "c"], ["u", "v", "w"], np.ones((3, 3)), [])
    >>> unit_swaps(p, [0, 0, 1])
    [[1, 1, 0], [2, 2, 1], [0, 0, 2]]
    """
    out: list[list[int]] = []
    for a in range(problem.n_units):
        for b in range(a + 1, problem.n_units):
            on = [t for t in range(problem.n) if assign[t] in (a, b)]
            if not on or any((b if assign[t] == a else a) not in problem.capable[t] for t in on):
                continue
            swapped = list(assign)
            for t in on:
                swapped[t] = b if assign[t] == a else a
            out.append(swapped)
    return out


def _above(sol: Solution) -> float:
    """A makespan beyond which a candidate cannot beat ``sol`` under :func:`_key` (rounded to 1e-9)."""
    return sol.makespan_ns + 1e-6


def _eval(problem: Problem, assign: Sequence[int], order: Sequence[int], cutoff_ns: float) -> Solution | None:
    """``evaluate``, or ``None`` once the makespan passes ``cutoff_ns`` (one-core units only)."""
    if cutoff_ns < math.inf and all(c == 1 for c in problem.cores):
        return evaluate_within(problem, assign, order, cutoff_ns)
    return evaluate(problem, assign, order)


def _timed(
    problem: Problem, assign: list[int], kept: list[int] | None, cutoff_ns: float = math.inf
) -> tuple[Solution | None, int]:
    """``assign`` re-timed by placement rank and, given ``kept`` (the current schedule's start
    order, small graphs only), also in that order; the shorter of the two and the evaluations
    spent. With ``kept`` the rank weights transfers ``TIMED_COMM_WEIGHT``. ``None`` when both
    pass ``cutoff_ns`` (then neither could have been accepted: the caller only keeps a shorter one).

    The placement-rank order alone can hide an assignment: on a unit the optimum often runs a
    task of lower rank first (its successor waits on a transfer), and the first schedule of the
    optimum's units by rank alone was up to 16% longer than the optimum. Keeping the order that
    earlier moves and :func:`order_search` found lets the descent see such assignments.
    """
    if kept is None:
        return retime(problem, assign), 1
    by_rank = _eval(problem, assign, priority_order(problem, placement_rank(problem, assign, TIMED_COMM_WEIGHT)), cutoff_ns)
    # In kept order it is kept only when shorter than by rank (``_key``): stop it beyond that.
    in_order = _eval(problem, assign, kept, cutoff_ns if by_rank is None else min(cutoff_ns, _above(by_rank)))
    if by_rank is None or (in_order is not None and _key(in_order) < _key(by_rank)):
        return in_order, 2
    return by_rank, 2


def critical_tasks(problem: Problem, sol: Solution) -> list[int]:
    """The tasks on a binding chain to the makespan, latest finishing first.

    From every task that ends at the makespan, walk back through what held each task's start:
    a predecessor whose output arrived just then, or the task before it on its core that ended
    just then. Only moving one of these tasks (or the tasks around them) can shorten the
    makespan directly.
    """
    eps = 1e-9 * max(1.0, sol.makespan_ns)
    on_core: dict[tuple[int, int], list[int]] = {}
    for t in range(problem.n):
        on_core.setdefault((sol.unit[t], sol.core[t]), []).append(t)
    stack = [t for t in range(problem.n) if sol.finish_ns[t] >= sol.makespan_ns - eps]
    seen = set(stack)
    while stack:
        t = stack.pop()
        u, s = sol.unit[t], sol.start_ns[t]
        held = [j for j, vol in problem.preds[t]
                if sol.finish_ns[j] + problem.comm(vol, sol.unit[j], u) >= s - eps]
        held += [j for j in on_core[(u, sol.core[t])] if j != t and abs(sol.finish_ns[j] - s) <= eps]
        for j in held:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return sorted(seen, key=lambda i: (-sol.finish_ns[i], i))


def _local_search(
    problem: Problem, sol: Solution, budget: int, chain_of: list[tuple[int, ...]] | None = None
) -> tuple[Solution, int]:
    """First-improvement descent over reassignment moves (:func:`_moves`); returns evaluations used.

    ``chain_of`` (per task, its linear cluster) turns on the richer moves of small graphs.
    """
    used = 0
    best = retime(problem, sol.unit)
    used += 1
    if _key(sol) < _key(best):
        best = sol
    best_key = _key(best)
    partner, around = _neighbours(problem)
    rich = chain_of is not None
    improved = True
    while improved and used < budget:
        improved = False
        # Latest-finishing tasks first: they sit on the critical tail.
        if rich:
            tasks = critical_tasks(problem, best)
        else:
            tasks = sorted(range(problem.n), key=lambda i: (-best.finish_ns[i], i))
        kept = best.order() if rich else None
        for i in tasks:
            if used >= budget:
                break
            cur = best
            for u in problem.capable[i]:
                if u == cur.unit[i]:
                    continue
                chain = chain_of[i] if chain_of is not None else None
                for move in _moves(problem, cur, i, u, partner[i], around[i], chain):
                    if used >= budget:
                        break
                    assign = list(cur.unit)
                    for t, v in move.items():
                        assign[t] = v
                    cand, cost = _timed(problem, assign, kept, _above(best))
                    used += cost
                    if cand is None:
                        continue
                    k = _key(cand)
                    if k < best_key:
                        best, best_key, improved = cand, k, True
                        break
                if best is not cur:
                    break
    return best, used


def order_search(problem: Problem, sol: Solution, budget: int) -> tuple[Solution, int]:
    """Keep the units, change the order: start a late task just before an earlier task on its unit.

    First-improvement over "insert task ``i`` just before task ``j``" in the start order, for ``j``
    on ``i``'s unit starting before it and every predecessor of ``i`` already placed. Only a
    shorter makespan is accepted (an order that merely finishes some tasks sooner is not a
    reason to reorder); returns evaluations used.
    """
    best, used = sol, 0
    improved = True
    while improved and used < budget:
        improved = False
        order = best.order()
        pos = {t: k for k, t in enumerate(order)}
        for i in sorted(range(problem.n), key=lambda t: (-best.finish_ns[t], t)):
            if used >= budget or improved:
                break
            last_pred = max((pos[j] for j, _ in problem.preds[i]), default=-1)
            for k in range(pos[i] - 1, last_pred, -1):
                j = order[k]
                if best.unit[j] != best.unit[i]:
                    continue
                if used >= budget:
                    break
                cand_order = order[:k] + [i] + [t for t in order[k:] if t != i]
                cand = _eval(problem, best.unit, cand_order, _above(best))
                used += 1
                if cand is not None and round(cand.makespan_ns, 9) < round(best.makespan_ns, 9):
                    best, improved = cand, True
                    break
    return best, used


def _prefer_affinity(problem: Problem, sol: Solution, budget: int) -> Solution:
    """Move tasks to their preferred unit when the makespan does not grow."""
    aff = problem.affinity
    if budget <= 0 or not aff.any():
        return sol
    best = sol
    used = 0
    for i in range(problem.n):
        if used >= budget:
            break
        caps = problem.capable[i]
        pref = min(caps, key=lambda u: (aff[i, u], u))
        if aff[i, best.unit[i]] <= aff[i, pref]:
            continue
        assign = list(best.unit)
        assign[i] = pref
        cand = retime(problem, assign)
        used += 1
        if cand.makespan_ns <= best.makespan_ns * (1 + 1e-12):
            best = cand
    return best


def _perturbed(
    problem: Problem, best: Solution, rng: np.random.Generator, chain_of: list[tuple[int, ...]] | None = None
) -> Solution:
    """A kick for the iterated local search: reassign a few tasks, or jitter the task order."""
    assign = list(best.unit)
    if rng.random() < 0.25:
        rank = placement_rank(problem, assign)
        jit = [r * rng.uniform(0.85, 1.15) for r in rank]
        return evaluate(problem, assign, priority_order(problem, jit))
    movable = [i for i in range(problem.n) if len(problem.capable[i]) > 1]
    if not movable:
        return best
    if RELABEL_KICKS > 0 and problem.n_units > 1 and rng.random() < RELABEL_KICKS:
        # Hand everything one unit runs to another unit (a jump out of a one-unit cluster).
        a = assign[movable[int(rng.integers(0, len(movable)))]]
        b = int(rng.integers(0, problem.n_units - 1))
        b += b >= a
        for j in range(problem.n):
            if assign[j] == a and b in problem.capable[j]:
                assign[j] = b
        return retime(problem, assign)
    if rng.random() < 0.5:
        # Move a task and its neighbours to one unit (a cluster, for transfer-heavy graphs).
        i = movable[int(rng.integers(0, len(movable)))]
        caps = problem.capable[i]
        u = caps[int(rng.integers(0, len(caps)))]
        if chain_of is not None and rng.random() < CHAIN_KICKS:
            return retime(problem, moved(problem, assign, chain_of[i], u))
        for j in (i, *(j for j, _ in problem.preds[i]), *(j for j, _ in problem.succs[i])):
            if u in problem.capable[j]:
                assign[j] = u
        return retime(problem, assign)
    for _ in range(int(rng.integers(1, 4))):
        i = movable[int(rng.integers(0, len(movable)))]
        caps = problem.capable[i]
        assign[i] = caps[int(rng.integers(0, len(caps)))]
    return retime(problem, assign)


def _walks(
    problem: Problem, starts: list[Solution], budget: int, spent: int, chain_of: list[tuple[int, ...]] | None
) -> tuple[Solution, int]:
    """The iterated local search from ``start``: independent walks (each its own generator,
    seeded from the problem's size) so one unlucky trajectory does not decide the result. A
    walk kicks from ``cur``, which may be up to ``ACCEPT_WORSE`` longer than the walk's best,
    and returns to that best after a third of ``STALL_KICKS`` fruitless kicks; it ends after
    ``STALL_KICKS`` or its share of the budget. Returns the best and the evaluations spent."""
    best = starts[0]
    reserve = budget // 10
    for walk in range(WALKS):
        rng = np.random.default_rng(problem.n * 7919 + problem.n_units + 104_729 * walk)
        stop = spent + (budget - reserve - spent) // (WALKS - walk)
        # On small graphs each walk starts from another descended seed (more basins seen).
        wbest = cur = starts[walk % len(starts)] if chain_of is not None else starts[0]
        stale = 0
        while spent + 2 <= stop and stale < STALL_KICKS:
            kick = _perturbed(problem, cur, rng, chain_of)
            cand, used = _local_search(problem, kick, min(budget // KICK_DESCENT + 1, stop - spent - 1), chain_of)
            spent += used + 1
            if chain_of is not None and spent < stop:
                cand, used = order_search(problem, cand, min(problem.n, stop - spent))
                spent += used
            stale += 1
            if _key(cand) < _key(wbest):
                wbest, cur, stale = cand, cand, 0
            elif cand.makespan_ns <= wbest.makespan_ns * (1 + ACCEPT_WORSE) and _key(cand) != _key(cur):
                cur = cand
            if stale and stale % max(1, STALL_KICKS // 3) == 0:
                cur = wbest
        if _key(wbest) < _key(best):
            best = wbest
    return best, spent


def _swap_descents(
    problem: Problem, best: Solution, budget: int, chain_of: list[tuple[int, ...]]
) -> tuple[Solution, int]:
    """Descend from every exchange of two units' tasks in ``best`` (:func:`unit_swaps`), each with
    ``budget // SWAP_DESCENT`` evaluations, and keep the best; again from an improvement, until
    ``budget // SWAP_SHARE`` evaluations are spent. Returns the best and the evaluations spent."""
    spent, share, total = 0, max(1, budget // SWAP_DESCENT), budget // SWAP_SHARE
    improved = True
    while improved and spent < total:
        improved = False
        start = best
        for assign in unit_swaps(problem, start.unit):
            if spent >= total:
                break
            kick, used = _timed(problem, assign, start.order())
            cand, more = _local_search(problem, kick if kick is not None else start, min(share, total - spent), chain_of)
            cand, last = order_search(problem, cand, problem.n)
            spent += used + more + last
            if _key(cand) < _key(best):
                best, improved = cand, True
    return best, spent


def _region(problem: Problem, sol: Solution, rng: np.random.Generator) -> list[int]:
    """A region to ruin: a connected piece around a task on a binding chain, or a window of time."""
    if rng.random() < 0.5:
        crit = critical_tasks(problem, sol)
        start = crit[int(rng.integers(0, len(crit)))]
        return connected_region(problem, start, int(rng.integers(3, RUIN_TASKS + 1)), rng)
    width = sol.makespan_ns * rng.uniform(0.1, 0.3)
    return window_region(sol, rng.uniform(0.0, sol.makespan_ns - width), width)


def _ruin_descents(
    problem: Problem, best: Solution, budget: int, chain_of: list[tuple[int, ...]]
) -> tuple[Solution, int]:
    """Ruin and recreate a region of ``best`` (:func:`_region`, :func:`recreate`), re-time it,
    and descend from it when it is at most ``RUIN_ACCEPT`` longer; keep an improvement, until
    ``budget // RUIN_SHARE`` evaluations are spent. Returns the best and the evaluations spent."""
    rng = np.random.default_rng(problem.n * 7919 + problem.n_units + 3 * 104_729)
    spent, share, total = 0, max(1, budget // RUIN_DESCENT), budget // RUIN_SHARE
    while spent < total:
        rebuilt = recreate(problem, best, _region(problem, best, rng))
        spent += 1
        if rebuilt.unit == best.unit:
            continue
        timed, used = _timed(problem, list(rebuilt.unit), best.order())
        spent += used
        kick = timed if timed is not None and _key(timed) < _key(rebuilt) else rebuilt
        if kick.makespan_ns > best.makespan_ns * (1 + RUIN_ACCEPT):
            continue
        cand, more = _local_search(problem, kick, min(share, max(1, total - spent)), chain_of)
        cand, last = order_search(problem, cand, problem.n)
        spent += more + last
        if _key(cand) < _key(best):
            best = cand
    return best, spent


def affinity_locality(problem: Problem, work_budget: int = DEFAULT_WORK_BUDGET) -> Solution:
    """Schedule ``problem`` with the default policy (see the module docstring)."""
    if problem.n == 0:
        return Solution((), (), (), (), 0.0)
    size = problem.n + problem.n_edges()
    rich = size <= RICH
    budget = min(MAX_EVALUATIONS, (work_budget if size <= SMALL else min(work_budget, LARGE_WORK_BUDGET)) // size)
    one_core = rich and all(c == 1 for c in problem.cores)
    if one_core:
        # One core per unit: ``evaluate``'s fast path, so the search affords more evaluations,
        # in the proportion of ``work_budget`` to the default (a model's budget is a twentieth)
        budget = min(RICH_MAX_EVALUATIONS, RICH_WORK_BUDGET * work_budget // DEFAULT_WORK_BUDGET // size)
    chain_of: list[tuple[int, ...]] | None = None
    if rich:
        chain_of = [()] * problem.n
        for chain in linear_clusters(problem):
            for t in chain:
                chain_of[t] = chain
    seeds = sorted(_seeds(problem, chain_of), key=_key)
    best = seeds[0]
    # Descend from the best distinct seeds, then kick the best and descend again (iterated
    # local search), until the evaluation budget is spent. The kicks use a generator seeded
    # from the problem's size, so the result is deterministic.
    distinct: list[Solution] = []
    for s in seeds:
        if all(s.unit != d.unit for d in distinct):
            distinct.append(s)
    spent = 0
    share = budget // 8
    # Every distinct seed gets a descent: on transfer-heavy graphs the best basin is often
    # reached from a seed that starts out worst (e.g. CPOP's critical-path unit).
    descended = [best]
    for s in distinct if budget > 0 else ():
        cand, used = _local_search(problem, s, min(share, budget - spent), chain_of)
        spent += used
        if rich:
            cand, used = order_search(problem, cand, min(problem.n, budget - spent))
            spent += used
        descended.append(cand)
    descended.sort(key=_key)
    best, spent = _walks(problem, descended, budget, spent, chain_of)
    if one_core and chain_of is not None:
        best, _ = _swap_descents(problem, best, budget, chain_of)
        if RUIN_SHARE:
            best, _ = _ruin_descents(problem, best, budget, chain_of)
    if one_core:
        cand = polish(problem, best, min(1.0, work_budget / DEFAULT_WORK_BUDGET))
        if _key(cand) < _key(best):
            best = cand
    cand, used = order_search(problem, best, (budget - spent) // 2)
    spent += used
    if _key(cand) < _key(best):
        best = cand
    return _prefer_affinity(problem, best, budget - spent)
