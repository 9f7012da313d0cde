"""PNG figures of a simulated run: utilization heatmap, Gantt chart, traffic matrix, bandwidth,
memory in use.

Matplotlib's object API only (``Figure`` with an Agg canvas): no pyplot, no global state, so
the functions are safe to call from threads and from library code. Every figure function takes
a :class:`~hwsim.pipeline.RunResult` (or the JSON of a study), returns the PNG's bytes and also
writes them to ``path`` when one is given; all handle a run with no transfers, a run of zero
length (a graph of views) and units that never ran anything.

The four figures of a run are laid out with fixed margins (in inches, the left one sized to
the longest tick label) and drawn once: ``hwsim run`` draws them on every run, and a layout
engine would lay out every text twice.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import offset_copy

from chips.units import GBPS_PER_BYTES_PER_PS, PS_PER_MS
from graph_ir.categories import CATEGORY_INFO
from hwsim.analysis.busy import busy_core_ps_until, busy_core_steps
from hwsim.analysis.memory import BYTES_PER_MIB, KINDS, Buffer, MemoryUse, Peak, in_place
from hwsim.pipeline import RunResult
from hwsim.report.trace import dma_track
from hwsim.sim.engine import Trace

__all__ = [
    "CATEGORY_COLORS",
    "GANTT_ALL_CORES",
    "GANTT_MAX_OPS",
    "bandwidth_png",
    "compare_png",
    "gantt_png",
    "heatmap_png",
    "memory_png",
    "sensitivity_png",
    "traffic_png",
    "utilization_bins",
]

#: Above this many ops the Gantt chart merges bars closer than a pixel (and says so).
GANTT_MAX_OPS = 20_000
#: A unit with at most this many cores has a Gantt row for each; a larger one only for those that
#: run an op, and one row for the rest.
GANTT_ALL_CORES = 16
_GANTT_WIDTH_PX = 1800
#: Above this many steps a bandwidth curve is drawn as its mean over equal bins (and says so).
_BANDWIDTH_MAX_STEPS = 20_000
_BANDWIDTH_BINS = 2000
#: Resolution of the run's figures: 1200 to 1400 pixels across.
_DPI = 100
#: Matplotlib's default text size (points), used by tick labels.
_FONT_PT = 10.0

#: One fixed colour per op category (:data:`graph_ir.categories.CATEGORY_INFO`), stable across figures.
CATEGORY_COLORS: dict[str, str] = {c: info.color for c, info in CATEGORY_INFO.items()}
_DMA_COLOR = "#555555"
_CRITICAL_COLOR = "#d62728"


def _run_title(result: RunResult, what: str) -> str:
    return f"{result.chip.name} / {result.graph.name}: {what} (latency {result.analysis.latency_ms:.3f} ms)"


def _png(fig: Figure, path: Path | None, dpi: int = _DPI) -> bytes:
    """Draw ``fig`` once on an Agg canvas; its PNG bytes, also written to ``path`` if given."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def _save(fig: Figure, path: Path | None, dpi: int = 110) -> bytes:
    """The PNG of a study's figure (laid out by matplotlib's constrained layout)."""
    return _png(fig, path, dpi)


def _title(ax: Axes, text: str) -> None:
    """A title at a fixed place above ``ax`` (matplotlib need not search for artists it would overlap)."""
    ax.set_title(text, fontsize=10, y=1.0, pad=6.0)


def _axis_labels(ax: Axes, xlabel: str | None = None, ylabel: str | None = None, ylabel_left_in: float = 0.0) -> None:
    """Axis labels at fixed places: ``xlabel`` under the tick labels, ``ylabel`` ``ylabel_left_in``
    inches left of the axes (so matplotlib need not measure the tick labels to place them)."""
    fig = ax.get_figure()
    assert isinstance(fig, Figure)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
        ax.xaxis.set_label_coords(0.5, 0.0, offset_copy(ax.transAxes, fig, y=-22.0, units="points"))
    if ylabel is not None:
        ax.set_ylabel(ylabel)
        ax.yaxis.set_label_coords(0.0, 0.5, offset_copy(ax.transAxes, fig, x=-72 * ylabel_left_in, units="points"))


def _label_width_in(labels: Iterable[str], fontsize_pt: float = _FONT_PT) -> float:
    """A generous estimate of the widest label's width (inches) in matplotlib's sans font."""
    return max((len(s) for s in labels), default=0) * 0.62 * fontsize_pt / 72


