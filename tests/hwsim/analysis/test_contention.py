"""Adding up what contention cost: sums over ops and transfers, and the critical path's share."""

from __future__ import annotations

import pytest

from chips import chip_from_dict
from cost_models import cost_table
from graph_ir.ir import Tensor
from hwsim.analysis.analyze import analyze
from hwsim.analysis.contention import TOP_STRETCHED, contention
from hwsim.sim.engine import OpRecord, Trace, TransferRecord, simulate
from tests.helpers import fixed_schedule, graph_from_ops, two_cpu_chip

BIG = (1, 64, 128, 128)


def _op(name: str, start: int, end: int, stretch: int = 0, wait: int = 0) -> OpRecord:
    return OpRecord(name, "Add", "cpu", 0, start, end, 0, stretch_ps=stretch, wait_core_ps=wait)


def _move(tensor: str, queued: int, start: int, end: int, stretch: int = 0) -> TransferRecord:
    return TransferRecord(tensor, "a", "b", 0, 8, "p", ("c",), queued, start, end, stretch_ps=stretch)


class TestContention:
    def test_an_empty_run_lost_nothing(self):
        c = contention(Trace(0, (), (), ()))
        assert (c.bandwidth_stretch_ms, c.core_wait_ms, c.dma_wait_ms, c.top_stretched_ops) == (0.0, 0.0, 0.0, ())
        assert c.contention_ms == 0.0

    def test_totals_are_sums_and_the_critical_path_share_counts_its_records_once(self):
        a = _op("a", 0, 4_000_000, stretch=1_000_000)
        b = _op("b", 0, 4_000_000, stretch=1_000_000, wait=250_000)  # stretched at the same time
        x = _move("t", 4_000_000, 5_000_000, 7_000_000, stretch=500_000)
        c = contention(Trace(7_000_000, (a, b), (x,), ()), critical_ops=[a], critical_transfers=[x])
        assert c.bandwidth_stretch_ms == pytest.approx(0.0025)  # 2.5 us over 2 us of wall time
        assert c.transfer_stretch_ms == pytest.approx(0.0005)
        assert c.bandwidth_stretch_on_critical_path_ms == pytest.approx(0.0015)
        assert c.core_wait_ms == pytest.approx(0.00025)
        assert c.dma_wait_ms == pytest.approx(0.001)
        assert c.contention_ms == pytest.approx(0.0025 + 0.00025 + 0.001)

    def test_top_stretched_ops_most_first_unstretched_left_out_at_most_top(self):
        ops = tuple(_op(f"op{i}", i, i + 100, stretch=i % 4) for i in range(3 * TOP_STRETCHED))
        top = contention(Trace(200, ops, (), ())).top_stretched_ops
        assert len(top) == TOP_STRETCHED
        assert [s.stretch_ms for s in top] == sorted((s.stretch_ms for s in top), reverse=True)
        assert top[0].node == "op3" and top[0].stretch_ms == pytest.approx(3e-9)  # earliest of the most
        few = contention(Trace(200, ops[:3], (), ()), top=5).top_stretched_ops
        assert [s.node for s in few] == ["op2", "op1"]  # op0 was not stretched


class TestAnalyze:
    def test_two_ops_stretched_side_by_side_only_one_is_on_the_critical_path(self):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=10.0, port_gbps=10.0))
        x = Tensor("x", BIG, "float32")
        g = graph_from_ops("two", [x], [(f"add{i}", "Add", [x, x], [Tensor(f"y{i}", BIG, "float32")]) for i in (1, 2)])
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"add1": ("cpu0", 0), "add2": ("cpu1", 0)}))
        a = analyze(g, chip, trace)
        one = trace.ops[0].stretch_ps / 1e9
        assert one > 0 and trace.ops[1].stretch_ps == trace.ops[0].stretch_ps
        assert a.contention.bandwidth_stretch_ms == pytest.approx(2 * one)  # a sum: twice the wall time
        assert a.contention.bandwidth_stretch_on_critical_path_ms == pytest.approx(one)
        assert a.contention.bandwidth_stretch_on_critical_path_ms <= a.critical_path_ms

    def test_a_chain_through_transfers_has_all_its_stretch_on_the_critical_path(self):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=4.0))  # DRAM-to-DRAM copies are stretched
        x, t = Tensor("x", BIG, "float32"), Tensor("t", BIG, "float32")
        g = graph_from_ops("chain", [x], [("p", "Relu", [x], [t]), ("c", "Relu", [t], [Tensor("y", BIG, "float32")])])
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"p": ("cpu0", 0), "c": ("cpu2", 0)}))
        a = analyze(g, chip, trace)
        assert a.critical_path == ("p", "c")
        chain_ps = sum(r.duration_ps for r in trace.ops) + sum(t.end_ps - t.start_ps for t in trace.transfers)
        assert a.critical_path_ms == pytest.approx(chain_ps / 1e9)  # t in, y back to the host
        assert a.contention.transfer_stretch_ms > 0
        assert a.contention.bandwidth_stretch_on_critical_path_ms == pytest.approx(a.contention.bandwidth_stretch_ms)
