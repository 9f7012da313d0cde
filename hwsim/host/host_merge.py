"""Several fingerprints of one host as one (``hwsim fingerprint --calibrate`` merges its rounds).

On a shared machine other processes only take time from a measurement: a rate comes out lower
and a time longer than the undisturbed machine's, never the other way. So over rounds each figure
is estimated from its least disturbed observations: a time by ``pick`` of its values, a rate or
bandwidth as the reciprocal of ``pick`` over its reciprocals. The default, :data:`DEFAULT_PICK`,
is the median of the fastest half (:func:`fastest_half_median`), not the fastest alone
(:func:`fastest`): a host also runs faster than its usual state for a spell (turbo, its other
tenants quiet), and the fastest value is then one no other round confirms. Ten rounds under heavy
load (``docs/fidelity_cpu.md``): with the fastest, the calibrated predictions of the calibration
models lay 22 % below the median of the rounds' measured times, with the fastest half's median
4 %; two runs of 3 rounds each agreed within 5 % on 41 % of 50 models against 9 %. Figures that are
not slowed by load (a cache's capacity, the CPU clock /proc reports, the L2 a run call evicts,
a parallel section that a busy second core reads low, the runs' spread) take the median of the
rounds. The integer GEMM's ``requant_ns`` and ``int8_pack_ns`` are differences of probe times,
so they are derived again from the merged probes; so are the STFT's constants, fitted to the
merged frame times (merged one by one, the two nearly collinear constants paired one round's
butterfly with another's point cost).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from hwsim.host.fingerprint import Dispatch, Fingerprint, cache_bytes
from hwsim.host.validate import Validation

__all__ = ["DEFAULT_PICK", "Pick", "describe", "fastest", "fastest_half_median", "merge_fingerprints", "on_clock"]

#: How a time is estimated from its values over rounds (lower: less disturbed).
Pick = Callable[[Sequence[float]], float]
K = TypeVar("K")

#: Kernel figures not slowed by load: the median of the rounds (:mod:`hwsim.host.kernels`:
#: ``run_footprint_kib``, ``weight_cache_kib`` and ``loop_cache_kib`` are capacities; ``parallel_section_ns`` reads low on a busy machine;
#: ``norm_row_ns``, ``softmax_row_ns``, ``reduce_row_ns``, ``reduce_block_ns``, ``reduce_column_row_ns``, ``reduce_generic_ns``, ``gather_row_ns``,
#: ``slice_run_ns``, ``slice_step_element_ns``, the single-axis Transpose rates, the Softmax tail figures, ``fp32_batch_call_ns`` and the embedding probes'
#: DRAM rows (:data:`hwsim.host.gather_probe.GATHER_DRAM_PROBES`) are differences of two times and
#: ``gemm_aliased_factor`` a ratio of two rates, the NCHWc block efficiencies ratios of two times, and ``gemm_revisit_gbps`` a rate from their difference,
#: which load moves either way).
MEDIAN_KERNEL_FIGURES = frozenset({"run_footprint_kib", "parallel_section_ns", "norm_row_ns", "softmax_row_ns",
                                   "reduce_row_ns", "reduce_block_ns", "reduce_column_row_ns", "reduce_generic_ns", "gather_row_ns", "fp32_batch_call_ns", "gemm_aliased_factor",
                                   "slice_run_ns", "slice_step_element_ns",
                                   "im2col_pack_ns", "im2col_stride_ns", "col2im_ns", "col2im_strided_ns", "lstm_direction_ns", "gru_direction_ns", "transpose_block_ns", "transpose_byte_block_ns", "transpose_edge_ns", "transpose_outward_factor", "transpose_byte_outward_factor", "transpose_shared_line_factor", "transpose_pass_lines", "transpose_memcpy_ns",
                                   "vector_floats", "softmax_tail_ns", "softmax_tail_element_ns", "softmax_in_place_tail_ns",
                                   "gemm_revisit_gbps", "nchwc_one_block_efficiency", "nchwc_two_block_efficiency",
                                   "gather_dram_probe_ns:64", "gather_dram_probe_ns:768", "weight_cache_kib",
                                   "loop_cache_kib"})  # fmt: skip


def fastest(times: Sequence[float]) -> float:
    """The fastest of ``times``.

    >>> fastest([3.0, 1.0, 2.0])
    1.0
    """
    return min(times)


def fastest_half_median(times: Sequence[float]) -> float:
    """The median of the fastest half of ``times`` (of an odd count, the middle one included).

    >>> fastest_half_median([5.0, 1.0, 4.0, 2.0])
    1.5
    >>> fastest_half_median([3.0, 1.0, 2.0])
    1.5
    """
    ordered = sorted(times)
    return statistics.median(ordered[: (len(ordered) + 1) // 2])


#: What ``hwsim fingerprint --calibrate`` merges its rounds with (module docstring: why).
DEFAULT_PICK: Pick = fastest_half_median
#: How the chip file and the command name each pick.
_WORDS = {"fastest": "the fastest round's (a rate: the highest)",
          "fastest_half_median": "the median of the fastest half of the rounds (a rate: of its highest half)"}


def describe(pick: Pick) -> str:
    """Words for ``pick`` (a report line).

    >>> describe(fastest_half_median)
    'the median of the fastest half of the rounds (a rate: of its highest half)'
    """
    name = getattr(pick, "__name__", repr(pick))
    return _WORDS.get(name, name)


def _rate(values: Sequence[float], pick: Pick) -> float:
    """A rate (higher: less disturbed) as the reciprocal of ``pick`` over the reciprocals."""
    return 1.0 / pick([1.0 / v for v in values]) if all(v > 0 for v in values) else max(values)


def _merge(ds: Sequence[Mapping[K, float]], how: Callable[[Sequence[float]], float]) -> dict[K, float]:
    """Per key present in any of ``ds``: ``how`` over the values of the ones that have it."""
    keys = list(dict.fromkeys(k for d in ds for k in d))
    return {k: how([d[k] for d in ds if k in d]) for k in keys}


def _optional(values: Sequence[float | None], how: Callable[[Sequence[float]], float]) -> float | None:
    got = [v for v in values if v is not None]
    return how(got) if got else None


def _most(values: Sequence[float | None], how: Callable[[Sequence[float]], float]) -> float | None:
    """:func:`_optional` where more than half the rounds measured a value, else None: a stall one
    round of three saw is that round's noise (an AMD EPYC VM, 2026-12-07: one round's MatMul ran 2 %
    slower with its weights in DRAM, the other two no slower, and the merge had kept a 42 GB/s
    weight stream for every GEMM)."""
    measured = sum(v is not None for v in values)
    return _optional(values, how) if 2 * measured > len(values) else None


def _caches(fps: Sequence[Fingerprint], pick: Pick) -> list[dict[str, float | str]]:
    """Per cache level: capacity the median of the rounds, bandwidth the highest (``pick``)."""
    levels: dict[int, list[dict[str, float | str]]] = {}
    for fp in fps:
        for c in fp.caches:
            levels.setdefault(int(c["level"]), []).append(c)
    out: list[dict[str, float | str]] = []
    for level in sorted(levels):
        cs = levels[level]
        bws = [float(c["bandwidth_gbps"]) for c in cs if float(c["bandwidth_gbps"]) == float(c["bandwidth_gbps"])]
        out.append({**cs[0], "kib": statistics.median(float(c["kib"]) for c in cs),
                    "bandwidth_gbps": _rate(bws, pick) if bws else float("nan")})  # fmt: skip
    return out


def _kernel_rates(fps: Sequence[Fingerprint], pick: Pick, kernel_ns: float) -> dict[str, float]:
    """:attr:`Fingerprint.kernel_rates` merged: GB/s and speed-ups the highest, times the fastest, figures of
    :data:`MEDIAN_KERNEL_FIGURES` the median; the fields derived from probe times (the integer
    kernels', the one-row float Gemm's, the STFT's and the strided DFT's, on the first round's L1)
    derived again from the merged probes with the merged dispatch per kernel ``kernel_ns``
    (:func:`hwsim.host.kernels.rederived`)."""
    from hwsim.host.kernels import REDERIVED, rederived

    rates = [fp.kernel_rates for fp in fps]
    out = {k: (statistics.median(vs) if k in MEDIAN_KERNEL_FIGURES
               else _rate(vs, pick) if k.endswith(("_gbps", "_speedup")) else pick(vs))
           for k, vs in ((k, [r[k] for r in rates if k in r]) for k in dict.fromkeys(k for r in rates for k in r))
           if k not in REDERIVED}  # fmt: skip
    out.update(rederived(out, kernel_ns, cache_bytes(fps[0].caches, 1)))
    return out


def _round_notes(fps: Sequence[Fingerprint]) -> list[str]:
    """The rounds' notes, each once, those not every round gave marked with how many did: a figure
    one round left out may come from the others (a merged ``nchwc_call_ns`` beside one round's
    "not resolved; left out").

    >>> from types import SimpleNamespace
    >>> _round_notes([SimpleNamespace(notes=["x", "y"]), SimpleNamespace(notes=["x"])])
    ['x', 'in 1 of 2 rounds: y']
    """
    counts: dict[str, int] = {}
    for fp in fps:
        for n in dict.fromkeys(fp.notes):
            counts[n] = counts.get(n, 0) + 1
    return [n if k == len(fps) else f"in {k} of {len(fps)} rounds: {n}" for n, k in counts.items()]


def merge_fingerprints(fps: Sequence[Fingerprint], pick: Pick = DEFAULT_PICK) -> Fingerprint:
    """One fingerprint from several of the same host (module docstring: which figure how).

    The CPU model, threads, versions and probe sizes are the first's, the date the last's; the
    notes are all the rounds' (each once, :func:`_round_notes`) and one that says what was merged.

    Raises
    ------
    ValueError
        For no fingerprints.
    """
    if not fps:
        raise ValueError("merge_fingerprints: no fingerprints")
    first = fps[0]
    if len(fps) == 1:
        return first
    dispatches = [fp.dispatch for fp in fps if fp.dispatch is not None]
    dispatch = (Dispatch(pick([d.kernel_ns for d in dispatches]), pick([d.run_ns for d in dispatches]),
                         pick([d.profiled_kernel_ns for d in dispatches])) if dispatches else None)  # fmt: skip
    sweep = _merge([dict(fp.sweep) for fp in fps], lambda v: _rate(v, pick))
    note = (f"merged over {len(fps)} rounds: each time and rate {describe(pick)}; "
            "cache capacities, the clock and the spreads the median of the rounds")  # fmt: skip
    return replace(
        first, clock_mhz=statistics.median(fp.clock_mhz for fp in fps), date=fps[-1].date,
        matmul_gflops_1t=_merge([fp.matmul_gflops_1t for fp in fps], lambda v: _rate(v, pick)),
        matmul_gflops_nt=_merge([fp.matmul_gflops_nt for fp in fps], lambda v: _rate(v, pick)),
        matmul_spread=_merge([fp.matmul_spread for fp in fps], statistics.median),
        scaling=_merge([fp.scaling for fp in fps], lambda v: _rate(v, pick)),
        copy_gbps=_optional([fp.copy_gbps for fp in fps], lambda v: _rate(v, pick)),
        triad_gbps=_optional([fp.triad_gbps for fp in fps], lambda v: _rate(v, pick)),
        sweep=sorted(sweep.items()), caches=_caches(fps, pick),
        chase_ns=sorted(_merge([dict(fp.chase_ns) for fp in fps], pick).items()),
        dram_latency_ns=_optional([fp.dram_latency_ns for fp in fps], pick),
        notes=[*_round_notes(fps), note],
        weight_stream_gbps=_most([fp.weight_stream_gbps for fp in fps], lambda v: _rate(v, pick)),
        weight_stream_ms=_merge([fp.weight_stream_ms for fp in fps], pick),
        dispatch=dispatch, kernel_rates=_kernel_rates(fps, pick, dispatch.kernel_ns if dispatch else 0.0),
    )  # fmt: skip


def on_clock(v: Validation, factor: float) -> Validation:
    """``v`` with every measured time multiplied by ``factor``: put on another fingerprint's clock
    (a round's fp32 MatMul rate over the merged one's, :func:`hwsim.host.validate.validate_model`)."""
    from hwsim.host.measure import Timing

    if factor == 1.0:
        return v
    return replace(
        v, measured=Timing(tuple(s * factor for s in v.measured.samples_ns)),
        nodes=tuple(replace(n, measured_ns=n.measured_ns * factor) for n in v.nodes),
        inserted_ns=v.inserted_ns * factor, profiled_total_ns=v.profiled_total_ns * factor,
        measured_ns=v.measured_ns * factor, rounds_ns=tuple(r * factor for r in v.rounds_ns),
        speeds=tuple(s * factor for s in v.speeds),
    )  # fmt: skip
