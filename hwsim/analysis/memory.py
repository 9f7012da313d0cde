"""Memory over time, per memory domain, read from a simulated run; SRAM capacity kept by spills.

What is held, and where (every size is :func:`graph_ir.ir.deployed_bytes` in the dtype the op
that holds it ran in, the dtype the schedule's transfers use too):

- **activations**: a tensor is allocated in its producer's domain when the producer starts and
  freed when the last op of that domain that reads it ends (a graph input: in the host domain,
  from its frame's admission). A DMA transfer makes a copy in the destination domain, allocated
  when the transfer starts and freed when the last op there that reads it ends (not before the
  transfer ends). A graph output is held in the host domain until the run ends. A view
  (Reshape, Flatten, Squeeze, Unsqueeze, Identity: :func:`view_source`) run in the domain its
  input was made in allocates nothing: its output is its input's buffer, which lives until the
  view's last reader there (or DMA out) is done (:func:`view_aliases`); a view of a DMA's copy
  makes a buffer of its own, as any op does;
- **staging**: a tensor's buffer held only for the DMA after its last reader in its domain
  ended (or, with no reader there, after its producer ended), until the last transfer out of
  that domain ends. It is the same buffer as the activation, counted under another name for
  the part of its life the DMA alone keeps it;
- **weights**: resident for the whole run in the domain of every unit that runs an op holding
  the initializer (once per domain, in the widest dtype an op there needs), as a chip's runtime
  loads them before the first inference;
- **tiles**: a tiled op (``OpCost.tiles > 1``) holds its double-buffered tiles (two tiles of
  ``dram_bytes / tiles``; one without double buffering) while it runs, and a split op's shards
  likewise hold theirs (an untiled shard its whole slice). These live in the unit's private
  on-chip buffer (the NPU's SRAM, a CPU's L2: :meth:`chips.schema.Unit.onchip_bytes` per
  core), not in a domain: each such unit gets a place of its own, ``"<unit> buffer"``.

Places (:class:`Place`): every domain of the chip (an ``sram`` domain's capacity is its
``capacity_kib``; a ``dram`` domain is a view of the shared DRAM, whose ``capacity_mib`` it may
fill), the physical DRAM (:data:`DRAM`: every dram domain's buffers plus the spilled ones,
against ``dram.capacity_mib``) and the unit buffers.

**Capacity.** An SRAM domain with a capacity never holds more: :func:`choose_spills` sweeps its
allocations in time order and, whenever one would overflow it, moves the largest tensor live
then (ties: the one held longest, then by name) to DRAM for its whole life, all its frames
included. Spilling is costed by re-simulation (:func:`fit_memory`): a spilled tensor is written
to DRAM by the op that produces it in that domain and read back by every op there that reads
it, so those ops get the extra DRAM bytes (:func:`spill_table`, at the DRAM's bandwidth and
energy per byte; ``OpCost.spill_bytes``: the engine streams them through the DRAM, and the
trace's ``OpRecord.spill_bytes`` counts them in the run's DRAM bytes, energy and power,
:mod:`hwsim.analysis.energy`), the same schedule is simulated again, and the spills of the new run are
chosen again (a spilled tensor stays spilled) until no new one is needed. The DRAM itself is
not enforced here: :meth:`MemoryUse.overcommitted` says whether its peak passes its capacity
(``hwsim run`` fails on it, or reports it with ``--allow-overcommit``).

**Streams** (``--frames N``): spills are decided on the one-frame run, and the stream is
simulated with those spills costed; its memory counters apply the same spilled set. That
decision bounds the stream only with ``in_flight = 1`` and no thermal model: frame ``i + 1`` is
then admitted when frame ``i`` has completed, on an idle chip, so each frame replays the
one-frame run shifted in time (the engine is deterministic) and no two frames' activations are
live at once (graph outputs, held in the host domain to the end, are the exception, so a
capacity on the host domain is not bounded). Otherwise it does not bound it: interleaved frames
hold several frames' activations at once (a 4-frame stream of the 20 KiB test chain holds 64 KiB
in its SRAM domain against 16 KiB for one frame), and the stream's counters can pass the SRAM's
capacity. Not built: deciding spills on the stream trace (it needs :func:`fit_memory` to
re-simulate the stream and the summary's spills to come from it).

>>> from hwsim.pipeline import run
>>> r = run("rk3588", "examples/models/resnet18.onnx")
>>> use = memory_use(r.graph, r.chip, r.table, r.trace)
>>> [p.name for p in use.places][:4], use.spills
(['cpu', 'gpu', 'npu', 'DRAM'], ())
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from chips.schema import Chip, Domain
from cost_models.base import OpCost
from cost_models.energy import dram_energy_pj
from cost_models.table import CostTable
from graph_ir.categories import CATEGORY_INFO
from graph_ir.ir import ModelGraph, Op, Tensor, deployed_bytes
from hwsim.sim.engine import EngineOptions, Trace, simulate
from hwsim.sim.records import OpRecord
from scheduler.schedule import Schedule

__all__ = [
    "BYTES_PER_KIB",
    "BYTES_PER_MIB",
    "DRAM",
    "KINDS",
    "Buffer",
    "MemoryFit",
    "MemoryUse",
    "Peak",
    "Place",
    "Spill",
    "buffers",
    "capped_domains",
    "choose_spills",
    "fit_memory",
    "in_place",
    "memory_use",
    "places",
    "spill_table",
    "tile_bytes",
    "unit_buffer",
    "use_steps",
    "view_aliases",
    "view_source",
]

#: What a buffer holds, in the order reports list them.
KINDS = ("activations", "weights", "staging", "tiles")
#: The place that stands for the physical DRAM (every dram domain and the spills).
DRAM = "DRAM"
BYTES_PER_KIB = 1024
BYTES_PER_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Buffer:
    """One allocation: ``bytes`` held in ``place`` over ``[start_ps, end_ps)``.

    ``tensor`` names the tensor (the op, for ``tiles``); ``kind`` is one of :data:`KINDS`;
    ``spilled``: an SRAM domain's tensor that lives in DRAM instead (:func:`choose_spills`).
    """

    tensor: str
    kind: str
    place: str
    bytes: int
    start_ps: int
    end_ps: int
    frame: int = 0
    spilled: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """What a spill moves: the tensor in its place (every frame, every part of its life)."""
        return self.tensor, self.place


@dataclass(frozen=True, slots=True)
class Place:
    """Where buffers live: ``kind`` is ``sram`` or ``dram`` (a chip domain), ``DRAM`` (the
    physical DRAM) or ``unit buffer``; ``capacity_bytes`` None when the chip gives none."""

    name: str
    kind: str
    capacity_bytes: int | None


@dataclass(frozen=True, slots=True)
class Peak:
    """The most a place held (bytes), when (ps), the op running then, and what it held by kind."""

    place: str
    kind: str
    peak_bytes: int
    capacity_bytes: int | None
    at_ps: int
    at_op: str
    activations_bytes: int
    weights_bytes: int
    staging_bytes: int
    tiles_bytes: int

    @property
    def over_capacity(self) -> bool:
        return self.capacity_bytes is not None and self.peak_bytes > self.capacity_bytes

    def overflow_words(self) -> str:
        """The overflow in words: the place, the peak and the capacity.

        >>> Peak("DRAM", "DRAM", 3 << 20, 2 << 20, 0, "conv", 0, 0, 0, 0).overflow_words()
        'memory domain DRAM peaks at 3145728 bytes (3.0 MiB) at op conv, over its capacity of 2097152 bytes (2.0 MiB)'
        """
        at = f" at op {self.at_op}" if self.at_op else ""
        cap = self.capacity_bytes or 0
        return (
            f"memory domain {self.place} peaks at {self.peak_bytes} bytes ({self.peak_bytes / BYTES_PER_MIB:.1f} MiB)"
            f"{at}, over its capacity of {cap} bytes ({cap / BYTES_PER_MIB:.1f} MiB)"
        )


@dataclass(frozen=True, slots=True)
class Spill:
    """A tensor an SRAM domain could not hold, moved to DRAM (``bytes``: its largest buffer)."""

    tensor: str
    domain: str
    bytes: int


@dataclass(frozen=True, slots=True)
class MemoryUse:
    """Memory over a run: the buffers, each place's use over time and its peak, the spills.

    ``steps[place]`` is ``((time_ps, bytes in use from then on), ...)``, starting at 0.
    """

    places: tuple[Place, ...]
    buffers: tuple[Buffer, ...]
    steps: Mapping[str, tuple[tuple[int, int], ...]]
    peaks: tuple[Peak, ...]
    spills: tuple[Spill, ...]
    #: Whether tiled ops held two tiles (the engine's double buffering) or one.
    double_buffer: bool = True

    @property
    def spilled(self) -> frozenset[tuple[str, str]]:
        """The spilled (tensor, domain) pairs, as :func:`memory_use` takes them."""
        return frozenset((s.tensor, s.domain) for s in self.spills)

    def overcommitted(self) -> Peak | None:
        """The physical DRAM's peak when it passes the DRAM's capacity (None: it fits)."""
        for p in self.peaks:
            if p.place == DRAM and p.over_capacity:
                return p
        return None


def places(chip: Chip, trace: Trace) -> tuple[Place, ...]:
    """The chip's domains, the physical DRAM, then a buffer per unit that ran a tiled or split op."""
    dram_cap = None if chip.dram.capacity_mib is None else int(chip.dram.capacity_mib * BYTES_PER_MIB)
    out = []
    for d in chip.domains:
        if d.kind == "sram":
            cap = None if d.capacity_kib is None else int(d.capacity_kib * BYTES_PER_KIB)
            out.append(Place(d.name, "sram", cap))
        else:
            out.append(Place(d.name, "dram", dram_cap))
    out.append(Place(DRAM, DRAM, dram_cap))
    tiled = {r.unit for r in trace.ops if r.tiles > 1 or r.cores}
    for u in chip.units:
        if u.name in tiled:
            out.append(Place(unit_buffer(u.name), "unit buffer", int(u.onchip_bytes() * u.cores)))
    return tuple(out)


