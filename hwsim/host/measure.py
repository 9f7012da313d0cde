"""Running ONNX models with onnxruntime on this machine: random weights for weightless files,
random inputs, latency with warm-up and low quantiles, and per-node profiles.

On a shared machine other processes only ever *add* time to a run, so the estimate of a
kernel's or a model's own time is a low quantile (:data:`LOW_QUANTILE`, the 25th percentile)
of many short runs, not the median: the median moves with the load of the moment (+-30 %
between rounds here), the minimum with a lucky cache or turbo state; the 25th percentile is
what the uncontended runs take while still being an average over several of them.

This is the measuring half of ``hwsim validate`` and ``hwsim fingerprint``; it imports
onnxruntime lazily so that importing :mod:`hwsim` stays cheap.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import onnx

from graph_ir import materialize
from graph_ir.materialize import fill_absent_weights
from hwsim.host.errors import MeasureError
from hwsim.host.ort_fp16 import CAST_PREFIX

__all__ = [
    "BN_NCHWC_SUFFIX",
    "LOW_QUANTILE",
    "OPT_LEVELS",
    "MeasureError",
    "Timing",
    "attribute_nodes",
    "best_run_ns",
    "load_with_random_weights",
    "low_quantile",
    "make_session",
    "named_nodes",
    "nchwc_block",
    "profile_nodes",
    "random_inputs",
    "time_call",
    "time_session",
]

#: onnxruntime graph optimization levels by name (``all`` is onnxruntime's default).
OPT_LEVELS = ("disable", "basic", "extended", "all")
#: The quantile of repeated timings taken as the uncontended time (see the module docstring).
LOW_QUANTILE = 0.25


def low_quantile(values: Sequence[float], q: float = LOW_QUANTILE) -> float:
    """The ``q`` quantile of ``values`` (linear interpolation between order statistics).

    >>> low_quantile([4.0, 1.0, 3.0, 2.0, 5.0])
    2.0
    """
    if not values:
        raise ValueError("low_quantile of no values")
    return float(np.quantile(np.asarray(values, dtype=float), q))


@dataclass(frozen=True, slots=True)
class Timing:
    """Repeated wall-clock timings of one call, in nanoseconds."""

    samples_ns: tuple[float, ...]

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples_ns)

    @property
    def spread(self) -> float:
        """Half the inter-quartile range over the median (0.05 = +-5 %)."""
        if len(self.samples_ns) < 4:
            return (max(self.samples_ns) - min(self.samples_ns)) / 2 / self.median_ns
        q = statistics.quantiles(self.samples_ns, n=4)
        return (q[2] - q[0]) / 2 / self.median_ns

    @property
    def min_ns(self) -> float:
        return min(self.samples_ns)

    @property
    def low_ns(self) -> float:
        """The :data:`LOW_QUANTILE` of the samples: the uncontended time on a shared machine."""
        return low_quantile(self.samples_ns)


def time_call(fn: Callable[[], object], runs: int = 10, warmup: int = 2, min_total_s: float = 0.0) -> Timing:
    """Time ``fn()`` ``runs`` times (more until ``min_total_s`` has passed) after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < runs or time.perf_counter() - start < min_total_s:
        t0 = time.perf_counter_ns()
        fn()
        samples.append(float(time.perf_counter_ns() - t0))
        if len(samples) >= 100 * max(runs, 1):
            break
    return Timing(tuple(samples))


K = TypeVar("K")


def best_run_ns(models: Mapping[K, tuple[onnx.ModelProto, np.ndarray]], rounds: int, threads: int = 1) -> dict[K, float]:
    """Per key, the whole-run time of its model fed its ``x`` (ns) on ``threads`` intra-op threads:
    the 10th percentile of 200 runs, the sessions interleaved over ``rounds`` rounds and the best
    round kept (the probes of kernels that take 1-15 us: timed, not profiled, since the profiler
    counts whole microseconds)."""
    sessions = {key: (make_session(model, threads), {"x": x}) for key, (model, x) in models.items()}
    best = dict.fromkeys(sessions, float("inf"))
    for _ in range(rounds):
        for key, (sess, feeds) in sessions.items():
            t = time_call(partial(sess.run, None, feeds), runs=200, warmup=20)
            best[key] = min(best[key], low_quantile(t.samples_ns, 0.1))
    return best


