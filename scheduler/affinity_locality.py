"""The one-pass ``affinity-list`` policy (the default before the search): affinity plus locality.

Each op goes to the unit its type prefers (the chip's affinity table) unless another unit
finishes it clearly earlier, either because it is much faster or because the preferred unit
would first have to wait for tensors to cross domains. "Clearly" means by more than ``slack``
times the op's own duration. Because input transfers are part of each candidate's finish
time, neighbours tend to stay in one memory domain.
"""

from __future__ import annotations

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.list_scheduler import Candidate, Chooser, list_schedule
from scheduler.schedule import Schedule

__all__ = ["DEFAULT_SLACK", "affinity_locality", "affinity_rank"]

DEFAULT_SLACK = 0.1


def affinity_rank(chip: Chip, op_type: str, unit: str) -> int:
    """Position of ``unit`` in the chip's preference list for ``op_type`` (unlisted: last).

    A unit matches an entry by its name or its kind.
    """
    kind = chip.unit(unit).kind
    prefs = chip.preference(op_type)
    for i, p in enumerate(prefs):
        if p == unit or p == kind:
            return i
    return len(prefs)


def _us(ns: float) -> str:
    return f"{ns / 1e3:.1f} us"


def make_chooser(chip: Chip, slack: float) -> Chooser:
    order = {u.name: i for i, u in enumerate(chip.units)}
    ranks: dict[tuple[str, str], int] = {}

    def rank(op_type: str, unit: str) -> int:
        key = (op_type, unit)
        if key not in ranks:
            ranks[key] = affinity_rank(chip, op_type, unit)
        return ranks[key]

    def choose(op_type: str, cands: list[Candidate]) -> tuple[Candidate, str]:
        fastest = min(cands, key=lambda c: (c.finish_ns, rank(op_type, c.unit), order[c.unit]))
        pref = min(cands, key=lambda c: (rank(op_type, c.unit), c.finish_ns, order[c.unit]))
        if pref is fastest:
            return pref, f"affinity: {pref.unit} is preferred for {op_type} and finishes first"
        duration = max(fastest.finish_ns - fastest.start_ns, pref.finish_ns - pref.start_ns)
        late = pref.finish_ns - fastest.finish_ns
        if late <= slack * duration:
            return pref, (
                f"affinity: {pref.unit} is preferred for {op_type}; {_us(late)} later than "
                f"{fastest.unit} is within slack"
            )
        if pref.moved_bytes > fastest.moved_bytes and pref.start_ns > fastest.start_ns:
            return fastest, (
                f"locality: {fastest.unit} finishes {_us(late)} before preferred {pref.unit}, "
                f"which would wait for {pref.moved_bytes - fastest.moved_bytes} B to cross domains"
            )
        return fastest, (
            f"faster: {fastest.unit} finishes {_us(late)} before preferred {pref.unit}"
        )

    return choose


def affinity_locality(
    graph: ModelGraph, chip: Chip, table: CostTable, slack: float = DEFAULT_SLACK
) -> Schedule:
    """Schedule with the affinity-plus-locality rule (see the module docstring)."""
    return list_schedule(graph, chip, table, make_chooser(chip, slack), "affinity-list")
