"""The twenty-third unseen batch (``benchmarks/heldout_unseen23.py``, grouped convolutions and cheap
convolution tricks): each family runs under onnxruntime, SE-ResNeXt's 3x3 convs are of cardinality
32 with 4 and 8 channels a group, and ResNeSt's rSoftMax normalizes over the radix."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx

from graph_ir.onnx_import import load_onnx
from tests.helpers import batch_runs, load_benchmarks


def _unseen23() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen23")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen23()
    batch_runs(mod, {"seresnext": mod.seresnext(32, (32, 64), (1, 1), cardinality=8, classes=10),
                     "resnest": mod.resnest(32, (16, 32), (1, 1), classes=10), "ghostnet": mod.ghostnet(0.25, 32, classes=10),
                     "xception": mod.xception(32, 1, (8, 16, 16, 32), classes=10),
                     "repvgg": mod.repvgg(32, (8, 8, 16, 32), (1, 2, 2, 1), groups=4, classes=10)}, tmp_path)  # fmt: skip


def test_seresnext_groups_its_3x3_convs_by_32_of_4_and_8_channels(tmp_path: Path) -> None:
    path = tmp_path / "seresnext.onnx"
    onnx.save(_unseen23().SIZES["seresnext_r112"](), str(path))
    grouped = [op for op in load_onnx(path).ops() if op.op_type == "Conv" and op.attrs.get("group", 1) != 1]
    assert [(op.attrs["group"], op.inputs[1].shape[1:]) for op in grouped] == [(32, (4, 3, 3)), (32, (8, 3, 3))]


def test_resnest_softmax_runs_over_the_radix_of_each_cardinal_group(tmp_path: Path) -> None:
    path = tmp_path / "resnest.onnx"
    onnx.save(_unseen23().resnest(32, (16, 32), (1, 1), card=2, classes=10), str(path))
    softmax = [op for op in load_onnx(path).ops() if op.op_type == "Softmax"]
    # (1, radix, cardinality, channels a group) over axis 1: stage widths 20 and 40 (2s2x40d), in two groups
    assert [(op.attrs["axis"], op.inputs[0].shape) for op in softmax] == [(1, (1, 2, 2, 10)), (1, (1, 2, 2, 20))]
