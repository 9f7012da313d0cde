"""Pareto fronts and their hypervolume, for objectives that are all minimized.

The hypervolume is exact for one, two and three objectives (a sweep's usual count): a sum of
rectangles in 2-D, slabs of 2-D fronts in 3-D. To compare sweeps whose objectives have
different units, :func:`normalized_hypervolume` maps each objective onto [0, 1] between the best
and the worst value over a set of points (the *box*, from :func:`box_of`), puts the reference
point at 1.1 in every objective (10% beyond the worst, so that the worst points still add
volume) and divides by the reference box's volume, 1.1**k: 1.0 would be one point that is
best in every objective at once.

>>> import numpy as np
>>> pts = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0], [3.0, 3.0]])
>>> pareto_mask(pts).tolist()
[True, True, True, False]
>>> hypervolume(pts, np.array([4.0, 4.0]))
6.0
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["REFERENCE", "box_of", "hypervolume", "normalized_hypervolume", "pareto_mask"]

#: The reference point of :func:`normalized_hypervolume`, in normalized units (1 = the worst).
REFERENCE = 1.1

Values = NDArray[np.float64]


def pareto_mask(values: Values) -> NDArray[np.bool_]:
    """Which rows of ``values`` (points x objectives, minimized) no other row dominates.

    A row dominates another when it is no worse in every objective and better in one; equal
    rows do not dominate each other, so both stay on the front.
    """
    v = np.asarray(values, dtype=float)
    n = len(v)
    mask = np.ones(n, dtype=bool)
    for i in range(n):
        no_worse = np.all(v <= v[i], axis=1)
        better = np.any(v < v[i], axis=1)
        mask[i] = not np.any(no_worse & better)
    return mask


def _hv2(points: Values, ref: Values) -> float:
    """Area dominated by 2-D ``points`` inside the box below ``ref``."""
    pts = points[np.all(points < ref, axis=1)]
    if len(pts) == 0:
        return 0.0
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
    area, best_y = 0.0, float(ref[1])
    for x, y in pts:
        if y < best_y:
            area += (float(ref[0]) - float(x)) * (best_y - float(y))
            best_y = float(y)
    return area


def hypervolume(values: Values, ref: Values) -> float:
    """Exact hypervolume of ``values`` (minimized) against the reference point ``ref``.

    Points not strictly below ``ref`` in every objective add nothing. One to three objectives.

    Raises
    ------
    ValueError
        For more than three objectives.
    """
    r = np.asarray(ref, dtype=float)
    k = len(r)
    v = np.asarray(values, dtype=float).reshape(-1, k)
    if k == 1:
        return float(max(0.0, r[0] - v[:, 0].min())) if len(v) else 0.0
    if k == 2:
        return _hv2(v, r)
    if k != 3:
        raise ValueError(f"hypervolume: exact for 1 to 3 objectives, got {k}")
    v = v[np.all(v < r, axis=1)]
    v = v[np.argsort(v[:, 2], kind="stable")]
    volume = 0.0
    for i in range(len(v)):  # slab between this point's z and the next one's: the 2-D front so far
        top = v[i + 1, 2] if i + 1 < len(v) else r[2]
        if top > v[i, 2]:
            volume += _hv2(v[: i + 1, :2], r[:2]) * float(top - v[i, 2])
    return volume


def box_of(values: Values) -> tuple[Values, Values]:
    """``(best, worst)`` per objective over ``values``: the box :func:`normalized_hypervolume` uses."""
    v = np.asarray(values, dtype=float)
    return v.min(axis=0), v.max(axis=0)


def normalized_hypervolume(values: Values, box: tuple[Values, Values]) -> float:
    """Hypervolume of ``values`` normalized by ``box`` (see the module), in [0, 1].

    >>> import numpy as np
    >>> v = np.array([[1.0, 10.0], [2.0, 5.0]])
    >>> round(normalized_hypervolume(v, box_of(v)), 4)  # (1.1*0.1 + 0.1*1.0) / 1.21
    0.1736
    """
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return 0.0
    best, worst = box
    span = np.where(worst > best, worst - best, 1.0)
    scaled = (v - best) / span
    k = v.shape[1]
    return hypervolume(scaled, np.full(k, REFERENCE)) / REFERENCE**k
