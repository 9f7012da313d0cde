"""The report files of ``hwsim run``: one registry, written atomically into one folder.

:data:`REPORTS` lists every file with its writer; the folder's file list
(:data:`REPORT_FILES`), the write loop of :func:`write_reports` and the figures ``report.html``
embeds (:data:`FIGURES`, with their captions and sections) all derive from it. To add a report
file, add one :class:`ReportFile` to :data:`REPORTS`.

>>> REPORT_FILES[0], REPORT_FILES[-1], FIGURES
('summary.json', 'report.html', ('heatmap.png', 'gantt.png', 'traffic.png', 'bandwidth.png', 'memory.png'))
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from chips.units import PS_PER_MS
from hwsim.pipeline import RunResult
from hwsim.report.html import Figure, html_report
from hwsim.report.outdir import ReportError, check_own_dir, write_dir
from hwsim.report.summary import Summary, build_summary

__all__ = [
    "FIGURES",
    "REPORTS",
    "REPORT_FILES",
    "ReportError",
    "ReportFile",
    "ReportInputs",
    "check_out_dir",
    "write_reports",
]


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """What a report file's writer reads: the run, its summary and the figures drawn before it (PNG bytes)."""

    result: RunResult
    summary: Summary
    figures: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class ReportFile:
    """One file of the report folder.

    Attributes
    ----------
    name : str
        The file name.
    write : callable
        ``write(inputs)``: the file's content, as bytes or as chunks of bytes written out in
        turn (a large ``trace.json`` streams to its file).
    figure : bool
        A PNG figure: left out by ``--no-plots`` and embedded in ``report.html``.
    caption : str
        The figure's caption in ``report.html``.
    section : str
        The ``report.html`` section that shows the figure (a key of
        :data:`hwsim.report.html.SECTIONS`; another key gets a section of its own at the end).
    """

    name: str
    write: Callable[[ReportInputs], bytes | Iterable[bytes]]
    figure: bool = False
    caption: str = ""
    section: str = ""


def _summary_json(run: ReportInputs) -> bytes:
    return (json.dumps(run.summary.to_json(), indent=2) + "\n").encode("utf-8")


def _trace_json(run: ReportInputs) -> Iterable[bytes]:
    from hwsim.report.trace import chrome_trace_json

    return chrome_trace_json(run.result)


def _critical_path_txt(run: ReportInputs) -> bytes:
    result = run.result
    recs = {r.op: r for r in result.trace.ops}
    out = io.StringIO()
    a = result.analysis
    out.write(f"# critical path of {result.graph.name} on {result.chip.name}: {a.critical_path_ms:.6f} ms, ")
    out.write(f"{len(a.critical_path)} ops (latency {a.latency_ms:.6f} ms)\n")
    out.write("# start_ms\tduration_ms\tunit\top_type\tnode\n")
    for name in a.critical_path:
        r = recs[name]
        out.write(
            f"{r.start_ps / PS_PER_MS:.6f}\t{r.duration_ps / PS_PER_MS:.6f}\t{r.unit}.{r.core}\t{r.op_type}\t{name}\n"
        )
    return out.getvalue().encode("utf-8")


def _traffic_csv(run: ReportInputs) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["src_domain", "dst_domain", "bytes", "transfers"])
    for t in run.result.analysis.traffic:
        w.writerow([t.src_domain, t.dst_domain, t.bytes, t.transfers])
    return out.getvalue().encode("utf-8")


def _schedule_json(run: ReportInputs) -> Iterable[bytes]:
    from hwsim.report.provenance import chip_sha256
    from hwsim.report.replay import original_run
    from hwsim.report.schedule_file import schedule_file, schedule_file_chunks

    prov = run.summary.provenance
    chip_sha = prov.chip_sha256 if prov is not None else chip_sha256(run.result.chip)
    origin = original_run(run.summary, *((prov.replayed_from, prov.replayed_sha256) if prov is not None else ()))
    model_sha = prov.model_sha256 if prov is not None else ""
    return schedule_file_chunks(schedule_file(run.result, chip_sha, model_sha, origin))


