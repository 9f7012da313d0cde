#!/usr/bin/env python3
"""Small elementwise kernels (10 to 10,000 values) one after another: hwsim against onnxruntime.

    python benchmarks/elementwise_setup.py CHIP.yaml [CHIP2.yaml] [--rounds 4]

``CHIP.yaml`` is a fingerprinted host (``hwsim fingerprint -o``). Each case is a chain of eight ops
of one type over ``[1, n]`` floats (a binary one with a constant of that shape); what one op adds to
a timed run is (the chain's run - an Identity run) / 8, both the 10th percentile of 200 runs, the
best of ``--rounds`` interleaved rounds. Each chip file's prediction is taken the same way, from
``hwsim validate``'s whole-run predictions of the two models. The fingerprint's set-up probes
(``kernel_setup_ns``) are chains of 16 values; the other sizes are held out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OP_TYPES = ("Add", "Mul", "Sigmoid", "Tanh")
SIZES = (10, 1_000, 10_000)
LAYERS = 8


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chips", nargs="+", help="fingerprinted host chip files")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    from layer_chains import per_layer_ns, print_table

    from hwsim.host.kernels import setup_probe

    cases = [(t, n) for t in OP_TYPES for n in SIZES]
    models = {(case, layers): setup_probe(case[0], layers, case[1]) for case in cases for layers in (0, LAYERS)}
    feeds = {case: np.full((1, case[1]), 0.5, np.float32) for case in cases}
    got = per_layer_ns(models, feeds, LAYERS, args.chips, args.rounds)
    print_table("op, values", {f"{t}, {n:,}": got[t, n] for t, n in cases}, args.chips)
    return 0


if __name__ == "__main__":
    sys.exit(main())
