#!/usr/bin/env python3
"""Recurrent steps on several threads: hwsim's time per step against onnxruntime's, with the pool
hand-off per split step product the fingerprint measured (``step_handoff_ns``) and with the CPU
model's default (2 us).

    python benchmarks/recurrent_handoff.py CHIP.yaml [--threads 2] [--rounds 5]

``CHIP.yaml`` is a host fingerprinted on ``--threads`` threads (``hwsim fingerprint --threads 2 -o``).
Each case is one LSTM/GRU layer (input features = hidden, as in a stack) run for 20 and for 100
steps; one step is (the 100-step run - the 20-step run) / 80, each the 10th percentile of 200 runs on
``--threads`` intra-op threads, the best of ``--rounds`` interleaved rounds
(:func:`hwsim.host.measure.best_run_ns`), and it is predicted the same way from ``hwsim validate``'s
node predictions of the two models. The fingerprint's probes are one-direction kernels of hidden 256
on one input feature; every case here is held out. First the check the fingerprint makes before it
reads a parallel section: a chain of 128-cubed MatMuls must run 1.8x faster on two threads, else
the second core is busy and no figure here means much.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (op type, hidden, bidirectional): held-out shapes (the probe is hidden 256, one direction).
CASES = (("LSTM", 128, False), ("LSTM", 384, False), ("LSTM", 512, False), ("LSTM", 256, True),
         ("GRU", 384, False), ("GRU", 512, False), ("GRU", 256, True), ("GRU", 768, False))  # fmt: skip
STEPS = (20, 100)


def layer(op_type: str, hidden: int, bidir: bool, steps: int) -> tuple[onnx.ModelProto, np.ndarray]:
    """One ``op_type`` layer over ``steps`` steps of ``hidden`` features (bias, PyTorch's GRU form)."""
    from hwsim.host.kernels import _model

    rng = np.random.default_rng(hidden + steps)
    gates, dirs = (4 if op_type == "LSTM" else 3), (2 if bidir else 1)
    w = {"W": (rng.standard_normal((dirs, gates * hidden, hidden)) * 0.05).astype(np.float32),
         "R": (rng.standard_normal((dirs, gates * hidden, hidden)) * 0.05).astype(np.float32),
         "B": np.zeros((dirs, 2 * gates * hidden), np.float32)}  # fmt: skip
    node = helper.make_node(op_type, ["x", "W", "R", "B"], ["y"], hidden_size=hidden,
                            direction="bidirectional" if bidir else "forward")  # fmt: skip
    if op_type == "GRU":
        node.attribute.append(helper.make_attribute("linear_before_reset", 1))
    x = rng.standard_normal((steps, 1, hidden)).astype(np.float32)
    return _model(node, x, w), x


def predicted_step_ns(chip_file: str, threads: int, models: dict[tuple[str, int, bool, int], onnx.ModelProto],
                      measured_handoffs: bool) -> dict[tuple[str, int, bool], float]:  # fmt: skip
    """Per case, hwsim's time per step on ``threads`` threads (with the chip's ``step_handoff_ns``, or
    without it: the model's default)."""
    from chips.schema import load_chip
    from graph_ir.onnx_import import from_model_proto
    from hwsim.host.validate import cpu_chip, predict_nodes

    chip = cpu_chip(load_chip(chip_file), threads)
    if not measured_handoffs:
        unit = chip.units[0].model_copy(update={"step_handoff_ns": None})
        chip = chip.model_copy(update={"units": [unit]})
    total = {key: sum(p.predicted_ns for p in predict_nodes(from_model_proto(m), chip, threads, set()).values())
             for key, m in models.items()}  # fmt: skip
    short, long = STEPS
    return {c: (total[(*c, long)] - total[(*c, short)]) / (long - short) for c in CASES}


def main() -> None:
    from hwsim.host.measure import best_run_ns
    from hwsim.host.second_core import speedup

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chip", help="a host fingerprinted on --threads threads")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(
        f"second core: 128-cubed MatMul chain {speedup(2, args.rounds):.2f}x faster on 2 threads (1.8x needed)"
    )
    feeds = {(*c, s): layer(*c, s) for c in CASES for s in STEPS}
    best = best_run_ns(feeds, args.rounds, args.threads)
    short, long = STEPS
    measured = {c: (best[(*c, long)] - best[(*c, short)]) / (long - short) for c in CASES}
    models = {k: m for k, (m, _) in feeds.items()}
    with_, without = (
        predicted_step_ns(args.chip, args.threads, models, flag) for flag in (True, False)
    )
    print(
        f"\n| case ({args.threads} threads) | measured us/step | predicted, measured hand-offs | error | "
        "predicted, default 2 us | error |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for c in CASES:
        m = measured[c]
        label = f"{c[0]} h{c[1]}{' bi' if c[2] else ''}"
        print(
            f"| {label} | {m / 1e3:.2f} | {with_[c] / 1e3:.2f} | {100 * (with_[c] / m - 1):+.1f}% | "
            f"{without[c] / 1e3:.2f} | {100 * (without[c] / m - 1):+.1f}% |"
        )


if __name__ == "__main__":
    main()
