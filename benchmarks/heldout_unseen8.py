"""The eighth batch of unseen models for the host CPU fidelity check: six kinds of model no bundled
or held-out one resembled, fp32 unless said, opset 17, built and run as they are.

- ``bcnn``: a ResNet-like CNN (3x3 convs with Relu, strided stages, residual Adds, global pool,
  Gemm) at **batch 4 and 8**: every other held-out model is batch 1;
- ``benc``: a BERT-like encoder (LayerNormalization, Softmax, Erf-Gelu) at batch 4 and 8;
- ``decode``: one LLaMA-like decoding step with a KV cache: a single token against a past of
  256 or 512 positions (``Concat`` onto the cache inputs), so every weight product is one row,
  and the weights (50-170 MB) are read from DRAM each step;
- ``dynq``: the BERT-like encoder of :mod:`heldout_models` quantized by
  ``onnxruntime.quantization.quantize_dynamic`` (``DynamicQuantizeLinear`` and ``MatMulInteger``
  with int8 weights), the way transformers are most often made int8 for a CPU;
- ``dqcnn``: the ``bcnn`` CNN at batch 1 through ``quantize_dynamic`` (``ConvInteger``), with uint8
  weights and with int8 ones (its default; onnxruntime runs the two on different kernels), added
  after the first five kinds were done;
- ``c3d``: a video CNN of 3-D convs (3x3x3, ``MaxPool`` over time and space) on 8-16 frames.

``python benchmarks/heldout_unseen8.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "build_unseen8"]

_x, _i64, _f32 = hm.graph_input, hm.i64, hm.f32  # the batches' shared helpers


def _conv(b: hm._Builder, x: str, cin: int, cout: int, stride: int = 1, relu: bool = True) -> str:
    y = b.op("Conv", [x, b.weight((cout, cin, 3, 3)), b.weight((cout,))], pads=[1] * 4, strides=[stride] * 2)
    return b.op("Relu", [y]) if relu else y


def bcnn(batch: int, res: int, widths: tuple[int, ...] = (32, 64, 128, 256)) -> onnx.ModelProto:
    """A stem, then per width a strided conv and one residual block; pooled and classified."""
    b = hm._Builder(31)
    x, c = _conv(b, "x", 3, widths[0], stride=2), widths[0]
    for i, w in enumerate(widths):
        x, c = (_conv(b, x, c, w, stride=2) if i else x), w
        x = b.op("Relu", [b.op("Add", [x, _conv(b, _conv(b, x, w, w), w, w, relu=False)])])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.model("bcnn", _x([batch, 3, res, res]), b.op("Gemm", [x, b.weight((100, c)), b.weight((100,))], transB=1))


def _battn(b: hm._Builder, x: str, width: int, heads: int) -> str:
    """Attention for any batch: the head split and merge by Reshape with 0 (copy that dim)."""
    hd = width // heads

    def proj(perm: list[int]) -> str:
        y = b.op("Add", [b.op("MatMul", [x, b.weight((width, width))]), b.weight((width,))])
        return b.op("Transpose", [b.op("Reshape", [y, b.const(_i64([0, 0, heads, hd]))])], perm=perm)

    q, k, v = proj([0, 2, 1, 3]), proj([0, 2, 3, 1]), proj([0, 2, 1, 3])
    p = b.op("Softmax", [b.op("Div", [b.op("MatMul", [q, k]), b.const(_f32(np.sqrt(hd)))])], axis=-1)
    ctx = b.op("Reshape", [b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3]), b.const(_i64([0, 0, width]))])
    return b.op("Add", [b.op("MatMul", [ctx, b.weight((width, width))]), b.weight((width,))])


def benc(batch: int, seq: int, width: int = 384, heads: int = 6, layers: int = 4) -> onnx.ModelProto:
    """Post-norm encoder layers on ``(batch, seq, width)`` embeddings."""
    b = hm._Builder(32)
    x = "x"
    for _ in range(layers):
        x = hm._layer_norm(b, b.op("Add", [x, _battn(b, x, width, heads)]), width)
        h = hm._gelu(b, b.op("Add", [b.op("MatMul", [x, b.weight((width, 4 * width))]), b.weight((4 * width,))]))
        h = b.op("Add", [b.op("MatMul", [h, b.weight((4 * width, width))]), b.weight((width,))])
        x = hm._layer_norm(b, b.op("Add", [x, h]), width)
    return b.model("benc", _x([batch, seq, width]), x)


def _rms(b: hm._Builder, x: str, c: int) -> str:
    ms = b.op("ReduceMean", [b.op("Mul", [x, x])], axes=[-1])
    y = b.op("Div", [x, b.op("Sqrt", [b.op("Add", [ms, b.const(_f32(1e-6))])])])
    return b.op("Mul", [y, b.weight((c,), value=1.0)])


def decode(past: int, c: int, ffn: int, layers: int, heads: int = 8) -> onnx.ModelProto:
    """One decoding step: ``x`` is the new token's ``(1, 1, c)``; layer ``i`` reads its cache
    ``k{i}`` / ``v{i}`` of ``(1, heads, past, hd)`` and appends the token's K and V to it."""
    b = hm._Builder(33)
    hd = c // heads
    cache = [helper.make_tensor_value_info(f"{kv}{i}", TensorProto.FLOAT, [1, heads, past, hd])
             for i in range(layers) for kv in "kv"]  # fmt: skip
    x = "x"
    for i in range(layers):
        h = _rms(b, x, c)
        q, k, v = (b.op("Transpose", [b.op("Reshape", [b.op("MatMul", [h, b.weight((c, c))]), b.const(_i64([1, 1, heads, hd]))])],
                        perm=[0, 2, 1, 3]) for _ in range(3))  # fmt: skip
        k = b.op("Concat", [f"k{i}", k], axis=2)
        v = b.op("Concat", [f"v{i}", v], axis=2)
        s = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])]), b.const(_f32(hd**-0.5))])
        o = b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])
        o = b.op("Reshape", [b.op("Transpose", [o], perm=[0, 2, 1, 3]), b.const(_i64([1, 1, c]))])
        x = b.op("Add", [x, b.op("MatMul", [o, b.weight((c, c))])])
        h = _rms(b, x, c)
        up = b.op("MatMul", [h, b.weight((c, ffn))])
        gated = b.op("Mul", [b.op("Mul", [up, b.op("Sigmoid", [up])]), b.op("MatMul", [h, b.weight((c, ffn))])])
        x = b.op("Add", [x, b.op("MatMul", [gated, b.weight((ffn, c))])])
    logits = b.op("MatMul", [_rms(b, x, c), b.weight((c, 4000))])
    return b.model("decode", _x([1, 1, c]) + cache, logits)


