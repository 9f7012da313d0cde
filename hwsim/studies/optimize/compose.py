"""Transferred whole mappings judged on the target chip before any is simulated.

The nearest chips' best mappings (:func:`~hwsim.studies.optimize.transfer.transferred`) were
good *there*. Here, each is scored by this chip's own screen (each op's predicted cost with
those knobs on this chip, :func:`~hwsim.studies.optimize.stages.predicted_ns`, the screen stage
2 uses) and the learned prior's expected gain (:func:`rerank`), and a *composed* candidate is
built from the best one (:func:`composed`): per op, the transferred signature where the screen
predicts it at least as good as the op's default, else the screen's best legal signature; either
way with the knobs the screen judges re-derived on this chip (:func:`rederived`: a split, a
dataflow, a tile chosen for the source chip's cores, bandwidth and SRAM need not be this one's best).
Before it, the source chips' own bests of this model are made one (:func:`united`), the knobs the
screen cannot judge (``unit``, ``fusion``: the schedule's) and the tile kept as they were found.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cost_models.mapping import OpMapping, choices, legality
from hwsim.studies.optimize.features import op_features
from hwsim.studies.optimize.stages import SignatureContext, predicted_ns, screened, signature_pool

if TYPE_CHECKING:
    from graph_ir.ir import ModelGraph, Op

__all__ = ["REDERIVE_MARGIN", "SCREENED_KNOBS", "UNITED_KEPT_KNOBS", "Scored", "composed", "rederived", "rerank", "screen_score", "united"]

#: Knobs of a transferred signature the screen judges (:func:`~.stages.predicted_ns`: the split,
#: the NPU's dataflow, layout and SRAM buffering), re-derived on this chip by :func:`rederived`.
#: ``unit`` and ``fusion`` are kept as transferred (the screen sees neither the schedule nor fusion).
SCREENED_KNOBS = ("cores", "dataflow", "layout", "tile")
#: Knobs the screen judges that :func:`united` keeps as the source chips' bests hold them: the
#: tile, whose pay in a run the screen, predicting each op alone, misjudged (yolov8n, NPU SRAM
#: x0.5: a 3x3 stride-2 conv predicted 20 % slower single-buffered (``tile="single"``) ran the whole 33 us faster so).
UNITED_KEPT_KNOBS = ("tile",)
#: Share by which the screen must predict another value faster before it replaces a transferred one.
REDERIVE_MARGIN = 0.01


@dataclass(frozen=True, slots=True)
class Scored:
    """A transferred mapping and its predicted log gains on this chip (natural log): the screen's
    and the prior's averaged (where the prior has samples), and the screen's alone."""

    mapping: dict[str, OpMapping]
    log_gain: float
    screen_log_gain: float


def _screen_log_gain(parent_ns: float, saved_ns: float) -> float:
    """The whole run's predicted log gain when the ops save ``saved_ns`` of ``parent_ns``."""
    if saved_ns == -math.inf:
        return -math.inf
    return math.log(parent_ns / max(parent_ns - saved_ns, 1e-3 * parent_ns))


def _prior_log_gains(ctx: SignatureContext, graph: ModelGraph,
                     mappings: Sequence[Mapping[str, OpMapping]]) -> list[float | None]:  # fmt: skip
    """The prior's predicted log gain of each of ``mappings``: the sum over its ops (a trial's
    gain is shared by its ops, :func:`~hwsim.studies.optimize.prior.samples_of`); None without
    samples. Each op's distinct signatures are predicted in one call."""
    if ctx.prior is None or ctx.prior.samples == 0:
        return [None] * len(mappings)
    by_op: dict[str, dict[OpMapping, None]] = {}
    for m in mappings:
        for op, om in m.items():
            by_op.setdefault(op, {})[om] = None
    gain: dict[tuple[str, OpMapping], float] = {}
    for op, seen in by_op.items():
        ms = list(seen)
        logs = ctx.prior.log_gains(op_features(graph.op(op), ctx.table), ctx.chip_features, ms)
        gain.update(((op, om), float(g)) for om, g in zip(ms, logs, strict=True))
    return [sum(gain[(op, om)] for op, om in sorted(m.items())) for m in mappings]


def screen_score(ctx: SignatureContext, graph: ModelGraph, mapping: Mapping[str, OpMapping], parent_ns: float,
                 current: Mapping[str, OpMapping] | None = None) -> float:  # fmt: skip
    """``mapping``'s log gain on ``ctx.chip`` over ``current`` (default: every op's default) as
    the screen predicts it (the ops' predicted time saved, summed); -inf where the screen finds
    an op no unit runs so."""
    now = current or {}
    saved = sum(
        predicted_ns(graph.op(op), ctx.chip, ctx.table, now.get(op, OpMapping()))
        - predicted_ns(graph.op(op), ctx.chip, ctx.table, m)
        for op, m in mapping.items()
    )
    return _screen_log_gain(parent_ns, saved if not math.isnan(saved) else -math.inf)


def _score(screen: float, prior: float | None) -> float:
    """A mapping's predicted log gain: the screen's (:func:`screen_score`), averaged with the
    prior's where it has samples; -inf where the screen finds an op no unit runs so."""
    return screen if prior is None or screen == -math.inf else (screen + prior) / 2