def _rect(fig: Figure, left_in: float, bottom_in: float, right_in: float, top_in: float) -> tuple[float, float, float, float]:
    """The figure-fraction rectangle ``(x, y, width, height)`` inside the given margins (inches)."""
    w, h = fig.get_size_inches()
    return (left_in / w, bottom_in / h, 1.0 - (left_in + right_in) / w, 1.0 - (bottom_in + top_in) / h)


def utilization_bins(
    result: RunResult, bins: int = 100
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Busy fraction of every unit in ``bins`` equal slices of the run, computed exactly.

    Each cell is the core-time that ops of the unit overlap the bin, over the bin's width
    times the unit's cores. A row's mean is therefore the unit's utilization in
    ``result.analysis``.

    Parameters
    ----------
    result : RunResult
    bins : int
        Number of time bins over ``[0, makespan]`` (at least 1).

    Returns
    -------
    unit_names : list of str
        The chip's units, in its order (one row each).
    utilization : numpy.ndarray
        Shape ``(units, bins)``, values in [0, 1]; all zeros for a run of zero length.
    bin_edges_ms : numpy.ndarray
        Shape ``(bins + 1,)``, milliseconds.
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    makespan = result.trace.makespan_ps
    edges_ps = np.linspace(0.0, float(makespan), bins + 1)
    names = [u.name for u in result.chip.units]
    util = np.zeros((len(names), bins))
    if makespan > 0:
        width = makespan / bins
        for row, u in enumerate(result.chip.units):
            steps = busy_core_steps(r for r in result.trace.ops if r.unit == u.name)
            util[row] = np.diff(busy_core_ps_until(steps, edges_ps)) / (width * u.cores)
        np.clip(util, 0.0, 1.0, out=util)
    return names, util, edges_ps / PS_PER_MS


def heatmap_png(result: RunResult, path: Path | None = None, bins: int = 100) -> bytes:
    """Units x time heatmap of utilization (0..1), with each unit's overall utilization."""
    names, util, edges_ms = utilization_bins(result, bins)
    usage = {u.unit: u for u in result.analysis.units}
    labels = [
        f"{n} ({usage[n].kind}, {usage[n].cores}c)  {100 * usage[n].utilization:.0f}%"
        for n in names
    ]
    right = float(edges_ms[-1]) if edges_ms[-1] > 0 else 1.0
    fig = Figure(figsize=(12, 1.4 + 0.5 * len(names)))
    ax = fig.add_axes(_rect(fig, _label_width_in(labels) + 0.2, 0.55, 1.2, 0.3))
    image = ax.imshow(
        util,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        extent=(0.0, right, len(names) - 0.5, -0.5),
    )
    ax.set_yticks(range(len(names)), labels)
    _axis_labels(ax, "time (ms)" if edges_ms[-1] > 0 else "time (ms): zero-length run")
    _title(ax, _run_title(result, f"unit utilization, {bins} bins"))
    cax = fig.add_axes(_rect(fig, 12 - 1.05, 0.55, 0.87, 0.3))
    fig.colorbar(image, cax=cax, label="utilization (busy cores / cores)")
    return _png(fig, path)


def _critical_transfers(result: RunResult) -> set[int]:
    """Indices into ``trace.transfers`` of the transfers on the critical path."""
    path = result.analysis.critical_path
    if not path:
        return set()
    index = {(x.tensor, x.dst_domain): i for i, x in enumerate(result.trace.transfers)}
    xs = result.trace.transfers
    domain_of = {u.name: u.domain for u in result.chip.units}
    unit_of = result.schedule.placements
    picked: set[int] = set()

    def longest(candidates: list[int]) -> None:
        if candidates:
            picked.add(max(candidates, key=lambda i: (xs[i].end_ps - xs[i].start_ps, -i)))

    first_dom = domain_of[unit_of[path[0]].unit]
    graph = result.graph
    longest(
        [
            index[(t.name, first_dom)]
            for t in graph.op(path[0]).activations
            if t.name not in graph.producer and (t.name, first_dom) in index
        ]
    )
    for p, c in pairwise(path):
        dom = domain_of[unit_of[c].unit]
        tensors = graph.g.edges[p, c]["tensors"]
        longest([index[(t, dom)] for t in tensors if (t, dom) in index])
    outputs = {o.name for o in graph.outputs}
    longest(
        [
            index[(t.name, result.chip.host)]
            for t in graph.op(path[-1]).outputs
            if t.name in outputs and (t.name, result.chip.host) in index
        ]
    )
    return picked


_Bar = tuple[float, float, str]  # start, width (ms), colour key


def _merge(bars: Sequence[_Bar], gap: float) -> list[_Bar]:
    """Merge bars (sorted by start) separated by less than ``gap``; a merged bar takes the
    colour key that covers most of it.

    >>> _merge([(0.0, 1.0, "conv"), (1.05, 2.0, "add"), (5.0, 0.5, "conv")], 0.1)
    [(0.0, 3.05, 'add'), (5.0, 0.5, 'conv')]
    """
    out: list[_Bar] = []
    share: dict[str, float] = {}
    for s, w, key in bars:
        if out and s - (out[-1][0] + out[-1][1]) < gap:
            s0, w0, best = out[-1]
            share[key] = share.get(key, 0.0) + w
            if key != best and (share[key], key) > (share[best], best):  # only key's share grew
                best = key
            out[-1] = (s0, max(w0, s + w - s0), best)
        else:
            share = {key: w}
            out.append((s, w, key))
    return out


#: Colours of frames in a multi-frame Gantt chart (they cycle after 10).
_FRAME_COLORS = tuple(colormaps["tab10"](i) for i in range(10))


def _gantt_rows(result: RunResult, trace: Trace) -> tuple[list[str], dict[tuple[str, int], int], list[int]]:
    """Row labels (a row per core, then per DMA channel), the row of each (unit or link, index),
    and the row after each unit's last core (where a separating line goes).

    A unit of more than :data:`GANTT_ALL_CORES` cores has a row per core that runs an op and one
    row saying how many are idle (a 1,024-core unit drew 1,024 rows, most of them empty).
    """
    used: dict[str, set[int]] = {}
    for r in trace.ops:
        used.setdefault(r.unit, set()).update(r.all_cores)
    rows: list[str] = []
    row_of: dict[tuple[str, int], int] = {}
    group_ends: list[int] = []
    for u in result.chip.units:
        shown = range(u.cores) if u.cores <= GANTT_ALL_CORES else sorted(used.get(u.name, ()))
        for c in shown:
            row_of[(u.name, c)] = len(rows)
            rows.append(f"{u.name}/{c}")
        if len(shown) < u.cores:
            rows.append(f"{u.name}: {u.cores - len(shown)} idle")
        group_ends.append(len(rows))
    for link in result.chip.links:
        for ch in range(link.dma_channels):
            row_of[(link.key, ch)] = len(rows)
            rows.append(f"DMA {link.key} ch{ch}")
    return rows, row_of, group_ends


def _gantt_bars(
    result: RunResult, trace: Trace, row_of: Mapping[tuple[str, int], int], n_rows: int
) -> tuple[list[list[_Bar]], list[list[_Bar]], list[str]]:
    """Bars per row, the critical-path bars per row (none with several frames), and the colour
    keys in order of first use: op categories and ``dma``, or ``frame N``."""
    multi = trace.frames > 1
    on_path = set() if multi else set(result.analysis.critical_path)
    crit_x = set() if multi else _critical_transfers(result)
    per_row: list[list[_Bar]] = [[] for _ in range(n_rows)]
    critical: list[list[_Bar]] = [[] for _ in range(n_rows)]
    keys: list[str] = []
    for r in trace.ops:
        key = f"frame {r.frame}" if multi else result.graph.op(r.op).category
        if key not in keys:
            keys.append(key)
        bar = (r.start_ps / PS_PER_MS, (r.end_ps - r.start_ps) / PS_PER_MS, key)
        for core in r.all_cores:  # an op split across cores fills each of their rows
            per_row[row_of[(r.unit, core)]].append(bar)
            if r.op in on_path:
                critical[row_of[(r.unit, core)]].append(bar)
    for i, x in enumerate(trace.transfers):
        bar = (x.start_ps / PS_PER_MS, (x.end_ps - x.start_ps) / PS_PER_MS, f"frame {x.frame}" if multi else "dma")
        row = row_of[dma_track(result.chip, x)]
        per_row[row].append(bar)
        if i in crit_x:
            critical[row].append(bar)
    return per_row, critical, keys


def _bar_color(key: str) -> Any:
    """The colour of a bar's key: ``frame N``, ``dma`` or an op category."""
    if key.startswith("frame "):
        return _FRAME_COLORS[int(key.split()[1]) % len(_FRAME_COLORS)]
    return _DMA_COLOR if key == "dma" else CATEGORY_COLORS.get(key, CATEGORY_COLORS["unknown"])


def _draw_bars(ax: Axes, per_row: Sequence[Sequence[_Bar]], critical: Sequence[Sequence[_Bar]], edges: bool) -> None:
    """One ``broken_barh`` per row and colour, then a red strip over each row's critical bars."""
    height = 0.7
    for row, bars in enumerate(per_row):
        by_key: dict[str, list[tuple[float, float]]] = {}
        for s, w, key in bars:
            by_key.setdefault(key, []).append((s, w))
        for key, spans in sorted(by_key.items()):
            ax.broken_barh(
                spans, (row - height / 2, height), facecolors=_bar_color(key), edgecolors="white",
                linewidth=0.3 if edges else 0,
            )  # fmt: skip
    for row, bars in enumerate(critical):
        if bars:
            ax.broken_barh([(s, w) for s, w, _ in bars], (row - 0.47, 0.1), facecolors=_CRITICAL_COLOR, linewidth=0)


def _gantt_legend(trace: Trace, keys: list[str]) -> list[Patch]:
    """Legend entries: frames (with several frames), else op categories, DMA and the critical path."""
    if trace.frames > 1:
        more = "+10k" if trace.frames > 10 else ""
        return [Patch(facecolor=_FRAME_COLORS[f], label=f"frame {f}{more}") for f in range(min(trace.frames, 10))]
    order = list(CATEGORY_COLORS)
    cats = sorted(keys, key=lambda c: (order.index(c) if c in order else len(order), c))
    handles = [Patch(facecolor=_bar_color(c), label=c) for c in cats]
    if trace.transfers:
        handles.append(Patch(facecolor=_DMA_COLOR, label="DMA transfer"))
    handles.append(Patch(facecolor=_CRITICAL_COLOR, label="critical path"))
    return handles


def _gantt_title(result: RunResult, trace: Trace, merged_bars: int | None) -> str:
    what = f"schedule, {len(trace.ops)} ops, {len(trace.transfers)} transfers"
    if trace.frames > 1:
        ii = f", II {result.stream.initiation_interval_ms:.3f} ms" if result.stream is not None else ""
        what += f"; {trace.frames} frames ({trace.frame_order}){ii}, coloured by frame"
    else:
        a = result.analysis
        what += f"; critical path {len(set(a.critical_path))} ops, {a.critical_path_ms:.3f} ms"
    if merged_bars is not None:
        what += f"\nDOWN-SAMPLED: bars closer than 1/{_GANTT_WIDTH_PX} of the run merged, {merged_bars} drawn"
    return _run_title(result, what)


def gantt_png(result: RunResult, path: Path | None = None, max_ops: int = GANTT_MAX_OPS) -> bytes:
    """Gantt chart: one row per core and per DMA channel, ops coloured by category (a unit of
    more than :data:`GANTT_ALL_CORES` cores: a row per core that runs an op, one for its idle ones).

    Critical-path ops and transfers are marked by a red strip along the top of their row.
    With several frames (``result.stream_trace``) the chart shows the whole stream, ops and
    transfers coloured by frame (colours cycle after 10), without the critical-path strip.
    Above ``max_ops`` ops, bars of a row closer than about a pixel are merged (coloured by
    the category or frame covering most of them), and the title says so.
    """
    trace = result.stream_trace if result.stream_trace is not None else result.trace
    rows, row_of, group_ends = _gantt_rows(result, trace)
    per_row, critical, keys = _gantt_bars(result, trace, row_of, len(rows))
    makespan_ms = trace.makespan_ps / PS_PER_MS
    right = makespan_ms if makespan_ms > 0 else 1.0
    downsample = len(trace.ops) > max_ops
    for bars in per_row + critical:
        bars.sort()
        if downsample:
            bars[:] = _merge(bars, right / _GANTT_WIDTH_PX)
    handles = _gantt_legend(trace, keys)
    height_in = max(1.6 + 0.28 * len(rows), 0.9 + 0.19 * len(handles))
    top_in = 0.55 if downsample else 0.35
    fig = Figure(figsize=(14, height_in))
    ax = fig.add_axes(_rect(fig, _label_width_in(rows, 8) + 0.2, 0.5, 1.75, top_in))
    _draw_bars(ax, per_row, critical, edges=not downsample)
    for end in group_ends:
        ax.axhline(end - 0.5, color="#bbbbbb", linewidth=0.6)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0.0, right)
    _axis_labels(ax, "time (ms)" if makespan_ms > 0 else "time (ms): zero-length run")
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)
    _title(ax, _gantt_title(result, trace, sum(map(len, per_row)) if downsample else None))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0 - 1.65 / 14, 1.0 - 0.1 / height_in),
               fontsize=8, frameon=False)  # fmt: skip
    return _png(fig, path)


