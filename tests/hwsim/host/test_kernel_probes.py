"""What the fingerprint reads for the CPU model's cyclic streams and parallel sections: the L2
capacity a cyclic stream keeps (the sweep read with the model's own rule) and the cost of one
parallel section (a MatMul chain on one and two threads)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cost_models.cpu import cyclic_capacity_bytes, stream_ns, strided_fft_stages
from hwsim.host import kernels
from hwsim.host.fingerprint import KIB, _cyclic_l2, _cyclic_l3
from hwsim.host.measure import Timing

NEAR, FAR = 114.0, 28.0


def _cyclic_gbps(nbytes: float, l2_bytes: float) -> float:
    """The rate the CPU model gives a cyclic stream of ``nbytes`` through an L2 of ``l2_bytes``."""
    levels = [(1.0, 1000.0), (l2_bytes / KIB, NEAR), (49152.0, FAR)]
    return nbytes / stream_ns(nbytes, levels, math.inf, 20.0, FAR)


class TestCyclicCapacity:
    @given(st.floats(1.0, 1.95), st.floats(1 << 20, 4 << 20))
    def test_inverts_the_cyclic_rule(self, over: float, l2_bytes: float) -> None:
        nbytes = over * l2_bytes
        cap = cyclic_capacity_bytes(nbytes, _cyclic_gbps(nbytes, l2_bytes), NEAR, FAR)
        assert cap == pytest.approx(l2_bytes, rel=1e-6)

    def test_clipped_and_unresolved(self) -> None:
        assert cyclic_capacity_bytes(1e6, 200.0, NEAR, FAR) == 1e6  # faster than the cache: it held it all
        assert cyclic_capacity_bytes(1e6, 10.0, NEAR, FAR) == 5e5  # slower than beyond it: nothing kept
        assert cyclic_capacity_bytes(1e6, 50.0, FAR, NEAR) is None


class TestCyclicL2:
    """The sweep's first point past its L2 plateau read with the cyclic rule."""

    # the CI Xeon's sweep around its L2 (OS: 2 MiB), and its L2 and L3 plateaus
    sweep: ClassVar[list[tuple[int, float]]] = [
        (1 << 20, 170.0), (1536 * KIB, 150.0), (2 << 20, 101.8), (3 << 20, 51.0), (4 << 20, 44.0)]  # fmt: skip

    def caches(self, l2_source: str = "sweep") -> list[dict[str, float | str]]:
        return [{"level": 2, "kib": 1536.0, "bandwidth_gbps": 163.0, "source": l2_source},
                {"level": 3, "kib": 49152.0, "bandwidth_gbps": 39.5, "source": "sweep"}]  # fmt: skip

    def test_the_capacity_the_stream_kept(self) -> None:
        caches = self.caches()
        note = _cyclic_l2(caches, self.sweep, {2: 2048.0})
        assert caches[0]["source"] == "sweep, cyclic" and 1800 < float(caches[0]["kib"]) < 1900
        assert note is not None and "2048 KiB" in note and "1536 KiB" in note

    def test_read_at_the_os_size_wherever_the_plateau_ends(self) -> None:
        caches = self.caches()
        caches[0]["kib"] = 2048.0  # a noisy sweep whose plateau runs through the 2 MiB point
        _cyclic_l2(caches, self.sweep, {2: 2048.0})
        assert 1800 < float(caches[0]["kib"]) < 1900
        caches = self.caches()
        _cyclic_l2(caches, self.sweep, {})  # no OS figure: the first point past the plateau
        assert 1800 < float(caches[0]["kib"]) < 1900

    def test_never_beyond_the_os_size_nor_below_half_the_point(self) -> None:
        caches = self.caches()
        _cyclic_l2(caches, [(1536 * KIB, 150.0), (2 << 20, 200.0)], {2: 2048.0})  # all of it hit
        assert caches[0]["kib"] == 2048.0
        caches = self.caches()
        _cyclic_l2(caches, [(1536 * KIB, 150.0), (2 << 20, 30.0)], {2: 2048.0})  # at the L3 rate: none
        assert caches[0]["kib"] == 1024.0

    def test_nothing_to_read(self) -> None:
        caches = self.caches("/sys")  # an L2 the sweep did not find
        assert _cyclic_l2(caches, self.sweep, {}) is None and caches == self.caches("/sys")
        assert _cyclic_l2(self.caches()[:1], self.sweep, {}) is None  # no L3 to stream from
        assert _cyclic_l2(self.caches(), self.sweep[:2], {}) is None  # the sweep ends at the plateau


