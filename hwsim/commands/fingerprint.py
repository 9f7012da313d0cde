"""``hwsim fingerprint``: measure this machine's CPU and write it as a chip YAML."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug
from hwsim.host.errors import MeasureError

__all__ = ["add_parser", "input_errors", "main"]


class FingerprintError(ValueError):
    """Bad arguments for ``fingerprint`` (exit 2)."""


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return (FingerprintError, MeasureError)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("fingerprint", help="measure this machine's CPU and write a chip YAML")
    p.add_argument("-o", "--out", type=Path, default=Path("chips/host.yaml"), help="chip file to write (default: chips/host.yaml)")
    p.add_argument("--threads", type=int, help="threads for the multi-thread figures and the chip's cores (default: all)")
    p.add_argument("--name", default="host", help="chip name in the file (default: host)")
    p.add_argument("--quick", action="store_true", help="small sizes, a few seconds (a smoke test, noisy figures)")
    add_debug(p)


def main(args: argparse.Namespace) -> int:
    import os

    from hwsim.host.fingerprint import chip_yaml, measure_host, write_chip
    if args.threads is not None and not 1 <= args.threads <= (os.cpu_count() or 1):
        raise FingerprintError(f"--threads {args.threads}: this machine has {os.cpu_count()} logical CPUs")
    if not args.out.parent.is_dir():
        raise FingerprintError(f"{args.out}: folder {args.out.parent} does not exist")
    try:
        fp = measure_host(args.threads, quick=args.quick)
    except MeasureError as exc:
        raise FingerprintError(f"fingerprint: {exc}") from None
    write_chip(fp, args.out, args.name)
    print("\n".join(line for line in chip_yaml(fp, args.name).splitlines()
                    if line.startswith("#") and "fingerprint-json" not in line))  # fmt: skip
    print(f"wrote {args.out}")
    return 0
