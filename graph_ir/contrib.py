"""onnxruntime's contrib ops lowered into the ONNX ops they fuse, at import.

A model saved by onnxruntime after its graph optimizations (``SessionOptions.optimized_model_filepath``,
what a deployment pipeline often keeps) or written by ``onnxruntime.transformers.optimizer`` holds
ops of onnxruntime's own ``com.microsoft`` domain: ``FusedConv`` (a Conv, a residual Add and an
activation), ``FusedGemm``, ``FusedMatMul`` (transposes and a scale), ``Gelu``, ``BiasGelu``,
``FastGelu``, ``QuickGelu``, ``BiasAdd``, ``SkipLayerNormalization`` and the RMS forms
``SkipSimplifiedLayerNormalization`` and ``SimplifiedLayerNormalization`` (the last in the ONNX
domain, where onnx itself has no such op). ONNX shape inference knows none of them, and no cost
model or chip's list of op types does. Each is replaced here by the ONNX ops it was fused from
(:data:`LOWERINGS`): the graph onnxruntime optimized, so a chip's own fusion rules, op lists and
cost models apply to it as to the model before optimization. onnxruntime's single kernel for such
an op is compared with its ops together by ``hwsim validate``, as an expanded function's are
(:func:`hwsim.host.validate.function_bodies`).

Names follow :mod:`graph_ir.functions`: the ops of a node ``n`` are ``n/<op type>_<i>``, its inner
tensors ``n/<name>``, its inputs and outputs keep their names. The lowered model computes what
onnxruntime computes for the contrib op (tested against onnxruntime, op by op). The model's
opset decides the form: ``Gelu`` from opset 20, ``LayerNormalization`` from 17 and
``RMSNormalization`` from 23, else the elementwise and reduction ops that define them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from graph_ir.ir import ModelError

__all__ = ["LOWERINGS", "Lowered", "contrib_nodes", "lower_contrib"]

_MS = "com.microsoft"
_DEFAULT_DOMAINS = ("", "ai.onnx")
#: onnxruntime's activations of ``FusedConv`` / ``FusedGemm`` (MLAS's): the ONNX op and its float
#: attributes, in the order of ``activation_params`` (``FusedGemm``: alpha, beta, gamma).
_ACTIVATIONS: Mapping[str, tuple[str, tuple[tuple[str, float], ...]]] = {
    "Relu": ("Relu", ()),
    "Sigmoid": ("Sigmoid", ()),
    "Tanh": ("Tanh", ()),
    "LeakyRelu": ("LeakyRelu", (("alpha", 0.01),)),
    "HardSigmoid": ("HardSigmoid", (("alpha", 0.2), ("beta", 0.5))),
    "Clip": ("Clip", (("min", -math.inf), ("max", math.inf))),
}


@dataclass
class _Call:
    """One contrib node being lowered: its emitted ops, constants and the context they need."""

    node: onnx.NodeProto
    opset: int
    dtypes: Mapping[str, int]
    ranks: Mapping[str, int]
    taken: set[str]  # node and tensor names in use: a new one never repeats one
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    _names: int = 0

    @property
    def name(self) -> str:
        return self.node.name

    def attr(self, key: str, default: object) -> object:
        a = next((a for a in self.node.attribute if a.name == key), None)
        if a is None:
            return default
        v = helper.get_attribute_value(a)
        if isinstance(default, (int, float, str)) and not isinstance(v, (int, float, bytes)):
            raise ModelError(f"node {self.name!r} ({self.node.op_type}): attribute {key!r} is not a single value")
        if isinstance(default, list) and not isinstance(v, list):
            raise ModelError(f"node {self.name!r} ({self.node.op_type}): attribute {key!r} is not a list")
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v

    def number(self, key: str, default: float) -> float:
        """A numeric attribute (an int one read as a float too)."""
        v = self.attr(key, default)
        if isinstance(v, str):
            raise ModelError(f"node {self.name!r} ({self.node.op_type}): attribute {key!r} is not a number")
        return float(v)  # type: ignore[arg-type]

    def numbers(self, key: str) -> list[float]:
        """A list-of-numbers attribute ([] when absent)."""
        v = self.attr(key, [])
        if not all(isinstance(x, (int, float)) for x in v):  # type: ignore[attr-defined]
            raise ModelError(f"node {self.name!r} ({self.node.op_type}): attribute {key!r} is not a list of numbers")
        return [float(x) for x in v]  # type: ignore[attr-defined]

    def flag(self, key: str, default: int = 0) -> int:
        """An int attribute."""
        v = self.number(key, default)
        if v != int(v):
            raise ModelError(f"node {self.name!r} ({self.node.op_type}): attribute {key!r} is not an integer")
        return int(v)

    def arg(self, i: int) -> str:
        """The node's ``i``-th input, "" when absent."""
        return self.node.input[i] if i < len(self.node.input) else ""

    def out(self, i: int) -> str:
        """The node's ``i``-th output, "" when absent."""
        return self.node.output[i] if i < len(self.node.output) else ""

    def op(self, op_type: str, inputs: Sequence[str], output: str = "", **attrs: Any) -> str:
        """Emit ``op_type`` on ``inputs``; its output is ``output`` or a new inner tensor (returned)."""
        k = len(self.nodes)
        y = output or self.fresh(f"{self.name}/{op_type.lower()}_{k}")
        self.nodes.append(helper.make_node(op_type, list(inputs), [y], name=self.fresh(f"{self.name}/{op_type}_{k}"), **attrs))
        return y

    def fresh(self, name: str) -> str:
        """``name``, or with ``_`` appended until it is no name in use; then in use."""
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def const(self, value: float | Sequence[int], like: str = "", int64: bool = False) -> str:
        """A constant: a scalar of ``like``'s element type, or (``int64``) a 1-D int64 tensor."""
        self._names += 1
        name = self.fresh(f"{self.name}/c{self._names}")
        if int64:
            self.inits.append(numpy_helper.from_array(np.asarray(value, np.int64).reshape(-1), name))
        else:
            elem = self.dtypes.get(like) or self.dtypes.get(self.arg(0), onnx.TensorProto.FLOAT)  # inner tensors: the input's
            self.inits.append(numpy_helper.from_array(np.asarray(value, helper.tensor_dtype_to_np_dtype(elem)), name))
        return name

    def rank(self, tensor: str) -> int:
        if tensor not in self.ranks:
            raise _NeedsRank(tensor)
        return self.ranks[tensor]


