"""Fit a chip's CPU efficiencies and per-op overhead to measured per-node profiles, and write
them as a calibration file a chip YAML includes with ``calibration: FILE``.

What is fit, on what:

- ``op_overhead_ns``: the median kernel time of the dispatch-bound kernels (roofline under
  2 % of the kernel time and kernel under 20 µs), pooled over all the models given. The
  NCHWc reorders ``validate`` predicts are fit like any op type (``ReorderInput``,
  ``ReorderOutput``), and so is the ``QuickGelu`` kernel SiLU runs as; other kernels
  onnxruntime inserts (reshapes around Gemm, fused Gelu) are not fit: their time is reported
  by ``validate`` and left as error. (The gap between a timed run and the sum of its profiled
  kernels is not used either: on a shared machine it is mostly noise.) Give it validations
  merged over rounds (:func:`~hwsim.host.validate.merge_rounds`): every figure is then the best
  round's low quantile.
- ``efficiency[op_type]``: the calibration basis (:func:`cost_models.cpu.calibration_basis_ns`)
  over measured time less the overhead and less what the model adds unscaled (the node's
  ``stall_ns``: a GEMM's weight stream, :func:`cost_models.cpu.weight_stream_ns`; a recurrent
  kernel's ``R`` from beyond L2 and first weight pass at the fingerprint's rates and its fixed
  step costs, :class:`cost_models.cpu.RecurrentTime`), as the ratio of totals over that op
  type's typical kernels (:func:`typical_ratio`). The basis is the part an efficiency scales
  when the model is used, so an LSTM efficiency fit on small LSTMs whose steps run from L2
  leaves one whose ``R`` streams from L3 at its measured rates. A
  kernel whose physical memory roof (the bandwidth of the level its data sits in, DRAM for
  weights) already takes its measured time is explained without an efficiency and left out
  (unless every kernel of the type is): a batch-1 Gemm streaming 2 MB of weights says nothing
  about the core rate of a 1 ms GEMM. And when some conv/matmul kernels of a type are core-bound by the
  roofline itself (memory roof under the core-bound basis), only those are fit: otherwise a
  GEMV whose measured time lands just above its memory roof (noise, or the clock
  normalization) votes with a ratio of 0.04 and, with the median-based trimming, can drag a
  type fitted on two GEMMs and three GEMVs to 0.3. Capped at 1 by the chip schema; an op type that still runs
  faster than its basis is reported (the fingerprint's peak or bandwidth is too low for it).

- ``recurrent_section_ns`` (several threads only): a recurrent kernel split over threads fits no
  efficiency (:func:`split_recurrent`); what one split step product pays the pool is fit on the
  split recurrent kernels whose hand-offs outweigh their compute (:func:`recurrent_section_fit`).
  Its efficiency, the core's rate, is fit on the same models timed on one thread
  (:func:`core_rate_rounds`, ``fit``'s ``core_rate``).

Fused nodes are not fit (their kernel time belongs to the node they are fused into).
"""

from __future__ import annotations

import datetime as _dt
import os
import statistics
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from chips.schema import Chip, chip_from_dict
from cost_models.cpu import RECURRENT_SECTION_OP_TYPES
from graph_ir.categories import GEMM_CATEGORIES
from hwsim.host.validate import NodeResult, Validation, merge_rounds, validate_model

__all__ = ["CalibrationFit", "apply", "core_rate_rounds", "fit", "fit_comments", "needs_core_rate", "own_kernel_times", "probed_classes",
           "recurrent_section_fit", "split_recurrent", "timed_over_profiled", "typical_ratio", "unit_calibration",
           "write_calibration"]

#: A kernel counts as dispatch-bound when its roofline is under this fraction of its time...
TINY_ROOF_FRACTION = 0.02
#: ...and it takes less than this many nanoseconds. Nor does a kernel this short fit the
#: efficiency of a class the fingerprint probed alone (:func:`fit`'s ``probed``): BERT's one
#: Cast, 128 values, took 3.3 us in the model where a chain of such Casts runs 0.25 us each, and
#: the efficiency it fit (0.058 on an AMD EPYC) put the 12-200 Ki-value Casts of a
#: ``quantize_dynamic`` CNN 5-6x slow.
TINY_KERNEL_NS = 20_000.0
#: Nor does a kernel whose time is more than this share priced apart (its ``stall_ns``: rows of an
#: embedding from DRAM, a reduction's row set-ups) fit a probed class: its residual carries that
#: part's error. BERT's word lookup, 47 % of it rows from DRAM, fit a Gather rate that priced a
#: DLRM's L3-resident lookups 1.7x slow; audio_kws's sums of pairs are 92 % row set-ups.
PRICED_APART_SHARE = 0.1
#: A streaming kernel's data counts as cache-resident when its level's memory roof is at most
#: this many times its L1-rate roof (L2 here: 185/128 GB/s; L3 is 5x, DRAM 10x).
CACHE_LEVEL_FACTOR = 2.0
#: Efficiencies below this are clipped (an op type this slow is a missing kernel, not a factor).
MIN_EFFICIENCY = 0.002