def unit_buffer(unit: str) -> str:
    """The place of a unit's private on-chip buffer."""
    return f"{unit} buffer"


# ---------------------------------------------------------------- buffers of a run


def view_source(op: Op) -> Tensor | None:
    """The tensor whose buffer ``op``'s first output reinterprets, or None when it makes a new one.

    A view (an op of a ``view`` category, :data:`graph_ir.categories.CATEGORY_INFO`: Reshape,
    Flatten, Squeeze, Unsqueeze, Identity, Dropout) copies nothing: its output is its first input's
    bytes read another way. Not a view here: an op whose first input is a weight, or whose
    output holds other elements or another dtype (Shape, Size, Constant, EyeLike make new tensors).

    >>> from graph_ir.ir import Op, Tensor
    >>> x = Tensor("x", (1, 8), "float32")
    >>> view_source(Op("r", "Reshape", "layout", (x,), (Tensor("y", (8,), "float32"),))).name
    'x'
    >>> view_source(Op("s", "Shape", "layout", (x,), (Tensor("s", (2,), "int64"),))) is None
    True
    """
    if not CATEGORY_INFO[op.category].view or not op.inputs or not op.outputs:
        return None
    src, out = op.inputs[0], op.outputs[0]
    if src.is_weight or src.elements != out.elements or src.dtype != out.dtype:
        return None
    return src


