"""Static quantization with onnxruntime: a QDQ model from a float model, calibration data and a
quantization binding (:mod:`graph_ir.quant_binding`).

The binding decides, per node: int8 or int4 nodes are quantized (weights QInt8 / QInt4,
activations QUInt8 / QUInt4), per-channel or per-tensor; nodes bound to fp32, fp16 or bf16 are
left out (``nodes_to_exclude``) and stay fp32 in the file: onnxruntime's static quantizer does
not cast them, so accuracy is measured at fp32 for them while ``hwsim run --quant`` costs them
in their bound dtype.

int4 is QDQ with 4-bit ranges (``QuantType.QInt4``; onnxruntime puts Q/DQ of 4-bit types in the
``com.microsoft`` domain before opset 21): onnxruntime dequantizes and computes in float, so
int4 is simulated numerically, exactly rounded to 16 levels, not run by an int4 kernel. Its
weight-only MatMulNBits quantizer is not used: :func:`int4_mode` says which is available.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from graph_ir.quant_binding import OpQuant, QuantBinding, resolve

__all__ = [
    "QUANTIZABLE",
    "DataError",
    "OnnxruntimeRefusal",
    "QuantizeResult",
    "arrays_digest",
    "batches",
    "check_weights",
    "int4_mode",
    "load_data",
    "load_weighted",
    "open_session",
    "quantizable_nodes",
    "quantize_model",
]

#: Op types whose weights are quantized (the layers of a sensitivity study).
QUANTIZABLE = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
_INT = {"int8": ("QInt8", "QUInt8"), "int4": ("QInt4", "QUInt4")}


class DataError(ValueError):
    """A model without weights, or data that does not fit the model (bad input, exit 2)."""


class OnnxruntimeRefusal(DataError):
    """onnxruntime refused a model: its quantizer failed on it, or no session can be created of it
    (a model the quantizer wrote included; exit 2). ``str()`` is ``source: reason``; ``reason``
    alone is what a row about the model (a sensitivity layer) says."""

    def __init__(self, source: str | Path, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.reason = reason


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` of a third-party exception, for a one-line refusal."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def open_session(model: onnx.ModelProto | bytes, source: str | Path, what: str = "the model") -> Any:
    """An onnxruntime ``InferenceSession`` (CPU) of ``model``, read from ``source``; ``what`` says
    which model the refusal is about.

    Raises
    ------
    OnnxruntimeRefusal
        Naming ``source`` and the first line of onnxruntime's complaint when it cannot load the
        model (an op without a kernel for a type, a type an opset does not allow).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    data = model if isinstance(model, bytes) else model.SerializeToString()
    try:
        return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own classes for a model it refuses
        raise OnnxruntimeRefusal(source, f"onnxruntime cannot load {what} ({_first_line(exc)})") from None


@dataclass(frozen=True, slots=True)
class QuantizeResult:
    """What :func:`quantize_model` did: nodes per dtype, nodes left in float, the int4 note."""

    out: Path
    nodes_per_dtype: Mapping[str, tuple[str, ...]]
    excluded: tuple[str, ...]
    int4_note: str


def int4_mode() -> str:
    """How int4 is produced with the installed onnxruntime, in one sentence."""
    import onnxruntime
    from onnxruntime.quantization import QuantType

    if not hasattr(QuantType, "QInt4"):
        return f"none: onnxruntime {onnxruntime.__version__} has no QuantType.QInt4; int4 is costed only"
    try:
        importlib.import_module("onnxruntime.quantization.matmul_nbits_quantizer")
    except ImportError as exc:
        nbits = f"its MatMulNBits quantizer does not import ({exc})"
    else:
        nbits = "its MatMulNBits quantizer (weight-only) is available but not used"
    return (
        f"onnxruntime {onnxruntime.__version__}: int4 as QDQ with QInt4 weights and QUInt4 activations "
        f"(simulated: dequantized and computed in float); {nbits}"
    )


