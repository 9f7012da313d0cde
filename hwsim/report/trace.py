"""A simulated run as a Chrome Trace Event Format object, for Perfetto and chrome://tracing.

Layout of the trace:

- one process per unit (in the chip's order), one thread per core;
- one process ``DMA`` with one thread per (link, channel); both directions of a bidirectional
  link share its channels, as they do in the engine, so a track is named ``cpu<->npu ch0``;
- one process ``memory`` holding a bandwidth counter (GB/s) per memory (the shared DRAM and
  every SRAM domain), the chip's power (W) and, for a chip with a thermal model, its
  temperature (``chip temperature (C)``), and a ``memory in use: PLACE`` counter (bytes) per place of
  :mod:`hwsim.analysis.memory` (every domain, the physical DRAM, the units' on-chip buffers
  that tiled or split ops used); every unit process also holds a ``busy cores`` counter and a
  ``utilization`` counter (busy cores over cores, in percent);
- one complete event (``"ph": "X"``) per op and per DMA transfer; ``args.stretch_us`` says how
  much longer sharing a memory's bandwidth made it (only when it did);
- flow arrows (``"ph": "s"`` / ``"ph": "f"``, category ``dependency``) for every data
  dependency that crosses units: producer -> consumer when both units share a memory domain,
  otherwise producer -> transfer and transfer -> each consumer.

With several frames (``hwsim run --frames N``, :attr:`RunResult.stream_trace`) the trace is the
whole stream: every op and transfer is named with its frame (``conv1 [f2]``), carries
``args.frame`` and a colour per frame (``cname``, cycling through :data:`FRAME_COLORS`), and the
dependency flows link the ops and transfers of the same frame, so Perfetto shows frames
overlapping on the units. ``otherData`` keeps the single-frame latency and adds the stream's
``frames``, ``frame_order`` and ``initiation_interval_ms``.

Slices on one track either nest or follow each other, as Perfetto's JSON importer requires: a
slice that would partly overlap another on its track (the engine does not make such slices
today; this keeps any future ones loadable) moves to an extra track of the same process,
named ``... (overlap N)``, and flow arrows bound to it move with it. :func:`check_trace` checks
a trace object against these rules and the others the importer relies on. A flow binds to the
slice that encloses its timestamp; a zero-length slice (a view op) encloses only its instant,
so where several zero-length slices share an instant on a track, each one a flow binds to moves
to an extra track of its own, named ``... (instant N)``, and the arrow cannot bind to another.

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

import json
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from chips.schema import Chip
from chips.units import GBPS_PER_BYTES_PER_PS, PS_PER_NS
from graph_ir.files import finite_number
from hwsim.analysis.busy import busy_core_steps
from hwsim.analysis.energy import power_timeline
from hwsim.analysis.memory import BYTES_PER_MIB, memory_use
from hwsim.pipeline import RunResult
from hwsim.sim.engine import OpRecord, Trace, TransferRecord

__all__ = [
    "FRAME_COLORS",
    "check_trace",
    "chrome_trace",
    "chrome_trace_json",
    "dma_track",
    "separate_overlaps",
]

#: Order of events that share a timestamp: slices first, then flows, then counters.
_RANK = {"E": -1, "X": 0, "B": 0, "s": 1, "f": 2, "C": 3}

Event = dict[str, Any]

#: Events gathered before their keys are added in one go (bounds the columns held meanwhile).
_BATCH = 8192

#: Reserved colour names of the Trace Event Format (``cname``) given to frames in turn.
FRAME_COLORS = (
    "rail_response",
    "thread_state_iowait",
    "good",
    "terrible",
    "rail_animation",
    "yellow",
    "olive",
    "rail_load",
)


def dma_track(chip: Chip, record: TransferRecord) -> tuple[str, int]:
    """The (link key, channel) a transfer ran on."""
    link = chip.link_between(record.src_domain, record.dst_domain)
    if link is None:  # the engine refuses such a transfer, so a trace cannot hold one
        raise ValueError(f"no link from {record.src_domain!r} to {record.dst_domain!r}")
    return link.key, record.channel


def _shards_and_phases(
    r: OpRecord, pid: int, cores: int, add: Callable[[Event, float], None], suffix: str = "",
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Begin/end slices for an op split across cores (one per extra core, on that core's track)
    and for a tiled op's phases: computes on each core's ``tiles`` track, loads and stores on its
    ``load/store`` track, so the overlap of tile i + 1's load with tile i's compute shows."""

    def span(name: str, tid: int, start_ps: int, end_ps: int, args: dict[str, Any]) -> None:
        s, e = _ns(start_ps), _ns(end_ps)
        if e > s:  # a begin/end pair of zero length would sort end-first
            common = {"name": name + suffix, "cat": "tile" if "tiles" in args else "shard", "pid": pid, "tid": tid, **(extra or {})}
            add({**common, "ph": "B", "ts": _us(s), "args": {**args, **(_frame_args(r) if suffix else {})}}, e)
            add({**common, "ph": "E", "ts": _us(e)}, e)

    for i, c in enumerate(r.cores[1:], start=1):
        span(f"{r.op} [shard {i}]", c + 1, r.start_ps, r.end_ps, {"node": r.op, "shard": i, "of": len(r.cores)})
    for c in r.all_cores:
        for ph in r.phases:
            args: dict[str, Any] = {"node": r.op, "tiles": ph.tiles}
            if ph.kind == "compute":
                span(f"compute {ph.tiles}", cores + c + 1, ph.start_ps, ph.end_ps, args)
            else:
                memory_only = ph.tiles.startswith(("load", "store"))
                name = ph.tiles if memory_only else f"load/store while computing {ph.tiles}"
                span(name, 2 * cores + c + 1, ph.start_ps, ph.end_ps, {**args, "bytes": ph.bytes})


def _frame_args(r: OpRecord | TransferRecord) -> dict[str, Any]:
    return {"frame": r.frame}


