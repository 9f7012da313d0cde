"""``report.html``: one self-contained page per run, for people rather than tools.

Sections (:data:`SECTIONS`): summary, warnings (op types without a cost formula, dtype
fallbacks), per-unit table, schedule and critical path, the domain x domain traffic matrix,
power (average and peak per unit, a power cap's cost, the temperature), peak memory per domain
and the spills, the top ops by time and by DRAM bytes, the scheduler's decisions
(``Placement.reason``), the fusion decisions (:class:`cost_models.fusion.FusionDecision`) and a
"more" table holding every ``summary.json`` key no section shows (each section names the keys it
shows), so fields added later still appear. Figures come in as :class:`Figure` objects, each
naming the section that shows it (the report registry, :data:`hwsim.report.files.REPORTS`).

The page has no script and no external reference: figures are PNGs embedded as base64
``data:`` URLs and the style sheet is inline. Every string that comes from a model or a chip
file (node, op type, tensor, chip, unit and domain names, reasons) goes through
:func:`html.escape`. Tables stop at :data:`TOP_N` rows and say how many they left out, so
the page stays small for a 100k-op model (the PNGs are of fixed size).

>>> from hwsim.pipeline import run
>>> from hwsim.report.summary import build_summary
>>> r = run("rk3588", "examples/models/resnet18.onnx")
>>> page = html_report(r, build_summary(r))
>>> page.startswith("<!DOCTYPE html>") and "resnet18" in page and "<script" not in page
True
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from chips.units import PS_PER_MS
from hwsim.pipeline import RunResult
from hwsim.report.summary import Summary
from hwsim.report.terminal import contention_words, power_words

__all__ = ["SECTIONS", "SHOWN_SUMMARY_KEYS", "TOP_N", "Figure", "Section", "html_report"]

#: Rows shown in each op table before the rest are summarized in one line.
TOP_N = 50

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums} th{background:#f5f5f5}
.bar{display:inline-block;height:.8em;background:#1f77b4;vertical-align:middle}
.note{color:#666;font-size:.92em} .warn{color:#a15c00} img{max-width:100%;border:1px solid #eee}
code{font-size:.92em;word-break:break-all}
"""


def _e(value: object) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return escape(str(value), quote=True)


def _ms(x: float) -> str:
    return f"{x:.3f}"


def _bytes(n: float) -> str:
    """Decimal units, as bandwidths are quoted.

    >>> _bytes(0), _bytes(999), _bytes(1500), _bytes(2_345_678)
    ('0 B', '999 B', '1.50 KB', '2.35 MB')
    """
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def _table(
    head: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[bool] = ()
) -> str:
    """An HTML table; every cell is escaped. ``numeric[i]`` right-aligns column i."""
    num = list(numeric) + [False] * (len(head) - len(numeric))
    out = ["<table><tr>"]
    out += [f"<th{' class=n' if n else ''}>{_e(h)}</th>" for h, n in zip(head, num)]
    out.append("</tr>")
    for row in rows:
        out.append(
            "<tr>"
            + "".join(f"<td{' class=n' if n else ''}>{_e(c)}</td>" for c, n in zip(row, num))
            + "</tr>"
        )
    out.append("</table>")
    return "".join(out)


def _capped(total: int, shown: int, what: str) -> str:
    if total <= shown:
        return ""
    return f'<p class="note">Showing the first {shown} of {total} {_e(what)}; the full list is in the files beside this page.</p>'


def _section(title: str, body: str) -> str:
    return f"<h2>{_e(title)}</h2>\n{body}\n"


@dataclass(frozen=True, slots=True)
class Figure:
    """A PNG figure for the page: its file name, caption, the section that shows it, and its bytes.

    ``png`` is None when the figure was not drawn (``--no-plots``); the page says so in its place.
    """

    name: str
    caption: str
    section: str
    png: bytes | None


@dataclass(frozen=True, slots=True)
class _Page:
    """What every section reads."""

    result: RunResult
    summary: Summary
    figures: tuple[Figure, ...]

    def figures_of(self, section: str) -> str:
        """The figures of ``section``, in the order given, as HTML."""
        return "".join(_figure(f) for f in self.figures if f.section == section)


