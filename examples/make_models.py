#!/usr/bin/env python3
"""Regenerate the weightless, real-architecture ONNX example models in ``examples/models/``.

Every model is built node by node with ``onnx.helper`` (no torch, no downloads). The graphs
follow the published architectures (layer by layer, with the node/parameter naming style of
the usual torch/ultralytics/HF exports), but carry no weights: every learned float tensor is an
initializer whose data lives in an *absent* external-data file (``<model>.weights.bin`` is never
written). Dims, dtype, ``location``/``offset``/``length`` are all set, so tools that only need
shapes (and byte sizes) of the weights work, and ``onnx.load(path, load_external_data=False)``
is cheap. Small integer tensors that drive shapes (Reshape shapes, Split sizes, axes, pads,
STFT/MelWeightMatrix arguments) and tiny float scalars are stored inline so that shape
inference resolves every tensor to a fully static shape. The saved files also carry the
inferred ``value_info``.

Usage::

    python examples/make_models.py            # (re)write examples/models/*.onnx
    python examples/make_models.py --check    # verify the files (needs onnxruntime)

Only ``onnx`` and ``numpy`` are needed to generate; ``--check`` also uses ``onnxruntime``.
The output is deterministic (byte-identical across runs).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # the IR version that goes with opset 17
MAX_FILE_BYTES = 300 * 1024
# Float initializers with more elements than this are weights and must be external+absent.
INLINE_FLOAT_MAX_ELEMS = 16
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "models")


# --------------------------------------------------------------------------------------------
# Graph builder
# --------------------------------------------------------------------------------------------
class GraphBuilder:
    """Tiny helper that collects nodes/initializers and hands out unique names."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.weights_file = f"{model_name}.weights.bin"
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._node_names: set[str] = set()
        self._tensor_names: set[str] = set()
        self._consts: dict[str, bytes] = {}
        self._offset = 0

    # -- tensors ---------------------------------------------------------------------------
    def _claim_tensor(self, name: str) -> None:
        if name in self._tensor_names:
            raise ValueError(f"duplicate tensor name {name!r}")
        self._tensor_names.add(name)

    def input(self, name: str, elem_type: int, shape: Sequence[int]) -> str:
        self._claim_tensor(name)
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def output(self, tensor: str, name: str, elem_type: int, shape: Sequence[int]) -> str:
        """Expose ``tensor`` (the output of the last node using it) as graph output ``name``."""
        if tensor != name:
            if any(tensor in n.input for n in self.nodes):
                raise ValueError(f"{tensor!r} is consumed inside the graph; cannot rename it")
            producer = next(n for n in self.nodes if tensor in n.output)
            producer.output[list(producer.output).index(tensor)] = name
            self._tensor_names.discard(tensor)
            self._claim_tensor(name)
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def weight(self, name: str, shape: Sequence[int], dtype: int = TensorProto.FLOAT) -> str:
        """A learned tensor: dims + dtype + external-data reference to a file that is absent."""
        self._claim_tensor(name)
        itemsize = helper.tensor_dtype_to_np_dtype(dtype).itemsize
        nbytes = int(np.prod(shape, dtype=np.int64)) * itemsize
        t = TensorProto()
        t.name = name
        t.data_type = dtype
        t.dims.extend(int(d) for d in shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (
            ("location", self.weights_file),
            ("offset", str(self._offset)),
            ("length", str(nbytes)),
        ):
            entry = t.external_data.add()
            entry.key = key
            entry.value = value
        # keep every tensor 64-byte aligned inside the (virtual) weights file
        self._offset += (nbytes + 63) // 64 * 64
        self.initializers.append(t)
        return name

    def const(self, name: str, value: np.ndarray | Sequence[float] | float) -> str:
        """A small inline constant initializer (shared by name; same name => same data)."""
        arr = np.asarray(value)
        key = arr.dtype.str + str(arr.shape) + arr.tobytes().hex()
        if name in self._consts:
            if self._consts[name] != key.encode():
                raise ValueError(f"constant {name!r} redefined with different data")
            return name
        self._claim_tensor(name)
        self._consts[name] = key.encode()
        self.initializers.append(numpy_helper.from_array(arr, name))
        return name

    def i64(self, values: Sequence[int] | int, name: str | None = None) -> str:
        arr = np.array(values, dtype=np.int64)
        if name is None:
            flat = "_".join(str(int(v)).replace("-", "m") for v in arr.reshape(-1))
            name = f"const_i64_{'s' if arr.ndim == 0 else ''}{flat}"
        return self.const(name, arr)

    def f32(self, value: float | Sequence[float], name: str | None = None) -> str:
        arr = np.array(value, dtype=np.float32)
        if name is None:
            flat = "_".join(repr(float(v)).replace("-", "m").replace(".", "p")
                            for v in arr.reshape(-1))
            name = f"const_f32_{flat}"
        return self.const(name, arr)

    # -- nodes -----------------------------------------------------------------------------
    def op(self, op_type: str, inputs: Sequence[str], name: str,
           outputs: Sequence[str] | None = None, **attrs: Any) -> str:
        """Add a single-output node; returns its output tensor name."""
        return self.op_multi(op_type, inputs, name, 1, outputs, **attrs)[0]

    def op_multi(self, op_type: str, inputs: Sequence[str], name: str, n_out: int,
                 outputs: Sequence[str] | None = None, **attrs: Any) -> list[str]:
        """Add a node with ``n_out`` outputs (named ``<node>_output_<i>`` unless given)."""
        if name in self._node_names:
            raise ValueError(f"duplicate node name {name!r}")
        self._node_names.add(name)
        if outputs is None:
            outputs = [f"{name}_output_{i}" for i in range(n_out)]
        for o in outputs:
            self._claim_tensor(o)
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name,
                                           **attrs))
        return list(outputs)

    # -- model -----------------------------------------------------------------------------
    def model(self, doc: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.model_name, self.inputs, self.outputs,
                                  initializer=self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="hwsim-examples-make_models",
            producer_version="1",
            doc_string=doc,
        )
        model.ir_version = IR_VERSION
        helper.set_model_props(model, {
            "hwsim.weightless": "true",
            "hwsim.weights_file": self.weights_file,
            "hwsim.weights_bytes": str(self._offset),
        })
        # store the fully inferred shapes alongside the graph
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)


def pname_of(path: str) -> str:
    """'/model.2/m.0/cv1' -> 'model.2.m.0.cv1' (parameter prefix from a node scope)."""
    return path.strip("/").replace("/", ".")