def _human_bytes(n: float) -> str:
    """Decimal units, as bandwidths are quoted.

    >>> _human_bytes(0), _human_bytes(1500), _human_bytes(1868800)
    ('0', '1.5 KB', '1.87 MB')
    """
    if n == 0:
        return "0"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def traffic_png(result: RunResult, path: Path | None = None) -> bytes:
    """Source x destination domain matrix of DMA bytes (every domain, zero rows included)."""
    domains = [d.name for d in result.chip.domains]
    pos = {d: i for i, d in enumerate(domains)}
    nbytes = np.zeros((len(domains), len(domains)))
    count = np.zeros((len(domains), len(domains)), dtype=np.int64)
    for row in result.analysis.traffic:
        nbytes[pos[row.src_domain], pos[row.dst_domain]] += row.bytes
        count[pos[row.src_domain], pos[row.dst_domain]] += row.transfers
    side = 2.2 + 1.1 * len(domains)
    fig = Figure(figsize=(side + 1.8, side))
    left_in = _label_width_in(domains) + 0.6
    ax = fig.add_axes(_rect(fig, left_in, 0.75, 1.45, 0.6))
    vmax = float(nbytes.max()) if nbytes.max() > 0 else 1.0
    unit, scale = next(
        (u, k) for u, k in (("MB", 1e6), ("KB", 1e3), ("bytes", 1.0)) if vmax >= k or k == 1.0
    )
    image = ax.imshow(nbytes / scale, cmap="Blues", vmin=0.0, vmax=vmax / scale, aspect="auto")
    cmap = colormaps["Blues"]
    for i in range(len(domains)):
        for j in range(len(domains)):
            shade = to_rgba(cmap(nbytes[i, j] / vmax))
            light = 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2] < 0.5
            text = _human_bytes(nbytes[i, j])
            if count[i, j]:
                text += f"\n{count[i, j]} transfer{'s' if count[i, j] > 1 else ''}"
            ax.text(j, i, text, ha="center", va="center", fontsize=9, color="white" if light else "black")
    ax.set_xticks(range(len(domains)), domains)
    ax.set_yticks(range(len(domains)), domains)
    _axis_labels(ax, "destination domain", "source domain", ylabel_left_in=left_in - 0.4)
    total = _human_bytes(nbytes.sum()) if nbytes.sum() else "no bytes"
    _title(
        ax,
        f"{result.chip.name} / {result.graph.name}: DMA traffic\n"
        f"{total} in {int(count.sum())} transfers (latency {result.analysis.latency_ms:.3f} ms)",
    )
    cax = fig.add_axes(_rect(fig, side + 1.8 - 1.2, 0.75 + 0.1 * (side - 1.35), 1.0, 0.6 + 0.1 * (side - 1.35)))
    fig.colorbar(image, cax=cax, label=unit)
    return _png(fig, path)


