"""Schedulers: map a task graph's tasks, or a model's ops, onto the chip's units and order them.

Where each idea lives:

- the problem: :mod:`scheduler.problem` (``Problem``, ``Solution``, the exact evaluator);
  task-graph files become one in :mod:`scheduler.taskgraph`, ONNX models in
  :mod:`scheduler.onnx_policies` (which also turns a ``Solution`` back into a ``Schedule``);
  random ones for tests in :mod:`scheduler.generators`;
- what the engine runs: :mod:`scheduler.schedule` (``Schedule``, ``Placement``, transfers);
- ranks (upward, downward, PEFT's optimistic costs, a placement's rank): :mod:`scheduler.ranks`;
- list scheduling on a problem: :mod:`scheduler.list_scheduling`; the one-pass list scheduler
  on models (tensors tracked per domain): :mod:`scheduler.one_pass`;
- the policies, one per module: ``affinity-locality`` (the default search)
  :mod:`scheduler.affinity_locality`, ``heft`` :mod:`scheduler.heft`, ``peft``
  :mod:`scheduler.peft`, ``cpop`` :mod:`scheduler.cpop`, ``single-unit`` and
  ``single-unit-list`` :mod:`scheduler.single_unit`, ``ort-greedy`` :mod:`scheduler.ort_greedy`,
  ``best`` :mod:`scheduler.best`, ``exact`` (a MILP) :mod:`scheduler.exact`, ``eft``
  :mod:`scheduler.eft`, ``affinity-list`` :mod:`scheduler.affinity_list`;
- what a policy is: :mod:`scheduler.policy`; the one registry of them (``POLICIES``,
  ``register_policy``, ``DEFAULT_POLICY``): :mod:`scheduler.registry`;
- solving a task graph (bounds, reasons, deadlines): :mod:`scheduler.solver`,
  :mod:`scheduler.deadlines`;
- ruin and recreate (the default search's large-neighbourhood step): :mod:`scheduler.ruin_recreate`;
- lower bounds: :mod:`scheduler.bounds`; why each task went where: :mod:`scheduler.explain`;
- least energy under a latency budget: :mod:`scheduler.energy`.
"""

from __future__ import annotations

from scheduler.affinity_list import affinity_rank
from scheduler.registry import (
    DEFAULT_POLICY,
    POLICIES,
    Policy,
    UnknownPolicyError,
    get_policy,
    register_policy,
    schedule,
)
from scheduler.schedule import (
    Placement,
    Schedule,
    ScheduleError,
    Transfer,
    implied_transfers,
    transfer_ns,
)
from scheduler.solver import DeadlineError, Result, solve

__all__ = [
    "DEFAULT_POLICY",
    "POLICIES",
    "DeadlineError",
    "Placement",
    "Policy",
    "Result",
    "Schedule",
    "ScheduleError",
    "Transfer",
    "UnknownPolicyError",
    "affinity_rank",
    "get_policy",
    "implied_transfers",
    "register_policy",
    "schedule",
    "solve",
    "transfer_ns",
]