class TestCyclicL3:
    """The sweep's point at the OS's L3 size read with the cyclic rule, between the L3 and DRAM rates."""

    # two fingerprints of an AMD EPYC VM (OS: 32 MiB) whose L3 plateaus ended at 8 and 16 MiB
    curves: ClassVar[list[list[tuple[int, float]]]] = [
        [(8 << 20, 123.0), (16 << 20, 100.0), (24 << 20, 66.0), (32 << 20, 57.0), (64 << 20, 39.0), (128 << 20, 31.0)],
        [(8 << 20, 112.0), (16 << 20, 102.0), (24 << 20, 57.0), (32 << 20, 51.0), (64 << 20, 35.0), (128 << 20, 30.0)],
    ]

    @staticmethod
    def caches(kib: float, gbps: float) -> list[dict[str, float | str]]:
        return [{"level": 2, "kib": 1024.0, "bandwidth_gbps": 140.0, "source": "/sys"},
                {"level": 3, "kib": kib, "bandwidth_gbps": gbps, "source": "sweep"}]  # fmt: skip

    def test_two_plateau_ends_read_as_one_capacity(self) -> None:
        read = []
        for curve, (kib, gbps) in zip(self.curves, ((16384.0, 141.0), (8192.0, 136.0)), strict=True):
            caches = self.caches(kib, gbps)
            note = _cyclic_l3(caches, curve, {2: 1024.0, 3: 32768.0})
            assert note is not None and caches[1]["source"] == "sweep, cyclic"
            read.append(float(caches[1]["kib"]))
        assert all(24 * 1024 < r < 27 * 1024 for r in read) and abs(read[0] / read[1] - 1) < 0.05

    def test_nothing_to_read(self) -> None:
        curve = self.curves[0]
        assert _cyclic_l3(self.caches(16384.0, 141.0), curve, {2: 1024.0}) is None  # no OS L3
        assert _cyclic_l3(self.caches(16384.0, 141.0), curve, {3: 262144.0}) is None  # beyond the sweep
        assert _cyclic_l3(self.caches(16384.0, 141.0), curve, {3: 131072.0}) is None  # only DRAM's point there
        assert _cyclic_l3(self.caches(16384.0, 20.0), curve, {3: 32768.0}) is None  # rates that do not tell


class TestParallelSection:
    @staticmethod
    def fake(monkeypatch: pytest.MonkeyPatch, per_kernel: dict[tuple[int, int], float]) -> None:
        """Sessions keyed by (MatMul side, threads); a chain takes its count times ``per_kernel``."""
        count = kernels.SECTION_PROBE_COUNT
        sides = iter([kernels.SECTION_PROBE_N] * 2 + [kernels.SECTION_CHECK_N] * 2)
        monkeypatch.setattr(kernels, "make_session", lambda model, threads, opt: (next(sides), threads))
        monkeypatch.setattr(kernels, "time_session",
                            lambda sess, feeds, **kw: Timing((count * per_kernel[sess], 2 * count * per_kernel[sess])))  # fmt: skip

    def test_split_work_plus_the_section(self, monkeypatch: pytest.MonkeyPatch) -> None:
        small, big = kernels.SECTION_PROBE_N, kernels.SECTION_CHECK_N
        # per kernel: dispatch 250 + work 1200 on one thread; 250 + 600 + a 900 ns section on two
        self.fake(monkeypatch, {(small, 1): 1450.0, (small, 2): 1750.0, (big, 1): 11250.0, (big, 2): 6150.0})
        assert kernels.parallel_section_ns(250.0) == pytest.approx(900.0)

    def test_not_read_when_the_second_core_does_not_help(self, monkeypatch: pytest.MonkeyPatch) -> None:
        small, big = kernels.SECTION_PROBE_N, kernels.SECTION_CHECK_N
        self.fake(monkeypatch, {(small, 1): 1450.0, (small, 2): 1750.0, (big, 1): 11250.0, (big, 2): 10000.0})
        assert kernels.parallel_section_ns(250.0) is None

    def test_no_section_when_the_split_is_not_slower(self, monkeypatch: pytest.MonkeyPatch) -> None:
        small, big = kernels.SECTION_PROBE_N, kernels.SECTION_CHECK_N
        self.fake(monkeypatch, {(small, 1): 1450.0, (small, 2): 800.0, (big, 1): 11250.0, (big, 2): 5750.0})
        assert kernels.parallel_section_ns(250.0) is None