def _ns(ps: int) -> int:
    return (ps + PS_PER_NS // 2) // PS_PER_NS


def _us(ns: float) -> float:
    return ns / 1000.0


def _us_of_ps(times_ps: Sequence[int], repeat: int = 1) -> list[float]:
    """``_us(_ns(t))`` of each time, each ``repeat`` times in a row: in numpy when every time is
    an int64 (the same floats: the nanoseconds, below 2**53, convert exactly)."""
    ps = np.asarray(times_ps)
    if ps.dtype != np.int64 or len(ps) and (ps.min() < 0 or ps.max() >= 2**62):
        return [_us(_ns(t)) for t in times_ps for _ in range(repeat)]
    us = ((ps + PS_PER_NS // 2) // PS_PER_NS) / 1000.0
    return (np.repeat(us, repeat) if repeat > 1 else us).tolist()


def _each_once(values: Sequence[float], f: Callable[[float], float]) -> list[float]:
    """``[f(v) for v in values]``, calling ``f`` once per distinct value (a zero each time: 0.0
    and -0.0 are one key)."""
    memo = {v: f(v) for v in set(values)}
    return [memo[v] if v else f(v) for v in values]


_Slice = tuple[int, int, int, int]  # pid, tid, start ns, end ns


class _Events:
    """The trace under construction: metadata in order, timed events with their sort keys.

    A run of a million events holds no dict per event: an event is encoded to JSON text when it
    is added, except a counter (most of a large trace), which keeps only its series and value,
    and every sort key sits in flat arrays; :meth:`sorted_text` writes them out in time order.
    """

    def __init__(self, multi: bool) -> None:
        self.multi = multi
        self.meta: list[Event] = []
        #: JSON of each timed event; None for a counter kept as numbers.
        self.text: list[str | None] = []
        self._ts, self._end = array("d"), array("d")
        self._rank, self._pid, self._tid = array("q"), array("q"), array("q")
        #: a counter's value, and 2 * its series + 1 if the value is an int (-1: not such a counter)
        self._value, self._series_of = array("d"), array("q")
        self._series: dict[tuple[str, str], int] = {}  # (name, args key) -> series
        #: (ts, dur) of the complete events on each track (pid, tid), in the order they were added.
        self.spans: dict[tuple[int, int], list[tuple[float, float]]] = {}
        self._next_flow_id = 1
        self._thread_name: dict[tuple[int, int], str] = {}
        #: (pid, tid, instant ns) -> slices moved off that track at that instant so far
        self._moved_at: dict[tuple[int, int, int], int] = {}
        self._instant_tid: dict[tuple[int, int, int], int] = {}  # (pid, tid, lane) -> its tid

    def suffix(self, frame: int) -> str:
        """`` [fN]`` after an op's or transfer's name in a multi-frame trace."""
        return f" [f{frame}]" if self.multi else ""

    def colour(self, frame: int) -> dict[str, Any]:
        return {"cname": FRAME_COLORS[frame % len(FRAME_COLORS)]} if self.multi else {}

    def frame_args(self, r: OpRecord | TransferRecord) -> dict[str, Any]:
        return _frame_args(r) if self.multi else {}

    def _key(self, ts: float, rank: int, pid: int, tid: int, end: float, value: float = 0.0, series: int = -1) -> None:
        self._ts.append(ts)
        self._rank.append(rank)
        self._pid.append(pid)
        self._tid.append(tid)
        self._end.append(end)
        self._value.append(value)
        self._series_of.append(series)

    def add(self, event: Event, end: float = 0.0) -> None:
        """A timed event; ``end`` (ns) orders slices that start together, longest first."""
        ph, pid, tid = event["ph"], event["pid"], event.get("tid", 0)
        self._key(float(event["ts"]), _RANK[ph], pid, tid, end)
        if ph == "X":
            self.spans.setdefault((pid, tid), []).append((event["ts"], event["dur"]))
        self.text.append(_encode(event))

    def add_slice(self, text: str, ts_us: float, dur_us: float, pid: int, tid: int, end: float) -> None:
        """A complete event (``"ph": "X"`` at ``ts_us`` for ``dur_us`` on track ``(pid, tid)``)
        given as its JSON ``text``: what :meth:`add` of its dict does."""
        self.add_slices([(text, ts_us, dur_us, pid, tid, end)])

    def add_slices(self, rows: Sequence[tuple[str, float, float, int, int, float]]) -> None:
        """:meth:`add_slice` of each ``(text, ts_us, dur_us, pid, tid, end)`` in order, the keys
        extended once."""
        if not rows:
            return
        texts, ts, dur, pid, tid, end = zip(*rows)
        self._extend_keys(ts, [_RANK["X"]] * len(rows), pid, tid, end)
        spans = self.spans
        for track, t, d in zip(zip(pid, tid), ts, dur):
            spans.setdefault(track, []).append((t, d))
        self.text.extend(texts)

    def _extend_keys(
        self, ts: Sequence[float], rank: Sequence[int], pid: Sequence[int], tid: Sequence[int], end: Sequence[float]
    ) -> None:
        """:meth:`_key` of each row of these columns (not counters kept as numbers)."""
        n = len(ts)
        self._ts.extend(ts)
        self._rank.extend(rank)
        self._pid.extend(pid)
        self._tid.extend(tid)
        self._end.extend(end)
        self._value.extend([0.0] * n)
        self._series_of.extend([-1] * n)

    def add_text(self, text: str, ph: str, ts_us: float, pid: int, tid: int) -> None:
        """A timed event other than a complete one (phase ``ph``) given as its JSON ``text``:
        what :meth:`add` of its dict does."""
        self._key(ts_us, _RANK[ph], pid, tid, 0.0)
        self.text.append(text)

    def counter(self, name: str, pid: int, ts_us: float, key: str, value: float) -> None:
        """A counter event ``{"name", "ph": "C", "ts", "pid", "args": {key: value}}``."""
        if type(ts_us) is not float or not _plain_number(value):
            self.add({"name": name, "ph": "C", "ts": ts_us, "pid": pid, "args": {key: value}})
            return
        series = self._series.setdefault((name, key), len(self._series))
        self._key(ts_us, _RANK["C"], pid, 0, 0.0, value, 2 * series + (type(value) is int))
        self.text.append(None)

    def counters(
        self, pid: int, series: Sequence[tuple[str, str]], which: Sequence[int], ts_us: Sequence[float],
        values: Sequence[float],
    ) -> None:  # fmt: skip
        """:meth:`counter` ``(name, pid, ts_us[j], key, values[j])`` for each row ``j`` in order,
        where ``(name, key) = series[which[j]]``: the same events, kept without a call per event
        where every time is a float and every value a finite float or an exact int."""
        if not (set(map(type, ts_us)) <= {float} and _all_plain(values)):
            for s, t, v in zip(which, ts_us, values):
                self.counter(series[s][0], pid, t, series[s][1], v)
            return
        ids = [2 * self._series.setdefault(nk, len(self._series)) for nk in series]
        n = len(ts_us)
        self._ts.extend(ts_us)
        self._rank.extend([_RANK["C"]] * n)
        self._pid.extend([pid] * n)
        self._tid.extend([0] * n)
        self._end.extend([0.0] * n)
        self._value.extend(values)
        self._series_of.extend([ids[s] + (type(v) is int) for s, v in zip(which, values)])
        self.text.extend([None] * n)

    def sorted_text(self, chunk: int = 50_000) -> Iterator[list[str]]:
        """The timed events' JSON by time (ties keep the order they were added in), ``chunk`` at a time."""
        keys = [np.frombuffer(a, dtype=np.float64 if a.typecode == "d" else np.int64)
                for a in (self._end, self._tid, self._pid, self._rank, self._ts)]  # fmt: skip
        order = np.lexsort(keys)
        heads = [f'{{"name":{_encode(name)},"ph":"C","ts":' for name, _ in self._series]
        args = [f'{{{_encode(key)}:' for _, key in self._series]
        texts = self.text
        series_of = np.frombuffer(self._series_of, dtype=np.int64)
        values, ts, pids = np.frombuffer(self._value, dtype=np.float64), keys[4], keys[2]
        tails: dict[tuple[int, int, float], str] = {}
        for at in range(0, len(order), chunk):
            at_order = order[at : at + chunk]
            is_counter = series_of[at_order] >= 0
            kept = at_order[is_counter]  # the counters kept as numbers: their text made here, in bulk
            made = iter(_counter_texts(heads, args, series_of[kept].tolist(), ts[kept].tolist(),
                                       pids[kept].tolist(), values[kept].tolist(), tails))  # fmt: skip
            gathered = itemgetter(*at_order.tolist())(texts) if len(at_order) > 1 else (texts[int(at_order[0])],)
            yield [t if t is not None else next(made) for t in gathered]

    def overlapping(self) -> bool:
        """Some complete event partly overlaps another on its track (:func:`separate_overlaps` moves it)."""
        return any(any(_lanes(spans)) for spans in self.spans.values())

    def events(self) -> list[Event]:
        """Metadata first, then the timed events by time, as dicts."""
        return self.meta + [json.loads(t) for texts in self.sorted_text() for t in texts]

    def name_process(self, pid: int, name: str) -> None:
        self.meta.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self.meta.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})

    def name_thread(self, pid: int, tid: int, name: str, sort_index: int | None = None) -> None:
        self._thread_name[(pid, tid)] = name
        self.meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        self.meta.append(
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
             "args": {"sort_index": tid if sort_index is None else sort_index}}
        )  # fmt: skip

    def instant_track(self, pid: int, tid: int, at_ns: int) -> int:
        """The extra track (tid) for the next zero-length slice at ``at_ns`` that must leave track
        ``(pid, tid)``: lane N holds at most one slice per instant, named ``... (instant N)``."""
        lane = self._moved_at[(pid, tid, at_ns)] = self._moved_at.get((pid, tid, at_ns), 0) + 1
        if (pid, tid, lane) not in self._instant_tid:
            new = max(t for p, t in self._thread_name if p == pid) + 1
            self._instant_tid[(pid, tid, lane)] = new
            self.name_thread(pid, new, f"{self._thread_name[(pid, tid)]} (instant {lane})", tid * 1000 + lane)
        return self._instant_tid[(pid, tid, lane)]

    def flow(self, name: str, src: _Slice, dst: _Slice) -> None:
        """A dependency arrow from just inside the end of ``src`` to just inside the start of ``dst``."""
        self.flows([(name, src, dst)])

    def flows(self, arrows: Iterable[tuple[str, _Slice, _Slice]]) -> None:
        """:meth:`flow` of each ``(name, src, dst)`` in order (their ids in that order), the
        keys extended a batch at a time. A flow starts ``min(1 ns, half the slice)`` before the end of
        ``src`` and finishes as far after the start of ``dst``."""
        texts: list[str] = []
        ts: list[float] = []
        pid: list[int] = []
        tid: list[int] = []
        fid = self._next_flow_id
        for name, src, dst in arrows:
            base = f'{{"name":{_encode_str(name)},"cat":"dependency","id":{fid},"ph":'
            a = (src[3] - min(1.0, (src[3] - src[2]) / 2)) / 1000.0
            b = (dst[2] + min(1.0, (dst[3] - dst[2]) / 2)) / 1000.0
            texts += (f'{base}"s","ts":{float.__repr__(a)},"pid":{src[0]},"tid":{src[1]}}}',
                      f'{base}"f","bp":"e","ts":{float.__repr__(b)},"pid":{dst[0]},"tid":{dst[1]}}}')  # fmt: skip
            ts += (a, b)
            pid += (src[0], dst[0])
            tid += (src[1], dst[1])
            fid += 1
            if len(ts) >= _BATCH:
                self._flush_flows(texts, ts, pid, tid)
        self._next_flow_id = fid
        self._flush_flows(texts, ts, pid, tid)

    def _flush_flows(self, texts: list[str], ts: list[float], pid: list[int], tid: list[int]) -> None:
        """Add the flow events gathered in these columns (start, finish, ...) and empty them."""
        self._extend_keys(ts, [_RANK["s"], _RANK["f"]] * (len(ts) // 2), pid, tid, [0.0] * len(ts))
        self.text.extend(texts)
        for column in (texts, ts, pid, tid):
            column.clear()


_encode = json.JSONEncoder(separators=(",", ":")).encode
#: ``_encode`` of a str (what the encoder calls for one), without the encoder's own call.
_encode_str: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


def _counter_texts(
    heads: Sequence[str], args: Sequence[str], series_of: Sequence[int], ts_us: Sequence[float],
    pids: Sequence[int], values: Sequence[float], tails: dict[tuple[int, int, float], str] | None = None,
) -> list[str]:  # fmt: skip
    """The JSON of counters kept as numbers (:meth:`_Events.counter`): ``series_of`` is 2 * the
    series (whose ``heads`` and ``args`` open the text) + 1 if the value is an int.

    The text after the time is made once per (series, pid, value) and kept in ``tails`` (a
    run's counters take few distinct values); a zero is written each time (0.0 and -0.0 are
    one key but two texts)."""
    tails = {} if tails is None else tails
    out: list[str] = []
    append, known = out.append, tails.get
    for s, t, p, v in zip(series_of, ts_us, pids, values):
        tail = known((s, p, v)) if v else None
        if tail is None:
            tail = f',"pid":{p},"args":{args[s >> 1]}{(int(v) if s & 1 else v)!r}}}}}'
            if v:
                tails[(s, p, v)] = tail
        append(f"{heads[s >> 1]}{t!r}{tail}")
    return out


def _plain_number(value: float) -> bool:
    """A counter value :meth:`_Events.counter` keeps as a number: an int exact as a float64,
    or a finite float."""
    return type(value) is int and abs(value) < 2**53 or type(value) is float and math.isfinite(value)


def _all_plain(values: Sequence[float]) -> bool:
    """Every value is a :func:`_plain_number` (checked a type at a time, not a call per value)."""
    types = set(map(type, values))
    if types <= {float}:
        return all(map(math.isfinite, values))
    if types <= {int}:
        return not values or (max(values) < 2**53 and min(values) > -(2**53))
    return all(map(_plain_number, values))


@dataclass(frozen=True, slots=True)
class _Tracks:
    """Process ids of the units, the DMA and memory processes, and the DMA thread of each (link, channel)."""

    unit_pid: Mapping[str, int]
    dma_pid: int
    memory_pid: int
    dma_tid: Mapping[tuple[str, int], int]


def _name_tracks(ev: _Events, chip: Chip, trace: Trace) -> _Tracks:
    """Name every process and thread: pids from 1 (some importers treat pid 0 specially), tid = core + 1."""
    unit_pid: dict[str, int] = {}
    for i, u in enumerate(chip.units):
        pid = unit_pid[u.name] = i + 1
        ev.name_process(pid, f"{u.name} ({u.kind}, {u.cores} core{'s' if u.cores > 1 else ''})")
        for c in range(u.cores):
            ev.name_thread(pid, c + 1, f"{u.name} core {c}")
        if any(r.phases for r in trace.ops if r.unit == u.name):  # tiled ops: their phases
            for c in range(u.cores):
                ev.name_thread(pid, u.cores + c + 1, f"{u.name} core {c} tiles")
                ev.name_thread(pid, 2 * u.cores + c + 1, f"{u.name} core {c} load/store")
    dma_pid = len(chip.units) + 1
    ev.name_process(dma_pid, "DMA")
    dma_tid: dict[tuple[str, int], int] = {}
    for link in chip.links:
        for ch in range(link.dma_channels):
            tid = dma_tid[(link.key, ch)] = len(dma_tid) + 1
            ev.name_thread(dma_pid, tid, f"{link.key} ch{ch}")
    ev.name_process(dma_pid + 1, "memory")
    return _Tracks(unit_pid, dma_pid, dma_pid + 1, dma_tid)


def _op_events(
    ev: _Events, result: RunResult, trace: Trace, tracks: _Tracks, bound: AbstractSet[tuple[str, int]] = frozenset()
) -> dict[tuple[str, int], _Slice]:
    """A complete event per op (plus its shards and tile phases); the slice of each (op, frame).

    An op a flow binds to (``bound``: (op, frame)) whose slice is zero-length and shares its
    instant with another zero-length slice on its track moves to an extra track
    (:meth:`_Events.instant_track`)."""
    placements = result.schedule.placements
    op_slice: dict[tuple[str, int], _Slice] = {}
    zero_at = Counter(
        (tracks.unit_pid[r.unit], r.core + 1, _ns(r.start_ps)) for r in trace.ops if _ns(r.start_ps) == _ns(r.end_ps)
    )
    rows: list[tuple[str, float, float, int, int, float]] = []  # plain slices not added yet, in order
    for r in trace.ops:
        pid, tid = tracks.unit_pid[r.unit], r.core + 1
        s, e = _ns(r.start_ps), _ns(r.end_ps)
        if s == e and zero_at[(pid, tid, s)] > 1 and (r.op, r.frame) in bound:
            tid = ev.instant_track(pid, tid, s)
        op_slice[(r.op, r.frame)] = (pid, tid, s, e)
        if not ev.multi and type(r.dram_bytes) is int and type(r.core) is int and type(r.stretch_ps) is int:
            ts, dur = _us(s), _us(e - s)
            rows.append((_op_text(r, ts, dur, pid, tid, placements[r.op].reason), ts, dur, pid, tid, e))
            if len(r.cores) > 1 or r.phases or len(rows) >= _BATCH:
                ev.add_slices(rows)
                rows = []
                _shards_and_phases(r, pid, result.chip.unit(r.unit).cores, ev.add, "", {})
            continue
        ev.add_slices(rows)
        rows = []
        args: dict[str, Any] = {
            "node": r.op,
            "op_type": r.op_type,
            "unit": r.unit,
            "core": r.core,
            "dram_bytes": r.dram_bytes,
            "reason": placements[r.op].reason,
            **ev.frame_args(r),
            **({"stretch_us": r.stretch_ps / 1e6} if r.stretch_ps > 0 else {}),
        }
        ev.add(
            {"name": r.op + ev.suffix(r.frame), **ev.colour(r.frame), "cat": r.op_type, "ph": "X", "ts": _us(s),
             "dur": _us(e - s), "pid": pid, "tid": tid, "args": args},
            e,
        )  # fmt: skip
        _shards_and_phases(r, pid, result.chip.unit(r.unit).cores, ev.add, ev.suffix(r.frame), ev.colour(r.frame))
    ev.add_slices(rows)
    return op_slice


def _op_text(r: OpRecord, ts_us: float, dur_us: float, pid: int, tid: int, reason: str) -> str:
    """The JSON of a single-frame op's complete event, as ``_encode`` gives it for the dict
    :func:`_op_events` builds otherwise (the same keys in the same order)."""
    name, op_type, enc = _encode_str(r.op), _encode_str(r.op_type), _encode_str
    stretch = f',"stretch_us":{float.__repr__(r.stretch_ps / 1e6)}' if r.stretch_ps > 0 else ""
    return (
        f'{{"name":{name},"cat":{op_type},"ph":"X","ts":{float.__repr__(ts_us)},"dur":{float.__repr__(dur_us)},'
        f'"pid":{pid},"tid":{tid},"args":{{"node":{name},"op_type":{op_type},"unit":{enc(r.unit)},'
        f'"core":{r.core},"dram_bytes":{r.dram_bytes},"reason":{enc(reason)}{stretch}}}}}'
    )


def _transfer_events(ev: _Events, chip: Chip, trace: Trace, tracks: _Tracks) -> list[_Slice]:
    """A complete event per DMA transfer on its (link, channel) thread; their slices in trace order."""
    xfer_slice: list[_Slice] = []
    rows: list[tuple[str, float, float, int, int, float]] = []  # plain slices not added yet, in order
    for x in trace.transfers:
        track, ch = dma_track(chip, x)
        tid = tracks.dma_tid[(track, ch)]
        s, e = _ns(x.start_ps), _ns(x.end_ps)
        xfer_slice.append((tracks.dma_pid, tid, s, e))
        if not ev.multi and type(x.bytes) is int and type(x.stretch_ps) is int and type(ch) is int:
            ts, dur = _us(s), _us(e - s)
            rows.append((_transfer_text(x, ts, dur, tracks.dma_pid, tid, track, ch), ts, dur, tracks.dma_pid, tid, e))
            if len(rows) >= _BATCH:
                ev.add_slices(rows)
                rows = []
            continue
        ev.add_slices(rows)
        rows = []
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
            **ev.frame_args(x),
            **({"stretch_us": x.stretch_ps / 1e6} if x.stretch_ps > 0 else {}),
        }
        ev.add(
            {"name": x.tensor + ev.suffix(x.frame), **ev.colour(x.frame), "cat": "dma", "ph": "X", "ts": _us(s),
             "dur": _us(e - s), "pid": tracks.dma_pid, "tid": tid, "args": args},
            e,
        )  # fmt: skip
    ev.add_slices(rows)
    return xfer_slice


def _transfer_text(x: TransferRecord, ts_us: float, dur_us: float, pid: int, tid: int, link: str, ch: int) -> str:
    """The JSON of a single-frame transfer's complete event, as ``_encode`` gives it for the
    dict :func:`_transfer_events` builds otherwise (the same keys in the same order)."""
    enc, name = _encode_str, _encode_str(x.tensor)
    stretch = f',"stretch_us":{float.__repr__(x.stretch_ps / 1e6)}' if x.stretch_ps > 0 else ""
    return (
        f'{{"name":{name},"cat":"dma","ph":"X","ts":{float.__repr__(ts_us)},"dur":{float.__repr__(dur_us)},'
        f'"pid":{pid},"tid":{tid},"args":{{"tensor":{name},"bytes":{x.bytes},"src":{enc(x.src_domain)},'
        f'"dst":{enc(x.dst_domain)},"producer":{enc(x.producer)},"consumers":[{",".join(map(enc, x.consumers))}],'
        f'"queued_us":{float.__repr__(x.queued_ps / 1e6)},"wait_us":{float.__repr__((x.start_ps - x.queued_ps) / 1e6)},'
        f'"link":{enc(link)},"channel":{ch}{stretch}}}}}'
    )


#: A flow's end: an op's (op, frame), or a transfer's index in the trace.
_End = tuple[str, int] | int


def _flows(result: RunResult, trace: Trace, suffix: Callable[[int], str]) -> list[tuple[str, _End, _End]]:
    """Dependency arrows ``(name, from, to)``: producer -> transfer -> consumers across domains,
    producer -> consumer between units of one domain."""
    out: list[tuple[str, _End, _End]] = []
    for i, x in enumerate(trace.transfers):
        if x.producer:
            out.append((x.tensor + suffix(x.frame), (x.producer, x.frame), i))
        for consumer in x.consumers:
            if consumer:  # "" is the return of a graph output to the host
                out.append((x.tensor + suffix(x.frame), i, (consumer, x.frame)))
    graph, placements = result.graph, result.schedule.placements
    domain_of = {u.name: u.domain for u in result.chip.units}
    for frame in range(trace.frames):
        for p in graph.order:
            for c in graph.g.successors(p):
                up, uc = placements[p].unit, placements[c].unit
                if up != uc and domain_of[up] == domain_of[uc]:
                    out.append((", ".join(graph.g.edges[p, c]["tensors"]) + suffix(frame), (p, frame), (c, frame)))
    return out


def _flow_events(
    ev: _Events,
    flows: Iterable[tuple[str, _End, _End]],
    op_slice: Mapping[tuple[str, int], _Slice],
    xfer_slice: list[_Slice],
) -> None:
    """One arrow per flow of :func:`_flows`, from and to the slices as written."""

    def slice_of(end: _End) -> _Slice:
        return xfer_slice[end] if isinstance(end, int) else op_slice[end]

    ev.flows((name, slice_of(a), slice_of(b)) for name, a, b in flows)


def _counter_events(ev: _Events, chip: Chip, trace: Trace, tracks: _Tracks) -> None:
    """Busy cores and utilization per unit; bandwidth per memory; chip power; the temperature
    (a chip with a thermal model)."""
    for u in chip.units:
        pid = tracks.unit_pid[u.name]
        steps = busy_core_steps(r for r in trace.ops if r.unit == u.name)
        if not steps or steps[0][0] > 0:
            steps.insert(0, (0, 0))
        busy = [b for _, b in steps]
        util = {b: round(100.0 * b / u.cores, 6) for b in set(busy)}
        values = [v for b in busy for v in (b, util[b])]
        ts = _us_of_ps([t for t, _ in steps], repeat=2)
        ev.counters(pid, (("busy cores", "cores"), ("utilization", "%")), [0, 1] * len(steps), ts, values)
    capacity = trace.memory_capacity_bytes_per_ps
    counter_name = {
        m: f"{m} bandwidth (of {capacity[m] * GBPS_PER_BYTES_PER_PS:g} GB/s)" for m in sorted(capacity)
    }
    for m in sorted(capacity):
        ev.counter(counter_name[m], tracks.memory_pid, 0.0, "GB/s", 0.0)
    samples = trace.bandwidth_samples
    series = {m: i for i, m in enumerate(dict.fromkeys(m for _, m, _ in samples))}
    gbps = _each_once([float(bpps) for _, _, bpps in samples], lambda b: round(max(0.0, b) * GBPS_PER_BYTES_PER_PS, 9))
    ev.counters(
        tracks.memory_pid, [(counter_name.get(m, f"{m} bandwidth"), "GB/s") for m in series],
        [series[m] for _, m, _ in samples], _us_of_ps([t for t, _, _ in samples]), gbps,
    )  # fmt: skip
    power = power_timeline(chip, trace)
    ev.counters(tracks.memory_pid, (("chip power (W)", "W"),), [0] * len(power), _us_of_ps([t for t, _ in power]),
                _each_once([watts for _, watts in power], lambda w: round(w, 9)))  # fmt: skip
    if trace.thermal is not None:  # a chip with a thermal model
        for t, temp_c in trace.thermal.samples:
            ev.counter("chip temperature (C)", tracks.memory_pid, _us(_ns(t)), "C", round(temp_c, 9))


def _memory_counters(ev: _Events, result: RunResult, trace: Trace, tracks: _Tracks) -> None:
    """Bytes in use per memory place over the run shown (a stream's memory keeps the spills of
    the single-frame run)."""
    use = result.memory
    if use is None:
        return
    if trace is not result.trace:
        use = memory_use(result.graph, result.chip, result.table, trace, use.spilled, use.double_buffer)
    for place in use.places:
        cap = "" if place.capacity_bytes is None else f" (of {place.capacity_bytes / BYTES_PER_MIB:g} MiB)"
        name = f"memory in use: {place.name}{cap}"
        steps = use.steps[place.name]
        ev.counters(tracks.memory_pid, ((name, "bytes"),), [0] * len(steps), _us_of_ps([t for t, _ in steps]),
                    [nbytes for _, nbytes in steps])  # fmt: skip


def _other_data(result: RunResult, trace: Trace) -> dict[str, Any]:
    """The trace's ``otherData``: the run's identity and headline figures."""
    a = result.analysis
    capacity = trace.memory_capacity_bytes_per_ps
    other: dict[str, Any] = {
        "chip": result.chip.name,
        "model": result.graph.name,
        "precision": result.precision,
        "policy": result.schedule.policy,
        "latency_ms": a.latency_ms,
        "critical_path_ms": a.critical_path_ms,
        "energy_mj": a.energy_mj,
        "ops": len(trace.ops),
        "dma_transfers": len(trace.transfers),
        "makespan_ps": trace.makespan_ps,
        "memory_capacity_gbps": {m: capacity[m] * GBPS_PER_BYTES_PER_PS for m in sorted(capacity)},
    }
    if trace.frames > 1:
        other["frames"] = trace.frames
        other["frame_order"] = trace.frame_order
        if result.stream is not None:
            other["initiation_interval_ms"] = result.stream.initiation_interval_ms
    return other


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
    ev, trace = _build(result)
    return {
        "traceEvents": separate_overlaps(ev.events()),
        "displayTimeUnit": "ns",
        "otherData": _other_data(result, trace),
    }


def chrome_trace_json(result: RunResult, events_per_chunk: int = 50_000) -> Iterator[bytes]:
    """``json.dumps(chrome_trace(result), separators=(",", ":"))`` as UTF-8, in chunks.

    The same bytes, without a dict per event or the whole text at once: events are encoded as
    they are made and written out in chunks of ``events_per_chunk``, so ``trace.json`` of a
    100,000-op run (over a million events) streams to its file.

    >>> from hwsim.pipeline import run
    >>> result = run("rk3588", "examples/models/yolov8n.onnx")
    >>> b"".join(chrome_trace_json(result)) == json.dumps(chrome_trace(result), separators=(",", ":")).encode()
    True
    """
    ev, trace = _build(result)
    if ev.overlapping():  # slices to move to extra tracks: done on dicts, as chrome_trace does
        moved = [_encode(e) for e in separate_overlaps(ev.events())]
        chunks: Iterable[list[str]] = (moved[i : i + events_per_chunk] for i in range(0, len(moved), events_per_chunk))
    else:
        chunks = chain([[_encode(e) for e in ev.meta]], ev.sorted_text(events_per_chunk))
    yield b'{"traceEvents":['
    sep = ""
    for texts in chunks:
        if texts:
            yield (sep + ",".join(texts)).encode("utf-8")
            sep = ","
    yield f'],"displayTimeUnit":"ns","otherData":{_encode(_other_data(result, trace))}}}'.encode()


def _build(result: RunResult) -> tuple[_Events, Trace]:
    """Every event of the run ``trace.json`` shows (the stream with several frames), and that trace."""
    trace = result.stream_trace if result.stream_trace is not None else result.trace
    ev = _Events(multi=trace.frames > 1)
    tracks = _name_tracks(ev, result.chip, trace)
    flows = _flows(result, trace, ev.suffix)
    bound = {end for _, a, b in flows for end in (a, b) if not isinstance(end, int)}
    op_slice = _op_events(ev, result, trace, tracks, bound)
    xfer_slice = _transfer_events(ev, result.chip, trace, tracks)
    _flow_events(ev, flows, op_slice, xfer_slice)
    _counter_events(ev, result.chip, trace, tracks)
    _memory_counters(ev, result, trace, tracks)
    return ev, trace


# ---------------------------------------------------------------- Perfetto validity

#: Two times (us) closer than this are equal: 0.1 ns, below the trace's 1 ns resolution, so
#: float round-off of ``ts + dur`` never reads as an overlap.
_EPS_US = 1e-4


def _lanes(spans: list[tuple[float, float]]) -> list[int]:
    """Lane of each slice ``(ts, dur)`` (0 = its own track) so that slices in one lane nest or
    follow each other.

    Greedy in ``(ts, -dur)`` order: each slice goes to the first lane where it fits inside
    the innermost open slice or after all of them.
    """
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -spans[i][1], i))
    stacks: list[list[float]] = []  # per lane: end times of the open slices, outermost first
    lane_of = [0] * len(spans)
    for i in order:
        ts, end = spans[i][0], spans[i][0] + spans[i][1]
        for lane, stack in enumerate(stacks):
            while stack and stack[-1] <= ts + _EPS_US:
                stack.pop()
            if not stack or end <= stack[-1] + _EPS_US:
                stack.append(end)
                lane_of[i] = lane
                break
        else:
            stacks.append([end])
            lane_of[i] = len(stacks) - 1
    return lane_of


