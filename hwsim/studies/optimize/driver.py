"""The two stages run in order: the baseline, stage 1 (graph rewrites, a beam of the best
graphs), transfer, stage 2 (per-op signatures: rounds of one new signature for every target op,
then the round's winners together), on a :class:`~.search.Search`."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cost_models.mapping import OpMapping
from hwsim.pipeline import run_graph
from hwsim.studies.optimize.compose import composed, rerank, screen_score, united
from hwsim.studies.optimize.evaluate import Candidate, fusion_view
from hwsim.studies.optimize.prior import Prior
from hwsim.studies.optimize.search import Record, Search, SearchResult
from hwsim.studies.optimize.stages import (
    SignatureContext,
    core_masks,
    fusable_ops,
    predicted_ns,
    propose_graphs,
    signature_queue,
    top_ops,
)
from hwsim.studies.optimize.transfer import (
    carried_best,
    consensus,
    source_best_trials,
    source_bests,
    transferred,
)

if TYPE_CHECKING:
    import onnx

    from cost_models.table import CostTable
    from graph_ir.ir import ModelGraph
    from hwsim.studies.optimize.db import Trial

__all__ = ["BEAM_WIDTH", "KERNEL_GRAPHS", "TRANSFER_TRIALS", "combined_signatures", "kernel_graphs", "op_time_ns", "predicted_win", "prior_trials", "ranked_transfer", "refine_first", "run_search", "transfer_bests", "transfer_first", "transfer_refuted"]

log = logging.getLogger("hwsim")

#: Graphs stage 1 keeps for the next round and for stage 2.
BEAM_WIDTH = 3
#: Graphs of the beam stage 2 searches mappings for (the kernel budget is split between them).
KERNEL_GRAPHS = 2
#: Whole transferred mappings tried on a graph before the per-op search.
TRANSFER_TRIALS = 4


def _best_distinct(records: Sequence[Record], n: int) -> list[Record]:
    """The ``n`` best records of distinct graphs (transform sequences)."""
    out: dict[tuple[str, ...], Record] = {}
    for r in sorted(records, key=Record.rank):
        out.setdefault(r.candidate.transforms, r)
    return list(out.values())[:n]


def graph_stage(s: Search) -> list[Record]:
    """Stage 1: rounds of transform sequences grown from the beam; returns the final beam."""
    cfg = s.inputs.config.stage_graph
    beam = [s.result.baseline]
    seen: set[tuple[str, ...]] = {()}
    cache: dict[tuple[str, ...], onnx.ModelProto] = {}
    cap = cfg.rounds * cfg.candidates_per_round
    used = 0
    for _ in range(cfg.rounds):
        n = min(cfg.candidates_per_round, s.budget.graph_left(cap - used))
        if n < 1:
            break
        proposals = propose_graphs(s.rng, [r.candidate.transforms for r in beam], cfg.transforms, n, seen,
                                   s.inputs.model, s.inputs.chip, cache)  # fmt: skip
        if not proposals:
            break
        for p in proposals:
            s.bytes_of[p.candidate.transforms] = p.model_bytes
        done = s.run_round("graph", [p.candidate for p in proposals], s.result.baseline.outcome.latency_ms)
        used += len(done)
        beam = _best_distinct([*beam, *done], BEAM_WIDTH)
    if used == 0:
        s.result.notes.append("stage 1: no transform of the search file applied to this model")
    return beam


def op_time_ns(s: Search, candidate: Candidate) -> tuple[dict[str, float], tuple[str, ...]]:
    """Simulated time of each op of the candidate's graph under its mapping (frame 0), in ns,
    and the ops of the run's critical path."""
    graph, _ = s.graph_and_table(candidate.transforms)
    result = run_graph(graph, s.inputs.chip, s.inputs.precision, mapping=candidate.mapping())
    placement, simulated = fusion_view(result)
    s.views.setdefault(candidate.key, (dict(placement), [dict(p) for p in simulated or ()]))
    times: dict[str, float] = {}
    for r in result.trace.ops:
        if r.frame == 0:
            times[r.op] = times.get(r.op, 0.0) + (r.end_ps - r.start_ps) / 1000.0
    return times, result.analysis.critical_path


def _better(a: Record, b: Record) -> bool:
    return a.rank()[:2] < b.rank()[:2]


