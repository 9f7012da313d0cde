"""The thirteenth unseen batch (``benchmarks/heldout_unseen13.py``): each family runs under
onnxruntime, and the two kernels its first run found mispriced are marked the way onnxruntime runs
them: a MaxPool that outputs its Indices (its own kernel, never in the NCHWc layout) and a product
over a batched weight (one GEMM call per matrix); and a CumSum is marked by the axis it runs along."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import onnx

from chips.schema import CpuUnit
from cost_models.cpu import batch_calls_ns, kernel_type
from graph_ir.onnx_import import load_onnx
from hwsim.host.validate import nchwc_reorders
from tests.helpers import load_benchmarks, runs_finite


def _unseen13() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen13")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen13()
    families = ("capsule", "cliptext", "linattn", "perceiver", "quartznet", "scan", "unpool")
    assert sorted({k.split("_")[0] for k in mod.SIZES}) == sorted(families)
    assert all(sum(k.startswith(f + "_") for k in mod.SIZES) == 2 for f in families)
    small = {"capsule": mod.capsule(28, 4), "cliptext": mod.cliptext(16, 64, 2, vocab=100), "perceiver": mod.perceiver(64, 8, 32, 2),
             "quartznet": mod.quartznet(64, 32, blocks=2), "scan": mod.scan(128, 16), "unpool": mod.unpool(32, 8),
             "linattn": mod.linattn(32, 32, 2)}  # fmt: skip
    for name, model in small.items():
        runs_finite(model, tmp_path / f"{name}.onnx")


def test_a_maxpool_with_its_indices_runs_its_own_kernel_off_the_blocked_layout(tmp_path: Path) -> None:
    path = tmp_path / "unpool.onnx"
    onnx.save(_unseen13().unpool(32, 16), str(path))
    graph = load_onnx(path)
    pools = [op for op in graph.ops() if op.op_type == "MaxPool"]
    assert len(pools) == 2 and {kernel_type(op) for op in pools} == {"MaxPoolIndices"}
    # each pool reads its conv's output in the plain layout: one ReorderOutput per conv before a pool
    reordered = {op.inputs[0].name for op in nchwc_reorders(graph, 16) if op.op_type == "ReorderOutput"}
    assert {op.inputs[0].name for op in pools} <= reordered


def test_a_product_over_a_batched_weight_pays_a_call_per_matrix(tmp_path: Path) -> None:
    path = tmp_path / "capsule.onnx"
    onnx.save(_unseen13().capsule(28, 4), str(path))
    products = [op for op in load_onnx(path).ops() if op.op_type == "MatMul"]
    assert len(products) == 1 and products[0].inputs[1].is_weight
    unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
                   l2_kib=512, l2_bandwidth_gbps=50, fp32_batch_call_ns=80.0)  # fmt: skip
    # 4 maps of 6 x 6 primary capsules, 10 classes: 1440 products of 1 x 8 x 16
    assert batch_calls_ns(products[0], unit) == 1440 * 80.0


def test_a_cumsum_down_an_outer_axis_adds_rows_along_the_last_one_element_by_element(tmp_path: Path) -> None:
    mod = _unseen13()
    for name, model, kinds in (("scan", mod.scan(128, 16), {"CumSumRows"}), ("linattn", mod.linattn(32, 32, 2), {"CumSumRows"})):
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        sums = [op for op in load_onnx(path).ops() if op.op_type == "CumSum"]
        assert sums and {kernel_type(op) for op in sums} == kinds
    # along the last axis (a probe's rows), and with nothing after its axis: one element after another
    b = load_benchmarks("heldout_models")._Builder(0)
    along = b.op("CumSum", ["x", b.const(np.array([1], np.int64))])
    path = tmp_path / "along.onnx"
    onnx.save(b.model("along", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 8])], along), str(path))
    assert [kernel_type(op) for op in load_onnx(path).ops()] == ["CumSum"]
