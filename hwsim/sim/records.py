"""What the engine leaves behind: one record per op and per transfer, gathered in a :class:`Trace`.

While it runs, the engine notes each op instance's and each transfer instance's times in an
:class:`OpLog` and a :class:`TransferLog` (an instance of frame ``f`` is
``f * per_frame + index``); :func:`build_trace` turns them into the frozen, time-ordered records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter

from chips.units import PS_PER_NS
from hwsim.sim.thermal import ThermalLog
from scheduler.schedule import Transfer

__all__ = ["OpLog", "OpPhase", "OpRecord", "Trace", "TransferLog", "TransferRecord", "build_trace"]


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

    ``stretch_ps`` is how much longer it ran than it would have alone: sharing a memory's
    bandwidth slowed its streams below their own rate (:class:`hwsim.sim.resources.Flow`). So
    ``duration_ps`` is its uncontended time (:func:`hwsim.sim.blocks.op_time_ns` of the cost it
    ran with, shards included) plus ``stretch_ps``, up to a picosecond per block of rounding.
    ``wait_core_ps`` is how long it waited between being ready (its last input arrived in its
    domain; its frame admitted, for an op without inputs) and starting: its core was busy, or
    the schedule's order for the core put another op first. ``clock_factor`` is the clock it
    ran at, a fraction of the nominal clock (below 1: it started while the chip was throttled,
    :mod:`hwsim.sim.thermal`; its cores drew :func:`cost_models.energy.core_power_w` at it).
    ``spill_bytes`` is the part of ``dram_bytes`` that is SRAM spill traffic
    (``OpCost.spill_bytes``): streamed through the DRAM whatever the op's domain.
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
    stretch_ps: int = 0
    wait_core_ps: int = 0
    clock_factor: float = 1.0
    spill_bytes: int = 0

    @property
    def duration_ps(self) -> int:
        return self.end_ps - self.start_ps

    @property
    def all_cores(self) -> tuple[int, ...]:
        """Every core the op occupied."""
        return self.cores or (self.core,)


@dataclass(frozen=True, slots=True)
class TransferRecord:
    """One DMA transfer: queued when its tensor was ready, started when a channel was free.

    It waited ``start_ps - queued_ps`` for a channel (:attr:`wait_channel_ps`), then took its
    link's latency plus ``bytes`` at the link's rate, plus ``stretch_ps``: the time lost
    because the memories it streams through were shared, or are slower than the link (a
    DRAM-to-DRAM copy reads and writes DRAM), up to a picosecond of rounding.
    """

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
    stretch_ps: int = 0

    @property
    def wait_channel_ps(self) -> int:
        """How long it waited in its link's queue for a free DMA channel."""
        return self.start_ps - self.queued_ps


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
    #: How cores ordered the frames' ops (:data:`hwsim.sim.options.FRAME_ORDERS`).
    frame_order: str = "interleaved"
    #: The temperature over the run (a chip with a thermal model; None: none).
    thermal: ThermalLog | None = None

    @property
    def makespan_ns(self) -> float:
        return self.makespan_ps / PS_PER_NS