def load_with_random_weights(path: str | Path, seed: int = 0) -> onnx.ModelProto:
    """Load ``path``; initializers whose external data is absent get seeded random values
    (:func:`graph_ir.materialize.fill_absent_weights`, read from their file where it exists).

    Raises
    ------
    MeasureError
        When the file cannot be read as ONNX.
    """
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise MeasureError(f"{path}: file not found") from None
    except Exception as exc:  # noqa: BLE001 - onnx raises DecodeError and others for a bad file
        raise MeasureError(f"{path}: not a readable ONNX file ({type(exc).__name__})") from None
    return fill_absent_weights(model, Path(path).resolve().parent, seed)


def random_inputs(model: onnx.ModelProto, seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None) -> dict[str, np.ndarray]:
    """Random feeds for every graph input that is not an initializer
    (:func:`graph_ir.materialize.random_inputs`).

    Raises
    ------
    MeasureError
        An input with a dynamic dimension that ``shapes`` does not pin.
    """
    try:
        return materialize.random_inputs(model, seed, shapes)
    except materialize.MaterializeError as exc:
        raise MeasureError(str(exc)) from None


def make_session(model: onnx.ModelProto, threads: int = 1, opt: str = "all", profile_prefix: str | None = None) -> Any:
    """An onnxruntime CPU session with pinned thread counts.

    Raises
    ------
    MeasureError
        When onnxruntime refuses the model.
    """
    import onnxruntime as ort

    if opt not in OPT_LEVELS:
        raise ValueError(f"opt {opt!r} is not one of {OPT_LEVELS}")
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt]
    # fatal only: a model onnxruntime refuses is named in one line of hwsim's own from its exception;
    # its logger would print the same error again before it (a shape input fed values it rejects)
    so.log_severity_level = 4
    if threads == 1:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile_prefix is not None:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    try:
        return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own untyped errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MeasureError(f"onnxruntime cannot load the model: {first[:300]}") from None


def _run(sess: Any, feeds: Mapping[str, np.ndarray]) -> None:
    try:
        sess.run(None, dict(feeds))
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own untyped errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MeasureError(f"onnxruntime cannot run the model: {first[:300]}") from None


def time_session(sess: Any, feeds: Mapping[str, np.ndarray], runs: int = 10, warmup: int = 3, min_total_s: float = 0.5) -> Timing:
    """Whole-model latency: ``warmup`` runs, then at least ``runs`` (and ``min_total_s``) timed runs."""
    return time_call(lambda: _run(sess, feeds), runs=runs, warmup=warmup, min_total_s=min_total_s)


def profile_nodes(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], threads: int = 1, runs: int = 10, opt: str = "all"
) -> dict[str, tuple[str, float]]:
    """Time per profiled node in nanoseconds, from onnxruntime's profiler: the
    :data:`LOW_QUANTILE` of the node's durations over ``runs`` runs (after two warm-up runs).

    Returns ``{profiled node name: (op type it ran as, ns)}``. With ``opt="disable"`` the
    names map one to one onto the file's nodes; with optimizations on, use
    :func:`attribute_nodes` to map fused and inserted nodes back.
    Nodes without a name are first named ``<op_type>_<index>``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        sess = make_session(named_nodes(model), threads, opt, os.path.join(tmp, "prof"))
        for _ in range(2):
            _run(sess, feeds)
        for _ in range(runs):
            _run(sess, feeds)
        events = json.loads(Path(sess.end_profiling()).read_text(encoding="utf-8"))
    per: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    for ev in events:
        if ev.get("cat") != "Node" or not str(ev.get("name", "")).endswith("_kernel_time"):
            continue
        name = str(ev["name"])[: -len("_kernel_time")]
        per.setdefault(name, []).append(float(ev["dur"]) * 1000.0)
        kinds[name] = str(ev.get("args", {}).get("op_name", ""))
    # the first two runs are warm-up
    return {n: (kinds[n], low_quantile(v[2:] if len(v) > 2 else v)) for n, v in per.items()}


def nchwc_block() -> int:
    """Channels per block of onnxruntime's NCHWc layout on this host's CPU (MLAS): 16 with
    AVX-512, 8 with AVX2, 0 (no NCHWc transform) otherwise or when the flags are unknown."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return 0
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return 16 if "avx512f" in flags else 8 if "avx2" in flags else 0


def named_nodes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose nodes have unique names, by the rule of
    :mod:`graph_ir.onnx_import` (``<op_type>_<index>`` if unnamed, ``_k`` for duplicates), so
    that profiled names and hwsim's op names agree."""
    from graph_ir.onnx_import import name_nodes

    m = onnx.ModelProto()
    m.CopyFrom(model)
    name_nodes(m.graph)
    return m


