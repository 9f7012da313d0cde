"""The discrete-event engine: runs a schedule on a chip and records what happened.

Time is integer picoseconds. The event queue is a heap of ``(time, sequence, event)``; the
sequence number makes ties deterministic, so the same inputs give the same trace, byte for byte.

Resources (:mod:`hwsim.sim.resources`):

- every core of every unit runs one op at a time, in the order the schedule gives it
  (:class:`~hwsim.sim.resources.CorePool`);
- every link has ``dma_channels`` channels shared by both directions; a transfer waits in a
  FIFO queue for a free channel, pays the link's set-up latency, then streams its bytes
  (:class:`~hwsim.sim.resources.ChannelPool`);
- bandwidth of each memory (the shared DRAM, or an SRAM domain's own) is shared max-min fairly
  by everything streaming through it at the same moment: the memory phase of ops and DMA
  transfers (a DRAM-to-DRAM copy reads and writes, so it counts twice). Each stream is also
  capped at its own uncontended rate, so contention only ever slows things down
  (:class:`~hwsim.sim.resources.SharedBandwidth`).

An op runs as its fixed overhead followed by one or more *blocks* (:mod:`hwsim.sim.blocks`); a
block lasts ``max(compute, memory)`` uncontended, its bytes streamed evenly over it, and waits
for its bytes under contention. An untiled op is one block, so it takes exactly its cost-model
latency; a tiled op (``OpCost.tiles > 1``) is double-buffered, tile ``i + 1`` loading while
tile ``i`` computes (or, without double buffering, every tile loads, computes and stores in
turn). :func:`op_time_ns` gives the uncontended times.

Beside the times, the records keep what contention cost: each op's and transfer's
``stretch_ps`` (how much longer than alone it took because a memory's bandwidth was shared) and
each op's ``wait_core_ps`` (from its last input's arrival to its start); a transfer waited
``start_ps - queued_ps`` for a channel (:class:`~hwsim.sim.records.OpRecord`,
:class:`~hwsim.sim.records.TransferRecord`).

An op whose type its unit lists in ``split_ops`` may run split across ``k`` cores of the unit
(:mod:`hwsim.sim.splitting`): ``k`` identical shards, each costed as an op of its own, plus the
unit's ``split_overhead_ns``. ``Placement.cores`` fixes ``k``; when it is None the engine splits
an op over the cores of its unit that are idle and have nothing ready to run: all of them on
a unit whose ``split_cores`` is ``all`` (RKNN's multi-core mode), else the ``k`` with the
shortest time alone, its shards sharing their memory's bandwidth. A core is never shared: a unit runs at most
``cores`` ops or shards at once.

``frames = N`` streams ``N`` copies of the graph through the same schedule; every core runs each
frame's ops in the schedule's order for it. ``EngineOptions.frame_order`` says how a core mixes
frames (:mod:`hwsim.sim.frames`):

- ``"interleaved"`` (default): dynamic dispatch. Each time a core is free it runs, among the
  frames admitted and not yet done on it, the next op of the *oldest* frame whose next op is
  ready; so frame ``i + 1``'s op runs before frame ``i``'s later ops while those wait for
  inputs from other cores (a chain alternating between cores pipelines);
- ``"frame-major"``: the core runs all of frame ``i``'s ops before any of frame ``i + 1``'s,
  waiting when the next one is not ready.

All inputs are there at time 0, or, with ``in_flight = K``, frame ``i`` is admitted when frame
``i - K`` completes; a core never runs an op of a frame not yet admitted (interleaved).

A workload (:mod:`hwsim.workload`) gives ``releases``: the ops of one frame in groups (one per
model instance), each group's inputs arriving at its own release time, and the groups in the
order they are served: a free core runs the next op of the first released group whose next op
is ready (:class:`~hwsim.sim.frames.Prioritized`). Without ``releases`` nothing changes.

Two what-ifs change the run only when asked for. A power cap (``EngineOptions.max_power_w``,
:mod:`hwsim.sim.power`) is a resource like the cores: an op or a transfer starts only when the
power it adds fits under the cap, else its core or link waits. A chip with a thermal model
(``Chip.thermal``, :mod:`hwsim.sim.thermal`) heats with the power; an op that starts while the
chip is at or above the throttle temperature runs its clock-bound compute at the throttled
clock, and its cores draw the power of that clock (``OpRecord.clock_factor``). The temperature
is in ``Trace.thermal``.

How the code is laid out:

- :mod:`hwsim.sim.plan` resolves the schedule into arrays by op and transfer index;
- :class:`Simulation` (here) holds the clock, the heap of typed events (:class:`EventKind`, instance) and the
  resources, and reacts to each event: it starts ops on free cores and transfers on free
  channels, streams blocks and transfers through :class:`~hwsim.sim.resources.SharedBandwidth`,
  and delivers tensors, which makes further ops ready;
- :mod:`hwsim.sim.frames` decides which frames are admitted and which op a free core runs;
- :mod:`hwsim.sim.records` keeps what happened and builds the :class:`Trace`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from enum import Enum

from chips.schema import Chip
from chips.units import PS_PER_NS
from cost_models.base import OpCost
from cost_models.table import CostTable, op_signature
from graph_ir.ir import ModelGraph
from hwsim.sim.blocks import Block, op_blocks, op_time_ns, shared_time_ns, stream_uses
from hwsim.sim.floor import makespan_floor_ps
from hwsim.sim.frames import Admission, Core, Dispatch, Prioritized, Release, dispatch_for
from hwsim.sim.jobs import Jobs
from hwsim.sim.options import FRAME_ORDERS, EngineOptions, SimulationError
from hwsim.sim.plan import Plan, plan, runs_in_lockstep
from hwsim.sim.power import PowerGate, blocks_dram_w, check_cap, chip_power_now, transfer_dram_w
from hwsim.sim.records import (
    OpLog,
    OpPhase,
    OpRecord,
    Trace,
    TransferLog,
    TransferRecord,
    build_trace,
)
from hwsim.sim.resources import ChannelPool, CorePool, Flow, SharedBandwidth
from hwsim.sim.splitting import shard_cost
from hwsim.sim.thermal import ThermalState
from scheduler.schedule import Schedule

__all__ = [
    "FRAME_ORDERS",
    "PS_PER_NS",
    "EngineOptions",
    "Event",
    "EventKind",
    "OpPhase",
    "OpRecord",
    "Simulation",
    "SimulationError",
    "Trace",
    "TransferRecord",
    "op_blocks",
    "op_time_ns",
    "simulate",
    "simulate_unless_slower",
]


class EventKind(Enum):
    """What happens at an event's time."""

    OP_BODY = "an op's overhead is paid: its first block starts"
    BLOCK_DONE = "an op's block is done: its next block starts, or the op ends"
    TRANSFER_BODY = "a transfer's link latency is paid: its bytes start streaming"
    TRANSFER_DONE = "a transfer's last byte arrived"
    RELEASE = "a group's (a workload instance's) inputs arrive"