def _steps(
    samples: Sequence[tuple[int, str, float]], memory: str, makespan_ps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Step function (time ps, GB/s) of one memory from 0 to the end of the run."""
    t, v = [0], [0.0]
    for time_ps, m, bpps in samples:
        if m != memory:
            continue
        if time_ps == t[-1]:
            v[-1] = bpps * GBPS_PER_BYTES_PER_PS
        else:
            t.append(time_ps)
            v.append(bpps * GBPS_PER_BYTES_PER_PS)
    if makespan_ps > t[-1]:
        t.append(makespan_ps)
        v.append(v[-1])
    return np.array(t, dtype=np.float64), np.array(v)


def _bandwidth_axes(ax: Axes, trace: Trace, memory: str) -> None:
    """Bandwidth in use by ``memory`` over the run (GB/s), its mean and its capacity."""
    t, v = _steps(trace.bandwidth_samples, memory, trace.makespan_ps)
    averaged = len(t) > _BANDWIDTH_MAX_STEPS
    if averaged:  # exact mean over equal bins: the integral of a step function is linear
        integral = np.concatenate(([0.0], np.cumsum(np.diff(t) * v[:-1])))
        edges = np.linspace(0.0, t[-1], _BANDWIDTH_BINS + 1)
        v = np.append(np.diff(np.interp(edges, t, integral)) / np.diff(edges), 0.0)
        t = edges
    cap = trace.memory_capacity_bytes_per_ps[memory] * GBPS_PER_BYTES_PER_PS
    mean = float(np.sum(np.diff(t) * v[:-1]) / trace.makespan_ps) if trace.makespan_ps else 0.0
    ax.fill_between(t / PS_PER_MS, v, step="post", alpha=0.35, color="#1f77b4", linewidth=0)
    ax.step(
        t / PS_PER_MS,
        v,
        where="post",
        color="#1f77b4",
        linewidth=0.8,
        label=f"in use{f' (mean over {_BANDWIDTH_BINS} bins)' if averaged else ''}: "
        f"mean {mean:.2f} GB/s, {100 * mean / cap:.0f}% of capacity",
    )
    ax.axhline(cap, color=_CRITICAL_COLOR, linestyle="--", linewidth=1.0, label=f"capacity {cap:g} GB/s")
    ax.set_ylim(0.0, cap * 1.3)
    _axis_labels(ax, ylabel=f"{memory} (GB/s)", ylabel_left_in=0.45)
    ax.legend(loc="upper right", fontsize=8, ncols=2, framealpha=0.9)
    ax.grid(color="#e5e5e5", linewidth=0.6)


def bandwidth_png(result: RunResult, path: Path | None = None) -> bytes:
    """Bandwidth in use over time per memory (step plot), with its capacity as a dashed line."""
    trace = result.trace
    memories = sorted(trace.memory_capacity_bytes_per_ps)
    fig = Figure(figsize=(12, 1.2 + 2.2 * len(memories)))
    left, bottom, width, height = _rect(fig, 0.8, 0.55, 0.2, 0.3)
    fig.subplots_adjust(left=left, bottom=bottom, right=left + width, top=bottom + height, hspace=0.15)
    axes: list[Axes] = list(np.atleast_1d(fig.subplots(max(1, len(memories)), 1, sharex=True, squeeze=False)[:, 0]))
    if not memories:
        axes[0].text(0.5, 0.5, "no memory bandwidth recorded", ha="center", va="center")
    for ax, m in zip(axes, memories):
        _bandwidth_axes(ax, trace, m)
    axes[-1].set_xlim(0.0, trace.makespan_ps / PS_PER_MS if trace.makespan_ps > 0 else 1.0)
    _axis_labels(axes[-1], "time (ms)" if trace.makespan_ps > 0 else "time (ms): zero-length run")
    _title(axes[0], _run_title(result, "memory bandwidth in use"))
    return _png(fig, path)


#: One colour per kind of memory held (:data:`hwsim.analysis.memory.KINDS`), stacked in that order.
_MEMORY_COLORS = {"activations": "#1f77b4", "weights": "#2ca02c", "staging": "#ff7f0e", "tiles": "#9467bd"}


#: Above this many time steps a memory plot draws one step per bin of its time axis (finer than a pixel).
_MAX_STEPS = 4000


def _pixel_envelope(times: np.ndarray, tops: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """At most :data:`_MAX_STEPS` steps: each stacked top's maximum over each of that many equal
    bins of ``times`` (sorted), at the bin's first time. Stacked tops stay stacked (the maximum of a
    larger series is larger) and no peak is lost; a plot of 100k ops draws in a second, not ten.
    """
    if len(times) <= _MAX_STEPS:
        return times, tops
    span = max(float(times[-1] - times[0]), 1.0)
    bins = np.minimum(((times - times[0]) * (_MAX_STEPS / span)).astype(np.int64), _MAX_STEPS - 1)
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    if starts[-1] != len(times) - 1:  # the run's last time (its end) kept as its own step
        starts = np.r_[starts, len(times) - 1]
    return times[starts], [np.maximum.reduceat(t, starts) for t in tops]


def _bytes_in_use(bufs: list[Buffer], times: np.ndarray) -> np.ndarray | None:
    """Bytes of ``bufs`` in use at each of ``times`` (ps) as :func:`hwsim.analysis.memory.use_steps` counts them (a
    buffer from its start until its end), in bulk; None when none of them is ever in use.

    >>> from hwsim.analysis.memory import Buffer
    >>> bufs = [Buffer("a", "activations", "d", 10, 0, 5), Buffer("b", "activations", "d", 4, 5, 9)]
    >>> _bytes_in_use(bufs, np.array([0.0, 4.0, 5.0, 9.0, 12.0])).tolist()
    [10.0, 10.0, 4.0, 0.0, 0.0]
    """
    rows = [(b.start_ps, b.end_ps, b.bytes) for b in bufs if b.end_ps > b.start_ps and b.bytes > 0]
    if not rows:
        return None
    start, end, nbytes = np.array(rows, dtype=np.int64).T

    def by(t: np.ndarray) -> np.ndarray:  # bytes of the buffers with t <= each time
        order = np.argsort(t, kind="stable")
        total = np.r_[0, np.cumsum(nbytes[order])]
        return total[np.searchsorted(t[order], times, side="right")]

    return (by(start) - by(end)).astype(np.float64)


def _memory_axes(ax: Axes, result: RunResult, use: MemoryUse, peak: Peak) -> None:
    """One place's bytes in use over the run, stacked by kind, with its capacity when in view."""
    dram = frozenset(d.name for d in result.chip.domains if d.kind == "dram")
    mine = [b for b in use.buffers if in_place(peak.place, b, dram)]
    times = np.array(sorted({0, result.trace.makespan_ps, *(t for t, _ in use.steps[peak.place])}), dtype=np.float64)
    layers: list[tuple[str, np.ndarray]] = []  # (kind, its top of the stack at each time)
    top_bytes = np.zeros(len(times))
    for kind in KINDS:
        in_use = _bytes_in_use([b for b in mine if b.kind == kind], times)
        if in_use is None:
            continue
        top_bytes = top_bytes + in_use
        layers.append((kind, top_bytes))
    xs, tops = _pixel_envelope(times, [t for _, t in layers])
    scale = BYTES_PER_MIB
    base = np.zeros(len(xs))
    for (kind, _), layer_top in zip(layers, tops):
        ax.fill_between(xs / PS_PER_MS, base / scale, layer_top / scale, step="post",
                        color=_MEMORY_COLORS[kind], alpha=0.6, linewidth=0, label=kind)  # fmt: skip
        base = layer_top
    top = max(peak.peak_bytes / scale, 1e-6)
    if peak.capacity_bytes is not None and peak.capacity_bytes <= 4 * peak.peak_bytes:
        ax.axhline(peak.capacity_bytes / scale, color=_CRITICAL_COLOR, linestyle="--", linewidth=1.0,
                   label=f"capacity {peak.capacity_bytes / scale:g} MiB")  # fmt: skip
        top = max(top, peak.capacity_bytes / scale)
    elif peak.capacity_bytes is not None:
        ax.plot([], [], " ", label=f"capacity {peak.capacity_bytes / scale:g} MiB (off scale)")
    ax.plot([], [], " ", label=f"peak {peak.peak_bytes / scale:.3g} MiB" + (f" at {peak.at_op}" if peak.at_op else ""))
    ax.set_ylim(0.0, top * 1.3)
    _axis_labels(ax, ylabel=f"{peak.place} (MiB)", ylabel_left_in=0.6)
    ax.legend(loc="upper right", fontsize=8, ncols=3, framealpha=0.9)
    ax.grid(color="#e5e5e5", linewidth=0.6)


