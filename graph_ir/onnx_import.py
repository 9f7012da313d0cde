"""Read an ONNX file into a :class:`~graph_ir.ir.ModelGraph`.

Weights are never loaded: only shapes matter, so "weightless" files whose initializers are
stored as absent external data work, and the values of a file's inline weights are dropped as
it is read (:func:`drop_weight_values`). Shapes come from ONNX shape inference with data
propagation; every tensor must end with a static shape, and a dynamic graph-input dimension
can be pinned with ``input_shapes``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TypeVar

import networkx as nx
import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper, shape_inference

from graph_ir import dynamic, files
from graph_ir.contrib import lower_contrib
from graph_ir.files import MAX_ONNX_BYTES, oversize
from graph_ir.functions import BODY_KEY, expand_functions
from graph_ir.ir import FlagAdvice, ModelError, ModelGraph, Op, Tensor, add_data_edge
from graph_ir.op_metrics import (
    AXES_INPUT_OP_TYPES,
    COERCED_AXIS_ATTR,
    CUM_AXIS_ATTR,
    INPUT_AXES_ATTR,
    SLICE_STEPS_ATTR,
    metrics,
)

__all__ = ["densify_sparse", "from_model_proto", "load_onnx", "name_nodes", "node_attrs", "parse_input_shape"]


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse ``NAME=1x3x640x640`` (``NAME`` may itself contain ``=``; the last one splits).

    >>> parse_input_shape("images=1x3x640x640")
    ('images', (1, 3, 640, 640))
    """
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise ModelError(f"--input-shape {text!r}: expected NAME=D1xD2x... with positive integers")
    return name, shape


