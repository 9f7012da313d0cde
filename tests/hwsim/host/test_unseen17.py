"""The seventeenth unseen batch (``benchmarks/heldout_unseen17.py``): each family runs under
onnxruntime, and the kernels its first run found mispriced are costed the way onnxruntime runs
them: a conv whose filter is computed at run time (StyleGAN2's modulated convs) runs the plain
im2col + SGEMM kernel, not the NCHWc one, and a Gather pays a fixed time per row beside its bytes,
its rows from DRAM missing once per distinct line where a table fits the L2."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from chips.schema import chip_from_dict
from cost_models.cpu import SGEMM_CONV_ATTR, cold_gather_ns, gather_rows_ns
from cost_models.table import estimate
from graph_ir.ir import Tensor
from graph_ir.onnx_import import load_onnx
from hwsim.host.op_probes import probe_efficiencies, probe_model
from hwsim.host.validate import cpu_chip, layout_kernels, nchwc_reorders
from tests.helpers import batch_runs, host_chip, load_benchmarks, make_op


def _unseen17() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen17")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen17()
    batch_runs(mod, {"deepfm": mod.deepfm(16, 4, 50, 4, 8), "inception": mod.inception(0.1, 9),
                     "poolformer": mod.poolformer(8, 8, (1, 1)), "pspnet": mod.pspnet(48, 32, (1, 2, 3, 6)),
                     "stylegan": mod.stylegan(16, 16)}, tmp_path)  # fmt: skip


def test_a_conv_whose_filter_is_computed_at_run_time_runs_the_plain_kernel(tmp_path: Path) -> None:
    path = tmp_path / "stylegan.onnx"
    onnx.save(_unseen17().stylegan(16, 16), str(path))
    graph = load_onnx(path)
    convs = [op for op in graph.ops() if op.op_type == "Conv"]
    marked = layout_kernels(graph, 16)
    # every conv's filter is the style times a weight: none is taken by the NCHWc transformer
    assert convs and not nchwc_reorders(graph, 16)
    assert all(SGEMM_CONV_ATTR in marked[op.name].attrs for op in convs)
    for op in convs:  # the filter is the weight the cost model reads, whichever input was constant
        x, w = marked[op.name].inputs[:2]
        assert (x.is_weight, w.is_weight, w.shape) == (False, True, op.inputs[1].shape)
    first = next(op for op in convs if op.inputs[0].is_weight)  # the learned 4x4 input is a constant
    assert marked[first.name].weights[0].shape[0] == first.outputs[0].shape[1]


def test_a_conv_whose_filter_is_dequantized_from_a_weight_keeps_its_constant_filter(tmp_path: Path) -> None:
    # a QDQ model's conv reads its filter through a DequantizeLinear of an int8 weight: constant
    w = numpy_helper.from_array(np.ones((8, 4, 3, 3), np.int8), "wq")
    scales = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"], name="dq"),
             helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]  # fmt: skip
    graph = helper.make_graph(nodes, "qconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w, *scales])  # fmt: skip
    path = tmp_path / "qconv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    marked = layout_kernels(load_onnx(path), 16)
    assert "conv" not in marked or SGEMM_CONV_ATTR not in marked["conv"].attrs


def test_a_gather_pays_its_rows_beside_its_bytes() -> None:
    chip = cpu_chip(chip_from_dict(host_chip(op_overhead_ns=0.0, gather_row_ns=8.0)), 1)
    table = Tensor("t", (10000, 1), "float32", True)
    ns = {}
    for ids in (1000, 8000):
        op = make_op("Gather", [table, Tensor("i", (ids,), "int64")], [Tensor("y", (ids, 1), "float32")], axis=0)
        assert gather_rows_ns(op, chip.units[0]) == 8.0 * ids
        cost = estimate(op, chip, "cpu", "model")
        assert cost is not None and "rows" in cost.note
        ns[ids] = cost.latency_ns
    # the rows dominate: 7,000 more ids cost 7,000 x 8 ns and their few bytes
    assert ns[8000] - ns[1000] == pytest.approx(7000 * 8.0, rel=0.05)


def test_the_gather_probe_s_efficiency_leaves_its_rows_out() -> None:
    rate = {"probe_ns:Gather": 150_000.0}
    with_rows = probe_efficiencies(chip_from_dict(host_chip(gather_row_ns=8.0)), rate)["Gather"]
    without = probe_efficiencies(chip_from_dict(host_chip()), rate)["Gather"]
    ids = probe_model("Gather")[1]["x"].size
    # the probe's bytes take what its rows leave of the time: a higher efficiency
    assert with_rows == pytest.approx(without * 150_000.0 / (150_000.0 - 8.0 * ids), rel=1e-6)


def test_cold_rows_of_a_table_in_l2_miss_once_per_line_beyond_it_per_id() -> None:
    unit = chip_from_dict(host_chip(l2_kib=1024, gather_dram_row_ns=40.0, gather_dram_line_ns=8.0)).units[0]
    ids = Tensor("i", (160_000,), "int64")

    def lookup(rows: int) -> float:
        op = make_op("Gather", [Tensor("t", (rows, 1), "float32", True), ids], [Tensor("y", (160_000, 1), "float32")], axis=0)
        return cold_gather_ns(op, unit, "fp32")

    # 0.5 MiB: 8,192 lines, each missed once (160,000 ids make every line distinct)
    assert lookup(131_072) == pytest.approx(8192 * 48.0, rel=1e-3)
    # 16 MiB, the L2 holds 1/16 of it: an id that comes back to a line misses 15 times in 16
    lines = 4_194_304 // 16
    distinct = lines * (1 - (1 - 1 / lines) ** 160_000)
    assert lookup(4_194_304) == pytest.approx((distinct + (160_000 - distinct) * 15 / 16) * 48.0, rel=1e-6)
