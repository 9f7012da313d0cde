"""``eliminate_identity``: nodes that pass their input through unchanged, removed.

Matches ``Identity``; ``Dropout`` in inference (no ``training_mode`` input, or a constant
false one); a ``Reshape`` or an ``Expand`` whose output shape is its input shape (both static); a ``Transpose``
whose permutation is the identity; a ``Cast`` to the type its input already has. Readers of the
node's output read its input instead.

Legality: a Dropout's mask output is not read; when the output is a graph output its name is
kept, so the input is renamed to it, which needs the input to be made by a node (not a graph
input or initializer) and not to be a graph output itself.
"""

from __future__ import annotations

import onnx

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["eliminate_identity"]


@register_pass("eliminate_identity", "Identity, inference Dropout and no-op Reshape/Expand/Transpose/Cast removed")
def eliminate_identity(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Remove the pass-through nodes of ``model`` (see the module docstring).

    Returns
    -------
    The new model; one applied site per node removed; one skipped site per pass-through node
    that cannot go, with the reason.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    inferred = edit.infer_shapes(edit.copy_model(out))
    shapes, types = edit.value_shapes(inferred), _elem_types(inferred)
    applied: list[Site] = []
    skipped: list[Site] = []
    for node in list(graph.node):
        matched, reason = _passes_through(graph, node, shapes, types)
        if not matched:
            continue
        reason = reason or _removal_blocker(graph, node)
        if reason:
            skipped.append(Site((node.name,), legal=False, reason=reason))
            continue
        _remove(graph, node)
        applied.append(Site((node.name,)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    g = model.graph
    out = {vi.name: vi.type.tensor_type.elem_type for vi in [*g.input, *g.value_info, *g.output]}
    out.update({t.name: t.data_type for t in g.initializer})
    return out


def _passes_through(
    graph: onnx.GraphProto, node: onnx.NodeProto, shapes: dict[str, tuple[int | str, ...]], types: dict[str, int]
) -> tuple[bool, str]:
    """(whether ``node`` is a pass-through candidate, why it may not be removed: "" when it may)."""
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return False, ""
    if op == "Identity":
        return True, ""
    if op == "Dropout":
        if len(node.output) > 1 and node.output[1] and edit.use_count(graph, node.output[1]):
            return True, "Dropout's mask output is read"
        if len(node.input) > 2 and node.input[2]:
            mode = edit.constant_value(graph, node.input[2])
            if mode is None or bool(mode):
                return True, "Dropout's training_mode is not a constant false"
        return True, ""
    if op == "Transpose":
        rank = len(shapes.get(node.input[0], ()))
        perm = edit.attr(node, "perm")
        identity = list(perm) == list(range(len(perm))) if perm is not None else rank <= 1 and node.input[0] in shapes
        return identity, ""
    if op == "Cast":
        src = types.get(node.input[0], 0)
        return bool(src) and src == edit.attr(node, "to"), ""
    if op in ("Reshape", "Expand"):
        a, b = shapes.get(node.input[0]), shapes.get(node.output[0])
        static = a is not None and all(isinstance(d, int) and d > 0 for d in a)
        return static and a == b, ""
    return False, ""


def _removal_blocker(graph: onnx.GraphProto, node: onnx.NodeProto) -> str:
    """Why ``node`` cannot be bypassed ("" when it can)."""
    src, dst = node.input[0], node.output[0]
    outputs = {o.name for o in graph.output}
    if dst not in outputs:
        return ""
    if src in outputs:
        return "input and output are both graph outputs"
    if src not in edit.producers(graph):
        return "graph output fed straight from a graph input or initializer"
    return ""


def _remove(graph: onnx.GraphProto, node: onnx.NodeProto) -> None:
    """Bypass ``node``: its readers read its input, or (graph output) its input takes its name."""
    src, dst = node.input[0], node.output[0]
    graph.node.remove(node)
    if dst in {o.name for o in graph.output}:
        producer = edit.producers(graph)[src]
        producer.output[list(producer.output).index(src)] = dst
        edit.reroute(graph, src, dst)
    else:
        edit.reroute(graph, dst, src)
