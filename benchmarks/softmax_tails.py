#!/usr/bin/env python3
"""onnxruntime's Softmax over rows whose last vector is partial, writing over its input and apart,
measured against hwsim's price (``docs/fidelity_cpu.md``, "A Softmax row's partial vector, and in
place").

    python benchmarks/softmax_tails.py --chip FP.yaml [--rounds 3] [--cases 2048x42,9408x49]

Each case ``RxW`` runs ``x -> Mul -> t -> Softmax -> y -> Mul -> z`` over ``R`` rows of ``W`` floats
twice: as it is (onnxruntime's arena gives the Softmax ``t``'s buffer) and with ``t`` also an output
(the Softmax writes a buffer of its own), ``hwsim.host.softmax_probe.softmax_tail_model``. The
Softmax kernel's time is the fastest of 11 profiled runs, 1 thread, the rounds interleaved, the
profiler's own cost off where the chip file has the fingerprint's dispatch; hwsim's price is the
Softmax node's in ``hwsim validate``'s prediction of the model (the arena replayed). The
fingerprint probes rows of 32, 33, 47 and 48 floats; the default cases are other lengths, from 2
to 16 vectors of 16 floats, and two shapes of models (Swin's 49 x 49 windows, PatchTST's 42).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op_kernels import node_prices, parser  # the one-op benchmarks share them
from single_axis_transposes import _summary

#: (rows, row length): about 384 KiB a tensor, as the probe's, and two models' shapes.
CASES = tuple((98_304 // w, w) for w in (21, 42, 63, 77, 100, 113, 129, 145, 150, 170, 197, 200, 250, 64, 128)) + (
    (9408, 49), (4704, 42))


def _cases(text: str | None) -> tuple[tuple[int, int], ...]:
    if not text:
        return CASES
    return tuple(tuple(int(v) for v in item.split("x")) for item in text.split(","))  # type: ignore[misc]


def measured(rows: int, width: int, apart: bool) -> float:
    """The Softmax kernel's time in the probe's model, the fastest of 11 profiled runs, ns."""
    from hwsim.host.measure import profile_nodes
    from hwsim.host.softmax_probe import softmax_tail_model

    x = np.random.default_rng(0).uniform(-1.0, 1.0, (rows, width)).astype(np.float32)
    return profile_nodes(softmax_tail_model(rows, width, apart), {"x": x}, threads=1, runs=11)["softmax"][1]


def priced(rows: int, width: int, apart: bool, chip_path: str) -> float:
    """hwsim's price of that Softmax as ``hwsim validate`` predicts the model, ns."""
    from hwsim.host.softmax_probe import softmax_tail_model

    return node_prices(softmax_tail_model(rows, width, apart), chip_path)["softmax"]


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--cases", help="RxW,... (rows x row length; default: 17 shapes the probe does not run)")
    args = ap.parse_args(argv)
    from hwsim.host.fingerprint import read_dispatch

    dispatch = read_dispatch(Path(args.chip))
    keys = [(r, w, apart) for r, w in _cases(args.cases) for apart in (False, True)]
    got: dict[tuple[int, int, bool], list[float]] = {k: [] for k in keys}
    for _ in range(args.rounds):
        for k in keys:
            ns = measured(*k)
            got[k].append(dispatch.kernel_time(ns) if dispatch else ns)
    print(f"Softmax kernel, us: lowest-highest of {args.rounds} rounds; hwsim on {args.chip}\n")
    print("| rows x length | vectors of 16 | partial | buffer | measured | predicted | error |")
    print("|---|---:|---:|---|---:|---:|---:|")
    errors: dict[str, list[float]] = {"in place": [], "apart": []}
    for (r, w, apart), times in got.items():
        pred = priced(r, w, apart, args.chip)
        err = [pred / t - 1 for t in times]
        errors["apart" if apart else "in place"].append(min(err, key=abs))
        print(f"| {r} x {w} | {-(-w // 16)} | {w % 16} | {'apart' if apart else 'in place'} | "
              f"{min(times) / 1e3:.1f}-{max(times) / 1e3:.1f} | {pred / 1e3:.1f} | {100 * min(err):+.0f}..{100 * max(err):+.0f} % |")  # fmt: skip
    print("\n" + "\n".join(_summary(label, e) for label, e in errors.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
