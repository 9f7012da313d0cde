"""Transfer: start a chip's search from the best signatures the nearest chips in the experience
database found, re-legalized for this chip.

Records are keyed by the chip's fingerprint (:func:`hwsim.report.provenance.chip_sha256`), so a
chip never takes its own records as transferred ones, and one chip's are never taken as
another's without passing :func:`~cost_models.mapping.legalize` here.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from chips.schema import Chip
from graph_ir.ir import ModelGraph
from hwsim.report.provenance import chip_sha256
from hwsim.studies.optimize.db import DbError
from hwsim.studies.optimize.features import chip_distance, chip_features, op_features

if TYPE_CHECKING:
    from cost_models.mapping import OpMapping
    from cost_models.table import CostTable
    from hwsim.studies.optimize.db import Trial

__all__ = ["MATCH_FEATURES", "MATCH_INTENSITY_RADIUS", "MATCH_KIND_PREFIXES", "MATCH_RADIUS", "WHOLE_BEST_SOURCES", "TrialSource", "carried_best", "consensus", "match_ops", "named_chips", "nearest_chips", "source_best_trials", "source_bests", "transferred"]

#: Op features that must be equal for two ops to match across models: the op's type (category
#: one-hot), depthwise or not, and its precision.
MATCH_KIND_PREFIXES = ("cat.", "dtype.", "depthwise")
#: Op features whose distance matches ops of one kind across models: the shape class (kernel
#: window, channels, groups) and the arithmetic intensity, each ``log2(1 + x)``.
MATCH_FEATURES = ("kernel_log2", "channels_in_log2", "channels_out_log2", "groups_log2", "intensity_log2")
#: Largest feature distance of a match (1 is a factor of about two in one feature).
MATCH_RADIUS = 1.5
#: Largest difference in arithmetic intensity (``intensity_log2``) of a match, on its own: ops
#: of one shape class but twice the FLOP per byte sit elsewhere on the roofline.
MATCH_INTENSITY_RADIUS = 1.0


class TrialSource(Protocol):
    """What transfer reads of an :class:`~hwsim.studies.optimize.db.ExperienceDB`."""

    def chips(self) -> list[tuple[str, str, dict[str, float], int]]: ...

    def trials(
        self, *, chip_fingerprint: str | None = ..., model_sha256: str | None = ...,
        stage: str | None = ..., search_id: str | None = ...,
    ) -> list[Trial]: ...  # fmt: skip


def nearest_chips(db: TrialSource, chip: Chip, k: int = 3) -> list[tuple[str, str, float]]:
    """The ``k`` chips of ``db`` nearest ``chip`` by :func:`chip_distance`, nearest first, as
    ``(fingerprint, name, distance)``; never ``chip``'s own fingerprint, nor a chip without trials.
    Ties go by name, then fingerprint."""
    own = chip_sha256(chip)
    here = chip_features(chip)
    found = [
        (fp, name, chip_distance(here, feats))
        for fp, name, feats, n in db.chips()
        if fp != own and n > 0
    ]
    return sorted(found, key=lambda c: (c[2], c[1], c[0]))[: max(k, 0)]


_Kind = tuple[tuple[str, float], ...]


def _kind(f: Mapping[str, float]) -> _Kind:
    return tuple(sorted((n, v) for n, v in f.items() if n.startswith(MATCH_KIND_PREFIXES) and v))


def _by_kind(feats: Mapping[str, Mapping[str, float]]) -> dict[_Kind, list[tuple[str, Mapping[str, float]]]]:
    """Ops by kind (:func:`_kind`), each kind's by name: an op of another kind is never a match."""
    out: dict[_Kind, list[tuple[str, Mapping[str, float]]]] = {}
    for name, f in sorted(feats.items()):
        out.setdefault(_kind(f), []).append((name, f))
    return out


