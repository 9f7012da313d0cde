"""``report.html``: one self-contained page per run, for people rather than tools.

Sections: summary, per-unit table and utilization heatmap, Gantt chart with the critical path
marked, the critical path itself, the domain x domain traffic matrix, memory bandwidth, the
top ops by time and by DRAM bytes, the scheduler's decisions (``Placement.reason``),
warnings (op types without a cost formula, dtype fallbacks) and a "more" table holding every
``summary.json`` key the other sections do not show, so fields added later still appear.

The page has no script and no external reference: figures are PNGs embedded as base64
``data:`` URLs and the style sheet is inline. Every string that comes from a model or a chip
file (node, op type, tensor, chip, unit and domain names, reasons) goes through
:func:`html.escape`. Tables stop at :data:`TOP_N` rows and say how many they left out, so
the page stays small for a 100k-op model (the PNGs are of fixed size).

>>> from hwsim.pipeline import run
>>> from hwsim.report.files import summary
>>> r = run("rk3588", "examples/models/resnet18.onnx")
>>> page = html_report(r, summary(r))
>>> page.startswith("<!DOCTYPE html>") and "resnet18" in page and "<script" not in page
True
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from hwsim.pipeline import RunResult

__all__ = ["FIGURES", "SHOWN_SUMMARY_KEYS", "TOP_N", "html_report"]

#: Rows shown in each op table before the rest are summarized in one line.
TOP_N = 50

#: The PNGs :func:`html_report` embeds when given, in page order, with their captions.
FIGURES: dict[str, str] = {
    "heatmap.png": "Per-unit utilization over time (busy cores / cores per time bin)",
    "gantt.png": "Schedule: one row per core and DMA channel; the critical path is marked in red",
    "traffic.png": "DMA traffic between memory domains",
    "bandwidth.png": "Memory bandwidth in use against capacity",
}

#: ``summary.json`` keys the fixed sections show; every other key goes to the "more" table.
SHOWN_SUMMARY_KEYS = frozenset(
    {
        "chip", "chip_description", "model", "precision", "policy", "latency_ms", "energy_mj",
        "dram_energy_mj", "dram_bytes", "ops", "total_macs", "units", "ops_per_unit",
        "critical_path", "critical_path_ms", "traffic", "cross_domain_bytes", "unknown_ops",
        "dtype_fallbacks", "scheduler_estimate_ms", "lower_bound_ms",
    }
)  # fmt: skip

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


def _summary_section(result: RunResult, s: Mapping[str, Any]) -> str:
    a = result.analysis
    c = a.contention
    contention = (
        f"DRAM/SRAM sharing stretched ops and transfers by {_ms(c.bandwidth_stretch_ms)} ms "
        f"({_ms(c.bandwidth_stretch_on_critical_path_ms)} ms on the critical path); "
        f"waits: cores {_ms(c.core_wait_ms)} ms, DMA {_ms(c.dma_wait_ms)} ms"
    )
    rows: list[tuple[str, str]] = [
        ("latency", f"{_ms(a.latency_ms)} ms"),
        ("energy", f"{a.energy_mj:.3f} mJ (DRAM {a.dram_energy_mj:.3f} mJ)"),
        ("ops", f"{len(result.graph)} ({result.graph.total_macs / 1e9:.3f} GMAC)"),
        ("critical path", f"{_ms(a.critical_path_ms)} ms over {len(a.critical_path)} ops"),
        ("contention (sums over ops)", contention),
        ("DRAM traffic", _bytes(a.dram_bytes)),
        (
            "cross-domain traffic",
            f"{_bytes(sum(t.bytes for t in a.traffic))} in {sum(t.transfers for t in a.traffic)} transfers",
        ),
    ]
    if "lower_bound_ms" in s:
        rows.append(("lower bound", f"{_ms(float(s['lower_bound_ms']))} ms"))
    if "scheduler_estimate_ms" in s:
        rows.append(("scheduler's estimate", f"{_ms(float(s['scheduler_estimate_ms']))} ms"))
    io_rows = [("input", t.name, "x".join(map(str, t.shape)), t.dtype) for t in result.graph.inputs]
    io_rows += [
        ("output", t.name, "x".join(map(str, t.shape)), t.dtype) for t in result.graph.outputs
    ]
    body = _table(["metric", "value"], rows)
    body += _table(["", "tensor", "shape", "dtype"], io_rows[:TOP_N]) + _capped(
        len(io_rows), TOP_N, "graph inputs and outputs"
    )
    return _section("Summary", body)


def _units_section(result: RunResult, images: Mapping[str, bytes]) -> str:
    rows = []
    for u in result.analysis.units:
        rows.append(
            (u.unit, u.kind, u.cores, u.ops, _ms(u.busy_ms), _ms(u.active_ms), f"{100 * u.utilization:.1f}%", f"{u.energy_mj:.3f}")
        )  # fmt: skip
    head = [
        "unit",
        "kind",
        "cores",
        "ops",
        "busy ms (core-time)",
        "active ms",
        "utilization",
        "energy mJ",
    ]
    table = _table(head, rows, [False, False, True, True, True, True, True, True])
    bars = "".join(
        f'<div><code>{_e(u.unit)}</code> <span class="bar" style="width:{300 * u.utilization:.1f}px"></span> '
        f"{100 * u.utilization:.1f}%</div>"
        for u in result.analysis.units
    )
    return _section("Units", table + bars + _figure(images, "heatmap.png"))


def _figure(images: Mapping[str, bytes], name: str) -> str:
    data = images.get(name)
    if data is None:
        return f'<p class="note">{_e(name)} was not drawn (run without <code>--no-plots</code> to see it).</p>'
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{name}: not a PNG image")
    b64 = base64.b64encode(data).decode("ascii")
    caption = FIGURES.get(name, name)
    return f'<figure><img alt="{_e(caption)}" src="data:image/png;base64,{b64}"><figcaption class="note">{_e(caption)}</figcaption></figure>'


def _critical_path_section(result: RunResult, images: Mapping[str, bytes]) -> str:
    recs = {r.op: r for r in result.trace.ops}
    path = result.analysis.critical_path
    rows = []
    for name in path[:TOP_N]:
        r = recs[name]
        rows.append(
            (
                f"{r.start_ps / 1e9:.3f}",
                f"{r.duration_ps / 1e9:.3f}",
                f"{r.unit}.{r.core}",
                r.op_type,
                name,
            )
        )
    body = _figure(images, "gantt.png")
    body += f"<p>{_ms(result.analysis.critical_path_ms)} ms over {len(path)} ops, in order:</p>"
    body += _table(["start ms", "duration ms", "unit.core", "op type", "node"], rows, [True, True])
    body += _capped(len(path), TOP_N, "critical-path ops (critical_path.txt has them all)")
    return _section("Schedule and critical path", body)


def _traffic_section(result: RunResult, images: Mapping[str, bytes]) -> str:
    domains = [d.name for d in result.chip.domains]
    cell = {(t.src_domain, t.dst_domain): t for t in result.analysis.traffic}
    rows = []
    for src in domains:
        row: list[object] = [src]
        for dst in domains:
            t = cell.get((src, dst))
            row.append(f"{_bytes(t.bytes)} / {t.transfers}" if t else "")
        rows.append(row)
    head = ["from \\ to", *domains]
    body = '<p class="note">Bytes / transfers moved by DMA from a source domain (row) to a destination domain (column).</p>'
    body += _table(head, rows, [False] + [True] * len(domains))
    xfers = sorted(result.trace.transfers, key=lambda x: (-x.bytes, x.start_ps, x.tensor))
    xrows = [
        (x.tensor, x.src_domain, x.dst_domain, f"{x.bytes:,}", f"{x.start_ps / 1e9:.3f}",
         f"{(x.end_ps - x.start_ps) / 1e9:.4f}", f"{(x.start_ps - x.queued_ps) / 1e9:.4f}")
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
    body += _figure(images, "traffic.png") + _figure(images, "bandwidth.png")
    return _section("Traffic between memory domains", body)


def _top_ops_section(result: RunResult) -> str:
    category = {n: result.graph.op(n).category for n in result.graph.order}
    recs = list(result.trace.ops)
    head = [
        "#",
        "node",
        "op type",
        "category",
        "unit.core",
        "start ms",
        "duration ms",
        "DRAM bytes",
    ]
    num = [True, False, False, False, False, True, True, True]

    def rows(ranked: list[Any]) -> list[tuple[object, ...]]:
        return [
            (i + 1, r.op, r.op_type, category.get(r.op, ""), f"{r.unit}.{r.core}", f"{r.start_ps / 1e9:.3f}",
             f"{r.duration_ps / 1e9:.4f}", f"{r.dram_bytes:,}")
            for i, r in enumerate(ranked[:TOP_N])
        ]  # fmt: skip

    by_time = sorted(recs, key=lambda r: (-r.duration_ps, r.op))
    by_bytes = sorted(recs, key=lambda r: (-r.dram_bytes, r.op))
    body = "<h3>By time</h3>" + _table(head, rows(by_time), num) + _capped(len(recs), TOP_N, "ops")
    body += (
        "<h3>By DRAM bytes</h3>"
        + _table(head, rows(by_bytes), num)
        + _capped(len(recs), TOP_N, "ops")
    )
    return _section("Top ops", body)


def _decisions_section(result: RunResult) -> str:
    placements = result.schedule.placements
    kinds = Counter(
        (p.unit, p.reason.partition(":")[0].strip() or "(none)") for p in placements.values()
    )
    summary_rows = [
        (unit, kind, n) for (unit, kind), n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    body = f"<p>Policy <code>{_e(result.schedule.policy)}</code>; decisions by unit and kind of reason:</p>"
    body += _table(["unit", "reason", "ops"], summary_rows[:TOP_N], [False, False, True])
    body += _capped(len(summary_rows), TOP_N, "kinds of decision")
    rows = []
    for n in result.graph.order[:TOP_N]:
        p = placements[n]
        rows.append((n, result.graph.op(n).op_type, f"{p.unit}.{p.core}", p.reason))
    body += "<h3>Per op, in graph order</h3>"
    body += _table(["node", "op type", "unit.core", "reason"], rows)
    body += _capped(len(result.graph.order), TOP_N, "ops (trace.json holds every reason)")
    return _section("Scheduler decisions", body)


def _warnings_section(s: Mapping[str, Any]) -> str:
    items = []
    unknown = list(s.get("unknown_ops", []))
    fallbacks = list(s.get("dtype_fallbacks", []))
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
    if not items:
        return _section(
            "Warnings",
            "<p>None: every op had a cost formula and ran in the requested precision.</p>",
        )
    return _section(
        "Warnings", "<ul>" + "".join(f'<li class="warn">{i}</li>' for i in items) + "</ul>"
    )


def _more_section(s: Mapping[str, Any]) -> str:
    extra = sorted(k for k in s if k not in SHOWN_SUMMARY_KEYS)
    if not extra:
        return ""
    rows = []
    for k in extra:
        text = json.dumps(s[k], sort_keys=True, default=str)
        if len(text) > 2000:
            text = text[:2000] + f" ... ({len(text)} characters, see summary.json)"
        rows.append((k, text))
    return _section("More (other summary.json fields)", _table(["field", "value"], rows))


def html_report(
    result: RunResult,
    summary: Mapping[str, Any],
    images: Mapping[str, bytes] | None = None,
) -> str:
    """The run as one self-contained HTML page.

    Parameters
    ----------
    result : RunResult
        A finished simulation.
    summary : mapping
        Its ``summary.json`` content (:func:`hwsim.report.files.summary`); keys the page does not
        show elsewhere go to the "more" table.
    images : mapping of str to bytes, optional
        PNG files by name (the keys of :data:`FIGURES`) to embed; a missing one gets a note.

    Returns
    -------
    str
        The page (UTF-8 text, no script, no external reference).

    Raises
    ------
    ValueError
        When an image is not a PNG.
    """
    images = images or {}
    title = f"hwsim: {result.graph.name} on {result.chip.name}"
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
    )
    intro = (
        f"<h1>{_e(title)}</h1>\n<p>{_e(result.chip.description)}<br>precision "
        f"<code>{_e(result.precision)}</code>, policy <code>{_e(result.schedule.policy)}</code></p>\n"
    )
    parts = [
        head,
        intro,
        _summary_section(result, summary),
        _warnings_section(summary),
        _units_section(result, images),
        _critical_path_section(result, images),
        _traffic_section(result, images),
        _top_ops_section(result),
        _decisions_section(result),
        _more_section(summary),
    ]
    extra = [n for n in images if n not in FIGURES]
    for name in sorted(extra):
        parts.append(_section(name, _figure(images, name)))
    parts.append("</body></html>\n")
    return "".join(parts)
