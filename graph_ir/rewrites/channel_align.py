"""``channel_align``: pad a Conv's output channels to a multiple of the unit's channel atom.

A MAC array ``A`` channels wide computes ``ceil(N / A) * A`` output channels whatever ``N`` is;
a conv padded to that count with zero filters (and zero bias) computes the same real channels
and exact zeros in the padded ones, and hands the next layer an aligned tensor. The padded
channels flow on through channel-wise ops (activations, pooling, a Resize by scales, an Add or
Mul of two tensors padded alike, a depthwise conv padded with zero filters) to the next regular
Conv, whose weights get zero input channels there, so that whatever value reached a padded
channel (``sigmoid(0) = 0.5``) is multiplied by zero. Every other reader (Concat, Reshape, a
graph output...) reads the original tensor through a ``Slice`` back to the real channels.

Legality, per Conv: ``group == 1`` (a grouped or depthwise conv keeps its groups), constant
weight and bias, output channels not yet a multiple of ``PassOptions.channel_atom``, and at
least one reader that takes padded channels (else padding would only add a Slice).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["channel_align"]

#: Element-wise ops whose value in a padded channel stays finite (the next conv zeroes it).
_UNARY = frozenset(
    {"Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Elu", "Selu",
     "Softplus", "Identity", "Gelu", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
)
#: Binary ops taking two tensors padded alike (or one and a scalar constant); not Div (0 / 0).
_BINARY = frozenset({"Add", "Sub", "Mul"})


@dataclass(slots=True)
class _Plan:
    """What the rewrite does: padded tensors (name -> (real, padded) channels), the nodes that
    pass padded channels on, and the convs' new output / input channel counts."""

    padded: dict[str, tuple[int, int]] = field(default_factory=dict)
    through: set[str] = field(default_factory=set)
    out_to: dict[str, int] = field(default_factory=dict)
    in_to: dict[str, int] = field(default_factory=dict)