@dataclass(frozen=True, slots=True)
class CalibrationFit:
    """Fitted values for one CPU unit and what they were fit on."""

    unit: str
    op_overhead_ns: float
    efficiency: dict[str, float]
    kernels: dict[str, int]
    faster_than_roofline: tuple[str, ...]
    models: tuple[str, ...]
    #: What one split recurrent product pays the pool, ns (:func:`recurrent_section_fit`), and how
    #: many split products of the calibration models it rests on; None and 0 on one thread.
    recurrent_section_ns: float | None = None
    section_steps: int = 0


#: Kernels whose ratio is more than this factor away from their type's median are outliers.
OUTLIER_FACTOR = 3.0


def typical_ratio(ratios: Sequence[float], own_ns: Sequence[float] | None = None) -> float:
    """Time-weighted efficiency of an op type's typical kernels.

    The ratio of totals (sum of basis times over sum of measured times) over the kernels whose
    ratio lies within :data:`OUTLIER_FACTOR` of the median: weighted by time, so that the
    long kernels that make up a model's latency set it (a plain median of per-kernel ratios
    under-predicted every calibration model by 8-12 %, because the big convs of a network
    run further from the peak than its many small ones), and trimmed, so that one odd kernel
    (yolov8n's Softmax over a 16-wide axis, 0.3 GB/s) does not set it for the others.

    >>> typical_ratio([0.5, 0.5, 0.01], [100.0, 300.0, 5000.0])  # the 0.01 kernel is an outlier
    0.5
    >>> round(typical_ratio([0.9, 0.6], [100.0, 300.0]), 4)  # (90 + 180) / 400
    0.675
    """
    if not own_ns:
        return statistics.median(ratios)
    mid = statistics.median(ratios)
    keep = [(r, w) for r, w in zip(ratios, own_ns, strict=True) if mid / OUTLIER_FACTOR <= r <= mid * OUTLIER_FACTOR]
    return sum(r * w for r, w in keep) / sum(w for _, w in keep)


def timed_over_profiled(v: Validation) -> float:
    """How much longer the timed runs took than the profiled kernels add up to.

    A model's latency is what calibration must reproduce, but the profiler only sees kernels:
    the timed runs (each a 25th percentile, best round) take 6-16 % longer than the per-node
    25th percentiles add up to on this project's CI machine (the sum of per-node low quantiles
    is below the low quantile of the sum, and the executor spends time between kernels). Fit
    on kernel times scaled by this factor, so that the fitted efficiencies reproduce the timed
    latency of the calibration models rather than the sum of their profiles. 1 when either
    figure is missing.
    """
    if v.profiled_total_ns <= 0 or v.measured_ns <= 0:
        return 1.0
    return v.measured_ns / v.profiled_total_ns


def probed_classes(chip: Chip, unit: str) -> frozenset[str]:
    """The kernel classes of :data:`hwsim.host.op_probes.PRICED_BY_PROBES` that ``chip``'s ``unit``
    has an efficiency for (a fingerprint writes one for each probe it ran, and for the op types
    sharing a probe's rate)."""
    from hwsim.host.op_probes import PRICED_BY_PROBES

    return frozenset(PRICED_BY_PROBES) & chip.unit(unit).efficiency.keys()


