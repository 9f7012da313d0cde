"""Values for a model that has none: seeded random weights for absent initializers, and random
inputs for its graph inputs.

The bundled models (``examples/models``) are *weightless*: their initializers are external data
whose file is absent, so the structure and the byte counts are real but there is nothing to run.
:func:`fill_absent_weights` gives each absent float initializer seeded values in a range an
initialized network would have (conv and matmul weights scaled by ``1/sqrt(fan_in)``, batch-norm
variances and scales positive near 1), so that a run keeps its activations of order one through
many layers (neither vanishing below a comparison's tolerance nor overflowing).
:func:`random_inputs` makes feeds for the graph inputs. Both are the one home of these values:
``hwsim validate`` measures with them and :mod:`graph_ir.rewrites.check` compares with them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["MaterializeError", "absent_tensor", "fill_absent_weights", "is_absent", "random_inputs"]


class MaterializeError(ValueError):
    """A model input that cannot be given values (a dynamic dimension without a pin)."""


#: (op_type, input index) -> (low, high) of a uniform draw: the positive parameters of norms.
_POSITIVE_NEAR_ONE: dict[tuple[str, int], tuple[float, float]] = {
    ("BatchNormalization", 1): (0.5, 1.5),  # scale
    ("BatchNormalization", 4): (0.5, 1.5),  # running variance
    ("InstanceNormalization", 1): (0.5, 1.5),
    ("LayerNormalization", 1): (0.5, 1.5),
}
#: Ops whose input 1 is a weight scaled by ``1/sqrt(fan_in)``.
_WEIGHTED = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM", "GRU", "RNN"})


def is_absent(tensor: TensorProto, base_dir: str | Path | None = None) -> bool:
    """Whether ``tensor`` is external data whose file is not there (relative to ``base_dir``;
    ``None``: never looked for)."""
    if tensor.data_location != TensorProto.EXTERNAL:
        return False
    if base_dir is None:
        return True
    where = {e.key: e.value for e in tensor.external_data}.get("location", "")
    return not (where and (Path(base_dir) / where).exists())


def absent_tensor(name: str, shape: Sequence[int], dtype: int, location: str) -> TensorProto:
    """An initializer of ``shape`` and ``dtype`` whose data is external at ``location`` (a file
    meant not to exist), with its byte length recorded, like those of a weightless file."""
    t = TensorProto(name=name, data_type=dtype, dims=[int(d) for d in shape])
    t.data_location = TensorProto.EXTERNAL
    nbytes = math.prod(t.dims) * np.dtype(helper.tensor_dtype_to_np_dtype(dtype)).itemsize
    for key, value in (("location", location), ("offset", "0"), ("length", str(nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def fill_absent_weights(
    model: onnx.ModelProto, base_dir: str | Path | None = None, seed: int = 0, random: bool = True
) -> onnx.ModelProto:
    """A copy of ``model`` whose external initializers have values: read from their file where it
    exists under ``base_dir``, else (``random``) seeded random values of a realistic range (see
    the module docstring; non-float absent initializers get zeros) or (not ``random``) left
    absent.

    >>> from onnx import helper
    >>> w = absent_tensor("w", (4, 4), TensorProto.FLOAT, "absent.bin")
    >>> g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    >>> filled = fill_absent_weights(helper.make_model(g))
    >>> numpy_helper.to_array(filled.graph.initializer[0]).shape
    (4, 4)
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    rng = np.random.default_rng(seed)
    roles = _roles(out.graph)
    for i, t in enumerate(out.graph.initializer):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        if base_dir is not None and not is_absent(t, base_dir):
            onnx.external_data_helper.load_external_data_for_tensor(t, str(base_dir))
            t.data_location = TensorProto.DEFAULT
            del t.external_data[:]
            continue
        if not random:
            continue
        arr = _random_values(t, roles.get(t.name), rng)
        out.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr, t.name))
    return out