def _context(s: Search, transforms: tuple[str, ...]) -> SignatureContext:
    cfg = s.inputs.config
    graph, table = s.graph_and_table(transforms)
    return SignatureContext(s.inputs.chip, table, cfg.stage_kernel.signature, cfg.exploit, s.prior, s.chip_feats,
                            fusable_ops(graph, s.inputs.chip, table))  # fmt: skip


def ranked_transfer(s: Search, start: Record, mappings: Sequence[dict[str, OpMapping]],
                    bests: Sequence[dict[str, OpMapping]] = ()) -> list[dict[str, OpMapping]]:  # fmt: skip
    """The transferred mappings on ``start``'s graph in the order to try them: the source chips'
    best mappings of this model made one (``bests``, :func:`~hwsim.studies.optimize.compose.united`)
    first, then the composed one (:func:`~hwsim.studies.optimize.compose.composed`, built from
    the best-scored of ``mappings``), then ``mappings`` by their score on this chip
    (:func:`~hwsim.studies.optimize.compose.rerank`). A ``fusion`` knob on an op in no fusion
    group here (:func:`~.stages.fusable_ops`) is dropped, as is an op this graph lacks."""
    graph, _ = s.graph_and_table(start.candidate.transforms)
    ctx = _context(s, start.candidate.transforms)
    names = set(graph.order)
    fusable = ctx.fusable if ctx.fusable is not None else names

    def here(mms: Sequence[dict[str, OpMapping]]) -> list[dict[str, OpMapping]]:
        kept = [{op: m if op in fusable else replace(m, fusion=None) for op, m in mm.items() if op in names} for mm in mms]
        kept = [{op: m for op, m in mm.items() if not m.is_default()} for mm in kept]
        return [m for m in kept if m]

    kept, whole = here(mappings), united(ctx, graph, here(bests))
    if not kept:
        return [whole] if whole else []
    parent_ns = start.outcome.latency_ms * 1e6
    scored = rerank(ctx, graph, kept, parent_ns)
    first = composed(ctx, graph, scored[0].mapping, parent_ns)
    return [m for m in (whole, first, *(x.mapping for x in scored)) if m]


def _transfer(s: Search, start: Record, mappings: Sequence[dict[str, OpMapping]], left: int) -> Record:
    """Try whole transferred mappings (in :func:`ranked_transfer` order) on ``start``'s graph,
    one at a time, each only where the screen predicts it faster than the best of ``start`` and
    the transferred trials on its graph so far (:func:`predicted_win`), none once every
    transferred trial so far lost to its parent (:func:`transfer_refuted`); returns the better
    incumbent."""
    earlier = [r for r in s.result.records if r.stage == "transfer" and r.candidate.transforms == start.candidate.transforms]
    done = {r.candidate.key for r in s.result.records}
    held = min([start, *earlier], key=Record.rank)
    graph, _ = s.graph_and_table(start.candidate.transforms)
    ctx = _context(s, start.candidate.transforms)
    tries = min(TRANSFER_TRIALS - len(earlier), left)
    for mm in mappings:
        raw = Candidate.of(start.candidate.transforms, {op: m.as_dict() for op, m in mm.items()})
        if tries < 1 or transfer_refuted(s.result.records):
            break
        c = _to_simulate(s, raw, start)
        if c is None or c.key in done or not predicted_win(ctx, graph, mm, held):
            continue
        done.add(c.key)
        tries -= 1
        held = min([held, *s.run_round("transfer", [c], start.outcome.latency_ms, frozenset({c.key}))], key=Record.rank)
    return held if _better(held, start) else start


def transfer_refuted(records: Sequence[Record]) -> bool:
    """Whether the transferred candidates simulated so far (``records`` of stage ``transfer``)
    all ran slower than the record they were tried on: then no more whole transferred mappings
    are tried. The screen backed each of them (:func:`predicted_win`) and was wrong: the source
    chips' bests do not carry to this chip, and each further one costs a trial the search's
    own would use (yolov8n with the DRAM bandwidth x0.5: all eight transferred trials lost,
    from the first on)."""
    tried = [r for r in records if r.stage == "transfer"]
    return bool(tried) and not any(r.outcome.feasible and r.outcome.latency_ms < r.parent_latency_ms for r in tried)