def load_onnx(
    path: str | Path,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    assume: Mapping[str, int] | None = None,
) -> ModelGraph:
    """Load ``path`` without its weights, infer shapes and build the graph IR.

    ``assume`` (``--assume``) gives data-dependent dimensions and loop trip counts by node or
    tensor name (:mod:`graph_ir.dynamic`).

    Raises
    ------
    ModelError
        One line naming the file and the node or input at fault.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: file not found")
    too_big = oversize(path, MAX_ONNX_BYTES)
    if too_big:
        raise ModelError(f"{path}: {too_big} (protobuf's; keep the weights as external data)")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as exc:
        raise ModelError(f"{path}: not a valid ONNX file ({type(exc).__name__}: {exc})") from None
    if not model.graph.node:
        if model.ir_version > 0 and (model.graph.input or model.graph.output):  # a model, but an empty one
            raise ModelError(f"{path}: the graph has no nodes: nothing to simulate")
        raise ModelError(f"{path}: not an ONNX model (no graph nodes; truncated or another format?)")
    if model.ir_version <= 0:
        raise ModelError(f"{path}: not an ONNX model (no IR version; truncated or another format?)")
    if len(model.graph.node) > files.MAX_GRAPH_OPS:
        raise ModelError(
            f"{path}: graph.node: {len(model.graph.node):,} nodes, over the limit of {files.MAX_GRAPH_OPS:,} "
            "ops hwsim simulates in one graph"
        )
    drop_weight_values(model.graph)  # before the copies below: a model's weights, inline, are most of its bytes
    return from_model_proto(model, source=str(path), name=path.stem, input_shapes=input_shapes, assume=assume)


#: The largest initializer whose values are kept (elements): shape inference reads the values of
#: shape tensors, axes, pads, scales and sizes, a few dozen at most; a weight's never count.
MAX_KEPT_VALUES = 4096


def drop_weight_values(graph: onnx.GraphProto) -> int:
    """Make each of ``graph``'s inline initializers of more than :data:`MAX_KEPT_VALUES` elements
    an absent external one of the same shape and type, in place, as a weightless file's are (only
    shapes matter); returns the bytes dropped. A BERT-base with its weights inline (436 MB)
    took 2.6 GB of memory to read, copied through shape inference, and 152 MB weightless."""
    from graph_ir.materialize import absent_tensor

    dropped = 0
    for i, init in enumerate(graph.initializer):
        if init.data_location == onnx.TensorProto.EXTERNAL or math.prod(init.dims) <= MAX_KEPT_VALUES:
            continue
        dropped += init.ByteSize()
        graph.initializer[i].CopyFrom(absent_tensor(init.name, init.dims, init.data_type, "<weights not read>"))
    return dropped


#: A node's fields, read from protobuf once: name, op type, domain, inputs, outputs.
_Fields = tuple[str, str, str, tuple[str, ...], tuple[str, ...]]


def _node_fields(graph: onnx.GraphProto) -> list[_Fields]:
    """Each node's :data:`_Fields` in order (a protobuf field read costs more than a tuple's)."""
    return [(n.name, n.op_type, n.domain, tuple(n.input), tuple(n.output)) for n in graph.node]


def _check_names(graph: onnx.GraphProto, source: str, fields: Sequence[_Fields]) -> None:
    """Refuse a name that is not UTF-8 text: protobuf hands such a string field over as bytes.
    ``fields``: :func:`_node_fields` of ``graph``."""
    names = [v.name for v in (*graph.input, *graph.output, *graph.initializer, *graph.value_info)]
    for name, op_type, domain, ins, outs in fields:
        names += [name, op_type, domain, *ins, *outs]
    names += [a.name for node in graph.node if node.attribute for a in node.attribute]
    bad = next((n for n in names if type(n) is not str), None)
    if bad is not None:
        raise ModelError(f"{source}: the name {bad!r} is not UTF-8 text (a corrupted file?)")


def _check_arity(source: str, opset: int, fields: Sequence[_Fields]) -> None:
    """Refuse a node (of :func:`_node_fields`) with fewer inputs or outputs than its ONNX op
    schema requires (a Conv with no weight input would otherwise reach the MAC formulas); op
    types ONNX does not know are left to the unknown-op path."""
    needs: dict[tuple[str, str], tuple[int, int] | None] = {}  # (op type, domain): (min inputs, min outputs)
    for name, op_type, domain, ins, outs in fields:
        key = (op_type, domain)
        if key not in needs:
            try:
                schema = onnx.defs.get_schema(op_type, max(opset, 1), domain)
                needs[key] = (schema.min_input, schema.min_output)
            except onnx.defs.SchemaError:
                needs[key] = None
        need = needs[key]
        if need is None:
            continue
        given = len(ins) - ins.count("")
        if given < need[0] or len(outs) < need[1]:
            raise ModelError(
                f"{source}: node {name!r} ({op_type}) has {given} input(s) and {len(outs)} "
                f"output(s); {op_type} needs at least {need[0]} and {need[1]}"
            )


def from_model_proto(
    model: onnx.ModelProto,
    source: str = "<model>",
    name: str = "model",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    assume: Mapping[str, int] | None = None,
) -> ModelGraph:
    """Build the graph IR from an in-memory ONNX model (see :func:`load_onnx`)."""
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    graph = model_copy.graph
    drop_weight_values(graph)
    densify_sparse(graph)
    fields = _node_fields(graph)
    _check_names(graph, source, fields)
    init_names = {t.name for t in graph.initializer}
    _pin_inputs(graph, init_names, input_shapes or {}, source)
    fields = _sort_nodes(graph, source, _write_names(graph, fields))
    lowered = lower_contrib(model_copy, source)
    if lowered is not None:  # onnxruntime's fused ops, back to the ONNX ops they fuse
        model_copy = lowered.model
        graph = model_copy.graph
        fields = _node_fields(graph)
    opset = next((o.version for o in model_copy.opset_import if o.domain in ("", "ai.onnx")), 0)
    _check_arity(source, opset, fields)
    assume = assume or {}
    used: set[str] = set()
    named = onnx.ModelProto()
    if assume:  # the names --assume may give, before control flow is resolved (nothing to check without)
        named.CopyFrom(model_copy)
    flow = _guarded(source, lambda: dynamic.resolve_control_flow(model_copy, assume, source, used))
    inferred, assumed = dynamic.bound_shapes(
        flow.model, assume, lambda m: _guarded(source, lambda: dynamic.infer_strict(m)), source, used
    )
    dynamic.check_assume_names(named, assume, used, source)
    expanded = _guarded(source, lambda: expand_functions(inferred))
    if expanded is not None:
        inferred = _guarded(source, lambda: dynamic.infer_strict(expanded.model))
    built = _build(inferred.graph, source, name, opset, inferred.ir_version)
    expansion = tuple(e.warning() for e in (lowered, expanded) if e is not None)
    return replace(built, assumed=flow.assumed + assumed, warnings=flow.warnings + expansion)


#: The largest sparse initializer given its values when made dense (elements); a larger one keeps
#: its shape and type only, as a weightless file's initializers do.
MAX_DENSE_ELEMENTS = 1 << 20


def densify_sparse(graph: onnx.GraphProto) -> list[str]:
    """Make each of ``graph``'s sparse initializers an initializer of its dense shape and type, in
    place (its values too, up to :data:`MAX_DENSE_ELEMENTS`). Returns the names of those whose
    values were in the file but could not be made dense (too many, or indices outside the dims):
    they are kept by shape and type only, as a weightless file's are."""
    lost = []
    for sparse in graph.sparse_initializer:
        dense, lost_values = _dense(sparse)
        graph.initializer.append(dense)
        if lost_values:
            lost.append(dense.name)
    del graph.sparse_initializer[:]
    return lost


