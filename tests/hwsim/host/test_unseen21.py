"""The twenty-first unseen batch (``benchmarks/heldout_unseen21.py``): each family runs under
onnxruntime, and the two kernels the batch found priced apart are where the model has them: FNet's
transform over the sequence is a strided one, and the capsule routing's agreement sums blocks one
float wide."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx

from cost_models.cpu import fft_plan
from cost_models.cpu_reduce import REDUCE_NARROW_COLUMNS, fast_reduce
from graph_ir.onnx_import import load_onnx
from tests.helpers import batch_runs, load_benchmarks


def _unseen21() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen18", "heldout_unseen21")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen21()
    batch_runs(mod, {"capsnet": mod.capsnet(20, 4, 2), "dcn": mod.dcn(16, 32, 2, (64, 32)), "fnet": mod.fnet(16, 32, 1, vocab=100),
                     "glow": mod.glow(16, 2, 1, 16), "perceiver": mod.perceiver(64, 8, 16, 32, 1)}, tmp_path)  # fmt: skip


def test_fnet_transforms_its_hidden_axis_then_its_sequence(tmp_path: Path) -> None:
    path = tmp_path / "fnet.onnx"
    onnx.save(_unseen21().fnet(16, 32, 1, vocab=100), str(path))
    plans = [fft_plan(op) for op in load_onnx(path).ops() if op.op_type == "DFT"]
    assert plans == [(16, 32), (32, 16)]  # 16 rows of 32 points, then 32 columns of 16 points


def test_capsule_routing_sums_blocks_narrower_than_a_vector(tmp_path: Path) -> None:
    path = tmp_path / "caps.onnx"
    onnx.save(_unseen21().capsnet(20, 4, 2), str(path))
    paths = [fast_reduce(op) for op in load_onnx(path).ops() if op.op_type == "ReduceSum"]
    narrow = [m for kind, m in (p for p in paths if p) if kind == "KRK" and m[2] < REDUCE_NARROW_COLUMNS]
    assert narrow and all(m[0] >= 2 for m in narrow)