def predicted_win(ctx: SignatureContext, graph: ModelGraph, mapping: Mapping[str, OpMapping], held: Record) -> bool:
    """Whether the screen predicts ``mapping`` (whole, on ``held``'s graph) faster than ``held``'s
    own mapping (:func:`~hwsim.studies.optimize.compose.screen_score` above 0): a transferred
    candidate is simulated only then, so it displaces none of the search's own trials on a guess
    the target's screen does not back."""
    current = held.candidate.mapping()
    whole = {op: mapping.get(op, OpMapping()) for op in sorted({*current, *mapping})}
    return screen_score(ctx, graph, whole, held.outcome.latency_ms * 1e6, current) > 0


def _reverts(s: Search, incumbent: Record, ctx: SignatureContext) -> list[str]:
    """The incumbent's mapped ops whose signature the screen predicts slower than the op's
    default on this chip (a transferred signature that does not pay here): stage 2 targets them
    first, the default among their candidates."""
    graph, _ = s.graph_and_table(incumbent.candidate.transforms)
    mapped = incumbent.candidate.mapping()
    return [
        op for op, m in sorted(mapped.items())
        if predicted_ns(graph.op(op), ctx.chip, ctx.table, m) > predicted_ns(graph.op(op), ctx.chip, ctx.table, OpMapping())
    ]  # fmt: skip


def _queues(s: Search, start: Record, incumbent: Record) -> dict[str, deque[OpMapping]]:
    """Each target op's signatures in the order to try them: exactly the queues a search
    without transfer builds on ``start`` (:func:`signature_queue`; the target ops those of the
    critical path, then the others by time), so that transfer displaces none of its trials;
    then, for each of the ``incumbent``'s ops whose (transferred) signature the screen predicts
    slower than the op's default on this chip, the default (:func:`_reverts`)."""
    cfg = s.inputs.config
    graph, _ = s.graph_and_table(start.candidate.transforms)
    ctx = _context(s, start.candidate.transforms)
    times, critical = op_time_ns(s, start.candidate)
    parent_ns = start.outcome.latency_ms * 1e6
    queues: dict[str, deque[OpMapping]] = {}
    for op in dict.fromkeys([*_reverts(s, start, ctx), *top_ops(times, cfg.stage_kernel.k, critical)]):
        current = start.candidate.signature_dict().get(op, {})
        queue, _ = signature_queue(s.rng, graph.op(op), ctx, current, cfg.stage_kernel.trials_per_op, parent_ns)
        if queue:
            queues[op] = deque(queue)
    if incumbent is not start:
        for op in _reverts(s, incumbent, ctx):
            queues.setdefault(op, deque()).append(OpMapping())
    return queues


def combined_signatures(incumbent: Candidate, winners: Sequence[tuple[str, Candidate]]) -> dict[str, dict[str, object]]:
    """``incumbent``'s signatures with each winner's signature for its op. A winner that runs its
    op on the default (a revert, or a signature whose only knob was an inert ``fusion`` one,
    dropped: :func:`~hwsim.studies.optimize.placed.resolved`) has no entry for it: the op goes
    back to the default.

    >>> inc = Candidate.of((), {"a": {"unit": "npu"}, "b": {"cores": 2}})
    >>> combined_signatures(inc, [("a", Candidate.of((), {"b": {"cores": 2}})), ("c", Candidate.of((), {"c": {"fusion": True}}))])
    {'b': {'cores': 2}, 'c': {'fusion': True}}
    """
    sigs = incumbent.signature_dict()
    for op, c in winners:
        theirs = c.signature_dict().get(op)
        if theirs:
            sigs[op] = theirs
        else:
            sigs.pop(op, None)
    return sigs


def _combined(s: Search, incumbent: Record, winners: Sequence[tuple[str, Record]], left: int) -> Record:
    """The best of the round's ``winners`` (op, record: each beat ``incumbent`` changing one
    op), or, when it is better still, all their signatures together on ``incumbent``."""
    best = min((r for _, r in winners), key=Record.rank)
    if len(winners) < 2 or left < 1:
        return best
    sigs = combined_signatures(incumbent.candidate, [(op, r.candidate) for op, r in winners])
    combo = _to_simulate(s, Candidate.of(incumbent.candidate.transforms, sigs), incumbent)
    if combo is None or any(r.candidate.key == combo.key for r in s.result.records):
        return best
    recs = s.run_round("kernel", [combo], incumbent.outcome.latency_ms)
    return recs[0] if recs and _better(recs[0], best) else best


