"""Reports: summary.json, trace.json, PNG plots, critical_path.txt, traffic.csv and report.html,
written atomically into one folder, plus the short summary printed on the terminal."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from hwsim.pipeline import RunResult
from hwsim.report.outdir import ReportError, check_own_dir, write_dir
from scheduler.bounds import lower_bound_ns

__all__ = ["REPORT_FILES", "ReportError", "check_out_dir", "format_summary", "summary", "write_reports"]

REPORT_FILES = (
    "summary.json",
    "trace.json",
    "critical_path.txt",
    "traffic.csv",
    "heatmap.png",
    "gantt.png",
    "traffic.png",
    "bandwidth.png",
    "report.html",
)


def check_out_dir(out_dir: Path) -> None:
    """Refuse to replace anything but an empty folder or an earlier hwsim report folder.

    Raises
    ------
    ReportError
        When ``out_dir`` is a file, or a folder holding files hwsim did not write.
    """
    check_own_dir(Path(out_dir), REPORT_FILES)


def _r(x: float, nd: int = 6) -> float:
    return round(float(x), nd)


def summary(result: RunResult) -> dict[str, Any]:
    """The ``summary.json`` content (plain JSON types, deterministic)."""
    a = result.analysis
    g = result.graph
    placed: dict[str, int] = {}
    for p in result.schedule.placements.values():
        placed[p.unit] = placed.get(p.unit, 0) + 1
    fallbacks = sorted(
        {
            f"{c.dtype}<-{result.precision}:{u}"
            for row in result.table.costs.values()
            for u, c in row.items()
            if result.precision != "model" and c.dtype != result.precision
        }
    )
    return {
        "chip": result.chip.name,
        "chip_description": result.chip.description,
        "model": g.name,
        "precision": result.precision,
        "policy": result.schedule.policy,
        "latency_ms": _r(a.latency_ms),
        "energy_mj": _r(a.energy_mj),
        "dram_energy_mj": _r(a.dram_energy_mj),
        "dram_bytes": a.dram_bytes,
        "ops": len(g),
        "total_macs": g.total_macs,
        "units": {
            u.unit: {
                "kind": u.kind,
                "cores": u.cores,
                "ops": u.ops,
                "busy_ms": _r(u.busy_ms),
                "active_ms": _r(u.active_ms),
                "utilization": _r(u.utilization),
                "energy_mj": _r(u.energy_mj),
            }
            for u in a.units
        },
        "ops_per_unit": dict(sorted(placed.items())),
        "critical_path": list(a.critical_path),
        "critical_path_ms": _r(a.critical_path_ms),
        "contention": _contention_fields(result),
        "traffic": [
            {"src_domain": t.src_domain, "dst_domain": t.dst_domain, "bytes": t.bytes, "transfers": t.transfers}
            for t in a.traffic
        ],
        "cross_domain_bytes": sum(t.bytes for t in a.traffic),
        "unknown_ops": list(g.unknown_ops),
        "dtype_fallbacks": fallbacks,
        "fused_ops": [[f.producer, f.consumer] for f in result.fused],
        "scheduler_estimate_ms": _r(result.schedule.est_makespan_ns / 1e6),
        "lower_bound_ms": _r(lower_bound_ns(g, result.table, result.chip) / 1e6),
        **_stream_fields(result),
        **_choice_fields(result),
    }


def _contention_fields(result: RunResult) -> dict[str, Any]:
    """Time lost to bandwidth sharing and waits (``hwsim.analysis.contention``; sums, not wall time)."""
    c = result.analysis.contention
    return {
        "bandwidth_stretch_ms": _r(c.bandwidth_stretch_ms),
        "bandwidth_stretch_on_critical_path_ms": _r(c.bandwidth_stretch_on_critical_path_ms),
        "core_wait_ms": _r(c.core_wait_ms),
        "dma_wait_ms": _r(c.dma_wait_ms),
        "top_stretched_ops": [
            {"node": s.node, "unit": s.unit, "stretch_ms": _r(s.stretch_ms)} for s in c.top_stretched_ops
        ],
    }


def contention_line(result: RunResult) -> str:
    """The terminal's contention line: what sharing bandwidth and waiting cost, summed over ops."""
    c = result.analysis.contention
    return (
        f"  contention    DRAM/SRAM sharing stretched ops and transfers by {c.bandwidth_stretch_ms:.3f} ms "
        f"in all ({c.bandwidth_stretch_on_critical_path_ms:.3f} ms on the critical path); "
        f"waits: cores {c.core_wait_ms:.3f} ms, DMA {c.dma_wait_ms:.3f} ms"
    )