def _shape_distance(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """The distance of two ops of one kind (:func:`_kind`): ``inf`` beyond
    :data:`MATCH_INTENSITY_RADIUS` in intensity alone."""
    if abs(a.get("intensity_log2", 0.0) - b.get("intensity_log2", 0.0)) > MATCH_INTENSITY_RADIUS:
        return math.inf
    return math.sqrt(sum((a.get(n, 0.0) - b.get(n, 0.0)) ** 2 for n in MATCH_FEATURES))


def match_ops(
    source: Mapping[str, Mapping[str, float]], target: Mapping[str, Mapping[str, float]]
) -> dict[str, str]:
    """Target op name -> the source op it takes its signature from: the nearest source op of
    the same kind (op category, depthwise or not, precision: :data:`MATCH_KIND_PREFIXES`) by
    shape class and arithmetic intensity (:data:`MATCH_FEATURES`), within
    :data:`MATCH_RADIUS` and within :data:`MATCH_INTENSITY_RADIUS` in intensity alone; ties by
    source name. A source op may serve several target ops; a
    target op with no source op near enough is left out. Op names play no part.

    >>> conv = {"cat.conv": 1.0, "kernel_log2": 3.3, "intensity_log2": 6.0}
    >>> match_ops({"a": conv, "b": {"cat.activation": 1.0}},
    ...           {"x": conv | {"intensity_log2": 6.5}, "y": {"cat.pool": 1.0}, "z": {"cat.activation": 1.0},
    ...            "w": conv | {"intensity_log2": 7.2}})
    {'x': 'a', 'z': 'b'}
    """
    return _matched(source, _by_kind(target))


def _matched(source: Mapping[str, Mapping[str, float]],
             target: Mapping[_Kind, list[tuple[str, Mapping[str, float]]]]) -> dict[str, str]:  # fmt: skip
    """:func:`match_ops` on target ops already grouped by kind (:func:`_by_kind`)."""
    of_kind = _by_kind(source)
    out: dict[str, str] = {}
    for kind, targets in target.items():
        pool = of_kind.get(kind, ())
        for t, tf in targets if pool else ():
            d, s = min((_shape_distance(sf, tf), s) for s, sf in pool)
            if d <= MATCH_RADIUS:
                out[t] = s
    return dict(sorted(out.items()))


def _ranked(trials: Sequence[Trial], model_sha256: str) -> list[Trial]:
    """Useful trials best first: those of the same model by objective, then the others by gain."""
    ok = [t for t in trials if t.feasible and t.error is None and t.signatures and t.latency_ms > 0]
    same = sorted((t for t in ok if t.model_sha256 == model_sha256), key=lambda t: (t.objective, t.candidate_key))
    other = sorted(
        (t for t in ok if t.model_sha256 != model_sha256),
        key=lambda t: (-t.parent_latency_ms / t.latency_ms, t.candidate_key, t.model_sha256),  # keys repeat across models
    )
    return same + other


def _carried(trial: Trial, graph: ModelGraph, here: Mapping[str, Mapping[str, float]], same_model: bool,
             kinds: Mapping[_Kind, list[tuple[str, Mapping[str, float]]]] | None = None,
             ) -> dict[str, tuple[str, Mapping[str, object]]]:  # fmt: skip
    """``trial``'s signatures on ``graph``'s ops, as target op -> (source op, signature): by op
    name for the same model, else by op features (:func:`match_ops`; ``kinds``: ``here`` by
    kind, :func:`_by_kind`, made once for many trials)."""
    if same_model:
        return _by_name(trial.signatures, here)
    source = {op: trial.op_features.get(op, {}) for op in trial.signatures}
    return {t: (s, trial.signatures[s]) for t, s in _matched(source, _by_kind(here) if kinds is None else kinds).items()}


def _by_name(signatures: Mapping[str, Mapping[str, object]],
             names: Container[str]) -> dict[str, tuple[str, Mapping[str, object]]]:  # fmt: skip
    """A trial of the same model's ``signatures`` on the ops of ``names`` it names, as target op ->
    (source op, signature)."""
    return {op: (op, sig) for op, sig in signatures.items() if op in names}


def _relegalized(chip: Chip, graph: ModelGraph, table: CostTable,
                 carried: Mapping[str, tuple[str, Mapping[str, object]]],
                 memo: dict[tuple[str, OpMapping], float] | None = None) -> dict[str, OpMapping]:  # fmt: skip
    """``carried`` re-legalized for ``chip`` (:func:`cost_models.mapping.legalize`), all-default
    ones dropped; a source op's signature carried to several ops (another model's op matched
    by features) is kept only on those where this chip's screen
    (:func:`~hwsim.studies.optimize.stages.predicted_ns`) predicts it no slower than the default
    (``memo``: the screen's times by op and mapping, kept over many calls)."""
    from cost_models.mapping import OpMapping, legalize  # at call time: only transfer needs it
    from hwsim.studies.optimize.stages import predicted_ns

    memo = {} if memo is None else memo

    def screened_ns(name: str, m: OpMapping) -> float:
        if (name, m) not in memo:
            memo[(name, m)] = predicted_ns(graph.op(name), chip, table, m)
        return memo[(name, m)]

    served = Counter(src for src, _ in carried.values())
    out: dict[str, OpMapping] = {}
    for name, (src, sig) in sorted(carried.items()):
        m = legalize(graph.op(name), chip, table, OpMapping.from_dict(sig))
        if m.is_default():
            continue
        if served[src] > 1 and screened_ns(name, m) > screened_ns(name, OpMapping()):
            continue
        out[name] = m
    return out


def named_chips(db: TrialSource, chip: Chip, names: Sequence[str]) -> list[tuple[str, str, float]]:
    """The chips of ``db`` called ``names`` (every fingerprint of each name but ``chip``'s own),
    nearest first, as :func:`nearest_chips` gives them (``--transfer-from NAME...``).

    Raises
    ------
    hwsim.studies.optimize.db.DbError
        A name no chip of ``db`` has (one line listing the chips it has).
    """
    known = {name for _, name, _, _ in db.chips()}
    for n in names:
        if n not in known:
            raise DbError(f"--transfer-from {n}: no chip of that name in the database (chips: {', '.join(sorted(known)) or 'none'})")
    return [c for c in nearest_chips(db, chip, k=len(db.chips())) if c[1] in names]


def transferred(
    db: TrialSource, chip: Chip, graph: ModelGraph, table: CostTable, model_sha256: str, k: int = 3,
    from_chips: Sequence[str] | None = None,
) -> list[dict[str, OpMapping]]:  # fmt: skip
    """Starting candidates for ``chip``: the best signatures of the ``k`` nearest chips
    (:func:`nearest_chips`), or of the chips called ``from_chips`` (:func:`named_chips`), nearer
    chips first; of each chip its trials of the same model first (ops matched by name, best
    objective first), then of other models (ops matched by :func:`match_ops`, best gain first).
    Every signature is re-legalized for ``chip`` (:func:`cost_models.mapping.legalize`); those
    left all-default are dropped, as is one source op's signature on each of several target ops
    where the screen predicts it slower than the default (:func:`_relegalized`), and a
    candidate met twice is kept once, where it came first.

    Raises
    ------
    hwsim.studies.optimize.db.DbError
        A name of ``from_chips`` no chip of ``db`` has.
    """
    here = {op.name: op_features(op, table) for op in graph.ops()}
    kinds = _by_kind(here)  # made once for every trial
    memo: dict[tuple[str, OpMapping], float] = {}
    out: list[dict[str, OpMapping]] = []
    seen: set[str] = set()
    for fp, _, _ in _sources(db, chip, k, from_chips):
        for trial in _ranked(db.trials(chip_fingerprint=fp), model_sha256):
            carried = _carried(trial, graph, here, trial.model_sha256 == model_sha256, kinds)
            cand = _relegalized(chip, graph, table, carried, memo)
            key = json.dumps({n: m.as_dict() for n, m in cand.items()}, sort_keys=True)
            if cand and key not in seen:
                seen.add(key)
                out.append(cand)
    return out


def _sources(db: TrialSource, chip: Chip, k: int, from_chips: Sequence[str] | None) -> list[tuple[str, str, float]]:
    """The source chips of a transfer: the ``k`` nearest (:func:`nearest_chips`), or those called
    ``from_chips`` (:func:`named_chips`), nearest first."""
    return nearest_chips(db, chip, k) if from_chips is None else named_chips(db, chip, from_chips)


#: Source chips whose best trial of the model :func:`source_best_trials` gives (nearest first):
#: more than the 3 the mappings come from. A best is simulated only where the screen backs it
#: (:func:`hwsim.studies.optimize.driver.predicted_win`), up to
#: :data:`~hwsim.studies.optimize.driver.TRANSFER_TRIALS`, and what pays on a chip is not always
#: on its nearest ones: on the RK3588 family, yolov8n's best with the NPU clock at x0.75 is the
#: best found at x1.25 (its 5th nearest chip), ``concat_fold`` and two signatures, while its 3
#: nearest chips' bests are on the original graph and run 4-5 % slower there.
WHOLE_BEST_SOURCES = 8


def source_best_trials(
    db: TrialSource, model_sha256: str, chip: Chip, k: int = WHOLE_BEST_SOURCES, from_chips: Sequence[str] | None = None
) -> list[Trial]:
    """The best trial of the same model each of the ``k`` nearest source chips found (or each
    of ``from_chips``, nearest first), graph rewrites and all (a trial of rewrites alone counts
    too); a chip with no useful trial of this model gives none.

    Raises
    ------
    hwsim.studies.optimize.db.DbError
        A name of ``from_chips`` no chip of ``db`` has.
    """
    out: list[Trial] = []
    for fp, _, _ in _sources(db, chip, k, from_chips):
        ok = [t for t in db.trials(chip_fingerprint=fp, model_sha256=model_sha256)
              if t.feasible and t.error is None and t.latency_ms > 0 and (t.signatures or t.transforms)]  # fmt: skip
        if ok:
            out.append(min(ok, key=lambda t: (t.objective, t.candidate_key)))
    return out


def carried_best(signatures: Mapping[str, Mapping[str, object]], chip: Chip, graph: ModelGraph,
                 table: CostTable) -> dict[str, OpMapping]:  # fmt: skip
    """``signatures`` (of a trial of this model, or :func:`consensus`'s) on ``graph``'s ops of the
    same name, re-legalized for ``chip`` as :func:`source_bests` does."""
    return _relegalized(chip, graph, table, _by_name(signatures, set(graph.order)))


def consensus(bests: Sequence[Trial]) -> tuple[tuple[str, ...], dict[str, dict[str, object]]]:
    """What more than half of ``bests`` (the source chips' best trials of one model,
    :func:`source_best_trials`) agree on, as ``(transforms, signatures)``: the rewrite sequence
    more than half of them ran on (else none), and on each op each knob set to one value by more
    than half of them. Nothing (``((), {})``) from fewer than two bests.

    A knob most of the chips chose is likelier to pay on one more chip of the family than one a
    single chip chose: on the RK3588 family every chip's best of yolov8n has the stem conv in
    ``im2col`` layout, which alone reaches 95 % of the cold search's gain with two NPU cores,
    while the nearest chips' bests made one (their split and tile knobs too) run 2 % slower."""
    n = len(bests)
    if n < 2:
        return (), {}
    graphs = Counter(tuple(t.transforms) for t in bests)
    transforms, held = min(graphs.items(), key=lambda kv: (-kv[1], kv[0]))
    votes = Counter((op, knob, json.dumps(v, sort_keys=True)) for t in bests for op, sig in t.signatures.items()
                    for knob, v in sig.items())  # fmt: skip
    agreed: dict[str, dict[str, object]] = {}
    for (op, knob, text), count in sorted(votes.items()):
        if 2 * count > n:
            agreed.setdefault(op, {})[knob] = json.loads(text)
    return (transforms if 2 * held > n else ()), agreed


def source_bests(
    db: TrialSource, chip: Chip, graph: ModelGraph, table: CostTable, model_sha256: str, k: int = 3,
    from_chips: Sequence[str] | None = None,
) -> list[dict[str, OpMapping]]:  # fmt: skip
    """The best mapping of the same model each source chip found (:func:`transferred`'s
    sources, nearest first; ops by name), re-legalized for ``chip`` as :func:`transferred`
    does; a chip with no trial of this model (or none left once re-legalized) gives none.

    Raises
    ------
    hwsim.studies.optimize.db.DbError
        A name of ``from_chips`` no chip of ``db`` has.
    """
    names = set(graph.order)
    out: list[dict[str, OpMapping]] = []
    for fp, _, _ in _sources(db, chip, k, from_chips):
        for trial in _ranked(db.trials(chip_fingerprint=fp, model_sha256=model_sha256), model_sha256):
            cand = _relegalized(chip, graph, table, _by_name(trial.signatures, names))
            if cand:
                out.append(cand)
                break
    return out
