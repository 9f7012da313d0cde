"""Scale: time and peak memory of import + cost + schedule + simulate on 1k-100k-op graphs.

Run: ``python benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--chip rk3588]``.
Each case runs in a fresh child process so that its peak resident memory (``ru_maxrss``) is
its own; the table gives seconds per stage, the total (import + cost + schedule + simulate,
the issue's target: <= 30 s and <= 2 GB at 100k ops), analysis separately, and the growth
ratio t(10x ops) / t(ops). Times, not assertions: the machine is shared and noisy.

Workloads: ``layered`` (layers of 8 parallel ops, fan-in 1-3 from the two previous layers),
``transformer`` (pre-norm blocks with one branch per attention head) and ``random`` (a chain
with skip connections), all from :mod:`graph_ir.synthetic`; ``decoder`` is a real 24-layer
GPT-style decoder at sequence 2048 (``examples/zoo_large.py``) imported from its ONNX proto.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_case(kind: str, n: int, chip_name: str, policy: str) -> dict[str, float]:
    """One case in this process: stage times (s) and peak RSS (MiB)."""
    from chips import load_chip
    from cost_models.table import cost_table
    from graph_ir.synthetic import layered_dag, random_dag, transformer_dag
    from hwsim.analysis.analyze import analyze
    from hwsim.sim.engine import simulate
    from scheduler import schedule

    chip = load_chip(chip_name)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    if kind == "decoder":
        sys.path.insert(0, str(ROOT / "examples"))
        from zoo_large import build_decoder

        from graph_ir.onnx_import import from_model_proto

        graph = from_model_proto(build_decoder())
    else:
        make = {"layered": layered_dag, "transformer": transformer_dag, "random": random_dag}[kind]
        graph = make(n)
    t1 = time.perf_counter()
    table = cost_table(graph, chip, "int8")
    t2 = time.perf_counter()
    sched = schedule(graph, chip, table, policy)
    t3 = time.perf_counter()
    trace = simulate(graph, chip, table, sched)
    t4 = time.perf_counter()
    analyze(graph, chip, trace)
    t5 = time.perf_counter()
    return {
        "ops": len(graph),
        "edges": graph.g.number_of_edges(),
        "build_s": t1 - t0,
        "cost_s": t2 - t1,
        "schedule_s": t3 - t2,
        "simulate_s": t4 - t3,
        "total_s": t4 - t0,
        "analyze_s": t5 - t4,
        "latency_ms": trace.makespan_ns / 1e6,
        "rss_base_mib": rss0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def transformer_onnx(n: int, path: Path, seq: int = 128, hidden: int = 256) -> None:
    """Write an ``n``-op transformer-like ONNX file: blocks of 10 ops (LayerNorm, Q/K/V, Transpose,
    QK^T, Softmax, attention x V, output projection, residual Add) sharing one set of weights."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((hidden, hidden)).astype(np.float32), f"W{i}") for i in range(4)]
    inits += [numpy_helper.from_array(np.ones(hidden, np.float32), "g"),
              numpy_helper.from_array(np.zeros(hidden, np.float32), "b")]  # fmt: skip
    nodes: list[onnx.NodeProto] = []
    h = "x"
    for k in range(n // 10):

        def nd(op: str, ins: list[str], out: str, k: int = k, **attrs: object) -> str:
            nodes.append(helper.make_node(op, ins, [f"b{k}_{out}"], name=f"b{k}_{out}", **attrs))
            return f"b{k}_{out}"

        ln = nd("LayerNormalization", [h, "g", "b"], "ln", axis=-1)
        q, key, v = (nd("MatMul", [ln, f"W{i}"], name) for i, name in enumerate("qkv"))
        s = nd("MatMul", [q, nd("Transpose", [key], "kt", perm=[0, 2, 1])], "s")
        c = nd("MatMul", [nd("Softmax", [s], "p", axis=-1), v], "c")
        h = nd("Add", [nd("MatMul", [c, "W3"], "o"), h], "y")
    graph = helper.make_graph(
        nodes, "transformer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info(h, TensorProto.FLOAT, [1, seq, hidden])], inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def run_cli(n: int, chip_name: str, policy: str, keep: Path | None) -> dict[str, float]:
    """``hwsim run CHIP FILE.onnx --json`` end to end (reports and plots included) on an ``n``-op
    file from :func:`transformer_onnx`, in a child process: wall seconds and its peak RSS (MiB)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        model = (keep or Path(tmp)) / f"transformer{n}.onnx"
        if not model.exists():
            model.parent.mkdir(parents=True, exist_ok=True)
            transformer_onnx(n, model)
        cmd = [sys.executable, "-m", "hwsim", "run", chip_name, str(model), "--policy", policy, "--json",
               "--out", str(Path(tmp) / "out")]  # fmt: skip
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        wall = time.perf_counter() - t0
    return {"ops": n, "wall_s": wall, "peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--kinds", nargs="+", default=["layered", "transformer"])
    ap.add_argument("--chip", default="rk3588")
    ap.add_argument("--policy", help="scheduling policy (default: scheduler.DEFAULT_POLICY)")
    ap.add_argument("--no-decoder", action="store_true", help="skip the 24-layer decoder")
    ap.add_argument("--case", help=argparse.SUPPRESS)  # KIND:N, run in this process (child mode)
    ap.add_argument("--cli", action="store_true",
                    help="instead: time `hwsim run CHIP FILE.onnx --json` end to end on transformer-like ONNX files")
    ap.add_argument("--keep", type=Path, help="with --cli: write (and reuse) the ONNX files in this folder")
    args = ap.parse_args()
    if args.policy is None:  # imported only now: a child process times its own imports
        from scheduler import DEFAULT_POLICY

        args.policy = DEFAULT_POLICY
    if args.case:
        kind, n = args.case.split(":")
        if kind == "cli":
            print(json.dumps(run_cli(int(n), args.chip, args.policy, args.keep)))
            return 0
        print(json.dumps(run_case(kind, int(n), args.chip, args.policy)))
        return 0

    if args.cli:
        print("| ops | `hwsim run --json` wall s | peak RSS MiB | growth t(n)/t(n/10) |\n|---:|---:|---:|---:|")
        times: dict[int, float] = {}
        for n in args.sizes:
            cmd = [sys.executable, __file__, "--case", f"cli:{n}", "--chip", args.chip, "--policy", args.policy]
            cmd += ["--keep", str(args.keep)] if args.keep else []
            r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout)
            times[n] = r["wall_s"]
            growth = f"{r['wall_s'] / times[n // 10]:.1f}" if n // 10 in times else ""
            print(f"| {n:,} | {r['wall_s']:.1f} | {r['peak_rss_mib']:.0f} | {growth} |", flush=True)
        return 0
    cases = [(k, n) for k in args.kinds for n in args.sizes]
    if not args.no_decoder:
        cases.append(("decoder", 0))
    print(f"chip {args.chip}, policy {args.policy}; seconds per stage, peak RSS of the whole process")
    print()
    print("| workload | ops | build/import s | cost s | schedule s | simulate s | **total s** | analyze s "
          "| peak RSS MiB | growth t(n)/t(n/10) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    prev: dict[str, tuple[int, float]] = {}
    for kind, n in cases:
        cmd = [sys.executable, __file__, "--case", f"{kind}:{n}", "--chip", args.chip, "--policy", args.policy]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
        r = json.loads(out.strip().splitlines()[-1])
        growth = ""
        if kind in prev and r["ops"] >= 9 * prev[kind][0]:
            growth = f"{r['total_s'] / prev[kind][1]:.1f}"
        prev[kind] = (int(r["ops"]), r["total_s"])
        name = "24-layer decoder, seq 2048" if kind == "decoder" else kind
        print(
            f"| {name} | {r['ops']:,} | {r['build_s']:.2f} | {r['cost_s']:.2f} | {r['schedule_s']:.2f} "
            f"| {r['simulate_s']:.2f} | **{r['total_s']:.2f}** | {r['analyze_s']:.2f} | {r['peak_rss_mib']:.0f} "
            f"| {growth} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
