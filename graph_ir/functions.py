"""Function ops expanded into the ops they are defined by, at import.

ONNX defines several op types as functions of other ops: opset 23's ``Attention`` (what a
transformer exported at opset 23 or later holds), ``SwiGLU``, ``LinearAttention`` and others, and
a model may define functions of its own (``ModelProto.functions``, as exporters emit per module).
Costed as memory copies, an ``Attention`` with its two batched products and softmax came out 100x
too fast. So each call of a function hwsim has no formula for is replaced, before the graph is
built, by its body: the model's own function, or the schema's (a context-dependent body is
built for the call's attributes and input types), inlined by onnx's own inliner
(:func:`onnx.inliner.inline_selected_functions`), nested calls included. A function op with a
formula stays one op (``LayerNormalization``, ``RMSNormalization``, ``RotaryEmbedding``: runtimes
run them as kernels of their own; :mod:`graph_ir.op_metrics`).

A body computes its shapes at run time (``Shape``, ``Size``, ``Range``, ``Concat`` of dims, a
causal mask from ``Range`` and ``Less``); folded here into constants (:func:`_fold`) where the
call's input shapes are static, so that they neither cost anything nor leave a data-dependent
dim, as onnxruntime folds them when it loads a model. A folded value over
:data:`MAX_FOLDED_ELEMENTS` stays computed (a causal mask at a long sequence).

Names: the ops of a call named ``attn`` are ``attn/<op type>_<i>``, its inner
tensors ``attn/<name>``; its inputs and outputs keep the call's names, so the ops around it see
no change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, inliner, numpy_helper, shape_inference

from graph_ir.op_metrics import registered_op_types

__all__ = ["MAX_FOLDED_ELEMENTS", "Expanded", "expand_functions", "function_calls"]

#: The largest value a body's constant op is folded into (elements); a larger one stays computed.
MAX_FOLDED_ELEMENTS = 1 << 20
#: Rounds of shape inference and folding per body (each round folds what the last made static).
_FOLD_ROUNDS = 6
_DEFAULT_DOMAINS = ("", "ai.onnx")
#: The metadata key marking each op of an expanded body (its value: the call's op type). Such an op
#: stands for work the call's kernel does on every run: it is never folded at load, even over
#: constants (a causal mask over :data:`MAX_FOLDED_ELEMENTS` stays computed).
BODY_KEY = "hwsim.function_body"


@dataclass(frozen=True)
class Expanded:
    """What :func:`expand_functions` (or :func:`graph_ir.contrib.lower_contrib`) did: the model,
    and per op type the calls and the ops they became; ``headline`` opens the run's warning."""

    model: onnx.ModelProto
    calls: Mapping[str, tuple[int, int]]
    headline: str = "function ops expanded into the ONNX ops that define them"

    def warning(self) -> str:
        """One line for the run's warnings."""
        parts = [f"{t} x{n} ({ops} ops)" for t, (n, ops) in sorted(self.calls.items())]
        return f"{self.headline}: " + ", ".join(parts)


