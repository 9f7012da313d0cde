"""Kernels onnxruntime's transformer fusions make out of several nodes, predicted from the graph.

With optimizations ``extended`` or ``all`` onnxruntime runs an exported Erf-Gelu
(``x * 0.5 * (1 + erf(x / sqrt 2))``, five nodes) as one ``Gelu`` kernel and a residual ``Add``
feeding a ``LayerNormalization`` as one ``SkipLayerNormalization`` kernel, both under new names
that do not map back to the file's nodes (:func:`hwsim.host.measure.attribute_nodes`). Each
fusion found here is one op (what the kernel reads and writes, the work of its members) and the
names of the nodes it absorbs; :func:`hwsim.host.validate.validate_model` costs the op as a
kernel of its own (so that calibration fits ``Gelu`` and ``SkipLayerNormalization`` like any op
type) and its members at 0, and matches the op to the profiled kernel of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph_ir.ir import ModelGraph, Op

__all__ = ["FUSED_KERNELS", "Fusion", "ort_fusions", "tensor_consumers"]

#: Op types of the kernels this module predicts.
FUSED_KERNELS = ("Gelu", "SkipLayerNormalization")


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


def _skip_norm(ln: Op, producer: dict[str, Op], consumers: dict[str, list[Op]]) -> Fusion | None:
    """``Add(a, b)`` used only by a ``LayerNormalization``, ``a`` and ``b`` of its output's size."""
    add = producer.get(ln.inputs[0].name)
    if add is None or add.op_type != "Add" or len(add.inputs) != 2 or len(consumers[add.outputs[0].name]) != 1:
        return None
    size = add.outputs[0].elements
    if any(t.elements != size for t in add.inputs):
        return None
    ins = (*add.inputs, *ln.inputs[1:])
    kernel = Op(f"SkipLayerNormalization:{ln.name}", "SkipLayerNormalization", "norm", ins, ln.outputs[:1], {}, 0,
                add.flops + ln.flops)  # fmt: skip
    return Fusion(kernel, frozenset((add.name, ln.name)))


def ort_fusions(graph: ModelGraph) -> list[Fusion]:
    """The Gelu and SkipLayerNormalization kernels onnxruntime makes of ``graph``, in graph order."""
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
    return out
