"""The accuracy gate: a candidate model (quantized, rewritten) against its reference on an
independent validation set, and a per-layer sensitivity ranking.

Both models run in onnxruntime (CPU) on the validation arrays. With a ``labels`` array the
metric is top-1 accuracy (argmax over the last axis of the first output); without, it is top-1
agreement with the reference (the reference scores 1). The drop is relative:
``(reference - candidate) / reference``; the gate fails when it exceeds ``max_drop`` (1% by
default, Intel Neural Compressor's default tolerance). Per output: cosine similarity over all
samples and the largest absolute difference.

Calibration and validation data must differ: the same arrays (by :func:`arrays_digest`) as both
are refused, since a quantizer calibrated on the validation set flatters itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from graph_ir.quant_binding import QuantBinding, Rule
from hwsim.studies.quantize import (
    DataError,
    OnnxruntimeRefusal,
    arrays_digest,
    batches,
    load_data,
    load_weighted,
    open_session,
    quantizable_nodes,
    quantize_model,
)

__all__ = [
    "DEFAULT_MAX_DROP",
    "AccuracyReport",
    "LayerSensitivity",
    "OutputError",
    "binding_keeping",
    "compare_models",
    "format_report",
    "layer_sensitivity",
    "run_model",
    "top1",
]

#: Intel Neural Compressor's default relative accuracy tolerance.
DEFAULT_MAX_DROP = 0.01


@dataclass(frozen=True, slots=True)
class OutputError:
    """How one output of the candidate differs from the reference's."""

    name: str
    cosine: float
    max_abs_error: float


@dataclass(frozen=True, slots=True)
class AccuracyReport:
    """Reference against candidate; ``metric`` is ``top1_accuracy`` or ``top1_agreement``."""

    reference: str
    candidate: str
    data: str
    samples: int
    metric: str
    reference_score: float
    candidate_score: float
    max_drop: float
    outputs: tuple[OutputError, ...]

    @property
    def relative_drop(self) -> float:
        """``(reference - candidate) / reference`` (0 when the reference scores 0)."""
        if self.reference_score == 0:
            return 0.0
        return (self.reference_score - self.candidate_score) / self.reference_score

    @property
    def passed(self) -> bool:
        return self.relative_drop <= self.max_drop


@dataclass(frozen=True, slots=True)
class LayerSensitivity:
    """One layer quantized alone to ``dtype``: its score and relative drop, or (both None) the
    ``error`` that kept it from being measured: onnxruntime's quantizer failed on it, or
    onnxruntime cannot load the model with it quantized."""

    layer: str
    op_type: str
    dtype: str
    score: float | None
    relative_drop: float | None
    error: str | None = None


def run_model(
    model: onnx.ModelProto, arrays: Mapping[str, np.ndarray], source: str | Path = "<model>"
) -> dict[str, np.ndarray]:
    """Every output of ``model`` (read from ``source``) over all samples (batches concatenated
    on axis 0).

    Raises
    ------
    OnnxruntimeRefusal
        onnxruntime cannot load the model (naming ``source``).
    """
    sess = open_session(model, source)
    names = [o.name for o in sess.get_outputs()]
    parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for feed in batches(arrays, model):
        for n, v in zip(names, sess.run(names, feed)):
            parts[n].append(np.asarray(v))
    return {n: np.concatenate(v, axis=0) for n, v in parts.items()}


def top1(logits: np.ndarray) -> np.ndarray:
    """The argmax over the last axis, one class per sample (further axes flattened into it)."""
    return np.asarray(logits.reshape(logits.shape[0], -1, logits.shape[-1]).argmax(-1)).reshape(logits.shape[0], -1)


def _score(ref: np.ndarray, cand: np.ndarray, labels: np.ndarray | None) -> tuple[str, float, float]:
    if labels is not None:
        lab = labels.reshape(-1, 1)
        return "top1_accuracy", float((top1(ref) == lab).mean()), float((top1(cand) == lab).mean())
    return "top1_agreement", 1.0, float((top1(ref) == top1(cand)).mean())


def _errors(ref: Mapping[str, np.ndarray], cand: Mapping[str, np.ndarray]) -> tuple[OutputError, ...]:
    out = []
    for name, r in ref.items():
        a, b = r.astype(np.float64).ravel(), cand[name].astype(np.float64).ravel()
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        cos = float(a @ b / norm) if norm > 0 else float(np.array_equal(a, b))
        out.append(OutputError(name, cos, float(np.max(np.abs(a - b))) if a.size else 0.0))
    return tuple(out)


