"""The twentieth unseen batch (``benchmarks/heldout_unseen20.py``): each family runs under
onnxruntime, and the families built to share weights do share them: one run reads each shared
weight once (:func:`cost_models.table.run_weight_bytes`)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx

from cost_models.table import run_weight_bytes
from graph_ir.onnx_import import load_onnx
from tests.helpers import batch_runs, load_benchmarks


def _unseen20() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen18", "heldout_unseen20")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen20()
    batch_runs(mod, {"albert": mod.albert(16, 64, 2, vocab=100), "raftgru": mod.raftgru(6, 8, 2, 16, 16),
                     "retina": mod.retina(128, 16, 2, 3), "siamese": mod.siamese(32, (8, 16)),
                     "tiedlm": mod.tiedlm(16, 64, 1, 100)}, tmp_path)  # fmt: skip


def test_albert_s_layers_read_one_layer_s_weights(tmp_path: Path) -> None:
    mod = _unseen20()
    sizes = {}
    for layers in (1, 4):
        path = tmp_path / f"albert{layers}.onnx"
        onnx.save(mod.albert(16, 64, layers, vocab=100), str(path))
        graph = load_onnx(path)
        per_use = sum(op.weight_bytes() for op in graph.ops() if op.op_type != "Gather")
        sizes[layers] = (run_weight_bytes(graph), per_use)
    # four layers hold four times the products, but the same weights (each layer makes its own
    # few shape constants: 72 bytes)
    assert sizes[4][1] > 3 * sizes[1][1]
    assert 0 <= sizes[4][0] - sizes[1][0] <= 3 * 72
