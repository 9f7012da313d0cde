"""``const_fold``: nodes whose inputs are all constants, replaced by their value.

A node every input of which is a constant with data (an initializer that is not also a graph
input, a ``Constant`` node's output, or the output of a node folded before it) is evaluated
once with onnxruntime (graph optimizations off, the same kernels the model would run) and its
outputs become initializers; ``Constant`` nodes become initializers too. Nodes are visited in
graph order, so chains of constant nodes fold in one pass.

Legality: the inputs have data (a weightless model's absent initializers have none, so a node
reading one is skipped); the op is deterministic (no ``Random*``, ``Multinomial``,
``Bernoulli``) and holds no subgraph; no output is a graph output (its producer stays); the
folded values are at most :data:`MAX_FOLDED_BYTES` (a constant ``Expand`` must not blow up the
file); onnxruntime can run it.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from graph_ir.rewrites import edit
from graph_ir.rewrites.base import PassOptions, PassResult, Site, register_pass

__all__ = ["MAX_FOLDED_BYTES", "NONDETERMINISTIC_OPS", "const_fold"]

#: The largest total size of a node's folded outputs (bytes).
MAX_FOLDED_BYTES = 64 << 20
_WEIGHTLESS = "an input has no data (weightless model)"
#: Op types whose outputs differ from run to run: never folded.
NONDETERMINISTIC_OPS = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
)


@register_pass("const_fold", "nodes whose inputs are all constants replaced by their values")
def const_fold(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """Fold the constant nodes of ``model`` (see the module docstring).

    Returns
    -------
    The new model; one applied site per node folded; one skipped site per node whose inputs are
    all constants but which cannot be folded, with the reason.
    """
    del options
    out = edit.copy_model(model)
    graph = out.graph
    graph_inputs = {i.name for i in graph.input}
    absent = {t.name for t in graph.initializer if edit.to_array(t) is None}
    known = {t.name for t in graph.initializer if t.name not in graph_inputs}
    outputs = {o.name for o in graph.output}
    opsets = {o.domain: o.version for o in out.opset_import}
    stuck: set[str] = set()
    applied: list[Site] = []
    skipped: list[Site] = []
    for node in list(graph.node):
        if not all(i in known for i in node.input if i):
            continue
        reason = _blocker(node, outputs, absent, stuck)
        values: list[np.ndarray] = []
        if not reason:
            values, reason = _evaluate(graph, node, opsets)
        if reason:
            skipped.append(Site((node.name,), legal=False, reason=reason))
            # its outputs stay constants the nodes after it cannot fold
            (absent if reason == _WEIGHTLESS else stuck).update(o for o in node.output if o)
            known.update(o for o in node.output if o)
            continue
        graph.node.remove(node)
        for name, value in zip([o for o in node.output if o], values, strict=True):
            edit.new_initializer(graph, name, value)
            known.add(name)
        applied.append(Site((node.name,)))
    return PassResult(edit.finish(out), tuple(applied), tuple(skipped))


def _blocker(node: onnx.NodeProto, outputs: set[str], absent: set[str], stuck: set[str]) -> str:
    """Why ``node`` cannot be folded before evaluating it ("" when nothing is against it)."""
    if any(i in absent for i in node.input if i):
        return _WEIGHTLESS
    if any(i in stuck for i in node.input if i):
        return "an input is a constant node that could not be folded"
    if node.op_type in NONDETERMINISTIC_OPS:
        return f"{node.op_type} is not deterministic"
    if any(True for _ in edit.bodies(node)):
        return f"{node.op_type} holds a subgraph"
    if any(o in outputs for o in node.output):
        return "an output is a graph output"
    return ""


def _evaluate(graph: onnx.GraphProto, node: onnx.NodeProto, opsets: dict[str, int]) -> tuple[list[np.ndarray], str]:
    """``node``'s outputs computed by onnxruntime, or ([], why not)."""
    import onnxruntime as ort

    inits = edit.initializers(graph)
    feeds: list[onnx.TensorProto] = []
    for name in dict.fromkeys(i for i in node.input if i):
        if name in inits:
            feeds.append(inits[name])
        else:
            value = edit.constant_value(graph, name)
            if value is None:
                return [], f"input {name!r} is not a readable constant"
            feeds.append(onnx.numpy_helper.from_array(value, name))
    mini = helper.make_model(
        helper.make_graph([node], "fold", [], [helper.ValueInfoProto(name=o) for o in node.output if o], feeds),
        opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
    )  # fmt: skip
    try:
        mini = onnx.shape_inference.infer_shapes(mini, strict_mode=True)
    except onnx.shape_inference.InferenceError as exc:
        return [], f"shape inference fails: {str(exc).splitlines()[0]}"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(mini.SerializeToString(), so, providers=["CPUExecutionProvider"])
        values = [np.asarray(v) for v in sess.run([o for o in node.output if o], {})]
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own Fail/InvalidGraph/NotImplemented types
        return [], f"onnxruntime cannot evaluate it ({type(exc).__name__})"
    total = sum(v.nbytes for v in values)
    if total > MAX_FOLDED_BYTES:
        return [], f"folded values would take {total / 2**20:.0f} MiB (limit {MAX_FOLDED_BYTES >> 20} MiB)"
    return values, ""
