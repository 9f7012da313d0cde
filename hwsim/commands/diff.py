"""``hwsim diff A B``: what changed between two schedule files or two report folders.

Prints the totals (latency, energy, DRAM bytes, busy time per unit) on both sides with their
deltas, then the ops that ran differently (unit, finish time, DRAM traffic), those on a
critical path first, then by how much their finish moved; ``--json`` prints it all as JSON.
Exit 0; 2 for a path that is neither a schedule file nor a report folder (one line).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from hwsim.commands.common import add_debug, whole_number_at_least

if TYPE_CHECKING:
    from hwsim.report.schedule_diff import RunDiff

__all__ = ["add_parser", "format_diff", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input: a file that is not a schedule file."""
    from hwsim.report.schedule_file import ScheduleFileError

    return (ScheduleFileError,)



def add_parser(sub: Any) -> None:
    """Add the ``diff`` subcommand to an ``add_subparsers`` object."""
    p = sub.add_parser("diff", help="compare two schedule files or report folders")
    p.add_argument("a", help="schedule file (run --export-schedule) or report folder")
    p.add_argument("b", help="schedule file or report folder to compare with A")
    p.add_argument("--top", type=whole_number_at_least(0), default=20, metavar="N", help="ops to list (default: %(default)s; all with --json)")
    p.add_argument("--json", action="store_true", help="print the whole diff as JSON")
    add_debug(p)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def format_diff(d: RunDiff, top: int = 20) -> str:
    """The diff as text: totals, then the ``top`` op changes that matter most for latency."""
    lines = [f"A: {d.a}", f"B: {d.b}", "", f"{'total':<24} {'A':>14} {'B':>14} {'B - A':>14}"]
    for t in d.totals:
        lines.append(f"{t.name:<24} {_num(t.a):>14} {_num(t.b):>14} {_num(t.delta):>14}")
    lines.append("")
    lines.append(f"{len(d.changes)} op(s) changed, {d.same_ops} unchanged")
    if d.only_a or d.only_b:
        lines.append(f"{len(d.only_a)} op(s) only in A, {len(d.only_b)} only in B")
    if d.changes and top:
        lines.append(f"{'op':<40} {'unit A':>8} {'unit B':>8} {'finish Δ ns':>14} {'DRAM Δ bytes':>14}  critical")
        for c in d.changes[:top]:
            lines.append(
                f"{c.op[:40]:<40} {c.unit_a + '.' + str(c.core_a):>8} {c.unit_b + '.' + str(c.core_b):>8} "
                f"{c.finish_delta_ns:>14.6g} {c.dram_b_bytes - c.dram_a_bytes:>14d}  {'*' if c.critical else ''}"
            )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim diff``; returns the exit code."""
    from hwsim.report.schedule_diff import diff_runs, load_run

    d = diff_runs(load_run(args.a), load_run(args.b))
    if args.json:
        print(json.dumps(d.to_json(), indent=2))
    else:
        print(format_diff(d, args.top))
    return 0
