"""The discrete-event engine: exact timing of uncontended runs, DRAM sharing, DMA queues."""

from __future__ import annotations

import pytest

from chips import chip_from_dict
from cost_models import cost_table
from graph_ir.ir import Tensor
from hwsim.sim.engine import PS_PER_NS, SimulationError, simulate
from tests.helpers import fixed_schedule, graph_from_ops, two_cpu_chip

BIG = (1, 64, 128, 128)  # 1 MiB at int8: far beyond the toy chip's caches


def _two_adds():
    x = Tensor("x", BIG, "float32")
    y1, y2 = Tensor("y1", BIG, "float32"), Tensor("y2", BIG, "float32")
    return graph_from_ops("two_adds", [x], [("add1", "Add", [x, x], [y1]), ("add2", "Add", [x, x], [y2])])


class TestSimulateTiming:
    def test_lone_op_takes_its_cost_model_latency(self):
        chip = chip_from_dict(two_cpu_chip())
        x = Tensor("x", BIG, "float32")
        g = graph_from_ops("one", [x], [("add", "Add", [x, x], [Tensor("y", BIG, "float32")])])
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add": ("cpu0", 0)}))
        expected_ps = table.costs["add"]["cpu0"].latency_ns * PS_PER_NS
        assert trace.ops[0].duration_ps == pytest.approx(expected_ps, abs=2)
        assert trace.makespan_ps == trace.ops[0].end_ps

    def test_empty_schedule_of_views_takes_no_time(self):
        chip = chip_from_dict(two_cpu_chip())
        x = Tensor("x", (1, 4), "float32")
        g = graph_from_ops("views", [x], [("r", "Reshape", [x], [Tensor("y", (4,), "float32")])])
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"r": ("cpu0", 0)}))
        assert trace.makespan_ps == 0

    def test_same_inputs_same_trace(self):
        chip = chip_from_dict(two_cpu_chip())
        g = _two_adds()
        table = cost_table(g, chip, "int8")
        s = fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu2", 0)})
        assert simulate(g, chip, table, s) == simulate(g, chip, table, s)


class TestSharedDram:
    def test_two_memory_bound_ops_share_bandwidth_by_the_right_amount(self):
        # Each op alone streams at the full 10 GB/s; together they get 5 GB/s each.
        chip = chip_from_dict(two_cpu_chip(dram_gbps=10.0, port_gbps=10.0))
        g = _two_adds()
        table = cost_table(g, chip, "int8")
        cost = table.costs["add1"]["cpu0"]
        assert cost.bound == "memory"
        together = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu1", 0)}))
        apart = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu0", 0)}))
        body_ps = cost.memory_ns * PS_PER_NS
        over_ps = cost.overhead_ns * PS_PER_NS
        for r in together.ops:
            assert r.duration_ps == pytest.approx(over_ps + 2 * body_ps, rel=1e-6)
        assert apart.makespan_ps == pytest.approx(2 * (over_ps + body_ps), rel=1e-6)
        assert together.makespan_ps > apart.makespan_ps / 2 * 1.5

    def test_bandwidth_in_use_never_exceeds_capacity(self):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=10.0, port_gbps=8.0))
        g = _two_adds()
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu1", 0)}))
        cap = trace.memory_capacity_bytes_per_ps["dram"]
        assert trace.bandwidth_samples
        assert max(u for _, _, u in trace.bandwidth_samples) <= cap * (1 + 1e-9)


class TestDma:
    def _fanout(self):
        x = Tensor("x", BIG, "float32")
        a, b = Tensor("a", BIG, "float32"), Tensor("b", BIG, "float32")
        ops = [
            ("pa", "Relu", [x], [a]),
            ("pb", "Relu", [x], [b]),
            ("ca", "Relu", [a], [Tensor("ya", BIG, "float32")]),
            ("cb", "Relu", [b], [Tensor("yb", BIG, "float32")]),
        ]
        return graph_from_ops("fanout", [x], ops)

    @pytest.mark.parametrize("channels", [1, 2])
    def test_transfers_queue_for_channels(self, channels):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=1000.0, port_gbps=1000.0, channels=channels))
        g = self._fanout()
        table = cost_table(g, chip, "int8")
        where = {"pa": ("cpu0", 0), "pb": ("cpu1", 0), "ca": ("cpu2", 0), "cb": ("cpu2", 0)}
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, where))
        inner = sorted((r for r in trace.transfers if r.dst_domain == "b"), key=lambda r: r.start_ps)
        assert len(inner) == 2
        one = inner[0].bytes / 5.0 * PS_PER_NS + 50 * PS_PER_NS  # 5 GB/s link, 50 ns set-up
        assert inner[0].end_ps - inner[0].start_ps == pytest.approx(one, rel=1e-6)
        if channels == 1:
            assert inner[1].start_ps >= inner[0].end_ps  # waited for the only channel
        else:
            assert inner[1].start_ps < inner[0].end_ps  # both channels busy at once
        for r in trace.transfers:
            assert r.queued_ps <= r.start_ps < r.end_ps

    def test_a_tensor_crosses_once_per_destination(self):
        chip = chip_from_dict(two_cpu_chip())
        x = Tensor("x", BIG, "float32")
        a = Tensor("a", BIG, "float32")
        ops = [
            ("p", "Relu", [x], [a]),
            ("c1", "Relu", [a], [Tensor("y1", BIG, "float32")]),
            ("c2", "Sigmoid", [a], [Tensor("y2", BIG, "float32")]),
        ]
        g = graph_from_ops("twice", [x], ops)
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"p": ("cpu0", 0), "c1": ("cpu2", 0), "c2": ("cpu2", 0)}))
        a_moves = [r for r in trace.transfers if r.tensor == "a"]
        assert len(a_moves) == 1 and set(a_moves[0].consumers) == {"c1", "c2"}


class TestDeadlock:
    def test_an_order_against_the_graph_is_reported(self):
        chip = chip_from_dict(two_cpu_chip())
        x = Tensor("x", (1, 8), "float32")
        a, b = Tensor("a", (1, 8), "float32"), Tensor("b", (1, 8), "float32")
        g = graph_from_ops("chain", [x], [("first", "Relu", [x], [a]), ("second", "Relu", [a], [b])])
        table = cost_table(g, chip, "int8")
        s = fixed_schedule(g, chip, table, {"first": ("cpu0", 0), "second": ("cpu0", 0)})
        bad = type(s)(s.policy, s.placements, {("cpu0", 0): ("second", "first")}, s.transfers, 0.0)
        with pytest.raises(SimulationError, match="never ran"):
            simulate(g, chip, table, bad)

