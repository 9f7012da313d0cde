"""What a loop keeps of its MatMul weights (:mod:`hwsim.host.weight_cache_probe`): the capacity the
cyclic law fits to the chains' stalls, and the chip fields it gives."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cost_models.cpu import cyclic_kept
from hwsim.host import weight_cache_probe as probe

MIB = 2.0**20


def fake_stalls(capacity_mib: float, cached_gbps: float, dram_gbps: float) -> Callable[..., dict[float, float]]:
    """A stall_per_byte standing for a host whose weight cache follows the cyclic law exactly."""

    def stalls(footprints: list[float], rounds: int = 3) -> dict[float, float]:
        out = {}
        for f in footprints:
            kept = cyclic_kept(f, capacity_mib * MIB) / f
            out[f] = kept / cached_gbps + (1 - kept) / dram_gbps
        return out

    return stalls


class TestWeightCacheRates:
    def test_the_xeon_vm_of_the_docs(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # an L3 the sweep puts at 48 MiB, weights kept up to ~14 MiB, 48 GB/s kept and 16 from DRAM
        monkeypatch.setattr(probe, "stall_per_byte", fake_stalls(14.0, 48.0, 16.0))
        notes: list[str] = []
        got = probe.weight_cache_rates(48 * MIB, 16.0, notes)
        assert notes == []
        assert got["weight_cache_kib"] / 1024 == pytest.approx(14.0, abs=0.1)
        assert got["weight_cached_gbps"] == pytest.approx(48.0)

    def test_no_dram_stall_means_nothing_to_share(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(probe, "stall_per_byte", lambda *a, **k: pytest.fail("probed without a stall"))
        notes: list[str] = []
        assert probe.weight_cache_rates(32 * MIB, None, notes) == {}
        assert "weight_cache_kib left out" in notes[0]

    def test_a_cache_that_keeps_everything_probed_is_not_resolved(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # the chains never lost half their weights: the capacity is beyond what was probed
        monkeypatch.setattr(probe, "stall_per_byte", fake_stalls(1000.0, 48.0, 16.0))
        notes: list[str] = []
        assert probe.weight_cache_rates(32 * MIB, 16.0, notes) == {}
        assert "not resolved" in notes[0]

    def test_cached_weights_that_stall_like_dram_are_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(probe, "stall_per_byte", fake_stalls(8.0, 10.0, 16.0))
        notes: list[str] = []
        assert probe.weight_cache_rates(32 * MIB, 16.0, notes) == {}
        assert "no less than from DRAM" in notes[0]

    @settings(max_examples=25, deadline=None)
    @given(capacity=st.floats(3.0, 40.0), llc=st.sampled_from([16.0, 32.0, 48.0]))
    @example(capacity=34.109375, llc=32.0)  # fitted onto half the largest footprint, 34.125 MiB: was refused
    def test_recovers_any_capacity_the_footprints_straddle(self, capacity: float, llc: float) -> None:
        footprints = probe.chain_footprints(llc * MIB)
        shares = {f: 1 - cyclic_kept(f, capacity * MIB) / f for f in footprints}
        fit = probe.fit_capacity(shares)
        if max(shares.values()) < 0.5 or not min(footprints) / 2 < capacity * MIB < max(footprints) / 2:
            assert fit is None or abs(fit / MIB - capacity) < 1.0
        else:
            assert fit is not None and abs(fit / MIB - capacity) <= 1 / 16 + 1e-9


class TestLoopCacheRates:
    def test_the_amd_epyc_vm_of_the_docs(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # the read sweep puts the L3 at 26 MiB; 4-row chains keep ~18 MiB, 52 GB/s kept and 20 from DRAM
        rows: list[int] = []

        def stalls(footprints: list[float], rounds: int = 3, rows_: int = 0, **kw: int) -> dict[float, float]:
            rows.append(kw.get("rows", rows_))
            return fake_stalls(18.0, 52.0, 20.0)(footprints)

        monkeypatch.setattr(probe, "stall_per_byte", stalls)
        notes: list[str] = []
        got = probe.loop_cache_rates(26 * MIB, notes)
        assert notes == [] and rows == [probe.LOOP_ROWS]
        assert got["loop_cache_kib"] / 1024 == pytest.approx(18.0, abs=0.1)

    def test_a_loop_that_keeps_the_whole_level_adds_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(probe, "stall_per_byte", lambda f, *a, **k: fake_stalls(26.0, 52.0, 20.0)(f))
        notes: list[str] = []
        assert probe.loop_cache_rates(24 * MIB, notes) == {}
        assert "loop_cache_kib left out" in notes[0]

    def test_weights_far_beyond_the_level_no_slower_are_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(probe, "stall_per_byte", lambda f, *a, **k: dict.fromkeys(f, 0.02))
        notes: list[str] = []
        assert probe.loop_cache_rates(26 * MIB, notes) == {}
        assert "no slower" in notes[0]


class TestLoopCacheBenchmark:
    def test_the_chain_passes_over_the_weights_it_is_named_for(self) -> None:
        import onnx

        from tests.helpers import load_benchmarks

        bench = load_benchmarks("loop_cache")
        for mb in (4, 18, 32):
            model = bench._chain(mb)
            onnx.checker.check_model(model)
            nbytes = sum(4 * t.dims[0] * t.dims[1] for t in model.graph.initializer)
            assert [n.op_type for n in model.graph.node] == ["MatMul"] * len(model.graph.initializer)
            assert abs(nbytes - mb * 1e6) <= bench.SIDE * bench.SIDE * 2

    def test_a_pass_reads_the_bytes_it_is_timed_over(self) -> None:
        from tests.helpers import load_benchmarks

        assert load_benchmarks("loop_cache").pause_gbps(1, 0.0, passes=4) > 0.5
