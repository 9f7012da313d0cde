"""onnxruntime's QDQ fusions, predicted from the graph: an int8 QDQ model (``DequantizeLinear``
-> op -> ``QuantizeLinear``, as ``onnxruntime.quantization.quantize_static`` writes it) runs each
quantized op as one integer kernel.

onnxruntime's QDQ selectors (optimization level ``extended`` and up) fold the ``DequantizeLinear``
of every input and the ``QuantizeLinear`` of the output into the op: ``Conv`` runs as
``QLinearConv``, ``MatMul`` as ``QLinearMatMul``, ``Gemm`` as ``QGemm``, ``Add`` as ``QLinearAdd``,
``GlobalAveragePool`` as ``QLinearGlobalAveragePool`` (and ``MatMul`` whose output is not quantized
as ``MatMulIntegerToFloat``). The kernel reads the int8 tensors and writes the int8 one; the
``DequantizeLinear``/``QuantizeLinear`` nodes it absorbs run no kernel. Which op became which
kernel is read from the profile (the kernel's kind, as for ``QuickGelu``); :func:`qdq_kernel` gives
the kernel as one op for the CPU model to price (an int8 op: :func:`cost_models.base.requested_dtype`).

On x86 ``QLinearConv`` runs channels-last: onnxruntime's NHWC transformer puts a ``Transpose``
where a tensor enters or leaves a chain of channels-last kernels (:func:`nhwc_transposes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from graph_ir.ir import ModelGraph, Op, Tensor
from hwsim.host.ort_fusions import tensor_consumers

__all__ = ["KERNEL_ALIASES", "NHWC_KERNELS", "QDQ_KERNELS", "nhwc_transposes", "qdq_kernel", "qdq_propagated"]

#: onnxruntime's integer kernel -> the op type of the file's node it replaces.
QDQ_KERNELS: Mapping[str, str] = {
    "QLinearConv": "Conv", "QLinearMatMul": "MatMul", "QGemm": "Gemm", "MatMulIntegerToFloat": "MatMul",
    "QLinearAdd": "Add", "QLinearMul": "Mul", "QLinearGlobalAveragePool": "GlobalAveragePool",
    "QLinearAveragePool": "AveragePool", "QLinearConcat": "Concat", "QLinearSigmoid": "Sigmoid",
    "QLinearLeakyRelu": "LeakyRelu", "QLinearSoftmax": "Softmax",
}  # fmt: skip
#: Integer kernels onnxruntime's NHWC transformer runs channels-last (x86).
NHWC_KERNELS = frozenset(("QLinearConv", "QLinearAdd", "QLinearGlobalAveragePool", "QLinearAveragePool", "MaxPool"))
_DQ, _Q = "DequantizeLinear", "QuantizeLinear"


def _producers(graph: ModelGraph) -> dict[str, Op]:
    return {t.name: op for op in graph.ops() for t in op.outputs}


def qdq_kernel(graph: ModelGraph, name: str, kind: str) -> tuple[Op, frozenset[str]] | None:
    """Node ``name`` as onnxruntime's integer kernel ``kind`` (a key of :data:`QDQ_KERNELS`).

    Returns the kernel as one op (the node's work; inputs the int8 tensors its
    ``DequantizeLinear`` producers read, its other activations as ``uint8``; output the int8
    tensor of the ``QuantizeLinear`` that is its output's only consumer, else its own output) and
    the names of the ``DequantizeLinear``/``QuantizeLinear`` nodes it absorbs; None when ``kind``
    is no integer kernel of the node's op type.
    """
    op = graph.op(name)
    if QDQ_KERNELS.get(kind) != op.op_type:
        return None
    producer, consumers = _producers(graph), tensor_consumers(graph)
    members: set[str] = set()
    inputs: list[Tensor] = []
    for t in op.inputs:
        p = producer.get(t.name)
        if p is not None and p.op_type == _DQ and p.inputs:
            members.add(p.name)
            inputs.append(p.inputs[0])
        else:  # an integer kernel reads 8 bits (a DequantizeLinear moved below a Transpose: still 8 bits)
            inputs.append(t if t.is_weight or not t.dtype.startswith("float") else replace(t, dtype="uint8"))
    outputs = list(op.outputs)
    users = consumers.get(op.outputs[0].name, []) if op.outputs else []
    if len(users) == 1 and users[0].op_type == _Q and users[0].outputs:
        members.add(users[0].name)
        outputs[0] = users[0].outputs[0]
    return replace(op, op_type=kind, inputs=tuple(inputs), outputs=tuple(outputs)), frozenset(members)


def nhwc_transposes(graph: ModelGraph, kernels: Mapping[str, str], absorbed: Iterable[str] = ()) -> list[Op]:
    """The ``Transpose`` kernels onnxruntime's NHWC transformer inserts around the channels-last
    integer kernels (``kernels``: node -> the kernel it ran as; those in :data:`NHWC_KERNELS`):
    one for each 4-D tensor that enters such a kernel from a node that is none (or from the
    graph's inputs), one for each that such a kernel produces and anything else reads (or the
    graph outputs); ``absorbed`` nodes (folded ``QuantizeLinear``/``DequantizeLinear``) are looked
    through. Each is an op of category ``data`` named ``Transpose:<tensor>``, a copy of the tensor
    as those kernels read and write it: 8-bit (hwsim's graph holds the dequantized float; priced
    as float, the 4-channel input of a 128 x 128 int8 CNN took 31 us against the 15 measured).
    """
    producer, consumers = _producers(graph), tensor_consumers(graph)
    skip = set(absorbed)
    nhwc = {n for n, k in kernels.items() if k in NHWC_KERNELS}

    def source(t: Tensor) -> Op | None:
        p = producer.get(t.name)
        while p is not None and p.name in skip and p.inputs:
            p = producer.get(p.inputs[0].name)
        return p

    def readers(t: Tensor) -> list[Op]:
        out: list[Op] = []
        for c in consumers.get(t.name, []):
            out += [r for o in c.outputs for r in readers(o)] if c.name in skip else [c]
        return out

    found: dict[str, Op] = {}
    outputs = {t.name for t in graph.outputs}

    def transpose(t: Tensor, perm: tuple[int, ...]) -> Op:  # into channels-last (0, 2, 3, 1), or out of it
        eight = replace(t, dtype="uint8")
        return Op(f"Transpose:{t.name}", "Transpose", "data", (eight,), (eight,), {"perm": perm})

    for name in nhwc:
        op = graph.op(name)
        for t in op.inputs[:1] if kernels[name] != "QLinearAdd" else op.inputs[:2]:
            src = source(t)
            if len(t.shape) == 4 and (src is None or src.name not in nhwc):
                found.setdefault(t.name, transpose(t, (0, 2, 3, 1)))
        for t in op.outputs:
            rs = readers(t)
            if len(t.shape) == 4 and (t.name in outputs or any(r.name not in nhwc for r in rs)):
                found.setdefault(t.name, transpose(t, (0, 3, 1, 2)))
    return list(found.values())


#: Kernels onnxruntime names differently in a QDQ model, and the kind they are predicted as:
#: ``BiasGelu`` is the ``Gelu`` fusion (:mod:`hwsim.host.ort_fusions`) with the bias ``Add`` before
#: it folded in (in an fp32 model that Add goes into the MatMul; after a ``QLinearMatMul`` it
#: cannot); ``SimplifiedLayerNormalization`` is a written-out RMS normalization, costed as
#: ``RMSNormalization`` (:func:`hwsim.host.ort_fusions.decomposed_norms`).
KERNEL_ALIASES: Mapping[str, str] = {"BiasGelu": "Gelu", "SimplifiedLayerNormalization": "RMSNormalization"}
#: Op types onnxruntime's QDQ propagation moves a ``QuantizeLinear`` up across (or a
#: ``DequantizeLinear`` down across), so that they run on the 8-bit tensor.
_PROPAGATED = frozenset(("Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"))


def qdq_propagated(graph: ModelGraph) -> dict[str, Op]:
    """The data-movement nodes onnxruntime runs on 8-bit tensors in a QDQ model, as that kernel.

    onnxruntime's QDQ propagation moves a ``QuantizeLinear`` up across a Reshape/Transpose/
    Squeeze/Unsqueeze/Flatten whose output it alone reads, and a ``DequantizeLinear`` down across
    one it alone feeds; the node then moves one byte per element instead of four (a BERT-like
    encoder's ``Transpose`` of 1x128x6x64 measured 6-10 us where its fp32 estimate says 29). A node
    of those types that moves data (a view stays a view) is given as the op with its non-weight
    tensors in ``uint8`` when, through others
    of them, its output reaches only a ``QuantizeLinear`` or its input comes from a
    ``DequantizeLinear``.
    """
    producer, consumers = _producers(graph), tensor_consumers(graph)

    def quantized_below(op: Op) -> bool:
        users = consumers.get(op.outputs[0].name, []) if op.outputs else []
        return len(users) == 1 and (users[0].op_type == _Q or (users[0].op_type in _PROPAGATED and quantized_below(users[0])))

    def dequantized_above(op: Op) -> bool:
        p = producer.get(op.inputs[0].name) if op.inputs else None
        return p is not None and (p.op_type == _DQ or (p.op_type in _PROPAGATED and dequantized_above(p)))

    def u8(t: Tensor) -> Tensor:
        return t if t.is_weight else replace(t, dtype="uint8")

    return {op.name: replace(op, inputs=tuple(u8(t) for t in op.inputs), outputs=tuple(u8(t) for t in op.outputs))
            for op in graph.ops()
            if op.op_type in _PROPAGATED and op.category != "layout" and (quantized_below(op) or dequantized_above(op))}  # fmt: skip