def own_kernel_times(v: Validation) -> list[NodeResult]:
    """``v``'s kernels (not fused, measured) with ``measured_ns`` set to what calibration fits:
    the kernel's own time, without dispatch, scaled so that the model's timed latency comes out.

    With the fingerprint's :class:`~hwsim.host.fingerprint.Dispatch` (``v.dispatch``): a kernel
    time (already :meth:`~hwsim.host.fingerprint.Dispatch.kernel_time`: the profiler's own cost
    off, 2 us here against 0.25 us a tiny kernel adds to a timed run) less the dispatch, scaled
    by what the timed run leaves for them: ``(timed - run call - kernels x dispatch) / sum of
    those``. Without: the profiled time scaled by :func:`timed_over_profiled`, dispatch inside
    (the overhead is then fit).
    """
    kernels = [n for n in v.nodes if not n.fused and n.measured_ns > 0]
    d = v.dispatch
    if d is None:
        scale = timed_over_profiled(v)
        return [replace(n, measured_ns=n.measured_ns * scale) for n in kernels]
    beyond = [max(n.measured_ns - d.kernel_ns, 0.0) for n in kernels]
    left = v.measured_ns - d.run_ns - len(kernels) * d.kernel_ns
    total = sum(beyond) + v.inserted_ns
    scale = left / total if left > 0 and total > 0 else 1.0
    return [replace(n, measured_ns=b * scale) for n, b in zip(kernels, beyond, strict=True)]


#: With measured dispatch, a kernel whose own time is under this (ns) is dispatch-bound: the
#: profiler's whole-microsecond durations say nothing about its rate.
DISPATCH_BOUND_NS = 1000.0


def fit(
    validations: Sequence[Validation], unit: str, core_rate: Sequence[Validation] = (), probed: AbstractSet[str] = frozenset()
) -> CalibrationFit:
    """Fit overhead and per-op-type efficiencies to the kernels of ``validations``.

    ``core_rate``: validations on one thread (:func:`core_rate_rounds`) whose recurrent kernels
    fit the recurrent efficiencies the split kernels of ``validations`` cannot
    (:func:`split_recurrent`); their other kernels are not used.

    ``probed``: kernel classes whose efficiency the fingerprint measured on an op alone
    (:func:`probed_classes`); each is fit only on kernels of at least :data:`TINY_KERNEL_NS`
    with at most :data:`PRICED_APART_SHARE` of their time priced apart, and one with none keeps
    the probe's efficiency (see :data:`TINY_KERNEL_NS`).

    With the fingerprint's dispatch figures (:attr:`Validation.dispatch`) the per-op overhead
    is the measured per-kernel dispatch, not fit, and kernel times are taken as
    :func:`own_kernel_times` says; dispatch-bound kernels (own time under
    :data:`DISPATCH_BOUND_NS`) then fit an efficiency only for a type that has nothing else.

    Raises
    ------
    ValueError
        When there is nothing to fit (no kernel measured).
    """
    kernels = [n for v in validations for n in own_kernel_times(v)]
    if not kernels:
        raise ValueError("calibration: no measured kernels to fit")
    dispatch = next((v.dispatch for v in validations if v.dispatch is not None), None)
    if dispatch is not None:
        overhead = dispatch.kernel_ns
    else:
        tiny = [n.measured_ns - n.roof_ns for n in kernels
                if n.roof_ns < TINY_ROOF_FRACTION * n.measured_ns and n.measured_ns < TINY_KERNEL_NS]  # fmt: skip
        overhead = statistics.median(tiny) if tiny else 0.0
    # what to take off a kernel time: the fitted overhead; nothing when own_kernel_times did
    sub, floor = (0.0, DISPATCH_BOUND_NS) if dispatch is not None else (overhead, 0.0)
    # per op type, three tiers of (ratio, own time): kernels the roofline itself makes
    # core-bound; kernels whose measured time the memory roof does not explain; all of them.
    # An op type is fit on its first non-empty tier.
    tiers: dict[str, tuple[list[tuple[float, float]], ...]] = {}
    rates = [n for v in core_rate for n in own_kernel_times(v) if n.category == "rnn" and not split_recurrent(n)]
    for n in kernels + rates:
        if n.roof_ns <= 0 or n.measured_ns < floor or split_recurrent(n):
            continue  # views: overhead only; dispatch-bound kernels say nothing about a rate; see split_recurrent
        if n.op_type in probed and (n.measured_ns < TINY_KERNEL_NS or n.stall_ns > PRICED_APART_SHARE * n.measured_ns):
            continue  # the probe's 256 Ki elements say more about the rate than a small kernel does
        own = max(n.measured_ns - sub - n.stall_ns, 0.05 * n.measured_ns, 1.0)
        core, unexplained, every = tiers.setdefault(n.op_type, ([], [], []))
        point = (n.roof_ns / own, own)
        every.append(point)
        if n.memory_ns < own and n.measured_ns >= floor:
            unexplained.append(point)
            # GEMM kernels are fit on the ones the roofline makes core-bound, when a type has
            # any (a GEMV among GEMMs says nothing about the core's rate). Not elementwise and
            # other streaming types: there "core-bound" only means a kernel so small that the
            # small-kernel factor dominates, the noisiest of all; they are fit on the kernels
            # whose data sits in a level at least 1/CACHE_LEVEL_FACTOR as fast as L1 (L1/L2):
            # an L3- or DRAM-resident Add is bound by that level, and fit as if by the core it
            # set Add 3-4x too slow for the L2-resident tensors (0.13 ns per element measured).
            gemm = n.category in GEMM_CATEGORIES
            if (gemm and n.memory_ns < n.roof_ns) or (
                    not gemm and n.category != "rnn" and n.memory_ns <= CACHE_LEVEL_FACTOR * n.roof_ns):
                core.append(point)
    # (a type whose every kernel is dispatch-bound is not fit: it keeps the chip's efficiency)
    ratios: dict[str, list[float]] = {}
    weights: dict[str, list[float]] = {}  # each kernel's own time (ns), parallel to ratios
    for t, tier in tiers.items():
        chosen = next(x for x in tier if x)
        ratios[t], weights[t] = [r for r, _ in chosen], [w for _, w in chosen]
    count = {t: len(r) for t, r in ratios.items()}
    eff: dict[str, float] = {}
    faster: list[str] = []
    for t in sorted(ratios):
        e = typical_ratio(ratios[t], weights.get(t))
        if e > 1.0:
            faster.append(t)
        eff[t] = round(min(1.0, max(MIN_EFFICIENCY, e)), 4)
    section, steps = recurrent_section_fit(kernels, overhead, sub)
    return CalibrationFit(unit, round(overhead, 1), eff, count, tuple(faster), tuple(v.model for v in validations),
                          section, steps)  # fmt: skip


