"""The twenty-second unseen batch (``benchmarks/heldout_unseen22.py``, MLPerf Tiny's four models and
RegNetY): each family runs under onnxruntime, and its depthwise convs run where the model says."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx

from cost_models.cpu import depthwise_row_tiles
from graph_ir.onnx_import import load_onnx
from tests.helpers import batch_runs, load_benchmarks


def _unseen22() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen22")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen22()
    batch_runs(mod, {"dscnn": mod.dscnn(16, 2), "vww": mod.vww(0.25, 64), "resnet": mod.resnet8(1, 8), "fcae": mod.fcae(4, 64, 16, 4),
                     "regnety": mod.regnety((16, 24), (1, 2), res=64)}, tmp_path)  # fmt: skip


def test_the_keyword_spotters_depthwise_convs_take_masked_tiles_only(tmp_path: Path) -> None:
    path = tmp_path / "dscnn.onnx"
    onnx.save(_unseen22().dscnn(64, 2), str(path))
    dw = [op for op in load_onnx(path).ops() if op.op_type == "Conv" and op.attrs.get("group", 1) == 64]
    assert len(dw) == 2 and all(depthwise_row_tiles(op) == (0, 5) for op in dw)  # rows of 5 outputs: one masked tile
