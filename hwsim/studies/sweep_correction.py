"""How the simulation departs from the analytic screen, learnt from the points simulated so far.

The budgeted search (:mod:`hwsim.studies.sweep_search`) ranks a sweep's grid by a cheap
estimate (:mod:`hwsim.studies.sweep_screen`) that knows no policy and no schedule. Once some
points are simulated, the ratio of the simulation to the estimate says how far off it is and
where: per objective, ``log(simulated / screened)`` is fitted as an intercept plus one effect per
grid level (``policy=heft``, ``precision=int8``, ``npu.cores=2``, ...: every key treated as
categorical), by ridge regression (the effects shrink towards 0, the intercept does not). A
point's corrected estimate is its screen times ``exp`` of the fitted log-ratio; the fit's
leave-one-out root-mean-square error is the corrected estimate's margin (a log-ratio), which
the search uses to call a point predicted feasible or not (multi-fidelity: the cheap model
corrected by the expensive one, Kennedy and O'Hagan's additive discrepancy on the log scale).

>>> from hwsim.studies.sweep import Point
>>> p = [Point("m.onnx", "rk3588", (("policy", pol),)) for pol in ("heft", "eft")]
>>> c = fit_correction([(p[0], {"latency_ms": 1.0}, {"latency_ms": 2.0})] * 3, ridge_lambda=1e-9)
>>> round(c.apply(p[0], {"latency_ms": 1.0})["latency_ms"], 6)
2.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from hwsim.studies.sweep import Point

__all__ = ["RIDGE_LAMBDA", "Correction", "fit_correction", "levels"]

#: The ridge penalty on the level effects (a level seen once moves half as far as its residual).
RIDGE_LAMBDA = 1.0

#: A (grid key, value) pair: one level of a categorical feature.
Level = tuple[str, str]


def levels(point: Point) -> tuple[Level, ...]:
    """The point's chip and grid values as categorical levels.

    >>> levels(Point("m.onnx", "rk3588", (("npu.cores", 2), ("policy", "heft"))))
    (('chip', 'rk3588'), ('npu.cores', '2'), ('policy', 'heft'))
    """
    return (("chip", point.chip), *((k, str(v)) for k, v in point.params))


@dataclass(frozen=True, slots=True)
class _Fit:
    """One objective's log-ratio model."""

    intercept: float
    effects: Mapping[Level, float]
    margin: float  # leave-one-out RMS error of the log-ratio (0 with fewer than 2 points)


@dataclass(frozen=True, slots=True)
class Correction:
    """The fitted log-ratios per objective; an objective with no fit is left as screened."""

    fits: Mapping[str, _Fit] = field(default_factory=dict)

    def log_ratio(self, point: Point, objective: str) -> float:
        """The fitted ``log(simulated / screened)`` of ``objective`` at ``point`` (0: no fit)."""
        f = self.fits.get(objective)
        return 0.0 if f is None else f.intercept + sum(f.effects.get(lv, 0.0) for lv in levels(point))

    def margin(self, objective: str) -> float:
        """The corrected estimate's error margin (a log-ratio; 0 where nothing is fitted)."""
        f = self.fits.get(objective)
        return 0.0 if f is None else f.margin

    def apply(self, point: Point, estimates: Mapping[str, float]) -> dict[str, float]:
        """The screen's ``estimates`` of ``point`` corrected (same units)."""
        return {o: v * math.exp(self.log_ratio(point, o)) for o, v in estimates.items()}


def _solve(x: NDArray[np.float64], y: NDArray[np.float64], ridge_lambda: float) -> tuple[float, NDArray[np.float64]]:
    """Intercept (the mean, unpenalized) and ridge effects of ``y`` on the one-hot ``x``."""
    mean = float(y.mean())
    xc = x - x.mean(axis=0)
    beta = np.linalg.solve(xc.T @ xc + ridge_lambda * np.eye(x.shape[1]), xc.T @ (y - mean))
    return mean - float(x.mean(axis=0) @ beta), beta


def _fit_one(x: NDArray[np.float64], y: NDArray[np.float64], names: list[Level], ridge_lambda: float) -> _Fit:
    intercept, beta = _solve(x, y, ridge_lambda)
    loo = []
    for i in range(len(y)) if len(y) >= 2 else ():
        keep = np.arange(len(y)) != i
        b0, b = _solve(x[keep], y[keep], ridge_lambda)
        loo.append(y[i] - b0 - float(x[i] @ b))
    margin = math.sqrt(sum(r * r for r in loo) / len(loo)) if loo else 0.0
    return _Fit(intercept, dict(zip(names, (float(b) for b in beta), strict=True)), margin)


def fit_correction(
    samples: Sequence[tuple[Point, Mapping[str, float], Mapping[str, float]]], ridge_lambda: float = RIDGE_LAMBDA
) -> Correction:
    """Fit the correction on ``(point, screened, simulated)`` samples (objective -> value each).

    An objective is fitted on the samples where both values are positive and finite; one with
    no such sample is left uncorrected.
    """
    fits: dict[str, _Fit] = {}
    objectives = sorted({o for _, s, v in samples for o in s if o in v})
    for o in objectives:
        rows = [(p, math.log(v[o] / s[o])) for p, s, v in samples
                if o in s and o in v and s[o] > 0 and v[o] > 0 and math.isfinite(v[o] / s[o])]  # fmt: skip
        if not rows:
            continue
        names = sorted({lv for p, _ in rows for lv in levels(p)})
        index = {lv: j for j, lv in enumerate(names)}
        x = np.zeros((len(rows), len(names)))
        for i, (p, _) in enumerate(rows):
            x[i, [index[lv] for lv in levels(p)]] = 1.0
        fits[o] = _fit_one(x, np.array([r for _, r in rows]), names, ridge_lambda)
    return Correction(fits)
