"""Chip, op, graph and mapping features, and the chip distance."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from chips import Chip, load_chip, override, unit_kinds
from chips.schema import DTYPES
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph
from hwsim.studies.optimize.features import (
    chip_distance,
    chip_features,
    graph_features,
    mapping_features,
    op_features,
)
from tests.helpers import random_chips

vectors = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d", "unit.x.cores_log2"]), st.floats(-50, 50), max_size=5
)


class TestChipFeatures:
    def test_same_names_on_every_chip(self) -> None:
        names = [{k for k in chip_features(load_chip(c)) if not k.startswith("unit.")} for c in
                 ("rk3588", "jetson_orin_nano", "edge8")]  # fmt: skip
        assert names[0] == names[1] == names[2]
        for kind in unit_kinds():
            assert {f"{kind}.peak_{d}_log2_gflops" for d in DTYPES} <= names[0]

    def test_absent_kinds_are_zero(self) -> None:
        jetson = chip_features(load_chip("jetson_orin_nano"))
        assert all(v == 0.0 for k, v in jetson.items() if k.startswith(("npu.", "dsp.")))
        assert jetson["gpu.units"] == 1.0 and jetson["gpu.compute_units_log2"] > 0

    def test_peak_follows_the_npu_clock_and_cores(self) -> None:
        rk = load_chip("rk3588")
        base = chip_features(rk)["npu.peak_int8_log2_gflops"]
        # 3 cores x 32 x 32 PEs x 1 MAC x 2 FLOP at 1 GHz
        assert math.isclose(base, math.log2(1 + 3 * 2048))
        double = chip_features(override(rk, ["npu.clock_mhz=2000"]))["npu.peak_int8_log2_gflops"]
        assert math.isclose(double, math.log2(1 + 6 * 2048))
        # int4 requests run as int8 on this NPU; fp32 requests cannot run there at all
        assert chip_features(rk)["npu.peak_int4_log2_gflops"] == base
        assert chip_features(rk)["npu.peak_fp32_log2_gflops"] == 0.0

    def test_sram_and_ridge(self) -> None:
        rk = load_chip("rk3588")
        f = chip_features(rk)
        assert math.isclose(f["npu.onchip_log2_bytes"], math.log2(1 + 384 * 1024))
        assert math.isclose(f["npu.ridge_int8_log2_flop_per_byte"], math.log2(1 + 3 * 2048 / 34.1))
        half = chip_features(override(rk, ["dram.bandwidth_gbps=17.05"]))
        assert half["npu.ridge_int8_log2_flop_per_byte"] > f["npu.ridge_int8_log2_flop_per_byte"]

    @given(random_chips())
    @settings(max_examples=25, deadline=None)
    def test_finite_and_nonnegative(self, chip: Chip) -> None:
        f = chip_features(chip)
        assert all(math.isfinite(v) and v >= 0 for v in f.values())
        assert sum(f[f"{k}.units"] for k in unit_kinds()) == len(chip.units)


class TestChipDistance:
    @given(vectors, vectors)
    def test_symmetric_and_zero_on_itself(self, a: dict[str, float], b: dict[str, float]) -> None:
        assert chip_distance(a, b) == chip_distance(b, a)
        assert chip_distance(a, a) == 0.0

    @given(vectors, vectors, vectors)
    def test_triangle_inequality(self, a: dict[str, float], b: dict[str, float], c: dict[str, float]) -> None:
        assert chip_distance(a, c) <= chip_distance(a, b) + chip_distance(b, c) + 1e-9

    def test_unit_entries_do_not_count(self) -> None:
        assert chip_distance({"unit.npu.cores_log2": 2.0}, {}) == 0.0

    @given(st.sampled_from(["npu.clock_mhz=1250", "npu.clock_mhz=750", "npu.sram_kib=192",
                            "npu.sram_kib=768", "npu.cores=2", "dram.bandwidth_gbps=17.05"]))  # fmt: skip
    @settings(max_examples=6, deadline=None)
    def test_a_variant_is_nearer_its_base_than_another_chip(self, change: str) -> None:
        rk = load_chip("rk3588")
        base, variant = chip_features(rk), chip_features(override(rk, [change]))
        assert 0 < chip_distance(base, variant) < chip_distance(base, chip_features(load_chip("jetson_orin_nano")))
        assert chip_distance(base, variant) < chip_distance(base, chip_features(load_chip("edge8")))


class TestOpFeatures:
    def test_conv_and_table(self, yolov8n: ModelGraph) -> None:
        rk = load_chip("rk3588")
        table = cost_table(yolov8n, rk, "int8")
        conv = next(o for o in yolov8n.ops() if o.category == "conv")
        f = op_features(conv, table)
        assert f["cat.conv"] == 1.0 and sum(v for k, v in f.items() if k.startswith("cat.")) == 1.0
        assert f["dtype.int8"] == 1.0 and op_features(conv)["dtype.fp32"] == 1.0
        assert f["gemm_m_log2"] > 0 and f["kernel_log2"] > 0 and f["units_eligible"] >= 2
        assert "best_log2_ns" not in op_features(conv)
        # int8 moves a quarter of the fp32 bytes: the intensity goes up
        assert f["intensity_log2"] > op_features(conv)["intensity_log2"]

    def test_non_gemm_op_has_no_gemm(self, yolov8n: ModelGraph) -> None:
        op = next(o for o in yolov8n.ops() if o.category == "activation")
        f = op_features(op)
        assert f["gemm_m_log2"] == f["kernel_log2"] == f["macs_log2"] == 0.0 and f["cat.activation"] == 1.0


def test_graph_features(yolov8n: ModelGraph) -> None:
    f = graph_features(yolov8n)
    assert math.isclose(sum(v for k, v in f.items() if k.startswith("share.")), 1.0)
    assert f["share.conv"] > 0.9 and f["depth_log2"] > 0 and f["ops_log2"] > f["depth_log2"] - 1


class TestMappingFeatures:
    def test_one_hots(self) -> None:
        f = mapping_features({"dataflow": "os", "layout": "im2col", "cores": 2, "fusion": True})
        assert f == {"cores.set": 1.0, "cores_log2": math.log2(3), "dataflow.os": 1.0,
                     "layout.im2col": 1.0, "fusion.on": 1.0}  # fmt: skip

    def test_a_pinned_unit_carries_its_kind_given_the_chip(self) -> None:
        rk = chip_features(load_chip("rk3588"))
        f = mapping_features({"unit": "npu"}, rk)
        assert f["unit.kind.npu"] == 1.0 and f["unit.peak_int8_log2_gflops"] == rk["unit.npu.peak_int8_log2_gflops"]
        assert mapping_features({"unit": "cpu_big"}, rk)["unit.kind.cpu"] == 1.0
        assert mapping_features({"unit": "nope"}, rk) == {"unit.pinned": 1.0}