def test_rates_only_measure_a_section_on_several_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    section: list[float | None] = [800.0]
    samples = iter([{"handoff_probe_ns:GRU:8": 3.0, "handoff_probe_ns:GRU:56": 9.0},
                    {"handoff_probe_ns:GRU:8": 4.0, "handoff_probe_ns:GRU:56": 7.0}])  # fmt: skip
    monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: 100.0)
    monkeypatch.setattr(kernels, "fft_frame_times", lambda rounds=5: exact_frames(1.0, 5.0))
    monkeypatch.setattr(kernels, "parallel_section_ns", lambda kernel_ns, rounds=5: calls.append(kernel_ns) or section[0])
    monkeypatch.setattr(kernels, "handoff_times", lambda threads, rounds=3: next(samples))
    assert "parallel_section_ns" not in kernels.kernel_rates(quick=True)[0]
    rates = kernels.kernel_rates(quick=True, threads=2, kernel_ns=250.0)[0]
    assert rates["parallel_section_ns"] == 800.0 and calls == [250.0]
    # the hand-off probes sampled twice, each time the faster of the two
    assert (rates["handoff_probe_ns:GRU:8"], rates["handoff_probe_ns:GRU:56"]) == (3.0, 7.0)
    # the other core busy (no section read): the hand-offs are not probed either
    section[0] = None
    rates, notes = kernels.kernel_rates(quick=True, threads=2, kernel_ns=250.0)
    assert "parallel_section_ns" not in rates and not any(k.startswith("handoff_probe_ns") for k in rates)
    assert any("step_handoff_ns left out" in n for n in notes)