#: An event: what happens, and to which op instance or transfer instance
#: (``frame * per_frame + index``). A plain tuple, not a class: the loop makes one per block.
Event = tuple[EventKind, int]


_OP_BODY, _BLOCK_DONE = EventKind.OP_BODY, EventKind.BLOCK_DONE
_TRANSFER_BODY, _TRANSFER_DONE = EventKind.TRANSFER_BODY, EventKind.TRANSFER_DONE
_RELEASE = EventKind.RELEASE
#: An op instance's memory uses before it starts (never read: :meth:`Simulation.launch` sets them).
_NO_USES: dict[str, float] = {}


class Simulation:
    """One run of a :class:`~hwsim.sim.plan.Plan`: the clock, the event heap, the resources.

    :meth:`run` processes events until none is left; :meth:`trace` then checks that everything
    ran and returns the :class:`Trace`. Op instances are ``frame * n_ops + op``, transfer
    instances ``frame * n_transfers + transfer``.
    """

    def __init__(
        self, graph: ModelGraph, chip: Chip, table: CostTable, run_plan: Plan,
        options: EngineOptions, frames: int, in_flight: int | None,
        releases: Sequence[Release] | None = None,
    ) -> None:  # fmt: skip
        p = self.plan = run_plan
        self.options, self.frames, self.in_flight = options, frames, in_flight
        self._graph, self._chip, self._precision_of = graph, chip, table.precision_of
        self._knobs_of = table.knobs_of
        self.n_ops, self.n_x = len(p.names), len(p.transfers.transfers)
        self.now = 0
        self._seq = 0
        self._heap: list[tuple[int, int, Event]] = []
        self.pools = {u: CorePool(u, n) for u, n in p.unit_cores.items()}
        self.links: dict[str, ChannelPool[int]] = {
            k: ChannelPool(k, n) for k, n in p.transfers.channels.items()
        }
        self._links_may_grant = False
        self.bandwidth: SharedBandwidth[Event] = SharedBandwidth(p.capacity_bytes_per_ps)
        self.admission = Admission(frames, in_flight, self.n_ops + self.n_x)
        #: Inputs each op instance still waits for; tensors present, as (frame, tensor, domain).
        self.pending = list(p.inputs_needed) * frames
        #: Ops that wait for no input: ready when their frame is admitted.
        self._no_inputs = [i for i, n in enumerate(p.inputs_needed) if n == 0]
        self._present: set[tuple[int, str, str]] = set()
        self.releases = tuple(releases) if releases is not None else None
        #: Whether each group of ``releases`` has been released.
        self.released = [False] * len(self.releases or ())
        self._index = {n: i for i, n in enumerate(p.names)} if releases is not None else {}
        self.dispatch = self._dispatch()
        self.op_log = OpLog.empty(p.names, p.op_types, p.unit, p.core, frames)
        self.transfer_log = TransferLog.empty(p.transfers.transfers, frames)
        total = self.n_ops * frames
        self._blocks: list[list[Block]] = [[] for _ in range(total)]
        self._block_at = [0] * total
        self._block_start = [0] * total
        #: What each byte of an op instance's blocks takes from each memory (spills: the DRAM's share).
        self._uses: list[dict[str, float]] = [_NO_USES] * total
        #: Each (cost, shards, memory) an op ran with: the cost, its blocks, their memory uses and
        #: bytes (identical ops share one cost object: a transformer's 100,000 ops have a few dozen).
        self._layouts: dict[tuple[int, int, str], tuple[OpCost, list[Block], dict[str, float], int]] = {}
        self._shard_costs: dict[tuple[int, int], OpCost | None] = {}
        #: The same by what they depend on (identical ops, as in a transformer's blocks, cost once).
        self._shard_costs_by_signature: dict[tuple[object, ...], OpCost | None] = {}
        # cores whose next op may have become startable since they were last looked at: a core
        # that could not start stays put until it frees, its op's inputs arrive, or a core of
        # its unit frees (an op waiting for several cores); so no event scans every core
        self._core_keys = {u: [(u, c) for c in range(n)] for u, n in p.unit_cores.items()}
        cores = [k for keys in self._core_keys.values() for k in keys]
        self._core_rank = {k: r for r, k in enumerate(cores)}
        self._to_check: set[Core] = set(cores)
        #: Whether some placement fixes more than one core (else no op waits for several).
        self._fixed_splits = any(k is not None and k > 1 for k in p.fixed_cores)
        self.power: PowerGate | None = None
        if options.max_power_w is not None:
            check_cap(chip, p, options.max_power_w, self.checked_shard_cost, options.double_buffer)
            self.power = PowerGate(chip, p, options.max_power_w)
            self._transfer_w = [transfer_dram_w(chip, p, j) for j in range(self.n_x)]
        self.thermal = ThermalState(chip.thermal) if chip.thermal is not None else None
        by_name = {u.name: u for u in chip.units}
        units = [by_name[u] for u in p.unit]
        #: Job boundaries of the units whose cores run in lockstep (None: no such unit here).
        self.jobs = Jobs(graph, units, table.fused_into) if any(runs_in_lockstep(u) for u in units) else None
        #: Ops that take every idle core when split (``split_cores: all``); an op fused into the
        #: layer before it is not a layer of its own, and its small remainder splits as it pays.
        self._split_all = tuple(
            u.split_cores == "all" and n not in table.fused_into for n, u in zip(p.names, units, strict=True)
        )
        #: Busy cores per unit by the clock factor they run at (kept with a thermal model only).
        self._clocks: dict[str, dict[float, int]] = {u: {} for u in p.unit_cores}

    def _dispatch(self) -> Dispatch:
        p, releases = self.plan, self.releases
        if releases is None:
            return dispatch_for(
                self.options.frame_order, p.core_order, self.n_ops, self.frames, self.pending, self.admission
            )
        if self.frames != 1:
            raise ValueError(f"releases need one frame, got frames={self.frames}")
        index = self._index
        group_of = [-1] * self.n_ops
        for g, rel in enumerate(releases):
            for name in rel.ops:
                group_of[index[name]] = g
        if -1 in group_of:
            raise ValueError(f"op {p.names[group_of.index(-1)]!r} is in no release group")
        return Prioritized(p.core_order, group_of, self.pending, self.released)

    # ---- the loop

    def push(self, time_ps: int, event: Event) -> None:
        """Schedule ``event`` at ``time_ps`` (after the events already due then)."""
        self._seq += 1
        heapq.heappush(self._heap, (time_ps, self._seq, event))

    def run(self) -> None:
        """Admit the first frames, then process events in time order until none is left."""
        if self.releases is None:
            for frame in self.admission.initial():
                self.admit(frame)
        else:
            self.admission.admit(0, 0)
            for g, rel in enumerate(self.releases):
                self.push(rel.release_ps, (_RELEASE, g))
        heap, bandwidth, handle = self._heap, self.bandwidth, self.handle
        while True:
            if self._to_check:
                self.start_ops()
            if self._links_may_grant:
                self.start_transfers()
            t_heap = heap[0][0] if heap else None
            t_flow = bandwidth.next_end_ps() if bandwidth.flows else None
            if t_heap is None or (t_flow is not None and t_flow < t_heap):
                if t_flow is None:
                    break
                t_next = t_flow
            else:
                t_next = t_heap
            if self.thermal is not None:
                watts = chip_power_now(self._chip, self._clocks, bandwidth.use_bytes_per_ps("dram"))
                self.thermal.advance(self.now, t_next, watts)
            bandwidth.advance(t_next - self.now)
            self.now = t_next
            done = bandwidth.release_finished(t_next)
            changed = bool(done)
            for flow in done:
                if flow.slowed:
                    self.note_stretch(flow)
                handle(flow.owner)
            while heap and heap[0][0] <= t_next:
                changed = handle(heapq.heappop(heap)[2]) or changed
            if changed:
                bandwidth.reallocate(t_next)

    def note_stretch(self, flow: Flow[Event]) -> None:
        """A block's or transfer's stream that ran below its rate is done: add the time it lost."""
        kind, inst = flow.owner
        if kind is _BLOCK_DONE:
            b = self._blocks[inst][self._block_at[inst]]
            self.op_log.stretch_ps[inst] += flow.stretch_ps(self._block_start[inst], b.bytes)
        else:
            xp = self.plan.transfers
            j = inst % self.n_x
            start = self.transfer_log.start_ps[inst] + xp.latency_ps[j]
            self.transfer_log.stretch_ps[inst] += flow.stretch_ps(start, xp.transfers[j].bytes)

    def handle(self, event: Event) -> bool:
        """React to ``event``; True when a flow started streaming."""
        kind, inst = event
        if kind is _OP_BODY:
            return self.start_block(inst)
        if kind is _BLOCK_DONE:
            return self.end_block(inst)
        if kind is _TRANSFER_BODY:
            return self.stream_transfer(inst)
        if kind is _RELEASE:
            self.release(inst)
            return False
        self.finish_transfer(inst)
        return False

    def trace(self) -> Trace:
        """The trace of the finished run.

        Raises
        ------
        SimulationError
            If some op or transfer never finished (the schedule's order deadlocks).
        """
        stuck = self.op_log.unfinished()
        if stuck:
            raise SimulationError(
                f"{len(stuck)} ops never ran (schedule order deadlocks), first: {stuck[:3]}"
            )
        undelivered = self.transfer_log.unfinished()
        if undelivered:
            raise SimulationError(f"transfers never completed: {undelivered[:3]}")
        return build_trace(
            self.op_log, self.transfer_log, self.bandwidth.samples, dict(self.plan.capacity_bytes_per_ps),
            self.frames, self.admission.admissions(), self.in_flight, self.options.frame_order,
            self.thermal.log() if self.thermal is not None else None,
        )  # fmt: skip

    # ---- tensors and frames

    def arrive(self, frame: int, tensor: str, domain: str) -> None:
        """``tensor`` of ``frame`` is now in ``domain``: ops waiting for it may start, transfers
        from there queue for their link."""
        key = (frame, tensor, domain)
        if key in self._present:
            return
        self._present.add(key)
        p, pending = self.plan, self.pending
        base = frame * self.n_ops
        for i in p.waiting.get((tensor, domain), ()):
            pending[base + i] -= 1
            if pending[base + i] == 0:
                self.op_log.ready_ps[base + i] = self.now
                self._to_check.add((p.unit[i], p.core[i]))
        xp = p.transfers
        for j in xp.outgoing.get((tensor, domain), ()):
            xi = frame * self.n_x + j
            self.transfer_log.queued_ps[xi] = self.now
            self.links[xp.link[j]].request(xi)
            self._links_may_grant = True

    def admit(self, frame: int) -> None:
        """``frame``'s graph inputs arrive in the host domain now."""
        self.admission.admit(frame, self.now)
        ready, base = self.op_log.ready_ps, frame * self.n_ops
        for i in self._no_inputs:
            ready[base + i] = self.now
        for name in self.plan.graph_inputs:
            self.arrive(frame, name, self.plan.host)

    def release(self, group: int) -> None:
        """Group ``group``'s inputs arrive in the host domain now; its ops may run."""
        assert self.releases is not None
        rel = self.releases[group]
        self.released[group] = True
        p, ready = self.plan, self.op_log.ready_ps
        index = self._index
        for name in rel.ops:
            i = index[name]
            if p.inputs_needed[i] == 0:
                ready[i] = self.now
            self._to_check.add((p.unit[i], p.core[i]))
        for name in rel.inputs:
            self.arrive(0, name, p.host)

    def frame_done(self, frame: int) -> None:
        """One op or transfer of ``frame`` finished (admits the next frame when it completes)."""
        nxt = self.admission.finished(frame)
        if nxt is not None:
            self.admit(nxt)

    # ---- ops on cores

    def shard_cost(self, i: int, shards: int) -> OpCost | None:
        """Cost of op ``i`` run as ``shards`` shards (its own cost for one; None: no such split)."""
        if shards == 1:
            return self.plan.cost[i]
        key = (i, shards)
        if key not in self._shard_costs:
            unit = self._chip.unit(self.plan.unit[i])
            op = self._graph.op(self.plan.names[i])
            precision, knobs = self._precision_of(op.name), self._knobs_of(op.name)
            sig = (op_signature(op), unit.name, precision, knobs, shards)
            if sig not in self._shard_costs_by_signature:
                self._shard_costs_by_signature[sig] = shard_cost(op, unit, self._chip, precision, shards, knobs)
            self._shard_costs[key] = self._shard_costs_by_signature[sig]
        return self._shard_costs[key]

    def checked_shard_cost(self, i: int, shards: int) -> OpCost:
        """:meth:`shard_cost` of a split the plan has checked (``Placement.cores``)."""
        cost = self.shard_cost(i, shards)
        assert cost is not None
        return cost

    def cost_now(self, i: int, shards: int) -> OpCost:
        """The cost op ``i`` runs with as ``shards`` shards if it starts now (throttled when hot)."""
        cost = self.checked_shard_cost(i, shards)
        return self.thermal.cost_now(cost) if self.thermal is not None else cost

    def best_shards(self, inst: int, most: int) -> int:
        """The number of shards, up to ``most``, op instance ``inst`` runs as: ``most`` on a unit
        whose ``split_cores`` is ``all`` (one where the op does not split so; a fused op aside),
        else the count with the shortest time alone (:meth:`shared_time_ns`), a job boundary it
        would need that way included (:mod:`hwsim.sim.jobs`)."""
        jobs, i = self.jobs, inst % self.n_ops
        if self._split_all[i]:
            return most if self.shard_cost(i, most) is not None else 1
        best, best_t = 1, self.shared_time_ns(i, self.plan.cost[i], 1)
        if jobs is not None:
            best_t += jobs.barrier_ns(inst, 1)
        for k in range(2, most + 1):
            c = self.shard_cost(i, k)
            if c is not None:
                t = self.shared_time_ns(i, c, k) + (jobs.barrier_ns(inst, k) if jobs is not None else 0.0)
                if t < best_t:
                    best, best_t = k, t
        return best

    def shared_time_ns(self, i: int, cost: OpCost, shards: int) -> float:
        """:func:`~hwsim.sim.blocks.shared_time_ns` of op ``i`` run as ``shards`` shards of ``cost``."""
        uses = stream_uses(cost, self.plan.memory[i])
        return shared_time_ns(cost, shards, uses, self.plan.capacity_bytes_per_ps, self.options.double_buffer)

    def start_ops(self) -> None:
        """Start every op that can start now on the cores that may have changed."""
        to_check = self._to_check
        if not to_check:
            return
        candidates = list(to_check) if len(to_check) == 1 else sorted(to_check, key=self._core_rank.__getitem__)
        to_check.clear()
        if self._fixed_splits:
            self._start_fixed_splits(candidates)
        self._start_others(candidates)

    def _start_fixed_splits(self, candidates: list[Core]) -> None:
        """Ops whose placement fixes ``k > 1`` cores take idle cores first, all ``k`` or none."""
        ready, fixed, n_ops = self.dispatch.ready, self.plan.fixed_cores, self.n_ops
        for k in candidates:
            pool = self.pools[k[0]]
            if pool.busy[k[1]]:
                continue
            inst = ready(k)
            if inst < 0:
                continue
            want = fixed[inst % n_ops]
            if want is None or want <= 1:
                continue
            cores = pool.request(k[1], want - 1)
            if cores is not None and self.power_fits(k, inst, cores):
                self.launch(k, inst, cores)

    def _start_others(self, candidates: list[Core]) -> None:
        """Every other ready op; an unfixed splittable one borrows idle cores with nothing ready."""
        ready, p, n_ops = self.dispatch.ready, self.plan, self.n_ops
        split = self.options.split
        for k in candidates:
            unit, core = k
            pool = self.pools[unit]
            if pool.busy[core]:
                continue
            inst = ready(k)
            if inst < 0:
                continue
            i = inst % n_ops
            want = p.fixed_cores[i]
            if want is not None and want > 1:
                continue
            cores: tuple[int, ...] = (core,)
            if want is None and split and p.splittable[i]:
                spare = [c for c in pool.idle(core) if ready((unit, c)) < 0]
                if spare:
                    cores = (core, *spare[: self.best_shards(inst, 1 + len(spare)) - 1])
            pool.acquire(cores)
            if not self.power_fits(k, inst, cores):
                if len(cores) == 1:
                    continue
                cores = (core,)  # the split does not fit under the power cap: one core may
                pool.acquire(cores)
                if not self.power_fits(k, inst, cores):
                    continue
            self.launch(k, inst, cores)

    def power_fits(self, k: Core, inst: int, cores: tuple[int, ...]) -> bool:
        """Op instance ``inst`` may start on ``cores`` (taken) under the power cap; when it may
        not, the cores are given back and ``k`` waits for power to be released."""
        gate = self.power
        if gate is None:
            return True
        i, pool = inst % self.n_ops, self.pools[k[0]]
        cost = self.cost_now(i, len(cores))
        blocks = op_blocks(cost, self.options.double_buffer, len(cores))
        dram_w = blocks_dram_w(self._chip, stream_uses(cost, self.plan.memory[i]), blocks, gate.dram_capacity)
        if gate.take_op(inst, k[0], sum(pool.busy) - len(cores), len(cores), dram_w):
            return True
        pool.release(cores)
        gate.blocked_cores.add(k)
        return False

    def power_released(self) -> None:
        """Power was given back: cores and links that waited for it look again."""
        gate = self.power
        assert gate is not None
        self._to_check.update(gate.blocked_cores)
        gate.blocked_cores.clear()
        if gate.links_blocked:
            gate.links_blocked = False
            self._links_may_grant = True


    def launch(self, k: Core, inst: int, cores: tuple[int, ...]) -> None:
        """Start op instance ``inst`` on ``cores`` (already taken; ``k``'s core first)."""
        i = inst % self.n_ops
        shards = len(cores)
        # one core, no thermal model: the op's own cost (what cost_now gives, without its calls)
        cost = self.plan.cost[i] if shards == 1 and self.thermal is None else self.cost_now(i, shards)
        log, now = self.op_log, self.now
        if self.thermal is not None:
            f = log.clock_factor[inst] = self.thermal.clock_factor
            if self.thermal.throttled:
                self.thermal.throttled_ops += 1
            clocks = self._clocks[k[0]]
            clocks[f] = clocks.get(f, 0) + shards
        self.dispatch.took(k, inst)
        log.start_ps[inst] = now
        log.tiles[inst] = cost.tiles
        log.used_cores[inst] = cores if shards > 1 else ()
        memory = self.plan.memory[i]
        layout = self._layouts.get((id(cost), shards, memory))
        if layout is None:  # the layout holds its cost, so no other cost gets its id meanwhile
            blocks = op_blocks(cost, self.options.double_buffer, shards)
            layout = (cost, blocks, stream_uses(cost, memory), sum(b.bytes for b in blocks))
            self._layouts[(id(cost), shards, memory)] = layout
        self._blocks[inst], self._uses[inst], log.dram_bytes[inst] = layout[1], layout[2], layout[3]
        log.spill_bytes[inst] = cost.spill_bytes * shards
        # a lockstep unit's job boundary before the op: one more set-up-and-sync (hwsim.sim.jobs)
        overhead_ns = cost.overhead_ns + self.jobs.enter(inst, shards) if self.jobs is not None else cost.overhead_ns
        self._seq += 1  # push(), inlined: once per op
        heapq.heappush(self._heap, (now + math.ceil(overhead_ns * PS_PER_NS), self._seq, (_OP_BODY, inst)))

    def start_block(self, inst: int) -> bool:
        """Start the op's next block (or finish the op); True when a flow was added."""
        blocks = self._blocks[inst]
        at = self._block_at[inst]
        if at >= len(blocks):
            self.finish_op(inst)
            return False
        b = blocks[at]
        now = self._block_start[inst] = self.now
        if b.bytes > 0 and b.dur_ns > 0:
            self.bandwidth.request(
                b.bytes, b.bytes / (b.dur_ns * PS_PER_NS), self._uses[inst], (_BLOCK_DONE, inst)
            )
            return True
        self.push(now + math.ceil(b.dur_ns * PS_PER_NS), (_BLOCK_DONE, inst))
        return False

    def end_block(self, inst: int) -> bool:
        """The op's current block is done: note its phases, start the next; True: a flow started."""
        blocks = self._blocks[inst]
        b = blocks[self._block_at[inst]]
        if len(blocks) > 1:  # tiled: keep the phases for the trace
            s, now = self._block_start[inst], self.now
            phases = self.op_log.phases[inst]
            if b.compute_ns > 0:
                end = min(now, s + math.ceil(b.compute_ns * PS_PER_NS))
                phases.append(OpPhase("compute", b.tiles, s, end))
            if b.bytes > 0:
                phases.append(OpPhase("memory", b.tiles, s, now, b.bytes))
        self._block_at[inst] += 1
        return self.start_block(inst)

    def finish_op(self, inst: int) -> None:
        """Free the op's cores and deliver its outputs in its unit's domain."""
        self.op_log.end_ps[inst] = self.now
        p = self.plan
        i = inst % self.n_ops
        unit = p.unit[i]
        cores = self.op_log.used_cores[inst] or (p.core[i],)
        self.pools[unit].release(cores)
        if self.thermal is not None:
            self._clocks[unit][self.op_log.clock_factor[inst]] -= len(cores)
        if self.power is not None:
            self.power.release_op(inst, unit, sum(self.pools[unit].busy), len(cores))
            self.power_released()
        self._to_check.update(self._core_keys[unit])
        frame = inst // self.n_ops
        for name in p.outputs[i]:
            self.arrive(frame, name, p.domain[i])
        self.frame_done(frame)

    # ---- transfers on links

    def start_transfers(self) -> None:
        """Hand free DMA channels to queued transfers, link by link; each pays its latency first."""
        self._links_may_grant = False
        latency, n_x, now, log = (
            self.plan.transfers.latency_ps,
            self.n_x,
            self.now,
            self.transfer_log,
        )
        admit = self._admit_transfer if self.power is not None else None
        for pool in self.links.values():
            for xi, channel in pool.grant(admit):
                log.channel[xi] = channel
                log.start_ps[xi] = now
                self.push(now + latency[xi % n_x], (_TRANSFER_BODY, xi))

    def _admit_transfer(self, xi: int) -> bool:
        """Transfer instance ``xi`` may take a channel under the power cap (its DRAM power fits)."""
        assert self.power is not None
        return self.power.take_transfer(xi, self._transfer_w[xi % self.n_x])

    def stream_transfer(self, xi: int) -> bool:
        """The transfer's latency is paid: stream its bytes; True when a flow was added."""
        xp = self.plan.transfers
        j = xi % self.n_x
        nbytes = xp.transfers[j].bytes
        if nbytes <= 0:
            self.finish_transfer(xi)
            return False
        self.bandwidth.request(nbytes, xp.rate_bytes_per_ps[j], xp.uses[j], (_TRANSFER_DONE, xi))
        return True

    def finish_transfer(self, xi: int) -> None:
        """Free the transfer's channel and deliver its tensor in the destination domain."""
        self.transfer_log.end_ps[xi] = self.now
        xp = self.plan.transfers
        j = xi % self.n_x
        self.links[xp.link[j]].release(self.transfer_log.channel[xi])
        self._links_may_grant = True
        if self.power is not None:
            self.power.release_transfer(xi)
            self.power_released()
        frame = xi // self.n_x
        self.arrive(frame, xp.transfers[j].tensor, xp.transfers[j].dst_domain)
        self.frame_done(frame)


