#!/usr/bin/env python3
"""Held-out models for the host CPU fidelity check: ONNX files the project has never fit on.

    python benchmarks/heldout_models.py OUT_DIR                 # every family
    python benchmarks/heldout_models.py OUT_DIR --family mlp    # one family (repeatable)

Built with ``onnx.helper`` and deterministic numpy weights (nothing downloaded), several sizes
per family so that a calibration is tested on shapes it did not see. Each family is a builder
``(out_dir) -> list[Path]`` registered in :data:`FAMILIES`; a file is named
``<family>_<size>.onnx``. Measure them with
``python benchmarks/bench_cpu_fidelity.py --heldout OUT_DIR`` (``docs/fidelity_cpu.md``).

Families (host side: dispatch overhead, normalization/softmax/elementwise kernels, ConvTranspose,
Resize, BatchNormalization):

- ``mlp``: batch-1 MLPs of Gemm+Relu, from the 784-256-256-10 one (~20 us, almost all dispatch)
  to a 1024-2048-2048-1000 one;
- ``encoder``: BERT-like encoder blocks (Gather embedding, attention-mask ``Sub``,
  LayerNormalization, Softmax, Erf-Gelu, a ``Slice`` of the first token) at three
  sequence/width sizes;
- ``unet``: a small U-Net (Conv+BatchNormalization+Relu, MaxPool, one ConvTranspose and one
  Resize upsampling, Concat skips) at two resolutions;
- ``lstm``, ``gru``, ``stft`` (recurrent and signal side, built in :mod:`heldout_recurrent`):
  LSTM/GRU stacks of hidden 64-768, 8-100 steps, forward and bidirectional; keyword-spotter STFT
  front ends with frame lengths that are powers of two and that are not;
- ``cnn_int8``, ``mlp_int8``, ``encoder_int8`` (int8 QDQ, built in :mod:`heldout_int8`): a ResNet-like
  CNN and int8 versions of the MLPs and two encoders, quantized with onnxruntime's ``quantize_static``;
- ``cnn_modern`` (built in :mod:`heldout_cnn_modern`): EfficientNet-like (depthwise, squeeze-and-
  excitation, SiLU), ConvNeXt-like (7x7 depthwise, channel LayerNorm, Gelu MLP) and a TCN (1-D
  dilated convs), two sizes each: one the depthwise/1-D conv laws were developed on, one not;
- ``unseen2`` (built in :mod:`heldout_unseen2`): a decoder with a constant causal mask, MobileNetV3-like
  (HardSwish, HardSigmoid) and ResNeXt-like (grouped convs), two sizes each likewise.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, also when loaded by path
from heldout_cnn_modern import build_cnn_modern
from heldout_int8 import build_cnn_int8, build_encoder_int8, build_mlp_int8
from heldout_recurrent import build_gru, build_lstm, build_stft
from heldout_unseen2 import build_unseen2

__all__ = ["ENCODER_SIZES", "FAMILIES", "MLP_SIZES", "UNET_SIZES", "build", "main"]

OPSET = 17
#: MLP layer widths, input first (batch 1).
MLP_SIZES: dict[str, tuple[int, ...]] = {
    "tiny": (784, 256, 256, 10),
    "small": (784, 512, 512, 10),
    "medium": (1024, 2048, 2048, 1000),
}
#: Encoder (sequence, width, heads, layers); the FFN is 4x the width.
ENCODER_SIZES: dict[str, tuple[int, int, int, int]] = {
    "s64w256": (64, 256, 4, 2),
    "s128w384": (128, 384, 6, 2),
    "s256w512": (256, 512, 8, 1),
}
#: U-Net (input resolution, base channels).
UNET_SIZES: dict[str, tuple[int, int]] = {"r64c16": (64, 16), "r128c24": (128, 24)}


class _Builder:
    """Nodes and initializers of one graph, with deterministic weights and unique names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def weight(self, shape: Sequence[int], scale: float = 0.05, value: float | None = None) -> str:
        name = self.name("w")
        if value is None:
            arr = (self.rng.standard_normal(tuple(shape)) * scale).astype(np.float32)
        else:
            arr = np.full(tuple(shape), value, dtype=np.float32)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(self, arr: np.ndarray) -> str:
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], **attrs: object) -> str:
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=self.name(op_type), **attrs))
        return out

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], output: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, [helper.make_empty_tensor_value_info(output)], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hwsim-heldout")
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        inferred = {v.name: v for v in m.graph.value_info}
        m.graph.output[0].CopyFrom(inferred[output])
        onnx.checker.check_model(m, full_check=True)
        return m


