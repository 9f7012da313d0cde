"""The summary of a run: one typed, frozen object built once per run.

:func:`build_summary` reads a :class:`~hwsim.pipeline.RunResult` once; the same :class:`Summary`
then feeds ``summary.json`` (:meth:`Summary.to_json`), ``report.html`` and the terminal summary
(:func:`hwsim.report.terminal.format_summary`). Floats are rounded as ``summary.json`` shows them
(6 decimals, throughput 3), so every view of the run says the same numbers.

``policy`` names the schedule that was kept (the engine check may keep another candidate than
the one asked for, energy mode an ``energy@k`` schedule); ``requested_policy`` names the policy
asked for.

>>> from hwsim.pipeline import run
>>> s = build_summary(run("rk3588", "examples/models/resnet18.onnx"))
>>> s.model, s.requested_policy, s.to_json()["policy"] == s.policy
('resnet18', 'affinity-locality', True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from chips.units import NS_PER_MS, PS_PER_MS
from graph_ir.dynamic import AssumedDim
from hwsim.analysis.analyze import TrafficRow, UnitUsage
from hwsim.analysis.energy import PowerFigures, run_power
from hwsim.analysis.memory import DRAM, KINDS, Peak, Spill
from hwsim.pipeline import RunResult
from hwsim.policy_check import Candidate, ScheduleChoice
from hwsim.report.provenance import Provenance
from hwsim.sim.floor import any_schedule_floor_ns

__all__ = [
    "ContentionSummary",
    "DeadlineSummary",
    "EnergyMode",
    "FusionSummary",
    "PowerLine",
    "PowerSummary",
    "QuantSummary",
    "ScheduleFigures",
    "StreamSummary",
    "Summary",
    "ThermalSummary",
    "build_summary",
    "dtype_fallback_ops",
    "requested_policy",
]

def _r(x: float, nd: int = 6) -> float:
    return round(float(x), nd)


@dataclass(frozen=True, slots=True)
class StreamSummary:
    """Frames streamed through the schedule (``--frames N``, N > 1); times in ms, energy in mJ."""

    frames: int
    in_flight: int | None
    frame_order: str
    throughput_fps: float
    initiation_interval_ms: float
    frame_latency_ms: tuple[float, ...]
    frame_latency_mean_ms: float
    frame_latency_max_ms: float
    bottleneck_unit: str
    bottleneck_busy_ms_per_frame: float
    energy_per_frame_mj: float

    def to_json(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "in_flight": self.in_flight,
            "frame_order": self.frame_order,
            "throughput_fps": self.throughput_fps,
            "initiation_interval_ms": self.initiation_interval_ms,
            "frame_latency_ms": list(self.frame_latency_ms),
            "frame_latency_mean_ms": self.frame_latency_mean_ms,
            "frame_latency_max_ms": self.frame_latency_max_ms,
            "bottleneck_unit": self.bottleneck_unit,
            "bottleneck_busy_ms_per_frame": self.bottleneck_busy_ms_per_frame,
            "energy_per_frame_mj": self.energy_per_frame_mj,
        }


@dataclass(frozen=True, slots=True)
class ScheduleFigures:
    """One schedule simulated in energy mode: its name, latency (ms) and energy (mJ)."""

    schedule: str
    latency_ms: float
    energy_mj: float


@dataclass(frozen=True, slots=True)
class EnergyMode:
    """Energy mode (``--objective energy``): the schedule kept, the latency-optimal one, all tried."""

    latency_budget_ms: float
    chosen: ScheduleFigures
    latency_optimal: ScheduleFigures
    tried: tuple[ScheduleFigures, ...]

    def to_json(self) -> dict[str, Any]:
        def figures(f: ScheduleFigures) -> dict[str, Any]:
            return {"schedule": f.schedule, "latency_ms": f.latency_ms, "energy_mj": f.energy_mj}

        return {
            "chosen": figures(self.chosen),
            "latency_optimal": figures(self.latency_optimal),
            "tried": {f.schedule: {"latency_ms": f.latency_ms, "energy_mj": f.energy_mj} for f in self.tried},
        }


@dataclass(frozen=True, slots=True)
class FusionSummary:
    """Fusion as the run decided it (``--fuse``): the mode and how many legal groups were
    considered, fused (kept) and left unfused (rolled back)."""

    mode: str
    considered: int
    kept: int
    rolled_back: int

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "considered": self.considered, "kept": self.kept, "rolled_back": self.rolled_back}


@dataclass(frozen=True, slots=True)
class DeadlineSummary:
    """One deadline (``--deadline``): the node it constrains, its finish and slack (ms)."""

    name: str
    node: str
    deadline_ms: float
    finish_ms: float
    slack_ms: float
    met: bool


@dataclass(frozen=True, slots=True)
class ContentionSummary:
    """Time lost to shared memory bandwidth and waits, in ms (:mod:`hwsim.analysis.contention`):
    sums over ops and transfers, not wall time, except the stretch on the critical path."""

    bandwidth_stretch_ms: float
    bandwidth_stretch_on_critical_path_ms: float
    core_wait_ms: float
    dma_wait_ms: float
    #: ``(node, unit, stretch ms)`` of the most stretched ops.
    top_stretched_ops: tuple[tuple[str, str, float], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "bandwidth_stretch_ms": self.bandwidth_stretch_ms,
            "bandwidth_stretch_on_critical_path_ms": self.bandwidth_stretch_on_critical_path_ms,
            "core_wait_ms": self.core_wait_ms,
            "dma_wait_ms": self.dma_wait_ms,
            "top_stretched_ops": [{"node": n, "unit": u, "stretch_ms": ms} for n, u, ms in self.top_stretched_ops],
        }


@dataclass(frozen=True, slots=True)
class QuantSummary:
    """The quantization binding of a run (``run --quant``): ops per dtype and the conversions it
    inserted, each ``(op, op_type, tensor, from dtype, to dtype, unit, uncontended ms)``."""

    binding: str
    default: str
    ops_per_dtype: tuple[tuple[str, int], ...]
    conversions: tuple[tuple[str, str, str, str, str, str, float], ...]

    @property
    def conversion_ms(self) -> float:
        """Sum of the conversions' uncontended times (ms)."""
        return _r(sum(c[6] for c in self.conversions))

    def to_json(self) -> dict[str, Any]:
        return {
            "binding": self.binding,
            "default": self.default,
            "ops_per_dtype": dict(self.ops_per_dtype),
            "conversion_ms": self.conversion_ms,
            "conversions": [
                {"op": c[0], "op_type": c[1], "tensor": c[2], "from": c[3], "to": c[4], "unit": c[5], "ms": c[6]}
                for c in self.conversions
            ],
        }


