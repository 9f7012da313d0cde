"""What a trace means: per-unit utilization, the critical path, cross-domain traffic, energy.

The critical path is the longest chain of data dependencies through the simulated run, each
op weighted by how long it actually ran and each edge by how long its DMA transfer took (queue
waits and waits for a busy core excluded): the latency no scheduler could beat with these op
placements, however many cores there were.
"""

from __future__ import annotations

from dataclasses import dataclass

from chips.schema import Chip
from graph_ir.ir import ModelGraph
from hwsim.sim.engine import Trace

__all__ = [
    "Analysis",
    "TrafficRow",
    "UnitUsage",
    "analyze",
    "busy_union_ps",
    "dram_bytes_moved",
    "power_timeline",
    "unit_busy_ps",
]

PS_PER_MS = 1e9


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


def busy_union_ps(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals.

    >>> busy_union_ps([(0, 10), (5, 15), (20, 25)])
    20
    """
    total, cur_start, cur_end = 0, None, None
    for s, e in sorted(intervals):
        if cur_end is None or s > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


def unit_busy_ps(trace: Trace, unit: str) -> int:
    """Core-time the unit was busy (a split op counts once per core it occupied), in ps."""
    return sum(r.duration_ps * len(r.all_cores) for r in trace.ops if r.unit == unit)


def dram_bytes_moved(chip: Chip, trace: Trace) -> int:
    """Bytes through the shared DRAM: ops in DRAM domains, plus each DRAM end of a transfer."""
    dram_domains = {d.name for d in chip.domains if d.kind == "dram"}
    unit_domain = {u.name: u.domain for u in chip.units}
    total = sum(r.dram_bytes for r in trace.ops if unit_domain[r.unit] in dram_domains)
    for r in trace.transfers:
        total += r.bytes * ((r.src_domain in dram_domains) + (r.dst_domain in dram_domains))
    return total


def power_timeline(chip: Chip, trace: Trace) -> tuple[tuple[int, float], ...]:
    """Power of the whole chip over the run: ``(time_ps, watts)`` at every change.

    Each unit draws ``active_w`` per busy core and ``idle_w`` while none of its cores is busy;
    the DRAM draws ``energy_pj_per_byte`` times the bytes per picosecond streaming through it
    (1 pJ/ps = 1 W). The last step is 0 W at the end of the run. Its integral over the run is
    :attr:`Analysis.energy_mj` (for a trace of several frames: the energy of all of them).

    >>> from chips import load_chip
    >>> from hwsim.sim.engine import OpRecord, Trace
    >>> chip = load_chip("rk3588")
    >>> t = Trace(10, (OpRecord("a", "Conv", "npu", 0, 0, 10, 0),), (), ())
    >>> [(ts, round(w, 2)) for ts, w in power_timeline(chip, t)]  # NPU 1 W busy, the rest idle
    [(0, 1.23), (10, 0.0)]
    """
    units = {u.name: u for u in chip.units}
    delta: dict[int, dict[str, int]] = {}
    for r in trace.ops:
        n = len(r.all_cores)
        delta.setdefault(r.start_ps, {}).setdefault(r.unit, 0)
        delta[r.start_ps][r.unit] += n
        delta.setdefault(r.end_ps, {}).setdefault(r.unit, 0)
        delta[r.end_ps][r.unit] -= n
    dram_at: dict[int, float] = {}
    for t, mem, use in trace.bandwidth_samples:
        if mem == "dram":
            dram_at[t] = use
    times = sorted(set(delta) | set(dram_at) | {0})
    busy = {u: 0 for u in units}
    dram_use = 0.0
    out: list[tuple[int, float]] = []
    for t in times:
        if t >= trace.makespan_ps and trace.makespan_ps > 0:
            break
        for u, d in delta.get(t, {}).items():
            busy[u] += d
        dram_use = dram_at.get(t, dram_use)
        w = sum(units[u].active_w * b if b else units[u].idle_w for u, b in busy.items())
        w += dram_use * chip.dram.energy_pj_per_byte
        if not out or abs(out[-1][1] - w) > 1e-12:
            out.append((t, w))
    out.append((trace.makespan_ps, 0.0))
    return tuple(out)


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
    units = []
    total_energy_pj = 0.0
    for u in chip.units:
        recs = [r for r in trace.ops if r.unit == u.name]
        busy = sum(r.duration_ps * len(r.all_cores) for r in recs)
        active = busy_union_ps([(r.start_ps, r.end_ps) for r in recs])
        util = busy / (u.cores * makespan) if makespan else 0.0
        energy_pj = u.active_w * busy + u.idle_w * (makespan - active)  # W x ps = pJ
        total_energy_pj += energy_pj
        units.append(
            UnitUsage(u.name, u.kind, u.cores, len(recs), busy / PS_PER_MS, active / PS_PER_MS,
                      min(1.0, util), energy_pj / 1e9)
        )  # fmt: skip
    dram_bytes = dram_bytes_moved(chip, trace)
    dram_pj = dram_bytes * chip.dram.energy_pj_per_byte
    rows: dict[tuple[str, str], list[int]] = {}
    for r in trace.transfers:
        row = rows.setdefault((r.src_domain, r.dst_domain), [0, 0])
        row[0] += r.bytes
        row[1] += 1
    traffic = tuple(TrafficRow(s, d, b, n) for (s, d), (b, n) in sorted(rows.items()))
    path, length = _critical_path(graph, chip, trace)
    return Analysis(
        latency_ms=makespan / PS_PER_MS,
        energy_mj=(total_energy_pj + dram_pj) / 1e9,
        dram_energy_mj=dram_pj / 1e9,
        dram_bytes=dram_bytes,
        units=tuple(units),
        critical_path=path,
        critical_path_ms=length / PS_PER_MS,
        traffic=traffic,
    )

