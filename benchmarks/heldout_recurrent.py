"""Held-out recurrent and STFT models for the host CPU fidelity check (the ``lstm``, ``gru`` and
``stft`` families of :mod:`heldout_models`, which writes them).

    python benchmarks/heldout_models.py OUT_DIR --family lstm --family gru --family stft

Built with ``onnx.helper`` and deterministic numpy weights (nothing downloaded), several sizes
per family so that a calibration is tested on shapes it did not see.

Families (recurrent and signal side):

- ``lstm``, ``gru``: stacks of 1-2 LSTM/GRU layers, hidden 64-768, 8-100 steps, forward and
  bidirectional, then a classifier on the last step (``h256s32l2``: hidden 256, 32 steps, 2 layers;
  ``bi``: bidirectional);
- ``stft``: keyword-spotter front ends (windowed one-sided STFT, power, mel projection, log, a
  small LSTM) with frame lengths that are powers of two (256, 512: onnxruntime's radix-2 FFT)
  and that are not (200, 320, 400, 480: Bluestein's transform).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["RECURRENT_SHAPES", "STFT_SHAPES", "build_gru", "build_lstm", "build_stft"]

#: ONNX opset the generated models use (STFT needs 17).
OPSET = 17


def _save(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
          inits: list[onnx.TensorProto], path: Path) -> Path:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def _weight(rng: np.random.Generator, name: str, shape: Sequence[int], scale: float = 0.1) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


#: (op type, hidden size, sequence length, layers, bidirectional) of the recurrent models.
RECURRENT_SHAPES: tuple[tuple[str, int, int, int, bool], ...] = (
    ("LSTM", 64, 100, 1, False), ("LSTM", 128, 50, 2, False), ("LSTM", 256, 32, 2, False),
    ("LSTM", 512, 16, 1, False), ("LSTM", 128, 100, 1, True), ("LSTM", 256, 8, 2, True),
    ("GRU", 64, 100, 2, False), ("GRU", 128, 32, 1, True), ("GRU", 256, 50, 2, False),
    ("GRU", 512, 8, 1, False), ("GRU", 256, 100, 1, True),
    # added after lstm_h512s16 and lstm_lm were spent on the calibration basis (docs/fidelity_cpu.md):
    # R just past the L2 (2.4 MB), far past it (7.1 MB), and two directions of 4.2 MB each
    ("LSTM", 384, 24, 1, False), ("GRU", 768, 8, 1, False), ("LSTM", 512, 12, 1, True),
)  # fmt: skip


def recurrent_model(op_type: str, hidden: int, seq: int, layers: int, bidir: bool, path: Path) -> Path:
    """A stack of ``layers`` LSTM/GRU layers (``features = hidden`` wide input, batch 1) and a
    linear classifier over the last step, as a sequence model exports from PyTorch."""
    rng = np.random.default_rng(hidden * 1000 + seq * 10 + layers)
    gates = 4 if op_type == "LSTM" else 3
    dirs = 2 if bidir else 1
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    x, width = "x", hidden
    for i in range(layers):
        w, r, b = f"W{i}", f"R{i}", f"B{i}"
        inits += [_weight(rng, w, (dirs, gates * hidden, width)), _weight(rng, r, (dirs, gates * hidden, hidden)),
                  _weight(rng, b, (dirs, 2 * gates * hidden))]  # fmt: skip
        attrs: dict[str, object] = {"hidden_size": hidden, "direction": "bidirectional" if bidir else "forward"}
        if op_type == "GRU":
            attrs["linear_before_reset"] = 1
        nodes.append(helper.make_node(op_type, [x, w, r, b], [f"y{i}"], name=f"{op_type.lower()}{i}", **attrs))
        # [seq, dirs, 1, hidden] -> [seq, 1, dirs * hidden]
        nodes.append(helper.make_node("Transpose", [f"y{i}"], [f"t{i}"], perm=[0, 2, 1, 3]))
        inits.append(numpy_helper.from_array(np.array([seq, 1, dirs * hidden], np.int64), f"shape{i}"))
        nodes.append(helper.make_node("Reshape", [f"t{i}", f"shape{i}"], [f"h{i}"]))
        x, width = f"h{i}", dirs * hidden
    inits += [numpy_helper.from_array(np.array([-1], np.int64), "last"), numpy_helper.from_array(np.array([0], np.int64), "axis0"),
              _weight(rng, "Wfc", (width, 10)), _weight(rng, "bfc", (10,))]  # fmt: skip
    nodes += [helper.make_node("Gather", [x, "last"], ["xl"], axis=0),
              helper.make_node("Squeeze", ["xl", "axis0"], ["xs"]),
              helper.make_node("Gemm", ["xs", "Wfc", "bfc"], ["logits"])]  # fmt: skip
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, 1, hidden])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])
    return _save(nodes, [inp], [out], inits, path)


def _recurrent_family(op_type: str, out_dir: Path) -> list[Path]:
    """The :data:`RECURRENT_SHAPES` of one op type as ``{lstm,gru}_h{H}s{T}[l{L}][bi].onnx``."""
    paths = []
    for op, hidden, seq, layers, bidir in RECURRENT_SHAPES:
        if op == op_type:
            size = f"h{hidden}s{seq}{f'l{layers}' if layers > 1 else ''}{'bi' if bidir else ''}"
            paths.append(recurrent_model(op, hidden, seq, layers, bidir, out_dir / f"{op.lower()}_{size}.onnx"))
    return paths


def build_lstm(out_dir: Path) -> list[Path]:
    """Every LSTM of :data:`RECURRENT_SHAPES`."""
    return _recurrent_family("LSTM", out_dir)


def build_gru(out_dir: Path) -> list[Path]:
    """Every GRU of :data:`RECURRENT_SHAPES`."""
    return _recurrent_family("GRU", out_dir)


#: (frame length, hop, samples) of the STFT front ends; 256/512 are powers of two, the others not.
STFT_SHAPES: tuple[tuple[int, int, int], ...] = (
    (256, 128, 16000), (512, 160, 16000), (400, 160, 16000), (320, 160, 16000), (480, 240, 24000), (200, 80, 8000),
)


def stft_model(frame: int, hop: int, samples: int, path: Path) -> Path:
    """A keyword-spotter front end: Hann-windowed one-sided STFT, power spectrum, a mel-like
    projection, log, a small LSTM and a classifier."""
    rng = np.random.default_rng(frame * 7 + hop)
    bins, mels, hidden = frame // 2 + 1, 40, 64
    frames = (samples - frame) // hop + 1
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(hop, np.int64), "hop"), numpy_helper.from_array(window, "window"),
             numpy_helper.from_array(np.array(frame, np.int64), "flen"),
             numpy_helper.from_array(np.array([2], np.int64), "ax_sig"),
             numpy_helper.from_array(np.abs(rng.standard_normal((bins, mels))).astype(np.float32) * 0.05, "mel"),
             numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
             numpy_helper.from_array(np.array([frames, 1, mels], np.int64), "seq_shape"),
             _weight(rng, "W", (1, 4 * hidden, mels)), _weight(rng, "R", (1, 4 * hidden, hidden)),
             _weight(rng, "B", (1, 8 * hidden)), numpy_helper.from_array(np.array([-1], np.int64), "last"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "ax01"),
             _weight(rng, "Wfc", (hidden, 12)), _weight(rng, "bfc", (12,))]  # fmt: skip
    nodes = [
        helper.make_node("Unsqueeze", ["wave", "ax_sig"], ["sig"]),  # [1, samples, 1]
        helper.make_node("STFT", ["sig", "hop", "window", "flen"], ["spec"], onesided=1, name="stft"),
        helper.make_node("Mul", ["spec", "spec"], ["sq"]),
        helper.make_node("ReduceSum", ["sq", "minus1"], ["power"], keepdims=0),  # [1, frames, bins]
        helper.make_node("MatMul", ["power", "mel"], ["melspec"]),
        helper.make_node("Add", ["melspec", "eps"], ["mel_eps"]),
        helper.make_node("Log", ["mel_eps"], ["logmel"]),
        helper.make_node("Transpose", ["logmel"], ["tm"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["tm", "seq_shape"], ["seq"]),
        helper.make_node("LSTM", ["seq", "W", "R", "B"], ["y"], hidden_size=hidden, name="lstm"),
        helper.make_node("Gather", ["y", "last"], ["yl"], axis=0),
        helper.make_node("Squeeze", ["yl", "ax01"], ["ys"]),
        helper.make_node("Gemm", ["ys", "Wfc", "bfc"], ["logits"]),
    ]
    inits.append(numpy_helper.from_array(np.array([-1], np.int64), "minus1"))
    inp = helper.make_tensor_value_info("wave", TensorProto.FLOAT, [1, samples])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 12])
    return _save(nodes, [inp], [out], inits, path)


def build_stft(out_dir: Path) -> list[Path]:
    """Every :data:`STFT_SHAPES` front end as ``stft_f{frame}h{hop}.onnx``."""
    return [stft_model(f, h, s, out_dir / f"stft_f{f}h{h}.onnx") for f, h, s in STFT_SHAPES]