def split_recurrent(n: NodeResult) -> bool:
    """Whether ``n`` is a recurrent kernel split over several threads: it fits no efficiency.

    An efficiency is the core's rate, which a recurrent kernel shows on one thread (and which the
    fingerprint measures for it: the GEMV rates its steps stream ``R`` at). Split over threads its
    time adds each product's row share, a pool hand-off per split product and step, and the
    projection's split, and its residual is theirs: on the idle CI VM the calibration model
    ``lstm_gru``'s 2-thread time moved 0.66-0.76 ms from run to run (steady within a run), and the
    GRU and LSTM efficiencies fit on it (0.80-0.94) put the five held-out GRUs, within 10 % of their
    2-thread times at the fingerprint's rates in every run, at 0-4 of 5 within 10 %.
    The hand-offs are fit apart (:func:`recurrent_section_fit`).
    """
    return n.category == "rnn" and n.threads_used > 1


def needs_core_rate(v: Validation) -> bool:
    """Whether ``v`` holds a recurrent kernel split over threads (:func:`split_recurrent`), whose
    efficiency :func:`fit` then takes from the model timed on one thread (:func:`core_rate_rounds`)."""
    return any(split_recurrent(n) for n in v.nodes if not n.fused)


def core_rate_rounds(chip: Chip, models: Sequence[str | Path], validations: Sequence[Validation], opt: str,
                     runs: int, rounds: int, **measure: Any) -> list[Validation]:  # fmt: skip
    """The ``models`` whose validation (same order) :func:`needs_core_rate`, timed again on one thread,
    ``rounds`` rounds merged: the recurrent core rate for :func:`fit`'s ``core_rate``.

    On the idle CI VM the 2-thread time of the calibration model ``lstm_gru`` moves 0.66-0.76 ms
    between runs; its one-thread kernels are steady, and they are what the held-out LSTMs' rate
    follows (fit on nothing at 2 threads, the six held-out LSTMs came out 4-16 % fast).
    ``measure``: :func:`~hwsim.host.validate.validate_model`'s keywords (``reference`` must be the
    one-thread figure).
    """
    picked = [m for m, v in zip(models, validations, strict=True) if needs_core_rate(v)]
    return [merge_rounds([validate_model(chip, m, 1, opt, runs, **measure) for _ in range(rounds)]) for m in picked]


