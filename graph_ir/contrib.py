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

from graph_ir.functions import Expanded
from graph_ir.ir import ModelError

__all__ = ["HEADLINE", "LOWERINGS", "contrib_nodes", "lower_contrib"]

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
    shapes: Mapping[str, tuple[int, ...]]  # by value: its dims, -1 where not static
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

    def const(self, value: float | Sequence[int] | np.ndarray, like: str = "", int64: bool = False) -> str:
        """A constant: a scalar (or array) of ``like``'s element type, or (``int64``) a 1-D int64 tensor."""
        self._names += 1
        name = self.fresh(f"{self.name}/c{self._names}")
        if int64:
            self.inits.append(numpy_helper.from_array(np.asarray(value, np.int64).reshape(-1), name))
        else:
            elem = self.dtypes.get(like) or self.float_type()  # an inner tensor: the node's float type
            self.inits.append(numpy_helper.from_array(np.asarray(value, helper.tensor_dtype_to_np_dtype(elem)), name))
        return name

    def float_type(self) -> int:
        """The element type of the node's first floating-point input (float32 when none is known)."""
        floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)
        return next((t for x in self.node.input if (t := self.dtypes.get(x)) in floats), onnx.TensorProto.FLOAT)

    def rank(self, tensor: str) -> int:
        return len(self.shape(tensor, static=False))

    def shape(self, tensor: str, static: bool = True) -> tuple[int, ...]:
        """``tensor``'s dims (``static``: each known, else :class:`_NeedsShape`: the lowering waits)."""
        dims = self.shapes.get(tensor)
        if dims is None or (static and any(d < 0 for d in dims)):
            raise _NeedsShape(tensor)
        return dims

    def ints(self, key: str) -> list[int]:
        """A list-of-integers attribute ([] when absent)."""
        v = self.numbers(key)
        if any(x != int(x) for x in v):
            raise ModelError(f"node {self.name!r} ({self.node.op_type}): attribute {key!r} is not a list of integers")
        return [int(x) for x in v]

    def outs(self, op_type: str, inputs: Sequence[str], count: int, **attrs: Any) -> list[str]:
        """Emit ``op_type`` with ``count`` new inner outputs (returned)."""
        k = len(self.nodes)
        ys = [self.fresh(f"{self.name}/{op_type.lower()}_{k}_{i}") for i in range(count)]
        self.nodes.append(helper.make_node(op_type, list(inputs), ys, name=self.fresh(f"{self.name}/{op_type}_{k}"), **attrs))
        return ys

    def refuse(self, what: str) -> ModelError:
        return ModelError(f"node {self.name!r} ({self.node.op_type}): {what} is not lowered into ONNX ops")


class _NeedsShape(Exception):
    """A lowering needs a tensor's shape (or rank) that shape inference has not given yet."""


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
    x = c.op("Add", [c.arg(0), bias]) if bias else c.arg(0)  # the bias first, as in the graph it was fused from
    s = c.op("Add", [x, c.arg(1)], c.out(3))
    if rms and c.out(1):
        raise ModelError(f"node {c.name!r} (SkipSimplifiedLayerNormalization): its 'mean' output is not lowered")
    _layer_norm(c, s, c.arg(2), "" if rms else c.arg(3), [c.out(0), c.out(1), c.out(2)], rms)


def _simplified_layer_norm(c: _Call) -> None:
    _layer_norm(c, c.arg(0), c.arg(1), "", [c.out(0), "", c.out(1)], True, c.flag("axis", -1))


def _unsqueeze(c: _Call, x: str, axes: Sequence[int]) -> str:
    if c.opset >= 13:
        return c.op("Unsqueeze", [x, c.const(list(axes), int64=True)])
    return c.op("Unsqueeze", [x], axes=list(axes))


def _padding_mask(c: _Call, mask: str, like: str, total: int) -> str:
    """The additive mask ``[B, 1, 1|S, T]`` of an attention's key padding mask: a raw ``[B, T]``
    (or ``[B, S, T]``) mask of 1s kept and 0s masked, or a ``[B]`` of each row's kept length
    (right padding); ``mask_filter_value`` where masked, 0 elsewhere."""
    rank = c.rank(mask)
    if rank == 1 and c.shape(mask)[0] != c.shape(like)[0]:
        raise c.refuse("a mask index of start and end positions (2 x batch)")
    if rank == 1:  # the end position of each row: key j kept while j < end
        ends = c.op("Cast", [_unsqueeze(c, mask, [1])], to=onnx.TensorProto.INT64)
        keep = c.op("Less", [c.const(list(range(total)), int64=True), ends])
    elif rank in (2, 3):
        keep = mask
    else:
        raise c.refuse(f"a mask of rank {rank}")
    kept = c.op("Cast", [keep], to=c.float_type())
    masked = c.op("Mul", [c.op("Sub", [c.const(1.0, like), kept]), c.const(c.number("mask_filter_value", -10000.0), like)])
    return _unsqueeze(c, masked, [1, 2] if rank in (1, 2) else [1])