def _slice_tracks(events: list[Event]) -> dict[tuple[int, int], list[int]]:
    """Indices of the complete events (``X``) on each track (pid, tid), in event order."""
    tracks: dict[tuple[int, int], list[int]] = {}
    for i, e in enumerate(events):
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e.get("tid", 0)), []).append(i)
    return tracks


def _extra_lanes(
    events: list[Event], tracks: Mapping[tuple[int, int], list[int]]
) -> tuple[dict[int, int], list[tuple[int, int, int, int]]]:
    """The new tid of every slice that must move, and the new threads ``(pid, old tid, lane, new tid)``."""
    moved: dict[int, int] = {}  # event index -> new tid
    new_threads: list[tuple[int, int, int, int]] = []
    used_tids: dict[int, set[int]] = {}
    for e in events:
        if "pid" in e and "tid" in e:
            used_tids.setdefault(e["pid"], set()).add(e["tid"])
    for (pid, tid), idx in sorted(tracks.items()):
        lanes = _lanes([(events[i]["ts"], events[i]["dur"]) for i in idx])
        if not any(lanes):
            continue
        tid_of_lane = {0: tid}
        for lane in sorted(set(lanes) - {0}):
            new = max(used_tids[pid]) + 1
            used_tids[pid].add(new)
            tid_of_lane[lane] = new
            new_threads.append((pid, tid, lane, new))
        for i, lane in zip(idx, lanes):
            if lane:
                moved[i] = tid_of_lane[lane]
    return moved, new_threads