def _dense(sparse: onnx.SparseTensorProto) -> tuple[onnx.TensorProto, bool]:
    """The dense initializer of ``sparse`` (named as its values are), without values where they
    are external, too many, or do not fit its dims; and whether inline values were lost so."""
    from graph_ir.materialize import absent_tensor

    values, dims = sparse.values, [int(d) for d in sparse.dims]
    size = math.prod(dims)
    inline = onnx.TensorProto.EXTERNAL not in (values.data_location, sparse.indices.data_location)
    if inline and size <= MAX_DENSE_ELEMENTS:
        try:
            flat = numpy_helper.to_array(values).reshape(-1)
            index = numpy_helper.to_array(sparse.indices).astype(np.int64)
            if index.ndim == 2:  # one row of coordinates per value
                index = np.ravel_multi_index(tuple(index.T), dims)
            dense = np.zeros(size, flat.dtype)
            dense[index.reshape(-1)] = flat
            return numpy_helper.from_array(dense.reshape(dims), values.name), False
        except (ValueError, IndexError, TypeError):
            pass
    return absent_tensor(values.name, dims, values.data_type, "<sparse initializer>"), inline


_T = TypeVar("_T")
#: Op types whose ``axis`` coerced the input to 2-D before opset 13 (:data:`COERCED_AXIS_ATTR`).
_COERCING_OP_TYPES = frozenset(("Softmax", "LogSoftmax", "Hardmax"))


def _guarded(source: str, step: Callable[[], _T]) -> _T:
    """Run ``step`` (shape inference, or a rewrite that ends with it); its failure is one line."""
    try:
        return step()
    except (shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{source}: shape inference failed: {msg}") from None


def _pin_inputs(
    graph: onnx.GraphProto, init_names: set[str], input_shapes: Mapping[str, Sequence[int]], source: str
) -> None:
    real_inputs = [i for i in graph.input if i.name not in init_names]
    names = [i.name for i in real_inputs]
    for key in input_shapes:
        if key not in names:
            raise ModelError(f"{source}: --input-shape names {key!r}, but the model's inputs are {names}")
    for vi in real_inputs:
        tt = vi.type.tensor_type
        if vi.name in input_shapes:
            dims = list(input_shapes[vi.name])
            if tt.HasField("shape") and len(tt.shape.dim) not in (0, len(dims)):
                raise ModelError(
                    f"{source}: --input-shape {vi.name}: rank {len(dims)} but the input has rank "
                    f"{len(tt.shape.dim)}"
                )
            tt.shape.Clear()
            for d in dims:
                tt.shape.dim.add().dim_value = int(d)
            continue
        if not tt.HasField("shape"):
            raise FlagAdvice(
                f"{source}: input {vi.name!r} has no shape", "--input-shape", f"pin it with --input-shape {vi.name}=1x..."
            )
        dims_txt = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]
        if any(not d.HasField("dim_value") or d.dim_value < 0 for d in tt.shape.dim):  # a set 0: an empty tensor
            example = "x".join(d if d.isdigit() and int(d) > 0 else "1" for d in dims_txt)
            raise FlagAdvice(
                f"{source}: input {vi.name!r} has a dynamic shape [{', '.join(dims_txt)}]", "--input-shape",
                f"pin it with --input-shape {vi.name}={example}",
            )  # fmt: skip


