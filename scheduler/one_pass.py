"""The one-pass list scheduler on models, over (unit, core) slots: the model form of the
``affinity-list``, ``eft`` and ``single-unit-list`` policies (each gives it a :data:`Chooser`).

Ops are taken in decreasing upward rank (the longest path to an exit, with each op's mean cost
over the units that can run it and the mean transfer time of its out-edges), ties broken by
the graph's topological order, so every op comes after its predecessors. Each op is appended
to a core; its earliest start is when every input tensor is present in the core's domain.
A tensor moved to a domain once serves every later consumer there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from chips.schema import Chip, Unit
from cost_models.base import OpCost
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.schedule import Placement, Schedule, implied_transfers, tensor_bytes, transfer_ns

__all__ = [
    "Candidate",
    "Chooser",
    "TensorPlaces",
    "earliest_finish",
    "graph_tensor_bytes",
    "model_upward_rank",
    "one_pass_schedule",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to run an op: on ``unit``/``core`` from ``start_ns`` to ``finish_ns``.

    ``moved_bytes`` are the input bytes (on an abstract problem: the edge volume) that would
    cross domains to get there.
    """

    unit: str
    core: int
    start_ns: float
    finish_ns: float
    moved_bytes: float


#: Picks one candidate (and says why) for an op type among the best core of each unit.
Chooser = Callable[[str, list[Candidate]], tuple[Candidate, str]]


def earliest_finish(op_type: str, cands: list[Candidate]) -> tuple[Candidate, str]:
    """The :data:`Chooser` of ``eft``: the earliest finish (ties: the unit's name)."""
    best = min(cands, key=lambda c: (c.finish_ns, c.unit))
    return best, f"earliest finish on {best.unit}"


def model_upward_rank(graph: ModelGraph, chip: Chip, table: CostTable) -> dict[str, float]:
    """Longest mean-cost path (ns) from each op to an exit, transfers included."""
    mean_cost = {
        n: sum(c.latency_ns for c in row.values()) / len(row) for n, row in table.costs.items()
    }
    domains = {u.domain for u in chip.units}
    links = [chip.link_between(a, b) for a in domains for b in domains if a != b]
    bw = [lk.bandwidth_gbps for lk in links if lk is not None]
    lat = [lk.latency_ns for lk in links if lk is not None]
    mean_bw = sum(bw) / len(bw) if bw else 0.0
    mean_lat = sum(lat) / len(lat) if lat else 0.0
    # Probability that two ops land in different domains, if placed at random.
    cross = 1.0 - 1.0 / len(domains)

    rank: dict[str, float] = {}
    g = graph.g
    for n in reversed(graph.order):
        best = 0.0
        for s in g.successors(n):
            comm = 0.0
            if mean_bw:
                nbytes = sum(graph_tensor_bytes(graph, t) for t in g.edges[n, s]["tensors"])
                comm = cross * (nbytes / mean_bw + mean_lat)
            best = max(best, comm + rank[s])
        rank[n] = mean_cost[n] + best
    return rank


def graph_tensor_bytes(graph: ModelGraph, tensor: str) -> int:
    """Bytes of ``tensor`` in the model's own dtype (as its producer declares it)."""
    producer = graph.producer[tensor]
    for t in graph.op(producer).outputs:
        if t.name == tensor:
            return t.nbytes
    raise KeyError(tensor)


class TensorPlaces:
    """Where each tensor is (domain -> time it is there) and its bytes.

    A tensor moved to a domain once serves every later consumer there; it arrives in a new
    domain by its fastest copy.
    """

    __slots__ = ("_chip", "_link_ns", "present", "size")

    def __init__(self, chip: Chip) -> None:
        self._chip = chip
        self.present: dict[str, dict[str, float]] = {}
        self.size: dict[str, int] = {}
        self._link_ns: dict[tuple[str, str, int], float] = {}

    def __contains__(self, tensor: str) -> bool:
        return tensor in self.present

    def put(self, tensor: str, domain: str, time_ns: float, nbytes: int) -> None:
        """``tensor`` (``nbytes``) is written in ``domain`` at ``time_ns``."""
        self.present[tensor] = {domain: time_ns}
        self.size[tensor] = nbytes

    def arrival(self, tensor: str, dst: str) -> float:
        """When ``tensor`` can be in domain ``dst`` (ns)."""
        where = self.present[tensor]
        if dst in where:
            return where[dst]
        best = float("inf")
        for src, t0 in where.items():
            key = (src, dst, self.size[tensor])
            if key not in self._link_ns:
                self._link_ns[key] = transfer_ns(self._chip, src, dst, self.size[tensor])
            best = min(best, t0 + self._link_ns[key])
        return best

    def ready(self, tensors: Iterable[str], dst: str) -> tuple[float, int]:
        """When every one of ``tensors`` can be in ``dst`` (ns), and the bytes that must move there."""
        ready, moved = 0.0, 0
        for t in tensors:
            ready = max(ready, self.arrival(t, dst))
            if dst not in self.present[t]:
                moved += self.size[t]
        return ready, moved

    def fetch(self, tensors: Iterable[str], dst: str) -> None:
        """Copy ``tensors`` to ``dst`` (each at its arrival time)."""
        for t in tensors:
            if dst not in self.present[t]:
                self.present[t][dst] = self.arrival(t, dst)


