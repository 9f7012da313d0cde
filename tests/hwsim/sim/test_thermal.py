"""The first-order thermal model: the temperature follows the trace's power, throttling slows ops."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cost_models.energy
from chips import Chip, ChipError, chip_from_dict, load_chip
from chips.schema import Thermal
from chips.units import PS_PER_S
from cost_models import cost_table
from graph_ir import load_onnx
from graph_ir.synthetic import random_dag
from hwsim.analysis.energy import power_timeline, run_energy, run_power, unit_power_timeline
from hwsim.sim.engine import Trace, simulate
from hwsim.sim.thermal import ThermalState
from scheduler import schedule
from tests.helpers import MODELS, random_chips

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _with_thermal(chip: Chip, **fields: float) -> Chip:
    spec = {"resistance_c_per_w": 10.0, "capacitance_j_per_c": 1e-5, "ambient_c": 25.0, "throttle_c": 35.0,
            "throttle_clock_factor": 0.5} | fields  # fmt: skip
    return chip.model_copy(update={"thermal": Thermal(**spec)})


@pytest.fixture(scope="module")
def resnet():
    graph = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("rk3588")
    table = cost_table(graph, chip, "int8")
    return graph, chip, table, schedule(graph, chip, table, "heft")


def test_a_long_run_with_little_thermal_headroom_heats_and_throttles(resnet):
    graph, chip, table, sched = resnet
    free = simulate(graph, chip, table, sched, frames=8)
    # RC = 0.1 ms against a run of ~20 ms; 10 C/W: a few watts reach 35 C
    hot = _with_thermal(chip)
    trace = simulate(graph, hot, table, sched, frames=8)
    th = trace.thermal
    assert th is not None
    assert th.peak_c > 35.0 and th.throttled_ps > 0 and th.throttled_ops > 0
    assert trace.makespan_ps > free.makespan_ps  # throttled ops run longer
    assert th.samples[0] == (0, 25.0) and all(t <= trace.makespan_ps for t, _ in th.samples)


def test_no_thermal_model_never_throttles_and_changes_nothing(resnet):
    graph, chip, table, sched = resnet
    assert chip.thermal is None
    trace = simulate(graph, chip, table, sched, frames=3)
    assert trace.thermal is None
    # a model whose throttle point the run never reaches: heated, never throttled, same times
    cool = simulate(graph, _with_thermal(chip, throttle_c=1000.0), table, sched, frames=3)
    assert cool.thermal is not None and cool.thermal.throttled_ops == 0 and cool.thermal.throttled_ps == 0
    assert cool.thermal.peak_c > 25.0
    assert cool.ops == trace.ops and cool.makespan_ps == trace.makespan_ps


def test_throttled_ops_run_their_compute_at_the_throttled_clock(resnet):
    graph, chip, table, sched = resnet
    # the throttle point just above ambient: every op after the first moments starts throttled
    trace = simulate(graph, _with_thermal(chip, throttle_c=25.001, throttle_clock_factor=0.25), table, sched)
    assert trace.thermal is not None and trace.thermal.throttled_ops > len(graph) // 2
    slowed = 0
    for r in trace.ops:
        c = table.costs[r.op][r.unit]
        bound = c.compute_ns - c.stall_ns
        if not r.cores and r.duration_ps >= (bound / 0.25 + c.stall_ns + c.overhead_ns) * 1000 - 2 and bound > c.memory_ns:
            slowed += 1
    assert slowed > 0


def _replay(spec: Thermal, steps: tuple[tuple[int, float], ...]) -> list[tuple[int, float]]:
    """The exact exponential over the trace's own power timeline (independent of the engine)."""
    tau = spec.resistance_c_per_w * spec.capacitance_j_per_c * PS_PER_S
    temp, out = spec.ambient_c, [(0, spec.ambient_c)]
    for (t0, w), (t1, _) in itertools.pairwise(steps):
        t_inf = spec.ambient_c + w * spec.resistance_c_per_w
        temp = t_inf + (temp - t_inf) * math.exp(-(t1 - t0) / tau)
        out.append((t1, temp))
    return out


