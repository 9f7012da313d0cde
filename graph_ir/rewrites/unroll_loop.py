"""``unroll_loop``: a Loop or Scan with a static trip count unrolled; an If with a constant
condition replaced by the branch it takes.

*Loop.* ``Loop(M, cond, v...)`` whose trip count ``M`` is a constant, whose condition is absent
or constant true and whose body passes the condition through unchanged (or makes it a constant
true) runs its body exactly ``M`` times. Unrolled, each iteration is a copy of the body's nodes
with its tensors renamed (``<loop>/iter<i>/<name>``), the iteration number and the condition as
constants, the loop-carried values threaded from one copy to the next; each scan output is the
iterations' values stacked (``Unsqueeze`` + ``Concat`` along a new axis 0), the final carried
values are the Loop's outputs (through ``Identity``).

*Scan* (opset 9 on). Its trip count is the length of its scan inputs along their scan axes
(static after shape inference). Unrolled like a Loop: the state variables threaded, each scan
input sliced per iteration (``Gather`` of index ``i``, or ``T - 1 - i`` in reverse), each scan
output the iterations' values stacked along its axis (``Unsqueeze`` + ``Concat``, in reverse
order for a reverse direction).

*If.* ``If(cond)`` with ``cond`` a constant: the nodes of the branch it selects, renamed
(``<if>/then/<name>``), with its outputs as the If's (through ``Identity``).

*Nesting.* A Loop / Scan / If inside a body is copied with the body (its reads of renamed names
renamed) and resolved on the next round: the registered pass repeats until nothing changes.
Each copied node records in its ``metadata_props`` the product of the trip counts unrolled
around it (:data:`UNROLLED`) and its original name (:data:`ORIGIN`); ``max_unroll`` bounds
that product.

*Multiply* (``multiply=True``, the importer's mode, not the registered pass: the result is not
equivalent). A loop beyond ``max_unroll`` has its body copied once, each copied node's
:data:`REPEAT` set to the trip count (times its enclosing repeat), its scan outputs that one
value repeated ``T`` times (``Concat``): the body is costed once and multiplied.

Legality: trip count static, ``1 <= M`` and the unrolled product ``<= PassOptions.max_unroll``;
a Loop's condition absent or constant true and its body condition passed through or constant true.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph_ir.dynamic import REPEAT_KEY
from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["CONTROL_FLOW", "ORIGIN", "REPEAT", "UNROLLED", "meta_int", "unroll_loop", "unroll_once"]

#: The op types this pass resolves.
CONTROL_FLOW = ("Loop", "Scan", "If")
#: Node metadata: the product of the trip counts unrolled around a copied node.
UNROLLED = "hwsim.unrolled"
#: Node metadata: how many times a node runs (a loop body costed once and multiplied).
REPEAT = REPEAT_KEY
#: Node metadata: the name a copied node had in its body (``--assume`` names it so).
ORIGIN = "hwsim.origin"
#: Rounds of the registered pass (one nesting level each).
MAX_DEPTH = 16


def meta_int(node: onnx.NodeProto, key: str, default: int = 1) -> int:
    """The whole number ``node`` records under ``key`` in its ``metadata_props`` (else ``default``)."""
    return next((int(p.value) for p in node.metadata_props if p.key == key), default)


def origin(node: onnx.NodeProto) -> str:
    """The name ``node`` had in the body it was copied from (its own name if not a copy)."""
    return next((p.value for p in node.metadata_props if p.key == ORIGIN), node.name)


def _set_meta(node: onnx.NodeProto, key: str, value: str) -> None:
    for p in node.metadata_props:
        if p.key == key:
            p.value = value
            return
    node.metadata_props.add(key=key, value=value)


class _Copier:
    """Copies subgraph nodes into the main graph under a name prefix, mapping body-local names;
    outer-scope names are read as they are. ``unrolled`` / ``repeat`` go into each copy's
    metadata (times what the copied node already records)."""

    def __init__(self, model: onnx.ModelProto, owner: onnx.NodeProto) -> None:
        self.model = model
        self.owner = owner.name
        self.nodes: list[onnx.NodeProto] = []
        self.names: dict[str, str] = {}
        self.axes: dict[int, str] = {}
        self.unrolled = meta_int(owner, UNROLLED)
        self.repeat = meta_int(owner, REPEAT)
        self.note = ""

    def const(self, name: str, value: np.ndarray) -> str:
        """A new initializer ``<owner>/<name>`` holding ``value``; returns its name."""
        full = edit.unique_name(self.model.graph, f"{self.owner}/{name}")
        self.model.graph.initializer.append(numpy_helper.from_array(value, full))  # keeps a scalar's rank 0
        return full

    def body_initializers(self, body: onnx.GraphProto) -> None:
        """Copy ``body``'s initializers into the main graph once (they do not change per pass)."""
        for t in body.initializer:
            copy = TensorProto()
            copy.CopyFrom(t)
            copy.name = edit.unique_name(self.model.graph, f"{self.owner}/{t.name}")
            self.model.graph.initializer.append(copy)
            self.names[t.name] = copy.name

    def copy(self, body: onnx.GraphProto, prefix: str, bound: dict[str, str], trips: int = 1, repeat: int = 1) -> dict[str, str]:
        """Copy ``body``'s nodes with ``bound`` (body input -> main-graph tensor); returns the
        mapping of every body-local name. ``trips``: the copies made of this body (unrolled),
        ``repeat``: the times each copy runs (multiplied)."""
        names = {**self.names, **bound}
        for k, node in enumerate(body.node):
            new = onnx.NodeProto()
            new.CopyFrom(node)
            new.name = f"{prefix}/{node.name or f'{node.op_type}_{k}'}"
            new.input[:] = [names.get(i, i) for i in node.input]
            for g in edit.bodies(new):
                for old in sorted(edit.body_reads(node) & names.keys()):
                    edit.reroute_body(g, old, names[old])
            for k, o in enumerate(node.output):
                if o:
                    names[o] = f"{prefix}/{o}"
                    new.output[k] = names[o]
            _set_meta(new, ORIGIN, origin(node) if node.name else new.name)
            _set_meta(new, UNROLLED, str(meta_int(node, UNROLLED) * self.unrolled * trips))
            if meta_int(node, REPEAT) * self.repeat * repeat > 1:
                _set_meta(new, REPEAT, str(meta_int(node, REPEAT) * self.repeat * repeat))
            self.nodes.append(new)
        return names

    def unsqueeze(self, tensor: str, output: str, axis: int = 0, repeat: int = 1) -> None:
        """``output`` = ``tensor`` with a new axis ``axis`` (axes as an input from opset 13, an
        attribute before)."""
        opset = next((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 13)
        if opset < 13:
            self.emit("Unsqueeze", [tensor], output, repeat, axes=[axis])
            return
        if axis not in self.axes:
            self.axes[axis] = self.const(f"axes{axis}", np.array([axis], np.int64))
        self.emit("Unsqueeze", [tensor, self.axes[axis]], output, repeat)

    def stack(self, values: Sequence[str], output: str, axis: int, times: int = 1) -> None:
        """``output`` = ``values`` stacked along a new axis ``axis``; ``times`` > 1: the one
        value repeated that many times (a multiplied loop)."""
        parts = []
        for k, v in enumerate(values):
            parts.append(f"{output}/part{k}")
            self.unsqueeze(v, parts[-1], axis, times)
        self.emit("Concat", parts * times, output, axis=axis)

    def emit(self, op: str, inputs: list[str], output: str, repeat: int = 1, **attrs: Any) -> None:
        """Add one node; ``repeat``: it runs that many times per run of the owner (a
        multiplied loop's per-iteration slicing and stacking)."""
        node = helper.make_node(op, inputs, [output], name=edit.unique_name(self.model.graph, f"{output}/{op}"), **attrs)
        _set_meta(node, ORIGIN, node.name)
        if self.unrolled > 1:
            _set_meta(node, UNROLLED, str(self.unrolled))
        if self.repeat * repeat > 1:
            _set_meta(node, REPEAT, str(self.repeat * repeat))
        self.nodes.append(node)


@register_pass("unroll_loop", "Loop / Scan with a static trip count unrolled; If with a constant condition inlined")
def unroll_loop(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Unroll each legal Loop / Scan and inline each If whose condition is a constant, nested
    ones too (one level per round, until a round changes nothing).

    Returns
    -------
    PassResult
        The new model; one applied site per unrolled Loop / Scan / inlined If (copies of a
        nested one each count), one skipped site (with its reason) per one left alone.
    """
    applied: list[Site] = []
    result = PassResult(model)
    for _ in range(MAX_DEPTH):
        result = unroll_once(result.model, options.max_unroll)
        applied += result.applied
        if not result.applied:
            break
    return PassResult(result.model, tuple(applied), result.skipped)


def unroll_once(model: onnx.ModelProto, max_unroll: int, multiply: bool = False) -> PassResult:
    """One round of :func:`unroll_loop` over the top-level nodes of ``model``; ``multiply``: a
    loop over ``max_unroll`` is costed as its body once times its trip count (module docstring).
    The result's shapes are inferred."""
    out = edit.copy_model(model)
    graph = out.graph
    shapes = edit.value_shapes(edit.infer_shapes(edit.copy_model(out))) if any(n.op_type == "Scan" for n in graph.node) else {}
    applied: list[Site] = []
    skipped: list[Site] = []
    for name in [n.name for n in graph.node if n.op_type in CONTROL_FLOW]:
        node = next(n for n in graph.node if n.name == name)
        copier = _Copier(out, node)
        if node.op_type == "Loop":
            reason = _unroll(graph, node, max_unroll, multiply, copier)
        elif node.op_type == "Scan":
            reason = _unroll_scan(out, node, shapes, max_unroll, multiply, copier)
        else:
            reason = _inline(graph, node, copier)
        if reason:
            skipped.append(Site((name,), legal=False, reason=reason))
            continue
        at = next(k for k, n in enumerate(graph.node) if n.name == name)
        nodes = [*graph.node[:at], *copier.nodes, *graph.node[at + 1 :]]
        del graph.node[:]
        graph.node.extend(nodes)
        applied.append(Site((name,), reason=copier.note))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _is_true(graph: onnx.GraphProto, name: str) -> bool | None:
    """The constant boolean value of ``name`` (None: not a constant)."""
    value = edit.constant_value(graph, name)
    return None if value is None or value.size != 1 else bool(value.reshape(()))


def _plan(node: onnx.NodeProto, trips: int, max_unroll: int, multiply: bool, copier: _Copier) -> tuple[int, int, str]:
    """(copies, repeat) for a loop of ``trips`` (unrolled, or one copy run ``trips`` times, with
    a note in ``copier``), or why it is left alone."""
    if trips < 1:
        return 0, 0, f"trip count {trips}: the loop body never runs"
    around = meta_int(node, UNROLLED)
    if around * trips <= max_unroll:
        return trips, 1, ""
    if multiply:
        inside = f" inside {around} unrolled iterations" if around > 1 else ""
        copier.note = (
            f"{node.op_type.lower()} {origin(node)!r} runs {trips} times{inside}: over max_unroll={max_unroll}, "
            f"its body costed once and multiplied by {trips}"
        )
        return 1, trips, ""
    if around > 1:
        return 0, 0, f"trip count {trips} x {around} unrolled around it exceeds max_unroll={max_unroll}"
    return 0, 0, f"trip count {trips} exceeds max_unroll={max_unroll}"


def _trip_count(graph: onnx.GraphProto, loop: onnx.NodeProto) -> tuple[int, str]:
    """The Loop's static trip count, or (0, why it has none)."""
    if not loop.input[0]:
        return 0, "no trip count (M is absent)"
    value = edit.constant_value(graph, loop.input[0])
    if value is None or value.size != 1:
        return 0, "trip count M is not a constant"
    if len(loop.input) > 1 and loop.input[1] and _is_true(graph, loop.input[1]) is not True:
        return 0, "loop condition is not a constant true"
    return int(value.reshape(())), ""


def _body_condition_kept(body: onnx.GraphProto) -> bool:
    """The body's condition output is its condition input, passed through, or a constant true."""
    cond_in, cond_out = body.input[1].name, body.output[0].name
    if cond_out == cond_in:
        return True
    maker = next((n for n in body.node if cond_out in n.output), None)
    if maker is not None and maker.op_type == "Identity" and maker.input[0] == cond_in:
        return True
    return maker is not None and maker.op_type == "Constant" and _is_true(body, cond_out) is True


def _unroll(graph: onnx.GraphProto, loop: onnx.NodeProto, max_unroll: int, multiply: bool, copier: _Copier) -> str:
    """Fill ``copier`` with the unrolled Loop, or return why it is not unrolled."""
    trips, reason = _trip_count(graph, loop)
    copies, repeat, reason = (0, 0, reason) if reason else _plan(loop, trips, max_unroll, multiply, copier)
    if reason:
        return reason
    body = edit.attr(loop, "body")
    if not _body_condition_kept(body):
        return "loop body computes its own condition (it may stop early)"
    carried = len(loop.input) - 2
    current = list(loop.input[2:])
    scans: list[list[str]] = [[] for _ in body.output[1 + carried :]]
    copier.body_initializers(body)
    iter_type = helper.tensor_dtype_to_np_dtype(body.input[0].type.tensor_type.elem_type or TensorProto.INT64)
    for i in range(copies):
        prefix = f"{loop.name}/iter{i}"
        bound = {body.input[0].name: copier.const(f"iter{i}", np.array(i, iter_type)),
                 body.input[1].name: copier.const(f"iter{i}/cond", np.array(True))}  # fmt: skip
        bound.update({v.name: current[k] for k, v in enumerate(body.input[2:])})
        names = copier.copy(body, prefix, bound, copies, repeat)
        current = [names.get(o.name, o.name) for o in body.output[1 : 1 + carried]]
        for k, o in enumerate(body.output[1 + carried :]):
            scans[k].append(names.get(o.name, o.name))
    for k, final in enumerate(loop.output[:carried]):
        if final:
            copier.emit("Identity", [current[k]], final)
    for k, final in enumerate(loop.output[carried:]):
        if final:
            copier.stack(scans[k], final, 0, repeat)
    return ""


def _ints(node: onnx.NodeProto, name: str, count: int, default: int = 0) -> list[int]:
    values = edit.attr(node, name)
    return [int(v) for v in values] if values else [default] * count


def _unroll_scan(
    model: onnx.ModelProto,
    scan: onnx.NodeProto,
    shapes: Mapping[str, tuple[int | str, ...]],
    max_unroll: int,
    multiply: bool,
    copier: _Copier,
) -> str:
    """Fill ``copier`` with the unrolled Scan, or return why it is not unrolled."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 9:
        return f"Scan of opset {opset} (batched, before opset 9) is not unrolled"
    body = edit.attr(scan, "body")
    m = int(edit.attr(scan, "num_scan_inputs"))
    n = len(scan.input) - m
    in_axes, in_dirs = _ints(scan, "scan_input_axes", m), _ints(scan, "scan_input_directions", m)
    first = shapes.get(scan.input[n], ())
    trips = first[in_axes[0]] if first else None
    if not isinstance(trips, int) or not first:
        return "scan length not static after shape inference"
    copies, repeat, reason = _plan(scan, trips, max_unroll, multiply, copier)
    if reason:
        return reason
    k_out = len(body.output) - n
    out_axes, out_dirs = _ints(scan, "scan_output_axes", k_out), _ints(scan, "scan_output_directions", k_out)
    current = list(scan.input[:n])
    scans: list[list[str]] = [[] for _ in range(k_out)]
    copier.body_initializers(body)
    for i in range(copies):
        prefix = f"{scan.name}/iter{i}"
        bound = {v.name: current[k] for k, v in enumerate(body.input[:n])}
        for j, v in enumerate(body.input[n:]):
            index = copier.const(f"iter{i}/index{j}", np.array(trips - 1 - i if in_dirs[j] else i, np.int64))
            bound[v.name] = edit.unique_name(model.graph, f"{prefix}/{v.name}")
            copier.emit("Gather", [scan.input[n + j], index], bound[v.name], repeat, axis=in_axes[j])
        names = copier.copy(body, prefix, bound, copies, repeat)
        current = [names.get(o.name, o.name) for o in body.output[:n]]
        for j, o in enumerate(body.output[n:]):
            scans[j].append(names.get(o.name, o.name))
    for k, final in enumerate(scan.output[:n]):
        if final:
            copier.emit("Identity", [current[k]], final)
    for j, final in enumerate(scan.output[n:]):
        if final:
            copier.stack(scans[j][::-1] if out_dirs[j] else scans[j], final, out_axes[j], repeat)
    return ""


def _inline(graph: onnx.GraphProto, node: onnx.NodeProto, copier: _Copier) -> str:
    """Fill ``copier`` with the branch a constant-condition If takes, or return why not."""
    cond = _is_true(graph, node.input[0])
    if cond is None:
        return "condition is not a constant"
    branch = edit.attr(node, "then_branch" if cond else "else_branch")
    copier.body_initializers(branch)
    names = copier.copy(branch, f"{node.name}/{'then' if cond else 'else'}", {})
    for o, final in zip(branch.output, node.output, strict=True):
        if final:
            copier.emit("Identity", [names.get(o.name, o.name)], final)
    return ""