def _candidates(
    units: Mapping[str, Unit],
    unit_names: Iterable[str],
    row: Mapping[str, OpCost],
    inputs: list[str],
    places: TensorPlaces,
    core_free: Mapping[tuple[str, int], float],
) -> list[Candidate]:
    """Each unit's best core for one op: its earliest start once the inputs are in its domain."""
    ready_by_domain: dict[str, tuple[float, int]] = {}
    candidates: list[Candidate] = []
    for uname in unit_names:
        unit = units[uname]
        dom = unit.domain
        if dom not in ready_by_domain:
            ready_by_domain[dom] = places.ready(inputs, dom)
        ready, moved = ready_by_domain[dom]
        cost = row[uname].latency_ns
        core = min(range(unit.cores), key=lambda c: (max(core_free[(uname, c)], ready), c))
        start = max(core_free[(uname, core)], ready)
        candidates.append(Candidate(uname, core, start, start + cost, moved))
    return candidates


def one_pass_schedule(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    choose: Chooser,
    policy: str,
    allowed_units: Mapping[str, tuple[str, ...]] | None = None,
) -> Schedule:
    """Schedule ``graph`` op by op, letting ``choose`` pick among each unit's best core.

    ``allowed_units`` optionally restricts the units considered per op (defaults to every
    unit in the cost table's row for that op).
    """
    rank = model_upward_rank(graph, chip, table)
    topo_index = {n: i for i, n in enumerate(graph.order)}
    queue = sorted(graph.order, key=lambda n: (-rank[n], topo_index[n]))
    units = {u.name: u for u in chip.units}
    core_free: dict[tuple[str, int], float] = {(u.name, c): 0.0 for u in chip.units for c in range(u.cores)}
    core_ops: dict[tuple[str, int], list[str]] = {k: [] for k in core_free}
    host = chip.host
    default_dtype = None if table.precision == "model" else table.precision
    places = TensorPlaces(chip)
    for tin in graph.inputs:
        places.put(tin.name, host, 0.0, tensor_bytes(tin, default_dtype))
    placements: dict[str, Placement] = {}
    for name in queue:
        op = graph.op(name)
        row = table.costs[name]
        names = allowed_units[name] if allowed_units is not None else tuple(row)
        inputs = [t.name for t in op.activations if t.name in places]
        chosen, reason = choose(op.op_type, _candidates(units, names, row, inputs, places, core_free))
        dom = units[chosen.unit].domain
        places.fetch(inputs, dom)
        core_free[(chosen.unit, chosen.core)] = chosen.finish_ns
        core_ops[(chosen.unit, chosen.core)].append(name)
        placements[name] = Placement(name, chosen.unit, chosen.core, chosen.start_ns, chosen.finish_ns, reason)
        dt = row[chosen.unit].dtype
        for tout in op.outputs:
            places.put(tout.name, dom, chosen.finish_ns, tensor_bytes(tout, dt))
    unit_of = {n: p.unit for n, p in placements.items()}
    transfers = implied_transfers(graph, chip, table, unit_of)
    makespan = max((p.est_finish_ns for p in placements.values()), default=0.0)
    for tout in graph.outputs:
        if tout.name in places and host not in places.present[tout.name]:
            makespan = max(makespan, places.arrival(tout.name, host))
    order = {k: tuple(v) for k, v in core_ops.items()}
    return Schedule(policy, placements, order, transfers, makespan)
