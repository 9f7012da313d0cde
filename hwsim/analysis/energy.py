"""A trace's energy and power, priced by the one formula of :mod:`cost_models.energy`.

Each unit draws ``active_w`` per busy core (scaled by the clock a throttled op ran at,
:func:`cost_models.energy.core_power_w`) and ``idle_w`` while none of its cores is busy; the
DRAM costs ``energy_pj_per_byte`` for every byte through it. :func:`run_energy` integrates that
over a run; :func:`power_timeline` is the same as a step function of time, whose integral is
:attr:`RunEnergy.total_pj`. :func:`run_power` reads the average and the peak of that timeline,
for the chip, each unit and the DRAM.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from chips.schema import Chip
from cost_models.energy import (
    clocked_unit_power_w,
    dram_energy_pj,
    dram_power_w,
    unit_run_energy_pj,
)
from hwsim.analysis.busy import clocked_core_steps, unit_active_ps, unit_busy_ps_by_clock
from hwsim.sim.engine import Trace

__all__ = [
    "PowerFigures",
    "RunEnergy",
    "RunPower",
    "dram_bytes_moved",
    "dram_power_timeline",
    "power_timeline",
    "run_energy",
    "run_power",
    "unit_power_timeline",
]


@dataclass(frozen=True, slots=True)
class RunEnergy:
    """Energy of one run (all its frames): per unit, and the DRAM's.

    Attributes
    ----------
    unit_pj : per unit name (in the chip's order), active plus idle energy, pJ.
    dram_bytes : bytes through the shared DRAM.
    dram_pj : their energy, pJ.
    """

    unit_pj: Mapping[str, float]
    dram_bytes: int
    dram_pj: float

    @property
    def total_pj(self) -> float:
        """Units' and DRAM energy, pJ."""
        total = 0.0
        for pj in self.unit_pj.values():
            total += pj
        return total + self.dram_pj


def dram_bytes_moved(chip: Chip, trace: Trace) -> int:
    """Bytes through the shared DRAM: ops in DRAM domains, the spill traffic of ops in SRAM
    domains (``OpRecord.spill_bytes``, :func:`hwsim.analysis.memory.fit_memory`), plus each
    DRAM end of a transfer."""
    dram_domains = {d.name for d in chip.domains if d.kind == "dram"}
    unit_domain = {u.name: u.domain for u in chip.units}
    total = sum(r.dram_bytes if unit_domain[r.unit] in dram_domains else r.spill_bytes for r in trace.ops)
    for r in trace.transfers:
        total += r.bytes * ((r.src_domain in dram_domains) + (r.dst_domain in dram_domains))
    return total


def run_energy(chip: Chip, trace: Trace) -> RunEnergy:
    """Energy of the run in ``trace`` on ``chip`` (every frame of it).

    >>> from chips import load_chip
    >>> from hwsim.sim.engine import OpRecord, Trace
    >>> chip = load_chip("rk3588")
    >>> e = run_energy(chip, Trace(10, (OpRecord("a", "Conv", "npu", 0, 0, 10, 0),), (), ()))
    >>> e.unit_pj["npu"] == 10 * chip.unit("npu").active_w, e.dram_pj
    (True, 0.0)
    """
    last = _LAST_ENERGY[0] if _LAST_ENERGY else None
    if last is not None and last[0] is chip and last[1] is trace:
        return last[2]
    span = trace.makespan_ps
    unit_pj = {
        u.name: unit_run_energy_pj(u, unit_busy_ps_by_clock(trace, u.name), unit_active_ps(trace, u.name), span)
        for u in chip.units
    }
    nbytes = dram_bytes_moved(chip, trace)
    energy = RunEnergy(MappingProxyType(unit_pj), nbytes, dram_energy_pj(chip.dram, nbytes))
    _LAST_ENERGY[:] = [(chip, trace, energy)]
    return energy


#: The last :func:`run_energy` (a run's analysis and its summary's power figures both read it).
_LAST_ENERGY: list[tuple[Chip, Trace, RunEnergy]] = []


def power_timeline(chip: Chip, trace: Trace) -> tuple[tuple[int, float], ...]:
    """Power of the whole chip over the run: ``(time_ps, watts)`` at every change.

    The DRAM draws ``energy_pj_per_byte`` times the bytes per picosecond streaming through it
    (1 pJ/ps = 1 W). The last step is 0 W at the end of the run. Its integral over the run is
    :attr:`RunEnergy.total_pj` (for a trace of several frames: the energy of all of them).

    >>> from chips import load_chip
    >>> from hwsim.sim.engine import OpRecord, Trace
    >>> chip = load_chip("rk3588")
    >>> t = Trace(10, (OpRecord("a", "Conv", "npu", 0, 0, 10, 0),), (), ())
    >>> [(ts, round(w, 2)) for ts, w in power_timeline(chip, t)]  # NPU 1 W busy, the rest idle
    [(0, 1.23), (10, 0.0)]
    """
    last = _LAST_TIMELINE[0] if _LAST_TIMELINE else None
    if last is not None and last[0] is chip and last[1] is trace:
        return last[2]
    steps = _power_timeline(chip, trace)
    _LAST_TIMELINE[:] = [(chip, trace, steps)]
    return steps


#: The last :func:`power_timeline` (a run's summary and its ``trace.json`` both draw it).
_LAST_TIMELINE: list[tuple[Chip, Trace, tuple[tuple[int, float], ...]]] = []


def _power_timeline(chip: Chip, trace: Trace) -> tuple[tuple[int, float], ...]:
    # Each unit's term of cost_models.energy.power_w at every time any term changes (the last
    # step of each unit, of the DRAM's samples, at or before it), summed in the chip's unit
    # order: the same floats as power_w over every unit, in numpy.
    span = trace.makespan_ps
    unit_steps = [clocked_core_steps(r for r in trace.ops if r.unit == u.name) for u in chip.units]
    dram_at: dict[int, float] = {}
    for t, mem, use in trace.bandwidth_samples:
        if mem == "dram":
            dram_at[t] = use
    times = sorted({0, *dram_at}.union(*({t for t, _ in steps} for steps in unit_steps)))
    if span > 0:
        times = times[: bisect_left(times, span)]
    at = np.array(times, dtype=np.int64)
    watts = np.zeros(len(at))
    for u, steps in zip(chip.units, unit_steps, strict=True):
        memo: dict[tuple[tuple[float, int], ...], float] = {}  # watts by busy cores (few distinct)
        step_w = []
        for _, busy in steps:
            key = tuple(busy.items())
            if key not in memo:
                memo[key] = clocked_unit_power_w(u, busy)
            step_w.append(memo[key])
        watts = watts + _last_at([t for t, _ in steps], step_w, at, clocked_unit_power_w(u, {}))
    dram_times = sorted(dram_at)
    dram_w = [dram_power_w(chip.dram, dram_at[t]) for t in dram_times]
    watts = watts + _last_at(dram_times, dram_w, at, dram_power_w(chip.dram, 0.0))
    out: list[tuple[int, float]] = []
    for t, w in zip(times, watts.tolist(), strict=True):  # the trace's own int objects, kept run long
        if not out or abs(out[-1][1] - w) > 1e-12:
            out.append((t, w))
    out.append((span, 0.0))
    return tuple(out)


def _last_at(times: list[int], values: list[float], at: np.ndarray, before: float) -> np.ndarray:
    """The value of the step function ``values[i]`` from ``times[i]`` (sorted) at each time of
    ``at``; ``before`` until the first step."""
    if not times:
        return np.full(len(at), before)
    k = np.searchsorted(np.asarray(times, dtype=np.int64), at, side="right") - 1
    return np.where(k >= 0, np.asarray(values, dtype=np.float64)[np.maximum(k, 0)], before)


@dataclass(frozen=True, slots=True)
class PowerFigures:
    """Power of one part of the chip over a run, in watts.

    Attributes
    ----------
    average_w : its energy over the run's span.
    peak_w : the highest instantaneous power.
    peak_at_ps : when it is first reached.
    """

    average_w: float
    peak_w: float
    peak_at_ps: int


@dataclass(frozen=True, slots=True)
class RunPower:
    """Average and peak power of a run: the chip's, each unit's (the chip's order), the DRAM's."""

    chip: PowerFigures
    units: Mapping[str, PowerFigures]
    dram: PowerFigures


def _figures(steps: tuple[tuple[int, float], ...], energy_pj: float, span_ps: int) -> PowerFigures:
    """Peak of a ``(time_ps, watts)`` step function, average from its energy (pJ / ps = W)."""
    peak_at, peak = 0, 0.0
    for t, w in steps:
        if t < span_ps and w > peak:
            peak_at, peak = t, w
    return PowerFigures(energy_pj / span_ps if span_ps > 0 else 0.0, peak, peak_at)


def unit_power_timeline(chip: Chip, trace: Trace, unit: str) -> tuple[tuple[int, float], ...]:
    """Power of ``unit`` over the run: ``(time_ps, watts)`` from 0 and at every change.

    >>> from chips import load_chip
    >>> from hwsim.sim.engine import OpRecord, Trace
    >>> chip = load_chip("rk3588")
    >>> t = Trace(10, (OpRecord("a", "Conv", "npu", 0, 2, 10, 0),), (), ())
    >>> unit_power_timeline(chip, t, "npu") == ((0, chip.unit("npu").idle_w), (2, chip.unit("npu").active_w))
    True
    """
    u = chip.unit(unit)
    level = {0: clocked_unit_power_w(u, {})}
    watts: dict[tuple[tuple[float, int], ...], float] = {}  # by busy cores (few distinct)
    for t, busy in clocked_core_steps(r for r in trace.ops if r.unit == unit):
        if t < trace.makespan_ps:
            key = tuple(busy.items())
            if key not in watts:
                watts[key] = clocked_unit_power_w(u, busy)
            level[t] = watts[key]
    return tuple(sorted(level.items()))


def dram_power_timeline(chip: Chip, trace: Trace) -> tuple[tuple[int, float], ...]:
    """Power of the DRAM over the run: ``(time_ps, watts)`` from 0 and at every change."""
    level = {0: 0.0}
    for t, mem, use in trace.bandwidth_samples:
        if mem == "dram" and t < trace.makespan_ps:
            level[t] = dram_power_w(chip.dram, use)
    return tuple(sorted(level.items()))


def run_power(chip: Chip, trace: Trace) -> RunPower:
    """Average and peak power of the run in ``trace``: the chip's (:func:`power_timeline`), each
    unit's and the DRAM's. Averages are energies (:func:`run_energy`) over the makespan.

    >>> from chips import load_chip
    >>> from hwsim.sim.engine import OpRecord, Trace
    >>> chip = load_chip("rk3588")
    >>> p = run_power(chip, Trace(10, (OpRecord("a", "Conv", "npu", 0, 0, 10, 0),), (), ()))
    >>> round(p.chip.peak_w, 2), p.chip.peak_at_ps, p.units["npu"].peak_w == chip.unit("npu").active_w
    (1.23, 0, True)
    """
    energy, span = run_energy(chip, trace), trace.makespan_ps
    units = {
        u.name: _figures(unit_power_timeline(chip, trace, u.name), energy.unit_pj[u.name], span) for u in chip.units
    }
    return RunPower(
        _figures(power_timeline(chip, trace), energy.total_pj, span),
        units,
        _figures(dram_power_timeline(chip, trace), energy.dram_pj, span),
    )