@SETTINGS
@given(graph=st.builds(random_dag, st.integers(1, 25), st.integers(0, 2**31 - 1)), chip=random_chips(),
       r=st.floats(1.0, 50.0), tau_ps=st.floats(1e3, 1e8))  # fmt: skip
def test_the_temperature_follows_the_traces_power(graph, chip, r, tau_ps):
    """The engine heats with the same power as :func:`power_timeline` reads from the trace."""
    hot = _with_thermal(chip, resistance_c_per_w=r, capacitance_j_per_c=tau_ps / PS_PER_S / r, throttle_c=1e6)
    table = cost_table(graph, hot, "int8")
    trace = simulate(graph, hot, table, schedule(graph, hot, table, "heft"))
    assert trace.thermal is not None and hot.thermal is not None
    expected = dict(_replay(hot.thermal, power_timeline(hot, trace)))
    for t, temp in trace.thermal.samples:
        if t in expected:
            assert temp == pytest.approx(expected[t], rel=1e-6, abs=1e-6)
    assert trace.thermal.peak_c == pytest.approx(max(expected.values()), rel=1e-6)


def test_time_above_the_throttle_point_is_exact():
    spec = Thermal(resistance_c_per_w=10, capacitance_j_per_c=1e-9, ambient_c=25, throttle_c=35,
                   throttle_clock_factor=0.5)  # fmt: skip
    th = ThermalState(spec)  # tau = 10 ns = 10_000 ps; 2 W heads for 45 C, crossing 35 C at tau ln 2
    th.advance(0, 100_000, 2.0)
    assert th.throttled_ps == pytest.approx(100_000 - 10_000 * math.log(2))
    th.advance(100_000, 200_000, 0.0)  # cooling from ~45 C to 25 C crosses 35 C at tau ln 2
    assert th.throttled_ps == pytest.approx(100_000 - 10_000 * math.log(2) + 10_000 * math.log(2), rel=1e-3)
    assert th.log().peak_at_ps == 100_000


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [("throttle_c", 20.0, "must be above ambient_c"), ("throttle_clock_factor", 0.0, "throttle_clock_factor"),
     ("resistance_c_per_w", -1.0, "resistance_c_per_w")],
)  # fmt: skip
def test_a_bad_thermal_block_is_a_chip_error(field, value, words):
    data = load_chip("rk3588").model_dump()
    data["links"] = [k for k in data["links"] if not k["derived"]]
    data["thermal"] = {"resistance_c_per_w": 10.0, "capacitance_j_per_c": 1.0, "ambient_c": 25.0,
                       "throttle_c": 85.0, "throttle_clock_factor": 0.5} | {field: value}  # fmt: skip
    with pytest.raises(ChipError, match=words):
        chip_from_dict(data)


# ---------------------------------------------------------------- throttling lowers power


def _nominal(trace: Trace) -> Trace:
    """The same trace (same ops, same instants) with every op at the nominal clock."""
    return dataclasses.replace(trace, ops=tuple(dataclasses.replace(r, clock_factor=1.0) for r in trace.ops))


def _at(steps: tuple[tuple[int, float], ...], t: int) -> float:
    """A ``(time_ps, watts)`` step function's value at ``t``."""
    return steps[bisect.bisect_right([s for s, _ in steps], t) - 1][1]


def _integral(steps: tuple[tuple[int, float], ...], end_ps: int) -> float:
    return sum(w * (t1 - t0) for (t0, w), (t1, _) in itertools.pairwise((*steps, (end_ps, 0.0))) if t1 > t0)


@SETTINGS
@given(graph=st.builds(random_dag, st.integers(1, 25), st.integers(0, 2**31 - 1)), chip=random_chips(),
       factor=st.floats(0.05, 1.0), tau_ps=st.floats(1e3, 1e7), frames=st.integers(1, 3))  # fmt: skip