def _flows_follow(
    events: list[Event], out: list[Event], tracks: Mapping[tuple[int, int], list[int]], moved: Mapping[int, int]
) -> None:
    """Move each flow event (in ``out``) to the thread its innermost enclosing slice moved to."""
    for i, e in enumerate(events):
        if e.get("ph") in ("s", "f") and (e["pid"], e.get("tid", 0)) in tracks:
            inside = [
                j
                for j in tracks[(e["pid"], e.get("tid", 0))]
                if events[j]["ts"] <= e["ts"] <= events[j]["ts"] + events[j]["dur"]
            ]
            if inside:
                j = min(inside, key=lambda j: events[j]["dur"])
                if j in moved:
                    out[i] = dict(e, tid=moved[j])


def _overlap_thread_meta(events: list[Event], new_threads: list[tuple[int, int, int, int]]) -> list[Event]:
    """``thread_name`` ``"<track name> (overlap N)"`` and a sort index just after its track, per new thread."""
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    sort_index = {
        (e["pid"], e["tid"]): e["args"]["sort_index"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_sort_index"
    }
    meta: list[Event] = []
    for pid, tid, lane, new in new_threads:
        base = names.get((pid, tid), f"thread {tid}")
        meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": new, "args": {"name": f"{base} (overlap {lane})"}})
        meta.append(
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": new,
             "args": {"sort_index": sort_index.get((pid, tid), tid) * 1000 + lane}}
        )  # fmt: skip
    return meta