def name_nodes(graph: onnx.GraphProto) -> None:
    """Give every node of ``graph`` a unique name, in place: its own, else ``<op_type>_<index>``,
    with ``_k`` appended to repeats. hwsim's op names are these; so are those
    :mod:`hwsim.host.measure` gives onnxruntime, so that profiled names match."""
    _write_names(graph, _node_fields(graph))


def _write_names(graph: onnx.GraphProto, fields: Sequence[_Fields]) -> list[_Fields]:
    """:func:`name_nodes` given the nodes' :func:`_node_fields` (a name is written only where
    it changes); the fields with the new names."""
    seen: set[str] = set()
    out: list[_Fields] = []
    for i, (node, f) in enumerate(zip(graph.node, fields, strict=True)):
        base = f[0] or f"{f[1]}_{i}"
        name, k = base, 1
        while name in seen:
            name, k = f"{base}_{k}", k + 1
        if name != f[0]:
            node.name = name
            f = (name, *f[1:])
        seen.add(name)
        out.append(f)
    return out


def _sort_nodes(graph: onnx.GraphProto, source: str, fields: Sequence[_Fields]) -> list[_Fields]:
    """Order nodes topologically (shape inference needs it) and reject cycles; the nodes'
    :func:`_node_fields` (given as ``fields``) in the new order."""
    produced: dict[str, int] = {}
    for i, (name, _, _, _, outs) in enumerate(fields):
        for o in outs:
            if o and o in produced:
                raise ModelError(f"{source}: tensor {o!r} is an output of two nodes ({name!r} and another)")
            if o:
                produced[o] = i
    known = produced.keys() | {v.name for v in graph.input} | {t.name for t in graph.initializer}
    for name, _, _, ins, _ in fields:
        dangling = next((t for t in ins if t and t not in known), None)
        if dangling is not None:
            raise ModelError(f"{source}: node {name!r} reads {dangling!r}, which no node, input or initializer provides")
    if _in_order(fields, produced, source):
        return list(fields)  # every node reads only earlier nodes' outputs: no cycle, and already the sorted order
    dep = nx.DiGraph()
    dep.add_nodes_from(range(len(fields)))
    for i, (name, _, _, ins, _) in enumerate(fields):
        for t in ins:
            if t in produced and produced[t] != i:
                dep.add_edge(produced[t], i)
            elif t in produced:
                raise ModelError(f"{source}: node {name!r} reads its own output {t!r} (cycle)")
    try:
        cycle = nx.find_cycle(dep)
    except nx.NetworkXNoCycle:
        cycle = []
    if cycle:
        names = [fields[u][0] for u, _ in cycle]
        raise ModelError(f"{source}: the graph has a cycle through nodes {' -> '.join(names)}")
    order = list(nx.lexicographical_topological_sort(dep))
    if order != list(range(len(fields))):
        nodes = [graph.node[i] for i in order]
        copies = [onnx.NodeProto() for _ in nodes]
        for c, n in zip(copies, nodes):
            c.CopyFrom(n)
        del graph.node[:]
        graph.node.extend(copies)
    return [fields[i] for i in order]


def _in_order(fields: Sequence[_Fields], produced: Mapping[str, int], source: str) -> bool:
    """Whether every node reads only outputs of nodes before it (one linear pass).

    Then the nodes' order is the smallest-index-first topological order that
    :func:`_sort_nodes` would produce, so nothing needs sorting.
    """
    for i, (name, _, _, ins, _) in enumerate(fields):
        for t in ins:
            j = produced.get(t)
            if j is None:
                continue
            if j == i:
                raise ModelError(f"{source}: node {name!r} reads its own output {t!r} (cycle)")
            if j > i:
                return False
    return True


