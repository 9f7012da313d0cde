"""Quantization binding: which dtype and granularity each op of a model is deployed in.

A binding file is YAML::

    default: int8               # every op no rule names (int4, int8, fp16, bf16, fp32)
    granularity: per-channel    # every op no rule names (per-tensor or per-channel)
    rules:                      # in order: a later rule overrides an earlier one
      - name: fc3               # exact node name
        dtype: fp32
      - pattern: "/model.2/*"   # glob over node names (fnmatch)
        dtype: int4
      - regex: "^fc[12]$"       # regular expression over node names (re.search)
        op_type: Gemm           # and/or the op type; every selector given must match
        granularity: per-tensor

A rule gives a ``dtype``, a ``granularity`` or both; what it leaves out keeps the value of the
rules before it (else the defaults). A rule that matches no op of the model is an error, so a
misspelled node name never passes silently. Granularity concerns weights: per-channel int8 and
int4 weights carry one scale and zero point per output channel (:mod:`cost_models.quant`).

:func:`insert_conversions` adds one conversion op per (tensor, dtype) wherever an op reads a
float tensor produced (or entering the graph) in another dtype: ``QuantizeLinear`` into an
integer dtype, ``DequantizeLinear`` from an integer dtype to a float one, ``Cast`` between floats.

>>> b = QuantBinding.model_validate({"default": "int8", "rules": [{"name": "fc3", "dtype": "fp32"}]})
>>> {k: v.dtype for k, v in resolve(b, [("fc1", "Gemm"), ("fc3", "Gemm")], "b.yaml").items()}
{'fc1': 'int8', 'fc3': 'fp32'}
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from graph_ir.files import field_path, read_yaml_mapping
from graph_ir.ir import FLOAT_DTYPES, ModelGraph, Op, Tensor, add_data_edge
from graph_ir.op_metrics import metrics

__all__ = [
    "DTYPES",
    "GRANULARITIES",
    "BindingError",
    "Conversion",
    "OpQuant",
    "QuantBinding",
    "ResolvedBinding",
    "Rule",
    "conversion_op_type",
    "insert_conversions",
    "load_binding",
    "resolve",
    "resolve_graph",
    "wider",
]

Dtype = Literal["int4", "int8", "fp16", "bf16", "fp32"]
Granularity = Literal["per-tensor", "per-channel"]
#: The dtypes a binding may name, narrowest first.
DTYPES: tuple[str, ...] = ("int4", "int8", "fp16", "bf16", "fp32")
GRANULARITIES: tuple[str, ...] = ("per-tensor", "per-channel")
_INT_DTYPES = frozenset({"int4", "int8"})
_WIDTH_BITS = {"int4": 4, "int8": 8, "fp16": 16, "bf16": 16, "fp32": 32}


class BindingError(ValueError):
    """A binding file that cannot be read, or that names something the model lacks (exit 2)."""


class Rule(BaseModel):
    """One rule: selectors (``name``, ``pattern``, ``regex``, ``op_type``; all given must match)
    and what it sets (``dtype``, ``granularity``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = None
    pattern: str | None = None
    regex: str | None = None
    op_type: str | None = None
    dtype: Dtype | None = None
    granularity: Granularity | None = None

    @model_validator(mode="after")
    def _complete(self) -> Rule:
        if self.name is None and self.pattern is None and self.regex is None and self.op_type is None:
            raise ValueError("a rule needs a selector: name, pattern, regex or op_type")
        if self.dtype is None and self.granularity is None:
            raise ValueError("a rule sets nothing: give dtype and/or granularity")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex {self.regex!r} does not compile: {exc}") from None
        return self

    def matches(self, name: str, op_type: str) -> bool:
        """Whether every selector of the rule matches the node ``name`` of type ``op_type``."""
        return (
            (self.name is None or name == self.name)
            and (self.pattern is None or fnmatch.fnmatchcase(name, self.pattern))
            and (self.regex is None or re.search(self.regex, name) is not None)
            and (self.op_type is None or op_type == self.op_type)
        )

    def describe(self) -> str:
        """The rule's selectors as written, e.g. ``name 'fc3'``."""
        parts = [f"{k} {v!r}" for k, v in (("name", self.name), ("pattern", self.pattern),
                                            ("regex", self.regex), ("op_type", self.op_type)) if v is not None]  # fmt: skip
        return ", ".join(parts)


class QuantBinding(BaseModel):
    """A whole binding file: defaults and rules in order (a later rule overrides)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: Dtype = "int8"
    granularity: Granularity = "per-tensor"
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True, slots=True)
class OpQuant:
    """The dtype and the weight granularity one op is deployed in."""

    dtype: str
    granularity: str


@dataclass(frozen=True, slots=True)
class ResolvedBinding:
    """A binding applied to one model: its file, default dtype, and every op's dtype and
    granularity (``dtypes`` and ``granularity`` map op names)."""

    source: str
    default: str
    dtypes: Mapping[str, str]
    granularity: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Conversion:
    """A conversion op inserted by :func:`insert_conversions`: ``tensor`` from ``src_dtype`` to
    ``dst_dtype``, read by ``consumers`` (op names)."""

    op: str
    op_type: str
    tensor: str
    src_dtype: str
    dst_dtype: str
    consumers: tuple[str, ...]



def load_binding(path: str | Path) -> QuantBinding:
    """Read and validate a binding file.

    Raises
    ------
    BindingError
        One line naming the file and the rule or field at fault.
    """
    path = Path(path)
    data = read_yaml_mapping(path, BindingError, "default, granularity and rules")
    try:
        return QuantBinding.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BindingError(f"{path}: {field_path(tuple(err['loc']))}: {err['msg']}") from None


def resolve(binding: QuantBinding, ops: Sequence[tuple[str, str]], source: str) -> dict[str, OpQuant]:
    """``{op name: OpQuant}`` for every ``(name, op_type)`` in ``ops``.

    Raises
    ------
    BindingError
        When a rule matches no op (``source`` names the binding file in the message).
    """
    dtype = {n: str(binding.default) for n, _ in ops}
    gran = {n: str(binding.granularity) for n, _ in ops}
    for i, rule in enumerate(binding.rules):
        hit = [n for n, t in ops if rule.matches(n, t)]
        if not hit:
            raise BindingError(f"{source}: rules[{i}] ({rule.describe()}) matches no op of the model")
        for n in hit:
            if rule.dtype is not None:
                dtype[n] = rule.dtype
            if rule.granularity is not None:
                gran[n] = rule.granularity
    return {n: OpQuant(dtype[n], gran[n]) for n, _ in ops}


def resolve_graph(binding: QuantBinding, graph: ModelGraph, source: str) -> ResolvedBinding:
    """:func:`resolve` over the ops of ``graph`` (see there for the errors)."""
    ops = resolve(binding, [(o.name, o.op_type) for o in graph.ops()], source)
    return ResolvedBinding(
        source, str(binding.default), {n: q.dtype for n, q in ops.items()}, {n: q.granularity for n, q in ops.items()}
    )


def conversion_op_type(src: str, dst: str) -> str:
    """The ONNX op that converts a tensor from dtype ``src`` to ``dst``.

    >>> conversion_op_type("fp32", "int8"), conversion_op_type("int8", "fp16"), conversion_op_type("fp16", "fp32")
    ('QuantizeLinear', 'DequantizeLinear', 'Cast')
    """
    if dst in _INT_DTYPES:
        return "QuantizeLinear"
    return "DequantizeLinear" if src in _INT_DTYPES else "Cast"


def wider(a: str, b: str) -> str:
    """The wider of two dtypes (the first on a tie)."""
    return a if _WIDTH_BITS[a] >= _WIDTH_BITS[b] else b


def insert_conversions(
    graph: ModelGraph, dtypes: Mapping[str, str], default: str
) -> tuple[ModelGraph, tuple[Conversion, ...]]:
    """``graph`` with a conversion op before every op that reads a float tensor in another dtype
    than its producer's (graph inputs are in ``default``), and the conversions inserted.

    One conversion per (tensor, dtype): two readers of ``x`` in fp16 share one ``Cast``. The
    conversion's name is ``"<tensor>-><dtype>"``, its output tensor ``"<tensor>@<dtype>"``.
    """
    src_dtype = {t.name: default for t in graph.inputs}
    for op in graph.ops():
        for t in op.outputs:
            src_dtype[t.name] = dtypes[op.name]
    wanted: dict[tuple[str, str], list[str]] = {}
    tensors: dict[str, Tensor] = {}
    for op in graph.ops():
        for t in op.activations:
            src = src_dtype.get(t.name)
            if src is not None and t.dtype in FLOAT_DTYPES and src != dtypes[op.name]:
                readers = wanted.setdefault((t.name, dtypes[op.name]), [])
                if op.name not in readers:
                    readers.append(op.name)
                tensors[t.name] = t
    if not wanted:
        return graph, ()
    conversions = tuple(
        Conversion(f"{t}->{d}", conversion_op_type(src_dtype[t], d), t, src_dtype[t], d, tuple(readers))
        for (t, d), readers in wanted.items()
    )
    return _rewired(graph, dtypes, conversions, tensors), conversions


def _rewired(
    graph: ModelGraph, dtypes: Mapping[str, str], conversions: Sequence[Conversion], tensors: Mapping[str, Tensor]
) -> ModelGraph:
    """A new ModelGraph with ``conversions`` inserted and their readers reading them."""
    renamed: dict[tuple[str, str], str] = {}  # (reader, tensor) -> converted tensor name
    new_ops: dict[str, Op] = {}
    for c in conversions:
        src = tensors[c.tensor]
        out = Tensor(f"{c.tensor}@{c.dst_dtype}", src.shape, src.dtype)
        m = metrics(c.op_type, [src], [out], {})
        new_ops[c.op] = Op(c.op, c.op_type, m.category, (src,), (out,), {}, m.macs, m.flops)
        for r in c.consumers:
            renamed[(r, c.tensor)] = out.name
    g = nx.DiGraph()
    producer = dict(graph.producer)
    order: list[str] = []
    for name in graph.order:
        op = graph.op(name)
        for c in conversions:
            if name in c.consumers and c.op not in g:
                g.add_node(c.op, op=new_ops[c.op])
                order.append(c.op)
                producer[new_ops[c.op].outputs[0].name] = c.op
                if c.tensor in graph.producer:
                    add_data_edge(g, graph.producer[c.tensor], c.op, c.tensor)
        inputs = tuple(
            Tensor(renamed[(name, t.name)], t.shape, t.dtype) if (name, t.name) in renamed else t for t in op.inputs
        )
        new = Op(op.name, op.op_type, op.category, inputs, op.outputs, op.attrs, op.macs, op.flops)
        g.add_node(name, op=new)
        order.append(name)
        for t in new.activations:
            if t.name in producer:
                add_data_edge(g, producer[t.name], name, t.name)
    for u, v in graph.g.edges:  # control or other edges the data edges above do not cover
        if not g.has_edge(u, v) and not any((v, t) in renamed for t in graph.g.edges[u, v]["tensors"]):
            g.add_edge(u, v, **graph.g.edges[u, v])
    return ModelGraph(
        graph.name, g, graph.inputs, graph.outputs, producer, tuple(order), graph.assumed, graph.warnings
    )
