"""The fourth batch of unseen models for the host CPU fidelity check: nine families no bundled or
held-out model resembled, fp32, opset 17, batch 1.

- ``gnres``: diffusion-style residual blocks with GroupNorm as PyTorch exports it (Reshape to
  ``(1, groups, -1)``, ``InstanceNormalization``, Reshape back, per-channel Mul and Add) and SiLU
  (``x * Sigmoid(x)``);
- ``style``: a fast style-transfer network (reflection ``Pad``, 9x9 convs, ``InstanceNormalization``
  with Relu, strided convs, residual blocks, nearest ``Resize`` x2 before a conv);
- ``conformer``: a Conformer block (half-step FFNs with Swish, attention, the convolution module:
  pointwise conv, GLU by ``Split`` and ``Sigmoid``, a depthwise 1-D conv of 31 taps,
  ``BatchNormalization``, Swish);
- ``pointnet``: a PointNet classifier (shared MLPs as 1-D 1x1 convs, a 3x3 input transform by
  ``MatMul``, ``ReduceMax`` over the points, fully connected layers);
- ``t5``: a T5-style encoder layer (RMSNorm written as ``Pow``, ``ReduceMean``, ``Sqrt``, ``Div``;
  attention with a relative bias; a gated tanh-Gelu FFN);
- ``llama``, ``gpt2``: decoder layers (RMSNorm, rotary Q and K, a SiLU-gated FFN; pre-LayerNorm
  and a tanh-Gelu FFN);
- ``bertln``: the held-out encoder with its LayerNormalizations written out;
- ``shufflenet``: ShuffleNetV2 (channel ``Split``, depthwise 3x3 convs, ``Concat`` and the channel
  shuffle by five-axis Reshape/Transpose); x1.0's branches have 58 channels, whose depthwise convs
  onnxruntime runs on its plain kernel.

Each family has two sizes (:data:`SIZES`): the first is the one looked at while working; the
second was built and run after any change, untouched. ShuffleNetV2 was added after the plain
depthwise law (``cost_models.cpu.depthwise_plain_ns``) and is held out whole, as are the LLaMA- and
GPT-2-like decoders. ``bertln``, a BERT-like encoder with its layer normalizations written out (an
export before opset 17), was added with the fusion of those (``hwsim.host.ort_fusions.decomposed_norms``).
Run ``python benchmarks/heldout_unseen4.py DIR [--chip FP.yaml]``: the files in ``DIR``, and with a
fingerprinted chip file each one's ``hwsim validate`` (1 thread) in a table.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "build_unseen4"]

_x, _i64, _f32 = hm.graph_input, hm.i64, hm.f32  # the batches' shared helpers


def _silu(b: hm._Builder, x: str) -> str:
    return b.op("Mul", [x, b.op("Sigmoid", [x])])


def _group_norm(b: hm._Builder, x: str, c: int, groups: int, shape: list[int]) -> str:
    """GroupNorm as torch.onnx exports it: InstanceNormalization over ``(1, groups, -1)``."""
    y = b.op("Reshape", [x, b.const(_i64([1, groups, -1]))])
    y = b.op("InstanceNormalization", [y, b.weight((groups,), value=1.0), b.weight((groups,), value=0.0)], epsilon=1e-5)
    y = b.op("Reshape", [y, b.const(_i64(shape))])
    return b.op("Add", [b.op("Mul", [y, b.weight((c, 1, 1), value=1.0)]), b.weight((c, 1, 1), value=0.0)])


def gnres(res: int, c: int, blocks: int = 2) -> onnx.ModelProto:
    b = hm._Builder(1)
    shape = [1, c, res, res]
    x = b.op("Conv", ["x", b.weight((c, 3, 3, 3)), b.weight((c,))], pads=[1] * 4)
    for _ in range(blocks):
        h = b.op("Conv", [_silu(b, _group_norm(b, x, c, 32, shape)), b.weight((c, c, 3, 3)), b.weight((c,))], pads=[1] * 4)
        h = b.op("Conv", [_silu(b, _group_norm(b, h, c, 32, shape)), b.weight((c, c, 3, 3)), b.weight((c,))], pads=[1] * 4)
        x = b.op("Add", [x, h])
    return b.model("gnres", _x([1, 3, res, res]), x)


def _in_conv(b: hm._Builder, x: str, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True) -> str:
    x = b.op("Pad", [x, b.const(_i64([0, 0, k // 2, k // 2, 0, 0, k // 2, k // 2]))], mode="reflect")
    x = b.op("Conv", [x, b.weight((cout, cin, k, k)), b.weight((cout,))], strides=[stride] * 2)
    x = b.op("InstanceNormalization", [x, b.weight((cout,), value=1.0), b.weight((cout,), value=0.0)])
    return b.op("Relu", [x]) if relu else x


def style(res: int) -> onnx.ModelProto:
    b = hm._Builder(2)
    x = _in_conv(b, "x", 3, 32, 9)
    x = _in_conv(b, _in_conv(b, x, 32, 64, 3, 2), 64, 128, 3, 2)
    for _ in range(3):
        x = b.op("Add", [x, _in_conv(b, _in_conv(b, x, 128, 128, 3), 128, 128, 3, relu=False)])
    scales = b.const(np.array([1, 1, 2, 2], np.float32))
    for cin, cout in ((128, 64), (64, 32)):
        up = b.op("Resize", [x, "", scales], mode="nearest")
        x = _in_conv(b, up, cin, cout, 3)
    x = b.op("Pad", [x, b.const(_i64([0, 0, 4, 4, 0, 0, 4, 4]))], mode="reflect")
    return b.model("style", _x([1, 3, res, res]), b.op("Conv", [x, b.weight((3, 32, 9, 9)), b.weight((3,))]))


def _ffn_half(b: hm._Builder, x: str, c: int) -> str:
    h = _silu(b, b.op("Add", [b.op("MatMul", [hm._layer_norm(b, x, c), b.weight((c, 4 * c))]), b.weight((4 * c,))]))
    h = b.op("Add", [b.op("MatMul", [h, b.weight((4 * c, c))]), b.weight((c,))])
    return b.op("Add", [x, b.op("Mul", [h, b.const(_f32(0.5))])])


def _conv_module(b: hm._Builder, x: str, c: int, kernel: int = 31) -> str:
    y = b.op("Transpose", [hm._layer_norm(b, x, c)], perm=[0, 2, 1])  # (1, c, seq)
    y = b.op("Conv", [y, b.weight((2 * c, c, 1)), b.weight((2 * c,))])
    a, g = b.name("glu_a"), b.name("glu_g")
    b.nodes.append(helper.make_node("Split", [y, b.const(_i64([c, c]))], [a, g], name=b.name("Split"), axis=1))
    y = b.op("Mul", [a, b.op("Sigmoid", [g])])
    y = b.op("Conv", [y, b.weight((c, 1, kernel)), b.weight((c,))], group=c, pads=[kernel // 2] * 2)
    ones, zeros = b.weight((c,), value=1.0), b.weight((c,), value=0.0)
    y = _silu(b, b.op("BatchNormalization", [y, ones, zeros, b.weight((c,), value=0.0), b.weight((c,), value=1.0)]))
    y = b.op("Conv", [y, b.weight((c, c, 1)), b.weight((c,))])
    return b.op("Add", [x, b.op("Transpose", [y], perm=[0, 2, 1])])


def conformer(seq: int, c: int = 144, heads: int = 4) -> onnx.ModelProto:
    b = hm._Builder(3)
    mask = b.const(np.zeros((1, 1, 1, seq), np.float32))
    x = _ffn_half(b, "x", c)
    x = b.op("Add", [x, hm._attention(b, hm._layer_norm(b, x, c), mask, seq, c, heads)])
    x = _ffn_half(b, _conv_module(b, x, c), c)
    return b.model("conformer", _x([1, seq, c]), hm._layer_norm(b, x, c))


def _shared_mlp(b: hm._Builder, x: str, widths: list[int]) -> str:
    for cin, cout in itertools.pairwise(widths):
        ones, zeros = b.weight((cout,), value=1.0), b.weight((cout,), value=0.0)
        x = b.op("Conv", [x, b.weight((cout, cin, 1)), b.weight((cout,))])
        x = b.op("Relu", [b.op("BatchNormalization", [x, ones, zeros, b.weight((cout,), value=0.0), b.weight((cout,), value=1.0)])])
    return x


def pointnet(points: int) -> onnx.ModelProto:
    b = hm._Builder(4)
    t = b.op("ReduceMax", [_shared_mlp(b, "x", [3, 64, 128, 1024])], axes=[2], keepdims=0)
    t = b.op("Reshape", [b.op("Gemm", [t, b.weight((9, 1024)), b.weight((9,))], transB=1), b.const(_i64([1, 3, 3]))])
    x = b.op("Transpose", [b.op("MatMul", [b.op("Transpose", ["x"], perm=[0, 2, 1]), t])], perm=[0, 2, 1])
    x = b.op("ReduceMax", [_shared_mlp(b, x, [3, 64, 64, 64, 128, 1024])], axes=[2], keepdims=0)
    for cin, cout in ((1024, 512), (512, 256)):
        x = b.op("Relu", [b.op("Gemm", [x, b.weight((cout, cin)), b.weight((cout,))], transB=1)])
    return b.model("pointnet", _x([1, 3, points]), b.op("Gemm", [x, b.weight((40, 256)), b.weight((40,))], transB=1))


def _rms_norm(b: hm._Builder, x: str, c: int) -> str:
    ms = b.op("ReduceMean", [b.op("Pow", [x, b.const(_f32(2.0))])], axes=[-1])
    rms = b.op("Sqrt", [b.op("Add", [ms, b.const(_f32(1e-6))])])
    return b.op("Mul", [b.op("Div", [x, rms]), b.weight((c,), value=1.0)])


def _tanh_gelu(b: hm._Builder, x: str) -> str:
    inner = b.op("Add", [x, b.op("Mul", [b.op("Pow", [x, b.const(_f32(3.0))]), b.const(_f32(0.044715))])])
    t = b.op("Tanh", [b.op("Mul", [inner, b.const(_f32(0.7978845608))])])
    return b.op("Mul", [b.op("Mul", [x, b.const(_f32(0.5))]), b.op("Add", [t, b.const(_f32(1.0))])])


def t5(seq: int, c: int = 512, heads: int = 8) -> onnx.ModelProto:
    b = hm._Builder(5)
    bias = b.weight((1, heads, seq, seq))
    x = b.op("Add", ["x", hm._attention(b, _rms_norm(b, "x", c), bias, seq, c, heads)])
    h = _rms_norm(b, x, c)
    gated = b.op("Mul", [_tanh_gelu(b, b.op("MatMul", [h, b.weight((c, 2 * c))])), b.op("MatMul", [h, b.weight((c, 2 * c))])])
    return b.model("t5", _x([1, seq, c]), b.op("Add", [x, b.op("MatMul", [gated, b.weight((2 * c, c))])]))


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: int = 1, stride: int = 1, group: int = 1, relu: bool = True) -> str:
    """A conv with its BatchNormalization folded in (as torch.onnx exports one in eval mode)."""
    y = b.op("Conv", [x, b.weight((cout, cin // group, k, k)), b.weight((cout,))], pads=[k // 2] * 4, strides=[stride] * 2, group=group)
    return b.op("Relu", [y]) if relu else y


def _shuffle(b: hm._Builder, x: str, c: int, side: int) -> str:
    y = b.op("Reshape", [x, b.const(_i64([1, 2, c // 2, side, side]))])
    return b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 1, 3, 4]), b.const(_i64([1, c, side, side]))])


def _shuffle_unit(b: hm._Builder, x: str, cin: int, cout: int, side: int, stride: int) -> str:
    half = cout // 2
    if stride == 1:
        keep, x2 = b.name("keep"), b.name("branch")
        b.nodes.append(helper.make_node("Split", [x, b.const(_i64([half, half]))], [keep, x2], name=b.name("Split"), axis=1))
        left, cin = keep, half
    else:
        left = _conv(b, _conv(b, x, cin, cin, 3, 2, cin, relu=False), cin, half)
        x2 = x
    right = _conv(b, _conv(b, _conv(b, x2, cin, half), half, half, 3, stride, half, relu=False), half, half)
    return _shuffle(b, b.op("Concat", [left, right], axis=1), cout, side)


def shufflenet(res: int, widths: tuple[int, int, int]) -> onnx.ModelProto:
    """ShuffleNetV2 (stages of 4, 8, 4 units; ``widths`` the stages' channels: x1.0 116, 232, 464)."""
    b = hm._Builder(6)
    x = b.op("MaxPool", [_conv(b, "x", 3, 24, 3, 2)], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    side, cin = res // 4, 24
    for width, units in zip(widths, (4, 8, 4)):
        side //= 2
        x, cin = _shuffle_unit(b, x, cin, width, side, 2), width
        for _ in range(units - 1):
            x = _shuffle_unit(b, x, width, width, side, 1)
    x = b.op("Flatten", [b.op("GlobalAveragePool", [_conv(b, x, cin, 1024)])])
    return b.model("shufflenet", _x([1, 3, res, res]), b.op("Gemm", [x, b.weight((1000, 1024)), b.weight((1000,))], transB=1))


def _rotary(b: hm._Builder, x: str, seq: int, heads: int, hd: int) -> str:
    """Rotary positions as LLaMA exports them: ``x * cos + rotate_half(x) * sin``, the halves by
    Slice, one negated, swapped by Concat; ``x`` is ``(1, heads, seq, hd)``."""
    angles = np.arange(seq)[:, None] * (10000.0 ** (-np.arange(0, hd, 2) / hd))[None]
    cos, sin = (b.const(np.concatenate([f(angles)] * 2, 1).astype(np.float32)) for f in (np.cos, np.sin))
    half = [b.const(_i64([v])) for v in (0, hd // 2, hd, 3)]
    lo = b.op("Slice", [x, half[0], half[1], half[3]])
    hi = b.op("Slice", [x, half[1], half[2], half[3]])
    rot = b.op("Concat", [b.op("Neg", [hi]), lo], axis=-1)
    return b.op("Add", [b.op("Mul", [x, cos]), b.op("Mul", [rot, sin])])


def llama(seq: int, c: int = 512, heads: int = 8, layers: int = 2) -> onnx.ModelProto:
    """LLaMA-like decoder layers: RMSNorm, rotary Q and K, a causal mask, a SiLU-gated FFN."""
    b = hm._Builder(7)
    hd = c // heads
    mask = b.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None])
    split = b.const(_i64([1, seq, heads, hd]))
    x = "x"
    for _ in range(layers):
        h = _rms_norm(b, x, c)
        q, k, v = (b.op("Transpose", [b.op("Reshape", [b.op("MatMul", [h, b.weight((c, c))]), split])], perm=[0, 2, 1, 3])
                   for _ in range(3))  # fmt: skip
        q, k = _rotary(b, q, seq, heads, hd), _rotary(b, k, seq, heads, hd)
        s = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])]), b.const(_f32(hd**-0.5))])
        o = b.op("MatMul", [b.op("Softmax", [b.op("Add", [s, mask])], axis=-1), v])
        o = b.op("Reshape", [b.op("Transpose", [o], perm=[0, 2, 1, 3]), b.const(_i64([1, seq, c]))])
        x = b.op("Add", [x, b.op("MatMul", [o, b.weight((c, c))])])
        h = _rms_norm(b, x, c)
        gated = b.op("Mul", [_silu(b, b.op("MatMul", [h, b.weight((c, 3 * c))])), b.op("MatMul", [h, b.weight((c, 3 * c))])])
        x = b.op("Add", [x, b.op("MatMul", [gated, b.weight((3 * c, c))])])
    return b.model("llama", _x([1, seq, c]), _rms_norm(b, x, c))