def _tensor_type(vi: onnx.ValueInfoProto) -> tuple[tuple[int, ...] | None, str]:
    tt = vi.type.tensor_type
    dtype = _dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return None, dtype
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return None, dtype
        dims.append(int(d.dim_value))
    return tuple(dims), dtype


@cache
def _dtype_name(elem_type: int) -> str:
    if elem_type == 0:
        return "float32"
    try:
        return str(helper.tensor_dtype_to_np_dtype(elem_type).name)
    except (KeyError, TypeError, ValueError):
        return str(onnx.TensorProto.DataType.Name(elem_type)).lower()


def node_attrs(node: onnx.NodeProto) -> dict[str, object]:
    """The node's attributes as plain values: ints, floats, text, tuples of those; a subgraph as
    ``"<subgraph>"``, a tensor or type by its class name."""
    return dict(_attr_value(a) for a in node.attribute)


def _attr_value(a: onnx.AttributeProto) -> tuple[str, object]:
    """One attribute of :func:`node_attrs`: its name and plain value."""
    if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
        return a.name, "<subgraph>"
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    elif isinstance(v, list):
        v = tuple(x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v)
    elif not isinstance(v, (int, float, str)):
        v = type(v).__name__  # tensors, sparse tensors, type protos: keep the name only
    return a.name, v


def _node_attrs_cached(node: onnx.NodeProto, seen: dict[bytes, tuple[str, object]]) -> dict[str, object]:
    """:func:`node_attrs`, each distinct attribute (by its bytes) read once into ``seen`` (the
    values are immutable; the dict is the node's own)."""
    out: dict[str, object] = {}
    for a in node.attribute:
        key = a.SerializeToString()
        if (item := seen.get(key)) is None:
            item = seen[key] = _attr_value(a)
        out[item[0]] = item[1]
    return out


def _tensor_in(tensors: Mapping[str, Tensor], t: str, node: str, op_type: str, source: str) -> Tensor:
    """The input tensor ``t`` of ``node``; one without a static shape is a :class:`ModelError`."""
    if t not in tensors:
        raise ModelError(f"{source}: node {node!r} ({op_type}): input {t!r} has no static shape")
    return tensors[t]


def _op_attrs(
    graph: onnx.GraphProto, node: onnx.NodeProto, opset: int, seen: dict[bytes, tuple[str, object]],
    int_consts: Callable[[], Mapping[str, tuple[int, ...]]],
) -> dict[str, object]:  # fmt: skip
    """The node's attributes (:func:`_node_attrs_cached`) and what the importer adds to them: a
    DFT's constant axis input as ``axis``, :data:`COERCED_AXIS_ATTR` on a Softmax of an opset before
    13, a reduction's constant axes input as :data:`INPUT_AXES_ATTR`, a CumSum's or CumProd's as
    :data:`CUM_AXIS_ATTR`, a Slice's constant steps as :data:`SLICE_STEPS_ATTR` (``int_consts``: the
    graph's small int64 constants, :func:`_int_constants`, read once)."""
    attrs = _node_attrs_cached(node, seen)
    op_type = node.op_type
    if op_type == "DFT" and opset >= 20:  # its axis a constant input, -2 when absent
        given = int_consts().get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        attrs["axis"] = given[0] if given else -2
    elif op_type in _COERCING_OP_TYPES and 0 < opset < 13:
        attrs[COERCED_AXIS_ATTR] = 1
    elif op_type in AXES_INPUT_OP_TYPES and len(node.input) > 1 and "axes" not in attrs:
        axes = int_consts().get(node.input[1]) if node.input[1] else None
        if axes is not None:
            attrs[INPUT_AXES_ATTR] = axes
    elif op_type in ("CumSum", "CumProd") and len(node.input) > 1:
        axis = int_consts().get(node.input[1])
        if axis is not None and len(axis) == 1:
            attrs[CUM_AXIS_ATTR] = axis[0]
    elif op_type == "Slice" and len(node.input) > 4 and node.input[4]:
        attrs.update(_slice_steps(node, int_consts()))
    return attrs


