"""The learned prior: expected gain of an op's mapping signature on a chip, from past trials.

Each trial of stage ``kernel`` or ``transfer`` in the experience database says what a set of
signatures bought: ``gain = parent_latency_ms / latency_ms``. :class:`Prior` learns ``log gain``
from the features of the op (:func:`~hwsim.studies.optimize.features.op_features`), of the chip
(:func:`~hwsim.studies.optimize.features.chip_features`) and of the signature
(:func:`~hwsim.studies.optimize.features.mapping_features`), numpy only: a ridge regression on
standardized features and their signature x op and signature x chip products, blended with a
k-nearest-neighbour average. The defaults are what ranked best in ``benchmarks/prior_quality.py``
on held-out models and chips: the 3 nearest neighbours alone (Spearman 0.87-0.88, top-1 0.85-0.89;
ridge alone 0.62-0.72 / 0.69-0.82; both held out 0.79 / 0.80 against 0.55 / 0.70).

Where a trial was measured on the real chip, its target is the measured ratio: the parent's
measured latency over the trial's (the parent's found among the trials of the same chip and
model by its predicted latency), else the parent's predicted latency scaled by the median
measured/predicted ratio of that chip's measured trials; a measured sample weighs
:data:`MEASURED_WEIGHT` times a simulated one. The simulator ranks; the measurements correct it.

>>> Prior.fit([]).expected_gain({}, {}, {"unit": "npu"})
1.0
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from hwsim.studies.optimize.features import UNIT_PREFIX, MappingLike, mapping_features

if TYPE_CHECKING:
    from hwsim.studies.optimize.db import Trial

__all__ = ["MEASURED_WEIGHT", "STAGES", "Prior", "Sample", "samples_of"]

#: Trial stages whose trials teach the prior (a baseline or a graph transform has no signature).
STAGES = ("kernel", "transfer")
#: Weight of a sample whose target comes from a real measurement, against 1 for a simulated one.
MEASURED_WEIGHT = 3.0
M = TypeVar("M", bound="MappingLike | Mapping[str, object]")


@dataclass(frozen=True, slots=True)
class Sample:
    """One op's signature on one chip and the log of the gain it bought (natural log)."""

    op_feats: Mapping[str, float]
    chip_feats: Mapping[str, float]
    signature: Mapping[str, object]
    log_gain: float
    weight: float = 1.0


def _measured_parents(trials: Sequence[Trial]) -> dict[tuple[str, str, float], float]:
    """Measured latency (ms) by (chip fingerprint, model sha, rounded predicted latency)."""
    return {
        (t.chip_fingerprint, t.model_sha256, round(t.latency_ms, 9)): t.measured_latency_ms
        for t in trials
        if t.measured_latency_ms is not None and t.measured_latency_ms > 0
    }


def _calibration(trials: Sequence[Trial]) -> dict[str, float]:
    """Median measured / predicted latency per chip fingerprint, over its measured trials."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for t in trials:
        if t.measured_latency_ms is not None and t.measured_latency_ms > 0 and t.latency_ms > 0:
            ratios[t.chip_fingerprint].append(t.measured_latency_ms / t.latency_ms)
    return {fp: statistics.median(r) for fp, r in ratios.items()}


def _log_gain(t: Trial, parents: Mapping[tuple[str, str, float], float], scale: Mapping[str, float]) -> float:
    """The trial's natural-log gain: measured where it was measured (see the module), else predicted."""
    if t.measured_latency_ms is None or t.measured_latency_ms <= 0:
        return math.log(t.parent_latency_ms / t.latency_ms)
    parent = parents.get((t.chip_fingerprint, t.model_sha256, round(t.parent_latency_ms, 9)))
    if parent is None:
        parent = t.parent_latency_ms * scale.get(t.chip_fingerprint, 1.0)
    return math.log(parent / t.measured_latency_ms)


def samples_of(trials: Sequence[Trial]) -> list[Sample]:
    """The training samples of ``trials``: one per op signature of every feasible, simulated
    trial of :data:`STAGES`. A trial that changed ``n`` ops gives each ``1/n`` of its log gain
    (the ops share what the trial bought)."""
    parents, scale = _measured_parents(trials), _calibration(trials)
    out = []
    for t in trials:
        if t.stage not in STAGES or not t.feasible or t.error is not None or not t.signatures:
            continue
        if t.latency_ms <= 0 or t.parent_latency_ms <= 0:
            continue
        share = _log_gain(t, parents, scale) / len(t.signatures)
        weight = MEASURED_WEIGHT if t.measured_latency_ms is not None else 1.0
        for op, sig in sorted(t.signatures.items()):
            out.append(Sample(t.op_features.get(op, {}), t.chip_features, sig, share, weight))
    return out


def _row(op_feats: Mapping[str, float], chip_feats: Mapping[str, float],
         signature: MappingLike | Mapping[str, object]) -> tuple[dict[str, float], dict[str, float]]:  # fmt: skip
    """``(base, products)``: the op, chip and signature features by prefix, and the products of
    each signature feature with each op and chip feature (what lets a signature pay off on
    some ops and chips and not on others)."""
    chip = {k: v for k, v in chip_feats.items() if not k.startswith(UNIT_PREFIX)}
    sig = mapping_features(signature, chip_feats)
    base = {f"op.{k}": v for k, v in op_feats.items() if v}
    base |= {f"chip.{k}": v for k, v in chip.items() if v}
    base |= {f"map.{k}": v for k, v in sig.items() if v}
    products = {
        f"map.{s}*{prefix}.{k}": sv * v
        for s, sv in sig.items()
        for prefix, feats in (("op", op_feats), ("chip", chip))
        for k, v in feats.items()
        if sv and v
    }
    return base, products


