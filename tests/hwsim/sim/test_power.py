"""Power: the figures of a run (average, peak, when) and the engine's power cap (``max_power_w``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict, load_chip
from cost_models import cost_table
from cost_models.energy import dram_power_w
from graph_ir.synthetic import random_dag
from hwsim.analysis.energy import power_timeline, run_energy, run_power
from hwsim.cli import main
from hwsim.sim.engine import EngineOptions, OpRecord, Trace, simulate
from hwsim.sim.plan import plan
from hwsim.sim.power import PowerCapError, largest_solo_power_w
from scheduler.schedule import Schedule
from tests.helpers import MODELS, fixed_schedule, mlp, one_line_error, random_chips, two_cpu_chip

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _powered_chip() -> Chip:
    data: dict[str, Any] = two_cpu_chip()
    for u, (active, idle) in zip(data["units"], [(2.0, 0.2), (3.0, 0.3), (4.0, 0.4)], strict=True):
        u |= {"active_w": active, "idle_w": idle}
    data["dram"]["energy_pj_per_byte"] = 50.0
    return chip_from_dict(data)


class TestRunPower:
    def test_two_ops_on_two_units(self):
        chip = _powered_chip()
        # cpu0 and cpu1 run together for 1000 ps, a streaming 10 bytes of DRAM (0.01 B/ps); then cpu0 alone
        ops = (OpRecord("a", "Conv", "cpu0", 0, 0, 1000, 10), OpRecord("b", "Conv", "cpu1", 0, 0, 1000, 0),
               OpRecord("c", "Conv", "cpu0", 0, 1000, 2000, 0))  # fmt: skip
        trace = Trace(2000, ops, (), ((0, "dram", 0.01), (1000, "dram", 0.0)))
        p = run_power(chip, trace)
        assert p.chip.peak_w == pytest.approx(2.0 + 3.0 + 0.4 + 0.01 * 50.0)  # the rest idle, plus DRAM
        assert p.chip.peak_at_ps == 0
        assert p.units["cpu0"].peak_w == 2.0 and p.units["cpu0"].average_w == pytest.approx(2.0)
        assert p.units["cpu1"].peak_w == 3.0 and p.units["cpu1"].average_w == pytest.approx((3.0 + 0.3) / 2)
        assert p.units["cpu2"].peak_w == 0.4 and p.units["cpu2"].peak_at_ps == 0
        assert p.dram.peak_w == pytest.approx(0.5) and p.dram.average_w == pytest.approx(0.25)
        expected_avg = ((2.0 + 3.0 + 0.4 + 0.5) + (2.0 + 0.3 + 0.4)) / 2
        assert p.chip.average_w == pytest.approx(expected_avg)
        assert p.chip.average_w == pytest.approx(run_energy(chip, trace).total_pj / 2000)

    def test_the_peak_is_when_it_is_first_reached(self):
        chip = _powered_chip()
        ops = (OpRecord("a", "Conv", "cpu2", 0, 5, 10, 0), OpRecord("b", "Conv", "cpu2", 0, 15, 30, 0))
        p = run_power(chip, Trace(30, ops, (), ()))
        assert (p.units["cpu2"].peak_w, p.units["cpu2"].peak_at_ps) == (4.0, 5)
        assert (p.chip.peak_w, p.chip.peak_at_ps) == (pytest.approx(4.0 + 0.2 + 0.3), 5)

    def test_an_empty_run(self):
        p = run_power(_powered_chip(), Trace(0, (), (), ()))
        assert p.chip.average_w == 0.0 and p.units["cpu0"].average_w == 0.0


def _case(graph, chip: Chip, seed: int) -> tuple[Any, Schedule]:
    import random

    table = cost_table(graph, chip, "int8")
    rng = random.Random(seed)
    where = {}
    for n in graph.order:
        unit = rng.choice(table.eligible(n))
        where[n] = (unit, rng.randrange(chip.unit(unit).cores))
    return table, fixed_schedule(graph, chip, table, where)


def _least_cap(graph, chip, table, sched, double_buffer: bool) -> float:
    p = plan(graph, chip, table, sched)
    return largest_solo_power_w(chip, p, lambda i, k: p.cost[i], double_buffer)[0]


graphs = st.builds(random_dag, st.integers(1, 30), st.integers(0, 2**31 - 1))


@SETTINGS
@given(graph=graphs, chip=random_chips(), seed=st.integers(0, 2**31 - 1), fraction=st.floats(0.0, 1.2),
       frames=st.integers(1, 2), double_buffer=st.booleans())  # fmt: skip
def test_the_cap_holds_at_every_instant(graph, chip, seed, fraction, frames, double_buffer):
    table, sched = _case(graph, chip, seed)
    free = simulate(graph, chip, table, sched, EngineOptions(double_buffer=double_buffer), frames)
    lo = _least_cap(graph, chip, table, sched, double_buffer)
    hi = max(w for _, w in power_timeline(chip, free))
    cap = lo + fraction * max(0.0, hi - lo)
    capped = simulate(graph, chip, table, sched, EngineOptions(double_buffer=double_buffer, max_power_w=cap), frames)
    assert sorted((r.frame, r.op) for r in capped.ops) == sorted((r.frame, r.op) for r in free.ops)
    for t, w in power_timeline(chip, capped):
        assert w <= cap * (1 + 1e-9), (t, w, cap)


def _unshared(chip: Chip) -> Chip:
    """``chip`` with nothing shared but the cores and the power: memories far faster than any
    stream, a DMA channel per transfer."""
    data = chip.model_dump()
    data["dram"]["bandwidth_gbps"] = 1e6
    for d in data["domains"]:
        if d["kind"] == "sram":
            d["bandwidth_gbps"] = 1e6
    for k in data["links"]:
        k["dma_channels"] = 64
    return type(chip).model_validate(data)


@SETTINGS
@given(graph=graphs, chip=random_chips().map(_unshared), seed=st.integers(0, 2**31 - 1), fraction=st.floats(0.0, 1.0))
def test_a_capped_run_is_never_faster(graph, chip, seed, fraction):
    """Every op starts no earlier under the cap: the cap only adds waits to fixed per-core orders.

    Not so where memory bandwidth or a link's FIFO is shared: delaying one op's stream can speed
    up another's (a scheduling anomaly; docs/power.md), so the chips here share neither.
    """
    table, sched = _case(graph, chip, seed)
    free = simulate(graph, chip, table, sched)
    lo = _least_cap(graph, chip, table, sched, True)
    hi = max(w for _, w in power_timeline(chip, free))
    capped = simulate(graph, chip, table, sched, EngineOptions(max_power_w=lo + fraction * max(0.0, hi - lo)))
    assert capped.makespan_ps >= free.makespan_ps
    start = {r.op: r.start_ps for r in free.ops}
    assert all(r.start_ps >= start[r.op] for r in capped.ops)


def test_a_cap_nothing_reaches_changes_nothing():
    chip = load_chip("rk3588")
    from graph_ir import load_onnx

    graph = load_onnx(MODELS / "resnet18.onnx")
    table, sched = _case(graph, chip, 7)
    assert simulate(graph, chip, table, sched, EngineOptions(max_power_w=1e6)) == simulate(graph, chip, table, sched)


def test_a_cap_below_one_op_alone_is_refused():
    chip = _powered_chip()
    graph = random_dag(6, 3)
    table, sched = _case(graph, chip, 3)
    least = _least_cap(graph, chip, table, sched, True)
    with pytest.raises(PowerCapError, match="runs alone"):
        simulate(graph, chip, table, sched, EngineOptions(max_power_w=least * 0.99))
    simulate(graph, chip, table, sched, EngineOptions(max_power_w=least))  # exactly enough runs


def _two_relus(chip: Chip, side: int, precision: str) -> tuple[Any, Any, Schedule]:
    """Two independent Relus of a 1 x 64 x side x side tensor, on cpu0 and cpu1."""
    from graph_ir.ir import Tensor
    from tests.helpers import graph_from_ops

    x = Tensor("x", (1, 64, side, side), "float32")
    ya, yb = Tensor("ya", (1, 64, side, side), "float32"), Tensor("yb", (1, 64, side, side), "float32")
    graph = graph_from_ops("two", [x], [("a", "Relu", [x], [ya]), ("b", "Relu", [x], [yb])])
    table = cost_table(graph, chip, precision)
    return graph, table, fixed_schedule(graph, chip, table, {"a": ("cpu0", 0), "b": ("cpu1", 0)})


def test_the_cap_delays_work_on_a_hand_case():
    """Two independent ops on two units fit together only without the cap: capped, they run in turn."""
    chip = _powered_chip()
    graph, table, sched = _two_relus(chip, 16, "int8")
    free = simulate(graph, chip, table, sched)
    least = _least_cap(graph, chip, table, sched, True)
    capped = simulate(graph, chip, table, sched, EngineOptions(max_power_w=least))
    a, b = ({r.op: r for r in t.ops} for t in (free, capped))
    assert a["a"].start_ps == a["b"].start_ps == 0  # together without the cap
    assert {b["a"].start_ps, b["b"].start_ps} == {0, min(b["a"].end_ps, b["b"].end_ps)}  # in turn under it
    assert capped.makespan_ps > free.makespan_ps
    assert max(w for _, w in power_timeline(chip, capped)) <= least * (1 + 1e-9)
    assert dram_power_w(chip.dram, 0.0) == 0.0


def test_streams_that_share_the_dram_reserve_its_power_once():
    """Two memory-bound ops on two cores, each streaming at the DRAM's whole rate when alone:
    together they share it, so the chip never draws more than one full stream's DRAM power. A
    cap at the uncapped run's own peak changes nothing (it held them to run in turn when each
    reserved a full stream of its own: 0.5 W of DRAM power counted twice)."""
    chip = _powered_chip()
    graph, table, sched = _two_relus(chip, 64, "fp32")
    free = simulate(graph, chip, table, sched)
    peak = max(w for _, w in power_timeline(chip, free))
    full_dram_w = dram_power_w(chip.dram, chip.dram.bandwidth_gbps / 1e3)  # GB/s = 1e-3 B/ps
    assert peak == pytest.approx(2.0 + 3.0 + 0.4 + full_dram_w)  # both busy, the DRAM at its rate
    capped = simulate(graph, chip, table, sched, EngineOptions(max_power_w=peak))
    assert capped.makespan_ps == free.makespan_ps
    assert max(w for _, w in power_timeline(chip, capped)) <= peak * (1 + 1e-9)


class TestCli:
    def test_run_reports_the_cap_and_its_cost(self, tmp_path, capsys):
        model = mlp(tmp_path / "mlp.onnx")
        out = tmp_path / "capped"
        assert main(["run", "rk3588", str(model), "--out", str(out), "--no-plots", "--max-power-w", "100"]) == 0
        power = json.loads((out / "summary.json").read_text())["power"]
        assert power["max_power_w"] == 100 and power["peak_w"] <= 100
        assert power["cap_cost_ms"] == pytest.approx(0.0, abs=1e-6)  # a cap nothing reaches costs nothing
        assert set(power["units"]) == {u.name for u in load_chip("rk3588").units}
        assert "cap 100 W held" in capsys.readouterr().out

    def test_a_cap_below_one_op_is_one_line_exit_2_and_writes_nothing(self, tmp_path, capsys):
        model = mlp(tmp_path / "mlp.onnx")
        out = tmp_path / "capped"
        assert main(["run", "rk3588", str(model), "--out", str(out), "--no-plots", "--max-power-w", "0.01"]) == 2
        assert "--max-power-w 0.01 W is below the chip's power while" in one_line_error(capsys)
        assert not out.exists()

    @pytest.mark.parametrize("bad", ["0", "-1", "watts", "inf"])
    def test_a_cap_that_is_not_a_positive_number_is_a_usage_error(self, bad, tmp_path, capsys):
        assert main(["run", "rk3588", str(tmp_path / "m.onnx"), "--max-power-w", bad]) == 2
        assert "--max-power-w" in capsys.readouterr().err