def _heatmap_png(run: ReportInputs) -> bytes:
    from hwsim.report.plots import heatmap_png

    return heatmap_png(run.result)


def _gantt_png(run: ReportInputs) -> bytes:
    from hwsim.report.plots import gantt_png

    return gantt_png(run.result)


def _traffic_png(run: ReportInputs) -> bytes:
    from hwsim.report.plots import traffic_png

    return traffic_png(run.result)


def _bandwidth_png(run: ReportInputs) -> bytes:
    from hwsim.report.plots import bandwidth_png

    return bandwidth_png(run.result)


def _memory_png(run: ReportInputs) -> bytes:
    from hwsim.report.plots import memory_png

    return memory_png(run.result)


def _report_html(run: ReportInputs) -> bytes:
    figures = [Figure(f.name, f.caption, f.section, run.figures.get(f.name)) for f in REPORTS if f.figure]
    return html_report(run.result, run.summary, figures).encode("utf-8")


#: Every report file, in the order they are written (``report.html`` last: it embeds the figures).
REPORTS: tuple[ReportFile, ...] = (
    ReportFile("summary.json", _summary_json),
    ReportFile("trace.json", _trace_json),
    ReportFile("critical_path.txt", _critical_path_txt),
    ReportFile("traffic.csv", _traffic_csv),
    ReportFile("schedule.json", _schedule_json),
    ReportFile(
        "heatmap.png", _heatmap_png, figure=True, section="units",
        caption="Per-unit utilization over time (busy cores / cores per time bin)",
    ),
    ReportFile(
        "gantt.png", _gantt_png, figure=True, section="critical_path",
        caption="Schedule: one row per core and DMA channel; the critical path is marked in red",
    ),
    ReportFile("traffic.png", _traffic_png, figure=True, section="traffic", caption="DMA traffic between memory domains"),
    ReportFile(
        "bandwidth.png", _bandwidth_png, figure=True, section="traffic",
        caption="Memory bandwidth in use against capacity",
    ),
    ReportFile(
        "memory.png", _memory_png, figure=True, section="memory",
        caption="Memory in use per domain over time, by kind (activations, weights, DMA staging, tile buffers)",
    ),
    ReportFile("report.html", _report_html),
)  # fmt: skip

#: The files of a report folder (a folder holding only these may be replaced).
REPORT_FILES: tuple[str, ...] = tuple(f.name for f in REPORTS)
#: The PNG figures, in page order.
FIGURES: tuple[str, ...] = tuple(f.name for f in REPORTS if f.figure)


def check_out_dir(out_dir: Path) -> None:
    """Refuse to replace anything but an empty folder or an earlier hwsim report folder.

    Raises
    ------
    ReportError
        When ``out_dir`` is a file, or a folder holding files hwsim did not write.
    """
    check_own_dir(Path(out_dir), REPORT_FILES)


def write_reports(
    result: RunResult, out_dir: Path, plots: bool = True, summary: Summary | None = None
) -> list[Path]:
    """Write every report file of :data:`REPORTS` into ``out_dir``, atomically.

    Files are produced in a temporary folder beside ``out_dir`` and moved into place only
    when all are written; on any failure nothing of this run is left behind and an earlier
    ``out_dir`` stays as it was.

    Parameters
    ----------
    result : RunResult
        A finished run.
    out_dir : Path
        The report folder (see :func:`check_out_dir`).
    plots : bool
        Draw the PNG figures (``--no-plots`` leaves them out).
    summary : Summary, optional
        The run's summary when the caller has built it already (:func:`build_summary`).

    Returns
    -------
    list of Path
        The files now in ``out_dir``, sorted.
    """
    summary = summary if summary is not None else build_summary(result)
    figures: dict[str, bytes] = {}

    def write(tmp: Path) -> None:
        for f in REPORTS:
            if f.figure and not plots:
                continue
            data = f.write(ReportInputs(result, summary, dict(figures)))
            if not isinstance(data, bytes):
                with open(tmp / f.name, "wb") as fh:
                    fh.writelines(data)
                continue
            (tmp / f.name).write_bytes(data)
            if f.figure:
                figures[f.name] = data

    return write_dir(Path(out_dir), REPORT_FILES, write)