def function_calls(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The top-level nodes of ``model`` that call a function hwsim has no formula for: one of the
    model's own functions, or an ONNX op type defined as a function (at the model's opset)."""
    return [model.graph.node[i] for i in _call_positions(model)]


def _call_positions(model: onnx.ModelProto) -> list[int]:
    """The positions in ``model.graph.node`` of :func:`function_calls`."""
    local = {(f.domain, f.name) for f in model.functions}
    opset = next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 0)
    known = set(registered_op_types())
    schema_fn: dict[str, bool] = {}
    calls = []
    for i, node in enumerate(model.graph.node):
        if (node.domain, node.op_type) in local:
            calls.append(i)
        elif node.domain in _DEFAULT_DOMAINS and node.op_type not in known:
            if node.op_type not in schema_fn:
                schema_fn[node.op_type] = _is_schema_function(node.op_type, opset)
            if schema_fn[node.op_type]:
                calls.append(i)
    return calls


def _is_schema_function(op_type: str, opset: int) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, max(opset, 1), "")
    except onnx.defs.SchemaError:
        return False
    # (onnx's type stubs lack these two properties of OpSchema)
    return bool(getattr(schema, "has_function", False) or getattr(schema, "has_context_dependent_function", False))


def expand_functions(model: onnx.ModelProto) -> Expanded | None:
    """``model`` (shapes inferred) with each call of :func:`function_calls` replaced by its body,
    constants folded (see the module docstring); None when it has no such call.

    Raises
    ------
    RuntimeError, onnx.shape_inference.InferenceError
        When onnx cannot build or inline a body (the caller reports it as the model's error).
    """
    positions = _call_positions(model)
    if not positions:
        return None
    types = _value_types(model)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    bodies: dict[int, list[onnx.NodeProto]] = {}
    counts: dict[str, tuple[int, int]] = {}
    cache: dict[bytes, onnx.GraphProto] = {}
    taken = {n.name for n in model.graph.node} | set(types) | {x for n in model.graph.node for x in (*n.input, *n.output)}
    for k, at in enumerate(positions):
        call = model.graph.node[at]
        name = call.name or f"{call.op_type}_{k}"
        body = _body(model, call, types, cache)
        nodes, inits = _renamed(body, call, name, taken)
        bodies[at] = nodes
        graph.initializer.extend(inits)
        n, ops = counts.get(call.op_type, (0, 0))
        counts[call.op_type] = (n + 1, ops + len(nodes))
    new_nodes: list[onnx.NodeProto] = []
    for i, node in enumerate(model.graph.node):
        new_nodes.extend(bodies.get(i, [node]))
    del graph.node[:]
    graph.node.extend(new_nodes)
    used = {(n.domain, n.op_type) for n in graph.node}
    keep = [f for f in out.functions if (f.domain, f.name) in used]
    del out.functions[:]
    out.functions.extend(keep)
    return Expanded(out, counts)


def _value_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """The type of every value of ``model``'s graph whose type is known (initializers included)."""
    g = model.graph
    types = {v.name: v.type for v in (*g.value_info, *g.input, *g.output) if v.type.HasField("tensor_type")}
    for t in g.initializer:
        types.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
    return types


def _body(
    model: onnx.ModelProto, call: onnx.NodeProto, types: Mapping[str, onnx.TypeProto], cache: dict[bytes, onnx.GraphProto]
) -> onnx.GraphProto:
    """The call's body inlined and folded, on canonical names (``in<i>``, ``out<i>``): calls
    alike (the same type, attributes and input types, as every layer of a transformer makes)
    share one."""
    ins = [f"in{i}" if x else "" for i, x in enumerate(call.input)]
    outs = [f"out{i}" if y else "" for i, y in enumerate(call.output)]
    node = helper.make_node(call.op_type, ins, outs, domain=call.domain)
    node.attribute.extend(call.attribute)
    inputs = [helper.make_value_info(c, types[x]) if x in types else helper.make_empty_tensor_value_info(c)
              for c, x in zip(ins, call.input) if x]  # fmt: skip
    graph = helper.make_graph([node], "call", inputs, [helper.make_empty_tensor_value_info(o) for o in outs if o])
    tiny = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    tiny.functions.extend(model.functions)
    key = tiny.SerializeToString(deterministic=True)
    if key not in cache:
        ids = [(f.domain, f.name) for f in model.functions] + [(call.domain, call.op_type)]
        inlined = inliner.inline_selected_functions(tiny, ids, inline_schema_functions=True)
        cache[key] = _fold(inlined)
    return cache[key]


def _fold(model: onnx.ModelProto) -> onnx.GraphProto:
    """``model``'s graph with its constant ops folded: ``Constant`` nodes, ``Shape`` and ``Size``
    of a value whose shape is static, and every op all of whose inputs are folded (evaluated by
    onnx's reference runtime), while a value holds at most :data:`MAX_FOLDED_ELEMENTS`."""
    from onnx.reference import ReferenceEvaluator

    values: dict[str, np.ndarray] = {}
    stuck: set[str] = set()  # values over the size limit: their ops stay, and so do the ops they feed
    for _ in range(_FOLD_ROUNDS):
        model = _without_noops(model)
        shapes = _static_shapes(model)
        changed = False
        foldable: list[onnx.NodeProto] = []
        pending: set[str] = set()  # the outputs of ``foldable``
        for node in model.graph.node:  # (the ops folded in earlier rounds are gone)
            if node.op_type in ("Shape", "Size") and node.input[0] in shapes:
                values[node.output[0]] = _shape_value(node, shapes[node.input[0]])
                changed = True
            elif _may_fold(node, stuck) and all(x in values or x in pending for x in node.input if x):
                foldable.append(node)
                pending.update(o for o in node.output if o)
        if foldable:
            changed = True
            names = [o for n in foldable for o in n.output if o]
            sub = helper.make_graph(foldable, "fold", [], [helper.make_empty_tensor_value_info(o) for o in names],
                                    [numpy_helper.from_array(v, k) for k, v in values.items()])  # fmt: skip
            sub_model = helper.make_model(sub, opset_imports=list(model.opset_import), ir_version=model.ir_version)
            try:
                got = ReferenceEvaluator(sub_model).run(None, {})
            except Exception:  # noqa: BLE001 (an op the reference runtime cannot run: it stays computed)
                break
            for name, value in zip(names, got, strict=True):
                arr = np.asarray(value)
                if arr.size > MAX_FOLDED_ELEMENTS:
                    stuck.add(name)
                else:
                    values[name] = arr
        model = _without_folded(model, values)
        if not changed:
            break
    return model.graph


def _may_fold(node: onnx.NodeProto, stuck: set[str]) -> bool:
    from graph_ir.rewrites.const_fold import NONDETERMINISTIC_OPS

    return (
        node.domain in _DEFAULT_DOMAINS
        and node.op_type not in NONDETERMINISTIC_OPS
        and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)
        and not any(x in stuck for x in (*node.input, *node.output))
    )