#: Suffixes onnxruntime appends to the tensor or node a fused node is named after.
_SUFFIXES = ("_nchwc",)
#: Prefixes onnxruntime puts before the name of the node a fused node replaces (and an inserted
#: Cast's, :data:`hwsim.host.ort_fp16.CAST_PREFIX`, before the tensors around it: an NCHWc node
#: made after it is named after one).
_PREFIXES = ("fused ", CAST_PREFIX)
#: The suffix onnxruntime's NHWC transformer appends to a node it rewrites (``QLinearConv``).
_TOKEN = re.compile(r"_token_\d+$")


#: The suffix of a ``BatchNormalization`` onnxruntime's NCHWc transformer runs as a depthwise 1x1
#: ``Conv`` (its input blocked, no conv before it to fold into): ``<BN output>_bn_nchwc``.
BN_NCHWC_SUFFIX = "_bn_nchwc"

#: onnxruntime's contrib ops (in a model it saved optimized) by the kernel kind their NCHWc form
#: reports: a ``FusedConv`` runs as a blocked ``Conv``.
_CONTRIB_KINDS = {"FusedConv": "Conv", "FusedGemm": "Gemm", "FusedMatMul": "MatMul"}


def _runs_as(op_type: str, kind: str) -> bool:
    """Whether a node of ``op_type`` can be the one a kernel of ``kind`` ran for."""
    return op_type == kind or _CONTRIB_KINDS.get(op_type) == kind


def attribute_nodes(model: onnx.ModelProto, profiled: Mapping[str, str]) -> dict[str, str | None]:
    """Map profiled nodes of an optimized session (``{name: op type it ran as}``) back to the
    model's own nodes.

    A profiled node maps to the original node of the same name; else, for NCHWc convolutions
    (named after the tensor their fused group produces, ``<tensor>_nchwc``), to that tensor's
    producer; else, for names like ``<node>/MatMulAddFusion``, to the longest ``/``-prefix that
    is a node name. When the node found is not of the op type that ran (a Conv named after the
    Relu fused into it), the search walks up first inputs, at most four nodes, to a node of
    that type. A ``BatchNormalization`` the NCHWc transformer runs as a ``Conv``
    (:data:`BN_NCHWC_SUFFIX`) maps to itself. Nodes onnxruntime inserted (layout reorders, reshapes around Gemm, fused Gelu or
    SkipLayerNormalization under new names) map to ``None``; a name the NHWC transformer gave
    (``<node>_token_<n>``) maps to ``<node>``.
    """
    m = named_nodes(model)
    by_name = {n.name: n for n in m.graph.node}
    producer = {t: n.name for n in m.graph.node for t in n.output}
    out: dict[str, str | None] = {}
    for p, kind in profiled.items():
        for pre in _PREFIXES:  # Gemm+activation fusion names the new node "fused <node>"
            if p.startswith(pre) and p not in by_name and (kind != "Cast" or pre != CAST_PREFIX):
                p_own = p[len(pre) :]
                break
        else:
            p_own = p
        # the NHWC transformer names a node it rewrites "<node>_token_<n>"
        p_own = _TOKEN.sub("", p_own) if p_own not in by_name else p_own
        hit: str | None = p_own if p_own in by_name else None
        bn = producer.get(p_own.removesuffix(BN_NCHWC_SUFFIX)) if p_own.endswith(BN_NCHWC_SUFFIX) else None
        if hit is None and bn is not None and by_name[bn].op_type == "BatchNormalization":
            out[p] = bn  # the BatchNormalization itself, not a conv up its inputs
            continue
        for suf in _SUFFIXES:
            if hit is None and p_own.endswith(suf) and p_own[: -len(suf)] in producer:
                hit = producer[p_own[: -len(suf)]]
        parts = p_own.split("/")
        for k in range(len(parts) - 1, 0, -1):
            if hit is not None:
                break
            prefix = "/".join(parts[:k])
            if prefix in by_name:
                hit = prefix
        node = hit
        for _ in range(4):
            if node is None or _runs_as(by_name[node].op_type, kind) or not by_name[node].input:
                break
            node = producer.get(by_name[node].input[0])
        if node is not None and _runs_as(by_name[node].op_type, kind):
            hit = node
        out[p] = hit
    return out