def view_aliases(
    graph: ModelGraph, chip: Chip, table: CostTable, unit_of: Mapping[str, str]
) -> dict[tuple[str, str], str]:
    """``(view output, domain) -> the tensor that owns its buffer``, for the views that alias.

    ``unit_of`` maps each op to the unit that ran it. A view aliases its input only where the
    input was made in the view's own domain (by its producer there, or a graph input in the host
    domain) and in as many bytes as the view's dtype gives its output: a view of a tensor from
    another domain works on the DMA's copy, a buffer of its own, and one whose unit holds the
    tensor in another dtype converts it; either output stays a new allocation. A chain of views
    resolves to its first tensor.
    """
    domain_of = {u.name: u.domain for u in chip.units}
    graph_inputs = {t.name for t in graph.inputs}
    out: dict[tuple[str, str], str] = {}
    for name in graph.order:
        op = graph.op(name)
        src = view_source(op) if name in unit_of else None
        if src is None:
            continue
        d, producer = domain_of[unit_of[name]], graph.producer.get(src.name)
        made_dtype: str | None
        if producer is not None and producer in unit_of:
            made_in, made_dtype = domain_of[unit_of[producer]], table.costs[producer][unit_of[producer]].dtype
        elif producer is None and src.name in graph_inputs:
            made_in, made_dtype = chip.host, None if table.precision == "model" else table.precision
        else:
            continue
        view_dtype = table.costs[name][unit_of[name]].dtype
        same_bytes = deployed_bytes(src, made_dtype) == deployed_bytes(op.outputs[0], view_dtype)
        if made_in == d and same_bytes:
            out[(op.outputs[0].name, d)] = out.get((src.name, d), src.name)
    return out