def kernel_on_graph(s: Search, start: Record, cap: int, mappings: Sequence[dict[str, OpMapping]]) -> Record:
    """Stage 2 on one graph: transferred mappings (those the screen backs, :func:`_transfer`),
    then rounds over the target ops (:func:`_queues`: the same as without transfer, tried on the
    best transferred mapping, or on the best trial of this graph so far where
    :func:`refine_first` ran). A round tries the next signature of every target op at once (one
    candidate per op, evaluated in parallel), then the winners' signatures together; the best
    becomes the incumbent."""
    spent = s.budget.used
    mappings = ranked_transfer(s, start, mappings, transfer_bests(s, start)) if mappings else []
    incumbent = _transfer(s, start, mappings, s.budget.kernel_left(cap)) if mappings else start
    here = [r for r in s.result.records if r.stage == "kernel" and r.candidate.transforms == start.candidate.transforms]
    incumbent = min([incumbent, *here], key=Record.rank)  # none without transfer: a graph is searched once
    incumbent = _core_mask_round(s, incumbent, cap - (s.budget.used - spent))
    return _rounds(s, start, incumbent, lambda: s.budget.kernel_left(cap - (s.budget.used - spent)))


def _core_mask_round(s: Search, incumbent: Record, cap: int) -> Record:
    """Once a search, on the first graph stage 2 takes: ``incumbent`` with each whole-unit core
    count (:func:`~hwsim.studies.optimize.stages.core_masks`) in one round; the best becomes the
    incumbent where it is better."""
    view = None if s.core_masks_tried else s.fusion_view(incumbent)  # a reused trial: simulated again
    if view is None:
        return incumbent
    s.core_masks_tried = True
    graph, table = s.graph_and_table(incumbent.candidate.transforms)
    masks = core_masks(graph, s.inputs.chip, table, view[0], incumbent.candidate.signature_dict())
    seen = {r.candidate.key for r in s.result.records}
    cands = [c for m in masks if (c := Candidate.of(incumbent.candidate.transforms, m)).key not in seen]
    if not cands or s.budget.kernel_left(cap) < len(cands):
        return incumbent
    recs = s.run_round("kernel", cands, incumbent.outcome.latency_ms)
    return min([incumbent, *(r for r in recs if _better(r, incumbent))], key=Record.rank)


def _rounds(s: Search, start: Record, incumbent: Record, left_now: Callable[[], int], rounds: int | None = None,
            queues: dict[str, deque[OpMapping]] | None = None) -> Record:  # fmt: skip
    """Stage 2's rounds on ``start``'s graph from ``incumbent`` (at most ``rounds``; ``left_now``:
    the trials left), over ``queues`` (default :func:`_queues`); returns the best incumbent."""
    queues = _queues(s, start, incumbent) if queues is None else queues
    proposed = s.proposed.setdefault(start.candidate.transforms, set())
    for op, q in queues.items():  # signatures an earlier round on this graph tried (refine_first)
        queues[op] = deque(m for m in q if (op, m) not in proposed)
    queues = {op: q for op, q in queues.items() if q}
    tried = {r.candidate.key for r in s.result.records}  # this search's: a rerun skips the same
    pending: dict[str, tuple[str, Candidate, OpMapping]] = {}
    while queues and (rounds is None or rounds > 0):
        left = left_now()
        if left < 1:
            break
        rounds = None if rounds is None else rounds - 1
        op_of: dict[str, str] = {}
        cands: list[Candidate] = []
        for op in list(queues)[:left]:
            proposed.add((op, queues[op][0]))
            c = _next_new(s, incumbent, op, queues, tried, pending)
            if c is not None:
                if op in (done := c.mapping()):  # simulated with inert fusion knobs left out: that one is tried too
                    proposed.add((op, done[op]))
                op_of[c.key] = op
                cands.append(c)
        recs = s.run_round("kernel", cands, incumbent.outcome.latency_ms)
        _requeue(s, recs, queues, pending)
        winners = [(op_of[r.candidate.key], r) for r in recs if _better(r, incumbent)]
        if winners:
            incumbent = _combined(s, incumbent, winners, left_now())
    return incumbent