def _slice_steps(node: onnx.NodeProto, int_consts: Mapping[str, tuple[int, ...]]) -> dict[str, object]:
    """:data:`SLICE_STEPS_ATTR` of a Slice whose steps (and axes, where given) are constants and one
    of the steps is not 1; else nothing."""
    steps = int_consts.get(node.input[4])
    axes = int_consts.get(node.input[3]) if node.input[3] else tuple(range(len(steps or ())))
    if steps is None or axes is None or len(axes) != len(steps) or all(s == 1 for s in steps):
        return {}
    return {SLICE_STEPS_ATTR: tuple(v for pair in zip(axes, steps) for v in pair)}


def _int_constants(graph: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    """The values of the graph's int64 initializers and Constant outputs of at most 8 values (a
    reduction's axes, a DFT's axis), by name."""
    out: dict[str, tuple[int, ...]] = {}
    for init in graph.initializer:
        if init.data_type == onnx.TensorProto.INT64 and init.data_location != onnx.TensorProto.EXTERNAL and math.prod(init.dims) <= 8:
            out[init.name] = tuple(int(v) for v in numpy_helper.to_array(init).reshape(-1))
    for c in graph.node:
        if c.op_type == "Constant" and c.output:
            for a in c.attribute:
                if a.name == "value" and a.t.data_type == onnx.TensorProto.INT64 and math.prod(a.t.dims) <= 8:
                    out[c.output[0]] = tuple(int(v) for v in numpy_helper.to_array(a.t).reshape(-1))
    return out


def _why_no_shape(graph: onnx.GraphProto, tensor: str) -> str:
    """Why shape inference left ``tensor`` without a static shape: a negative dim it inferred (an
    op whose kernel, pads or strides do not fit its input), else a dynamic one."""
    for vi in (*graph.value_info, *graph.output):
        if vi.name == tensor:
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]
            if any(isinstance(d, int) and d < 0 for d in dims):
                return (f"has the inferred shape {dims}: a negative dim (the op's kernel, pads or strides "
                        "do not fit its input)")  # fmt: skip
    return "has no static shape after shape inference (a dynamic dimension? pin inputs with --input-shape, give it with --assume)"


#: Op types a runtime does not fold at load even over constants: the Q/DQ nodes onnxruntime's QDQ
#: fusions read (a weight's DequantizeLinear becomes part of the integer kernel) and control flow.
_NOT_FOLDED = frozenset({"DequantizeLinear", "QuantizeLinear", "If", "Loop", "Scan"})


def _folds_at_load(node: onnx.NodeProto, ins: Sequence[Tensor], tensors: Mapping[str, Tensor], io: set[str]) -> bool:
    """Whether a runtime computes ``node`` once when it loads the model, as onnxruntime's
    ``ConstantFolding`` and the NPU and GPU compilers do: every input a constant (a weight that is
    not also a graph input, which a caller may override, or the output of a node folded before
    it), the op deterministic, not one of :data:`_NOT_FOLDED` nor part of an expanded function
    body (:data:`~graph_ir.functions.BODY_KEY`), and no output a graph output. ``io``: the graph's
    input and output names. Its outputs are then weights of the ops that read them (a DETR
    decoder's first self-attention over its learned queries: 26 ops onnxruntime never runs).

    >>> from onnx import helper
    >>> w = Tensor("w", (4, 4), "float32", True)
    >>> node = helper.make_node("Transpose", ["w"], ["wt"])
    >>> _folds_at_load(node, [w], {"wt": Tensor("wt", (4, 4), "float32")}, set())
    True
    >>> _folds_at_load(node, [w], {"wt": Tensor("wt", (4, 4), "float32")}, {"wt"})  # a graph output stays
    False
    >>> _folds_at_load(node, [w], {"wt": Tensor("wt", (4, 4), "float32")}, {"w"})  # an overridable initializer
    False
    """
    if not ins or not all(t.is_weight and t.name not in io for t in ins):
        return False
    from graph_ir.rewrites.const_fold import NONDETERMINISTIC_OPS

    op_type = node.op_type
    if op_type in _NOT_FOLDED or op_type in NONDETERMINISTIC_OPS or node.domain not in ("", "ai.onnx"):
        return False
    if node.metadata_props and any(p.key == BODY_KEY for p in node.metadata_props):
        return False  # work a function op's kernel does on every run
    return all(t in tensors and t not in io for t in node.output if t)