class _NeedsRank(Exception):
    """A lowering needs a tensor's rank that shape inference has not given yet."""


Lowering = Callable[[_Call], None]


# ---------------------------------------------------------------- the ops lowered
def _activation(c: _Call, x: str, kind: str, params: Sequence[float], output: str) -> str:
    if kind not in _ACTIVATIONS:
        raise ModelError(f"node {c.name!r} ({c.node.op_type}): activation {kind!r} is not one onnxruntime fuses ({', '.join(_ACTIVATIONS)})")
    op_type, names = _ACTIVATIONS[kind]
    values = [params[i] if i < len(params) else default for i, (_, default) in enumerate(names)]
    if op_type == "Clip":
        return c.op("Clip", [x, c.const(values[0], x), c.const(values[1], x)], output)
    return c.op(op_type, [x], output, **{k: float(v) for (k, _), v in zip(names, values, strict=True)})


def _fused_conv(c: _Call) -> None:
    conv = {a.name: helper.get_attribute_value(a) for a in c.node.attribute if a.name not in ("activation", "activation_params")}
    kind = str(c.attr("activation", ""))
    y = c.op("Conv", [c.arg(0), c.arg(1)] + ([c.arg(2)] if c.arg(2) else []), "" if kind or c.arg(3) else c.out(0), **conv)
    if c.arg(3):
        y = c.op("Add", [y, c.arg(3)], "" if kind else c.out(0))
    if kind:
        _activation(c, y, kind, c.numbers("activation_params"), c.out(0))


def _fused_gemm(c: _Call) -> None:
    gemm = {a.name: helper.get_attribute_value(a) for a in c.node.attribute if a.name in ("alpha", "beta", "transA", "transB")}
    kind = str(c.attr("activation", ""))
    y = c.op("Gemm", [c.arg(i) for i in range(3) if c.arg(i)], "" if kind else c.out(0), **gemm)
    if kind:
        params = [c.number(f"activation_{k}", d) for k, d in (("alpha", 0.01 if kind == "LeakyRelu" else 0.2), ("beta", 0.5))]
        _activation(c, y, kind, params if kind in ("LeakyRelu", "HardSigmoid") else [], c.out(0))


def _fused_matmul(c: _Call) -> None:
    if c.flag("transBatchA") or c.flag("transBatchB"):
        raise ModelError(f"node {c.name!r} (FusedMatMul): transBatchA / transBatchB are not lowered")
    operands = []
    for i, flag in ((0, "transA"), (1, "transB")):
        x = c.arg(i)
        if c.flag(flag) and c.rank(x) >= 2:
            r = c.rank(x)
            x = c.op("Transpose", [x], perm=[*range(r - 2), r - 1, r - 2])
        operands.append(x)
    alpha = c.number("alpha", 1.0)
    y = c.op("MatMul", operands, "" if alpha != 1.0 else c.out(0))
    if alpha != 1.0:
        c.op("Mul", [y, c.const(alpha, c.arg(0))], c.out(0))


