"""``hwsim diff`` on two 10k-op schedule files: must take under 1 s (issue 14).

The schedules are made for a :func:`graph_ir.synthetic.layered_dag` graph without simulating
it (the diff reads files; how they were made does not matter): B moves every tenth op to
another unit and delays every op a little. Timed: reading both files, the diff, its JSON.

    python benchmarks/bench_diff.py [--ops N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from graph_ir.synthetic import layered_dag
from hwsim.report.schedule_diff import diff_runs, load_run
from hwsim.report.schedule_file import ScheduledOp, ScheduleFile, schedule_file_json

LIMIT_S = 1.0


def make(n: int, moved: bool) -> ScheduleFile:
    """A schedule file for ``layered_dag(n)``: op i on npu (cpu when ``moved`` and i % 10 == 0)."""
    graph = layered_dag(n)
    ops = []
    for i, name in enumerate(graph.order):
        unit = "cpu" if moved and i % 10 == 0 else "npu"
        start = 1000.0 * i + (7.0 * i if moved else 0.0)
        ops.append(ScheduledOp(
            op=name, op_type=graph.op(name).op_type, unit=unit, core=0, cores=(0,), order=i, dtype="int8",
            start_ns=start, finish_ns=start + 900.0, est_start_ns=start, est_finish_ns=start + 900.0,
            dram_bytes=4096 * (2 if unit == "cpu" else 1), on_critical_path=i % 3 == 0,
        ))  # fmt: skip
    return ScheduleFile(
        hwsim_version="bench", chip="bench", chip_sha256="0" * 64, model=graph.name, model_sha256="1" * 64,
        precision="int8", policy="bench", est_makespan_ns=ops[-1].finish_ns, latency_ns=ops[-1].finish_ns,
        ops=tuple(ops),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=10_000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.json", Path(tmp) / "b.json"
        a.write_bytes(schedule_file_json(make(args.ops, False)))
        b.write_bytes(schedule_file_json(make(args.ops, True)))
        t0 = time.perf_counter()
        d = diff_runs(load_run(a), load_run(b))
        json.dumps(d.to_json())
        took = time.perf_counter() - t0
    print(f"diff of two {args.ops}-op schedules: {took:.3f} s, {len(d.changes)} ops changed (limit {LIMIT_S} s)")
    return 0 if took < LIMIT_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