@dataclass(frozen=True, slots=True)
class PowerLine:
    """Average and peak power of the chip, a unit or the DRAM (W), and when it peaks (ms)."""

    average_w: float
    peak_w: float
    peak_at_ms: float

    @classmethod
    def of(cls, f: PowerFigures) -> PowerLine:
        return cls(_r(f.average_w), _r(f.peak_w), _r(f.peak_at_ps / PS_PER_MS))

    def to_json(self) -> dict[str, Any]:
        return {"average_w": self.average_w, "peak_w": self.peak_w, "peak_at_ms": self.peak_at_ms}


@dataclass(frozen=True, slots=True)
class PowerSummary:
    """Power of the run ``trace.json`` shows (the stream with ``--frames N``, over ``frames``):
    the chip's, each unit's, the DRAM's (:func:`hwsim.analysis.energy.run_power`). Under a cap
    (``--max-power-w``), the cap and what it cost: the one-frame latency of the same schedule
    without it."""

    frames: int
    chip: PowerLine
    units: tuple[tuple[str, PowerLine], ...]
    dram: PowerLine
    max_power_w: float | None = None
    uncapped_latency_ms: float | None = None
    uncapped_peak_w: float | None = None
    cap_cost_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "frames": self.frames,
            **self.chip.to_json(),
            "units": {u: line.to_json() for u, line in self.units},
            "dram": self.dram.to_json(),
        }
        if self.max_power_w is not None:
            out["max_power_w"] = self.max_power_w
            out["uncapped_latency_ms"] = self.uncapped_latency_ms
            out["uncapped_peak_w"] = self.uncapped_peak_w
            out["cap_cost_ms"] = self.cap_cost_ms
        return out


