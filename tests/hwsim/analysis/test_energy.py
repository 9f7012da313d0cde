"""The one energy formula: hand-computed figures on a two-unit chip, and every consumer agreeing."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict, load_chip
from cost_models.energy import (
    dram_energy_pj,
    energy_pj,
    energy_pj_ps,
    op_energy_pj,
    power_w,
    unit_power_w,
    unit_run_energy_pj,
)
from graph_ir.ir import Tensor
from hwsim.analysis.analyze import Analysis, analyze
from hwsim.analysis.busy import clocked_core_steps
from hwsim.analysis.energy import power_timeline, run_energy
from hwsim.analysis.frames import frame_stats
from hwsim.pipeline import run_graph
from hwsim.sim.engine import OpRecord, Trace, TransferRecord
from tests.helpers import MODELS, graph_from_ops


def toy_chip() -> Chip:
    """u: 2 cores, 2 W each busy, 0.5 W idle; v: 1 core, 1 W busy, 0.25 W idle; DRAM 10 pJ/B."""
    cpu = {"kind": "cpu", "clock_mhz": 1000, "flops_per_cycle": {"int8": 64}}
    return chip_from_dict(
        {
            "name": "toy",
            "dram": {"bandwidth_gbps": 10.0, "latency_ns": 0, "energy_pj_per_byte": 10.0},
            "domains": [{"name": "a"}, {"name": "b"}],
            "units": [
                {"name": "u", "domain": "a", "cores": 2, "active_w": 2.0, "idle_w": 0.5, **cpu},
                {"name": "v", "domain": "b", "cores": 1, "active_w": 1.0, "idle_w": 0.25, **cpu},
            ],
            "links": [{"src": "a", "dst": "b", "bandwidth_gbps": 5.0, "latency_ns": 0}],
        },
        source="toy",
    )


def toy_trace() -> Trace:
    """100 ps: u runs one op on one core (0-40 ps), one split over both (50-70); v one op (10-30);
    4 bytes move from a to b (both DRAM domains)."""
    ops = (
        OpRecord("op1", "Conv", "u", 0, 0, 40, 3),
        OpRecord("op2", "Conv", "u", 0, 50, 70, 0, cores=(0, 1)),
        OpRecord("op3", "Relu", "v", 0, 10, 30, 2),
    )
    moves = (TransferRecord("t", "a", "b", 0, 4, "op1", ("op3",), 40, 40, 45),)
    return Trace(100, ops, moves, ())


class TestFormula:
    def test_power_times_time(self) -> None:
        assert energy_pj(2.0, 1.5) == 3000.0  # 2 W for 1.5 ns = 3 nJ
        assert energy_pj_ps(2.0, 3) == 6.0  # 2 W for 3 ps = 6 pJ
        assert energy_pj(0.0, 1e9) == 0.0

    def test_dram_and_op(self) -> None:
        chip = toy_chip()
        assert dram_energy_pj(chip.dram, 13) == 130.0
        # one core of u for 5 ns (2 W -> 10 nJ) plus 7 DRAM bytes (70 pJ)
        assert op_energy_pj(chip.unit("u"), chip.dram, 5.0, 7) == 10_070.0

    def test_unit_over_a_run(self) -> None:
        u = toy_chip().unit("u")
        # 80 core-ps busy at 2 W, idle for the 40 ps none of its cores ran at 0.5 W
        assert unit_run_energy_pj(u, {1.0: 80}, active_ps=60, span_ps=100) == 180.0
        # 40 of those core-ps at half the clock draw half of active_w: 40 pJ less
        assert unit_run_energy_pj(u, {1.0: 40, 0.5: 40}, active_ps=60, span_ps=100) == 140.0

    def test_power(self) -> None:
        chip = toy_chip()
        u, v = chip.unit("u"), chip.unit("v")
        assert unit_power_w(u, 0) == 0.5 and unit_power_w(u, 2) == 4.0
        # u both cores, v idle, 0.1 byte/ps through DRAM at 10 pJ/B = 1 W
        assert power_w([(u, {1.0: 2}), (v, {})], chip.dram, 0.1) == pytest.approx(5.25)
        assert power_w([(u, {1.0: 1, 0.5: 1}), (v, {0.5: 0})], chip.dram, 0.1) == pytest.approx(4.25)


class TestRunEnergy:
    def test_hand_computed(self) -> None:
        e = run_energy(toy_chip(), toy_trace())
        # u: 2 W x (40 + 2 x 20) core-ps + 0.5 W x (100 - 60) ps idle = 160 + 20
        # v: 1 W x 20 ps + 0.25 W x 80 ps = 20 + 20
        assert dict(e.unit_pj) == {"u": 180.0, "v": 40.0}
        assert e.dram_bytes == 3 + 2 + 2 * 4  # ops in DRAM domains, both DRAM ends of the transfer
        assert e.dram_pj == 130.0 and e.total_pj == 350.0

    def test_analysis_and_frames_report_it(self) -> None:
        chip, trace = toy_chip(), toy_trace()
        usage = {u.unit: u.energy_mj for u in _analysis(chip, trace).units}
        assert usage == {"u": 180.0 / 1e9, "v": 40.0 / 1e9}
        assert frame_stats(chip, trace).energy_mj == 350.0 / 1e9

    def test_power_timeline_by_hand(self) -> None:
        steps = power_timeline(toy_chip(), toy_trace())
        assert steps == ((0, 2.25), (10, 3.0), (30, 2.25), (40, 0.75), (50, 4.25), (70, 0.75), (100, 0.0))
        # its integral is the units' energy (the DRAM draws only with bandwidth samples)
        assert sum(w * (t1 - t0) for (t0, w), (t1, _) in pairwise(steps)) == 220.0

    def test_empty_trace_costs_nothing(self) -> None:
        e = run_energy(toy_chip(), Trace(0, (), (), ()))
        assert e.total_pj == 0.0 and e.dram_bytes == 0


def _analysis(chip: Chip, trace: Trace) -> Analysis:
    """Analyze ``toy_trace`` with a graph of its three ops (the critical path needs one)."""
    x, y, z, w = (Tensor(n, (1, 8), "float32") for n in "xyzw")
    graph = graph_from_ops("toy", [x], [("op1", "Relu", [x], [y]), ("op2", "Relu", [y], [z]), ("op3", "Relu", [y], [w])])
    return analyze(graph, chip, trace)


@settings(max_examples=10, deadline=None)
@given(model=st.sampled_from(["resnet18", "mobilenetv2"]), frames=st.integers(1, 3))
def test_every_consumer_gives_one_figure(model: str, frames: int) -> None:
    from graph_ir.onnx_import import load_onnx

    chip = load_chip("rk3588")
    r = run_graph(load_onnx(MODELS / f"{model}.onnx"), chip, frames=frames)
    assert r.analysis.energy_mj == run_energy(chip, r.trace).total_pj / 1e9
    if frames == 1:  # one frame is no stream: its figures are the run's own
        assert r.stream is None and r.stream_trace is None
    else:
        assert r.stream is not None and r.stream_trace is not None
        assert r.stream.energy_mj == run_energy(chip, r.stream_trace).total_pj / 1e9


def _power_at_each_change(chip: Chip, trace: Trace) -> tuple[tuple[int, float], ...]:
    """The timeline by its definition: :func:`power_w` of every unit's busy cores and the DRAM's
    last sample, at every time either changes before the end, steps under 1e-12 W merged."""
    level: dict[int, dict[str, dict[float, int]]] = {}
    for u in chip.units:
        for t, n in clocked_core_steps(r for r in trace.ops if r.unit == u.name):
            level.setdefault(t, {})[u.name] = n
    dram_at = {t: use for t, mem, use in trace.bandwidth_samples if mem == "dram"}
    busy: dict[str, dict[float, int]] = {u.name: {} for u in chip.units}
    dram_use, out = 0.0, []
    for t in sorted(set(level) | set(dram_at) | {0}):
        if t >= trace.makespan_ps > 0:
            break
        busy.update(level.get(t, {}))
        dram_use = dram_at.get(t, dram_use)
        w = power_w(((u, busy[u.name]) for u in chip.units), chip.dram, dram_use)
        if not out or abs(out[-1][1] - w) > 1e-12:
            out.append((t, w))
    return (*out, (trace.makespan_ps, 0.0))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("uv"), st.integers(0, 200), st.integers(0, 60), st.booleans(),
                       st.sampled_from([1.0, 0.5, 0.75])), max_size=14),
    st.lists(st.tuples(st.integers(0, 300), st.sampled_from(["dram", "a"]), st.floats(0, 5)), max_size=8),
    st.integers(0, 300),
)  # fmt: skip
def test_power_timeline_is_power_w_at_each_change(
    ops: list[tuple[str, int, int, bool, float]], samples: list[tuple[int, str, float]], makespan: int
) -> None:
    """The same floats as :func:`power_w` step by step (one clock or several, splits, DRAM
    samples out of order, times past the end)."""
    recs = tuple(
        OpRecord(f"op{i}", "Conv", unit, 0, s, s + d, 0, cores=(0, 1) if split and unit == "u" else (), clock_factor=f)
        for i, (unit, s, d, split, f) in enumerate(ops)
    )
    trace = Trace(makespan, recs, (), tuple(samples))
    assert power_timeline(toy_chip(), trace) == _power_at_each_change(toy_chip(), trace)