def _figure(f: Figure) -> str:
    if f.png is None:
        return f'<p class="note">{_e(f.name)} was not drawn (run without <code>--no-plots</code> to see it).</p>'
    if f.png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{f.name}: not a PNG image")
    b64 = base64.b64encode(f.png).decode("ascii")
    caption = f.caption or f.name
    return (
        f'<figure><img alt="{_e(caption)}" src="data:image/png;base64,{b64}">'
        f'<figcaption class="note">{_e(caption)}</figcaption></figure>'
    )


def _intro(page: _Page) -> str:
    s = page.summary
    title = f"hwsim: {s.model} on {s.chip}"
    asked = f" (asked for <code>{_e(s.requested_policy)}</code>)" if s.requested_policy != s.policy else ""
    return (
        f"<h1>{_e(title)}</h1>\n<p>{_e(s.chip_description)}<br>precision "
        f"<code>{_e(s.precision)}</code>, policy <code>{_e(s.policy)}</code>{asked}</p>\n"
    )


def _summary_section(page: _Page) -> str:
    s, graph = page.summary, page.result.graph
    rows: list[tuple[str, str]] = [
        ("latency", f"{_ms(s.latency_ms)} ms"),
        ("energy", f"{s.energy_mj:.3f} mJ (DRAM {s.dram_energy_mj:.3f} mJ)"),
        ("ops", f"{s.ops} ({s.total_macs / 1e9:.3f} GMAC)"),
        ("critical path", f"{_ms(s.critical_path_ms)} ms over {len(s.critical_path)} ops"),
        ("contention (sums over ops)", contention_words(s)),
        ("DRAM traffic", _bytes(s.dram_bytes)),
        ("cross-domain traffic", f"{_bytes(s.cross_domain_bytes)} in {s.cross_domain_transfers} transfers"),
        ("lower bound", f"{_ms(s.lower_bound_ms)} ms"),
        ("scheduler's estimate", f"{_ms(s.scheduler_estimate_ms)} ms"),
    ]
    io_rows = [("input", t.name, "x".join(map(str, t.shape)), t.dtype) for t in graph.inputs]
    io_rows += [("output", t.name, "x".join(map(str, t.shape)), t.dtype) for t in graph.outputs]
    body = _table(["metric", "value"], rows)
    body += _table(["", "tensor", "shape", "dtype"], io_rows[:TOP_N])
    body += _capped(len(io_rows), TOP_N, "graph inputs and outputs")
    return body


def _warnings_section(page: _Page) -> str:
    items = []
    unknown, fallbacks = page.summary.unknown_ops, page.summary.dtype_fallbacks
    if unknown:
        items.append(
            f"{len(unknown)} op type(s) without a cost formula, costed as memory copies: "
            + ", ".join(f"<code>{_e(u)}</code>" for u in unknown[:TOP_N])
            + (f" and {len(unknown) - TOP_N} more" if len(unknown) > TOP_N else "")
        )
    if fallbacks:
        items.append(
            f"{len(fallbacks)} dtype fallback(s) (deployed dtype &lt;- requested : unit): "
            + ", ".join(f"<code>{_e(f)}</code>" for f in fallbacks[:TOP_N])
            + (f" and {len(fallbacks) - TOP_N} more" if len(fallbacks) > TOP_N else "")
        )
    defaulted = page.summary.defaulted_fields
    if defaulted:
        items.append(
            f"{len(defaulted)} chip field(s) not set in the chip file, defaults used (they shape time, power "
            "or energy): " + ", ".join(f"<code>{_e(f)}</code>" for f in defaulted[:TOP_N])
            + (f" and {len(defaulted) - TOP_N} more" if len(defaulted) > TOP_N else "")
        )
    if not items:
        return ("<p>None: every op had a cost formula and ran in the requested precision, and the chip "
                "file set every field that shapes the numbers.</p>")  # fmt: skip
    return "<ul>" + "".join(f'<li class="warn">{i}</li>' for i in items) + "</ul>"


