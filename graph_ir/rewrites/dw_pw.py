"""``dw_pw``: a regular Conv into depthwise + pointwise where that is exact, and back.

*Split.* A ``KxK`` conv whose weight factors per input channel as ``W[n, c] = P[n, c] * D[c]``
(each input channel's ``N`` filters are one ``KxK`` filter scaled) is a depthwise ``KxK`` conv
with filters ``D`` (same strides, pads, dilations) followed by a ``1x1`` conv with weights ``P``
and the original bias: ``C*K*K + N*C`` MACs per pixel instead of ``N*C*K*K``. Whether the weights
factor is checked on the actual values (relative residual below 1e-6); a weightless model has no
values to check, so its convs are skipped.

*Merge.* A depthwise conv (one input channel per group, multiplier ``m``) whose output only a
``1x1`` conv (stride 1, no pads) reads is one regular conv with
``W[n, c] = sum_j P[n, c*m + j] * D[c*m + j]`` and bias ``P @ b_D + b_P``, exactly (every step
is linear, and a zero-padded border stays zero-padded). Weightless models merge too (the merged
weight is weightless of shape ``[N, C, K, K]``).

Sites are found on the input model: a conv the merge makes is not split again in the same run.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["dw_pw"]

#: The largest relative residual of a factorization that counts as exact.
_FACTOR_RTOL = 1e-6


@register_pass("dw_pw", "regular Conv -> depthwise + pointwise where the weights factor exactly; and back")
def dw_pw(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Split each regular KxK conv whose weights factor exactly; merge each depthwise conv that
    only a 1x1 conv reads into one regular conv.

    Returns
    -------
    PassResult
        The new model; applied sites (one node: split; two nodes: merged), and skipped sites
        with their reasons (regular convs whose weights do not factor, depthwise convs whose
        reader is not a plain 1x1 conv).
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    inits = edit.initializers(graph)
    consumers = edit.consumers(graph)
    outputs = {o.name for o in graph.output}
    applied: list[Site] = []
    skipped: list[Site] = []
    plans: list[tuple[list[str], list[onnx.NodeProto]]] = []
    for node in graph.node:
        if node.op_type != "Conv" or node.input[1] not in inits:
            continue
        weight = inits[node.input[1]]
        group = int(edit.attr(node, "group", 1))
        if int(weight.dims[1]) == 1:  # depthwise: one input channel per group (a 1-channel input too)
            readers = [] if node.output[0] in outputs else consumers.get(node.output[0], [])
            site, new, reason = _merge_site(graph, node, readers, inits)
        elif group == 1 and math.prod(weight.dims[2:]) > 1:
            site, new, reason = _split_site(graph, node, inits)
        else:
            continue
        if reason:
            skipped.append(Site(site, legal=False, reason=reason))
        else:
            applied.append(Site(site))
            plans.append((list(site), new))
    for gone, new in plans:
        edit.replace_nodes(graph, [n for n in graph.node if n.name in gone], new)
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _mult(weight: onnx.TensorProto, group: int) -> int:
    """A depthwise conv's channel multiplier (filters per input channel)."""
    return max(1, int(weight.dims[0]) // group)


def _bias(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> onnx.TensorProto | None:
    return inits.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None


def _merge_site(
    graph: onnx.GraphProto, dw: onnx.NodeProto, readers: list[onnx.NodeProto], inits: dict[str, onnx.TensorProto]
) -> tuple[tuple[str, ...], list[onnx.NodeProto], str]:
    """The merge of depthwise ``dw`` into its only reader, or why not."""
    if len(readers) != 1 or readers[0].op_type != "Conv" or readers[0].input[0] != dw.output[0]:
        what = ", ".join(sorted({r.op_type for r in readers})) or "a graph output"
        return (dw.name,), [], f"depthwise output is read by {what}, not only by a 1x1 Conv"
    pw = readers[0]
    pw_weight = inits.get(pw.input[1])
    if pw_weight is None or int(edit.attr(pw, "group", 1)) != 1 or math.prod(pw_weight.dims[2:]) != 1:
        return (dw.name, pw.name), [], "reader is not a 1x1 conv with a constant weight and group 1"
    plain = all(s == 1 for s in edit.attr(pw, "strides", [1])) and not any(edit.attr(pw, "pads", [0]))
    if not plain or edit.attr(pw, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return (dw.name, pw.name), [], "1x1 conv has strides or pads"
    if (len(dw.input) > 2 and dw.input[2] and dw.input[2] not in inits) or (len(pw.input) > 2 and pw.input[2] and _bias(pw, inits) is None):
        return (dw.name, pw.name), [], "a bias is not a constant initializer"
    return (dw.name, pw.name), [_merged(graph, dw, pw, inits)], ""


def _merged(graph: onnx.GraphProto, dw: onnx.NodeProto, pw: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> onnx.NodeProto:
    """One regular conv computing ``pw(dw(x))``."""
    d_t, p_t = inits[dw.input[1]], inits[pw.input[1]]
    group = int(edit.attr(dw, "group"))
    m = _mult(d_t, group)
    n, kernel = int(p_t.dims[0]), list(edit.static_shape(d_t)[2:])
    d, p = edit.to_array(d_t), edit.to_array(p_t)
    db, pb = _bias(dw, inits), _bias(pw, inits)
    base = edit.unique_name(graph, f"{dw.name}/merged")
    w = None
    if d is not None and p is not None:
        pm = p.reshape(n, group, m).astype(np.float64)
        w = np.einsum("ncj,cjk->nck", pm, d.reshape(group, m, -1).astype(np.float64))
        w = w.reshape([n, group, *kernel]).astype(d.dtype)
    inputs = [dw.input[0], edit.new_initializer(graph, f"{base}.weight", w, [n, group, *kernel], d_t.data_type).name]
    if db is not None or pb is not None:
        values = _merged_bias(p, edit.to_array(db) if db else None, edit.to_array(pb) if pb else None, n, db, pb)
        inputs.append(edit.new_initializer(graph, f"{base}.bias", values, [n], d_t.data_type).name)
    attrs = {k: v for k, v in edit.attrs(dw).items() if k != "group"}
    return helper.make_node("Conv", inputs, [pw.output[0]], name=base, **attrs)


def _merged_bias(
    p: np.ndarray | None,
    db: np.ndarray | None,
    pb: np.ndarray | None,
    n: int,
    db_t: onnx.TensorProto | None,
    pb_t: onnx.TensorProto | None,
) -> np.ndarray | None:
    """``P @ b_D + b_P`` (either bias may be absent), or None when a value is missing."""
    if p is None or (db_t is not None and db is None) or (pb_t is not None and pb is None):
        return None
    out = np.zeros(n, np.float64)
    if db is not None:
        out += p.reshape(n, -1).astype(np.float64) @ db.astype(np.float64)
    if pb is not None:
        out += pb.astype(np.float64)
    return out.astype(p.dtype)


def _split_site(
    graph: onnx.GraphProto, node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]
) -> tuple[tuple[str, ...], list[onnx.NodeProto], str]:
    """The split of regular conv ``node`` into depthwise + pointwise, or why not."""
    w_t = inits[node.input[1]]
    w = edit.to_array(w_t)
    if w is None:
        return (node.name,), [], "weightless: no values to check that the weights factor"
    factors = _factor(w)
    if factors is None:
        return (node.name,), [], "weights do not factor as a depthwise filter per input channel times a 1x1"
    d, p = factors
    n, c = int(w.shape[0]), int(w.shape[1])
    base = edit.unique_name(graph, f"{node.name}/dw")
    mid = f"{base}_output_0"
    attrs = edit.attrs(node)
    attrs["group"] = c
    dw = helper.make_node("Conv", [node.input[0], edit.new_initializer(graph, f"{base}.weight", d).name], [mid], name=base, **attrs)
    pw_inputs = [mid, edit.new_initializer(graph, f"{node.name}/pw.weight", p.reshape(n, c, *([1] * (w.ndim - 2)))).name]
    if len(node.input) > 2 and node.input[2]:
        pw_inputs.append(node.input[2])
    pw = helper.make_node("Conv", pw_inputs, [node.output[0]], name=edit.unique_name(graph, f"{node.name}/pw"))
    return (node.name,), [dw, pw], ""


def _factor(w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(D [C, 1, *K], P [N, C])`` with ``w[n, c] = P[n, c] * D[c]`` within ``_FACTOR_RTOL``, or
    None when some input channel's filters are not one filter scaled."""
    n, c = w.shape[:2]
    m = w.reshape(n, c, -1).astype(np.float64)
    pick = np.linalg.norm(m, axis=2).argmax(axis=0)
    d = m[pick, np.arange(c)]
    norm2 = np.einsum("ck,ck->c", d, d)
    p = np.einsum("nck,ck->nc", m, d) / np.where(norm2 > 0, norm2, 1.0)
    residual = np.abs(p[:, :, None] * d[None] - m).max(initial=0.0)
    if residual > _FACTOR_RTOL * max(np.abs(m).max(initial=0.0), np.finfo(np.float32).tiny):
        return None
    return d.reshape(c, 1, *w.shape[2:]).astype(w.dtype), p.astype(w.dtype)
