"""Rates of onnxruntime CPU kernels that run on a structure of their own, measured for a
fingerprint: the matrix-vector product of a recurrent step (``gemv_gbps``; ``gemv_l1_gbps`` for a
matrix that fits the L1, ``gemv_far_gbps`` for one four times the L2) and the radix-2
FFT of STFT/DFT (``fft_butterfly_ns``, ``fft_point_ns``). See :mod:`cost_models.cpu`
(:func:`~cost_models.cpu.recurrent_steps_ns`, :func:`~cost_models.cpu.fft_ns`) for how they are used.
Also the time per element of onnxruntime's ``LayerNormalization`` (:data:`LAYER_NORM_RATE`), which
no calibration model runs as its own kernel (BERT's run fused as ``SkipLayerNormalization``): a
fingerprinted chip gets it as that op type's efficiency (:func:`streaming_efficiency`). Likewise
the time per output element of the Resize kernel classes no calibration model runs
(:data:`RESIZE_RATES`: nearest with the default coordinates, linear on plain and on NCHWc-blocked
tensors; :func:`~cost_models.cpu.resize_kernel`), profiled (:func:`resize_ns`).

What each span of the broadcast looper adds to a binary elementwise kernel whose inputs broadcast
(``broadcast_span_ns``, :func:`broadcast_span_from`; :func:`~cost_models.cpu.broadcast_spans`).

The one-row float Gemm (``fp32_gemv_call_ns``, ``fp32_gemv_gbps``, :func:`float_gemv_from`): MLAS's
kernel for a batch-1 Linear layer, not the recurrent step's.

And the L2 one onnxruntime run call takes for itself from a weight stream read once per run
(``run_footprint_kib``, :func:`run_footprint_kib`; :func:`~cost_models.cpu.run_levels`).
On several threads, what one split product of a recurrent step pays the intra-op pool
(``step_handoff_ns``, :func:`step_handoffs`), read only while the second core works along.

Each figure is a difference of two runs of the same kernel that differ only in the number of
steps or frames, so the per-run dispatch cancels; each run is its fastest of several (the
kernels are short enough to run in one time slice on a shared machine).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from chips.schema import Chip, CpuUnit
from cost_models.cpu import (
    MLAS_SGEMM_PACKED_STRIDE_K,
    NCHWC_ATTR,
    RECURRENT_GATE_NS,
    RECURRENT_STEP_GEMMS,
    RECURRENT_STEP_NS,
    calibrated_efficiency,
    calibration_basis_ns,
    cyclic_capacity_bytes,
    integer_conv_ns,
    intra_op_threads,
    kernel_type,
    missed_butterflies,
    recurrent_sections,
    recurrent_time,
    requant_ns,
    revisit_bytes,
    sections_ns,
    step_handoff_ns,
)
from cost_models.cpu_layout import LINE_BYTES
from cost_models.table import estimate, steady_state_unit
from graph_ir.ir import ModelGraph, Op, Tensor
from graph_ir.onnx_import import from_model_proto
from graph_ir.op_metrics import metrics
from hwsim.host.depthwise_probe import BLOCK as DEPTHWISE_BLOCK
from hwsim.host.depthwise_probe import DEPTHWISE_DERIVED, depthwise_fields, depthwise_times
from hwsim.host.gather_probe import GATHER_DRAM_DERIVED, gather_dram_from, gather_dram_times
from hwsim.host.grouped_probe import grouped_times
from hwsim.host.int8_probe import (
    GEMV_LAYERS,
    INT8_RATES,
    conv_call_from,
    conv_call_times,
    conv_l2_mac_from,
    conv_mac_from,
    conv_pixel_from,
    gemv_call_from,
    gemv_call_times,
    gemv_far_from,
    im2col_pixel_from,
    int8_kernel_ns,
    pack_from,
    probe_kernels,
    requant_from,
)
from hwsim.host.measure import best_run_ns, make_session, nchwc_block, profile_nodes, time_session
from hwsim.host.nchwc_probe import NCHWC_DERIVED, nchwc_times
from hwsim.host.op_probes import probe_efficiencies, probe_rates
from hwsim.host.second_core import CHECK_COUNT, CHECK_N, MIN_SHARE, matmul_chain, speedup
from hwsim.host.softmax_probe import SOFTMAX_TAIL_FIELDS, softmax_tail_rates

__all__ = [
    "ALIAS_PROBE",
    "BATCH_CALL_PROBE",
    "BROADCAST_DERIVED",
    "BROADCAST_PROBES",
    "COL2IM_PROBES",
    "DIRECTION_FIELDS",
    "DIRECTION_PROBE",
    "FFT_DERIVED",
    "FFT_PROBES",
    "FFT_STRIDE_DERIVED",
    "FFT_STRIDE_PROBES",
    "FLOAT_GEMV_DERIVED",
    "FLOAT_GEMV_PROBES",
    "GATHER_ROW_PROBE",
    "HANDOFF_PROBES",
    "IM2COL_FIELDS",
    "IM2COL_PROBE",
    "LAYER_NORM_RATE",
    "MEMCPY_PROBE",
    "NCHWC_BLOCK_PROBE",
    "NORM_PROBE",
    "NORM_ROW_PROBE",
    "OUTWARD_FACTORS",
    "PASS_LINES_PROBE",
    "REDERIVED",
    "RESIZE_PROBE",
    "RESIZE_RATES",
    "ROW_PACK_DERIVED",
    "ROW_PACK_PROBES",
    "ROW_PACK_SHAPE",
    "SETUP_PROBED",
    "SETUP_PROBES",
    "SINGLE_AXIS_FIELDS",
    "SINGLE_AXIS_PROBES",
    "SLICE_RUN_PROBE",
    "SLICE_STEP_PROBE",
    "SOFTMAX_PROBE",
    "WALK_PROBE",
    "batch_call_ns",
    "broadcast_probe",
    "broadcast_span_from",
    "broadcast_times",
    "col2im_rates",
    "direction_setups",
    "far_hidden",
    "fft_constants",
    "fft_frame_times",
    "fft_from",
    "fft_stride_from",
    "fft_stride_times",
    "float_gemv_from",
    "float_gemv_probe",
    "float_gemv_times",
    "gather_row_ns",
    "gemm_aliased_factor",
    "gemm_revisit_gbps",
    "gemv_rate",
    "handoff_probe",
    "handoff_times",
    "im2col_rates",
    "int8_efficiencies",
    "kernel_efficiency",
    "kernel_rates",
    "kernel_setups",
    "l1_hidden",
    "layer_norm_ns",
    "memcpy_unit_ns",
    "nchwc_block_efficiencies",
    "near_hidden",
    "norm_row_ns",
    "op_chain",
    "parallel_section_ns",
    "pass_lines_from",
    "per_element_efficiencies",
    "rederived",
    "reduce_block_ns",
    "reduce_column_row_ns",
    "reduce_generic_ns",
    "reduce_row_ns",
    "resize_ns",
    "resize_probe",
    "row_pack_from",
    "row_pack_times",
    "row_product_probe",
    "run_footprint_kib",
    "setup_probe",
    "setup_times",
    "single_axis_rates",
    "slice_run_ns",
    "slice_step_element_ns",
    "softmax_denormal_ns",
    "softmax_row_ns",
    "step_handoffs",
    "streaming_efficiency",
    "transpose_element_ns",
]  # fmt: skip

#: Key of :func:`kernel_rates`' figure for ``LayerNormalization``: ns per element, not a chip field.
LAYER_NORM_RATE = "layer_norm_ns_per_element"
#: The LayerNormalization probe: rows of this many floats, and two row counts (0.2 and 0.8 MB:
#: in L2 on any CPU this project runs on).
NORM_PROBE = (768, 64, 256)
#: Resize kernel classes (:func:`cost_models.cpu.resize_kernel`) the fingerprint measures, and the
#: key of each one's ns per output element in :func:`kernel_rates` (not chip fields).
RESIZE_RATES: Mapping[str, str] = {
    "ResizeNearest": "resize_nearest_ns_per_output",
    "ResizeLinear": "resize_linear_ns_per_output",
    "ResizeLinearNchwc": "resize_linear_nchwc_ns_per_output",
}
#: The Resize probe: 2x upsampling of this many channels over a square plane of this side
#: (out 1.2 MB: in L2 or L3 on any CPU this project runs on; a multiple of 16 channels, so no
#: NCHWc padding).
RESIZE_PROBE = (32, 48)

#: Side and count of the MatMuls :func:`parallel_section_ns` times (the smallest cube MLAS splits in two).
SECTION_PROBE_N, SECTION_PROBE_COUNT = 48, 64
#: Side of the MatMuls that check that the second core works along, and the speed-up on two
#: threads they must reach for the section and the hand-offs to be read: :data:`MIN_SHARE` of a
#: host's usual speed-up, itself up to :data:`MIN_SHARE` short of two (:mod:`hwsim.host.second_core`'s
#: check against the host's own speed-up). The check chains run 1.67-1.81x on the CI Xeon's two
#: vCPUs idle and 1.28x in a lag, 1.76-1.81x on the AMD EPYC: against 1.8x the EPYC's fingerprint
#: read no hand-off in three rounds (2026-12-07 23:41) and priced its recurrent models at 2 threads
#: 1.6x slow with the 2 us default.
SECTION_CHECK_N, SECTION_MIN_SPEEDUP = CHECK_N, 2 * MIN_SHARE * MIN_SHARE


def _model(node: onnx.NodeProto, x: np.ndarray, inits: Mapping[str, np.ndarray], same_type: bool = False) -> onnx.ModelProto:
    """A one-node model of ``node`` over the input ``x`` (its shape and element type) and ``inits``;
    its output a float, or of ``x``'s type where ``same_type``."""
    x_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "k", [helper.make_tensor_value_info("x", x_type, list(x.shape))],
        [helper.make_tensor_value_info(node.output[0], x_type if same_type else TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _fastest_ns(model: onnx.ModelProto, x: np.ndarray | Mapping[str, np.ndarray], rounds: int) -> float:
    """The fastest timed run of ``model`` on one thread over ``rounds`` rounds, fed ``x`` (its one
    input ``x``) or the feeds given."""
    sess = make_session(model, 1, "all")
    feeds = {"x": x} if isinstance(x, np.ndarray) else x
    return min(time_session(sess, feeds, runs=20, warmup=3, min_total_s=0.02).min_ns for _ in range(rounds))


def _fastest_kernel_ns(model: onnx.ModelProto, x: np.ndarray, rounds: int) -> float:
    """The fastest profiled kernel time of the one-node ``model`` fed ``x`` (its input ``x``) over
    ``rounds`` profiled runs of 10, ns: a timed run would add what onnxruntime does with the graph's
    output, which a kernel inside a model does not pay."""
    return min(ns for _ in range(rounds) for _, ns in profile_nodes(model, {"x": x}, runs=10).values())


def _recurrent_weights(op_type: str, hidden: int, dirs: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``W`` (one input feature) and ``R`` of an ``op_type`` (LSTM or GRU) of ``hidden`` and
    ``dirs`` directions, its gate blocks those of its step products
    (:data:`~cost_models.cpu.RECURRENT_STEP_GEMMS`)."""
    rows = sum(RECURRENT_STEP_GEMMS[op_type]) * hidden
    return {"W": (rng.standard_normal((dirs, rows, 1)) * 0.05).astype(np.float32),
            "R": (rng.standard_normal((dirs, rows, hidden)) * 0.05).astype(np.float32)}  # fmt: skip


def gemv_rate(hidden: int = 256, rounds: int = 5) -> float | None:
    """GB/s at which onnxruntime's LSTM step streams its recurrent weights ``R`` (16 hidden² bytes,
    1 MiB at hidden 256; the fingerprint takes :func:`near_hidden` to keep it in L2; one input
    feature, so no input projection to speak of): (64-step run - 16-step run) / 48 is one step,
    less :data:`~cost_models.cpu.RECURRENT_STEP_NS` and the gate work. None when not resolved."""
    rng = np.random.default_rng(0)
    # one input feature: the input projection X·Wᵀ all steps share is negligible
    w = _recurrent_weights("LSTM", hidden, 1, rng)
    node = helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=hidden)
    xs = {s: rng.standard_normal((s, 1, 1)).astype(np.float32) for s in (16, 64)}
    t = {s: _fastest_ns(_model(node, x, w), x, rounds) for s, x in xs.items()}
    step_ns = (t[64] - t[16]) / 48 - RECURRENT_STEP_NS - RECURRENT_GATE_NS["LSTM"] * 4 * hidden
    return 16 * hidden * hidden / step_ns if step_ns > 0 else None


#: The recurrent set-up probe (:func:`direction_setups`): hidden size, and the two step counts
#: whose times give each run's time at no steps.
DIRECTION_PROBE = (8, 4, 16)
#: The chip field :func:`direction_setups` measures per op type.
DIRECTION_FIELDS = {"LSTM": "lstm_direction_ns", "GRU": "gru_direction_ns"}


def direction_setups(rounds: int = 5) -> dict[str, float]:
    """What onnxruntime's LSTM and GRU pay per direction beside their steps
    (:func:`cost_models.cpu.direction_setup_ns`): a run's time at no steps (from
    :data:`DIRECTION_PROBE`'s two step counts; one input feature, hidden 8, so no weight pass or
    projection to speak of) bidirectional less forward. The dispatch cancels. On an AMD EPYC
    (Zen 5): 1.6-1.75 us for the LSTM, 1.0-1.14 for the GRU. A figure not resolved (not positive)
    is left out."""
    hidden, short, long = DIRECTION_PROBE
    rng = np.random.default_rng(0)
    xs = {s: rng.standard_normal((s, 1, 1)).astype(np.float32) for s in (short, long)}
    out: dict[str, float] = {}
    for op, field in DIRECTION_FIELDS.items():
        at_none = []
        for dirs in (1, 2):
            w = _recurrent_weights(op, hidden, dirs, rng)
            node = helper.make_node(op, ["x", "W", "R"], ["y"], hidden_size=hidden,
                                    direction="bidirectional" if dirs == 2 else "forward")  # fmt: skip
            t = {s: _fastest_ns(_model(node, x, w), x, rounds) for s, x in xs.items()}
            at_none.append(t[short] - short * (t[long] - t[short]) / (long - short))
        if at_none[1] > at_none[0]:
            out[field] = at_none[1] - at_none[0]
    return out


def parallel_section_ns(kernel_ns: float, rounds: int = 5) -> float | None:
    """What one parallel section of onnxruntime's intra-op thread pool costs (hand the work
    out, join), ns: :data:`SECTION_PROBE_COUNT` MatMuls of :data:`SECTION_PROBE_N` cubed (110 k
    MACs: MLAS splits them over 2 threads, ``MACs / 64 Ki + 1``; in L1) timed on one thread and
    on two. Per kernel, less the dispatch ``kernel_ns``, the split one takes half its
    one-thread work plus the section. Each figure is the fastest of ``rounds``, interleaved.

    Only where the second core works along: the same chain of :data:`SECTION_CHECK_N` cubed
    MatMuls (work enough to hide a section) must run :data:`SECTION_MIN_SPEEDUP` (1.62) times faster
    on two threads. On a busy machine it does not (the calling thread then runs both halves
    itself, without the hand-over: the probe read 0.75-0.96 us there, where the idle 2-thread
    tables fit ~2 us per section), and the figure is None (not resolved)."""
    best: dict[tuple[int, int], float] = {}
    sessions = {}
    for n in (SECTION_PROBE_N, SECTION_CHECK_N):
        model, x = matmul_chain(n, SECTION_PROBE_COUNT)
        for t in (1, 2):
            sessions[n, t] = make_session(model, t, "all"), x
            best[n, t] = math.inf
    for _ in range(rounds):  # interleaved: a burst of other load hits all alike
        for key, (sess, x) in sessions.items():
            best[key] = min(best[key], time_session(sess, {"x": x}, runs=20, warmup=3, min_total_s=0.02).min_ns)
    per = {key: ns / SECTION_PROBE_COUNT - kernel_ns for key, ns in best.items()}
    if per[SECTION_CHECK_N, 1] < SECTION_MIN_SPEEDUP * per[SECTION_CHECK_N, 2]:
        return None
    section = per[SECTION_PROBE_N, 2] - per[SECTION_PROBE_N, 1] / 2
    return section if section > 0 and per[SECTION_PROBE_N, 1] > 0 else None


#: The weight stream :func:`run_footprint_kib` times: two square matrices of this many times the L2
#: together (between the L2 less a run's footprint and twice the L2: part of it hits in both cases).
FOOTPRINT_PROBE_L2 = 1.3


def _gemm_passes(n: int, passes: int) -> tuple[onnx.ModelProto, np.ndarray]:
    """A batch-1 chain ``x -> W1 -> W2 -> W1 -> W2 ...``: ``passes`` passes over two ``n x n``
    matrices (MLAS's matrix-vector kernel, as an MLP's Gemm layers run)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((n, n)) * 0.03).astype(np.float32), w) for w in ("W1", "W2")]
    nodes, x = [], "x"
    for i in range(2 * passes):
        nodes.append(helper.make_node("Gemm", [x, f"W{i % 2 + 1}"], [f"y{i}"], transB=1))
        x = f"y{i}"
    graph = helper.make_graph(nodes, "gemv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model, (rng.standard_normal((1, n)) * 0.03).astype(np.float32)


def run_footprint_kib(
    l2_bytes: float, near_gbps: float, far_gbps: float, run_ns: float, kernel_ns: float, rounds: int = 5
) -> float | None:
    """KiB of L2 one onnxruntime run call takes for itself from a weight stream the model reads
    once per run: two matrices of :data:`FOOTPRINT_PROBE_L2` times ``l2_bytes`` passed once and
    three times per run (fastest of ``rounds``, interleaved). The first pass of a run (less the run
    call ``run_ns``) and a later one ((3 passes - 1) / 2), each less two kernels ``kernel_ns``, read
    as the capacity a cyclic stream keeps (:func:`~cost_models.cpu.cyclic_capacity_bytes`, at
    ``near_gbps`` from L2 and ``far_gbps`` beyond); the difference is what the run call evicted.
    Measured under load (2.5 MiB): 1.84 MiB kept from the second pass on, 1.62 MiB on the first.
    The figure is a difference of two capacities, each read from a rate: one reading swung from
    50 to 320 KiB between two fingerprints in a row, so it is the median of :data:`FOOTPRINT_REPEATS`
    readings. None when not resolved (by most of them)."""
    readings = [_footprint_once(l2_bytes, near_gbps, far_gbps, run_ns, kernel_ns, rounds) for _ in range(FOOTPRINT_REPEATS)]
    kib = sorted(r for r in readings if r is not None)
    return float(np.median(kib)) if 2 * len(kib) > len(readings) else None


#: How many readings :func:`run_footprint_kib` takes the median of.
FOOTPRINT_REPEATS = 5


def _footprint_once(
    l2_bytes: float, near_gbps: float, far_gbps: float, run_ns: float, kernel_ns: float, rounds: int
) -> float | None:
    """One reading of :func:`run_footprint_kib`."""
    n = max(16, round(math.sqrt(FOOTPRINT_PROBE_L2 * l2_bytes / 8) / 16) * 16)
    nbytes = 2 * n * n * 4
    sessions = {k: (make_session(m, 1, "all"), x) for k in (1, 3) for m, x in [_gemm_passes(n, k)]}
    best = dict.fromkeys(sessions, math.inf)
    for _ in range(rounds):  # interleaved: a burst of other load hits both alike
        for k, (sess, x) in sessions.items():
            best[k] = min(best[k], time_session(sess, {"x": x}, runs=20, warmup=3, min_total_s=0.01).min_ns)
    first = best[1] - run_ns - 2 * kernel_ns
    later = (best[3] - best[1]) / 2 - 2 * kernel_ns
    if first <= 0 or later <= 0:
        return None
    kept_first = cyclic_capacity_bytes(nbytes, nbytes / first, near_gbps, far_gbps)
    kept_later = cyclic_capacity_bytes(nbytes, nbytes / later, near_gbps, far_gbps)
    if kept_first is None or kept_later is None:
        return None
    return max(0.0, kept_later - kept_first) / 1024


#: One-row float Gemm probes by their time's key: ``(K, N)`` of the :data:`GEMV_LAYERS` Gemms that
#: read the same row (:func:`float_gemv_times`), 16 and 192 KiB of weights each (the large ones
#: 768 KiB together, in the L2 of any CPU this project runs on); the fixed cost per call and the
#: weight stream's rate in L2 from the two (:func:`float_gemv_from`). Weights from beyond L2 stream
#: at the lower of this and ``gemv_far_gbps`` (:func:`cost_models.cpu._far_gemv_gbps`). The large
#: Gemms were 1 MiB each until 2026-12-05: 4 MiB together, which an AMD EPYC streamed at one rate
#: from L2 and L3 (78 GB/s), but an Intel Xeon at its L3's 27 GB/s where it runs 133 from L2, so
#: the 784-256-256-10 MLP, 1 MiB of weights in L2, came out 3.2x slow.
FLOAT_GEMV_PROBES: Mapping[str, tuple[int, int]] = {"gemm_gemv_small_probe_ns": (256, 16),
                                                    "gemm_gemv_large_probe_ns": (256, 192)}  # fmt: skip
#: The chip fields :func:`float_gemv_from` derives (again from the merged probe times when
#: ``hwsim fingerprint --calibrate`` merges its rounds).
FLOAT_GEMV_DERIVED = ("fp32_gemv_call_ns", "fp32_gemv_gbps")


def float_gemv_probe(k: int, n: int, layers: int = GEMV_LAYERS) -> onnx.ModelProto:
    """x (one row of ``k``) -> ``layers`` Gemms with ``n`` x ``k`` float weights (``transB``, and a
    bias, as PyTorch exports a Linear layer), each reading x (``layers`` 0: an Identity alone)."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    for i in range(layers):
        inits += [numpy_helper.from_array((rng.standard_normal((n, k)) * 0.05).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(n, np.float32), f"b{i}")]  # fmt: skip
        nodes.append(helper.make_node("Gemm", ["x", f"w{i}", f"b{i}"], [f"y{i}"], transB=1))
    nodes = nodes or [helper.make_node("Identity", ["x"], ["y0"])]
    graph = helper.make_graph(nodes, "gemv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info(nd.output[0], TensorProto.FLOAT, None) for nd in nodes],
                              inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def float_gemv_times(rounds: int = 3) -> dict[str, float]:
    """What one one-row float ``Gemm`` adds to a timed run, ns, per :data:`FLOAT_GEMV_PROBES` key:
    :data:`GEMV_LAYERS` of them less the Identity alone, over :data:`GEMV_LAYERS`
    (:func:`hwsim.host.measure.best_run_ns`). About 0.3 s on an AMD EPYC."""
    x = {k: np.ones((1, k), np.float32) for k, _ in FLOAT_GEMV_PROBES.values()}
    models = {(key, layers): (float_gemv_probe(k, n, layers), x[k])
              for key, (k, n) in FLOAT_GEMV_PROBES.items() for layers in (0, GEMV_LAYERS)}  # fmt: skip
    best = best_run_ns(models, rounds)
    return {key: (best[key, GEMV_LAYERS] - best[key, 0]) / GEMV_LAYERS for key in FLOAT_GEMV_PROBES}


def float_gemv_from(rates: Mapping[str, float], kernel_ns: float) -> tuple[float, float] | None:
    """``(fp32_gemv_call_ns, fp32_gemv_gbps)`` (:func:`cost_models.cpu.one_row_call_ns`) from the
    two one-row ``Gemm`` times (:func:`float_gemv_times`) less the dispatch ``kernel_ns``: the weight
    stream's rate from their difference, the fixed cost per call from the small one's rest. On an
    AMD EPYC: 0.44 us and 78 GB/s, where the recurrent step's kernel streams at 103 GB/s from L2
    (``gemv_gbps``) and a 256 x 256 Gemm took 4.2-4.5 us, not the 2.8 that rate and the dispatch
    give; on an Intel Xeon 0.60 us and 135 GB/s (27 with the large Gemms' 4 MiB of the probe before
    2026-12-05, from its L3). None when a time is missing or a figure is not positive.

    >>> r = {"gemm_gemv_small_probe_ns": 250.0 + 440.0 + 16384 / 78, "gemm_gemv_large_probe_ns": 250.0 + 440.0 + 196608 / 78}
    >>> [round(v, 3) for v in float_gemv_from(r, 250.0)]
    [440.0, 78.0]
    """
    if not FLOAT_GEMV_PROBES.keys() <= rates.keys():
        return None
    (small_key, small), (large_key, large) = sorted(FLOAT_GEMV_PROBES.items(), key=lambda kv: kv[1][0] * kv[1][1])
    b_small, b_large = 4 * small[0] * small[1], 4 * large[0] * large[1]
    ns_per_byte = (rates[large_key] - rates[small_key]) / (b_large - b_small)
    call_ns = rates[small_key] - kernel_ns - ns_per_byte * b_small
    return (call_ns, 1.0 / ns_per_byte) if ns_per_byte > 0 and call_ns > 0 else None


#: The one-row product over a run-time matrix, timed without and with a folded scale
#: (:func:`row_pack_times`): key -> whether the product is scaled. ``fp32_pack_ns`` is their
#: difference per element of B (:func:`row_pack_from`).
ROW_PACK_PROBES: Mapping[str, bool] = {"row_product_probe_ns": False, "scaled_row_product_probe_ns": True}
#: The probe's B: heads, rows, columns (8 x 512 x 64 floats, 1 MiB: a decoding step's V cache in L2),
#: and how many products each model runs.
ROW_PACK_SHAPE, ROW_PACK_LAYERS = (8, 512, 64), 8
#: The chip field :func:`row_pack_from` derives.
ROW_PACK_DERIVED = ("fp32_pack_ns",)


def row_product_probe(scaled: bool, layers: int = ROW_PACK_LAYERS) -> onnx.ModelProto:
    """x ``(1, heads, rows, cols)`` -> a row per head ``p`` (x's mean over its columns, reshaped),
    then ``layers`` products ``(p + i) x`` of one row against x (each its own row, so that no two
    are merged), each times 0.125 where ``scaled`` (onnxruntime folds it into a ``FusedMatMul``'s
    alpha: MLAS then packs x, :func:`cost_models.cpu.row_pack_ns`)."""
    heads, rows, cols = ROW_PACK_SHAPE
    inits = [numpy_helper.from_array(np.array(0.125, np.float32), "alpha"),
             numpy_helper.from_array(np.array([1, heads, 1, rows], np.int64), "row")]  # fmt: skip
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1), helper.make_node("Reshape", ["m", "row"], ["p"])]
    outs = []
    for i in range(layers):
        inits.append(numpy_helper.from_array(np.array(i, np.float32), f"c{i}"))
        nodes.append(helper.make_node("Add", ["p", f"c{i}"], [f"p{i}"]))
        nodes.append(helper.make_node("MatMul", [f"p{i}", "x"], [f"s{i}" if scaled else f"y{i}"]))
        if scaled:
            nodes.append(helper.make_node("Mul", [f"s{i}", "alpha"], [f"y{i}"]))
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "row_product", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, heads, rows, cols])],
                              outs, inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def row_pack_times(rounds: int = 3) -> dict[str, float]:
    """The whole-run time of each :data:`ROW_PACK_PROBES` model, ns (:func:`hwsim.host.measure.best_run_ns`).
    About 0.2 s on an AMD EPYC."""
    x = np.random.default_rng(0).standard_normal((1, *ROW_PACK_SHAPE)).astype(np.float32)
    return best_run_ns({key: (row_product_probe(scaled), x) for key, scaled in ROW_PACK_PROBES.items()}, rounds)


def row_pack_from(rates: Mapping[str, float]) -> tuple[float] | None:
    """``(fp32_pack_ns,)`` from the two :func:`row_pack_times`: the scaled model's time less the plain
    one's, per product and element of B. On an AMD EPYC 0.100-0.103 ns over three fingerprints (a
    one-row product over 8 heads of 513 x 96 ran 24 us plain and 57-58 us scaled, transposed or
    not). None when a time is missing or the difference
    is not positive (no slower path on this build).

    >>> row_pack_from({"row_product_probe_ns": 50_000.0, "scaled_row_product_probe_ns": 50_000.0 + 8 * 262_144 * 0.09})
    (0.09,)
    """
    if not ROW_PACK_PROBES.keys() <= rates.keys():
        return None
    extra = rates["scaled_row_product_probe_ns"] - rates["row_product_probe_ns"]
    per = extra / (ROW_PACK_LAYERS * math.prod(ROW_PACK_SHAPE))
    return (round(per, 6),) if per > 0 else None


#: Op types whose per-element kernel's fixed time per call the fingerprint measures
#: (:func:`setup_times`, chip field ``kernel_setup_ns``), chained on :data:`SETUP_PROBE_ELEMENTS`
#: values (a binary op with a constant of that shape). Not the Q/DQ kernels: they pay no set-up either
#: (a pair of 16 values took two dispatches on an AMD EPYC), but priced so they would expose a one-row
#: integer GEMM's shortfall at small N that their generic set-up covers (``docs/fidelity_cpu.md``).
SETUP_PROBED: tuple[str, ...] = ("Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Sqrt", "Abs")
SETUP_PROBE_ELEMENTS, SETUP_PROBE_LAYERS = 16, 8
#: Key of each op type's time per op in a chain (ns, dispatch included) in :func:`kernel_rates`
#: (not chip fields: ``kernel_setup_ns`` is derived from them, :func:`kernel_setups`).
SETUP_PROBES: Mapping[str, str] = {t: f"setup_probe_ns:{t}" for t in SETUP_PROBED}


def op_chain(op_type: str, layers: int, shape: tuple[int, ...], operand: tuple[int, ...] | str | None) -> onnx.ModelProto:
    """x (``shape`` floats) -> ``layers`` ``op_type`` s in a chain, each on the one before and
    ``operand``: a constant of that shape (its own values per layer), ``"x"`` (the input itself), or
    None (a unary op); 0 layers: an Identity alone. A ``Where`` takes the constant as its condition
    (true and false alternating), the one before as X and a scalar as Y."""
    inits, nodes, y = [], [], "x"
    for i in range(layers):
        ins = [y]
        if op_type == "Where" and isinstance(operand, tuple):
            inits.append(numpy_helper.from_array(np.arange(math.prod(operand)).reshape(operand) % 2 == i % 2, f"c{i}"))
            inits.append(numpy_helper.from_array(np.array(1.0 / (i + 2), np.float32), f"w{i}"))
            ins = [f"c{i}", y, f"w{i}"]
        elif isinstance(operand, tuple):
            inits.append(numpy_helper.from_array(np.full(operand, 1.0 + 1.0 / (i + 2), np.float32), f"c{i}"))
            ins.append(f"c{i}")
        elif operand is not None:
            ins.append(operand)
        nodes.append(helper.make_node(op_type, ins, [f"y{i}"]))
        y = f"y{i}"
    nodes = nodes or [helper.make_node("Identity", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def setup_probe(op_type: str, layers: int = SETUP_PROBE_LAYERS, n: int = SETUP_PROBE_ELEMENTS) -> onnx.ModelProto:
    """x (``n`` positive floats) -> ``layers`` ``op_type`` s in a chain (a binary one with a constant of
    x's shape; 0 layers: an Identity alone)."""
    binary = op_type in ("Add", "Sub", "Mul", "Div")
    return op_chain(op_type, layers, (1, n), (1, n) if binary else None)


def setup_times(rounds: int = 3) -> dict[str, float]:
    """Per :data:`SETUP_PROBES` key, what one op of that type adds to a timed run, ns: a chain of
    :data:`SETUP_PROBE_LAYERS` less the Identity alone, over the layers
    (:func:`hwsim.host.measure.best_run_ns`). About 1 s."""
    x = np.full((1, SETUP_PROBE_ELEMENTS), 0.5, np.float32)
    models = {op_type: (setup_probe(op_type), x) for op_type in SETUP_PROBED}
    best = best_run_ns({**models, "": (setup_probe("Abs", 0), x)}, rounds)
    return {SETUP_PROBES[t]: (best[t] - best[""]) / SETUP_PROBE_LAYERS for t in SETUP_PROBED}


def kernel_setups(rates: Mapping[str, float], kernel_ns: float) -> dict[str, float]:
    """``kernel_setup_ns`` (:func:`cost_models.cpu.kernel_setup_ns`): each probed op type's time per
    op in its chain (:func:`setup_times`) less the dispatch ``kernel_ns``, at least 0 (the work on
    16 values is a few ns), for those in ``rates``.

    >>> kernel_setups({SETUP_PROBES["Add"]: 300.0, SETUP_PROBES["Relu"]: 250.0}, 270.0)
    {'Add': 30.0, 'Relu': 0.0}
    """
    return {t: round(max(0.0, rates[k] - kernel_ns), 1) for t, k in SETUP_PROBES.items() if k in rates}


#: Broadcast probes by their time's key: the row length of the Adds ``[R, row] + [row]`` that
#: :func:`broadcast_times` chains, :data:`BROADCAST_PROBE_ELEMENTS` floats each (R spans of one row).
BROADCAST_PROBES: Mapping[str, int] = {"broadcast_probe_ns:16": 16, "broadcast_probe_ns:1024": 1024}
#: Floats in each broadcast probe's tensors (128 KiB: in L2 on any CPU this project runs on).
BROADCAST_PROBE_ELEMENTS = 32_768
#: The chip field :func:`broadcast_span_from` derives (again from the merged probe times when
#: ``hwsim fingerprint --calibrate`` merges its rounds).
BROADCAST_DERIVED = ("broadcast_span_ns",)


def broadcast_probe(row: int, layers: int = SETUP_PROBE_LAYERS, n: int = BROADCAST_PROBE_ELEMENTS) -> onnx.ModelProto:
    """x (``[n / row, row]`` floats) -> ``layers`` Adds in a chain, each with a constant row of
    ``row`` floats repeated over x's rows (0 layers: an Identity alone)."""
    return op_chain("Add", layers, (n // row, row), (row,))


def broadcast_times(rounds: int = 3) -> dict[str, float]:
    """What one Add of each :data:`BROADCAST_PROBES` key adds to a timed run, ns: a chain of
    :data:`SETUP_PROBE_LAYERS` less the Identity alone, over the layers
    (:func:`hwsim.host.measure.best_run_ns`). About 0.5 s."""
    models = {(key, layers): (broadcast_probe(row, layers), np.full((BROADCAST_PROBE_ELEMENTS // row, row), 0.5, np.float32))
              for key, row in BROADCAST_PROBES.items() for layers in (0, SETUP_PROBE_LAYERS)}  # fmt: skip
    best = best_run_ns(models, rounds)
    return {key: (best[key, SETUP_PROBE_LAYERS] - best[key, 0]) / SETUP_PROBE_LAYERS for key in BROADCAST_PROBES}


def broadcast_span_from(rates: Mapping[str, float]) -> float | None:
    """``broadcast_span_ns`` (:func:`cost_models.cpu.broadcast_spans_ns`) from the two broadcast
    probes' times (:func:`broadcast_times`): their difference over the difference of their span
    counts (the same floats, in rows of 16 and of 1024). None when a time is missing or the
    figure is not positive.

    >>> broadcast_span_from({"broadcast_probe_ns:16": 300.0 + 2048 * 9.0, "broadcast_probe_ns:1024": 300.0 + 32 * 9.0})
    9.0
    """
    if not BROADCAST_PROBES.keys() <= rates.keys():
        return None
    (short_key, short), (long_key, long) = sorted(BROADCAST_PROBES.items(), key=lambda kv: kv[1])
    spans = BROADCAST_PROBE_ELEMENTS // short - BROADCAST_PROBE_ELEMENTS // long
    span_ns = (rates[short_key] - rates[long_key]) / spans
    return span_ns if span_ns > 0 else None


#: The recurrent kernels whose pool hand-off per split step product the fingerprint measures on its
#: threads (:func:`handoff_times`; chip field ``step_handoff_ns``, :func:`step_handoffs`): one
#: direction of :data:`HANDOFF_HIDDEN` (each product of a step splits over two threads: an LSTM's
#: 1024 x 256, a GRU's 512 x 256 and 256 x 256; ``R`` 0.8-1 MiB) on one input feature (its input
#: projection, 43-57 k MACs at the longer run, does not split), at two step counts.
HANDOFF_PROBED: tuple[str, ...] = ("LSTM", "GRU")
HANDOFF_HIDDEN = 256
HANDOFF_STEPS = (8, 56)
#: MatMuls in the chain that checks, among the hand-off probes, that the second core works along.
HANDOFF_CHECK_COUNT = CHECK_COUNT
#: Key of each probe's whole-run time (ns, on the fingerprint's threads) in :func:`kernel_rates`,
#: by (op type, steps): not chip fields.
HANDOFF_PROBES: Mapping[tuple[str, int], str] = {(t, n): f"handoff_probe_ns:{t}:{n}" for t in HANDOFF_PROBED
                                                 for n in HANDOFF_STEPS}  # fmt: skip


def handoff_probe(op_type: str, steps: int, hidden: int = HANDOFF_HIDDEN) -> tuple[onnx.ModelProto, np.ndarray]:
    """One forward ``op_type`` (LSTM or GRU) of ``hidden`` over ``steps`` steps of one input
    feature, and its input."""
    rng = np.random.default_rng(hidden + steps)
    w = _recurrent_weights(op_type, hidden, 1, rng)
    node = helper.make_node(op_type, ["x", "W", "R"], ["y"], hidden_size=hidden)
    if op_type == "GRU":  # PyTorch's GRU form
        node.attribute.append(helper.make_attribute("linear_before_reset", 1))
    x = rng.standard_normal((steps, 1, 1)).astype(np.float32)
    return _model(node, x, w), x


def handoff_times(threads: int, rounds: int = 3) -> dict[str, float]:
    """Per :data:`HANDOFF_PROBES` key, the probe's whole run on ``threads`` intra-op threads, ns
    (:func:`hwsim.host.measure.best_run_ns`), where the second core works along: a chain of
    :data:`HANDOFF_CHECK_COUNT` MatMuls of :data:`SECTION_CHECK_N` cubed, timed among the probes,
    must run :data:`SECTION_MIN_SPEEDUP` times faster than on one thread; else empty (a slow spell
    of the other core: the probes would read its waits). About 2 s."""
    check = matmul_chain(SECTION_CHECK_N, HANDOFF_CHECK_COUNT)
    one = best_run_ns({"check": check}, rounds)["check"]
    best = best_run_ns({**{key: handoff_probe(*probe) for probe, key in HANDOFF_PROBES.items()}, "check": check},
                       rounds, threads)  # fmt: skip
    if one < SECTION_MIN_SPEEDUP * best["check"]:
        return {}
    return {key: best[key] for key in HANDOFF_PROBES.values()}


def _modelled_split(graph: ModelGraph, op_type: str, chip: Chip, threads: int) -> tuple[float, int]:
    """(the ``op_type`` op of the one-op ``graph``: its kernel on ``threads`` threads without its
    step hand-offs, ns; its split step products), as ``hwsim validate`` prices it in a loop of runs
    (:func:`~cost_models.table.steady_state_unit`): the core's rate split over the threads
    (:func:`~cost_models.cpu.recurrent_time`) and the sections outside the steps."""
    op = next(o for o in graph.ops() if o.op_type == op_type)
    unit = steady_state_unit(chip.units[0], graph, "model")
    assert isinstance(unit, CpuUnit)
    used = intra_op_threads(op, threads)
    products = recurrent_sections(op, used)[1] if used > 1 else 0
    e = calibrated_efficiency(op, unit) or 1.0
    split = recurrent_time(op, unit, chip, "fp32", op.weight_bytes(None), threads).calibrated_ns(e)
    return split + sections_ns(op, unit, used) - products * step_handoff_ns(op, unit), products


def step_handoffs(chip: Chip, rates: Mapping[str, float], threads: int) -> dict[str, float]:
    """``step_handoff_ns`` (:func:`cost_models.cpu.step_handoff_ns`): per probed op type, what its
    longer probe run takes beyond its shorter one (:func:`handoff_times`, on ``threads`` threads)
    less what ``chip``'s CPU model gives the extra steps without their hand-offs
    (:func:`_modelled_split`), over the extra split products; for those in ``rates`` and positive.
    On an AMD EPYC at 2 threads: 0.64 us (GRU) and 1.1 us (LSTM), where the model's default is 2 us
    and a parallel section measured 0.86 us; 3-4 us in one of the VM's slow spells of its second vCPU."""
    unit = chip.units[0]
    out: dict[str, float] = {}
    if threads <= 1 or not isinstance(unit, CpuUnit) or unit.gemv_gbps is None:
        return out  # (without the step's GEMV rate the model prices no recurrent split to read against)
    short, long = HANDOFF_STEPS
    for op_type in HANDOFF_PROBED:
        keys = (HANDOFF_PROBES[op_type, short], HANDOFF_PROBES[op_type, long])
        if not all(k in rates for k in keys):
            continue
        graphs = [from_model_proto(handoff_probe(op_type, n)[0]) for n in (short, long)]
        (a_ns, a_products), (b_ns, b_products) = (_modelled_split(g, op_type, chip, threads) for g in graphs)
        left = rates[keys[1]] - rates[keys[0]] - (b_ns - a_ns)
        if b_products > a_products and left > 0:
            out[op_type] = round(left / (b_products - a_products), 1)
    return out


def _stft_frame_ns(n: int, rounds: int) -> float:
    """One frame of an ``n``-point one-sided STFT: (80 frames - 16 frames) / 64."""
    hop = max(1, n // 2)
    node = helper.make_node("STFT", ["x", "hop", "win", "len"], ["y"], onesided=1)
    inits: dict[str, np.ndarray] = {"hop": np.array(hop, np.int64), "win": np.hanning(n).astype(np.float32),
                                    "len": np.array(n, np.int64)}
    xs = {f: np.ones((1, n + (f - 1) * hop, 1), np.float32) for f in (16, 80)}
    t = {f: _fastest_ns(_model(node, x, inits), x, rounds) for f, x in xs.items()}
    return (t[80] - t[16]) / 64


#: The frame lengths :func:`fft_frame_times` times: powers of two from 64 to 1024 points.
FFT_PROBE_LENGTHS = (64, 128, 256, 512, 1024)


#: Key of each probe length's frame time in :func:`kernel_rates` (not chip fields: the STFT
#: constants are derived from them, :func:`fft_from`, and again from the merged times when
#: ``hwsim fingerprint --calibrate`` merges its rounds).
FFT_PROBES: Mapping[int, str] = {n: f"stft_frame_ns_{n}" for n in FFT_PROBE_LENGTHS}
#: The chip fields :func:`fft_from` derives.
FFT_DERIVED = ("fft_butterfly_ns", "fft_point_ns")


def fft_constants(rounds: int = 5) -> tuple[float, float] | None:
    """``(fft_butterfly_ns, fft_point_ns)`` of onnxruntime's radix-2 STFT measured now: the frame
    times of :func:`fft_frame_times` fitted by :func:`fft_from`. Two lengths solved exactly (64 and
    1024, the first version) put a 5 % error at 64 points, times 16, into the butterfly: two
    fingerprints in a row read (2.16, 4.50) and (1.58, 5.99) and predicted the 1024-point frame
    10 % apart. None when not resolved."""
    return fft_from(fft_frame_times(rounds))


def fft_frame_times(rounds: int = 5) -> dict[str, float]:
    """The per-frame time of each length of :data:`FFT_PROBE_LENGTHS`, ns, under its
    :data:`FFT_PROBES` key."""
    return {FFT_PROBES[n]: _stft_frame_ns(n, rounds) for n in FFT_PROBE_LENGTHS}


def fft_from(rates: Mapping[str, float]) -> tuple[float, float] | None:
    """:data:`FFT_DERIVED` fitted to the frame times in ``rates`` (:data:`FFT_PROBES`) by least
    squares, ``t(n) = b n/2 log2 n + p n``, each length weighted by ``1/t`` (relative errors count
    alike); None without two of them or for a figure that is not positive. The two constants are
    nearly collinear over 64-1024 points: frame times steady to 1 % gave (1.93, 6.67), (2.03, 6.33)
    and (1.38, 8.59), all three within 1 % of every probe length, so rounds are merged by their
    frame times and fitted once: each constant merged on its own took a low butterfly from one
    round and a point cost from another, and predicted every STFT 8-10 % fast (AMD EPYC, 2026-12-04).

    >>> rates = {FFT_PROBES[n]: 2.0 * n / 2 * math.log2(n) + 6.0 * n for n in FFT_PROBE_LENGTHS}
    >>> [round(v, 6) for v in fft_from(rates)]
    [2.0, 6.0]
    >>> fft_from({}) is None
    True
    """
    frames = {n: rates[k] for n, k in FFT_PROBES.items() if k in rates}
    if len(frames) < 2 or min(frames.values()) <= 0:
        return None
    t = np.array(list(frames.values()), float)
    n = np.array(list(frames), float)
    a = np.stack([n / 2 * np.log2(n), n], axis=1) / t[:, None]
    (butterfly, point), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    return (float(butterfly), float(point)) if butterfly > 0 and point > 0 else None


#: The strided DFT probes: ``(chip field, probe time key, points, complex columns)``, transforms
#: along axis 1 of (1, points, columns, 2): two 1 KiB apart, 3 of 8 and 4 of 9 stages past a 32 KiB
#: L1 of 8 ways (:func:`~cost_models.cpu.strided_fft_stages`), and one 4 KiB apart (3 of 6). FNet's
#: transforms (128 points 2 KiB apart, 512 points 3 KiB apart) are held out of them.
FFT_STRIDE_PROBES = (("fft_stride_ns", "fft_stride_probe_ns:256x128", 256, 128),
                     ("fft_stride_ns", "fft_stride_probe_ns:512x128", 512, 128),
                     ("fft_page_stride_ns", "fft_stride_probe_ns:64x512", 64, 512))  # fmt: skip
#: The chip fields :func:`fft_stride_from` derives.
FFT_STRIDE_DERIVED = ("fft_stride_ns", "fft_page_stride_ns")


def fft_stride_times(rounds: int = 5) -> dict[str, float]:
    """The time of each strided DFT of :data:`FFT_STRIDE_PROBES`, ns, under its probe key."""
    out = {}
    for _, key, n, w in FFT_STRIDE_PROBES:
        x = np.random.default_rng(0).standard_normal((1, n, w, 2)).astype(np.float32)
        out[key] = _fastest_ns(_model(helper.make_node("DFT", ["x"], ["y"], axis=1), x, {}), x, rounds)
    return out


def fft_stride_from(rates: Mapping[str, float], l1_bytes: float) -> dict[str, float]:
    """:data:`FFT_STRIDE_DERIVED` (:func:`cost_models.cpu.strided_fft_ns`) on an L1 of ``l1_bytes``
    from the probe times in ``rates`` (:func:`fft_stride_times`): each field's probes' times over
    their butterflies in the stages past the L1; left out where they have none or no time.

    The strided times alone, not their differences from the same transforms on contiguous points:
    those moved 2.5x with the VM's state within an hour while the strided times held
    (:func:`~cost_models.cpu.strided_fft_ns`). On an AMD EPYC in its fast hour (2026-12-07): 25.2
    and 37.4 ns."""
    sums: dict[str, list[float]] = {}
    for field_name, key, n, w in FFT_STRIDE_PROBES:
        if key in rates:
            got = sums.setdefault(field_name, [0.0, 0.0])
            got[0] += rates[key]
            got[1] += w * missed_butterflies(n, 8 * w, l1_bytes)
    return {k: t / b for k, (t, b) in sums.items() if t > 0 and b > 0}


def layer_norm_ns(rounds: int = 5) -> float | None:
    """ns per element of onnxruntime's ``LayerNormalization`` over cache-resident rows
    (:data:`NORM_PROBE`): (256-row run - 64-row run) / (192 x 768), the dispatch cancelling.
    0.37-0.42 ns on the CI Xeon at 16 Ki to 150 Ki elements, where the CPU model's category default
    said 0.145. None when not resolved."""
    width, small, large = NORM_PROBE
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)
    inits = {"s": np.ones(width, np.float32), "b": np.zeros(width, np.float32)}
    rng = np.random.default_rng(0)
    xs = {r: rng.uniform(-1.0, 1.0, (1, r, width)).astype(np.float32) for r in (small, large)}
    t = {r: _fastest_ns(_model(node, x, inits), x, rounds) for r, x in xs.items()}
    ns = (t[large] - t[small]) / ((large - small) * width)
    return ns if ns > 0 else None


#: The per-row LayerNormalization probe: short rows of this many floats against the long rows of
#: :data:`NORM_PROBE`, at the long probe's element count.
NORM_ROW_PROBE = 32


def norm_row_ns(rounds: int = 5) -> float | None:
    """onnxruntime's ``LayerNormalization`` time per row (the chip field ``norm_row_ns``,
    :func:`cost_models.cpu.norm_rows_ns`): :func:`_row_ns`. About 16 ns on an AMD EPYC. None when
    not resolved."""
    return _row_ns("LayerNormalization", rounds)


def softmax_row_ns(rounds: int = 5) -> float | None:
    """onnxruntime's ``Softmax`` time per row (the chip field ``softmax_row_ns``,
    :func:`cost_models.cpu_layout.softmax_rows_ns`): :func:`_row_ns`. About 10 ns on an AMD EPYC.
    None when not resolved."""
    return _row_ns("Softmax", rounds)


def _row_ns(op_type: str, rounds: int) -> float | None:
    """The time per row of a kernel ``op_type`` that works a row (its last axis) at a time: the
    same elements in rows of :data:`NORM_ROW_PROBE` floats and in rows of :data:`NORM_PROBE`'s width,
    (short - long) / (their row counts' difference); a LayerNormalization with a scale and a bias."""
    width, _, large = NORM_PROBE
    elements = large * width
    rng = np.random.default_rng(0)
    t = {}
    for w in (NORM_ROW_PROBE, width):
        norm = op_type == "LayerNormalization"
        node = helper.make_node(op_type, ["x", "s", "b"] if norm else ["x"], ["y"], axis=-1)
        inits = {"s": np.ones(w, np.float32), "b": np.zeros(w, np.float32)} if norm else {}
        x = rng.uniform(-1.0, 1.0, (1, elements // w, w)).astype(np.float32)
        t[w] = _fastest_ns(_model(node, x, inits), x, rounds)
    ns = (t[NORM_ROW_PROBE] - t[width]) / (elements // NORM_ROW_PROBE - large)
    return ns if ns > 0 else None


#: The element-at-a-time Transpose probe (:func:`transpose_element_ns`): two channel counts of a
#: 32 x 32 plane, moved by ``(0, 3, 2, 1)`` (more than one axis, the last among them).
WALK_PROBE = ((16, 64), 32, (0, 3, 2, 1))


def transpose_element_ns(rounds: int = 5) -> float | None:
    """onnxruntime's Transpose time per element where it walks the tensor one element at a time
    (the chip field ``transpose_element_ns``, :func:`cost_models.cpu_layout.walk_ns`): the
    difference of the two sizes of :data:`WALK_PROBE` over their elements' difference, the dispatch
    cancelling (both in L2). 3.4 ns on an AMD EPYC. None when not resolved."""
    (small, large), side, perm = WALK_PROBE
    rng = np.random.default_rng(0)
    t = {}
    for c in (small, large):
        x = rng.standard_normal((1, c, side, side)).astype(np.float32)
        t[c] = _fastest_ns(_model(helper.make_node("Transpose", ["x"], ["y"], perm=list(perm)), x, {}), x, rounds)
    ns = (t[large] - t[small]) / ((large - small) * side * side)
    return ns if ns > 0 else None


#: The single-axis Transpose probes (:func:`single_axis_rates`): ``(dtype, (fewer, more) channels,
#: (smaller, larger) side)`` of square planes moved both ways (NCHW -> NHWC and back), in L2 on any
#: CPU this project runs on, each at two plane sizes, so that what MLAS pays per strip of columns
#: counts as it does for such channel counts (16 and 48 channels of one plane size gave 0.16 ns a
#: float where 32 channels of 28 x 28 and 56 x 56 give 0.21, as the benchmark's shapes run):
#: 32 channels of floats and 128 of bytes (every unit in MLAS's blocks, rows 128 bytes apart moved
#: outwards, each a line of its own to every pass), 32 channels of bytes (rows 32 bytes apart: two
#: share each line a pass reads; on an AMD EPYC they ran outwards as fast as inwards where 128-256
#: channels ran 1.8-2.2x, on the CI Xeon 1.7x), and 3 channels of bytes (no block). No plane is a
#: multiple of 4 KiB: 8 rows of 64 x 64 bytes read together fall in one L1 set and ran 2x slower
#: on the CI Xeon.
SINGLE_AXIS_PROBES: Mapping[str, tuple[type[np.generic], tuple[int, int], tuple[int, int]]] = {
    "floats": (np.float32, (32, 32), (28, 56)),
    "bytes": (np.uint8, (128, 128), (40, 56)),
    "shared lines": (np.uint8, (32, 32), (56, 112)),
    "edges": (np.uint8, (3, 3), (112, 224)),
}
#: The chip fields :func:`single_axis_rates` measures.
SINGLE_AXIS_FIELDS = ("transpose_block_ns", "transpose_byte_block_ns", "transpose_edge_ns", "transpose_outward_factor",
                      "transpose_byte_outward_factor", "transpose_shared_line_factor", "transpose_pass_lines",
                      "transpose_memcpy_ns")
#: The memcpy probe (:func:`memcpy_unit_ns`): ``(heads, head width, (fewer, more) rows)`` of floats
#: ``(1, rows, heads, width)`` moved by ``(0, 2, 1, 3)``, as attention splits its heads: units of
#: 32 bytes, one memcpy call each.
MEMCPY_PROBE = (16, 8, (256, 2048))
#: Each outward factor of :data:`SINGLE_AXIS_FIELDS` and the probe of :data:`SINGLE_AXIS_PROBES` it is read from.
OUTWARD_FACTORS = {"transpose_outward_factor": "floats", "transpose_byte_outward_factor": "bytes",
                   "transpose_shared_line_factor": "shared lines"}  # fmt: skip
#: The pass-lines probe (:func:`pass_lines_from`): floats of this many channels (rows 192 bytes apart,
#: on every line place of a page) moved outwards over the square plane whose rows' lines fill this
#: share of the L2 at one line a row (twice it at two) and over one of half its rows, and the
#: slowdown per element of the first over the second above which a pass reads two lines a row.
PASS_LINES_PROBE = (48, 0.6, 1.3)


def _single_axis_ns(dtype: type[np.generic], channels: int, side: int, rounds: int) -> tuple[float, float]:
    """The profiled kernel times of a Transpose of ``channels`` planes of ``side`` squared ``dtype``
    values to NHWC (the axis moves inwards) and of as many back to NCHW (outwards), ns, each the
    fastest of ``rounds`` profiled runs of 10: a timed run would add what onnxruntime does with the
    graph's output, which a Transpose inside a model does not pay."""
    x = np.random.default_rng(0).integers(0, 100, (1, channels, side, side)).astype(dtype)
    times = []
    for data, perm in ((x, (0, 2, 3, 1)), (np.ascontiguousarray(x.transpose(0, 2, 3, 1)), (0, 3, 1, 2))):
        model = _model(helper.make_node("Transpose", ["x"], ["y"], perm=list(perm)), data, {}, True)
        times.append(_fastest_kernel_ns(model, data, rounds))
    return times[0], times[1]


def pass_lines_from(l2_bytes: float, rounds: int = 5) -> float:
    """The chip field ``transpose_pass_lines`` (:func:`cost_models.cpu_layout.single_axis_far_bytes`)
    on an L2 of ``l2_bytes``: 2 where the float Transpose of :data:`PASS_LINES_PROBE` whose passes
    fit L2 at one line a row and not at two runs its elements more than the probe's slowdown
    slower than over half the rows (within L2 either way), else 1. On an AMD EPYC (Zen 5,
    2026-12-07) 48 channels over 90 x 90 ran 0.162-0.165 ns per element, as within L2: 1."""
    channels, share, slowdown = PASS_LINES_PROBE
    side = max(8, int(math.sqrt(share * l2_bytes / LINE_BYTES)))
    sides = (side, max(4, round(side / math.sqrt(2))))
    times: dict[int, list[float]] = {s: [] for s in sides}
    for _ in range(rounds):  # interleaved: a slow spell slows both
        for s in sides:
            times[s].append(_single_axis_ns(np.float32, channels, s, 1)[1] / (channels * s * s))
    return 2.0 if min(times[sides[0]]) > slowdown * min(times[sides[1]]) else 1.0


def memcpy_unit_ns(rounds: int = 5) -> float | None:
    """The chip field ``transpose_memcpy_ns`` (:func:`cost_models.cpu_layout.single_axis_memcpy_ns`):
    the two Transposes of :data:`MEMCPY_PROBE`, the difference of their profiled kernel times (the
    fastest of ``rounds`` runs of 10 each) over that of their units. 7.0-7.5 ns on an AMD EPYC (Zen
    5, 2026-12-07). None where not resolved (not positive)."""
    heads, width, (few, many) = MEMCPY_PROBE
    rng = np.random.default_rng(0)
    t = {}
    for rows in (few, many):
        x = rng.standard_normal((1, rows, heads, width)).astype(np.float32)
        t[rows] = _fastest_kernel_ns(_model(helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3]), x, {}, True), x, rounds)
    ns = (t[many] - t[few]) / ((many - few) * heads)
    return ns if ns > 0 else None


def single_axis_rates(rounds: int = 5, l2_bytes: float | None = None) -> dict[str, float]:
    """onnxruntime's Transpose time per unit where it moves one axis (the chip fields of
    :func:`cost_models.cpu_layout.single_axis_ns`), from the two sizes of each of
    :data:`SINGLE_AXIS_PROBES`, the difference of their times over their elements' (the dispatch
    cancels): ``transpose_block_ns`` and ``transpose_byte_block_ns`` moved inwards,
    ``transpose_edge_ns`` both ways, and the :data:`OUTWARD_FACTORS`, how much longer each probe's
    blocks took moved outwards. On the CI Xeon (2026-12-07): 0.21, 0.05 and 0.22 ns, floats 1.2x
    and bytes of 32 channels 1.7x; on an AMD EPYC: 0.106, 0.036 and 0.14 ns, floats 1.38-1.5x,
    bytes of 128 channels 2.0-2.25x. Given the L2's size, ``transpose_pass_lines`` too
    (:func:`pass_lines_from`); and ``transpose_memcpy_ns`` (:func:`memcpy_unit_ns`). A figure not
    resolved (not positive) is left out."""
    moved: dict[str, tuple[float, float]] = {}
    for kind, (dtype, (few, many), (small, large)) in SINGLE_AXIS_PROBES.items():
        t_few, t_many = _single_axis_ns(dtype, few, small, rounds), _single_axis_ns(dtype, many, large, rounds)
        elements = many * large * large - few * small * small
        moved[kind] = ((t_many[0] - t_few[0]) / elements, (t_many[1] - t_few[1]) / elements)
    rates = {"transpose_block_ns": moved["floats"][0], "transpose_byte_block_ns": moved["bytes"][0],
             "transpose_edge_ns": sum(moved["edges"]) / 2}  # fmt: skip
    out = {key: ns for key, ns in rates.items() if ns > 0}
    for key, kind in OUTWARD_FACTORS.items():
        inwards, outwards = moved[kind]
        if inwards > 0 and outwards > 0:
            out[key] = max(1.0, outwards / inwards)
    if l2_bytes:
        out["transpose_pass_lines"] = pass_lines_from(l2_bytes, rounds)
    if (memcpy := memcpy_unit_ns(rounds)) is not None:
        out["transpose_memcpy_ns"] = memcpy
    return out


#: The aliased GEMM probe (:func:`gemm_aliased_factor`): ``(M, N)`` of a MatMul over a constant B,
#: a K whose A rows lie a multiple of 4 KiB apart and one whose rows do not.
ALIAS_PROBE = ((128, 768), 2048, 2304)


def gemm_aliased_factor(rounds: int = 5) -> float | None:
    """The rate of onnxruntime's float MatMul whose A rows lie a multiple of 4 KiB apart relative
    to its rate otherwise (the chip field ``gemm_aliased_factor``,
    :func:`cost_models.cpu.aliased_factor`): the two MatMuls of :data:`ALIAS_PROBE`, FLOPs per ns of
    the first over the second's. 0.90 on an AMD EPYC. None when the two run within 2 % (nothing
    to price)."""
    (m, n), aliased, plain = ALIAS_PROBE
    rng = np.random.default_rng(0)
    rate = {}
    for k in (aliased, plain):
        x = rng.standard_normal((1, m, k)).astype(np.float32)
        w = {"W": (rng.standard_normal((k, n)) * 0.05).astype(np.float32)}
        rate[k] = k / _fastest_ns(_model(helper.make_node("MatMul", ["x", "W"], ["y"]), x, w), x, rounds)
    factor = rate[aliased] / rate[plain]
    return factor if factor < 0.98 else None


#: The im2col probes (:func:`im2col_rates`): 1-D convs of ``(channels,
#: taps, steps)`` (a TCN's, from which :data:`~cost_models.cpu.SGEMM_PACK_NS` came), to as many
#: channels and to twice as many, and at stride 2 over twice the steps.
IM2COL_PROBE = (64, 3, 4000)


def _conv1d_ns(out: int, steps: int, stride: int, rounds: int) -> float:
    """The profiled kernel time of a 1-D conv of :data:`IM2COL_PROBE`'s channels and taps to ``out``
    channels over ``steps`` at ``stride``, the fastest of ``rounds`` runs of 10, ns."""
    channels, taps, _ = IM2COL_PROBE
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, channels, steps)).astype(np.float32)
    w = {"W": (rng.standard_normal((out, channels, taps)) * 0.05).astype(np.float32)}
    model = _model(helper.make_node("Conv", ["x", "W"], ["y"], pads=[taps // 2] * 2, strides=[stride]), x, w)
    return _fastest_kernel_ns(model, x, rounds)


#: The col2im probes (:func:`col2im_rates`): per chip field, the ConvTranspose ``(input channels,
#: output channels, side, kernel, stride, pad)`` over a square input: unpadded (onnxruntime's 2-D
#: fast path) and a DCGAN's 4x4 stride 2 pad 1 (its generic loop).
COL2IM_PROBES = {"col2im_ns": (64, 32, 16, 2, 2, 0), "col2im_strided_ns": (64, 32, 16, 4, 2, 1)}


def col2im_rates(rounds: int = 5) -> dict[str, float]:
    """What a ConvTranspose's col2im pays per element of its column buffer
    (:func:`cost_models.cpu.measured_col2im_ns`), per :data:`COL2IM_PROBES`: the ConvTranspose's
    profiled kernel time less that of a MatMul of its GEMM (its transposed filter, constant,
    times the input's channels by pixels), over the columns (output channels x taps x input
    pixels), the fastest of ``rounds`` runs of 10 each. On an AMD EPYC (Zen 5): 0.12 and 0.34-0.35 ns.
    A figure not resolved (not positive) is left out."""
    rng = np.random.default_rng(0)
    out: dict[str, float] = {}
    for key, (cin, cout, side, k, stride, pad) in COL2IM_PROBES.items():
        x = rng.standard_normal((1, cin, side, side)).astype(np.float32)
        w = {"W": (rng.standard_normal((cin, cout, k, k)) * 0.05).astype(np.float32)}
        ct = _model(helper.make_node("ConvTranspose", ["x", "W"], ["y"], strides=[stride] * 2, pads=[pad] * 4), x, w)
        a = {"A": (rng.standard_normal((cout * k * k, cin)) * 0.05).astype(np.float32)}
        pixels = x.reshape(cin, side * side)
        gemm = _model(helper.make_node("MatMul", ["A", "x"], ["y"]), pixels, a)
        ns = [_fastest_kernel_ns(model, feed, rounds) for model, feed in ((ct, x), (gemm, pixels))]
        per = (ns[0] - ns[1]) / (cout * k * k * side * side)
        if per > 0:
            out[key] = per
    return out


#: The chip fields :func:`im2col_rates` measures.
IM2COL_FIELDS = ("im2col_pack_ns", "im2col_stride_ns")


def im2col_rates(rounds: int = 5) -> dict[str, float]:
    """What a conv on onnxruntime's plain kernel pays per element of the B MLAS builds and packs
    (:func:`cost_models.cpu.sgemm_conv_ns`), from three 1-D convs of :data:`IM2COL_PROBE`, each
    measured once:

    - ``im2col_pack_ns``: the convs to as many channels and to twice as many share their B and
      differ by their FMAs, so twice the first one's kernel time less the second one's, over B's
      elements. On an AMD EPYC (Zen 5, 2026-12-07): 0.14-0.16, the FMAs at 263 GFLOP/s; a TCN's
      convs came out 1.16-1.22x their time with the CI Xeon's 0.26;
    - ``im2col_stride_ns``: what a strided conv's im2col pays beyond that (a gather instead of row
      copies): the first conv at stride 2 over twice the steps (the same B and FMAs) less it at
      stride 1, over B's elements. 0.176-0.192 there, where the CI Xeon's fit says 0.32.

    A figure not resolved (not positive) is left out."""
    channels, taps, steps = IM2COL_PROBE
    plain = _conv1d_ns(channels, steps, 1, rounds)
    twice = _conv1d_ns(2 * channels, steps, 1, rounds)
    strided = _conv1d_ns(channels, 2 * steps, 2, rounds)
    b_elements = channels * taps * steps
    rates = {"im2col_pack_ns": (2 * plain - twice) / b_elements, "im2col_stride_ns": (strided - plain) / b_elements}
    return {key: ns for key, ns in rates.items() if ns > 0}


#: The GEMM revisit probe (:func:`gemm_revisit_gbps`): ``(K, N)`` of a MatMul over a constant B, and
#: its rows: few enough that its A and its slices of C stay in a 2 MiB L2 (0.75 MiB of A), and
#: enough that they do not (6 MiB of A, 3 MiB a step).
REVISIT_PROBE = ((768, 768), 256, 2048)


def gemm_revisit_gbps(l2_bytes: float, rounds: int = 5) -> float | None:
    """GB/s at which onnxruntime's float MatMul reads its A and C again from beyond an L2 of
    ``l2_bytes`` (the chip field ``gemm_revisit_gbps``, :func:`cost_models.cpu.gemm_revisit_ns`):
    the two MatMuls of :data:`REVISIT_PROBE` as their FMAs at one rate plus the bytes each reads again
    (:func:`cost_models.cpu.revisit_bytes`) at another, solved for the second. About 40 GB/s on the
    CI Xeon. None when the large one runs within 2 % of the small one's rate (an L2 that keeps them)."""
    (k, n), near, far = REVISIT_PROBE
    rng = np.random.default_rng(0)
    w = {"W": (rng.standard_normal((k, n)) * 0.05).astype(np.float32)}
    t, again = {}, {}
    for m in (near, far):
        x = rng.standard_normal((m, k)).astype(np.float32)
        t[m] = _fastest_ns(_model(helper.make_node("MatMul", ["x", "W"], ["y"]), x, w), x, rounds)
        again[m] = revisit_bytes(m, k, n, MLAS_SGEMM_PACKED_STRIDE_K, l2_bytes)
    # t = FMAs / rate + bytes / gbps for both: the large one's time and bytes beyond the small one's, scaled
    extra, nbytes = t[far] - t[near] * far / near, again[far] - again[near] * far / near
    if nbytes <= 0 or extra <= 0.02 * t[far]:
        return None
    return nbytes / extra


#: The reduction probes: 256 Ki floats summed in rows of 2 and of 256 (:func:`reduce_row_ns`), and
#: over the middle axis of 2,048 blocks of 2 x 64 and of 64 blocks of 64 x 64 (:func:`reduce_block_ns`).
REDUCE_PROBE_ELEMENTS = 256 * 1024
REDUCE_ROW_PROBE = (2, 256)
REDUCE_BLOCK_PROBE = ((2048, 2, 64), (64, 64, 64))
#: Blocks one column wide, over the middle axis: 2,048 of 64 x 1 and of 2 x 1 (:func:`reduce_column_row_ns`).
REDUCE_COLUMN_PROBE = ((2048, 64, 1), (2048, 2, 1))
#: The same floats over the middle axis in one block of 64 x 3,000 (the generic loop) and in two of
#: 32 x 3,000 (the KRK path; rows 12,000 bytes apart, no multiple of 4 KiB: :func:`reduce_generic_ns`).
REDUCE_GENERIC_PROBE = ((1, 64, 3000), (2, 32, 3000))


def _reduce_sum_ns(shape: tuple[int, ...], axis: int, rounds: int) -> float:
    """The fastest run of onnxruntime's ReduceSum over ``axis`` of a float tensor of ``shape``."""
    x = np.random.default_rng(0).uniform(-1.0, 1.0, shape).astype(np.float32)
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)
    return _fastest_ns(_model(node, x, {"axes": np.array([axis], np.int64)}), x, rounds)


def reduce_row_ns(rounds: int = 5) -> float | None:
    """onnxruntime's ReduceSum time per row over contiguous rows (the chip field ``reduce_row_ns``,
    :func:`cost_models.cpu_reduce.reduce_passes_ns`): the same elements in rows of 2 and of 256
    (:data:`REDUCE_ROW_PROBE`), (short - long) / (their row counts' difference). About 1.8 ns on an
    AMD EPYC. None when not resolved."""
    short, long = REDUCE_ROW_PROBE
    t = {w: _reduce_sum_ns((REDUCE_PROBE_ELEMENTS // w, w), 1, rounds) for w in (short, long)}
    ns = (t[short] - t[long]) / (REDUCE_PROBE_ELEMENTS // short - REDUCE_PROBE_ELEMENTS // long)
    return ns if ns > 0 else None


def reduce_block_ns(rounds: int = 5) -> float | None:
    """onnxruntime's ReduceSum time per block over a middle axis (the chip field
    ``reduce_block_ns``, :func:`cost_models.cpu_reduce.reduce_passes_ns`): the same elements in the
    two shapes of :data:`REDUCE_BLOCK_PROBE`, the difference of their times over their blocks'. About
    120 ns on an AMD EPYC. None when not resolved."""
    many, few = REDUCE_BLOCK_PROBE
    ns = (_reduce_sum_ns(many, 1, rounds) - _reduce_sum_ns(few, 1, rounds)) / (many[0] - few[0])
    return ns if ns > 0 else None


def reduce_column_row_ns(rounds: int = 5) -> float | None:
    """onnxruntime's ReduceSum time per reduced row of a block one column wide (the chip field
    ``reduce_column_row_ns``, :func:`cost_models.cpu_reduce.reduce_passes_ns`): 2,048 blocks of 64 and
    of 2 rows (:data:`REDUCE_COLUMN_PROBE`), the difference of their times over their rows'. About 2.2
    ns on an AMD EPYC (2026-12-07: blocks of 2 / 16 / 64 / 256 rows of one float took 133 / 162-170 /
    269 / 679 ns; blocks of 16 rows of 16 floats 137). None when not resolved."""
    (blocks, tall, _), (_, short, _) = REDUCE_COLUMN_PROBE
    tall_ns, short_ns = (_reduce_sum_ns(shape, 1, rounds) for shape in REDUCE_COLUMN_PROBE)
    ns = (tall_ns - short_ns) / (blocks * (tall - short))
    return ns if ns > 0 else None


def reduce_generic_ns(rounds: int = 5) -> float | None:
    """onnxruntime's ReduceSum time per element on its generic loop beyond its fast paths' (the chip
    field ``reduce_generic_ns``, :func:`cost_models.cpu_reduce.generic_reduce`): the two shapes of
    :data:`REDUCE_GENERIC_PROBE`, the difference of their times over their elements. About 0.6 ns on
    an AMD EPYC (2026-12-07: 136 against 19 us). None when not resolved."""
    generic, fast = (_reduce_sum_ns(shape, 1, rounds) for shape in REDUCE_GENERIC_PROBE)
    ns = (generic - fast) / math.prod(REDUCE_GENERIC_PROBE[0])
    return ns if ns > 0 else None


#: The Gather probes: ``(ids, row floats, table rows)``, 256 Ki floats gathered in rows of 1 and of
#: 256 from tables of 256 KiB (in L2 of any CPU this project runs on; :func:`gather_row_ns`).
GATHER_ROW_PROBE = ((256 * 1024, 1, 64 * 1024), (1024, 256, 256))


def gather_row_ns(rounds: int = 5) -> float | None:
    """onnxruntime's Gather time per row (the chip field ``gather_row_ns``,
    :func:`cost_models.cpu.gather_rows_ns`): the same floats gathered in rows of 1 and of 256
    (:data:`GATHER_ROW_PROBE`), (narrow - wide) / (their id counts' difference). onnxruntime reads
    each id, computes its row's offset and calls a copy per row: 8-9 ns a row on an AMD EPYC
    (2026-12-06, tables of 0.1-4 MiB), where a copy priced by the bytes gave 0.5. None when not
    resolved."""
    rng = np.random.default_rng(0)
    t = []
    for ids, width, rows in GATHER_ROW_PROBE:
        table = rng.standard_normal((rows, width)).astype(np.float32)
        x = rng.integers(0, rows, ids).astype(np.int64)
        t.append(_fastest_ns(_model(helper.make_node("Gather", ["table", "x"], ["y"], axis=0), x, {"table": table}), x, rounds))
    (narrow, _, _), (wide, _, _) = GATHER_ROW_PROBE
    ns = (t[0] - t[1]) / (narrow - wide)
    return ns if ns > 0 else None


#: The Slice probes: runs of one float, ``(1, R, 2)`` to ``[..., 0:1]`` for these R
#: (:func:`slice_run_ns`), and decimations ``(1, 16, 2 W)`` to ``[..., ::2]`` for these W
#: (:func:`slice_step_element_ns`).
SLICE_RUN_PROBE, SLICE_STEP_PROBE = (65536, 8192), (16384, 2048)


def _slice_ns(shape: tuple[int, ...], end: int, step: int, rounds: int) -> float:
    """The fastest run of a Slice of an input of ``shape`` to ``[..., 0:end:step]``, ns."""
    inits = {k: np.array([v], np.int64) for k, v in (("s", 0), ("e", end), ("a", -1), ("p", step))}
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return _fastest_ns(_model(helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"]), x, inits), x, rounds)


def slice_run_ns(rounds: int = 5) -> float | None:
    """onnxruntime's Slice time per run of contiguous elements (the chip field ``slice_run_ns``,
    :func:`cost_models.cpu_layout.slice_ns`): the real parts of two complex tensors of
    :data:`SLICE_RUN_PROBE` rows, runs of one float each, the difference of their times over their
    runs'. 3.9 ns on an AMD EPYC (2026-12-07), where a copy of the bytes priced 0.06. None when not
    resolved."""
    many, few = (_slice_ns((1, r, 2), 1, 1, rounds) for r in SLICE_RUN_PROBE)
    ns = (many - few) / (SLICE_RUN_PROBE[0] - SLICE_RUN_PROBE[1])
    return ns if ns > 0 else None


def slice_step_element_ns(rounds: int = 5) -> float | None:
    """onnxruntime's Slice time per element where it steps along the innermost axis (the chip field
    ``slice_step_element_ns``): every other value of 16 rows of :data:`SLICE_STEP_PROBE` pairs, the
    difference of their times over their outputs'. 0.9-1.3 ns on an AMD EPYC (2026-12-07). None
    when not resolved."""
    long, short = (_slice_ns((1, 16, 2 * w), 2 * w, 2, rounds) for w in SLICE_STEP_PROBE)
    ns = (long - short) / (16 * (SLICE_STEP_PROBE[0] - SLICE_STEP_PROBE[1]))
    return ns if ns > 0 else None


#: The batched product probes: ``(matrices, K)`` of ``9 x K x 9`` float products over run-time
#: matrices, the same FMAs and the same elements of B in both (:func:`batch_call_ns`).
BATCH_CALL_PROBE = ((512, 16), (32, 256))


def batch_call_ns(rounds: int = 5) -> float | None:
    """onnxruntime's batched float MatMul time per matrix beside its FMAs (the chip field
    ``fp32_batch_call_ns``, :func:`cost_models.cpu.batch_calls_ns`): the two products of
    :data:`BATCH_CALL_PROBE`, the difference of their times over their matrices'. About 190 ns on an
    AMD EPYC. None when not resolved."""
    rng = np.random.default_rng(0)
    t = {}
    for b, k in BATCH_CALL_PROBE:
        x = rng.standard_normal((b, 9, k)).astype(np.float32)
        node = helper.make_node("MatMul", ["x", "y"], ["z"])
        graph = helper.make_graph(
            [node], "k", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, 9, k]),
                          helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, k, 9])],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, [b, 9, 9])],
        )  # fmt: skip
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        t[b] = _fastest_ns(model, {"x": x, "y": rng.standard_normal((b, k, 9)).astype(np.float32)}, rounds)
    (many, _), (few, _) = BATCH_CALL_PROBE
    ns = (t[many] - t[few]) / (many - few)
    return ns if ns > 0 else None


def _row_and_walk_rates(rounds: int, notes: list[str], l2_bytes: float | None) -> dict[str, float]:
    """``norm_row_ns``, ``softmax_row_ns``, ``reduce_row_ns``, ``reduce_block_ns``, ``reduce_column_row_ns``, ``reduce_generic_ns``, ``gather_row_ns``,
    ``slice_run_ns``, ``slice_step_element_ns``,
    ``fp32_batch_call_ns``, ``transpose_element_ns``, the single-axis Transpose rates (:func:`single_axis_rates`), the
    im2col figures (:func:`im2col_rates`), the col2im ones (:func:`col2im_rates`), the Softmax tail
    ones (:func:`~hwsim.host.softmax_probe.softmax_tail_rates`),
    ``gemm_aliased_factor`` and ``gemm_revisit_gbps`` (a note for each not resolved)."""
    out: dict[str, float] = {}
    for key, probe, what in (("norm_row_ns", norm_row_ns, "LayerNormalization time per row"),
                             ("softmax_row_ns", softmax_row_ns, "Softmax time per row"),
                             ("reduce_row_ns", reduce_row_ns, "ReduceSum time per row"),
                             ("reduce_block_ns", reduce_block_ns, "ReduceSum time per block"),
                             ("reduce_column_row_ns", reduce_column_row_ns, "ReduceSum time per row of a one-column block"),
                             ("reduce_generic_ns", reduce_generic_ns, "ReduceSum time per element off its fast paths"),
                             ("gather_row_ns", gather_row_ns, "Gather time per row"),
                             ("slice_run_ns", slice_run_ns, "Slice time per run"),
                             ("slice_step_element_ns", slice_step_element_ns, "Slice time per stepped element"),
                             ("fp32_batch_call_ns", batch_call_ns, "batched MatMul time per matrix"),
                             ("transpose_element_ns", transpose_element_ns, "element-at-a-time Transpose rate"),
                             ("gemm_aliased_factor", gemm_aliased_factor,
                              "float GEMM slowdown for A rows 4 KiB apart (none beyond 2 %?)"),
                             ("gemm_revisit_gbps", partial(gemm_revisit_gbps, l2_bytes) if l2_bytes else lambda _: None,
                              "float GEMM rate reading A and C again beyond L2 (none beyond 2 %, or no L2 size?)")):  # fmt: skip
        got = probe(rounds)
        if got is None:
            notes.append(f"{what} not resolved; {key} left out")
        else:
            out[key] = got
    moved = single_axis_rates(rounds, l2_bytes)
    notes.extend(f"single-axis Transpose rate not resolved; {key} left out" for key in SINGLE_AXIS_FIELDS if key not in moved)
    packed = im2col_rates(rounds)
    notes.extend(f"a plain conv's B packing not resolved; {key} left out" for key in IM2COL_FIELDS if key not in packed)
    added = col2im_rates(rounds)
    notes.extend(f"a ConvTranspose's col2im not resolved; {key} left out" for key in COL2IM_PROBES if key not in added)
    tails = softmax_tail_rates(rounds)
    notes.extend(f"a Softmax row's partial vector not resolved; {key} left out" for key in SOFTMAX_TAIL_FIELDS if key not in tails)
    return out | moved | packed | added | tails


def _resize_attrs(kernel: str) -> dict[str, str]:
    if kernel == "ResizeNearest":  # onnx's defaults: half_pixel, round_prefer_floor
        return {"mode": "nearest"}
    return {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}


def resize_probe(kernel: str) -> onnx.ModelProto:
    """The one-model probe of a Resize class of :data:`RESIZE_RATES`: a plain Resize of the input
    (``x``: 1 x C x S x S), or for ``ResizeLinearNchwc`` a 3x3 conv from C/2 channels before it and a
    1x1 conv after it, so that onnxruntime's NCHWc transformer runs it blocked (as ``Upsample``)."""
    channels, side = RESIZE_PROBE
    rng = np.random.default_rng(0)
    inits = {"sc": np.array([1.0, 1.0, 2.0, 2.0], np.float32)}
    nodes = [helper.make_node("Resize", ["a", "", "sc"], ["r"], name="resize", **_resize_attrs(kernel))]
    cin = channels
    if kernel == "ResizeLinearNchwc":
        cin = channels // 2
        inits["w0"] = (rng.standard_normal((channels, cin, 3, 3)) * 0.1).astype(np.float32)
        inits["w1"] = (rng.standard_normal((cin, channels, 1, 1)) * 0.1).astype(np.float32)
        nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1], name="conv0"), *nodes,
                 helper.make_node("Conv", ["r", "w1"], ["y"], name="conv1")]  # fmt: skip
    else:
        nodes = [helper.make_node("Identity", ["x"], ["a"], name="in"), *nodes]
    graph = helper.make_graph(
        nodes, "resize_probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, side, side])],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def resize_ns(rounds: int = 3) -> dict[str, float]:
    """ns per output element of each class of :data:`RESIZE_RATES` (keyed by its rate key): the
    Resize (or NCHWc ``Upsample``) kernel's profiled time in :func:`resize_probe`, the fastest of
    ``rounds`` profiled runs of 10. On the CI Xeon: 0.47-0.60 (nearest, ``half_pixel``), 1.34-1.40
    (linear, plain), 0.36-0.40 (linear, blocked). A class whose kernel is not found is left out."""
    channels, side = RESIZE_PROBE
    out_elements = channels * (2 * side) ** 2
    out: dict[str, float] = {}
    for kernel, key in RESIZE_RATES.items():
        model = resize_probe(kernel)
        cin = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
        x = np.random.default_rng(1).standard_normal((1, cin, side, side)).astype(np.float32)
        want = "Upsample" if kernel == "ResizeLinearNchwc" else "Resize"
        times = [ns for _ in range(rounds) for kind, ns in profile_nodes(model, {"x": x}, runs=10).values() if kind == want]
        if times:
            out[key] = min(times) / out_elements
    return out


def kernel_efficiency(chip: Chip, op: Op, ns: float) -> float:
    """The efficiency calibration would fit for ``op``'s kernel class on ``chip``'s CPU when the
    kernel takes ``ns``: the op's calibration basis (:func:`cost_models.cpu.calibration_basis_ns`,
    at efficiency 1) over ``ns``, at most 1."""
    unit = chip.units[0]
    ones = {op.op_type: 1.0, kernel_type(op): 1.0}
    roof = chip.model_copy(update={"units": [unit.model_copy(update={"efficiency": ones, "op_overhead_ns": 0.0})]})
    cost = estimate(op, roof, unit.name, "model")
    assert cost is not None  # a CPU runs any op type
    return min(1.0, calibration_basis_ns(op, cost) / ns)


def per_element_efficiencies(chip: Chip, rates: Mapping[str, float]) -> dict[str, float]:
    """The efficiencies the fingerprint writes from the per-element figures of :func:`kernel_rates`
    (``LayerNormalization``, the classes of :data:`RESIZE_RATES`, the op types probed alone,
    :data:`hwsim.host.op_probes.PROBED_OP_TYPES`, the integer kernels of
    :data:`hwsim.host.int8_probe.INT8_RATES`), for those measured."""
    out: dict[str, float] = {}
    if LAYER_NORM_RATE in rates:  # the probe's rows' fixed time, priced apart (norm_row_ns), taken out
        per_element = rates[LAYER_NORM_RATE] - rates.get("norm_row_ns", 0.0) / NORM_PROBE[0]
        out["LayerNormalization"] = streaming_efficiency(chip, "LayerNormalization", max(per_element, 1e-3))
    channels, side = RESIZE_PROBE
    x = Tensor("x", (1, channels, side, side), "float32")
    y = Tensor("y", (1, channels, 2 * side, 2 * side), "float32")
    for kernel, key in RESIZE_RATES.items():
        if key in rates:
            attrs = {**_resize_attrs(kernel), **({NCHWC_ATTR: 16} if kernel == "ResizeLinearNchwc" else {})}
            m = metrics("Resize", (x,), (y,), attrs)
            op = Op("probe", "Resize", m.category, (x,), (y,), attrs, m.macs, m.flops)
            out[kernel] = kernel_efficiency(chip, op, rates[key] * y.elements)
    return {**out, **probe_efficiencies(chip, rates), **int8_efficiencies(chip, rates)}


def streaming_efficiency(chip: Chip, op_type: str, ns_per_element: float) -> float:
    """The efficiency calibration would fit for ``op_type`` on ``chip``'s CPU from its measured
    time per element: the op's calibration basis (:func:`cost_models.cpu.calibration_basis_ns`,
    at efficiency 1) over that time, on the probe's tensor (:data:`NORM_PROBE`), at most 1.
    ``op_type`` takes one input, a scale and a bias over the last axis and gives one output."""
    width, small, large = NORM_PROBE
    x, y = Tensor("x", (1, large - small, width), "float32"), Tensor("y", (1, large - small, width), "float32")
    params = tuple(Tensor(n, (width,), "float32", is_weight=True) for n in ("s", "b"))
    m = metrics(op_type, (x, *params), (y,), {"axis": -1})
    op = Op("probe", op_type, m.category, (x, *params), (y,), {"axis": -1}, m.macs, m.flops)
    return kernel_efficiency(chip, op, ns_per_element * y.elements)


def near_hidden(l2_bytes: float | None) -> int:
    """Hidden size of the LSTM whose step rate is ``gemv_gbps``: ``R`` (16 hidden² bytes) in at most
    5/8 of ``l2_bytes``, a multiple of 16, at most 256 (1 MiB). On an AMD EPYC's 1 MiB L2 the
    1 MiB matrix of hidden 256 spills: 87 GB/s, where hidden 160-192 run at 101-104; 256 on the
    CI Xeon's 2 MiB. 256 when the L2 size is not known.

    >>> near_hidden(2 * 2**20), near_hidden(2**20), near_hidden(None)
    (256, 192, 256)
    """
    if not l2_bytes:
        return 256
    return max(16, min(256, int(math.sqrt(5 / 8 * l2_bytes / 16)) // 16 * 16))


def l1_hidden(l1_bytes: float) -> int:
    """Hidden size of the LSTM whose step rate is ``gemv_l1_gbps``: ``R`` (16 hidden² bytes) in at
    most 5/8 of ``l1_bytes``, a multiple of 8, at least 8: 40 (25 KiB) on a 48 KiB L1, 32 on a 32
    KiB one. (On an AMD EPYC, Zen 5, the step streamed such an ``R`` at 195-203 GB/s, where one of
    hidden 192 in L2 went at 124-128.)

    >>> l1_hidden(48 * 1024), l1_hidden(32 * 1024), l1_hidden(1024)
    (40, 32, 8)
    """
    return max(8, int(math.sqrt(5 / 8 * l1_bytes / 16)) // 8 * 8)


def far_hidden(l2_bytes: float) -> int:
    """Hidden size whose LSTM ``R`` (16 hidden² bytes) is four times ``l2_bytes``: streamed from
    beyond L2 with no L2 reuse (:func:`cost_models.cpu.stream_ns`), a multiple of 16.

    >>> far_hidden(1.5 * 2**20)
    624
    """
    return max(16, round(math.sqrt(4 * l2_bytes / 16) / 16) * 16)


#: The masked-Softmax probe (:func:`softmax_denormal_ns`): heads, sequence length, and the causal
#: mask's value (a transformer decoder's; any below ``ln(FLT_MIN)`` takes the same time).
SOFTMAX_PROBE = (4, 128, -1e4)


def _masked_softmax(mask: np.ndarray, heads: int) -> onnx.ModelProto:
    seq = mask.shape[0]
    nodes = [helper.make_node("Add", ["x", "m"], ["s"]), helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, heads, seq, seq])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(mask, "m")])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def softmax_denormal_ns(rounds: int = 3) -> float | None:
    """ns per element of a Softmax's input that a causal mask puts below ``ln(FLT_MIN)``
    (:func:`cost_models.cpu.denormal_softmax_ns`): Add + Softmax over :data:`SOFTMAX_PROBE` with
    the mask's value above the diagonal, less the same with 0 there, over the masked elements.
    None when the masked run is no slower (a CPU or build that flushes denormals to zero)."""
    heads, seq, value = SOFTMAX_PROBE
    x = np.random.default_rng(0).random((1, heads, seq, seq), dtype=np.float32)
    t = {v: _fastest_ns(_masked_softmax(np.triu(np.full((seq, seq), v, np.float32), 1), heads), x, rounds) for v in (0.0, value)}
    per = (t[value] - t[0.0]) / (heads * seq * (seq - 1) // 2)
    return per if per > 0.1 else None


#: The NCHWc output-block probe (:func:`nchwc_block_efficiencies`): input channels and the plane
#: side of its three 3x3 convs, one, two and four blocks of output channels (16, 32 and 64 with
#: AVX-512's blocks).
NCHWC_BLOCK_PROBE = (64, 32)


def _block_convs(cin: int, side: int, couts: tuple[int, ...]) -> onnx.ModelProto:
    """3x3 convs ``cin -> cout`` (one per ``couts``, named ``c<cout>``) of the same ``1 x cin x side x side`` input."""
    rng = np.random.default_rng(0)
    inits = {f"w{c}": (rng.standard_normal((c, cin, 3, 3)) * 0.05).astype(np.float32) for c in couts}
    nodes = [helper.make_node("Conv", ["x", f"w{c}"], [f"c{c}"], pads=[1, 1, 1, 1], name=f"c{c}") for c in couts]
    graph = helper.make_graph(
        nodes, "nchwc_blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, side, side])],
        [helper.make_tensor_value_info(f"c{c}", TensorProto.FLOAT, None) for c in couts],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def nchwc_block_efficiencies(rounds: int = 3) -> tuple[float | None, float | None]:
    """``nchwc_one_block_efficiency`` and ``nchwc_two_block_efficiency``
    (:func:`hwsim.host.validate.nchwc_block_efficiency`): the rate per MAC of onnxruntime's NCHWc
    conv with one, and with two, blocks of output channels over one with four, all 3x3 from the
    same 64-channel input (:data:`NCHWC_BLOCK_PROBE`; a block: :func:`~hwsim.host.measure.nchwc_block`),
    each the fastest of ``rounds`` profiled runs of 10 (the reorders around them are kernels of
    their own). How load-bound a conv with few output blocks is: each broadcast input feeds one or
    two filter blocks instead of four. One block: on the CI Xeon 0.68 (141 against 204-208
    GFLOP/s), on an AMD EPYC (Zen 4) 0.88-0.93. Two blocks are not a function of one: 0.90 on the
    CI Xeon, 0.95 on the Zen 4, and the full rate on a Xeon without AMX where one block ran at 0.63
    (``docs/fidelity_cpu.md``, "The Intel Xeon again"). Each None when its conv or the four-block
    one is not found (a build without the NCHWc transformer) or the figure is out of (0, 1.5]."""
    cin, side = NCHWC_BLOCK_PROBE
    narrow = nchwc_block() or 16
    couts = (narrow, 2 * narrow, 4 * narrow)
    x = np.random.default_rng(1).standard_normal((1, cin, side, side)).astype(np.float32)
    best: dict[int, float] = {}
    model = _block_convs(cin, side, couts)
    for _ in range(rounds):
        for name, (kind, ns) in profile_nodes(model, {"x": x}, runs=10).items():
            for c in couts:
                if kind == "Conv" and name.split("_")[0] == f"c{c}" and ns > 0:
                    best[c] = min(best.get(c, math.inf), ns)

    def ratio(c: int) -> float | None:
        if c not in best or couts[-1] not in best:
            return None
        r = (best[couts[-1]] / couts[-1]) / (best[c] / c)
        return r if 0 < r <= 1.5 else None

    return ratio(narrow), ratio(2 * narrow)


def _one_row_rates(rounds: int, kernel_ns: float, notes: list[str]) -> dict[str, float]:
    """The one-row float products' probe times and the fields derived from them
    (:func:`float_gemv_from`, :func:`row_pack_from`); a note in ``notes`` for each not resolved."""
    out = {**float_gemv_times(rounds), **row_pack_times(rounds)}
    float_gemv = float_gemv_from(out, kernel_ns)
    if float_gemv is None:
        notes.append("one-row float Gemm figures not resolved; fp32_gemv_call_ns/fp32_gemv_gbps left out (gemv_gbps holds)")
    else:
        out.update(zip(FLOAT_GEMV_DERIVED, float_gemv, strict=True))
    pack = row_pack_from(out)
    if pack is None:
        notes.append("a scaled one-row product no slower than a plain one; fp32_pack_ns left out")
    else:
        out.update(zip(ROW_PACK_DERIVED, pack, strict=True))
    return out


def _gemv_rates(quick: bool, l1_bytes: float | None, l2_bytes: float | None, dispatch: tuple[float, float],
                rounds: int, notes: list[str]) -> dict[str, float]:  # fmt: skip
    """The recurrent step's GEMV rates (:func:`gemv_rate`): ``gemv_gbps`` near the L2's size, and
    where the caches' sizes are known (not ``quick``) ``gemv_l1_gbps`` near the L1's
    (:func:`l1_hidden`; kept where faster than ``gemv_gbps``), each op's set-up per direction
    (:func:`direction_setups`), ``gemv_far_gbps`` at four times the
    L2 and the run call's L2 footprint (``run_footprint_kib``, with the dispatch ``(per kernel, per
    run call)``); a note in ``notes`` for each not resolved."""
    out: dict[str, float] = {}
    gemv = gemv_rate(64 if quick else near_hidden(l2_bytes), rounds)
    if gemv is None:
        notes.append("LSTM step rate not resolved (steps no slower than their fixed cost); gemv_gbps left out")
    else:
        out["gemv_gbps"] = gemv
    if l1_bytes and not quick and gemv is not None:
        near = gemv_rate(l1_hidden(l1_bytes), rounds)
        if near is None or near <= gemv:
            notes.append("LSTM step rate in L1 no faster than in L2; gemv_l1_gbps left out")
        else:
            out["gemv_l1_gbps"] = near
    if not quick:
        setups = direction_setups(rounds)
        notes.extend(f"recurrent set-up per direction not resolved; {f} left out" for f in DIRECTION_FIELDS.values() if f not in setups)
        out.update(setups)
    if l2_bytes and not quick:
        far = gemv_rate(far_hidden(l2_bytes), 3)
        if far is None or gemv is None or far >= gemv:
            notes.append("LSTM step rate beyond L2 not resolved; gemv_far_gbps left out")
        else:
            out["gemv_far_gbps"] = far
            footprint = run_footprint_kib(l2_bytes, gemv, far, dispatch[1], dispatch[0], rounds)
            if footprint is None:
                notes.append("run call's L2 footprint not resolved; run_footprint_kib left out")
            else:
                out["run_footprint_kib"] = footprint
    return out


def kernel_rates(
    quick: bool = False, l2_bytes: float | None = None, threads: int = 1, kernel_ns: float = 0.0, run_ns: float = 0.0,
    profiled_kernel_ns: float = 0.0, l1_bytes: float | None = None,
) -> tuple[dict[str, float], list[str]]:
    """The chip fields these kernels give (``gemv_gbps``, ``gemv_far_gbps`` and ``run_footprint_kib``
    where the L2 size ``l2_bytes`` is known, ``fft_butterfly_ns``, ``fft_point_ns``, where the L1 size
    ``l1_bytes`` is known ``fft_stride_ns`` and ``fft_page_stride_ns``, the one-row float
    Gemm's ``fp32_gemv_call_ns`` and ``fp32_gemv_gbps`` with their probe times (:func:`float_gemv_from`);
    ``parallel_section_ns`` and the recurrent hand-off probes' times (:func:`handoff_times`) on a host
    with ``threads`` > 1; the dispatch per kernel is ``kernel_ns``,
    per run call ``run_ns``), ``LayerNormalization``'s
    time per element (:data:`LAYER_NORM_RATE`, not a field: :func:`streaming_efficiency` turns it
    into an efficiency) and per row (``norm_row_ns``, :func:`norm_row_ns`), a Softmax's time per row
    (``softmax_row_ns``), the element-at-a-time Transpose's per element (``transpose_element_ns``), a float GEMM's
    rate where its A rows alias against where they do not (``gemm_aliased_factor``), the kernel time of each op type probed alone
    (:data:`hwsim.host.op_probes.PROBE_RATES`), the integer kernels' probe times, ``requant_ns``, ``int8_pack_ns`` and the other integer kernel fields
    (:mod:`hwsim.host.int8_probe`; ``profiled_kernel_ns``: the profiler's empty kernel), the NCHWc
    depthwise conv's probe times (:func:`hwsim.host.depthwise_probe.depthwise_times`), the plain
    grouped conv's (:func:`hwsim.host.grouped_probe.grouped_times`), the dense NCHWc conv's
    (:func:`hwsim.host.nchwc_probe.nchwc_times`) and notes for any not resolved."""
    rounds = 2 if quick else 5
    notes: list[str] = []
    out = _pool_rates(threads, kernel_ns, rounds, notes) if threads > 1 else {}
    out.update(_gemv_rates(quick, l1_bytes, l2_bytes, (kernel_ns, run_ns), rounds, notes))
    frames = fft_frame_times(rounds=rounds)
    out.update(frames)
    fft = fft_from(frames)
    if fft is None:
        notes.append("STFT radix-2 constants not resolved; fft_butterfly_ns/fft_point_ns left out")
    else:
        out["fft_butterfly_ns"], out["fft_point_ns"] = fft
    if l1_bytes and not quick:
        out.update(fft_stride_times(rounds))
        out.update(strided := fft_stride_from(out, l1_bytes))
        notes.extend(f"{k} not resolved (strided DFTs no slower past the L1?); left out"
                     for k in FFT_STRIDE_DERIVED if k not in strided)  # fmt: skip
    out.update(setup_times(2 if quick else 3))
    out.update(broadcast_times(2 if quick else 3))
    span = broadcast_span_from(out)
    if span is None:
        notes.append("broadcast span cost not resolved; broadcast_span_ns left out")
    else:
        out["broadcast_span_ns"] = span
    out.update(_one_row_rates(2 if quick else 3, kernel_ns, notes))
    norm = layer_norm_ns(rounds)
    if norm is None:
        notes.append("LayerNormalization rate not resolved; its efficiency left to calibration")
    else:
        out[LAYER_NORM_RATE] = norm
    out.update(_row_and_walk_rates(rounds, notes, l2_bytes))
    denormal = softmax_denormal_ns(2 if quick else 3)
    if denormal is None:
        notes.append("masked Softmax no slower than an unmasked one (denormals flushed?); softmax_denormal_ns left out")
    else:
        out["softmax_denormal_ns"] = denormal
    one, two = nchwc_block_efficiencies(2 if quick else 3)
    for key, got, holds in (("one", one, "2/3 holds"), ("two", two, "the law from one block holds")):
        if got is None:
            notes.append(f"NCHWc {key}-block conv rate not resolved; nchwc_{key}_block_efficiency left out ({holds})")
        else:
            out[f"nchwc_{key}_block_efficiency"] = got
    resize = resize_ns(2 if quick else 3)
    notes.extend(f"{k} not resolved; its efficiency left to the Resize one" for k, v in RESIZE_RATES.items() if v not in resize)
    out.update(_gather_dram_rates(2 if quick else 3, notes))
    if nchwc_block() == DEPTHWISE_BLOCK:  # the AVX-512 kernels the probes describe
        out.update(depthwise := depthwise_times(2 if quick else 3, kernel_ns, profiled_kernel_ns))
        notes.extend(f"NCHWc depthwise conv figure not resolved; {key} left out" for key in DEPTHWISE_DERIVED
                     if key not in depthwise_fields(depthwise))  # fmt: skip
        # fit in chip_data, with the fp32 peak; with 8-channel blocks the probe of 8 channels a group would run blocked
        out.update(grouped_times(2 if quick else 3, profiled_kernel_ns))
        out.update(nchwc_times(2 if quick else 3))  # fit in chip_data too, with the peak and the caches' rates
    else:
        notes.extend(f"no NCHWc blocks of {DEPTHWISE_BLOCK} channels on this CPU; {key} left out"
                     for key in (*DEPTHWISE_DERIVED, *NCHWC_DERIVED))  # (the grouped fields: fingerprint's note)
    probes, probe_notes = probe_rates(1 if quick else 3)
    notes.extend(probe_notes)
    int8 = _int8_rates(2 if quick else 3, profiled_kernel_ns, kernel_ns, notes)
    return {**out, **resize, **probes, **int8, **_second_handoffs(out, threads, notes)}, notes


def _gather_dram_rates(rounds: int, notes: list[str]) -> dict[str, float]:
    """The probe times of :func:`hwsim.host.gather_probe.gather_dram_times` and the two fields they
    give (a note when not resolved)."""
    times = gather_dram_times(rounds)
    got = gather_dram_from(times)
    if got is None:
        notes.append("embedding rows from DRAM no slower than cached ones; gather_dram_row_ns/gather_dram_line_ns left out")
        return times
    return {**times, **dict(zip(GATHER_DRAM_DERIVED, got, strict=True))}


def _pool_rates(threads: int, kernel_ns: float, rounds: int, notes: list[str]) -> dict[str, float]:
    """``thread_check_speedup`` (:func:`hwsim.host.second_core.speedup`), ``parallel_section_ns``
    and, where the second core works along, a first sample of the recurrent hand-off probes' times
    (:func:`handoff_times`; ``step_handoff_ns`` is derived from them: :func:`step_handoffs`); a
    note in ``notes`` when not resolved."""
    # the host's usual speed-up of validate's lag check (hwsim.host.second_core.threads_along)
    usual = {"thread_check_speedup": speedup(threads)} if threads > 1 else {}
    section = parallel_section_ns(kernel_ns, rounds)
    if section is None:
        notes.append(f"parallel section cost not resolved (2 threads ran a 128-cubed MatMul chain under {SECTION_MIN_SPEEDUP:.2f}x "
                     "faster: the other core busy?); parallel_section_ns and step_handoff_ns left out, the CPU model keeps "
                     "its 2 us for each")  # fmt: skip
        return usual
    return {**usual, "parallel_section_ns": section, **handoff_times(threads, min(rounds, 3))}


def _second_handoffs(first: Mapping[str, float], threads: int, notes: list[str]) -> dict[str, float]:
    """The hand-off probes' times sampled again at the end of the kernel probes, each the faster of
    the two samples that saw the second core working (:func:`handoff_times`): this VM's second vCPU
    has slow spells of seconds to minutes, in which the probe reads 3-4 us a product where it reads
    0.6-1.1 us outside them. Nothing where the section was not resolved (``first`` has no section)."""
    if "parallel_section_ns" not in first:
        return {}
    second = handoff_times(threads)
    got = [s for s in ({k: first[k] for k in HANDOFF_PROBES.values() if k in first}, second) if s]
    if not got:
        notes.append("recurrent hand-offs not read: the second core was busy at both samples; step_handoff_ns left out")
        return {}
    return {k: min(s[k] for s in got) for k in got[0]}


def _int8_rates(rounds: int, profiled_kernel_ns: float, kernel_ns: float, notes: list[str]) -> dict[str, float]:
    """The integer kernels' probe times and the chip fields they give (:func:`int8_fields`); a note
    in ``notes`` for each not resolved."""
    rates = {**int8_kernel_ns(rounds, profiled_kernel_ns), **gemv_call_times(rounds), **conv_call_times(rounds)}
    notes.extend(f"{k} probe not resolved; its efficiency left to the defaults" for k, v in INT8_RATES.items() if v not in rates)
    fields = int8_fields(rates, kernel_ns)
    if not fields:
        notes.append("integer GEMM requantization not resolved; requant_ns and the fields measured against it left out "
                     f"({', '.join(INT8_DERIVED[1:])})")  # fmt: skip
        return rates
    notes.extend(f"integer kernel figure {k} not resolved; left out" for k, v in fields.items() if v is None)
    return {**rates, **{k: v for k, v in fields.items() if v is not None}}


#: The chip fields :func:`int8_fields` derives from the integer probes' times (not probe times:
#: a merge of several fingerprints derives them again from the merged probes).
INT8_DERIVED = ("requant_ns", "int8_pack_ns", "int8_conv_call_ns", "int8_conv_pixel_ns", "int8_im2col_pixel_ns",
                "int8_conv_mac_ps", "int8_conv_l2_mac_ps", "int8_gemv_call_ns", "int8_gemv_gbps", "int8_gemv_far_gbps")  # fmt: skip


def int8_fields(rates: Mapping[str, float], kernel_ns: float) -> dict[str, float | None]:
    """:data:`INT8_DERIVED` from the integer probes' times in ``rates`` and the dispatch per kernel
    ``kernel_ns`` (:mod:`hwsim.host.int8_probe`; None for one not resolved); empty when
    ``requant_ns``, which the others are measured against, is not resolved."""
    requant = requant_from(rates)
    if requant is None:
        return {}
    call = conv_call_from(rates, kernel_ns)  # each conv probe's per-call cost, off before its per-pixel one
    fields = {"requant_ns": requant, "int8_pack_ns": pack_from(rates, requant), "int8_conv_call_ns": call,
              "int8_conv_pixel_ns": conv_pixel_from(rates, requant, call or 0.0),
              "int8_im2col_pixel_ns": im2col_pixel_from(rates, requant, call or 0.0),
              "int8_conv_mac_ps": conv_mac_from(rates, requant, call or 0.0),
              "int8_conv_l2_mac_ps": conv_l2_mac_from(rates, requant, call or 0.0)}  # fmt: skip
    gemv = gemv_call_from(rates, requant, kernel_ns)
    fields["int8_gemv_call_ns"], fields["int8_gemv_gbps"] = gemv if gemv is not None else (None, None)
    fields["int8_gemv_far_gbps"] = gemv_far_from(rates, requant, gemv[0], kernel_ns) if gemv is not None else None
    return fields


#: The chip fields derived from probe times that a merge of several fingerprints derives again from the
#: merged probes (:func:`rederived`); the STFT's constants are not among them, so that an older
#: fingerprint without the frame times keeps its merged ones.
REDERIVED = (*INT8_DERIVED, *FLOAT_GEMV_DERIVED, *ROW_PACK_DERIVED, *BROADCAST_DERIVED, *GATHER_DRAM_DERIVED, *FFT_STRIDE_DERIVED)


def rederived(rates: Mapping[str, float], kernel_ns: float, l1_bytes: float | None = None) -> dict[str, float]:
    """The chip fields derived from the probe times in ``rates`` (:func:`int8_fields`,
    :func:`float_gemv_from`, :func:`fft_from`, :func:`broadcast_span_from`,
    :func:`~hwsim.host.gather_probe.gather_dram_from`, and on an L1 of ``l1_bytes``
    :func:`fft_stride_from`) with the dispatch per kernel ``kernel_ns``, those resolved."""
    out = {k: v for k, v in int8_fields(rates, kernel_ns).items() if v is not None}
    out.update(fft_stride_from(rates, l1_bytes) if l1_bytes else {})
    if (span := broadcast_span_from(rates)) is not None:
        out["broadcast_span_ns"] = span
    for names, got in ((FLOAT_GEMV_DERIVED, float_gemv_from(rates, kernel_ns)), (FFT_DERIVED, fft_from(rates)),
                       (ROW_PACK_DERIVED, row_pack_from(rates)), (GATHER_DRAM_DERIVED, gather_dram_from(rates))):  # fmt: skip
        if got is not None:
            out.update(zip(names, got, strict=True))
    return out


def int8_efficiencies(chip: Chip, rates: Mapping[str, float]) -> dict[str, float]:
    """The efficiency of each integer kernel class measured in ``rates`` (:func:`hwsim.host.int8_probe.int8_kernel_ns`):
    the calibration basis of its probe kernel on ``chip``'s CPU over the probe's time less what no
    efficiency scales (the requantization, :func:`cost_models.cpu.requant_ns`, and the per-pixel costs of
    :func:`cost_models.cpu.integer_conv_ns`: the conv probe's per-pixel cost), at most 1."""
    ops = probe_kernels()
    unit = chip.units[0]
    out: dict[str, float] = {}
    for kind, key in INT8_RATES.items():
        if key in rates:
            op = ops[kind]
            fixed = requant_ns(op, unit) + integer_conv_ns(op, unit, "int8")[0] if isinstance(unit, CpuUnit) else 0.0
            out[kind] = kernel_efficiency(chip, op, max(rates[key] - fixed, 1.0))
    return out