@dataclass(slots=True)
class _Residence:
    """A tensor of one frame in one domain while buffers are gathered."""

    bytes: int
    start_ps: int
    held_ps: int  # the end of its life as an activation so far
    dma_ps: int = -1  # the end of the last transfer out of this domain


def _residences(graph: ModelGraph, chip: Chip, table: CostTable, trace: Trace) -> dict[tuple[str, str, int], _Residence]:
    """Every (tensor, domain, frame): its bytes, when it arrived, when readers and DMA let it go."""
    domain_of = {u.name: u.domain for u in chip.units}
    host, res = chip.host, {}
    dtype = None if table.precision == "model" else table.precision
    for f in range(trace.frames):
        admit = trace.frame_admit_ps[f] if f < len(trace.frame_admit_ps) else 0
        for t in graph.inputs:
            res[(t.name, host, f)] = _Residence(deployed_bytes(t, dtype), admit, admit)
    for r in trace.ops:
        op_dtype = table.costs[r.op][r.unit].dtype
        for t in graph.op(r.op).outputs:
            res[(t.name, domain_of[r.unit], r.frame)] = _Residence(deployed_bytes(t, op_dtype), r.start_ps, r.end_ps)
    for x in trace.transfers:
        res[(x.tensor, x.dst_domain, x.frame)] = _Residence(x.bytes, x.start_ps, x.end_ps)
    for x in trace.transfers:
        src = res.get((x.tensor, x.src_domain, x.frame))
        if src is not None:
            src.dma_ps = max(src.dma_ps, x.end_ps)
    for r in trace.ops:
        d = domain_of[r.unit]
        for t in graph.op(r.op).activations:
            here = res.get((t.name, d, r.frame))
            if here is not None:
                here.held_ps = max(here.held_ps, r.end_ps)
    for f in range(trace.frames):
        for t in graph.outputs:
            out = res.get((t.name, host, f))
            if out is not None:
                out.held_ps = max(out.held_ps, trace.makespan_ps)
    _fold_views(graph, chip, table, trace, res)
    return res


def _fold_views(
    graph: ModelGraph, chip: Chip, table: CostTable, trace: Trace, res: dict[tuple[str, str, int], _Residence]
) -> None:
    """Fold each aliasing view's output (:func:`view_aliases`) into the buffer it reinterprets,
    which then lives until the view's last reader there (and its last DMA out) is done."""
    units: dict[int, dict[str, str]] = {}
    for r in trace.ops:
        units.setdefault(r.frame, {})[r.op] = r.unit
    for f, unit_of in sorted(units.items()):
        for (tensor, d), owner in view_aliases(graph, chip, table, unit_of).items():
            root = res.get((owner, d, f))
            view = res.pop((tensor, d, f), None) if root is not None else None
            if root is None or view is None:
                continue
            root.held_ps = max(root.held_ps, view.held_ps)
            root.dma_ps = max(root.dma_ps, view.dma_ps)


