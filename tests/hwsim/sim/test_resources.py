"""The engine's resources, each alone: a unit's cores, a link's DMA channels, memory bandwidth."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwsim.sim.options import SimulationError
from hwsim.sim.resources import ChannelPool, CorePool, Flow, SharedBandwidth, max_min_rates


class TestCorePool:
    def test_a_request_takes_the_core_and_the_lowest_idle_others(self):
        pool = CorePool("npu", 4)
        assert pool.request(2, extra=2) == (2, 0, 1)
        assert pool.busy == [True, True, True, False]
        assert pool.idle() == [3]

    def test_more_cores_than_are_free_is_refused_and_takes_nothing(self):
        pool = CorePool("npu", 3)
        assert pool.request(0) == (0,)
        assert pool.request(1, extra=2) is None  # needs 3 cores, 2 are free
        assert pool.busy == [True, False, False]
        assert pool.request(1, extra=1) == (1, 2)  # 2 cores fit

    def test_a_busy_core_is_refused(self):
        pool = CorePool("cpu", 2)
        pool.acquire([1])
        assert pool.request(1) is None

    def test_a_refused_split_runs_once_cores_are_released(self):
        pool = CorePool("npu", 3)
        first = pool.request(0, extra=1)
        assert first == (0, 1)
        assert pool.request(2, extra=2) is None  # waits for the split above
        pool.release(first)
        assert pool.request(2, extra=2) == (2, 0, 1)

    def test_idle_leaves_out_the_asking_core(self):
        pool = CorePool("npu", 3)
        pool.acquire([1])
        assert pool.idle(besides=0) == [2]
        assert pool.idle() == [0, 2]

    def test_taking_a_busy_core_or_releasing_a_free_one_is_an_error(self):
        pool = CorePool("npu", 2)
        pool.acquire([0])
        with pytest.raises(ValueError, match="core 0 of unit 'npu' is busy"):
            pool.acquire([1, 0])
        assert pool.busy == [True, False]  # all or nothing
        with pytest.raises(ValueError, match="core 1 of unit 'npu' was not taken"):
            pool.release([1])

    def test_a_unit_without_cores_is_an_error(self):
        with pytest.raises(ValueError, match="at least one core"):
            CorePool("npu", 0)


class TestChannelPool:
    def test_transfers_start_in_the_order_they_queued(self):
        link = ChannelPool[str]("a<->b", 1)
        for t in ("x", "y", "z"):
            link.request(t)
        assert link.grant() == [("x", 0)]
        assert link.grant() == []  # the one channel is busy
        assert link.waiting == 2
        link.release(0)
        assert link.grant() == [("y", 0)]
        link.release(0)
        assert link.grant() == [("z", 0)]

    def test_the_lowest_free_channel_is_reused_first(self):
        link = ChannelPool[int]("a->b", 3)
        for t in range(3):
            link.request(t)
        assert link.grant() == [(0, 0), (1, 1), (2, 2)]
        link.release(2)
        link.release(0)
        assert link.free == 2
        link.request(3)
        link.request(4)
        assert link.grant() == [(3, 0), (4, 2)]

    def test_nothing_waits_while_channels_are_free(self):
        link = ChannelPool[int]("a<->b", 2)
        assert link.grant() == []
        link.request(7)
        assert link.grant() == [(7, 0)]
        assert (link.waiting, link.free) == (0, 1)

    def test_a_link_without_channels_is_an_error(self):
        with pytest.raises(ValueError, match="at least one DMA channel"):
            ChannelPool("a<->b", 0)


def _flow(seq: int, cap: float, uses: dict[str, float], remaining: float = 100.0) -> Flow[int]:
    return Flow(seq, remaining, cap, uses, seq)


class TestMaxMinRates:
    def test_two_flows_share_a_memory_equally(self):
        a, b = _flow(1, 10.0, {"dram": 1.0}), _flow(2, 10.0, {"dram": 1.0})
        max_min_rates([a, b], {"dram": 4.0})
        assert (a.rate, b.rate) == (2.0, 2.0)

    def test_a_capped_flow_leaves_its_share_to_the_other(self):
        a, b = _flow(1, 0.5, {"dram": 1.0}), _flow(2, 10.0, {"dram": 1.0})
        max_min_rates([a, b], {"dram": 4.0})
        assert (a.rate, b.rate) == (0.5, 3.5)

    def test_an_uncontended_flow_runs_at_its_cap(self):
        a = _flow(1, 1.5, {"dram": 1.0})
        max_min_rates([a], {"dram": 4.0})
        assert a.rate == 1.5

    def test_a_copy_within_a_memory_counts_twice(self):
        copy, op = _flow(1, 10.0, {"dram": 2.0}), _flow(2, 10.0, {"dram": 1.0})
        max_min_rates([copy, op], {"dram": 3.0})
        assert (copy.rate, op.rate) == (1.0, 1.0)  # 2 * 1.0 + 1.0 fills the 3.0

    def test_a_flow_limited_elsewhere_leaves_bandwidth_to_the_others(self):
        # x streams through the slow SRAM and DRAM; y through DRAM only
        x, y = _flow(1, 10.0, {"sram": 1.0, "dram": 1.0}), _flow(2, 10.0, {"dram": 1.0})
        max_min_rates([x, y], {"dram": 4.0, "sram": 1.0})
        assert (x.rate, y.rate) == (1.0, 3.0)

    def test_no_flows_is_nothing_to_do(self):
        max_min_rates([], {"dram": 1.0})


_memories = st.sampled_from(["dram", "sram0", "sram1"])
_flows = st.lists(
    st.tuples(
        st.floats(0.01, 10.0),
        st.dictionaries(_memories, st.sampled_from([1.0, 2.0]), min_size=1, max_size=2),
    ),
    min_size=1,
    max_size=8,
)


@given(_flows, st.fixed_dictionaries({m: st.floats(0.1, 20.0) for m in ["dram", "sram0", "sram1"]}))
def test_rates_are_max_min_fair(specs, capacity):
    """Within caps and capacities, and every flow below its cap is held back by a saturated
    memory where no other flow gets more (the definition of max-min fairness)."""
    flows = [_flow(i, cap, uses) for i, (cap, uses) in enumerate(specs)]
    max_min_rates(flows, capacity)
    use = {m: sum(f.rate * f.uses.get(m, 0.0) for f in flows) for m in capacity}
    for m, u in use.items():
        assert u <= capacity[m] * (1 + 1e-9)
    for f in flows:
        assert 0 < f.rate <= f.cap * (1 + 1e-12)
        if f.rate < f.cap * (1 - 1e-9):
            bottlenecks = [
                m
                for m in f.uses
                if use[m] >= capacity[m] * (1 - 1e-9)
                and all(g.rate <= f.rate * (1 + 1e-9) for g in flows if m in g.uses)
            ]
            assert bottlenecks, f"flow {f.seq} at {f.rate} < cap {f.cap} with no bottleneck"


class TestSharedBandwidth:
    def test_flows_end_when_their_bytes_are_through(self):
        bw = SharedBandwidth[str]({"dram": 1.0})
        bw.request(100, 1.0, {"dram": 1.0}, "a")
        bw.request(300, 1.0, {"dram": 1.0}, "b")
        bw.reallocate(0)
        assert bw.next_end_ps() == 200  # 0.5 bytes/ps each
        bw.advance(200)
        assert [f.owner for f in bw.release_finished(200)] == ["a"]
        bw.reallocate(200)  # b alone: its cap, 1 byte/ps, for its last 200 bytes
        assert bw.next_end_ps() == 400
        assert bw.samples == [(0, "dram", 1.0)]  # total use did not change at 200

    def test_finished_flows_come_back_in_the_order_they_started(self):
        bw = SharedBandwidth[str]({"dram": 10.0})
        bw.request(100, 1.0, {"dram": 1.0}, "slow")
        bw.request(50, 0.5, {"dram": 1.0}, "also")
        bw.reallocate(0)
        bw.advance(100)
        assert [f.owner for f in bw.release_finished(100)] == ["slow", "also"]
        assert bw.flows == [] and bw.next_end_ps() is None

    def test_an_end_is_at_least_one_ps_and_rounds_up(self):
        bw = SharedBandwidth[str]({"dram": 1.0})
        bw.request(2.5, 1.0, {"dram": 1.0}, "a")
        bw.reallocate(10)
        assert bw.next_end_ps() == 13
        bw2 = SharedBandwidth[str]({"dram": 1.0})
        bw2.request(0.0, 1.0, {"dram": 1.0}, "empty")
        bw2.reallocate(10)
        assert bw2.next_end_ps() == 11

    def test_samples_note_each_memory_whose_use_changes(self):
        bw = SharedBandwidth[str]({"dram": 2.0, "sram": 1.0})
        bw.request(100, 1.0, {"dram": 1.0}, "op")
        bw.reallocate(0)
        bw.request(100, 0.5, {"dram": 1.0, "sram": 1.0}, "dma")
        bw.reallocate(5)
        assert bw.samples == [(0, "dram", 1.0), (5, "dram", 1.5), (5, "sram", 0.5)]

    def test_a_zero_capacity_memory_is_reported(self):
        bw = SharedBandwidth[str]({"dram": 1.0, "sram0": 0.0})
        bw.request(10, 1.0, {"dram": 1.0}, "fine")
        bw.reallocate(0)  # nothing streams through sram0 yet: no error
        bw.request(10, 1.0, {"sram0": 1.0}, "stuck")
        with pytest.raises(SimulationError, match="zero-capacity memory: sram0"):
            bw.reallocate(0)


class TestPowerBudget:
    def test_a_request_fits_or_takes_nothing(self):
        from hwsim.sim.resources import PowerBudget

        cap = PowerBudget(5.0, base_w=1.0)
        assert cap.request(3.0) and cap.in_use_w == 4.0
        assert not cap.request(1.5) and cap.in_use_w == 4.0  # 5.5 W would pass the cap
        assert cap.request(1.0) and cap.in_use_w == 5.0  # exactly the cap fits
        cap.release(3.0)
        assert cap.in_use_w == 2.0 and cap.fits(3.0) and not cap.fits(3.1)

    def test_a_cap_below_the_base_or_not_positive_is_refused(self):
        from hwsim.sim.resources import PowerBudget

        with pytest.raises(ValueError, match="below the power drawn regardless"):
            PowerBudget(1.0, base_w=2.0)
        with pytest.raises(ValueError, match="positive"):
            PowerBudget(0.0)


def test_grant_with_admit_holds_the_queue_in_order():
    link: ChannelPool[str] = ChannelPool("a<->b", 3)
    for t in ("x", "y", "z"):
        link.request(t)
    assert link.grant(lambda t: t != "y") == [("x", 0)]  # y held back; z stays behind it
    assert link.waiting == 2 and link.free == 2
    assert link.grant() == [("y", 1), ("z", 2)]
