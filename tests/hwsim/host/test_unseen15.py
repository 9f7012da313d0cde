"""The fifteenth unseen batch (``benchmarks/heldout_unseen15.py``): each family runs under
onnxruntime, and the kernels its first run found mispriced are costed the way onnxruntime runs
them: a OneHot computes each output value alone (its own kernel class, probed), on one thread,
and a ScatterND copies its data input whole on one thread into memory that may no longer be in
L2 (the read for ownership a Concat pays)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx
import pytest

from chips.schema import chip_from_dict
from cost_models.cpu import COLD_DST_ATTR, intra_op_threads, kernel_type
from cost_models.table import estimate
from graph_ir.ir import Tensor
from graph_ir.onnx_import import load_onnx
from hwsim.host.validate import cache_residency, cpu_chip, predict_nodes
from tests.helpers import host_chip, load_benchmarks, make_op, runs_finite


def _unseen15() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen15")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen15()
    families = ("arcface", "decode", "mishnet", "scache", "tabular")
    assert sorted({k.split("_")[0] for k in mod.SIZES}) == sorted(families)
    assert all(sum(k.startswith(f + "_") for k in mod.SIZES) == 2 for f in families)
    small = {"arcface": mod.arcface(32, (8, 16), 1, 16), "decode": mod.decode(8, 32, 2, 2, 50),
             "mishnet": mod.mishnet(64, 4), "scache": mod.scache(16, 5, 32, 2, 2),
             "tabular": mod.tabular(16, (5, 3), 4, 16)}  # fmt: skip
    for name, model in small.items():
        runs_finite(model, tmp_path / f"{name}.onnx")


def test_a_onehot_on_its_last_axis_is_its_own_kernel_class_on_one_thread(tmp_path: Path) -> None:
    path = tmp_path / "tabular.onnx"
    onnx.save(_unseen15().tabular(16, (5, 3), 4, 16), str(path))
    onehots = [op for op in load_onnx(path).ops() if op.op_type == "OneHot"]
    assert len(onehots) == 2 and {kernel_type(op) for op in onehots} == {"OneHot"}
    ids = Tensor("i", (256,), "int64")
    last = make_op("OneHot", [ids], [Tensor("y", (256, 1024), "float32")], axis=-1)
    outer = make_op("OneHot", [ids], [Tensor("y", (1024, 256), "float32")], axis=0)
    assert (kernel_type(last), kernel_type(outer)) == ("OneHot", "OneHotOuter")
    assert intra_op_threads(last, 2) == intra_op_threads(outer, 2) == 1


def test_a_onehot_costs_its_output_values_at_its_probed_rate() -> None:
    data = host_chip(op_overhead_ns=0.0)
    data["units"][0]["efficiency"] = {"OneHot": 0.01, "OneHotOuter": 0.08}
    chip = cpu_chip(chip_from_dict(data), 1)
    ids = Tensor("i", (2048,), "int64")
    ns = {}
    for depth in (100, 1000):
        op = make_op("OneHot", [ids], [Tensor("y", (2048, depth), "float32")], axis=-1)
        cost = estimate(op, chip, "cpu", "model")
        assert cost is not None
        ns[depth] = cost.latency_ns
    assert ns[1000] / ns[100] == pytest.approx(10.0, rel=0.1)


def test_a_scatternd_into_a_cache_beyond_l2_pays_the_read_for_ownership(tmp_path: Path) -> None:
    chip = chip_from_dict(host_chip())
    unit = cpu_chip(chip, 1).units[0]
    preds = {}
    for cache in (64, 4096):  # 2 heads of 64 floats: 32 KiB or 2 MiB a cache tensor
        path = tmp_path / f"scache{cache}.onnx"
        onnx.save(_unseen15().scache(cache, 5, 128, 2, 1), str(path))
        graph = load_onnx(path)
        scatters = [op.name for op in graph.ops() if op.op_type == "ScatterND"]
        marks = cache_residency(graph, unit)
        cold = [n for n in scatters if COLD_DST_ATTR in marks.get(n, {})]
        assert len(scatters) == 2 and len(cold) == (2 if cache == 4096 else 0)
        preds[cache] = predict_nodes(graph, cpu_chip(chip, 1), 1, set())[scatters[0]]
        op = next(op for op in graph.ops() if op.name == scatters[0])
        assert intra_op_threads(op, 2) == 1
    # beyond L2 (2 MiB here) the copy streams its input, its output and the output's read for
    # ownership at the L3's 38 GB/s; within it, no read for ownership
    cache_bytes = 2 * 4096 * 64 * 4
    assert preds[4096].memory_ns == pytest.approx(3 * cache_bytes / 38.0, rel=0.01)
    assert preds[64].stall_ns == 0.0
