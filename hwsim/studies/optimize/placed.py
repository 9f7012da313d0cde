"""Fusion legality from the placement a candidate runs with, not from what its units could run.

A ``fusion`` knob forces the fusion group holding its op on or off
(:func:`cost_models.fusion.fuse`, ``forced``). Whether such a group exists depends on the
placement: a conv and the ReLU after it fuse only when both run on the same unit. Stage 2 offers
the knob per op from what every unit could run (:func:`~hwsim.studies.optimize.stages.fusable_ops`);
in the incumbent's schedule the op's partners may sit on other units, and a candidate that pins
an op to a unit can break a group or make one.

:func:`inert_fusion` asks ``fuse`` itself, on the placement the candidate runs with (the parent's
schedule, the candidate's ``unit`` pins applied) and with the candidate's own cost table, which
of its fusion knobs change the fused costs; :func:`resolved` is the candidate less the others
(its *twin*). That placement is a guess: a pin moves other ops, and a run simulates several
schedules before it keeps one. :func:`same_fusion` makes it exact: given the placements of
every schedule the twin's run simulated (:attr:`hwsim.policy_check.ScheduleChoice.simulated`),
the candidate runs exactly as its twin when its knobs change the fusion of none of them. The
search skips a candidate only then (:meth:`hwsim.studies.optimize.search.Search.same_run`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from cost_models.mapping import OpMapping
from hwsim.studies.optimize.evaluate import Candidate

if TYPE_CHECKING:
    from chips.schema import Chip
    from cost_models.fusion import FusionResult
    from graph_ir.ir import ModelGraph

__all__ = ["dropped_fusion", "inert_fusion", "placed_units", "resolved", "same_fusion"]


def placed_units(placement: Mapping[str, str], mapping: Mapping[str, OpMapping]) -> dict[str, str]:
    """``placement`` (op -> unit) with each ``unit`` pin of ``mapping`` applied.

    >>> placed_units({"conv": "npu", "relu": "cpu"}, {"relu": OpMapping(unit="npu")})
    {'conv': 'npu', 'relu': 'npu'}
    """
    out = dict(placement)
    for op, m in mapping.items():
        if m.unit is not None and op in out:
            out[op] = m.unit
    return out


def _same(a: FusionResult, b: FusionResult) -> bool:
    """Whether two fusions of one graph leave the same costs and pairs (the run then simulates
    the same: the engine and the memory fit read the costs)."""
    return a.pairs == b.pairs and a.table.costs == b.table.costs


def _forced(mapping: Mapping[str, OpMapping]) -> dict[str, bool]:
    return {op: m.fusion for op, m in mapping.items() if m.fusion is not None}


def same_fusion(
    graph: ModelGraph, chip: Chip, precision: str, placements: Iterable[Mapping[str, str]],
    a: Mapping[str, OpMapping], b: Mapping[str, OpMapping],
) -> bool:  # fmt: skip
    """Whether mappings ``a`` and ``b``, alike but for ``fusion`` knobs, fuse each of
    ``placements`` (op -> unit) alike (:func:`cost_models.fusion.fuse`, mode ``auto``).

    With ``placements`` those of every schedule a run of ``b`` simulated
    (:attr:`hwsim.policy_check.ScheduleChoice.simulated`), yes means a run of ``a`` is that run
    exactly: the knobs enter a run only through those fusions (the cost table and the policies
    do not read them), so each simulation, and each choice made from it, is the same.
    """
    from cost_models.fusion import fuse
    from cost_models.table import cost_table

    fa, fb = _forced(a), _forced(b)
    if fa == fb:
        return True
    table = cost_table(graph, chip, precision, mapping={op: m for op, m in b.items() if not m.is_default()})
    return all(_same(fuse(graph, chip, table, p, "auto", fa), fuse(graph, chip, table, p, "auto", fb)) for p in placements)


def inert_fusion(
    graph: ModelGraph, chip: Chip, precision: str, placement: Mapping[str, str], mapping: Mapping[str, OpMapping]
) -> frozenset[str]:
    """The ops of ``mapping`` whose ``fusion`` knob changes nothing on ``placement``.

    ``placement`` is op -> unit of the schedule the candidate starts from; ``mapping``'s unit
    pins are applied to it (:func:`placed_units`) and its knobs cost the table
    (:func:`cost_models.table.cost_table`). A knob is inert when :func:`cost_models.fusion.fuse`
    (mode ``auto``, as a run fuses) gives the same costs and pairs without it, the other
    knobs kept: ``fusion=True`` on an op in no legal group, or in one ``auto`` fuses anyway;
    ``fusion=False`` on an op in no group ``auto`` keeps; a knob another member of its group
    overrides. Knobs are tested in op-name order, each without the ones found inert before it.
    """
    from cost_models.fusion import fuse
    from cost_models.table import cost_table

    forced = _forced(mapping)
    if not forced:
        return frozenset()
    mapped = {op: m for op, m in mapping.items() if not m.is_default()}
    table = cost_table(graph, chip, precision, mapping=mapped)
    placed = placed_units(placement, mapping)
    ref = fuse(graph, chip, table, placed, "auto", forced)
    inert: set[str] = set()
    for op in sorted(forced):
        rest = {k: v for k, v in forced.items() if k != op and k not in inert}
        if _same(fuse(graph, chip, table, placed, "auto", rest), ref):
            inert.add(op)
    return frozenset(inert)


def resolved(
    candidate: Candidate, graph: ModelGraph, chip: Chip, precision: str, placement: Mapping[str, str]
) -> Candidate:
    """``candidate`` without its inert ``fusion`` knobs (:func:`inert_fusion` on ``placement``,
    the schedule of the candidate's parent); the candidate itself when none is inert."""
    mapping = candidate.mapping()
    inert = inert_fusion(graph, chip, precision, placement, mapping)
    if not inert:
        return candidate
    sigs = {op: {k: v for k, v in s.items() if not (k == "fusion" and op in inert)} for op, s in candidate.signature_dict().items()}
    return Candidate.of(candidate.transforms, sigs)


def dropped_fusion(raw: Candidate, resolved: Candidate) -> frozenset[str]:
    """The ops whose ``fusion`` knob ``raw`` sets and ``resolved`` does not.

    >>> dropped_fusion(Candidate.of((), {"a": {"fusion": True}, "b": {"fusion": False}}),
    ...                Candidate.of((), {"b": {"fusion": False}}))
    frozenset({'a'})
    """
    kept = resolved.signature_dict()
    return frozenset(op for op, s in raw.signature_dict().items() if "fusion" in s and "fusion" not in kept.get(op, {}))
