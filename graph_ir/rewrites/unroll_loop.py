"""``unroll_loop``: a Loop with a static trip count unrolled; an If with a constant condition
replaced by the branch it takes.

*Loop.* ``Loop(M, cond, v...)`` whose trip count ``M`` is a constant, whose condition is absent
or constant true and whose body passes the condition through unchanged (or makes it a constant
true) runs its body exactly ``M`` times. Unrolled, each iteration is a copy of the body's nodes
with its tensors renamed (``<loop>/iter<i>/<name>``), the iteration number and the condition as
constants, the loop-carried values threaded from one copy to the next; each scan output is the
iterations' values stacked (``Unsqueeze`` + ``Concat`` along a new axis 0), the final carried
values are the Loop's outputs (through ``Identity``).

*If.* ``If(cond)`` with ``cond`` a constant: the nodes of the branch it selects, renamed
(``<if>/then/<name>``), with its outputs as the If's (through ``Identity``).

Legality: ``M`` constant, ``1 <= M <= PassOptions.max_unroll``; condition absent or constant
true; body condition output passed through or constant true; no nested subgraph in the body or
branch (its reads of renamed names would need renaming too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["unroll_loop"]


class _Copier:
    """Copies subgraph nodes into the main graph under a name prefix, mapping body-local names;
    outer-scope names are read as they are."""

    def __init__(self, model: onnx.ModelProto, owner: str) -> None:
        self.model = model
        self.owner = owner
        self.nodes: list[onnx.NodeProto] = []
        self.names: dict[str, str] = {}
        self.axes0 = ""

    def const(self, name: str, value: np.ndarray) -> str:
        """A new initializer ``<owner>/<name>`` holding ``value``; returns its name."""
        full = edit.unique_name(self.model.graph, f"{self.owner}/{name}")
        return edit.new_initializer(self.model.graph, full, value).name

    def body_initializers(self, body: onnx.GraphProto) -> None:
        """Copy ``body``'s initializers into the main graph once (they do not change per pass)."""
        for t in body.initializer:
            copy = TensorProto()
            copy.CopyFrom(t)
            copy.name = edit.unique_name(self.model.graph, f"{self.owner}/{t.name}")
            self.model.graph.initializer.append(copy)
            self.names[t.name] = copy.name

    def copy(self, body: onnx.GraphProto, prefix: str, bound: dict[str, str]) -> dict[str, str]:
        """Copy ``body``'s nodes with ``bound`` (body input -> main-graph tensor); returns the
        mapping of every body-local name."""
        names = {**self.names, **bound}
        for k, node in enumerate(body.node):
            new = onnx.NodeProto()
            new.CopyFrom(node)
            new.name = f"{prefix}/{node.name or f'{node.op_type}_{k}'}"
            new.input[:] = [names.get(i, i) for i in node.input]
            for k, o in enumerate(node.output):
                if o:
                    names[o] = f"{prefix}/{o}"
                    new.output[k] = names[o]
            self.nodes.append(new)
        return names

    def unsqueeze0(self, tensor: str, output: str) -> None:
        """``output = tensor[None]`` (axes as an input from opset 13, an attribute before)."""
        opset = next((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 13)
        if opset < 13:
            self.emit("Unsqueeze", [tensor], output, axes=[0])
            return
        if not self.axes0:
            self.axes0 = self.const("axes0", np.array([0], np.int64))
        self.emit("Unsqueeze", [tensor, self.axes0], output)

    def emit(self, op: str, inputs: list[str], output: str, **attrs: Any) -> None:
        self.nodes.append(helper.make_node(op, inputs, [output], name=edit.unique_name(self.model.graph, f"{output}/{op}"), **attrs))


@register_pass("unroll_loop", "Loop with a static trip count unrolled; If with a constant condition inlined")
def unroll_loop(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Unroll each legal Loop and inline each If whose condition is a constant.

    Returns
    -------
    PassResult
        The new model; one applied site per unrolled Loop / inlined If, one skipped site (with
        its reason) per Loop / If left alone.
    """
    out = edit.copy_model(model)
    graph = out.graph
    applied: list[Site] = []
    skipped: list[Site] = []
    for name in [n.name for n in graph.node if n.op_type in ("Loop", "If")]:
        node = next(n for n in graph.node if n.name == name)
        copier = _Copier(out, name)
        if node.op_type == "Loop":
            reason = _unroll(graph, node, options.max_unroll, copier)
        else:
            reason = _inline(graph, node, copier)
        if reason:
            skipped.append(Site((name,), legal=False, reason=reason))
            continue
        at = next(k for k, n in enumerate(graph.node) if n.name == name)
        nodes = [*graph.node[:at], *copier.nodes, *graph.node[at + 1 :]]
        del graph.node[:]
        graph.node.extend(nodes)
        applied.append(Site((name,)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _nested(body: onnx.GraphProto) -> bool:
    return any(True for n in body.node for _ in edit.bodies(n))


def _is_true(graph: onnx.GraphProto, name: str) -> bool | None:
    """The constant boolean value of ``name`` (None: not a constant)."""
    value = edit.constant_value(graph, name)
    return None if value is None or value.size != 1 else bool(value.reshape(()))


def _trip_count(graph: onnx.GraphProto, loop: onnx.NodeProto, max_unroll: int) -> tuple[int, str]:
    """The Loop's static trip count, or (0, why it has none / is not unrolled)."""
    if not loop.input[0]:
        return 0, "no trip count (M is absent)"
    value = edit.constant_value(graph, loop.input[0])
    if value is None or value.size != 1:
        return 0, "trip count M is not a constant"
    trips = int(value.reshape(()))
    if trips < 1:
        return 0, f"trip count {trips}: the loop body never runs"
    if trips > max_unroll:
        return 0, f"trip count {trips} exceeds max_unroll={max_unroll}"
    if len(loop.input) > 1 and loop.input[1] and _is_true(graph, loop.input[1]) is not True:
        return 0, "loop condition is not a constant true"
    return trips, ""


def _body_condition_kept(body: onnx.GraphProto) -> bool:
    """The body's condition output is its condition input, passed through, or a constant true."""
    cond_in, cond_out = body.input[1].name, body.output[0].name
    if cond_out == cond_in:
        return True
    maker = next((n for n in body.node if cond_out in n.output), None)
    if maker is not None and maker.op_type == "Identity" and maker.input[0] == cond_in:
        return True
    return maker is not None and maker.op_type == "Constant" and _is_true(body, cond_out) is True


def _unroll(graph: onnx.GraphProto, loop: onnx.NodeProto, max_unroll: int, copier: _Copier) -> str:
    """Fill ``copier`` with the unrolled Loop, or return why it is not unrolled."""
    trips, reason = _trip_count(graph, loop, max_unroll)
    if reason:
        return reason
    body = edit.attr(loop, "body")
    if _nested(body):
        return "loop body holds a nested subgraph"
    if not _body_condition_kept(body):
        return "loop body computes its own condition (it may stop early)"
    carried = len(loop.input) - 2
    current = list(loop.input[2:])
    scans: list[list[str]] = [[] for _ in body.output[1 + carried :]]
    copier.body_initializers(body)
    iter_type = helper.tensor_dtype_to_np_dtype(body.input[0].type.tensor_type.elem_type or TensorProto.INT64)
    for i in range(trips):
        prefix = f"{loop.name}/iter{i}"
        bound = {body.input[0].name: copier.const(f"iter{i}", np.array(i, iter_type)),
                 body.input[1].name: copier.const(f"iter{i}/cond", np.array(True))}  # fmt: skip
        bound.update({v.name: current[k] for k, v in enumerate(body.input[2:])})
        names = copier.copy(body, prefix, bound)
        current = [names.get(o.name, o.name) for o in body.output[1 : 1 + carried]]
        for k, o in enumerate(body.output[1 + carried :]):
            stacked = f"{prefix}/{o.name}/unsqueezed"
            copier.unsqueeze0(names.get(o.name, o.name), stacked)
            scans[k].append(stacked)
    for k, final in enumerate(loop.output[:carried]):
        if final:
            copier.emit("Identity", [current[k]], final)
    for k, final in enumerate(loop.output[carried:]):
        if final:
            copier.emit("Concat", scans[k], final, axis=0)
    return ""


def _inline(graph: onnx.GraphProto, node: onnx.NodeProto, copier: _Copier) -> str:
    """Fill ``copier`` with the branch a constant-condition If takes, or return why not."""
    cond = _is_true(graph, node.input[0])
    if cond is None:
        return "condition is not a constant"
    branch = edit.attr(node, "then_branch" if cond else "else_branch")
    if _nested(branch):
        return "branch holds a nested subgraph"
    copier.body_initializers(branch)
    names = copier.copy(branch, f"{node.name}/{'then' if cond else 'else'}", {})
    for o, final in zip(branch.output, node.output, strict=True):
        if final:
            copier.emit("Identity", [names.get(o.name, o.name)], final)
    return ""
