"""Small ONNX models with data-dependent shapes and control flow, built with onnx.helper."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["detector", "if_model", "loop_model", "nonzero_model", "topk_model"]

OPSET = [helper.make_opsetid("", 17)]


def _model(nodes: list[onnx.NodeProto], inputs: list, outputs: list, inits: list | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
    return helper.make_model(graph, opset_imports=OPSET)


def _f(name: str, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _c(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def detector(max_per_class: int = 7, classes: int = 3, boxes: int = 48) -> onnx.ModelProto:
    """conv -> boxes [1, N, 4] and scores [1, C, N] -> NonMaxSuppression -> Gather of boxes."""
    side = 4  # 4x4 feature map, 3 anchors -> 48 boxes
    anchors = boxes // (side * side)
    w = _c("w", np.zeros((anchors * (4 + classes), 8, 3, 3), np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["feat"], name="head", pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["feat", "shape"], ["flat"], name="flat"),
        helper.make_node("Transpose", ["flat"], ["t"], name="t", perm=[0, 2, 1]),
        helper.make_node("Split", ["t", "split"], ["box", "score_t"], name="split", axis=2),
        helper.make_node("Transpose", ["score_t"], ["score"], name="score_tr", perm=[0, 2, 1]),
        helper.make_node("NonMaxSuppression", ["box", "score", "mobpc", "iou", "thr"], ["sel"], name="nms"),
        helper.make_node("Gather", ["sel", "two"], ["idx"], name="col", axis=1),
        helper.make_node("Gather", ["box", "idx"], ["picked"], name="pick", axis=1),
        helper.make_node("Relu", ["picked"], ["out"], name="post"),
    ]
    inits = [
        w, _c("shape", np.array([1, 4 + classes, boxes], np.int64)), _c("split", np.array([4, classes], np.int64)),
        _c("mobpc", np.array([max_per_class], np.int64)), _c("iou", np.array([0.5], np.float32)),
        _c("thr", np.array([0.1], np.float32)), _c("two", np.array(2, np.int64)),
    ]  # fmt: skip
    return _model(nodes, [_f("x", [1, 8, side, side])], [_f("out", None)], inits)


def nonzero_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("NonZero", ["r"], ["nz"], name="nz"),
        helper.make_node("Transpose", ["nz"], ["out"], name="tr"),
    ]
    return _model(nodes, [_f("x", [2, 3, 5])], [helper.make_tensor_value_info("out", TensorProto.INT64, None)])


def topk_model() -> onnx.ModelProto:
    """TopK whose k is a graph input (known only at run time)."""
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["vals", "idx"], name="topk", axis=1),
        helper.make_node("Relu", ["vals"], ["out"], name="relu"),
    ]
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    return _model(nodes, [_f("x", [1, 100]), k], [_f("out", None)])


def _body(nodes: list[onnx.NodeProto], n: int) -> onnx.GraphProto:
    return helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         _f("h", [1, n])],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _f("h2", [1, n])],
    )  # fmt: skip


def loop_model(trips: int | None, n: int = 64) -> onnx.ModelProto:
    """A Loop whose body is a MatMul + Relu on a carried [1, n] state; ``trips`` None: the trip
    count is a graph input."""
    body = _body(
        [helper.make_node("MatMul", ["h", "wl"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["h2"], name="act")], n
    )
    inits = [_c("wl", np.zeros((n, n), np.float32))]
    inputs = [_f("x", [1, n])]
    if trips is None:
        inputs.append(helper.make_tensor_value_info("M", TensorProto.INT64, []))
    else:
        inits.append(_c("M", np.array(trips, np.int64)))
    loop = helper.make_node("Loop", ["M", "", "x"], ["y"], name="loop", body=body)
    return _model([loop], inputs, [_f("y", [1, n])], inits)


def if_model(cond: bool | None, n: int = 64) -> onnx.ModelProto:
    """If whose then branch is a MatMul (heavy) and else branch a Relu; ``cond`` None: the
    condition is a graph input."""
    then = helper.make_graph([helper.make_node("MatMul", ["x", "wi"], ["a"], name="mm")], "then", [], [_f("a", [1, n])])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["b"], name="relu")], "else", [], [_f("b", [1, n])])
    inits = [_c("wi", np.zeros((n, n), np.float32))]
    inputs = [_f("x", [1, n])]
    if cond is None:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    else:
        inits.append(_c("cond", np.array(cond)))
    node = helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then, else_branch=other)
    return _model([node], inputs, [_f("y", [1, n])], inits)
