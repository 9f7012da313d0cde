"""What contention cost, as the engine records it: stretch by shared bandwidth, waits for cores
and DMA channels (issue 11, item 9)."""

from __future__ import annotations

import pytest

from chips import chip_from_dict
from cost_models import cost_table
from graph_ir.ir import Tensor
from hwsim.analysis.contention import contention
from hwsim.sim.engine import PS_PER_NS, simulate
from hwsim.sim.resources import SharedBandwidth
from tests.helpers import fixed_schedule, graph_from_ops, two_cpu_chip

BIG = (1, 64, 128, 128)  # far beyond the toy chip's caches: memory-bound


def _two_adds():
    x = Tensor("x", BIG, "float32")
    y1, y2 = Tensor("y1", BIG, "float32"), Tensor("y2", BIG, "float32")
    return graph_from_ops("two_adds", [x], [("add1", "Add", [x, x], [y1]), ("add2", "Add", [x, x], [y2])])


class TestFlowStretch:
    def test_a_flow_sharing_a_memory_loses_what_it_streamed_below_its_cap(self):
        bw: SharedBandwidth[str] = SharedBandwidth({"dram": 1.0})
        bw.request(100, 1.0, {"dram": 1.0}, "a")
        bw.request(300, 1.0, {"dram": 1.0}, "b")
        bw.reallocate(0)  # 0.5 byte/ps each until a is done at 200
        bw.advance(200)
        (a,) = bw.release_finished(200)
        assert a.slowed and a.stretch_ps(0, 100) == pytest.approx(100.0)  # 200 ps for 100 ps of bytes
        bw.reallocate(200)  # b alone again at its cap: 200 bytes left
        bw.advance(bw.next_end_ps() - 200)
        (b,) = bw.release_finished(400)
        assert b.end_ps == 400 and b.stretch_ps(0, 300) == pytest.approx(100.0)

    def test_a_flow_alone_at_its_cap_loses_nothing(self):
        bw: SharedBandwidth[str] = SharedBandwidth({"dram": 1.0})
        bw.request(100, 0.25, {"dram": 1.0}, "a")
        bw.request(100, 0.25, {"dram": 1.0}, "b")  # 0.5 of 1.0 in use: room for both
        bw.reallocate(0)
        bw.advance(400)
        done = bw.release_finished(400)
        assert [f.owner for f in done] == ["a", "b"]
        assert all(not f.slowed and f.stretch_ps(0, 100) == 0.0 for f in done)


class TestBandwidthStretch:
    @pytest.mark.parametrize(
        ("dram_gbps", "port_gbps"),
        [(10.0, 10.0), (10.0, 8.0), (1000.0, 10.0)],
        ids=["each-at-half", "capped-port", "ample-dram"],
    )
    def test_two_memory_bound_ops_on_two_cores(self, dram_gbps, port_gbps):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=dram_gbps, port_gbps=port_gbps))
        g = _two_adds()
        table = cost_table(g, chip, "int8")
        cost = table.costs["add1"]["cpu0"]
        assert cost.bound == "memory"
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu1", 0)}))
        # both stream at once from the same start: each gets min(its own rate, half the DRAM)
        alone_gbps = cost.dram_bytes / cost.memory_ns
        shared_gbps = min(alone_gbps, dram_gbps / 2)
        expected_ps = (cost.dram_bytes / shared_gbps - cost.memory_ns) * PS_PER_NS
        for r in trace.ops:
            assert r.start_ps == 0 and r.wait_core_ps == 0
            assert r.stretch_ps == pytest.approx(expected_ps, abs=1)
            assert r.duration_ps == pytest.approx(cost.latency_ns * PS_PER_NS + r.stretch_ps, abs=2)
        if dram_gbps == port_gbps:  # half the bandwidth: the body takes twice as long
            assert trace.ops[0].stretch_ps == pytest.approx(cost.memory_ns * PS_PER_NS, abs=1)
        if dram_gbps >= 2 * port_gbps:  # room for both: no stretch at all
            assert all(r.stretch_ps == 0 for r in trace.ops)
        c = contention(trace)
        assert c.bandwidth_stretch_ms == pytest.approx(2 * expected_ps / 1e9, abs=1e-9)
        assert c.transfer_stretch_ms == 0.0 and c.core_wait_ms == 0.0 and c.dma_wait_ms == 0.0

    def test_a_copy_within_dram_is_stretched_when_dram_is_slower_than_its_link(self):
        # domains a and b are both in DRAM: the copy reads and writes it, 2 bytes of DRAM per byte
        chip = chip_from_dict(two_cpu_chip(dram_gbps=4.0))  # the link moves 5 GB/s, DRAM 4/2
        x = Tensor("x", BIG, "float32")
        a = Tensor("a", BIG, "float32")
        g = graph_from_ops("copy", [x], [("p", "Relu", [x], [a]), ("c", "Relu", [a], [Tensor("y", BIG, "float32")])])
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"p": ("cpu0", 0), "c": ("cpu2", 0)}))
        assert [t.tensor for t in trace.transfers] == ["a", "y"]  # y goes back to the host's domain
        for move in trace.transfers:  # one at a time, each alone in DRAM
            assert move.stretch_ps == pytest.approx((move.bytes / 2.0 - move.bytes / 5.0) * PS_PER_NS, abs=1)
        assert contention(trace).transfer_stretch_ms == pytest.approx(sum(t.stretch_ps for t in trace.transfers) / 1e9)


class TestWaits:
    def test_an_op_waits_for_its_busy_core(self):
        chip = chip_from_dict(two_cpu_chip())
        g = _two_adds()
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu0", 0)}))
        first, second = trace.ops
        assert (first.op, first.wait_core_ps, first.stretch_ps) == ("add1", 0, 0)
        assert second.wait_core_ps == first.end_ps == second.start_ps  # ready at 0, began when add1 ended
        assert second.stretch_ps == 0  # one at a time: nothing shared
        assert contention(trace).core_wait_ms == pytest.approx(first.end_ps / 1e9)

    def test_a_transfer_waits_for_the_only_dma_channel(self):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=1000.0, port_gbps=1000.0, channels=1))
        x = Tensor("x", BIG, "float32")
        a, b = Tensor("a", BIG, "float32"), Tensor("b", BIG, "float32")
        ops = [
            ("pa", "Relu", [x], [a]),
            ("pb", "Relu", [x], [b]),
            ("ca", "Relu", [a], [Tensor("ya", BIG, "float32")]),
            ("cb", "Relu", [b], [Tensor("yb", BIG, "float32")]),
        ]
        g = graph_from_ops("fanout", [x], ops)
        table = cost_table(g, chip, "int8")
        where = {"pa": ("cpu0", 0), "pb": ("cpu1", 0), "ca": ("cpu2", 0), "cb": ("cpu2", 0)}
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, where))
        first, second = sorted((t for t in trace.transfers if t.dst_domain == "b"), key=lambda t: t.start_ps)
        assert first.wait_channel_ps == 0
        assert second.wait_channel_ps == first.end_ps - second.queued_ps > 0
        c = contention(trace)
        assert c.dma_wait_ms == pytest.approx(sum(t.wait_channel_ps for t in trace.transfers) / 1e9)
        assert c.dma_wait_ms >= second.wait_channel_ps / 1e9 > 0