def refine_first(s: Search, first: Record) -> None:
    """With ``--transfer-from``, where the first transferred trial (``first``) beat the
    baseline: one stage 2 round on it (:func:`_rounds`, on the original graph) right away, before
    stage 1. Its trials come out of stage 2's budget (counted as ``transferred``), stage 1's share
    is kept, and the random generator is left as it was, so stage 1 proposes the same graphs as
    without it."""
    total = s.budget.total
    reserve = 0 if total is None else int(total * s.inputs.config.stage_graph.budget) + 1  # stage 1's share
    cap = s.inputs.config.stage_kernel.k + 1  # one round: each target op once, then the winners together
    before, state = s.budget.used, s.rng.getstate()

    def left_now() -> int:
        left = s.budget.kernel_left(cap - (s.budget.used - before))
        return left if total is None else min(left, total - reserve - s.budget.used)

    try:
        _rounds(s, first if first.candidate.transforms else s.result.baseline, first, left_now, 1)
    finally:
        s.rng.setstate(state)
        s.budget.transferred += s.budget.used - before


def _to_simulate(s: Search, raw: Candidate, parent: Record, defer: bool = False) -> Candidate | None:
    """What to simulate for ``raw`` (a candidate on ``parent``): ``raw`` less the ``fusion``
    knobs inert on the placement it runs with (:meth:`~.search.Search.resolve`) where this
    search simulated that one and its run shows ``raw`` would run exactly the same
    (:meth:`~.search.Search.same_run`): then nothing (None; counted in ``skipped``, not a trial).
    Where that run shows otherwise, ``raw`` itself. Where that one is not simulated yet, ``raw``
    (or, with ``defer``, that one: the caller simulates it first and ``raw`` after where its run
    shows a difference)."""
    c = s.resolve(raw, parent)
    if c.key == raw.key:
        return raw
    same = s.same_run(raw, c)
    if same is None:
        return c if defer else raw
    if same:
        s.result.skipped += 1
        return None
    return raw


def _next_new(s: Search, incumbent: Record, op: str, queues: dict[str, deque[OpMapping]], tried: set[str],
              pending: dict[str, tuple[str, Candidate, OpMapping]]) -> Candidate | None:  # fmt: skip
    """The next signature of ``op``'s queue tried on ``incumbent``, as :func:`_to_simulate`
    resolves it; None where that is nothing new (skipped, not counted: the op waits for the
    next round, as one this search has tried does). Pops the queue (and drops it once empty).
    A candidate simulated in place of one with more fusion knobs is noted in ``pending`` (its
    key -> op, that candidate, the signature)."""
    m = queues[op].popleft()
    if not queues[op]:
        del queues[op]
    raw = incumbent.candidate.with_op(op, m.as_dict())
    c = _to_simulate(s, raw, incumbent, defer=True)
    if c is None or c.key in tried:
        return None
    tried.add(c.key)
    if c.key != raw.key:
        pending[c.key] = (op, raw, m)
    return c


def _requeue(s: Search, recs: Sequence[Record], queues: dict[str, deque[OpMapping]],
             pending: dict[str, tuple[str, Candidate, OpMapping]]) -> None:  # fmt: skip
    """Put back, first in its op's queue, each signature whose candidate was simulated without
    some fusion knobs (``pending``) where that run shows the knobs would have changed it."""
    for r in recs:
        if r.candidate.key in pending:
            op, raw, m = pending.pop(r.candidate.key)
            if s.same_run(raw, r.candidate) is False:
                queues.setdefault(op, deque()).appendleft(m)


def kernel_graphs(s: Search, beam: Sequence[Record]) -> list[Record]:
    """The graphs of the beam stage 2 searches: at most :data:`KERNEL_GRAPHS`, none worse than the
    baseline (a transform that applies but costs, such as ``channel_align`` padding channels on
    a chip that gains nothing from it, is rejected here and noted)."""
    base = s.result.baseline
    kept = [r for r in beam if not _better(base, r)][:KERNEL_GRAPHS]
    costing = [r for r in s.result.records if r.stage == "graph" and _better(base, r)]
    if costing:
        worst = ", ".join(sorted({"+".join(r.candidate.transforms) for r in costing}))
        s.result.notes.append(f"stage 1: rejected graphs slower than the baseline ({worst})")
    return kept or [base]


