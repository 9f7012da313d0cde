"""``split_to_slice``: a Split replaced by one Slice per output that is read.

``Split(x, axis, sizes)`` output ``k`` is ``Slice(x, starts=[sum(sizes[:k])],
ends=[sum(sizes[:k+1])], axes=[axis])``. Outputs nobody reads get no Slice, so a Split of which
only some parts are used stops producing (and moving) the others; each part becomes its own op
that a scheduler can place and start on its own.

Legality: the part sizes are known: a constant ``split`` input, a ``split`` attribute (opset
< 13), or an even split (``num_outputs`` or no sizes) of an axis whose size is static.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["split_to_slice"]


@register_pass("split_to_slice", "Split replaced by one Slice per output that is read")
def split_to_slice(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Replace each Split of ``model`` whose part sizes are known by Slices.

    Returns
    -------
    The new model; one applied site per Split replaced; one skipped site per Split whose sizes
    are not known, with the reason.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    shapes = edit.value_shapes(edit.infer_shapes(edit.copy_model(out)))
    applied: list[Site] = []
    skipped: list[Site] = []
    for node in [n for n in graph.node if n.op_type == "Split" and n.domain in ("", "ai.onnx")]:
        sizes, axis, reason = _parts(graph, node, shapes)
        if not reason and len(sizes) != len(node.output):
            reason = f"{len(sizes)} split sizes for {len(node.output)} outputs"
        if reason:
            skipped.append(Site((node.name,), legal=False, reason=reason))
            continue
        edit.replace_nodes(graph, [node], _slices(graph, node, sizes, axis))
        applied.append(Site((node.name,)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _parts(graph: onnx.GraphProto, node: onnx.NodeProto, shapes: dict[str, tuple[int | str, ...]]) -> tuple[list[int], int, str]:
    """(part sizes, non-negative axis, "") or ([], 0, why they are not known)."""
    shape = shapes.get(node.input[0])
    if shape is None:
        return [], 0, "the input's rank is not known"
    axis = int(edit.attr(node, "axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    if len(node.input) > 1 and node.input[1]:
        given = edit.constant_value(graph, node.input[1])
        if given is None:
            return [], 0, "split sizes are not a constant"
        return [int(v) for v in np.asarray(given).ravel()], axis, ""
    attr_sizes = edit.attr(node, "split")
    if attr_sizes:
        return [int(v) for v in attr_sizes], axis, ""
    dim = shape[axis]
    if not isinstance(dim, int) or dim <= 0:
        return [], 0, "split axis has no static size"
    parts = int(edit.attr(node, "num_outputs", len(node.output)))
    step = -(-dim // parts)  # the last part takes the remainder (ONNX's uneven split)
    return [min(step, dim - k * step) for k in range(parts)], axis, ""


def _slices(graph: onnx.GraphProto, node: onnx.NodeProto, sizes: list[int], axis: int) -> list[onnx.NodeProto]:
    """One Slice per read output of ``node`` (their bounds as int64 initializers)."""
    reads = edit.consumers(graph)
    outputs = {o.name for o in graph.output}
    axes = edit.unique_name(graph, f"{node.name}/axes")
    edit.new_initializer(graph, axes, np.asarray([axis], dtype=np.int64))
    out: list[onnx.NodeProto] = []
    start = 0
    for k, (name, size) in enumerate(zip(node.output, sizes, strict=True)):
        if name and (name in reads or name in outputs):
            starts = edit.unique_name(graph, f"{node.name}/starts{k}")
            edit.new_initializer(graph, starts, np.asarray([start], dtype=np.int64))
            ends = edit.unique_name(graph, f"{node.name}/ends{k}")
            edit.new_initializer(graph, ends, np.asarray([start + size], dtype=np.int64))
            out.append(helper.make_node("Slice", [node.input[0], starts, ends, axes], [name], name=f"{node.name}/slice{k}"))
        start += size
    return out
