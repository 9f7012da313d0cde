"""Tests for ``cost_models``: the cost table over the bundled chips and models, and the
behaviour of each unit kind's model (NPU array geometry, SRAM and cache tiling, GPU waves,
CPU cache levels, DSP strengths, dtype fallback).

Modified chips are built with ``chips.chip_from_dict`` from the bundled YAML's data with one
field changed; single ops are built from :class:`graph_ir.Tensor` with ``graph_ir.metrics``.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import networkx as nx
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import CATALOG_DIR, Chip, CpuUnit, NpuUnit, bundled_chips, chip_from_dict, load_chip
from cost_models import OpCost, UnplaceableError, cost_table, estimate, model_for
from cost_models.base import tiling_extra_bytes
from cost_models.gpu import wave_utilization
from cost_models.npu import array_cycles, gemm_of
from graph_ir import ModelGraph, Op, Tensor, load_onnx, metrics
from graph_ir.synthetic import random_dag
from tests.helpers import ROOT

MODELS_DIR = ROOT / "examples" / "models"
CHIPS = sorted(bundled_chips())
TABLE_MODELS = ("resnet18", "bert_base", "audio_kws")
KIB = 1024


@functools.cache
def bundled_model(name: str) -> ModelGraph:
    return load_onnx(MODELS_DIR / f"{name}.onnx")


@functools.cache
def _chip_data(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (CATALOG_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    )
    return data


def chip_data(name: str) -> dict[str, Any]:
    """A fresh, freely modifiable copy of a bundled chip's YAML data."""
    return copy.deepcopy(_chip_data(name))


def unit_data(data: dict[str, Any], name: str) -> dict[str, Any]:
    (unit,) = [u for u in data["units"] if u["name"] == name]
    return unit


def modified_chip(name: str, change: Callable[[dict[str, Any]], None]) -> Chip:
    data = chip_data(name)
    change(data)
    return chip_from_dict(data, source=f"{name} (modified)")


@functools.cache
def chip(name: str) -> Chip:
    return load_chip(name)


def make_op(
    op_type: str,
    inputs: Sequence[Tensor],
    outputs: Sequence[Tensor],
    attrs: Mapping[str, object] | None = None,
    name: str = "op",
) -> Op:
    attrs = dict(attrs or {})
    m = metrics(op_type, inputs, outputs, attrs)
    return Op(name, op_type, m.category, tuple(inputs), tuple(outputs), attrs, m.macs, m.flops)


def act(name: str, *shape: int, dtype: str = "float32") -> Tensor:
    return Tensor(name, shape, dtype)


def wt(name: str, *shape: int, dtype: str = "float32") -> Tensor:
    return Tensor(name, shape, dtype, is_weight=True)