def run_search(s: Search) -> SearchResult:
    """Baseline, stage 1, stage 2 on the best graphs; a Ctrl-C keeps what was found."""
    cfg = s.inputs.config
    try:
        s.run_round("baseline", [Candidate()], 0.0)
        s.prior = Prior.fit(prior_trials(s))
        transfer_first(s)
        graphs = kernel_graphs(s, graph_stage(s))
        kernel_total = cfg.stage_kernel.k * cfg.stage_kernel.trials_per_op
        if s.budget.total is not None:
            kernel_total = s.budget.total - s.budget.used
        cap_each = -(-kernel_total // len(graphs))
        for start in graphs:
            if s.budget.kernel_left(cap_each) < 1:
                break
            mappings = transfer_mappings(s, start)
            kernel_on_graph(s, start, cap_each, mappings)
    except KeyboardInterrupt:
        s.result.interrupted = True
        s.result.notes.append(f"interrupted after {len(s.result.records)} trials: the best found so far is kept")
    s.result.beam = _best_distinct(s.result.records, BEAM_WIDTH)
    return s.result


def prior_trials(s: Search) -> list[Trial]:
    """What the learned prior learns from: the earlier searches' trials of this model, on every
    chip of the database. Other models' trials still give transfer its candidates (ops matched by
    their features, :func:`~hwsim.studies.optimize.transfer.transferred`), but do not rank this
    search's own: on the RK3588 family a prior fitted on two other models' searches made the
    third's stage 2 queues worse than the screen alone (``bench_transfer.py``'s cross-model rows,
    budget 40: without it 4 -> 6 of 6 targets reached, yolov8n and MobileNetV2 with NPU SRAM x0.5
    from not reached in 40 to 23 and 10 trials, ResNet-18 24 -> 11; held out, yolov5n, ResNet50-v2,
    SqueezeNet and MobileNetV1, 1.54x -> 1.89x, four rows sooner, MobileNetV1 NPU SRAM x0.5 23 -> 7,
    none later). On the same model's searches the prior is as before (and with no prior at all the
    six yolov8n same-model rows take the same trials)."""
    return [t for t in s.db.trials(model_sha256=s.inputs.model_sha256) if t.search_id != s.search_id]


def transfer_first(s: Search) -> None:
    """With ``--transfer-from``, right after the baseline, before stage 1: the first transferred
    candidate (in :func:`ranked_transfer` order: the source chips' bests made one, else the
    composed one) that the screen predicts faster than the baseline (:func:`predicted_win`), on
    the original graph; then each source chip's best as it was found, graph rewrites included
    (:func:`_whole_bests`); then one stage 2 round on the best of them where it beats the
    baseline (:func:`refine_first`)."""
    base = s.result.baseline
    if not s.inputs.transfer_from or s.budget.kernel_left(1) < 1:
        return
    ranked = ranked_transfer(s, base, transfer_mappings(s, base), transfer_bests(s, base))
    graph, _ = s.graph_and_table(())
    ctx = _context(s, ())
    backed = next((m for m in ranked if predicted_win(ctx, graph, m, base)), None)
    recs: list[Record] = []
    if backed is not None:
        first = _to_simulate(s, Candidate.of((), {op: m.as_dict() for op, m in backed.items()}), base)
        if first is not None:
            recs = s.run_round("transfer", [first], base.outcome.latency_ms, frozenset({first.key}))
    best = min([base, *recs, *_whole_bests(s)], key=Record.rank)
    if _better(best, base):
        refine_first(s, best)


def _whole_bests(s: Search) -> list[Record]:
    """What the source chips' best trials of this model agree on (:func:`~hwsim.studies.optimize.
    transfer.consensus`), then each of those bests (nearest first,
    :func:`~hwsim.studies.optimize.transfer.source_best_trials`) as it was found: graph rewrites
    (those of the search file, where they apply here) and signatures re-legalized for this chip,
    each simulated only where the screen backs its signatures (:func:`predicted_win`: a best on
    the original graph against the best of it so far, one on a rewritten graph and the consensus
    against their defaults), up to :data:`TRANSFER_TRIALS` and none once every transferred trial
    so far lost to its parent (:func:`transfer_refuted`). The bests made one
    (:func:`ranked_transfer`) sit on the original graph: on the RK3588 family a source whose
    best was on ``concat_fold`` carried its gain to the target only with it.

    The consensus is judged against the defaults, not against the bests made one: it keeps a
    subset of their knobs, and the screen, which prices each op alone and adds them up, counts
    every knob dropped as a loss (yolov8n with two NPU cores: the bests made one ran 11.220 ms,
    the consensus 10.980, the cold search's best)."""
    names = s.inputs.transfer_from
    base = s.result.baseline
    done = {r.candidate.key for r in s.result.records}
    cache: dict[tuple[str, ...], onnx.ModelProto] = {}
    out: list[Record] = []
    bests = source_best_trials(s.db, s.inputs.model_sha256, s.inputs.chip, from_chips=None if names == ("auto",) else names)
    found = [(*consensus(bests), True), *((t.transforms, t.signatures, False) for t in bests)]
    for transforms, signatures, against_defaults in found:
        if len(out) >= TRANSFER_TRIALS or s.budget.kernel_left(1) < 1 or transfer_refuted(s.result.records):
            break
        applied, graph, table = _rewritten(s, transforms, cache)
        mapping = carried_best(signatures, s.inputs.chip, graph, table)
        held = base  # on a rewritten graph, or the consensus: against its defaults
        if not applied and not against_defaults:  # on the original graph: against its best so far
            held = min([base, *(r for r in s.result.records if r.stage == "transfer" and not r.candidate.transforms)],
                       key=Record.rank)  # fmt: skip
        if not mapping or not predicted_win(_context(s, applied), graph, mapping, held):
            continue
        raw = Candidate.of(applied, {op: m.as_dict() for op, m in mapping.items()})
        c = raw if applied else _to_simulate(s, raw, base)
        if c is None or c.key in done:
            continue
        done.add(c.key)
        out += s.run_round("transfer", [c], base.outcome.latency_ms, frozenset({c.key}))
    return out


def _rewritten(s: Search, transforms: Sequence[str], cache: dict[tuple[str, ...], onnx.ModelProto],
               ) -> tuple[tuple[str, ...], ModelGraph, CostTable]:  # fmt: skip
    """The search file's ``transforms`` applied where they apply here, as ``(applied, graph,
    table)``, ``cache`` the rewritten models
    (:func:`~hwsim.studies.optimize.evaluate.apply_transforms`); the rewritten model's bytes kept
    for the trials (``Search.bytes_of``)."""
    from hwsim.studies.optimize.evaluate import apply_transforms

    allowed = set(s.inputs.config.stage_graph.transforms)
    applied, model = apply_transforms(s.inputs.model, s.inputs.chip, [t for t in transforms if t in allowed], cache)
    if applied not in s.bytes_of:  # the original graph's, or one stage 1 proposed, are known
        s.bytes_of[applied] = model.SerializeToString()
    graph, table = s.graph_and_table(applied)
    return applied, graph, table


def transfer_mappings(s: Search, start: Record) -> list[dict[str, OpMapping]]:
    """The transferred mappings for ``start``'s graph (``--transfer-from``), best first."""
    return _from_sources(s, start, transferred)


def transfer_bests(s: Search, start: Record) -> list[dict[str, OpMapping]]:
    """The best mapping of this model each source chip found, for ``start``'s graph
    (``--transfer-from``; :func:`~hwsim.studies.optimize.transfer.source_bests`), nearest first."""
    return _from_sources(s, start, source_bests)


def _from_sources(s: Search, start: Record, find: Callable[..., list[dict[str, OpMapping]]]) -> list[dict[str, OpMapping]]:
    """``find`` (:func:`~hwsim.studies.optimize.transfer.transferred` or
    :func:`~hwsim.studies.optimize.transfer.source_bests`) on ``start``'s graph, from the chips
    ``--transfer-from`` names (``auto``: the nearest); none without ``--transfer-from``."""
    names = s.inputs.transfer_from
    if not names:
        return []
    graph, table = s.graph_and_table(start.candidate.transforms)
    from_chips = None if names == ("auto",) else names
    return find(s.db, s.inputs.chip, graph, table, s.inputs.model_sha256, from_chips=from_chips)