def _without_noops(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` without the ops of a body that change nothing (a body casts to its compute type
    and back whatever the type, expands to the shape it has): the ``eliminate_identity`` pass,
    as onnxruntime removes them when it loads a model."""
    from graph_ir.rewrites.base import PassOptions
    from graph_ir.rewrites.eliminate_identity import eliminate_identity

    return eliminate_identity(model, PassOptions()).model


def _static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """The static shape of each value of ``model`` that has one, by onnx's shape inference."""
    from graph_ir.rewrites.edit import value_shapes

    shapes = value_shapes(shape_inference.infer_shapes(model, data_prop=True))
    return {k: tuple(int(d) for d in v) for k, v in shapes.items() if all(isinstance(d, int) for d in v)}


def _shape_value(node: onnx.NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    if node.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.int64)), np.int64)
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    return np.array(shape[a.get("start", 0) : a.get("end", len(shape))], np.int64)


def _without_folded(model: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """``model`` with each node whose outputs are all in ``values`` dropped and those values made
    initializers (the ones still read)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    kept = [n for n in g.node if not all(o in values for o in n.output if o)]
    read = {x for n in kept for x in n.input} | {o.name for o in g.output}
    have = {t.name for t in g.initializer}
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in values.items() if k in read and k not in have)
    return out


def _renamed(
    body: onnx.GraphProto, call: onnx.NodeProto, name: str, taken: set[str]
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """``body``'s nodes and initializers with the call's names: ``in<i>``/``out<i>`` the call's
    inputs and outputs, every other value ``name/<value>``, every node ``name/<op type>_<i>`` (a name
    in ``taken``, the model's node and value names, gets a ``#<k>`` suffix; each one made joins it)."""
    io = {f"in{i}": x for i, x in enumerate(call.input) if x} | {f"out{i}": y for i, y in enumerate(call.output) if y}
    inner: dict[str, str] = {}

    def fresh(base: str) -> str:
        new, k = base, 1
        while new in taken:
            new, k = f"{base}#{k}", k + 1
        taken.add(new)
        return new

    def rename(v: str) -> str:
        if not v or v in io:
            return io.get(v, v)
        if v not in inner:
            inner[v] = fresh(f"{name}/{v}")
        return inner[v]

    nodes = []
    for i, n in enumerate(body.node):
        new = onnx.NodeProto()
        new.CopyFrom(n)
        new.name = fresh(f"{name}/{n.op_type}_{i}")
        _set(new.input, [rename(x) for x in n.input])
        _set(new.output, [rename(y) for y in n.output])
        new.metadata_props.add(key=BODY_KEY, value=call.op_type)
        nodes.append(new)
    inits = []
    for t in body.initializer:
        new_t = onnx.TensorProto()
        new_t.CopyFrom(t)
        new_t.name = rename(t.name)
        inits.append(new_t)
    return nodes, inits


def _set(field: Sequence[str], values: Iterable[str]) -> None:
    del field[:]  # type: ignore[attr-defined]
    field.extend(values)  # type: ignore[attr-defined]
