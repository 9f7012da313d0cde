"""A float16 model as onnxruntime's CPU provider runs it: in float32, but for the few kernels it has
a float16 version of.

On an x86 CPU onnxruntime (1.32) registers float16 kernels for data movement (Reshape, Transpose,
Gather, Concat, Slice, ...), the normalizations (LayerNormalization, SkipLayerNormalization,
RMSNormalization) and a few others, none for Conv, MatMul, Gemm, the elementwise arithmetic or
the activations. Its ``InsertCastTransformer`` runs every other node of a float16 model in float32:
its float16 weights are converted at load, and a ``Cast`` (``InsertedPrecisionFreeCast_...``) is
inserted on every edge between a float32 node and a float16 one (graph inputs and outputs
included). So an fp16 model runs no faster than its fp32 original and pays those Casts, and a
float16 weight takes float32's bytes: a 3-layer MLP of 33 MB fp32 weights, 16.5 MB in fp16, ran
0.85 ms where hwsim priced 0.22 from fp16 weights that fit the L3 (AMD EPYC, 2026-12-05).

:func:`as_run` rewrites a model the same way, with the float16 kernels the installed onnxruntime
registers (:func:`fp16_kernels`), so that ``hwsim validate`` prices what runs.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from functools import lru_cache

import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["CAST_PREFIX", "as_run", "fp16_kernels", "holds_fp16"]

#: How onnxruntime names the Casts it inserts (and :func:`as_run` names its own).
CAST_PREFIX = "InsertedPrecisionFreeCast_"
#: Nodes no kernel runs (folded before): never moved to float32.
_NO_KERNEL = frozenset({"Constant"})


@lru_cache(maxsize=1)
def fp16_kernels() -> frozenset[tuple[str, str]]:
    """``(domain, op type)`` of every kernel of onnxruntime's CPU provider that takes float16 (the
    default domain is ``""``), from the installed onnxruntime's kernel registry."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    return frozenset(
        (d.domain or "", d.op_name)
        for d in ort_c.get_all_opkernel_def()
        if d.provider == "CPUExecutionProvider" and any("tensor(float16)" in v for v in d.type_constraints.values())
    )


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    types = {vi.name: vi.type.tensor_type.elem_type for vi in [*g.input, *g.value_info, *g.output]}
    types.update((t.name, t.data_type) for t in g.initializer)
    return types


def holds_fp16(model: onnx.ModelProto) -> bool:
    """Some tensor of the main graph is float16."""
    return TensorProto.FLOAT16 in _elem_types(model).values()


def _to_fp32(t: onnx.TensorProto, name: str) -> onnx.TensorProto:
    """A float16 initializer as float32 under ``name`` (its external data, if any, kept as a reference)."""
    if t.data_location == TensorProto.EXTERNAL or not (t.raw_data or t.int32_data):
        out = onnx.TensorProto()
        out.CopyFrom(t)
        out.name, out.data_type = name, TensorProto.FLOAT
        return out
    return numpy_helper.from_array(numpy_helper.to_array(t).astype("float32"), name)


def _isolated(nodes: list[onnx.NodeProto], wide: set[int], f16: Callable[[str], bool], outputs: AbstractSet[str]) -> set[int]:
    """``wide`` and the nodes with a float16 kernel that onnxruntime runs in float32 all the same
    (its ``IsIsolatedFp16NodeOnCpu``, in node order, each one forced counting for the next): a node
    fed by some other node, producing no graph output, whose float16 inputs made by nodes all come
    from float32 nodes and whose float16 outputs all go to float32 nodes, so that float16 would cost
    Casts and save nothing (ResNeXt's Flatten between a GlobalAveragePool and a Gemm)."""
    made = {o: k for k, n in enumerate(nodes) for o in n.output}
    readers: dict[str, list[int]] = {}
    for k, n in enumerate(nodes):
        for t in n.input:
            readers.setdefault(t, []).append(k)
    out = set(wide)
    for k, n in enumerate(nodes):
        fed = [made[t] for t in n.input if t in made]
        ins, outs = [t for t in n.input if f16(t)], [t for t in n.output if f16(t)]
        if k in out or n.op_type in _NO_KERNEL or not fed or not ins or not outs or outputs & set(n.output):
            continue
        if all(made[t] in out for t in ins if t in made) and all(r in out for t in outs for r in readers.get(t, ())):
            out.add(k)
    return out


def as_run(model: onnx.ModelProto, fp16_ok: AbstractSet[tuple[str, str]] | None = None) -> onnx.ModelProto:
    """``model`` (its nodes named, :func:`hwsim.host.measure.named_nodes`) as onnxruntime's CPU
    provider runs it: every node that touches a float16 tensor and has no float16 kernel
    (``fp16_ok``, default :func:`fp16_kernels`) runs in float32, its float16 weights converted,
    with a ``Cast`` on each edge to or from a float16 node or the graph's inputs and outputs.
    A model without float16 tensors comes back unchanged."""
    types = _elem_types(model)
    if TensorProto.FLOAT16 not in types.values():
        return model
    ok = fp16_kernels() if fp16_ok is None else fp16_ok
    g = model.graph

    def f16(name: str) -> bool:
        return bool(name) and types.get(name) == TensorProto.FLOAT16

    src = list(g.node)
    wide: set[int] = {k for k, n in enumerate(src) if n.op_type not in _NO_KERNEL and (n.domain or "", n.op_type) not in ok
            and any(f16(t) for t in [*n.input, *n.output])}  # fmt: skip
    wide = _isolated(src, wide, f16, {o.name for o in g.output})
    made32 = {o for k in wide for o in src[k].output if f16(o)}  # outputs a float32 node makes
    read16 = {t for k, n in enumerate(src) if k not in wide for t in n.input} | {o.name for o in g.output}
    inits = {t.name: t for t in g.initializer}
    new_inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    cast_in: dict[str, str] = {}  # float16 tensor (not made by a float32 node) -> its float32 copy
    for k, orig in enumerate(src):
        if k not in wide:
            nodes.append(orig)
            continue
        n = onnx.NodeProto()
        n.CopyFrom(orig)  # the caller's model is left as it is
        for i, t in enumerate(n.input):
            if not f16(t):
                continue
            if t not in made32 and t not in cast_in:  # a float16 tensor's float32 copy, made once
                cast_in[t] = f"{t}_fp32"
                if t in inits:  # converted at load: no Cast at run time
                    new_inits.append(_to_fp32(inits[t], cast_in[t]))
                else:
                    nodes.append(helper.make_node("Cast", [t], [cast_in[t]], name=CAST_PREFIX + t, to=TensorProto.FLOAT))
            n.input[i] = f"{t}_fp32"  # a float32 node's own output, or that copy
        outs = [(i, o) for i, o in enumerate(n.output) if o in made32]
        for i, o in outs:
            n.output[i] = f"{o}_fp32"
        nodes.append(n)
        nodes += [helper.make_node("Cast", [f"{o}_fp32"], [o], name=CAST_PREFIX + o, to=TensorProto.FLOAT16)
                  for _, o in outs if o in read16]  # fmt: skip
    read = {t for n in nodes for t in n.input} | {i.name for i in g.input}
    live = [t for t in [*g.initializer, *new_inits] if t.name in read]  # a weight only float32 nodes read: gone
    graph = helper.make_graph(nodes, g.name, g.input, g.output, live)  # value_info dropped: inferred again
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out.graph.CopyFrom(graph)
    return out
