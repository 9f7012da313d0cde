"""``concat_fold``: concats of concats flattened, and a Split's outputs concatenated back
replaced by the Split's input.

``Concat(a, Concat(b, c), d)`` on one axis is ``Concat(a, b, c, d)``: the inner concat's
inputs take its place (when the inner output is read by nothing else, so that it goes away).
``Concat(..., s0, s1, ..., sk, ...)`` where ``s0..sk`` are *all* the outputs of one Split on the
concat's axis, in order, is ``Concat(..., x, ...)`` with ``x`` the Split's input (the pieces
put back where they were cut from): exact, and a concat left with one input becomes that input.

Legality: the axes agree (negative axes resolved with the rank); an inner concat's output has
no other reader and is no graph output.
"""

from __future__ import annotations

import onnx

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["concat_fold"]


@register_pass("concat_fold", "concat of concats flattened; a Split's outputs concatenated in order become its input")
def concat_fold(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Flatten nested concats and undo split-then-concat in ``model``.

    Returns
    -------
    The new model; one applied site per inner concat merged or split run replaced (the nodes
    involved); one skipped site per nested concat that cannot be merged, with the reason.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    ranks = {k: len(v) for k, v in edit.value_shapes(edit.infer_shapes(edit.copy_model(out))).items()}
    applied: list[Site] = []
    skipped: list[Site] = []
    for name in [n.name for n in graph.node if n.op_type == "Concat"]:
        node = next((n for n in graph.node if n.name == name), None)
        if node is None:  # merged into a concat after it
            continue
        axis = _axis(node, ranks)
        _flatten(graph, node, axis, ranks, applied, skipped)
        _unsplit(graph, node, axis, ranks, applied)
        if len(node.input) == 1:
            _collapse(graph, node)
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _axis(node: onnx.NodeProto, ranks: dict[str, int]) -> int | None:
    """``node``'s axis made non-negative (None when the rank is unknown)."""
    axis = int(edit.attr(node, "axis", 0))
    rank = ranks.get(node.input[0]) if node.input else None
    if axis >= 0:
        return axis
    return axis + rank if rank else None


def _flatten(
    graph: onnx.GraphProto, node: onnx.NodeProto, axis: int | None, ranks: dict[str, int],
    applied: list[Site], skipped: list[Site],
) -> None:  # fmt: skip
    """Merge the concats feeding ``node`` on the same axis into it (repeatedly)."""
    changed = True
    while changed:
        changed = False
        prods = edit.producers(graph)
        for k, name in enumerate(node.input):
            inner = prods.get(name)
            if inner is None or inner.op_type != "Concat" or _axis(inner, ranks) != axis or axis is None:
                continue
            if edit.use_count(graph, name) != 1:
                skipped.append(Site((inner.name, node.name), legal=False, reason="inner concat's output is read elsewhere"))
                continue
            new_inputs = [*node.input[:k], *inner.input, *node.input[k + 1 :]]
            del node.input[:]
            node.input.extend(new_inputs)
            graph.node.remove(inner)
            applied.append(Site((inner.name, node.name)))
            changed = True
            break


def _unsplit(graph: onnx.GraphProto, node: onnx.NodeProto, axis: int | None, ranks: dict[str, int], applied: list[Site]) -> None:
    """Replace each run of ``node``'s inputs that is all of one Split's outputs, in order."""
    if axis is None:
        return
    prods = edit.producers(graph)
    k = 0
    while k < len(node.input):
        split = prods.get(node.input[k])
        outs = list(split.output) if split is not None and split.op_type == "Split" else []
        run = list(node.input[k : k + len(outs)])
        split_axis = int(edit.attr(split, "axis", 0)) if split is not None else 0
        if split_axis < 0:
            split_axis += ranks.get(split.input[0], 0) if split is not None else 0
        if split is not None and outs and run == outs and split_axis == axis:
            new_inputs = [*node.input[:k], split.input[0], *node.input[k + len(outs) :]]
            del node.input[:]
            node.input.extend(new_inputs)
            applied.append(Site((split.name, node.name)))
        k += 1


def _collapse(graph: onnx.GraphProto, node: onnx.NodeProto) -> None:
    """A concat of one input: its readers read that input (kept when its output is a graph output)."""
    src, dst = node.input[0], node.output[0]
    if dst in {o.name for o in graph.output}:
        node.op_type = "Identity"
        del node.attribute[:]
        return
    graph.node.remove(node)
    edit.reroute(graph, dst, src)
