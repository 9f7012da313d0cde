"""The RKNN per-layer cycle benchmark (``benchmarks/bench_rknn_layer_cycles.py``): the copied
rows are consistent with the NPU they describe, and hwsim's array cycles stay near RKNN's
estimate on full-width convs (the kinds RKNN costs slower are reported, not asserted)."""

from __future__ import annotations

from tests.helpers import load_benchmarks

bench = load_benchmarks("doc_table", "bench_rknn_layer_cycles")


def test_rows_never_exceed_one_core_and_total_is_the_larger_count() -> None:
    rows = bench.measured()
    assert len(rows) == 17
    for row, macs, _ in rows:
        npu = int(row["rknn_npu_cycles"])
        assert macs <= 1024 * npu, row["layer"]  # one core: 1024 int8 MACs per cycle at most
        assert npu >= int(row["rknn_ddr_cycles"]), row["layer"]


def test_full_width_convs_within_a_quarter_of_rknn() -> None:
    full = [(row, cycles) for row, _, cycles in bench.measured() if bench.kind(row) == "full width"]
    assert len(full) == 11
    for row, cycles in full:
        assert 0.95 <= cycles / int(row["rknn_npu_cycles"]) <= 1.25, row["layer"]


def test_table_names_each_kind() -> None:
    text = bench.table()
    for kind in ("depthwise 3x3", "1x1, 64 in", "1x1, 16 in", "full width"):
        assert f"{kind}: hwsim / RKNN median" in text
