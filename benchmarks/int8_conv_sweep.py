#!/usr/bin/env python3
"""One int8 3x3 conv (QDQ, per-channel int8 weights) over channels and planes: hwsim against onnxruntime.

    python benchmarks/int8_conv_sweep.py CHIP.yaml [CHIP2.yaml] [--repeats 3] [--runs 40]

``CHIP.yaml`` is a fingerprinted host (``hwsim fingerprint -o``). Each case is
``x -> Q/DQ -> Conv 3x3 (cin -> cout, pad 1) -> Q/DQ`` on a ``side x side`` plane, which onnxruntime
runs as one ``QLinearConv`` on MLAS's symmetric kernel (channels-last, between two Transposes). The
table gives that kernel's profiled time (``hwsim validate``'s per-kernel measurement, the lowest
of ``--repeats`` interleaved rounds) and each chip file's prediction for it: the fingerprint's conv
probes are the 64 -> 64 and 8 -> 16 convs on 40 x 40, the rest are held out.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (input channels, output channels, side)
CASES = ((8, 16, 40), (16, 16, 40), (32, 32, 40), (48, 48, 40), (64, 64, 40), (16, 16, 64), (32, 32, 32),
         (64, 64, 16), (24, 24, 48), (64, 64, 64), (16, 16, 16))  # fmt: skip


def conv_model(cin: int, cout: int, side: int) -> onnx.ModelProto:
    """The case's QDQ model (:mod:`hwsim.host.int8_probe`'s builders; the conv is named ``conv``)."""
    from onnx import TensorProto, helper

    from hwsim.host import int8_probe as p

    w_inits, dq_w = p._quantized_weight("w", (cout, cin, 3, 3), 0)
    u8 = TensorProto.UINT8
    inits = [*w_inits, *p._qdq("x", 0.02, 128, u8), *p._qdq("c", 0.05, 128, u8)]
    nodes = [*p._act("x", "xd", "x"), dq_w, helper.make_node("Conv", ["xd", "w"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             *p._act("conv", "y", "c")]  # fmt: skip
    return p._model(nodes, [1, cin, side, side], "y", inits)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chips", nargs="+", help="fingerprinted host chip files (the first one's predictions are measured with)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    from chips.schema import load_chip
    from hwsim.host.validate import validate_model

    chips = [load_chip(c) for c in args.chips]
    best: dict[tuple[int, int, int], tuple[list[float], float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for case in CASES:
                path = Path(tmp) / f"conv_{case[0]}_{case[1]}_{case[2]}.onnx"
                if not path.exists():
                    onnx.save(conv_model(*case), path)
                runs = [validate_model(c, path, runs=args.runs) for c in chips]
                nodes = [next(n for n in v.nodes if n.name == "conv") for v in runs]
                meas = min(n.measured_ns for n in nodes)
                if case not in best or meas < best[case][1]:
                    best[case] = ([n.predicted_ns for n in nodes], meas)
    heads = " | ".join(f"{Path(c).name} predicted us | error" for c in args.chips)
    print(f"| conv | MACs per pixel | measured us | {heads} |")
    print("|---|---:|---:|" + "---:|---:|" * len(chips))
    for (cin, cout, side), (preds, meas) in best.items():
        cells = " | ".join(f"{p / 1e3:.1f} | {100 * (p / meas - 1):+.1f}%" for p in preds)
        print(f"| {cin} -> {cout} on {side} x {side} | {cin * cout * 9} | {meas / 1e3:.1f} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