class TestHandoffSamples:
    """The hand-off probes are read only while the second core works along, at two moments."""

    KEYS = tuple(kernels.HANDOFF_PROBES.values())

    @staticmethod
    def fake_runs(monkeypatch: pytest.MonkeyPatch, one_ns: float, two_ns: float) -> None:
        """The check chain takes ``one_ns`` on one thread and ``two_ns`` on two; each probe 1000 ns."""

        def best(models: dict[str, Any], rounds: int, threads: int = 1) -> dict[str, float]:
            return {k: (one_ns if threads == 1 else two_ns) if k == "check" else 1000.0 for k in models}

        monkeypatch.setattr(kernels, "best_run_ns", best)

    def test_read_while_the_second_core_works(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake_runs(monkeypatch, 1000.0, 520.0)
        assert kernels.handoff_times(2) == dict.fromkeys(self.KEYS, 1000.0)

    def test_void_in_a_slow_spell_of_the_other_core(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake_runs(monkeypatch, 1000.0, 780.0)  # 1.28x, the CI Xeon's lag: the other core busy
        assert kernels.handoff_times(2) == {}

    def test_read_at_the_usual_speed_up_of_two_vcpus(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake_runs(monkeypatch, 1000.0, 568.0)  # 1.76x, the AMD EPYC's check chain at its usual
        assert kernels.handoff_times(2) == dict.fromkeys(self.KEYS, 1000.0)

    def test_the_second_sample_stands_in_for_a_void_first(self, monkeypatch: pytest.MonkeyPatch) -> None:
        second = dict.fromkeys(self.KEYS, 5.0)
        monkeypatch.setattr(kernels, "handoff_times", lambda threads, rounds=3: second)
        notes: list[str] = []
        assert kernels._second_handoffs({"parallel_section_ns": 800.0}, 2, notes) == second and not notes
        monkeypatch.setattr(kernels, "handoff_times", lambda threads, rounds=3: {})
        assert kernels._second_handoffs({"parallel_section_ns": 800.0}, 2, notes) == {}
        assert notes and "busy at both samples" in notes[0]
        assert kernels._second_handoffs({}, 2, []) == {}  # no section read: no second sample either


class TestRunFootprint:
    """A two-matrix Gemm chain passed once and three times per run: what the run call evicts."""

    @staticmethod
    def fake(monkeypatch: pytest.MonkeyPatch, first_ns: float, later_ns: float, run_ns: float, kernel_ns: float) -> None:
        """Sessions keyed by passes per run: the run call, 2 kernels a pass, the first pass and the later ones."""
        monkeypatch.setattr(kernels, "make_session", lambda model, threads, opt: len(model.graph.node) // 2)

        def run(passes: int) -> float:
            return run_ns + 2 * passes * kernel_ns + first_ns + (passes - 1) * later_ns

        monkeypatch.setattr(kernels, "time_session", lambda sess, feeds, **kw: Timing((run(sess), 2 * run(sess))))

    def test_the_capacity_the_first_pass_lost(self, monkeypatch: pytest.MonkeyPatch) -> None:
        l2 = 2 << 20
        n = round(math.sqrt(kernels.FOOTPRINT_PROBE_L2 * l2 / 8) / 16) * 16
        s = 2 * n * n * 4
        later = s / _cyclic_gbps(s, 1.85 * (1 << 20))  # from the second pass on the stream keeps 1.85 MiB
        first = s / _cyclic_gbps(s, 1.60 * (1 << 20))  # on the first, 0.25 MiB less
        self.fake(monkeypatch, first, later, 4000.0, 250.0)
        assert kernels.run_footprint_kib(l2, NEAR, FAR, 4000.0, 250.0) == pytest.approx(256.0, rel=1e-6)

    def test_never_negative_and_unresolved(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake(monkeypatch, 20000.0, 30000.0, 4000.0, 250.0)  # later passes slower: nothing evicted
        assert kernels.run_footprint_kib(2 << 20, NEAR, FAR, 4000.0, 250.0) == 0.0
        # a run call said to take longer than the whole run
        assert kernels.run_footprint_kib(2 << 20, NEAR, FAR, 60000.0, 250.0) is None


def test_rates_read_the_footprint_with_the_far_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[float, ...]] = []
    monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: NEAR if hidden == 256 else FAR)
    monkeypatch.setattr(kernels, "fft_frame_times", lambda rounds=5: exact_frames(1.0, 5.0))
    monkeypatch.setattr(kernels, "layer_norm_ns", lambda rounds=5: 0.4)
    monkeypatch.setattr(kernels, "resize_ns", lambda rounds=3: {})
    monkeypatch.setattr(kernels, "run_footprint_kib", lambda *a, **kw: calls.append(a) or 200.0)
    monkeypatch.setattr(kernels, "direction_setups", lambda rounds=5: {})
    rates, _ = kernels.kernel_rates(l2_bytes=2 << 20, kernel_ns=250.0, run_ns=4000.0)
    assert rates["run_footprint_kib"] == 200.0 and calls == [(2 << 20, NEAR, FAR, 4000.0, 250.0, 5)]
    assert "run_footprint_kib" not in kernels.kernel_rates(quick=True, l2_bytes=2 << 20)[0]


def test_the_l1_rate_is_kept_only_where_faster_than_the_l2_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rates = {kernels.near_hidden(2 << 20): NEAR, kernels.l1_hidden(48 * 1024): 1.6 * NEAR, kernels.far_hidden(2 << 20): FAR,
             64: NEAR}  # quick: hidden 64 alone
    monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: rates[hidden])
    monkeypatch.setattr(kernels, "run_footprint_kib", lambda *a, **kw: 200.0)
    monkeypatch.setattr(kernels, "direction_setups", lambda rounds=5: {"lstm_direction_ns": 1600.0, "gru_direction_ns": 1100.0})
    notes: list[str] = []
    got = kernels._gemv_rates(False, 48 * 1024, 2 << 20, (250.0, 4000.0), 5, notes)
    assert got == {"gemv_gbps": NEAR, "gemv_l1_gbps": 1.6 * NEAR, "gemv_far_gbps": FAR, "run_footprint_kib": 200.0,
                   "lstm_direction_ns": 1600.0, "gru_direction_ns": 1100.0}  # fmt: skip
    assert not notes
    rates[kernels.l1_hidden(48 * 1024)] = NEAR  # no faster in L1: nothing to price apart
    got = kernels._gemv_rates(False, 48 * 1024, 2 << 20, (250.0, 4000.0), 5, notes)
    assert "gemv_l1_gbps" not in got and any("gemv_l1_gbps left out" in n for n in notes)
    assert "gemv_l1_gbps" not in kernels._gemv_rates(True, 48 * 1024, 2 << 20, (250.0, 4000.0), 2, [])


def test_a_directions_set_up_is_bidirectional_less_forward_at_no_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    setup = {"LSTM": 1600.0, "GRU": 1100.0}

    def fake(model: Any, x: Any, rounds: int) -> float:  # 3 us of dispatch, a set-up per direction, 100 ns a step
        node = model.graph.node[0]
        dirs = 2 if any(a.s == b"bidirectional" for a in node.attribute) else 1
        return 3000.0 + dirs * (setup[node.op_type] + 100.0 * x.shape[0])

    monkeypatch.setattr(kernels, "_fastest_ns", fake)
    assert kernels.direction_setups(rounds=1) == pytest.approx({"lstm_direction_ns": 1600.0, "gru_direction_ns": 1100.0})
    setup["GRU"] = -500.0  # bidirectional no slower at no steps: left out
    assert set(kernels.direction_setups(rounds=1)) == {"lstm_direction_ns"}


def test_col2im_is_the_conv_transpose_less_its_gemm_per_column(monkeypatch: pytest.MonkeyPatch) -> None:
    times = {"ConvTranspose": 60_000.0, "MatMul": 20_000.0}
    monkeypatch.setattr(kernels, "profile_nodes", lambda model, feeds, runs=10: {"n": ("k", times[model.graph.node[0].op_type])})
    got = kernels.col2im_rates(rounds=1)
    for key, (_cin, cout, side, k, _s, _p) in kernels.COL2IM_PROBES.items():
        assert got[key] == pytest.approx(40_000.0 / (cout * k * k * side * side))
    times["MatMul"] = 70_000.0  # no slower than its GEMM: nothing to price, left out
    assert kernels.col2im_rates(rounds=1) == {}


def test_footprint_is_the_median_of_its_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([None, 100.0, 320.0, 50.0, 200.0])
    monkeypatch.setattr(kernels, "_footprint_once", lambda *a: next(readings))
    assert kernels.run_footprint_kib(2 << 20, NEAR, FAR, 4000.0, 250.0) == 150.0
    readings = iter([None, None, None, 100.0, 200.0])  # most readings unresolved: no figure
    assert kernels.run_footprint_kib(2 << 20, NEAR, FAR, 4000.0, 250.0) is None


def exact_frames(butterfly: float, point: float) -> dict[str, float]:
    """The frame times of :data:`kernels.FFT_PROBES` that ``(butterfly, point)`` give exactly."""
    return {k: butterfly * n / 2 * math.log2(n) + point * n for n, k in kernels.FFT_PROBES.items()}


def test_rates_keep_the_frame_times_and_fit_the_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: 100.0)
    monkeypatch.setattr(kernels, "fft_frame_times", lambda rounds=5: exact_frames(1.5, 6.0))
    rates, _ = kernels.kernel_rates(quick=True)
    assert (rates["fft_butterfly_ns"], rates["fft_point_ns"]) == pytest.approx((1.5, 6.0))
    assert {k: rates[k] for k in kernels.FFT_PROBES.values()} == pytest.approx(exact_frames(1.5, 6.0))
    monkeypatch.setattr(kernels, "fft_frame_times", lambda rounds=5: {})
    rates, notes = kernels.kernel_rates(quick=True)
    assert "fft_butterfly_ns" not in rates and any("STFT radix-2 constants not resolved" in n for n in notes)


class TestFftConstants:
    """The radix-2 constants fitted over five frame lengths."""

    @given(st.floats(0.5, 4.0), st.floats(1.0, 10.0))
    def test_recovers_the_constants_of_exact_frames(self, butterfly: float, point: float) -> None:
        def frame(n: int, rounds: int) -> float:
            return butterfly * n / 2 * math.log2(n) + point * n

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(kernels, "_stft_frame_ns", frame)
            b, p = kernels.fft_constants()
        assert b == pytest.approx(butterfly, rel=1e-9) and p == pytest.approx(point, rel=1e-9)

    def test_one_noisy_length_moves_the_fit_little(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # 5 % too slow at 64 points only: the old two-length solve took the whole error into the
        # butterfly (times 16); over five lengths the 512-point frame moves well under 1 %
        def frame(n: int, rounds: int) -> float:
            return (1.6 * n / 2 * math.log2(n) + 6.0 * n) * (1.05 if n == 64 else 1.0)

        monkeypatch.setattr(kernels, "_stft_frame_ns", frame)
        b, p = kernels.fft_constants()
        true = 1.6 * 256 * 9 + 6.0 * 512
        assert abs(b * 256 * 9 + p * 512 - true) / true < 0.006


def test_block_rates_are_the_ratios_per_mac(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 -> 16 in 300 us, 64 -> 32 in 400 us, 64 -> 64 in 800 us: a quarter of the MACs at 2/3 the
    # rate, half of them at the full rate
    times = {"c16_nchwc": ("Conv", 300e3), "c32_nchwc": ("Conv", 400e3), "c64_nchwc": ("Conv", 800e3),
             "ReorderInput": ("ReorderInput", 9e3)}  # fmt: skip
    monkeypatch.setattr(kernels, "profile_nodes", lambda model, feeds, runs=10: dict(times))
    one, two = kernels.nchwc_block_efficiencies(2)
    assert one == pytest.approx(200 / 300) and two == pytest.approx(1.0)
    monkeypatch.setattr(kernels, "profile_nodes", lambda model, feeds, runs=10: {"c16": ("Conv", 1e3), "c32": ("Conv", 2e3)})
    assert kernels.nchwc_block_efficiencies(2) == (None, None)  # the four-block conv not found: neither read
    times.pop("c32_nchwc")
    monkeypatch.setattr(kernels, "profile_nodes", lambda model, feeds, runs=10: dict(times))
    assert kernels.nchwc_block_efficiencies(2) == (pytest.approx(200 / 300), None)


def test_block_probe_on_this_host() -> None:
    from hwsim.host.measure import nchwc_block

    one, two = kernels.nchwc_block_efficiencies(1)
    if nchwc_block():  # onnxruntime runs the convs blocked here: the probe finds them
        # measured: one block 0.68 on the CI Xeon, 0.93 on an AMD EPYC; two 0.90-1.0
        assert one is not None and 0.3 < one <= 1.5 and two is not None and 0.3 < two <= 1.5
    else:
        assert (one, two) == (None, None)


class TestStridedFftProbe:
    def rates(self, miss_ns: float, page_ns: float) -> dict[str, float]:
        """Probe times of a host whose strided transforms follow the law at these rates."""
        rate = {"fft_stride_ns": miss_ns, "fft_page_stride_ns": page_ns}
        return {key: rate[f] * w * n / 2 * strided_fft_stages(n, 8 * w, 32 * KIB) for f, key, n, w in kernels.FFT_STRIDE_PROBES}

    @given(st.floats(0.5, 60.0), st.floats(0.5, 80.0))
    def test_recovers_the_rates_of_a_host_that_follows_the_law(self, miss: float, page: float) -> None:
        got = kernels.fft_stride_from(self.rates(miss, page), 32 * KIB)
        assert got == pytest.approx({"fft_stride_ns": miss, "fft_page_stride_ns": page})

    def test_left_out_where_no_stage_misses_or_not_timed(self) -> None:
        # an L1 of 512 KiB holds every probe's lines: no stage misses, nothing to divide by
        assert kernels.fft_stride_from(self.rates(25.0, 37.0), 512 * KIB) == {}
        page_key = next(key for f, key, _, _ in kernels.FFT_STRIDE_PROBES if f == "fft_page_stride_ns")
        rates = {k: v for k, v in self.rates(25.0, 37.0).items() if k != page_key}
        assert kernels.fft_stride_from(rates, 32 * KIB) == pytest.approx({"fft_stride_ns": 25.0})

    def test_derived_again_from_merged_times(self) -> None:
        assert kernels.rederived(self.rates(25.0, 37.0), 250.0, 32 * KIB)["fft_stride_ns"] == pytest.approx(25.0)
        assert "fft_stride_ns" not in kernels.rederived(self.rates(25.0, 37.0), 250.0)  # no L1 size: not derived
        assert set(kernels.FFT_STRIDE_DERIVED) <= set(kernels.REDERIVED)  # merged rounds derive them again


class TestStridedFftBenchmark:
    def test_prices_and_measures_the_shapes_it_names(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        import yaml

        from tests.helpers import host_chip, load_benchmarks

        chip = tmp_path / "host.yaml"
        chip.write_text(yaml.safe_dump(host_chip(fft_butterfly_ns=2.0, fft_point_ns=6.2, l1_kib=32, fft_stride_ns=25.0)))
        bench = load_benchmarks("strided_fft")
        model = bench.dft_model(64, 16, 1)
        assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 64, 16, 2]
        assert bench.main(["--chip", str(chip), "--rounds", "1", "--shapes", "64x16,64x512"]) == 0
        rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 64 |")]
        assert [r.split("|")[2].strip() for r in rows] == ["128", "4096"]  # bytes apart
        # 64 points 4 KiB apart: 3 stages past the L1 at 25 ns, 512 columns (and the op's dispatch)
        assert float(rows[1].split("|")[6]) == pytest.approx(25.0 * 32 * 3 * 512 / 1e3, rel=0.01)


class TestSingleAxisTransposeProbes:
    def test_each_rate_is_the_difference_of_its_two_sizes_over_their_elements(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # a fake onnxruntime: 4 us of profiled set-up per kernel; per unit, inwards and outwards, by dtype and channels
        rate = {("float32", 32): (0.2, 0.28), ("uint8", 128): (0.06, 0.09), ("uint8", 32): (0.05, 0.045),
                ("uint8", 3): (0.24, 0.22), ("float32", 48): (0.2, 0.28)}  # fmt: skip

        def fake(dtype: type, channels: int, side: int, rounds: int) -> tuple[float, float]:
            inwards, outwards = rate[(np.dtype(dtype).name, channels)]
            return 4000.0 + inwards * channels * side * side, 4000.0 + outwards * channels * side * side

        monkeypatch.setattr(kernels, "_single_axis_ns", fake)
        monkeypatch.setattr(kernels, "memcpy_unit_ns", lambda rounds: None)
        assert kernels.single_axis_rates(1) == pytest.approx({"transpose_block_ns": 0.2, "transpose_byte_block_ns": 0.06,
                                                              "transpose_edge_ns": 0.23, "transpose_outward_factor": 0.28 / 0.2,
                                                              "transpose_byte_outward_factor": 0.09 / 0.06,
                                                              "transpose_shared_line_factor": 1.0})  # fmt: skip
        monkeypatch.setattr(kernels, "memcpy_unit_ns", lambda rounds: 7.0)
        assert set(kernels.single_axis_rates(1, 2**21)) == set(kernels.SINGLE_AXIS_FIELDS)
        assert kernels.single_axis_rates(1, 2**21)["transpose_pass_lines"] == 1.0  # no slower beyond L2
        monkeypatch.setattr(kernels, "_single_axis_ns", lambda *a: (8000.0, 8000.0))
        monkeypatch.setattr(kernels, "memcpy_unit_ns", lambda rounds: None)
        assert kernels.single_axis_rates(1) == {}

    @pytest.mark.parametrize(("far_ns", "lines"), [(0.28, 1.0), (0.30, 1.0), (0.45, 2.0), (1.1, 2.0)])
    def test_a_pass_reads_two_lines_a_row_where_the_plane_that_fits_l2_only_at_one_runs_slower(
        self, monkeypatch: pytest.MonkeyPatch, far_ns: float, lines: float
    ) -> None:
        # a fake onnxruntime: 0.28 ns a float moved outwards while a pass's lines (2 a row) fit the
        # L2, far_ns beyond it (0.45: twice the lines from an L3 at 154 GB/s; 1.1: at 38)
        l2 = 873_882
        channels, share, _ = kernels.PASS_LINES_PROBE

        def fake(dtype: type, c: int, side: int, rounds: int) -> tuple[float, float]:
            assert c == channels and np.dtype(dtype) == np.float32
            beyond = 2 * side * side * 64 > l2
            return 1.0, 1000.0 + (far_ns if beyond else 0.28) * c * side * side

        monkeypatch.setattr(kernels, "_single_axis_ns", fake)
        assert kernels.pass_lines_from(l2, 2) == lines
        side = int(math.sqrt(share * l2 / 64))
        assert side * side * 64 < l2 < 2 * side * side * 64  # fits at one line a row, not at two

    @pytest.mark.parametrize(("call_ns", "byte_ns", "expected"), [(7.0, 0.05, 8.6), (0.0, 0.0, None)])
    def test_a_memcpy_per_unit_is_the_difference_of_two_sizes_over_their_units(
        self, monkeypatch: pytest.MonkeyPatch, call_ns: float, byte_ns: float, expected: float | None
    ) -> None:
        # a fake onnxruntime: 3 us of profiled set-up, call_ns a unit of 32 bytes and byte_ns a byte
        heads, width, _ = kernels.MEMCPY_PROBE

        def fake(model: onnx.ModelProto, x: np.ndarray, rounds: int) -> float:
            assert [list(a.ints) for a in model.graph.node[0].attribute] == [[0, 2, 1, 3]] and x.shape[2:] == (heads, width)
            units = x.shape[1] * heads
            return 3000.0 + units * call_ns + byte_ns * x.nbytes

        monkeypatch.setattr(kernels, "_fastest_kernel_ns", fake)
        assert kernels.memcpy_unit_ns(1) == (None if expected is None else pytest.approx(expected))

    def test_the_memcpy_probe_moves_units_of_another_size_than_mlas_blocks(self) -> None:
        from cost_models.cpu_layout import MLAS_BLOCK_SIDE, WIDE_UNIT_BYTES, single_axis_moves

        heads, width, rows = kernels.MEMCPY_PROBE
        for n in rows:
            moves = single_axis_moves((1, n, heads, width), (0, 2, 1, 3))
            assert moves is not None and moves[3] == width
        assert width * 4 not in MLAS_BLOCK_SIDE and width * 4 != WIDE_UNIT_BYTES
        assert kernels.memcpy_unit_ns(1) is not None  # onnxruntime loads and runs both sizes

    def test_the_probes_move_one_axis_of_planes_no_page_apart(self) -> None:
        from cost_models.cpu_layout import single_axis_moves

        for key, (dtype, channels, sides) in kernels.SINGLE_AXIS_PROBES.items():
            for c, side in zip(channels, sides, strict=True):
                assert (side * side * np.dtype(dtype).itemsize) % 4096 != 0, key
                assert single_axis_moves((1, c, side, side), (0, 2, 3, 1)) is not None
                assert min(kernels._single_axis_ns(dtype, c, side, 1)) > 0  # onnxruntime loads and runs both ways


class TestSliceProbes:
    def test_the_time_per_run_and_per_stepped_element_of_a_kernel_that_pays_them(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # a fake onnxruntime: 5 us a call, 0.1 ns a byte, 4 ns a run, 1 ns an element copied one at a time
        def fake(shape: tuple[int, ...], end: int, step: int, rounds: int) -> float:
            rows = math.prod(shape[:-1])
            out = rows * len(range(0, end, step))
            runs, stepped = (rows, out) if step != 1 else (rows if end < shape[-1] else 1, 0)
            return 5000.0 + 0.4 * out + 4.0 * runs + 1.0 * stepped

        monkeypatch.setattr(kernels, "_slice_ns", fake)
        assert kernels.slice_run_ns(1) == pytest.approx(4.0 + 0.4)  # a run of one float: its bytes too
        assert kernels.slice_step_element_ns(1) == pytest.approx(1.0 + 0.4)
        monkeypatch.setattr(kernels, "_slice_ns", lambda *a: 5000.0)
        assert kernels.slice_run_ns(1) is None and kernels.slice_step_element_ns(1) is None

    def test_the_probes_slice_what_they_say(self) -> None:
        # the probe models are Slices onnxruntime loads and runs (a malformed one raises)
        assert kernels._slice_ns((1, 64, 2), 1, 1, 1) > 0
        assert kernels._slice_ns((1, 16, 64), 64, 2, 1) > 0


class TestSingleAxisTransposeBenchmark:
    def test_prices_and_measures_the_cases_it_names(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        import yaml

        from tests.helpers import host_chip, load_benchmarks

        chip = tmp_path / "host.yaml"
        fields = {"transpose_block_ns": 0.25, "transpose_byte_block_ns": 0.09, "transpose_edge_ns": 0.24}
        chip.write_text(yaml.safe_dump(host_chip(**fields)))
        bench = load_benchmarks("single_axis_transposes")
        assert bench.main(["--chip", str(chip), "--rounds", "1", "--cases", "u8:3x64x64,f32:8x16x16"]) == 0
        rows = [line.split("|") for line in capsys.readouterr().out.splitlines() if line.startswith(("| u8 |", "| f32 |"))]
        assert [(r[1].strip(), r[3].strip()) for r in rows] == [("u8", "NCHW -> NHWC"), ("u8", "NHWC -> NCHW"),
                                                                 ("f32", "NCHW -> NHWC"), ("f32", "NHWC -> NCHW")]  # fmt: skip
        # 3 channels of bytes: every unit left over, at 0.24 ns, and the chip's 2 us of dispatch
        assert float(rows[0][5]) == pytest.approx(3 * 64 * 64 * 0.24 / 1e3 + 2.0, abs=0.06)
        assert float(rows[2][5]) == pytest.approx(8 * 16 * 16 * 0.25 / 1e3 + 2.0, abs=0.06)  # every float in a block


class TestHeadTransposeBenchmark:
    def test_prices_each_head_as_a_memcpy_call(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        import yaml

        from tests.helpers import host_chip, load_benchmarks

        chip = tmp_path / "host.yaml"
        chip.write_text(yaml.safe_dump(host_chip(transpose_memcpy_ns=7.0)))
        bench = load_benchmarks("head_transposes")
        assert bench.main(["--chip", str(chip), "--rounds", "1", "--cases", "16x256x8,4x64x3"]) == 0
        rows = [line.split("|") for line in capsys.readouterr().out.splitlines() if line.startswith(("| 16 x 256 x 8", "| 4 x 64 x 3"))]
        assert [(r[2].strip(), r[3].strip()) for r in rows] == [("32", "4096"), ("12", "256")]
        # 4,096 calls at 7 ns, 256 KiB in and out from the 2 MiB L2 (130 GB/s) and the chip's 2 us of dispatch;
        # 256 calls and 6 KiB from the L1 (200 GB/s)
        assert float(rows[0][5]) == pytest.approx((4096 * 7.0 + 2**18 / 130) / 1e3 + 2.0, abs=0.06)
        assert float(rows[1][5]) == pytest.approx((256 * 7.0 + 6144 / 200) / 1e3 + 2.0, abs=0.06)


class TestIm2colProbe:
    def test_the_pack_is_what_the_two_convs_share_beside_their_fmas(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # a fake onnxruntime: FMAs at 250 GFLOP/s, 0.15 ns an element of B packed, 3 us a kernel
        channels, taps, steps = kernels.IM2COL_PROBE

        def fake(model: object, feeds: dict[str, np.ndarray], runs: int) -> dict[str, tuple[str, float]]:
            out = model.graph.initializer[0].dims[0]  # type: ignore[attr-defined]
            flops = 2 * out * channels * taps * steps
            return {"y": ("Conv", 3000.0 + flops / 250.0 + 0.15 * channels * taps * steps)}

        monkeypatch.setattr(kernels, "profile_nodes", fake)
        assert kernels.im2col_rates(1)["im2col_pack_ns"] == pytest.approx(0.15 + 3000.0 / (channels * taps * steps))
        monkeypatch.setattr(kernels, "profile_nodes", lambda m, f, runs: {"y": ("Conv", 1000.0 * m.graph.initializer[0].dims[0])})
        assert kernels.im2col_rates(1).get("im2col_pack_ns") is None  # all FMAs: nothing left to pack

    def test_the_gather_is_what_stride_2_over_twice_the_steps_adds(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # a fake onnxruntime: the same B and FMAs, 0.18 ns an element of B more at stride 2
        channels, taps, steps = kernels.IM2COL_PROBE

        def fake(model: object, feeds: dict[str, np.ndarray], runs: int) -> dict[str, tuple[str, float]]:
            strided = any(a.name == "strides" and list(a.ints) == [2] for a in model.graph.node[0].attribute)  # type: ignore[attr-defined]
            return {"y": ("Conv", 500_000.0 + (0.18 * channels * taps * steps if strided else 0.0))}

        monkeypatch.setattr(kernels, "profile_nodes", fake)
        assert kernels.im2col_rates(1)["im2col_stride_ns"] == pytest.approx(0.18)

    def test_the_probe_convs_run(self) -> None:
        assert "im2col_pack_ns" in kernels.im2col_rates(1)  # onnxruntime loads and runs both
        assert kernels._conv1d_ns(64, 8000, 2, 1) > 0
