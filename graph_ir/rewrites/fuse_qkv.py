"""``fuse_qkv``: MatMuls that share their activation input, merged into one MatMul + Split.

BERT's query, key and value projections each read the same hidden state with their own
``[K, N_i]`` weight. One MatMul on the weights concatenated along N computes all of them; a
Split along the last axis gives each its part back, exactly (each output column is the same dot
product). When every MatMul is followed by an ``Add`` of a constant ``[N_i]`` bias (its only
reader), the biases are concatenated too and one Add precedes the Split. ``Gemm`` without
transposes (alpha = beta = 1, bias absent or ``[N_i]``) is merged the same way, apart from the
MatMuls.

Legality, per projection: the weight is a constant rank-2 initializer (Gemm: no transpose, no
scaling, bias of shape ``[N]``); per group: at least two projections of one op type and one
weight element type read the tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["fuse_qkv"]


@dataclass(frozen=True, slots=True)
class _Member:
    """One projection of a group: its node, its weight, N, and its bias (and bias Add)."""

    node: onnx.NodeProto
    weight: TensorProto
    bias: TensorProto | None = None
    bias_add: onnx.NodeProto | None = None

    @property
    def n(self) -> int:
        return int(self.weight.dims[1])

    @property
    def output(self) -> str:
        return self.bias_add.output[0] if self.bias_add is not None else self.node.output[0]


@register_pass("fuse_qkv", "MatMuls that share an input, with constant weights: one MatMul + Split")
def fuse_qkv(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Merge the MatMuls (or transpose-free Gemms) that read one tensor with constant weights.

    Returns
    -------
    PassResult
        The new model; one applied site per merged group (its MatMul nodes), one skipped site per
        projection that cannot join its group and per group left with fewer than two.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    inits = edit.initializers(graph)
    consumers = edit.consumers(graph)
    applied: list[Site] = []
    skipped: list[Site] = []
    for tensor, readers in _groups(graph):
        members: list[_Member] = []
        for node in readers:
            member, reason = _member(node, inits, consumers)
            if member is None:
                skipped.append(Site((node.name,), legal=False, reason=reason))
            else:
                members.append(member)
        kept = _one_kind(members)
        if len(kept) < 2:
            if members:
                names = tuple(m.node.name for m in members)
                skipped.append(Site(names, legal=False, reason=f"fewer than two projections of {tensor!r} can merge"))
            continue
        _rewrite(out, tensor, kept)
        applied.append(Site(tuple(m.node.name for m in kept)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _groups(graph: onnx.GraphProto) -> list[tuple[str, list[onnx.NodeProto]]]:
    """Each tensor read as input 0 of at least two MatMul / Gemm nodes, with those nodes."""
    by_tensor: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        if node.op_type in ("MatMul", "Gemm") and len(node.input) >= 2:
            by_tensor.setdefault(node.input[0], []).append(node)
    return [(t, ns) for t, ns in by_tensor.items() if len(ns) >= 2]


def _member(
    node: onnx.NodeProto, inits: dict[str, TensorProto], consumers: dict[str, list[onnx.NodeProto]]
) -> tuple[_Member | None, str]:
    """The node as a mergeable projection, or None and why not."""
    weight = inits.get(node.input[1])
    if weight is None:
        return None, "weight is not a constant initializer"
    if len(weight.dims) != 2:
        return None, f"weight has rank {len(weight.dims)}, not 2"
    if node.op_type == "MatMul":
        add = _bias_add(node, int(weight.dims[1]), inits, consumers)
        if add is None:
            return _Member(node, weight), ""
        bias = next(i for i in add.input if i != node.output[0])
        return _Member(node, weight, inits[bias], add), ""
    if edit.attr(node, "transA", 0) or edit.attr(node, "transB", 0):
        return None, "Gemm transposes an input"
    if edit.attr(node, "alpha", 1.0) != 1.0 or edit.attr(node, "beta", 1.0) != 1.0:
        return None, "Gemm scales by alpha or beta"
    if len(node.input) > 2 and node.input[2]:
        bias = inits.get(node.input[2])
        if bias is None or list(bias.dims) != [weight.dims[1]]:
            return None, "Gemm bias is not a constant of shape [N]"
        return _Member(node, weight, bias), ""
    return _Member(node, weight), ""


def _bias_add(
    node: onnx.NodeProto, n: int, inits: dict[str, TensorProto], consumers: dict[str, list[onnx.NodeProto]]
) -> onnx.NodeProto | None:
    """The Add of a constant ``[N]`` bias that is the MatMul's only reader, if there is one."""
    readers = consumers.get(node.output[0], [])
    if len(readers) != 1 or readers[0].op_type != "Add":
        return None
    add = readers[0]
    others = [i for i in add.input if i != node.output[0]]
    if len(others) != 1 or others[0] not in inits or list(inits[others[0]].dims) != [n]:
        return None
    return add


def _one_kind(members: list[_Member]) -> list[_Member]:
    """The largest subset one node computes: one op type and weight type. Biases merge only when
    every kept member has one; otherwise MatMuls keep their Adds and Gemms without bias merge."""
    kinds: dict[tuple[str, int], list[_Member]] = {}
    for m in members:
        kinds.setdefault((m.node.op_type, m.weight.data_type), []).append(m)
    if not kinds:
        return []
    best = max(kinds.values(), key=len)
    if all(m.bias is not None for m in best):
        return best
    if best[0].node.op_type == "Gemm":
        return [m for m in best if m.bias is None]
    return [_Member(m.node, m.weight) for m in best]


def _rewrite(model: onnx.ModelProto, tensor: str, members: list[_Member]) -> None:
    """Replace ``members`` by one MatMul / Gemm (+ Add) + Split writing their original outputs."""
    graph = model.graph
    first = members[0].node
    base = edit.unique_name(graph, f"{first.name}/fused")
    weight = edit.concat_initializers(graph, [m.weight for m in members], 1, f"{base}.weight")
    biases = [m.bias for m in members if m.bias is not None]
    bias = edit.concat_initializers(graph, biases, 0, f"{base}.bias") if len(biases) == len(members) else None
    fused = f"{base}_output_0"
    new: list[onnx.NodeProto] = []
    if first.op_type == "Gemm":
        new.append(helper.make_node("Gemm", [tensor, weight] + ([bias] if bias else []), [fused], name=base))
    elif bias is None:
        new.append(helper.make_node("MatMul", [tensor, weight], [fused], name=base))
    else:
        new.append(helper.make_node("MatMul", [tensor, weight], [f"{base}_matmul"], name=base))
        new.append(helper.make_node("Add", [f"{base}_matmul", bias], [fused], name=f"{base}/Add"))
    new.append(edit.split_node(graph, fused, [m.output for m in members], [m.n for m in members], -1, f"{base}/Split"))
    gone = {m.node.name for m in members} | {m.bias_add.name for m in members if m.bias_add is not None}
    edit.replace_nodes(graph, [n for n in graph.node if n.name in gone], new)
