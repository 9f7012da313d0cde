"""Energy and power: the one home of every formula that turns watts, time and bytes into energy.

A unit draws ``active_w`` per busy core and ``idle_w`` while none of its cores is busy; a core
whose clock is throttled to a fraction ``f`` of its nominal clock draws ``active_w * f``
(:func:`core_power_w`: dynamic power at a held voltage); the DRAM costs ``energy_pj_per_byte``
per byte moved through it. Everything that prices a run (the op
costs, the scheduler's energy search, the analysis of a trace, its power timeline) calls these
functions, so the figures agree by construction.

Time comes in nanoseconds (cost models, schedules) or in the engine's picoseconds (traces):
W x ns = 1e3 pJ (:data:`chips.units.PJ_PER_W_NS`) and W x ps = 1 pJ.

>>> from chips import load_chip
>>> chip = load_chip("rk3588")
>>> npu = chip.unit("npu")
>>> energy_pj(npu.active_w, 10.0)  # one busy NPU core for 10 ns
10000.0
>>> unit_run_energy_pj(npu, {1.0: 10}, active_ps=10, span_ps=30) == 10 * npu.active_w + 20 * npu.idle_w
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from chips.schema import Dram, Unit
from chips.units import PJ_PER_W_NS

#: The clock factor of a core that is not throttled (a fraction of its nominal clock).
NOMINAL_CLOCK = 1.0

__all__ = [
    "NOMINAL_CLOCK",
    "clocked_unit_power_w",
    "core_power_w",
    "dram_energy_pj",
    "dram_power_w",
    "energy_pj",
    "energy_pj_ps",
    "op_energy_pj",
    "power_w",
    "unit_power_w",
    "unit_run_energy_pj",
]


def energy_pj(power_w: float, duration_ns: float) -> float:
    """Energy of ``power_w`` drawn for ``duration_ns``.

    Returns
    -------
    float
        Picojoules (W x ns = 1e3 pJ).

    >>> energy_pj(2.0, 1.5)
    3000.0
    """
    return power_w * duration_ns * PJ_PER_W_NS


def energy_pj_ps(power_w: float, duration_ps: float) -> float:
    """Energy of ``power_w`` drawn for ``duration_ps`` (the engine's clock).

    Returns
    -------
    float
        Picojoules (W x ps = 1 pJ).

    >>> energy_pj_ps(2.0, 3)
    6.0
    """
    return power_w * duration_ps


def dram_energy_pj(dram: Dram, nbytes: float) -> float:
    """Energy of moving ``nbytes`` to or from the DRAM.

    Returns
    -------
    float
        Picojoules.
    """
    return nbytes * dram.energy_pj_per_byte


def op_energy_pj(unit: Unit, dram: Dram, latency_ns: float, dram_bytes: float) -> float:
    """Energy of one op: one core of ``unit`` active for ``latency_ns``, plus its DRAM traffic.

    Returns
    -------
    float
        Picojoules.
    """
    return energy_pj(unit.active_w, latency_ns) + dram_energy_pj(dram, dram_bytes)


def core_power_w(unit: Unit, clock_factor: float = NOMINAL_CLOCK) -> float:
    """Power of one busy core of ``unit`` running at ``clock_factor`` of its nominal clock.

    First-order CMOS dynamic power, ``P = a C V^2 f`` (switching activity ``a``, switched
    capacitance ``C``, supply ``V``, clock ``f``; Rabaey, *Digital Integrated Circuits*, ch. 5;
    Weste & Harris, *CMOS VLSI Design*, sec. 5.1). A chip file gives clocks and no voltages, so
    the voltage is held and the power is linear in the clock: ``active_w * clock_factor``. That
    is the upper bound of the first-order model: a throttle that also lowered the voltage (DVFS,
    ``V`` tracking ``f``) would draw ``f V^2`` of it, less. ``active_w`` is taken as all dynamic
    (the schema has no leakage term; ``idle_w`` is the floor of a unit with no busy core).
    A clock-bound cycle therefore costs the same energy throttled or not (``C V^2``); what a
    throttled op saves is the power of its not clock-bound time (overhead, streams, stalls).

    Returns
    -------
    float
        Watts.

    >>> from chips import load_chip
    >>> npu = load_chip("rk3588").unit("npu")
    >>> core_power_w(npu) == npu.active_w, core_power_w(npu, 0.5) == npu.active_w / 2
    (True, True)
    """
    return unit.active_w if clock_factor >= NOMINAL_CLOCK else unit.active_w * clock_factor


def unit_run_energy_pj(
    unit: Unit, busy_core_ps: Mapping[float, float], active_ps: float, span_ps: float
) -> float:
    """Energy of ``unit`` over a run of ``span_ps``.

    Parameters
    ----------
    busy_core_ps
        Core-time its cores were busy, by clock factor (:func:`core_power_w`), summed over cores
        (an op split over 2 cores counts twice); ``{1.0: t}`` when nothing was throttled.
    active_ps
        Wall time at least one of its cores was busy; idle power is drawn for the rest of the span.

    Returns
    -------
    float
        Picojoules.
    """
    busy = sum(energy_pj_ps(core_power_w(unit, f), ps) for f, ps in busy_core_ps.items())
    return busy + energy_pj_ps(unit.idle_w, span_ps - active_ps)


def unit_power_w(unit: Unit, busy_cores: int) -> float:
    """Power of ``unit`` with ``busy_cores`` cores busy at the nominal clock: ``active_w``
    each, ``idle_w`` when none is (:func:`clocked_unit_power_w`).

    Returns
    -------
    float
        Watts.
    """
    return clocked_unit_power_w(unit, {NOMINAL_CLOCK: busy_cores})


def clocked_unit_power_w(unit: Unit, busy_cores: Mapping[float, int]) -> float:
    """Power of ``unit`` with ``busy_cores[f]`` cores busy at clock factor ``f``:
    :func:`core_power_w` each, ``idle_w`` when none is.

    Returns
    -------
    float
        Watts.

    >>> from chips import load_chip
    >>> npu = load_chip("rk3588").unit("npu")
    >>> clocked_unit_power_w(npu, {1.0: 1, 0.5: 2}) == 2 * npu.active_w
    True
    >>> clocked_unit_power_w(npu, {0.5: 0}) == npu.idle_w
    True
    """
    if not any(busy_cores.values()):
        return unit.idle_w
    return sum(n * core_power_w(unit, f) for f, n in busy_cores.items() if n)


def dram_power_w(dram: Dram, dram_bytes_per_ps: float) -> float:
    """Power of the DRAM streaming ``dram_bytes_per_ps``.

    Returns
    -------
    float
        Watts (1 pJ per ps = 1 W).

    >>> from chips.schema import Dram
    >>> dram_power_w(Dram(bandwidth_gbps=10, latency_ns=0, energy_pj_per_byte=20.0), 0.01)
    0.2
    """
    return dram_bytes_per_ps * dram.energy_pj_per_byte


def power_w(units: Iterable[tuple[Unit, Mapping[float, int]]], dram: Dram, dram_bytes_per_ps: float) -> float:
    """Instantaneous power of a chip: each ``(unit, busy cores by clock factor)``
    (:func:`clocked_unit_power_w`) plus the DRAM's byte rate.

    Returns
    -------
    float
        Watts (1 pJ per ps = 1 W).
    """
    w = sum(clocked_unit_power_w(u, b) for u, b in units)
    return w + dram_power_w(dram, dram_bytes_per_ps)
