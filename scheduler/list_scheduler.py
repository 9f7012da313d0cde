"""A list scheduler over (unit, core) slots, shared by the affinity-locality policy and the
EFT/single-unit baselines.

Ops are taken in decreasing upward rank (the longest path to an exit, with each op's mean cost
over the units that can run it and the mean transfer time of its out-edges), ties broken by
the graph's topological order, so every op comes after its predecessors. Each op is appended
to a core; its earliest start is when every input tensor is present in the core's domain.
A tensor moved to a domain once serves every later consumer there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.schedule import Placement, Schedule, implied_transfers, tensor_bytes, transfer_ns

__all__ = ["Candidate", "Chooser", "list_schedule", "upward_rank"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to run an op: on ``unit``/``core`` from ``start_ns`` to ``finish_ns``.

    ``moved_bytes`` are the input bytes that would cross domains to get there.
    """

    unit: str
    core: int
    start_ns: float
    finish_ns: float
    moved_bytes: int


#: Picks one candidate (and says why) for an op type among the best core of each unit.
Chooser = Callable[[str, list[Candidate]], tuple[Candidate, str]]


def upward_rank(graph: ModelGraph, chip: Chip, table: CostTable) -> dict[str, float]:
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
    producer = graph.producer[tensor]
    for t in graph.op(producer).outputs:
        if t.name == tensor:
            return t.nbytes
    raise KeyError(tensor)


def list_schedule(
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
    rank = upward_rank(graph, chip, table)
    topo_index = {n: i for i, n in enumerate(graph.order)}
    queue = sorted(graph.order, key=lambda n: (-rank[n], topo_index[n]))

    units = {u.name: u for u in chip.units}
    core_free: dict[tuple[str, int], float] = {(u.name, c): 0.0 for u in chip.units for c in range(u.cores)}
    core_ops: dict[tuple[str, int], list[str]] = {k: [] for k in core_free}
    host = chip.host
    default_dtype = None if table.precision == "model" else table.precision
    # Where each tensor is (domain -> time it is there) and how big it is.
    present: dict[str, dict[str, float]] = {}
    size: dict[str, int] = {}
    for tin in graph.inputs:
        present[tin.name] = {host: 0.0}
        size[tin.name] = tensor_bytes(tin, default_dtype)
    placements: dict[str, Placement] = {}
    link_ns: dict[tuple[str, str, int], float] = {}

    def arrival(tensor: str, dst: str) -> float:
        where = present[tensor]
        if dst in where:
            return where[dst]
        best = float("inf")
        for src, t0 in where.items():
            key = (src, dst, size[tensor])
            if key not in link_ns:
                link_ns[key] = transfer_ns(chip, src, dst, size[tensor])
            best = min(best, t0 + link_ns[key])
        return best

    for name in queue:
        op = graph.op(name)
        row = table.costs[name]
        names = allowed_units[name] if allowed_units is not None else tuple(row)
        inputs = [t.name for t in op.activations if t.name in present]
        ready_by_domain: dict[str, tuple[float, int]] = {}
        candidates: list[Candidate] = []
        for uname in names:
            unit = units[uname]
            dom = unit.domain
            if dom not in ready_by_domain:
                ready, moved = 0.0, 0
                for t in inputs:
                    ready = max(ready, arrival(t, dom))
                    if dom not in present[t]:
                        moved += size[t]
                ready_by_domain[dom] = (ready, moved)
            ready, moved = ready_by_domain[dom]
            cost = row[uname].latency_ns
            core = min(range(unit.cores), key=lambda c: (max(core_free[(uname, c)], ready), c))
            start = max(core_free[(uname, core)], ready)
            candidates.append(Candidate(uname, core, start, start + cost, moved))
        chosen, reason = choose(op.op_type, candidates)
        dom = units[chosen.unit].domain
        for t in inputs:
            if dom not in present[t]:
                present[t][dom] = arrival(t, dom)
        core_free[(chosen.unit, chosen.core)] = chosen.finish_ns
        core_ops[(chosen.unit, chosen.core)].append(name)
        placements[name] = Placement(name, chosen.unit, chosen.core, chosen.start_ns, chosen.finish_ns, reason)
        dt = row[chosen.unit].dtype
        for tout in op.outputs:
            present[tout.name] = {dom: chosen.finish_ns}
            size[tout.name] = tensor_bytes(tout, dt)

    unit_of = {n: p.unit for n, p in placements.items()}
    transfers = implied_transfers(graph, chip, table, unit_of)
    makespan = max((p.est_finish_ns for p in placements.values()), default=0.0)
    for tout in graph.outputs:
        if tout.name in present and host not in present[tout.name]:
            makespan = max(makespan, arrival(tout.name, host))
    order = {k: tuple(v) for k, v in core_ops.items()}
    return Schedule(policy, placements, order, transfers, makespan)