def _weights(graph: ModelGraph, chip: Chip, table: CostTable, trace: Trace) -> list[Buffer]:
    """Each initializer resident in every domain whose units run an op holding it, all run long."""
    domain_of = {u.name: u.domain for u in chip.units}
    held: dict[tuple[str, str], int] = {}
    for r in trace.ops:
        if r.frame:
            continue
        op_dtype = table.costs[r.op][r.unit].dtype
        for w in graph.op(r.op).weights:
            key = (w.name, domain_of[r.unit])
            held[key] = max(held.get(key, 0), deployed_bytes(w, op_dtype))
    return [Buffer(w, "weights", d, b, 0, trace.makespan_ps) for (w, d), b in sorted(held.items())]


def tile_bytes(record: OpRecord, double_buffer: bool = True) -> int:
    """Bytes a tiled or split op holds in its unit's buffer while it runs (0: neither).

    >>> from hwsim.sim.records import OpRecord
    >>> tile_bytes(OpRecord("c", "Conv", "npu", 0, 0, 10, 1000, tiles=10))  # two tiles of 100
    200
    >>> tile_bytes(OpRecord("c", "Conv", "npu", 0, 0, 10, 1000, cores=(0, 1)))  # two untiled shards
    1000
    """
    if record.tiles <= 1 and not record.cores:
        return 0
    held = min(record.tiles, 2 if double_buffer else 1)
    return math.ceil(record.dram_bytes * held / record.tiles)


def buffers(
    graph: ModelGraph, chip: Chip, table: CostTable, trace: Trace, double_buffer: bool = True
) -> list[Buffer]:
    """Every allocation of the run in ``trace`` (none spilled), in a deterministic order.

    ``double_buffer`` must be the engine's (:class:`hwsim.sim.options.EngineOptions`).
    """
    out: list[Buffer] = []
    for (tensor, domain, frame), r in sorted(_residences(graph, chip, table, trace).items()):
        if r.held_ps > r.start_ps:
            out.append(Buffer(tensor, "activations", domain, r.bytes, r.start_ps, r.held_ps, frame))
        if r.dma_ps > r.held_ps:
            out.append(Buffer(tensor, "staging", domain, r.bytes, r.held_ps, r.dma_ps, frame))
    out += _weights(graph, chip, table, trace)
    for rec in trace.ops:
        b = tile_bytes(rec, double_buffer)
        if b > 0 and rec.end_ps > rec.start_ps:
            out.append(Buffer(rec.op, "tiles", unit_buffer(rec.unit), b, rec.start_ps, rec.end_ps, rec.frame))
    return out


# ---------------------------------------------------------------- use over time


def use_steps(bufs: Iterable[Buffer]) -> tuple[tuple[int, int], ...]:
    """Bytes in use as steps ``(time_ps, bytes from then on)``, from time 0.

    >>> use_steps([Buffer("a", "activations", "d", 10, 0, 5), Buffer("b", "activations", "d", 4, 5, 9)])
    ((0, 10), (5, 4), (9, 0))
    """
    starts, ends, sizes = [], [], []
    for b in bufs:
        if b.end_ps > b.start_ps and b.bytes > 0:
            starts.append(b.start_ps)
            ends.append(b.end_ps)
            sizes.append(b.bytes)
    all_times = starts + ends
    times, deltas = np.asarray(all_times), np.asarray(sizes + [-n for n in sizes])
    if sizes and times.dtype == deltas.dtype == np.int64 and sum(sizes) < 2**62:
        # in numpy: the bytes in use after the last event at each time (the events' order
        # within a time does not change that sum), exact in int64; the times are the buffers'
        # own int objects (a run keeps these steps)
        order = np.argsort(times, kind="stable")
        at, used_then = times[order], np.cumsum(deltas[order])
        last = np.append(at[1:] != at[:-1], True)
        out = list(zip([all_times[i] for i in order[last].tolist()], used_then[last].tolist(), strict=True))
        return tuple(out) if out[0][0] == 0 else ((0, 0), *out)
    steps: list[tuple[int, int]] = [(0, 0)]
    used = 0
    events = [*zip(starts, [1] * len(sizes), sizes), *zip(ends, [0] * len(sizes), [-n for n in sizes])]
    for t, _, delta in sorted(events):  # frees before allocations at the same time
        used += delta
        if steps[-1][0] == t:
            steps[-1] = (t, used)
        else:
            steps.append((t, used))
    return tuple(steps)


