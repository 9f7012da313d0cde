"""A calibrated host in one go: fingerprint the machine and fit the calibration on the bundled
models, in rounds, merged until the merged estimate stops moving (``hwsim fingerprint --calibrate``).

A round is a fingerprint (:func:`~hwsim.host.fingerprint.measure_host`) followed at once by the
calibration measurement on that fingerprint (:func:`~hwsim.host.validate.validate_model` per
model, one thread, on the fingerprint's clock) and the fit (:func:`~hwsim.host.calibration.fit`).
Its figures are the calibrated predictions of the models (what a user gets from the chip file).

On a shared machine other processes only add time: a rate comes out lower, a time longer, never
the other way. So the rounds are **merged** (:func:`merge_host_rounds`): every fingerprint figure
estimated from its least disturbed values over the rounds (:mod:`hwsim.host.host_merge`: the median
of the fastest half, of rates the highest half), every model's and kernel's measured time likewise,
put on the merged fingerprint's clock first, and **one fit** on those merged measurements, so that
the fingerprint and the calibration are of the same (least disturbed) machine. A round disturbed in
its MatMul probe and another disturbed in its models give one undisturbed estimate together, where
keeping one round keeps that round's noise whole.

Rounds repeat until the merged estimate's calibrated predictions move by at most the target with
the last round (on every model), or the next round would end past the time limit; at least
:data:`hwsim.commands.fingerprint.MIN_ROUNDS` run (a second round slower than the first moves a
merge of fastest values by nothing, which alone says nothing). Single rounds of a loaded host
need not ever agree (two runs in a row on this project's CI VM: closest rounds 7.1 % and 5.9 %
apart at the 300 s limit); the merged estimate settles. The report says how far single rounds
agree too: the **closest pair** (:func:`closest_pair`; the largest, over the models, of how far
the runner-up's calibrated prediction lies from the less disturbed round's: the median would call
two rounds in agreement while the one big model among small ones differs by 30 %) and the span of
all rounds (:func:`rounds_range`).

Without a merge (:func:`run_rounds` with ``merge=None``, the earlier rule) the less disturbed of
the closest pair is kept: the closest pair rather than the two fastest, as a host can also run a
round faster than its usual state (turbo, a quiet spell of its other tenants), and a fastest round
no other round confirms is not reproducible (one such, its MatMul at 187 GFLOP/s against 169-180
for the five others, put two `--calibrate` runs in a row 11 % apart).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from hwsim.host.calibration import CalibrationFit
from hwsim.host.fingerprint import Fingerprint
from hwsim.host.host_merge import DEFAULT_PICK, Pick, describe
from hwsim.host.validate import Validation

__all__ = [
    "CALIBRATION_MODELS",
    "QUICK_MODELS",
    "HostRound",
    "Rounds",
    "bundled_models",
    "calibrated_comments",
    "measure_round",
    "merge_host_rounds",
    "rounds_range",
    "run_rounds",
    "spread_between",
    "write_calibrated_chip",
]

#: The models calibration is fit on, one per family of ops: a plain CNN, a detector, a transformer,
#: RNNs (LSTM and GRU), an MLP, and the audio model, the only one with an STFT (held out, it was
#: 41-43 % fast in every run: onnxruntime's STFT kernel runs at ~3 GFLOP/s and nothing else
#: tells calibration so), and MobileNetV1, a depthwise-separable CNN: depthwise convolutions
#: run on a kernel of their own (``DepthwiseConv``), and without one in the set their efficiency
#: was a guess (MobileNetV2's held out ran 30 % slower than it). The other bundled models,
#: MobileNetV2 among them, are held out (``docs/fidelity.md``, ``benchmarks/bench_cpu_fidelity.py``).
CALIBRATION_MODELS = ("resnet18", "yolov8n", "bert_base", "lstm_gru", "mlp_mnist", "audio_kws", "mobilenetv1")
#: ``--quick``: the small ones (a smoke run of seconds per round, noisy figures).
QUICK_MODELS = ("resnet18", "lstm_gru", "mlp_mnist")
#: Where the bundled models live (a source checkout).
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"


def bundled_models(quick: bool = False, folder: Path = BUNDLED_DIR) -> list[Path]:
    """The calibration set's ONNX files in ``folder`` (:data:`QUICK_MODELS` with ``quick``).

    Raises
    ------
    FileNotFoundError
        When ``folder`` holds none of them (an installed package without the examples).
    """
    found = [folder / f"{m}.onnx" for m in (QUICK_MODELS if quick else CALIBRATION_MODELS)]
    found = [p for p in found if p.is_file()]
    if not found:
        raise FileNotFoundError(f"no bundled calibration models in {folder}; name the models with --models")
    return found


class RoundLike(Protocol):
    """What the round logic needs of a round: its disturbance score and its predictions."""

    @property
    def score(self) -> float: ...

    @property
    def predicted_ns(self) -> Mapping[str, float]: ...


R = TypeVar("R", bound=RoundLike)


@dataclass(frozen=True, slots=True)
class Rounds(Generic[R]):
    """The rounds run, what was kept, and how far the rounds agree.

    ``best`` and ``runner_up`` are the closest pair of rounds (``best`` the less disturbed of the
    two); ``spread`` is the largest over the models of |runner-up / best - 1| of their predictions,
    ``worst_model`` the model it is for, ``median_spread`` the median over the models: how far
    single rounds agree. With merging (:func:`run_rounds`' ``merge``), ``merged`` is all the rounds
    as one, what is kept, and ``change`` the largest over the models of how far its predictions
    moved with the last round (``change_model`` the model): what the stopping rule looks at.
    """

    rounds: tuple[R, ...]
    seconds: tuple[float, ...]
    best: int
    runner_up: int
    spread: float
    worst_model: str
    median_spread: float
    converged: bool
    reason: str
    merged: R | None = None
    change: float = math.nan
    change_model: str = ""

    @property
    def kept(self) -> R:
        """The merged rounds where merged, else the less disturbed of the closest pair."""
        return self.rounds[self.best] if self.merged is None else self.merged


def spread_between(best: Mapping[str, float], other: Mapping[str, float]) -> dict[str, float]:
    """Per model present in both: |other / best - 1|.

    >>> spread_between({"a": 100.0, "b": 10.0}, {"a": 104.0, "b": 9.0})
    {'a': 0.04, 'b': 0.1}
    """
    return {m: round(abs(other[m] / best[m] - 1.0), 12) for m in best if m in other and best[m] > 0}


def _pair_spread(rounds: Sequence[RoundLike], i: int, j: int) -> tuple[float, int, int]:
    """(spread, best, runner-up) of rounds ``i`` and ``j``: best the lower score."""
    best, runner = sorted((i, j), key=lambda k: (rounds[k].score, k))
    diffs = spread_between(rounds[best].predicted_ns, rounds[runner].predicted_ns)
    return (max(diffs.values()) if diffs else math.inf), best, runner


def closest_pair(rounds: Sequence[RoundLike]) -> tuple[int, int]:
    """(best, runner-up) of the two rounds whose calibrated predictions agree best (ties: the
    pair with the lower best score, then the earlier); best is the lower score of the two."""
    pairs = [_pair_spread(rounds, i, j) for i in range(len(rounds)) for j in range(i + 1, len(rounds))]
    _, best, runner = min(pairs, key=lambda p: (p[0], rounds[p[1]].score, p[1], p[2]))
    return best, runner


def _largest(diffs: Mapping[str, float]) -> tuple[str, float]:
    """(model, value) of the largest of ``diffs``; ("", nan) for none."""
    return max(diffs.items(), key=lambda kv: kv[1]) if diffs else ("", math.nan)


def run_rounds(
    measure: Callable[[], R],
    max_seconds: float,
    target_spread: float = 0.05,
    clock: Callable[[], float] = time.monotonic,
    on_round: Callable[[int, R, float], None] | None = None,
    merge: Callable[[Sequence[R]], R] | None = None,
    min_rounds: int = 2,
) -> Rounds[R]:
    """Run ``measure`` round after round until the estimate is steady or the time is up.

    Without ``merge``: stops after a round when the spread of the closest pair of rounds
    (:func:`closest_pair`) is at most ``target_spread``; the better of that pair is kept. With
    ``merge`` (all rounds so far as one, :func:`merge_host_rounds`): after each round the rounds
    so far are merged, and it stops when that merged estimate's predictions moved by at most
    ``target_spread`` with the last round (single rounds of a loaded host need not ever agree; the
    merged estimate settles); the merged one is kept. Either way it stops when another round (as
    long as the mean round so far) would end past ``max_seconds`` from the start, and at least
    ``min_rounds`` (at least two) run. ``on_round(i, round, seconds)`` is called after each
    (progress for the user).
    """
    rounds: list[R] = []
    seconds: list[float] = []
    merged: list[R] = []
    start = clock()
    while True:
        t0 = clock()
        rounds.append(measure())
        seconds.append(clock() - t0)
        if merge is not None:
            merged.append(merge(rounds))
        if on_round is not None:
            on_round(len(rounds), rounds[-1], seconds[-1])
        if len(rounds) < max(2, min_rounds):
            continue
        best, runner = closest_pair(rounds)
        diffs = spread_between(rounds[best].predicted_ns, rounds[runner].predicted_ns)
        worst, spread = _largest(diffs)
        median = statistics.median(diffs.values()) if diffs else math.nan
        moved, change = _largest(spread_between(merged[-2].predicted_ns, merged[-1].predicted_ns)) if merged else ("", math.nan)
        steady = change if merged else spread
        what = (f"the merged estimate moved by up to {change:.1%} ({moved}) with round {len(rounds)}" if merged
                else f"two rounds agree within {spread:.1%} on every model")  # fmt: skip
        done = (tuple(rounds), tuple(seconds), best, runner, spread, worst, median)
        tail = (merged[-1] if merged else None, change, moved)
        if steady <= target_spread:
            return Rounds(*done, True, f"{what} (target {target_spread:.0%})", *tail)
        if clock() - start + statistics.fmean(seconds) > max_seconds:
            reason = (f"time limit: another round would end past {max_seconds:.0f} s; {what} "
                      f"(target {target_spread:.0%} not reached)")  # fmt: skip
            return Rounds(*done, False, reason, *tail)


@dataclass(frozen=True, slots=True)
class HostRound:
    """One round: the fingerprint, the fit on it, and per model (by name) the measured time
    (on the fingerprint's clock) and the calibrated prediction, in ns."""

    fingerprint: Fingerprint
    fit: CalibrationFit
    measured_ns: dict[str, float]
    predicted_ns: dict[str, float]
    #: The measurements the fit is on, per model (what :func:`merge_host_rounds` merges).
    validations: tuple[Validation, ...] = ()

    @property
    def score(self) -> float:
        """Geometric mean of the measured times (ns): lower is less disturbed."""
        return math.exp(statistics.fmean(math.log(t) for t in self.measured_ns.values()))


def measure_round(models: Sequence[Path], threads: int | None = None, quick: bool = False,
                  name: str = "host") -> HostRound:  # fmt: skip
    """Fingerprint this machine, then measure and fit ``models`` on it (one thread)."""
    from chips.schema import chip_from_dict
    from hwsim.host.calibration import apply, fit, probed_classes
    from hwsim.host.fingerprint import chip_data, measure_host
    from hwsim.host.validate import repredict, validate_model

    fp = measure_host(threads, quick=quick)
    chip = chip_from_dict(chip_data(fp, name), source=f"{name} (fingerprint)")
    g = fp.matmul_gflops_1t.get("fp32")
    reference = (g, fp.matmul_n) if g else None
    runs, min_s = (10, 0.2) if quick else (20, 1.0)
    vs = [validate_model(chip, m, 1, "all", runs, min_total_s=min_s, reference=reference, dispatch=fp.dispatch)
          for m in models]  # fmt: skip
    f = fit(vs, chip.units[0].name, probed=probed_classes(chip, chip.units[0].name))
    calibrated = apply(chip, f)
    predicted = {v.model: repredict(v, calibrated, m).predicted_ns for v, m in zip(vs, models, strict=True)}
    return HostRound(fp, f, {v.model: v.measured_ns for v in vs}, predicted, tuple(vs))


def merge_host_rounds(rounds: Sequence[HostRound], models: Sequence[Path], pick: Pick = DEFAULT_PICK,
                      name: str = "host") -> HostRound:  # fmt: skip
    """The rounds as one: their fingerprints merged (:func:`~hwsim.host.host_merge.merge_fingerprints`),
    each model's measurements merged (:func:`~hwsim.host.validate.merge_rounds`, per node, after
    putting each round's times on the merged fingerprint's clock), and one fit on those, so that
    the fingerprint and the calibration agree. ``models``: the ONNX files, in the rounds' order.

    Raises
    ------
    ValueError
        For no rounds, or rounds without their measurements (:attr:`HostRound.validations`).
    """
    from chips.schema import chip_from_dict
    from hwsim.host.calibration import apply, fit, probed_classes
    from hwsim.host.fingerprint import chip_data
    from hwsim.host.host_merge import merge_fingerprints, on_clock
    from hwsim.host.validate import merge_rounds, repredict

    if not rounds or any(len(r.validations) != len(models) for r in rounds):
        raise ValueError(f"merge_host_rounds: {len(rounds)} round(s), each needs the measurements of {len(models)} model(s)")
    fp = merge_fingerprints([r.fingerprint for r in rounds], pick)
    chip = chip_from_dict(chip_data(fp, name), source=f"{name} (merged fingerprint)")
    ref = fp.matmul_gflops_1t.get("fp32")
    # each round's times are on its own fingerprint's clock (its fp32 MatMul rate): put them on the merged one's
    rates = [r.fingerprint.matmul_gflops_1t.get("fp32") for r in rounds]
    factors = [g / ref if g and ref else 1.0 for g in rates]
    vs: list[Validation] = []
    for i, m in enumerate(models):
        own = [on_clock(r.validations[i], k) for r, k in zip(rounds, factors, strict=True)]
        vs.append(repredict(replace(merge_rounds(own, pick), dispatch=fp.dispatch), chip, m))
    f = fit(vs, chip.units[0].name, probed=probed_classes(chip, chip.units[0].name))
    calibrated = apply(chip, f)
    predicted = {v.model: repredict(v, calibrated, m).predicted_ns for v, m in zip(vs, models, strict=True)}
    return HostRound(fp, f, {v.model: v.measured_ns for v in vs}, predicted, tuple(vs))


def rounds_range(predictions: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per model every round predicts: the slowest round's prediction over the fastest's, less 1.

    >>> rounds_range([{"a": 100.0, "b": 10.0}, {"a": 110.0}])
    {'a': 0.1}
    """
    if not predictions:
        return {}
    common = set.intersection(*(set(p) for p in predictions))
    return {m: round(max(p[m] for p in predictions) / min(p[m] for p in predictions) - 1.0, 12)
            for m in predictions[0] if m in common}  # fmt: skip


def calibrated_comments(result: Rounds[HostRound], target_spread: float) -> list[str]:
    """Chip-file comment lines: what was kept (the merged rounds or one round), how far the rounds
    agree, what was fit."""
    from hwsim.host.calibration import fit_comments

    n = len(result.rounds)
    state = f"{'converged' if result.converged else 'NOT converged (time limit)'} (target {target_spread:.0%})"
    pair = (f"the closest two rounds ({result.best + 1} and {result.runner_up + 1}) differ by up to {result.spread:.1%} "
            f"({result.worst_model}), median {result.median_spread:.1%}")  # fmt: skip
    if result.merged is None:
        return [(f"# Calibrated by `hwsim fingerprint --calibrate`: round {result.best + 1} of {n} kept (of the two "
                "rounds that agree best, the one with the lower measured times)"),
                f"# spread of the calibrated predictions: {pair}; {state}", *fit_comments(result.kept.fit)]  # fmt: skip
    model, widest = _largest(rounds_range([r.predicted_ns for r in result.rounds]))
    return [
        (f"# Calibrated by `hwsim fingerprint --calibrate`: {n} rounds merged, each fingerprint figure and each"
         f" model's and kernel's measured time (on the merged fingerprint's clock) {describe(DEFAULT_PICK)}"
         ", and one fit on those"),
        (f"# the merged predictions moved by up to {result.change:.1%} ({result.change_model}) with the last round; "
        f"{state}"),
        f"# single rounds: {pair}; all {n} rounds span up to {widest:.1%} ({model})",
        *fit_comments(result.kept.fit),
    ]  # fmt: skip


def write_calibrated_chip(result: Rounds[HostRound], out: Path, name: str, target_spread: float) -> None:
    """Write the kept fingerprint (the merged rounds', or the kept round's) as a chip file with
    its calibration in the CPU unit."""
    from hwsim.host.calibration import unit_calibration
    from hwsim.host.fingerprint import write_chip

    write_chip(result.kept.fingerprint, out, name, calibrated_comments(result, target_spread),
               unit_calibration(result.kept.fit))  # fmt: skip
