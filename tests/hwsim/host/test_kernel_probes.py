"""The fingerprint's kernel probes that set the CPU model's L2 capacity for cyclic streams and
the cost of a parallel section: each inverts the rule the CPU model applies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cost_models.cpu import stream_ns
from hwsim.host import kernels
from hwsim.host.fingerprint import KIB, _stream_l2
from hwsim.host.measure import Timing

NEAR, FAR = 114.0, 28.0


def _cyclic_gbps(nbytes: float, l2_bytes: float) -> float:
    """The rate the CPU model gives a cyclic stream of ``nbytes`` through an L2 of ``l2_bytes``."""
    levels = [(1.0, 1000.0), (l2_bytes / KIB, 160.0), (49152.0, 39.0)]
    return nbytes / stream_ns(nbytes, levels, NEAR, 20.0, FAR)


class TestStreamHits:
    @given(st.floats(1.0, 1.95), st.floats(1 << 20, 4 << 20))
    def test_inverts_the_cyclic_rule(self, over: float, l2_bytes: float) -> None:
        nbytes = over * l2_bytes
        hits = kernels.stream_hits(nbytes, _cyclic_gbps(nbytes, l2_bytes), NEAR, FAR)
        assert hits is not None
        assert (nbytes + hits) / 2 == pytest.approx(l2_bytes, rel=1e-6)

    def test_clipped_and_unresolved(self) -> None:
        assert kernels.stream_hits(1e6, 200.0, NEAR, FAR) == 1e6  # faster than the near rate: all hits
        assert kernels.stream_hits(1e6, 10.0, NEAR, FAR) == 0.0
        assert kernels.stream_hits(1e6, 50.0, FAR, NEAR) is None


class TestStreamCapacity:
    def test_recovers_the_capacity_a_stream_keeps(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # an L2 the OS reports as 2 MiB of which a stream keeps 1.75 MiB (as measured on the CI Xeon)
        kept = 1.75 * (1 << 20)
        monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: _cyclic_gbps(16.0 * hidden**2, kept))
        kib = kernels.stream_capacity_kib(2 * (1 << 20), NEAR, FAR)
        assert kib == pytest.approx(kept / KIB, rel=1e-6)

    def test_never_above_the_os_size_and_none_when_unresolved(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: NEAR)
        assert kernels.stream_capacity_kib(2 * (1 << 20), NEAR, FAR) == 2048.0
        monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: None)
        assert kernels.stream_capacity_kib(2 * (1 << 20), NEAR, FAR) is None


class TestStreamL2:
    def caches(self) -> list[dict[str, float | str]]:
        return [{"level": 1, "kib": 64.0, "bandwidth_gbps": 200.0, "source": "sweep"},
                {"level": 2, "kib": 1536.0, "bandwidth_gbps": 160.0, "source": "sweep"}]  # fmt: skip

    def test_the_probe_sets_the_l2(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from hwsim.host import fingerprint

        monkeypatch.setattr(fingerprint, "stream_capacity_kib", lambda l2, near, far: 1790.0)
        caches = self.caches()
        note = _stream_l2(caches, 2048 * KIB, {"gemv_gbps": NEAR, "gemv_far_gbps": FAR})
        assert caches[1] == {"level": 2, "kib": 1790.0, "bandwidth_gbps": 160.0, "source": "stream"}
        assert "1790 KiB" in note and "1536 KiB (sweep)" in note

    def test_without_the_rates_the_sweep_stays(self) -> None:
        caches = self.caches()
        note = _stream_l2(caches, 2048 * KIB, {"gemv_gbps": NEAR})
        assert caches == self.caches() and "not resolved" in note


class TestParallelSection:
    def test_split_work_plus_the_section(self, monkeypatch: pytest.MonkeyPatch) -> None:
        count = kernels.SECTION_PROBE_COUNT
        # per kernel: dispatch 250 + work 1200 on one thread; 250 + 600 + a 900 ns section on two
        per = {1: 250.0 + 1200.0, 2: 250.0 + 600.0 + 900.0}
        monkeypatch.setattr(kernels, "make_session", lambda model, threads, opt: threads)
        monkeypatch.setattr(kernels, "time_session",
                            lambda sess, feeds, **kw: Timing((count * per[sess], 2 * count * per[sess])))  # fmt: skip
        assert kernels.parallel_section_ns(250.0) == pytest.approx(900.0)

    def test_no_section_when_the_split_is_not_slower(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(kernels, "make_session", lambda model, threads, opt: threads)
        monkeypatch.setattr(kernels, "time_session", lambda sess, feeds, **kw: Timing((1000.0 * 64 / sess,)))
        assert kernels.parallel_section_ns(0.0) is None


def test_rates_only_measure_a_section_on_several_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(kernels, "gemv_rate", lambda hidden, rounds=5: 100.0)
    monkeypatch.setattr(kernels, "fft_constants", lambda rounds=5: (1.0, 5.0))
    monkeypatch.setattr(kernels, "parallel_section_ns", lambda kernel_ns, rounds=5: calls.append(kernel_ns) or 800.0)
    assert "parallel_section_ns" not in kernels.kernel_rates(quick=True)[0]
    assert kernels.kernel_rates(quick=True, threads=2, kernel_ns=250.0)[0]["parallel_section_ns"] == 800.0
    assert calls == [250.0]