def in_place(place: str, b: Buffer, dram_domains: frozenset[str]) -> bool:
    """Whether buffer ``b`` counts in ``place`` (spilled ones count in the DRAM only)."""
    if place == DRAM:
        return b.spilled or b.place in dram_domains
    return b.place == place and not b.spilled


def _op_at(ops: Sequence[OpRecord], t: int) -> str:
    """The op that started last among those running at ``t`` (else the last to end by then)."""
    running = [r for r in ops if r.start_ps <= t < r.end_ps]
    if running:
        return running[-1].op
    done = [r for r in ops if r.end_ps <= t]
    return max(done, key=lambda r: r.end_ps).op if done else ""


def _peak(place: Place, bufs: list[Buffer], steps: tuple[tuple[int, int], ...], ops: Sequence[OpRecord]) -> Peak:
    at, most = max(steps, key=lambda s: (s[1], -s[0]))
    kinds = dict.fromkeys(KINDS, 0)
    for b in bufs:
        if b.start_ps <= at < b.end_ps:
            kinds[b.kind] += b.bytes
    return Peak(
        place.name, place.kind, most, place.capacity_bytes, at, _op_at(ops, at) if most else "",
        kinds["activations"], kinds["weights"], kinds["staging"], kinds["tiles"],
    )  # fmt: skip


def memory_use(
    graph: ModelGraph, chip: Chip, table: CostTable, trace: Trace,
    spilled: frozenset[tuple[str, str]] = frozenset(), double_buffer: bool = True,
) -> MemoryUse:  # fmt: skip
    """Memory per place over the run in ``trace``, with the ``spilled`` (tensor, domain) in DRAM.

    Returns
    -------
    MemoryUse
        Buffers, steps and peaks in bytes, times in ps; ``spills`` lists ``spilled``.
    """
    bufs = [replace(b, spilled=True) if b.key in spilled else b for b in buffers(graph, chip, table, trace, double_buffer)]
    dram_domains = frozenset(d.name for d in chip.domains if d.kind == "dram")
    all_places = places(chip, trace)
    steps, peaks = {}, []
    for p in all_places:
        mine = [b for b in bufs if in_place(p.name, b, dram_domains)]
        steps[p.name] = use_steps(mine)
        peaks.append(_peak(p, mine, steps[p.name], trace.ops))
    size: dict[tuple[str, str], int] = {}
    for b in bufs:
        if b.spilled:
            size[b.key] = max(size.get(b.key, 0), b.bytes)
    spills = tuple(Spill(t, d, n) for (t, d), n in sorted(size.items()))
    return MemoryUse(all_places, tuple(bufs), steps, tuple(peaks), spills, double_buffer)


# ---------------------------------------------------------------- capacity


def _spill_domain(bufs: list[Buffer], capacity: int, spilled: set[tuple[str, str]]) -> None:
    """Add to ``spilled`` until ``bufs`` (one SRAM domain's) never hold more than ``capacity``."""
    ev = sorted(
        (t, order, i)
        for i, b in enumerate(bufs)
        if b.end_ps > b.start_ps and b.bytes > 0
        for t, order in ((b.start_ps, 1), (b.end_ps, 0))
    )
    live: dict[int, Buffer] = {}
    used = 0
    for _, order, i in ev:
        b = bufs[i]
        if b.key in spilled:
            continue
        if order == 0:
            used -= live.pop(i).bytes
            continue
        live[i] = b
        used += b.bytes
        while used > capacity:
            victim = max(live.values(), key=lambda v: (v.bytes, v.end_ps - v.start_ps, v.tensor)).key
            spilled.add(victim)
            for j in [j for j, v in live.items() if v.key == victim]:
                used -= live.pop(j).bytes


