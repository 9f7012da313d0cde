"""``best``: run every cheap policy on the problem and keep the shortest schedule."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.affinity_locality import affinity_locality
from scheduler.cpop import cpop
from scheduler.heft import heft
from scheduler.ort_greedy import ort_greedy
from scheduler.peft import peft
from scheduler.problem import Problem, Solution
from scheduler.single_unit import single_unit

__all__ = ["CHEAP_POLICIES", "best"]

#: The policies ``best`` compares (and ``exact`` takes its incumbent from), each with its
#: defaults: the search's full budget, ort-greedy's units in the listed order.
CHEAP_POLICIES: dict[str, Callable[[Problem], Solution]] = {
    "affinity-locality": affinity_locality,
    "heft": heft,
    "peft": peft,
    "cpop": cpop,
    "single-unit": single_unit,
    "ort-greedy": ort_greedy,
}


def best(problem: Problem) -> tuple[str, Solution]:
    """The shortest schedule of the cheap policies, and the name of the policy that made it
    (ties: the one listed first in :data:`CHEAP_POLICIES`)."""
    name, found = "", None
    for pname, fn in CHEAP_POLICIES.items():
        s = fn(problem)
        if found is None or s.makespan_ns < found.makespan_ns:
            name, found = pname, s
    assert found is not None
    return name, found