def _attention_core(c: _Call, q: str, k: str, v: str, sizes: tuple[int, int], mask: str, seqs: tuple[int, int]) -> None:
    """Multi-head attention of ``q`` [B, S, heads x h] over ``k``, ``v`` [B, T, heads x h(v)]
    (``sizes``: h and h(v)): each head's ``softmax(q k^T scale + mask) v``, the heads joined
    back into the node's output [B, S, heads x h(v)]. ``unidirectional`` adds the causal mask
    (``seqs``: S and T)."""
    heads = c.flag("num_heads")

    def split_heads(x: str, h: int, perm: list[int]) -> str:
        return c.op("Transpose", [c.op("Reshape", [x, c.const([0, 0, heads, h], int64=True)])], perm=perm)

    scale = c.number("scale", 0.0) or 1.0 / math.sqrt(sizes[0])
    scores = c.op("Mul", [c.op("MatMul", [split_heads(q, sizes[0], [0, 2, 1, 3]), split_heads(k, sizes[0], [0, 2, 3, 1])]),
                          c.const(scale, q)])  # fmt: skip
    if mask:
        scores = c.op("Add", [scores, mask])
    if c.flag("unidirectional"):
        s, t = seqs
        causal = np.where(np.arange(t)[None, :] > np.arange(s)[:, None] + (t - s), c.number("mask_filter_value", -10000.0), 0.0)
        scores = c.op("Add", [scores, c.const(causal, q)])
    probs = c.op("Softmax", [scores], axis=-1 if c.opset >= 13 else 3)
    heads_out = c.op("Transpose", [c.op("MatMul", [probs, split_heads(v, sizes[1], [0, 2, 1, 3])])], perm=[0, 2, 1, 3])
    c.op("Reshape", [heads_out, c.const([0, 0, heads * sizes[1]], int64=True)], c.out(0))


def _head_sizes(c: _Call, hidden: Sequence[int]) -> tuple[int, int]:
    """Per-head sizes of Q/K and of V from their hidden sizes (``hidden``: Q, K, V)."""
    heads = c.flag("num_heads")
    if heads <= 0 or hidden[0] != hidden[1] or any(h <= 0 or h % heads for h in hidden):
        raise ModelError(f"node {c.name!r} ({c.node.op_type}): num_heads {heads} does not divide its hidden sizes {list(hidden)}")
    return hidden[0] // heads, hidden[2] // heads


def _attention(c: _Call) -> None:
    """onnxruntime's ``Attention``: the Q, K, V projection (one MatMul over the packed weights,
    its bias) split three ways, then :func:`_attention_core` with the key padding mask."""
    for i, what in ((4, "a past state"), (5, "an attention bias"), (6, "a past sequence length")):
        if c.arg(i):
            raise c.refuse(what)
    if c.out(1) or c.flag("do_rotary") or c.flag("past_present_share_buffer"):
        raise c.refuse("a present state or rotary embedding")
    x, w = c.shape(c.arg(0)), c.shape(c.arg(1))
    if len(x) != 3 or len(w) != 2:
        raise c.refuse(f"an input of rank {len(x)} or weights of rank {len(w)} (3 and 2 are)")
    s, total = x[1], w[1]
    hidden = c.ints("qkv_hidden_sizes") or [total // 3] * 3
    if len(hidden) != 3 or sum(hidden) != total:
        raise ModelError(f"node {c.name!r} (Attention): qkv_hidden_sizes {hidden} do not add up to its weights' {total} columns")
    sizes = _head_sizes(c, hidden)
    qkv = c.op("MatMul", [c.arg(0), c.arg(1)])
    if c.arg(2):
        qkv = c.op("Add", [qkv, c.arg(2)])
    split = c.const(hidden, int64=True)
    q, k, v = c.outs("Split", [qkv, split], 3, axis=-1) if c.opset >= 13 else c.outs("Split", [qkv], 3, axis=-1, split=hidden)
    mask = _padding_mask(c, c.arg(3), c.arg(0), s) if c.arg(3) else ""
    _attention_core(c, q, k, v, sizes, mask, (s, s))


def _multi_head_attention(c: _Call) -> None:
    """onnxruntime's ``MultiHeadAttention`` on separate 3-D Q, K and V: their bias (packed Q, K,
    V) added, then :func:`_attention_core` with the key padding mask."""
    for i, what in ((5, "an attention bias"), (6, "a past key"), (7, "a past value")):
        if c.arg(i):
            raise c.refuse(what)
    if c.out(1) or c.out(2) or not c.arg(1) or not c.arg(2) or any(c.rank(c.arg(i)) != 3 for i in range(3)):
        raise c.refuse("packed or 4-D keys and values, or a present state")
    (_, s, dq), (_, t, dk), (_, _, dv) = (c.shape(c.arg(i)) for i in range(3))
    sizes = _head_sizes(c, (dq, dk, dv))
    q, k, v = c.arg(0), c.arg(1), c.arg(2)
    if c.arg(3):
        bq, bk, bv = c.outs("Split", [c.arg(3), c.const([dq, dk, dv], int64=True)], 3, axis=0) if c.opset >= 13 else \
            c.outs("Split", [c.arg(3)], 3, axis=0, split=[dq, dk, dv])  # fmt: skip
        q, k, v = c.op("Add", [q, bq]), c.op("Add", [k, bk]), c.op("Add", [v, bv])
    mask = _padding_mask(c, c.arg(4), c.arg(0), t) if c.arg(4) else ""
    _attention_core(c, q, k, v, sizes, mask, (s, t))


def _embed_layer_norm(c: _Call) -> None:
    """onnxruntime's ``EmbedLayerNormalization``: the word, position and segment embeddings
    gathered and added, then LayerNormalization; its ``mask_index`` each row's count of kept
    tokens (the mask's sum), its ``embedding_sum`` the sum before the norm."""
    ids = c.shape(c.arg(0))
    if len(ids) != 2:
        raise c.refuse(f"input ids of rank {len(ids)} (2 are)")
    s = ids[1]
    words = c.op("Gather", [c.arg(2), c.arg(0)])
    positions = c.arg(8) if c.arg(8) else c.const(list(range(s)), int64=True)
    total = c.op("Add", [words, c.op("Gather", [c.arg(3), positions])], "" if c.arg(4) else c.out(2))
    if c.arg(4) and c.arg(1):
        total = c.op("Add", [total, c.op("Gather", [c.arg(4), c.arg(1)])], c.out(2))
    if c.out(1):
        if not c.arg(7):
            raise c.refuse("a mask index without a mask input")
        kept = c.op("Cast", [c.arg(7)], to=onnx.TensorProto.INT32)
        if c.opset >= 13:
            c.op("ReduceSum", [kept, c.const([1], int64=True)], c.out(1), keepdims=0)
        else:
            c.op("ReduceSum", [kept], c.out(1), keepdims=0, axes=[1])
    _layer_norm(c, total, c.arg(5), c.arg(6), [c.out(0)], False)


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
    (_MS, "Attention"): _attention,
    (_MS, "MultiHeadAttention"): _multi_head_attention,
    (_MS, "EmbedLayerNormalization"): _embed_layer_norm,
}


