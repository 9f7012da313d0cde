"""Structured pruning: remove a fraction of the output channels of convs and matmuls.

A *producer* (a ``Conv`` with ``group=1``, a ``Gemm`` or a ``MatMul`` whose weight is an
initializer) loses ``floor(fraction * C)`` of its ``C`` output channels: the ones with the
smallest L1 norm where the model carries its weights, the last ones (by index) where it has
none (a weightless file whose initializers are absent external data). The channels are then
followed downstream: through elementwise ops (activations, pools, ``BatchNormalization``,
``Add``/``Mul``/... with a per-channel constant or with another tensor of the same channels,
depthwise convs, ``Flatten`` of a 1x1 map) to their *sinks*, the convs, ``Gemm`` s and
``MatMul`` s that read them, whose input channels are removed with them. A producer whose
channels reach anything else (a residual ``Add`` with another branch, ``Concat``, ``Reshape``,
a graph output) is left as it is, so that every shape stays consistent; :class:`PruneResult`
lists which producers were pruned and which were kept and why.

>>> import onnx
>>> from onnx import TensorProto, helper, numpy_helper
>>> import numpy as np
>>> w1 = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w1")
>>> w2 = numpy_helper.from_array(np.ones((4, 8, 1, 1), np.float32), "w2")
>>> g = helper.make_graph(
...     [helper.make_node("Conv", ["x", "w1"], ["h"], name="c1", pads=[1, 1, 1, 1]),
...      helper.make_node("Relu", ["h"], ["r"], name="relu"),
...      helper.make_node("Conv", ["r", "w2"], ["y"], name="c2")],
...     "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w1, w2])
>>> r = prune_channels(helper.make_model(g), 0.5)
>>> r.pruned, r.channels_removed, [tuple(t.dims) for t in r.model.graph.initializer]
(('c1',), 4, [(4, 3, 3, 3), (4, 4, 1, 1)])
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

__all__ = ["PruneError", "PruneResult", "prune_channels"]

#: Elementwise ops of one activation input that keep its channels where they are.
UNARY_PASS_THROUGH = frozenset(
    {
        "Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu",
        "Celu", "Softplus", "Softsign", "Erf", "Gelu", "Exp", "Neg", "Abs", "Sqrt", "Identity",
        "Dropout", "Cast", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    }
)  # fmt: skip
#: Binary elementwise ops: pass-through when the other input is a per-channel constant or a
#: tensor of the same channels (``x * sigmoid(x)``).
BINARY_PASS_THROUGH = frozenset({"Add", "Sub", "Mul", "Div", "PRelu"})


class PruneError(ValueError):
    """A fraction outside [0, 1)."""


@dataclass(frozen=True, slots=True)
class PruneResult:
    """The pruned model and what was done.

    ``pruned`` names the producers whose output channels were cut; ``kept`` the producers left
    whole, with the reason (``(node, reason)``); ``channels_removed`` counts channels over all
    producers.
    """

    model: onnx.ModelProto
    pruned: tuple[str, ...]
    kept: tuple[tuple[str, str], ...]
    channels_removed: int


@dataclass(slots=True)
class _Region:
    """The tensors that carry one producer's channels (with their channel axis, counted from
    the end) and the initializer slices that must follow them (``name -> axis``)."""

    channels: int
    axis_of: dict[str, int] = field(default_factory=dict)
    edits: dict[str, int] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)
    #: ``(node, tensor, axis)``: the other operand of a binary op, which must turn out to carry
    #: the same channels (``x * sigmoid(x)``), checked once the whole region is known.
    pending: list[tuple[str, str, int]] = field(default_factory=list)


class _Stop(Exception):
    """The channels reach something this pass does not follow (the reason is the message)."""


@dataclass(slots=True)
class _Model:
    """Look-ups over one graph, kept while it is pruned (shapes are of the unpruned graph:
    pruning changes channel counts, never ranks nor spatial sizes)."""

    graph: onnx.GraphProto
    inits: dict[str, onnx.TensorProto]
    consumers: dict[str, list[onnx.NodeProto]]
    uses: dict[str, int]
    ranks: dict[str, tuple[int, ...]]
    outputs: set[str]

    @classmethod
    def of(cls, model: onnx.ModelProto) -> _Model:
        g = model.graph
        consumers: dict[str, list[onnx.NodeProto]] = {}
        uses: dict[str, int] = {}
        for node in g.node:
            for name in node.input:
                consumers.setdefault(name, []).append(node)
                uses[name] = uses.get(name, 0) + 1
        inferred = shape_inference.infer_shapes(model, check_type=False, data_prop=True).graph
        shapes = {}
        for vi in [*inferred.value_info, *inferred.input, *inferred.output]:
            dims = vi.type.tensor_type.shape.dim
            shapes[vi.name] = tuple(d.dim_value for d in dims)
        inits = {t.name: t for t in g.initializer}
        return cls(g, inits, consumers, uses, shapes, {o.name for o in g.output})

    def weight(self, node: onnx.NodeProto, index: int) -> onnx.TensorProto | None:
        """The initializer at input ``index`` of ``node`` when only ``node`` uses it."""
        name = node.input[index] if len(node.input) > index else ""
        t = self.inits.get(name)
        return t if t is not None and self.uses.get(name) == 1 else None


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _producer(m: _Model, node: onnx.NodeProto) -> tuple[str, int, int] | None:
    """``(weight, output-channel axis of the weight, channel axis of the output from the end)``
    of a prunable producer, else None."""
    if node.op_type == "Conv":
        w = m.weight(node, 1)
        if w is None or _attr(node, "group", 1) != 1 or len(w.dims) < 3:
            return None
        return w.name, 0, -(len(w.dims) - 1)
    if node.op_type == "Gemm":
        w = m.weight(node, 1)
        return None if w is None else (w.name, 0 if _attr(node, "transB", 0) else 1, -1)
    if node.op_type == "MatMul":
        w = m.weight(node, 1)
        return None if w is None or len(w.dims) != 2 else (w.name, 1, -1)
    return None


def _bias_edit(m: _Model, node: onnx.NodeProto, index: int, region: _Region) -> None:
    """Prune a producer's or depthwise conv's 1-D bias at input ``index``, if it has one."""
    if len(node.input) > index and node.input[index]:
        b = m.weight(node, index)
        if b is None or len(b.dims) != 1:
            raise _Stop(f"{node.name}: bias {node.input[index]!r} is shared or not 1-D")
        region.edits[b.name] = 0


def _const_edit(m: _Model, node: onnx.NodeProto, name: str, axis: int, region: _Region) -> None:
    """The other operand of an elementwise op: a constant, per-channel (pruned) or broadcast
    (kept), or a tensor that must carry the same channels (checked at the end)."""
    t = m.inits.get(name)
    if t is None:
        region.pending.append((node.name, name, axis))
        return
    dims = list(t.dims)
    at = len(dims) + axis  # the channel axis, right-aligned as broadcasting does
    others = [d for i, d in enumerate(dims) if i != at]
    if any(d != 1 for d in others):
        raise _Stop(f"{node.name}: constant {name!r} is not per-channel")
    if 0 <= at and dims[at] == region.channels:
        if m.uses.get(name) != 1:
            raise _Stop(f"{node.name}: per-channel constant {name!r} is shared")
        region.edits[name] = at
    elif 0 <= at and dims[at] != 1:
        raise _Stop(f"{node.name}: constant {name!r} does not broadcast over the channels")


def _sink(m: _Model, node: onnx.NodeProto, tensor: str, axis: int, region: _Region) -> bool:
    """Prune the input channels of a conv or matmul that reads ``tensor``; False if it is none."""
    if node.input[0] != tensor or tensor in node.input[1:]:
        return False
    w = m.weight(node, 1)
    if node.op_type == "Conv" and w is not None and _attr(node, "group", 1) == 1 and axis == -(len(w.dims) - 1):
        region.edits[w.name] = 1
        return True
    if node.op_type == "MatMul" and w is not None and len(w.dims) == 2 and axis == -1:
        region.edits[w.name] = 0
        return True
    if node.op_type == "Gemm" and w is not None and axis == -1 and not _attr(node, "transA", 0):
        region.edits[w.name] = 1 if _attr(node, "transB", 0) else 0
        return True
    return False


def _follow(m: _Model, node: onnx.NodeProto, tensor: str, axis: int, region: _Region) -> tuple[str, int] | None:
    """What ``node`` does with the channels of ``tensor``: the output that carries them on and
    their axis there, or None when ``node`` is a sink. Raises :class:`_Stop` otherwise."""
    op = node.op_type
    if _sink(m, node, tensor, axis, region):
        return None
    if op == "Conv" and node.input[0] == tensor:  # depthwise: one filter per channel
        w = m.weight(node, 1)
        if w is None or _attr(node, "group", 1) != region.channels or w.dims[0] != region.channels or w.dims[1] != 1:
            raise _Stop(f"{node.name}: a grouped conv that is not depthwise")
        region.edits[w.name] = 0
        _bias_edit(m, node, 2, region)
        return node.output[0], axis
    if op in UNARY_PASS_THROUGH and node.input[0] == tensor:
        return node.output[0], axis
    if op == "BatchNormalization" and node.input[0] == tensor:
        for i in range(1, 5):
            _bias_edit(m, node, i, region)
        return node.output[0], axis
    if op == "Flatten" and node.input[0] == tensor:
        shape = m.ranks.get(tensor, ())
        if shape and all(d == 1 for d in shape[len(shape) + axis + 1 :]) and _attr(node, "axis", 1) == len(shape) + axis:
            return node.output[0], -1  # (N, C, 1, 1) -> (N, C)
        raise _Stop(f"{node.name}: Flatten mixes the channels with other axes")
    if op in BINARY_PASS_THROUGH:
        for name in node.input:
            if name != tensor and region.axis_of.get(name) != axis:
                _const_edit(m, node, name, axis, region)
        return node.output[0], axis
    raise _Stop(f"{node.name}: {op} is not followed")


def _region(m: _Model, node: onnx.NodeProto) -> _Region:
    """The channels of producer ``node``: every tensor that carries them and every edit."""
    spec = _producer(m, node)
    assert spec is not None
    w_name, w_axis, out_axis = spec
    region = _Region(channels=int(m.inits[w_name].dims[w_axis]))
    region.edits[w_name] = w_axis
    _bias_edit(m, node, 2, region)
    todo = [node.output[0]]
    region.axis_of[node.output[0]] = out_axis
    while todo:
        tensor = todo.pop()
        if tensor in m.outputs:
            raise _Stop(f"{node.name}: its channels reach the graph output {tensor!r}")
        for consumer in m.consumers.get(tensor, []):
            key = f"{consumer.name}:{tensor}"
            if key in region.visited:
                continue
            region.visited.add(key)
            carried = _follow(m, consumer, tensor, region.axis_of[tensor], region)
            if carried is not None and carried[0] not in region.axis_of:
                region.axis_of[carried[0]] = carried[1]
                todo.append(carried[0])
    for where, other, axis in region.pending:
        if region.axis_of.get(other) != axis:
            raise _Stop(f"{where}: adds or multiplies another branch ({other!r})")
    return region


def _keep_indices(t: onnx.TensorProto, axis: int, keep: int) -> np.ndarray:
    """The channels to keep: the ``keep`` largest by L1 norm when ``t`` holds data, else the
    first ``keep`` (by index), in ascending order either way."""
    if t.data_location == onnx.TensorProto.EXTERNAL or not _has_data(t):
        return np.arange(keep)
    w = numpy_helper.to_array(t)
    norms = np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)).sum(axis=1)
    order = np.argsort(-norms, kind="stable")
    return np.sort(order[:keep])


def _has_data(t: onnx.TensorProto) -> bool:
    return bool(
        t.raw_data or t.float_data or t.int32_data or t.int64_data or t.double_data or t.uint64_data
    )


def _take(t: onnx.TensorProto, axis: int, idx: np.ndarray) -> None:
    """Keep the slices ``idx`` of ``t`` along ``axis``, in place (only dims for a weightless one)."""
    if t.data_location == onnx.TensorProto.EXTERNAL or not _has_data(t):
        t.dims[axis] = len(idx)
        for entry in list(t.external_data):
            if entry.key in ("length", "checksum"):
                t.external_data.remove(entry)
        return
    arr = np.take(numpy_helper.to_array(t), idx, axis=axis)
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(arr), t.name))


def _producers(m: _Model) -> Iterable[onnx.NodeProto]:
    return [n for n in m.graph.node if _producer(m, n) is not None]


def prune_channels(model: onnx.ModelProto, fraction: float) -> PruneResult:
    """Remove ``floor(fraction * C)`` output channels of every prunable producer (see the module).

    Parameters
    ----------
    model
        The model to prune (not changed; a pruned copy is returned).
    fraction
        In [0, 1): the share of each producer's output channels removed (at least one is kept).

    Returns
    -------
    PruneResult
        The pruned model (shapes of intermediate tensors dropped, to be inferred again), which
        producers were pruned and which kept, and the number of channels removed.
    """
    if not 0.0 <= fraction < 1.0 or math.isnan(fraction):
        raise PruneError(f"prune fraction {fraction!r}: expected a number in [0, 1)")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for i, node in enumerate(out.graph.node):
        node.name = node.name or f"{node.op_type}_{i}"
    if fraction == 0.0:
        return PruneResult(out, (), (), 0)
    m = _Model.of(out)
    pruned: list[str] = []
    kept: list[tuple[str, str]] = []
    removed = 0
    for node in _producers(m):
        try:
            region = _region(m, node)
        except _Stop as why:
            kept.append((node.name, str(why)))
            continue
        keep = max(1, region.channels - math.floor(fraction * region.channels))
        if keep == region.channels:
            kept.append((node.name, f"{region.channels} channels: none to remove"))
            continue
        w_name = next(iter(region.edits))
        idx = _keep_indices(m.inits[w_name], region.edits[w_name], keep)
        for name, axis in region.edits.items():
            _take(m.inits[name], axis, idx)
        for name in region.axis_of:  # depthwise groups follow the channels
            for consumer in m.consumers.get(name, []):
                _set_group(consumer, region.channels, keep)
        pruned.append(node.name)
        removed += region.channels - keep
    del out.graph.value_info[:]
    return PruneResult(out, tuple(pruned), tuple(kept), removed)


def _set_group(node: onnx.NodeProto, before: int, after: int) -> None:
    if node.op_type != "Conv":
        return
    for a in node.attribute:
        if a.name == "group" and a.i == before and before > 1:
            a.i = after