def simulate(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    schedule: Schedule,
    options: EngineOptions | None = None,
    frames: int = 1,
    in_flight: int | None = None,
    releases: Sequence[Release] | None = None,
) -> Trace:
    """Run ``schedule`` (``frames`` times over, pipelined) and return the :class:`Trace`.

    ``in_flight = K`` admits frame ``i``'s inputs only when frame ``i - K`` has completed (at
    most K frames in the system; the trace keeps the admission times); None: every frame's
    inputs are there at time 0. ``releases`` (one frame only) groups the ops, each group's
    inputs arriving at its release time, served in the order given (:mod:`hwsim.sim.frames`).

    Raises
    ------
    SimulationError
        If some op can never start (the schedule's per-core order contradicts the graph), or a
        placement asks for more cores than its unit has or splits an op the unit cannot split.
    ValueError
        If ``frames < 1``, ``in_flight < 1`` or the frame order is not one of :data:`FRAME_ORDERS`.
    """
    sim = _simulation(graph, chip, table, schedule, options, frames, in_flight, releases)
    sim.run()
    return sim.trace()


def simulate_unless_slower(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    schedule: Schedule,
    beat_ps: int,
    options: EngineOptions | None = None,
) -> Trace | None:
    """:func:`simulate`'s trace of one frame, or None, without running it, when the run cannot
    finish before ``beat_ps``: its :func:`~hwsim.sim.floor.makespan_floor_ps` is ``beat_ps`` or
    more (a schedule that can at best tie a makespan already simulated need not run).

    Raises
    ------
    SimulationError, ValueError
        As :func:`simulate`.
    """
    sim = _simulation(graph, chip, table, schedule, options, 1, None, None)
    if makespan_floor_ps(sim.plan, sim.shard_cost, sim.options.double_buffer, sim.options.split) >= beat_ps:
        return None
    sim.run()
    return sim.trace()


def _simulation(
    graph: ModelGraph, chip: Chip, table: CostTable, schedule: Schedule, options: EngineOptions | None,
    frames: int, in_flight: int | None, releases: Sequence[Release] | None,
) -> Simulation:  # fmt: skip
    """The checked arguments of :func:`simulate` as a :class:`Simulation` ready to run."""
    opts = options if options is not None else EngineOptions()
    if frames < 1:
        raise ValueError(f"frames must be at least 1, got {frames}")
    if in_flight is not None and in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, got {in_flight}")
    if opts.frame_order not in FRAME_ORDERS:
        raise ValueError(
            f"frame_order must be one of {', '.join(FRAME_ORDERS)}, got {opts.frame_order!r}"
        )
    return Simulation(
        graph, chip, table, plan(graph, chip, table, schedule), opts, frames, in_flight, releases
    )
