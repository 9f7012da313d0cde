"""``hwsim db stats|export|import``: look into the experience database and share it.

``stats`` counts the trials per chip, model and stage (and how many were measured on the real
chip); ``export FILE.jsonl`` writes every trial as one JSON object a line; ``import FILE.jsonl``
adds the trials of such a file in one transaction, skipping those already there. ``--db URL``
names the database (default :func:`hwsim.studies.optimize.db.default_db_url`). A database that
cannot be used, or an import line that is not a trial, is one line and exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug

__all__ = ["add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from hwsim.studies.optimize.db import DbError

    return (DbError,)


def add_parser(sub: Any) -> None:
    """Add the ``db`` subcommand (with ``stats``, ``export`` and ``import``) to an ``add_subparsers`` object."""
    s = sub.add_parser(
        "db",
        help="the experience database of `hwsim optimize`: stats, export and import as JSON lines",
        description="Count, export or import the trials of the experience database "
        "(default ~/.cache/hwsim/experience.sqlite, or $HWSIM_DB).",
    )
    actions = s.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_ in (
        ("stats", "trials per chip, model and stage, measured count, schema version"),
        ("export", "write every trial to FILE.jsonl, one JSON object a line"),
        ("import", "add the trials of FILE.jsonl (one transaction; trials already there are skipped)"),
    ):
        a = actions.add_parser(name, help=help_, description=help_)
        if name != "stats":
            a.add_argument("file", type=Path, metavar="FILE.jsonl")
        a.add_argument("--db", metavar="URL", help="database URL or SQLite path (default: $HWSIM_DB or "
                       "~/.cache/hwsim/experience.sqlite)")  # fmt: skip
        a.add_argument("--json", action="store_true", help="print the result as JSON")
        add_debug(a)
    add_debug(s)


def _print_stats(stats: dict[str, Any]) -> None:
    print(
        f"{stats['url']}: schema version {stats['schema_version']}, {stats['trials']} trials "
        f"({stats['measured']} measured) on {stats['chips']} chips, {stats['models']} models"
    )
    if not stats["groups"]:
        return
    rows = [(g["chip"], g["model"], g["stage"], str(g["trials"]), str(g["measured"])) for g in stats["groups"]]
    head = ("chip", "model", "stage", "trials", "measured")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  " + "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim db``; returns the exit code."""
    from hwsim.studies.optimize.db import ExperienceDB, default_db_url

    db = ExperienceDB.open(args.db or default_db_url())
    try:
        if args.action == "stats":
            stats = db.stats()
            if args.json:
                print(json.dumps(stats, indent=2))
            else:
                _print_stats(stats)
            return 0
        if args.action == "export":
            count = db.export_jsonl(args.file)
            result = {"url": db.shown_url, "file": str(args.file), "exported": count}
            message = f"hwsim db: {count} trials exported from {db.shown_url} to {args.file}"
        else:
            before = int(str(db.stats()["trials"]))
            added = db.import_jsonl(args.file)
            result = {"url": db.shown_url, "file": str(args.file), "imported": added, "trials": before + added}
            message = f"hwsim db: {added} trials imported from {args.file} into {db.shown_url} (now {before + added})"
    finally:
        db.close()
    print(json.dumps(result, indent=2) if args.json else message)
    return 0
