"""What contention cost a run: time lost to shared memory bandwidth, and waits for resources.

The engine records three different costs per op and per transfer (:mod:`hwsim.sim.records`):

- **bandwidth stretch** (``stretch_ps``): its duration minus its uncontended duration (an op's
  cost-model time, a transfer's link latency plus bytes at the link's rate). It comes from
  streaming through a memory (the shared DRAM, or an SRAM domain's own) below the stream's own
  rate: other streams shared the memory's bandwidth at the same moment, or the memory is
  slower than the stream (a copy between two DRAM domains reads and writes DRAM, so it moves
  at most half of DRAM's bandwidth even alone);
- **core wait** (``OpRecord.wait_core_ps``): the op's inputs were all in its domain, but its core
  was busy or the schedule's order for the core put another op first;
- **DMA wait** (``TransferRecord.wait_channel_ps``): the transfer's tensor was ready, but every
  DMA channel of its link was busy.

:func:`contention` adds them up. The totals are **sums over ops and transfers, not wall time**:
two ops stretched by 1 ms each at the same moment add 2 ms, and a wait may overlap other work.
The share that is wall time is the stretch *on the critical path*
(:func:`hwsim.analysis.analyze.analyze`): the part of ``critical_path_ms`` that bandwidth sharing
added to that one chain of ops and transfers, each counted once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chips.units import PS_PER_MS
from hwsim.sim.records import OpRecord, Trace, TransferRecord

__all__ = ["TOP_STRETCHED", "Contention", "StretchedOp", "contention"]

#: How many of the most stretched ops :func:`contention` lists.
TOP_STRETCHED = 10


@dataclass(frozen=True, slots=True)
class StretchedOp:
    """One op and how much bandwidth sharing stretched it (ms), in ``frame``."""

    node: str
    unit: str
    frame: int
    stretch_ms: float


@dataclass(frozen=True, slots=True)
class Contention:
    """What contention cost a run, in milliseconds (see the module docstring).

    Attributes
    ----------
    bandwidth_stretch_ms
        Sum over ops and transfers of their stretch (not wall time).
    transfer_stretch_ms
        The transfers' part of ``bandwidth_stretch_ms``.
    bandwidth_stretch_on_critical_path_ms
        Stretch of the ops and transfers on the critical path: wall time along that chain,
        at most ``critical_path_ms``.
    core_wait_ms
        Sum over ops of the time from ready (last input there) to start (not wall time).
    dma_wait_ms
        Sum over transfers of the time queued for a DMA channel (not wall time).
    top_stretched_ops
        The most stretched ops, most first (only ops stretched at all).
    """

    bandwidth_stretch_ms: float
    transfer_stretch_ms: float
    bandwidth_stretch_on_critical_path_ms: float
    core_wait_ms: float
    dma_wait_ms: float
    top_stretched_ops: tuple[StretchedOp, ...]

    @property
    def contention_ms(self) -> float:
        """Bandwidth stretch plus core and DMA waits: a sum of per-op times, not wall time."""
        return self.bandwidth_stretch_ms + self.core_wait_ms + self.dma_wait_ms


def contention(
    trace: Trace,
    critical_ops: Sequence[OpRecord] = (),
    critical_transfers: Sequence[TransferRecord] = (),
    top: int = TOP_STRETCHED,
) -> Contention:
    """Add up what contention cost the run of ``trace``.

    Parameters
    ----------
    trace : Trace
        A finished run.
    critical_ops, critical_transfers : sequence of records
        The records on the critical path (their stretch is the wall-time share).
    top : int
        How many of the most stretched ops to list.

    Returns
    -------
    Contention
        Totals in milliseconds; ties among the most stretched ops go to the earlier start.

    Examples
    --------
    >>> a = OpRecord("conv", "Conv", "npu", 0, 0, 3_000_000, 0, stretch_ps=1_000_000)
    >>> b = OpRecord("add", "Add", "npu", 1, 0, 2_000_000, 0, stretch_ps=2_000_000, wait_core_ps=500_000)
    >>> c = contention(Trace(3_000_000, (a, b), (), ()), critical_ops=[a])
    >>> c.bandwidth_stretch_ms, c.bandwidth_stretch_on_critical_path_ms, c.core_wait_ms
    (0.003, 0.001, 0.0005)
    >>> [(s.node, s.stretch_ms) for s in c.top_stretched_ops]
    [('add', 0.002), ('conv', 0.001)]
    """
    op_ps = sum(r.stretch_ps for r in trace.ops)
    x_ps = sum(x.stretch_ps for x in trace.transfers)
    on_path_ps = sum(r.stretch_ps for r in critical_ops) + sum(x.stretch_ps for x in critical_transfers)
    stretched = sorted(
        (r for r in trace.ops if r.stretch_ps > 0), key=lambda r: (-r.stretch_ps, r.start_ps)
    )
    return Contention(
        bandwidth_stretch_ms=(op_ps + x_ps) / PS_PER_MS,
        transfer_stretch_ms=x_ps / PS_PER_MS,
        bandwidth_stretch_on_critical_path_ms=on_path_ps / PS_PER_MS,
        core_wait_ms=sum(r.wait_core_ps for r in trace.ops) / PS_PER_MS,
        dma_wait_ms=sum(x.wait_channel_ps for x in trace.transfers) / PS_PER_MS,
        top_stretched_ops=tuple(
            StretchedOp(r.op, r.unit, r.frame, r.stretch_ps / PS_PER_MS) for r in stretched[:top]
        ),
    )
