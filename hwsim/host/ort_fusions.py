"""Kernels onnxruntime's transformer fusions make out of several nodes, predicted from the graph.

With optimizations ``extended`` or ``all`` onnxruntime runs an exported Erf-Gelu
(``x * 0.5 * (1 + erf(x / sqrt 2))``, five nodes) as one ``Gelu`` kernel and a residual ``Add``
feeding a ``LayerNormalization`` as one ``SkipLayerNormalization`` kernel, both under new names
that do not map back to the file's nodes (:func:`hwsim.host.measure.attribute_nodes`). A layer
normalization written out (an export before opset 17: ``ReduceMean``, ``Sub``, ``Pow``,
``ReduceMean``, ``Add``, ``Sqrt``, ``Div``, ``Mul``, ``Add``) runs as one ``LayerNormalization``
kernel, and its RMS form (no mean) as one ``SimplifiedLayerNormalization`` (costed as
``RMSNormalization``), each named after its scale ``Mul`` (:func:`decomposed_norms`). Each
fusion found here is one op (what the kernel reads and writes, the work of its members) and the
names of the nodes it absorbs; :func:`hwsim.host.validate.validate_model` costs the op as a
kernel of its own (so that calibration fits ``Gelu`` and ``SkipLayerNormalization`` like any op
type) and its members at 0, and matches the op to the profiled kernel of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph_ir.ir import ModelGraph, Op, Tensor
from graph_ir.op_metrics import metrics

__all__ = ["FUSED_KERNELS", "NORM_KERNELS", "Fusion", "decomposed_norms", "ort_fusions", "tensor_consumers"]

#: Op types of the kernels this module predicts.
FUSED_KERNELS = ("Gelu", "SkipLayerNormalization", "LayerNormalization", "RMSNormalization")
#: The kernel onnxruntime runs a written-out layer normalization as -> the op type it is costed as.
NORM_KERNELS = {"LayerNormalization": "LayerNormalization", "SimplifiedLayerNormalization": "RMSNormalization",
                "RMSNormalization": "RMSNormalization"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Fusion:
    """One fused kernel: the op it runs as and the graph nodes it absorbs."""

    kernel: Op
    members: frozenset[str]


def tensor_consumers(graph: ModelGraph) -> dict[str, list[Op]]:
    """Each tensor name's consumer ops, in graph order."""
    out: dict[str, list[Op]] = {}
    for op in graph.ops():
        for t in op.inputs:
            out.setdefault(t.name, []).append(op)
    return out


def _only(consumers: dict[str, list[Op]], op: Op, op_type: str) -> Op | None:
    """The single consumer of ``op``'s first output when it is of ``op_type``."""
    users = consumers.get(op.outputs[0].name, []) if op.outputs else []
    return users[0] if len(users) == 1 and users[0].op_type == op_type else None


def _gelu(graph: ModelGraph, erf: Op, producer: dict[str, Op], consumers: dict[str, list[Op]]) -> Fusion | None:
    """``Div|Mul(x, c) -> Erf -> Add(1) -> Mul`` with ``x`` (or ``0.5 x``), then ``Mul(0.5)`` if any."""
    scale = producer.get(erf.inputs[0].name)
    add = _only(consumers, erf, "Add")
    mul = _only(consumers, add, "Mul") if add is not None else None
    if scale is None or scale.op_type not in ("Div", "Mul") or add is None or mul is None:
        return None
    x = scale.inputs[0]
    members = [scale, erf, add, mul]
    other = next((t for t in mul.inputs if t.name != add.outputs[0].name), None)
    half = producer.get(other.name) if other is not None else None
    if half is not None and half.op_type == "Mul" and x.name in {t.name for t in half.inputs}:
        members.append(half)  # 0.5 x computed first
    elif other is None or other.name != x.name:
        return None
    elif (last := _only(consumers, mul, "Mul")) is not None:
        members.append(last)  # (x (1 + erf)) * 0.5
    out = members[-1] if members[-1] is not half else mul
    kernel = Op(f"Gelu:{erf.name}", "Gelu", "activation", (x,), out.outputs, {}, 0, sum(m.flops for m in members))
    return Fusion(kernel, frozenset(m.name for m in members))


