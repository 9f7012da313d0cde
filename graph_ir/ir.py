"""Graph IR: tensors, ops and the model graph (a networkx DiGraph of ops).

Nodes of :attr:`ModelGraph.g` are ONNX node names with the attribute ``op`` (an :class:`Op`);
an edge ``u -> v`` carries ``tensors`` (names of the tensors ``u`` produces that ``v`` reads).

>>> t = Tensor("x", (1, 3, 4, 4), "float32")
>>> t.elements, t.nbytes
(48, 192)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import networkx as nx

from graph_ir.categories import Category

if TYPE_CHECKING:
    from graph_ir.dynamic import AssumedDim

__all__ = [
    "DTYPE_BYTES",
    "FLOAT_DTYPES",
    "PRECISION_BYTES",
    "FlagAdvice",
    "ModelError",
    "ModelGraph",
    "Op",
    "Tensor",
    "add_data_edge",
    "constant_tensors",
    "deployed_bytes",
]

#: Bytes per element of the ONNX element types hwsim meets (numpy names).
DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {
        "float32": 4, "float16": 2, "bfloat16": 2, "float64": 8,
        "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
        "int64": 8, "uint64": 8, "bool": 1, "int4": 1, "uint4": 1,
        "float8e4m3fn": 1, "float8e5m2": 1, "string": 8, "complex64": 8, "complex128": 16,
    }
)  # fmt: skip
FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
#: Bytes per element at a deployment precision (int4 packs two per byte).
PRECISION_BYTES: Mapping[str, float] = MappingProxyType(
    {"int4": 0.5, "int8": 1.0, "fp16": 2.0, "bf16": 2.0, "fp32": 4.0}
)


class ModelError(ValueError):
    """An ONNX model cannot be read or understood (bad input, exit code 2)."""


class FlagAdvice(ModelError):
    """A refusal that a command-line flag lifts: ``str()`` is ``problem; advice``; a command
    without ``flag`` (``--input-shape`` or ``--assume``) says what it can instead from
    :attr:`problem` alone, not by reading the message.

    >>> e = FlagAdvice("m.onnx: input 'x' has a dynamic shape [N]", "--input-shape", "pin it with --input-shape x=1")
    >>> str(e), e.flag
    ("m.onnx: input 'x' has a dynamic shape [N]; pin it with --input-shape x=1", '--input-shape')
    """

    def __init__(self, problem: str, flag: str, advice: str) -> None:
        super().__init__(f"{problem}; {advice}")
        self.problem, self.flag, self.advice = problem, flag, advice


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor with a fully static shape."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    is_weight: bool = False

    @property
    def elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes in the model's own dtype."""
        return self.elements * DTYPE_BYTES.get(self.dtype, 4)