def conv(cin: int, cout: int, hw: int, k: int = 3, group: int = 1, dtype: str = "float32") -> Op:
    """A 'same' conv: (1, cin, hw, hw) -> (1, cout, hw, hw)."""
    return make_op(
        "Conv",
        [act("x", 1, cin, hw, hw, dtype=dtype), wt("w", cout, cin // group, k, k, dtype=dtype)],
        [act("y", 1, cout, hw, hw, dtype=dtype)],
        {"kernel_shape": (k, k), "group": group},
    )


def matmul(m: int, k: int, n: int, op_type: str = "MatMul") -> Op:
    return make_op(op_type, [act("a", m, k), wt("b", k, n)], [act("y", m, n)])


def relu(*shape: int) -> Op:
    return make_op("Relu", [act("x", *shape)], [act("y", *shape)])


def stft() -> Op:
    """1 s of 16 kHz audio, 512-point frames, hop 160, onesided."""
    return make_op(
        "STFT",
        [
            act("s", 1, 16000, 1),
            wt("step", dtype="int64"),
            wt("win", 512),
            wt("len", dtype="int64"),
        ],
        [act("y", 1, 98, 257, 2)],
        {"onesided": 1},
    )


def graph_of(*ops: Op) -> ModelGraph:
    """A graph of independent ops (no edges)."""
    g = nx.DiGraph()
    for op in ops:
        g.add_node(op.name, op=op)
    inputs = tuple(t for op in ops for t in op.activations)
    outputs = tuple(t for op in ops for t in op.outputs)
    producer = {t.name: op.name for op in ops for t in op.outputs}
    return ModelGraph("ops", g, inputs, outputs, producer, tuple(op.name for op in ops))


def assert_sane(cost: OpCost) -> None:
    for v in (cost.compute_ns, cost.memory_ns, cost.overhead_ns, cost.energy_pj):
        assert math.isfinite(v) and v >= 0, cost
    assert cost.dram_read_bytes >= 0 and cost.dram_write_bytes >= 0
    assert cost.latency_ns == max(cost.compute_ns, cost.memory_ns) + cost.overhead_ns


def npu_util(cost: OpCost) -> float:
    match = re.search(r"array (\d+)% busy", cost.note)
    assert match, cost.note
    return int(match.group(1)) / 100


# ---------------------------------------------------------------- cost_table
class TestCostTable:
    @pytest.mark.parametrize("precision", ["int8", "model"])
    @pytest.mark.parametrize("model", TABLE_MODELS)
    @pytest.mark.parametrize("chip_name", CHIPS)
    def test_every_op_has_a_sane_eligible_unit(
        self, chip_name: str, model: str, precision: str
    ) -> None:
        graph, c = bundled_model(model), chip(chip_name)
        table = cost_table(graph, c, precision)
        assert table.precision == precision
        assert set(table.costs) == set(graph.order)
        unit_names = [u.name for u in c.units]
        for op in graph.ops():
            row = table.costs[op.name]
            assert row, op.name
            assert list(table.eligible(op.name)) == [u for u in unit_names if u in row]
            for unit, cost in row.items():
                assert cost.unit == unit
                assert cost.dtype in c.unit(unit).dtypes()
                assert_sane(cost)
            assert table.best(op.name).latency_ns == min(x.latency_ns for x in row.values())

    @pytest.mark.parametrize("chip_name", CHIPS)
    def test_table_agrees_with_estimate(self, chip_name: str) -> None:
        graph, c = bundled_model("resnet18"), chip(chip_name)
        table = cost_table(graph, c, "int8")
        for op in graph.ops():
            for unit in c.units:
                assert table.costs[op.name].get(unit.name) == estimate(op, c, unit.name, "int8")

    @pytest.mark.parametrize("chip_name", CHIPS)
    def test_identical_ops_get_identical_costs(self, chip_name: str) -> None:
        graph = bundled_model("resnet18")
        table = cost_table(graph, chip(chip_name), "int8")
        groups: dict[tuple[object, ...], list[str]] = {}
        for op in graph.ops():
            key = (
                op.op_type,
                tuple((t.shape, t.dtype, t.is_weight) for t in op.inputs),
                tuple(t.shape for t in op.outputs),
                tuple(sorted(op.attrs.items())),
            )
            groups.setdefault(key, []).append(op.name)
        repeated = [names for names in groups.values() if len(names) > 1]
        assert repeated  # resnet18 repeats its blocks
        for names in repeated:
            rows = [table.costs[n] for n in names]
            assert all(r == rows[0] for r in rows[1:]), names

    def test_empty_graph(self) -> None:
        table = cost_table(random_dag(0), chip("rk3588"))
        assert table.costs == {}

    def test_unknown_precision(self) -> None:
        with pytest.raises(ValueError, match="fp8"):
            cost_table(bundled_model("resnet18"), chip("rk3588"), "fp8")

    def test_unplaceable_names_the_node(self) -> None:
        npu_only = chip_from_dict(
            {
                "name": "npu_only",
                "dram": {"bandwidth_gbps": 10, "latency_ns": 100},
                "domains": [{"name": "npu"}],
                "units": [
                    {
                        "name": "npu", "kind": "npu", "domain": "npu", "clock_mhz": 1000,
                        "mac_rows": 8, "mac_cols": 8, "macs_per_pe_per_cycle": {"int8": 1.0},
                        "sram_kib": 64, "supported_ops": ["Conv"],
                    }
                ],
            }
        )  # fmt: skip
        ok = conv(8, 8, 8)
        softmax = make_op("Softmax", [act("s", 1, 10)], [act("p", 1, 10)], name="head/softmax")
        assert set(cost_table(graph_of(ok), npu_only).costs) == {"op"}
        with pytest.raises(UnplaceableError, match=r"'head/softmax' \(Softmax\).*npu_only.*int8"):
            cost_table(graph_of(ok, softmax), npu_only, "int8")

    def test_layout_ops_are_free_everywhere(self) -> None:
        c = chip("rk3588")
        op = make_op(
            "Reshape", [act("x", 1, 64, 7, 7), wt("shape", 2, dtype="int64")], [act("y", 1, 3136)]
        )
        row = cost_table(graph_of(op), c).costs["op"]
        assert set(row) == {u.name for u in c.units}
        assert all(cost.latency_ns == 0 and cost.dram_bytes == 0 for cost in row.values())

    def test_unknown_ops_run_on_cpus_only(self) -> None:
        c = chip("rk3588")
        op = make_op("Det", [act("x", 4, 3, 3)], [act("y", 4)])
        assert op.category == "unknown"
        assert set(cost_table(graph_of(op), c).costs["op"]) == {"cpu_big", "cpu_little"}


# ---------------------------------------------------------------- NPU
class TestNpu:
    def test_array_cycles_doubles_past_the_array_edge(self) -> None:
        # weight-stationary fold as SCALE-Sim v3 counts it: load 32 weight rows, stream M=100,
        # skew 31 + drain 31; the last cycle is counted from 0
        fold = 32 + 100 + 31 + 31
        assert array_cycles((1, 100, 32, 32), 32, 32) == fold - 1
        assert array_cycles((1, 100, 33, 32), 32, 32) == 2 * fold - 1  # N: a second column fold
        assert array_cycles((1, 100, 32, 33), 32, 32) == 2 * fold - 1  # K: a second row fold
        assert array_cycles((3, 100, 32, 32), 32, 32) == 3 * fold - 1

    def test_array_cycles_empty_stream(self) -> None:
        assert array_cycles((1, 0, 32, 32), 32, 32) == 0  # no work, no fold

    def test_gemm_of(self) -> None:
        assert gemm_of(conv(64, 128, 56)) == (1, 56 * 56, 128, 64 * 9)
        assert gemm_of(conv(64, 64, 56, group=64)) == (1, 56 * 56, 64, 9)
        assert gemm_of(conv(64, 64, 56, group=4)) == (4, 56 * 56, 16, 16 * 9)
        assert gemm_of(matmul(128, 768, 64)) == (1, 128, 64, 768)
        assert gemm_of(relu(1, 64)) is None

    def test_dense_conv_is_compute_bound_and_fills_the_array(self) -> None:
        c = chip("rk3588")
        cost = estimate(conv(64, 64, 56), c, "npu", "int8")
        assert cost is not None
        assert cost.bound == "compute"
        assert npu_util(cost) > 0.9
        assert cost.dtype == "int8"

    def test_depthwise_uses_the_array_poorly(self) -> None:
        c = chip("rk3588")
        clock_ghz = c.unit("npu").clock_mhz * 1e-3
        dense, depthwise = conv(64, 64, 56), conv(64, 64, 56, group=64)
        cd, cw = estimate(dense, c, "npu"), estimate(depthwise, c, "npu")
        assert cd is not None and cw is not None
        dense_rate = dense.macs / (cd.compute_ns * clock_ghz)
        dw_rate = depthwise.macs / (cw.compute_ns * clock_ghz)
        assert dw_rate < 0.5 * dense_rate
        assert npu_util(cw) < 0.5

    @pytest.mark.parametrize("chip_name", ["rk3588", "edge8"])
    def test_npu_beats_cpu_on_a_large_conv(self, chip_name: str) -> None:
        c = chip(chip_name)
        op = conv(128, 128, 56)
        npu = estimate(op, c, "npu", "int8")
        assert npu is not None
        for unit in c.units:
            if unit.kind == "cpu":
                cpu = estimate(op, c, unit.name, "int8")
                assert cpu is not None
                assert npu.latency_ns < cpu.latency_ns / 5

    def test_unsupported_op_type_is_ineligible(self) -> None:
        c = chip("rk3588")
        erf = make_op("Erf", [act("x", 1, 128, 3072)], [act("y", 1, 128, 3072)])
        npu = c.unit("npu")
        assert "Erf" not in (npu.supported_ops or ())
        assert estimate(erf, c, "npu", "int8") is None
        assert estimate(erf, c, "gpu", "int8") is not None

    @pytest.mark.parametrize("precision", ["fp16", "bf16", "fp32"])
    def test_edge8_npu_has_no_float(self, precision: str) -> None:
        c = chip("edge8")
        assert estimate(conv(64, 64, 56), c, "npu", precision) is None
        assert estimate(conv(64, 64, 56), c, "npu", "int8") is not None

    def test_edge8_float_model_never_uses_the_npu(self) -> None:
        table = cost_table(bundled_model("resnet18"), chip("edge8"), "fp16")
        assert all("npu" not in row for row in table.costs.values())


# ---------------------------------------------------------------- SRAM / cache tiling
class TestTilingExtraBytes:
    def test_fits(self) -> None:
        assert tiling_extra_bytes(100, 100, 100, 1000) == (0, 1)

    def test_empty(self) -> None:
        assert tiling_extra_bytes(0, 0, 0, 0) == (0, 1)
        assert tiling_extra_bytes(0, 0, 0, 1024) == (0, 1)

    def test_keeps_the_cheaper_tiling(self) -> None:
        assert tiling_extra_bytes(3000, 4000, 1000, 2000) == (8000, 3)  # re-read weights 2x
        assert tiling_extra_bytes(4000, 3000, 1000, 2000) == (8000, 3)  # re-read inputs 2x

    sizes = st.integers(min_value=0, max_value=1 << 30)

    @settings(max_examples=200, deadline=None)
    @given(in_b=sizes, w_b=sizes, out_b=sizes, cap=st.integers(min_value=1, max_value=1 << 26))
    def test_properties(self, in_b: int, w_b: int, out_b: int, cap: int) -> None:
        extra, tiles = tiling_extra_bytes(in_b, w_b, out_b, cap)
        assert extra >= 0 and tiles >= 1
        if in_b + w_b + out_b <= cap:
            assert (extra, tiles) == (0, 1)
        if in_b > cap / 2 and w_b > cap / 2:
            assert extra > 0 and tiles > 1
            assert extra >= min(in_b, w_b)  # one of the operands is read at least twice
        if tiles == 1:
            assert extra == 0

    def test_big_gemm_on_edge8_npu_refetches(self) -> None:
        big = chip("edge8")

        def huge_sram(data: dict[str, Any]) -> None:
            unit_data(data, "npu")["sram_kib"] = 1 << 20

        roomy = modified_chip("edge8", huge_sram)
        op = make_op("Gemm", [act("a", 512, 1024), wt("b", 1024, 1024)], [act("y", 512, 1024)])
        small, large = estimate(op, big, "npu", "int8"), estimate(op, roomy, "npu", "int8")
        assert small is not None and large is not None
        in_b, w_b, out_b = 512 * 1024, 1024 * 1024, 512 * 1024
        assert large.dram_read_bytes == in_b + w_b
        extra, tiles = tiling_extra_bytes(in_b, w_b, out_b, 256 * KIB)
        assert extra > 0
        assert small.dram_read_bytes == large.dram_read_bytes + extra
        assert small.dram_write_bytes == large.dram_write_bytes == out_b
        assert "SRAM tiles" in small.note and "SRAM tiles" not in large.note
        assert small.tiles >= tiles and large.tiles == 1
        assert small.memory_ns > large.memory_ns
        assert small.compute_ns == large.compute_ns

    def test_big_matmul_on_gpu_l2_refetches(self) -> None:
        c = chip("rk3588")

        def huge_l2(data: dict[str, Any]) -> None:
            unit_data(data, "gpu")["l2_kib"] = 1 << 20

        op = matmul(2048, 2048, 2048)
        small, large = (
            estimate(op, c, "gpu", "fp16"),
            estimate(op, modified_chip("rk3588", huge_l2), "gpu", "fp16"),
        )
        assert small is not None and large is not None
        assert small.dram_read_bytes > large.dram_read_bytes
        assert "L2 tiles" in small.note and "L2 tiles" not in large.note


# ---------------------------------------------------------------- GPU
class TestGpu:
    @pytest.mark.parametrize(
        ("threads", "expected"),
        [
            (4096, 1.0),
            (8192, 1.0),
            (5000, 5000 / 8192),
            (4097, 4097 / 8192),
            (2048, 0.5),
            (1, 1 / 4096),
        ],
    )
    def test_wave_utilization(self, threads: int, expected: float) -> None:
        assert wave_utilization(threads, 4, 1024) == pytest.approx(expected)

    def test_wave_utilization_empty(self) -> None:
        assert 0 < wave_utilization(0, 4, 1024) <= 1

    @settings(max_examples=100, deadline=None)
    @given(
        threads=st.integers(min_value=0, max_value=10**8),
        cus=st.integers(min_value=1, max_value=128),
        per_cu=st.integers(min_value=1, max_value=2048),
    )
    def test_wave_utilization_in_unit_interval(self, threads: int, cus: int, per_cu: int) -> None:
        u = wave_utilization(threads, cus, per_cu)
        assert 0 < u <= 1
        if threads and threads % (cus * per_cu) == 0:
            assert u == 1.0

    @pytest.mark.parametrize("chip_name", ["rk3588", "jetson_orin_nano"])
    def test_tiny_op_is_overhead_bound(self, chip_name: str) -> None:
        c = chip(chip_name)
        cost = estimate(relu(1, 16), c, "gpu", "fp16")
        assert cost is not None
        assert cost.bound == "overhead"
        assert cost.overhead_ns >= c.unit("gpu").op_overhead_ns

    def test_big_conv_fills_the_waves(self) -> None:
        cost = estimate(conv(64, 64, 56), chip("rk3588"), "gpu", "fp16")
        assert cost is not None
        # M = 56 * 56 = 49 x 64, N = 64: 49 whole 64x64 CTA tiles, no padding
        assert "CTA 64x64" in cost.note and "49 CTAs" in cost.note
        assert "100% of padded MACs useful" in cost.note
        assert cost.bound != "overhead"


# ---------------------------------------------------------------- CPU
CPU_OPS = {
    "relu16": relu(1, 16),
    "conv": conv(64, 64, 56),
    "depthwise": conv(64, 64, 56, group=64),
    "matmul_big": matmul(1024, 1024, 1024),
    "softmax": make_op("Softmax", [act("x", 12, 128, 128)], [act("y", 12, 128, 128)]),
    "stft": stft(),
}


class TestCpu:
    def test_small_working_set_fits_l1(self) -> None:
        c = chip("rk3588")
        cpu = c.unit("cpu_big")
        assert isinstance(cpu, CpuUnit)
        cost = estimate(relu(1, 16), c, "cpu_big", "fp32")
        assert cost is not None
        assert "fits 64 KiB" in cost.note
        assert cost.dram_bytes == 0
        assert cost.memory_ns == pytest.approx(2 * 16 * 4 / cpu.l1_bandwidth_gbps)

    def test_medium_working_set_fits_l3(self) -> None:
        cost = estimate(relu(1, 256, 1024), chip("rk3588"), "cpu_big", "fp32")  # 2 MiB
        assert cost is not None
        assert "fits 3072 KiB" in cost.note

    def test_large_working_set_spills(self) -> None:
        op = matmul(1024, 1024, 1024)  # 12 MiB at fp32
        cost = estimate(op, chip("rk3588"), "cpu_big", "fp32")
        assert cost is not None
        assert "spills" in cost.note
        assert cost.dram_read_bytes >= op.input_bytes("fp32") + op.weight_bytes("fp32")
        assert cost.dram_write_bytes == op.output_bytes("fp32")

    @pytest.mark.parametrize(
        ("chip_name", "unit"), [("rk3588", "cpu_big"), ("rk3588", "cpu_little"), ("edge8", "cpu")]
    )
    @settings(max_examples=25, deadline=None)
    @given(
        clocks=st.tuples(st.floats(100, 5000), st.floats(100, 5000)).map(sorted),
        op_name=st.sampled_from(sorted(CPU_OPS)),
        precision=st.sampled_from(["int8", "fp16", "fp32"]),
    )
    def test_lower_clock_never_faster(
        self, chip_name: str, unit: str, clocks: list[float], op_name: str, precision: str
    ) -> None:
        slow_mhz, fast_mhz = clocks

        def at(mhz: float) -> OpCost:
            def change(data: dict[str, Any]) -> None:
                unit_data(data, unit)["clock_mhz"] = mhz

            cost = estimate(CPU_OPS[op_name], modified_chip(chip_name, change), unit, precision)
            assert cost is not None
            return cost

        slow, fast = at(slow_mhz), at(fast_mhz)
        assert slow.latency_ns >= fast.latency_ns
        assert slow.compute_ns >= fast.compute_ns

    @settings(max_examples=25, deadline=None)
    @given(
        bandwidths=st.tuples(st.floats(0.5, 200), st.floats(0.5, 200)).map(sorted),
        op_name=st.sampled_from(sorted(CPU_OPS)),
    )
    def test_lower_dram_bandwidth_never_faster(self, bandwidths: list[float], op_name: str) -> None:
        low_bw, high_bw = bandwidths

        def at(gbps: float) -> Chip:
            def change(data: dict[str, Any]) -> None:
                data["dram"]["bandwidth_gbps"] = gbps

            return modified_chip("rk3588", change)

        low, high = at(low_bw), at(high_bw)
        op = CPU_OPS[op_name]
        for unit in low.units:
            a, b = estimate(op, low, unit.name, "int8"), estimate(op, high, unit.name, "int8")
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                assert a.latency_ns >= b.latency_ns, unit.name
                assert a.memory_ns >= b.memory_ns, unit.name


# ---------------------------------------------------------------- DSP
class TestDsp:
    @pytest.mark.parametrize("precision", ["int8", "fp32"])
    def test_stft_faster_on_dsp_than_cpu(self, precision: str) -> None:
        c = chip("edge8")
        dsp, cpu = estimate(stft(), c, "dsp", precision), estimate(stft(), c, "cpu", precision)
        assert dsp is not None and cpu is not None
        assert dsp.latency_ns < cpu.latency_ns

    def test_matmul_not_on_stock_edge8_dsp(self) -> None:
        assert estimate(matmul(512, 512, 512), chip("edge8"), "dsp", "int8") is None

    def test_large_matmul_slower_on_dsp_than_npu(self) -> None:
        def allow_matmul(data: dict[str, Any]) -> None:
            for name in ("dsp", "npu"):
                unit_data(data, name)["supported_ops"].append("MatMul")

        c = modified_chip("edge8", allow_matmul)
        op = matmul(512, 512, 512)
        dsp, npu = estimate(op, c, "dsp", "int8"), estimate(op, c, "npu", "int8")
        assert dsp is not None and npu is not None
        assert dsp.latency_ns > 5 * npu.latency_ns


# ---------------------------------------------------------------- dtype fallback
class TestDtypeFallback:
    def test_rk3588_gpu_runs_int8_as_fp16(self) -> None:
        cost = estimate(conv(64, 64, 56), chip("rk3588"), "gpu", "int8")
        assert cost is not None and cost.dtype == "fp16"
        # traffic at the dtype actually run: 2 bytes per element
        assert cost.dram_write_bytes == 64 * 56 * 56 * 2

    def test_model_precision_on_float32_runs_fp32(self) -> None:
        c = chip("rk3588")
        table = cost_table(bundled_model("resnet18"), c, "model")
        for row in table.costs.values():
            assert "npu" not in row  # rk3588's NPU has no fp32
            for unit, cost in row.items():
                assert "fp32" in c.unit(unit).dtypes()
                assert cost.dtype == "fp32"

    def test_model_precision_on_float16_op(self) -> None:
        c = chip("rk3588")
        cost = estimate(conv(64, 64, 56, dtype="float16"), c, "npu", "model")
        assert cost is not None and cost.dtype == "fp16"

    def test_int4_on_rk3588_npu_runs_int8(self) -> None:
        c = chip("rk3588")
        npu = c.unit("npu")
        assert isinstance(npu, NpuUnit) and "int4" not in npu.macs_per_pe_per_cycle
        cost = estimate(conv(64, 64, 56), c, "npu", "int4")
        assert cost is not None and cost.dtype == "int8"
        assert cost == estimate(conv(64, 64, 56), c, "npu", "int8")

    def test_int4_on_edge8_npu_is_faster_than_int8(self) -> None:
        c = chip("edge8")
        c4, c8 = (
            estimate(conv(64, 64, 56), c, "npu", "int4"),
            estimate(conv(64, 64, 56), c, "npu", "int8"),
        )
        assert c4 is not None and c8 is not None
        assert c4.dtype == "int4"
        assert c4.compute_ns < c8.compute_ns

    def test_model_for_unknown_kind(self) -> None:
        with pytest.raises(KeyError, match="tpu"):
            model_for("tpu")