def _matrix(rows: Sequence[Mapping[str, float]], columns: Mapping[str, int]) -> np.ndarray:
    x = np.zeros((len(rows), len(columns)))
    for i, row in enumerate(rows):
        for k, v in row.items():
            j = columns.get(k)
            if j is not None:
                x[i, j] = v
    return x


@dataclass(frozen=True, slots=True, eq=False)
class _Standard:
    """Columns by name, their means and scales (1 where a column is constant)."""

    columns: dict[str, int]
    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, float]]) -> tuple[_Standard, np.ndarray]:
        columns = {n: j for j, n in enumerate(sorted({k for r in rows for k in r}))}
        x = _matrix(rows, columns)
        mean = x.mean(axis=0) if len(x) else np.zeros(len(columns))
        scale = x.std(axis=0) if len(x) else np.ones(len(columns))
        scale[scale < 1e-9] = 1.0
        std = cls(columns, mean, scale)
        return std, (x - mean) / scale

    def apply(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        return (_matrix(rows, self.columns) - self.mean) / self.scale


@dataclass(frozen=True, slots=True, eq=False)
class Prior:
    """A fitted prior (:meth:`fit`); with no samples it predicts a gain of 1 for everything.

    Attributes
    ----------
    alpha : float
        Ridge penalty per sample on the standardized features.
    k : int
        Neighbours averaged by the nearest-neighbour term (0: none).
    blend : float
        Share of the nearest-neighbour term in the prediction (0: ridge only, 1: neighbours only).
    """

    alpha: float = 0.01
    k: int = 3
    blend: float = 1.0
    _fit: tuple[_Standard, np.ndarray, float, _Standard, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False
    )

    @classmethod
    def fit(cls, trials: Sequence[Trial], *, alpha: float = 0.01, k: int = 3, blend: float = 1.0) -> Prior:
        """Train on the trials of stages :data:`STAGES` (see :func:`samples_of`); 0 trials is fine.

        The trials are taken in one order whatever order they come in (by chip, model and
        candidate: what identifies a trial in a database), so the same trials give the same
        prior: the order a database holds them in is the order parallel workers finished them,
        and the nearest-neighbour part breaks ties between samples by their order."""
        canonical = sorted(trials, key=lambda t: (t.chip_fingerprint, t.model_sha256, t.candidate_key, t.stage))
        return cls.fit_samples(samples_of(canonical), alpha=alpha, k=k, blend=blend)

    @classmethod
    def fit_samples(cls, samples: Sequence[Sample], *, alpha: float = 0.01, k: int = 3, blend: float = 1.0) -> Prior:
        """Train on ``samples`` directly (what :meth:`fit` does after :func:`samples_of`)."""
        if not samples:
            return cls(alpha, k, blend)
        rows = [_row(s.op_feats, s.chip_feats, s.signature) for s in samples]
        y = np.array([s.log_gain for s in samples])
        w = np.array([s.weight for s in samples])
        full_std, x = _Standard.of([b | p for b, p in rows])
        base_std, xb = _Standard.of([b for b, _ in rows])
        intercept = float(np.average(y, weights=w))
        xw = x * w[:, None]
        gram = x.T @ xw + alpha * float(w.sum()) * np.eye(x.shape[1])
        coef = np.linalg.solve(gram, xw.T @ (y - intercept))
        return cls(alpha, k, blend, (full_std, coef, intercept, base_std, xb, y))

    @property
    def samples(self) -> int:
        """How many samples it was trained on."""
        return 0 if self._fit is None else len(self._fit[5])

    def log_gains(self, op_feats: Mapping[str, float], chip_feats: Mapping[str, float],
                  candidates: Sequence[MappingLike | Mapping[str, object]]) -> np.ndarray:  # fmt: skip
        """Predicted natural-log gain of each candidate (0 for all without samples)."""
        if self._fit is None or not candidates:
            return np.zeros(len(candidates))
        full_std, coef, intercept, base_std, xb, y = self._fit
        rows = [_row(op_feats, chip_feats, c) for c in candidates]
        ridge = intercept + full_std.apply([b | p for b, p in rows]) @ coef
        if self.k <= 0 or self.blend <= 0:
            return ridge
        q = base_std.apply([b for b, _ in rows])
        d2 = (q**2).sum(axis=1)[:, None] + (xb**2).sum(axis=1)[None, :] - 2 * q @ xb.T
        d = np.sqrt(np.maximum(d2, 0.0))
        k = min(self.k, len(y))
        near = np.argsort(d, axis=1, kind="stable")[:, :k]
        weights = 1.0 / (1.0 + np.take_along_axis(d, near, axis=1))
        knn = (weights * y[near]).sum(axis=1) / weights.sum(axis=1)
        return np.asarray((1 - self.blend) * ridge + self.blend * knn)

    def expected_gain(self, op_feats: Mapping[str, float], chip_feats: Mapping[str, float],
                      mapping: MappingLike | Mapping[str, object]) -> float:  # fmt: skip
        """Predicted ``parent_latency / latency`` of ``mapping`` for this op on this chip (1.0
        without samples)."""
        return float(math.exp(self.log_gains(op_feats, chip_feats, [mapping])[0]))

    def rank(self, op_feats: Mapping[str, float], chip_feats: Mapping[str, float], candidates: Sequence[M]) -> list[M]:
        """``candidates`` best first by predicted gain; ties (and a prior without samples) keep
        the given order."""
        gains = self.log_gains(op_feats, chip_feats, candidates)
        order = sorted(range(len(candidates)), key=lambda i: -gains[i])
        return [candidates[i] for i in order]
