"""The discrete-event engine: runs a schedule on a chip and records what happened.

Time is integer picoseconds. The event queue is a heap of ``(time, sequence, event)``; the
sequence number makes ties deterministic, so the same inputs give the same trace, byte for byte.

Resources:

- every core of every unit runs one op at a time, in the order the schedule gives it;
- every link has ``dma_channels`` channels shared by both directions; a transfer waits in a
  FIFO queue for a free channel, pays the link's set-up latency, then streams its bytes;
- bandwidth of each memory (the shared DRAM, or an SRAM domain's own) is shared max-min fairly
  by everything streaming through it at the same moment: the memory phase of ops and DMA
  transfers (a DRAM-to-DRAM copy reads and writes, so it counts twice). Each stream is also
  capped at its own uncontended rate, so an op alone takes exactly its cost-model latency.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.schedule import Schedule

__all__ = ["PS_PER_NS", "OpRecord", "SimulationError", "Trace", "TransferRecord", "simulate"]

PS_PER_NS = 1000


class SimulationError(RuntimeError):
    """The simulation could not finish (a schedule whose order deadlocks: an internal failure)."""


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One op as it ran: ``start_ps`` includes its fixed overhead; DRAM bytes it moved."""

    op: str
    op_type: str
    unit: str
    core: int
    start_ps: int
    end_ps: int
    dram_bytes: int

    @property
    def duration_ps(self) -> int:
        return self.end_ps - self.start_ps


@dataclass(frozen=True, slots=True)
class TransferRecord:
    """One DMA transfer: queued when its tensor was ready, started when a channel was free."""

    tensor: str
    src_domain: str
    dst_domain: str
    channel: int
    bytes: int
    producer: str
    consumers: tuple[str, ...]
    queued_ps: int
    start_ps: int
    end_ps: int


@dataclass(frozen=True, slots=True)
class Trace:
    """Everything that happened, in time order. ``bandwidth_samples`` are
    ``(time_ps, memory, bytes_per_ps)`` whenever a memory's total use changes."""

    makespan_ps: int
    ops: tuple[OpRecord, ...]
    transfers: tuple[TransferRecord, ...]
    bandwidth_samples: tuple[tuple[int, str, float], ...]
    memory_capacity_bytes_per_ps: dict[str, float] = field(default_factory=dict)

    @property
    def makespan_ns(self) -> float:
        return self.makespan_ps / PS_PER_NS


@dataclass(slots=True)
class _Flow:
    """Bytes streaming through memories, at most ``cap`` bytes/ps."""

    seq: int
    remaining: float
    cap: float
    uses: dict[str, float]  # memory -> bytes of that memory's bandwidth per byte of the flow
    owner: tuple[str, int]  # ("op", index) or ("xfer", index)
    rate: float = 0.0
    end_ps: int = 0


def _allocate(flows: list[_Flow], capacity: dict[str, float]) -> None:
    """Max-min fair rates (progressive filling) under per-flow caps and memory capacities."""
    residual = dict(capacity)
    active = [f for f in flows]
    for f in flows:
        f.rate = 0.0
    while active:
        delta = min(f.cap - f.rate for f in active)
        load: dict[str, float] = {}
        for f in active:
            for m, a in f.uses.items():
                load[m] = load.get(m, 0.0) + a
        for m, a in load.items():
            delta = min(delta, residual[m] / a)
        delta = max(delta, 0.0)
        for f in active:
            f.rate += delta
        for m, a in load.items():
            residual[m] -= delta * a
        saturated = {m for m in load if residual[m] <= 1e-12 * capacity[m]}
        active = [f for f in active if f.cap - f.rate > 1e-15 and not (saturated & f.uses.keys())]


