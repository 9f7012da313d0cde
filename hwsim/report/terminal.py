"""The short summary ``hwsim run`` prints on the terminal: a view of the run's :class:`Summary`."""

from __future__ import annotations

from pathlib import Path

from hwsim.report.summary import Summary

__all__ = ["contention_words", "format_summary", "power_words", "unit_lines"]


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB"


def unit_lines(s: Summary) -> list[str]:
    """The units table: wall time with a core busy, core-time summed over cores, utilization
    (core-time over cores x latency) and ops. Core-time can exceed the latency on a multi-core
    unit, so both are shown, each under a header that says which it is."""
    w = max([12, *(len(u.unit) for u in s.units)])
    lines = [f"  {'unit':<{w + 2}}{'busy (wall)':>13}{'core-time':>13}{'cores':>7}{'util':>8}{'ops':>6}"]
    for u in s.units:
        lines.append(
            f"    {u.unit:<{w}}{u.active_ms:10.3f} ms{u.busy_ms:10.3f} ms{u.cores:7d}{u.utilization:8.1%}{u.ops:6d}"
        )
    return lines


def contention_words(s: Summary) -> str:
    """What sharing memory bandwidth and waiting for cores and DMA channels cost, summed over ops
    (not wall time; the critical-path share is), in words; the terminal and report.html show it."""
    c = s.contention
    return (
        f"memory sharing stretched ops and transfers by {c.bandwidth_stretch_ms:.3f} ms in all "
        f"({c.bandwidth_stretch_on_critical_path_ms:.3f} ms on the critical path); "
        f"waits: cores {c.core_wait_ms:.3f} ms, DMA {c.dma_wait_ms:.3f} ms"
    )


def power_words(s: Summary) -> list[str]:
    """The chip's average and peak power, what a cap cost, the temperature: lines of words
    (the terminal and report.html show them)."""
    p = s.power
    if p is None:
        return []
    of = f" over {p.frames} frames" if p.frames > 1 else ""
    out = [f"average {p.chip.average_w:.3f} W, peak {p.chip.peak_w:.3f} W at {p.chip.peak_at_ms:.3f} ms{of}"]
    if p.max_power_w is not None:
        out.append(
            f"cap {p.max_power_w:g} W held: latency {s.latency_ms:.3f} ms against {p.uncapped_latency_ms:.3f} ms "
            f"without it (+{p.cap_cost_ms:.3f} ms; uncapped peak {p.uncapped_peak_w:.3f} W)"
        )
    t = s.thermal
    if t is not None:
        out.append(
            f"temperature peak {t.peak_c:.2f} C at {t.peak_at_ms:.3f} ms (throttle at {t.throttle_c:g} C): "
            f"throttled {t.throttled_ms:.3f} ms, {t.throttled_ops} op(s) started throttled"
        )
    return out


def _defaults_line(s: Summary) -> list[str]:
    """Chip fields the file left at defaults nobody chose (they shape time, power and energy)."""
    if not s.defaulted_fields:
        return []
    shown = ", ".join(s.defaulted_fields[:4]) + (f" (+{len(s.defaulted_fields) - 4} more)" if len(s.defaulted_fields) > 4 else "")
    return [f"  defaults      {len(s.defaulted_fields)} chip field(s) not set in the file, defaults used: {shown}"]


def _stream_line(s: Summary) -> list[str]:
    f = s.stream
    if f is None or f.frames <= 1:
        return []
    line = (
        f"  {f.frames} frames    {f.throughput_fps:.1f} frames/s, II {f.initiation_interval_ms:.3f} ms ({f.frame_order}), "
        f"latency {f.frame_latency_mean_ms:.3f} ms mean / {f.frame_latency_max_ms:.3f} max, "
        f"{f.energy_per_frame_mj:.2f} mJ/frame, bottleneck {f.bottleneck_unit}"
    )
    return [line]


def _choice_lines(s: Summary) -> list[str]:
    """How the schedule was chosen: the engine check, energy mode, deadlines."""
    lines = []
    if s.policy_check:
        cands = ", ".join(f"{name} {ms:.3f}" for name, ms in s.policy_check)
        lines.append(f"  policy check  kept {s.policy_check_winner} (simulated ms: {cands})")
    e = s.energy_mode
    if e is not None:
        lo, ch = e.latency_optimal, e.chosen
        lines.append(
            f"  energy mode   {ch.energy_mj:.3f} mJ at {ch.latency_ms:.3f} ms (budget {e.latency_budget_ms:g} ms); "
            f"latency-optimal {lo.energy_mj:.3f} mJ at {lo.latency_ms:.3f} ms"
        )
    for d in s.deadlines:
        state = "met" if d.met else "MISSED"
        lines.append(
            f"  deadline      {d.name} <= {d.deadline_ms:g} ms: finishes {d.finish_ms:.3f} ms, "
            f"slack {d.slack_ms:.3f} ms ({state})"
        )
    return lines


def _quant_line(s: Summary) -> list[str]:
    """The binding's line (``run --quant``): ops per dtype, conversions and their time."""
    q = s.quant
    if q is None:
        return []
    dtypes = ", ".join(f"{n} {d}" for d, n in q.ops_per_dtype)
    line = f"  quantization  {q.binding}: {dtypes}; {len(q.conversions)} conversions, {q.conversion_ms:.3f} ms uncontended"
    return [line]


def format_summary(s: Summary, out_dir: Path | None = None) -> str:
    """A short human summary for the terminal; ``out_dir`` adds the line naming the report folder.

    The header names the model, the chip, the precision and the schedule that was kept
    (``Summary.policy``).
    """
    lines = [
        f"hwsim: {s.model} on {s.chip} ({s.precision}, {s.policy})",
        (
            f"  latency       {s.latency_ms:.3f} ms    energy {s.energy_mj:.2f} mJ    "
            f"{s.ops} ops, {s.total_macs / 1e9:.2f} GMAC"
        ),
    ]
    lines += unit_lines(s)
    path = s.critical_path
    head = " -> ".join(path[:4]) + (f" -> ... ({len(path) - 4} more)" if len(path) > 4 else "")
    lines.append(f"  critical path {s.critical_path_ms:.3f} ms over {len(path)} ops: {head}")
    lines.append(f"  contention    {contention_words(s)}")
    parts = ", ".join(f"{t.src_domain}->{t.dst_domain} {_mb(t.bytes)}" for t in s.traffic)
    lines.append(
        f"  cross-domain  {_mb(s.cross_domain_bytes)} in {s.cross_domain_transfers} transfers"
        + (f" ({parts})" if parts else "")
    )
    lines += [f"  {'power' if k == 0 else '':<14}{w}" for k, w in enumerate(power_words(s))]
    lines += _stream_line(s)
    lines += _choice_lines(s)
    lines += _quant_line(s)
    lines += _defaults_line(s)
    if s.unknown_ops:
        lines.append(f"  unknown ops   {', '.join(s.unknown_ops)} (costed as memory copies)")
    if out_dir is not None:
        lines.append(f"  reports       {out_dir}/")
    return "\n".join(lines)
