"""The NPU's systolic-array cycle count against SCALE-Sim v3, and its SRAM/DRAM plan.

Reference rows: ``tests/data/scalesim/`` (see its README for how they were made).
"""

from __future__ import annotations

import csv
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from cost_models.npu import DATAFLOWS, array_cycles, array_folds, sram_plan
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.op_metrics import metrics
from tests.helpers import DATA

DATA = DATA / "scalesim"
#: The issue's bar: within 5% of SCALE-Sim's stall-free compute cycles on every case.
TOLERANCE = 0.05


def _reference_rows() -> list[dict[str, str]]:
    rows = []
    for name in ("reference_16x16.csv", "generated.csv"):
        with (DATA / name).open(newline="") as f:
            rows += [r for r in csv.DictReader(f) if r.get("status", "ok") == "ok"]
    return rows


ROWS = _reference_rows()


def test_reference_covers_every_dataflow_and_several_array_shapes() -> None:
    assert {r["dataflow"] for r in ROWS} == set(DATAFLOWS)
    assert len({(r["rows"], r["cols"]) for r in ROWS}) >= 5
    assert {r["kind"] for r in ROWS} == {"gemm", "conv"}


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['config']}-{r['layer']}" for r in ROWS])
def test_compute_cycles_match_scalesim(row: dict[str, str]) -> None:
    gemm = (1, int(row["M"]), int(row["N"]), int(row["K"]))
    ours = array_cycles(gemm, int(row["rows"]), int(row["cols"]), row["dataflow"])
    ref = int(row["compute_cycles_no_stall"])
    assert abs(ours - ref) <= TOLERANCE * ref, (ours, ref)


class TestArrayCycles:
    @settings(max_examples=60, deadline=None)
    @given(
        m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(1, 300),
        rows=st.integers(1, 64), cols=st.integers(1, 64), df=st.sampled_from(DATAFLOWS),
    )  # fmt: skip
    def test_never_beats_the_pe_count_and_grows_with_work(
        self, m: int, n: int, k: int, rows: int, cols: int, df: str
    ) -> None:
        c = array_cycles((1, m, n, k), rows, cols, df)
        assert (c + 1) * rows * cols >= m * n * k
        assert array_cycles((1, m + 1, n, k), rows, cols, df) >= c
        assert array_cycles((1, m, n, k + 1), rows, cols, df) >= c
        assert array_cycles((2, m, n, k), rows, cols, df) == 2 * (c + 1) - 1

    def test_tile_quantization_one_extra_channel_costs_a_fold(self) -> None:
        full = array_folds((1, 100, 32, 32), 32, 32, "ws")
        over = array_folds((1, 100, 33, 32), 32, 32, "ws")
        assert (full[0], over[0]) == (1, 2)

    def test_empty_gemm_takes_no_cycles(self) -> None:
        assert array_cycles((1, 0, 8, 8), 8, 8, "os") == 0

    def test_unknown_dataflow_is_an_error_that_lists_the_known(self) -> None:
        with pytest.raises(ValueError, match="ws"):
            array_cycles((1, 8, 8, 8), 8, 8, "rs")

    def test_dataflow_choice_matters_for_skinny_gemms(self) -> None:
        # one token through a 512x1000 layer: ws streams M=1 over 32*63 folds; os streams K=512 over 63 folds
        fc = (1, 1, 1000, 512)
        assert array_cycles(fc, 16, 16, "os") < array_cycles(fc, 16, 16, "ws") / 2


class TestSramPlan:
    def test_working_set_in_half_the_sram_is_one_tile(self) -> None:
        plan = sram_plan(4096, 4096, 4096, 384 * 1024, 3 * 32 * 32)
        assert (plan.tiles, plan.double_buffered) == (1, True)
        assert (plan.dram_read_bytes, plan.dram_write_bytes) == (8192, 4096)

    @settings(max_examples=40, deadline=None)
    @given(i=st.integers(0, 10**6), w=st.integers(0, 10**6), o=st.integers(0, 10**6), kib=st.integers(16, 1024))
    def test_two_tiles_always_fit_and_reads_cover_the_operands(self, i: int, w: int, o: int, kib: int) -> None:
        plan = sram_plan(i, w, o, kib * 1024, 3 * 16 * 16)
        assert 2 * (i + w + o) / plan.tiles <= kib * 1024 or i + w + o == 0
        assert plan.dram_read_bytes >= i + w
        assert plan.dram_write_bytes == o

    def test_working_set_beyond_sram_is_re_read(self) -> None:
        plan = sram_plan(300_000, 400_000, 100_000, 200_000, 3 * 32 * 32)
        assert plan.dram_read_bytes > 700_000
        assert plan.tiles >= math.ceil(800_000 / 100_000)

    def test_no_double_buffer_when_a_fold_fits_only_once(self) -> None:
        plan = sram_plan(1000, 1000, 1000, 1500, 1000)
        assert not plan.double_buffered
        assert plan.dram_read_bytes == 3000  # one operand re-read