def _save(model: onnx.ModelProto, out_dir: Path, name: str) -> Path:
    path = out_dir / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def graph_input(shape: list[int]) -> list[onnx.ValueInfoProto]:
    """The one float input ``x`` of ``shape`` the unseen batches' models take."""
    return [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]


def i64(v: list[int]) -> np.ndarray:
    return np.array(v, np.int64)


def f32(v: float) -> np.ndarray:
    return np.array(v, np.float32)


def build_sizes(sizes: Mapping[str, Callable[[], onnx.ModelProto]], out_dir: Path) -> list[Path]:
    """Write every model of ``sizes`` (file stem -> builder) into ``out_dir``; their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [_save(build(), out_dir, stem) for stem, build in sizes.items()]


def batch_main(doc: str | None, sizes: Mapping[str, Callable[[], onnx.ModelProto]]) -> int:
    """The command line of an unseen batch (``heldout_unseen3.py`` and after): ``DIR [--chip FP.yaml]
    [--only STEM ...]``, the files written, and with a fingerprinted chip file each one's ``hwsim
    validate`` line (1 thread, 30 runs)."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--chip", help="a fingerprinted host chip file: validate each model on it, 1 thread")
    ap.add_argument("--only", nargs="*", help="file stems to build and run (default: all)")
    args = ap.parse_args()
    chosen = {k: v for k, v in sizes.items() if not args.only or k in args.only}
    for p in build_sizes(chosen, args.out_dir):
        if args.chip:
            out = subprocess.run([sys.executable, "-m", "hwsim", "validate", args.chip, str(p), "--threads", "1", "--runs", "30"],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            print(next(line for line in out.splitlines() if line.startswith(p.stem)))
        else:
            print(p)
    return 0


def mlp_model(widths: Sequence[int], seed: int = 0) -> onnx.ModelProto:
    """A batch-1 MLP: Gemm (+Relu except after the last layer) per pair of widths."""
    b = _Builder(seed)
    x = "x"
    for i, (k, n) in enumerate(itertools.pairwise(widths)):
        x = b.op("Gemm", [x, b.weight((n, k)), b.weight((n,))], transB=1)
        if i < len(widths) - 2:
            x = b.op("Relu", [x])
    return b.model("mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, widths[0]])], x)


def batch_norm(b: _Builder, x: str, c: int) -> str:
    """An inference BatchNormalization over ``c`` channels at identity (scale 1, bias 0, mean 0, var 1)."""
    return b.op("BatchNormalization", [x, *(b.weight((c,), value=v) for v in (1.0, 0.0, 0.0, 1.0))])


def _layer_norm(b: _Builder, x: str, width: int) -> str:
    return b.op("LayerNormalization", [x, b.weight((width,), value=1.0), b.weight((width,), value=0.0)], axis=-1,
                epsilon=1e-5)  # fmt: skip


def _gelu(b: _Builder, x: str) -> str:
    """Erf-Gelu as exported: x * 0.5 * (1 + erf(x / sqrt 2))."""
    e = b.op("Erf", [b.op("Div", [x, b.const(np.array(np.sqrt(2.0), np.float32))])])
    half = b.op("Mul", [x, b.const(np.array(0.5, np.float32))])
    return b.op("Mul", [half, b.op("Add", [e, b.const(np.array(1.0, np.float32))])])


def _attention(b: _Builder, x: str, mask: str, seq: int, width: int, heads: int) -> str:
    hd = width // heads
    split = b.const(np.array([1, seq, heads, hd], np.int64))

    def proj(t: str, perm: list[int]) -> str:
        y = b.op("Add", [b.op("MatMul", [t, b.weight((width, width))]), b.weight((width,))])
        return b.op("Transpose", [b.op("Reshape", [y, split])], perm=perm)

    q, k, v = proj(x, [0, 2, 1, 3]), proj(x, [0, 2, 3, 1]), proj(x, [0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.array(np.sqrt(hd), np.float32))])
    p = b.op("Softmax", [b.op("Add", [scores, mask])], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const(np.array([1, seq, width], np.int64))])
    return b.op("Add", [b.op("MatMul", [ctx, b.weight((width, width))]), b.weight((width,))])


