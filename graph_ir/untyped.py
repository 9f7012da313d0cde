"""Op outputs that ONNX shape inference leaves with no tensor type of known rank.

Three kinds of op leave one: ops ONNX knows but cannot type (GroupNormalization-21, whose schema
is a context-dependent function; ``ai.onnx.ml`` ops such as Normalizer), ops of a domain it does
not know (an onnxruntime contrib op hwsim does not lower), and ops whose output is no tensor (a
sequence, an optional). Strict inference fails on the op that *reads* such an output ("Input 0
expected to have type but instead is null"), so :func:`infer_past_untyped` then runs onnx's
lenient inference, which goes on past it, and the op itself is dealt with: its output is typed by
its rule in :data:`SHAPE_RULES` (:func:`rule_type`), or refused with a line that names it
(:func:`refusal`). ``--assume`` gives the size of a dimension, so it cannot help an output that
has no rank; the refusal does not offer it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import onnx
from onnx import helper, shape_inference

from graph_ir.ir import ModelError

__all__ = [
    "QOPERATOR_FIX",
    "SHAPE_RULES",
    "contrib_note",
    "drop_if_unread",
    "has_rank",
    "infer_lenient",
    "infer_past_untyped",
    "is_qoperator",
    "refusal",
    "rule_type",
]

TypeRule = Callable[[onnx.TypeProto], onnx.TypeProto]

_DEFAULT_DOMAINS = ("", "ai.onnx")
_INFER_ERRORS = (shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError)
#: A value's type field -> how a message names a value of that type.
_NOT_TENSOR = {
    "sequence_type": "a sequence",
    "optional_type": "an optional",
    "map_type": "a map",
    "sparse_tensor_type": "a sparse tensor",
}


#: The advice for onnxruntime's QOperator ops (:func:`is_qoperator`).
QOPERATOR_FIX = ("onnxruntime's QOperator format: quantize in QDQ format instead (quant_format=QuantFormat.QDQ), "
                 "which hwsim folds as a toolchain does")  # fmt: skip


def is_qoperator(node: onnx.NodeProto) -> bool:
    """Whether ``node`` is one of onnxruntime's QOperator ops (QLinearAdd, QGemm, ... of a domain
    other than ONNX's own), which ONNX's shape inference does not know."""
    return node.domain not in _DEFAULT_DOMAINS and (
        node.op_type.startswith("QLinear") or node.op_type == "QGemm"
    )


def _same(x: onnx.TypeProto) -> onnx.TypeProto:
    return x


def _float(x: onnx.TypeProto) -> onnx.TypeProto:
    out = onnx.TypeProto()
    out.CopyFrom(x)
    out.tensor_type.elem_type = onnx.TensorProto.FLOAT
    return out


#: (domain, op_type) -> the type of output 0 from the type of input 0, for ops whose output ONNX's
#: inference leaves untyped.
SHAPE_RULES: Mapping[tuple[str, str], TypeRule] = {
    ("", "GroupNormalization"): _same,
    ("ai.onnx.ml", "Imputer"): _same,
    ("ai.onnx.ml", "Normalizer"): _float,
    ("ai.onnx.ml", "Scaler"): _float,
}


def infer_lenient(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX's lenient shape inference (it goes on past what it cannot infer), with data
    propagation, guarded as :func:`graph_ir.dynamic.infer_strict` is."""
    from graph_ir.infer_guard import infer_guarded

    return infer_guarded(
        model, lambda m: shape_inference.infer_shapes(m, check_type=False, data_prop=True)
    )


def infer_past_untyped(
    model: onnx.ModelProto, infer: Callable[[onnx.ModelProto], onnx.ModelProto]
) -> onnx.ModelProto:
    """``infer(model)`` (strict inference: it fails with a :class:`ModelError` or onnx's own
    error), or onnx's lenient inference when the strict one failed because an op ONNX cannot
    type left its output untyped: the first op whose output lenient inference leaves untyped is
    one whose own inference passes. Any other failure is ``infer``'s own."""
    try:
        return infer(model)
    except (ModelError, *_INFER_ERRORS):
        try:
            lenient = infer_lenient(model)
        except _INFER_ERRORS:
            lenient = None
        if lenient is None or not _untyped_first(lenient):
            raise
        return lenient


def _types(graph: onnx.GraphProto) -> dict[str, onnx.TypeProto]:
    """Tensor name -> its type, for every value whose type ``graph`` records."""
    out = {
        t.name: helper.make_tensor_type_proto(t.data_type, list(t.dims)) for t in graph.initializer
    }
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        if vi.type.WhichOneof("value") is not None:
            out.setdefault(vi.name, vi.type)
    return out