def memory_png(result: RunResult, path: Path | None = None) -> bytes:
    """Memory in use over time per place (:mod:`hwsim.analysis.memory`), stacked by kind
    (activations, weights, DMA staging, tile buffers), with the capacity when the chip gives one."""
    use = result.memory
    peaks = [p for p in use.peaks if p.peak_bytes > 0] if use is not None else []
    fig = Figure(figsize=(12, 1.2 + 2.2 * max(1, len(peaks))))
    left, bottom, width, height = _rect(fig, 0.8, 0.55, 0.2, 0.3)
    fig.subplots_adjust(left=left, bottom=bottom, right=left + width, top=bottom + height, hspace=0.15)
    axes: list[Axes] = list(np.atleast_1d(fig.subplots(max(1, len(peaks)), 1, sharex=True, squeeze=False)[:, 0]))
    if use is None or not peaks:
        axes[0].text(0.5, 0.5, "no memory in use recorded", ha="center", va="center")
    else:
        for ax, peak in zip(axes, peaks):
            _memory_axes(ax, result, use, peak)
    makespan = result.trace.makespan_ps
    axes[-1].set_xlim(0.0, makespan / PS_PER_MS if makespan > 0 else 1.0)
    _axis_labels(axes[-1], "time (ms)" if makespan > 0 else "time (ms): zero-length run")
    spilled = f", {len(use.spills)} tensors spilled to DRAM" if use is not None and use.spills else ""
    _title(axes[0], _run_title(result, f"memory in use{spilled}"))
    return _png(fig, path)