@dataclass(frozen=True, slots=True)
class ThermalSummary:
    """The chip's temperature over the run ``trace.json`` shows (a chip with a thermal model)."""

    ambient_c: float
    throttle_c: float
    peak_c: float
    peak_at_ms: float
    throttled_ms: float
    throttled_ops: int

    def to_json(self) -> dict[str, Any]:
        return {
            "ambient_c": self.ambient_c,
            "throttle_c": self.throttle_c,
            "peak_c": self.peak_c,
            "peak_at_ms": self.peak_at_ms,
            "throttled_ms": self.throttled_ms,
            "throttled_ops": self.throttled_ops,
        }


@dataclass(frozen=True, slots=True)
class AssumedRange:
    """Latency over ``--assume NAME=LO..HI``: the points run and their p50 / p99."""

    name: str
    lo: int
    hi: int
    points: tuple[tuple[int, float], ...]  # (value, latency ms)

    @property
    def latency_p50_ms(self) -> float:
        return _r(float(np.percentile([ms for _, ms in self.points], 50)))

    @property
    def latency_p99_ms(self) -> float:
        return _r(float(np.percentile([ms for _, ms in self.points], 99)))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "lo": self.lo, "hi": self.hi,
            "points": [{"value": v, "latency_ms": ms} for v, ms in self.points],
            "latency_p50_ms": self.latency_p50_ms, "latency_p99_ms": self.latency_p99_ms,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Summary:
    """What ``summary.json`` says about a run (see the module docstring); build with :func:`build_summary`.

    ``policy_check`` holds ``(schedule, simulated latency ms)`` of every candidate the engine
    check simulated (empty when nothing was checked).
    """

    chip: str
    chip_description: str
    model: str
    precision: str
    policy: str
    requested_policy: str
    latency_ms: float
    energy_mj: float
    dram_energy_mj: float
    dram_bytes: int
    ops: int
    total_macs: int
    units: tuple[UnitUsage, ...]
    ops_per_unit: tuple[tuple[str, int], ...]
    critical_path: tuple[str, ...]
    critical_path_ms: float
    contention: ContentionSummary
    traffic: tuple[TrafficRow, ...]
    cross_domain_bytes: int
    unknown_ops: tuple[str, ...]
    dtype_fallbacks: tuple[str, ...]
    fused_ops: tuple[tuple[str, str], ...]
    scheduler_estimate_ms: float
    lower_bound_ms: float
    split_ops: int = 0
    tiled_ops: int = 0
    #: Chip fields that shape timing, power or energy and that the chip file left at a default
    #: nobody chose (:meth:`chips.schema.Chip.defaulted_fields`).
    defaulted_fields: tuple[str, ...] = ()
    stream: StreamSummary | None = None
    policy_check: tuple[tuple[str, float], ...] = ()
    policy_check_winner: str | None = None
    energy_mode: EnergyMode | None = None
    deadlines: tuple[DeadlineSummary, ...] = ()
    quant: QuantSummary | None = None
    fusion: FusionSummary | None = None
    power: PowerSummary | None = None
    thermal: ThermalSummary | None = None
    #: Each place's peak memory (:mod:`hwsim.analysis.memory`); empty: not measured.
    peak_memory: tuple[Peak, ...] = ()
    #: Tensors moved from an SRAM domain to DRAM to keep it to capacity.
    spills: tuple[Spill, ...] = ()
    #: Data-dependent dimensions and trip counts given a value at import (:mod:`graph_ir.dynamic`).
    assumed_dims: tuple[AssumedDim, ...] = ()
    #: Latency over a ``--assume NAME=LO..HI`` range.
    assumed_range: AssumedRange | None = None
    #: hwsim version, chip and model sha256 and the options of the run (None: not known, an API run).
    provenance: Provenance | None = None

    @property
    def cross_domain_transfers(self) -> int:
        return sum(t.transfers for t in self.traffic)

    @property
    def deadline_missed(self) -> bool:
        return any(not d.met for d in self.deadlines)

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` content: plain JSON types, keys in a fixed order."""
        return {
            "chip": self.chip,
            "chip_description": self.chip_description,
            "model": self.model,
            "precision": self.precision,
            "policy": self.policy,
            "requested_policy": self.requested_policy,
            "latency_ms": self.latency_ms,
            "energy_mj": self.energy_mj,
            "dram_energy_mj": self.dram_energy_mj,
            "dram_bytes": self.dram_bytes,
            "ops": self.ops,
            "total_macs": self.total_macs,
            "units": {
                u.unit: {
                    "kind": u.kind,
                    "cores": u.cores,
                    "ops": u.ops,
                    "busy_ms": u.busy_ms,
                    "active_ms": u.active_ms,
                    "utilization": u.utilization,
                    "energy_mj": u.energy_mj,
                }
                for u in self.units
            },
            "ops_per_unit": dict(self.ops_per_unit),
            "critical_path": list(self.critical_path),
            "critical_path_ms": self.critical_path_ms,
            "contention": self.contention.to_json(),
            "traffic": [
                {"src_domain": t.src_domain, "dst_domain": t.dst_domain, "bytes": t.bytes, "transfers": t.transfers}
                for t in self.traffic
            ],
            "cross_domain_bytes": self.cross_domain_bytes,
            "unknown_ops": list(self.unknown_ops),
            "dtype_fallbacks": list(self.dtype_fallbacks),
            "fused_ops": [list(pair) for pair in self.fused_ops],
            **({"fusion": self.fusion.to_json()} if self.fusion is not None else {}),
            "scheduler_estimate_ms": self.scheduler_estimate_ms,
            "lower_bound_ms": self.lower_bound_ms,
            "split_ops": self.split_ops,
            "tiled_ops": self.tiled_ops,
            "defaulted_fields": list(self.defaulted_fields),
            **(self.stream.to_json() if self.stream is not None else {}),
            **self._choice_json(),
            **({"quant": self.quant.to_json()} if self.quant is not None else {}),
            **({"power": self.power.to_json()} if self.power is not None else {}),
            **({"thermal": self.thermal.to_json()} if self.thermal is not None else {}),
            **self._memory_json(),
            **({"assumed_dims": [d.to_json() for d in self.assumed_dims]} if self.assumed_dims else {}),
            **({"assumed_range": self.assumed_range.to_json()} if self.assumed_range is not None else {}),
            **({"provenance": self.provenance.to_json()} if self.provenance is not None else {}),
        }

    @property
    def overcommitted(self) -> Peak | None:
        """The physical DRAM's peak when it passes its capacity (None: it fits)."""
        return next((p for p in self.peak_memory if p.place == DRAM and p.over_capacity), None)

    def _memory_json(self) -> dict[str, Any]:
        """``peak_memory`` per place, ``spills``, and ``overcommitted`` when the DRAM overflows."""
        if not self.peak_memory:
            return {}
        peaks = {}
        for p in self.peak_memory:
            held = (p.activations_bytes, p.weights_bytes, p.staging_bytes, p.tiles_bytes)
            peaks[p.place] = {
                "kind": p.kind, "peak_bytes": p.peak_bytes, "capacity_bytes": p.capacity_bytes,
                "at_ms": _r(p.at_ps / PS_PER_MS), "at_op": p.at_op or None,
                "resident_bytes": dict(zip(KINDS, held, strict=True)),
            }  # fmt: skip
        out: dict[str, Any] = {
            "peak_memory": peaks,
            "spills": [{"tensor": s.tensor, "domain": s.domain, "bytes": s.bytes} for s in self.spills],
        }
        over = self.overcommitted
        if over is not None:
            out["overcommitted"] = {"domain": over.place, "peak_bytes": over.peak_bytes, "capacity_bytes": over.capacity_bytes}
        return out

    def _choice_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.policy_check:
            out["policy_check"] = dict(self.policy_check)
            out["policy_check_winner"] = self.policy_check_winner
        if self.energy_mode is not None:
            out["objective"] = "energy"
            out["latency_budget_ms"] = self.energy_mode.latency_budget_ms
            out["energy_mode"] = self.energy_mode.to_json()
        if self.deadlines:
            out["deadlines"] = [
                {"name": d.name, "node": d.node, "deadline_ms": d.deadline_ms, "finish_ms": d.finish_ms,
                 "slack_ms": d.slack_ms, "met": d.met}
                for d in self.deadlines
            ]  # fmt: skip
            out["deadline_missed"] = self.deadline_missed
        return out


def _contention(result: RunResult) -> ContentionSummary:
    c = result.analysis.contention
    return ContentionSummary(
        _r(c.bandwidth_stretch_ms), _r(c.bandwidth_stretch_on_critical_path_ms), _r(c.core_wait_ms),
        _r(c.dma_wait_ms), tuple((s.node, s.unit, _r(s.stretch_ms)) for s in c.top_stretched_ops),
    )  # fmt: skip


def requested_policy(result: RunResult) -> str:
    """The policy asked for; ``result.schedule.policy`` names the schedule that ran (the engine
    check may keep another candidate, energy mode an ``energy@k`` schedule)."""
    return result.choice.policy if result.choice is not None else result.schedule.policy


def _stream(result: RunResult) -> StreamSummary | None:
    s = result.stream
    if s is None:
        return None
    return StreamSummary(
        frames=s.frames,
        in_flight=s.in_flight,
        frame_order=s.frame_order,
        throughput_fps=_r(s.throughput_fps, 3),
        initiation_interval_ms=_r(s.initiation_interval_ms),
        frame_latency_ms=tuple(_r(x) for x in s.frame_latency_ms),
        frame_latency_mean_ms=_r(sum(s.frame_latency_ms) / s.frames),
        frame_latency_max_ms=_r(max(s.frame_latency_ms)),
        bottleneck_unit=s.bottleneck_unit,
        bottleneck_busy_ms_per_frame=_r(s.bottleneck_busy_ms),
        energy_per_frame_mj=_r(s.energy_per_frame_mj),
    )


def _policy_check(c: ScheduleChoice | None) -> tuple[tuple[str, float], ...]:
    """``(schedule, simulated latency ms)`` of the candidates the engine check simulated, if it ran."""
    if c is None or not c.checked:
        return ()
    return tuple((k.name, _r(k.latency_ms)) for k in c.candidates)


def _energy_mode(c: ScheduleChoice | None) -> EnergyMode | None:
    if c is None or c.objective != "energy" or c.latency_optimal is None or c.chosen is None:
        return None
    assert c.latency_budget_ms is not None  # energy mode always has a budget

    def figures(k: Candidate) -> ScheduleFigures:
        return ScheduleFigures(k.name, _r(k.latency_ms), _r(k.energy_mj))

    return EnergyMode(
        latency_budget_ms=c.latency_budget_ms,
        chosen=figures(c.chosen),
        latency_optimal=figures(c.latency_optimal),
        tried=tuple(figures(k) for k in c.energy_candidates),
    )


def _deadlines(c: ScheduleChoice | None) -> tuple[DeadlineSummary, ...]:
    if c is None:
        return ()
    return tuple(
        DeadlineSummary(d.name, d.node, d.deadline_ms, _r(d.finish_ms), _r(d.slack_ms), d.met) for d in c.deadlines
    )


def _fusion(result: RunResult) -> FusionSummary | None:
    f = result.fusion
    if f is None:
        return None
    return FusionSummary(f.mode, len(f.decisions), f.kept, f.rolled_back)
def _power(result: RunResult) -> PowerSummary:
    trace = result.stream_trace if result.stream_trace is not None else result.trace
    p = run_power(result.chip, trace)
    units = tuple((u, PowerLine.of(f)) for u, f in p.units.items())
    line = PowerSummary(trace.frames, PowerLine.of(p.chip), units, PowerLine.of(p.dram))
    uncapped = result.uncapped_trace
    cap = result.max_power_w
    if uncapped is None or cap is None:
        return line
    free_ms = _r(uncapped.makespan_ps / PS_PER_MS)
    capped_ms = _r(result.trace.makespan_ps / PS_PER_MS)
    free_peak = _r(run_power(result.chip, uncapped).chip.peak_w)
    return replace(line, max_power_w=cap, uncapped_latency_ms=free_ms, uncapped_peak_w=free_peak,
                   cap_cost_ms=_r(capped_ms - free_ms))  # fmt: skip


def _thermal(result: RunResult) -> ThermalSummary | None:
    trace = result.stream_trace if result.stream_trace is not None else result.trace
    spec, log = result.chip.thermal, trace.thermal
    if spec is None or log is None:
        return None
    return ThermalSummary(
        spec.ambient_c, spec.throttle_c, _r(log.peak_c), _r(log.peak_at_ps / PS_PER_MS),
        _r(log.throttled_ps / PS_PER_MS), log.throttled_ops,
    )  # fmt: skip


def dtype_fallback_ops(result: RunResult) -> dict[str, int]:
    """``deployed<-requested:unit`` -> how many ops the run placed there in another dtype than
    asked for. Only ops that ran count: a unit that could fall back but ran nothing is not listed.
    """
    if result.precision == "model":
        return {}
    out: dict[str, int] = {}
    for op, p in result.schedule.placements.items():
        c = result.table.costs[op][p.unit]
        asked = result.table.precision_of(op)
        if c.dtype != asked:
            key = f"{c.dtype}<-{asked}:{p.unit}"
            out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def _quant(result: RunResult) -> QuantSummary | None:
    q = result.quant
    if q is None:
        return None
    per_dtype: dict[str, int] = {}
    for d in q.dtypes.values():
        per_dtype[d] = per_dtype.get(d, 0) + 1
    rows = []
    for c in result.conversions:
        unit = result.schedule.placements[c.op].unit
        ms = result.table.costs[c.op][unit].latency_ns / NS_PER_MS
        rows.append((c.op, c.op_type, c.tensor, c.src_dtype, c.dst_dtype, unit, _r(ms)))
    return QuantSummary(q.source, q.default, tuple(sorted(per_dtype.items())), tuple(rows))


def build_summary(result: RunResult) -> Summary:
    """Summarize a finished run (once; every report reads the same object)."""
    a, g, c = result.analysis, result.graph, result.choice
    placed: dict[str, int] = {}
    for p in result.schedule.placements.values():
        placed[p.unit] = placed.get(p.unit, 0) + 1
    return Summary(
        chip=result.chip.name,
        chip_description=result.chip.description,
        model=g.name,
        precision=result.precision,
        policy=result.schedule.policy,
        requested_policy=requested_policy(result),
        latency_ms=_r(a.latency_ms),
        energy_mj=_r(a.energy_mj),
        dram_energy_mj=_r(a.dram_energy_mj),
        dram_bytes=a.dram_bytes,
        ops=len(g),
        total_macs=g.total_macs,
        units=tuple(
            UnitUsage(u.unit, u.kind, u.cores, u.ops, _r(u.busy_ms), _r(u.active_ms), _r(u.utilization), _r(u.energy_mj))
            for u in a.units
        ),
        ops_per_unit=tuple(sorted(placed.items())),
        critical_path=tuple(a.critical_path),
        critical_path_ms=_r(a.critical_path_ms),
        contention=_contention(result),
        traffic=tuple(a.traffic),
        cross_domain_bytes=sum(t.bytes for t in a.traffic),
        unknown_ops=tuple(g.unknown_ops),
        dtype_fallbacks=tuple(dtype_fallback_ops(result)),
        fused_ops=tuple((f.producer, f.consumer) for f in result.fused),
        scheduler_estimate_ms=_r(result.schedule.est_makespan_ns / NS_PER_MS),
        lower_bound_ms=_r(any_schedule_floor_ns(g, result.chip, result.table) / NS_PER_MS),
        split_ops=sum(1 for r in result.trace.ops if r.cores),
        tiled_ops=sum(1 for r in result.trace.ops if r.tiles > 1),
        defaulted_fields=result.chip.defaulted_fields(),
        stream=_stream(result),
        policy_check=_policy_check(c),
        policy_check_winner=c.winner if c is not None and c.checked else None,
        energy_mode=_energy_mode(c),
        deadlines=_deadlines(c),
        quant=_quant(result),
        fusion=_fusion(result),
        power=_power(result),
        thermal=_thermal(result),
        peak_memory=result.memory.peaks if result.memory is not None else (),
        spills=result.memory.spills if result.memory is not None else (),
        assumed_dims=g.assumed,
    )