def check_weights(model: onnx.ModelProto, path: Path) -> None:
    """Refuse a model whose weights are absent (hwsim's weightless examples, a lost ``.bin``).

    Raises
    ------
    DataError
        Naming the file and the first initializer without data.
    """
    if not model.graph.initializer:
        raise DataError(f"{path}: the model has no weights (no initializers) to quantize or evaluate")
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            where = path.parent / info.get("location", "")
            if not where.is_file():
                raise DataError(
                    f"{path}: weightless model: initializer {t.name!r} lives in {info.get('location')!r}, "
                    "which does not exist"
                )


def load_weighted(path: str | Path) -> onnx.ModelProto:
    """Load an ONNX model with its weights, refusing a weightless one (see :func:`check_weights`).

    Its nodes carry hwsim's names (:func:`graph_ir.onnx_import.name_nodes`: a node's own name,
    else ``<op_type>_<index>``), the names ``hwsim run`` and a binding's rules use. External
    data stays on disk (see :func:`_with_external_data`).
    """
    from graph_ir.infer_guard import InferenceAborted, refuse_aborting
    from graph_ir.ir import ModelError
    from graph_ir.onnx_import import name_nodes

    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: file not found")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types for a bad file
        raise ModelError(f"{path}: not a valid ONNX file ({type(exc).__name__})") from None
    check_weights(model, path)
    try:  # onnxruntime's quantizer runs onnx's shape inference, which may abort the process
        refuse_aborting(model)
    except InferenceAborted as exc:
        raise ModelError(f"{path}: {exc}") from None
    name_nodes(model.graph)
    return model