def recurrent_section_fit(kernels: Sequence[NodeResult], overhead_ns: float = 0.0,
                          measured_overhead_ns: float = 0.0) -> tuple[float | None, int]:  # fmt: skip
    """(pool cost of one split recurrent product, ns, or None; the split products it rests on).

    Fit on the split recurrent kernels whose step hand-offs (``step_sections_ns``, at the chip's
    current per-product cost) take at least as long as their compute (``roof_ns``): there the
    hand-offs are most of the kernel and its residual is theirs. Each kernel's own time
    (``measured_ns`` less ``measured_overhead_ns``: the per-op overhead where the kernel times
    still hold it) less its prediction without the hand-offs (``predicted_ns`` less the per-op
    ``overhead_ns`` and ``step_sections_ns``: its compute at the chip's efficiency, its other
    sections), as the ratio of totals over their split products. None where no kernel is so (one
    thread: no split products); at least 1 ns. A GRU's products are loops in a section its kernel
    keeps open (:data:`~cost_models.cpu.RECURRENT_SECTION_OP_TYPES`), not sections of their own, and
    are not fit.

    >>> from hwsim.host.validate import NodeResult
    >>> k = NodeResult("l", "LSTM", False, 300_000.0, 330_000.0, 100_000.0, 0.0, 200_000.0, "rnn", 2, 100, 200_000.0)
    >>> recurrent_section_fit([k])  # 330 us measured, 100 us of compute: 100 hand-offs of 2.3 us
    (2300.0, 100)
    """
    dominated = [n for n in kernels if split_recurrent(n) and n.step_sections > 0 and n.step_sections_ns >= n.roof_ns
                 and n.op_type not in RECURRENT_SECTION_OP_TYPES]  # a GRU's products are loops in one section
    steps = sum(n.step_sections for n in dominated)
    if not steps:
        return None, 0
    left = sum((n.measured_ns - measured_overhead_ns) - (n.predicted_ns - overhead_ns - n.step_sections_ns)
               for n in dominated)  # fmt: skip
    return round(max(left / steps, 1.0), 1), steps


def apply(chip: Chip, fit_: CalibrationFit) -> Chip:
    """``chip`` with the fitted values merged into its unit (as loading the file would)."""
    data = chip.model_dump()
    for u in data["units"]:
        if u["name"] == fit_.unit:
            u["efficiency"] = {**u["efficiency"], **fit_.efficiency}
            u["op_overhead_ns"] = fit_.op_overhead_ns
            if fit_.recurrent_section_ns is not None:
                u["recurrent_section_ns"] = fit_.recurrent_section_ns
    return chip_from_dict(data, source=f"{chip.name} (calibrated)")


def fit_comments(fit_: CalibrationFit) -> list[str]:
    """YAML comment lines saying what ``fit_`` was fit on (models, kernels per op type)."""
    lines = [
        f"# fit on {len(fit_.models)} models: {', '.join(fit_.models)}",
        "# kernels per op type: " + ", ".join(f"{t} {n}" for t, n in sorted(fit_.kernels.items())),
    ]
    if fit_.faster_than_roofline:
        lines.append("# faster than their roofline (capped at 1): " + ", ".join(fit_.faster_than_roofline))
    if fit_.recurrent_section_ns is not None:
        lines.append(f"# pool hand-off per split recurrent product: {fit_.recurrent_section_ns:.0f} ns, on "
                     f"{fit_.section_steps} split products; split recurrent kernels take their efficiency from one thread")
    return lines


def unit_calibration(fit_: CalibrationFit) -> dict[str, object]:
    """What ``fit_`` writes for its unit in a calibration (``chips.schema.UnitCalibration``)."""
    out: dict[str, object] = {"op_overhead_ns": fit_.op_overhead_ns, "efficiency": fit_.efficiency}
    if fit_.recurrent_section_ns is not None:
        out["recurrent_section_ns"] = fit_.recurrent_section_ns
    return out


def write_calibration(fit_: CalibrationFit, chip_name: str, out: Path) -> None:
    """Write the calibration YAML atomically (validated against the schema first)."""
    from chips.schema import Calibration

    data = {"chip": chip_name, "units": {fit_.unit: unit_calibration(fit_)}}
    Calibration.model_validate(data)
    head = [
        f"# Written by `hwsim validate --calibrate` on {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}",
        *fit_comments(fit_),
        f"# include it from the chip YAML with:  calibration: {out.name}",
    ]
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    os.replace(tmp, out)