def separate_overlaps(events: list[Event]) -> list[Event]:
    """Move complete events that partly overlap others on their track to extra tracks.

    Each extra track gets a new ``tid`` in the same process, a ``thread_name`` of
    ``"<track name> (overlap N)"`` and a sort index just after its track. A flow event
    (``s``/``f``) moves with the innermost slice that encloses its timestamp. Events are not
    changed in place; a trace without such overlaps comes back equal.

    >>> ev = [{"ph": "X", "name": n, "ts": t, "dur": 2.0, "pid": 1, "tid": 1} for n, t in [("a", 0.0), ("b", 1.0)]]
    >>> [(e["name"], e["tid"]) for e in separate_overlaps(ev) if e["ph"] == "X"]
    [('a', 1), ('b', 2)]
    """
    tracks = _slice_tracks(events)
    moved, new_threads = _extra_lanes(events, tracks)
    if not moved:
        return list(events)
    out = [dict(e, tid=moved[i]) if i in moved else e for i, e in enumerate(events)]
    _flows_follow(events, out, tracks, moved)
    meta = _overlap_thread_meta(events, new_threads)
    n_meta = sum(1 for e in out if e.get("ph") == "M")
    if any(e.get("ph") == "M" for e in out[n_meta:]):  # metadata not leading: append at the end
        return out + meta
    return out[:n_meta] + meta + out[n_meta:]


