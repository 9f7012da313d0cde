"""One trial: a candidate (transforms + per-op signatures) simulated on a chip.

The candidate is rewritten in the searching process (:func:`apply_transforms`, cached by
prefix) and simulated in a worker: :func:`evaluate` is a plain module-level function of a
picklable :class:`Task`, so that a process pool or Dask runs it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from cost_models.mapping import OpMapping
from hwsim.pipeline import RunResult, run_graph
from hwsim.studies.sweep import OBJECTIVES, Constraint, feasibility
from hwsim.studies.sweep_store import StoredPoint

if TYPE_CHECKING:
    import onnx

    from chips.schema import Chip
    from graph_ir.ir import ModelGraph

__all__ = ["Candidate", "Outcome", "Task", "apply_transforms", "candidate_key", "evaluate", "evaluate_batch", "fusion_view"]

Signatures = tuple[tuple[str, tuple[tuple[str, object], ...]], ...]


def candidate_key(transforms: Sequence[str], signatures: Mapping[str, Mapping[str, object]]) -> str:
    """sha256 of the canonical JSON of (transforms, signatures): what a rerun recognizes.

    >>> candidate_key(["fold_bn"], {}) == candidate_key(("fold_bn",), {})
    True
    """
    plain = {"transforms": list(transforms), "signatures": {op: dict(s) for op, s in signatures.items()}}
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Candidate:
    """Rewrite passes applied (in order) and the non-default signature of each mapped op."""

    transforms: tuple[str, ...] = ()
    signatures: Signatures = ()

    @classmethod
    def of(cls, transforms: Sequence[str], signatures: Mapping[str, Mapping[str, object]]) -> Candidate:
        sigs = tuple(sorted((op, tuple(sorted(s.items()))) for op, s in signatures.items() if s))
        return cls(tuple(transforms), sigs)

    def signature_dict(self) -> dict[str, dict[str, object]]:
        return {op: dict(s) for op, s in self.signatures}

    def mapping(self) -> dict[str, OpMapping]:
        """The :class:`cost_models.mapping.OpMapping` of each mapped op."""
        return {op: OpMapping.from_dict(dict(s)) for op, s in self.signatures}

    @property
    def key(self) -> str:
        return candidate_key(self.transforms, self.signature_dict())

    def with_op(self, op: str, signature: Mapping[str, object]) -> Candidate:
        """This candidate with ``op``'s signature replaced."""
        sigs = self.signature_dict()
        sigs[op] = dict(signature)
        return Candidate.of(self.transforms, sigs)


@dataclass(frozen=True, slots=True)
class Task:
    """What a worker needs for one trial: the graph's ONNX bytes (already rewritten by
    ``candidate.transforms``), the chip, the precision, the candidate and the objective."""

    model_bytes: bytes
    model_name: str
    chip: Chip
    precision: str
    candidate: Candidate
    objective: tuple[tuple[str, float], ...]
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """A trial's simulated result (``error``: it could not be simulated)."""

    key: str
    objective: float
    latency_ms: float
    energy_mj: float
    peak_memory_bytes: int
    feasible: bool
    error: str | None
    seconds: float
    #: The schedule's placement, (op, unit) by op name (empty: not simulated in this search,
    #: such as a trial read back from the database): what the next candidates' fusion knobs
    #: are checked against (:mod:`hwsim.studies.optimize.placed`).
    placement: tuple[tuple[str, str], ...] = ()
    #: The placement of every schedule the run simulated while choosing its own
    #: (:attr:`hwsim.policy_check.ScheduleChoice.simulated`; None: not known here): a ``fusion``
    #: knob that changes the fusion of none of them would have left the run exactly as it was.
    simulated: tuple[tuple[tuple[str, str], ...], ...] | None = None


@lru_cache(maxsize=8)
def graph_of(model_bytes: bytes, name: str) -> ModelGraph:
    """The graph of serialized ONNX bytes (cached per worker: a round shares its graph)."""
    import onnx

    from graph_ir.onnx_import import from_model_proto

    return from_model_proto(onnx.load_from_string(model_bytes), name=name)


def _values(result: RunResult) -> dict[str, float]:
    from hwsim.report.summary import build_summary
    from hwsim.studies.sweep import ObjectiveUnavailable, available_objectives

    summary = build_summary(result)
    out: dict[str, float] = {}
    for name in available_objectives():
        try:
            out[name] = OBJECTIVES[name].read(summary)
        except ObjectiveUnavailable:
            continue
    return out


def evaluate(task: Task) -> Outcome:
    """Simulate one trial; a candidate the chip cannot run is an outcome with its error."""
    from chips.schema import ChipError
    from cost_models.table import UnplaceableError
    from graph_ir.ir import ModelError

    key = task.candidate.key
    start = time.perf_counter()
    try:
        graph = graph_of(task.model_bytes, task.model_name)
        result = run_graph(graph, task.chip, task.precision, mapping=task.candidate.mapping())
    except (UnplaceableError, ChipError, ModelError) as exc:
        return Outcome(key, float("inf"), float("inf"), float("inf"), 0, False, str(exc), time.perf_counter() - start)
    values = _values(result)
    objective = sum(w * values[name] for name, w in task.objective)
    stored = StoredPoint(key, tuple(values.items()), None, 0.0)
    feasible, _ = feasibility(stored, task.constraints)
    peak = round(values.get("peak_dram_mib", 0.0) * (1 << 20))
    placement, simulated = fusion_view(result)
    return Outcome(key, objective, values["latency_ms"], values["energy_mj"], peak, feasible, None,
                   time.perf_counter() - start, placement, simulated)  # fmt: skip


def fusion_view(result: RunResult) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[tuple[str, str], ...], ...] | None]:
    """What the next candidates' fusion knobs are judged against: the run's placement, (op, unit)
    by op name, and that of every schedule it simulated while choosing it."""
    placement = tuple(sorted((n, p.unit) for n, p in result.schedule.placements.items()))
    return placement, result.choice.simulated if result.choice is not None else None


def evaluate_batch(tasks: Sequence[Task]) -> list[Outcome]:
    """Evaluate tasks one after the other (one engine task)."""
    return [evaluate(t) for t in tasks]


def apply_transforms(
    model: onnx.ModelProto, chip: Chip, names: Sequence[str], cache: dict[tuple[str, ...], onnx.ModelProto]
) -> tuple[tuple[str, ...], onnx.ModelProto]:
    """Apply ``names`` in order where they apply; returns the passes that applied and the model.

    ``cache`` maps an applied sequence to its model (the key ``()`` must hold ``model``), so a
    sequence that extends a known one costs one pass.
    """
    from graph_ir.rewrites import get_pass
    from hwsim.studies.rewrite import pass_options

    options = pass_options(chip)
    done: tuple[str, ...] = ()
    current = cache.setdefault((), model)
    for name in names:
        nxt = (*done, name)
        if nxt not in cache:
            result = get_pass(name)(current, options)
            if not result.applied:
                continue
            cache[nxt] = result.model
        done, current = nxt, cache[nxt]
    return done, current
