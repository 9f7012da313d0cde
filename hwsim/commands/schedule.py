"""``hwsim schedule TASKGRAPH``: schedule an abstract task graph (JSON or STG) and print the result.

Exit codes: 0 scheduled, 1 a deadline cannot be met, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from hwsim.commands.common import add_debug
from scheduler.taskgraph import TaskGraphError

__all__ = ["add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return (TaskGraphError,)


def add_parser(sub: Any) -> None:
    """Add the ``schedule`` subparser to ``sub`` (an argparse subparsers object)."""
    from scheduler import DEFAULT_POLICY, POLICIES

    p = sub.add_parser("schedule", help="schedule an abstract task graph (JSON or STG) and report the makespan")
    p.add_argument("taskgraph", help="task-graph JSON file, or a Standard Task Graph (.stg) file")
    p.add_argument("--policy", choices=list(POLICIES), default=DEFAULT_POLICY, help="scheduling policy (default: %(default)s)")
    p.add_argument("--units", type=int, help="number of identical units for an STG file (default: 4)")
    p.add_argument("--time-limit", type=float, default=10.0, help="seconds the exact policy may spend (default: 10)")
    p.add_argument("--json", action="store_true", help="print the schedule as JSON")
    add_debug(p)


def _as_json(tg: Any, result: Any) -> dict[str, Any]:
    prob, sol = tg.problem, result.solution
    out: dict[str, Any] = {
        "makespan": sol.makespan_ns,
        "lower_bound": result.lower_bound_ns,
        "policy": result.policy,
        "proven_optimal": result.proven,
        "gap": result.gap,
        "placements": [
            {
                "task": prob.tasks[i],
                "unit": prob.units[sol.unit[i]],
                "start": sol.start_ns[i],
                "finish": sol.finish_ns[i],
                "reason": result.reasons[i],
            }
            for i in sol.order()
        ],
    }
    if result.slack_ns:
        out["slack"] = {prob.tasks[i]: s for i, s in sorted(result.slack_ns.items())}
        out["deadline_missed"] = any(s < 0 for s in result.slack_ns.values())
    return out


def _print_schedule(name: str, tg: Any, result: Any) -> None:
    """The schedule as text: the header, the makespan and bounds, one line per task, the slacks."""
    prob, sol = tg.problem, result.solution
    status = "proven optimal" if result.proven else f"gap to lower bound {100 * result.gap:.1f}%"
    print(f"{name}: {prob.n} tasks on {prob.n_units} units, policy {result.policy}")
    print(f"makespan {sol.makespan_ns:.6g}  lower bound {result.lower_bound_ns:.6g}  ({status})")
    width = max((len(t) for t in prob.tasks), default=4)
    for i in sol.order():
        print(
            f"  {prob.tasks[i]:<{width}}  {prob.units[sol.unit[i]]:<8} {sol.start_ns[i]:>10.6g} "
            f"-> {sol.finish_ns[i]:<10.6g} {result.reasons[i]}"
        )
    for i, s in sorted(result.slack_ns.items()):
        late = "  MISSED" if s < 0 else ""
        print(f"  deadline {prob.tasks[i]}: slack {s:.6g}{late}")


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim schedule``; returns the exit code.

    A missed deadline still prints the schedule (text or ``--json``, with the negative slack),
    then one line on stderr, and exits 1.
    """
    import sys

    from scheduler.solver import DeadlineError, solve
    from scheduler.taskgraph import load_task_graph

    if args.units is not None and args.units < 1:
        raise TaskGraphError(f"{args.taskgraph}: --units must be at least 1, got {args.units}")
    if not args.time_limit > 0:  # NaN too
        raise TaskGraphError(f"--time-limit must be positive, got {args.time_limit}")
    tg = load_task_graph(args.taskgraph, args.units)
    missed: DeadlineError | None = None
    try:
        result = solve(tg.problem, args.policy, deadlines=tg.deadlines, exact_time_limit_s=args.time_limit)
    except DeadlineError as exc:
        missed, result = exc, exc.result
    if args.json:
        print(json.dumps(_as_json(tg, result), indent=2))
    else:
        _print_schedule(args.taskgraph, tg, result)
    if missed is not None:
        sys.stdout.flush()  # the schedule first, then the verdict, when both go to one terminal
        print(f"hwsim: deadline missed: {args.taskgraph}: {missed}", file=sys.stderr)
        return 1
    return 0