def conv(g: GraphBuilder, x: str, cin: int, cout: int, k: int, path: str, s: int = 1,
         pad: int | None = None, groups: int = 1, bias: bool = True) -> str:
    """Conv node (BatchNorm already folded into weight + bias when bias=True)."""
    pad = k // 2 if pad is None else pad
    p = pname_of(path)
    ins = [x, g.weight(f"{p}.weight", [cout, cin // groups, k, k])]
    if bias:
        ins.append(g.weight(f"{p}.bias", [cout]))
    return g.op("Conv", ins, f"{path}/Conv", dilations=[1, 1], group=groups,
                kernel_shape=[k, k], pads=[pad] * 4, strides=[s, s])


# --------------------------------------------------------------------------------------------
# ResNet-18
# --------------------------------------------------------------------------------------------
def build_resnet18() -> onnx.ModelProto:
    g = GraphBuilder("resnet18")
    x = g.input("input", TensorProto.FLOAT, [1, 3, 224, 224])
    x = conv(g, x, 3, 64, 7, "/conv1", s=2, pad=3)
    x = g.op("Relu", [x], "/relu/Relu")
    x = g.op("MaxPool", [x], "/maxpool/MaxPool", ceil_mode=0, kernel_shape=[3, 3],
             pads=[1, 1, 1, 1], strides=[2, 2])
    cin = 64
    for li, cout in enumerate([64, 128, 256, 512], start=1):
        for bi in range(2):
            s = 2 if (li > 1 and bi == 0) else 1
            base = f"/layer{li}/layer{li}.{bi}"
            idt = x
            y = conv(g, x, cin, cout, 3, f"{base}/conv1", s=s)
            y = g.op("Relu", [y], f"{base}/relu/Relu")
            y = conv(g, y, cout, cout, 3, f"{base}/conv2")
            if s != 1 or cin != cout:
                idt = conv(g, x, cin, cout, 1, f"{base}/downsample.0", s=s, pad=0)
            y = g.op("Add", [y, idt], f"{base}/Add")
            x = g.op("Relu", [y], f"{base}/relu_1/Relu")
            cin = cout
    x = g.op("GlobalAveragePool", [x], "/avgpool/GlobalAveragePool")
    x = g.op("Flatten", [x], "/Flatten", axis=1)
    x = g.op("Gemm", [x, g.weight("fc.weight", [1000, 512]), g.weight("fc.bias", [1000])],
             "/fc/Gemm", alpha=1.0, beta=1.0, transB=1)
    g.output(x, "output", TensorProto.FLOAT, [1, 1000])
    return g.model("ResNet-18 (torchvision layout, BatchNorm folded into Conv bias), "
                   "weightless: weights are absent external data.")


# --------------------------------------------------------------------------------------------
# MobileNetV2 1.0 / 224
# --------------------------------------------------------------------------------------------
def relu6(g: GraphBuilder, x: str, path: str) -> str:
    return g.op("Clip", [x, g.f32(0.0, "const_relu6_min"), g.f32(6.0, "const_relu6_max")],
                f"{path}/Clip")


def build_mobilenetv2() -> onnx.ModelProto:
    g = GraphBuilder("mobilenetv2")
    x = g.input("input", TensorProto.FLOAT, [1, 3, 224, 224])
    x = conv(g, x, 3, 32, 3, "/features.0/features.0.0", s=2)
    x = relu6(g, x, "/features.0/features.0.2")
    cin = 32
    idx = 1
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            base = f"/features.{idx}"
            hidden = cin * t
            y = x
            j = 0
            if t != 1:
                y = conv(g, y, cin, hidden, 1, f"{base}/conv.0/conv.0.0")
                y = relu6(g, y, f"{base}/conv.0/conv.0.2")
                j = 1
            y = conv(g, y, hidden, hidden, 3, f"{base}/conv.{j}/conv.{j}.0", s=stride,
                     groups=hidden)
            y = relu6(g, y, f"{base}/conv.{j}/conv.{j}.2")
            y = conv(g, y, hidden, c, 1, f"{base}/conv.{j + 1}")
            if stride == 1 and cin == c:
                y = g.op("Add", [x, y], f"{base}/Add")
            x = y
            cin = c
            idx += 1
    x = conv(g, x, cin, 1280, 1, f"/features.{idx}/features.{idx}.0")
    x = relu6(g, x, f"/features.{idx}/features.{idx}.2")
    x = g.op("GlobalAveragePool", [x], "/GlobalAveragePool")
    x = g.op("Flatten", [x], "/Flatten", axis=1)
    x = g.op("Gemm", [x, g.weight("classifier.1.weight", [1000, 1280]),
                      g.weight("classifier.1.bias", [1000])],
             "/classifier/classifier.1/Gemm", alpha=1.0, beta=1.0, transB=1)
    g.output(x, "output", TensorProto.FLOAT, [1, 1000])
    return g.model("MobileNetV2 1.0 @224 (torchvision layout, BatchNorm folded, ReLU6 as Clip), "
                   "weightless: weights are absent external data.")


# --------------------------------------------------------------------------------------------
# YOLOv8n (ultralytics yolov8.yaml, scale n: depth 0.33, width 0.25)
# --------------------------------------------------------------------------------------------
def y_conv(g: GraphBuilder, x: str, cin: int, cout: int, k: int, path: str, s: int = 1, groups: int = 1) -> str:
    """ultralytics Conv = Conv2d(+folded BN) + SiLU (exported as Sigmoid * Mul); ``groups=cin``:
    its DWConv."""
    y = conv(g, x, cin, cout, k, f"{path}/conv", s=s, groups=groups)
    sg = g.op("Sigmoid", [y], f"{path}/act/Sigmoid")
    return g.op("Mul", [y, sg], f"{path}/act/Mul")


def c2f(g: GraphBuilder, x: str, c1: int, c2: int, n: int, shortcut: bool, path: str) -> str:
    c = c2 // 2
    y = y_conv(g, x, c1, 2 * c, 1, f"{path}/cv1")
    ys = g.op_multi("Split", [y, g.i64([c, c])], f"{path}/Split", 2, axis=1)
    for i in range(n):
        base = f"{path}/m.{i}"
        h = y_conv(g, ys[-1], c, c, 3, f"{base}/cv1")
        h = y_conv(g, h, c, c, 3, f"{base}/cv2")
        if shortcut:
            h = g.op("Add", [ys[-1], h], f"{base}/Add")
        ys.append(h)
    cat = g.op("Concat", ys, f"{path}/Concat", axis=1)
    return y_conv(g, cat, (2 + n) * c, c2, 1, f"{path}/cv2")


def sppf(g: GraphBuilder, x: str, c1: int, c2: int, k: int, path: str) -> str:
    c_ = c1 // 2
    y = [y_conv(g, x, c1, c_, 1, f"{path}/cv1")]
    for i in range(3):
        y.append(g.op("MaxPool", [y[-1]], f"{path}/m/MaxPool" + (f"_{i}" if i else ""),
                      ceil_mode=0, dilations=[1, 1], kernel_shape=[k, k],
                      pads=[k // 2] * 4, strides=[1, 1]))
    cat = g.op("Concat", y, f"{path}/Concat", axis=1)
    return y_conv(g, cat, 4 * c_, c2, 1, f"{path}/cv2")


def upsample2x(g: GraphBuilder, x: str, path: str) -> str:
    return g.op("Resize", [x, "", g.f32([1.0, 1.0, 2.0, 2.0], "const_resize_scales_x2")],
                f"{path}/Resize", coordinate_transformation_mode="asymmetric",
                cubic_coeff_a=-0.75, mode="nearest", nearest_mode="floor")


def build_yolov8n() -> onnx.ModelProto:
    g = GraphBuilder("yolov8n")
    nc, reg_max, img = 80, 16, 640
    x = g.input("images", TensorProto.FLOAT, [1, 3, img, img])
    out: dict[int, str] = {}
    out[0] = y_conv(g, x, 3, 16, 3, "/model.0", s=2)
    out[1] = y_conv(g, out[0], 16, 32, 3, "/model.1", s=2)
    out[2] = c2f(g, out[1], 32, 32, 1, True, "/model.2")
    out[3] = y_conv(g, out[2], 32, 64, 3, "/model.3", s=2)
    out[4] = c2f(g, out[3], 64, 64, 2, True, "/model.4")
    out[5] = y_conv(g, out[4], 64, 128, 3, "/model.5", s=2)
    out[6] = c2f(g, out[5], 128, 128, 2, True, "/model.6")
    out[7] = y_conv(g, out[6], 128, 256, 3, "/model.7", s=2)
    out[8] = c2f(g, out[7], 256, 256, 1, True, "/model.8")
    out[9] = sppf(g, out[8], 256, 256, 5, "/model.9")
    # neck (FPN top-down then PAN bottom-up)
    out[10] = upsample2x(g, out[9], "/model.10")
    out[11] = g.op("Concat", [out[10], out[6]], "/model.11/Concat", axis=1)
    out[12] = c2f(g, out[11], 256 + 128, 128, 1, False, "/model.12")
    out[13] = upsample2x(g, out[12], "/model.13")
    out[14] = g.op("Concat", [out[13], out[4]], "/model.14/Concat", axis=1)
    out[15] = c2f(g, out[14], 128 + 64, 64, 1, False, "/model.15")
    out[16] = y_conv(g, out[15], 64, 64, 3, "/model.16", s=2)
    out[17] = g.op("Concat", [out[16], out[12]], "/model.17/Concat", axis=1)
    out[18] = c2f(g, out[17], 64 + 128, 128, 1, False, "/model.18")
    out[19] = y_conv(g, out[18], 128, 128, 3, "/model.19", s=2)
    out[20] = g.op("Concat", [out[19], out[9]], "/model.20/Concat", axis=1)
    out[21] = c2f(g, out[20], 128 + 256, 256, 1, False, "/model.21")
    # Detect head (decoupled box / cls branches per level)
    chs = [64, 128, 256]
    c2, c3 = max(16, chs[0] // 4, reg_max * 4), max(chs[0], min(nc, 100))  # 64, 80
    no = nc + 4 * reg_max
    flat = []
    n_anchors = 0
    for i, (feat, ch, stride) in enumerate(zip([out[15], out[18], out[21]], chs, [8, 16, 32],
                                                   strict=True)):
        hw = (img // stride) ** 2
        n_anchors += hw
        d = "/model.22"
        b = y_conv(g, feat, ch, c2, 3, f"{d}/cv2.{i}/cv2.{i}.0")
        b = y_conv(g, b, c2, c2, 3, f"{d}/cv2.{i}/cv2.{i}.1")
        b = conv(g, b, c2, 4 * reg_max, 1, f"{d}/cv2.{i}/cv2.{i}.2")
        c = y_conv(g, feat, ch, c3, 3, f"{d}/cv3.{i}/cv3.{i}.0")
        c = y_conv(g, c, c3, c3, 3, f"{d}/cv3.{i}/cv3.{i}.1")
        c = conv(g, c, c3, nc, 1, f"{d}/cv3.{i}/cv3.{i}.2")
        cat = g.op("Concat", [b, c], f"{d}/Concat" + (f"_{i}" if i else ""), axis=1)
        flat.append(g.op("Reshape", [cat, g.i64([1, no, hw])],
                         f"{d}/Reshape" + (f"_{i}" if i else "")))
    d = "/model.22"
    x_cat = g.op("Concat", flat, f"{d}/Concat_3", axis=2)  # 1x144x8400
    box, cls = g.op_multi("Split", [x_cat, g.i64([4 * reg_max, nc])], f"{d}/Split", 2,
                           axis=1)
    # DFL: softmax over 16 bins then expectation via a fixed 1x1 conv (weights = arange(16))
    dfl = g.op("Reshape", [box, g.i64([1, 4, reg_max, n_anchors])], f"{d}/dfl/Reshape")
    dfl = g.op("Transpose", [dfl], f"{d}/dfl/Transpose", perm=[0, 2, 1, 3])
    dfl = g.op("Softmax", [dfl], f"{d}/dfl/Softmax", axis=1)
    dfl_w = g.const("model.22.dfl.conv.weight",
                    np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1))
    dfl = g.op("Conv", [dfl, dfl_w], f"{d}/dfl/conv/Conv", dilations=[1, 1], group=1,
               kernel_shape=[1, 1], pads=[0, 0, 0, 0], strides=[1, 1])
    dfl = g.op("Reshape", [dfl, g.i64([1, 4, n_anchors])], f"{d}/dfl/Reshape_1")
    # dist2bbox(xywh=True) * strides; anchors/strides are constant (but 8400-long) tensors
    lt, rb = g.op_multi("Split", [dfl, g.i64([2, 2])], f"{d}/Split_1", 2, axis=1)
    anchors = g.weight("model.22.anchors", [1, 2, n_anchors])
    strides = g.weight("model.22.strides", [1, n_anchors])
    x1y1 = g.op("Sub", [anchors, lt], f"{d}/Sub")
    x2y2 = g.op("Add", [anchors, rb], f"{d}/Add")
    cxy = g.op("Add", [x1y1, x2y2], f"{d}/Add_1")
    cxy = g.op("Div", [cxy, g.f32(2.0)], f"{d}/Div")
    wh = g.op("Sub", [x2y2, x1y1], f"{d}/Sub_1")
    dbox = g.op("Concat", [cxy, wh], f"{d}/Concat_4", axis=1)
    dbox = g.op("Mul", [dbox, strides], f"{d}/Mul")
    cls = g.op("Sigmoid", [cls], f"{d}/Sigmoid")
    y = g.op("Concat", [dbox, cls], f"{d}/Concat_5", axis=1)
    g.output(y, "output0", TensorProto.FLOAT, [1, 4 + nc, n_anchors])
    return g.model("YOLOv8n detector (ultralytics yolov8.yaml scale n, 640x640, BatchNorm "
                   "folded, SiLU as Sigmoid*Mul, Detect head with DFL), weightless: weights "
                   "(and the anchor/stride tables) are absent external data.")


# --------------------------------------------------------------------------------------------
# Transformer pieces (BERT-base, ViT-B/16)
# --------------------------------------------------------------------------------------------
def linear(g: GraphBuilder, x: str, din: int, dout: int, path: str, pname: str) -> str:
    """x @ W[din, dout] + b (weights stored pre-transposed, as in torch/HF exports)."""
    y = g.op("MatMul", [x, g.weight(f"{pname}.weight", [din, dout])], f"{path}/MatMul")
    return g.op("Add", [g.weight(f"{pname}.bias", [dout]), y], f"{path}/Add")


def layer_norm(g: GraphBuilder, x: str, dim: int, path: str, pname: str, eps: float) -> str:
    return g.op("LayerNormalization",
                [x, g.weight(f"{pname}.weight", [dim]), g.weight(f"{pname}.bias", [dim])],
                f"{path}/LayerNormalization", axis=-1, epsilon=eps)


def gelu_erf(g: GraphBuilder, x: str, path: str) -> str:
    """Exact GELU: x * 0.5 * (1 + erf(x / sqrt(2))), in the HF export form."""
    d = g.op("Div", [x, g.f32(1.4142135381698608, "const_sqrt2")], f"{path}/Div")
    e = g.op("Erf", [d], f"{path}/Erf")
    a = g.op("Add", [e, g.f32(1.0, "const_one")], f"{path}/Add")
    m = g.op("Mul", [x, a], f"{path}/Mul")
    return g.op("Mul", [m, g.f32(0.5, "const_half")], f"{path}/Mul_1")


def attention_core(g: GraphBuilder, q: str, k: str, v: str, seq: int, hidden: int, heads: int,
                   path: str, mask: str | None, scale_q: bool) -> str:
    """Per-head scaled dot-product attention from 1xSxH projections; returns 1xSxH."""
    dh = hidden // heads
    split = g.i64([1, seq, heads, dh])
    q = g.op("Reshape", [q, split], f"{path}/Reshape")
    k = g.op("Reshape", [k, split], f"{path}/Reshape_1")
    v = g.op("Reshape", [v, split], f"{path}/Reshape_2")
    q = g.op("Transpose", [q], f"{path}/Transpose", perm=[0, 2, 1, 3])
    k = g.op("Transpose", [k], f"{path}/Transpose_1", perm=[0, 2, 3, 1])
    v = g.op("Transpose", [v], f"{path}/Transpose_2", perm=[0, 2, 1, 3])
    if scale_q:  # torch.nn.MultiheadAttention style: q * 1/sqrt(dh)
        q = g.op("Mul", [q, g.f32(1.0 / math.sqrt(dh), f"const_inv_sqrt_{dh}")], f"{path}/Mul")
    s = g.op("MatMul", [q, k], f"{path}/MatMul")
    if not scale_q:  # HF BERT style: scores / sqrt(dh)
        s = g.op("Div", [s, g.f32(math.sqrt(dh), f"const_sqrt_{dh}")], f"{path}/Div")
    if mask is not None:
        s = g.op("Add", [s, mask], f"{path}/Add")
    p = g.op("Softmax", [s], f"{path}/Softmax", axis=-1)
    c = g.op("MatMul", [p, v], f"{path}/MatMul_1")
    c = g.op("Transpose", [c], f"{path}/Transpose_3", perm=[0, 2, 1, 3])
    return g.op("Reshape", [c, g.i64([1, seq, hidden])], f"{path}/Reshape_3")


def build_bert_base() -> onnx.ModelProto:
    g = GraphBuilder("bert_base")
    seq, hidden, heads, ffn, layers, vocab = 128, 768, 12, 3072, 12, 30522
    eps = 1e-12
    ids = g.input("input_ids", TensorProto.INT64, [1, seq])
    mask = g.input("attention_mask", TensorProto.INT64, [1, seq])
    # embeddings
    e = "/bert/embeddings"
    pos_ids = g.const("bert.embeddings.position_ids", np.arange(seq, dtype=np.int64)[None])
    tt_ids = g.const("bert.embeddings.token_type_ids", np.zeros((1, seq), dtype=np.int64))
    we = g.op("Gather", [g.weight("bert.embeddings.word_embeddings.weight", [vocab, hidden]),
                         ids], f"{e}/word_embeddings/Gather", axis=0)
    te = g.op("Gather", [g.weight("bert.embeddings.token_type_embeddings.weight", [2, hidden]),
                         tt_ids], f"{e}/token_type_embeddings/Gather", axis=0)
    x = g.op("Add", [we, te], f"{e}/Add")
    pe = g.op("Gather", [g.weight("bert.embeddings.position_embeddings.weight", [512, hidden]),
                         pos_ids], f"{e}/position_embeddings/Gather", axis=0)
    x = g.op("Add", [x, pe], f"{e}/Add_1")
    x = layer_norm(g, x, hidden, f"{e}/LayerNorm", "bert.embeddings.LayerNorm", eps)
    # extended attention mask: (1 - mask) * -10000, broadcast to 1x1x1xS
    m = g.op("Unsqueeze", [mask, g.i64([1, 2])], "/bert/Unsqueeze")
    m = g.op("Cast", [m], "/bert/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.f32(1.0, "const_one"), m], "/bert/Sub")
    m = g.op("Mul", [m, g.f32(-10000.0)], "/bert/Mul")
    for li in range(layers):
        path = f"/bert/encoder/layer.{li}"
        pn = f"bert.encoder.layer.{li}"
        sa, san = f"{path}/attention/self", f"{pn}.attention.self"
        q = linear(g, x, hidden, hidden, f"{sa}/query", f"{san}.query")
        k = linear(g, x, hidden, hidden, f"{sa}/key", f"{san}.key")
        v = linear(g, x, hidden, hidden, f"{sa}/value", f"{san}.value")
        ctx = attention_core(g, q, k, v, seq, hidden, heads, sa, m, scale_q=False)
        o = linear(g, ctx, hidden, hidden, f"{path}/attention/output/dense",
                   f"{pn}.attention.output.dense")
        o = g.op("Add", [o, x], f"{path}/attention/output/Add")
        x = layer_norm(g, o, hidden, f"{path}/attention/output/LayerNorm",
                       f"{pn}.attention.output.LayerNorm", eps)
        h = linear(g, x, hidden, ffn, f"{path}/intermediate/dense", f"{pn}.intermediate.dense")
        h = gelu_erf(g, h, f"{path}/intermediate/intermediate_act_fn")
        h = linear(g, h, ffn, hidden, f"{path}/output/dense", f"{pn}.output.dense")
        h = g.op("Add", [h, x], f"{path}/output/Add")
        x = layer_norm(g, h, hidden, f"{path}/output/LayerNorm", f"{pn}.output.LayerNorm", eps)
    g.output(x, "last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])
    return g.model("BERT-base uncased encoder (12 layers, hidden 768, 12 heads, FFN 3072), "
                   "sequence 128, batch 1, HF export layout, weightless: weights are absent "
                   "external data.")


def build_vit_b16() -> onnx.ModelProto:
    g = GraphBuilder("vit_b16")
    img, patch, hidden, heads, mlp, layers = 224, 16, 768, 12, 3072, 12
    grid = img // patch
    seq = grid * grid + 1
    eps = 1e-6
    x = g.input("input", TensorProto.FLOAT, [1, 3, img, img])
    x = conv(g, x, 3, hidden, patch, "/conv_proj", s=patch, pad=0)  # 1x768x14x14
    x = g.op("Reshape", [x, g.i64([1, hidden, grid * grid])], "/Reshape")
    x = g.op("Transpose", [x], "/Transpose", perm=[0, 2, 1])  # 1x196x768
    x = g.op("Concat", [g.weight("class_token", [1, 1, hidden]), x], "/Concat", axis=1)
    x = g.op("Add", [x, g.weight("encoder.pos_embedding", [1, seq, hidden])], "/encoder/Add")
    qkv_split = g.i64([hidden, hidden, hidden])
    for li in range(layers):
        path = f"/encoder/layers/encoder_layer_{li}"
        pn = f"encoder.layers.encoder_layer_{li}"
        h = layer_norm(g, x, hidden, f"{path}/ln_1", f"{pn}.ln_1", eps)
        sa, san = f"{path}/self_attention", f"{pn}.self_attention"
        qkv = g.op("MatMul", [h, g.weight(f"{san}.in_proj_weight", [hidden, 3 * hidden])],
                   f"{sa}/in_proj/MatMul")
        qkv = g.op("Add", [g.weight(f"{san}.in_proj_bias", [3 * hidden]), qkv],
                   f"{sa}/in_proj/Add")
        q, k, v = g.op_multi("Split", [qkv, qkv_split], f"{sa}/Split", 3, axis=-1)
        ctx = attention_core(g, q, k, v, seq, hidden, heads, sa, None, scale_q=True)
        o = linear(g, ctx, hidden, hidden, f"{sa}/out_proj", f"{san}.out_proj")
        x = g.op("Add", [o, x], f"{path}/Add")
        h = layer_norm(g, x, hidden, f"{path}/ln_2", f"{pn}.ln_2", eps)
        h = linear(g, h, hidden, mlp, f"{path}/mlp/mlp.0", f"{pn}.mlp.0")
        h = gelu_erf(g, h, f"{path}/mlp/mlp.1")
        h = linear(g, h, mlp, hidden, f"{path}/mlp/mlp.3", f"{pn}.mlp.3")
        x = g.op("Add", [h, x], f"{path}/Add_1")
    x = layer_norm(g, x, hidden, "/encoder/ln", "encoder.ln", eps)
    x = g.op("Gather", [x, g.i64(0, "const_i64_class_token_index")], "/Gather", axis=1)
    x = g.op("Gemm", [x, g.weight("heads.head.weight", [1000, hidden]),
                      g.weight("heads.head.bias", [1000])], "/heads/head/Gemm",
             alpha=1.0, beta=1.0, transB=1)
    g.output(x, "output", TensorProto.FLOAT, [1, 1000])
    return g.model("ViT-B/16 @224 (torchvision layout: pre-norm encoder, fused QKV in_proj, "
                   "class token), weightless: weights are absent external data.")


# --------------------------------------------------------------------------------------------
# Audio keyword spotting: STFT -> power -> log-mel -> CNN -> LSTM -> Gemm
# --------------------------------------------------------------------------------------------
def build_audio_kws() -> onnx.ModelProto:
    g = GraphBuilder("audio_kws")
    sr, n_samples, n_fft, win, hop, n_mels, n_classes = 16000, 16000, 512, 400, 160, 40, 12
    hidden = 128
    x = g.input("waveform", TensorProto.FLOAT, [1, n_samples])
    f = "/frontend"
    # center=True framing like torch.stft: reflect-pad n_fft/2 on both sides
    x = g.op("Pad", [x, g.i64([0, n_fft // 2, 0, n_fft // 2])], f"{f}/pad/Pad", mode="reflect")
    x = g.op("Unsqueeze", [x, g.i64([-1])], f"{f}/pad/Unsqueeze")  # 1 x 16512 x 1 (real)
    # Hann window of 400 samples zero-padded (centred) to the 512-point DFT
    w = g.op("HannWindow", [g.i64(win, "window_length")], f"{f}/window/HannWindow",
             output_datatype=TensorProto.FLOAT, periodic=1)
    w = g.op("Pad", [w, g.i64([(n_fft - win) // 2, (n_fft - win) // 2])], f"{f}/window/Pad",
             mode="constant")
    spec = g.op("STFT", [x, g.i64(hop, "frame_step"), w, g.i64(n_fft, "frame_length")],
                f"{f}/stft/STFT", onesided=1)  # 1 x 101 x 257 x 2
    sq = g.op("Mul", [spec, spec], f"{f}/power/Mul")
    power = g.op("ReduceSum", [sq, g.i64([-1])], f"{f}/power/ReduceSum", keepdims=0)
    mel_w = g.op("MelWeightMatrix",
                 [g.i64(n_mels, "num_mel_bins"), g.i64(n_fft, "dft_length"),
                  g.i64(sr, "sample_rate"), g.f32(20.0, "lower_edge_hertz"),
                  g.f32(sr / 2.0, "upper_edge_hertz")],
                 f"{f}/mel/MelWeightMatrix", output_datatype=TensorProto.FLOAT)  # 257 x 40
    mel = g.op("MatMul", [power, mel_w], f"{f}/mel/MatMul")  # 1 x 101 x 40
    mel = g.op("Add", [mel, g.f32(1e-6, "log_eps")], f"{f}/log/Add")
    mel = g.op("Log", [mel], f"{f}/log/Log")
    x = g.op("Unsqueeze", [mel, g.i64([1])], "/cnn/Unsqueeze")  # 1 x 1 x 101(T) x 40(F)
    chans = [1, 32, 64, 64]
    for i in range(3):
        x = conv(g, x, chans[i], chans[i + 1], 3, f"/cnn/conv{i + 1}")
        x = g.op("Relu", [x], f"/cnn/relu{i + 1}/Relu")
        if i < 2:
            x = g.op("MaxPool", [x], f"/cnn/pool{i + 1}/MaxPool", ceil_mode=0,
                     kernel_shape=[2, 2], pads=[0, 0, 0, 0], strides=[2, 2])
    # 1 x 64 x 25 x 10 -> sequence-major 25 x 1 x 640 for the LSTM
    t_steps, feat = 101 // 4, chans[-1] * (n_mels // 4)
    x = g.op("Transpose", [x], "/rnn/Transpose", perm=[2, 0, 1, 3])  # 25 x 1 x 64 x 10
    x = g.op("Reshape", [x, g.i64([t_steps, 1, feat])], "/rnn/Reshape")
    _, y_h, _ = g.op_multi("LSTM", [x, g.weight("rnn.lstm.W", [1, 4 * hidden, feat]),
                              g.weight("rnn.lstm.R", [1, 4 * hidden, hidden]),
                              g.weight("rnn.lstm.B", [1, 8 * hidden])],
                     "/rnn/lstm/LSTM", 3, direction="forward", hidden_size=hidden)
    h = g.op("Reshape", [y_h, g.i64([1, hidden])], "/rnn/Reshape_1")  # last hidden state
    y = g.op("Gemm", [h, g.weight("classifier.weight", [n_classes, hidden]),
                      g.weight("classifier.bias", [n_classes])], "/classifier/Gemm",
             alpha=1.0, beta=1.0, transB=1)
    g.output(y, "logits", TensorProto.FLOAT, [1, n_classes])
    return g.model("Keyword spotting (12 classes) on 1 s of 16 kHz audio: reflect pad, STFT "
                   "(512-pt DFT, Hann 400, hop 160), power, 40-bin MelWeightMatrix, log, "
                   "3x Conv/ReLU (+2 MaxPool), LSTM(128), Gemm. Weightless.")


# --------------------------------------------------------------------------------------------
# LSTM + GRU sequence model
# --------------------------------------------------------------------------------------------
def build_lstm_gru() -> onnx.ModelProto:
    g = GraphBuilder("lstm_gru")
    steps, feat, hidden, n_classes = 100, 40, 128, 29
    x = g.input("features", TensorProto.FLOAT, [1, steps, feat])
    x = g.op("Transpose", [x], "/Transpose", perm=[1, 0, 2])  # 100 x 1 x 40 (seq-major)
    y = g.op_multi("LSTM", [x, g.weight("lstm.W", [1, 4 * hidden, feat]),
                      g.weight("lstm.R", [1, 4 * hidden, hidden]),
                      g.weight("lstm.B", [1, 8 * hidden])],
             "/lstm/LSTM", 3, direction="forward", hidden_size=hidden)[0]
    y = g.op("Squeeze", [y, g.i64([1])], "/lstm/Squeeze")  # 100 x 1 x 128
    y = g.op_multi("GRU", [y, g.weight("gru.W", [1, 3 * hidden, hidden]),
                     g.weight("gru.R", [1, 3 * hidden, hidden]),
                     g.weight("gru.B", [1, 6 * hidden])],
             "/gru/GRU", 2, direction="forward", hidden_size=hidden,
             linear_before_reset=1)[0]
    y = g.op("Squeeze", [y, g.i64([1])], "/gru/Squeeze")  # 100 x 1 x 128
    y = g.op("Transpose", [y], "/Transpose_1", perm=[1, 0, 2])  # 1 x 100 x 128
    y = linear(g, y, hidden, n_classes, "/classifier", "classifier")  # 1 x 100 x 29
    y = g.op("LogSoftmax", [y], "/LogSoftmax", axis=-1)
    g.output(y, "log_probs", TensorProto.FLOAT, [1, steps, n_classes])
    return g.model("Small speech/sequence model: 100 frames x 40 features -> LSTM(128) -> "
                   "GRU(128) -> per-frame MatMul head (29 CTC symbols) -> LogSoftmax. "
                   "Weightless.")


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "yolov8n": build_yolov8n,
    "resnet18": build_resnet18,
    "mobilenetv2": build_mobilenetv2,
    "bert_base": build_bert_base,
    "audio_kws": build_audio_kws,
    "vit_b16": build_vit_b16,
    "lstm_gru": build_lstm_gru,
}
MODELS |= __import__("zoo_rknn").MODELS  # RKNN model-zoo architectures (examples/zoo_rknn.py)
MODELS |= __import__("zoo_extra").MODELS  # CPU-validation architectures (examples/zoo_extra.py)
# models that --check also executes with onnxruntime (random weights)
ORT_RUN = ["resnet18", "mobilenetv2", "yolov8n", "audio_kws", "lstm_gru", "bert_base", "vit_b16"]
# published multiply-accumulate counts (GMACs) for a +-tolerance sanity check
PUBLISHED_GMACS = {
    "resnet18": 1.82,   # torchvision: 1.81 GFLOPS(=GMACs)
    "mobilenetv2": 0.30,  # 300 MMACs
    "yolov8n": 4.35,    # 8.7 GFLOPs
    "bert_base": 11.2,  # ~22.5 GFLOPs at seq 128
    "vit_b16": 17.56,   # torchvision: 17.56 GFLOPS(=GMACs)
}


def generate(out_dir: str, names: Sequence[str]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        model = MODELS[name]()
        path = os.path.join(out_dir, f"{name}.onnx")
        data = model.SerializeToString(deterministic=True)
        with open(path, "wb") as fh:
            fh.write(data)
        print(f"wrote {os.path.relpath(path)}  ({len(data) / 1024:.1f} KiB, "
              f"{len(model.graph.node)} nodes)")


# --------------------------------------------------------------------------------------------
# --check
# --------------------------------------------------------------------------------------------
def _numel(dims: Sequence[int]) -> int:
    return int(np.prod(list(dims), dtype=np.int64))


def _static_shape(vi: onnx.ValueInfoProto) -> list[int] | None:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def count_macs(model: onnx.ModelProto) -> dict[str, int]:
    """MACs of Conv / Gemm / MatMul / LSTM / GRU (plus naive-DFT MACs of STFT), by op type."""
    shapes: dict[str, list[int]] = {}
    for vi in [*model.graph.value_info, *model.graph.input, *model.graph.output]:
        s = _static_shape(vi)
        if s is not None:
            shapes[vi.name] = s
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)

    def attrs(n: onnx.NodeProto) -> dict[str, Any]:
        return {a.name: helper.get_attribute_value(a) for a in n.attribute}

    macs: Counter[str] = Counter()
    for n in model.graph.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            macs["Conv"] += _numel(shapes[n.output[0]]) * _numel(w[1:])
        elif n.op_type == "MatMul":
            macs["MatMul"] += _numel(shapes[n.output[0]]) * shapes[n.input[0]][-1]
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]]
            k = a[0] if attrs(n).get("transA", 0) else a[1]
            macs["Gemm"] += _numel(shapes[n.output[0]]) * k
        elif n.op_type in ("LSTM", "GRU"):
            seq, batch, inp = shapes[n.input[0]]
            w = shapes[n.input[1]]  # [dirs, gates*H, I]
            hid = attrs(n)["hidden_size"]
            macs[n.op_type] += seq * batch * w[0] * w[1] * (inp + hid)
        elif n.op_type == "STFT":
            _, frames, bins, _ = shapes[n.output[0]]
            frame_len = _numel(shapes[n.input[2]]) if len(n.input) > 2 and n.input[2] else 0
            macs["STFT(naive DFT)"] += frames * bins * 2 * frame_len
    return dict(macs)


def _initializer_problems(model: onnx.ModelProto, model_dir: str) -> list[str]:
    problems = []
    for t in model.graph.initializer:
        is_float = t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE,
                                   TensorProto.BFLOAT16)
        ext = t.data_location == TensorProto.EXTERNAL
        if ext:
            kv = {e.key: e.value for e in t.external_data}
            itemsize = helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
            if set(kv) != {"location", "offset", "length"}:
                problems.append(f"{t.name}: external_data keys {sorted(kv)}")
            elif int(kv["length"]) != _numel(t.dims) * itemsize:
                problems.append(f"{t.name}: length {kv['length']} != numel*itemsize")
            elif os.path.exists(os.path.join(model_dir, kv["location"])):
                problems.append(f"{t.name}: external file {kv['location']} exists")
            if t.raw_data or t.float_data or t.int64_data or t.int32_data:
                problems.append(f"{t.name}: external tensor also carries inline data")
            if not is_float:
                problems.append(f"{t.name}: non-float tensor is external")
        else:
            if is_float and _numel(t.dims) > INLINE_FLOAT_MAX_ELEMS:
                problems.append(f"{t.name}: float tensor of {_numel(t.dims)} elems is inline")
    return problems


def _check_with_placeholder(model: onnx.ModelProto, data: bytes) -> None:
    import tempfile

    ext = [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    with tempfile.TemporaryDirectory() as tmp:
        sizes: dict[str, int] = {}
        for t in ext:
            kv = {e.key: e.value for e in t.external_data}
            end = int(kv["offset"]) + int(kv["length"])
            sizes[kv["location"]] = max(sizes.get(kv["location"], 0), end)
        for loc, nbytes in sizes.items():
            with open(os.path.join(tmp, loc), "wb") as fh:
                fh.truncate(nbytes)  # sparse: reads as zeros, takes no space
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as fh:
            fh.write(data)
        onnx.checker.check_model(path, full_check=True)


def _with_random_weights(model: onnx.ModelProto, rng: np.random.Generator) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, t in enumerate(m.graph.initializer):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        arr = (rng.standard_normal(tuple(t.dims), dtype=np.float32) * 0.02).astype(dtype)
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr, t.name))
    return m


def _random_inputs(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    feeds = {}
    for vi in model.graph.input:
        shape = _static_shape(vi)
        assert shape is not None
        et = vi.type.tensor_type.elem_type
        if et == TensorProto.INT64:
            if vi.name == "attention_mask":
                arr = np.ones(shape, dtype=np.int64)
                arr[..., -16:] = 0  # some padding
            else:  # token ids (BERT vocabulary size)
                arr = rng.integers(0, 30522, size=shape, dtype=np.int64)
        else:
            arr = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        feeds[vi.name] = arr
    return feeds


def _checker_notes(model: onnx.ModelProto, path: str, on_disk: bytes, errors: list[str], notes: list[str]) -> None:
    """The ONNX checker on the model in memory, on its file, and next to a placeholder weights file."""
    # checker. onnx>=1.15 verifies that an external-data file exists (relative to the model
    # dir; the cwd for an in-memory model), so the plain calls are expected to fail here.
    # The authoritative check runs on a temporary copy next to an empty *sparse*
    # placeholder of the declared size (no data, no disk use): everything else is checked.
    for label, target in (("in-memory", model), ("path", path)):
        try:
            onnx.checker.check_model(target, full_check=True)
            notes.append(f"checker({label}) ok")
        except Exception as exc:  # noqa: BLE001
            msg = str(exc).splitlines()[0]
            msg = msg if len(msg) < 110 else msg[:107] + "..."
            notes.append(f"checker({label}) rejects only the absent weights file: {msg}"
                         if "should be stored in" in msg else f"checker({label}): {msg}")
    try:
        _check_with_placeholder(model, on_disk)
        notes.append("checker(full_check, sparse placeholder weights file) ok")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"checker with placeholder weights file: {exc}")


def _inferred_shapes(model: onnx.ModelProto, errors: list[str]) -> dict[str, int]:
    """Strict shape inference on a copy without the stored value_info: problems into ``errors``;
    the MACs per op type (empty where inference failed)."""
    # strict shape inference on a copy with the stored value_info stripped
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.graph.value_info[:]
    inferred = None
    try:
        inferred = onnx.shape_inference.infer_shapes(bare, check_type=True, strict_mode=True,
                                                     data_prop=True)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"shape inference: {exc}")
    if inferred is not None:
        known = {vi.name: vi for vi in [*inferred.graph.value_info, *inferred.graph.input,
                                        *inferred.graph.output]}
        missing = [o for n in inferred.graph.node for o in n.output
                   if o and (o not in known or _static_shape(known[o]) is None)]
        if missing:
            errors.append(f"{len(missing)} node outputs without static shape, "
                          f"e.g. {missing[:3]}")
        for vi in [*model.graph.input, *model.graph.output]:
            if _static_shape(vi) is None:
                errors.append(f"graph input/output {vi.name} not static")
        for vi in model.graph.output:
            if _static_shape(known[vi.name]) != _static_shape(vi):
                errors.append(f"output {vi.name} inferred {_static_shape(known[vi.name])} "
                              f"!= declared {_static_shape(vi)}")
        macs = count_macs(inferred)
    else:
        macs = {}
    return macs


def _ort_run(model: onnx.ModelProto, errors: list[str], notes: list[str]) -> None:
    """Run the model with onnxruntime on random weights; every tensor's shape against the inferred one."""
    try:
        import onnxruntime as ort

        rng = np.random.default_rng(0)
        heavy = _with_random_weights(model, rng)
        # expose every intermediate tensor so its runtime shape can be compared with
        # the statically inferred one
        declared = {vi.name for vi in heavy.graph.output}
        heavy.graph.output.extend(vi for vi in model.graph.value_info
                                  if vi.name not in declared)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(heavy.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        outs = sess.run(None, _random_inputs(model, rng))
        bad = [f"{vi.name} {list(arr.shape)} != {_static_shape(vi)}"
               for vi, arr in zip(heavy.graph.output, outs, strict=True)
               if list(arr.shape) != _static_shape(vi)]
        if bad:
            errors.append(f"ORT shapes differ from inferred ones: {bad[:3]}")
        nonfinite = [vi.name for vi, arr in zip(heavy.graph.output, outs, strict=True)
                     if arr.dtype.kind == "f" and not np.all(np.isfinite(arr))]
        if nonfinite:
            errors.append(f"ORT produced non-finite values in {nonfinite[:3]}")
        if not bad and not nonfinite:
            first = heavy.graph.output[0]
            notes.append(f"onnxruntime ok (random weights): {first.name} "
                         f"{list(outs[0].shape)}; all {len(outs)} tensors match the "
                         "inferred static shapes")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"onnxruntime: {exc}")


def _print_model(name: str, model: onnx.ModelProto, size: int, status: str, t0: float,
                 macs: dict[str, int], total_macs: int, notes: list[str], errors: list[str]) -> None:
    """The per-model block of ``--check``'s report."""
    ops = Counter(n.op_type for n in model.graph.node)
    n_weights = sum(1 for t in model.graph.initializer
                    if t.data_location == TensorProto.EXTERNAL)
    w_bytes = sum(int({e.key: e.value for e in t.external_data}["length"])
                  for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL)
    print(f"== {name}: {status}  ({time.time() - t0:.1f} s)")
    print(f"   file {size / 1024:.1f} KiB, {len(model.graph.node)} nodes, "
          f"{n_weights} external weights ({w_bytes / 2**20:.1f} MiB absent, "
          f"{w_bytes // 4 / 1e6:.2f} M params)")
    print("   inputs : " + ", ".join(
        f"{vi.name} {_static_shape(vi)}" for vi in model.graph.input))
    print("   outputs: " + ", ".join(
        f"{vi.name} {_static_shape(vi)}" for vi in model.graph.output))
    print(f"   MACs   : {total_macs / 1e9:.3f} G  (" + ", ".join(
        f"{k} {v / 1e6:.1f} M" for k, v in sorted(macs.items())) + ")"
        + (f"  published ~{PUBLISHED_GMACS[name]} G" if name in PUBLISHED_GMACS else ""))
    print("   ops    : " + ", ".join(f"{k}x{v}" for k, v in sorted(ops.items())))
    for note in notes:
        print(f"   note   : {note}")
    for err in errors:
        print(f"   ERROR  : {err}")


def check(out_dir: str, names: Sequence[str], run_ort: bool) -> bool:
    t_start = time.time()
    ok_all = True
    rows = []
    for name in names:
        t0 = time.time()
        path = os.path.join(out_dir, f"{name}.onnx")
        errors: list[str] = []
        notes: list[str] = []
        if not os.path.exists(path):
            print(f"== {name}: FAIL  ({path} missing; run without --check first)")
            ok_all = False
            continue
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            errors.append(f"file is {size} bytes > {MAX_FILE_BYTES}")
        with open(path, "rb") as fh:
            on_disk = fh.read()
        if MODELS[name]().SerializeToString(deterministic=True) != on_disk:
            errors.append("file differs from a fresh regeneration (stale or non-deterministic)")
        model = onnx.load(path, load_external_data=False)
        errors += _initializer_problems(model, out_dir)
        # names
        node_names = [n.name for n in model.graph.node]
        if any(not n for n in node_names):
            errors.append("a node has no name")
        if len(set(node_names)) != len(node_names):
            errors.append("node names are not unique")
        _checker_notes(model, path, on_disk, errors, notes)
        macs = _inferred_shapes(model, errors)
        total_macs = sum(v for k, v in macs.items() if not k.startswith("STFT"))
        if name in PUBLISHED_GMACS:
            ref = PUBLISHED_GMACS[name]
            if abs(total_macs / 1e9 - ref) > 0.05 * ref:
                errors.append(f"MACs {total_macs / 1e9:.3f} G far from published {ref} G")
        if run_ort and name in ORT_RUN and not errors:
            _ort_run(model, errors, notes)
        status = "OK" if not errors else "FAIL"
        ok_all &= not errors
        _print_model(name, model, size, status, t0, macs, total_macs, notes, errors)
        rows.append((name, size, len(model.graph.node), total_macs, status))
    print()
    print(f"{'model':<12} {'size KiB':>9} {'nodes':>6} {'GMACs':>8}  status")
    for name, size, nn, macs_, status in rows:
        print(f"{name:<12} {size / 1024:>9.1f} {nn:>6} {macs_ / 1e9:>8.3f}  {status}")
    print(f"checked {len(rows)} models in {time.time() - t_start:.1f} s: "
          f"{'ALL OK' if ok_all else 'FAILURES'}")
    return ok_all


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="verify the generated files")
    ap.add_argument("--no-ort", action="store_true", help="with --check: skip onnxruntime runs")
    ap.add_argument("--out-dir", default=DEFAULT_OUT)
    ap.add_argument("models", nargs="*", metavar="MODEL",
                    help=f"subset of models (default: all of {', '.join(MODELS)})")
    args = ap.parse_args(argv)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    names = args.models or list(MODELS)
    if args.check:
        return 0 if check(args.out_dir, names, run_ort=not args.no_ort) else 1
    generate(args.out_dir, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
