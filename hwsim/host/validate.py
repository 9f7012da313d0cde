"""Predicted against measured: run a model with onnxruntime on this machine and compare with
hwsim's CPU prediction, per model, per node and per op type.

The prediction is hwsim's cost model for the chip's CPU unit, restricted to ``threads`` cores,
at the model's own precision, summed over the nodes the way onnxruntime's sequential executor
runs them. Which nodes onnxruntime fuses is read from the structure of its optimized graph
(profiled node names mapped back with :func:`~hwsim.host.measure.attribute_nodes`; no timing enters
the prediction); how each node is then costed is :func:`predict_nodes` (own kernels, conv/matmul
epilogues, the ``QuickGelu`` SiLU kernel, views). The NCHWc layout reorders onnxruntime inserts
are predicted from the graph (:func:`nchwc_reorders`); other inserted kernels are not, and their
measured time is reported separately. Measurements are low quantiles (see :mod:`hwsim.host.measure`).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import onnx

from chips.schema import Chip, CpuUnit, chip_from_dict
from cost_models.base import OpCost
from cost_models.cpu import (
    CODE_REFETCH_ATTR,
    CODE_REFETCH_OP_TYPES,
    COLD_DST_ATTR,
    COLD_SRC_ATTR,
    FAR_SRC_ATTR,
    NCHWC_ACTIVATION_ATTR,
    NCHWC_ATTR,
    NCHWC_PASS_ACTIVATIONS,
    PARALLEL_SECTION_NS,
    RESIZE_OP_TYPES,
    SCALED_ATTR,
    SGEMM_CONV_ATTR,
    calibrated_efficiency,
    calibration_basis_ns,
    cyclic_kept,
    gemm_bias_ns,
    gemm_rows,
    gemv_split_speedup,
    intra_op_threads,
    is_row_product,
    kernel_type,
    loop_cache_bytes,
    one_thread_pass_ns,
    parallel_sections,
    recurrent_sections,
    recurrent_time,
    resize_runs_blocked,
    sections_ns,
    step_handoff_ns,
)
from cost_models.cpu_layout import IN_PLACE_ATTR, SOFTMAX_OP_TYPES
from cost_models.fusion import folds_into
from cost_models.table import cost_table, steady_state_unit
from graph_ir.categories import GEMM_CATEGORIES
from graph_ir.gemm import conv_group
from graph_ir.ir import ModelGraph, Op, Tensor, constant_tensors
from hwsim.host.errors import MeasureError, ValidateError
from hwsim.host.fingerprint import Dispatch
from hwsim.host.int8_check import Int8Check
from hwsim.host.measure import (
    Timing,
    attribute_nodes,
    load_with_random_weights,
    make_session,
    named_nodes,
    nchwc_block,
    profile_nodes,
    random_inputs,
    time_session,
)
from hwsim.host.ort_arena import (
    arena_plan,
    code_reuse_bytes,
    cold_destination_bytes,
    cold_source_bytes,
    in_place,
)
from hwsim.host.ort_denormals import denormal_softmaxes
from hwsim.host.ort_fusions import (
    FUSED_KERNELS,
    NORM_KERNELS,
    Fusion,
    decomposed_norms,
    ort_fusions,
    tensor_consumers,
)
from hwsim.host.ort_qdq import (
    KERNEL_ALIASES,
    QDQ_KERNELS,
    nhwc_transposes,
    qdq_kernel,
    qdq_propagated,
)
from hwsim.host.second_core import MIN_SHARE, threads_along

__all__ = [
    "NodePrediction",
    "NodeResult",
    "OpTypeRow",
    "ValidateError",
    "Validation",
    "append_record",
    "cache_residency",
    "cpu_chip",
    "folded_batch_norms",
    "format_validation",
    "gemm_biases",
    "graph_as_run",
    "integer_conv_strips",
    "lag_note",
    "layout_kernels",
    "merge_rounds",
    "nchwc_block_efficiency",
    "nchwc_kernels",
    "nchwc_reorders",
    "nchwc_work",
    "op_type_rows",
    "own_biases",
    "predict_nodes",
    "quick_gelu",
    "record",
    "reordered_transposes",
    "repredict",
    "scaled_products",
    "sgemm_conv_kernels",
    "usual_speedup",
    "validate_model",
    "work_factors",
]


@dataclass(frozen=True, slots=True)
class NodeResult:
    """One node of the model: prediction and measurement in nanoseconds.

    ``fused`` nodes run inside another node's kernel; their ``measured_ns`` is 0 and their
    prediction has no overhead. ``roof_ns`` is the part of the node's estimate at efficiency 1
    and no overhead that a calibrated efficiency divides
    (:func:`cost_models.cpu.calibration_basis_ns`; what calibration compares with);
    ``memory_ns`` its memory roof at the physical bandwidth of the level its data sits in;
    ``stall_ns`` the part of the prediction no efficiency scales (a GEMM waiting on weights
    from DRAM, :func:`cost_models.cpu.weight_stream_ns`; a recurrent kernel's measured streams
    and fixed step costs, :class:`cost_models.cpu.RecurrentTime`; on several threads, the
    kernel's parallel sections).
    """

    name: str
    op_type: str
    fused: bool
    predicted_ns: float
    measured_ns: float
    roof_ns: float
    memory_ns: float = 0.0
    stall_ns: float = 0.0
    #: The op's category (``conv``, ``matmul``, ...) for a node that runs as its own kernel;
    #: "" for pattern and inserted kernels.
    category: str = ""
    #: How many of the run's intra-op threads the kernel runs on (:func:`cost_models.cpu.intra_op_threads`).
    threads_used: int = 1
    #: The split products of a recurrent kernel's steps (:func:`cost_models.cpu.recurrent_sections`) and
    #: what their pool hand-offs add to the prediction (inside ``stall_ns``), ns; 0 on one thread.
    step_sections: int = 0
    step_sections_ns: float = 0.0


@dataclass(frozen=True, slots=True)
class Validation:
    """One model on one chip: whole-model and per-node prediction against measurement.

    ``measured_ns`` is the model's uncontended time: the low quantile of the timed runs
    (:attr:`~hwsim.host.measure.Timing.low_ns`), and over several rounds (:func:`merge_rounds`) the
    smallest round's; ``rounds_ns`` keeps each round's figure (the round-to-round noise).
    """

    model: str
    chip: str
    threads: int
    opt: str
    measured: Timing
    nodes: tuple[NodeResult, ...]
    inserted_ns: float
    inserted_ops: tuple[str, ...]
    profiled_total_ns: float
    measured_ns: float
    rounds_ns: tuple[float, ...]
    nchwc_block: int = 0
    #: The host's speed when measured over its speed when fingerprinted (fp32 MatMul probe,
    #: :func:`hwsim.host.fingerprint.probe_gflops`); every time above is already multiplied by it,
    #: i.e. put back on the fingerprint's clock. 1.0: not normalized. One per round.
    speeds: tuple[float, ...] = (1.0,)
    #: onnxruntime's costs around the kernels on this host, from the chip file's fingerprint
    #: (:func:`hwsim.host.fingerprint.read_dispatch`); None for a chip without them.
    dispatch: Dispatch | None = None
    #: Per round with ``threads`` > 1: whether the other intra-op threads lagged before or after
    #: the timed runs (:mod:`hwsim.host.second_core`: the VM's other vCPU in a slow spell, each
    #: hand-off waiting); empty on one thread.
    second_core_lagged: tuple[bool, ...] = ()

    @property
    def lagged(self) -> bool:
        """Whether every round was measured while the other threads lagged (:func:`merge_rounds`
        keeps the rounds that did not where there are any): a measurement of a slower host
        than the one predicted."""
        return bool(self.second_core_lagged) and all(self.second_core_lagged)

    @property
    def run_ns(self) -> float:
        """The fixed cost of one ``run`` call (0 without :attr:`dispatch`), predicted on top of the kernels."""
        return self.dispatch.run_ns if self.dispatch else 0.0

    @property
    def predicted_ns(self) -> float:
        """The kernels' predictions plus the fixed cost of a run."""
        return sum(n.predicted_ns for n in self.nodes) + self.run_ns

    @property
    def error(self) -> float:
        """Signed relative error of the whole-model prediction (+0.10: 10 % too slow)."""
        return self.predicted_ns / self.measured_ns - 1.0

    @property
    def round_range(self) -> float:
        """Half the range of the per-round figures over ``measured_ns`` (0 for one round)."""
        return (max(self.rounds_ns) - min(self.rounds_ns)) / 2 / self.measured_ns


@dataclass(frozen=True, slots=True)
class OpTypeRow:
    """Per op type: how many kernels, summed prediction and measurement (ns), median node error."""

    op_type: str
    nodes: int
    predicted_ns: float
    measured_ns: float
    median_abs_error: float


def cpu_chip(chip: Chip, threads: int, unit: str | None = None) -> Chip:
    """``chip`` reduced to one CPU unit with ``threads`` cores (the first CPU unless ``unit``)."""
    cpus = [u for u in chip.units if isinstance(u, CpuUnit) and (unit is None or u.name == unit)]
    if not cpus:
        want = f"a CPU unit named {unit!r}" if unit else "a CPU unit"
        raise ValidateError(f"chip {chip.name!r} has no {want} (units: {', '.join(u.name for u in chip.units)})")
    cpu = cpus[0]
    if threads < 1:
        raise ValidateError(f"--threads {threads}: must be at least 1")
    data = chip.model_dump()
    u = next(x for x in data["units"] if x["name"] == cpu.name)
    u["cores"] = threads
    data["units"] = [u]
    data["domains"] = [d for d in data["domains"] if d["name"] == cpu.domain]
    data["host_domain"] = cpu.domain
    data["links"] = []
    data["affinity"] = {}
    data["default_affinity"] = [cpu.name]
    return chip_from_dict(data, source=f"{chip.name} (CPU {cpu.name}, {threads} threads)")


def usual_speedup(chip: Chip, threads: int) -> float | None:
    """The lag check's speed-up as ``chip``'s first CPU was fingerprinted, where that was on
    ``threads`` threads (``thread_check_speedup``, :func:`hwsim.host.second_core.threads_along`);
    None otherwise: the thread count holds.

    >>> from chips.schema import chip_from_dict
    >>> unit = {"name": "cpu", "kind": "cpu", "domain": "d", "clock_mhz": 2000, "cores": 2,
    ...         "flops_per_cycle": {"fp32": 32}, "thread_check_speedup": 1.7}
    >>> chip = chip_from_dict({"name": "h", "dram": {"bandwidth_gbps": 20, "latency_ns": 90},
    ...                        "domains": [{"name": "d", "kind": "dram"}], "host_domain": "d", "units": [unit]})
    >>> usual_speedup(chip, 2), usual_speedup(chip, 4)
    (1.7, None)
    """
    cpu = next((u for u in chip.units if isinstance(u, CpuUnit)), None)
    return cpu.thread_check_speedup if cpu is not None and cpu.cores == threads else None


def _roofline_chip(chip: Chip, op_types: Iterable[str]) -> Chip:
    """The CPU chip with efficiency 1 for every op type and no per-op overhead."""
    data = chip.model_dump()
    u = data["units"][0]
    u["efficiency"] = {t: 1.0 for t in op_types}
    u["op_overhead_ns"] = 0.0
    return chip_from_dict(data, source=f"{chip.name} (roofline)")


def _speedup(op: Op, chip: Chip, threads: int) -> float:
    """How much faster ``op``'s kernel runs on onnxruntime's ``threads`` intra-op threads: the
    threads it uses (:func:`~cost_models.cpu.intra_op_threads`); for a recurrent op on a unit
    with ``gemv_gbps`` the ratio of its calibrated :func:`~cost_models.cpu.recurrent_time` on one
    thread and on those (each thread streams its share of ``R`` from its own core's caches), and for a
    matrix-vector product :func:`~cost_models.cpu.gemv_split_speedup` (the same for its share of
    the model's weights; a GEMV is memory-bound, so the ratio of its streams is its speed-up)."""
    used = intra_op_threads(op, threads)
    unit = chip.units[0]
    if used > 1 and op.category == "matmul" and isinstance(unit, CpuUnit):
        return gemv_split_speedup(op, unit, used)
    if used <= 1 or op.category != "rnn" or not isinstance(unit, CpuUnit) or unit.gemv_gbps is None:
        return float(used)
    w_b, e = op.weight_bytes(None), calibrated_efficiency(op, unit) or 1.0
    one, split = (recurrent_time(op, unit, chip, "fp32", w_b, t).calibrated_ns(e) for t in (1, threads))
    return one / split


def _sections_ns(op: Op, chip: Chip, threads: int) -> float:
    """The parallel sections' cost of ``op``'s kernel on ``threads`` threads (no efficiency scales
    it; :func:`~cost_models.cpu.sections_ns`)."""
    unit, used = chip.units[0], intra_op_threads(op, threads)
    if isinstance(unit, CpuUnit):
        return sections_ns(op, unit, used)
    return parallel_sections(op, used) * PARALLEL_SECTION_NS


def _threading(op: Op, chip: Chip, threads: int) -> tuple[int, int, float]:
    """(threads the kernel runs on, split step products, what their hand-offs cost in ns) of ``op``
    on ``threads`` threads (:func:`~cost_models.cpu.recurrent_sections`,
    :func:`~cost_models.cpu.step_handoff_ns`)."""
    unit, used = chip.units[0], intra_op_threads(op, threads)
    if used <= 1 or op.category != "rnn" or len(op.inputs) < 3 or not isinstance(unit, CpuUnit):
        return used, 0, 0.0
    steps = recurrent_sections(op, used)[1]
    return used, steps, steps * step_handoff_ns(op, unit)


def _time(op: Op, c: OpCost, chip: Chip, threads: int, with_overhead: bool) -> float:
    """The kernel's time on onnxruntime's ``threads`` intra-op threads: its roofline over the
    thread speed-up (:func:`_speedup`), but for the pass it runs on one thread
    (:func:`~cost_models.cpu.one_thread_pass_ns`), plus its parallel sections."""
    speedup, unit = _speedup(op, chip, threads), chip.units[0]
    alone = one_thread_pass_ns(op, unit, c.dtype) if speedup > 1 and isinstance(unit, CpuUnit) else 0.0
    roof = max(c.compute_ns - alone, c.memory_ns) / speedup + alone + _sections_ns(op, chip, threads)
    return roof + (c.overhead_ns if with_overhead else 0.0)


def _basis(op: Op, r: OpCost, chip: Chip, threads: int) -> float:
    return calibration_basis_ns(op, r) / _speedup(op, chip, threads)


@dataclass(frozen=True, slots=True)
class NodePrediction:
    """What one node is predicted to cost: the op type of the kernel it runs as (its own, or
    a pattern kernel such as ``QuickGelu``), the predicted time and the calibration basis
    (see :class:`NodeResult`), in ns."""

    op_type: str
    predicted_ns: float
    roof_ns: float
    memory_ns: float = 0.0
    stall_ns: float = 0.0
    #: The op's category (``conv``, ``matmul``, ...) for a node that runs as its own kernel;
    #: "" for pattern and inserted kernels.
    category: str = ""
    #: As in :class:`NodeResult`.
    threads_used: int = 1
    step_sections: int = 0
    step_sections_ns: float = 0.0


def quick_gelu(graph: ModelGraph, name: str) -> tuple[Op, str] | None:
    """``name`` as onnxruntime's QuickGelu kernel if it is ``Mul(x, Sigmoid(x))`` (SiLU).

    Returns the kernel as one op (reads ``x`` once, writes the product; the work of both
    nodes) and the name of the Sigmoid it absorbs, or None when the pattern does not match.
    """
    return _gated(graph, name, "Sigmoid", "QuickGelu")


def _gated(graph: ModelGraph, name: str, gate: str, kind: str) -> tuple[Op, str] | None:
    """``name`` as one ``kind`` op if it is ``Mul(x, gate(x))``: the op (reads ``x`` once, writes
    the product, the work of both nodes) and the gate node's name; None when it is not. A
    ``HardSigmoid`` gate must hold HardSwish's constants (alpha 1/6, beta 0.5)."""
    op = graph.op(name)
    if op.op_type != "Mul" or len(op.inputs) != 2:
        return None
    for i, t in enumerate(op.inputs):
        p = graph.producer.get(t.name)
        if p is None or graph.op(p).op_type != gate or not _gate_constants(graph.op(p)):
            continue
        x = graph.op(p).inputs[0]
        if op.inputs[1 - i].name == x.name:
            return Op(op.name, kind, "activation", (x,), op.outputs, {}, 0, graph.op(p).flops + op.flops), p
    return None


def _gate_constants(gate: Op) -> bool:
    if gate.op_type != "HardSigmoid":
        return True
    alpha, beta = gate.attrs.get("alpha", 0.2), gate.attrs.get("beta", 0.5)
    return isinstance(alpha, float) and isinstance(beta, float) and abs(alpha - 1 / 6) < 1e-4 and abs(beta - 0.5) < 1e-6


def hard_swishes(graph: ModelGraph, fused: set[str]) -> dict[str, tuple[Op, str]]:
    """The fused ``Mul(x, HardSigmoid(x))`` pairs with HardSwish's constants: Mul -> the pair as
    one ``HardSwish`` op and its HardSigmoid. onnxruntime's level-``all`` optimizer folds such a
    pair after a conv into the conv as ``Conv(activation=HardSwish)`` (a MobileNetV3 saved at
    level ``extended``, or exported before opset 14, holds the pair); a pair left standing runs
    as two kernels and is not one of these."""
    out: dict[str, tuple[Op, str]] = {}
    for name in fused:
        hit = _gated(graph, name, "HardSigmoid", "HardSwish")
        if hit is not None and hit[1] in fused:
            out[name] = hit
    return out


#: Op types onnxruntime's NCHWc transformer runs on blocked tensors when their input is blocked
#: (Resize and Upsample only in some modes: :func:`cost_models.cpu.resize_runs_blocked`).
_NCHWC_UNARY = frozenset(("Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "BatchNormalization",
                          "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", *RESIZE_OP_TYPES))  # fmt: skip
_NCHWC_BINARY = frozenset(("Add", "Sum", "Mul"))
#: Activations onnxruntime fuses into a conv that MLAS's NCHWc kernels apply in a pass over the
#: output after the kernel (``MlasActivation``); Relu it applies in the kernel's stores. HardSwish
#: (``Conv(activation=HardSwish)``, :data:`_NCHWC_CONV_FUSED`) too: MobileNetV3's convs with one,
#: stem and 1x1 expansions, took 0.11-0.23 ns per output more than their FMAs in onnxruntime's
#: profile (``docs/fidelity_cpu.md``), the pass's rate: :data:`~cost_models.cpu.NCHWC_PASS_ACTIVATIONS`.
#: Activations onnxruntime fuses into the conv before it (``ConvActivationFusion``) that the NCHWc
#: transformer does not take alone: blocked only as their conv's one reader (MobileNetV3's HardSwish:
#: ``Conv(activation=HardSwish)`` in onnxruntime 1.32's optimized model, no reorder around it).
_NCHWC_CONV_FUSED = frozenset(("HardSwish",))
#: Channel alignment of the input a conv needs to run blocked when it holds at least a block (a
#: depthwise conv: always); onnxruntime pads the channels up to a block. A dense conv's output
#: channels need none: onnxruntime 1.32's optimized models pad 1, 6, 9 and 33 filters to 16 and 48,
#: and a 3x3 conv of 32 channels to 1-16 outputs takes the same 1.30-1.32 ms at 128x128 (AMD EPYC,
#: 1 thread; 17-32 outputs 2.62 ms). 17, 18, 30 or 33 input channels leave it a plain Conv; 1-15
#: run blocked from the plain tensor, reordered out of the blocked layout first where it was in it.
_NCHWC_ALIGN = 4


def nchwc_reorders(graph: ModelGraph, block: int) -> list[Op]:
    """The layout reorders onnxruntime's NCHWc transformer inserts, predicted from the graph.

    A Conv runs blocked (NCHWc, ``block`` channels per block, padded up to whole blocks) when
    its output channels are a multiple of 4 and it is dense, or depthwise over a multiple of 4
    channels; a dense one whose input channels are not a multiple of 4 reads the plain tensor
    directly (the first conv of a CNN).
    Pools, activations, Resize, same-shape Add/Mul/Sum and channel Concats of whole blocks
    stay blocked when their inputs are. A plain tensor entering a blocked conv costs one
    ``ReorderInput``; a blocked tensor read by any other op, or leaving the graph, one
    ``ReorderOutput`` (once per tensor). Each reorder is an op of category ``data`` (a copy of
    the tensor) named ``<ReorderInput|ReorderOutput>:<tensor>``. ``block`` 0: none.
    On the bundled CNNs this finds the reorders onnxruntime's profile shows (yolov8n: 39 of 41).
    """
    return _nchwc_plan(graph, block)[0]


def nchwc_work(graph: ModelGraph, block: int, one_block: float | None = None, two_block: float | None = None) -> dict[str, float]:
    """Time factor of each op that runs in onnxruntime's NCHWc layout slower than its real work
    says (ops at factor 1 are left out): padded channels, and few output blocks.

    - **Padding**: a blocked dense conv computes ``ceil(Cout / block)`` blocks of output channels
      from ``ceil(Cin / block)`` blocks of input channels when ``Cin >= block`` (a narrower input
      is read unpadded, NCHW); a depthwise one, and a pool, activation, Resize or same-shape
      binary op on a blocked tensor, its padded channels. (A dense conv of one group is priced as
      that padded conv, :func:`_padded_conv`; its factor is only the next point's.) Measured with onnxruntime 1.32
      (AVX-512, 16-channel blocks), a 3x3 conv at 96x96: 24 -> 24 channels 1141 us, 32 -> 32
      1149 us, 16 -> 24 669 us, 16 -> 32 668 us, while 8 -> 16 (298 us) and 12 -> 16 (385 us)
      scale with their input channels.
    - **Output blocks** (dense convs): MLAS's NCHWc kernels compute up to four output blocks
      per input load (each broadcast input feeds ``F`` filter blocks: ``F + 1`` loads per ``F``
      FMAs), so with two loads a cycle a conv with fewer than three output blocks is
      load-bound: :func:`nchwc_block_efficiency` (``one_block`` and ``two_block``: the host's
      measured rates of one and two blocks, ``nchwc_one_block_efficiency`` and
      ``nchwc_two_block_efficiency``).
    """
    return _nchwc_plan(graph, block, one_block, two_block)[1]


#: Output pixels MLAS's uint8 GEMM computes at a time in a ``ConvInteger`` (its ``N``: a conv's
#: output pixels, one image and group at a time; :func:`integer_conv_strips`).
INTEGER_CONV_STRIP = 16


def integer_conv_strips(graph: ModelGraph) -> dict[str, float]:
    """Time factor of each ``ConvInteger`` with uint8 weights (kernel class ``ConvInteger``,
    :func:`~cost_models.cpu.kernel_type`) whose output pixels per image are not a whole number of
    :data:`INTEGER_CONV_STRIP` s: onnxruntime runs it as im2col and MLAS's uint8 GEMM over the
    pixels, which computes them a strip at a time, a part strip at the price of a whole one. Alone,
    onnxruntime 1.32, AMD EPYC (AVX-512), 256 -> 256 channels 3x3: 545 us at 7 x 7 (49 pixels),
    541 at 8 x 8, 793 at 9 x 9 (81: six strips), 907 at 10 x 10; the 64 -> 64 probe at 40 x 40 and
    28 x 28, 14.0 and 14.9 ps a MAC. int8 weights (``ConvIntegerS8``) run another kernel, linear
    in pixels (60.1 and 59.4 ps a MAC at 7 x 7 and 8 x 8). Factors of 1 are left out.

    >>> from graph_ir.synthetic import layered_dag
    >>> integer_conv_strips(layered_dag(16))  # float convs only
    {}
    """
    out: dict[str, float] = {}
    for op in graph.ops():
        if kernel_type(op) != "ConvInteger" or not op.outputs or len(op.outputs[0].shape) < 3:
            continue
        pixels = math.prod(op.outputs[0].shape[2:])
        strips = -(-pixels // INTEGER_CONV_STRIP) * INTEGER_CONV_STRIP
        if pixels and strips != pixels:
            out[op.name] = strips / pixels
    return out


def work_factors(graph: ModelGraph, block: int, one_block: float | None = None, two_block: float | None = None) -> dict[str, float]:
    """The time factors :func:`predict_nodes` applies (its ``padded``): :func:`nchwc_work`'s and
    :func:`integer_conv_strips`' (no op has both: a ``ConvInteger`` never runs blocked)."""
    return {**nchwc_work(graph, block, one_block, two_block), **integer_conv_strips(graph)}


def nchwc_kernels(graph: ModelGraph, block: int, fused: Iterable[str] = ()) -> dict[str, Op]:
    """The nodes that run on a blocked tensor as a kernel of another class than their own, as
    that kernel, marked with :data:`~cost_models.cpu.NCHWC_ATTR`: a Resize/Upsample the NCHWc
    transformer keeps blocked (so :func:`~cost_models.cpu.kernel_type` gives its blocked class,
    :func:`~cost_models.cpu.resize_kernel`), and a depthwise conv on the NCHWc depthwise kernel
    (priced per tap, :func:`~cost_models.cpu.depthwise_nchwc_ns`). A blocked conv, depthwise or
    dense, whose output's one reader is an activation in ``fused`` (it ran inside the conv's
    kernel) that MLAS applies in a pass of its own (any but Relu) carries
    :data:`~cost_models.cpu.NCHWC_ACTIVATION_ATTR`. A dense blocked conv is listed too: its
    kernel skips the taps on the padding (:func:`~cost_models.cpu.valid_tap_share`). ``block`` 0:
    none.

    MobileNetV2's expansion convs (1x1, 16-64 channels to six times as many, then ReLU6 as a
    ``Clip``) ran 14-46 % slower than priced on the Intel Xeon of 2026-12-03, by about 0.15 ns per
    output element, while its projection convs (no activation) were within 7 %: the pass the
    depthwise convs already paid (:data:`~cost_models.cpu.NCHWC_ACTIVATION_PASS_NS`).

    A ``BatchNormalization`` on a blocked tensor that ran as its own kernel (not in ``fused``:
    no conv before it to fold into) is the depthwise 1x1 conv the NCHWc transformer makes of it
    (:func:`_bn_as_depthwise`)."""
    _, _, blocked, dense = _nchwc_plan(graph, block)
    blocked_or_dense = blocked | dense
    fused = set(fused)
    readers = tensor_consumers(graph)
    out: dict[str, Op] = {}
    for op in graph.ops():
        if op.op_type == "BatchNormalization" and op.name in blocked and op.name not in fused:
            out[op.name] = _bn_as_depthwise(op, block)
            continue
        if op.name not in blocked_or_dense or not (op.op_type in RESIZE_OP_TYPES or op.op_type == "Conv"):
            continue
        attrs: dict[str, object] = {**op.attrs, NCHWC_ATTR: block}
        if op.op_type == "Conv" and len(after := readers.get(op.outputs[0].name, [])) == 1:
            act = after[0]
            if act.name in fused and act.op_type in NCHWC_PASS_ACTIVATIONS:
                attrs[NCHWC_ACTIVATION_ATTR] = act.op_type
        padded = op.name in dense and _pads_in_kernel(op)
        out[op.name] = _padded_conv(replace(op, attrs=attrs), block) if padded else replace(op, attrs=attrs)
    return out


def _pads_in_kernel(op: Op) -> bool:
    """Whether a dense blocked conv is priced as the padded conv it runs (:func:`_padded_conv`), so
    that :func:`nchwc_work` leaves its padding out of its factor: a conv of one group."""
    return conv_group(op) == 1


def _padded_conv(op: Op, block: int) -> Op:
    """A dense blocked conv of one group as MLAS's NCHWc kernel runs it: its output channels, and
    its input channels where it reads a blocked tensor (``block`` or more of them), padded up to
    whole blocks, its MACs with them (:func:`nchwc_work` gives the time factor that is left).

    Pricing the padded work, not the real work times the padding, keeps a small kernel's set-up
    (``shape_factor``) out of the product: a U-Net's last conv, 16 -> 1 channel 1x1 over 64 x 64
    (one 16-channel block of output), ran 11.2 us on an AMD EPYC (Zen 5); its real work times 16
    and the one-block rate priced 24.7, the padded work at that rate 13.0.

    >>> x, w, y = Tensor("x", (1, 16, 8, 8), "f"), Tensor("w", (1, 16, 1, 1), "f", True), Tensor("y", (1, 1, 8, 8), "f")
    >>> k = _padded_conv(Op("c", "Conv", "conv", (x, w), (y,), {}, 1024, 2048), 16)
    >>> k.weights[0].shape, k.outputs[0].shape, k.macs
    ((16, 16, 1, 1), (1, 16, 8, 8), 16384)
    """
    x, y = op.activations[0], op.outputs[0]
    cout, cin = y.shape[1], x.shape[1]
    out_p = -(-cout // block) * block
    in_p = -(-cin // block) * block if cin >= block else cin
    if (out_p, in_p) == (cout, cin):
        return op

    def widened(t: Tensor) -> Tensor:
        if t is x:
            return replace(t, shape=(t.shape[0], in_p, *t.shape[2:]))
        if t.is_weight and len(t.shape) == 4:
            return replace(t, shape=(out_p, in_p, *t.shape[2:]))
        return replace(t, shape=(out_p,)) if t.is_weight and t.shape == (cout,) else t

    factor = out_p * in_p / (cout * cin)
    outputs = (replace(y, shape=(y.shape[0], out_p, *y.shape[2:])), *op.outputs[1:])
    return replace(op, inputs=tuple(widened(t) for t in op.inputs), outputs=outputs,
                   macs=round(op.macs * factor), flops=round(op.flops * factor))  # fmt: skip


def _bn_as_depthwise(op: Op, block: int) -> Op:
    """The depthwise 1x1 NCHWc conv onnxruntime's NCHWc transformer runs a ``BatchNormalization``
    as (its scale the weights, its shift the bias), under the node's name. Pre-activation
    ResNet-50 v2's 17 first BatchNormalizations of a unit ran so on the Xeon of 2026-12-03, as
    ``<output>_bn_nchwc`` kernels of 33-390 us: 0.24-0.49 ns per element, slower beyond the L2."""
    x = op.activations[0]
    channels = x.shape[1]
    w = Tensor(f"{op.name}:scale", (channels, 1, 1, 1), x.dtype, is_weight=True)
    elements = op.outputs[0].elements
    return Op(op.name, "Conv", "conv", (x, w), op.outputs[:1], {"group": channels, "kernel_shape": [1, 1], NCHWC_ATTR: block},
              elements, 2 * elements)  # fmt: skip


def sgemm_conv_kernels(graph: ModelGraph) -> dict[str, Op]:
    """The convs onnxruntime runs on its plain kernel (im2col, then an MLAS SGEMM that packs the
    expanded input on every run) whatever the optimization level, marked with
    :data:`~cost_models.cpu.SGEMM_CONV_ATTR` (:func:`~cost_models.cpu.sgemm_conv_ns`): the 1-D
    and 3-D ones (the NCHWc transformer takes 2-D convs only; MLAS expands a 3-D conv's input by
    vol2col). Measured (CI Xeon, loaded, 1 thread): 1-D convs 64 -> 64 channels over 4000 steps ran
    at ~125 GFLOP/s where 2-D NCHWc convs reach 0.97 of the 181 GFLOP/s peak; on an AMD EPYC the
    3x3x3 convs of a video CNN ran 19-27 % over their FMAs at the NCHWc rate, which that packing
    of the expanded input accounts for (``benchmarks/heldout_unseen8.py``)."""
    plain = {op.name: replace(op, attrs={**op.attrs, SGEMM_CONV_ATTR: 1}) for op in graph.ops()
             if op.op_type == "Conv" and op.weights and len(op.weights[0].shape) in (3, 5)}  # fmt: skip
    return {**plain, **{op.name: _run_time_filter_conv(op) for op in _run_time_filters(graph)}}


def _run_time_filters(graph: ModelGraph) -> list[Op]:
    """The float convs of ``graph`` whose filter (the second input) is computed at run time, not
    from weights alone (StyleGAN2's modulated convs: the style times the weight; a QDQ model's
    dequantized filter is constant), or whose data (the first input) is a weight (StyleGAN2's
    learned 4x4 input). onnxruntime's NCHWc transformer takes a conv only with a constant filter;
    these run its plain kernel."""
    const = constant_tensors(graph)
    return [op for op in graph.ops() if op.op_type == "Conv" and len(op.inputs) >= 2
            and (op.inputs[0].is_weight or op.inputs[1].name not in const)]  # fmt: skip


def _run_time_filter_conv(op: Op) -> Op:
    """Conv ``op`` (:func:`_run_time_filters`) as onnxruntime's plain kernel runs it, marked with
    :data:`~cost_models.cpu.SGEMM_CONV_ATTR`: its data an activation and its filter the GEMM's
    weight, by position, whichever of them is the constant (the cost model reads a conv's filter
    from its weights). Measured (AMD EPYC, 1 thread): StyleGAN2's modulated 3x3 convs, 32-128
    channels at 32-128 pixels square, ran 1.15-1.5x their price at the NCHWc rate."""
    x, w, *rest = op.inputs
    inputs = (replace(x, is_weight=False), replace(w, is_weight=True), *rest)
    return replace(op, inputs=inputs, attrs={**op.attrs, SGEMM_CONV_ATTR: 1})


def _grouped_blocked(op: Op, block: int) -> bool:
    """Whether onnxruntime's NCHWc transformer runs grouped conv ``op`` blocked: more than one
    group, not depthwise, and whole blocks of input and output channels per group (onnxruntime
    1.32's optimized model: 128 channels in 8 groups, 96 in 6 blocked; 128 in 32 a plain Conv)."""
    group = conv_group(op)
    if block <= 0 or group == 1 or not op.weights or len(op.weights[0].shape) != 4:
        return False
    cout, cin_g = op.weights[0].shape[:2]
    return cin_g % block == 0 and (cout // group) % block == 0 and cout % group == 0


def _depthwise_blocked(op: Op, block: int) -> bool:
    """Whether onnxruntime's NCHWc transformer runs 2-D conv ``op`` as its blocked depthwise kernel:
    one input and one output channel per group, the channels a multiple of 4 (:data:`_NCHWC_ALIGN`)."""
    if block <= 0 or not op.weights or len(op.weights[0].shape) != 4 or not op.activations:
        return False
    group, cin = op.attrs.get("group", 1), op.activations[0].shape[1]
    return isinstance(group, int) and group == cin == op.weights[0].shape[0] and op.weights[0].shape[1] == 1 and cin % _NCHWC_ALIGN == 0


def grouped_conv_kernels(graph: ModelGraph, block: int) -> dict[str, Op]:
    """The grouped 2-D convs onnxruntime runs on its plain kernel, one im2col + SGEMM per group
    (:func:`~cost_models.cpu.grouped_conv_ns`; a depthwise one: :func:`~cost_models.cpu.depthwise_plain_ns`),
    marked with :data:`~cost_models.cpu.SGEMM_CONV_ATTR`: those the NCHWc transformer does not
    take (:func:`_grouped_blocked`, :func:`_depthwise_blocked`; all of them with ``block`` 0).
    Measured (CI Xeon, loaded, 1 thread): ResNeXt's 3x3 convs of 32 groups of 4-8 channels took
    330-460 us where the dense rate says 52; (AMD EPYC) a 3x3 depthwise conv of 18 channels at
    112 x 112 took 319 us where the NCHWc depthwise rate says 44."""
    run_time = {op.name for op in _run_time_filters(graph)}
    return {op.name: replace(op, attrs={**op.attrs, SGEMM_CONV_ATTR: 1}) for op in graph.ops()
            if op.op_type == "Conv" and op.weights and len(op.weights[0].shape) == 4 and conv_group(op) > 1
            and op.name not in run_time and not _grouped_blocked(op, block) and not _depthwise_blocked(op, block)}  # fmt: skip


def layout_kernels(graph: ModelGraph, block: int, fused: Iterable[str] = ()) -> dict[str, Op]:
    """The nodes of ``graph`` costed as the kernel onnxruntime's layout runs them as: a QDQ
    group's (:func:`~hwsim.host.ort_qdq.qdq_propagated`), the NCHWc ones (:func:`nchwc_kernels`)
    and the plain convs (:func:`sgemm_conv_kernels`)."""
    return {**qdq_propagated(graph), **nchwc_kernels(graph, block, fused), **sgemm_conv_kernels(graph),
            **grouped_conv_kernels(graph, block)}  # fmt: skip


#: Op types whose destination's warmth is priced (:func:`cache_residency`): a copy's time is its
#: writes; a compute kernel's writes hide under its work. A ScatterND copies its data input whole
#: before it writes its updates (a static key/value cache's: 2-3 MiB from beyond L2 ran 220 us on
#: the CI Xeon, the in and out bytes at the L3's 40 GB/s priced 157, with the read for ownership 236).
COLD_DST_OP_TYPES = frozenset(("Concat", "ScatterND"))
#: Categories of the streaming kernels whose inputs' place is priced (:func:`cache_residency`): their
#: time is their reads, from L2 where the producer left them or from beyond (a conv's or a GEMM's
#: reads hide under its FMAs).
COLD_SRC_CATEGORIES = frozenset(("elementwise", "activation", "pool"))


def cache_residency(
    graph: ModelGraph, unit: CpuUnit, fused: Iterable[str] = (), inserted: Sequence[Op] = ()
) -> dict[str, dict[str, int]]:
    """Where the kernels of ``graph`` find their memory, from onnxruntime's arena plan
    (:mod:`hwsim.host.ort_arena`): per kernel, the attributes to cost it with.

    - a Concat that writes memory no longer in the core's L2: :data:`~cost_models.cpu.COLD_DST_ATTR`,
      the bytes of its output whose region more than ``l2_kib`` of distinct bytes were touched
      since (the run call's ``run_footprint_kib`` between runs);
    - every kernel of :data:`COLD_SRC_CATEGORIES`: :data:`~cost_models.cpu.COLD_SRC_ATTR`, the bytes
      of its inputs last touched more than ``l2_kib`` ago when it starts, 0 where all are in L2
      (:func:`~hwsim.host.ort_arena.cold_source_bytes`: a producer's output spread over the bytes it
      streamed while writing it).
    - a Softmax that writes over its input (:func:`~hwsim.host.ort_arena.in_place`):
      :data:`~cost_models.cpu_layout.IN_PLACE_ATTR` (:func:`~cost_models.cpu_layout.softmax_tails_ns`);
    - every kernel of :data:`~cost_models.cpu.CODE_REFETCH_OP_TYPES` among them:
      :data:`~cost_models.cpu.CODE_REFETCH_ATTR`, the bytes the run streams between two calls of its
      code (:func:`~hwsim.host.ort_arena.code_reuse_bytes`).

    ``fused``: the nodes that run inside another kernel; ``inserted``: the fusions' kernels
    (:func:`~hwsim.host.ort_fusions.ort_fusions`), marked like the nodes under their own names.

    Measured (profiled channel Concats, loaded 2-core Xeon, L2 kept 1.9 MiB): the rule calls warm
    unet_r64c16's (45-51 GB/s of input and output bytes inside the model) and squeezenet11's
    within L2 (43-58), cold yolov8n's and most of yolov5n's within L2 (13-30 GB/s;
    ``docs/fidelity_cpu.md``, "Where a Concat writes"). NCHWc GlobalAveragePools read ~60 GB/s
    after a conv with little weight, 3x slower after one that streamed 4-6.5 MB of weights
    (``docs/fidelity_cpu.md``, "Where a kernel's inputs sit").
    """
    wanted = [op for op in (*graph.ops(), *inserted)
              if op.op_type in COLD_DST_OP_TYPES or op.op_type in SOFTMAX_OP_TYPES or _float_stream(op)]  # fmt: skip
    if not wanted:
        return {}
    plan = arena_plan(graph, fused, inserted)
    l2, run = unit.l2_kib * 1024, (unit.run_footprint_kib or 0.0) * 1024
    kernels = {k.name: k for k in plan.kernels}
    evicted = evicted_input_share(graph, unit)
    feeds = {t.name for t in graph.inputs}
    out: dict[str, dict[str, int]] = {}
    for op in wanted:
        if op.name not in kernels:
            continue
        marks: dict[str, int] = {IN_PLACE_ATTR: 1} if op.op_type in SOFTMAX_OP_TYPES and in_place(plan, kernels[op.name]) else {}
        if evicted and (far := round(evicted * sum({t.name: t.nbytes for t in op.inputs if t.name in feeds}.values()))):
            marks[FAR_SRC_ATTR] = far
        streaming = _float_stream(op)
        if (op.op_type in COLD_DST_OP_TYPES or streaming) and (
                cold := cold_destination_bytes(plan, op.name, l2, run, ramp=streaming)):
            marks[COLD_DST_ATTR] = cold
        if streaming:
            marks[COLD_SRC_ATTR] = cold_source_bytes(plan, op.name, l2, run)
        if streaming and op.op_type in CODE_REFETCH_OP_TYPES:
            marks[CODE_REFETCH_ATTR] = round(code_reuse_bytes(plan, op.name, run))
        if marks:
            out[op.name] = marks
    return out


def evicted_input_share(graph: ModelGraph, unit: CpuUnit) -> float:
    """The share of ``graph``'s inputs a loop of runs on ``unit`` no longer finds in its last-level
    cache: 0 where the weights and the run's other bytes fit it together
    (:func:`~cost_models.table.steady_state_unit`); else the part of the run's cyclic pass over them
    (``resident_weight_bytes``) that :func:`~cost_models.cpu.cyclic_kept` says it does not keep. An
    input was last touched a run ago. A static key/value cache of 18 MB fed to a decoding step
    with 20 MB of weights (AMD EPYC, 25 MiB of L3 the sweep keeps): its ScatterNDs copied the
    3 MB caches in 130-160 us, priced 63 from the L3."""
    loop = steady_state_unit(unit, graph, "model")
    total = loop.resident_weight_bytes if isinstance(loop, CpuUnit) and not loop.weights_in_cache else None
    if not total:
        return 0.0
    return 1.0 - cyclic_kept(total, loop_cache_bytes(unit)) / total


def _float_stream(op: Op) -> bool:
    """Whether ``op`` is a streaming kernel on floating-point tensors (:data:`COLD_SRC_CATEGORIES`):
    the integer kernels of a QDQ model keep the rates the fingerprint's probes measured them at."""
    return op.category in COLD_SRC_CATEGORIES and all(t.dtype.startswith(("float", "bfloat"))
                                                       for t in (*op.activations, *op.outputs))  # fmt: skip


def nchwc_block_efficiency(output_blocks: int, one_block: float | None = None, two_block: float | None = None) -> float:
    """Rate of an NCHWc conv with ``output_blocks`` blocks of output channels against one with
    more: ``F / (F + 1)`` FMAs per load with ``F = min(output_blocks, 4)`` filter blocks per
    pass, scaled so that one block runs at ``one_block`` of the full rate (the host's measured
    ``nchwc_one_block_efficiency``; 2/3 without it: the FMA units bind from ``F = 3``); two blocks
    at ``two_block`` (the host's measured ``nchwc_two_block_efficiency``, at most 1) where it is
    known, since it does not follow from one block on every core: on a Xeon without AMX one block
    ran at 0.63 and two at the full rate, which the law puts at 0.84 (``docs/fidelity_cpu.md``,
    "The Intel Xeon again").

    Measured on the CI Xeon, 64 input channels at 32x32 (3x3 / 1x1, GFLOP/s): 16 outputs 141 /
    131, 32 outputs 187 / 175, 48 outputs 209 / 191, 64-256 outputs 204-208 / 195-200. On an AMD
    EPYC (Zen 4, half the FMA width per cycle) the same 3x3 convs run at 98 / 106 / 110 / 111-113:
    one block at 0.88, two at 0.95.

    >>> [round(nchwc_block_efficiency(f), 3) for f in (1, 2, 3, 4)]
    [0.667, 0.889, 1.0, 1.0]
    >>> [round(nchwc_block_efficiency(f, 0.88), 3) for f in (1, 2, 3)]
    [0.88, 1.0, 1.0]
    >>> [round(nchwc_block_efficiency(f, 0.63, 1.02), 3) for f in (1, 2, 3)]
    [0.63, 1.0, 0.945]
    """
    f = min(max(output_blocks, 1), 4)
    if f == 2 and two_block:
        return min(1.0, two_block)
    return min(1.0, 2 * (one_block or 2 / 3) * f / (f + 1))


def _block_rates(chip: Chip) -> tuple[float | None, float | None]:
    """The chip's CPU's measured ``nchwc_one_block_efficiency`` and ``nchwc_two_block_efficiency``
    (each None: not measured, or no CPU first)."""
    unit = chip.units[0] if chip.units else None
    if not isinstance(unit, CpuUnit):
        return None, None
    return unit.nchwc_one_block_efficiency, unit.nchwc_two_block_efficiency


def _pad(channels: int, block: int) -> float:
    """Padded over real channels: ``ceil(channels / block) * block / channels``."""
    return -(-channels // block) * block / channels if channels > 0 else 1.0


def _fused_into_blocked_conv(graph: ModelGraph, op: Op, blocked: set[str]) -> bool:
    """Whether ``op`` is an activation of :data:`_NCHWC_CONV_FUSED` that runs inside the blocked
    conv producing its one input (the conv's only reader)."""
    if op.op_type not in _NCHWC_CONV_FUSED or len(op.inputs) != 1 or op.inputs[0].name not in blocked:
        return False
    src = graph.producer.get(op.inputs[0].name)
    return src is not None and graph.op(src).op_type == "Conv" and graph.g.out_degree(src) == 1 and not any(
        t.name == op.inputs[0].name for t in graph.outputs)


def _nchwc_plan(
    graph: ModelGraph, block: int, one_block: float | None = None, two_block: float | None = None
) -> tuple[list[Op], dict[str, float], set[str], set[str]]:
    """The reorders (:func:`nchwc_reorders`), the time factors (:func:`nchwc_work`), the names
    of the non-conv ops kept blocked and of the blocked depthwise convs, and the names of the
    blocked dense convs, of one walk over ``graph``."""
    if block <= 0:
        return [], {}, set(), set()
    blocked: set[str] = set()
    done: set[str] = set()
    out: list[Op] = []
    padding: dict[str, float] = {}
    kept: set[str] = set()
    dense_convs: set[str] = set()
    run_time = {op.name for op in _run_time_filters(graph)}

    def reorder(kind: str, t: Tensor) -> None:
        if t.name not in done:
            done.add(t.name)
            out.append(Op(f"{kind}:{t.name}", kind, "data", (t,), (t,), {}, 0, 0))

    def keep_blocked(op: Op, factor: float) -> None:
        blocked.update(t.name for t in op.outputs)
        if factor > 1.0:
            padding[op.name] = factor

    for op in graph.ops():
        acts = op.activations
        if op.op_type == "Conv" and acts and len(acts[0].shape) == 4 and op.weights and op.name not in run_time:
            x, w = acts[0], op.weights[0]
            cout = w.shape[0]
            group = op.attrs.get("group", 1)
            cin = x.shape[1]
            dense = group == 1 or _grouped_blocked(op, block)
            depthwise = _depthwise_blocked(op, block)
            narrow = dense and cin < block  # read as a plain (NCHW) tensor, blocked or not before
            if dense and (narrow or cin % _NCHWC_ALIGN == 0) or depthwise:
                if narrow and x.name in blocked:
                    reorder("ReorderOutput", x)
                elif not narrow and x.name not in blocked:
                    reorder("ReorderInput", x)
                wide = dense and not narrow
                # a plain dense conv's padded channels are in its kernel (nchwc_kernels: _padded_conv)
                pad = 1.0 if dense and _pads_in_kernel(op) else _pad(cout, block) * (_pad(cin, block) if wide else 1.0)
                blocks = -(-cout // conv_group(op) // block)
                keep_blocked(op, pad / (nchwc_block_efficiency(blocks, one_block, two_block) if dense else 1.0))
                (kept if depthwise else dense_convs).add(op.name)
                continue
        elif acts and all(t.name in blocked for t in acts):
            same = len({t.shape for t in acts}) == 1
            channels = acts[0].shape[1] if len(acts[0].shape) == 4 else block
            if (op.op_type in _NCHWC_UNARY or _fused_into_blocked_conv(graph, op, blocked)) and len(acts) == 1 and (
                op.op_type not in RESIZE_OP_TYPES or resize_runs_blocked(op)
            ) and len(op.outputs) == 1:  # a MaxPool with its Indices is left plain
                kept.add(op.name)
                keep_blocked(op, _pad(channels, block))
                continue
            if op.op_type in _NCHWC_BINARY and same:
                keep_blocked(op, _pad(channels, block))
                continue
            if op.op_type == "Concat" and op.attrs.get("axis") in (1, -3) and all(
                len(t.shape) == 4 and t.shape[1] % block == 0 for t in acts
            ):
                keep_blocked(op, 1.0)
                continue
        for t in op.inputs:
            if t.name in blocked:
                reorder("ReorderOutput", t)
    for t in graph.outputs:
        if t.name in blocked:
            reorder("ReorderOutput", t)
    return out, padding, kept, dense_convs


#: onnxruntime optimization levels that run the transformer fusions (:mod:`hwsim.host.ort_fusions`).
FUSING_LEVELS = ("extended", "all")


def _pattern_kernels(
    graph: ModelGraph, kernels: Mapping[str, str], fused: set[str]
) -> tuple[dict[str, Op], set[str]]:
    """Nodes onnxruntime ran as a pattern kernel (``QuickGelu``, an integer kernel of a QDQ group:
    :func:`~hwsim.host.ort_qdq.qdq_kernel`; a layer normalization written out, its kernel named
    after its scale ``Mul``: :func:`~hwsim.host.ort_fusions.decomposed_norms`): node -> the kernel
    as one op, and the nodes it absorbed (costed 0; of a QDQ group's ``QuantizeLinear``/``DequantizeLinear``
    those that ran fused)."""
    patterns: dict[str, Op] = {}
    absorbed: set[str] = set()
    ops = set(graph.order)
    norms: list[Fusion] | None = None
    for name, kind in kernels.items():
        if name not in ops:  # a kernel for ops hwsim expanded or lowered (:func:`function_bodies`)
            continue
        if kind == "QuickGelu" and name not in fused and (hit := quick_gelu(graph, name)) is not None:
            patterns[name] = hit[0]
            absorbed.add(hit[1])
        elif kind in QDQ_KERNELS and name not in fused and (q := qdq_kernel(graph, name, kind)) is not None:
            patterns[name] = q[0]
            absorbed.update(q[1] & fused)
        elif kind in NORM_KERNELS and graph.op(name).op_type not in NORM_KERNELS:
            norms = decomposed_norms(graph) if norms is None else norms
            f = next((f for f in norms if name in f.members and f.kernel.op_type == NORM_KERNELS[kind]), None)
            if f is not None:  # a layer normalization written out, its kernel named after its scale Mul
                patterns[name] = replace(f.kernel, name=name)
                absorbed.update(f.members - {name})
    return patterns, absorbed


def _in_epilogue(
    graph: ModelGraph, producer: Mapping[str, str], fused: set[str], name: str, runs_as: Mapping[str, Op]
) -> bool:
    """Whether fused node ``name`` sits in a conv/matmul kernel's epilogue: its first input comes,
    through other fused nodes (at most 8, :func:`_kernel_before`), from a node that runs as one
    (``runs_as``: the kernel a node runs as where not its own, such as the depthwise 1x1 conv of
    :func:`_bn_as_depthwise`)."""
    op = graph.op(name)
    if not op.inputs or op.inputs[0].name not in producer:
        return False
    src = _kernel_before(graph, fused, producer[op.inputs[0].name])
    return src not in fused and (runs_as.get(src) or graph.op(src)).category in GEMM_CATEGORIES


def passed_activations(graph: ModelGraph, runs_as: Mapping[str, Op], fused: Iterable[str]) -> set[str]:
    """The fused activations whose whole work is the pass their NCHWc conv already pays
    (:data:`~cost_models.cpu.NCHWC_ACTIVATION_ATTR` on the conv as it runs, ``runs_as``;
    :func:`~cost_models.cpu.nchwc_activation_ns`): MLAS applies the activation in that pass over
    the conv's output, so the node costs nothing of its own. Costed again as its epilogue
    compute, MobileNetV3's fused HardSwishes were priced twice (AMD EPYC, 1 thread: a 64-channel
    80x80 conv and its HardSwish 217 us against 181 measured for the one kernel; 175 without
    the second count).
    A fused Relu after a blocked conv costs nothing either: the kernel applies it in its stores (a
    chain of 64-channel 3x3 depthwise convs took 0.000-0.008 ns an output element more with one,
    and 0.08-0.09 more with a Clip, on an AMD EPYC, Zen 5).

    >>> from graph_ir.ir import Tensor
    >>> x, w, y, a = (Tensor("x", (1, 8, 4, 4), "f"), Tensor("w", (8, 8, 1, 1), "f", True),
    ...               Tensor("y", (1, 8, 4, 4), "f"), Tensor("a", (1, 8, 4, 4), "f"))
    >>> conv, act = Op("c", "Conv", "conv", (x, w), (y,)), Op("h", "HardSwish", "activation", (y,), (a,))
    >>> import networkx as nx
    >>> dag = nx.DiGraph(); dag.add_node("c", op=conv); dag.add_node("h", op=act); dag.add_edge("c", "h")
    >>> g = ModelGraph("m", dag, (x,), (a,), {"y": "c", "a": "h"}, ("c", "h"))
    >>> blocked = {"c": replace(conv, attrs={NCHWC_ACTIVATION_ATTR: "HardSwish"})}
    >>> passed_activations(g, blocked, {"h"}), passed_activations(g, {}, {"h"}), passed_activations(g, blocked, set())
    ({'h'}, set(), set())
    """
    fused = set(fused)
    out: set[str] = set()
    for op in graph.ops():
        if op.name not in fused or not op.inputs or (src := graph.producer.get(op.inputs[0].name)) is None:
            continue
        passed = (k := runs_as.get(src)) is not None and k.attrs.get(NCHWC_ACTIVATION_ATTR) == op.op_type
        stored = op.op_type == "Relu" and (k := runs_as.get(_kernel_before(graph, fused, src))) is not None and (
            NCHWC_ATTR in k.attrs and k.op_type == "Conv")
        if passed or stored:
            out.add(op.name)
    return out


def _kernel_before(graph: ModelGraph, fused: set[str], name: str) -> str:
    """The node whose kernel runs node ``name``: itself, or the first node before it, through its
    first inputs, that is not fused into another (a BatchNormalization folded into its conv)."""
    for _ in range(8):
        if name not in fused or not (op := graph.op(name)).inputs or op.inputs[0].name not in graph.producer:
            return name
        name = graph.producer[op.inputs[0].name]
    return name


def predict_nodes(
    graph: ModelGraph,
    chip: Chip,
    threads: int,
    fused: set[str],
    kernels: Mapping[str, str] | None = None,
    inserted: Sequence[Op] = (),
    absorbed: frozenset[str] = frozenset(),
    padded: Mapping[str, float] | None = None,
    layout_kernels: Mapping[str, Op] | None = None,
) -> dict[str, NodePrediction]:
    """Per node of ``graph``: its prediction on the one-CPU ``chip`` (see :func:`cpu_chip`).

    ``fused`` are the nodes that run inside another node's kernel; ``kernels`` maps nodes that
    run as their own kernel to the op type onnxruntime ran (default: their own). The rules:

    - a node that runs as its own kernel costs its full estimate, per-op overhead included;
      a node that runs as ``QuickGelu`` (``Mul(x, Sigmoid(x))``) is costed as that one kernel
      (reads ``x`` once, computes both) under the op type ``QuickGelu``, and its Sigmoid costs 0;
    - a fused node in the epilogue of a conv/matmul kernel (its first input comes, through
      other fused nodes, from one) costs its compute only: the tile is still in L1; a fused
      ``Mul(x, HardSigmoid(x))`` pair is costed as the ``HardSwish`` it runs as
      (:func:`hard_swishes`), its HardSigmoid 0;
    - any other fused node (inside a pattern kernel onnxruntime names anew: Gelu,
      LayerNormalization) costs its roofline time without overhead;
    - views (free in hwsim) that still run as kernels cost the unit's overhead;
    - ``inserted`` ops (the reorders of :func:`nchwc_reorders`, the fused kernels of
      :func:`~hwsim.host.ort_fusions.ort_fusions`) cost their full estimate and come last in the
      result, under their own names; the nodes in ``absorbed`` (a fused kernel's members) cost 0;
    - a kernel in ``padded`` (:func:`nchwc_work`: it runs on channels padded up to whole
      NCHWc blocks, or on too few of them) takes that factor longer;
    - a node in ``layout_kernels`` (:func:`nchwc_kernels`) is costed as the kernel given there.

    With ``threads > 1`` a kernel's roofline time is split over the threads onnxruntime gives it
    (:func:`cost_models.cpu.intra_op_threads`) plus its parallel sections' cost, not its overhead.
    """
    unit = chip.units[0].name
    patterns, quick = _pattern_kernels(graph, kernels or {}, fused)
    patterns.update((n, k) for n, k in (layout_kernels or {}).items() if n not in fused and n not in patterns)
    swishes = hard_swishes(graph, fused)
    biases = {a: h for a, h in gemm_biases(graph, fused).items() if h not in patterns}
    to_float = integer_to_float(graph, fused)
    patterns.update((n, k) for n, k in scaled_row_products(graph, fused).items() if n not in patterns)
    absorbed |= _in_other_kernels(graph, fused, patterns, {*quick, *(g for _, g in swishes.values()), *biases, *to_float})
    biases.update((g, g) for g in own_biases(graph, fused) if g not in patterns)  # after: a Gemm is not its own absorbed
    if isinstance(chip.units[0], CpuUnit):  # where a kernel's data sits in the caches (arena plan)
        patterns.update(_resident(graph, chip.units[0], patterns, fused | absorbed, inserted))
    extra = [*patterns.values(), *inserted]
    roof_chip = _roofline_chip(chip, {t for op in [*graph.ops(), *extra] for t in (op.op_type, kernel_type(op))})
    table, roof_table = (cost_table(graph, c, "model") for c in (chip, roof_chip))
    # the unit as it runs the model in a loop (its resident weights: how a GEMV's rows split, _speedup)
    loop = chip.model_copy(update={"units": [steady_state_unit(chip.units[0], graph, "model")]})
    overhead = chip.units[0].op_overhead_ns
    producer = graph.producer
    out: dict[str, NodePrediction] = {}
    for op in graph.ops():
        if op.name in patterns:
            factor = (padded or {}).get(op.name, 1.0)
            # as the loop runs it: an integer GEMM kernel's weights stay cached like its float node's would
            out[op.name] = _kernel_prediction(patterns[op.name], loop, roof_chip, threads, factor)
            continue
        c = _padded(table.costs[op.name][unit], (padded or {}).get(op.name, 1.0))
        r = _padded(roof_table.costs[op.name][unit], (padded or {}).get(op.name, 1.0))
        roof = _basis(op, r, loop, threads)
        if op.name in absorbed:
            out[op.name] = NodePrediction(op.op_type, 0.0, roof)
        elif op.name in fused:
            if op.name in swishes:  # the pair as the one activation it runs as
                c = _padded(_estimate(swishes[op.name][0], chip), (padded or {}).get(op.name, 1.0))
            pred = c.compute_ns / threads if _in_epilogue(graph, producer, fused, op.name, patterns) else _time(op, c, loop, threads, False)
            out[op.name] = NodePrediction(op.op_type, pred, roof)
        else:
            # hwsim's views are free; onnxruntime still dispatches a kernel for each one that runs
            view = overhead if op.category == "layout" else 0.0
            stall = c.stall_ns / threads + _sections_ns(op, chip, threads)
            out[op.name] = NodePrediction(kernel_type(op), _time(op, c, loop, threads, True) + view, roof, r.memory_ns / threads,
                                          stall, op.category, *_threading(op, chip, threads))  # fmt: skip
    for k in inserted:
        out[k.name] = _kernel_prediction(patterns.get(k.name, k), chip, roof_chip, threads)
    return _with_output_pass(_with_biases(out, graph, chip, biases, threads), graph, chip, set(to_float.values()), threads)


def _in_other_kernels(graph: ModelGraph, fused: set[str], patterns: Mapping[str, Op], found: Iterable[str]) -> frozenset[str]:
    """The fused nodes whose work another kernel's price covers: those ``found`` by the caller's
    rules, the transposed caches one-row products read (:func:`row_transposes`) and the activations
    a blocked conv's pass applies (:func:`passed_activations`)."""
    return frozenset(found) | row_transposes(graph, fused) | passed_activations(graph, patterns, fused)


#: The ops a bias ``Add`` folds into (onnxruntime's ``MatMulAddFusion``; :func:`gemm_biases`).
_BIAS_HEADS = frozenset(("MatMul", "Gemm"))


def gemm_biases(graph: ModelGraph, fused: Iterable[str]) -> dict[str, str]:
    """The fused ``Add`` s that are a GEMM's bias -> that GEMM: one input a ``MatMul``'s or
    ``Gemm``'s output (a node that ran as its own kernel), the other a weight of at most the output's
    size. onnxruntime runs the pair as one ``Gemm`` with the weight as ``C``
    (:func:`~cost_models.cpu.gemm_bias_ns`), whichever input of the ``Add`` the product is."""
    fused = set(fused)
    producer = graph.producer
    out: dict[str, str] = {}
    for op in graph.ops():
        if op.op_type != "Add" or op.name not in fused or len(op.inputs) != 2 or not op.outputs:
            continue
        weights = [t for t in op.inputs if t.is_weight]
        heads = [producer[t.name] for t in op.inputs if not t.is_weight and t.name in producer]
        if len(weights) == 1 and len(heads) == 1 and heads[0] not in fused and weights[0].elements <= op.outputs[0].elements \
                and graph.op(heads[0]).op_type in _BIAS_HEADS:  # fmt: skip
            out[op.name] = heads[0]
    return out


def own_biases(graph: ModelGraph, fused: Iterable[str]) -> list[str]:
    """The ``Gemm`` nodes that run as their own kernel with a bias ``C`` (``beta`` not 0) over more
    than one row: onnxruntime's Gemm broadcasts ``C`` into ``Y`` and MLAS adds the product onto it,
    the passes of a folded bias (:func:`gemm_biases`, :func:`~cost_models.cpu.gemm_bias_ns`). A
    one-row Gemm's are in its probed call time (``fp32_gemv_call_ns``). Measured (Intel Xeon, a
    NeRF-like MLP of 4096 points, 256 wide): its Gemms with a bias ran 2.91 ms priced without the
    passes and 3.27-3.39 measured, where the rule adds 0.32 ms over the 4 MiB output."""
    fused = set(fused)
    return [op.name for op in graph.ops()
            if op.op_type == "Gemm" and op.name not in fused and len(op.inputs) > 2 and op.inputs[2].elements > 0
            and op.attrs.get("beta", 1.0) != 0 and gemm_rows(op) > 1]  # fmt: skip


def scaled_row_products(graph: ModelGraph, fused: Iterable[str]) -> dict[str, Op]:
    """The one-row products over run-time matrices (:func:`~cost_models.cpu.is_row_product`) a fused
    scale multiplies (:func:`scaled_products`: onnxruntime folds it in as a ``FusedMatMul``'s alpha)
    -> each marked :data:`~cost_models.cpu.SCALED_ATTR`, so that it pays MLAS's packing of ``B``
    (:func:`~cost_models.cpu.row_pack_ns`)."""
    producer, readers = graph.producer, tensor_consumers(graph)
    out: dict[str, Op] = {}
    for name in scaled_products(graph, fused):
        scale = graph.op(name)
        around = [producer.get(t.name) for t in scale.inputs] + [r.name for r in readers.get(scale.outputs[0].name, ())]
        for n in around:
            if n is not None and n not in out and is_row_product(op := graph.op(n)):
                out[n] = replace(op, attrs={**op.attrs, SCALED_ATTR: 1})
    return out


def row_transposes(graph: ModelGraph, fused: Iterable[str]) -> frozenset[str]:
    """The fused ``Transpose`` s of the last two axes that only one-row products over run-time
    matrices read, as their ``B`` (:func:`~cost_models.cpu.is_row_product`: a decoding step's
    ``K^T``): onnxruntime passes them to the product as ``transB``, and MLAS's one-row kernel reads
    ``B`` transposed as fast as not (8 heads of a 513 x 96 cache: 24 us either way, AMD EPYC), so
    they cost nothing."""
    readers = tensor_consumers(graph)
    out = set()
    for name in set(fused):
        op = graph.op(name)
        perm = op.attrs.get("perm")
        if op.op_type != "Transpose" or not op.outputs or not isinstance(perm, Sequence) or len(perm) < 2:
            continue
        swap = [*range(len(perm) - 2), len(perm) - 1, len(perm) - 2]
        users = readers.get(op.outputs[0].name, [])
        if list(perm) == swap and users and all(is_row_product(u) and u.inputs[1].name == op.outputs[0].name for u in users):
            out.add(name)
    return frozenset(out)


def integer_to_float(graph: ModelGraph, fused: Iterable[str]) -> dict[str, str]:
    """The fused ``Cast`` -> ``Mul`` (-> bias ``Add``) after a ``MatMulInteger`` that runs as its own
    kernel -> that MatMulInteger: what ``quantize_dynamic`` writes after each product, and what
    onnxruntime's ``MatMulIntegerToFloat`` does in MLAS's scale-and-bias output pass over the int32
    accumulators (:func:`_with_output_pass`). A dynamically quantized BERT-like encoder (AMD EPYC,
    1 thread): the three priced as fused elementwise ops came to 1.1 ms more than that pass, of its
    8.7 measured."""
    fused = set(fused)
    readers = tensor_consumers(graph)
    out: dict[str, str] = {}
    for op in graph.ops():
        if op.op_type != "MatMulInteger" or op.name in fused or not op.outputs:
            continue
        chain, cur = [], op
        for want in ("Cast", "Mul", "Add"):
            users = readers.get(cur.outputs[0].name, []) if cur.outputs else []
            if len(users) != 1 or users[0].op_type != want or users[0].name not in fused:
                break
            cur = users[0]
            chain.append(cur.name)
        if len(chain) >= 2:
            out.update(dict.fromkeys(chain, op.name))
    return out


def _with_output_pass(
    out: dict[str, NodePrediction], graph: ModelGraph, chip: Chip, heads: Iterable[str], threads: int
) -> dict[str, NodePrediction]:
    """``out`` with each integer product in ``heads`` (:func:`integer_to_float`) paying MLAS's pass
    over its accumulators, the fingerprint's ``requant_ns`` per output element (the same pass as a
    requantizing kernel's: each int32 corrected, scaled and stored), as a stall beside its work."""
    unit = chip.units[0]
    if not isinstance(unit, CpuUnit) or unit.requant_ns is None:
        return out
    for head in heads:
        _add_stall(out, head, graph.op(head).outputs[0].elements * unit.requant_ns / threads)
    return out


def _with_biases(
    out: dict[str, NodePrediction], graph: ModelGraph, chip: Chip, biases: Mapping[str, str], threads: int
) -> dict[str, NodePrediction]:
    """``out`` with each GEMM's folded bias (``biases``: Add -> GEMM; a Gemm's own ``C``: the Gemm ->
    itself, :func:`own_biases`) priced in the GEMM's own kernel, as a stall beside its work
    (:func:`~cost_models.cpu.gemm_bias_ns`): calibration takes it off before fitting the GEMM's rate."""
    unit = chip.units[0]
    if not biases or not isinstance(unit, CpuUnit):
        return out
    for add, head in biases.items():
        weights = sum(t.nbytes for t in graph.op(head).weights)
        _add_stall(out, head, gemm_bias_ns(graph.op(add).outputs[0].nbytes, unit, chip.dram.bandwidth_gbps, threads, weights))
    return out


def _add_stall(out: dict[str, NodePrediction], head: str, ns: float) -> None:
    """Kernel ``head``'s prediction in ``out`` with ``ns`` more, as a stall beside its work."""
    p = out[head]
    out[head] = replace(p, predicted_ns=p.predicted_ns + ns, stall_ns=p.stall_ns + ns)


def _resident(
    graph: ModelGraph, unit: CpuUnit, patterns: Mapping[str, Op], inside: set[str], inserted: Sequence[Op] = ()
) -> dict[str, Op]:
    """The kernels :func:`cache_residency` marks, as they are costed (``patterns``' kernel, else the
    node) with the marks added: a pattern, layout or fusion kernel its inputs' place only, an integer
    kernel of a QDQ model none (at its probe's rate). ``inside``: the nodes that run inside another
    kernel; ``inserted``: the kernels onnxruntime adds, of which its fusions' are marked too."""
    fusions = {k.name: k for k in inserted if k.op_type in FUSED_KERNELS}
    out: dict[str, Op] = {}
    for n, marks in cache_residency(graph, unit, inside, tuple(fusions.values())).items():
        if n in inside or (n in patterns and patterns[n].op_type in QDQ_KERNELS):
            continue
        if n in patterns or n in fusions:
            marks.pop(COLD_DST_ATTR, None)
        if marks:
            base = patterns.get(n) or fusions.get(n) or graph.op(n)
            out[n] = replace(base, attrs={**base.attrs, **marks})
    return out


def _padded(c: OpCost, factor: float) -> OpCost:
    """``c`` taking ``factor`` times as long (:func:`nchwc_work`)."""
    if factor == 1.0:
        return c
    return replace(c, compute_ns=c.compute_ns * factor, memory_ns=c.memory_ns * factor, stall_ns=c.stall_ns * factor)


def _estimate(k: Op, chip: Chip) -> OpCost:
    """``k``'s cost on the one-CPU ``chip``, in the model's own precision."""
    from cost_models.table import estimate

    c = estimate(k, chip, chip.units[0].name, "model")
    assert c is not None  # a CPU runs any op type
    return c


def _kernel_prediction(k: Op, chip: Chip, roof_chip: Chip, threads: int, factor: float = 1.0) -> NodePrediction:
    """A kernel onnxruntime runs that is no node of the file (a pattern, layout or inserted
    kernel), ``factor`` times as long (:func:`nchwc_work`)."""
    c, r = _estimate(k, chip), _estimate(k, roof_chip)
    c, r = _padded(c, factor), _padded(r, factor)
    return NodePrediction(kernel_type(k), _time(k, c, chip, threads, True), _basis(k, r, chip, threads),
                          r.memory_ns / threads, c.stall_ns / threads + _sections_ns(k, chip, threads))


def _qdq_transposes(graph: ModelGraph, kernels: Mapping[str, str], fused: Iterable[str]) -> list[Op]:
    """The Transposes around the channels-last integer kernels in ``kernels`` (node -> the kernel
    it ran as; :func:`~hwsim.host.ort_qdq.nhwc_transposes`), the QDQ nodes in ``fused`` looked through."""
    fused = set(fused)
    qdq = {n: k for n, k in kernels.items() if k in QDQ_KERNELS and n not in fused}
    members = {m for n, k in qdq.items() if (q := qdq_kernel(graph, n, k)) is not None for m in q[1] & fused}
    return nhwc_transposes(graph, qdq, members) if qdq else []


#: The kernels a QDQ model's ``QuantizeLinear``/``DequantizeLinear`` nodes run as, under names
#: onnxruntime gives them when it moves them (QDQ propagation across Reshape/Transpose).
_QDQ_NODES = ("QuantizeLinear", "DequantizeLinear")


def _match_qdq_moved(graph: ModelGraph, kernels: Mapping[str, str], meas: dict[str, float],
                     unmatched: dict[str, list[float]]) -> None:  # fmt: skip
    """Move the measured ``QuantizeLinear``/``DequantizeLinear`` kernels onnxruntime renamed into
    ``meas``, onto the file's nodes of that type that ran under no name and no integer kernel
    absorbed, largest tensor with longest kernel."""
    fused = {op.name for op in graph.ops() if op.name not in meas}
    taken = {m for n, k in kernels.items() if k in QDQ_KERNELS and (q := qdq_kernel(graph, n, k)) for m in q[1]}
    for kind in _QDQ_NODES:
        mine = sorted((op for op in graph.ops() if op.op_type == kind and op.name in fused - taken),
                      key=lambda op: -op.inputs[0].nbytes)  # fmt: skip
        theirs = sorted(unmatched.pop(kind, []), reverse=True)
        meas.update((op.name, ns) for op, ns in zip(mine, theirs, strict=False))
        if len(theirs) > len(mine):
            unmatched[kind] = theirs[len(mine) :]


def _match_inserted(
    graph: ModelGraph, block: int, opt: str, meas: dict[str, float], unmatched: dict[str, list[float]],
    kernels: Mapping[str, str] | None = None, calls: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[Op], list[Fusion]]:  # fmt: skip
    """The kernels onnxruntime inserts that are predicted from the graph (NCHWc reorders, the
    fusions of :func:`~hwsim.host.ort_fusions.ort_fusions` whose members all ran fused and that
    it runs as kernels among the expanded ``calls``, :func:`_run_fusions`; the
    Transposes around channels-last integer kernels, :func:`_qdq_transposes`), and those fusions.
    Their measured kernels move from ``unmatched`` into ``meas``, per kind, largest tensor with
    longest kernel; so do renamed QDQ nodes (:func:`_match_qdq_moved`)."""
    kernels = kernels or {}
    for alias, kind in KERNEL_ALIASES.items():  # BiasGelu: the Gelu fusion with its bias Add folded in
        if alias in unmatched:
            unmatched.setdefault(kind, []).extend(unmatched.pop(alias))
    _match_qdq_moved(graph, kernels, meas, unmatched)
    fusions = [f for f in ort_fusions(graph) if not f.members & meas.keys()] if opt in FUSING_LEVELS else []
    fusions = _run_fusions(fusions, calls or {}, kernels)
    fused = {op.name for op in graph.ops() if op.name not in meas}
    inserted = [*nchwc_reorders(graph, block), *(f.kernel for f in fusions), *_qdq_transposes(graph, kernels, fused)]
    for kind in ("ReorderInput", "ReorderOutput", *FUSED_KERNELS, "Transpose"):
        mine = sorted((r for r in inserted if r.op_type == kind), key=lambda r: -r.inputs[0].nbytes)
        theirs = sorted(unmatched.pop(kind, []), reverse=True)
        meas.update((r.name, ns) for r, ns in zip(mine, theirs, strict=False))
        if len(theirs) > len(mine):
            unmatched[kind] = theirs[len(mine) :]
    return inserted, fusions


def graph_as_run(model_path: str | Path, shapes: Mapping[str, Sequence[int]] | None = None) -> ModelGraph:
    """``model_path``'s graph as onnxruntime's CPU provider runs it: a float16 model with the nodes
    that have no float16 kernel in float32 and the Casts between them
    (:func:`hwsim.host.ort_fp16.as_run`); any other model as it is."""
    from graph_ir.onnx_import import from_model_proto, load_onnx
    from hwsim.host.ort_fp16 import as_run

    graph = load_onnx(model_path, shapes)
    if not any(t.dtype == "float16" for op in graph.ops() for t in (*op.inputs, *op.outputs)):
        return graph
    model = named_nodes(onnx.load(str(model_path), load_external_data=False))
    return from_model_proto(as_run(model), source=str(model_path), name=graph.name, input_shapes=shapes)


def validate_model(
    chip: Chip,
    model_path: str | Path,
    threads: int = 1,
    opt: str = "all",
    runs: int = 20,
    min_total_s: float = 1.0,
    shapes: Mapping[str, Sequence[int]] | None = None,
    seed: int = 0,
    reference: tuple[float, int] | None = None,
    dispatch: Dispatch | None = None,
) -> Validation:
    """Measure ``model_path`` with onnxruntime and predict it on ``chip``'s CPU.

    ``dispatch`` (:func:`hwsim.host.fingerprint.read_dispatch`): profiled kernel times become
    :meth:`~hwsim.host.fingerprint.Dispatch.kernel_time`, and :attr:`Validation.run_ns` is predicted.

    ``reference`` (the chip file's fingerprint rate and MatMul size,
    :func:`hwsim.host.fingerprint.reference_gflops`): the fingerprint's fp32 MatMul is timed again
    right before and right after the model (the faster of the two counts, each the best of its
    runs), and every measured time is multiplied by probe / reference, so that a host running
    faster or slower than when it was fingerprinted (turbo, other tenants: this project's CI VM
    drifted by 17 % within an hour) is compared at the fingerprint's clock. With ``threads`` > 1
    the reference must be the fingerprint's rate on that many threads
    (``reference_gflops(path, threads)``): the probe runs on as many threads as the model, so a
    second core that another tenant takes slows both alike.

    Raises
    ------
    ValidateError, MeasureError, ModelError
        For a chip without a CPU, a model onnxruntime cannot run, a model hwsim cannot read.
    """
    graph = graph_as_run(model_path, shapes)
    one = cpu_chip(chip, threads)
    model = load_with_random_weights(model_path, seed)
    feeds = random_inputs(model, seed, shapes)
    try:
        measured, prof, speed, lagged = _measure(
            model, feeds, threads, opt, runs, min_total_s, reference, usual_speedup(chip, threads)
        )
    except MeasureError as exc:
        raise MeasureError(f"{model_path}: {exc}") from None
    if dispatch is not None:  # the profiler's own cost per kernel off, a timed run's dispatch on
        prof = {p: (kind, dispatch.kernel_time(ns)) for p, (kind, ns) in prof.items()}
    where = attribute_nodes(model, {p: kind for p, (kind, _) in prof.items()})
    block = nchwc_block() if opt == "all" else 0
    meas: dict[str, float] = {}
    kernels: dict[str, str] = {}
    unmatched: dict[str, list[float]] = {}
    names = set(graph.order)
    for p, (kind, ns) in prof.items():
        hit = where[p] or (p if p in names else None)  # or a node graph_as_run inserted, as onnxruntime named it
        if hit is None:
            unmatched.setdefault(kind, []).append(ns)
        else:
            meas[hit] = meas.get(hit, 0.0) + ns
            kernels[hit] = kind
    calls = function_bodies(graph, kernels)
    reorders, fusions = _match_inserted(graph, block, opt, meas, unmatched, kernels, calls)
    heads = _call_heads(graph, calls, kernels)
    fused = {op.name for op in graph.ops() if op.name not in meas and op.name not in heads}
    members = _costing_nothing(graph, fusions, calls, heads, reorders, fused)
    pred = predict_nodes(graph, one, threads, fused, _head_kernels(heads, kernels), reorders, members, work_factors(graph, block, *_block_rates(one)),
                         {**layout_kernels(graph, block, fused), **denormal_softmaxes(graph, model)})  # fmt: skip
    nodes = _with_calls(tuple(
        NodeResult(name, p.op_type, name in fused, p.predicted_ns, meas.get(name, 0.0), p.roof_ns, p.memory_ns, p.stall_ns,
                   p.category, p.threads_used, p.step_sections, p.step_sections_ns)
        for name, p in pred.items()
    ), _with_fusions(calls, fusions), kernels, meas)  # fmt: skip
    inserted = sum(ns for v in unmatched.values() for ns in v)
    inserted_ops = set(unmatched)
    return Validation(
        model=graph.name, chip=chip.name, threads=threads, opt=opt, measured=measured, nodes=nodes,
        inserted_ns=inserted, inserted_ops=tuple(sorted(inserted_ops)),
        profiled_total_ns=sum(ns for _, ns in prof.values()),
        measured_ns=measured.low_ns, rounds_ns=(measured.low_ns,), nchwc_block=block, speeds=(speed,),
        dispatch=dispatch, second_core_lagged=() if lagged is None else (lagged,),
    )  # fmt: skip


def function_bodies(graph: ModelGraph, kernels: Mapping[str, str]) -> dict[str, list[str]]:
    """Each measured kernel (``kernels``: name -> the op type onnxruntime ran) that is no op of
    hwsim's graph because hwsim expanded it into its function body (``Attention``,
    :mod:`graph_ir.functions`: its ops named ``<kernel>/...``), with the names of those ops. A
    Loop, Scan or If (unrolled or inlined under the same kind of names) is left out: onnxruntime
    profiles its body's kernels on their own too."""
    calls: dict[str, list[str]] = {}
    names = set(graph.order)
    for op in graph.ops():
        call, sep, _ = op.name.rpartition("/")
        while sep and call not in kernels:
            call, sep, _ = call.rpartition("/")
        if sep and call not in names and kernels[call] not in _CONTROL_FLOW:
            calls.setdefault(call, []).append(op.name)
    return calls


#: Op types onnxruntime runs with a body whose kernels it profiles on their own.
_CONTROL_FLOW = frozenset({"Loop", "Scan", "If"})


def _call_heads(graph: ModelGraph, calls: Mapping[str, Sequence[str]], kernels: Mapping[str, str]) -> dict[str, str]:
    """The op of each expanded call that stands for the call's one kernel, with the call: its op
    of the most FLOPs; it pays the kernel's dispatch, and the call's other ops run inside it, as
    fused nodes do (no dispatch each; after a product, its work only: onnxruntime's own kernel for
    the op). A call onnxruntime ran as its ``QuickGelu`` kernel (a lowered ``QuickGelu``:
    :mod:`graph_ir.contrib`) has the ``Mul`` of its ``Mul(x, Sigmoid(x))`` as head, costed as
    that kernel (:func:`quick_gelu`)."""
    heads: dict[str, str] = {}
    for call, names in calls.items():
        head = max(names, key=lambda m: (graph.op(m).flops, graph.op(m).category != "layout"))
        if kernels.get(call) == "QuickGelu":
            head = next((m for m in names if quick_gelu(graph, m) is not None), head)
        heads[head] = call
    return heads


def _costing_nothing(
    graph: ModelGraph, fusions: Sequence[Fusion], calls: Mapping[str, Sequence[str]], heads: Mapping[str, str],
    inserted: Sequence[Op], fused: Iterable[str],
) -> frozenset[str]:
    """The nodes validate prices at 0 because another kernel does their work: the members of the
    ``fusions``, what the expanded ``calls`` do by addressing (:func:`_free_in_kernel`), the
    NHWC Transposes the reorders write (:func:`reordered_transposes`), the BatchNormalizations
    folded into the weights of the conv before them (:func:`folded_batch_norms`) and the scales a
    FusedMatMul takes as its alpha (:func:`scaled_products`)."""
    members = frozenset(m for f in fusions for m in f.members)
    return (members | _free_in_kernel(graph, calls, heads) | reordered_transposes(graph, inserted, fused)
            | folded_batch_norms(graph, fused) | scaled_products(graph, fused))  # fmt: skip


def scaled_products(graph: ModelGraph, fused: Iterable[str]) -> frozenset[str]:
    """The fused ``Mul`` s and ``Div`` s by a one-element constant of a ``MatMul``'s output or
    operand (:func:`_scales_a_product`; a ``Div``'s constant its divisor): onnxruntime's
    ``MatMulScaleFusion`` passes the scale to a ``FusedMatMul`` as its alpha, so they cost
    nothing. Attention's ``Q K^T / sqrt(d)`` in a Conformer block (AMD EPYC, 1 thread): the Div had
    been priced at 27 us as the product's epilogue."""
    readers = tensor_consumers(graph)
    products = {op.name for op in graph.ops() if op.op_type == "MatMul"}
    out = set()
    for name in set(fused):
        op = graph.op(name)
        divisor = op.op_type == "Div" and len(op.inputs) == 2 and op.inputs[1].is_weight and op.inputs[1].elements == 1
        if (op.op_type == "Mul" or divisor) and _scales_a_product(op, graph.producer, readers, products):
            out.add(name)
    return frozenset(out)


def folded_batch_norms(graph: ModelGraph, fused: Iterable[str]) -> frozenset[str]:
    """The fused ``BatchNormalization`` s that fold into a ``Conv``'s weights
    (:func:`~cost_models.fusion.folds_into`): onnxruntime's ``ConvBNFusion`` folds them when it
    loads the model, so they cost the run nothing."""
    readers = {t: [op.name for op in ops] for t, ops in tensor_consumers(graph).items()}
    return frozenset(n for n in set(fused) if (head := folds_into(graph, n, readers)) is not None
                     and graph.op(head).op_type == "Conv")  # fmt: skip


#: Data movement a fused kernel does by addressing, not as a pass of its own: onnxruntime's
#: Attention kernel writes each head's Q, K and V through strides from the one projection GEMM
#: and its products read and write them so (no Split, no Transpose); FusedMatMul passes its
#: transposes to the GEMM as flags. Inside an expanded call (:func:`function_bodies`) these ops
#: cost nothing (:func:`_free_in_kernel`). The BERT saved by onnxruntime's transformer optimizer: its
#: Attention kernel measured 0.72-0.75 ms against 0.89 ms predicted with its Split and four
#: Transposes priced as copies (0.09 ms of them).
ADDRESSED_IN_KERNEL = frozenset(("Transpose", "Split", "Slice", "Concat"))


def _free_in_kernel(graph: ModelGraph, calls: Mapping[str, Sequence[str]], heads: Mapping[str, str]) -> frozenset[str]:
    """The ops of the expanded ``calls`` (their ``heads`` excepted) that cost their kernel nothing:
    those it does by addressing (:data:`ADDRESSED_IN_KERNEL`), and a scale on a product of the
    call (a ``Mul`` by a one-element constant of a MatMul's output, or of an operand only a MatMul
    of the call reads: opset 23's Attention body scales Q and K), which onnxruntime's Attention
    and FusedMatMul kernels pass to the GEMM as its alpha."""
    readers = tensor_consumers(graph)
    out = set()
    for ms in calls.values():
        products = {m for m in ms if graph.op(m).category == "matmul"}
        for m in ms:
            op = graph.op(m)
            if m in heads:
                continue
            if op.op_type in ADDRESSED_IN_KERNEL or (op.op_type == "Mul" and _scales_a_product(op, graph.producer, readers, products)):
                out.add(m)
    return frozenset(out)


#: The permutation onnxruntime's NCHWc transformer folds into the ``ReorderOutput`` before it
#: (``channels_last``: the reorder writes NHWC), NCHW to NHWC.
CHANNELS_LAST_PERM = (0, 2, 3, 1)


def reordered_transposes(graph: ModelGraph, inserted: Sequence[Op], fused: Iterable[str]) -> frozenset[str]:
    """The fused ``Transpose`` s to NHWC (:data:`CHANNELS_LAST_PERM`) of a blocked tensor that
    leaves the NCHWc layout through a ``ReorderOutput`` in ``inserted``: onnxruntime's reorder
    writes channels-last itself, so the Transpose costs nothing beside it. A ConvNeXt-like block
    (depthwise conv, then NHWC LayerNormalization): each such Transpose had been priced as a copy
    (29 us at 32x32x48, on the Xeon of 2026-12-03) while the reorder with it took the 13 us
    a plain one does."""
    leaving = {r.inputs[0].name for r in inserted if r.op_type == "ReorderOutput"}
    out = set()
    for name in fused:
        op = graph.op(name)
        perm = op.attrs.get("perm")
        if op.op_type == "Transpose" and isinstance(perm, Sequence) and tuple(perm) == CHANNELS_LAST_PERM and op.inputs[0].name in leaving:
            out.add(name)
    return frozenset(out)


def _scales_a_product(op: Op, producer: Mapping[str, str], readers: Mapping[str, Sequence[Op]], products: set[str]) -> bool:
    """``op`` (a Mul) multiplies a tensor by a one-element constant, the tensor made by one of
    ``products`` or the result read by them only."""
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        return False
    for a, b in (op.inputs, op.inputs[::-1]):
        if not (b.is_weight and b.elements == 1):
            continue
        after = producer.get(a.name) in products
        after_it = {r.name for r in readers.get(op.outputs[0].name, ())}
        before = bool(after_it) and after_it <= products
        if after or before:
            return True
    return False


def _head_kernels(heads: Mapping[str, str], kernels: Mapping[str, str]) -> dict[str, str]:
    """``kernels`` with each call head (:func:`_call_heads`) run as its call's ``QuickGelu`` kernel."""
    return {**kernels, **{h: "QuickGelu" for h, c in heads.items() if kernels.get(c) == "QuickGelu"}}


def _run_fusions(fusions: Sequence[Fusion], calls: Mapping[str, Sequence[str]], kernels: Mapping[str, str]) -> list[Fusion]:
    """The ``fusions`` onnxruntime runs as kernels: those outside every expanded call, and those
    inside a call whose kernel is that fused kernel or folds it in (:data:`KERNEL_ALIASES`: a
    lowered ``SkipLayerNormalization``'s Add + LayerNormalization, a ``BiasGelu``'s Gelu). Another
    call's kernel does the pattern its own way: a lowered ``EmbedLayerNormalization`` holds an Add
    + LayerNormalization, which its kernel normalizes inline after the embedding sum (the BERT
    saved by the transformer optimizer: 89-96 us for the whole kernel, where the
    SkipLayerNormalization kernel's rate priced that pattern alone at 169 us)."""
    where = _call_of(calls)
    out = []
    for f in fusions:
        owner = _owner(f, where)
        kind = kernels.get(owner or "", "")
        if owner is None or f.kernel.op_type in (kind, KERNEL_ALIASES.get(kind)):
            out.append(f)
    return out


def _call_of(calls: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Each op of an expanded call -> the call."""
    return {m: c for c, ms in calls.items() for m in ms}


def _owner(f: Fusion, where: Mapping[str, str]) -> str | None:
    """The call all of ``f``'s members lie in; None when none lies in a call, "" when they
    lie in several places (no kernel onnxruntime runs)."""
    owners = {where.get(m) for m in f.members}
    return owners.pop() if len(owners) == 1 else ""


def _with_fusions(calls: Mapping[str, Sequence[str]], fusions: Sequence[Fusion]) -> dict[str, list[str]]:
    """``calls`` (:func:`function_bodies`) with each fused kernel of onnxruntime's
    (:func:`~hwsim.host.ort_fusions.ort_fusions`) whose members all lie in one call counted as
    that call's: a lowered ``BiasGelu``'s Gelu pattern, run by onnxruntime as the call's one kernel."""
    where = _call_of(calls)
    out = {c: list(ms) for c, ms in calls.items()}
    for f in fusions:
        if owner := _owner(f, where):
            out[owner].append(f.kernel.name)
    return out


def _with_calls(
    nodes: tuple[NodeResult, ...], calls: Mapping[str, Sequence[str]], kernels: Mapping[str, str], meas: Mapping[str, float]
) -> tuple[NodeResult, ...]:
    """``nodes`` with the ops of each expanded call (:func:`function_bodies`) made one node, as
    onnxruntime ran it: named and typed as the call's kernel, its measurement, the sum of their
    predictions (:func:`_call_heads`: one dispatch for the call)."""
    if not calls:
        return nodes
    by_name = {n.name: n for n in nodes}
    out = [n for n in nodes if not any(n.name in ms for ms in calls.values())]
    for call, names in calls.items():
        parts = [by_name[m] for m in names]
        largest = max(parts, key=lambda n: n.predicted_ns)
        out.append(NodeResult(
            call, kernels.get(call, largest.op_type), False, sum(n.predicted_ns for n in parts), meas[call],
            sum(n.roof_ns for n in parts), sum(n.memory_ns for n in parts), sum(n.stall_ns for n in parts),
            largest.category, largest.threads_used,
        ))  # fmt: skip
    return tuple(out)


def _measure(
    model: onnx.ModelProto, feeds: Mapping[str, Any], threads: int, opt: str, runs: int, min_total_s: float,
    reference: tuple[float, int] | None, usual: float | None = None,
) -> tuple[Timing, dict[str, tuple[str, float]], float, bool | None]:  # fmt: skip
    """The timed runs, the profiled kernels, the host's speed against its fingerprint (1 when
    not normalizing), times already on the fingerprint's clock, and on several threads whether
    the other threads lagged before or after the timed runs (:mod:`hwsim.host.second_core`,
    against the host's ``usual`` speed-up; None on one thread)."""
    sess = make_session(model, threads, opt)
    along = threads_along(threads, usual=usual) if threads > 1 else None
    probe = _probe(reference, threads)
    measured = time_session(sess, feeds, runs=runs, warmup=3, min_total_s=min_total_s)
    lagged = None if along is None else not (along and threads_along(threads, usual=usual))
    prof = profile_nodes(model, feeds, threads, runs=max(5, runs // 2), opt=opt)
    if reference is None or probe is None:
        return measured, prof, 1.0, lagged
    after = _probe(reference, threads)
    speed = max(probe, after or 0.0) / reference[0]
    measured = Timing(tuple(t * speed for t in measured.samples_ns))
    return measured, {p: (kind, ns * speed) for p, (kind, ns) in prof.items()}, speed, lagged


def _probe(reference: tuple[float, int] | None, threads: int) -> float | None:
    """The fingerprint's MatMul rate now on ``threads`` threads (GFLOP/s), or None when not
    normalizing."""
    if reference is None:
        return None
    from hwsim.host.fingerprint import probe_gflops

    return probe_gflops(reference[1], threads)


def merge_rounds(vs: Sequence[Validation], pick: Callable[[Sequence[float]], float] = min) -> Validation:
    """Several rounds of one model (same chip, threads, opt) as one validation.

    Each round's figure is already a low quantile of its runs; over rounds the smallest is
    taken (the round least disturbed by other load; ``pick`` another estimate of the undisturbed
    time, :func:`hwsim.host.host_merge.fastest_half_median`), for the model and for each node,
    over the rounds whose other threads did not lag (:attr:`Validation.second_core_lagged`) where
    there are any. Their timing samples are pooled (for the spread) and every round's figure is
    kept in ``rounds_ns``. Predictions are the first round's (they do not depend on timing).

    Raises
    ------
    ValueError
        For no rounds, or rounds of different models.
    """
    from dataclasses import replace

    if not vs:
        raise ValueError("merge_rounds: no rounds")
    first = vs[0]
    if any(v.model != first.model or len(v.nodes) != len(first.nodes) for v in vs):
        raise ValueError(f"merge_rounds: rounds of different models ({', '.join(sorted({v.model for v in vs}))})")
    kept = [v for v in vs if not v.lagged] or list(vs)
    nodes = tuple(
        replace(n, measured_ns=pick([v.nodes[i].measured_ns for v in kept])) for i, n in enumerate(first.nodes)
    )
    return replace(
        first, measured=Timing(tuple(s for v in kept for s in v.measured.samples_ns)), nodes=nodes,
        inserted_ns=pick([v.inserted_ns for v in kept]), profiled_total_ns=pick([v.profiled_total_ns for v in kept]),
        measured_ns=pick([r for v in kept for r in v.rounds_ns]), rounds_ns=tuple(r for v in vs for r in v.rounds_ns),
        speeds=tuple(x for v in vs for x in v.speeds), second_core_lagged=tuple(x for v in vs for x in v.second_core_lagged),
    )  # fmt: skip


def op_type_rows(validations: Iterable[Validation], min_ns: float = 0.0) -> list[OpTypeRow]:
    """Per op type over the kernels that ran on their own (fused nodes excluded), slowest first.

    ``min_ns`` drops nodes measured faster than that from the median error (timer noise).
    """
    by: dict[str, list[NodeResult]] = {}
    for v in validations:
        for n in v.nodes:
            if not n.fused and n.measured_ns > 0:
                by.setdefault(n.op_type, []).append(n)
    rows = []
    for t, ns in by.items():
        errs = [abs(n.predicted_ns / n.measured_ns - 1) for n in ns if n.measured_ns >= min_ns] or [
            abs(n.predicted_ns / n.measured_ns - 1) for n in ns
        ]
        rows.append(OpTypeRow(t, len(ns), sum(n.predicted_ns for n in ns), sum(n.measured_ns for n in ns),
                              statistics.median(errs)))  # fmt: skip
    return sorted(rows, key=lambda r: -r.measured_ns)


def format_validation(vs: Sequence[Validation]) -> str:
    """Terminal text: one line per model, then the per-op-type table."""
    lines = [f"{'model':<16} {'predicted':>11} {'measured':>11} {'spread':>7} {'error':>7}  fused  inserted kernels"]
    for v in vs:
        nf = sum(n.fused for n in v.nodes)
        ins = f"{v.inserted_ns / 1e6:.3f} ms ({', '.join(v.inserted_ops)})" if v.inserted_ops else "-"
        lines.append(
            f"{v.model:<16} {v.predicted_ns / 1e6:>8.3f} ms {v.measured_ns / 1e6:>8.3f} ms "
            f"{v.measured.spread:>6.1%} {v.error:>+7.1%}  {nf:>5}  {ins}" + ("  [other threads lagged]" if v.lagged else "")
        )
    lines.append("")
    lines.append(f"{'op type':<24} {'kernels':>7} {'predicted':>11} {'measured':>11} {'median |err|':>12}")
    for r in op_type_rows(vs):
        lines.append(f"{r.op_type:<24} {r.nodes:>7} {r.predicted_ns / 1e6:>8.3f} ms {r.measured_ns / 1e6:>8.3f} ms "
                     f"{r.median_abs_error:>12.1%}")  # fmt: skip
    return "\n".join(lines)


def lag_note(vs: Iterable[Validation], threads: int) -> str | None:
    """One line naming the models measured only while the other threads lagged
    (:attr:`Validation.lagged`), and why; None where there are none."""
    lagged = [v.model for v in vs if v.lagged]
    if not lagged:
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    why = (f"this process may use {cpus} CPU(s)" if threads > cpus
           else "another tenant, or the VM's other vCPU in a slow spell")  # fmt: skip
    return (f"note: {', '.join(lagged)} measured only while the other {threads - 1} thread(s) lagged (a chain of "
            f"MatMuls ran under {MIN_SHARE:.0%} of the host's usual speed-up on {threads} threads, before or after "
            f"the model: {why}); hwsim predicts the host with every thread working along: measure again later, "
            "or with more --rounds")  # fmt: skip


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record(v: Validation, model_path: str | Path, chip: Chip, chip_path: str | Path | None,
           int8: Int8Check | None = None) -> dict[str, Any]:  # fmt: skip
    """The JSON record of one validation (model, chip, fingerprint, prediction, measurement);
    ``int8``: the int8 GEMM check of a model with integer kernels (:mod:`hwsim.host.int8_check`)."""
    from hwsim.host.fingerprint import read_fingerprint

    fp = read_fingerprint(Path(chip_path)) if chip_path is not None and Path(chip_path).is_file() else None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": {"name": v.model, "path": str(model_path), "sha256": _sha256(model_path)},
        "chip": {"name": chip.name, "path": str(chip_path) if chip_path else None, "calibration": chip.calibration,
                 "unit": chip.model_dump(mode="json")["units"][0] if len(chip.units) == 1 else None},
        "fingerprint": fp,
        "threads": v.threads,
        "opt": v.opt,
        "predicted_ns": v.predicted_ns,
        "run_ns": v.run_ns,
        "measured": {"low_ns": v.measured_ns, "rounds_ns": list(v.rounds_ns), "median_ns": v.measured.median_ns,
                     "spread": v.measured.spread, "samples_ns": list(v.measured.samples_ns)},
        "error": v.error,
        "inserted_ns": v.inserted_ns,
        "profiled_total_ns": v.profiled_total_ns,
        "speed_vs_fingerprint": list(v.speeds),
        "other_threads_lagged": list(v.second_core_lagged),
        "int8_gemm_vs_fingerprint": None if int8 is None else int8.ratio,
        "nodes": [[n.name, n.op_type, n.fused, n.predicted_ns, n.measured_ns, n.roof_ns, n.memory_ns, n.stall_ns,
                   n.category] for n in v.nodes],
    }  # fmt: skip


def append_record(path: Path, rec: Mapping[str, Any]) -> None:
    """Append one JSON line to ``path`` (created with its folder if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")


def repredict(v: Validation, chip: Chip, model_path: str | Path,
              shapes: Mapping[str, Sequence[int]] | None = None) -> Validation:  # fmt: skip
    """``v`` with its predictions redone on ``chip`` (same measurement, same fused nodes)."""
    from dataclasses import replace

    graph = graph_as_run(model_path, shapes)
    fused = {n.name for n in v.nodes if n.fused}
    kernels = {n.name: n.op_type for n in v.nodes if not n.fused}
    calls = function_bodies(graph, kernels)
    heads = _call_heads(graph, calls, kernels)
    fused |= {m for ms in calls.values() for m in ms} - heads.keys()
    names = {n.name for n in v.nodes}
    found = _run_fusions(ort_fusions(graph), calls, kernels)
    grouped = _with_fusions(calls, found)
    inside = {k for ks in grouped.values() for k in ks}  # the calls' ops and the fused kernels among them
    fusions = [f for f in found if f.kernel.name in names or f.kernel.name in inside]
    reorders = [*nchwc_reorders(graph, v.nchwc_block), *(f.kernel for f in fusions), *_qdq_transposes(graph, kernels, fused)]
    members = _costing_nothing(graph, fusions, calls, heads, reorders, fused)
    one = cpu_chip(chip, v.threads)
    pred = predict_nodes(graph, one, v.threads, fused, _head_kernels(heads, kernels), reorders, members,
                         work_factors(graph, v.nchwc_block, *_block_rates(one)), {**layout_kernels(graph, v.nchwc_block, fused),
                         **denormal_softmaxes(graph, onnx.load(str(model_path), load_external_data=False))})  # fmt: skip
    meas = {n.name: n.measured_ns for n in v.nodes}
    nodes = tuple(NodeResult(name, p.op_type, name in fused, p.predicted_ns, meas.get(name, 0.0), p.roof_ns, p.memory_ns,
                             p.stall_ns, p.category, p.threads_used, p.step_sections, p.step_sections_ns)
                  for name, p in pred.items() if name in names or name in inside)  # fmt: skip
    return replace(v, chip=chip.name, nodes=_with_calls(nodes, grouped, kernels, meas))