def _dynamic(model: onnx.ModelProto, signed: bool = True) -> onnx.ModelProto:
    """``model`` through ``quantize_dynamic``: int8 weights (its default) or uint8 ones, per tensor."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, str(src))
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8 if signed else QuantType.QUInt8)
        return onnx.load(str(dst))


def dynq(seq: int, width: int, heads: int, layers: int) -> onnx.ModelProto:
    """The held-out encoder, fp32, through ``quantize_dynamic`` (int8 weights, per tensor)."""
    return _dynamic(hm.encoder_model(seq, width, heads, layers, seed=34))


def dqcnn(res: int, signed: bool) -> onnx.ModelProto:
    """:func:`bcnn` at batch 1 through ``quantize_dynamic``: each conv a ``ConvInteger``."""
    return _dynamic(bcnn(1, res), signed)


def c3d(frames: int, res: int, widths: tuple[int, ...] = (32, 64, 128)) -> onnx.ModelProto:
    """3x3x3 convs with Relu; MaxPool 1x2x2 after the first, 2x2x2 after the others; pooled, Gemm."""
    b = hm._Builder(35)
    x, c = "x", 3
    for i, w in enumerate(widths):
        x = b.op("Relu", [b.op("Conv", [x, b.weight((w, c, 3, 3, 3)), b.weight((w,))], pads=[1] * 6)])
        pool = [1, 2, 2] if i == 0 else [2, 2, 2]
        x, c = b.op("MaxPool", [x], kernel_shape=pool, strides=pool), w
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.model("c3d", _x([1, 3, frames, res, res]), b.op("Gemm", [x, b.weight((50, c)), b.weight((50,))], transB=1))


#: File stem -> builder, two sizes a family; built and run as they are.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "bcnn_b4r112": lambda: bcnn(4, 112),
    "bcnn_b8r96": lambda: bcnn(8, 96),
    "benc_b4s64": lambda: benc(4, 64),
    "benc_b8s32": lambda: benc(8, 32),
    "decode_c512p256": lambda: decode(256, 512, 1376, 4),
    "decode_c768p512": lambda: decode(512, 768, 2048, 6),
    "dynq_s64w256": lambda: dynq(64, 256, 4, 4),
    "dynq_s128w384": lambda: dynq(128, 384, 6, 4),
    "dqcnn_r112u8": lambda: dqcnn(112, signed=False),
    "dqcnn_r96s8": lambda: dqcnn(96, signed=True),
    "c3d_f8r56": lambda: c3d(8, 56),
    "c3d_f16r48": lambda: c3d(16, 48, (24, 48, 96)),
}


def build_unseen8(out_dir: Path) -> list[Path]:
    """Write every model of :data:`SIZES` into ``out_dir``; their paths."""
    return hm.build_sizes(SIZES, out_dir)


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