def test_throttled_power_never_exceeds_unthrottled_and_energy_is_its_integral(graph, chip, factor, tau_ps, frames):
    """Throttled just above ambient: the power of every instant is at most the same cores' power at
    the nominal clock, energy is the power's integral, and the engine heated with that power."""
    hot = _with_thermal(chip, resistance_c_per_w=10.0, capacitance_j_per_c=tau_ps / PS_PER_S / 10.0,
                        throttle_c=25.0 + 1e-6, throttle_clock_factor=factor)  # fmt: skip
    table = cost_table(graph, hot, "int8")
    trace = simulate(graph, hot, table, schedule(graph, hot, table, "heft"), frames=frames)
    assert trace.thermal is not None and hot.thermal is not None
    throttled, nominal = power_timeline(hot, trace), power_timeline(hot, _nominal(trace))
    for t in {t for t, _ in throttled} | {t for t, _ in nominal}:
        assert _at(throttled, t) <= _at(nominal, t) + 1e-9
    energy = run_energy(hot, trace)
    span = trace.makespan_ps
    # The DRAM's rate holds between integer-ps instants, so each change of it can miss up to one
    # picosecond of the flow's bytes: at most the DRAM's peak bytes per ps, per change.
    changes = sum(mem == "dram" for _, mem, _ in trace.bandwidth_samples)
    rounding_pj = changes * hot.dram.bandwidth_gbps * 1e-3 * hot.dram.energy_pj_per_byte
    assert _integral(throttled, span) == pytest.approx(energy.total_pj, rel=1e-6, abs=1e-6 + rounding_pj)
    for u in hot.units:
        assert _integral(unit_power_timeline(hot, trace, u.name), span) == pytest.approx(
            energy.unit_pj[u.name], rel=1e-6, abs=1e-6
        )
    assert energy.total_pj <= run_energy(hot, _nominal(trace)).total_pj * (1 + 1e-12)
    expected = dict(_replay(hot.thermal, throttled))
    for t, temp in trace.thermal.samples:
        if t in expected:
            assert temp == pytest.approx(expected[t], rel=1e-6, abs=1e-6)
    if trace.thermal.throttled_ops and factor < 1.0:
        assert any(r.clock_factor == factor for r in trace.ops)


def test_throttling_settles_cooler_and_at_lower_power_than_the_constant_power_model(resnet, monkeypatch):
    """resnet18 x 8 frames, 10 C/W, throttled at 35 C to half the clock: the chip is hot nearly the
    whole run either way, but with power following the clock it runs ~13 C cooler in the second
    half and draws ~44% less, against the old model (a throttled core still drawing ``active_w``)."""
    graph, chip, table, sched = resnet
    hot = _with_thermal(chip)
    new = simulate(graph, hot, table, sched, frames=8)
    monkeypatch.setattr(cost_models.energy, "core_power_w", lambda unit, clock_factor=1.0: unit.active_w)
    old = simulate(graph, hot, table, sched, frames=8)
    old_power, old_pj = run_power(hot, old).chip.average_w, run_energy(hot, old).total_pj
    monkeypatch.undo()
    new_power = run_power(hot, new).chip.average_w
    assert new.thermal is not None and old.thermal is not None
    assert new.thermal.throttled_ops > 0 and old.thermal.throttled_ops > 0

    def second_half_mean_c(trace: Trace) -> float:
        assert trace.thermal is not None
        s = [(t, c) for t, c in trace.thermal.samples if t >= trace.makespan_ps // 2]
        return sum((t1 - t0) * c0 for (t0, c0), (t1, _) in itertools.pairwise(s)) / (s[-1][0] - s[0][0])

    assert new.thermal.peak_c < old.thermal.peak_c - 10.0  # 60.1 C against 87.6 C
    assert second_half_mean_c(new) < second_half_mean_c(old) - 5.0  # 41.5 C against 54.2 C
    assert new_power < 0.7 * old_power  # 2.02 W against 3.58 W
    assert run_energy(hot, new).total_pj < 0.7 * old_pj  # the same ops at the same times, throttled alike
    assert new.makespan_ps == old.makespan_ps
