"""Held-out int8 models for the host CPU fidelity check: QDQ versions of generated families (the
``cnn_int8``, ``mlp_int8`` and ``encoder_int8`` families of :mod:`heldout_models`, which writes them).

    python benchmarks/heldout_models.py OUT_DIR --family cnn_int8 --family mlp_int8 --family encoder_int8

Each model is built in fp32 with deterministic numpy weights (nothing downloaded), then quantized
with ``onnxruntime.quantization.quantize_static`` in QDQ format (int8 activations and weights, the
library's defaults), calibrated on a few seeded random inputs (:class:`RandomReader`). Shapes are
not in the fp32 calibration set, and nothing is fit on them.

- ``cnn_int8``: a ResNet-like CNN (3x3 stride-2 stem, basic residual blocks of two 3x3 convs and an
  ``Add``, stride-2 transitions, GlobalAveragePool, a Gemm classifier), every op quantized the way
  ``quantize_static`` does it by default, per-channel conv weights;
- ``mlp_int8``: the ``mlp`` family's MLPs (Gemm+Relu), everything quantized, per-tensor weights;
- ``encoder_int8``: the ``encoder`` family's BERT-like blocks with only the MatMuls quantized
  (per-channel weights): what a transformer deployment usually does, LayerNormalization, Softmax
  and Gelu left in fp32.

onnxruntime's QDQ quantizer has no QDQ LSTM/GRU (they quantize only dynamically, as
``DynamicQuantizeLSTM``), so no recurrent family here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

__all__ = ["CNN_SIZES", "MLP_INT8_ONLY", "RandomReader", "build_cnn_int8", "build_encoder_int8", "build_mlp_int8", "cnn_model",
           "quantize"]  # fmt: skip

#: CNN (input resolution, stem channels, residual blocks per stage, input channels); three stages,
#: channels doubling. ``r64c8i1`` (a 1-channel input, an 8-channel first stage) and ``r128c16i4`` (a
#: 4-channel input) were added after the first three had been studied (held out from the narrow-conv model).
CNN_SIZES: dict[str, tuple[int, int, int, int]] = {
    "r96c24": (96, 24, 1, 3), "r160c32": (160, 32, 1, 3), "r224c48": (224, 48, 2, 3),
    "r64c8i1": (64, 8, 1, 1), "r128c16i4": (128, 16, 1, 4),
}  # fmt: skip
#: Which ``mlp`` / ``encoder`` sizes get an int8 version (:mod:`heldout_models`).
MLP_INT8 = ("tiny", "small", "medium")
#: int8-only MLP widths (no fp32 twin), added after the :data:`MLP_INT8` ones had been studied
#: (held out from the M = 1 integer GEMM model).
MLP_INT8_ONLY: dict[str, tuple[int, ...]] = {"n512": (512, 128, 64, 10), "w2048": (2048, 512, 10)}
ENCODER_INT8 = ("s64w256", "s128w384")
#: Calibration samples per model.
SAMPLES = 4


class RandomReader:
    """``quantize_static``'s calibration data: ``samples`` seeded random feeds for ``model``'s
    inputs (floats standard normal, int64 token ids below ``vocab``, a float mask of ones)."""

    def __init__(self, model: onnx.ModelProto, samples: int = SAMPLES, seed: int = 0, vocab: int = 8000) -> None:
        rng = np.random.default_rng(seed)
        self._feeds: Iterator[dict[str, np.ndarray]] = iter([self._feed(model, rng, vocab) for _ in range(samples)])

    @staticmethod
    def _feed(model: onnx.ModelProto, rng: np.random.Generator, vocab: int) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for vi in model.graph.input:
            shape = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
            if vi.type.tensor_type.elem_type == TensorProto.INT64:
                out[vi.name] = rng.integers(0, vocab, shape).astype(np.int64)
            elif vi.name == "mask":
                out[vi.name] = np.ones(shape, np.float32)
            else:
                out[vi.name] = rng.standard_normal(shape).astype(np.float32)
        return out

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def quantize(model: onnx.ModelProto, path: Path, per_channel: bool, op_types: Sequence[str] | None = None) -> Path:
    """``model`` quantized to int8 QDQ with ``quantize_static`` (calibrated on :class:`RandomReader`),
    written to ``path``. ``op_types``: only these op types (default: every one the quantizer knows)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "fp32.onnx"
        onnx.save(model, str(src))
        quantize_static(str(src), str(path), RandomReader(model), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=list(op_types) if op_types else None, per_channel=per_channel,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)  # fmt: skip
    return path


def cnn_model(res: int, base: int, blocks: int, in_ch: int = 3, classes: int = 100, seed: int = 0) -> onnx.ModelProto:
    """A ResNet-like CNN on an ``in_ch``-channel input: a 3x3 stride-2 stem, three stages of ``blocks`` basic residual blocks
    (channels ``base``, ``2 base``, ``4 base``; a stride-2 3x3 conv between stages), global
    average pooling and a Gemm classifier. Convs carry a bias (batch norm folded)."""
    from heldout_models import _Builder

    b = _Builder(seed)

    def conv(x: str, cin: int, cout: int, stride: int = 1, relu: bool = True) -> str:
        y = b.op("Conv", [x, b.weight((cout, cin, 3, 3), scale=(2.0 / (9 * cin)) ** 0.5), b.weight((cout,), 0.01)],
                 pads=[1, 1, 1, 1], strides=[stride, stride])  # fmt: skip
        return b.op("Relu", [y]) if relu else y

    x, c = conv("x", in_ch, base, 2), base
    for stage in range(3):
        if stage:
            x, c = conv(x, c, 2 * c, 2), 2 * c
        for _ in range(blocks):
            x = b.op("Relu", [b.op("Add", [x, conv(conv(x, c, c), c, c, relu=False)])])
    pooled = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    out = b.op("Gemm", [pooled, b.weight((classes, c)), b.weight((classes,))], transB=1)
    return b.model("cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, in_ch, res, res])], out)


def build_cnn_int8(out_dir: Path) -> list[Path]:
    """Every :data:`CNN_SIZES` CNN, all ops quantized, per-channel conv weights."""
    return [quantize(cnn_model(*s), out_dir / f"cnn_int8_{n}.onnx", per_channel=True) for n, s in CNN_SIZES.items()]


def build_mlp_int8(out_dir: Path) -> list[Path]:
    """The :data:`MLP_INT8` MLPs of :mod:`heldout_models` and the :data:`MLP_INT8_ONLY` ones, all ops
    quantized, per-tensor weights."""
    from heldout_models import MLP_SIZES, mlp_model

    widths = {**{n: MLP_SIZES[n] for n in MLP_INT8}, **MLP_INT8_ONLY}
    return [quantize(mlp_model(w), out_dir / f"mlp_int8_{n}.onnx", per_channel=False) for n, w in widths.items()]


def build_encoder_int8(out_dir: Path) -> list[Path]:
    """The :data:`ENCODER_INT8` encoders of :mod:`heldout_models`, MatMuls quantized (per-channel)."""
    from heldout_models import ENCODER_SIZES, encoder_model

    return [quantize(encoder_model(*ENCODER_SIZES[n]), out_dir / f"encoder_int8_{n}.onnx", per_channel=True,
                     op_types=("MatMul",)) for n in ENCODER_INT8]  # fmt: skip