def deployed_bytes(tensor: Tensor, precision: str | None) -> int:
    """Bytes of ``tensor`` when floats are deployed at ``precision`` (None: the model's dtype).

    >>> deployed_bytes(Tensor("w", (64, 64), "float32"), "int8")
    4096
    >>> deployed_bytes(Tensor("i", (10,), "int64"), "int8")
    80
    """
    if precision is None or tensor.dtype not in FLOAT_DTYPES:
        return tensor.nbytes
    return int(-(-tensor.elements * PRECISION_BYTES[precision] // 1))


def add_data_edge(g: nx.DiGraph, src: str, dst: str, tensor: str) -> None:
    """Record that ``dst`` reads ``tensor`` produced by ``src`` (each tensor once per edge).

    >>> g = nx.DiGraph()
    >>> for _ in range(2):
    ...     add_data_edge(g, "a", "b", "t")
    >>> g.edges["a", "b"]["tensors"]
    ('t',)
    """
    data = g.get_edge_data(src, dst)
    if data is not None:
        if tensor not in data["tensors"]:
            data["tensors"] += (tensor,)
    else:
        g.add_edge(src, dst, tensors=(tensor,))


@dataclass(frozen=True, slots=True)
class Op:
    """One ONNX node with what it costs in the abstract.

    ``category`` tells cost models which handler family applies: ``conv``, ``matmul``,
    ``elementwise``, ``activation``, ``pool``, ``reduce``, ``norm``, ``softmax``, ``data``
    (copies: Concat, Slice, Transpose, ...), ``layout`` (views: Reshape, Flatten; free),
    ``signal`` (DFT, STFT), ``rnn`` or ``unknown`` (no formula: costed as a memory copy);
    the list and what is known of each: :mod:`graph_ir.categories`.

    ``macs`` and ``flops`` are per run; ``repeat`` is how many times the op runs back to back
    (1, or a loop's trip count when its body is costed once and multiplied:
    :mod:`graph_ir.dynamic`); cost models multiply its cost by it.
    """

    name: str
    op_type: str
    category: Category
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    attrs: Mapping[str, object] = field(default_factory=dict)
    macs: int = 0
    flops: int = 0
    repeat: int = 1

    @property
    def activations(self) -> tuple[Tensor, ...]:
        """Inputs that are not weights."""
        return tuple(t for t in self.inputs if not t.is_weight)

    @property
    def weights(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.inputs if t.is_weight)

    def input_bytes(self, precision: str | None = None) -> int:
        return sum(deployed_bytes(t, precision) for t in self.activations)

    def weight_bytes(self, precision: str | None = None) -> int:
        return sum(deployed_bytes(t, precision) for t in self.weights)

    def output_bytes(self, precision: str | None = None) -> int:
        return sum(deployed_bytes(t, precision) for t in self.outputs)


@dataclass(frozen=True, slots=True)
class ModelGraph:
    """A model as a DAG of ops.

    Attributes
    ----------
    g : networkx.DiGraph
        Nodes are op names with attribute ``op``; edges carry ``tensors`` (tuple of names).
    inputs, outputs : tuple of Tensor
        Graph inputs (not weights) and graph outputs.
    producer : mapping
        Tensor name -> name of the op producing it (graph inputs and weights absent).
    order : tuple of str
        Op names in a deterministic topological order (the ONNX file's order where valid).
    assumed : tuple of AssumedDim
        Data-dependent dimensions and loop trip counts given a value at import
        (:mod:`graph_ir.dynamic`); empty for a model whose shapes are all static.
    warnings : tuple of str
        What import decided that a user should know (a slower If branch taken, a loop kept).
    """

    name: str
    g: nx.DiGraph
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    producer: Mapping[str, str]
    order: tuple[str, ...]
    assumed: tuple[AssumedDim, ...] = ()
    warnings: tuple[str, ...] = ()
    _ops: dict[str, Op] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Index of the ops by name: `op()` is called a few times per op by every stage, and a
        # plain dict is several times faster than networkx's node views (the graph is not
        # mutated once a ModelGraph wraps it).
        object.__setattr__(self, "_ops", {n: d["op"] for n, d in self.g.nodes(data=True)})

    def op(self, name: str) -> Op:
        return self._ops[name]

    def ops(self) -> list[Op]:
        """Ops in a deterministic topological order."""
        ops = self._ops
        return [ops[n] for n in self.order]

    @property
    def unknown_ops(self) -> tuple[str, ...]:
        """Sorted op types that have no cost formula."""
        return tuple(sorted({o.op_type for o in self.ops() if o.category == "unknown"}))

    @property
    def total_macs(self) -> int:
        """MACs of one inference (an op run ``repeat`` times counts that many times)."""
        return sum(o.macs * o.repeat for o in self.ops())

    def __len__(self) -> int:
        return int(self.g.number_of_nodes())


def constant_tensors(graph: ModelGraph) -> set[str]:
    """Names of the tensors of ``graph`` that are weights or computed from weights alone (a QDQ
    model's dequantized weights, which onnxruntime folds or fuses into the integer kernel, a
    transposed or reshaped constant): every op whose inputs are all such makes its outputs such."""
    const = {t.name for op in graph.ops() for t in op.weights}
    for op in graph.ops():
        if all(t.name in const for t in op.inputs):
            const.update(t.name for t in op.outputs)
    return const
