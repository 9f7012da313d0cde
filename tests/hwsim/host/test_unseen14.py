"""The fourteenth unseen batch (``benchmarks/heldout_unseen14.py``): each family runs under
onnxruntime, and the kernels its first run found mispriced are costed the way onnxruntime runs
them: a linear Resize over a 3-D signal (its generic N-linear loop), a downsampling linear Resize
(per output, not per input byte) and a TopK (a scan and a heap per row)."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import onnx
import pytest

from chips.schema import chip_from_dict
from cost_models.cpu import TAP_KERNELS, kernel_type
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.onnx_import import load_onnx
from graph_ir.op_metrics import TOPK_SIFT_WORK, metrics
from tests.helpers import host_chip, load_benchmarks, runs_finite


def _unseen14() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen14")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen14()
    families = ("bifpn", "cyclegan", "dgcnn", "preproc", "siren", "waveunet")
    assert sorted({k.split("_")[0] for k in mod.SIZES}) == sorted(families)
    assert all(sum(k.startswith(f + "_") for k in mod.SIZES) == 2 for f in families)
    small = {"bifpn": mod.bifpn(32, 8, 1), "cyclegan": mod.cyclegan(32, 8, 1), "dgcnn": mod.dgcnn(64, 4, 8),
             "preproc": mod.preproc(48, 64, 32), "siren": mod.siren(64, 16, 2), "waveunet": mod.waveunet(256, 4, 2)}  # fmt: skip
    for name, model in small.items():
        runs_finite(model, tmp_path / f"{name}.onnx")


def test_a_signal_s_linear_resize_runs_the_n_linear_loop_an_image_s_the_bilinear_kernel(tmp_path: Path) -> None:
    mod = _unseen14()
    kinds = {}
    for name, model in (("waveunet", mod.waveunet(256, 4, 2)), ("preproc", mod.preproc(48, 64, 32))):
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        kinds[name] = {kernel_type(op) for op in load_onnx(path).ops() if op.op_type == "Resize"}
    assert kinds == {"waveunet": {"ResizeLinearND"}, "preproc": {"ResizeLinear"}}


def _resize(shape_in: tuple[int, ...], shape_out: tuple[int, ...]) -> Op:
    x, y = Tensor("x", shape_in, "float32"), Tensor("y", shape_out, "float32")
    m = metrics("Resize", (x,), (y,), {"mode": "linear"})
    return Op("r", "Resize", m.category, (x,), (y,), {"mode": "linear"}, m.macs, m.flops)


@pytest.mark.parametrize("kernel", sorted(TAP_KERNELS - {"ResizeLinearNchwc"}))
def test_a_downsampling_resize_costs_its_outputs_not_its_input_bytes(kernel: str) -> None:
    data = host_chip()
    data["units"][0]["efficiency"] = {kernel: 0.015}
    data["units"][0]["op_overhead_ns"] = 0.0
    chip = chip_from_dict(data)
    shapes = {"ResizeLinearND": ((1, 64, 4096), (1, 64, 1024)), "ResizeLinear": ((1, 3, 480, 640), (1, 3, 224, 224)),
              "ResizeCubic": ((1, 3, 480, 640), (1, 3, 224, 224))}  # fmt: skip
    down = _resize(*shapes[kernel])
    if kernel == "ResizeCubic":
        down = Op("r", "Resize", down.category, down.inputs, down.outputs, {"mode": "cubic"}, down.macs,
                  metrics("Resize", down.inputs, down.outputs, {"mode": "cubic"}).flops)  # fmt: skip
    assert kernel_type(down) == kernel
    cost = estimate(down, chip, "cpu", "model")
    assert cost is not None
    per_output = cost.compute_ns / down.outputs[0].elements
    flops_per_output = down.flops / down.outputs[0].elements
    # its taps' work at the calibrated rate, whatever the input it reads them from
    assert per_output == pytest.approx(flops_per_output / (chip.units[0].peak_flops_per_ns("fp32") * 0.015), rel=0.1)


def test_a_topk_scans_each_row_and_sifts_what_enters_its_heap() -> None:
    def work(rows: int, n: int, k: int) -> int:
        x, y = Tensor("x", (rows, n), "float32"), Tensor("y", (rows, k), "float32")
        return metrics("TopK", (x,), (y, Tensor("i", (rows, k), "int64")), {"axis": -1}).flops

    # about k (1 + ln(n / k)) values enter the heap of k, each sifting log2(k) levels
    assert work(1, 1024, 16) == int(1024 + TOPK_SIFT_WORK * 16 * (1 + math.log(64)) * 4)
    assert work(8, 1024, 20) == pytest.approx(8 * work(1, 1024, 20), abs=8)
    # onnxruntime on the CI Xeon, a row: k = 20 of 1,024 5.1x k = 2 of 1,024, 8 of 64 0.80x, 2 of 8 0.05-0.08x
    for n, k, ratio in ((1024, 20, 5.1), (64, 8, 0.80), (8, 2, 0.065)):
        assert work(1, n, k) / work(1, 1024, 2) == pytest.approx(ratio, rel=0.3)
    assert work(1, 16, 16) == int(16 + TOPK_SIFT_WORK * 16 * 4)  # all of a row kept: each enters once