# ---------------------------------------------------------------- the pass
#: The run's warning about the lowered nodes opens with this.
HEADLINE = "onnxruntime contrib ops lowered into the ONNX ops they fuse"


def _key(node: onnx.NodeProto) -> tuple[str, str]:
    return ("" if node.domain in _DEFAULT_DOMAINS else node.domain, node.op_type)


def contrib_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The top-level nodes of ``model`` that :func:`lower_contrib` lowers."""
    return [n for n in model.graph.node if _key(n) in LOWERINGS]


def lower_contrib(model: onnx.ModelProto, source: str) -> Expanded | None:
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
    while True:  # a shape a lowering needs may wait for an earlier node's lowering
        dtypes, shapes = _types(out)
        left, lowered = _lower_pass(out, source, opset, dtypes, shapes, counts, taken)
        if not left:
            return Expanded(out, counts, HEADLINE)
        if not lowered:
            raise ModelError(f"{source}: node {left[0]!r}: the shape of an input is unknown, so it cannot be lowered into ONNX ops")


def _lower_pass(
    model: onnx.ModelProto, source: str, opset: int, dtypes: Mapping[str, int], shapes: Mapping[str, tuple[int, ...]],
    counts: dict[str, tuple[int, int]], taken: set[str],
) -> tuple[list[str], int]:  # fmt: skip
    """Lower in place every contrib node whose input shapes are known (as far as its lowering
    needs them): the names of those left, and how many were lowered."""
    new_nodes: list[onnx.NodeProto] = []
    left: list[str] = []
    lowered = 0
    for node in model.graph.node:
        lowering = LOWERINGS.get(_key(node))
        if lowering is None:
            new_nodes.append(node)
            continue
        call = _Call(node, opset, dtypes, shapes, taken)
        try:
            lowering(call)
        except _NeedsShape:
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


def _types(model: onnx.ModelProto) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    """Element type and dims (-1 where not static) of every value whose type is known, after onnx's
    (lenient) shape inference: onnxruntime writes the contrib ops' outputs into ``value_info``
    when it saves a model."""
    try:
        inferred = shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # noqa: BLE001 (lenient: what it cannot infer stays unknown)
        inferred = model
    g = inferred.graph
    dtypes: dict[str, int] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for v in (*g.input, *g.value_info, *g.output):
        tt = v.type.tensor_type
        if tt.elem_type:
            dtypes[v.name] = tt.elem_type
        if tt.HasField("shape"):
            shapes[v.name] = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1 for d in tt.shape.dim)
    for t in g.initializer:
        dtypes[t.name] = t.data_type
        shapes[t.name] = tuple(int(d) for d in t.dims)
    return dtypes, shapes
