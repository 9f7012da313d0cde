"""The staged search of ``hwsim optimize``: graph rewrites, then per-op mapping signatures.

Every trial is simulated once and stored in the experience database at once (keyed by the
chip's fingerprint, the model's sha256 and the candidate's key); a rerun with the same database
replays the same search and reuses the stored results instead of simulating again. The search
is deterministic for a given seed and database content. Ctrl-C (``KeyboardInterrupt``) ends it
early with everything found so far (:attr:`SearchResult.interrupted`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hwsim.studies.optimize.db import ExperienceDB, Trial
from hwsim.studies.optimize.evaluate import Candidate, Outcome, Task, evaluate
from hwsim.studies.optimize.features import chip_features, graph_features, op_features

if TYPE_CHECKING:
    import onnx

    from chips.schema import Chip
    from cost_models.mapping import OpMapping
    from cost_models.table import CostTable
    from graph_ir.ir import ModelGraph
    from hwsim.studies.optimize.config import SearchConfig
    from hwsim.studies.optimize.prior import Prior

__all__ = ["Budget", "Record", "Search", "SearchInputs", "SearchResult", "evaluate_round", "search_id"]

log = logging.getLogger("hwsim")


@dataclass(frozen=True, slots=True)
class SearchInputs:
    """What a search is about: the chip, the original model and how to search."""

    chip: Chip
    model: onnx.ModelProto
    model_name: str
    model_sha256: str
    config: SearchConfig
    precision: str = "int8"
    seed: int = 0
    transfer_from: tuple[str, ...] = ()
    #: The folder of the model file: where its external data files are (None: not from a file).
    model_dir: Path | None = None


@dataclass(frozen=True, slots=True)
class Record:
    """One trial of this search, in the order the search made it."""

    index: int
    stage: str
    candidate: Candidate
    outcome: Outcome
    parent_latency_ms: float
    trial_id: int | None
    reused: bool
    transferred: bool = False

    def rank(self) -> tuple[bool, float, int]:
        """Sort key: feasible first, then the objective, then the earlier trial."""
        return (not self.outcome.feasible, self.outcome.objective, self.index)


@dataclass(slots=True)
class Budget:
    """Trials left per stage (None: the stage's own sizes bound it) and the wall-clock deadlines.

    ``transferred`` counts the trials of stage ``transfer``; they come out of stage 2's share, never
    stage 1's, so stage 1 proposes the same graphs with transfer as without (its exploration is
    not displaced).
    """

    total: int | None
    graph_share: float
    deadline_s: float | None = None
    graph_deadline_s: float | None = None
    used: int = 0
    transferred: int = 0

    def graph_left(self, cap: int) -> int:
        if self._late(self.graph_deadline_s):
            return 0
        if self.total is None:
            return cap
        return max(0, min(cap, int(self.total * self.graph_share) - (self.used - self.transferred) + 1))

    def kernel_left(self, cap: int) -> int:
        if self._late(self.deadline_s):
            return 0
        return cap if self.total is None else max(0, min(cap, self.total - self.used))

    @staticmethod
    def _late(deadline: float | None) -> bool:
        return deadline is not None and time.monotonic() >= deadline


@dataclass(slots=True)
class SearchResult:
    """What a search found: every record, the baseline, the beam, transfer hits, notes."""

    records: list[Record] = field(default_factory=list)
    beam: list[Record] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    measured_ms: dict[str, float] = field(default_factory=dict)
    #: Candidates proposed but not simulated nor counted as trials: once their inert fusion
    #: knobs were dropped (:meth:`Search.resolve`) they were a candidate this search had tried.
    skipped: int = 0

    @property
    def baseline(self) -> Record:
        return self.records[0]

    @property
    def best(self) -> Record:
        return min(self.records, key=Record.rank)

    @property
    def transfer_hits(self) -> tuple[int, int]:
        """(transferred candidates that beat their parent, transferred candidates tried)."""
        tried = [r for r in self.records if r.transferred]
        return sum(r.outcome.latency_ms < r.parent_latency_ms for r in tried), len(tried)


def search_id(chip_fingerprint: str, model_sha256: str, config: SearchConfig) -> str:
    import hashlib

    text = f"{chip_fingerprint}\n{model_sha256}\n{config.model_dump_json()}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def evaluate_round(executor: Executor | None, tasks: Sequence[Task], on_done: Callable[[Outcome], None]) -> None:
    """Evaluate ``tasks`` on ``executor`` (None: in this process), calling ``on_done`` as each
    finishes (so it is stored at once)."""
    if executor is None:
        for t in tasks:
            on_done(evaluate(t))
        return
    futures: list[Future[Outcome]] = [executor.submit(evaluate, t) for t in tasks]
    try:
        for fut in as_completed(futures):
            on_done(fut.result())
    finally:
        for fut in futures:
            fut.cancel()


class Search:
    """One search's state: the database, the executor, the records so far."""

    def __init__(self, inputs: SearchInputs, db: ExperienceDB, executor: Executor | None, budget: Budget,
                 progress: Callable[[int], None] = lambda n: None) -> None:  # fmt: skip
        from hwsim.report.provenance import chip_sha256, hwsim_version

        self.inputs, self.db, self.executor, self.budget, self.progress = inputs, db, executor, budget, progress
        self.chip_fp = chip_sha256(inputs.chip)
        self.search_id = search_id(self.chip_fp, inputs.model_sha256, inputs.config)
        self.done: dict[str, Trial] = db.done_keys(self.chip_fp, inputs.model_sha256)
        self.chip_feats = chip_features(inputs.chip)
        self.version = hwsim_version()
        self.rng = random.Random(inputs.seed)
        self.result = SearchResult()
        self.bytes_of: dict[tuple[str, ...], bytes] = {(): inputs.model.SerializeToString()}
        self.prior: Prior | None = None
        self.tables: dict[tuple[str, ...], tuple[ModelGraph, CostTable]] = {}
        #: :meth:`fusion_view` of runs simulated again in this process, by candidate key.
        self.views: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {}
        #: Per graph (transform sequence), the (op, signature) pairs stage 2 has proposed.
        self.proposed: dict[tuple[str, ...], set[tuple[str, OpMapping]]] = {}
        #: Whether stage 2 has tried the whole-unit core counts (once a search).
        self.core_masks_tried = False

    def graph_and_table(self, transforms: tuple[str, ...]) -> tuple[ModelGraph, CostTable]:
        """The graph rewritten by ``transforms`` (a sequence proposed before) and its cost table."""
        from cost_models.table import cost_table
        from hwsim.studies.optimize.evaluate import graph_of

        if transforms not in self.tables:
            graph = graph_of(self.bytes_of[transforms], self.inputs.model_name)
            self.tables[transforms] = (graph, cost_table(graph, self.inputs.chip, self.inputs.precision))
        return self.tables[transforms]

    def fusion_view(self, record: Record) -> tuple[dict[str, str], list[dict[str, str]]] | None:
        """op -> unit of the schedule ``record`` ran with, and of every schedule its run
        simulated while choosing it (None: it could not run): from its outcome, else simulated
        again here once (a trial read back from the database)."""
        o = record.outcome
        if o.error is not None:
            return None
        key = record.candidate.key
        if key not in self.views:
            placement, simulated = o.placement, o.simulated
            if not placement or simulated is None:
                from hwsim.pipeline import run_graph
                from hwsim.studies.optimize.evaluate import fusion_view

                graph, _ = self.graph_and_table(record.candidate.transforms)
                run = run_graph(graph, self.inputs.chip, self.inputs.precision, mapping=record.candidate.mapping())
                placement, simulated = fusion_view(run)
            self.views[key] = (dict(placement), [dict(p) for p in simulated or ()])
        return self.views[key]

    def resolve(self, candidate: Candidate, parent: Record) -> Candidate:
        """``candidate`` (on ``parent``'s graph) without the ``fusion`` knobs that change nothing
        on the placement it runs with: ``parent``'s schedule, the candidate's unit pins applied
        (:func:`hwsim.studies.optimize.placed.resolved`)."""
        from hwsim.studies.optimize.placed import resolved

        view = self.fusion_view(parent)
        if view is None:
            return candidate
        graph, _ = self.graph_and_table(candidate.transforms)
        return resolved(candidate, graph, self.inputs.chip, self.inputs.precision, view[0])

    def same_run(self, raw: Candidate, resolved: Candidate) -> bool | None:
        """Whether ``raw`` would simulate exactly as ``resolved`` (``raw`` less some ``fusion``
        knobs), judged from ``resolved``'s run in this search (None: not simulated yet): yes
        when the knobs change the fusion of none of the schedules that run simulated
        (:func:`hwsim.studies.optimize.placed.same_fusion`)."""
        from hwsim.studies.optimize.placed import same_fusion

        twin = next((r for r in self.result.records if r.candidate.key == resolved.key), None)
        if twin is None:
            return None
        view = self.fusion_view(twin)
        if view is None or not view[1]:
            return False
        graph, _ = self.graph_and_table(raw.transforms)
        return same_fusion(graph, self.inputs.chip, self.inputs.precision, view[1], raw.mapping(), resolved.mapping())

    def task(self, candidate: Candidate) -> Task:
        i = self.inputs
        return Task(self.bytes_of[candidate.transforms], i.model_name, i.chip, i.precision, candidate,
                    i.config.objective_weights(), i.config.constraint_list())  # fmt: skip

    def run_round(self, stage: str, candidates: Sequence[Candidate], parent_latency_ms: float,
                  transferred: frozenset[str] = frozenset()) -> list[Record]:  # fmt: skip
        """Evaluate ``candidates`` (stored ones reused), store each new trial at once; the
        records come back, and are numbered, in the candidates' order (not the order the workers
        finish in: a search's trial numbers are the same on every run)."""
        done: dict[str, tuple[Outcome, int | None, bool]] = {}
        todo = []
        for c in candidates:
            old = self.done.get(c.key)
            if old is None:
                todo.append(c)
            else:
                done[c.key] = (_outcome(old), old.id, True)
        cands = {c.key: c for c in todo}

        def store(o: Outcome) -> None:
            trial = self._trial(stage, cands[o.key], o, parent_latency_ms)
            tid = self.db.add(trial)
            self.done[o.key] = trial
            done[o.key] = (o, tid, False)
            self.progress(1)

        self.progress(len(done))
        ordered: list[Record] = []
        try:
            evaluate_round(self.executor, [self.task(c) for c in todo], store)
        finally:
            for c in candidates:
                if c.key in done:
                    o, tid, reused = done[c.key]
                    ordered.append(self._record(stage, c, o, parent_latency_ms, tid, reused, transferred))
            self.result.records.extend(ordered)
        return ordered

    def _record(self, stage: str, c: Candidate, o: Outcome, parent_ms: float, tid: int | None, reused: bool,
                transferred: frozenset[str]) -> Record:  # fmt: skip
        self.budget.used += 1
        self.budget.transferred += stage == "transfer"
        return Record(self.budget.used - 1, stage, c, o, parent_ms, tid, reused, c.key in transferred)

    def _trial(self, stage: str, c: Candidate, o: Outcome, parent_ms: float) -> Trial:
        import datetime

        i = self.inputs
        graph, table = self.graph_and_table(c.transforms)
        sigs = c.signature_dict()
        return Trial(
            chip_fingerprint=self.chip_fp, chip_name=i.chip.name, chip_features=self.chip_feats,
            model_sha256=i.model_sha256, model_name=i.model_name, graph_features=graph_features(graph),
            search_id=self.search_id, stage=stage, candidate_key=c.key, transforms=c.transforms, signatures=sigs,
            op_features={op: op_features(graph.op(op), table) for op in sigs},
            objective=o.objective, latency_ms=o.latency_ms, energy_mj=o.energy_mj,
            peak_memory_bytes=o.peak_memory_bytes, parent_latency_ms=parent_ms, feasible=o.feasible, error=o.error,
            hwsim_version=self.version, created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(),
        )  # fmt: skip


def _outcome(t: Trial) -> Outcome:
    """A stored trial's result as an outcome (resume: not simulated again)."""
    return Outcome(t.candidate_key, t.objective, t.latency_ms, t.energy_mj, t.peak_memory_bytes, t.feasible, t.error, 0.0)


