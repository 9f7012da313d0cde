"""Data-dependent shapes and control flow, made static so that a model can be costed.

ONNX shape inference leaves some dimensions unknown: the number of boxes NonMaxSuppression
keeps, the number of non-zero elements, TopK with a runtime ``k``, the values Unique finds, and
every op after them. :func:`bound_shapes` gives each such dimension a value, from the op's own
attributes and inputs where they bound it (:data:`BOUNDS`) or from ``--assume NAME=COUNT``, and
pins it in the model so that shape inference carries it to the ops after. Every value given is
an :class:`AssumedDim`, listed in ``summary.json`` (``assumed_dims``).

Control flow (:func:`resolve_control_flow`): a Loop with a static trip count (or one given by
``--assume LOOP=N``) and a Scan (its trip count is the length of its scan inputs) are unrolled,
so their body is costed once per iteration; an If with a constant condition becomes the branch
it takes, one without the slower branch (by a chip-free measure: flops plus bytes moved).
Nested control flow is resolved level by level, outer first (an inner Scan's length and an
inner If's condition are known once the outer body is a copy in the main graph); ``--assume``
names an inner Loop by its name in its body. Beyond :data:`MAX_UNROLL` iterations (counting
those unrolled around a loop) the body is copied once and each of its ops runs ``trip count``
times (:attr:`graph_ir.ir.Op.repeat`), with a note in the warnings.

>>> parse_assume("nms=100")
('nms', 100, 100)
>>> parse_assume("nms=10..300")
('nms', 10, 300)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from graph_ir import untyped
from graph_ir.ir import FlagAdvice, ModelError

__all__ = [
    "BOUNDS",
    "REPEAT_KEY",
    "AssumedDim",
    "bound_shapes",
    "parse_assume",
    "range_points",
    "resolve_control_flow",
]

#: Where a value given on the command line comes from.
ASSUMED = "--assume"
#: Key of the ONNX node metadata that says how many times a node runs (:attr:`graph_ir.ir.Op.repeat`).
REPEAT_KEY = "hwsim.repeat"
#: The most iterations unrolled at import: a loop's trip count times those of the loops unrolled
#: around it (beyond: its body is costed once and multiplied, with a note).
MAX_UNROLL = 256


@dataclass(frozen=True, slots=True)
class AssumedDim:
    """A dimension shape inference left unknown and hwsim gave a value.

    ``tensor`` is the tensor (or, for a Loop's trip count, the Loop node), ``value`` the size
    used, ``source`` where it came from (a sentence, or ``"--assume"``).
    """

    tensor: str
    value: int
    source: str

    def to_json(self) -> dict[str, object]:
        return {"tensor": self.tensor, "value": self.value, "source": self.source}


def parse_assume(text: str) -> tuple[str, int, int]:
    """Parse ``NAME=COUNT`` or ``NAME=LO..HI`` into ``(name, lo, hi)``.

    Raises
    ------
    ModelError
        One line: no ``=``, an empty name, a count that is not a whole number >= 0, LO > HI.
    """
    name, sep, value = text.rpartition("=")
    lo_txt, dots, hi_txt = value.partition("..")
    try:
        lo = int(lo_txt)
        hi = int(hi_txt) if dots else lo
    except ValueError:
        raise ModelError(f"--assume {text!r}: expected NAME=COUNT or NAME=LO..HI with whole numbers") from None
    if not sep or not name or lo < 0:
        raise ModelError(f"--assume {text!r}: expected NAME=COUNT or NAME=LO..HI with whole numbers >= 0")
    if lo > hi:
        raise ModelError(f"--assume {text!r}: LO {lo} is greater than HI {hi}")
    return name, lo, hi


def range_points(lo: int, hi: int, count: int = 5) -> tuple[int, ...]:
    """``count`` whole numbers from ``lo`` to ``hi`` evenly spaced (fewer when the range is small).

    >>> range_points(10, 50)
    (10, 20, 30, 40, 50)
    >>> range_points(3, 4)
    (3, 4)
    """
    return tuple(sorted({round(float(v)) for v in np.linspace(lo, hi, count)}))


# ---------------------------------------------------------------------------------------------
# Bounds of data-dependent ops


Shapes = Mapping[str, tuple[int | None, ...]]
Bound = Callable[[onnx.GraphProto, onnx.NodeProto, Shapes], "tuple[int, str] | None"]


def _const(graph: onnx.GraphProto, name: str) -> np.ndarray | None:
    from graph_ir.rewrites.edit import constant_value

    return constant_value(graph, name) if name else None


def _elements(shape: tuple[int | None, ...] | None) -> int | None:
    if shape is None or any(d is None for d in shape):
        return None
    return int(np.prod([d for d in shape if d is not None], dtype=np.int64))


def _nms(graph: onnx.GraphProto, node: onnx.NodeProto, shapes: Shapes) -> tuple[int, str] | None:
    boxes, scores = shapes.get(node.input[0]), shapes.get(node.input[1])
    if boxes is None or scores is None or len(scores) != 3 or None in scores:
        return None
    batch, classes, n_boxes = (int(d) for d in scores if d is not None)
    given = _const(graph, node.input[2]) if len(node.input) > 2 else None
    if given is not None and given.size == 1:
        per_class = min(int(given.reshape(())), n_boxes)
        return max(per_class * classes * batch, 1), "bound from max_output_boxes_per_class x classes x batch"
    return max(n_boxes * classes * batch, 1), "bound from boxes x classes x batch (max_output_boxes_per_class not constant)"


def _count(graph: onnx.GraphProto, node: onnx.NodeProto, shapes: Shapes) -> tuple[int, str] | None:
    n = _elements(shapes.get(node.input[0]))
    return None if n is None else (max(n, 1), "bound from the input's element count")


def _topk(graph: onnx.GraphProto, node: onnx.NodeProto, shapes: Shapes) -> tuple[int, str] | None:
    k = _const(graph, node.input[1]) if len(node.input) > 1 else None
    if k is not None and k.size == 1:
        return int(k.reshape(-1)[0]), "bound from the constant k"
    shape = shapes.get(node.input[0])
    axis = next((int(helper.get_attribute_value(a)) for a in node.attribute if a.name == "axis"), -1)
    if shape is None or not shape or shape[axis] is None:
        return None
    return int(shape[axis] or 0), "bound from the axis length (k is not constant)"


#: op_type -> the bound of its data-dependent output dimension (value, where it came from).
BOUNDS: Mapping[str, Bound] = {"NonMaxSuppression": _nms, "NonZero": _count, "TopK": _topk, "Unique": _count}


def _shapes(graph: onnx.GraphProto) -> dict[str, tuple[int | None, ...]]:
    out: dict[str, tuple[int | None, ...]] = {}
    for t in graph.initializer:
        out[t.name] = tuple(int(d) for d in t.dims)
    types: dict[bytes, tuple[int | None, ...] | None] = {}  # one reading per distinct type
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        name = vi.name
        if name in out:
            continue
        key = vi.type.SerializeToString()
        if key not in types:
            tt = vi.type.tensor_type
            dims = tt.shape.dim
            types[key] = (
                tuple(int(d.dim_value) if d.HasField("dim_value") else None for d in dims) if tt.HasField("shape") else None
            )
        if (shape := types[key]) is not None:
            out[name] = shape
    return out


def _unknown_outputs(node: onnx.NodeProto, shapes: Shapes) -> list[str]:
    return [o for o in node.output if o and (o not in shapes or None in shapes[o])]


def _entry(model: onnx.ModelProto, tensor: str) -> onnx.ValueInfoProto:
    """Where ``model`` records ``tensor``'s type for the next shape inference: its graph output
    entry, else a fresh value_info (any older one removed)."""
    graph = model.graph
    target = next((vi for vi in graph.output if vi.name == tensor), None)
    if target is None:
        for vi in [vi for vi in graph.value_info if vi.name == tensor]:
            graph.value_info.remove(vi)
        target = graph.value_info.add()
        target.name = tensor
    return target


def _pin(model: onnx.ModelProto, inferred: onnx.GraphProto, node: onnx.NodeProto, tensor: str, value: int) -> None:
    """Write ``tensor``'s inferred shape with every unknown dimension set to ``value`` into
    ``model`` (:func:`_entry`), for the next shape inference. A TopK output is its input's
    shape with the axis set to ``value``."""
    source = next((vi for vi in [*inferred.value_info, *inferred.output] if vi.name == tensor), None)
    target = _entry(model, tensor)
    if source is not None:
        target.type.CopyFrom(source.type)
    dims = target.type.tensor_type.shape.dim
    if node.op_type == "TopK":
        x = _shapes(inferred).get(node.input[0])
        axis = next((int(helper.get_attribute_value(a)) for a in node.attribute if a.name == "axis"), -1)
        if x is not None and None not in x:
            sizes = list(x)
            sizes[axis] = value
            target.type.tensor_type.shape.Clear()
            for size in sizes:
                target.type.tensor_type.shape.dim.add().dim_value = int(size or 0)
            return
    for d in dims:
        if not d.HasField("dim_value"):
            d.Clear()
            d.dim_value = value


def bound_shapes(
    model: onnx.ModelProto,
    assume: Mapping[str, int],
    infer: Callable[[onnx.ModelProto], onnx.ModelProto],
    source: str,
    used: set[str],
) -> tuple[onnx.ModelProto, tuple[AssumedDim, ...]]:
    """Infer shapes, giving each unknown dimension a value, node by node in order.

    ``assume`` maps node or tensor names to a count (``--assume``); it wins over a bound; the
    names it applied are added to ``used``. Returns the inferred model and what was assumed.

    An output with no tensor type of known rank (an op ONNX's inference cannot type) is typed
    by the op's rule (:data:`graph_ir.untyped.SHAPE_RULES`), exactly, so nothing is assumed.

    Raises
    ------
    ModelError
        A node whose output stays unknown and that neither a bound nor ``--assume`` covers; an
        output with no rank and no rule, or one that is no tensor (:func:`graph_ir.untyped.refusal`).
    """
    assumed: list[AssumedDim] = []
    done: set[str] = set()
    for _ in range(len(model.graph.node) + 1):
        inferred = untyped.infer_past_untyped(model, infer)
        shapes = _shapes(inferred.graph)
        node = next((n for n in inferred.graph.node if n.name not in done and _unknown_outputs(n, shapes)), None)
        if node is None:
            return inferred, tuple(assumed)
        done.add(node.name)
        for tensor in _unknown_outputs(node, shapes):
            if not untyped.has_rank(inferred.graph, tensor):  # no dimension for a value to fill
                typed = untyped.rule_type(inferred.graph, node, tensor)
                if typed is None and untyped.drop_if_unread(model, node.name, tensor):
                    continue
                if typed is None:
                    raise untyped.refusal(inferred.graph, node, tensor, source)
                _entry(model, tensor).type.CopyFrom(typed)
                continue
            value, why = _value_for(inferred.graph, node, tensor, shapes, assume, source)
            used.update(k for k in (tensor, node.name) if why == ASSUMED and k in assume)
            _pin(model, inferred.graph, node, tensor, value)
            assumed.append(AssumedDim(tensor, value, why))
    raise ModelError(f"{source}: shapes did not settle after bounding every node")  # pragma: no cover


def _value_for(
    graph: onnx.GraphProto, node: onnx.NodeProto, tensor: str, shapes: Shapes, assume: Mapping[str, int], source: str
) -> tuple[int, str]:
    if tensor in assume:
        return assume[tensor], ASSUMED
    if node.name in assume:
        return assume[node.name], ASSUMED
    rule = BOUNDS.get(node.op_type)
    found = rule(graph, node, shapes) if rule is not None else None
    if found is None and node.domain not in ("", "ai.onnx"):
        qoperator = untyped.is_qoperator(node)
        problem = (f"{source}: node {node.name!r} ({node.domain}.{node.op_type}): ONNX shape inference does not "
                   f"know this op, so its output {tensor!r} has dimensions of unknown size")  # fmt: skip
        if qoperator:
            raise ModelError(f"{problem}; {untyped.QOPERATOR_FIX}")
        fix = f"give it with --assume {node.name}=COUNT"
        if node.domain == "com.microsoft":
            fix += " (the op is then costed as a memory copy)" + untyped.contrib_note(node)
        raise FlagAdvice(problem, "--assume", fix)
    if found is None:
        raise FlagAdvice(
            f"{source}: node {node.name!r} ({node.op_type}): output {tensor!r} has a data-dependent dimension "
            f"that nothing bounds", "--assume", f"give it with --assume {node.name}=COUNT",
        )  # fmt: skip
    return found


def check_assume_names(model: onnx.ModelProto, assume: Mapping[str, object], used: set[str], source: str) -> None:
    """Refuse an ``--assume`` name that is no node or tensor of ``model``, or that names one
    without a data-dependent dimension (``used``: the names that were applied)."""
    if not assume:
        return
    names = _names(model.graph)
    for key in assume:
        if key not in names:
            raise ModelError(f"{source}: --assume names {key!r}, which is no node or tensor of the model")
        if key not in used:
            raise ModelError(f"{source}: --assume names {key!r}, which has no data-dependent dimension or trip count")


def _names(graph: onnx.GraphProto) -> set[str]:
    """Node and tensor names of ``graph`` and of the bodies it holds, at any depth."""
    from graph_ir.rewrites.edit import bodies

    names = {n.name for n in graph.node} | {o for n in graph.node for o in n.output} | {i.name for i in graph.input}
    for n in graph.node:
        for body in bodies(n):
            names |= _names(body)
    return names


def infer_strict(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX shape inference as the importer runs it (strict, with data propagation), guarded
    against onnx's abort on a Slice over a negative dim (:mod:`graph_ir.infer_guard`)."""
    from graph_ir.infer_guard import infer_guarded

    return infer_guarded(model, _infer_strict)


def _infer_strict(model: onnx.ModelProto) -> onnx.ModelProto:
    from graph_ir.infer_guard import infer_strict_shapes

    return infer_strict_shapes(model, check_type=False)


# ---------------------------------------------------------------------------------------------
# Control flow


@dataclass(frozen=True, slots=True)
class ControlFlow:
    """What :func:`resolve_control_flow` did: the model, the trip counts it assumed, and one
    warning line per decision a user should know of (a slower branch taken, a loop kept)."""

    model: onnx.ModelProto
    assumed: tuple[AssumedDim, ...]
    warnings: tuple[str, ...]


def resolve_control_flow(model: onnx.ModelProto, assume: Mapping[str, int], source: str, used: set[str]) -> ControlFlow:
    """Unroll each Loop and Scan and inline each If, nested ones too (see the module docstring).

    One nesting level per round: the top-level control flow is resolved, which brings the
    control flow of its bodies to the top level for the next round.

    Raises
    ------
    ModelError
        A Loop whose trip count is not a constant, without ``--assume LOOP=N``.
    """
    from graph_ir.rewrites.unroll_loop import CONTROL_FLOW, MAX_DEPTH, unroll_once

    assumed: dict[str, AssumedDim] = {}
    warnings: dict[str, None] = {}
    for _ in range(MAX_DEPTH):
        graph = model.graph
        nodes = [n for n in graph.node if n.op_type in CONTROL_FLOW]
        if not nodes:
            break
        inferred = untyped.infer_past_untyped(model, infer_strict).graph
        for node in nodes:
            if node.op_type == "Loop":
                found = _fix_trip_count(graph, node, assume, source, used)
                if found is not None:
                    assumed.setdefault(found.tensor, found)
            elif node.op_type == "If" and _const(graph, node.input[0]) is None:
                taken = _slower_branch(inferred, node)
                _set_input(graph, node, 0, np.array(taken))
                branch = "then" if taken else "else"
                warnings[f"if {_origin(node)!r}: condition not constant, costed as its slower branch ({branch})"] = None
        result = unroll_once(model, MAX_UNROLL, multiply=True)
        warnings.update(dict.fromkeys(site.reason for site in result.applied if site.reason))
        warnings.update(dict.fromkeys(f"{s.nodes[0]!r} costed as one op: {s.reason}" for s in result.skipped))
        model = result.model
        if not result.applied:
            break
    return ControlFlow(model, tuple(assumed.values()), tuple(warnings))


def _origin(node: onnx.NodeProto) -> str:
    from graph_ir.rewrites.unroll_loop import origin

    return origin(node)


def _set_input(graph: onnx.GraphProto, node: onnx.NodeProto, index: int, value: np.ndarray) -> None:
    from graph_ir.rewrites import edit

    name = edit.unique_name(graph, f"{node.name}/input{index}")
    edit.new_initializer(graph, name, value)
    while len(node.input) <= index:
        node.input.append("")
    node.input[index] = name


def _fix_trip_count(
    graph: onnx.GraphProto, loop: onnx.NodeProto, assume: Mapping[str, int], source: str, used: set[str]
) -> AssumedDim | None:
    """Make ``loop``'s trip count and condition constants; what was assumed (None: nothing)."""
    given = _const(graph, loop.input[0]) if loop.input else None
    cond = _const(graph, loop.input[1]) if len(loop.input) > 1 and loop.input[1] else np.array(True)
    body = next(a.g for a in loop.attribute if a.name == "body")
    stops_early = cond is None or body.output[0].name != body.input[1].name
    found: AssumedDim | None = None
    key = loop.name if loop.name in assume else _origin(loop)
    if key in assume:
        used.add(key)
        found = AssumedDim(key, assume[key], ASSUMED)
    elif given is None or given.size != 1:
        raise FlagAdvice(
            f"{source}: loop {key!r} has a trip count that is not a constant", "--assume", f"give it with --assume {key}=N"
        )
    elif stops_early:
        found = AssumedDim(key, int(given.reshape(())), "bound from the trip count M (the loop may stop early)")
    if found is None:
        return None
    _set_input(graph, loop, 0, np.array(found.value, np.int64))
    if len(loop.input) > 1 and loop.input[1]:
        _set_input(graph, loop, 1, np.array(True))
    body.output[0].name = body.input[1].name  # runs every iteration: the condition passes through
    return found


def _slower_branch(inferred: onnx.GraphProto, node: onnx.NodeProto) -> bool:
    """Whether the then branch of ``node`` costs more than its else branch (flops plus bytes
    written, a chip-free measure); ties take then."""
    node = next(n for n in inferred.node if n.name == node.name)
    outer = _shapes(inferred)
    work = {}
    for which in ("then_branch", "else_branch"):
        body = next(a.g for a in node.attribute if a.name == which)
        work[which] = _work(body, {**outer, **_shapes(body)})
    return work["then_branch"] >= work["else_branch"]


def _work(body: onnx.GraphProto, shapes: Shapes) -> int:
    from graph_ir.ir import Tensor
    from graph_ir.onnx_import import node_attrs
    from graph_ir.op_metrics import metrics

    def tensor(name: str) -> Tensor | None:
        shape = shapes.get(name)
        return None if shape is None or None in shape else Tensor(name, tuple(int(d or 0) for d in shape), "float32")

    total = 0
    for n in body.node:
        ins = [t for t in (tensor(i) for i in n.input if i) if t is not None]
        outs = [t for t in (tensor(o) for o in n.output if o) if t is not None]
        m = metrics(n.op_type, ins, outs, node_attrs(n))
        total += m.flops + sum(t.nbytes for t in outs)
    return total
