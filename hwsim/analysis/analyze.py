"""What a trace means: per-unit utilization, the critical path, cross-domain traffic, energy,
and what contention cost (:mod:`hwsim.analysis.contention`).

The critical path is the longest chain of data dependencies through the simulated run, each
op weighted by how long it actually ran and each edge by how long its DMA transfer took (queue
waits and waits for a busy core excluded): the latency no scheduler could beat with these op
placements, however many cores there were.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chips.schema import Chip
from chips.units import PJ_PER_MJ, PS_PER_MS
from graph_ir.ir import ModelGraph
from hwsim.analysis.busy import busy_union_ps
from hwsim.analysis.contention import Contention, contention
from hwsim.analysis.energy import run_energy
from hwsim.sim.records import OpRecord, Trace, TransferRecord

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
    #: Time lost to shared bandwidth and waits for cores and DMA channels (sums, not wall time).
    contention: Contention


def _critical_path(
    graph: ModelGraph, chip: Chip, trace: Trace
) -> tuple[tuple[OpRecord, ...], tuple[TransferRecord, ...], int]:
    """The critical path's ops and transfers (in order) and its length (ps)."""
    rec = {r.op: r for r in trace.ops}
    unit_domain = {u.name: u.domain for u in chip.units}
    domain_of = {r.op: unit_domain[r.unit] for r in trace.ops}
    moved = {(r.tensor, r.dst_domain): r for r in trace.transfers}
    made = graph.producer
    dist: dict[str, int] = {}
    back: dict[str, str | None] = {}
    via: dict[str, TransferRecord | None] = {}  # the transfer into the op on its longest chain

    def longest(tensors: Iterable[str], d: str) -> tuple[int, TransferRecord | None]:
        """The longest transfer of these tensors into domain ``d`` (0, None: none crossed)."""
        best, arg = 0, None
        for t in tensors:
            x = moved.get((t, d))
            if x is not None and x.end_ps - x.start_ps > best:
                best, arg = x.end_ps - x.start_ps, x
        return best, arg

    pred = graph.g.pred
    for n in graph.order:
        d = domain_of[n]
        # graph inputs carried in from the host
        best, into = longest((t.name for t in graph.op(n).inputs if not t.is_weight and t.name not in made), d)
        arg = None
        for p, edge_data in pred[n].items():
            edge, x = longest(edge_data["tensors"], d)
            if dist[p] + edge > best or (dist[p] + edge == best and arg is None):
                best, arg, into = dist[p] + edge, p, x
        dist[n] = best + rec[n].duration_ps
        back[n], via[n] = arg, into
    if not dist:
        return (), (), 0
    # the run ends at the latest op end or graph output's arrival at the host (the first op on ties)
    graph_outputs = {o.name for o in graph.outputs}
    out_ops = {made[t] for t in graph_outputs if t in made}
    host = chip.host
    last, last_end, last_out = graph.order[0], -1, None
    for n in graph.order:
        end, out = dist[n], None
        if n in out_ops:
            arrive, out = longest((t.name for t in graph.op(n).outputs if t.name in graph_outputs), host)
            end += arrive
        if end > last_end:
            last, last_end, last_out = n, end, out
    ops: list[OpRecord] = []
    moves = [last_out]
    cur: str | None = last
    while cur is not None:
        ops.append(rec[cur])
        moves.append(via[cur])
        cur = back[cur]
    return tuple(reversed(ops)), tuple(x for x in reversed(moves) if x is not None), last_end


#: The longest run the analysis takes: its timelines hold picoseconds in int64 (106 days).
MAX_RUN_PS = 2**63 - 1


def analyze(graph: ModelGraph, chip: Chip, trace: Trace) -> Analysis:
    """Summarize a trace (see the module docstring for the critical path's definition).

    Raises
    ------
    cost_models.table.UnplaceableError
        The run is longer than :data:`MAX_RUN_PS`: the chip's numbers are far out of range.
    """
    makespan = trace.makespan_ps
    if makespan > MAX_RUN_PS:
        from cost_models.table import UnplaceableError

        raise UnplaceableError(
            f"the run takes {makespan / PS_PER_MS / 8.64e7:.3g} days on {chip.name}, past the 106 days of "
            "picoseconds the simulator's timelines hold: a clock, bandwidth or efficiency of the chip far out of range?"
        )
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
    path, path_transfers, length = _critical_path(graph, chip, trace)
    return Analysis(
        latency_ms=makespan / PS_PER_MS,
        energy_mj=energy.total_pj / PJ_PER_MJ,
        dram_energy_mj=energy.dram_pj / PJ_PER_MJ,
        dram_bytes=energy.dram_bytes,
        units=tuple(units),
        critical_path=tuple(r.op for r in path),
        critical_path_ms=length / PS_PER_MS,
        traffic=traffic,
        contention=contention(trace, path, path_transfers),
    )

