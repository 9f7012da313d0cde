"""What every pass does to an ONNX graph: copy it, look up producers and consumers, read a
constant, make a new initializer (weightless iff the model is), reroute a tensor's uses, drop
what became dead, and infer shapes on the result.

A pass starts with ``m = copy_model(model)`` (which also names every node, so that a
:class:`~graph_ir.rewrites.base.Site` can name them), edits ``m.graph`` and ends with
``finish(m)`` (dead nodes and initializers removed, shapes inferred strictly).

Weightless models (``examples/models``): initializers are external data whose file is absent;
:func:`to_array` gives ``None`` for them, and :func:`new_initializer` with ``values=None`` makes
one of a given shape the same way, so that a rewrite of a weightless model stays weightless
with the right byte counts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph_ir.materialize import absent_tensor, is_absent
from graph_ir.onnx_import import name_nodes

__all__ = [
    "ABSENT_LOCATION",
    "Graph",
    "attr",
    "attrs",
    "bodies",
    "body_reads",
    "concat_initializers",
    "constant_value",
    "consumers",
    "copy_model",
    "finish",
    "infer_shapes",
    "initializers",
    "is_weightless",
    "new_initializer",
    "producers",
    "remove_dead",
    "replace_nodes",
    "reroute",
    "reroute_body",
    "split_node",
    "static_shape",
    "to_array",
    "topo_nodes",
    "unique_name",
    "use_count",
    "value_shapes",
]

Graph = onnx.GraphProto

#: Where a new weightless initializer says its data is (never a file that exists, so that
#: nothing reads wrong values from it).
ABSENT_LOCATION = "rewritten.absent.weights.bin"


def copy_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A deep copy of ``model`` with every node named (:func:`graph_ir.onnx_import.name_nodes`)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    name_nodes(out.graph)
    return out


def producers(graph: Graph) -> dict[str, onnx.NodeProto]:
    """Tensor name -> the node that produces it (graph inputs and initializers have none)."""
    return {o: n for n in graph.node for o in n.output if o}


def consumers(graph: Graph) -> dict[str, list[onnx.NodeProto]]:
    """Tensor name -> the nodes that read it (a node reading it twice is listed twice; uses
    inside a Loop / If / Scan body count for the node that holds the body)."""
    out: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for n in graph.node:
        for i in n.input:
            if i:
                out[i].append(n)
        for name in body_reads(n):
            out[name].append(n)
    return out


def use_count(graph: Graph, name: str) -> int:
    """How many times ``name`` is read: node inputs, subgraph reads, and graph outputs."""
    return len(consumers(graph).get(name, [])) + sum(1 for o in graph.output if o.name == name)


def bodies(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The bodies a node holds (Loop / If / Scan attributes of graph type)."""
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def body_reads(node: onnx.NodeProto) -> set[str]:
    """Outer-scope names read inside the bodies of ``node`` (recursively)."""
    reads: set[str] = set()
    for g in bodies(node):
        local = {i.name for i in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
        for n in g.node:
            reads.update(i for i in n.input if i and i not in local)
            reads.update(r for r in body_reads(n) if r not in local)
        reads.update(o.name for o in g.output if o.name not in local)
    return reads


def initializers(graph: Graph) -> dict[str, TensorProto]:
    """Initializer name -> tensor."""
    return {t.name: t for t in graph.initializer}


def is_weightless(model: onnx.ModelProto) -> bool:
    """Whether any initializer of ``model`` is absent external data (nothing to run it with)."""
    return any(is_absent(t) for t in model.graph.initializer)


def to_array(tensor: TensorProto) -> np.ndarray | None:
    """The values of ``tensor``, or ``None`` when they are absent (external data)."""
    if tensor.data_location == TensorProto.EXTERNAL:
        return None
    return numpy_helper.to_array(tensor)


def static_shape(tensor: TensorProto) -> tuple[int, ...]:
    """The dims of an initializer."""
    return tuple(int(d) for d in tensor.dims)


def constant_value(graph: Graph, name: str) -> np.ndarray | None:
    """The value of ``name`` if it is a constant with data: an initializer that is not absent
    (and not overridable as a graph input) or the output of a ``Constant`` node; else ``None``."""
    inputs = {i.name for i in graph.input}
    for t in graph.initializer:
        if t.name == name:
            return None if name in inputs else to_array(t)
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            a = n.attribute[0] if n.attribute else None
            if a is not None and a.name == "value":
                return to_array(a.t)
            if a is not None and a.name in ("value_float", "value_int"):
                return np.array(helper.get_attribute_value(a), dtype=np.float32 if a.name == "value_float" else np.int64)
            if a is not None and a.name in ("value_floats", "value_ints"):
                return np.array(helper.get_attribute_value(a), dtype=np.float32 if a.name == "value_floats" else np.int64)
            return None
    return None


def attr(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    """The value of attribute ``name`` of ``node`` (``default`` when it has none)."""
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def attrs(node: onnx.NodeProto) -> dict[str, Any]:
    """Every attribute of ``node``: name -> value (absent ones are the op's defaults, not here)."""
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def concat_initializers(graph: Graph, tensors: Sequence[TensorProto], axis: int, name: str) -> str:
    """Add the initializer ``name``, the concatenation of ``tensors`` along ``axis``, and return
    its name; weightless (absent, of the concatenated shape) when any of ``tensors`` is."""
    arrays = [to_array(t) for t in tensors]
    if all(a is not None for a in arrays):
        new_initializer(graph, name, np.concatenate([a for a in arrays if a is not None], axis=axis))
        return name
    shape = list(static_shape(tensors[0]))
    ax = axis % len(shape)
    shape[ax] = sum(static_shape(t)[ax] for t in tensors)
    new_initializer(graph, name, None, shape, tensors[0].data_type)
    return name


def split_node(
    graph: Graph, tensor: str, outputs: Sequence[str], sizes: Sequence[int], axis: int, name: str
) -> onnx.NodeProto:
    """A ``Split`` (opset >= 13 form: sizes as an int64 initializer input) of ``tensor`` along
    ``axis`` into ``outputs`` of ``sizes``; the sizes initializer is added to ``graph``, the node
    is returned (not added)."""
    sizes_name = unique_name(graph, f"{name}.split")
    new_initializer(graph, sizes_name, np.asarray(sizes, dtype=np.int64))
    return helper.make_node("Split", [tensor, sizes_name], list(outputs), name=name, axis=axis)


def replace_nodes(graph: Graph, old: Sequence[onnx.NodeProto], new: Sequence[onnx.NodeProto]) -> None:
    """Remove ``old`` from ``graph`` and put ``new`` where the first of them was; the node list is
    then re-sorted topologically (``new`` may read tensors made after that place). Nodes are
    matched by content (protobuf wrappers have no stable identity)."""
    gone = [n.SerializeToString(deterministic=True) for n in old]
    is_old = [n.SerializeToString(deterministic=True) in gone for n in graph.node]
    first = is_old.index(True) if any(is_old) else len(is_old)
    kept = [n for n, o in zip(graph.node, is_old, strict=True) if not o]
    before = sum(1 for o in is_old[:first] if not o)
    nodes = [*kept[:before], *new, *kept[before:]]
    nodes = topo_nodes(nodes)
    del graph.node[:]
    graph.node.extend(nodes)


def new_initializer(
    graph: Graph,
    name: str,
    values: np.ndarray | None,
    shape: Sequence[int] | None = None,
    dtype: int = TensorProto.FLOAT,
) -> TensorProto:
    """Add an initializer to ``graph`` and return it.

    ``values`` given: a tensor with those values. ``values=None`` (a weightless model): an absent
    external tensor of ``shape`` and ``dtype`` whose recorded length is its byte size, like the
    other initializers of a weightless file.
    """
    if values is not None:
        t = numpy_helper.from_array(np.ascontiguousarray(values), name)
    else:
        if shape is None:
            raise ValueError(f"new_initializer {name!r}: a weightless tensor needs a shape")
        t = absent_tensor(name, shape, dtype, ABSENT_LOCATION)
    graph.initializer.append(t)
    return t


def unique_name(graph: Graph, base: str) -> str:
    """``base``, or ``base_1``, ``base_2``... : a name no tensor or node of ``graph`` has yet."""
    taken = {n.name for n in graph.node} | {o for n in graph.node for o in n.output}
    taken |= {i.name for i in graph.input} | {t.name for t in graph.initializer} | {o.name for o in graph.output}
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def reroute(graph: Graph, old: str, new: str) -> None:
    """Every read of tensor ``old`` (node inputs, subgraph reads) now reads ``new``.

    Graph outputs are not renamed: a caller that removes the producer of a graph output must
    keep the output's name (see :func:`graph_ir.rewrites.eliminate_identity`).
    """
    for n in graph.node:
        for k, i in enumerate(n.input):
            if i == old:
                n.input[k] = new
        for g in bodies(n):
            reroute_body(g, old, new)


def reroute_body(g: Graph, old: str, new: str) -> None:
    """In body ``g``: every read of the outer-scope tensor ``old`` now reads ``new`` (nothing
    when ``g`` defines ``old`` itself)."""
    local = {i.name for i in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    if old in local:
        return
    reroute(g, old, new)
    for o in g.output:
        if o.name == old:
            o.name = new


def remove_dead(model: onnx.ModelProto) -> None:
    """Drop, in place, nodes none of whose outputs is read (transitively), then initializers
    nobody reads (and their graph-input entries)."""
    graph = model.graph
    live = {o.name for o in graph.output}
    keep: list[onnx.NodeProto] = []
    for n in reversed(graph.node):
        if any(o in live for o in n.output if o):
            keep.append(n)
            live.update(i for i in n.input if i)
            live.update(body_reads(n))
    if len(keep) != len(graph.node):
        kept = list(reversed(keep))
        del graph.node[:]
        graph.node.extend(kept)
    dead = [t for t in graph.initializer if t.name not in live]
    for t in dead:
        graph.initializer.remove(t)
    gone = {t.name for t in dead}
    for vi in [vi for vi in graph.input if vi.name in gone]:
        graph.input.remove(vi)


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its intermediate shapes inferred anew (old ``value_info`` dropped, since a
    rewrite may have changed them), strictly: an inconsistency raises
    ``onnx.shape_inference.InferenceError``."""
    from graph_ir.infer_guard import infer_strict_shapes

    del model.graph.value_info[:]
    return infer_strict_shapes(model, check_type=True)


def finish(model: onnx.ModelProto) -> onnx.ModelProto:
    """The end of every pass: :func:`remove_dead`, then :func:`infer_shapes`."""
    remove_dead(model)
    return infer_shapes(model)


def value_shapes(model: onnx.ModelProto) -> dict[str, tuple[int | str, ...]]:
    """Tensor name -> shape (ints, or the dim's parameter name) for every tensor whose type is
    known: inputs, outputs, value_info and initializers."""
    out: dict[str, tuple[int | str, ...]] = {}
    g = model.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim)
    for t in g.initializer:
        out[t.name] = static_shape(t)
    return out


def topo_nodes(nodes: Iterable[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """``nodes`` in a topological order (inputs before readers; stable otherwise)."""
    todo = list(nodes)
    made = {o for n in todo for o in n.output}
    done: set[str] = set()
    out: list[onnx.NodeProto] = []
    while todo:
        rest = []
        for n in todo:
            if all(i not in made or i in done for i in n.input):
                out.append(n)
                done.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(todo):
            raise ValueError("graph has a cycle")
        todo = rest
    return out