def _skip_norm(ln: Op, producer: dict[str, Op], consumers: dict[str, list[Op]],
               members: frozenset[str] | None = None) -> Fusion | None:  # fmt: skip
    """``Add(a, b)`` used only by a ``LayerNormalization`` (or by the ``members`` of one written
    out, ``ln`` its kernel), ``a`` and ``b`` of its output's size."""
    inside = members if members is not None else frozenset((ln.name,))
    add = producer.get(ln.inputs[0].name)
    if add is None or add.op_type != "Add" or len(add.inputs) != 2:
        return None
    if {c.name for c in consumers[add.outputs[0].name]} - inside:
        return None
    size = add.outputs[0].elements
    if any(t.elements != size for t in add.inputs):
        return None
    ins = (*add.inputs, *ln.inputs[1:])
    kernel = Op(f"SkipLayerNormalization:{ln.name}", "SkipLayerNormalization", "norm", ins, ln.outputs[:1], {}, 0,
                add.flops + ln.flops)  # fmt: skip
    return Fusion(kernel, inside | {add.name})


def _scalar(t: Tensor) -> bool:
    return t.is_weight and t.elements == 1


def _last_axis_mean(op: Op | None) -> bool:
    """A ``ReduceMean`` over its input's last axis only (axes as an attribute, opset < 18)."""
    if op is None or op.op_type != "ReduceMean" or not op.inputs:
        return False
    axes = op.attrs.get("axes")
    rank = len(op.inputs[0].shape)
    return isinstance(axes, (list, tuple)) and len(axes) == 1 and axes[0] in (-1, rank - 1)


def _norm_at(sqrt: Op, producer: dict[str, Op], consumers: dict[str, list[Op]]) -> tuple[Tensor, list[Op], bool] | None:
    """The normalized tensor, the members in order and whether the mean is taken off, of the layer
    normalization written out around ``sqrt``: ``[ReduceMean(x), Sub(x, mean)], Pow(., 2),
    ReduceMean, Add(eps), Sqrt, Div(., sqrt)``. None when it is not one."""
    eps = producer.get(sqrt.inputs[0].name) if sqrt.inputs else None
    if eps is None or eps.op_type != "Add" or len(eps.inputs) != 2 or not any(_scalar(t) for t in eps.inputs):
        return None
    var = next((producer.get(t.name) for t in eps.inputs if not _scalar(t)), None)
    if var is None or not _last_axis_mean(var):
        return None
    sq = producer.get(var.inputs[0].name)
    if sq is None or sq.op_type != "Pow" or len(sq.inputs) != 2 or not _scalar(sq.inputs[1]):
        return None
    div = _only(consumers, sqrt, "Div")
    base = sq.inputs[0]
    if div is None or div.inputs[0].name != base.name or div.inputs[1].name != sqrt.outputs[0].name:
        return None
    tail = [sq, var, eps, sqrt, div]
    sub = producer.get(base.name)
    if sub is None or sub.op_type != "Sub" or len(sub.inputs) != 2:
        return base, tail, False
    mean = producer.get(sub.inputs[1].name)
    if mean is None or not _last_axis_mean(mean) or mean.inputs[0].name != sub.inputs[0].name:
        return base, tail, False
    return sub.inputs[0], [mean, sub, *tail], True


