"""``fold_bn``: a BatchNormalization after a Conv, ConvTranspose or Gemm folded into its weights.

In inference, ``BN(y) = s * (y - mean) + beta`` with ``s = gamma / sqrt(var + eps)`` per channel
(axis 1). For ``y = conv(x, W) + b`` that is ``conv(x, W * s) + (b - mean) * s + beta``: each
output channel's filter scaled by its ``s``, the bias shifted. For ConvTranspose the output
channel is axis 1 of the weight ``[C_in, C_out / group, k...]`` within each group; for Gemm
(``alpha * A @ B + beta_g * C``) it is the output column, and the new bias
``s * (beta_g * C - mean) + beta`` is taken with ``beta_g = 1``. Arithmetic is done in float64
and rounded once to the weights' dtype.

Legality: the BN is in inference mode (``training_mode`` 0, only its first output read), its
input is read by nothing else (nor a graph output), the producer's weight, bias and the BN's
four parameters are initializers (not graph inputs); a Gemm's output is 2-D. A weightless model
gets the same structure with new absent weight and bias initializers of the right shapes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["fold_bn"]

_PRODUCERS = ("Conv", "ConvTranspose", "Gemm")


@register_pass("fold_bn", "BatchNormalization after Conv / ConvTranspose / Gemm folded into its weights and bias")
def fold_bn(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Fold each legal BatchNormalization of ``model`` into the node before it.

    Returns
    -------
    The new model; one applied site per BN folded (producer, BN); one skipped site per BN after
    a Conv / ConvTranspose / Gemm that cannot be folded, with the reason.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    applied: list[Site] = []
    skipped: list[Site] = []
    for bn in [n for n in graph.node if n.op_type == "BatchNormalization"]:
        prod = edit.producers(graph).get(bn.input[0])
        if prod is None or prod.op_type not in _PRODUCERS or prod.domain not in ("", "ai.onnx"):
            continue
        site = (prod.name, bn.name)
        reason = _blocker(graph, prod, bn)
        if reason:
            skipped.append(Site(site, legal=False, reason=reason))
            continue
        _fold(graph, prod, bn)
        applied.append(Site(site))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _blocker(graph: onnx.GraphProto, prod: onnx.NodeProto, bn: onnx.NodeProto) -> str:
    """Why ``bn`` cannot be folded into ``prod`` ("" when it can)."""
    if len(bn.input) < 5:
        return "BatchNormalization lacks an input"
    if edit.attr(bn, "training_mode", 0):
        return "BatchNormalization is in training mode"
    if any(o and edit.use_count(graph, o) for o in bn.output[1:]):
        return "BatchNormalization's running statistics outputs are read"
    if edit.use_count(graph, bn.input[0]) != 1:
        return f"{prod.op_type} output is read by more than the BatchNormalization"
    inits = edit.initializers(graph)
    graph_inputs = {i.name for i in graph.input}
    weights = [prod.input[1], *(prod.input[2:3] if len(prod.input) > 2 and prod.input[2] else []), *bn.input[1:5]]
    for name in weights:
        if name not in inits or name in graph_inputs:
            return f"{name!r} is not a constant initializer"
    return ""


def _fold(graph: onnx.GraphProto, prod: onnx.NodeProto, bn: onnx.NodeProto) -> None:
    """Rewrite ``prod`` to compute what ``bn(prod)`` did, and remove ``bn``."""
    inits = edit.initializers(graph)
    w_t = inits[prod.input[1]]
    b_t = inits[prod.input[2]] if len(prod.input) > 2 and prod.input[2] else None
    params = [edit.to_array(inits[n]) for n in bn.input[1:5]]
    w, b = edit.to_array(w_t), (edit.to_array(b_t) if b_t is not None else None)
    n_out = _out_channels(prod, w_t)
    bias_shape = _bias_shape(prod, b_t, n_out)
    w_name = edit.unique_name(graph, f"{w_t.name}_bn")
    b_name = edit.unique_name(graph, f"{bn.name}_folded_bias")
    if w is None or (b_t is not None and b is None) or any(p is None for p in params):
        edit.new_initializer(graph, w_name, None, edit.static_shape(w_t), w_t.data_type)
        edit.new_initializer(graph, b_name, None, bias_shape, w_t.data_type)
    else:
        gamma, beta, mean, var = (np.asarray(p, dtype=np.float64) for p in params)  # type: ignore[arg-type]
        s = gamma / np.sqrt(var + float(edit.attr(bn, "epsilon", 1e-5)))
        w_new, b_new = _scaled(prod, w.astype(np.float64), None if b is None else b.astype(np.float64), s, mean, beta)
        edit.new_initializer(graph, w_name, w_new.astype(w.dtype))
        edit.new_initializer(graph, b_name, b_new.reshape(bias_shape).astype(w.dtype))
    del prod.input[1:]
    prod.input.extend([w_name, b_name])
    if prod.op_type == "Gemm":
        _set_attr(prod, "beta", 1.0)
    prod.output[0] = bn.output[0]
    graph.node.remove(bn)


def _out_channels(prod: onnx.NodeProto, w: TensorProto) -> int:
    dims = edit.static_shape(w)
    if prod.op_type == "Conv":
        return dims[0]
    if prod.op_type == "ConvTranspose":
        return dims[1] * int(edit.attr(prod, "group", 1))
    return dims[0] if edit.attr(prod, "transB", 0) else dims[1]


def _bias_shape(prod: onnx.NodeProto, b: TensorProto | None, n_out: int) -> tuple[int, ...]:
    """The folded bias's shape: ``[n_out]``, or a Gemm's C broadcast with ``[n_out]``."""
    if prod.op_type != "Gemm" or b is None:
        return (n_out,)
    return tuple(int(d) for d in np.broadcast_shapes(edit.static_shape(b), (n_out,)))


def _scaled(
    prod: onnx.NodeProto, w: np.ndarray, b: np.ndarray | None, s: np.ndarray, mean: np.ndarray, beta: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(new weight, new bias) in float64."""
    if prod.op_type == "Conv":
        w_new = w * s.reshape((-1,) + (1,) * (w.ndim - 1))
        return w_new, ((b if b is not None else 0.0) - mean) * s + beta
    if prod.op_type == "ConvTranspose":
        g = int(edit.attr(prod, "group", 1))
        grouped = w.reshape((g, w.shape[0] // g) + w.shape[1:])
        w_new = (grouped * s.reshape((g, 1, w.shape[1]) + (1,) * (w.ndim - 2))).reshape(w.shape)
        return w_new, ((b if b is not None else 0.0) - mean) * s + beta
    w_new = w * (s[:, None] if edit.attr(prod, "transB", 0) else s[None, :])
    c = float(edit.attr(prod, "beta", 1.0)) * b if b is not None else 0.0
    return w_new, s * (c - mean) + beta


def _set_attr(node: onnx.NodeProto, name: str, value: float) -> None:
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute(name, value))
