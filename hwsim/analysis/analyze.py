"""What a trace means: per-unit utilization, the critical path, cross-domain traffic, energy.

The critical path is the longest chain of data dependencies through the simulated run, each
op weighted by how long it actually ran and each edge by how long its DMA transfer took (queue
waits and waits for a busy core excluded): the latency no scheduler could beat with these op
placements, however many cores there were.
"""

from __future__ import annotations

from dataclasses import dataclass

from chips.schema import Chip
from chips.units import PJ_PER_MJ, PS_PER_MS
from graph_ir.ir import ModelGraph
from hwsim.analysis.busy import busy_union_ps
from hwsim.analysis.energy import run_energy
from hwsim.sim.engine import Trace

__all__ = ["Analysis", "TrafficRow", "UnitUsage", "analyze"]


@dataclass(frozen=True, slots=True)
class UnitUsage:
    """How busy one unit was. ``busy_ms`` is core-time (summed over cores);
    ``active_ms`` is wall time with at least one core busy; energy in millijoules."""

    unit: str
    kind: str
    cores: int
    ops: int
    busy_ms: float
    active_ms: float
    utilization: float
    energy_mj: float


@dataclass(frozen=True, slots=True)
class TrafficRow:
    src_domain: str
    dst_domain: str
    bytes: int
    transfers: int


@dataclass(frozen=True, slots=True)
class Analysis:
    latency_ms: float
    energy_mj: float
    dram_energy_mj: float
    dram_bytes: int
    units: tuple[UnitUsage, ...]
    critical_path: tuple[str, ...]
    critical_path_ms: float
    traffic: tuple[TrafficRow, ...]


def _critical_path(graph: ModelGraph, chip: Chip, trace: Trace) -> tuple[tuple[str, ...], int]:
    dur = {r.op: r.duration_ps for r in trace.ops}
    domain_of = {r.op: chip.unit(r.unit).domain for r in trace.ops}
    xfer = {(r.tensor, r.dst_domain): r.end_ps - r.start_ps for r in trace.transfers}
    host = chip.host
    dist: dict[str, int] = {}
    back: dict[str, str | None] = {}
    g = graph.g
    for n in graph.order:
        op = graph.op(n)
        best, arg = 0, None
        for t in op.activations:  # graph inputs carried in from the host
            if t.name not in graph.producer:
                best = max(best, xfer.get((t.name, domain_of[n]), 0))
        for p in g.predecessors(n):
            edge = max(xfer.get((t, domain_of[n]), 0) for t in g.edges[p, n]["tensors"])
            if dist[p] + edge > best or (dist[p] + edge == best and arg is None):
                best, arg = dist[p] + edge, p
        dist[n] = best + dur[n]
        back[n] = arg
    if not dist:
        return (), 0
    end_len: dict[str, int] = {}
    graph_outputs = {o.name for o in graph.outputs}
    for n in graph.order:
        out = max(
            (xfer.get((t.name, host), 0) for t in graph.op(n).outputs if t.name in graph_outputs),
            default=0,
        )
        end_len[n] = dist[n] + out
    index = {n: i for i, n in enumerate(graph.order)}
    last = max(graph.order, key=lambda n: (end_len[n], -index[n]))
    path = []
    cur: str | None = last
    while cur is not None:
        path.append(cur)
        cur = back[cur]
    return tuple(reversed(path)), end_len[last]


def analyze(graph: ModelGraph, chip: Chip, trace: Trace) -> Analysis:
    """Summarize a trace (see the module docstring for the critical path's definition)."""
    makespan = trace.makespan_ps
    energy = run_energy(chip, trace)
    units = []
    for u in chip.units:
        recs = [r for r in trace.ops if r.unit == u.name]
        busy = sum(r.duration_ps * len(r.all_cores) for r in recs)
        active = busy_union_ps([(r.start_ps, r.end_ps) for r in recs])
        util = busy / (u.cores * makespan) if makespan else 0.0
        units.append(
            UnitUsage(u.name, u.kind, u.cores, len(recs), busy / PS_PER_MS, active / PS_PER_MS,
                      min(1.0, util), energy.unit_pj[u.name] / PJ_PER_MJ)
        )  # fmt: skip
    rows: dict[tuple[str, str], list[int]] = {}
    for r in trace.transfers:
        row = rows.setdefault((r.src_domain, r.dst_domain), [0, 0])
        row[0] += r.bytes
        row[1] += 1
    traffic = tuple(TrafficRow(s, d, b, n) for (s, d), (b, n) in sorted(rows.items()))
    path, length = _critical_path(graph, chip, trace)
    return Analysis(
        latency_ms=makespan / PS_PER_MS,
        energy_mj=energy.total_pj / PJ_PER_MJ,
        dram_energy_mj=energy.dram_pj / PJ_PER_MJ,
        dram_bytes=energy.dram_bytes,
        units=tuple(units),
        critical_path=path,
        critical_path_ms=length / PS_PER_MS,
        traffic=traffic,
    )