def _decomposed_norm(
    sqrt: Op, producer: dict[str, Op], consumers: dict[str, list[Op]], outputs: frozenset[str] = frozenset()
) -> Fusion | None:
    """The layer normalization written out around ``sqrt`` (:func:`_norm_at`), then ``Mul`` by a
    weight and, with the mean taken off, ``Add`` of one, as one kernel: ``LayerNormalization``
    (``SkipLayerNormalization`` with a residual ``Add`` only it reads) or ``RMSNormalization``.
    Where the centred tensor is read outside (or is a graph output), onnxruntime's
    SimplifiedLayerNormFusion still takes the rest, the centred tensor as its input."""
    found = _norm_at(sqrt, producer, consumers)
    if found is None:
        return None
    x, members, centred = found
    scale = _only(consumers, members[-1], "Mul")
    gamma = next((t for t in scale.inputs if t.is_weight), None) if scale is not None else None
    if scale is None or gamma is None:
        return None
    if centred and (whole := _norm_kernel(x, members, scale, gamma, (producer, consumers, outputs), True)) is not None:
        return whole
    if centred:
        x, members = members[1].outputs[0], members[2:]
    return _norm_kernel(x, members, scale, gamma, (producer, consumers, outputs), False)


def _norm_kernel(
    x: Tensor, members: list[Op], scale: Op, gamma: Tensor,
    graph: tuple[dict[str, Op], dict[str, list[Op]], frozenset[str]], centred: bool,
) -> Fusion | None:  # fmt: skip
    """The kernel of :func:`_decomposed_norm` over ``x`` (``graph``: producers, consumers and
    graph outputs), or None where an intermediate is read outside its members."""
    producer, consumers, outputs = graph
    inner, members, params = [*members], [*members, scale], [gamma]
    shift = _only(consumers, scale, "Add") if centred else None
    beta = next((t for t in shift.inputs if t.is_weight), None) if shift is not None else None
    if shift is not None and beta is not None:
        inner.append(scale)
        members.append(shift)
        params.append(beta)
    names = frozenset(m.name for m in members)
    if any({c.name for c in consumers.get(m.outputs[0].name, [])} - names or m.outputs[0].name in outputs for m in inner):
        return None  # an intermediate read outside or a graph output: onnxruntime does not fuse it
    kind = "LayerNormalization" if centred else "RMSNormalization"
    ins, out = (x, *params), members[-1].outputs[:1]
    kernel = Op(f"{kind}:{scale.name}", kind, "norm", ins, out, {"axis": -1}, 0, metrics(kind, ins, out, {}).flops)
    if centred and (skip := _skip_norm(kernel, producer, consumers, names)) is not None:
        return skip
    return Fusion(kernel, names)


def decomposed_norms(graph: ModelGraph) -> list[Fusion]:
    """The layer normalizations written out in ``graph`` that onnxruntime's LayerNormFusion and
    SimplifiedLayerNormFusion run as one kernel (:func:`_decomposed_norm`), in graph order.
    Measured (AMD EPYC, 1 thread, 128 x 384): the nine nodes of one took 27 us as one
    ``LayerNormalization``; written with ``Mul(d, d)`` instead of ``Pow(d, 2)`` onnxruntime leaves
    them apart (73 us); its RMS form took 14 us as one ``SimplifiedLayerNormalization``."""
    producer = {t.name: op for op in graph.ops() for t in op.outputs}
    consumers = tensor_consumers(graph)
    outputs = frozenset(t.name for t in graph.outputs)
    return [f for op in graph.ops() if op.op_type == "Sqrt" and (f := _decomposed_norm(op, producer, consumers, outputs)) is not None]


def ort_fusions(graph: ModelGraph) -> list[Fusion]:
    """The Gelu and SkipLayerNormalization kernels onnxruntime makes of ``graph``, in graph order,
    then the layer normalizations written out (:func:`decomposed_norms`)."""
    producer = {t.name: op for op in graph.ops() for t in op.outputs}
    consumers = tensor_consumers(graph)
    out: list[Fusion] = []
    for op in graph.ops():
        hit = None
        if op.op_type == "Erf" and op.inputs:
            hit = _gelu(graph, op, producer, consumers)
        elif op.op_type == "LayerNormalization" and op.inputs:
            hit = _skip_norm(op, producer, consumers)
        if hit is not None:
            out.append(hit)
    return out + decomposed_norms(graph)
