"""The one-pass ``affinity-list`` policy (the default before the search): affinity plus locality.

Each op goes to the unit its type prefers (the chip's affinity table) unless another unit
finishes it clearly earlier, either because it is much faster or because the preferred unit
would first have to wait for tensors to cross domains. "Clearly" means by more than ``slack``
times the op's own duration. Because input transfers are part of each candidate's finish
time, neighbours tend to stay in one memory domain.

On a model the candidates come from the one-pass list scheduler (:mod:`scheduler.one_pass`);
on an abstract problem from the same rule over the problem's units, ``affinity`` giving the
preference (a task-graph file has none: every unit is preferred alike).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.one_pass import Candidate, Chooser, one_pass_schedule
from scheduler.problem import Problem, Solution, Timeline, priority_order
from scheduler.ranks import upward_rank
from scheduler.schedule import Schedule

__all__ = ["DEFAULT_SLACK", "affinity_list", "affinity_list_model", "affinity_rank", "choose_by_affinity"]

DEFAULT_SLACK = 0.1


def affinity_rank(chip: Chip, op_type: str, unit: str) -> int:
    """Position of ``unit`` in the chip's preference list for ``op_type`` (unlisted: last).

    A unit matches an entry by its name or its kind.
    """
    kind = chip.unit(unit).kind
    prefs = chip.preference(op_type)
    for i, p in enumerate(prefs):
        if p == unit or p == kind:
            return i
    return len(prefs)


def _us(ns: float) -> str:
    return f"{ns / 1e3:.1f} us"


def choose_by_affinity(
    op_type: str,
    cands: list[Candidate],
    rank: Callable[[str], int],
    position: Mapping[str, int],
    slack: float,
) -> tuple[Candidate, str]:
    """The affinity-list rule: the preferred unit (lowest ``rank``) unless another finishes
    clearly earlier (see the module docstring); ``position`` breaks ties by unit order."""
    fastest = min(cands, key=lambda c: (c.finish_ns, rank(c.unit), position[c.unit]))
    pref = min(cands, key=lambda c: (rank(c.unit), c.finish_ns, position[c.unit]))
    if pref is fastest:
        return pref, f"affinity: {pref.unit} is preferred for {op_type} and finishes first"
    duration = max(fastest.finish_ns - fastest.start_ns, pref.finish_ns - pref.start_ns)
    late = pref.finish_ns - fastest.finish_ns
    if late <= slack * duration:
        return pref, (
            f"affinity: {pref.unit} is preferred for {op_type}; {_us(late)} later than "
            f"{fastest.unit} is within slack"
        )
    if pref.moved_bytes > fastest.moved_bytes and pref.start_ns > fastest.start_ns:
        return fastest, (
            f"locality: {fastest.unit} finishes {_us(late)} before preferred {pref.unit}, "
            f"which would wait for {pref.moved_bytes - fastest.moved_bytes} B to cross domains"
        )
    return fastest, (
        f"faster: {fastest.unit} finishes {_us(late)} before preferred {pref.unit}"
    )


def make_chooser(chip: Chip, slack: float) -> Chooser:
    """The rule as a :data:`~scheduler.one_pass.Chooser` on ``chip`` (preferences cached)."""
    order = {u.name: i for i, u in enumerate(chip.units)}
    ranks: dict[tuple[str, str], int] = {}

    def rank(op_type: str, unit: str) -> int:
        key = (op_type, unit)
        if key not in ranks:
            ranks[key] = affinity_rank(chip, op_type, unit)
        return ranks[key]

    def choose(op_type: str, cands: list[Candidate]) -> tuple[Candidate, str]:
        return choose_by_affinity(op_type, cands, lambda u: rank(op_type, u), order, slack)

    return choose


def affinity_list_model(
    graph: ModelGraph, chip: Chip, table: CostTable, slack: float = DEFAULT_SLACK
) -> Schedule:
    """``affinity-list`` on a model (see the module docstring)."""
    return one_pass_schedule(graph, chip, table, make_chooser(chip, slack), "affinity-list")


def affinity_list(problem: Problem, slack: float = DEFAULT_SLACK) -> Solution:
    """``affinity-list`` on an abstract problem: tasks by upward rank, each on the unit the rule
    picks among every unit's earliest core (no gap filling)."""
    n = problem.n
    unit, core = [0] * n, [0] * n
    start, finish = [0.0] * n, [0.0] * n
    tl = Timeline(problem.cores, insertion=False)
    dom, ex, ps, pl = problem.unit_domain, problem.exec_list, problem.pair_scale, problem.pair_lat
    position = {name: u for u, name in enumerate(problem.units)}
    for i in priority_order(problem, upward_rank(problem)):
        cands: list[Candidate] = []
        for u in problem.capable[i]:
            ready, moved = 0.0, 0.0
            for j, vol in problem.preds[i]:
                uj = unit[j]
                ready = max(ready, finish[j] + (vol * ps[uj][u] + pl[uj][u] if vol and uj != u else 0.0))
                moved += vol if dom[uj] != dom[u] else 0.0
            s, c = tl.earliest(u, ready, ex[i][u])
            cands.append(Candidate(problem.units[u], c, s, s + ex[i][u], moved))
        pref = {c.unit: int(problem.affinity[i, position[c.unit]]) for c in cands}
        chosen, _ = choose_by_affinity(problem.kinds[i], cands, pref.__getitem__, position, slack)
        u = position[chosen.unit]
        tl.insert(u, chosen.core, chosen.start_ns, chosen.finish_ns)
        unit[i], core[i], start[i], finish[i] = u, chosen.core, chosen.start_ns, chosen.finish_ns
    return Solution(tuple(unit), tuple(core), tuple(start), tuple(finish), max(finish, default=0.0))