def _npu_chip(sram_kib: float, dataflow: str = "ws", dram_gbps: float = 10.0) -> object:
    return chip_from_dict({
        "name": "n", "dram": {"bandwidth_gbps": dram_gbps, "latency_ns": 0}, "domains": [{"name": "d"}],
        "units": [{"name": "npu", "kind": "npu", "domain": "d", "clock_mhz": 1000, "mac_rows": 16,
                   "mac_cols": 16, "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": sram_kib,
                   "dataflow": dataflow}],
    })  # fmt: skip


def _conv(c_in: int, c_out: int, hw: int) -> Op:
    x = Tensor("x", (1, c_in, hw, hw), "float32")
    w = Tensor("w", (c_out, c_in, 3, 3), "float32", is_weight=True)
    y = Tensor("y", (1, c_out, hw, hw), "float32")
    m = metrics("Conv", [x, w], [y], {"pads": (1, 1, 1, 1)})
    return Op("conv", "Conv", m.category, (x, w), (y,), {"pads": (1, 1, 1, 1)}, m.macs, m.flops)


class TestNpuModel:
    def test_compute_time_is_the_array_cycle_count_at_the_clock(self) -> None:
        op = _conv(64, 64, 28)
        for df in DATAFLOWS:
            cost = estimate(op, _npu_chip(1024, df), "npu")  # type: ignore[arg-type]
            assert cost is not None
            assert cost.compute_ns == pytest.approx(array_cycles((1, 784, 64, 576), 16, 16, df))
            assert df in cost.note

    def test_small_sram_re_reads_from_dram_and_is_slower(self) -> None:
        op = _conv(256, 256, 28)
        big = estimate(op, _npu_chip(4096, dram_gbps=1.0), "npu")  # type: ignore[arg-type]
        small = estimate(op, _npu_chip(64, dram_gbps=1.0), "npu")  # type: ignore[arg-type]
        assert big is not None and small is not None
        assert small.dram_read_bytes > big.dram_read_bytes
        assert small.latency_ns > big.latency_ns

    def test_int4_halves_the_array_time(self) -> None:
        chip = chip_from_dict({
            "name": "n", "dram": {"bandwidth_gbps": 100.0, "latency_ns": 0}, "domains": [{"name": "d"}],
            "units": [{"name": "npu", "kind": "npu", "domain": "d", "clock_mhz": 1000, "mac_rows": 16,
                       "mac_cols": 16, "macs_per_pe_per_cycle": {"int4": 2.0, "int8": 1.0}, "sram_kib": 1024}],
        })  # fmt: skip
        op = _conv(64, 64, 28)
        c8, c4 = estimate(op, chip, "npu", "int8"), estimate(op, chip, "npu", "int4")
        assert c8 is not None and c4 is not None
        assert c4.compute_ns == pytest.approx(c8.compute_ns / 2)
        assert c4.dram_read_bytes < c8.dram_read_bytes

    def test_big_layer_is_tiled_for_the_engine_to_double_buffer(self) -> None:
        cost = estimate(_conv(256, 256, 56), _npu_chip(384), "npu")  # type: ignore[arg-type]
        assert cost is not None and cost.tiles > 1
        assert f"{cost.tiles} SRAM tiles" in cost.note

    def test_single_buffered_sram_serialises_loads_and_compute(self) -> None:
        op = _conv(16, 16, 8)
        roomy = estimate(op, _npu_chip(64), "npu")  # type: ignore[arg-type]
        tight = estimate(op, _npu_chip(1), "npu")  # type: ignore[arg-type]  # 1 KiB < two 16x16 folds
        assert roomy is not None and tight is not None
        assert "single-buffered" in tight.note and tight.tiles == 1
        assert tight.latency_ns >= tight.compute_ns + tight.memory_ns
        assert roomy.latency_ns < roomy.compute_ns + roomy.memory_ns