@dataclass(slots=True)
class OpLog:
    """Each op instance as the engine ran it (``-1``: not yet); the per-op facts come first.

    ``names``, ``op_types``, ``units`` and ``cores`` are per op of one frame (the graph's
    order); the other lists per instance (``frame * len(names) + op``). ``ready_ps``: when the
    instance could have started (its last input there); ``stretch_ps``: the time its streams
    lost to bandwidth sharing (unrounded); ``clock_factor``: the clock it ran at;
    ``spill_bytes``: its DRAM bytes that are spill traffic.
    """

    names: Sequence[str]
    op_types: Sequence[str]
    units: Sequence[str]
    cores: Sequence[int]
    start_ps: list[int]
    end_ps: list[int]
    tiles: list[int]
    used_cores: list[tuple[int, ...]]
    phases: list[list[OpPhase]]
    dram_bytes: list[int]
    ready_ps: list[int]
    stretch_ps: list[float]
    clock_factor: list[float]
    spill_bytes: list[int]

    @classmethod
    def empty(
        cls, names: Sequence[str], op_types: Sequence[str], units: Sequence[str],
        cores: Sequence[int], frames: int,
    ) -> OpLog:  # fmt: skip
        """A log of ``frames`` copies of the ops, none run yet."""
        n = len(names) * frames
        return cls(
            names, op_types, units, cores, [-1] * n, [-1] * n, [1] * n, [()] * n,
            [[] for _ in range(n)], [0] * n, [-1] * n, [0.0] * n, [1.0] * n, [0] * n,
        )  # fmt: skip

    def unfinished(self) -> list[str]:
        """Names of the op instances that never ended."""
        n = len(self.names)
        return [self.names[x % n] for x, end in enumerate(self.end_ps) if end < 0]

    def records(self) -> list[OpRecord]:
        """The records, ordered by start, unit, core, frame, then the op's place in the graph."""
        n = len(self.names)
        keyed = []
        for inst in range(len(self.end_ps)):
            i, frame = inst % n, inst // n
            start, ready = self.start_ps[inst], self.ready_ps[inst]
            r = OpRecord(
                self.names[i], self.op_types[i], self.units[i], self.cores[i], start,
                self.end_ps[inst], self.dram_bytes[inst], frame, self.used_cores[inst],
                self.tiles[inst], tuple(self.phases[inst]), round(self.stretch_ps[inst]),
                max(0, start - ready) if ready >= 0 else 0, self.clock_factor[inst],
                self.spill_bytes[inst],
            )  # fmt: skip
            keyed.append(((r.start_ps, r.unit, r.core, frame, i), r))
        keyed.sort(key=itemgetter(0))  # keys are unique: records are never compared
        return [r for _, r in keyed]


@dataclass(slots=True)
class TransferLog:
    """Each transfer instance as the engine ran it (``-1``: not yet): queued, started, ended,
    on which channel of its link, time lost to bandwidth sharing (unrounded). ``transfers``
    are the schedule's, per frame."""

    transfers: Sequence[Transfer]
    queued_ps: list[int]
    start_ps: list[int]
    end_ps: list[int]
    channel: list[int]
    stretch_ps: list[float]

    @classmethod
    def empty(cls, transfers: Sequence[Transfer], frames: int) -> TransferLog:
        """A log of ``frames`` copies of the transfers, none started yet."""
        n = len(transfers) * frames
        return cls(transfers, [-1] * n, [-1] * n, [-1] * n, [-1] * n, [0.0] * n)

    def unfinished(self) -> list[str]:
        """Tensors of the transfer instances that never ended."""
        n = len(self.transfers)
        return [self.transfers[x % n].tensor for x, end in enumerate(self.end_ps) if end < 0]

    def records(self) -> list[TransferRecord]:
        """The records, ordered by start, frame, source, destination, then tensor."""
        n = len(self.transfers)
        out = []
        for xi in range(len(self.end_ps)):
            t = self.transfers[xi % n]
            out.append(TransferRecord(
                t.tensor, t.src_domain, t.dst_domain, self.channel[xi], t.bytes, t.producer,
                t.consumers, self.queued_ps[xi], self.start_ps[xi], self.end_ps[xi], xi // n,
                round(self.stretch_ps[xi]),
            ))  # fmt: skip
        out.sort(key=lambda r: (r.start_ps, r.frame, r.src_domain, r.dst_domain, r.tensor))
        return out


def build_trace(
    ops: OpLog,
    transfers: TransferLog,
    bandwidth_samples: Sequence[tuple[int, str, float]],
    capacity_bytes_per_ps: dict[str, float],
    frames: int = 1,
    frame_admit_ps: Sequence[int] = (),
    in_flight: int | None = None,
    frame_order: str = "interleaved",
    thermal: ThermalLog | None = None,
) -> Trace:
    """The :class:`Trace` of a finished run; its makespan is the last record's end (0 if none)."""
    op_records = ops.records()
    x_records = transfers.records()
    makespan = max([r.end_ps for r in op_records] + [r.end_ps for r in x_records] + [0])
    return Trace(
        makespan, tuple(op_records), tuple(x_records), tuple(bandwidth_samples),
        dict(capacity_bytes_per_ps), frames, tuple(frame_admit_ps), in_flight, frame_order, thermal,
    )  # fmt: skip
