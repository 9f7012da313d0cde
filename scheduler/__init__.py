"""Schedulers: map the graph's ops onto the chip's units and order them.

Policies are registered by name; each is ``policy(graph, chip, table) -> Schedule``.
"""

from __future__ import annotations

from collections.abc import Callable

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.affinity_locality import affinity_locality, affinity_rank
from scheduler.baselines import eft, single_unit
from scheduler.schedule import (
    Placement,
    Schedule,
    ScheduleError,
    Transfer,
    implied_transfers,
    transfer_ns,
)

__all__ = [
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

POLICIES: dict[str, Policy] = {
    "affinity-locality": affinity_locality,
    "eft": eft,
    "single-unit": single_unit,
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
