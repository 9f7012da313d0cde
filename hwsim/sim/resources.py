"""The engine's resources: a unit's cores, a link's DMA channels, the memories' bandwidth.

Each is a small class that the event loop (:mod:`hwsim.sim.engine`) asks for what it needs and
gives back what it is done with; none of them knows about ops, frames or time beyond what it is
handed, so each can be tried alone.

- :class:`CorePool`: the cores of one unit. A core runs one op, or one shard of a split op, at
  a time; an op split ``k`` ways takes ``k`` cores at once or none.
- :class:`ChannelPool`: the DMA channels of one link, keyed by :attr:`chips.schema.Link.key`
  (both directions of a bidirectional link share them). Transfers wait in a FIFO queue; a
  free channel goes to the oldest waiting transfer, the lowest-numbered channel first.
- :class:`SharedBandwidth`: the bandwidth of every memory (the shared DRAM, an SRAM domain's
  own), shared max-min fairly by the flows streaming through it at the same moment, each flow
  also capped at its own uncontended rate (:func:`max_min_rates`).
- :class:`PowerBudget`: a power cap in watts (``hwsim run --max-power-w``); an op or a transfer
  takes the power it may add for as long as it runs, or waits (:mod:`hwsim.sim.power` says how
  much each takes).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from hwsim.sim.options import SimulationError

__all__ = ["ChannelPool", "CorePool", "Flow", "PowerBudget", "SharedBandwidth", "max_min_rates"]

T = TypeVar("T")
O = TypeVar("O", bound=Hashable)
#: A flow set's shares: each flow's rate (bytes/ps), whether it was slowed, each memory's use.
_Shares = tuple[tuple[float, ...], tuple[bool, ...], tuple[float, ...]]


class CorePool:
    """The cores of one unit (numbered from 0), each busy with one op or shard, or idle.

    >>> pool = CorePool("npu", 3)
    >>> pool.request(1, extra=1)  # core 1 and one more idle core for a 2-way split
    (1, 0)
    >>> pool.request(2, extra=1) is None  # only core 2 is idle: the split must wait
    True
    >>> pool.release((1, 0)); pool.idle()
    [0, 1, 2]
    """

    __slots__ = ("busy", "unit")

    def __init__(self, unit: str, cores: int) -> None:
        if cores < 1:
            raise ValueError(f"unit {unit!r} needs at least one core, got {cores}")
        self.unit = unit
        #: ``busy[c]``: core ``c`` runs something.
        self.busy = [False] * cores

    def __len__(self) -> int:
        return len(self.busy)

    def idle(self, besides: int = -1) -> list[int]:
        """The idle cores other than ``besides``, lowest first."""
        return [c for c, b in enumerate(self.busy) if not b and c != besides]

    def request(self, core: int, extra: int = 0) -> tuple[int, ...] | None:
        """Take ``core`` and the ``extra`` lowest-numbered other idle cores, ``core`` first.

        All or nothing: None, taking nothing, when ``core`` is busy or fewer than ``extra``
        other cores are idle (the caller waits for a core to be released).
        """
        if self.busy[core]:
            return None
        others = self.idle(core)
        if len(others) < extra:
            return None
        taken = (core, *others[:extra])
        self.acquire(taken)
        return taken

    def acquire(self, cores: Sequence[int]) -> None:
        """Take exactly ``cores``; a busy one is a bug of the caller (ValueError)."""
        busy = self.busy
        for c in cores:
            if busy[c]:
                raise ValueError(f"core {c} of unit {self.unit!r} is busy")
        for c in cores:
            busy[c] = True

    def release(self, cores: Iterable[int]) -> None:
        """Give ``cores`` back; one that was not taken is a bug of the caller (ValueError)."""
        busy = self.busy
        for c in cores:
            if not busy[c]:
                raise ValueError(f"core {c} of unit {self.unit!r} was not taken")
            busy[c] = False


class ChannelPool(Generic[T]):
    """The DMA channels of one link and the FIFO queue of transfers waiting for one.

    >>> link = ChannelPool("a<->b", 2)
    >>> for t in ("x", "y", "z"):
    ...     link.request(t)
    >>> link.grant()  # two channels: the first two transfers start, the third waits
    [('x', 0), ('y', 1)]
    >>> link.release(1); link.grant()
    [('z', 1)]
    """

    __slots__ = ("_free", "_queue", "key")

    def __init__(self, key: str, channels: int) -> None:
        if channels < 1:
            raise ValueError(f"link {key!r} needs at least one DMA channel, got {channels}")
        self.key = key
        self._free = list(range(channels))  # a heap: the lowest free channel first
        self._queue: deque[T] = deque()

    @property
    def waiting(self) -> int:
        """Transfers queued for a channel."""
        return len(self._queue)

    @property
    def free(self) -> int:
        """Channels idle now."""
        return len(self._free)

    def request(self, transfer: T) -> None:
        """Queue ``transfer`` for a channel (it starts at the next :meth:`grant` with one free)."""
        self._queue.append(transfer)

    def grant(self, admit: Callable[[T], bool] | None = None) -> list[tuple[T, int]]:
        """Hand free channels to waiting transfers, oldest first: ``(transfer, channel)`` pairs.

        ``admit`` (optional) may hold the oldest waiting transfer back (it returns False): the
        queue stays as it is, first in first out, until a later grant admits it.
        """
        out = []
        queue, free = self._queue, self._free
        while queue and free:
            if admit is not None and not admit(queue[0]):
                break
            out.append((queue.popleft(), heapq.heappop(free)))
        return out

    def release(self, channel: int) -> None:
        """Give ``channel`` back (a transfer on it ended)."""
        heapq.heappush(self._free, channel)


class PowerBudget:
    """A power cap, in watts: what is drawn regardless (``base_w``) plus what running work took.

    Work takes the power it may add when it starts (:meth:`request`) and gives it back when it
    ends (:meth:`release`); a request that would go over the cap takes nothing and the work
    waits, like a core or a DMA channel. Part of a request may be ``pooled``: power drawn from
    one resource that never draws more than ``pool_max_w`` however many take from it (the
    DRAM: its streams share its bandwidth), so the pooled takings count at most that much.

    >>> cap = PowerBudget(5.0, base_w=1.0)
    >>> cap.request(3.0), cap.request(2.0)  # 1 + 3 fits, 1 + 3 + 2 does not
    (True, False)
    >>> cap.release(3.0); cap.request(2.0), cap.in_use_w
    (True, 3.0)
    >>> dram = PowerBudget(5.0, base_w=1.0, pool_max_w=1.5)
    >>> [dram.request(0.8, pooled=1.0) for _ in range(4)], round(dram.drawn_w, 9)  # 1 + 3 x 0.8 + 1.5
    ([True, True, True, False], 4.9)
    """

    __slots__ = ("cap_w", "in_use_w", "pool_max_w", "pooled_w")

    #: Relative slack for float round-off when a request just reaches the cap.
    EPS = 1e-9

    def __init__(self, cap_w: float, base_w: float = 0.0, pool_max_w: float = math.inf) -> None:
        if not cap_w > 0:
            raise ValueError(f"a power cap must be a positive number of watts, got {cap_w}")
        if base_w > cap_w * (1 + self.EPS):
            raise ValueError(f"the cap ({cap_w:g} W) is below the power drawn regardless ({base_w:g} W)")
        self.cap_w = cap_w
        #: Watts taken outside the pool, ``base_w`` included.
        self.in_use_w = base_w
        #: Watts taken from the pool (may pass ``pool_max_w``; only that much counts).
        self.pooled_w = 0.0
        self.pool_max_w = pool_max_w

    @property
    def drawn_w(self) -> float:
        """The most the chip can draw with what is taken: the pool counted up to its maximum."""
        return self._drawn_w(0.0, 0.0)

    def _drawn_w(self, watts: float, pooled: float) -> float:
        return self.in_use_w + watts + min(self.pooled_w + pooled, self.pool_max_w)

    def fits(self, watts: float, pooled: float = 0.0) -> bool:
        """``watts`` more, and ``pooled`` more from the pool, stay within the cap."""
        return self._drawn_w(watts, pooled) <= self.cap_w * (1 + self.EPS)

    def request(self, watts: float, pooled: float = 0.0) -> bool:
        """Take ``watts`` and ``pooled`` if they fit (True), else take nothing (False)."""
        if not self.fits(watts, pooled):
            return False
        self.in_use_w += watts
        self.pooled_w += pooled
        return True

    def release(self, watts: float, pooled: float = 0.0) -> None:
        """Give back what :meth:`request` took."""
        self.in_use_w -= watts
        self.pooled_w -= pooled


@dataclass(slots=True)
class Flow(Generic[O]):
    """Bytes streaming through memories at ``rate`` bytes/ps, at most ``cap`` bytes/ps.

    ``uses`` maps each memory the flow streams through to the bytes of that memory's bandwidth
    one byte of the flow takes (a DRAM-to-DRAM copy reads and writes: 2). ``owner`` is what the
    caller gets back when the flow is done; ``slowed``: it has streamed below its cap
    (:func:`max_min_rates` sets it).
    """

    seq: int
    remaining: float
    cap: float
    uses: dict[str, float]
    owner: O
    rate: float = 0.0
    end_ps: int = 0
    slowed: bool = False
    #: Its part of a flow set's key in :meth:`SharedBandwidth.reallocate`'s memo: the number
    #: its ``(cap, uses)`` got there (-1: none yet).
    share_id: int = field(default=-1, repr=False, compare=False)

    def stretch_ps(self, start_ps: int, nbytes: float) -> float:
        """Once done, when it was requested at ``start_ps`` for ``nbytes``: the time it lost to
        streaming below its cap (0 unless ``slowed``).

        That is the integral of ``1 - rate / cap`` over its time: its time less the time the
        bytes it streamed (to the end's whole picosecond) take at its cap.

        >>> f = Flow(1, -0.5, 1.0, {"dram": 1.0}, "a", end_ps=150, slowed=True)
        >>> f.stretch_ps(0, 100.0)  # 100.5 bytes in 150 ps at most 1 byte/ps
        49.5
        """
        if not self.slowed:
            return 0.0
        return max(0.0, (self.end_ps - start_ps) - (nbytes - self.remaining) / self.cap)


def max_min_rates(flows: Sequence[Flow[O]], capacity: Mapping[str, float]) -> None:
    """Set every flow's ``rate``: max-min fair under the per-flow caps and memory capacities.

    Progressive filling: all unfrozen flows speed up together until one reaches its cap or a
    memory is saturated; those freeze, the others go on. A flow frozen below its cap is marked
    ``slowed``.

    >>> a, b = Flow(1, 100.0, 1.0, {"dram": 1.0}, "a"), Flow(2, 100.0, 0.25, {"dram": 1.0}, "b")
    >>> max_min_rates([a, b], {"dram": 1.0}); a.rate, b.rate, a.slowed, b.slowed
    (0.75, 0.25, True, False)
    """
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
        if saturated:  # flows frozen below their cap
            for f in active:
                if f.cap - f.rate > 1e-15 and saturated & f.uses.keys():
                    f.slowed = True
        active = [f for f in active if f.cap - f.rate > 1e-15 and not (saturated & f.uses.keys())]


class SharedBandwidth(Generic[O]):
    """Every memory's bandwidth (bytes/ps), shared by the flows streaming through it.

    The loop :meth:`request` s a flow, and after any change :meth:`reallocate` s: each flow
    gets its max-min fair rate and the time it will end at that rate. Between changes the loop
    :meth:`advance` s the clock and :meth:`release_finished` hands back the flows done by then,
    each able to say the time it lost to running below its cap (:meth:`Flow.stretch_ps`).
    Every change of a memory's total use is kept in :attr:`samples`.

    >>> bw = SharedBandwidth({"dram": 1.0})
    >>> _ = bw.request(100, 1.0, {"dram": 1.0}, "a"); _ = bw.request(100, 1.0, {"dram": 1.0}, "b")
    >>> bw.reallocate(0); bw.next_end_ps()  # two flows at 0.5 bytes/ps each
    200
    >>> bw.advance(200); [f.owner for f in bw.release_finished(200)]
    ['a', 'b']
    """

    __slots__ = ("_last_use", "_next_end", "_seq", "_share_ids", "_shares", "capacity", "flows", "samples")

    #: At most this many flow sets' shares are remembered (then the memo starts afresh).
    MEMO_SIZE = 1 << 16

    def __init__(self, capacity: Mapping[str, float]) -> None:
        self.capacity = dict(capacity)
        #: The flows streaming now, oldest first.
        self.flows: list[Flow[O]] = []
        #: ``(time_ps, memory, bytes_per_ps)`` whenever a memory's total use changes.
        self.samples: list[tuple[int, str, float]] = []
        self._last_use = {m: 0.0 for m in self.capacity}
        self._seq = 0
        #: The first flow end as of the last :meth:`reallocate` (-1: not known since a flow
        #: came or went; None: nothing streams).
        self._next_end: int | None = -1
        #: Each flow set's shares by its flows' ``(cap, uses)`` in order (each numbered once
        #: in ``_share_ids``: a tuple of small ints hashes faster than one of nested tuples):
        #: their rates, which ones :func:`max_min_rates` slowed, each memory's total use (the
        #: same floats again).
        self._shares: dict[tuple[int, ...], _Shares] = {}
        self._share_ids: dict[tuple[float, tuple[tuple[str, float], ...]], int] = {}

    def request(self, nbytes: float, cap: float, uses: dict[str, float], owner: O) -> Flow[O]:
        """Start streaming ``nbytes`` at most ``cap`` bytes/ps; rates change at :meth:`reallocate`."""
        self._seq += 1
        flow = Flow(self._seq, nbytes, cap, uses, owner)
        key = (cap, tuple(uses.items()))
        ids = self._share_ids
        flow.share_id = ids.get(key, -1)
        if flow.share_id < 0:
            flow.share_id = ids[key] = len(ids)
        self.flows.append(flow)
        self._next_end = -1
        return flow

    def use_bytes_per_ps(self, memory: str) -> float:
        """The total rate streaming through ``memory`` now (as of the last :meth:`reallocate`)."""
        return self._last_use[memory]

    def next_end_ps(self) -> int | None:
        """When the first flow ends at the current rates (None: nothing streams)."""
        if self._next_end == -1:  # a flow came or went since the rates were set
            return min((f.end_ps for f in self.flows), default=None)
        return self._next_end

    def advance(self, dt_ps: int) -> None:
        """Stream every flow for ``dt_ps`` at its current rate."""
        for f in self.flows:
            f.remaining -= f.rate * dt_ps

    def release_finished(self, now_ps: int) -> list[Flow[O]]:
        """Remove and return the flows that end by ``now_ps``, in the order they started."""
        first = self._next_end
        if first is None or now_ps < first:  # known, and nothing ends yet
            return []
        flows = self.flows
        done = [f for f in flows if f.end_ps <= now_ps]
        if done:
            flows[:] = [f for f in flows if f.end_ps > now_ps]
            done.sort(key=lambda f: f.seq)
            self._next_end = -1
        return done

    def reallocate(self, now_ps: int) -> None:
        """Share the bandwidth anew among the flows; note each memory whose total use changed.

        A flow set seen before (the same caps and uses, in the same order) gets the shares it
        got then, without the progressive filling again.

        Raises
        ------
        SimulationError
            If a flow gets no bandwidth at all (it streams through a zero-capacity memory).
        """
        flows = self.flows
        key = tuple([f.share_id for f in flows])
        shares = self._shares.get(key)
        if shares is None:
            shares = self._share(flows)
            if len(self._shares) >= self.MEMO_SIZE:
                self._shares.clear()
            self._shares[key] = shares
        rates, slowed, use = shares
        first: int | None = None
        for f, rate, slow in zip(flows, rates, slowed):
            f.rate = rate
            if slow:
                f.slowed = True
            end = f.end_ps = now_ps + max(1, math.ceil(f.remaining / rate))
            if first is None or end < first:
                first = end
        self._next_end = first
        last = self._last_use
        for m, u in zip(self.capacity, use):
            if abs(u - last[m]) > 1e-12:
                self.samples.append((now_ps, m, u))
                last[m] = u

    def _share(self, flows: list[Flow[O]]) -> _Shares:
        """:func:`max_min_rates` of ``flows``: their rates, which it slowed, each memory's use."""
        before = [f.slowed for f in flows]
        for f in flows:
            f.slowed = False
        max_min_rates(flows, self.capacity)
        slowed = tuple(f.slowed for f in flows)
        for f, was in zip(flows, before):
            f.slowed = was or f.slowed
        use = dict.fromkeys(self.capacity, 0.0)
        for f in flows:
            if f.rate <= 0:
                dead = ", ".join(sorted(m for m in f.uses if self.capacity[m] <= 0))
                raise SimulationError(
                    f"a memory stream has no bandwidth (zero-capacity memory: {dead or 'none, cap 0'})"
                )
            for m, a in f.uses.items():
                use[m] += a * f.rate
        return tuple(f.rate for f in flows), slowed, tuple(use.values())
