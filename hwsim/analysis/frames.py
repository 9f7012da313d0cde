"""Several input frames streamed through one schedule: throughput, initiation interval, latency.

:func:`hwsim.sim.engine.simulate` with ``frames = N`` runs ``N`` copies of the graph through one
schedule (all inputs present at time 0 unless ``in_flight``; each core interleaves the frames'
ops, or runs them frame after frame, see ``EngineOptions.frame_order``), so different units, and
different cores of one unit, work on different frames at once. From such a trace:

- frame ``i`` *completes* when its last op or transfer ends, and *starts* when its inputs were
  admitted (runs with ``in_flight``), else when its first op starts (all inputs are there at
  time 0 then, and a frame's early ops may run well before its units are free for the rest:
  with every input present at once, later frames queue and latency grows); its latency is the
  difference;
- the initiation interval (II) is the mean gap between consecutive completions over the steady
  part: the first gap (pipeline fill) is left out when there are 3 frames or more, and one frame
  alone has II = its latency; throughput is ``1 / II``;
- the bottleneck is the unit with the most busy time per frame per core (the one that bounds
  II from below); energy per frame is the run's energy over ``N``.
"""

from __future__ import annotations

from dataclasses import dataclass

from chips.schema import Chip
from chips.units import PJ_PER_MJ, PS_PER_MS
from hwsim.analysis.busy import unit_busy_ps
from hwsim.analysis.energy import run_energy
from hwsim.sim.engine import Trace

__all__ = ["FrameStats", "frame_stats"]


@dataclass(frozen=True, slots=True)
class FrameStats:
    """What a stream of ``frames`` inputs achieved. Times in ms, energy in mJ."""

    frames: int
    in_flight: int | None
    makespan_ms: float
    frame_start_ms: tuple[float, ...]
    frame_end_ms: tuple[float, ...]
    frame_latency_ms: tuple[float, ...]
    initiation_interval_ms: float
    throughput_fps: float
    bottleneck_unit: str
    bottleneck_busy_ms: float
    unit_busy_per_frame_ms: dict[str, float]
    energy_mj: float
    energy_per_frame_mj: float
    #: How cores ordered the frames' ops (:data:`hwsim.sim.engine.FRAME_ORDERS`).
    frame_order: str = "interleaved"


def frame_stats(chip: Chip, trace: Trace) -> FrameStats:
    """Frame completion times, II, throughput, bottleneck and energy of a (multi-frame) trace.

    >>> from chips import load_chip
    >>> from hwsim.sim.engine import OpRecord, Trace
    >>> ops = tuple(OpRecord("a", "Conv", "npu", 0, 10 * f, 10 * f + 10, 0, f) for f in range(4))
    >>> s = frame_stats(load_chip("rk3588"), Trace(40, ops, (), (), frames=4))
    >>> s.frame_end_ms, s.initiation_interval_ms, s.bottleneck_unit
    ((1e-08, 2e-08, 3e-08, 4e-08), 1e-08, 'npu')
    """
    n = trace.frames
    start = [trace.makespan_ps] * n
    end = [0] * n
    for r in trace.ops:
        start[r.frame] = min(start[r.frame], r.start_ps)
        end[r.frame] = max(end[r.frame], r.end_ps)
    for x in trace.transfers:
        end[x.frame] = max(end[x.frame], x.end_ps)
    start = [min(s, e) for s, e in zip(start, end)]
    if trace.frame_admit_ps:
        start = list(trace.frame_admit_ps)
    latency = [e - s for s, e in zip(start, end)]
    if n == 1:
        ii_ps = float(latency[0])
    else:
        ends = sorted(end)
        first = 1 if n >= 3 else 0
        ii_ps = (ends[-1] - ends[first]) / (n - 1 - first)
        if ii_ps <= 0:  # the frames ran side by side and ended together: the batch's rate
            ii_ps = trace.makespan_ps / n
    busy = {u.name: unit_busy_ps(trace, u.name) / n / PS_PER_MS for u in chip.units}
    per_core = {u.name: busy[u.name] / u.cores for u in chip.units}
    bottleneck = max(chip.units, key=lambda u: per_core[u.name]).name
    energy_pj = run_energy(chip, trace).total_pj
    return FrameStats(
        frames=n,
        in_flight=trace.in_flight,
        makespan_ms=trace.makespan_ps / PS_PER_MS,
        frame_start_ms=tuple(s / PS_PER_MS for s in start),
        frame_end_ms=tuple(e / PS_PER_MS for e in end),
        frame_latency_ms=tuple(x / PS_PER_MS for x in latency),
        initiation_interval_ms=ii_ps / PS_PER_MS,
        throughput_fps=1e12 / ii_ps if ii_ps > 0 else 0.0,
        bottleneck_unit=bottleneck,
        bottleneck_busy_ms=per_core[bottleneck],
        unit_busy_per_frame_ms=busy,
        energy_mj=energy_pj / PJ_PER_MJ,
        energy_per_frame_mj=energy_pj / PJ_PER_MJ / n,
        frame_order=trace.frame_order,
    )

