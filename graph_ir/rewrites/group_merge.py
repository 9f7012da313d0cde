"""``group_merge``: parallel Convs on the channel slices of one tensor, concatenated, into one
grouped Conv (the reverse of :mod:`graph_ir.rewrites.group_split`).

``Split(X, axis=1)`` into ``g`` equal slices, a Conv on each (same kernel, strides, pads,
dilations, groups and output channel count), their outputs side by side in one ``Concat``
along channels in the order of the slices: that is a Conv with ``group = g`` (times the convs'
own groups) whose filters are the convs' filters stacked, exactly.

Legality: the Split is along channels into equal parts, each part read by exactly one Conv
(and by nothing else); the Convs agree on every attribute and on output channels, have constant
weights (all with a bias or none), and their outputs are read only by one Concat along channels
where they appear consecutively in slice order.
"""

from __future__ import annotations

import onnx
from onnx import helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["group_merge"]


@register_pass("group_merge", "Split -> parallel Convs -> Concat along channels, into one grouped Conv")
def group_merge(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Merge every legal Split / Convs / Concat pattern into one grouped Conv.

    Returns
    -------
    PassResult
        The new model; one applied site per merged pattern (the Split, the Convs, the Concat),
        one skipped site (with its reason) per Split along channels feeding a Conv that cannot.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    ranks = {k: len(v) for k, v in edit.value_shapes(edit.infer_shapes(edit.copy_model(model))).items()}
    inits = edit.initializers(graph)
    applied: list[Site] = []
    skipped: list[Site] = []
    splits = [n.name for n in graph.node if n.op_type == "Split"]
    for name in splits:
        consumers = edit.consumers(graph)
        split = next(n for n in graph.node if n.name == name)
        if not any(r.op_type == "Conv" for o in split.output for r in consumers.get(o, [])):
            continue
        convs, concat, reason = _match(graph, split, consumers, inits, ranks)
        if concat is None:
            skipped.append(Site((name,), legal=False, reason=reason))
            continue
        _merge(graph, split, convs, concat, inits)
        applied.append(Site((name, *(c.name for c in convs), concat.name)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _match(
    graph: onnx.GraphProto,
    split: onnx.NodeProto,
    consumers: dict[str, list[onnx.NodeProto]],
    inits: dict[str, onnx.TensorProto],
    ranks: dict[str, int],
) -> tuple[list[onnx.NodeProto], onnx.NodeProto | None, str]:
    """The Convs and the Concat of the pattern rooted at ``split``, or (.., None, why not)."""
    rank = ranks.get(split.input[0], 0)
    if not rank or int(edit.attr(split, "axis", 0)) % rank != 1:
        return [], None, "Split is not along channels (axis 1)"
    outputs = {o.name for o in graph.output}
    convs: list[onnx.NodeProto] = []
    for part in split.output:
        readers = consumers.get(part, [])
        if part in outputs or len(readers) != 1 or readers[0].op_type != "Conv" or readers[0].input[0] != part:
            return [], None, f"split output {part!r} is not read by exactly one Conv"
        convs.append(readers[0])
    reason = _convs_agree(convs, inits)  # equal weight shapes and groups: equal split parts too
    if reason:
        return [], None, reason
    concats = {id(r): r for c in convs for r in consumers.get(c.output[0], [])}
    if len(concats) != 1 or any(len(consumers.get(c.output[0], [])) != 1 or c.output[0] in outputs for c in convs):
        return [], None, "conv outputs are not read by one Concat only"
    concat = next(iter(concats.values()))
    if concat.op_type != "Concat" or int(edit.attr(concat, "axis", 0)) % max(rank, 1) != 1:
        return [], None, f"conv outputs go to {concat.op_type}, not a Concat along channels"
    names = [c.output[0] for c in convs]
    inputs = list(concat.input)
    start = inputs.index(names[0])
    if inputs[start : start + len(names)] != names or inputs.count(names[0]) != 1:
        return [], None, "conv outputs are not side by side in slice order in the Concat"
    return convs, concat, ""


def _convs_agree(convs: list[onnx.NodeProto], inits: dict[str, onnx.TensorProto]) -> str:
    """Why ``convs`` cannot be one grouped conv (differing attributes, shapes, weights), or ""."""
    if any(c.input[1] not in inits for c in convs):
        return "a conv's weight is not a constant initializer"
    has_bias = [len(c.input) > 2 and bool(c.input[2]) for c in convs]
    if any(has_bias) and not all(has_bias):
        return "some convs have a bias and others not"
    if any(b and c.input[2] not in inits for b, c in zip(has_bias, convs, strict=True)):
        return "a conv's bias is not a constant initializer"
    shapes = {edit.static_shape(inits[c.input[1]]) for c in convs}
    if len(shapes) != 1:
        return f"convs have different weight shapes {sorted(shapes)}"
    if len({inits[c.input[1]].data_type for c in convs}) != 1:
        return "convs have different weight types"
    attrs = [sorted((k, repr(v)) for k, v in edit.attrs(c).items()) for c in convs]
    if any(a != attrs[0] for a in attrs):
        return "convs differ in attributes (kernel, strides, pads, dilations or groups)"
    return ""


def _merge(
    graph: onnx.GraphProto,
    split: onnx.NodeProto,
    convs: list[onnx.NodeProto],
    concat: onnx.NodeProto,
    inits: dict[str, onnx.TensorProto],
) -> None:
    """Replace ``split`` and ``convs`` by one grouped Conv; the Concat reads it instead (or goes,
    when the convs were all it concatenated)."""
    base = edit.unique_name(graph, f"{convs[0].name}/grouped")
    weight = edit.concat_initializers(graph, [inits[c.input[1]] for c in convs], 0, f"{base}.weight")
    inputs = [split.input[0], weight]
    if len(convs[0].input) > 2 and convs[0].input[2]:
        inputs.append(edit.concat_initializers(graph, [inits[c.input[2]] for c in convs], 0, f"{base}.bias"))
    attrs = edit.attrs(convs[0])
    attrs["group"] = int(attrs.get("group", 1)) * len(convs)
    names = [c.output[0] for c in convs]
    whole = list(concat.input) == names
    result = concat.output[0] if whole else f"{base}_output_0"
    conv = helper.make_node("Conv", inputs, [result], name=base, **attrs)
    gone = {split.name, *(c.name for c in convs)} | ({concat.name} if whole else set())
    if not whole:
        start = list(concat.input).index(names[0])
        live = next(n for n in graph.node if n.name == concat.name)
        kept = [*concat.input[:start], result, *concat.input[start + len(names) :]]
        del live.input[:]
        live.input.extend(kept)
    edit.replace_nodes(graph, [n for n in graph.node if n.name in gone], [conv])