def _grouped_bars(
    ax: Axes,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    ylabel: str,
) -> None:
    """Bars grouped by ``groups``, one bar per series in each group (``None``: no bar)."""
    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(groups), dtype=np.float64)
    cmap = colormaps["tab10"]
    for k, (label, values) in enumerate(series):
        xs = [x[i] + (k - (n - 1) / 2) * width for i, v in enumerate(values) if v is not None]
        hs = [float(v) for v in values if v is not None]
        bars = ax.bar(xs, hs, width * 0.95, color=cmap(k % 10), label=label)
        if len(groups) * n <= 24:
            ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=1)
    ax.set_xticks(x, groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.margins(y=0.15)


def compare_png(data: Mapping[str, Any], path: Path | None = None) -> bytes:
    """Grouped bars of runs side by side (the content of ``compare.json``).

    Four panels: time (latency and critical path, ms), energy (mJ), traffic (cross-domain
    and DRAM bytes, MB) and utilization per unit (%); one colour per run throughout.
    """
    runs = list(data["runs"])
    units: dict[str, None] = {}
    for r in runs:
        units.update(dict.fromkeys(r["utilization"]))
    fig = Figure(
        figsize=(max(10.0, 4 + 1.2 * len(units) + 0.6 * len(runs)), 7.5), layout="constrained"
    )
    axes = fig.subplots(2, 2, gridspec_kw={"width_ratios": [1, max(1.0, len(units) / 2)]})
    _grouped_bars(
        axes[0, 0],
        ["latency", "critical path"],
        [(r["label"], [r["latency_ms"], r["critical_path_ms"]]) for r in runs],
        "ms",
    )
    _grouped_bars(axes[0, 1], list(units), [(r["label"], [
        None if r["utilization"].get(u) is None else 100 * r["utilization"][u] for u in units
    ]) for r in runs], "utilization (%)")  # fmt: skip
    axes[0, 1].set_ylim(0, 110)
    _grouped_bars(axes[1, 0], ["energy"], [(r["label"], [r["energy_mj"]]) for r in runs], "mJ")
    _grouped_bars(
        axes[1, 1],
        ["cross-domain DMA", "DRAM"],
        [
            (
                r["label"],
                [
                    r["cross_domain_bytes"] / 1e6,
                    None if r["dram_bytes"] is None else r["dram_bytes"] / 1e6,
                ],
            )
            for r in runs
        ],
        "MB moved",
    )
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)
    models = sorted({str(r["model"]) for r in runs})
    fig.suptitle(
        f"{', '.join(models)}: {len(runs)} runs compared (fastest {data['fastest']})", fontsize=11
    )
    return _save(fig, path)


