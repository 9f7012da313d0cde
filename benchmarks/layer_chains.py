"""Shared by the benchmarks that time one kind of layer against hwsim's prediction for it: what one
layer adds to a timed onnxruntime run, measured and predicted the same way."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def per_layer_ns(
    models: Mapping[tuple[Hashable, int], onnx.ModelProto], feeds: Mapping[Hashable, np.ndarray], layers: int,
    chip_files: Sequence[str], rounds: int, threads: int = 1,
) -> dict[Hashable, tuple[float, list[float]]]:  # fmt: skip
    """Per case, what one of its layers adds to a run, ns: measured, and predicted on each chip file.

    ``models[case, n]`` is the case's model with ``n`` layers (``n`` is 0 or ``layers``: the 0-layer
    one runs what the layers are added to), fed ``feeds[case]`` as ``x``. Measured: (the run with the
    layers - the run without) / ``layers``, each the 10th percentile of 200 runs, the best of
    ``rounds`` interleaved rounds (:func:`hwsim.host.measure.best_run_ns`). Predicted the same way
    from ``hwsim validate``'s whole-run predictions of the two models. All on ``threads`` intra-op threads."""
    from chips.schema import load_chip
    from hwsim.host.measure import best_run_ns
    from hwsim.host.validate import validate_model

    chips = [load_chip(c) for c in chip_files]
    best = best_run_ns({key: (m, feeds[key[0]]) for key, m in models.items()}, rounds, threads)
    predicted: dict[tuple[Hashable, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (key, model) in enumerate(models.items()):
            path = Path(tmp) / f"case{i}.onnx"
            onnx.save(model, path)
            predicted[key] = [validate_model(c, path, threads, runs=10, min_total_s=0.0).predicted_ns for c in chips]
    cases = dict.fromkeys(case for case, _ in models)
    return {case: ((best[case, layers] - best[case, 0]) / layers,
                   [(a - b) / layers for a, b in zip(predicted[case, layers], predicted[case, 0], strict=True)])
            for case in cases}  # fmt: skip


def print_table(first: str, rows: Mapping[str, tuple[float, list[float]]], chip_files: Sequence[str], digits: int = 2) -> None:
    """A markdown table: each row's label, the measured time and each chip file's prediction and error (us)."""
    heads = " | ".join(f"{Path(c).name} predicted us | error" for c in chip_files)
    print(f"| {first} | measured us | {heads} |")
    print("|---|---:|" + "---:|---:|" * len(chip_files))
    for label, (meas, preds) in rows.items():
        cells = " | ".join(f"{p / 1e3:.{digits}f} | {100 * (p / meas - 1):+.1f}%" for p in preds)
        print(f"| {label} | {meas / 1e3:.{digits}f} | {cells} |")
