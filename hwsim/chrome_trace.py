"""A simulated run as a Chrome Trace Event Format object, for Perfetto and chrome://tracing.

Layout of the trace:

- one process per unit (in the chip's order), one thread per core;
- one process ``DMA`` with one thread per (link, channel); both directions of a bidirectional
  link share its channels, as they do in the engine, so a track is named ``cpu<->npu ch0``;
- one process ``memory`` holding a bandwidth counter (GB/s) per memory (the shared DRAM and
  every SRAM domain); every unit process also holds a ``busy cores`` counter;
- one complete event (``"ph": "X"``) per op and per DMA transfer;
- flow arrows (``"ph": "s"`` / ``"ph": "f"``, category ``dependency``) for every data
  dependency that crosses units: producer -> consumer when both units share a memory domain,
  otherwise producer -> transfer and transfer -> each consumer.

Times are microseconds (the format's unit) rounded to whole nanoseconds: viewers round to
nanoseconds themselves, and rounding the start and the duration of a slice separately could
make it end 1 ns after the next slice on its track begins. A flow's start sits just inside the
end of its source slice and its finish just inside the start of its target slice (1 ns, or half
a shorter slice), so both viewers bind it to the right slice.

>>> from hwsim.pipeline import run
>>> trace = chrome_trace(run("rk3588", "examples/models/yolov8n.onnx"))
>>> trace["displayTimeUnit"], sorted(trace["otherData"])[:3]
('ns', ['chip', 'critical_path_ms', 'dma_transfers'])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chips.schema import Chip, Link
from hwsim.engine import PS_PER_NS, OpRecord, TransferRecord
from hwsim.pipeline import RunResult

__all__ = ["busy_core_steps", "chrome_trace", "dma_track", "link_key"]

#: Order of events that share a timestamp: slices first, then flows, then counters.
_RANK = {"X": 0, "s": 1, "f": 2, "C": 3}
_GBPS_PER_BYTES_PER_PS = 1000.0  # 1 byte/ps = 1e12 B/s = 1000 GB/s

Event = dict[str, Any]


def link_key(link: Link) -> str:
    """Name of a link's channel pool, as the engine keys it: ``a<->b`` or ``a->b``."""
    return f"{link.src}<->{link.dst}" if link.bidirectional else f"{link.src}->{link.dst}"


def dma_track(chip: Chip, record: TransferRecord) -> tuple[str, int]:
    """The (link key, channel) a transfer ran on."""
    link = chip.link_between(record.src_domain, record.dst_domain)
    if link is None:  # the engine refuses such a transfer, so a trace cannot hold one
        raise ValueError(f"no link from {record.src_domain!r} to {record.dst_domain!r}")
    return link_key(link), record.channel


def busy_core_steps(ops: Iterable[OpRecord]) -> list[tuple[int, int]]:
    """``(time_ps, busy cores)`` at every moment the number of busy cores changes.

    >>> from hwsim.engine import OpRecord
    >>> busy_core_steps([OpRecord("a", "Conv", "npu", 0, 0, 10, 0),
    ...                  OpRecord("b", "Conv", "npu", 1, 5, 10, 0)])
    [(0, 1), (5, 2), (10, 0)]
    """
    delta: dict[int, int] = {}
    for r in ops:
        delta[r.start_ps] = delta.get(r.start_ps, 0) + 1
        delta[r.end_ps] = delta.get(r.end_ps, 0) - 1
    steps, busy = [], 0
    for t in sorted(delta):
        if delta[t]:
            busy += delta[t]
            steps.append((t, busy))
    return steps