def _gelu(c: _Call, x: str, output: str, approximate: bool = False) -> None:
    """``x * Phi(x)``: ONNX ``Gelu`` from opset 20, else its erf (or tanh) formula's ops."""
    if c.opset >= 20:
        c.op("Gelu", [x], output, **({"approximate": "tanh"} if approximate else {}))
        return
    if approximate:  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        cube = c.op("Mul", [c.op("Mul", [x, x]), x])
        inner = c.op("Add", [x, c.op("Mul", [cube, c.const(0.044715, x)])])
        t = c.op("Tanh", [c.op("Mul", [inner, c.const(math.sqrt(2.0 / math.pi), x)])])
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        t = c.op("Erf", [c.op("Div", [x, c.const(math.sqrt(2.0), x)])])
    c.op("Mul", [c.op("Mul", [x, c.op("Add", [t, c.const(1.0, x)])]), c.const(0.5, x)], output)


def _quick_gelu(c: _Call) -> None:
    x, alpha = c.arg(0), c.number("alpha", 1.702)
    scaled = x if alpha == 1.0 else c.op("Mul", [x, c.const(alpha, x)])
    c.op("Mul", [x, c.op("Sigmoid", [scaled])], c.out(0))


def _bias_gelu(c: _Call) -> None:
    _gelu(c, c.op("Add", [c.arg(0), c.arg(1)]), c.out(0))


def _fast_gelu(c: _Call) -> None:
    x = c.op("Add", [c.arg(0), c.arg(1)]) if c.arg(1) else c.arg(0)
    _gelu(c, x, c.out(0), approximate=True)


def _bias_add(c: _Call) -> None:
    c.op("Add", [c.op("Add", [c.arg(0), c.arg(1)]), c.arg(2)], c.out(0))


def _layer_norm(c: _Call, x: str, gamma: str, beta: str, outs: Sequence[str], rms: bool, axis: int = -1) -> None:
    """LayerNormalization (or, ``rms``, RMSNormalization) of ``x`` over ``axis`` onwards, with
    outputs ``outs`` = (y, mean, inv_std_dev) ("" for one not wanted; an RMS form has no mean)."""
    eps = c.number("epsilon", 1e-5 if not rms else 1e-6)
    y, mean_out, inv_out = (list(outs) + ["", "", ""])[:3]
    if rms and c.opset >= 23 and not inv_out:
        c.op("RMSNormalization", [x, gamma], y, axis=axis, epsilon=eps)
        return
    if not rms and c.opset >= 17:
        c.nodes.append(helper.make_node("LayerNormalization", [x, gamma] + ([beta] if beta else []), [y, mean_out, inv_out],
                                        name=c.fresh(f"{c.name}/LayerNormalization_{len(c.nodes)}"), axis=axis, epsilon=eps))  # fmt: skip
        return
    rank = c.rank(x) if axis != -1 else 0
    axes = list(range(axis % rank, rank)) if axis != -1 else [-1]
    reduce = {"axes": axes} if c.opset < 18 else {}

    def mean_of(t: str, out: str = "") -> str:
        return c.op("ReduceMean", [t] + ([] if c.opset < 18 else [c.const(axes, int64=True)]), out, **reduce)

    centred = x if rms else c.op("Sub", [x, mean_of(x, mean_out)])
    var = mean_of(c.op("Mul", [centred, centred]))
    inv = c.op("Reciprocal", [c.op("Sqrt", [c.op("Add", [var, c.const(eps, x)])])], inv_out)
    scaled = c.op("Mul", [c.op("Mul", [centred, inv]), gamma], "" if beta else y)
    if beta:
        c.op("Add", [scaled, beta], y)


def _skip_layer_norm(c: _Call, rms: bool) -> None:
    bias = c.arg(3 if rms else 4)
    total = c.out(3)
    s = c.op("Add", [c.arg(0), c.arg(1)], "" if bias else total)
    if bias:
        s = c.op("Add", [s, bias], total)
    if rms and c.out(1):
        raise ModelError(f"node {c.name!r} (SkipSimplifiedLayerNormalization): its 'mean' output is not lowered")
    _layer_norm(c, s, c.arg(2), "" if rms else c.arg(3), [c.out(0), c.out(1), c.out(2)], rms)


def _simplified_layer_norm(c: _Call) -> None:
    _layer_norm(c, c.arg(0), c.arg(1), "", [c.out(0), "", c.out(1)], True, c.flag("axis", -1))


#: The contrib op types lowered, by (domain, op type).
LOWERINGS: Mapping[tuple[str, str], Lowering] = {
    (_MS, "FusedConv"): _fused_conv,
    (_MS, "FusedGemm"): _fused_gemm,
    (_MS, "FusedMatMul"): _fused_matmul,
    (_MS, "Gelu"): lambda c: _gelu(c, c.arg(0), c.out(0)),
    (_MS, "BiasGelu"): _bias_gelu,
    (_MS, "FastGelu"): _fast_gelu,
    (_MS, "QuickGelu"): _quick_gelu,
    (_MS, "BiasAdd"): _bias_add,
    (_MS, "SkipLayerNormalization"): lambda c: _skip_layer_norm(c, rms=False),
    (_MS, "SkipSimplifiedLayerNormalization"): lambda c: _skip_layer_norm(c, rms=True),
    ("", "SimplifiedLayerNormalization"): _simplified_layer_norm,
}