def rerank(ctx: SignatureContext, graph: ModelGraph, mappings: Sequence[dict[str, OpMapping]],
           parent_ns: float) -> list[Scored]:  # fmt: skip
    """``mappings`` scored on this chip, the best first: by the screen's predicted gain
    (:func:`screen_score`), the screen's and the prior's averaged (:func:`_score`) breaking its
    ties (fusion, which the screen does not predict); then the given order (nearer chips,
    better trials first).

    The screen ranks first because the prior, trained per op on each trial's gain shared by its
    ops, sums its errors over a whole mapping: on mobilenetv2 it predicted a loss for each of
    the nearest chips' best 9-10-op mappings and ranked a one-op mapping first.
    """
    screens = [screen_score(ctx, graph, m, parent_ns) for m in mappings]
    priors = _prior_log_gains(ctx, graph, mappings)
    scored = [Scored(m, _score(sc, p), sc) for m, sc, p in zip(mappings, screens, priors, strict=True)]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].screen_log_gain, -scored[i].log_gain, i))
    return [scored[i] for i in order]


def rederived(ctx: SignatureContext, op: Op, mapping: OpMapping, knobs: Sequence[str] = SCREENED_KNOBS) -> OpMapping:
    """``mapping`` with the knobs the screen judges (those of ``knobs``, by default
    :data:`SCREENED_KNOBS`, that ``ctx.knobs`` holds) chosen again for this chip, one knob at a
    time in that order: the legal value
    the screen predicts fastest with the others held, where it is predicted at least
    :data:`REDERIVE_MARGIN` faster than the value held (so the transferred value stays on a tie).

    The source chip chose its values for its own cores, bandwidth and SRAM: a split over 3 cores
    that paid there can cost here, where its shards' traffic shares a slower memory.
    """
    legal = choices(op, ctx.chip, ctx.table)
    best, best_ns = mapping, predicted_ns(op, ctx.chip, ctx.table, mapping)
    for knob in (k for k in knobs if k in SCREENED_KNOBS and k in ctx.knobs):
        held, held_ns = best, best_ns
        for value in legal.get(knob, ()):
            cand = OpMapping.from_dict(held.as_dict() | {knob: value})
            if cand == held or legality(op, ctx.chip, ctx.table, cand) is not None:
                continue
            ns = predicted_ns(op, ctx.chip, ctx.table, cand)
            if ns < best_ns and ns <= (1 - REDERIVE_MARGIN) * held_ns:
                best, best_ns = cand, ns
    return best


def composed(ctx: SignatureContext, graph: ModelGraph, mapping: Mapping[str, OpMapping],
             parent_ns: float) -> dict[str, OpMapping]:  # fmt: skip
    """Per op of ``mapping``: its signature where this chip's screen predicts it at least as
    good as the op's default, with the knobs the screen judges re-derived here
    (:func:`rederived`); else the screen's best legal signature for the op (from the default;
    the op left at its default when the screen predicts nothing better).

    Deterministic: the legal pool is drawn with a generator seeded by the op's name.
    """
    out: dict[str, OpMapping] = {}
    for name, m in sorted(mapping.items()):
        op = graph.op(name)
        default_ns = predicted_ns(op, ctx.chip, ctx.table, OpMapping())
        if predicted_ns(op, ctx.chip, ctx.table, m) <= default_ns:
            out[name] = rederived(ctx, op, m)
            continue
        pool = signature_pool(random.Random(name), op, ctx, {})
        better = (b for b in screened(op, ctx, pool, OpMapping(), parent_ns)
                  if predicted_ns(op, ctx.chip, ctx.table, b) < default_ns)  # fmt: skip
        fallback = next(better, None)
        if fallback is not None:
            out[name] = fallback
    return {op: m for op, m in out.items() if not m.is_default()}


def united(ctx: SignatureContext, graph: ModelGraph, bests: Sequence[Mapping[str, OpMapping]]) -> dict[str, OpMapping]:
    """The source chips' best mappings of this model (``bests``, nearest chip first) made one:
    each op takes the signature of the nearest chip that mapped it, with ``unit``, ``fusion``
    and the tile (:data:`UNITED_KEPT_KNOBS`) kept as found and the split, dataflow and layout
    re-derived here (:func:`rederived`).

    Nothing is dropped on the screen's word: it predicts each op alone, and the knobs that
    decide a run's placement (a Concat pinned to the NPU beside the convs it joins, which the
    screen predicts slower than the CPU's free concat) pay only in the schedule. On yolov8n
    with the NPU clock x0.75, the three nearest chips' bests together ran 10.42 ms, the best
    of them alone 10.90 and :func:`composed` 11.05 (the cold search's best: 10.95).

    The split is re-derived: on resnet18 with the NPU clock x0.75 the bests made one ran
    2.522 ms as found, 2.298 re-split (the cold best: 2.304). The tile is not: on yolov8n with
    the NPU SRAM x0.5 they ran 11.187 ms as found or re-split, 11.219 with the tile re-derived (the cold best:
    11.190).
    """
    kept = tuple(k for k in SCREENED_KNOBS if k not in UNITED_KEPT_KNOBS)
    out: dict[str, OpMapping] = {}
    for mapping in bests:
        for name, m in sorted(mapping.items()):
            if name not in out:
                out[name] = rederived(ctx, graph.op(name), m, kept)
    return {op: m for op, m in out.items() if not m.is_default()}
