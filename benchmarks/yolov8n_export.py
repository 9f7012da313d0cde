"""A YOLOv8n ONNX laid out as ``torch.onnx.export`` writes Ultralytics' model (opset 17, no
onnxslim pass): the project's held-out Jetson check, built with ``onnx.helper`` alone.

It is the same network as ``examples/models/yolov8n.onnx`` (ultralytics ``yolov8.yaml`` scale n,
BatchNorm folded, SiLU as ``Sigmoid`` then ``Mul``) but written independently, the way the
exporter writes it rather than the way ``examples/make_models.py`` does:

* every shape, split size, scale and scalar is a ``Constant`` node (``/model.22/Constant_1``),
  not an initializer;
* the Detect head flattens each scale with ``view(1, 144, -1)`` (a ``-1`` in the Reshape), then
  concatenates the three to ``(1, 144, 8400)``;
* DFL: ``Reshape (1, 4, 16, 8400)``, ``Transpose``, ``Softmax`` over the 16 bins, a 1x1 ``Conv``
  with the ``arange(16)`` weights, ``Reshape (1, 4, 8400)``;
* the anchor/stride decode (``dist2bbox``) slices ``lt`` and ``rb`` with two ``Slice`` nodes
  (``chunk`` as older exporters write it) and reads the anchor and stride tables as ``Constant``
  nodes holding their values (0.5-offset grid, strides 8 / 16 / 32);
* ``Concat`` of the boxes and the class ``Sigmoid`` to ``output0`` ``(1, 84, 8400)``.

Weights are zero-filled initializers (only shapes matter to hwsim). Run
``python benchmarks/yolov8n_export.py OUT.onnx`` to write it; :func:`build` returns the model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IMG, NC, REG_MAX = 640, 80, 16
STRIDES = (8, 16, 32)


class _Export:
    """Nodes, initializers and exporter-style names (``/model.N/op/Op_k_output_0``)."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.count: dict[str, int] = {}

    def _name(self, scope: str, op: str) -> str:
        key = f"{scope}/{op}"
        k = self.count.get(key, 0)
        self.count[key] = k + 1
        return f"{key}_{k}" if k else key

    def op(self, op: str, inputs: list[str], scope: str, n_out: int = 1, **attrs: Any) -> list[str]:
        name = self._name(scope, op)
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs

    def const(self, value: np.ndarray, scope: str) -> str:
        name = self._name(scope, "Constant")
        out = f"{name}_output_0"
        tensor = numpy_helper.from_array(np.asarray(value), name=out)
        self.nodes.append(helper.make_node("Constant", [], [out], name=name, value=tensor))
        return out

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        self.inits.append(numpy_helper.from_array(np.zeros(shape, np.float32), name=name))
        return name


def _conv(e: _Export, x: str, cin: int, cout: int, k: int, scope: str, s: int = 1,
          act: bool = True) -> str:
    """Ultralytics ``Conv``: Conv2d (BatchNorm folded, bias) then SiLU = ``x * sigmoid(x)``."""
    w = e.weight(f"{scope.strip('/').replace('/', '.')}.weight", (cout, cin, k, k))
    b = e.weight(f"{scope.strip('/').replace('/', '.')}.bias", (cout,))
    p = k // 2
    (y,) = e.op("Conv", [x, w, b], f"{scope}/conv", dilations=[1, 1], group=1,
                kernel_shape=[k, k], pads=[p, p, p, p], strides=[s, s])
    if not act:
        return y
    (sg,) = e.op("Sigmoid", [y], f"{scope}/act")
    return e.op("Mul", [y, sg], f"{scope}/act")[0]


