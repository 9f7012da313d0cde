"""Shared by the benchmarks that keep a table in a doc: print it, and with ``--write`` put it
between the doc's ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_between(doc: Path, name: str, text: str) -> None:
    """Replace what lies between the ``name`` markers of ``doc`` with ``text``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    content = doc.read_text(encoding="utf-8")
    a, b = content.index(start) + len(start), content.index(end)
    doc.write_text(content[:a] + "\n" + text + "\n" + content[b:], encoding="utf-8")


def main(description: str, doc: Path, name: str, table: Callable[[], str]) -> None:
    """Command line of such a benchmark: print ``table()``; ``--write`` also puts it in ``doc``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--write", action="store_true", help=f"replace the table in {doc.relative_to(ROOT)}")
    args = ap.parse_args()
    text = table()
    print(text)
    if args.write:
        write_between(doc, name, text)