@register_pass("channel_align", "pad Conv output channels to the unit's channel atom (zero filters, slice back)")
def channel_align(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Pad the output channels of each legal Conv to a multiple of ``options.channel_atom``.

    Returns
    -------
    PassResult
        The new model (the input itself, copied, when ``channel_atom <= 1``); one applied site per
        padded Conv, one skipped site (with its reason) per unaligned Conv left alone.
    """
    out = edit.copy_model(model)
    atom = options.channel_atom
    if atom <= 1:
        return PassResult(edit.finish(out), (), ())
    graph = out.graph
    inits = edit.initializers(graph)
    skipped: list[Site] = []
    sites: dict[str, int] = {}
    for node in graph.node:
        n, reason = _candidate(node, atom, inits)
        if reason:
            skipped.append(Site((node.name,), legal=False, reason=reason))
        elif n:
            sites[node.name] = n
    plan = _plan(graph, sites, atom, inits)
    while True:  # a conv whose output no reader takes padded is dropped, and the plan redone
        lone = [s for s in sites if not _has_taker(graph, s, plan)]
        if not lone:
            break
        for s in lone:
            del sites[s]
            skipped.append(Site((s,), legal=False, reason="no reader takes padded channels; padding would only add a Slice"))
        plan = _plan(graph, sites, atom, inits)
    _apply(out, plan, inits)
    skipped = [s for s in skipped if s.nodes[0] not in plan.through]  # a depthwise conv padded along
    return PassResult(edit.finish(out), tuple(Site((s,)) for s in sites), tuple(skipped))


def _candidate(node: onnx.NodeProto, atom: int, inits: dict[str, TensorProto]) -> tuple[int, str]:
    """(output channels, "") for a Conv to pad; (0, reason) for one that cannot be; (0, "") for a
    node that is no site (not a Conv, or aligned already)."""
    if node.op_type != "Conv" or len(node.input) < 2:
        return 0, ""
    weight = inits.get(node.input[1])
    if weight is None:
        return 0, "weight is not a constant initializer"
    n = int(weight.dims[0])
    if n % atom == 0:
        return 0, ""
    if int(edit.attr(node, "group", 1)) != 1:
        return 0, f"grouped conv (group={edit.attr(node, 'group', 1)}): padding its outputs would change its groups"
    if len(node.input) > 2 and node.input[2] and node.input[2] not in inits:
        return 0, "bias is not a constant initializer"
    return n, ""


def _plan(graph: onnx.GraphProto, sites: dict[str, int], atom: int, inits: dict[str, TensorProto]) -> _Plan:
    """The padded tensors reached from ``sites`` through channel-wise ops, to a fixpoint."""
    plan = _Plan()
    for node in graph.node:
        if node.name in sites:
            n = sites[node.name]
            plan.out_to[node.name] = math.ceil(n / atom) * atom
            plan.padded[node.output[0]] = (n, plan.out_to[node.name])
    changed = True
    while changed:
        changed = False
        for node in graph.node:
            if node.name in plan.through or node.name in sites:
                continue
            pad = _passes_on(node, plan.padded, inits, graph)
            if pad is not None:
                plan.through.add(node.name)
                if node.op_type == "Conv":
                    plan.out_to[node.name] = pad[1]
                plan.padded.update({o: pad for o in node.output[:1]})
                changed = True
    for node in graph.node:
        if node.op_type == "Conv" and node.name not in plan.through and node.input[0] in plan.padded and _takes_input(node, inits):
            plan.in_to[node.name] = plan.padded[node.input[0]][1]
    return plan


def _passes_on(
    node: onnx.NodeProto, padded: dict[str, tuple[int, int]], inits: dict[str, TensorProto], graph: onnx.GraphProto
) -> tuple[int, int] | None:
    """The padding ``node`` passes on to its output, or None when it cannot take it."""
    data = [i for i in node.input if i]
    pads = {padded[i] for i in data if i in padded}
    if len(pads) != 1 or any(o for o in node.output[1:]):
        return None
    pad = pads.pop()
    if node.op_type in _UNARY or node.op_type in _BINARY:
        if node.op_type in _UNARY and data[0] not in padded:
            return None
        return pad if all(i in padded or _is_scalar_const(i, inits, graph) for i in data) else None
    if node.op_type == "Resize" and data[0] in padded:
        scales = edit.constant_value(graph, node.input[2]) if len(node.input) > 2 and node.input[2] else None
        sizes_given = len(node.input) > 3 and bool(node.input[3])
        ok = scales is not None and scales.size >= 2 and float(scales[1]) == 1.0 and not sizes_given
        return pad if ok else None
    if node.op_type == "Conv" and data[0] in padded and _is_depthwise(node, pad[0], inits):
        return pad
    return None


def _has_taker(graph: onnx.GraphProto, site: str, plan: _Plan) -> bool:
    """Whether some reader of ``site``'s output takes it padded."""
    conv = next(n for n in graph.node if n.name == site)
    readers = edit.consumers(graph).get(conv.output[0], [])
    return any(r.name in plan.through or r.name in plan.in_to for r in readers)


def _takes_input(node: onnx.NodeProto, inits: dict[str, TensorProto]) -> bool:
    """A regular Conv with a constant weight can take padded input channels (zero weights)."""
    return int(edit.attr(node, "group", 1)) == 1 and node.input[1] in inits


def _is_depthwise(node: onnx.NodeProto, channels: int, inits: dict[str, TensorProto]) -> bool:
    """A depthwise conv (one filter per channel) with constant weight and bias."""
    weight = inits.get(node.input[1])
    bias_ok = len(node.input) < 3 or not node.input[2] or node.input[2] in inits
    return (
        channels > 1 and weight is not None and bias_ok and int(edit.attr(node, "group", 1)) == channels
        and int(weight.dims[0]) == channels and int(weight.dims[1]) == 1
    )


def _is_scalar_const(name: str, inits: dict[str, TensorProto], graph: onnx.GraphProto) -> bool:
    if name in inits:
        return math.prod(inits[name].dims) == 1
    value = edit.constant_value(graph, name)
    return value is not None and value.size == 1


def _apply(model: onnx.ModelProto, plan: _Plan, inits: dict[str, TensorProto]) -> None:
    """Rename the padded tensors, pad the weights, add Slices back for the other readers."""
    graph = model.graph
    rename = {t: edit.unique_name(graph, f"{t}__aligned{p}") for t, (_, p) in plan.padded.items()}
    consumers = edit.consumers(graph)
    outputs = {o.name for o in graph.output}
    movers = plan.through | set(plan.out_to) | set(plan.in_to)
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        new = onnx.NodeProto()
        new.CopyFrom(node)
        if node.name in movers:
            _pad_weights(model, new, plan, inits)
            new.input[:] = [rename.get(i, i) if _reads_padded(node, k, plan) else i for k, i in enumerate(new.input)]
            new.output[:] = [rename.get(o, o) for o in node.output]
        nodes.append(new)
        for o in node.output:
            if o in rename and (o in outputs or any(r.name not in movers for r in consumers.get(o, []))):
                nodes.append(_slice_back(graph, rename[o], o, plan.padded[o][0]))
    del graph.node[:]
    graph.node.extend(nodes)


def _reads_padded(node: onnx.NodeProto, k: int, plan: _Plan) -> bool:
    """Whether input ``k`` of a moved node reads the padded tensor (a conv: only its data)."""
    return k == 0 if node.op_type == "Conv" else node.input[k] in plan.padded


def _pad_weights(model: onnx.ModelProto, node: onnx.NodeProto, plan: _Plan, inits: dict[str, TensorProto]) -> None:
    """Give a padded conv zero filters / zero input channels (and a zero-padded bias)."""
    if node.op_type != "Conv":
        return
    weight = inits[node.input[1]]
    n_to = plan.out_to.get(node.name, int(weight.dims[0]))
    c_to = plan.in_to.get(node.name, int(weight.dims[1]))
    node.input[1] = _padded(model, weight, [n_to, c_to])
    if len(node.input) > 2 and node.input[2]:
        node.input[2] = _padded(model, inits[node.input[2]], [n_to])
    if node.name in plan.through:  # a depthwise conv: one group per (padded) channel
        for a in node.attribute:
            if a.name == "group":
                a.i = n_to


def _padded(model: onnx.ModelProto, tensor: TensorProto, leading: Iterable[int]) -> str:
    """A new initializer: ``tensor`` zero-padded at the end of its leading axes to ``leading``."""
    shape = list(edit.static_shape(tensor))
    for k, size in enumerate(leading):
        shape[k] = size
    if shape == list(edit.static_shape(tensor)):
        return tensor.name
    values = edit.to_array(tensor)
    if values is not None:
        values = np.pad(values, [(0, s - d) for s, d in zip(shape, values.shape, strict=True)])
    name = edit.unique_name(model.graph, f"{tensor.name}__aligned")
    return edit.new_initializer(model.graph, name, values, shape, tensor.data_type).name


def _slice_back(graph: onnx.GraphProto, padded: str, original: str, channels: int) -> onnx.NodeProto:
    """``original = padded[:, :channels]``."""
    ends = edit.unique_name(graph, f"{original}__slice_ends")
    starts = edit.unique_name(graph, f"{original}__slice_starts")
    edit.new_initializer(graph, starts, np.array([0], np.int64))
    edit.new_initializer(graph, ends, np.array([channels], np.int64))
    axes = edit.unique_name(graph, f"{original}__slice_axes")
    edit.new_initializer(graph, axes, np.array([1], np.int64))
    return helper.make_node("Slice", [padded, starts, ends, axes], [original], name=edit.unique_name(graph, f"{original}/Slice"))