def _with_external_data(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """``model`` (from :func:`load_weighted` of ``path``) with its external weights read in."""
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        onnx.load_external_data_for_model(model, str(path.parent))
    return model


def _input_specs(model: onnx.ModelProto) -> list[tuple[str, list[int | None]]]:
    inits = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        out.append((vi.name, dims))
    return out


def _input_dtype(model: onnx.ModelProto, name: str) -> np.dtype | None:
    """The numpy dtype of graph input ``name`` (None when the file does not say)."""
    for vi in model.graph.input:
        if vi.name == name and vi.type.tensor_type.elem_type:
            return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
    return None


def load_data(path: str | Path, model: onnx.ModelProto, model_path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, checked against the model's inputs.

    Each input of the model is an array keyed by its name whose first axis counts samples (at
    least one); the other axes match the input's, and its dtype is the input's (no silent cast).
    A ``labels`` array (one integer per sample) may be present.

    Raises
    ------
    DataError
        Naming the file (not an .npz, cut short) or the array that is missing or has the wrong
        shape, dtype or no samples.
    """
    path = Path(path)
    arrays = read_npz(path)
    n = None
    for name, dims in _input_specs(model):
        if name not in arrays:
            raise DataError(f"{path}: no array {name!r} for input {name!r} of {model_path} (arrays: {sorted(arrays)})")
        a = arrays[name]
        want = [None, *dims[1:]] if dims else []
        if a.ndim != len(dims) or any(w is not None and w != s for w, s in zip(want, a.shape)):
            shown = "x".join("?" if d is None else str(d) for d in dims)
            raise DataError(
                f"{path}: array {name!r} has shape {'x'.join(map(str, a.shape))}, which does not fit "
                f"input {name!r} [{shown}] of {model_path} (first axis: samples)"
            )
        if a.dtype != (want_dtype := _input_dtype(model, name)) and want_dtype is not None:
            raise DataError(f"{path}: array {name!r} is {a.dtype}, input {name!r} of {model_path} takes {want_dtype}")
        if n is not None and a.shape[0] != n:
            raise DataError(f"{path}: array {name!r} has {a.shape[0]} samples, another input {n}")
        n = a.shape[0]
        if n == 0:
            raise DataError(f"{path}: array {name!r} has no samples (its first axis is 0)")
    if "labels" in arrays and n is not None and arrays["labels"].shape != (n,):
        raise DataError(f"{path}: 'labels' has shape {arrays['labels'].shape}, expected ({n},)")
    return arrays


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file (no pickles). An array whose header declares more bytes than
    its member holds is refused before anything is allocated for it.

    Raises
    ------
    DataError
        Naming the file: not a zip of ``.npy`` arrays, a member cut short, an object array.
    """
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise DataError(f"{path}: not an .npz file (a single .npy array)")
        with z:
            archive = z.zip
            assert archive is not None  # an open NpzFile holds its zip
            members = set(archive.namelist())
            for name in z.files:
                if f"{name}.npy" not in members:
                    raise DataError(f"{path}: member {name!r} is not a .npy array")
                _check_declared_size(path, archive, name)
            return {k: z[k] for k in z.files}
    except DataError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError) as exc:
        # NotImplementedError: a zip version or compression zipfile lacks; RuntimeError: an encrypted member
        raise DataError(f"{path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None


def _check_declared_size(path: Path, archive: zipfile.ZipFile, name: str) -> None:
    member = archive.getinfo(f"{name}.npy")
    with archive.open(member) as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
    declared = math.prod(shape) * dtype.itemsize
    if declared > member.file_size:
        raise DataError(f"{path}: array {name!r} declares {declared} bytes ({shape}, {dtype}) but holds {member.file_size}")


def batches(arrays: Mapping[str, np.ndarray], model: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
    """The model's feeds, one per batch: the batch size is the input's first dimension when
    static (1 for the shipped model), else every sample at once."""
    specs = _input_specs(model)
    first = specs[0][1][0] if specs and specs[0][1] else None
    n = len(arrays[specs[0][0]]) if specs else 0
    step = first if first else max(n, 1)
    return [{name: arrays[name][i : i + step] for name, _ in specs} for i in range(0, n - step + 1, step)]


def arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over the arrays' names, dtypes, shapes and bytes, ``labels`` left out: two files
    with the same inputs are the same data."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        if k == "labels":
            continue
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def quantizable_nodes(model: onnx.ModelProto) -> list[str]:
    """Names of the nodes whose weights a quantizer would quantize, in graph order (unique for a
    model from :func:`load_weighted`)."""
    inits = {t.name for t in model.graph.initializer}
    return [n.name for n in model.graph.node if n.op_type in QUANTIZABLE and any(i in inits for i in n.input[1:2])]


def _weight_axis(node: onnx.NodeProto) -> int:
    """The output-channel axis of the node's weight (input 1)."""
    if node.op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return {"Conv": 0, "ConvTranspose": 1}.get(node.op_type, -1)


def _overrides(
    model: onnx.ModelProto, ops: Mapping[str, OpQuant], base: str, per_channel: bool
) -> dict[str, list[dict[str, Any]]]:
    """TensorQuantOverrides for int nodes whose dtype or granularity differs from the global ones."""
    from onnxruntime.quantization import QuantType

    inits = {t.name for t in model.graph.initializer}
    out: dict[str, list[dict[str, Any]]] = {}
    for node in model.graph.node:
        q = ops[node.name]
        if q.dtype not in _INT:
            continue
        wt, at = (getattr(QuantType, t) for t in _INT[q.dtype])
        node_pc = q.granularity == "per-channel"
        for i, name in enumerate(node.input):
            if not name:
                continue
            if name in inits and i == 1 and (q.dtype != base or node_pc != per_channel):
                entry: dict[str, Any] = {"quant_type": wt}
                if node_pc:
                    entry["axis"] = _weight_axis(node)
                out[name] = [entry]
            elif name not in inits and q.dtype != base:
                out[name] = [{"quant_type": at}]
    return out


class _Reader:
    """onnxruntime's CalibrationDataReader over a list of feeds."""

    def __init__(self, feeds: Sequence[dict[str, np.ndarray]]) -> None:
        self._it: Iterator[dict[str, np.ndarray]] = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def quantize_model(
    model_path: str | Path,
    calib: Mapping[str, np.ndarray],
    binding: QuantBinding,
    out: str | Path,
    binding_source: str = "<binding>",
    nodes: Sequence[str] | None = None,
) -> QuantizeResult:
    """Write the QDQ model of ``model_path`` quantized per ``binding`` to ``out``.

    Nodes are named as :func:`load_weighted` names them, so a rule or an entry of ``nodes``
    names an unnamed node ``<op_type>_<index>``, as ``hwsim run`` does. ``nodes`` restricts
    quantization to those nodes (a sensitivity study quantizes one layer alone). ``out`` is
    written only when the quantizer succeeds and onnxruntime loads its result.

    Raises
    ------
    graph_ir.quant_binding.BindingError
        A rule that matches no node.
    OnnxruntimeRefusal
        onnxruntime's quantizer failed on the model, or wrote a model onnxruntime cannot load.
    DataError
        A binding that quantizes nothing, or int4 without onnxruntime support.
    """
    from onnxruntime.quantization import CalibrationDataReader, QuantType

    model = load_weighted(model_path)
    ops = resolve(binding, [(n.name, n.op_type) for n in model.graph.node], binding_source)
    int_nodes = {n: q.dtype for n, q in ops.items() if q.dtype in _INT and (nodes is None or n in nodes)}
    if not int_nodes:
        raise DataError(f"{binding_source}: the binding quantizes no node of {model_path} (all float)")
    if "int4" in int_nodes.values() and not hasattr(QuantType, "QInt4"):
        raise DataError(f"{binding_source}: int4 asked, but {int4_mode()}")
    base = binding.default if binding.default in _INT else max(int_nodes.values())
    per_channel = binding.granularity == "per-channel"
    excluded = tuple(n for n, q in ops.items() if q.dtype not in _INT)
    options: dict[str, Any] = {
        "per_channel": per_channel,
        "weight_type": getattr(QuantType, _INT[base][0]), "activation_type": getattr(QuantType, _INT[base][1]),
        "nodes_to_quantize": list(int_nodes) if (nodes is not None or binding.default not in _INT) else None,
        "nodes_to_exclude": list(excluded),
        "extra_options": {"TensorQuantOverrides": _overrides(model, ops, base, per_channel)},
    }  # fmt: skip
    reader = type("Reader", (_Reader, CalibrationDataReader), {})(batches(calib, model))
    out = Path(out)
    _quantize_checked(_with_external_data(model, Path(model_path)), Path(model_path), reader, out, options)
    per_dtype: dict[str, list[str]] = {}
    for n, d in int_nodes.items():
        per_dtype.setdefault(d, []).append(n)
    note = int4_mode() if "int4" in int_nodes.values() else ""
    return QuantizeResult(out, {d: tuple(v) for d, v in sorted(per_dtype.items())}, excluded, note)


def _quantize_checked(model: onnx.ModelProto, source: Path, reader: Any, out: Path, options: dict[str, Any]) -> None:
    """onnxruntime's ``quantize_static`` of ``model`` (read from ``source``) into a temporary
    file, loaded once in onnxruntime, then moved to ``out``; nothing is left behind on failure.

    Raises
    ------
    OnnxruntimeRefusal
        The quantizer raised (an op it mishandles, say a Gemm with a 2-D C), or its result does
        not load (say a float16 scale before opset 19, a MaxPool reading an int4 tensor).
    """
    from onnxruntime.quantization import QuantFormat, quantize_static

    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=out.parent if out.parent.is_dir() else None)
    os.close(fd)
    try:
        try:
            quantize_static(model, tmp, reader, quant_format=QuantFormat.QDQ, **options)
        except Exception as exc:  # noqa: BLE001 - the quantizer is third-party code; any failure is its refusal
            raise OnnxruntimeRefusal(source, f"onnxruntime's quantizer failed ({_first_line(exc)})") from None
        open_session(Path(tmp).read_bytes(), source, "the quantized model")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