def _ns(ps: int) -> int:
    return (ps + PS_PER_NS // 2) // PS_PER_NS


def _us(ns: float) -> float:
    return ns / 1000.0


def _inside_end(start_ns: int, end_ns: int) -> float:
    """A time (us) just inside the end of the slice ``[start_ns, end_ns]``."""
    return _us(end_ns - min(1.0, (end_ns - start_ns) / 2))


def _inside_start(start_ns: int, end_ns: int) -> float:
    """A time (us) just inside the start of the slice ``[start_ns, end_ns]``."""
    return _us(start_ns + min(1.0, (end_ns - start_ns) / 2))


def chrome_trace(result: RunResult) -> dict[str, Any]:
    """The run as a Trace Event Format object (``json.dump`` it to a ``.json`` file).

    Parameters
    ----------
    result : RunResult
        A finished simulation (:func:`hwsim.pipeline.run`).

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``. Event ``ts``
        and ``dur`` are microseconds; counters are GB/s (memories) and cores (units). Only
        plain ``str``/``int``/``float``/``list``/``dict`` values, in a deterministic order:
        metadata first, then events by time.
    """
    chip, trace, graph = result.chip, result.trace, result.graph
    placements = result.schedule.placements
    meta: list[Event] = []
    timed: list[tuple[tuple[float, int, int, int, float], Event]] = []

    def add(event: Event, end: float = 0.0) -> None:
        key = (float(event["ts"]), _RANK[event["ph"]], event["pid"], event.get("tid", 0), end)
        timed.append((key, event))

    def name_process(pid: int, name: str) -> None:
        meta.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        meta.append(
            {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}}
        )

    def name_thread(pid: int, tid: int, name: str) -> None:
        meta.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        )
        meta.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )

    # ---- tracks: pids from 1 (some importers treat pid 0 specially), tid = core + 1
    unit_pid: dict[str, int] = {}
    for i, u in enumerate(chip.units):
        pid = unit_pid[u.name] = i + 1
        name_process(pid, f"{u.name} ({u.kind}, {u.cores} core{'s' if u.cores > 1 else ''})")
        for c in range(u.cores):
            name_thread(pid, c + 1, f"{u.name} core {c}")
    dma_pid = len(chip.units) + 1
    memory_pid = dma_pid + 1
    name_process(dma_pid, "DMA")
    dma_tid: dict[tuple[str, int], int] = {}
    for link in chip.links:
        for ch in range(link.dma_channels):
            tid = dma_tid[(link_key(link), ch)] = len(dma_tid) + 1
            name_thread(dma_pid, tid, f"{link_key(link)} ch{ch}")
    name_process(memory_pid, "memory")

    # ---- ops
    op_slice: dict[str, tuple[int, int, int, int]] = {}  # op -> (pid, tid, start_ns, end_ns)
    for r in trace.ops:
        pid, tid = unit_pid[r.unit], r.core + 1
        s, e = _ns(r.start_ps), _ns(r.end_ps)
        op_slice[r.op] = (pid, tid, s, e)
        args = {
            "node": r.op,
            "op_type": r.op_type,
            "unit": r.unit,
            "core": r.core,
            "dram_bytes": r.dram_bytes,
            "reason": placements[r.op].reason,
        }
        add(
            {
                "name": r.op,
                "cat": r.op_type,
                "ph": "X",
                "ts": _us(s),
                "dur": _us(e - s),
                "pid": pid,
                "tid": tid,
                "args": args,
            },
            e,
        )

    # ---- transfers
    xfer_slice: list[tuple[int, int, int]] = []  # (tid, start_ns, end_ns), in trace order
    for x in trace.transfers:
        track, ch = dma_track(chip, x)
        tid = dma_tid[(track, ch)]
        s, e = _ns(x.start_ps), _ns(x.end_ps)
        xfer_slice.append((tid, s, e))
        args = {
            "tensor": x.tensor,
            "bytes": x.bytes,
            "src": x.src_domain,
            "dst": x.dst_domain,
            "producer": x.producer,
            "consumers": list(x.consumers),
            "queued_us": x.queued_ps / 1e6,
            "wait_us": (x.start_ps - x.queued_ps) / 1e6,
            "link": track,
            "channel": ch,
        }
        add(
            {
                "name": x.tensor,
                "cat": "dma",
                "ph": "X",
                "ts": _us(s),
                "dur": _us(e - s),
                "pid": dma_pid,
                "tid": tid,
                "args": args,
            },
            e,
        )

    # ---- flows
    next_id = 1

    def flow(name: str, src: tuple[int, int, int, int], dst: tuple[int, int, int, int]) -> None:
        nonlocal next_id
        base = {"name": name, "cat": "dependency", "id": next_id}
        add({**base, "ph": "s", "ts": _inside_end(src[2], src[3]), "pid": src[0], "tid": src[1]})
        add(
            {
                **base,
                "ph": "f",
                "bp": "e",
                "ts": _inside_start(dst[2], dst[3]),
                "pid": dst[0],
                "tid": dst[1],
            }
        )
        next_id += 1

    for x, (tid, s, e) in zip(trace.transfers, xfer_slice):
        here = (dma_pid, tid, s, e)
        if x.producer:
            flow(x.tensor, op_slice[x.producer], here)
        for consumer in x.consumers:
            if consumer:  # "" is the return of a graph output to the host
                flow(x.tensor, here, op_slice[consumer])
    domain_of = {u.name: u.domain for u in chip.units}
    for p in graph.order:
        for c in graph.g.successors(p):
            up, uc = placements[p].unit, placements[c].unit
            if up != uc and domain_of[up] == domain_of[uc]:
                flow(", ".join(graph.g.edges[p, c]["tensors"]), op_slice[p], op_slice[c])

    # ---- counters
    for u in chip.units:
        pid = unit_pid[u.name]
        steps = busy_core_steps(r for r in trace.ops if r.unit == u.name)
        if not steps or steps[0][0] > 0:
            steps.insert(0, (0, 0))
        for t, busy in steps:
            add(
                {
                    "name": "busy cores",
                    "ph": "C",
                    "ts": _us(_ns(t)),
                    "pid": pid,
                    "args": {"cores": busy},
                }
            )
    memories = sorted(trace.memory_capacity_bytes_per_ps)
    counter_name = {
        m: f"{m} bandwidth (of {trace.memory_capacity_bytes_per_ps[m] * _GBPS_PER_BYTES_PER_PS:g} GB/s)"
        for m in memories
    }
    for m in memories:
        add(
            {
                "name": counter_name[m],
                "ph": "C",
                "ts": 0.0,
                "pid": memory_pid,
                "args": {"GB/s": 0.0},
            }
        )
    for t, m, bpps in trace.bandwidth_samples:
        gbps = round(max(0.0, float(bpps)) * _GBPS_PER_BYTES_PER_PS, 9)
        add(
            {
                "name": counter_name.get(m, f"{m} bandwidth"),
                "ph": "C",
                "ts": _us(_ns(t)),
                "pid": memory_pid,
                "args": {"GB/s": gbps},
            }
        )

    timed.sort(key=lambda kv: kv[0])  # stable: ties keep construction order
    a = result.analysis
    other = {
        "chip": chip.name,
        "model": graph.name,
        "precision": result.precision,
        "policy": result.schedule.policy,
        "latency_ms": a.latency_ms,
        "critical_path_ms": a.critical_path_ms,
        "energy_mj": a.energy_mj,
        "ops": len(trace.ops),
        "dma_transfers": len(trace.transfers),
        "makespan_ps": trace.makespan_ps,
        "memory_capacity_gbps": {
            m: trace.memory_capacity_bytes_per_ps[m] * _GBPS_PER_BYTES_PER_PS for m in memories
        },
    }
    return {
        "traceEvents": meta + [e for _, e in timed],
        "displayTimeUnit": "ns",
        "otherData": other,
    }
