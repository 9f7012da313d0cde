"""``hwsim fingerprint``: cache-level detection, the chip file it writes, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import load_chip
from hwsim.cli import main
from hwsim.host.fingerprint import (
    FINGERPRINT_EFFICIENCY,
    KIB,
    QUICK_WEIGHT_STREAM,
    WEIGHT_STREAM_SHAPE,
    _cache_levels,
    _levels,
    _page_aligned_pair,
    gemv_dram_gbps,
    read_fingerprint,
    weight_stream_plan,
)
from hwsim.host.int8_probe import INT8_RATES
from hwsim.host.kernels import (
    LAYER_NORM_RATE,
    NORM_PROBE,
    RESIZE_PROBE,
    RESIZE_RATES,
    per_element_efficiencies,
    streaming_efficiency,
)
from hwsim.host.op_probes import PRICED_BY_PROBES, PROBE_RATES


class TestSweepArrays:
    @settings(max_examples=40, deadline=None)
    @given(st.integers(1, 300_000))
    def test_side_by_side_from_a_page_on_cache_lines(self, n: int) -> None:
        src, acc = _page_aligned_pair(n)
        a, b = src.ctypes.data, acc.ctypes.data
        assert a % 4096 == 0 and b % 64 == 0
        assert a + src.nbytes <= b < a + src.nbytes + 64  # the next cache line, no overlap
        assert len(src) == len(acc) == n and (src == 1.0).all() and (acc == 0.0).all()


class TestLevels:
    @settings(max_examples=40, deadline=None)
    @given(
        bws=st.lists(st.floats(10, 1000), min_size=1, max_size=4, unique=True).map(lambda b: sorted(b, reverse=True)),
        widths=st.lists(st.integers(2, 5), min_size=5, max_size=5),
        noise=st.lists(st.floats(0.95, 1.05), min_size=25, max_size=25),
    )
    def test_finds_each_plateau(self, bws: list[float], widths: list[int], noise: list[float]) -> None:
        # plateaus at least 1.6x apart, each two to five sizes wide, +-5 % noise
        levels = [bws[0]]
        for b in bws[1:]:
            if b < levels[-1] / 1.6:
                levels.append(b)
        sweep, size, i = [], 16, 0
        ends = []
        for lvl, w in zip(levels, widths, strict=False):
            for _ in range(w):
                sweep.append((size, lvl * noise[i]))
                size, i = size * 2, i + 1
            ends.append(size // 2)
        found = _levels(sweep)
        # the last plateau is memory: not a cache level
        assert [c for c, _ in found] == ends[:-1]
        for (_, bw), lvl in zip(found, levels, strict=False):
            assert bw == pytest.approx(lvl, rel=0.06)

    def test_flat_sweep_has_no_levels(self) -> None:
        assert _levels([(s, 50.0) for s in (1, 2, 4, 8)]) == []

    def test_one_point_transition_is_skipped(self) -> None:
        sweep = [(1, 100.0), (2, 100.0), (4, 60.0), (8, 20.0), (16, 20.0), (32, 5.0)]
        assert _levels(sweep) == [(2, 100.0), (16, 20.0)]


class TestCacheLevels:
    def test_a_lost_l1_step_does_not_make_l2_the_l1(self) -> None:
        # the sweep's first plateau ends at 1536 KiB: that is the L2 the OS reports, not L1
        caches = _cache_levels([(1536 * KIB, 140.0)], [(16 * KIB, 150.0)], {1: 48.0, 2: 2048.0, 3: 32768.0})
        assert [(c["level"], c["kib"], c["source"]) for c in caches] == [
            (1, 48.0, "/sys"), (2, 1536.0, "sweep"), (3, 32768.0, "/sys")]  # fmt: skip

    def test_without_os_figures_plateaus_are_levels_in_order(self) -> None:
        caches = _cache_levels([(48 * KIB, 200.0), (2048 * KIB, 140.0)], [], {})
        assert [(c["level"], c["kib"]) for c in caches] == [(1, 48.0), (2, 2048.0)]

    @pytest.mark.parametrize("llc_mib", [8, 32, 480, 4096])
    def test_quick_weight_stream_is_bounded_whatever_the_reported_llc(self, llc_mib: int) -> None:
        (_m, k, n), copies = weight_stream_plan(llc_mib * 1024 * KIB, quick=True)
        assert copies * k * n * 4 <= max(QUICK_WEIGHT_STREAM[1], 4 * k * n * 4)


class TestStreamingEfficiency:
    @settings(max_examples=20, deadline=None)
    @given(ns=st.floats(0.05, 5.0), rows=st.integers(128, 400))
    def test_the_efficiency_predicts_the_measured_rate_back(self, ns: float, rows: int) -> None:
        from chips.schema import chip_from_dict
        from cost_models.table import estimate
        from graph_ir.ir import Op, Tensor
        from graph_ir.op_metrics import metrics
        from tests.helpers import host_chip

        chip = chip_from_dict(host_chip())
        e = streaming_efficiency(chip, "LayerNormalization", ns)
        assert 0.0 < e <= 1.0
        data = host_chip()
        data["units"][0]["efficiency"] = {"LayerNormalization": e}
        data["units"][0]["op_overhead_ns"] = 0.0
        width = NORM_PROBE[0]
        x, y = Tensor("x", (1, rows, width), "float32"), Tensor("y", (1, rows, width), "float32")
        params = tuple(Tensor(n, (width,), "float32", is_weight=True) for n in "sb")
        m = metrics("LayerNormalization", (x, *params), (y,), {})
        cost = estimate(Op("ln", "LayerNormalization", m.category, (x, *params), (y,), {}, m.macs, m.flops),
                        chip_from_dict(data), "cpu", "model")  # fmt: skip
        assert cost is not None
        if e < 1.0:  # cache-resident rows of the probe's size or more: the measured rate (smaller ones pay set-up)
            assert cost.compute_ns == pytest.approx(ns * y.elements, rel=0.05)


class TestPerElementEfficiencies:
    @settings(max_examples=10, deadline=None)
    @given(ns=st.floats(0.05, 3.0), kernel=st.sampled_from(sorted(RESIZE_RATES)), channels=st.sampled_from([16, 48]))
    def test_a_resize_class_efficiency_predicts_the_measured_rate_back(self, ns: float, kernel: str, channels: int) -> None:
        from chips.schema import chip_from_dict
        from cost_models.cpu import NCHWC_ATTR, kernel_type
        from cost_models.table import estimate
        from graph_ir.ir import Op, Tensor
        from graph_ir.op_metrics import metrics
        from tests.helpers import host_chip

        effs = per_element_efficiencies(chip_from_dict(host_chip()), {RESIZE_RATES[kernel]: ns})
        assert set(effs) == {kernel} and 0.0 < effs[kernel] <= 1.0
        data = host_chip()
        data["units"][0]["efficiency"] = {"Resize": 0.5, **effs}  # the class's own, not the op type's
        data["units"][0]["op_overhead_ns"] = 0.0
        side = RESIZE_PROBE[1]
        x = Tensor("x", (1, channels, side, side), "float32")
        y = Tensor("y", (1, channels, 2 * side, 2 * side), "float32")
        attrs: dict[str, object] = {"mode": "nearest" if kernel == "ResizeNearest" else "linear"}
        if kernel == "ResizeLinearNchwc":
            attrs[NCHWC_ATTR] = 16
        m = metrics("Resize", (x,), (y,), attrs)
        op = Op("r", "Resize", m.category, (x,), (y,), attrs, m.macs, m.flops)
        assert kernel_type(op) == kernel
        cost = estimate(op, chip_from_dict(data), "cpu", "model")
        assert cost is not None
        if effs[kernel] < 1.0:  # the probe's rate per output element, at any channel count
            assert cost.compute_ns == pytest.approx(ns * y.elements, rel=0.05)


class TestCommand:
    def test_quick_fingerprint_writes_a_loadable_chip(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "host.yaml"
        assert main(["fingerprint", "--quick", "--threads", "1", "-o", str(out), "--name", "mybox"]) == 0
        chip = load_chip(out)
        assert chip.name == "mybox"
        (unit,) = chip.units
        assert unit.kind == "cpu" and unit.cores == 1
        assert unit.flops_per_cycle["fp32"] > 0
        # the peak is an achieved MatMul peak: large GEMM-like kernels reach all of it before calibration
        assert unit.efficiency.items() >= FINGERPRINT_EFFICIENCY.items() and unit.efficiency["MatMul"] == 1.0
        fp = read_fingerprint(out)
        assert fp is not None
        text = out.read_text()
        # LayerNormalization (no calibration model runs it alone) gets its measured rate, or a note
        if "LayerNormalization" in unit.efficiency:
            assert 0.0 < unit.efficiency["LayerNormalization"] <= 1.0 and fp["kernel_rates"][LAYER_NORM_RATE] > 0
        else:
            assert "LayerNormalization rate not resolved" in out.read_text()
        # its fixed time per row (rows of 32 floats against rows of 768): measured, or a note
        assert (unit.norm_row_ns or 0.0) > 0 or "norm_row_ns left out" in text
        # a reduction's time per row and per block (cost_models.cpu_reduce): measured, or a note
        assert (unit.reduce_row_ns or 0.0) > 0 or "reduce_row_ns left out" in text
        assert (unit.reduce_block_ns or 0.0) > 0 or "reduce_block_ns left out" in text
        assert (unit.reduce_column_row_ns or 0.0) > 0 or "reduce_column_row_ns left out" in text
        assert (unit.reduce_generic_ns or 0.0) > 0 or "reduce_generic_ns left out" in text
        assert (unit.fp32_batch_call_ns or 0.0) > 0 or "fp32_batch_call_ns left out" in text
        # an embedding's rows from DRAM (hwsim.host.gather_probe): measured, or a note
        assert ((unit.gather_dram_row_ns or 0.0) > 0 and (unit.gather_dram_line_ns or 0.0) > 0) or "gather_dram_row_ns" in text
        # the NCHWc depthwise conv's tiles, calls and assembly kernel (hwsim.host.depthwise_probe): measured, or a note
        for key in ("depthwise_tile_ns", "depthwise_row_ns", "depthwise_output_ns", "depthwise_tap_ns", "nchwc_activation_pass_ns"):
            assert getattr(unit, key) or f"{key} left out" in text
        assert set(unit.efficiency) <= {*FINGERPRINT_EFFICIENCY, "LayerNormalization", *RESIZE_RATES, *INT8_RATES,
                                        *PRICED_BY_PROBES}
        # each op type probed alone has its efficiency from its kernel time (a note where onnxruntime could not run it)
        for op_type, key in PROBE_RATES.items():
            assert (op_type in unit.efficiency and fp["kernel_rates"][key] > 0) or f"{op_type} probe not run" in text
        # the integer kernels of a QDQ model (no calibration model runs one): measured, or a note
        for kernel in INT8_RATES:
            assert 0.0 < unit.efficiency.get(kernel, 1.0) <= 1.0 and (kernel in unit.efficiency or kernel in text)
        assert (unit.requant_ns or 0.0) > 0 or "requant_ns and the fields measured against it left out" in text
        # narrow convs and one-row integer GEMMs (hwsim.host.int8_probe): measured, or named in a note
        for field in ("int8_conv_pixel_ns", "int8_im2col_pixel_ns", "int8_conv_mac_ps", "int8_conv_l2_mac_ps", "int8_gemv_call_ns",
                      "int8_gemv_gbps", "int8_gemv_far_gbps"):
            assert (getattr(unit, field) or 0.0) > 0 or field in text
        # the Resize classes no calibration model runs: measured (slowest plain linear), or a note
        for kernel in RESIZE_RATES:
            assert (kernel in unit.efficiency and 0.0 < unit.efficiency[kernel] <= 1.0) or f"{kernel} not resolved" in text
        if {"ResizeLinear", "ResizeLinearNchwc"} <= unit.efficiency.keys():
            assert fp["kernel_rates"][RESIZE_RATES["ResizeLinear"]] > fp["kernel_rates"][RESIZE_RATES["ResizeLinearNchwc"]]
        assert fp["threads"] == 1 and "onnxruntime" in fp["versions"] and fp["sweep"]
        assert "# Measured by `hwsim fingerprint`" in text and "matmul fp32" in text
        # the weight stream is measured, or left out with the reason: never a made-up value
        if unit.weight_stream_gbps is None:
            assert "weight stream:" in text and "left out" in text
        else:
            assert unit.weight_stream_gbps == pytest.approx(fp["weight_stream_gbps"], rel=0.01)
            assert fp["weight_stream_ms"]["dram"] > fp["weight_stream_ms"]["cache"]
            # the text names the MatMul that was measured, not the full run's
            assert "x".join(map(str, fp["weight_stream_shape"])) + " fp32 MatMul" in text
        assert "os (" not in text  # the cache source reads as words, not a nested parenthesis
        assert f"wrote {out}" in capsys.readouterr().out

    @pytest.mark.parametrize(
        ("args", "message"),
        [(["--threads", "0"], "--threads 0"), (["--threads", "999"], "--threads 999")],
    )
    def test_bad_threads(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
        out = tmp_path / "host.yaml"
        assert main(["fingerprint", "--quick", "-o", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
        assert not out.exists()

    def test_missing_out_folder(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "nope" / "host.yaml"
        assert main(["fingerprint", "--quick", "-o", str(out)]) == 2
        assert "does not exist" in capsys.readouterr().err


def test_a_malformed_fingerprint_rate_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import mlp, write_chip

    chip = write_chip(tmp_path / "host.yaml")
    chip.write_text('# fingerprint-json: {"matmul_gflops_1t": {"fp32": "fast"}}\n' + chip.read_text())
    results = tmp_path / "v.jsonl"
    assert main(["validate", str(chip), str(mlp(tmp_path / "m.onnx")), "--runs", "10", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(chip) in err and "matmul_gflops_1t.fp32" in err
    assert not results.exists()


def test_the_dram_gemv_probe_reads_every_weight_once_per_row() -> None:
    """Four distinct 768 x 3072 weights (the least the probe runs, 38 MB) read by one row each: a
    rate of a memory stream (0.5 to 1,000 GB/s on any host), from the time per MatMul."""
    _, k, n = WEIGHT_STREAM_SHAPE
    got = gemv_dram_gbps(1024 * KIB, min_s=0.05)
    assert got is not None and 0.5 < got < 1000.0
    assert 4 * k * n / got > 1000.0  # more than a microsecond per 9.4 MB matrix


class TestWeightStreamFloor:
    @pytest.mark.parametrize(("slower", "stall"), [(1.024, False), (1.22, True)])
    def test_only_a_slowdown_past_the_floor_is_a_stall(self, monkeypatch: pytest.MonkeyPatch, slower: float,
                                                       stall: bool) -> None:  # fmt: skip
        # the AMD EPYC's noise (2.4 % slower with the weights in DRAM) against the Xeon's real stall (22 %)
        from types import SimpleNamespace

        import hwsim.host.fingerprint as fpm

        made: list[bool] = []
        monkeypatch.setattr(fpm, "_parallel_matmuls", lambda m, k, n, copies, distinct: distinct)
        monkeypatch.setattr(fpm, "make_session", lambda distinct, *a: made.append(distinct) or SimpleNamespace(run=print))
        monkeypatch.setattr(fpm, "time_call", lambda *a, **k: SimpleNamespace(low_ns=5e6 * (slower if made[-1] else 1.0)))
        gbps, per, why, _ = fpm._weight_stream(32 * 2**20, 0.01, True)
        assert made == [True, False] and per["dram"] == pytest.approx(per["cache"] * slower)
        assert (gbps is not None) is stall and (why is None) is stall
