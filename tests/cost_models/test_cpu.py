"""CPU cost model (calibrated efficiencies, shape factors, Gather) and the chip side of
calibration files (``calibration:`` in a chip YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import ChipError, chip_from_dict, load_chip
from cost_models.cpu import (
    DEPTHWISE_FACTOR,
    HALF_EFFICIENCY_FLOPS,
    core_bytes,
    cyclic_kept,
    kernel_type,
    shape_factor,
)
from cost_models.table import cost_table, estimate
from graph_ir.ir import Op, Tensor
from tests.helpers import graph_from_ops, host_chip, make_op


def relu(n: int) -> Op:
    return make_op("Relu", [Tensor("x", (1, n), "float32")], [Tensor("y", (1, n), "float32")])


class TestCalibratedEfficiency:
    def test_is_a_core_rate_whatever_level_holds_the_data(self) -> None:
        # 1.5 MiB in + out sits in L2, 8 MiB in L3: at e = 0.1 both stream at 0.1 x L1 bandwidth
        small, big = relu(3 << 16), relu(1 << 20)
        plain = estimate(big, chip_from_dict(host_chip()), "cpu", "fp32")
        cal = [estimate(op, chip_from_dict(host_chip(efficiency={"Relu": 0.1})), "cpu", "fp32") for op in (small, big)]
        assert plain is not None and cal[0] is not None and cal[1] is not None
        assert plain.bound == "memory"
        per_byte = [c.compute_ns / core_bytes(op, "fp32") for c, op in zip(cal, (small, big), strict=True)]
        assert per_byte[0] == pytest.approx(per_byte[1]) == pytest.approx(1 / (200 * 0.1))
        assert cal[1].memory_ns == plain.memory_ns  # the level's own bandwidth stays physical
        assert cal[1].latency_ns > plain.latency_ns and cal[1].energy_pj > plain.energy_pj
        assert "calibrated 0.1" in cal[1].note

    def test_a_slow_level_still_binds(self) -> None:
        op = relu(1 << 20)  # 8 MiB from L3 at 38 GB/s: slower than 0.5 x L1
        plain = estimate(op, chip_from_dict(host_chip()), "cpu", "fp32")
        half = estimate(op, chip_from_dict(host_chip(efficiency={"Relu": 0.5})), "cpu", "fp32")
        assert plain is not None and half is not None
        assert half.latency_ns == pytest.approx(plain.latency_ns)

    def test_scales_a_recurrent_ops_weight_streaming(self) -> None:
        plain = estimate(lstm(20, 650), chip_from_dict(host_chip()), "cpu", "fp32")
        half = estimate(lstm(20, 650), chip_from_dict(host_chip(efficiency={"LSTM": 0.5})), "cpu", "fp32")
        assert plain is not None and half is not None
        assert half.memory_ns == pytest.approx(2 * plain.memory_ns)

    def test_other_op_types_untouched(self) -> None:
        op = relu(4096)
        plain = estimate(op, chip_from_dict(host_chip()), "cpu", "fp32")
        other = estimate(op, chip_from_dict(host_chip(efficiency={"Conv": 0.1})), "cpu", "fp32")
        assert plain == other

    @settings(max_examples=25, deadline=None)
    @given(effs=st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)).map(sorted),
           n=st.integers(1, 1 << 22), op_type=st.sampled_from(["Relu", "MatMul"]))  # fmt: skip
    def test_higher_efficiency_never_slower(self, effs: list[float], n: int, op_type: str) -> None:
        if op_type == "Relu":
            op = relu(n)
        else:
            k = max(1, int(n ** (1 / 3)))
            op = make_op("MatMul", [Tensor("a", (k, k), "float32"), Tensor("b", (k, k), "float32", True)],
                         [Tensor("y", (k, k), "float32")])  # fmt: skip
        lo, hi = (estimate(op, chip_from_dict(host_chip(efficiency={op_type: e})), "cpu", "fp32") for e in effs)
        assert lo is not None and hi is not None
        assert hi.latency_ns <= lo.latency_ns * (1 + 1e-9)


class TestShapes:
    def test_depthwise_conv_is_less_efficient(self) -> None:
        x, y = Tensor("x", (1, 32, 56, 56), "float32"), Tensor("y", (1, 32, 56, 56), "float32")
        dw = make_op("Conv", [x, Tensor("w", (32, 1, 3, 3), "float32", True)], [y], group=32, kernel_shape=(3, 3),
                     pads=(1, 1, 1, 1))  # fmt: skip
        full = make_op("Conv", [x, Tensor("w", (32, 32, 3, 3), "float32", True)], [y], kernel_shape=(3, 3),
                       pads=(1, 1, 1, 1))  # fmt: skip
        assert shape_factor(dw) == pytest.approx(dw.flops / (dw.flops + HALF_EFFICIENCY_FLOPS) * DEPTHWISE_FACTOR)
        assert shape_factor(full) == pytest.approx(full.flops / (full.flops + HALF_EFFICIENCY_FLOPS))
        assert kernel_type(dw) == "DepthwiseConv" and kernel_type(full) == "Conv"

    @pytest.mark.parametrize(("src", "dst", "kernel"), [("int32", "float32", "Cast"), ("bool", "float32", "Cast"),
                                                         ("float32", "float16", "Cast"), ("int64", "float32", "CastWide"),
                                                         ("float32", "int64", "CastWide"), ("float64", "float32", "CastWide")])  # fmt: skip
    def test_a_cast_with_an_eight_byte_side_is_a_class_of_its_own(self, src: str, dst: str, kernel: str) -> None:
        cast = make_op("Cast", [Tensor("x", (64, 4096), src)], [Tensor("y", (64, 4096), dst)])
        assert kernel_type(cast) == kernel
        # a CastWide efficiency prices only the wide casts; without one they take Cast's
        wide, narrow = (estimate(cast, chip_from_dict(host_chip(efficiency=e)), "cpu", "model")
                        for e in ({"Cast": 0.3, "CastWide": 0.03}, {"Cast": 0.3}))  # fmt: skip
        assert wide is not None and narrow is not None
        assert (wide.compute_ns > 5 * narrow.compute_ns) == (kernel == "CastWide")

    def test_a_fitted_depthwise_efficiency_replaces_the_factor(self) -> None:
        x, y = Tensor("x", (1, 144, 56, 56), "float32"), Tensor("y", (1, 144, 56, 56), "float32")
        dw = make_op("Conv", [x, Tensor("w", (144, 1, 3, 3), "float32", True)], [y], group=144, kernel_shape=(3, 3),
                     pads=(1, 1, 1, 1))  # fmt: skip
        peak = 60.0 * 2600 * 1e-3  # FLOP/ns of host_chip()
        conv_only = estimate(dw, chip_from_dict(host_chip(efficiency={"Conv": 0.9})), "cpu", "fp32")
        fitted = estimate(dw, chip_from_dict(host_chip(efficiency={"Conv": 0.9, "DepthwiseConv": 0.2})), "cpu", "fp32")
        assert conv_only is not None and fitted is not None
        small = dw.flops / (dw.flops + HALF_EFFICIENCY_FLOPS)
        assert conv_only.compute_ns >= dw.flops / (peak * 0.9 * small * DEPTHWISE_FACTOR) - 1e-6
        assert fitted.compute_ns >= dw.flops / (peak * 0.2 * small) - 1e-6
        assert "calibrated 0.2" in fitted.note and "calibrated 0.9" in conv_only.note

    def test_gather_reads_rows_not_the_table(self) -> None:
        table = Tensor("emb", (30522, 768), "float32", True)  # 94 MB
        ids = Tensor("ids", (1, 128), "int64")
        out = Tensor("y", (1, 128, 768), "float32")
        cost = estimate(make_op("Gather", [table, ids], [out], axis=0), chip_from_dict(host_chip()), "cpu", "fp32")
        assert cost is not None
        assert cost.dram_read_bytes <= out.nbytes
        assert cost.latency_ns < 200_000


class TestCalibrationFile:
    def write(self, tmp_path: Path, cal: Any, chip: dict[str, Any] | None = None) -> Path:
        data = chip or host_chip(efficiency={"Relu": 0.9, "Add": 0.7})
        data = {**data, "calibration": "cal/host_calibration.yaml"}
        (tmp_path / "cal").mkdir()
        (tmp_path / "cal" / "host_calibration.yaml").write_text(yaml.safe_dump(cal))
        path = tmp_path / "host.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    def test_merges_into_the_unit(self, tmp_path: Path) -> None:
        cal = {"chip": "host", "units": {"cpu": {"op_overhead_ns": 3500.0, "efficiency": {"Conv": 0.8, "Relu": 0.4}}}}
        chip = load_chip(self.write(tmp_path, cal))
        unit = chip.unit("cpu")
        assert unit.op_overhead_ns == 3500.0
        assert unit.efficiency == {"Relu": 0.4, "Add": 0.7, "Conv": 0.8}  # calibration wins, the rest stays
        assert chip.calibration == str((tmp_path / "cal" / "host_calibration.yaml").resolve())

    def test_changes_the_estimate(self, tmp_path: Path) -> None:
        cal = {"chip": "host", "units": {"cpu": {"efficiency": {"Relu": 0.05}}}}
        chip = load_chip(self.write(tmp_path, cal))
        op = relu(1 << 20)  # 8 MiB at 0.05 x 200 GB/s: 4x slower than from L3 at 38 GB/s
        before, after = estimate(op, chip_from_dict(host_chip()), "cpu", "fp32"), estimate(op, chip, "cpu", "fp32")
        assert before is not None and after is not None
        assert after.latency_ns > 2 * before.latency_ns

    @pytest.mark.parametrize(
        ("cal", "message"),
        [
            ({"chip": "host", "units": {"npu": {"efficiency": {"Conv": 0.5}}}}, "units.npu: the chip has no such unit"),
            ({"chip": "host", "units": {"cpu": {"efficiency": {"Conv": 1.5}}}}, "units.cpu.efficiency.Conv"),
            ({"chip": "host", "units": {"cpu": {"speed": 2}}}, "units.cpu.speed: unknown key"),
            ({"units": {}}, "chip: Field required"),
        ],
    )
    def test_bad_calibration_names_file_and_field(self, tmp_path: Path, cal: Any, message: str) -> None:
        with pytest.raises(ChipError) as err:
            load_chip(self.write(tmp_path, cal))
        assert "host_calibration.yaml" in str(err.value)
        assert message in str(err.value)

    def test_missing_calibration_file(self, tmp_path: Path) -> None:
        path = tmp_path / "host.yaml"
        path.write_text(yaml.safe_dump({**host_chip(), "calibration": "nope.yaml"}))
        with pytest.raises(ChipError, match=r"host.yaml: calibration: cannot read .*nope.yaml"):
            load_chip(path)


def lstm(steps: int, hidden: int, inputs: int = 64) -> Op:
    x = Tensor("x", (steps, 1, inputs), "float32")
    w = Tensor("w", (1, 4 * hidden, inputs), "float32", True)
    r = Tensor("r", (1, 4 * hidden, hidden), "float32", True)
    y = Tensor("y", (steps, 1, 1, hidden), "float32")
    return make_op("LSTM", [x, w, r], [y], hidden_size=hidden)


class TestRecurrence:
    @settings(max_examples=15, deadline=None)
    @given(steps=st.integers(2, 60), hidden=st.sampled_from([64, 200, 400, 650]))
    def test_recurrent_weights_are_reread_every_step(self, steps: int, hidden: int) -> None:
        chip = chip_from_dict(host_chip())
        unit = chip.units[0]
        cost = estimate(lstm(steps, hidden), chip, "cpu", "fp32")
        assert cost is not None
        r_bytes = 4 * hidden * hidden * 4
        level_bw = next(bw for kib, bw in ((unit.l1_kib, unit.l1_bandwidth_gbps), (unit.l2_kib, unit.l2_bandwidth_gbps),
                                           (unit.l3_kib, unit.l3_bandwidth_gbps)) if r_bytes < kib * 1024)  # fmt: skip
        assert cost.memory_ns >= (steps - 1) * r_bytes / level_bw
        assert f"R re-read {steps - 1}x" in cost.note

    def test_weights_beyond_the_cache_cost_more_per_step(self) -> None:
        chip = chip_from_dict(host_chip())
        # 650 wide: R is 6.8 MB (L3); 128 wide: 256 KiB (L2); per step per byte the wide one is slower
        wide = [estimate(lstm(s, 650), chip, "cpu", "fp32") for s in (10, 20)]
        narrow = [estimate(lstm(s, 128), chip, "cpu", "fp32") for s in (10, 20)]
        assert all(c is not None for c in (*wide, *narrow))
        per_byte_wide = (wide[1].latency_ns - wide[0].latency_ns) / (10 * 4 * 650 * 650 * 4)  # type: ignore[union-attr]
        per_byte_narrow = (narrow[1].latency_ns - narrow[0].latency_ns) / (10 * 4 * 128 * 128 * 4)  # type: ignore[union-attr]
        assert per_byte_wide > 2 * per_byte_narrow


def matmul(m: int, k: int, n: int) -> Op:
    a, w = Tensor("a", (m, k), "float32"), Tensor("w", (k, n), "float32", True)
    return make_op("MatMul", [a, w], [Tensor("y", (m, n), "float32")])


class TestWeightStream:
    """``weight_stream_gbps``: a GEMM's weights from DRAM add to its compute instead of hiding under it."""

    def test_adds_the_weight_bytes_at_the_stream_rate(self) -> None:
        op = matmul(128, 768, 3072)  # 9.4 MB of weights, 0.6 GFLOP: compute-bound either way
        plain = estimate(op, chip_from_dict(host_chip(efficiency={"MatMul": 0.9})), "cpu", "fp32")
        stall = estimate(op, chip_from_dict(host_chip(efficiency={"MatMul": 0.9}, weight_stream_gbps=12.0)), "cpu", "fp32")
        assert plain is not None and stall is not None
        assert plain.bound == "compute" and plain.stall_ns == 0.0
        assert stall.stall_ns == pytest.approx(768 * 3072 * 4 / 12.0)
        assert stall.latency_ns - plain.latency_ns == pytest.approx(stall.stall_ns)
        assert stall.compute_ns - stall.stall_ns == pytest.approx(plain.compute_ns)  # the efficiency does not scale it
        assert "weights stall" in stall.note

    def test_a_conv_transpose_streams_its_weights_as_a_gemm_does(self) -> None:
        # a DCGAN layer: 512 -> 256 channels from 4 x 4, 8 MiB of weights used for 16 pixels each
        x, w = Tensor("x", (1, 512, 4, 4), "float32"), Tensor("w", (512, 256, 4, 4), "float32", True)
        op = make_op("ConvTranspose", [x, w], [Tensor("y", (1, 256, 8, 8), "float32")], strides=[2, 2], pads=[1, 1, 1, 1])
        cost = estimate(op, chip_from_dict(host_chip(weight_stream_gbps=12.0)), "cpu", "fp32")
        plain = estimate(op, chip_from_dict(host_chip()), "cpu", "fp32")
        assert cost is not None and plain is not None and "weights stall" in cost.note
        assert cost.stall_ns - plain.stall_ns == pytest.approx(512 * 256 * 16 * 4 / 12.0)  # beside its col2im

    def test_only_matmuls_with_weights(self) -> None:
        chip = chip_from_dict(host_chip(weight_stream_gbps=12.0))
        act = make_op("MatMul", [Tensor("a", (128, 64), "float32"), Tensor("b", (64, 128), "float32")],
                      [Tensor("y", (128, 128), "float32")])  # attention's Q.K^T: no weights  # fmt: skip
        conv = make_op("Conv", [Tensor("x", (1, 256, 14, 14), "float32"), Tensor("w", (256, 256, 3, 3), "float32", True)],
                       [Tensor("y", (1, 256, 14, 14), "float32")], kernel_shape=[3, 3], pads=[1, 1, 1, 1])  # fmt: skip
        for op in (act, conv):
            cost = estimate(op, chip, "cpu", "fp32")
            assert cost is not None and cost.stall_ns == 0.0

    @settings(max_examples=20, deadline=None)
    @given(m=st.integers(1, 256), gbps=st.floats(1.0, 100.0))
    def test_never_faster_than_without(self, m: int, gbps: float) -> None:
        op = matmul(m, 512, 1024)
        plain = estimate(op, chip_from_dict(host_chip()), "cpu", "fp32")
        stall = estimate(op, chip_from_dict(host_chip(weight_stream_gbps=gbps)), "cpu", "fp32")
        assert plain is not None and stall is not None
        assert stall.latency_ns >= plain.latency_ns
        assert stall.latency_ns <= plain.latency_ns + 512 * 1024 * 4 / gbps + 1e-6

    def test_a_gemv_streams_at_the_memory_roof(self) -> None:
        op = matmul(1, 650, 10000)  # one row: MLAS's vector kernel, overlapped
        cost = estimate(op, chip_from_dict(host_chip(weight_stream_gbps=12.0)), "cpu", "fp32")
        assert cost is not None and cost.stall_ns == 0.0 and cost.bound == "memory"

    @pytest.mark.parametrize(("l3_kib", "stalls"), [(32768, False), (4096, True)])
    def test_weights_that_fit_the_llc_stay_there_between_inferences(self, l3_kib: int, stalls: bool) -> None:
        x, h = Tensor("x", (64, 1024), "float32"), Tensor("h", (64, 1024), "float32")
        w1, w2 = Tensor("w1", (1024, 1024), "float32", True), Tensor("w2", (1024, 1024), "float32", True)
        graph = graph_from_ops("mlp", [x], [("fc1", "MatMul", [x, w1], [h]),
                                            ("fc2", "MatMul", [h, w2], [Tensor("y", (64, 1024), "float32")])])  # fmt: skip
        # 8 MiB of weights: resident in a 32 MiB L3, streamed from DRAM past a 4 MiB one
        chip = chip_from_dict(host_chip(l3_kib=l3_kib, weight_stream_gbps=12.0))
        table = cost_table(graph, chip, "model")
        for name in ("fc1", "fc2"):
            cost = table.costs[name]["cpu"]
            assert (cost.stall_ns == pytest.approx(1024 * 1024 * 4 / 12.0)) if stalls else cost.stall_ns == 0.0
            # resident weights are read from the cache level of the working set, not from DRAM
            assert (cost.dram_read_bytes > 0) == stalls
            assert ("weights cached" in cost.note) != stalls

    @pytest.mark.parametrize(("layers", "kept"), [(4, 1.0), (12, 4 / 12), (16, 0.0)])
    def test_a_measured_weight_cache_keeps_its_cyclic_share(self, layers: int, kept: float) -> None:
        # 1 MiB a layer through a weight cache of 8 MiB (an L3 of 32): 4 layers stay, 12 keep 4 of
        # their 12 MiB (2 C - S), 16 none; the kept share stalls at 48 GB/s, the rest at 12
        x = Tensor("x", (64, 512), "float32")
        ops = [(f"fc{i}", "MatMul", [x, Tensor(f"w{i}", (512, 512), "float32", True)], [Tensor(f"y{i}", (64, 512), "float32")])
               for i in range(layers)]  # fmt: skip
        chip = chip_from_dict(host_chip(l3_kib=32768, weight_stream_gbps=12.0, weight_cache_kib=8192, weight_cached_gbps=48.0))
        cost = cost_table(graph_from_ops("mlp", [x], ops), chip, "model").costs["fc0"]["cpu"]
        share = cyclic_kept(layers * 2**20, 8 * 2**20) / (layers * 2**20)
        assert share == pytest.approx(kept)
        assert cost.stall_ns == pytest.approx(2**20 * (share / 48.0 + (1 - share) / 12.0))

    @settings(max_examples=30, deadline=None)
    @given(layers=st.integers(1, 40), cache_mib=st.integers(1, 24))
    def test_a_weight_cache_stalls_between_the_cached_and_the_dram_rates(self, layers: int, cache_mib: int) -> None:
        x = Tensor("x", (64, 512), "float32")
        ops = [(f"fc{i}", "MatMul", [x, Tensor(f"w{i}", (512, 512), "float32", True)], [Tensor(f"y{i}", (64, 512), "float32")])
               for i in range(layers)]  # fmt: skip
        chip = chip_from_dict(host_chip(l3_kib=32768, weight_stream_gbps=12.0, weight_cache_kib=cache_mib * 1024,
                                        weight_cached_gbps=48.0))  # fmt: skip
        stall = cost_table(graph_from_ops("mlp", [x], ops), chip, "model").costs["fc0"]["cpu"].stall_ns
        assert 2**20 / 48.0 - 1e-6 <= stall <= 2**20 / 12.0 + 1e-6
        twice = ops + [(f"gc{i}", "MatMul", [x, Tensor(f"v{i}", (512, 512), "float32", True)], [Tensor(f"z{i}", (64, 512), "float32")])
                       for i in range(layers)]  # fmt: skip
        more = cost_table(graph_from_ops("mlp", [x], twice), chip, "model").costs["fc0"]["cpu"].stall_ns
        assert more >= stall - 1e-6  # more weights never keep more of them

    def test_a_layer_whose_model_overflows_l2_reads_its_weights_from_beyond(self) -> None:
        # fc1's own 1 MiB of weights fit the 2 MiB L2, but the loop streams all the model's
        # weights cyclically: with 8 MiB of them (resident in L3) fc1's come from L3
        x, h = Tensor("x", (1, 512), "float32"), Tensor("h", (1, 512), "float32")
        w1 = Tensor("w1", (512, 512), "float32", True)

        def fc1_ns(n_layers: int) -> float:
            ops = [("fc1", "MatMul", [x, w1], [h])]
            ops += [(f"fc{i}", "MatMul", [h, Tensor(f"w{i}", (512, 512), "float32", True)], [Tensor(f"y{i}", (1, 512), "float32")])
                    for i in range(2, n_layers + 1)]  # fmt: skip
            chip = chip_from_dict(host_chip(l2_kib=2048, l3_kib=32768, weight_stream_gbps=12.0, gemv_far_gbps=28.0))
            return cost_table(graph_from_ops("mlp", [x], ops), chip, "model").costs["fc1"]["cpu"].latency_ns

        assert fc1_ns(8) > 2 * fc1_ns(1)  # 8 x 1 MiB cycles through L3 at 28 GB/s; 1 MiB stays in L2
        assert fc1_ns(8) == pytest.approx(512 * 512 * 4 / 28.0, rel=0.15)

    def test_a_host_without_a_weight_stall_still_keeps_its_weights_cached(self) -> None:
        # a fingerprint whose MatMul showed no DRAM stall (an AMD EPYC: weight_stream_gbps left out)
        # but with its GEMV rates: the loop keeps a 1 MiB MLP in the caches, not in DRAM
        x, w = Tensor("x", (1, 512), "float32"), Tensor("w", (512, 512), "float32", True)
        graph = graph_from_ops("g", [x], [("fc", "MatMul", [x, w], [Tensor("y", (1, 512), "float32")])])
        dram = chip_from_dict(host_chip(l3_kib=32768))
        host = chip_from_dict(host_chip(l3_kib=32768, gemv_gbps=90.0, gemv_far_gbps=80.0))
        cold, warm = (cost_table(graph, c, "model").costs["fc"]["cpu"] for c in (dram, host))
        assert cold.dram_read_bytes >= 512 * 512 * 4 > warm.dram_read_bytes
        assert warm.latency_ns < cold.latency_ns

    def test_weights_stay_cached_only_beside_the_largest_working_set(self) -> None:
        # 1 MiB of weights and a 4 MiB L3: alone they stay; beside a Relu over 2 x 2 MiB they do not
        from cost_models.table import largest_working_set, steady_state_unit

        x, w = Tensor("x", (1, 512), "float32"), Tensor("w", (512, 512), "float32", True)
        fc = ("fc", "MatMul", [x, w], [Tensor("y", (1, 512), "float32")])
        big = Tensor("a", (1, 1 << 19), "float32")
        relu = ("r", "Relu", [big], [Tensor("b", (1, 1 << 19), "float32")])
        unit = chip_from_dict(host_chip(l3_kib=4096, gemv_gbps=90.0)).units[0]
        small, both = graph_from_ops("g", [x], [fc]), graph_from_ops("g", [x, big], [fc, relu])
        assert largest_working_set(both) == 4 << 20
        assert steady_state_unit(unit, small, "model").weights_in_cache  # type: ignore[union-attr]
        assert not steady_state_unit(unit, both, "model").weights_in_cache  # type: ignore[union-attr]

    def test_a_run_touches_its_inputs_outputs_and_its_live_intermediates_at_their_peak(self) -> None:
        # x -> a -> b -> c -> y, 1 MiB each: a and b are live together, then b and c
        from cost_models.table import run_activation_bytes

        mib = 1 << 18
        t = [Tensor(n, (1, mib), "float32") for n in "xabcy"]
        ops = [(f"r{i}", "Relu", [t[i]], [t[i + 1]]) for i in range(4)]
        assert run_activation_bytes(graph_from_ops("g", [t[0]], ops)) == 4 << 20  # x, y, and two at once
        # a skip kept to the end: a stays live beside b and c
        skip = [*ops[:3], ("add", "Add", [t[3], t[1]], [t[4]])]
        assert run_activation_bytes(graph_from_ops("g", [t[0]], skip)) == 5 << 20

    @given(widths=st.lists(st.integers(1, 64), min_size=2, max_size=8), skips=st.lists(st.integers(0, 7), max_size=4))
    def test_a_run_touches_at_least_each_ops_working_set_and_at_most_every_tensor(
        self, widths: list[int], skips: list[int]
    ) -> None:
        from cost_models.table import run_activation_bytes

        t = [Tensor(f"t{i}", (w, 256), "float32") for i, w in enumerate(widths)]
        ops: list[tuple[str, str, list[Tensor], list[Tensor]]] = []
        for i in range(1, len(t)):
            ins = [t[i - 1]] + [t[s] for s in skips if s < i - 1 and t[s].shape == t[i - 1].shape][:1]
            ops.append((f"o{i}", "Add" if len(ins) > 1 else "Relu", ins, [t[i]]))
        graph = graph_from_ops("g", [t[0]], ops)
        run = run_activation_bytes(graph)
        assert run <= sum(x.nbytes for x in t)
        assert all(run >= sum({x.name: x.nbytes for x in (*op.inputs, *op.outputs)}.values()) for op in graph.ops())

    def test_a_runs_other_traffic_evicts_the_weights_a_gemv_reads(self) -> None:
        # 1 MiB of weights in an 8 MiB L3: beside a pass over 2 x 1 MiB they stay there; beside a
        # pass over 2 x 12 MiB (each run's other bytes past twice the L3) they come from DRAM
        x, w = Tensor("x", (1, 512), "float32"), Tensor("w", (512, 512), "float32", True)
        fc = ("fc", "MatMul", [x, w], [Tensor("y", (1, 512), "float32")])
        chip = chip_from_dict(host_chip(l2_kib=512, l3_kib=8192, gemv_gbps=90.0, gemv_far_gbps=60.0, gemv_dram_gbps=20.0))

        def fc_ns(pass_mib: int) -> float:
            a, b = (Tensor(n, (1, pass_mib << 18), "float32") for n in "ab")
            graph = graph_from_ops("g", [x, a], [fc, ("neg", "Neg", [a], [b])])
            return cost_table(graph, chip, "model").costs["fc"]["cpu"].latency_ns

        assert fc_ns(12) > 1.5 * fc_ns(1)
        assert fc_ns(12) == pytest.approx((1 << 20) / 20.0, rel=0.15)

    def test_what_the_loop_keeps_of_the_l3_bounds_the_steady_state(self) -> None:
        # 6 MiB of weights beside a 2 x 4 MiB pass (14 MiB a run) in a 24 MiB L3: all kept; a loop
        # that keeps 8 MiB of it between runs (a VM's neighbours) streams them, a GEMV's from DRAM
        x, w = Tensor("x", (1, 1536), "float32"), Tensor("w", (1536, 1024), "float32", True)
        fc = ("fc", "MatMul", [x, w], [Tensor("y", (1, 1024), "float32")])
        a, b = (Tensor(n, (1, 4 << 18), "float32") for n in "ab")
        graph = graph_from_ops("g", [x, a], [fc, ("neg", "Neg", [a], [b])])

        def fc_ns(**loop: float) -> float:
            chip = chip_from_dict(host_chip(l2_kib=512, l3_kib=24576, gemv_gbps=90.0, gemv_far_gbps=60.0,
                                            gemv_dram_gbps=20.0, **loop))  # fmt: skip
            return cost_table(graph, chip, "model").costs["fc"]["cpu"].latency_ns

        whole, kept = fc_ns(), fc_ns(loop_cache_kib=8192.0)
        assert fc_ns(loop_cache_kib=24576.0) == whole
        assert kept > 1.5 * whole and kept == pytest.approx(6 * 2**20 / 20.0, rel=0.2)

    def test_a_dequantized_weight_is_no_working_set(self) -> None:
        # a QDQ model's weight -> DequantizeLinear -> MatMul: the fp32 weight is never an activation
        from cost_models.table import largest_working_set

        q, s = Tensor("wq", (512, 512), "int8", True), Tensor("s", (), "float32", True)
        wf, x = Tensor("wf", (512, 512), "float32"), Tensor("x", (1, 512), "float32")
        graph = graph_from_ops("g", [x], [("dq", "DequantizeLinear", [q, s], [wf]),
                                         ("fc", "MatMul", [x, wf], [Tensor("y", (1, 512), "float32")])])  # fmt: skip
        assert largest_working_set(graph) == 2 * 512 * 4

    def test_weights_in_cache_is_no_part_of_the_chip(self) -> None:
        from hwsim.report.provenance import chip_sha256

        chip = chip_from_dict(host_chip(weight_stream_gbps=12.0))
        cached = chip.model_copy(update={"units": (chip.units[0].model_copy(update={"weights_in_cache": True}),)})
        assert "weights_in_cache" not in chip.units[0].model_dump() and chip_sha256(cached) == chip_sha256(chip)
        # a unit without a measured weight stream (every catalog SoC) reads its weights from DRAM as before
        plain = chip_from_dict(host_chip())
        x, h = Tensor("x", (1, 256), "float32"), Tensor("w", (256, 256), "float32", True)
        graph = graph_from_ops("g", [x], [("fc", "MatMul", [x, h], [Tensor("y", (1, 256), "float32")])])
        assert cost_table(graph, plain, "model").costs["fc"]["cpu"].dram_read_bytes >= 256 * 256 * 4
