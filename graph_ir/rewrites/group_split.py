"""``group_split``: a grouped Conv into a Split, one Conv per group, and a Concat.

A Conv with ``group = g`` computes each group's ``N / g`` output channels from its own
``C / g`` input channels only; splitting the input into ``g`` channel slices, convolving each
with its group's filters (and bias slice) and concatenating the results along channels is the
same computation, for a unit that runs only ``group = 1`` convs (or that runs them better).

Legality: ``group > 1``; not depthwise (one input channel per group would make ``C`` one-channel
convs); weight (and bias) constant initializers.
"""

from __future__ import annotations

import onnx
from onnx import helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["group_split"]


@register_pass("group_split", "grouped Conv (not depthwise) -> Split + one Conv per group + Concat")
def group_split(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Split every legal grouped Conv into its groups.

    Returns
    -------
    PassResult
        The new model; one applied site per split Conv, one skipped (with its reason) per grouped
        Conv left alone.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    inits = edit.initializers(graph)
    applied: list[Site] = []
    skipped: list[Site] = []
    for name in [n.name for n in graph.node if n.op_type == "Conv" and int(edit.attr(n, "group", 1)) > 1]:
        node = next(n for n in graph.node if n.name == name)
        reason = _illegal(node, inits)
        if reason:
            skipped.append(Site((name,), legal=False, reason=reason))
            continue
        edit.replace_nodes(graph, [node], _split(graph, node, inits))
        applied.append(Site((name,)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _illegal(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> str:
    """Why ``node`` (a grouped Conv) cannot be split, or ""."""
    weight = inits.get(node.input[1])
    if weight is None:
        return "weight is not a constant initializer"
    if len(node.input) > 2 and node.input[2] and node.input[2] not in inits:
        return "bias is not a constant initializer"
    if int(weight.dims[1]) == 1:
        return f"depthwise (one input channel per group, group={edit.attr(node, 'group')}): left to depthwise kernels"
    return ""


def _split(graph: onnx.GraphProto, node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> list[onnx.NodeProto]:
    """The Split, per-group Convs and Concat that compute ``node``."""
    groups = int(edit.attr(node, "group"))
    weight = inits[node.input[1]]
    bias = inits.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    per_in, per_out = int(weight.dims[1]), int(weight.dims[0]) // groups
    base = edit.unique_name(graph, f"{node.name}/group")
    parts = [f"{base}{g}_input" for g in range(groups)]
    results = [f"{base}{g}_output_0" for g in range(groups)]
    new = [edit.split_node(graph, node.input[0], parts, [per_in] * groups, 1, f"{base}/Split")]
    attrs = {k: v for k, v in edit.attrs(node).items() if k != "group"}
    for g in range(groups):
        inputs = [parts[g], _slice(graph, weight, g * per_out, per_out, f"{base}{g}.weight")]
        if bias is not None:
            inputs.append(_slice(graph, bias, g * per_out, per_out, f"{base}{g}.bias"))
        new.append(helper.make_node("Conv", inputs, [results[g]], name=f"{base}{g}", **attrs))
    new.append(helper.make_node("Concat", results, [node.output[0]], name=f"{base}/Concat", axis=1))
    return new


def _slice(graph: onnx.GraphProto, tensor: onnx.TensorProto, start: int, size: int, name: str) -> str:
    """A new initializer: ``tensor[start:start + size]`` along axis 0 (weightless if it is)."""
    values = edit.to_array(tensor)
    shape = [size, *edit.static_shape(tensor)[1:]]
    part = None if values is None else values[start : start + size]
    return edit.new_initializer(graph, edit.unique_name(graph, name), part, shape, tensor.data_type).name