def _roles(graph: onnx.GraphProto) -> dict[str, tuple[str, int, onnx.NodeProto]]:
    """Each tensor's first use: (op_type, input index, node)."""
    roles: dict[str, tuple[str, int, onnx.NodeProto]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            roles.setdefault(name, (node.op_type, k, node))
    return roles


def _random_values(t: TensorProto, role: tuple[str, int, onnx.NodeProto] | None, rng: np.random.Generator) -> np.ndarray:
    dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
    shape = tuple(int(d) for d in t.dims)
    if not np.issubdtype(dtype, np.floating):
        return np.zeros(shape, dtype)
    if role is not None and role[:2] in _POSITIVE_NEAR_ONE:
        low, high = _POSITIVE_NEAR_ONE[role[:2]]
        return rng.uniform(low, high, size=shape).astype(dtype)
    if role is not None and role[0] in _WEIGHTED and role[1] >= 1 and len(shape) >= 2:
        return (rng.standard_normal(shape, dtype=np.float32) / math.sqrt(_fan_in(shape, role))).astype(dtype)
    return (rng.standard_normal(shape, dtype=np.float32) * 0.1).astype(dtype)


def _fan_in(shape: tuple[int, ...], role: tuple[str, int, onnx.NodeProto]) -> int:
    """How many inputs each output of a weighted op sums over (its weight's reduction size)."""
    op, _, node = role
    if op == "Conv":
        return max(1, math.prod(shape[1:]))
    if op == "ConvTranspose":
        return max(1, shape[0] * math.prod(shape[2:]))
    if op == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return max(1, shape[1] if trans_b else shape[0])
    if op in ("LSTM", "GRU", "RNN"):
        return max(1, shape[-1])
    return max(1, shape[-2])


def random_inputs(
    model: onnx.ModelProto, seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None
) -> dict[str, np.ndarray]:
    """Random feeds for every graph input that is not an initializer.

    Floats are uniform in [-1, 1); an integer input that indexes the rows of a table (a token or
    item id into an embedding: :func:`_index_limits`) gets ids spread over all of them, as real
    ids are, and any other integer input small non-negative values (under 100); ``*mask*`` inputs get ones, float
    ones too: an attention mask of random floats turns ``(1 - m) * -1e4`` into scores whose
    exponentials underflow, and onnxruntime's Softmax then runs on denormals at 4-6 ns per
    element instead of 0.25-0.4 (measured on the CI Xeon), a cost no real mask of ones pays.

    Raises
    ------
    MaterializeError
        An input with a dynamic dimension that ``shapes`` does not pin.
    """
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    limits = _index_limits(model.graph)
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if shapes and vi.name in shapes:
            shape = [int(d) for d in shapes[vi.name]]
        else:
            dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim]
            if any(d <= 0 for d in dims):
                raise MaterializeError(f"input {vi.name!r} has a dynamic dimension; pin it with --input-shape")
            shape = dims
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if "mask" in vi.name or dtype == np.bool_:
            arr = np.ones(shape, dtype)
        elif np.issubdtype(dtype, np.integer):
            arr = rng.integers(0, limits.get(vi.name, 100), size=shape).astype(dtype)
        else:
            arr = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        feeds[vi.name] = arr
    return feeds


#: Ops that index an initializer table with an input: (table input, indices input) pairs;
#: onnxruntime's ``EmbedLayerNormalization`` indexes its word and its segment table.
_INDEXING = {("", "Gather"): ((0, 1),), ("com.microsoft", "EmbedLayerNormalization"): ((2, 0), (4, 1))}


def _index_limits(graph: onnx.GraphProto) -> dict[str, int]:
    """For each graph input that indexes an initializer's rows directly (a token id into an
    embedding, a segment id into a table of 2), the smallest such table's row count."""
    rows = {t.name: int(t.dims[0]) for t in graph.initializer if len(t.dims) > 0}
    limits: dict[str, int] = {}
    for node in graph.node:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        for table, idx in _INDEXING.get((domain, node.op_type), ()):
            if len(node.input) <= max(table, idx) or node.input[table] not in rows:
                continue
            if node.op_type == "Gather" and any(a.name == "axis" and a.i != 0 for a in node.attribute):
                continue
            name = node.input[idx]
            limits[name] = max(1, min(limits.get(name, rows[node.input[table]]), rows[node.input[table]]))
    return limits
