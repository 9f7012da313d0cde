#!/usr/bin/env python3
"""Binary elementwise kernels whose inputs broadcast, one after another: hwsim against onnxruntime.

    python benchmarks/broadcast_spans.py CHIP.yaml [CHIP2.yaml] [--rounds 3] [--threads 1]

``CHIP.yaml`` is a fingerprinted host (``hwsim fingerprint -o``). Each case is a chain of eight ops
of one type: each takes the one before (the input ``x`` first) and a second operand, a constant of
the broadcast shape, or ``x`` itself where the shapes are equal. What one op adds to a timed run is
(the chain's run - an Identity run) / 8, both the 10th percentile of 200 runs, the best of
``--rounds`` interleaved rounds; each chip file's prediction is taken the same way from
``hwsim validate``'s whole-run predictions (``benchmarks/layer_chains.py``). The fingerprint's
broadcast probes (``broadcast_span_ns``) are Adds of 32,768 floats in rows of 16 and 1024 repeated;
every case here is held out from them: other ops, sizes, row lengths, column and channel
broadcasts, an attention mask. A ``Where`` case takes the constant as its condition, the chain as X
and a scalar as Y (:func:`hwsim.host.kernels.op_chain`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Hashable
from pathlib import Path

import numpy as np
from onnx import ModelProto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LAYERS = 8
#: (label, op type, x's shape, the other operand's shape; None: x itself)
CASES: tuple[tuple[str, str, tuple[int, ...], tuple[int, ...] | None], ...] = (
    ("Add, equal shapes, 16x160x160", "Add", (1, 16, 160, 160), None),
    ("Mul, equal shapes, 128x768", "Mul", (1, 128, 768), None),
    ("Add, attention mask 12x128x128 + 128", "Add", (1, 12, 128, 128), (1, 1, 1, 128)),
    ("Add, attention mask 4x64x64 + 64", "Add", (1, 4, 64, 64), (1, 1, 1, 64)),
    ("Mul, 1536x128 * row of 128", "Mul", (1536, 128), (128,)),
    ("Sub, 4096x8 - row of 8", "Sub", (4096, 8), (8,)),
    ("Div, 8192x32 / row of 32", "Div", (8192, 32), (32,)),
    ("Add, 256x256 + row of 256", "Add", (256, 256), (256,)),
    ("Sub, 128x768 - column (a norm's mean)", "Sub", (1, 128, 768), (1, 128, 1)),
    ("Mul, 4096x24 * column", "Mul", (4096, 24), (4096, 1)),
    ("Mul, 64x56x56 * per channel", "Mul", (1, 64, 56, 56), (64, 1, 1)),
    ("Add, 256x7x7 + per channel", "Add", (1, 256, 7, 7), (256, 1, 1)),
    ("Mul, 4x8400 * 8400 (a detector's box scale)", "Mul", (1, 4, 8400), (1, 8400)),
    ("Where, equal shapes, 128x768, scalar Y", "Where", (1, 128, 768), (1, 128, 768)),
    ("Where, attention mask 12x128x128 by a row of 128", "Where", (1, 12, 128, 128), (1, 1, 1, 128)),
    ("Where, 4096x24 by a row of 24", "Where", (4096, 24), (24,)),
    ("Where, 128x768 by a column", "Where", (1, 128, 768), (1, 128, 1)),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chips", nargs="+", help="fingerprinted host chip files")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads, measured and predicted")
    args = ap.parse_args()
    from layer_chains import per_layer_ns, print_table

    from hwsim.host.kernels import op_chain

    models: dict[tuple[Hashable, int], ModelProto] = {
        (label, n): op_chain(op, n, shape, "x" if other is None else other) for label, op, shape, other in CASES for n in (0, LAYERS)}
    feeds: dict[Hashable, np.ndarray] = {label: np.full(shape, 0.5, np.float32) for label, _, shape, _ in CASES}
    got = per_layer_ns(models, feeds, LAYERS, args.chips, args.rounds, args.threads)
    print_table("case", {label: got[label] for label, *_ in CASES}, args.chips)
    return 0


if __name__ == "__main__":
    sys.exit(main())