def simulate(graph: ModelGraph, chip: Chip, table: CostTable, schedule: Schedule) -> Trace:
    """Run ``schedule`` and return the :class:`Trace`.

    Raises
    ------
    SimulationError
        If some op can never start (the schedule's per-core order contradicts the graph).
    """
    units = {u.name: u for u in chip.units}
    domains = {d.name: d for d in chip.domains}

    def memory_of(domain: str) -> str:
        return "dram" if domains[domain].kind == "dram" else domain

    capacity = {"dram": chip.dram.bandwidth_gbps / PS_PER_NS}
    for d in chip.domains:
        if d.kind == "sram":
            capacity[d.name] = float(d.bandwidth_gbps or 0) / PS_PER_NS

    # ---- static structure
    op_names = list(graph.order)
    op_index = {n: i for i, n in enumerate(op_names)}
    place = schedule.placements
    op_domain = [units[place[n].unit].domain for n in op_names]
    # (tensor, domain) -> op indices waiting for it
    waiting: dict[tuple[str, str], list[int]] = {}
    pending = [0] * len(op_names)
    for i, n in enumerate(op_names):
        keys = {(t.name, op_domain[i]) for t in graph.op(n).activations}
        pending[i] = len(keys)
        for k in keys:
            waiting.setdefault(k, []).append(i)
    transfers = list(schedule.transfers)
    # (tensor, src domain) -> transfers to start once it is there
    outgoing: dict[tuple[str, str], list[int]] = {}
    for j, tr in enumerate(transfers):
        outgoing.setdefault((tr.tensor, tr.src_domain), []).append(j)

    link_key: dict[int, str] = {}
    link_channels: dict[str, int] = {}
    link_obj = {}
    for j, tr in enumerate(transfers):
        link = chip.link_between(tr.src_domain, tr.dst_domain)
        if link is None:
            raise SimulationError(f"no link from {tr.src_domain!r} to {tr.dst_domain!r} for tensor {tr.tensor!r}")
        key = f"{link.src}<->{link.dst}" if link.bidirectional else f"{link.src}->{link.dst}"
        link_key[j] = key
        link_channels[key] = link.dma_channels
        link_obj[j] = link
    channel_free: dict[str, list[int]] = {k: list(range(n)) for k, n in link_channels.items()}
    link_queue: dict[str, list[int]] = {k: [] for k in link_channels}

    cores = [(u, c) for u in units for c in range(units[u].cores)]
    queue = {k: list(schedule.core_order.get(k, ())) for k in cores}
    head = {k: 0 for k in cores}
    busy: dict[tuple[str, int], bool] = {k: False for k in cores}

    # ---- dynamic state
    seq = 0
    heap: list[tuple[int, int, str, int]] = []
    flows: list[_Flow] = []
    now = 0
    op_start = [-1] * len(op_names)
    op_end = [-1] * len(op_names)
    op_dram = [0] * len(op_names)
    x_queued = [-1] * len(transfers)
    x_start = [-1] * len(transfers)
    x_end = [-1] * len(transfers)
    x_channel = [-1] * len(transfers)
    samples: list[tuple[int, str, float]] = []
    last_use: dict[str, float] = {m: 0.0 for m in capacity}
    present: set[tuple[str, str]] = set()

    def push(t: int, kind: str, idx: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (t, seq, kind, idx))

    def add_flow(nbytes: float, cap: float, uses: dict[str, float], owner: tuple[str, int]) -> None:
        nonlocal seq
        seq += 1
        flows.append(_Flow(seq, nbytes, cap, uses, owner))

    def arrive(tensor: str, domain: str) -> None:
        key = (tensor, domain)
        if key in present:
            return
        present.add(key)
        for i in waiting.get(key, ()):
            pending[i] -= 1
        for j in outgoing.get(key, ()):
            x_queued[j] = now
            link_queue[link_key[j]].append(j)

    def start_ops() -> None:
        for k in cores:
            if busy[k] or head[k] >= len(queue[k]):
                continue
            i = op_index[queue[k][head[k]]]
            if pending[i] > 0:
                continue
            busy[k] = True
            head[k] += 1
            op_start[i] = now
            cost = table.costs[op_names[i]][k[0]]
            push(now + math.ceil(cost.overhead_ns * PS_PER_NS), "op_body", i)

    def start_transfers() -> None:
        for key, q in link_queue.items():
            while q and channel_free[key]:
                j = q.pop(0)
                x_channel[j] = channel_free[key].pop(0)
                x_start[j] = now
                push(now + math.ceil(link_obj[j].latency_ns * PS_PER_NS), "xfer_body", j)

    def finish_op(i: int) -> None:
        op_end[i] = now
        name = op_names[i]
        k = (place[name].unit, place[name].core)
        busy[k] = False
        for t in graph.op(name).outputs:
            arrive(t.name, op_domain[i])

    def finish_transfer(j: int) -> None:
        x_end[j] = now
        channel_free[link_key[j]].append(x_channel[j])
        channel_free[link_key[j]].sort()
        arrive(transfers[j].tensor, transfers[j].dst_domain)

    def handle(kind: str, idx: int) -> bool:
        """Process a heap event; True when the set of flows changed."""
        if kind == "op_body":
            name = op_names[idx]
            cost = table.costs[name][place[name].unit]
            body_ns = max(cost.compute_ns, cost.memory_ns)
            op_dram[idx] = cost.dram_bytes
            if cost.dram_bytes > 0 and body_ns > 0:
                mem = memory_of(op_domain[idx])
                add_flow(cost.dram_bytes, cost.dram_bytes / (body_ns * PS_PER_NS), {mem: 1.0}, ("op", idx))
                return True
            push(now + math.ceil(body_ns * PS_PER_NS), "op_done", idx)
        elif kind == "op_done":
            finish_op(idx)
        elif kind == "xfer_body":
            tr = transfers[idx]
            if tr.bytes <= 0:
                finish_transfer(idx)
                return False
            uses: dict[str, float] = {}
            for d in (tr.src_domain, tr.dst_domain):
                m = memory_of(d)
                uses[m] = uses.get(m, 0.0) + 1.0
            add_flow(tr.bytes, link_obj[idx].bandwidth_gbps / PS_PER_NS, uses, ("xfer", idx))
            return True
        return False

    def reallocate() -> None:
        _allocate(flows, capacity)
        use = {m: 0.0 for m in capacity}
        for f in flows:
            f.end_ps = now + max(1, math.ceil(f.remaining / f.rate)) if f.rate > 0 else 2**62
            for m, a in f.uses.items():
                use[m] += a * f.rate
        for m, u in use.items():
            if abs(u - last_use[m]) > 1e-12:
                samples.append((now, m, u))
                last_use[m] = u

    for t in graph.inputs:
        arrive(t.name, chip.host)

    while True:
        start_ops()
        start_transfers()
        t_heap = heap[0][0] if heap else None
        t_flow = min((f.end_ps for f in flows), default=None)
        candidates = [t for t in (t_heap, t_flow) if t is not None]
        if not candidates:
            break
        t_next = min(candidates)
        if t_next >= 2**62:
            raise SimulationError("a memory stream has no bandwidth (zero-capacity memory)")
        dt = t_next - now
        for f in flows:
            f.remaining -= f.rate * dt
        now = t_next
        changed = False
        done = sorted((f for f in flows if f.end_ps <= now), key=lambda f: f.seq)
        if done:
            changed = True
            flows[:] = [f for f in flows if f.end_ps > now]
            for f in done:
                kind, idx = f.owner
                if kind == "op":
                    finish_op(idx)
                else:
                    finish_transfer(idx)
        while heap and heap[0][0] <= now:
            _, _, kind, idx = heapq.heappop(heap)
            changed = handle(kind, idx) or changed
        if changed:
            reallocate()

    stuck = [op_names[i] for i in range(len(op_names)) if op_end[i] < 0]
    if stuck:
        raise SimulationError(
            f"{len(stuck)} ops never ran (schedule order deadlocks), first: {stuck[:3]}"
        )
    undelivered = [transfers[j].tensor for j in range(len(transfers)) if x_end[j] < 0]
    if undelivered:
        raise SimulationError(f"transfers never completed: {undelivered[:3]}")

    op_records = tuple(
        sorted(
            (
                OpRecord(n, graph.op(n).op_type, place[n].unit, place[n].core, op_start[i], op_end[i], op_dram[i])
                for i, n in enumerate(op_names)
            ),
            key=lambda r: (r.start_ps, r.unit, r.core, op_index[r.op]),
        )
    )
    x_records = tuple(
        sorted(
            (
                TransferRecord(
                    tr.tensor, tr.src_domain, tr.dst_domain, x_channel[j], tr.bytes, tr.producer,
                    tr.consumers, x_queued[j], x_start[j], x_end[j],
                )
                for j, tr in enumerate(transfers)
            ),
            key=lambda r: (r.start_ps, r.src_domain, r.dst_domain, r.tensor),
        )
    )
    makespan = max([r.end_ps for r in op_records] + [r.end_ps for r in x_records] + [0])
    return Trace(makespan, op_records, x_records, tuple(samples), dict(capacity))