def _untyped_first(model: onnx.ModelProto) -> bool:
    """Whether the first node of ``model`` (inferred) with an untyped output is an op ONNX
    cannot type (a node whose own inference raises is a fault of the model instead)."""
    types = _types(model.graph)
    node = next((n for n in model.graph.node if any(o and o not in types for o in n.output)), None)
    if node is None:
        return False
    schema = _schema(model, node)
    if schema is None:
        return True  # an op ONNX does not know
    try:
        shape_inference.infer_node_outputs(
            schema, node, types, opset_imports=list(model.opset_import)
        )
    except (*_INFER_ERRORS, KeyError):
        return False
    return True


def has_rank(graph: onnx.GraphProto, tensor: str) -> bool:
    """Whether ``graph`` records ``tensor`` as a tensor with a shape (its dims may be unknown)."""
    t = _types(graph).get(tensor)
    return t is not None and t.HasField("tensor_type") and t.tensor_type.HasField("shape")


def rule_type(graph: onnx.GraphProto, node: onnx.NodeProto, tensor: str) -> onnx.TypeProto | None:
    """The type of ``node``'s output ``tensor`` by the op's rule in :data:`SHAPE_RULES` (None: no
    rule, or an input without a tensor shape)."""
    domain = "" if node.domain in _DEFAULT_DOMAINS else node.domain
    rule = SHAPE_RULES.get((domain, node.op_type))
    x = _types(graph).get(node.input[0]) if node.input else None
    if rule is None or x is None or not node.output or tensor != node.output[0]:
        return None
    if not (x.HasField("tensor_type") and x.tensor_type.HasField("shape")):
        return None
    return rule(x)


def drop_if_unread(model: onnx.ModelProto, node_name: str, tensor: str) -> bool:
    """Leave ``tensor`` out of node ``node_name``'s outputs in ``model`` (an omitted optional
    output, ``""``) when no node reads it and it is no graph output; whether it was.

    An optional output nothing reads need not be typed: Dropout's ``mask`` before opset 10,
    which ONNX's inference leaves untyped, in models exported for inference (the ONNX model zoo's
    AlexNet, VGG, SqueezeNet, Inception), where onnxruntime computes only the output.
    """
    graph = model.graph
    node = next((n for n in graph.node if n.name == node_name), None)
    if node is None or tensor == node.output[0] or any(o.name == tensor for o in graph.output):
        return False
    index = list(node.output).index(tensor)
    if any(tensor in n.input for n in graph.node) or not _optional_output(model, node, index):
        return False
    node.output[index] = ""
    return True


def _optional_output(model: onnx.ModelProto, node: onnx.NodeProto, index: int) -> bool:
    """Whether output ``index`` of ``node`` is optional in the op's schema for ``model``'s opset."""
    schema = _schema(model, node)
    if schema is None or not schema.outputs:
        return False
    formal = schema.outputs[min(index, len(schema.outputs) - 1)]
    return formal.option == onnx.defs.OpSchema.FormalParameterOption.Optional


def _schema(model: onnx.ModelProto, node: onnx.NodeProto) -> onnx.defs.OpSchema | None:
    """``node``'s op schema at ``model``'s opset of its domain (None: an op ONNX does not know)."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    domain = "" if node.domain in _DEFAULT_DOMAINS else node.domain
    try:
        return onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
    except onnx.defs.SchemaError:
        return None


def contrib_note(node: onnx.NodeProto) -> str:
    """What a refusal of an onnxruntime contrib op adds: the ones hwsim lowers ('' for another domain)."""
    if node.domain != "com.microsoft":
        return ""
    from graph_ir.contrib import LOWERINGS

    lowered = ", ".join(t for d, t in LOWERINGS if d == node.domain)
    return (f" (hwsim lowers onnxruntime's {lowered} into ONNX ops, not this one: a model saved before "
            "onnxruntime's optimizations has none)")  # fmt: skip


def refusal(graph: onnx.GraphProto, node: onnx.NodeProto, tensor: str, source: str) -> ModelError:
    """The one-line error for ``node``'s output ``tensor``, which has no tensor type of known
    rank and no rule: a value that is no tensor, or a type ONNX does not infer."""
    where = (
        f"{source}: node {node.name!r} ({node.domain + '.' if node.domain else ''}{node.op_type})"
    )
    found = _types(graph).get(tensor)
    kind = _NOT_TENSOR.get(found.WhichOneof("value") or "") if found is not None else None
    if kind is not None:
        return ModelError(
            f"{where}: output {tensor!r} is {kind}, not a tensor; hwsim simulates tensors only "
            f"({kind.split()[-1]}-typed values are not supported)"
        )
    if is_qoperator(node):
        return ModelError(f"{where}: ONNX shape inference does not know this op; {QOPERATOR_FIX}")
    known = (
        "does not know this op"
        if node.domain not in (*_DEFAULT_DOMAINS, "ai.onnx.ml")
        else "cannot type this op"
    )
    return ModelError(
        f"{where}: ONNX shape inference {known}, so its output {tensor!r} has no type or rank, and hwsim "
        "has no shape rule for it (--assume gives only a dimension's size); add the output's type and "
        f"shape to the model's graph.value_info{contrib_note(node)}"
    )