def refuse_same_data(val_path: Path, val: Mapping[str, np.ndarray], calib_path: Path, calib: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`DataError` when calibration and validation data are the same file or arrays."""
    if val_path.resolve() == calib_path.resolve():
        raise DataError(f"{val_path}: the same file is given as calibration and validation data")
    if arrays_digest(val) == arrays_digest(calib):
        raise DataError(f"{val_path}: the same arrays as the calibration data {calib_path} (sha256 equal)")


def compare_models(
    reference: str | Path,
    candidate: str | Path,
    data: str | Path,
    max_drop: float = DEFAULT_MAX_DROP,
    calib: str | Path | None = None,
) -> AccuracyReport:
    """Run both models on ``data`` and compare them (see the module docstring).

    Raises
    ------
    DataError
        A weightless model, data that does not fit a model's inputs, or ``calib`` equal to ``data``.
    OnnxruntimeRefusal
        A model onnxruntime cannot load.
    """
    ref_m, cand_m = load_weighted(reference), load_weighted(candidate)
    val = load_data(data, ref_m, reference)
    load_data(data, cand_m, candidate)
    if calib is not None:
        refuse_same_data(Path(data), val, Path(calib), load_data(calib, ref_m, reference))
    ref_out, cand_out = run_model(ref_m, val, reference), run_model(cand_m, val, candidate)
    first = next(iter(ref_out))
    labels = val.get("labels")
    n = len(ref_out[first])
    metric, rs, cs = _score(ref_out[first], cand_out[first], labels[:n] if labels is not None else None)
    return AccuracyReport(
        str(reference), str(candidate), str(data), n, metric, rs, cs, max_drop, _errors(ref_out, cand_out)
    )


def format_report(r: AccuracyReport) -> str:
    """The terminal table of an :class:`AccuracyReport`."""
    verdict = "PASS" if r.passed else "FAIL"
    lines = [
        f"hwsim accuracy: {r.candidate} against {r.reference} on {r.data} ({r.samples} samples)",
        f"  {'model':<10} {r.metric:>15}",
        f"  {'reference':<10} {r.reference_score:>15.4f}",
        f"  {'candidate':<10} {r.candidate_score:>15.4f}",
        f"  relative drop {100 * r.relative_drop:.2f}% (max {100 * r.max_drop:.2f}%): {verdict}",
        f"  {'output':<20} {'cosine':>10} {'max abs error':>14}",
    ]
    lines += [f"  {o.name:<20} {o.cosine:>10.6f} {o.max_abs_error:>14.6g}" for o in r.outputs]
    return "\n".join(lines)


def layer_sensitivity(
    model_path: str | Path, calib: str | Path, data: str | Path, dtype: str = "int4", work_dir: str | Path = "."
) -> tuple[LayerSensitivity, ...]:
    """Each quantizable layer quantized alone to ``dtype`` (per-tensor), ranked by relative drop,
    most sensitive first (ties: graph order). Quantized models go to ``work_dir`` and are removed.

    Layers carry hwsim's names (:func:`hwsim.studies.quantize.load_weighted`), those a binding
    and ``hwsim run --quant`` use. A layer that cannot be measured (onnxruntime's quantizer
    fails on it, or onnxruntime cannot load the model with it quantized, say an int4 Conv whose
    MaxPool has no int4 kernel) does not stop the study: its row carries the ``error`` and no
    score, and comes after the measured ones, in graph order. :func:`binding_keeping` keeps such
    layers wide, since the quantized model would not load with them in ``dtype``.

    Raises
    ------
    DataError
        A weightless model, data that does not fit it, the same calibration and validation data,
        or a reference model onnxruntime cannot load.
    """
    model = load_weighted(model_path)
    val = load_data(data, model, model_path)
    cal = load_data(calib, model, model_path)
    refuse_same_data(Path(data), val, Path(calib), cal)
    ref_out = run_model(model, val, model_path)
    first = next(iter(ref_out))
    labels = val.get("labels")
    _, ref_score, _ = _score(ref_out[first], ref_out[first], labels)
    op_type = {n.name: n.op_type for n in model.graph.node}
    binding = QuantBinding.model_validate({"default": dtype})
    rows = []
    for layer in quantizable_nodes(model):
        out = Path(work_dir) / f".sensitivity-{layer.replace('/', '_')}.onnx"
        try:
            quantize_model(model_path, cal, binding, out, nodes=[layer])
            cand = run_model(onnx.load(str(out)), val, out)
        except OnnxruntimeRefusal as exc:
            rows.append(LayerSensitivity(layer, op_type[layer], dtype, None, None, exc.reason))
            continue
        finally:
            out.unlink(missing_ok=True)
        _, _, score = _score(ref_out[first], cand[first], labels)
        drop = (ref_score - score) / ref_score if ref_score else 0.0
        rows.append(LayerSensitivity(layer, op_type[layer], dtype, score, drop))
    order = {r.layer: i for i, r in enumerate(rows)}
    return tuple(sorted(rows, key=lambda r: (r.relative_drop is None, -(r.relative_drop or 0.0), order[r.layer])))


def binding_keeping(ranking: Sequence[LayerSensitivity], keep: int, dtype: str, keep_dtype: str) -> QuantBinding:
    """A binding with every op in ``dtype`` but, in ``keep_dtype``, the ``keep`` most sensitive
    measured layers and every layer that could not be measured (its ``error``)."""
    measured = [r for r in ranking if r.error is None]
    kept = measured[:keep] + [r for r in ranking if r.error is not None]
    rules = [Rule.model_validate({"name": r.layer, "dtype": keep_dtype}) for r in kept]
    return QuantBinding.model_validate({"default": dtype, "rules": rules})
