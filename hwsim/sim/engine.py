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
  capped at its own uncontended rate, so contention only ever slows things down.

An op runs as its fixed overhead followed by one or more *blocks*; a block lasts
``max(compute, memory)`` uncontended, its bytes streamed evenly over it, and waits for its
bytes under contention. An op whose working set fits (``OpCost.tiles == 1``) is one block:
``latency = overhead + max(compute, memory)``, exactly its cost-model latency. A tiled op
(``tiles = T > 1``) is double-buffered: tile ``i + 1`` loads while tile ``i`` computes and tile
``i - 1`` is stored, with the first load and the last store exposed. With ``c = compute / T``,
``L = read bytes / T`` and ``S = write bytes / T`` (in ns at the op's bandwidth)::

    latency = overhead + L + max(c, L) + (T - 2) * max(c, L + S) + max(c, S) + S     (T >= 2)

(the ``T - 2`` steady tiles are simulated as one block). Without double buffering
(:class:`EngineOptions`), every tile loads, computes and stores in turn:
``overhead + T * (L + c + S)``. :func:`op_time_ns` gives these uncontended times.

An op whose type its unit lists in ``split_ops`` may run split across ``k`` cores of the unit
(:mod:`hwsim.sim.splitting`): ``k`` identical shards, each costed as an op of its own, plus the
unit's ``split_overhead_ns``. ``Placement.cores`` fixes ``k``; when it is None the engine splits
an op over the cores of its unit that are idle and have nothing ready to run, choosing the
``k`` with the shortest uncontended time. A core is never shared: a unit runs at most
``cores`` ops or shards at once.

``frames = N`` streams ``N`` copies of the graph through the same schedule; every core runs each
frame's ops in the schedule's order for it. ``EngineOptions.frame_order`` says how a core mixes
frames:

- ``"interleaved"`` (default): dynamic dispatch. Each time a core is free it runs, among the
  frames admitted and not yet done on it, the next op of the *oldest* frame whose next op is
  ready; so frame ``i + 1``'s op runs before frame ``i``'s later ops while those wait for
  inputs from other cores (a chain alternating between cores pipelines);
- ``"frame-major"``: the core runs all of frame ``i``'s ops before any of frame ``i + 1``'s,
  waiting when the next one is not ready.

All inputs are there at time 0, or, with ``in_flight = K``, frame ``i`` is admitted when frame
``i - K`` completes; a core never runs an op of a frame not yet admitted (interleaved).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from chips.schema import Chip
from cost_models.base import OpCost
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.schedule import Schedule

__all__ = [
    "FRAME_ORDERS",
    "PS_PER_NS",
    "EngineOptions",
    "OpPhase",
    "OpRecord",
    "SimulationError",
    "Trace",
    "TransferRecord",
    "op_blocks",
    "op_time_ns",
    "simulate",
]

PS_PER_NS = 1000
#: How a core orders the ops of several frames (:class:`EngineOptions`), the default first.
FRAME_ORDERS = ("interleaved", "frame-major")


class SimulationError(RuntimeError):
    """The simulation could not finish (a schedule whose order deadlocks: an internal failure)."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """What the engine models beyond the schedule.

    ``double_buffer``: tiled ops overlap tile loads with compute (else load, compute, store
    per tile in turn). ``split``: ops the unit can split run over its idle cores when their
    placement does not fix the number of cores (``Placement.cores is None``). ``frame_order``
    (one of :data:`FRAME_ORDERS`): how a core mixes the ops of several frames (module docstring).
    """

    double_buffer: bool = True
    split: bool = True
    frame_order: str = "interleaved"


@dataclass(frozen=True, slots=True)
class OpPhase:
    """One phase of a tiled op: ``kind`` is ``compute`` or ``memory``; ``tiles`` names them
    (``"0"``, ``"1-6"``); ``bytes`` streamed (memory phases)."""

    kind: str
    tiles: str
    start_ps: int
    end_ps: int
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One op as it ran: ``start_ps`` includes its fixed overhead; DRAM bytes it moved.

    ``cores`` lists every core it occupied when split (``core`` first; empty: just ``core``);
    ``phases`` are the load/compute phases of a tiled op; ``frame`` its input frame.
    """

    op: str
    op_type: str
    unit: str
    core: int
    start_ps: int
    end_ps: int
    dram_bytes: int
    frame: int = 0
    cores: tuple[int, ...] = ()
    tiles: int = 1
    phases: tuple[OpPhase, ...] = ()

    @property
    def duration_ps(self) -> int:
        return self.end_ps - self.start_ps

    @property
    def all_cores(self) -> tuple[int, ...]:
        """Every core the op occupied."""
        return self.cores or (self.core,)


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
    frame: int = 0


@dataclass(frozen=True, slots=True)
class Trace:
    """Everything that happened, in time order. ``bandwidth_samples`` are
    ``(time_ps, memory, bytes_per_ps)`` whenever a memory's total use changes."""

    makespan_ps: int
    ops: tuple[OpRecord, ...]
    transfers: tuple[TransferRecord, ...]
    bandwidth_samples: tuple[tuple[int, str, float], ...]
    memory_capacity_bytes_per_ps: dict[str, float] = field(default_factory=dict)
    frames: int = 1
    #: When each frame's inputs were admitted (``in_flight`` runs only; empty: all at time 0).
    frame_admit_ps: tuple[int, ...] = ()
    in_flight: int | None = None
    #: How cores ordered the frames' ops (:data:`FRAME_ORDERS`).
    frame_order: str = "interleaved"

    @property
    def makespan_ns(self) -> float:
        return self.makespan_ps / PS_PER_NS


@dataclass(frozen=True, slots=True)
class _Block:
    """A stretch of an op: ``dur_ns`` uncontended, ``bytes`` streamed evenly over it."""

    dur_ns: float
    bytes: int
    compute_ns: float
    tiles: str


def _part(total: int, parts: int, i: int) -> int:
    """Bytes of part ``i`` when ``total`` is cut in ``parts`` near-equal integer parts."""
    return total * (i + 1) // parts - total * i // parts


#: Tile-by-tile ops (no double buffering) run their tiles in at most this many groups.
MAX_SERIAL_GROUPS = 8


def op_blocks(cost: OpCost, double_buffer: bool = True, shards: int = 1) -> list[_Block]:
    """The blocks an op runs as after its overhead (see the module docstring).

    ``shards`` identical shards run side by side: their bytes add up, their times do not.
    """
    t = cost.tiles
    if t <= 1 or cost.dram_bytes <= 0:
        body = max(cost.compute_ns, cost.memory_ns)
        return [_Block(body, cost.dram_bytes * shards, cost.compute_ns, "")]
    ns_per_byte = cost.memory_ns / cost.dram_bytes
    r, w = cost.dram_read_bytes, cost.dram_write_bytes
    c = cost.compute_ns / t
    blocks: list[_Block] = []

    def add(compute_ns: float, nbytes: int, tiles: str) -> None:
        dur = max(compute_ns, nbytes * ns_per_byte)
        if dur > 0 or nbytes > 0:
            blocks.append(_Block(dur, nbytes * shards, compute_ns, tiles))

    if not double_buffer:
        # Tile by tile: load, compute, store in turn. Consecutive tiles are run in at most
        # MAX_SERIAL_GROUPS groups (a group loads its tiles, computes them, stores them): the
        # same uncontended time, and a bounded number of blocks however fine the tiling.
        groups = min(t, MAX_SERIAL_GROUPS)
        for g in range(groups):
            lo, hi = t * g // groups, t * (g + 1) // groups
            name = f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}"
            add(0.0, r * hi // t - r * lo // t, f"load {name}")
            add(c * (hi - lo), 0, name)
            add(0.0, w * hi // t - w * lo // t, f"store {name}")
        return blocks
    add(0.0, _part(r, t, 0), "load 0")
    add(c, _part(r, t, 1), "0")
    if t > 2:
        # parts 2..t-1 of the reads and 0..t-3 of the writes, in closed form
        steady = (r - r * 2 // t) + w * (t - 2) // t
        add(c * (t - 2), steady, f"1-{t - 2}" if t > 3 else "1")
    add(c, _part(w, t, t - 2), f"{t - 1}")
    add(0.0, _part(w, t, t - 1), f"store {t - 1}")
    return blocks


def op_time_ns(cost: OpCost, double_buffer: bool = True) -> float:
    """Uncontended time of an op in the engine: overhead plus its blocks (ns).

    >>> c = OpCost("u", "int8", 400.0, 200.0, 100.0, 1000, 0, 0.0)
    >>> op_time_ns(c)  # untiled: max(compute, memory) + overhead
    500.0
    >>> op_time_ns(OpCost("u", "int8", 400.0, 200.0, 100.0, 1000, 0, 0.0, tiles=4))
    550.0
    """
    return cost.overhead_ns + sum(b.dur_ns for b in op_blocks(cost, double_buffer))


@dataclass(slots=True)
class _Flow:
    """Bytes streaming through memories, at most ``cap`` bytes/ps."""

    seq: int
    remaining: float
    cap: float
    uses: dict[str, float]  # memory -> bytes of that memory's bandwidth per byte of the flow
    owner: tuple[str, int]  # ("op", instance) or ("xfer", instance)
    rate: float = 0.0
    end_ps: int = 0


def _allocate(flows: list[_Flow], capacity: dict[str, float]) -> None:
    """Max-min fair rates (progressive filling) under per-flow caps and memory capacities."""
    residual = dict(capacity)
    active = list(flows)
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


def simulate(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    schedule: Schedule,
    options: EngineOptions | None = None,
    frames: int = 1,
    in_flight: int | None = None,
) -> Trace:
    """Run ``schedule`` (``frames`` times over, pipelined) and return the :class:`Trace`.

    ``in_flight = K`` admits frame ``i``'s inputs only when frame ``i - K`` has completed (at
    most K frames in the system; the trace keeps the admission times); None: every frame's
    inputs are there at time 0.

    Raises
    ------
    SimulationError
        If some op can never start (the schedule's per-core order contradicts the graph), or a
        placement asks for more cores than its unit has or splits an op the unit cannot split.
    ValueError
        If ``frames < 1``, ``in_flight < 1`` or the frame order is not one of :data:`FRAME_ORDERS`.
    """
    from hwsim.sim.splitting import shard_cost

    opts = options if options is not None else EngineOptions()
    if frames < 1:
        raise ValueError(f"frames must be at least 1, got {frames}")
    if in_flight is not None and in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, got {in_flight}")
    if opts.frame_order not in FRAME_ORDERS:
        raise ValueError(f"frame_order must be one of {', '.join(FRAME_ORDERS)}, got {opts.frame_order!r}")
    units = {u.name: u for u in chip.units}
    domains = {d.name: d for d in chip.domains}

    def memory_of(domain: str) -> str:
        return "dram" if domains[domain].kind == "dram" else domain

    capacity = {"dram": chip.dram.bandwidth_gbps / PS_PER_NS}
    for d in chip.domains:
        if d.kind == "sram":
            capacity[d.name] = float(d.bandwidth_gbps or 0) / PS_PER_NS

    # ---- static structure (per frame); an op instance is frame * n_ops + op index
    op_names = list(graph.order)
    n_ops = len(op_names)
    op_index = {n: i for i, n in enumerate(op_names)}
    place = schedule.placements
    op_unit = [place[n].unit for n in op_names]
    op_core = [place[n].core for n in op_names]
    op_mem = [memory_of(units[u].domain) for u in op_unit]
    op_domain = [units[u].domain for u in op_unit]
    op_cost = [table.costs[n][op_unit[i]] for i, n in enumerate(op_names)]
    fixed_k: list[int | None] = []
    for i, n in enumerate(op_names):
        k = place[n].cores
        u = units[op_unit[i]]
        if k is not None and not 1 <= k <= u.cores:
            raise SimulationError(
                f"op {n!r} asks for {k} cores of unit {u.name!r}, which has {u.cores}"
            )
        if k is not None and k > 1 and graph.op(n).op_type not in u.split_ops:
            raise SimulationError(
                f"op {n!r} ({graph.op(n).op_type}) cannot be split on unit {u.name!r}"
            )
        fixed_k.append(k)
    splittable = [
        units[op_unit[i]].cores > 1 and graph.op(n).op_type in units[op_unit[i]].split_ops
        for i, n in enumerate(op_names)
    ]
    waiting: dict[tuple[str, str], list[int]] = {}  # (tensor, domain) -> op indices waiting for it
    pending_static = [0] * n_ops
    for i, n in enumerate(op_names):
        keys = {(t.name, op_domain[i]) for t in graph.op(n).activations}
        pending_static[i] = len(keys)
        for key in keys:
            waiting.setdefault(key, []).append(i)
    transfers = list(schedule.transfers)
    n_x = len(transfers)
    outgoing: dict[tuple[str, str], list[int]] = {}  # (tensor, src domain) -> transfers to start
    for j, tr in enumerate(transfers):
        outgoing.setdefault((tr.tensor, tr.src_domain), []).append(j)

    link_key: list[str] = []
    link_latency_ps: list[int] = []
    link_rate: list[float] = []
    x_uses: list[dict[str, float]] = []
    link_channels: dict[str, int] = {}
    for tr in transfers:
        link = chip.link_between(tr.src_domain, tr.dst_domain)
        if link is None:
            raise SimulationError(
                f"no link from {tr.src_domain!r} to {tr.dst_domain!r} for tensor {tr.tensor!r}"
            )
        pool = f"{link.src}<->{link.dst}" if link.bidirectional else f"{link.src}->{link.dst}"
        link_key.append(pool)
        link_channels[pool] = link.dma_channels
        link_latency_ps.append(math.ceil(link.latency_ns * PS_PER_NS))
        link_rate.append(link.bandwidth_gbps / PS_PER_NS)
        uses: dict[str, float] = {}
        for end in (tr.src_domain, tr.dst_domain):
            uses[memory_of(end)] = uses.get(memory_of(end), 0.0) + 1.0
        x_uses.append(uses)
    channel_free: dict[str, list[int]] = {k: list(range(n)) for k, n in link_channels.items()}
    link_queue: dict[str, list[int]] = {k: [] for k in link_channels}

    cores = [(u, c) for u in units for c in range(units[u].cores)]
    unit_cores = {u: [(u, c) for c in range(units[u].cores)] for u in units}
    queue = {k: [op_index[n] for n in schedule.core_order.get(k, ())] for k in cores}
    head = {k: 0 for k in cores}
    busy: dict[tuple[str, int], bool] = {k: False for k in cores}
    # cores whose head op may have become startable since they were last looked at: a core
    # that could not start stays put until it frees, its head's inputs arrive, or a core of its
    # unit frees (an op waiting for several cores); so no event scans every core
    core_rank = {k: r for r, k in enumerate(cores)}
    op_core_key = [(op_unit[i], op_core[i]) for i in range(n_ops)]
    to_check: set[tuple[str, int]] = set(cores)

    # ---- dynamic state
    total = n_ops * frames
    seq = 0
    heap: list[tuple[int, int, str, int]] = []
    flows: list[_Flow] = []
    now = 0
    pending = pending_static * frames
    op_start = [-1] * total
    op_end = [-1] * total
    op_tiles = [1] * total
    op_cores: list[tuple[int, ...]] = [()] * total
    op_blk: list[list[_Block]] = [[] for _ in range(total)]
    op_blk_at = [0] * total
    blk_start = [0] * total
    op_phases: list[list[OpPhase]] = [[] for _ in range(total)]
    op_dram = [0] * total
    x_queued = [-1] * (n_x * frames)
    x_start = [-1] * (n_x * frames)
    x_end = [-1] * (n_x * frames)
    x_channel = [-1] * (n_x * frames)
    samples: list[tuple[int, str, float]] = []
    last_use: dict[str, float] = {m: 0.0 for m in capacity}
    present: set[tuple[int, str, str]] = set()
    shard_memo: dict[tuple[int, int], OpCost | None] = {}

    def push(t: int, kind: str, idx: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (t, seq, kind, idx))

    def add_flow(nbytes: float, cap: float, uses: dict[str, float], owner: tuple[str, int]) -> None:
        nonlocal seq
        seq += 1
        flows.append(_Flow(seq, nbytes, cap, uses, owner))

    def arrive(frame: int, tensor: str, domain: str) -> None:
        key = (frame, tensor, domain)
        if key in present:
            return
        present.add(key)
        base = frame * n_ops
        for i in waiting.get((tensor, domain), ()):
            pending[base + i] -= 1
            if pending[base + i] == 0:
                to_check.add(op_core_key[i])
        for j in outgoing.get((tensor, domain), ()):
            xi = frame * n_x + j
            x_queued[xi] = now
            link_queue[link_key[j]].append(xi)

    def cost_for(i: int, k: int) -> OpCost | None:
        if k == 1:
            return op_cost[i]
        key = (i, k)
        if key not in shard_memo:
            shard_memo[key] = shard_cost(
                graph.op(op_names[i]), units[op_unit[i]], chip, table.precision, k
            )
        return shard_memo[key]

    def best_k(i: int, most: int) -> int:
        best, best_t = 1, op_time_ns(op_cost[i], opts.double_buffer)
        for k in range(2, most + 1):
            c = cost_for(i, k)
            if c is not None:
                t = op_time_ns(c, opts.double_buffer)
                if t < best_t:
                    best, best_t = k, t
        return best

    def ready_frame_major(k: tuple[str, int]) -> int:
        """The core's next op instance if its inputs are there, else -1."""
        q = queue[k]
        h = head[k]
        if not q or h >= len(q) * frames:
            return -1
        inst = (h // len(q)) * n_ops + q[h % len(q)]
        return inst if pending[inst] == 0 else -1

    # interleaved: per core, the position of each frame's next op in the core's order, and the
    # oldest frame not yet done on the core (frames below it are never looked at again)
    fpos = {k: [0] * frames for k in cores}
    admitted = [-1] * frames  # admission time of each frame (-1: not yet)
    last_admitted = -1
    oldest = {k: 0 for k in cores}

    def ready_interleaved(k: tuple[str, int]) -> int:
        """The oldest admitted frame's next op on the core whose inputs are there, else -1."""
        q = queue[k]
        n = len(q)
        pos = fpos[k]
        f = oldest[k]
        while f < frames and pos[f] >= n:
            f += 1
        oldest[k] = f
        for g in range(f, last_admitted + 1):
            p = pos[g]
            if p < n and admitted[g] >= 0:
                inst = g * n_ops + q[p]
                if pending[inst] == 0:
                    return inst
        return -1

    interleaved = frames > 1 and opts.frame_order == "interleaved"
    ready = ready_interleaved if interleaved else ready_frame_major

    def launch(k: tuple[str, int], inst: int, shards: int, helpers: list[tuple[str, int]]) -> None:
        i = inst % n_ops
        cost = cost_for(i, shards)
        assert cost is not None
        busy[k] = True
        if interleaved:
            fpos[k][inst // n_ops] += 1
        else:
            head[k] += 1
        for h in helpers:
            busy[h] = True
        op_start[inst] = now
        op_tiles[inst] = cost.tiles
        op_cores[inst] = (k[1], *(h[1] for h in helpers)) if helpers else ()
        op_blk[inst] = op_blocks(cost, opts.double_buffer, shards)
        op_dram[inst] = sum(b.bytes for b in op_blk[inst])
        push(now + math.ceil(cost.overhead_ns * PS_PER_NS), "op_body", inst)

    def start_ops() -> None:
        if not to_check:
            return
        candidates = sorted(to_check, key=core_rank.__getitem__)
        to_check.clear()
        # pass 1: ops whose placement fixes k > 1 cores take idle cores first
        for k in candidates:
            if busy[k]:
                continue
            inst = ready(k)
            if inst < 0:
                continue
            want = fixed_k[inst % n_ops]
            if want is None or want <= 1:
                continue
            idle = [c for c in unit_cores[k[0]] if c != k and not busy[c]]
            if len(idle) >= want - 1:
                launch(k, inst, want, idle[: want - 1])
        # pass 2: everything else; unfixed splittable ops borrow idle cores with nothing ready
        for k in candidates:
            if busy[k]:
                continue
            inst = ready(k)
            if inst < 0:
                continue
            i = inst % n_ops
            want = fixed_k[i]
            if want is not None and want > 1:
                continue
            helpers: list[tuple[str, int]] = []
            if want is None and opts.split and splittable[i]:
                spare = []
                for c in unit_cores[k[0]]:
                    if c == k or busy[c]:
                        continue
                    if ready(c) < 0:
                        spare.append(c)
                if spare:
                    helpers = spare[: best_k(i, 1 + len(spare)) - 1]
            launch(k, inst, 1 + len(helpers), helpers)

    def start_transfers() -> None:
        for key, q in link_queue.items():
            while q and channel_free[key]:
                xi = q.pop(0)
                x_channel[xi] = channel_free[key].pop(0)
                x_start[xi] = now
                push(now + link_latency_ps[xi % n_x], "xfer_body", xi)

    def finish_op(inst: int) -> None:
        op_end[inst] = now
        i = inst % n_ops
        unit = op_unit[i]
        for c in op_cores[inst] or (op_core[i],):
            busy[(unit, c)] = False
        to_check.update(unit_cores[unit])
        frame = inst // n_ops
        for t in graph.op(op_names[i]).outputs:
            arrive(frame, t.name, op_domain[i])
        frame_done(frame)

    def finish_transfer(xi: int) -> None:
        x_end[xi] = now
        j = xi % n_x
        channel_free[link_key[j]].append(x_channel[xi])
        channel_free[link_key[j]].sort()
        arrive(xi // n_x, transfers[j].tensor, transfers[j].dst_domain)
        frame_done(xi // n_x)

    def admit(frame: int) -> None:
        nonlocal last_admitted
        admitted[frame] = now
        last_admitted = max(last_admitted, frame)
        for t in graph.inputs:
            arrive(frame, t.name, chip.host)

    def frame_done(frame: int) -> None:
        left[frame] -= 1
        if left[frame] == 0 and in_flight is not None and frame + in_flight < frames:
            admit(frame + in_flight)

    def start_block(inst: int) -> bool:
        """Start the op's next block (or finish the op); True when a flow was added."""
        blocks = op_blk[inst]
        at = op_blk_at[inst]
        if at >= len(blocks):
            finish_op(inst)
            return False
        b = blocks[at]
        blk_start[inst] = now
        if b.bytes > 0 and b.dur_ns > 0:
            add_flow(
                b.bytes, b.bytes / (b.dur_ns * PS_PER_NS), {op_mem[inst % n_ops]: 1.0}, ("op", inst)
            )
            return True
        push(now + math.ceil(b.dur_ns * PS_PER_NS), "block_done", inst)
        return False

    def end_block(inst: int) -> bool:
        blocks = op_blk[inst]
        b = blocks[op_blk_at[inst]]
        if len(blocks) > 1:  # tiled: keep the phases for the trace
            s = blk_start[inst]
            if b.compute_ns > 0:
                end = min(now, s + math.ceil(b.compute_ns * PS_PER_NS))
                op_phases[inst].append(OpPhase("compute", b.tiles, s, end))
            if b.bytes > 0:
                op_phases[inst].append(OpPhase("memory", b.tiles, s, now, b.bytes))
        op_blk_at[inst] += 1
        return start_block(inst)

    def handle(kind: str, idx: int) -> bool:
        """Process a heap event; True when the set of flows changed."""
        if kind == "op_body":
            return start_block(idx)
        if kind == "block_done":
            return end_block(idx)
        if kind == "xfer_body":
            j = idx % n_x
            if transfers[j].bytes <= 0:
                finish_transfer(idx)
                return False
            add_flow(transfers[j].bytes, link_rate[j], x_uses[j], ("xfer", idx))
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

    left = [n_ops + n_x] * frames  # ops and transfers of each frame still to finish
    window = frames if in_flight is None or n_ops + n_x == 0 else min(in_flight, frames)
    for frame in range(window):
        admit(frame)

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
                    end_block(idx)
                else:
                    finish_transfer(idx)
        while heap and heap[0][0] <= now:
            _, _, kind, idx = heapq.heappop(heap)
            changed = handle(kind, idx) or changed
        if changed:
            reallocate()

    stuck = [op_names[x % n_ops] for x in range(total) if op_end[x] < 0]
    if stuck:
        raise SimulationError(
            f"{len(stuck)} ops never ran (schedule order deadlocks), first: {stuck[:3]}"
        )
    undelivered = [transfers[x % n_x].tensor for x in range(n_x * frames) if x_end[x] < 0]
    if undelivered:
        raise SimulationError(f"transfers never completed: {undelivered[:3]}")

    op_records = []
    for inst in range(total):
        i = inst % n_ops
        n = op_names[i]
        op_records.append(
            OpRecord(
                n, graph.op(n).op_type, op_unit[i], op_core[i], op_start[inst], op_end[inst], op_dram[inst],
                inst // n_ops, op_cores[inst], op_tiles[inst], tuple(op_phases[inst]),
            )
        )  # fmt: skip
    op_records.sort(key=lambda r: (r.start_ps, r.unit, r.core, r.frame, op_index[r.op]))
    x_records = tuple(
        sorted(
            (
                TransferRecord(
                    transfers[xi % n_x].tensor, transfers[xi % n_x].src_domain, transfers[xi % n_x].dst_domain,
                    x_channel[xi], transfers[xi % n_x].bytes, transfers[xi % n_x].producer,
                    transfers[xi % n_x].consumers, x_queued[xi], x_start[xi], x_end[xi], xi // n_x,
                )
                for xi in range(n_x * frames)
            ),
            key=lambda r: (r.start_ps, r.frame, r.src_domain, r.dst_domain, r.tensor),
        )
    )  # fmt: skip
    makespan = max([r.end_ps for r in op_records] + [r.end_ps for r in x_records] + [0])
    admissions = tuple(admitted) if in_flight is not None else ()
    return Trace(
        makespan,
        tuple(op_records),
        x_records,
        tuple(samples),
        dict(capacity),
        frames,
        admissions,
        in_flight,
        opts.frame_order,
    )