def _c2f(e: _Export, x: str, c1: int, c2: int, n: int, shortcut: bool, scope: str) -> str:
    c = c2 // 2
    y = _conv(e, x, c1, 2 * c, 1, f"{scope}/cv1")
    ys = e.op("Split", [y, e.const(np.array([c, c], np.int64), scope)], scope, 2, axis=1)
    for i in range(n):
        h = _conv(e, ys[-1], c, c, 3, f"{scope}/m.{i}/cv1")
        h = _conv(e, h, c, c, 3, f"{scope}/m.{i}/cv2")
        if shortcut:
            h = e.op("Add", [ys[-1], h], f"{scope}/m.{i}")[0]
        ys.append(h)
    (cat,) = e.op("Concat", ys, scope, axis=1)
    return _conv(e, cat, (2 + n) * c, c2, 1, f"{scope}/cv2")


def _sppf(e: _Export, x: str, c1: int, c2: int, scope: str) -> str:
    ys = [_conv(e, x, c1, c1 // 2, 1, f"{scope}/cv1")]
    for _ in range(3):
        ys += e.op("MaxPool", [ys[-1]], f"{scope}/m", ceil_mode=0, dilations=[1, 1],
                   kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1])
    (cat,) = e.op("Concat", ys, scope, axis=1)
    return _conv(e, cat, 2 * c1, c2, 1, f"{scope}/cv2")


def _upsample(e: _Export, x: str, scope: str) -> str:
    roi = e.const(np.zeros(0, np.float32), scope)
    scales = e.const(np.array([1, 1, 2, 2], np.float32), scope)
    return e.op("Resize", [x, roi, scales], scope, coordinate_transformation_mode="asymmetric",
                cubic_coeff_a=-0.75, mode="nearest", nearest_mode="floor")[0]


def _anchors() -> tuple[np.ndarray, np.ndarray]:
    """Ultralytics ``make_anchors(feats, strides, 0.5)``, transposed: (2, 8400) and (1, 8400)."""
    points, strides = [], []
    for s in STRIDES:
        n = IMG // s
        sy, sx = np.meshgrid(np.arange(n) + 0.5, np.arange(n) + 0.5, indexing="ij")
        points.append(np.stack((sx, sy), -1).reshape(-1, 2))
        strides.append(np.full((n * n, 1), s))
    return (np.concatenate(points).T.astype(np.float32),
            np.concatenate(strides).T.astype(np.float32))


def _backbone_neck(e: _Export, x: str) -> tuple[str, str, str]:
    o = {0: _conv(e, x, 3, 16, 3, "/model.0", s=2)}
    o[1] = _conv(e, o[0], 16, 32, 3, "/model.1", s=2)
    o[2] = _c2f(e, o[1], 32, 32, 1, True, "/model.2")
    o[3] = _conv(e, o[2], 32, 64, 3, "/model.3", s=2)
    o[4] = _c2f(e, o[3], 64, 64, 2, True, "/model.4")
    o[5] = _conv(e, o[4], 64, 128, 3, "/model.5", s=2)
    o[6] = _c2f(e, o[5], 128, 128, 2, True, "/model.6")
    o[7] = _conv(e, o[6], 128, 256, 3, "/model.7", s=2)
    o[8] = _c2f(e, o[7], 256, 256, 1, True, "/model.8")
    o[9] = _sppf(e, o[8], 256, 256, "/model.9")
    o[10] = _upsample(e, o[9], "/model.10")
    o[11] = e.op("Concat", [o[10], o[6]], "/model.11", axis=1)[0]
    o[12] = _c2f(e, o[11], 384, 128, 1, False, "/model.12")
    o[13] = _upsample(e, o[12], "/model.13")
    o[14] = e.op("Concat", [o[13], o[4]], "/model.14", axis=1)[0]
    o[15] = _c2f(e, o[14], 192, 64, 1, False, "/model.15")
    o[16] = _conv(e, o[15], 64, 64, 3, "/model.16", s=2)
    o[17] = e.op("Concat", [o[16], o[12]], "/model.17", axis=1)[0]
    o[18] = _c2f(e, o[17], 192, 128, 1, False, "/model.18")
    o[19] = _conv(e, o[18], 128, 128, 3, "/model.19", s=2)
    o[20] = e.op("Concat", [o[19], o[9]], "/model.20", axis=1)[0]
    o[21] = _c2f(e, o[20], 384, 256, 1, False, "/model.21")
    return o[15], o[18], o[21]


def _detect(e: _Export, feats: tuple[str, str, str]) -> str:
    d, no = "/model.22", NC + 4 * REG_MAX
    flat = []
    for i, (f, ch) in enumerate(zip(feats, (64, 128, 256), strict=True)):
        b = _conv(e, f, ch, 64, 3, f"{d}/cv2.{i}/cv2.{i}.0")
        b = _conv(e, b, 64, 64, 3, f"{d}/cv2.{i}/cv2.{i}.1")
        b = _conv(e, b, 64, 4 * REG_MAX, 1, f"{d}/cv2.{i}/cv2.{i}.2", act=False)
        c = _conv(e, f, ch, 80, 3, f"{d}/cv3.{i}/cv3.{i}.0")
        c = _conv(e, c, 80, 80, 3, f"{d}/cv3.{i}/cv3.{i}.1")
        c = _conv(e, c, 80, NC, 1, f"{d}/cv3.{i}/cv3.{i}.2", act=False)
        (cat,) = e.op("Concat", [b, c], d, axis=1)
        flat += e.op("Reshape", [cat, e.const(np.array([1, no, -1], np.int64), d)], d)
    (x,) = e.op("Concat", flat, d, axis=2)
    box, cls = e.op("Split", [x, e.const(np.array([4 * REG_MAX, NC], np.int64), d)], d, 2, axis=1)
    a = 8400
    (t,) = e.op("Reshape", [box, e.const(np.array([1, 4, REG_MAX, a], np.int64), d)], f"{d}/dfl")
    (t,) = e.op("Transpose", [t], f"{d}/dfl", perm=[0, 2, 1, 3])
    (t,) = e.op("Softmax", [t], f"{d}/dfl", axis=1)
    dfl_w = e.weight("model.22.dfl.conv.weight", (1, REG_MAX, 1, 1))
    (t,) = e.op("Conv", [t, dfl_w], f"{d}/dfl/conv", dilations=[1, 1], group=1,
                kernel_shape=[1, 1], pads=[0, 0, 0, 0], strides=[1, 1])
    (t,) = e.op("Reshape", [t, e.const(np.array([1, 4, a], np.int64), d)], f"{d}/dfl")
    ax = e.const(np.array([1], np.int64), d)
    lt = e.op("Slice", [t, e.const(np.array([0], np.int64), d), e.const(np.array([2], np.int64), d), ax], d)[0]
    rb = e.op("Slice", [t, e.const(np.array([2], np.int64), d), e.const(np.array([4], np.int64), d), ax], d)[0]
    anchors, strides = _anchors()
    pts = e.const(anchors[None], d)
    (x1y1,) = e.op("Sub", [pts, lt], d)
    (x2y2,) = e.op("Add", [pts, rb], d)
    (cxy,) = e.op("Add", [x1y1, x2y2], d)
    (cxy,) = e.op("Div", [cxy, e.const(np.array(2, np.float32), d)], d)
    (wh,) = e.op("Sub", [x2y2, x1y1], d)
    (dbox,) = e.op("Concat", [cxy, wh], d, axis=1)
    (dbox,) = e.op("Mul", [dbox, e.const(strides, d)], d)
    (sig,) = e.op("Sigmoid", [cls], d)
    return e.op("Concat", [dbox, sig], d, axis=1)[0]


def build() -> onnx.ModelProto:
    """The export: input ``images`` (1, 3, 640, 640), output ``output0`` (1, 84, 8400)."""
    e = _Export()
    out = _detect(e, _backbone_neck(e, "images"))
    e.nodes[-1].output[0] = "output0"
    assert out.endswith("_output_0")
    graph = helper.make_graph(
        e.nodes, "main_graph",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, IMG, IMG])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + NC, 8400])],
        e.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pytorch", producer_version="2.1.0")
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def write(path: Path) -> Path:
    """Write :func:`build` to ``path`` (about 13 MB of zero weights) and return it."""
    onnx.save(build(), str(path))
    return path


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "yolov8n_export.onnx"))