def _choice_fields(result: RunResult) -> dict[str, Any]:
    """How the schedule was chosen (see ``hwsim.policy_check``): engine check, energy mode, deadlines."""
    c = result.choice
    if c is None:
        return {}
    out: dict[str, Any] = {}
    if c.checked:
        out["policy_check"] = {k.name: _r(k.latency_ms) for k in c.candidates}
        out["policy_check_winner"] = c.winner
    if c.objective == "energy" and c.latency_optimal is not None and c.chosen is not None:
        out["objective"] = "energy"
        out["latency_budget_ms"] = c.latency_budget_ms
        out["energy_mode"] = {
            "chosen": {"schedule": c.chosen.name, "latency_ms": _r(c.chosen.latency_ms), "energy_mj": _r(c.chosen.energy_mj)},
            "latency_optimal": {
                "schedule": c.latency_optimal.name,
                "latency_ms": _r(c.latency_optimal.latency_ms),
                "energy_mj": _r(c.latency_optimal.energy_mj),
            },
            "tried": {k.name: {"latency_ms": _r(k.latency_ms), "energy_mj": _r(k.energy_mj)} for k in c.energy_candidates},
        }
    if c.deadlines:
        out["deadlines"] = [
            {"name": d.name, "node": d.node, "deadline_ms": d.deadline_ms, "finish_ms": _r(d.finish_ms),
             "slack_ms": _r(d.slack_ms), "met": d.met}
            for d in c.deadlines
        ]  # fmt: skip
        out["deadline_missed"] = bool(c.missed)
    return out


def _choice_lines(result: RunResult) -> list[str]:
    c = result.choice
    if c is None:
        return []
    lines = []
    if c.checked:
        cands = ", ".join(f"{k.name} {k.latency_ms:.3f}" for k in c.candidates)
        lines.append(f"  policy check  kept {c.winner} (simulated ms: {cands})")
    if c.objective == "energy" and c.latency_optimal is not None and c.chosen is not None:
        lo, ch = c.latency_optimal, c.chosen
        lines.append(
            f"  energy mode   {ch.energy_mj:.3f} mJ at {ch.latency_ms:.3f} ms (budget {c.latency_budget_ms:g} ms); "
            f"latency-optimal {lo.energy_mj:.3f} mJ at {lo.latency_ms:.3f} ms"
        )
    for d in c.deadlines:
        state = "met" if d.met else "MISSED"
        lines.append(
            f"  deadline      {d.name} <= {d.deadline_ms:g} ms: finishes {d.finish_ms:.3f} ms, "
            f"slack {d.slack_ms:.3f} ms ({state})"
        )
    return lines


def _stream_fields(result: RunResult) -> dict[str, Any]:
    """Frames streamed through the schedule (one unless ``--frames``), see ``hwsim.analysis.frames``."""
    s = result.stream
    if s is None:
        return {}
    return {
        "frames": s.frames,
        "in_flight": s.in_flight,
        "frame_order": s.frame_order,
        "throughput_fps": _r(s.throughput_fps, 3),
        "initiation_interval_ms": _r(s.initiation_interval_ms),
        "frame_latency_ms": [_r(x) for x in s.frame_latency_ms],
        "frame_latency_mean_ms": _r(sum(s.frame_latency_ms) / s.frames),
        "frame_latency_max_ms": _r(max(s.frame_latency_ms)),
        "bottleneck_unit": s.bottleneck_unit,
        "bottleneck_busy_ms_per_frame": _r(s.bottleneck_busy_ms),
        "energy_per_frame_mj": _r(s.energy_per_frame_mj),
        "split_ops": sum(1 for r in result.trace.ops if r.cores),
        "tiled_ops": sum(1 for r in result.trace.ops if r.tiles > 1),
    }


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB"