class _TraceCheck:
    """What :func:`check_trace` collects while it reads the events, and the checks on it."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.processes: set[int] = set()
        self.threads: set[tuple[int, int]] = set()
        self.used_pids: set[int] = set()
        self.used_threads: set[tuple[int, int]] = set()
        self.slices: dict[tuple[int, int], list[Event]] = {}
        self.begins: dict[tuple[int, int], list[float]] = {}
        self.flows: dict[tuple[str, object], list[float]] = {}
        self.finishes: dict[tuple[str, object], list[float]] = {}

    def read(self, k: int, e: Event) -> None:
        """Check event number ``k`` alone and remember what the whole-trace checks need."""
        ph, pid = e.get("ph"), e.get("pid")
        if not isinstance(ph, str) or not isinstance(pid, int):
            self.problems.append(f"event {k}: needs a string 'ph' and an integer 'pid'")
            return
        tid = e.get("tid", 0)
        if ph == "M":
            if e.get("name") == "process_name":
                self.processes.add(pid)
            elif e.get("name") == "thread_name":
                self.threads.add((pid, tid))
            return
        self.used_pids.add(pid)
        ts = e.get("ts")
        if not finite_number(ts) or ts < 0:
            self.problems.append(f"event {k} ({e.get('name')!r}): ts {ts!r} is not a finite time >= 0")
            return
        if ph == "X":
            dur = e.get("dur")
            if not finite_number(dur) or dur < 0:
                self.problems.append(f"event {k} ({e.get('name')!r}): dur {dur!r} is not a finite duration >= 0")
                return
            self.slices.setdefault((pid, tid), []).append(e)
            self.used_threads.add((pid, tid))
        elif ph in ("B", "E"):
            self._begin_end(ph, pid, tid, ts)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(finite_number(v) for v in args.values()):
                self.problems.append(f"counter {e.get('name')!r} at {ts} us: args must be finite numbers")
        elif ph in ("s", "f"):
            self.used_threads.add((pid, tid))
            key = (str(e.get("cat", "")), e.get("id"))
            (self.flows if ph == "s" else self.finishes).setdefault(key, []).append(ts)

    def _begin_end(self, ph: str, pid: int, tid: int, ts: float) -> None:
        self.used_threads.add((pid, tid))
        stack = self.begins.setdefault((pid, tid), [])
        if ph == "B":
            stack.append(ts)
        elif not stack:
            self.problems.append(f"pid {pid} tid {tid}: end event at {ts} us without a begin")
        elif stack.pop() > ts + _EPS_US:
            self.problems.append(f"pid {pid} tid {tid}: end event at {ts} us before its begin")

    def check_names_begins_flows(self) -> None:
        for pid in sorted(self.used_pids - self.processes):
            self.problems.append(f"pid {pid}: no process_name metadata")
        for pid, tid in sorted(self.used_threads - self.threads):
            self.problems.append(f"pid {pid} tid {tid}: no thread_name metadata")
        for (pid, tid), stack in sorted(self.begins.items()):
            if stack:
                self.problems.append(f"pid {pid} tid {tid}: {len(stack)} begin event(s) never end")
        for key, starts in self.flows.items():
            ends = self.finishes.get(key, [])
            if len(ends) < len(starts):
                self.problems.append(f"flow {key[0]!r} id {key[1]!r}: {len(starts)} start(s), {len(ends)} finish(es)")
            elif min(ends) < min(starts) - _EPS_US:
                self.problems.append(f"flow {key[0]!r} id {key[1]!r}: finishes before it starts")

    def check_overlaps(self) -> None:
        """Slices on one track must nest or follow each other."""
        for (pid, tid), evs in sorted(self.slices.items()):
            evs.sort(key=lambda e: (e["ts"], -e["dur"]))
            open_: list[Event] = []
            for e in evs:
                while open_ and open_[-1]["ts"] + open_[-1]["dur"] <= e["ts"] + _EPS_US:
                    open_.pop()
                if open_ and e["ts"] + e["dur"] > open_[-1]["ts"] + open_[-1]["dur"] + _EPS_US:
                    o = open_[-1]
                    self.problems.append(
                        f"pid {pid} tid {tid}: slice {e.get('name')!r} [{e['ts']:g}, {e['ts'] + e['dur']:g}] us "
                        f"partly overlaps {o.get('name')!r} [{o['ts']:g}, {o['ts'] + o['dur']:g}] us"
                    )
                    continue
                open_.append(e)


def check_trace(trace: Mapping[str, Any] | list[Event]) -> list[str]:
    """Problems that would make Perfetto's JSON importer drop or misplace events.

    Checks, for any Trace Event Format object (not only hwsim's):

    - every event has a ``ph``, an integer ``pid`` and, except metadata, a finite ``ts >= 0``;
      complete events (``X``) a finite ``dur >= 0``;
    - every process that holds an event is named (``process_name``), and so is every thread
      that holds a slice, a begin/end pair or a flow (``thread_name``);
    - complete events on one track (pid, tid) nest or follow each other: none starts inside
      another and ends after it (up to 0.1 ns of round-off);
    - begin (``B``) and end (``E``) events balance on every track and never end before they begin;
    - counters (``C``) carry only finite numbers in ``args``;
    - every flow start (``s``) has a finish (``f``) with the same ``cat`` and ``id``, not earlier.

    Parameters
    ----------
    trace : dict or list
        ``{"traceEvents": [...], ...}`` or the bare event list.

    Returns
    -------
    list of str
        One line per problem; empty when the trace is valid.

    >>> check_trace([{"ph": "X", "name": "a", "ts": 0, "dur": 2, "pid": 1, "tid": 1},
    ...              {"ph": "X", "name": "b", "ts": 1, "dur": 2, "pid": 1, "tid": 1}])[-1]
    "pid 1 tid 1: slice 'b' [1, 3] us partly overlaps 'a' [0, 2] us"
    """
    events = trace if isinstance(trace, list) else trace.get("traceEvents")
    if not isinstance(events, list):
        return ["no traceEvents list"]
    check = _TraceCheck()
    for k, e in enumerate(events):
        check.read(k, e)
    check.check_names_begins_flows()
    check.check_overlaps()
    return check.problems