def _build(graph: onnx.GraphProto, source: str, name: str, opset: int = 0, ir_version: int = 8) -> ModelGraph:
    tensors: dict[str, Tensor] = {}
    for init in graph.initializer:
        tensors[init.name] = Tensor(init.name, tuple(int(d) for d in init.dims), _dtype_name(init.data_type), True)
    types: dict[bytes, tuple[tuple[int, ...] | None, str]] = {}  # one reading per distinct type
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        vi_name = vi.name
        if vi_name in tensors:
            continue
        key = vi.type.SerializeToString()  # a transformer's 100,000 tensors have a few types
        if (known := types.get(key)) is None:
            known = types[key] = _tensor_type(vi)
        if known[0] is not None:
            tensors[vi_name] = Tensor(vi_name, known[0], known[1])

    # Constant nodes are weights, not ops.
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            shape, dtype = (tensors[node.output[0]].shape, tensors[node.output[0]].dtype) if node.output[0] in tensors else ((), "float32")
            tensors[node.output[0]] = Tensor(node.output[0], shape, dtype, True)

    g = nx.DiGraph()
    producer: dict[str, str] = {}
    order: list[str] = []
    attr_values: dict[bytes, tuple[str, object]] = {}
    int_consts = cache(lambda: _int_constants(graph))  # read at the first DFT or reduction with an axes input
    # names whose values a run may give: graph inputs (an initializer among them only from IR 4 on,
    # where onnxruntime lets a caller override it) and outputs
    init_names = {t.name for t in graph.initializer}
    graph_io = {vi.name for vi in graph.input if ir_version >= 4 or vi.name not in init_names} | {vi.name for vi in graph.output}
    for node in graph.node:
        op_type = node.op_type
        if op_type == "Constant":
            continue
        node_name = node.name  # each protobuf field read once: a read costs more than a local
        ins = [_tensor_in(tensors, t, node_name, op_type, source) for t in node.input if t]
        if _folds_at_load(node, ins, tensors, graph_io):
            for t in node.output:
                if t:
                    tensors[t] = replace(tensors[t], is_weight=True)
            continue
        outs = []
        for t in node.output:
            if not t:
                continue
            if t not in tensors:
                raise ModelError(f"{source}: node {node_name!r} ({op_type}): output {t!r} {_why_no_shape(graph, t)}")
            outs.append(tensors[t])
            producer[t] = node_name
        attrs = _op_attrs(graph, node, opset, attr_values, int_consts)
        m = metrics(op_type, ins, outs, attrs)
        repeat = 1
        if node.metadata_props:  # most nodes have none
            repeat = next((int(p.value) for p in node.metadata_props if p.key == dynamic.REPEAT_KEY), 1)
        op = Op(node_name, op_type, m.category, tuple(ins), tuple(outs), attrs, m.macs, m.flops, repeat)
        g.add_node(node_name, op=op)
        order.append(node_name)
        for t in ins:
            src = producer.get(t.name)
            if src is not None and src != node_name:
                add_data_edge(g, src, node_name, t.name)

    inputs = []
    for vi in graph.input:
        if vi.name in init_names:
            continue
        if vi.name not in tensors:
            raise ModelError(f"{source}: input {vi.name!r} has no static shape")
        inputs.append(tensors[vi.name])
    outputs = []
    for vi in graph.output:
        if vi.name not in tensors:
            raise ModelError(f"{source}: output {vi.name!r} has no static shape after shape inference")
        outputs.append(tensors[vi.name])
    return ModelGraph(name, g, tuple(inputs), tuple(outputs), producer, tuple(order))