def format_summary(result: RunResult, out_dir: Path | None = None) -> str:
    """A short human summary for the terminal."""
    a = result.analysis
    g = result.graph
    lines = [
        f"hwsim: {g.name} on {result.chip.name} ({result.precision}, {result.schedule.policy})",
        (
            f"  latency       {a.latency_ms:.3f} ms    energy {a.energy_mj:.2f} mJ    "
            f"{len(g)} ops, {g.total_macs / 1e9:.2f} GMAC"
        ),
        "  unit            busy      util   ops",
    ]
    for u in a.units:
        lines.append(f"    {u.unit:<12}{u.busy_ms:8.3f} ms {u.utilization:6.1%} {u.ops:5d}")
    path = a.critical_path
    head = " -> ".join(path[:4]) + (f" -> ... ({len(path) - 4} more)" if len(path) > 4 else "")
    lines.append(f"  critical path {a.critical_path_ms:.3f} ms over {len(path)} ops: {head}")
    lines.append(contention_line(result))
    total = sum(t.bytes for t in a.traffic)
    n = sum(t.transfers for t in a.traffic)
    parts = ", ".join(f"{t.src_domain}->{t.dst_domain} {_mb(t.bytes)}" for t in a.traffic)
    lines.append(f"  cross-domain  {_mb(total)} in {n} transfers" + (f" ({parts})" if parts else ""))
    s = result.stream
    if s is not None and s.frames > 1:
        lines.append(
            f"  {s.frames} frames    {s.throughput_fps:.1f} frames/s, II {s.initiation_interval_ms:.3f} ms ({s.frame_order}), "
            f"latency {sum(s.frame_latency_ms) / s.frames:.3f} ms mean / {max(s.frame_latency_ms):.3f} max, "
            f"{s.energy_per_frame_mj:.2f} mJ/frame, bottleneck {s.bottleneck_unit}"
        )
    lines += _choice_lines(result)
    if g.unknown_ops:
        lines.append(f"  unknown ops   {', '.join(g.unknown_ops)} (costed as memory copies)")
    if out_dir is not None:
        lines.append(f"  reports       {out_dir}/")
    return "\n".join(lines)


def _critical_path_txt(result: RunResult) -> str:
    recs = {r.op: r for r in result.trace.ops}
    out = io.StringIO()
    a = result.analysis
    out.write(f"# critical path of {result.graph.name} on {result.chip.name}: {a.critical_path_ms:.6f} ms, ")
    out.write(f"{len(a.critical_path)} ops (latency {a.latency_ms:.6f} ms)\n")
    out.write("# start_ms\tduration_ms\tunit\top_type\tnode\n")
    for name in a.critical_path:
        r = recs[name]
        out.write(f"{r.start_ps / 1e9:.6f}\t{r.duration_ps / 1e9:.6f}\t{r.unit}.{r.core}\t{r.op_type}\t{name}\n")
    return out.getvalue()


def _traffic_csv(result: RunResult) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["src_domain", "dst_domain", "bytes", "transfers"])
    for t in result.analysis.traffic:
        w.writerow([t.src_domain, t.dst_domain, t.bytes, t.transfers])
    return out.getvalue()


def write_reports(result: RunResult, out_dir: Path, plots: bool = True) -> list[Path]:
    """Write every report file into ``out_dir``, atomically.

    Files are produced in a temporary folder beside ``out_dir`` and moved into place only
    when all are written; on any failure nothing of this run is left behind and an earlier
    ``out_dir`` stays as it was.
    """
    from hwsim.report.trace import chrome_trace


    def write(tmp: Path) -> None:
        (tmp / "summary.json").write_text(json.dumps(summary(result), indent=2) + "\n", encoding="utf-8")
        (tmp / "trace.json").write_text(json.dumps(chrome_trace(result), separators=(",", ":")), encoding="utf-8")
        (tmp / "critical_path.txt").write_text(_critical_path_txt(result), encoding="utf-8")
        (tmp / "traffic.csv").write_text(_traffic_csv(result), encoding="utf-8")
        if plots:
            from hwsim.report.plots import bandwidth_png, gantt_png, heatmap_png, traffic_png

            heatmap_png(result, tmp / "heatmap.png")
            gantt_png(result, tmp / "gantt.png")
            traffic_png(result, tmp / "traffic.png")
            bandwidth_png(result, tmp / "bandwidth.png")
        from hwsim.report.html import FIGURES, html_report

        images = {n: (tmp / n).read_bytes() for n in FIGURES if (tmp / n).exists()}
        (tmp / "report.html").write_text(html_report(result, summary(result), images), encoding="utf-8")

    return write_dir(Path(out_dir), REPORT_FILES, write)
