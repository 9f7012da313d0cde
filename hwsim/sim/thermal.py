"""A first-order thermal model the engine runs beside the clock: temperature, throttling.

The chip is one thermal mass (:class:`chips.schema.Thermal`)::

    C dT/dt = P(t) - (T - T_ambient) / R

The power ``P`` is a step function of the engine's state (busy cores, DRAM streams: the same
:func:`cost_models.energy.power_w` the trace's power timeline uses), so between two events the
temperature follows the exact exponential ``T(t) = T_inf + (T0 - T_inf) exp(-t / RC)`` towards
``T_inf = T_ambient + P R``. The run starts at ambient.

While ``T >= throttle_c`` the chip is throttled: an op that *starts* then runs its clock-bound
compute at ``throttle_clock_factor`` of the clock (:func:`throttled_cost`), and its cores draw
the power of that clock (:func:`cost_models.energy.core_power_w`: ``active_w`` times the factor,
dynamic power at a held voltage) for the whole op; an op keeps the clock it started with, and
the trace records it (``OpRecord.clock_factor``), so the power the engine heats the chip with is
the power :func:`hwsim.analysis.energy.power_timeline` reads from the trace. Approximations
(documented in docs/power.md): idle power does not change with the clock, overheads and memory
streams are not clock-bound, and there is no hysteresis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from chips.schema import Thermal
from chips.units import PS_PER_S
from cost_models.base import OpCost
from cost_models.energy import NOMINAL_CLOCK

__all__ = ["ThermalLog", "ThermalState", "throttled_cost"]


def throttled_cost(cost: OpCost, clock_factor: float) -> OpCost:
    """``cost`` with its clock-bound compute slowed to ``clock_factor`` of the clock.

    The clock-bound part is ``compute_ns - stall_ns`` (a stall waits on a stream, not on the
    clock); memory time and the fixed overhead stay.

    >>> c = OpCost("npu", "int8", 400.0, 100.0, 10.0, 1000, 0, 0.0, stall_ns=100.0)
    >>> throttled_cost(c, 0.5).compute_ns  # 300 ns clock-bound at half the clock, plus the stall
    700.0
    """
    if clock_factor >= 1.0:
        return cost
    bound = cost.compute_ns - cost.stall_ns
    return replace(cost, compute_ns=bound / clock_factor + cost.stall_ns)


@dataclass(frozen=True, slots=True)
class ThermalLog:
    """The temperature over a run.

    Attributes
    ----------
    samples : ``(time_ps, degrees C)`` at every event of the run, starting at ``(0, ambient)``.
    peak_c : the highest temperature, degrees C (it peaks at an event: the curve is monotone
        between events).
    peak_at_ps : when it was first reached.
    throttled_ps : time at or above the throttle temperature, ps.
    throttled_ops : op instances that started throttled.
    """

    samples: tuple[tuple[int, float], ...]
    peak_c: float
    peak_at_ps: int
    throttled_ps: int
    throttled_ops: int


class ThermalState:
    """The temperature of a chip as the engine's clock advances.

    >>> from chips.schema import Thermal
    >>> th = ThermalState(Thermal(resistance_c_per_w=10, capacitance_j_per_c=1e-9, ambient_c=25,
    ...                           throttle_c=40, throttle_clock_factor=0.5))  # RC = 10 ns
    >>> th.advance(0, 1_000_000, 2.0); round(th.temp_c, 6), th.throttled  # 2 W: towards 45 C
    (45.0, True)
    """

    __slots__ = ("_peak_at", "_spec", "_tau_ps", "peak_c", "samples", "temp_c", "throttled_ops", "throttled_ps")

    def __init__(self, spec: Thermal) -> None:
        self._spec = spec
        self._tau_ps = spec.time_constant_s * PS_PER_S
        self.temp_c = spec.ambient_c
        self.peak_c = spec.ambient_c
        self._peak_at = 0
        self.throttled_ps = 0.0
        self.throttled_ops = 0
        self.samples: list[tuple[int, float]] = [(0, spec.ambient_c)]

    @property
    def throttled(self) -> bool:
        """The temperature is at or above the throttle point now."""
        return self.temp_c >= self._spec.throttle_c

    @property
    def clock_factor(self) -> float:
        """The clock an op starting now runs at, a fraction of the nominal clock."""
        return self._spec.throttle_clock_factor if self.throttled else NOMINAL_CLOCK

    def cost_now(self, cost: OpCost) -> OpCost:
        """The cost an op starting now runs with: throttled while the chip is hot."""
        return throttled_cost(cost, self.clock_factor)

    def advance(self, t0_ps: int, t1_ps: int, power_w: float) -> None:
        """Hold ``power_w`` from ``t0_ps`` to ``t1_ps``: the temperature moves along the exponential."""
        dt = t1_ps - t0_ps
        if dt <= 0:
            return
        spec = self._spec
        t_inf = spec.ambient_c + power_w * spec.resistance_c_per_w
        t0 = self.temp_c
        t1 = t_inf + (t0 - t_inf) * math.exp(-dt / self._tau_ps)
        self.throttled_ps += self._time_above(t0, t1, t_inf, dt)
        self.temp_c = t1
        if t1 > self.peak_c:
            self.peak_c, self._peak_at = t1, t1_ps
        if abs(t1 - self.samples[-1][1]) > 1e-9:
            self.samples.append((t1_ps, t1))

    def _time_above(self, t0: float, t1: float, t_inf: float, dt: float) -> float:
        """Time of the interval at or above the throttle point (the curve is monotone in it)."""
        limit = self._spec.throttle_c
        if t0 >= limit and t1 >= limit:
            return dt
        if t0 < limit and t1 < limit:
            return 0.0
        # crossing at s: t_inf + (t0 - t_inf) exp(-s / tau) = limit
        s = -self._tau_ps * math.log((limit - t_inf) / (t0 - t_inf))
        s = min(max(s, 0.0), dt)
        return dt - s if t1 >= limit else s

    def log(self) -> ThermalLog:
        """What the run did to the temperature."""
        return ThermalLog(
            tuple(self.samples), self.peak_c, self._peak_at, round(self.throttled_ps), self.throttled_ops
        )