def gpt2(seq: int, c: int = 768, heads: int = 12, layers: int = 2) -> onnx.ModelProto:
    """GPT-2-like blocks: pre-LayerNorm, a causal mask, tanh-Gelu (``gelu_new``) FFN."""
    b = hm._Builder(8)
    mask = b.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None])
    x = "x"
    for _ in range(layers):
        x = b.op("Add", [x, hm._attention(b, hm._layer_norm(b, x, c), mask, seq, c, heads)])
        h = _tanh_gelu(b, b.op("Add", [b.op("MatMul", [hm._layer_norm(b, x, c), b.weight((c, 4 * c))]), b.weight((4 * c,))]))
        x = b.op("Add", [x, b.op("Add", [b.op("MatMul", [h, b.weight((4 * c, c))]), b.weight((c,))])])
    return b.model("gpt2", _x([1, seq, c]), hm._layer_norm(b, x, c))


def _written_layer_norm(b: hm._Builder, x: str, width: int) -> str:
    """LayerNormalization as exports before opset 17 write it: ReduceMean, Sub, Pow, ReduceMean, Add,
    Sqrt, Div, Mul, Add."""
    d = b.op("Sub", [x, b.op("ReduceMean", [x], axes=[-1])])
    var = b.op("ReduceMean", [b.op("Pow", [d, b.const(_f32(2.0))])], axes=[-1])
    y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, b.const(_f32(1e-5))])])])
    return b.op("Add", [b.op("Mul", [y, b.weight((width,), value=1.0)]), b.weight((width,), value=0.0)])


