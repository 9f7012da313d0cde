#!/usr/bin/env python3
"""Held-out models of op types no calibration model holds: opset-23 transformer blocks
(``RMSNormalization``, ``Attention`` with and without GQA and a causal mask, SiLU MLP),
``RotaryEmbedding``, and the detection and sampler ops (LRN + GridSample, RoiAlign,
NonMaxSuppression), libm-style functions (Asinh, CumProd) and an activation chain (Softplus,
Elu, Tanh, Erf). Nothing is fitted on them (the fingerprint probes each op type alone, on other
shapes: ``hwsim.host.op_probes``).

    python benchmarks/heldout_function_ops.py /tmp/fo
    python -m hwsim validate chips/host.yaml /tmp/fo/*.onnx --runs 30 --rounds 3

Weights are random (seeded); no file is downloaded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def _save(folder: Path, name: str, nodes: list[onnx.NodeProto], inputs: dict[str, list[int]], out_type: int,
          inits: dict[str, np.ndarray], opset: int) -> None:  # fmt: skip
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", out_type, None)], [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, folder / f"{name}.onnx")


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.05).astype(np.float32)


def transformer_block(folder: Path, name: str, seq: int, width: int, heads: int, kv_heads: int, causal: int) -> None:
    """A pre-norm block at opset 23: RMSNorm, Q/K/V, Attention, out projection, RMSNorm, SiLU MLP."""
    kv = kv_heads * (width // heads)
    nodes = [
        helper.make_node("RMSNormalization", ["x", "g"], ["xn"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["xn", "wq"], ["q"]), helper.make_node("MatMul", ["xn", "wk"], ["k"]),
        helper.make_node("MatMul", ["xn", "wv"], ["v"]),
        helper.make_node("Attention", ["q", "k", "v"], ["a"], q_num_heads=heads, kv_num_heads=kv_heads, is_causal=causal),
        helper.make_node("MatMul", ["a", "wo"], ["o"]), helper.make_node("Add", ["o", "x"], ["r"]),
        helper.make_node("RMSNormalization", ["r", "g"], ["rn"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["rn", "w1"], ["u"]), helper.make_node("Sigmoid", ["u"], ["su"]),
        helper.make_node("Mul", ["u", "su"], ["sw"]), helper.make_node("MatMul", ["sw", "w2"], ["d"]),
        helper.make_node("Add", ["d", "r"], ["y"]),
    ]  # fmt: skip
    inits = {"g": np.ones(width, np.float32), "wq": _w(width, width), "wk": _w(width, kv), "wv": _w(width, kv),
             "wo": _w(width, width), "w1": _w(width, 4 * width), "w2": _w(4 * width, width)}  # fmt: skip
    _save(folder, name, nodes, {"x": [1, seq, width]}, TensorProto.FLOAT, inits, 23)


def others(folder: Path) -> None:
    seq, width, heads = 128, 256, 4
    half = width // heads // 2
    _save(folder, "rotary_s128", [helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], num_heads=heads)],
          {"x": [1, seq, width]}, TensorProto.FLOAT,
          {"cos": np.cos(RNG.standard_normal((seq, half))).astype(np.float32),
           "sin": np.sin(RNG.standard_normal((seq, half))).astype(np.float32),
           "pos": np.arange(seq, dtype=np.int64)[None]}, 23)  # fmt: skip
    _save(folder, "lrn_gridsample", [helper.make_node("LRN", ["x"], ["l"], size=5),
                                     helper.make_node("GridSample", ["l", "grid"], ["y"], mode="linear")],
          {"x": [1, 64, 56, 56]}, TensorProto.FLOAT,
          {"grid": RNG.uniform(-1.0, 1.0, (1, 56, 56, 2)).astype(np.float32)}, 20)  # fmt: skip
    corner = RNG.uniform(0.0, 30.0, (100, 2))
    rois = np.concatenate([corner, corner + RNG.uniform(2.0, 20.0, (100, 2))], 1).astype(np.float32)
    _save(folder, "roialign_c256", [helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=7,
                                                     output_width=7, sampling_ratio=2)],
          {"x": [1, 256, 50, 50]}, TensorProto.FLOAT, {"rois": rois, "bi": np.zeros(100, np.int64)}, 16)  # fmt: skip
    _save(folder, "nms_2000x8", [helper.make_node("NonMaxSuppression", ["x", "scores", "most", "iou", "th"], ["y"])],
          {"x": [1, 2000, 4], "scores": [1, 8, 2000]}, TensorProto.INT64,
          {"most": np.array([100], np.int64), "iou": np.array([0.5], np.float32), "th": np.array([0.0], np.float32)},
          17)  # fmt: skip
    _save(folder, "asinh_cumprod", [helper.make_node("Asinh", ["x"], ["a"]), helper.make_node("CumProd", ["a", "ax"], ["y"])],
          {"x": [64, 4096]}, TensorProto.FLOAT, {"ax": np.array(1, np.int64)}, 26)  # fmt: skip
    _save(folder, "activation_chain", [helper.make_node("Softplus", ["x"], ["a"]), helper.make_node("Elu", ["a"], ["b"]),
                                       helper.make_node("Tanh", ["b"], ["c"]), helper.make_node("Erf", ["c"], ["y"])],
          {"x": [16, 8192]}, TensorProto.FLOAT, {}, 17)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    args = ap.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    transformer_block(args.folder, "block_s128w256", 128, 256, 4, 4, 1)
    transformer_block(args.folder, "block_s256w512_gqa", 256, 512, 8, 2, 1)
    transformer_block(args.folder, "block_s512w384_bidir", 512, 384, 6, 6, 0)
    others(args.folder)
    print(f"wrote {len(list(args.folder.glob('*.onnx')))} models to {args.folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