def choose_spills(
    chip: Chip, bufs: Sequence[Buffer], spilled: frozenset[tuple[str, str]] = frozenset()
) -> frozenset[tuple[str, str]]:
    """``spilled`` plus the (tensor, domain) to move to DRAM so that no SRAM domain with a
    capacity ever holds more (see the module docstring for the choice)."""
    out = set(spilled)
    for d in capped_domains(chip):
        assert d.capacity_kib is not None
        _spill_domain([b for b in bufs if b.place == d.name], int(d.capacity_kib * BYTES_PER_KIB), out)
    return frozenset(out)


def capped_domains(chip: Chip) -> list[Domain]:
    """The chip's SRAM domains with a capacity: the only places a run spills from (none: every
    schedule's run is already its fitted run)."""
    return [d for d in chip.domains if d.kind == "sram" and d.capacity_kib is not None]


def spill_table(
    graph: ModelGraph, chip: Chip, table: CostTable, schedule: Schedule, spills: Sequence[Spill]
) -> CostTable:
    """``table`` with the DRAM traffic of ``spills`` added to the placed ops that touch them.

    The op producing a spilled tensor in its domain writes it to DRAM, every op there reading
    it (weights included, and through a view of it: :func:`view_aliases`) reads it back; the
    view itself touches none of its bytes. Their DRAM bytes grow, their memory time by those bytes
    at the DRAM's bandwidth and their energy by the DRAM's energy per byte.
    """
    if not spills:
        return table
    size = {(s.tensor, s.domain): s.bytes for s in spills}
    owner = view_aliases(graph, chip, table, {n: p.unit for n, p in schedule.placements.items()})
    extra: dict[str, list[int]] = {}
    for name in graph.order:
        d = chip.unit(schedule.placements[name].unit).domain
        op = graph.op(name)
        if op.outputs and (op.outputs[0].name, d) in owner:
            continue  # a view touches no byte of the buffer it reinterprets
        reads = sum(size.get((owner.get((t, d), t), d), 0) for t in {t.name for t in op.inputs})
        writes = sum(size.get((t.name, d), 0) for t in op.outputs)
        if reads or writes:
            extra[name] = [reads, writes]
    costs: dict[str, Mapping[str, OpCost]] = dict(table.costs)
    for name, (reads, writes) in extra.items():
        unit = schedule.placements[name].unit
        c = costs[name][unit]
        moved = reads + writes
        spilled_cost = replace(
            c, dram_read_bytes=c.dram_read_bytes + reads, dram_write_bytes=c.dram_write_bytes + writes,
            memory_ns=c.memory_ns + moved / chip.dram.bandwidth_gbps,
            energy_pj=c.energy_pj + dram_energy_pj(chip.dram, moved), spill_bytes=c.spill_bytes + moved,
            note=(c.note + "; " if c.note else "") + f"spill {moved} B",
        )  # fmt: skip
        costs[name] = {**costs[name], unit: spilled_cost}
    return CostTable(table.precision, costs, knobs=table.knobs, fused_into=table.fused_into)


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """A run whose SRAM domains keep to capacity: the table with the spills' costs, its trace
    and its memory."""

    table: CostTable
    trace: Trace
    memory: MemoryUse


def fit_memory(
    graph: ModelGraph, chip: Chip, table: CostTable, schedule: Schedule, trace: Trace,
    options: EngineOptions | None = None,
) -> MemoryFit:  # fmt: skip
    """Spill what the SRAM domains cannot hold and re-simulate ``schedule`` with the spills
    costed, until no new spill is needed (the module docstring says how).

    Without an SRAM domain over capacity, ``table`` and ``trace`` come back unchanged.
    """
    opts = options if options is not None else EngineOptions()
    spilled: frozenset[tuple[str, str]] = frozenset()
    fitted = table
    while True:
        use = memory_use(graph, chip, fitted, trace, spilled, opts.double_buffer)
        more = choose_spills(chip, use.buffers, spilled)
        if more == spilled:
            return MemoryFit(fitted, trace, use)
        spilled = more
        spills = memory_use(graph, chip, fitted, trace, spilled, opts.double_buffer).spills
        fitted = spill_table(graph, chip, table, schedule, spills)
        trace = simulate(graph, chip, fitted, schedule, opts)