def written_ln_encoder(seq: int, width: int, heads: int = 6, layers: int = 4) -> onnx.ModelProto:
    """The held-out BERT-like encoder (``heldout_models.encoder_model``) with its layer
    normalizations written out."""
    saved, hm._layer_norm = hm._layer_norm, _written_layer_norm
    try:
        return hm.encoder_model(seq, width, heads, layers)
    finally:
        hm._layer_norm = saved


#: File stem -> builder: the sizes looked at first, then the ones run untouched after any change.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "gnres_r32c128": lambda: gnres(32, 128),
    "style_r128": lambda: style(128),
    "conformer_s128": lambda: conformer(128),
    "pointnet_n1024": lambda: pointnet(1024),
    "t5_s128": lambda: t5(128),
    "gnres_r48c64": lambda: gnres(48, 64),
    "style_r192": lambda: style(192),
    "conformer_s256": lambda: conformer(256),
    "pointnet_n2048": lambda: pointnet(2048),
    "t5_s256": lambda: t5(256),
    "shufflenet_x10_r224": lambda: shufflenet(224, (116, 232, 464)),
    "shufflenet_x05_r160": lambda: shufflenet(160, (48, 96, 192)),
    "llama_s128": lambda: llama(128),
    "gpt2_s128": lambda: gpt2(128),
    "llama_s256c768": lambda: llama(256, 768, 12),
    "gpt2_s256": lambda: gpt2(256),
    "bertln_s128w384": lambda: written_ln_encoder(128, 384),
    "bertln_s256w512": lambda: written_ln_encoder(256, 512, 8),
}


def build_unseen4(out_dir: Path) -> list[Path]:
    """Write every model of :data:`SIZES` into ``out_dir``; their paths."""
    return hm.build_sizes(SIZES, out_dir)


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