def encoder_model(seq: int, width: int, heads: int, layers: int, vocab: int = 8000, seed: int = 0) -> onnx.ModelProto:
    """BERT-like: token Gather + positions, mask ``(1 - m) * -1e4`` (Sub), post-norm blocks with
    LayerNormalization, Softmax, Erf-Gelu; the first token ``Slice``d and projected."""
    b = _Builder(seed)
    x = b.op("Add", [b.op("Gather", [b.weight((vocab, width)), "ids"]), b.weight((1, seq, width))])
    x = _layer_norm(b, x, width)
    inv = b.op("Sub", [b.const(np.array(1.0, np.float32)), "mask"])
    mask = b.op("Unsqueeze", [b.op("Mul", [inv, b.const(np.array(-1e4, np.float32))]),
                              b.const(np.array([1, 2], np.int64))])  # fmt: skip
    for _ in range(layers):
        x = _layer_norm(b, b.op("Add", [x, _attention(b, x, mask, seq, width, heads)]), width)
        h = _gelu(b, b.op("Add", [b.op("MatMul", [x, b.weight((width, 4 * width))]), b.weight((4 * width,))]))
        h = b.op("Add", [b.op("MatMul", [h, b.weight((4 * width, width))]), b.weight((width,))])
        x = _layer_norm(b, b.op("Add", [x, h]), width)
    first = b.op("Slice", [x, b.const(np.array([0], np.int64)), b.const(np.array([1], np.int64)),
                           b.const(np.array([1], np.int64))])  # fmt: skip
    out = b.op("Tanh", [b.op("MatMul", [first, b.weight((width, width))])])
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq]),
              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, seq])]  # fmt: skip
    return b.model("encoder", inputs, out)


def _conv_bn_relu(b: _Builder, x: str, cin: int, cout: int) -> str:
    y = b.op("Conv", [x, b.weight((cout, cin, 3, 3), scale=0.1)], pads=[1, 1, 1, 1])
    bn = [b.weight((cout,), value=1.0), b.weight((cout,), value=0.0), b.weight((cout,), value=0.0),
          b.weight((cout,), value=1.0)]  # fmt: skip
    return b.op("Relu", [b.op("BatchNormalization", [y, *bn])])


def unet_model(res: int, base: int, seed: int = 0) -> onnx.ModelProto:
    """Two down levels (MaxPool), a bottleneck, up by ConvTranspose then by Resize, skips by Concat."""
    b = _Builder(seed)
    c1, c2, c3 = base, 2 * base, 4 * base
    e1 = _conv_bn_relu(b, _conv_bn_relu(b, "x", 3, c1), c1, c1)
    e2 = _conv_bn_relu(b, _conv_bn_relu(b, b.op("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2]), c1, c2), c2, c2)
    mid = _conv_bn_relu(b, b.op("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2]), c2, c3)
    up2 = b.op("ConvTranspose", [mid, b.weight((c3, c2, 2, 2), scale=0.1), b.weight((c2,))], strides=[2, 2])
    d2 = _conv_bn_relu(b, b.op("Concat", [up2, e2], axis=1), 2 * c2, c2)
    scales = b.const(np.array([1, 1, 2, 2], np.float32))
    up1 = b.op("Resize", [d2, "", scales], mode="linear")
    d1 = _conv_bn_relu(b, b.op("Concat", [up1, e1], axis=1), c2 + c1, c1)
    out = b.op("Conv", [d1, b.weight((1, c1, 1, 1), scale=0.1), b.weight((1,))])
    return b.model("unet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, res, res])], out)


def build_mlp(out_dir: Path) -> list[Path]:
    """Every :data:`MLP_SIZES` MLP."""
    return [_save(mlp_model(w), out_dir, f"mlp_{n}") for n, w in MLP_SIZES.items()]


def build_encoder(out_dir: Path) -> list[Path]:
    """Every :data:`ENCODER_SIZES` encoder."""
    return [_save(encoder_model(*s), out_dir, f"encoder_{n}") for n, s in ENCODER_SIZES.items()]


def build_unet(out_dir: Path) -> list[Path]:
    """Every :data:`UNET_SIZES` U-Net."""
    return [_save(unet_model(*s), out_dir, f"unet_{n}") for n, s in UNET_SIZES.items()]


#: Family -> builder writing that family's files into a folder.
FAMILIES: dict[str, Callable[[Path], list[Path]]] = {
    "mlp": build_mlp,
    "encoder": build_encoder,
    "unet": build_unet,
    "lstm": build_lstm,
    "gru": build_gru,
    "stft": build_stft,
    "cnn_int8": build_cnn_int8,
    "mlp_int8": build_mlp_int8,
    "encoder_int8": build_encoder_int8,
    "cnn_modern": build_cnn_modern,
    "unseen2": build_unseen2,
}


def build(out_dir: Path, families: Sequence[str] | None = None) -> list[Path]:
    """Write the models of ``families`` (default all) into ``out_dir``; their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [p for f in (families or list(FAMILIES)) for p in FAMILIES[f](out_dir)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these (repeatable)")
    args = ap.parse_args(argv)
    for p in build(args.out_dir, args.family):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
