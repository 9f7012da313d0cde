"""Small ONNX models with data-dependent shapes and control flow, built with onnx.helper."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["detector", "if_model", "loop_model", "nested_model", "nonzero_model", "rnn_body", "scan_model", "topk_model"]

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


def rnn_body(n: int, seed: int = 0) -> tuple[onnx.GraphProto, list[onnx.TensorProto]]:
    """A Scan body: one RNN cell ``h' = tanh(x_t W + h U)`` on a [1, n] state, ``h'`` also the
    scan output (2 n^2 MACs); the weights are outer-scope initializers."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x_t", "W"], ["xw"], name="in_proj"),
        helper.make_node("MatMul", ["h", "U"], ["hu"], name="rec_proj"),
        helper.make_node("Add", ["xw", "hu"], ["pre"], name="add"),
        helper.make_node("Tanh", ["pre"], ["h2"], name="cell"),
        helper.make_node("Identity", ["h2"], ["y_t"], name="emit"),
    ]
    body = helper.make_graph(nodes, "cell", [_f("h", [1, n]), _f("x_t", [1, n])], [_f("h2", [1, n]), _f("y_t", [1, n])])
    weights = [_c(w, (rng.standard_normal((n, n)) / n).astype(np.float32)) for w in ("W", "U")]
    return body, weights


def scan_model(steps: int, n: int = 16, reverse: bool = False, seed: int = 0) -> onnx.ModelProto:
    """A Scan running :func:`rnn_body` over ``xs [steps, 1, n]`` from ``h0 [1, n]``: outputs the
    final state and every step's state ``[steps, 1, n]``."""
    body, weights = rnn_body(n, seed)
    scan = helper.make_node(
        "Scan", ["h0", "xs"], ["h_last", "ys"], name="rnn", body=body, num_scan_inputs=1,
        scan_input_directions=[int(reverse)], scan_output_directions=[int(reverse)],
    )  # fmt: skip
    return _model([scan], [_f("h0", [1, n]), _f("xs", [steps, 1, n])], [_f("h_last", [1, n]), _f("ys", None)], weights)


def nested_model(outer: int, steps: int, n: int = 16, inner_loop: int | None = None) -> onnx.ModelProto:
    """A Loop of ``outer`` trips whose body runs :func:`rnn_body` as a Scan over ``xs [steps, 1, n]``
    from the carried state; ``inner_loop`` given: the body also holds a Loop ``inner`` (one
    MatMul of n^2 MACs per trip) whose trip count is a graph input ``K`` (known only at run time)."""
    cell, weights = rnn_body(n)
    nodes = [helper.make_node("Scan", ["h", "xs"], ["h_scan", "ys"], name="rnn", body=cell, num_scan_inputs=1)]
    out = "h_scan"
    if inner_loop is not None:
        inner = _body([helper.make_node("MatMul", ["h_in", "U"], ["h_out"], name="mm")], n)
        inner.input[2].name, inner.output[1].name = "h_in", "h_out"
        nodes.append(helper.make_node("Loop", ["K", "", "h_scan"], ["h_loop"], name="inner", body=inner))
        out = "h_loop"
    body = helper.make_graph(
        [*nodes, helper.make_node("Identity", [out], ["h2"], name="carry")], "outer_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         _f("h", [1, n])],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _f("h2", [1, n])],
    )  # fmt: skip
    inits = [*weights, _c("M", np.array(outer, np.int64))]
    inputs = [_f("h0", [1, n]), _f("xs", [steps, 1, n])]
    if inner_loop is not None:
        inputs.append(helper.make_tensor_value_info("K", TensorProto.INT64, []))
    loop = helper.make_node("Loop", ["M", "", "h0"], ["y"], name="outer", body=body)
    return _model([loop], inputs, [_f("y", [1, n])], inits)