def sensitivity_png(data: Mapping[str, Any], path: Path | None = None) -> bytes:
    """Latency against each parameter's factor, and each parameter's elasticity.

    ``data`` is the content of ``sensitivity.json``. Left: latency (ms) over the factor
    (log-2 axis), one line per parameter, invalid points left out. Right: elasticities as
    horizontal bars, largest magnitude on top, the bottleneck in red.
    """
    params = list(data["parameters"])
    fig = Figure(figsize=(13, max(4.5, 1.5 + 0.32 * len(params))), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    cmap = colormaps["tab20"]
    for k, p in enumerate(params):
        pts = [(q["factor"], q["latency_ms"]) for q in p["points"] if q["latency_ms"] is not None]
        if pts:
            xs, ys = zip(*pts)
            left.plot(
                xs,
                ys,
                marker="o",
                markersize=3.5,
                linewidth=1.2,
                color=cmap(k % 20),
                label=p["name"],
            )
    left.set_xscale("log", base=2)
    factors = [float(f) for f in data["factors"]]
    left.set_xticks(factors, [f"{f:.3g}x" for f in factors])
    left.axvline(1.0, color="#999999", linewidth=0.8, linestyle=":")
    left.set_xlabel("parameter / its value in the chip file")
    left.set_ylabel("latency (ms)")
    left.grid(color="#e5e5e5", linewidth=0.6)
    left.legend(fontsize=7, loc="best", ncols=1 + len(params) // 12)
    ranked = sorted(
        (p for p in params if p["elasticity"] is not None),
        key=lambda p: abs(p["elasticity"]),
        reverse=True,
    )
    bottleneck = (data.get("bottleneck") or {}).get("parameter")
    names = [p["name"] for p in ranked]
    values = [p["elasticity"] for p in ranked]
    colors = [_CRITICAL_COLOR if n == bottleneck else "#1f77b4" for n in names]
    right.barh(range(len(names)), values, color=colors)
    right.set_yticks(range(len(names)), names, fontsize=8)
    right.set_ylim(len(names) - 0.5 if names else 0.5, -0.5)
    right.axvline(0.0, color="#555555", linewidth=0.8)
    right.set_xlabel("elasticity d log latency / d log parameter")
    right.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    if not names:
        right.text(
            0.5,
            0.5,
            "no elasticity could be computed",
            ha="center",
            va="center",
            transform=right.transAxes,
        )
    title = f"{data['model']} on {data['chip']}: latency {data['base_latency_ms']:.3f} ms as is"
    if bottleneck:
        title += f"; bottleneck {bottleneck}"
    fig.suptitle(title, fontsize=11)
    return _save(fig, path)
