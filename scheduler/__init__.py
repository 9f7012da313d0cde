"""Schedulers: map the graph's ops onto the chip's units and order them.

Policies are registered by name; each is ``policy(graph, chip, table) -> Schedule``. The
abstract problem they share with task-graph files is in :mod:`scheduler.problem`; the policies
themselves (one per module) in :mod:`scheduler.policies`.
"""

from __future__ import annotations

from collections.abc import Callable

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.affinity_locality import affinity_locality as affinity_list
from scheduler.affinity_locality import affinity_rank
from scheduler.baselines import eft
from scheduler.baselines import single_unit as single_unit_list
from scheduler.onnx_policies import graph_policy
from scheduler.schedule import (
    Placement,
    Schedule,
    ScheduleError,
    Transfer,
    implied_transfers,
    transfer_ns,
)

__all__ = [
    "DEFAULT_POLICY",
    "POLICIES",
    "Placement",
    "Policy",
    "Schedule",
    "ScheduleError",
    "Transfer",
    "affinity_rank",
    "implied_transfers",
    "register_policy",
    "schedule",
    "transfer_ns",
]

Policy = Callable[[ModelGraph, Chip, CostTable], Schedule]

#: The default policy's name: every default and every "is this the default" test reads it.
DEFAULT_POLICY = "affinity-locality"

POLICIES: dict[str, Policy] = {
    # The default: seeds plus local search on the abstract problem (hwsim.pipeline also checks
    # it through the engine against HEFT, the best single unit and affinity-list).
    "affinity-locality": graph_policy("affinity-locality"),
    "heft": graph_policy("heft"),
    "peft": graph_policy("peft"),
    "cpop": graph_policy("cpop"),
    "single-unit": graph_policy("single-unit"),
    "ort-greedy": graph_policy("ort-greedy"),
    "best": graph_policy("best"),
    "exact": graph_policy("exact"),
    # The earlier one-pass policies, kept for comparison (affinity-list was the default).
    "eft": eft,
    "affinity-list": affinity_list,
    "single-unit-list": single_unit_list,
}


def register_policy(name: str, policy: Policy) -> None:
    """Add a policy (plugins use this; built-ins are registered above)."""
    POLICIES[name] = policy


def schedule(graph: ModelGraph, chip: Chip, table: CostTable, policy: str = "affinity-locality") -> Schedule:
    """Run the named policy."""
    try:
        fn = POLICIES[policy]
    except KeyError:
        raise ValueError(f"unknown policy {policy!r}; registered: {', '.join(POLICIES)}") from None
    return fn(graph, chip, table)