def _units_section(page: _Page) -> str:
    units = page.summary.units
    rows = [
        (u.unit, u.kind, u.cores, u.ops, _ms(u.busy_ms), _ms(u.active_ms), f"{100 * u.utilization:.1f}%", f"{u.energy_mj:.3f}")
        for u in units
    ]  # fmt: skip
    head = ["unit", "kind", "cores", "ops", "busy ms (core-time)", "active ms", "utilization", "energy mJ"]
    table = _table(head, rows, [False, False, True, True, True, True, True, True])
    bars = "".join(
        f'<div><code>{_e(u.unit)}</code> <span class="bar" style="width:{300 * u.utilization:.1f}px"></span> '
        f"{100 * u.utilization:.1f}%</div>"
        for u in units
    )
    return table + bars + page.figures_of("units")


def _critical_path_section(page: _Page) -> str:
    recs = {r.op: r for r in page.result.trace.ops}
    path = page.summary.critical_path
    rows = []
    for name in path[:TOP_N]:
        r = recs[name]
        rows.append(
            (f"{r.start_ps / PS_PER_MS:.3f}", f"{r.duration_ps / PS_PER_MS:.3f}", f"{r.unit}.{r.core}", r.op_type, name)
        )
    body = page.figures_of("critical_path")
    body += f"<p>{_ms(page.summary.critical_path_ms)} ms over {len(path)} ops, in order:</p>"
    body += _table(["start ms", "duration ms", "unit.core", "op type", "node"], rows, [True, True])
    body += _capped(len(path), TOP_N, "critical-path ops (critical_path.txt has them all)")
    return body


def _traffic_section(page: _Page) -> str:
    result = page.result
    domains = [d.name for d in result.chip.domains]
    cell = {(t.src_domain, t.dst_domain): t for t in page.summary.traffic}
    rows = []
    for src in domains:
        row: list[object] = [src]
        for dst in domains:
            t = cell.get((src, dst))
            row.append(f"{_bytes(t.bytes)} / {t.transfers}" if t else "")
        rows.append(row)
    body = '<p class="note">Bytes / transfers moved by DMA from a source domain (row) to a destination domain (column).</p>'
    body += _table(["from \\ to", *domains], rows, [False] + [True] * len(domains))
    xfers = sorted(result.trace.transfers, key=lambda x: (-x.bytes, x.start_ps, x.tensor))
    xrows = [
        (x.tensor, x.src_domain, x.dst_domain, f"{x.bytes:,}", f"{x.start_ps / PS_PER_MS:.3f}",
         f"{(x.end_ps - x.start_ps) / PS_PER_MS:.4f}", f"{(x.start_ps - x.queued_ps) / PS_PER_MS:.4f}")
        for x in xfers[:TOP_N]
    ]  # fmt: skip
    if xrows:
        body += "<h3>Largest transfers</h3>"
        body += _table(
            ["tensor", "from", "to", "bytes", "start ms", "duration ms", "queued ms"],
            xrows,
            [False, False, False, True, True, True, True],
        )
        body += _capped(len(xfers), TOP_N, "transfers (trace.json has them all)")
    else:
        body += "<p>No DMA transfers: every tensor stayed in its domain.</p>"
    return body + page.figures_of("traffic")


def _memory_section(page: _Page) -> str:
    s = page.summary
    if not s.peak_memory:
        return page.figures_of("memory")
    body = (
        '<p class="note">Peak bytes held per memory place: activations from their producer\'s start to '
        "their last reader's end (DMA copies from the transfer's start), resident weights, buffers "
        "held only for a DMA (staging), and the tiles of tiled or split ops in their unit's on-chip "
        "buffer. DRAM is the physical DRAM: every dram domain plus what was spilled.</p>"
    )
    rows = []
    for p in s.peak_memory:
        cap = "" if p.capacity_bytes is None else _bytes(p.capacity_bytes)
        share = "" if not p.capacity_bytes else f"{100 * p.peak_bytes / p.capacity_bytes:.1f}%"
        rows.append((
            p.place, p.kind, _bytes(p.peak_bytes), cap, share, f"{p.at_ps / PS_PER_MS:.3f}", p.at_op,
            _bytes(p.activations_bytes), _bytes(p.weights_bytes), _bytes(p.staging_bytes), _bytes(p.tiles_bytes),
        ))  # fmt: skip
    head = ["place", "kind", "peak", "capacity", "of capacity", "at ms", "at op", "activations", "weights", "staging", "tiles"]
    body += _table(head, rows, [False, False, True, True, True, True, False, True, True, True, True])
    over = s.overcommitted
    if over is not None:
        body += f'<p class="warn">Overcommitted (--allow-overcommit): {_e(over.overflow_words())}.</p>'
    if s.spills:
        spill_rows = [(x.tensor, x.domain, f"{x.bytes:,}") for x in s.spills[:TOP_N]]
        body += "<h3>Spilled to DRAM</h3>" + _table(["tensor", "domain", "bytes"], spill_rows, [False, False, True])
        body += _capped(len(s.spills), TOP_N, "spills (summary.json has them all)")
    else:
        body += "<p>No spills: every SRAM domain held its tensors.</p>"
    return body + page.figures_of("memory")


