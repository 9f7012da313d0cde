#!/usr/bin/env python3
"""Where an LSTM's weights come from at the start of a run: the cache, or DRAM.

    python benchmarks/recurrent_first_pass.py CHIP.yaml [--repeats 3] [--runs 30]

``CHIP.yaml`` is a fingerprinted host (``hwsim fingerprint -o``). Each case is one 35-step LSTM of
hidden ``H`` (batch 1, input ``H``) over an embedding lookup, built twice: *alone* (a 1,000-row
embedding: the model's weights fit the last-level cache, so a loop of runs keeps them there) and
*behind* a 10,000-row embedding and a 10,000-way decoder Gemm (about 40 MB more weights, beyond
the cache: between two runs the decoder's stream evicts the LSTM's ``W`` and ``R``). The LSTM is
the same kernel in both; the table gives its profiled time (``hwsim validate``'s per-kernel
measurement, the lowest of ``--repeats`` interleaved rounds) and hwsim's prediction for it
(:func:`cost_models.cpu.first_pass_gbps`: the first pass from DRAM where the model's weights do
not stay cached).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (hidden, behind a large embedding and decoder)
CASES = ((384, False), (384, True), (512, False), (512, True))
STEPS = 35


def lm(path: Path, hidden: int, behind: bool) -> None:
    """Write the case's model: Gather -> LSTM -> Squeeze -> Reshape (-> Gemm decoder)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    vocab = 10_000 if behind else 1_000

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name)

    inits = [weight("emb", (vocab, hidden)), weight("W", (1, 4 * hidden, hidden)), weight("R", (1, 4 * hidden, hidden)),
             numpy_helper.from_array(np.array([1], np.int64), "axis"),
             numpy_helper.from_array(np.array([STEPS, hidden], np.int64), "rows")]  # fmt: skip
    nodes = [helper.make_node("Gather", ["emb", "tokens"], ["e"], name="embed"),
             helper.make_node("LSTM", ["e", "W", "R"], ["y"], name="lstm", hidden_size=hidden),
             helper.make_node("Squeeze", ["y", "axis"], ["ys"], name="squeeze"),
             helper.make_node("Reshape", ["ys", "rows"], ["flat"], name="flat")]  # fmt: skip
    out = "flat"
    if behind:
        inits += [weight("D", (10_000, hidden)), numpy_helper.from_array(np.zeros(10_000, np.float32), "Db")]
        nodes.append(helper.make_node("Gemm", ["flat", "D", "Db"], ["logits"], name="decoder", transB=1))
        out = "logits"
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("tokens", TensorProto.INT64, [STEPS, 1])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chip", help="a fingerprinted host chip file")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    from chips.schema import load_chip
    from hwsim.host.validate import validate_model

    chip = load_chip(args.chip)
    best: dict[tuple[int, bool], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {case: Path(tmp) / f"lstm_h{case[0]}_{'behind' if case[1] else 'alone'}.onnx" for case in CASES}
        for case, path in paths.items():
            lm(path, *case)
        for _ in range(args.repeats):
            for case, path in paths.items():
                node = next(n for n in validate_model(chip, path, runs=args.runs).nodes if n.name == "lstm")
                got = (node.predicted_ns, node.measured_ns)
                best[case] = got if case not in best or got[1] < best[case][1] else best[case]
    print("| hidden | model's other weights | LSTM predicted us | LSTM measured us | error |")
    print("|---:|---|---:|---:|---:|")
    for (hidden, behind), (pred, meas) in best.items():
        where = "40 MB more (beyond the cache)" if behind else "none (in the cache)"
        print(f"| {hidden} | {where} | {pred / 1e3:.0f} | {meas / 1e3:.0f} | {100 * (pred / meas - 1):+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
