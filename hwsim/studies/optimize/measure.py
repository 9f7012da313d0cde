"""Predict, measure, backfill: where the chip is this machine, time the best graphs for real.

A chip is this machine when its file was written by ``hwsim fingerprint`` (it carries the
``# fingerprint-json:`` record, :func:`hwsim.host.fingerprint.read_fingerprint`) on a CPU of the
same model name as this one. The graphs are timed with the onnxruntime code of
:mod:`hwsim.host.measure` (random weights where the file has none, random inputs, the low
quantile of the runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

    from hwsim.studies.optimize.search import Search

__all__ = ["backfill", "host_threads", "measure_ms"]


def host_threads(chip_ref: str) -> int:
    """The thread count the fingerprint was measured with (1 when it says none)."""
    from hwsim.host.fingerprint import read_fingerprint

    record = read_fingerprint(Path(chip_ref)) or {}
    threads = record.get("threads", 1)
    return threads if isinstance(threads, int) and threads > 0 else 1


def measure_ms(model: onnx.ModelProto, repeats: int, threads: int = 1, seed: int = 0) -> float:
    """The model's latency on this machine with onnxruntime, in ms (the low quantile of
    ``repeats`` timed runs after a warm-up).

    Raises
    ------
    hwsim.host.errors.MeasureError
        A model onnxruntime cannot load or run.
    """
    from graph_ir.materialize import fill_absent_weights
    from hwsim.host.measure import make_session, random_inputs, time_session

    filled = fill_absent_weights(model, None, seed)
    sess = make_session(filled, threads)
    timing = time_session(sess, random_inputs(filled, seed), runs=repeats, warmup=3, min_total_s=0.0)
    return timing.low_ns / 1e6


def backfill(s: Search, chip_ref: str) -> None:
    """Measure the beam's graphs of ``s`` with onnxruntime where ``chip_ref`` is this machine, and
    backfill: each measurement goes next to its prediction (``s.result.measured_ms`` and the
    database); elsewhere a note says why nothing was measured."""
    import onnx

    from hwsim.host.errors import MeasureError
    from hwsim.host.fingerprint import not_this_host

    why = not_this_host(chip_ref)
    if why is not None:
        s.result.notes.append(f"nothing measured: {why}")
        return
    repeats = s.inputs.config.stage_kernel.measure_repeats
    for r in s.result.beam:
        try:
            ms = measure_ms(onnx.load_from_string(s.bytes_of[r.candidate.transforms]), repeats, host_threads(chip_ref))
        except MeasureError as exc:
            s.result.notes.append(f"trial {r.index} not measured: {exc}")
            continue
        s.result.measured_ms[r.outcome.key] = ms
        if r.trial_id is not None:
            s.db.set_measured(r.trial_id, ms)