def _top_ops_section(page: _Page) -> str:
    graph = page.result.graph
    category = {n: graph.op(n).category for n in graph.order}
    recs = list(page.result.trace.ops)
    head = ["#", "node", "op type", "category", "unit.core", "start ms", "duration ms", "DRAM bytes"]
    num = [True, False, False, False, False, True, True, True]

    def rows(ranked: list[Any]) -> list[tuple[object, ...]]:
        return [
            (i + 1, r.op, r.op_type, category.get(r.op, ""), f"{r.unit}.{r.core}", f"{r.start_ps / PS_PER_MS:.3f}",
             f"{r.duration_ps / PS_PER_MS:.4f}", f"{r.dram_bytes:,}")
            for i, r in enumerate(ranked[:TOP_N])
        ]  # fmt: skip

    by_time = sorted(recs, key=lambda r: (-r.duration_ps, r.op))
    by_bytes = sorted(recs, key=lambda r: (-r.dram_bytes, r.op))
    body = "<h3>By time</h3>" + _table(head, rows(by_time), num) + _capped(len(recs), TOP_N, "ops")
    body += "<h3>By DRAM bytes</h3>" + _table(head, rows(by_bytes), num) + _capped(len(recs), TOP_N, "ops")
    return body


def _decisions_section(page: _Page) -> str:
    graph, placements = page.result.graph, page.result.schedule.placements
    kinds = Counter((p.unit, p.reason.partition(":")[0].strip() or "(none)") for p in placements.values())
    summary_rows = [(unit, kind, n) for (unit, kind), n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
    body = f"<p>Policy <code>{_e(page.summary.policy)}</code>; decisions by unit and kind of reason:</p>"
    body += _table(["unit", "reason", "ops"], summary_rows[:TOP_N], [False, False, True])
    body += _capped(len(summary_rows), TOP_N, "kinds of decision")
    rows = []
    for n in graph.order[:TOP_N]:
        p = placements[n]
        rows.append((n, graph.op(n).op_type, f"{p.unit}.{p.core}", p.reason))
    body += "<h3>Per op, in graph order</h3>"
    body += _table(["node", "op type", "unit.core", "reason"], rows)
    body += _capped(len(graph.order), TOP_N, "ops (trace.json holds every reason)")
    return body


def _fusion_section(page: _Page) -> str:
    """Each legal fusion group: fused or not, the predicted gain and why (first :data:`TOP_N`)."""
    f = page.result.fusion
    if f is None or not f.decisions:
        return ""
    body = (
        f"<p>Mode <code>{_e(f.mode)}</code>: {len(f.decisions)} legal group(s) considered, {f.kept} fused, "
        f"{f.rolled_back} left unfused. Gain: the members' summed latency unfused minus fused (spills included).</p>"
    )
    rows = [
        (" + ".join(d.members), d.unit, "fused" if d.kept else "not fused", f"{d.gain_ns / 1e3:.3f}",
         d.saved_dram_bytes, d.reason)
        for d in f.decisions[:TOP_N]
    ]  # fmt: skip
    body += _table(["group", "unit", "decision", "gain (us)", "DRAM bytes saved", "reason"], rows,
                   [False, False, False, True, True, False])  # fmt: skip
    return body + _capped(len(f.decisions), TOP_N, "fusion groups")


def _power_section(page: _Page) -> str:
    p = page.summary.power
    if p is None:
        return ""
    rows: list[tuple[object, ...]] = [("chip", f"{p.chip.average_w:.3f}", f"{p.chip.peak_w:.3f}", _ms(p.chip.peak_at_ms))]
    rows += [(u, f"{x.average_w:.3f}", f"{x.peak_w:.3f}", _ms(x.peak_at_ms)) for u, x in p.units]
    rows.append(("DRAM", f"{p.dram.average_w:.3f}", f"{p.dram.peak_w:.3f}", _ms(p.dram.peak_at_ms)))
    words = "".join(f"<p>{_e(w)}</p>" for w in power_words(page.summary))
    return words + _table(["", "average W", "peak W", "peak at ms"], rows)


def _more_section(page: _Page) -> str:
    s = page.summary.to_json()
    extra = sorted(k for k in s if k not in SHOWN_SUMMARY_KEYS)
    if not extra:
        return ""
    rows = []
    for k in extra:
        text = json.dumps(s[k], sort_keys=True, default=str)
        if len(text) > 2000:
            text = text[:2000] + f" ... ({len(text)} characters, see summary.json)"
        rows.append((k, text))
    return _table(["field", "value"], rows)


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the page.

    ``key`` names it for figures, ``title`` is its heading (none: the page's header),
    ``render`` gives its body ("" leaves the section out), ``shows`` lists the ``summary.json``
    keys it shows.
    """

    key: str
    title: str
    render: Callable[[_Page], str]
    shows: frozenset[str] = frozenset()

    def html(self, page: _Page) -> str:
        body = self.render(page)
        return _section(self.title, body) if body and self.title else body


#: The page's parts in order. A ``summary.json`` key no section shows goes to the "more" table.
SECTIONS: tuple[Section, ...] = (
    Section("intro", "", _intro, frozenset({"chip", "chip_description", "model", "precision", "policy", "requested_policy"})),
    Section(
        "summary", "Summary", _summary_section,
        frozenset({"latency_ms", "energy_mj", "dram_energy_mj", "dram_bytes", "ops", "total_macs",
                   "critical_path_ms", "cross_domain_bytes", "scheduler_estimate_ms", "lower_bound_ms"}),
    ),
    Section("warnings", "Warnings", _warnings_section, frozenset({"unknown_ops", "dtype_fallbacks", "defaulted_fields"})),
    Section("units", "Units", _units_section, frozenset({"units", "ops_per_unit"})),
    Section("critical_path", "Schedule and critical path", _critical_path_section, frozenset({"critical_path"})),
    Section("traffic", "Traffic between memory domains", _traffic_section, frozenset({"traffic"})),
    Section("power", "Power", _power_section, frozenset({"power"})),
    Section("memory", "Memory over time", _memory_section, frozenset({"peak_memory", "spills"})),
    Section("top_ops", "Top ops", _top_ops_section),
    Section("decisions", "Scheduler decisions", _decisions_section),
    Section("fusion", "Fusion decisions", _fusion_section, frozenset({"fusion"})),
    Section("more", "More (other summary.json fields)", _more_section),
)  # fmt: skip

#: ``summary.json`` keys the sections show; every other key goes to the "more" table.
SHOWN_SUMMARY_KEYS: frozenset[str] = frozenset().union(*(s.shows for s in SECTIONS))


def html_report(result: RunResult, summary: Summary, figures: Sequence[Figure] = ()) -> str:
    """The run as one self-contained HTML page.

    Parameters
    ----------
    result : RunResult
        A finished simulation.
    summary : Summary
        Its summary (:func:`hwsim.report.summary.build_summary`); keys of its ``to_json()`` no
        section shows go to the "more" table.
    figures : sequence of Figure, optional
        PNG figures to embed, each in the section it names (one of :data:`SECTIONS`; another
        name gets a section of its own at the end). One not drawn gets a note.

    Returns
    -------
    str
        The page (UTF-8 text, no script, no external reference).

    Raises
    ------
    ValueError
        When a figure is not a PNG.
    """
    page = _Page(result, summary, tuple(figures))
    title = f"hwsim: {summary.model} on {summary.chip}"
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
    )
    parts = [head]
    parts += [s.html(page) for s in SECTIONS]
    known = {s.key for s in SECTIONS}
    for f in page.figures:
        if f.section not in known:
            parts.append(_section(f.name, _figure(f)))
    parts.append("</body></html>\n")
    return "".join(parts)