# ---------------------------------------------------------------- the pass
@dataclass(frozen=True)
class Lowered:
    """What :func:`lower_contrib` did: the model, and per op type the nodes and the ops they became."""

    model: onnx.ModelProto
    calls: Mapping[str, tuple[int, int]]

    def warning(self) -> str:
        """One line for the run's warnings."""
        parts = [f"{t} x{n} ({ops} ops)" for t, (n, ops) in sorted(self.calls.items())]
        return "onnxruntime contrib ops lowered into the ONNX ops they fuse: " + ", ".join(parts)


def _key(node: onnx.NodeProto) -> tuple[str, str]:
    return ("" if node.domain in _DEFAULT_DOMAINS else node.domain, node.op_type)


def contrib_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The top-level nodes of ``model`` that :func:`lower_contrib` lowers."""
    return [n for n in model.graph.node if _key(n) in LOWERINGS]


def lower_contrib(model: onnx.ModelProto, source: str) -> Lowered | None:
    """``model`` with each node of :func:`contrib_nodes` replaced by the ONNX ops it fuses (the
    module docstring); None when it has none. Nodes must have their names (unique).

    Raises
    ------
    ModelError
        A contrib node whose attributes are outside what is lowered (named, one line).
    """
    if not any(_key(n) in LOWERINGS for n in model.graph.node):
        return None
    opset = next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 0)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    counts: dict[str, tuple[int, int]] = {}
    g = model.graph
    taken = {n.name for n in g.node} | {x for n in g.node for x in (*n.input, *n.output)}
    taken |= {v.name for v in (*g.input, *g.output, *g.value_info, *g.initializer)}
    while True:  # a rank a lowering needs may wait for an earlier node's lowering
        dtypes, ranks = _types(out)
        left, lowered = _lower_pass(out, source, opset, dtypes, ranks, counts, taken)
        if not left:
            return Lowered(out, counts)
        if not lowered:
            raise ModelError(f"{source}: node {left[0]!r}: the rank of its inputs is unknown, so it cannot be lowered into ONNX ops")


def _lower_pass(
    model: onnx.ModelProto, source: str, opset: int, dtypes: Mapping[str, int], ranks: Mapping[str, int],
    counts: dict[str, tuple[int, int]], taken: set[str],
) -> tuple[list[str], int]:  # fmt: skip
    """Lower in place every contrib node whose ranks are known: the names of those left, and how
    many were lowered."""
    new_nodes: list[onnx.NodeProto] = []
    left: list[str] = []
    lowered = 0
    for node in model.graph.node:
        lowering = LOWERINGS.get(_key(node))
        if lowering is None:
            new_nodes.append(node)
            continue
        call = _Call(node, opset, dtypes, ranks, taken)
        try:
            lowering(call)
        except _NeedsRank:
            new_nodes.append(node)
            left.append(node.name)
            continue
        except ModelError as exc:
            raise ModelError(f"{source}: {exc}") from None
        new_nodes.extend(call.nodes)
        model.graph.initializer.extend(call.inits)
        n, ops = counts.get(node.op_type, (0, 0))
        counts[node.op_type] = (n + 1, ops + len(call.nodes))
        lowered += 1
    copies = [onnx.NodeProto() for _ in new_nodes]
    for c, n in zip(copies, new_nodes, strict=True):
        c.CopyFrom(n)
    del model.graph.node[:]
    model.graph.node.extend(copies)
    return left, lowered


def _types(model: onnx.ModelProto) -> tuple[dict[str, int], dict[str, int]]:
    """Element type and rank of every value whose type is known, after onnx's (lenient) shape
    inference: onnxruntime writes the contrib ops' outputs into ``value_info`` when it saves a model."""
    try:
        inferred = shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # noqa: BLE001 (lenient: what it cannot infer stays unknown)
        inferred = model
    g = inferred.graph
    dtypes: dict[str, int] = {}
    ranks: dict[str, int] = {}
    for v in (*g.input, *g.value_info, *g.output):
        tt = v.type.tensor_type
        if tt.elem_type:
            dtypes[v.name] = tt.elem_type
        if tt.HasField("shape"):
            ranks[v.name] = len(tt.shape.dim)
    for t in g.initializer:
        dtypes[t.name] = t.data_type
        ranks[t.name] = len(t.dims)
    return dtypes, ranks
