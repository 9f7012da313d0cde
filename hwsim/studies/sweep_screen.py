"""A sweep point's analytic screen: its objectives estimated from the chip's peaks, no simulation.

The budgeted search (:mod:`hwsim.studies.sweep_search`) ranks the whole grid by this estimate
before it simulates anything (multi-fidelity: a cheap low-fidelity answer for every point, the
full simulation for the few worth it). The estimate is a per-op roofline on the unit with the
highest peak rate at the point's precision, all of its cores at once:

- ``latency_ms``: the sum over ops of ``max(flops / rate, bytes / DRAM bandwidth)``;
- ``energy_mj``: that time at the unit's active power (every core) plus every other unit idle,
  plus the DRAM's energy per byte moved;
- ``peak_power_w``: the unit's cores all active, every other unit idle, the DRAM at full
  bandwidth.

It knows no schedule, no policy (every policy of a configuration gets the same screen), no
transfers and no SRAM, so it is an estimate, not a bound; the search only uses it to order
points, never to skip one. It costs a few per cent of a simulation
(``benchmarks/bench_sweep.py --search-only`` prints both): the per-op FLOPs and bytes are read
once per (model, prune, precision) and each point is then a vector operation.

>>> from pathlib import Path
>>> model = str(Path(__file__).resolve().parents[2] / "examples/models/resnet18.onnx")
>>> fast, slow = (screen(Point(model, "rk3588", (("npu.clock_mhz", c),))) for c in (1000, 500))
>>> fast.latency_ms < slow.latency_ms and fast.peak_power_w == slow.peak_power_w
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from hwsim.studies.sweep import Point, _chip, _graph

if TYPE_CHECKING:
    from chips.schema import Unit

__all__ = ["SCREENED", "Screen", "ScreenError", "screen", "screen_values", "screener"]

#: The objectives the screen estimates (others are left to the simulation).
SCREENED = ("latency_ms", "energy_mj", "peak_power_w")


class ScreenError(ValueError):
    """The screen cannot estimate a point (no unit computes its precision)."""


@dataclass(frozen=True, slots=True)
class Screen:
    """A point's estimated objectives (see the module's docstring); ``unit`` is the unit the
    estimate puts the work on."""

    latency_ms: float
    energy_mj: float
    peak_power_w: float
    unit: str


@lru_cache(maxsize=64)
def _op_work(model: str, prune: float, precision: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per op: FLOPs (a MAC counts 2) and bytes read and written at ``precision``, each times
    the op's repeat count."""
    ops = _graph(model, prune).ops()
    flops = np.array([(2 * o.macs + o.flops) * o.repeat for o in ops], dtype=np.float64)
    nbytes = np.array(
        [(o.input_bytes(precision) + o.weight_bytes(precision) + o.output_bytes(precision)) * o.repeat for o in ops],
        dtype=np.float64,
    )
    return flops, nbytes


def _rate_per_ns(unit: Unit, precision: str) -> float:
    """FLOP per ns of all of ``unit``'s cores at ``precision`` (0: it does not compute it)."""
    dtype = unit.dtype_for(precision)
    return 0.0 if dtype is None else unit.peak_flops_per_ns(dtype) * unit.cores


def screen(point: Point) -> Screen:
    """The analytic estimate of ``point`` (module docstring); the chip and the pruned graph are
    loaded through the sweep's caches, as :func:`hwsim.studies.sweep.evaluate` loads them.

    Returns
    -------
    Screen
        Milliseconds, millijoules, watts.

    Raises
    ------
    ScreenError
        When no unit of the chip computes the point's precision.
    """
    chip = _chip(point.chip, point.chip_sets)
    precision = str(point.get("precision", "int8"))
    flops, nbytes = _op_work(point.model, float(point.get("prune", 0.0)), precision)
    best = max(chip.units, key=lambda u: _rate_per_ns(u, precision))
    if _rate_per_ns(best, precision) == 0.0:
        raise ScreenError(f"no unit of {point.chip} computes {precision}")
    seconds_ns = float(np.maximum(flops / _rate_per_ns(best, precision), nbytes / chip.dram.bandwidth_gbps).sum())
    others_idle_w = sum(u.idle_w for u in chip.units if u.name != best.name)
    busy_w = best.active_w * best.cores + others_idle_w
    dram_pj = float(nbytes.sum()) * chip.dram.energy_pj_per_byte
    energy_pj = seconds_ns * 1e3 * busy_w + dram_pj  # 1 W over 1 ps is 1 pJ
    peak_w = busy_w + chip.dram.bandwidth_gbps * 1e-3 * chip.dram.energy_pj_per_byte  # GB/s = 1e-3 B/ps
    return Screen(seconds_ns * 1e-6, energy_pj * 1e-9, peak_w, best.name)


def screen_values(s: Screen, objectives: Sequence[str]) -> dict[str, float]:
    """The screen's estimate of each of ``objectives`` that it screens (:data:`SCREENED`), by name."""
    return {o: float(getattr(s, o)) for o in objectives if o in SCREENED}


def screener(objectives: Sequence[str]) -> Callable[[Point], dict[str, float] | None] | None:
    """What the search ranks points by (:func:`hwsim.studies.sweep_search.screen_order`): the
    screened ones of ``objectives`` (pass the constrained ones too: the search ranks the points
    it predicts feasible first); None when it screens none of them. A point the screen
    cannot estimate (a chip variant that is not valid, a precision no unit computes) gets None,
    which the search ranks last (the simulation then says why)."""
    from chips.schema import ChipError

    if not any(o in SCREENED for o in objectives):
        return None

    def values(point: Point) -> dict[str, float] | None:
        try:
            return screen_values(screen(point), objectives)
        except (ChipError, ScreenError):
            return None

    return values
