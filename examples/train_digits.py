"""Train a small MLP on scikit-learn's bundled digits and ship it with its data, no download.

``python examples/train_digits.py`` (needs the ``train`` extra: ``pip install -e .[train]``)
writes, deterministically (seed 0):

- ``examples/trained/digits_mlp.onnx``: a 64-64-32-10 MLP (Gemm, Relu, Gemm, Relu, Gemm) with
  its trained weights inside the file, batch 1, input ``input`` 1x64 (pixels / 16), output
  ``logits`` 1x10;
- ``examples/trained/digits_calib.npz``: 200 calibration images (``input``) and their ``labels``;
- ``examples/trained/digits_val.npz``: 597 validation images and labels, disjoint from the
  calibration and training images.

The remaining 1000 images train the network. ``load_digits`` ships inside scikit-learn (8x8
images, 1797 of them); scikit-learn is used for nothing else: the training is plain numpy
(softmax cross-entropy, Adam) and the ONNX file is built with ``onnx.helper``. The model lives in
``examples/trained/``, not ``examples/models/``, so the golden cases (every model of
``examples/models`` on every chip) stay as they are.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent / "trained"
SIZES = (64, 64, 32, 10)
N_TRAIN, N_CALIB = 1000, 200


def load() -> tuple[np.ndarray, np.ndarray]:
    """The digits images (float32, scaled to [0, 1]) and labels (int64), shuffled with seed 0."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    return x[order], y[order]


def train(x: np.ndarray, y: np.ndarray, epochs: int = 300, lr: float = 3e-3) -> list[tuple[np.ndarray, np.ndarray]]:
    """Full-batch Adam on softmax cross-entropy with a little weight decay; returns (W, b) per layer."""
    rng = np.random.default_rng(0)
    params = [
        (rng.normal(0, np.sqrt(2 / i), (i, o)).astype(np.float32), np.zeros(o, np.float32))
        for i, o in pairwise(SIZES)
    ]
    flat = [p for wb in params for p in wb]
    m = [np.zeros_like(p) for p in flat]
    v = [np.zeros_like(p) for p in flat]
    onehot = np.eye(SIZES[-1], dtype=np.float32)[y]
    for step in range(1, epochs + 1):
        acts = [x]
        for k, (w, b) in enumerate(params):
            z = acts[-1] @ w + b
            acts.append(np.maximum(z, 0) if k < len(params) - 1 else z)
        logits = acts[-1] - acts[-1].max(axis=1, keepdims=True)
        prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        grad = (prob - onehot) / len(y)
        grads = []
        for k in reversed(range(len(params))):
            w, _ = params[k]
            grads.append((acts[k].T @ grad + 1e-4 * w, grad.sum(axis=0)))
            grad = (grad @ w.T) * (acts[k] > 0)
        gflat = [g for wb in reversed(grads) for g in wb]
        for i, g in enumerate(gflat):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            flat[i] -= lr * (m[i] / (1 - 0.9**step)) / (np.sqrt(v[i] / (1 - 0.999**step)) + 1e-8)
        params = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(params))]
    return params


def to_onnx(params: list[tuple[np.ndarray, np.ndarray]]) -> onnx.ModelProto:
    """The MLP as an ONNX model (opset 17) with its weights as initializers."""
    nodes, inits, x = [], [], "input"
    for k, (w, b) in enumerate(params, start=1):
        inits += [numpy_helper.from_array(w, f"fc{k}.weight"), numpy_helper.from_array(b, f"fc{k}.bias")]
        out = "logits" if k == len(params) else f"fc{k}_out"
        nodes.append(helper.make_node("Gemm", [x, f"fc{k}.weight", f"fc{k}.bias"], [out], name=f"fc{k}"))
        x = out
        if k < len(params):
            nodes.append(helper.make_node("Relu", [x], [f"relu{k}_out"], name=f"relu{k}"))
            x = f"relu{k}_out"
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, SIZES[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, SIZES[-1]])],
        inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="hwsim-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    x, y = load()
    params = train(x[:N_TRAIN], y[:N_TRAIN])
    HERE.mkdir(parents=True, exist_ok=True)
    onnx.save(to_onnx(params), HERE / "digits_mlp.onnx")
    calib = slice(N_TRAIN, N_TRAIN + N_CALIB)
    val = slice(N_TRAIN + N_CALIB, None)
    np.savez_compressed(HERE / "digits_calib.npz", input=x[calib], labels=y[calib])
    np.savez_compressed(HERE / "digits_val.npz", input=x[val], labels=y[val])
    h = x[:N_TRAIN]
    for w, b in params[:-1]:
        h = np.maximum(h @ w + b, 0)
    train_acc = float(((h @ params[-1][0] + params[-1][1]).argmax(1) == y[:N_TRAIN]).mean())
    print(f"wrote {HERE}: train accuracy {train_acc:.4f}, {len(y[val])} validation images")


if __name__ == "__main__":
    main()
