"""CPU cluster cost model: one op on one core, SIMD peak per dtype, cache-level bandwidth.

The working set (inputs + weights + outputs) picks the cache level that feeds the op; weights
always stream from DRAM once; a working set beyond the last-level cache re-reads through DRAM
with the tiling of :func:`~cost_models.base.tiling_extra_bytes`. A MatMul/Gemm whose weights come
from DRAM also stalls on them beside its compute (:func:`weight_stream_ns`, measured by
``hwsim fingerprint`` as ``weight_stream_gbps``). Depthwise convolutions are a kernel class of
their own, and so is each Resize mode (:func:`kernel_type`, :func:`resize_kernel`). A
ConvTranspose pays onnxruntime's col2im pass beside its GEMM (:func:`col2im_ns`). An op marked
as writing memory that is no longer in L2 (:data:`COLD_DST_ATTR`, set by ``hwsim validate`` from
onnxruntime's arena plan) fetches it first (:func:`cold_destination_ns`).

Efficiency: without a per-op-type entry in the unit's ``efficiency`` the compute roof is scaled
by a default per op category (times a small-kernel factor, and a depthwise factor for
depthwise convolutions) and memory moves at the full level bandwidth. A unit ``efficiency``
entry ``e`` (what ``hwsim validate --calibrate`` writes, or ``hwsim fingerprint``'s 1 for
GEMM-like ops) is the measured fraction of the *core's* rate reached by that op type: the
kernel takes at least its work at ``e`` times peak (with the small-kernel and depthwise
factors) and at least its bytes (:func:`core_bytes`) at ``e`` times L1 bandwidth, and the
memory roof of the level the data sits in stays physical. For onnxruntime's recurrent and FFT
kernels ``e`` scales the part the core's rate sets (``compute_ns`` less ``stall_ns``); for a
recurrent op on a unit without ``gemv_gbps`` the whole roofline (see :func:`calibration_basis_ns`).

Recurrent ops (LSTM, GRU, RNN) run as onnxruntime's CPU kernels do: the input projection
``X·Wᵀ`` for all time steps as one GEMM (``W`` read once), then one step at a time a GEMV with
the recurrent weights ``R`` and the gate arithmetic. ``R`` is re-read every step from the
level that holds it (:func:`recurrent_bytes`); for a 650-wide LSTM (6.8 MB of ``R``, beyond
L2) that re-read is most of the kernel's time. On a unit with ``gemv_gbps`` (measured by ``hwsim
fingerprint``) they follow onnxruntime's ``DeepCpuLstmOp``/``DeepCpuGruOp`` step by step instead
(:func:`recurrent_steps_ns`): one direction after the other, each step a matrix-vector product
streaming that direction's ``R`` at the slower of ``gemv_gbps`` and the level holding it, plus a
fixed cost per step and gate element; weights that fit a cache level come from it (the model
runs in a loop).

STFT/DFT on a unit with ``fft_butterfly_ns`` and ``fft_point_ns`` run as onnxruntime's kernel
does (:func:`fft_ns`): a radix-2 FFT for a power-of-two length, otherwise Bluestein's chirp-z
transform, i.e. two radix-2 FFTs of the next power of two at or above ``2 n - 1``, one frame
after the other on one thread. A radix-2 DFT along an axis that is not the last works in place on
its strided output; on a unit with ``fft_stride_ns`` it takes the longer of that time and the time
its misses set, where the stages whose points no longer fit the L1 sets they fall in pay more per
butterfly (:func:`strided_fft_ns`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from chips.schema import Chip, CpuUnit, Dtype
from cost_models.base import (
    OpCost,
    UnitModel,
    conv_group,
    efficiency,
    finish,
    gemm_of,
    op_handlers,
    register_model,
    spill_plan,
    unit_bandwidth_gbps,
    weight_bytes_read,
)
from cost_models.cpu_layout import (
    ALIAS_STRIDE_BYTES,
    LINE_BYTES,
    MEMCPY_PARALLEL_BYTES,
    SOFTMAX_OP_TYPES,
    einsum_moves,
    memcpy_units,
    page_slots,
    single_axis_far_bytes,
    single_axis_memcpy_ns,
    single_axis_ns,
    slice_ns,
    softmax_rows,
    softmax_rows_ns,
    softmax_tails_ns,
    spread_bytes,
    transpose_moves,
    transpose_path,
    walk_ns,
    walks,
)
from cost_models.cpu_reduce import reduce_passes_ns, reduce_threads
from cost_models.energy import dram_energy_pj, energy_pj
from graph_ir.categories import Category
from graph_ir.ir import DTYPE_BYTES, Op, deployed_bytes
from graph_ir.op_metrics import CUM_AXIS_ATTR

__all__ = [
    "ALIAS_STRIDE_BYTES",
    "BROADCAST_OP_TYPES",
    "BROADCAST_PARALLEL_MIN_ELEMENTS",
    "CODE_REFETCH_ATTR",
    "CODE_REFETCH_NS",
    "CODE_REFETCH_OP_TYPES",
    "COL2IM_ND_FACTOR",
    "COL2IM_PATH_FACTORS",
    "COL2IM_STRIDED_FACTOR",
    "COLD_DST_ATTR",
    "COLD_DST_TRANSFERS",
    "COLD_SRC_ATTR",
    "CONV_SYM_INPUT_ALIGN",
    "CONV_SYM_KERNEL_CHANNELS",
    "CONV_SYM_OUTPUT_ALIGN",
    "CONV_SYM_OUTPUT_PACK",
    "DEFAULT_EFFICIENCY",
    "DEPTHWISE_FACTOR",
    "DEPTHWISE_MEASURED_MIN_TAPS",
    "DEPTHWISE_OUTPUT_TAPS",
    "DEPTHWISE_PLAIN_CHANNEL_NS",
    "DEPTHWISE_PLAIN_ELEMENT_NS",
    "DEPTHWISE_TILE_OUTPUTS",
    "FAR_SRC_ATTR",
    "GEMM_BIAS_PASSES",
    "GROUPED_CONV_ROW_NS",
    "HALF_EFFICIENCY_FLOPS",
    "IM2COL_RUN_NS",
    "INTEGER_GEMM_OP_TYPES",
    "MLAS_SGEMM_PACKED_STRIDE_K",
    "NCHWC_ACTIVATION_ATTR",
    "NCHWC_ACTIVATION_PASS_NS",
    "NCHWC_ATTR",
    "NCHWC_FILTER_SET",
    "NCHWC_PASS_ACTIVATIONS",
    "NCHWC_POINTWISE_CHANNELS",
    "ONE_THREAD_KERNELS",
    "QUANTIZE_PARALLEL_MIN_ELEMENTS",
    "RECURRENT_OP_TYPES",
    "RECURRENT_SECTION_OP_TYPES",
    "RECURRENT_STEP_GEMMS",
    "RESIZE_OP_TYPES",
    "ROW_NORM_OP_TYPES",
    "SCALED_ATTR",
    "SGEMM_CONV_ATTR",
    "SGEMM_FULL_PASS_ROWS",
    "SGEMM_PACK_NS",
    "SMALL_M_FMA_NS",
    "SOFTMAX_DENORMAL_ATTR",
    "STRIDED_IM2COL_NS",
    "TAP_KERNELS",
    "VARIADIC_OP_TYPES",
    "WIDE_DTYPES",
    "CpuModel",
    "GroupedWork",
    "RecurrentTime",
    "aliased_factor",
    "blocked_depthwise_ns",
    "broadcast_spans",
    "broadcast_spans_ns",
    "calibrated_efficiency",
    "calibration_basis_ns",
    "col2im_ns",
    "col2im_path",
    "col2im_path_factor",
    "cold_destination_ns",
    "cold_source_ns",
    "conv_strides",
    "conv_sym_path",
    "core_bytes",
    "cyclic_capacity_bytes",
    "cyclic_kept",
    "denormal_softmax_ns",
    "depthwise_nchwc_ns",
    "depthwise_plain_ns",
    "depthwise_row_tiles",
    "direction_setup_ns",
    "dram_gemv_gbps",
    "fft_ns",
    "fft_stride_bytes",
    "first_pass_gbps",
    "float_one_row",
    "gather_rows_ns",
    "gemm_bias_ns",
    "gemm_revisit_ns",
    "gemm_rows",
    "gemv_split_speedup",
    "grouped_conv_ns",
    "grouped_work",
    "holding_gbps",
    "im2col_rows",
    "integer_conv_ns",
    "intra_op_threads",
    "is_gemv",
    "is_row_product",
    "kernel_setup_ns",
    "kernel_type",
    "last_level_cache_bytes",
    "loop_cache_bytes",
    "looper_passes",
    "marked_cold_bytes",
    "marked_cold_sources",
    "measured_col2im_ns",
    "measured_depthwise_ns",
    "measured_grouped_ns",
    "measured_setup",
    "missed_butterflies",
    "mlas_threads",
    "nchwc_activation_ns",
    "nchwc_conv_calls",
    "nchwc_conv_pass_ns",
    "norm_rows",
    "norm_rows_ns",
    "one_row_call_ns",
    "one_thread_pass_ns",
    "parallel_sections",
    "plain_grouped_ns",
    "recurrent_bytes",
    "recurrent_dims",
    "recurrent_kernel_ns",
    "recurrent_sections",
    "recurrent_step_gemms",
    "recurrent_steps_ns",
    "recurrent_threads",
    "recurrent_time",
    "requant_ns",
    "resident_stream_ns",
    "resize_kernel",
    "resize_runs_blocked",
    "revisit_bytes",
    "row_pack_ns",
    "run_levels",
    "scatter_far_ns",
    "scatter_updates_beyond_l2",
    "section_ns",
    "sections_ns",
    "sgemm_conv_ns",
    "shape_factor",
    "step_handoff_ns",
    "step_section_ns",
    "stream_ns",
    "stream_parts_ns",
    "strided_fft_ns",
    "strided_fft_stages",
    "topk_rows",
    "variadic_passes",
    "weight_stream_ns",
]

#: Fraction of SIMD peak reached per op category (hand-written NEON/AVX kernels, one thread).
DEFAULT_EFFICIENCY: Mapping[Category, float] = {
    "conv": 0.55, "matmul": 0.65, "rnn": 0.45, "elementwise": 0.5, "activation": 0.35,
    "pool": 0.4, "reduce": 0.4, "norm": 0.3, "softmax": 0.3, "signal": 0.3, "data": 1.0,
    "unknown": 1.0,
}  # fmt: skip
#: Work (FLOPs) at which a kernel reaches half its efficiency: small kernels pay set-up.
HALF_EFFICIENCY_FLOPS = 20_000.0
#: Depthwise convolutions reuse little data per load: this factor scales conv efficiency.
DEPTHWISE_FACTOR = 0.35
#: onnxruntime's integer GEMM kernels, as a QDQ model's Conv/MatMul/Gemm run (``hwsim.host.ort_qdq``).
INTEGER_GEMM_OP_TYPES = ("QLinearConv", "QLinearMatMul", "QGemm")
#: The float GEMMs over a weight matrix whose one-row calls run MLAS's own kernel (:func:`one_row_call_ns`).
FLOAT_GEMM_OP_TYPES = ("Gemm", "MatMul")
#: MLAS's symmetric int8 conv kernel on x86 (``MLAS_CONV_SYM_DISPATCH`` in onnxruntime's
#: ``core/mlas/lib/convsym.cpp``): input channels a multiple of ``KernelInputChannelAlignment``,
#: output channels at least ``FilterOutputChannelPackCount`` (the filter's block of output channels)
#: and a multiple of ``KernelOutputChannelAlignment`` (AVX-512; AVX2 says 8). :func:`conv_sym_path`.
CONV_SYM_INPUT_ALIGN = 4
CONV_SYM_OUTPUT_PACK = 16
CONV_SYM_OUTPUT_ALIGN = 4
#: Output channels one call of that kernel computes (``KernelChannelCount``, AVX-512) for 6 pixels
#: (``KernelOutputCount``), reading the packed filter of those channels once per call.
CONV_SYM_KERNEL_CHANNELS = 64
#: Recurrent op types (category ``rnn``): the input projection as one GEMM, then step by step.
RECURRENT_OP_TYPES = ("LSTM", "GRU", "RNN")
#: Fixed cost of one recurrent step of one direction (the GEMV call, state copies), ns;
#: measured with onnxruntime 1.32 on the CI Xeon (LSTM/GRU, hidden 32-256, 4 and 64 steps).
RECURRENT_STEP_NS = 100.0
#: Cost per gate element per step (activations, the cell update), ns, by op type; same
#: measurement (onnxruntime's GRU runs its candidate gate as a second product and pass).
RECURRENT_GATE_NS: Mapping[str, float] = {"LSTM": 0.3, "GRU": 1.3, "RNN": 0.3}
#: The products onnxruntime's recurrent kernels run on ``R`` in each step and direction, in gate
#: blocks of ``hidden`` rows each: an LSTM one over its four gates, a GRU two (update and reset
#: gates, then the hidden gate: ``deep_cpu_gru.cc``), an RNN one. Each is its own MLAS call, split
#: over the threads (:data:`MLAS_THREAD_MACS`) and paying the pool (:data:`RECURRENT_SPLIT_STEP_NS`)
#: on its own.
RECURRENT_STEP_GEMMS: Mapping[str, tuple[int, ...]] = {"LSTM": (4,), "GRU": (2, 1), "RNN": (1,)}
#: Bluestein's transform beyond its two FFTs (chirp products, zero fill, output) per point of
#: the padded length, in units of ``fft_point_ns``: 2 FFTs of M took 0.81-0.85 of the whole.
BLUESTEIN_POINT_FACTOR = 0.7
#: Op types whose kernel class depends on their mode (:func:`resize_kernel`).
RESIZE_OP_TYPES = ("Resize", "Upsample")
#: Attribute (not ONNX's) that marks an op running on onnxruntime's NCHWc blocked layout, set by
#: :func:`hwsim.host.validate.nchwc_kernels`; its value is the block's channels.
NCHWC_ATTR = "hwsim_nchwc_block"
#: Attribute (not ONNX's) on a depthwise conv that runs on onnxruntime's NCHWc kernel and has an
#: activation fused whose pass MLAS runs over the output after the taps (any but Relu, which the
#: kernel applies in its stores; :data:`NCHWC_ACTIVATION_PASS_NS`), set by
#: :func:`hwsim.host.validate.nchwc_kernels`; its value is the activation's op type.
NCHWC_ACTIVATION_ATTR = "hwsim_nchwc_activation"
#: Attribute (not ONNX's) that marks a Conv onnxruntime runs on its plain kernel, im2col then an
#: MLAS SGEMM whose B (the expanded input) is packed on every run (a 1-D conv: the NCHWc
#: transformer takes 2-D convs only), set by :func:`hwsim.host.validate.sgemm_conv_kernels`
#: (:func:`sgemm_conv_ns`).
SGEMM_CONV_ATTR = "hwsim_sgemm_conv"
#: Taps' worth of FMA time each output of onnxruntime's NCHWc depthwise kernel pays beyond its
#: ``k x k`` taps (its loads, store and row loop): chained depthwise convs on the CI Xeon took
#: 0.10 + 0.0135 k² ns per output (3x3 0.20-0.30, 5x5 0.45-0.49, 7x7 0.76-0.83; 16-512
#: channels; ``benchmarks/micro_cpu_kernels.py depthwise``), i.e. 7 taps at the taps' own rate
#: (:func:`depthwise_nchwc_ns`).
DEPTHWISE_OUTPUT_TAPS = 7.0
#: Outputs per tile of MLAS's sliding-window NCHWc depthwise kernel (``sconv_depthwise_avx512f.cpp``,
#: onnxruntime 1.32 on AVX-512), by kernel width: as many accumulators as cover the FMA latency
#: while they and the tile's input columns fit the 32 vector registers. It takes stride and
#: dilation 1 along the width and these widths only; a tile whose inputs reach into the padding
#: runs masked. Other depthwise convs go to the assembly kernel (six outputs at a time, the padded
#: ones one at a time). :func:`depthwise_row_tiles`, :func:`measured_depthwise_ns`.
DEPTHWISE_TILE_OUTPUTS: Mapping[int, int] = {3: 12, 5: 10, 7: 8}
#: Taps per output from which the assembly kernel's measured law (``depthwise_output_ns`` and
#: ``depthwise_tap_ns``, read on 3x3 and 7x7 kernels) applies; a narrower kernel (a 1x1, the
#: BatchNormalization the NCHWc transformer makes one of) keeps :func:`depthwise_nchwc_ns`: on an
#: AMD EPYC (Zen 5) a 1x1 depthwise took 0.072 ns per output where that law says 0.19.
DEPTHWISE_MEASURED_MIN_TAPS = 9
#: What MLAS's activation pass over an NCHWc conv's output costs per output element, ns, for an
#: activation the kernel does not apply in its stores (Clip, Sigmoid, ...: ``MlasActivation``
#: after the kernel, 4-wide): measured on the CI Xeon as a fused Clip's extra time on chained
#: depthwise convs, 0.13-0.15 ns (a fused Relu: none; ``benchmarks/micro_cpu_kernels.py depthwise``).
NCHWC_ACTIVATION_PASS_NS = 0.14
#: The activations MLAS applies in that pass (HardSwish as onnxruntime's ``Conv(activation=HardSwish)``),
#: each at a rate of its own: on an AMD EPYC (Zen 5) a chain of 3x3 depthwise convs took per output
#: 0.075-0.088 ns more with a Clip, 0.10-0.14 with a HardSigmoid, 0.12-0.19 with a LeakyRelu or a
#: HardSwish, 0.21 with a Tanh and 0.24 with a Sigmoid (``nchwc_activation_pass_ns``, per host).
NCHWC_PASS_ACTIVATIONS = ("Clip", "HardSigmoid", "HardSwish", "LeakyRelu", "Sigmoid", "Tanh")
#: What MLAS's SGEMM pays per element of a B it packs on the run (a plain conv's expanded input),
#: ns: 1-D convs 64 -> 64 channels over 4000 steps, k = 1 and 3 (K x N = 0.26 M and 0.77 M), took
#: 0.22-0.30 ns per element of B beyond their FMAs at 0.97 of the peak on the CI Xeon under load
#: (inside a TCN, three sessions; alone, ``benchmarks/micro_cpu_kernels.py conv1d``: 0.26-0.38
#: raw); 32 -> 32 over 2000 and 128 -> 128 over 1000 (k = 3) alone within 4 % of the law.
SGEMM_PACK_NS = 0.26
#: What a grouped (not depthwise) conv on onnxruntime's plain kernel pays per row of each group's
#: expanded input (``K`` = the group's input channels x taps rows; MLAS runs one im2col + SGEMM per
#: group) beside its B packing, ns (``benchmarks/micro_cpu_kernels.py grouped``: ResNeXt-like 3x3
#: convs, 2-8 channels per group, 16-64 groups, 7x7 to 56x56 planes, CI Xeon under load, a
#: least-squares fit with :data:`SGEMM_PACK_NS` and the calibrated conv rate fixed: 14 shapes within
#: -9..+4 %, the strided 14x14 one +17 %; a cost per group call instead fit worse, -27..+10 %;
#: :func:`grouped_conv_ns`).
GROUPED_CONV_ROW_NS = 21.0
#: A depthwise conv (one input and one output channel per group) on onnxruntime's plain kernel (a
#: 1-D one, or a 2-D one the NCHWc transformer leaves, its channels no multiple of 4) runs one
#: im2col and one one-row product per channel, and packs nothing. Beside its FMAs at the
#: ``DepthwiseConv`` rate it pays, ns: per channel (:data:`DEPTHWISE_PLAIN_CHANNEL_NS`), per element
#: of the expanded input (:data:`DEPTHWISE_PLAIN_ELEMENT_NS`: written by the im2col, read by the
#: product) and per contiguous run the im2col copies (:data:`IM2COL_RUN_NS`: a tap's output row).
#: Fit on 9 shapes (AMD EPYC, onnxruntime 1.32, 1 thread, ``benchmarks/micro_cpu_kernels.py
#: dwplain``: 1-D of 144-1024 channels, 64-1000 steps, 3-31 taps; 2-D 3x3 of 6-30 channels),
#: within -6.9..+6.3 %; held out of the fit, 1-D 768 x 256 k4 and 64 x 2000 k9 and 2-D 90 x 14 x 14
#: k5: -1.4 / -4.4 / +0.2 %. The dense grouped law (:func:`grouped_conv_ns`) put the 1-D ones
#: +47..+158 % (a B packed per run and 21 ns a row) and the 2-D ones, priced as NCHWc, -77..-92 %.
DEPTHWISE_PLAIN_CHANNEL_NS = 110.0
DEPTHWISE_PLAIN_ELEMENT_NS = 0.099
IM2COL_RUN_NS = 2.85
#: What onnxruntime's Einsum pays per element it copies or transposes in blocks or runs around
#: its GEMM (:func:`einsum_move_ns`), ns; element-at-a-time walks go at ``transpose_element_ns``.
#: Fit as the ratio of totals (Einsum less its GEMM at the MatMul efficiency and its walks, over
#: the elements moved) on nine one-node Einsums (``benchmarks/micro_cpu_kernels.py einsum``, AMD
#: EPYC, 1 thread; per case 0.063-0.165): 0.117, about 68 GB/s of reads and writes. The two held
#: out (``bqhd,bkhd->bhqk`` and ``bhqk,bkhd->bqhd`` at 256 tokens, 8 heads of 32): -0.4 / +1.3 %.
EINSUM_MOVE_NS = 0.117
#: What MLAS's im2col pays per element of the expanded input beyond :data:`SGEMM_PACK_NS` when the
#: conv is strided (a gather instead of row copies), ns; the same fit (stride 2: 0.32).
STRIDED_IM2COL_NS = 0.32
#: What each FMA of a grouped conv's per-group SGEMM pays beyond the calibrated conv rate, ns: with
#: M = 2-8 rows (the group's output channels) each packed B load feeds a few FMAs; the same fit.
#: Only the rows outside MLAS's full passes pay it (:data:`SGEMM_FULL_PASS_ROWS`).
SMALL_M_FMA_NS = 0.0066
#: Rows of A MLAS's SGEMM kernel takes per pass over a packed B panel, at most (its AVX-512 kernel
#: computes 12, 6, 3 or 1 rows against 32 columns, ``SgemmKernelAvx512F``): in a pass of 12 each
#: B load feeds 12 FMAs and the FMAs bound it. ShuffleNet v1's grouped 1x1 convs (34 and 68
#: channels a group) were priced 33-38 % slow with every FMA paying :data:`SMALL_M_FMA_NS`.
SGEMM_FULL_PASS_ROWS = 12
#: Attribute (not ONNX's) on a Softmax with how many elements of its input an additive constant mask
#: puts below ln(FLT_MIN) (exp gives denormals there), set by
#: :func:`hwsim.host.ort_denormals.denormal_softmaxes` from the model's constants; priced at the
#: unit's ``softmax_denormal_ns`` (:func:`denormal_softmax_ns`).
SOFTMAX_DENORMAL_ATTR = "hwsim_softmax_denormals"
#: Attribute (not ONNX's) with the bytes of an op's output whose memory is no longer in L2 when
#: the kernel writes it, set by :func:`hwsim.host.validate.predict_nodes` from onnxruntime's arena
#: plan (:mod:`hwsim.host.ort_arena`); :func:`cold_destination_ns` prices them.
COLD_DST_ATTR = "hwsim_cold_dst_bytes"
#: Transfers at the last-level cache's bandwidth per byte written into memory no longer in L2:
#: the line fetched for ownership, and the dirty line it evicts written back.
COLD_DST_TRANSFERS = 2
#: Attribute (not ONNX's) with the bytes of a kernel's inputs (weights aside) whose lines are no
#: longer in L2 when it starts; its presence says where the rest sits: in L2, where its producer
#: (or an earlier reader) left it. Set by :func:`hwsim.host.validate.predict_nodes` from
#: onnxruntime's arena plan (:func:`hwsim.host.ort_arena.cold_source_bytes`) on streaming kernels
#: (:data:`hwsim.host.validate.COLD_SRC_CATEGORIES`); :func:`cold_source_ns` prices them.
COLD_SRC_ATTR = "hwsim_cold_src_bytes"
#: Attribute (not ONNX's) with the bytes of a kernel's graph inputs that a loop of runs no longer
#: finds in the last-level cache: each was last touched a run ago, and the run's cyclic pass over
#: its weights and other bytes (``resident_weight_bytes``, :func:`cyclic_kept`) evicted them. Set by
#: :func:`hwsim.host.validate.cache_residency`; :func:`far_source_bytes` reads it, and they come
#: from DRAM instead of the cache they would be priced from.
FAR_SRC_ATTR = "hwsim_far_src_bytes"
#: Op attribute (set by :mod:`hwsim.host.validate`) marking a product that onnxruntime runs with a
#: constant scale folded in as its alpha (``MatMulScaleFusion``: a ``FusedMatMul``), :func:`row_pack_ns`.
SCALED_ATTR = "hwsim_scaled"
#: Attribute (not ONNX's) with the bytes a run streams between two calls of the op's kernel code
#: (the op type's previous kernel, the run wrapping around): set by
#: :func:`hwsim.host.validate.cache_residency` on :data:`CODE_REFETCH_OP_TYPES`;
#: :func:`code_refetch_ns` prices it.
CODE_REFETCH_ATTR = "hwsim_code_stream_bytes"
#: Kernels whose re-fetch of their code after a long stream is priced (:func:`code_refetch_ns`).
#: Measured for MLAS's NCHWc GlobalAveragePool; Flatten and ReorderOutput pay the same kind of cost
#: (``docs/fidelity_cpu.md``, "GlobalAveragePool: a warm rate, cold inputs and cold code") but are
#: not priced: every op type's calibration would move.
CODE_REFETCH_OP_TYPES = ("GlobalAveragePool",)
#: ns a kernel pays per doubling of the bytes streamed since its code last ran beyond the L2's
#: capacity (:func:`code_refetch_ns`): fit on GAPs of hot inputs after 1-64 MiB weight streams
#: (``python benchmarks/micro_cpu_kernels.py gap``, :data:`GAP_STREAM_CHANNELS` there).
CODE_REFETCH_NS = 1130.0
#: Op types onnxruntime runs over any number of inputs, two at a time into the output
#: (:func:`variadic_passes`).
VARIADIC_OP_TYPES = ("Sum", "Mean", "Max", "Min")
#: Op types costed as onnxruntime's FFT kernels where the unit has the FFT constants.
FFT_OP_TYPES = ("STFT", "DFT")
#: MLAS splits a GEMM/convolution over threads in chunks of this many MACs
#: (``MLAS_SGEMM_THREAD_COMPLEXITY``): a product runs on ``MACs / MLAS_THREAD_MACS + 1`` threads.
MLAS_THREAD_MACS = 64 * 1024
#: Columns per thread at least, when MLAS splits a product with ``N > M`` by columns
#: (``MLAS_SGEMM_STRIDEN_THREAD_ALIGN``).
MLAS_STRIDE_N = 16
#: MLAS's SGEMM steps through B in slices of ``MLAS_SGEMM_PACKED_STRIDEN`` columns and, for each,
#: through K in slices of ``MLAS_SGEMM_PACKED_STRIDEK`` (a packed, constant B) or
#: ``MLAS_SGEMM_STRIDEK`` (a B made at run time), running every row of A against each slice and
#: adding into the same block of C (:func:`revisit_bytes`).
MLAS_SGEMM_STRIDE_N = 128
MLAS_SGEMM_PACKED_STRIDE_K = 256
MLAS_SGEMM_STRIDE_K = 128
#: Elements from which onnxruntime's ``TryParallelFor`` splits an elementwise kernel: cheap
#: binary ops (Add 64 Ki elements: 1.0x on 2 threads, 1 Mi: 2.0x) and transcendental
#: activations (Sigmoid 64 Ki: 1.5x, 1 Mi: 2.1x), measured with onnxruntime 1.32.
PARALLEL_MIN_ELEMENTS: Mapping[str, int] = {"elementwise": 256 * 1024, "activation": 32 * 1024}
#: Elements from which the binary ops of onnxruntime's broadcast looper (:data:`BROADCAST_OP_TYPES`)
#: split over two threads, whether over one span or many: chains of float Adds on an AMD EPYC ran
#: 1.00x faster on 2 threads at 88,064 elements and 1.65x at 90,112 (Mul alike; 98,304: 1.8x),
#: the pool's cost model deciding on the element count (the CI Xeon: 64 Ki 1.0x).
BROADCAST_PARALLEL_MIN_ELEMENTS = 89_088
#: Elements from which onnxruntime splits a per-tensor QuantizeLinear over two threads, whatever its
#: category's floor (:data:`PARALLEL_MIN_ELEMENTS`): eight independent kernels on 1 and 2 threads
#: (onnxruntime 1.32, Intel Xeon, ``python benchmarks/int8_threads.py --quantize``) ran 0.95-1.00x
#: at 49,152-69,632 elements and 1.47-1.50x at 73,728.
QUANTIZE_PARALLEL_MIN_ELEMENTS = 72 * 1024
#: Cost of one parallel section of onnxruntime's intra-op thread pool (hand the work out, join), ns,
#: where the unit has no measured ``parallel_section_ns`` (an estimate; the fingerprint measures it).
PARALLEL_SECTION_NS = 2000.0
#: What one split product of a recurrent step pays the intra-op pool, ns (:data:`RECURRENT_STEP_GEMMS`:
#: an LSTM step one, a GRU step two). Not the measured section: the idle 2-thread tables fit 2 us
#: per LSTM step (hidden-128 LSTMs with 100-200 split steps: -1..-7 % before calibration; 0.86 us,
#: one MatMul's section as measured, would put them at -32..-35 %). A hidden-256 GRU step, whose
#: two products split, ran no faster on 2 threads than on 1 (7.9 us; its ``R`` at 110 GB/s over
#: two threads is 3.6 us): two hand-offs of 2 us. Calibration on several threads fits the unit's own
#: for LSTM/RNN products (``recurrent_section_ns``, :func:`step_section_ns`): 1.9-2.3 us over five
#: idle runs; a GRU's keep this figure (:data:`RECURRENT_SECTION_OP_TYPES`).
RECURRENT_SPLIT_STEP_NS = 2000.0
#: Recurrent op types whose onnxruntime kernel runs its step loop inside one parallel section per
#: direction (``deep_cpu_gru.cc``: ``ThreadPool::ParallelSection ps(ttp_)`` around the steps, "to
#: amortize loop entry/exit costs over a series of short kernels"): each split product of a step is
#: a loop in that open section, not a section of its own as an LSTM's or an RNN's product is
#: (``uni_directional_lstm.cc`` runs each step's ``ComputeGemm`` straight on the pool). Such a
#: product pays :data:`RECURRENT_SPLIT_STEP_NS` (measured on a hidden-256 GRU's steps), never a
#: figure calibration fit on LSTM products (:func:`step_handoff_ns`), and the section itself is
#: opened once per direction (:func:`recurrent_sections`).
RECURRENT_SECTION_OP_TYPES = ("GRU",)

#: Normalizations that pay ``norm_row_ns`` per row (:func:`norm_rows_ns`). RMSNormalization and
#: Softmax also showed 10-30 ns a row alone (rows of 32 against 768 floats), but neither is priced
#: so: RMSNormalization's kernels in the opset-23 blocks were already predicted -10..+20 % (median
#: per model) from its probe (rows of 4096) and went to +10..+28 % with the row cost; Softmax's
#: efficiency is fit by calibration on attention rows, which would need refitting.
ROW_NORM_OP_TYPES = ("LayerNormalization",)
#: Normalizations whose onnxruntime kernel splits over its rows on any number of them
#: (``TryBatchParallelFor`` with one task per row, no size threshold: ``layer_norm_impl.cc``,
#: ``skip_layer_norm.cc``): a SkipLayerNormalization over 64 rows of 256 ran 1.9x faster on two
#: threads on an AMD EPYC (:func:`intra_op_threads`).
ROW_SPLIT_NORM_OP_TYPES = ("LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
                           "SkipSimplifiedLayerNormalization", "RMSNormalization")  # fmt: skip
#: Kernel classes (:func:`kernel_type`) whose onnxruntime CPU kernels take no thread from the
#: intra-op pool, whatever their size (:func:`intra_op_threads`): over 1 Mi floats on an AMD EPYC,
#: 2 threads against 1 ran Slice 1.00x, Expand 0.99x, Tile 0.99x, Pad 1.01x, Where 1.00x (its
#: broadcast passes get no pool, ``where_op.cc``), where Gather, Split, Cast and Concat ran
#: 1.5-2.4x. A per-tensor DequantizeLinear too: 0.95-1.04x from 128 Ki to 1.5 Mi values, 0.85-1.47x
#: at 2 Mi (beyond L2, noise) on the Intel Xeon (``python benchmarks/int8_threads.py --quantize``),
#: where the CPU model split it as an activation from 32 Ki values. On the CI Xeon (onnxruntime
#: 1.32, the fingerprint's probes at 1 and 2 threads): CumSum 1.00x along the last axis or an outer
#: one (``CumSumRows``), Sin 0.99x, Cos 0.97x, a Sum of three 1 Mi-float tensors 1.00x, MaxUnpool
#: 0.96x, and every Resize but the bilinear kernel 0.99-1.00x (nearest with either coordinates,
#: cubic, linear over a 3-D signal), where the bilinear one ran 2.00x and Softplus, Exp and
#: Sigmoid 1.9-2.4x. A OneHot's Eigen generator runs on the calling thread (``onehot.cc``), its
#: probes 0.99-1.01x; a ScatterND copies its data input on it before the updates (a static
#: key/value cache's six 3 MiB ScatterNDs: 1.36 ms on 1 thread, 1.30 on 2).
ONE_THREAD_KERNELS = frozenset(("Slice", "Expand", "Tile", "Pad", "Where", "DequantizeLinear", "CumSum", "CumSumRows",
                                "Sin", "Cos", "Sum", "MaxUnpool", "OneHot", "OneHotOuter", "ScatterND", "Resize",
                                "ResizeNearest", "ResizeLinearND", "ResizeCubic"))  # fmt: skip


#: Binary op types onnxruntime's CPU provider runs through its broadcast looper
#: (``BroadcastHelper`` in ``element_wise_ops.h``): the output in spans, the longest innermost run
#: of dims over which each input either moves along with the output or stays put, one call of the
#: span function per span (:func:`broadcast_spans`). Add, Mul and Div timed on an AMD EPYC: 8.5-9.8
#: ns a span whatever the op and the span's length (:func:`broadcast_spans_ns`).
BROADCAST_OP_TYPES = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "PRelu", "Equal", "Less", "Greater",
                      "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitShift")  # fmt: skip


class CpuModel(UnitModel[CpuUnit]):
    """The cache-level roofline of one core; embedding lookups (``Gather``) and recurrent ops
    have handlers of their own; a calibrated efficiency then corrects any of them."""

    unit_class = CpuUnit
    #: The activations onnxruntime's FusedConv/MLAS applies in the kernel.
    default_fuses = frozenset(("Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid"))
    default_efficiency = DEFAULT_EFFICIENCY

    def cost(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """The op family's cost (:meth:`UnitModel.cost`), corrected by a calibrated efficiency, and
        the kernel's fixed time per call where the fingerprint measured it (:func:`measured_setup`);
        an int8 GEMM on a host whose integer kernels were fingerprinted as the kernel it runs
        (:func:`integer_kernel`); a binary op's broadcast spans where the unit has their measured cost
        (:func:`broadcast_spans_ns`); a reduction's rows or blocks
        (:func:`~cost_models.cpu_reduce.reduce_passes_ns`); a batched product's calls (:func:`batch_calls_ns`);
        a scatter's updates beyond L2 (:func:`scatter_far_ns`); a float GEMM's A and C read again
        from beyond L2 (:func:`gemm_revisit_ns`)."""
        op = integer_kernel(op, unit, dtype)
        cost = _calibrated(op, unit, dtype, super().cost(op, unit, chip, dtype, in_b, w_b, out_b))
        cost = _with_pass(cost, unit, broadcast_spans_ns(op, unit), "broadcast spans")
        cost = _with_pass(cost, unit, reduce_passes_ns(op, unit), "reduce set-ups")
        cost = _with_pass(cost, unit, batch_calls_ns(op, unit), "matrix calls")
        cost = _with_pass(cost, unit, scatter_far_ns(op, unit, dtype), "updates beyond L2")
        cost = _with_pass(cost, unit, gemm_revisit_ns(op, unit, dtype), "A and C again beyond L2")
        cost = _with_fixed(cost, unit, row_pack_ns(op, unit), "B packed")  # a pass before the kernel's
        fixed = measured_setup(op, unit)
        return cost if fixed is None else _with_fixed(cost, unit, *fixed)

    def roofline(
        self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        """Work at the core's SIMD rate against the bytes of the cache level the working set fits
        (DRAM for the weights), plus a GEMM's weight stream (:func:`weight_stream_ns`)."""
        compute_ns = _compute_ns(op, unit, dtype)
        act = in_b + out_b
        working = act + w_b
        levels = _cache_levels(unit)
        # a destination no longer in L2 (cold_destination_ns): a stall beside work on data in L2,
        # one more transfer (its read for ownership) of a stream from beyond
        in_l2 = len(levels) > 1 and working <= levels[1][0] * 1024
        # inputs whose place is known (COLD_SRC_ATTR): from L2 at its rate, their cold bytes a stall
        sources = marked_cold_sources(op)
        fits = min(working, levels[1][0] * 1024) if sources is not None and len(levels) > 1 else working
        in_l2 = in_l2 or fits < working
        stall_ns = weight_stream_ns(op, unit, w_b) + (cold_destination_ns(op, unit, chip) if in_l2 else 0.0)
        stall_ns += cold_source_ns(op, unit, chip) + code_refetch_ns(op, unit)
        rfo = 0 if in_l2 else marked_cold_bytes(op)
        # weights from DRAM, unless they stay in the caches between inferences (steady state)
        cached, dram_w = (working, 0) if unit.weights_in_cache else (act, w_b)
        for i, (kib, gbps) in enumerate(levels):
            if fits <= kib * 1024:
                gbps = min(gbps, (_far_gemv_gbps(op, unit) if i >= 2 else _near_gemv_gbps(op, unit)) or math.inf)
                if dram_w == 0 < w_b:
                    gbps = _resident_weights_gbps(op, unit, levels, act, w_b, gbps)
                note = f"{dtype}, fits {kib:g} KiB" + (", weights cached" if dram_w == 0 < w_b else "")
                far = 0 if sources is not None else far_source_bytes(op, in_b)  # else in cold_source_ns
                cost = finish(op, unit, chip, dtype, compute_ns + stall_ns, cached + rfo - far, gbps, dram_w + far, 0, note)
                cost = _evicted_gemv(cost, op, unit, chip, levels, dram_w)  # weights no loop keeps cached
                break
        else:
            extra, tiles = spill_plan(in_b, w_b, out_b, levels[-1][0] * 1024, unit.l1_kib * 1024 / 2)
            note = f"{dtype}, spills LLC" + (f", {tiles} tiles" if tiles > 1 else "")
            cost = finish(op, unit, chip, dtype, compute_ns + stall_ns, 0, 0.0, in_b + w_b + extra + rfo, out_b, note,
                          tiles)
            cost = _gemv_from_dram(cost, op, unit, chip, w_b)
        if stall_ns:
            what = "destination fetch" if COLD_DST_ATTR in op.attrs else "weights stall"
            what = "cold inputs" if marked_cold_sources(op) else what
            what = "cold code" if code_refetch_ns(op, unit) and not marked_cold_sources(op) else what
            cost = replace(cost, stall_ns=stall_ns, note=f"{cost.note}, {what} {stall_ns / 1e3:.3g} us")
        return cost

    def gather(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """An embedding lookup reads the rows it gathers, not the table; rows in DRAM miss on top
        (:func:`cold_gather_ns`)."""
        cost = self.roofline(op, unit, chip, dtype, in_b, weight_bytes_read(op, dtype), out_b)
        cost = _with_pass(cost, unit, gather_rows_ns(op, unit), "rows")
        return _with_pass(cost, unit, cold_gather_ns(op, unit, dtype), "rows from DRAM")

    def recurrent(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """LSTM/GRU/RNN: onnxruntime's steps on a unit with ``gemv_gbps`` (:func:`recurrent_steps_ns`),
        else the roofline of the whole op plus ``R`` re-read every step (:func:`_recurrence`)."""
        if len(op.inputs) < 3:
            return self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        if unit.gemv_gbps:
            return _ort_recurrent(op, unit, chip, dtype, in_b, w_b, out_b)
        return _recurrence(op, unit, chip, dtype, self.roofline(op, unit, chip, dtype, in_b, w_b, out_b))

    def fft(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """STFT/DFT: onnxruntime's transforms one after the other (:func:`fft_ns`) on a unit with the
        FFT constants, else the roofline of their FLOPs."""
        cost = self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        plan = fft_plan(op)
        if not (unit.fft_butterfly_ns and unit.fft_point_ns) or plan is None:
            return cost
        transforms, n = plan
        contiguous = fft_ns(n, unit.fft_butterfly_ns, unit.fft_point_ns)
        stride = fft_stride_bytes(op)
        strided = strided_fft_ns(n, stride, unit)
        compute_ns = transforms * max(contiguous, strided)
        extra_pj = energy_pj(unit.active_w, max(compute_ns, cost.memory_ns) - max(cost.compute_ns, cost.memory_ns))
        path = "radix-2" if _is_pow2(n) else f"Bluestein via {_next_pow2(2 * n - 1)}"
        path += f" strided ({stride} B apart, its stalls)" if strided > contiguous else ""
        return replace(cost, compute_ns=compute_ns, energy_pj=cost.energy_pj + extra_pj,
                       note=f"{cost.note}, {transforms} x {n}-point {path}")  # fmt: skip

    def conv_transpose(
        self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        """ConvTranspose: its GEMM (the roofline), then the col2im pass (:func:`col2im_ns`), which
        no ConvTranspose efficiency scales."""
        cost = self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        return _with_pass(cost, unit, col2im_ns(op, unit, dtype), "col2im")

    def integer_gemm(
        self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        """An integer GEMM kernel of a QDQ model (QLinearConv, QLinearMatMul, QGemm): its MACs (the
        roofline at the int8 rate), then each output requantized (:func:`requant_ns`) and a conv's
        per-pixel costs (:func:`integer_conv_ns`), which no efficiency scales (a one-row product's
        set-up: :meth:`cost`, :func:`measured_setup`)."""
        cost = _with_pass(self.roofline(op, unit, chip, dtype, in_b, w_b, out_b), unit, requant_ns(op, unit), "requantize")
        conv_ns, what = integer_conv_ns(op, unit, dtype)
        return _with_pass(cost, unit, conv_ns, what)

    def conv(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """A Conv: the roofline, and where ``hwsim validate`` marked how onnxruntime runs it, the
        passes beside its FMAs: a blocked depthwise conv or a plain grouped one at its measured
        figures (:func:`blocked_depthwise_ns`, :func:`plain_grouped_ns`), MLAS's activation pass (:func:`nchwc_activation_ns`) or its
        packing of the expanded input (:func:`sgemm_conv_ns`), which no efficiency scales."""
        cost = self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        if depthwise := blocked_depthwise_ns(op, unit):  # its loads and FMAs in the figures: no L1 stream of its own
            cost = _with_pass(replace(cost, compute_ns=cost.stall_ns), unit, depthwise, "depthwise tiles")
        elif grouped := plain_grouped_ns(op, unit):  # likewise: its FMAs in the figure
            return _with_pass(replace(cost, compute_ns=cost.stall_ns), unit, grouped, "im2col + SGEMM per group")
        cost = _with_pass(cost, unit, nchwc_activation_ns(op, unit), "activation pass")
        cost = _with_pass(cost, unit, nchwc_conv_pass_ns(op, unit, chip, w_b), "kernel calls and filter pass")
        return _with_pass(cost, unit, sgemm_conv_ns(op, unit), "B packing")

    def softmax(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """A Softmax: the roofline, the denormals of its masked elements (:func:`denormal_softmax_ns`),
        its fixed time per row (:func:`~cost_models.cpu_layout.softmax_rows_ns`) and per row with a partial
        last vector (:func:`~cost_models.cpu_layout.softmax_tails_ns`) and, over another axis than the last,
        the Transposes around it that walk the tensor (:func:`~cost_models.cpu_layout.walk_ns`)."""
        cost = _with_pass(self.roofline(op, unit, chip, dtype, in_b, w_b, out_b), unit, denormal_softmax_ns(op, unit), "denormals")
        cost = _with_pass(cost, unit, softmax_rows_ns(op, unit) + softmax_tails_ns(op, unit), "rows")
        return _with_pass(cost, unit, walk_ns(op, unit), "axis transposes")

    def transpose(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """A Transpose: a copy at its calibrated rate (the roofline); where onnxruntime walks it one
        element at a time (:func:`~cost_models.cpu_layout.walk_ns`) or moves one axis in blocks
        (:func:`~cost_models.cpu_layout.single_axis_ns`), that time instead, which no efficiency
        scales; where it moves one axis in units MLAS does not block, a memcpy call per unit
        (:func:`~cost_models.cpu_layout.single_axis_memcpy_ns`) and the bytes at the rate of the
        level holding them, no efficiency either."""
        cost = self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        walk = walk_ns(op, unit)
        element_bytes = in_b // max(1, op.inputs[0].elements) if op.inputs else 0
        moved = walk or single_axis_ns(op, unit, element_bytes)
        what = "walked element by element" if walk else "one axis moved in blocks"
        gbps = holding_gbps(_cache_levels(unit), in_b + out_b) or unit_bandwidth_gbps(unit, chip)  # the level holding it
        if not moved:  # a memcpy call per unit, and its bytes at that level's rate
            if not (calls := single_axis_memcpy_ns(op, unit, element_bytes)):
                return cost
            moved, what = calls + (in_b + out_b) / gbps, "a memcpy call per unit"
        elif not walk:
            hidden, waited = single_axis_far_bytes(op, element_bytes, unit.l2_kib * 1024, unit.transpose_pass_lines or 2.0)
            moved = max(moved, hidden / gbps) + waited / gbps
        extra_pj = energy_pj(unit.active_w, max(moved, cost.memory_ns) - max(cost.compute_ns, cost.memory_ns))
        return replace(cost, compute_ns=moved, stall_ns=moved, energy_pj=cost.energy_pj + extra_pj,
                       note=f"{cost.note}, {what} {moved / 1e3:.3g} us")  # fmt: skip

    def slice_op(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """A Slice: a copy at its calibrated rate (the roofline) and its runs one after another
        (:func:`~cost_models.cpu_layout.slice_ns`)."""
        return _with_pass(self.roofline(op, unit, chip, dtype, in_b, w_b, out_b), unit, slice_ns(op, unit), "runs")

    def einsum(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """An Einsum: its GEMM (the roofline, at the MatMul kernel's efficiency: :func:`kernel_type`),
        then the copies and Transposes onnxruntime makes around it (:func:`einsum_move_ns`)."""
        return _with_pass(self.roofline(op, unit, chip, dtype, in_b, w_b, out_b), unit, einsum_move_ns(op, unit), "layout moves")

    def layer_norm(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """A LayerNormalization: the roofline, and its fixed time per row (:func:`norm_rows_ns`)."""
        return _with_pass(self.roofline(op, unit, chip, dtype, in_b, w_b, out_b), unit, norm_rows_ns(op, unit), "rows")

    def variadic(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """A Sum, Mean, Max or Min of more than two inputs: onnxruntime adds the first two into the
        output, then each further input into the output (``UntypedBroadcastVariadic``), a pass that
        reads and writes the output again per input (:func:`variadic_passes`): each pass streams
        three tensors of the output's size at the rate its first pass streams its inputs and output
        (on the CI Xeon 0.42-0.43 ns an output value a pass, whether the output sat in L2 or not)."""
        cost = self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        passes = variadic_passes(op)
        if not passes or not out_b:
            return cost
        one = max(cost.compute_ns, cost.memory_ns) * 3 * out_b / (in_b + out_b)
        extra = passes * one  # after the first pass, whichever side of its roofline binds
        return replace(cost, compute_ns=cost.compute_ns + extra, memory_ns=cost.memory_ns + extra,
                       stall_ns=cost.stall_ns + extra, energy_pj=cost.energy_pj + energy_pj(unit.active_w, extra),
                       note=f"{cost.note}, output passed again x{passes} {extra / 1e3:.3g} us")  # fmt: skip

    handlers = op_handlers(
        (VARIADIC_OP_TYPES, variadic), (ROW_NORM_OP_TYPES, layer_norm), (SOFTMAX_OP_TYPES, softmax), (("Transpose",), transpose), (("Slice",), slice_op), (("Conv",), conv), (("Gather",), gather), (RECURRENT_OP_TYPES, recurrent), (FFT_OP_TYPES, fft), (("ConvTranspose",), conv_transpose),
        (INTEGER_GEMM_OP_TYPES, integer_gemm), (("Einsum",), einsum),
    )


def variadic_passes(op: Op) -> int:
    """The passes a variadic op (:data:`VARIADIC_OP_TYPES`) makes over its output beyond one: one
    per input after the second. A Sum of twenty 2 MiB skips (WaveNet's) took 4.34 ms on the CI Xeon,
    nineteen Adds' worth of bytes (its Adds of the same tensors 0.20 ms each), where one pass over its
    inputs and output priced 1.12.

    >>> from graph_ir.ir import Tensor
    >>> x = Tensor("x", (1, 32, 16000), "float32")
    >>> variadic_passes(Op("s", "Sum", "elementwise", (x,) * 20, (x,))), variadic_passes(Op("s", "Sum", "elementwise", (x, x), (x,)))
    (18, 0)
    """
    return max(0, len(op.inputs) - 2) if op.op_type in VARIADIC_OP_TYPES else 0


#: A GEMM deployed in int8 -> onnxruntime's integer kernel for it (the QDQ selectors' choice).
_INTEGER_KERNEL_OF = {"Conv": "QLinearConv", "MatMul": "QLinearMatMul", "Gemm": "QGemm"}


def integer_kernel(op: Op, unit: CpuUnit, dtype: Dtype) -> Op:
    """``op`` as the integer kernel onnxruntime runs it when it is a Conv, MatMul or Gemm deployed
    in int8 (a QDQ model folded, :mod:`graph_ir.qdq`, or ``--precision int8``) on a host whose
    integer kernels ``hwsim fingerprint`` measured (``int8_conv_pixel_ns``): their costs beside the
    MACs (requantization, a conv's per-pixel passes, a one-row call) are what such a host pays;
    ``op`` unchanged anywhere else."""
    kind = _INTEGER_KERNEL_OF.get(op.op_type)
    if kind is None or dtype != "int8" or unit.int8_conv_pixel_ns is None:
        return op
    return replace(op, op_type=kind)


def measured_setup(op: Op, unit: CpuUnit) -> tuple[float, str] | None:
    """The fixed time per call the fingerprint measured for ``op``'s kernel beside its dispatch (ns)
    and its name in a cost's note: a one-row product's call (:func:`one_row_call_ns`) or a per-element
    kernel's set-up (:func:`kernel_setup_ns`). It replaces the generic set-up of a small kernel
    (:func:`shape_factor`, dropped in :func:`_compute_ns`); None: that generic set-up holds."""
    call = one_row_call_ns(op, unit)
    if call:
        return call, "one-row call"
    setup = kernel_setup_ns(op, unit)
    return None if setup is None else (setup, "set-up")


def _with_fixed(cost: OpCost, unit: CpuUnit, fixed_ns: float, what: str) -> OpCost:
    """``cost`` with a kernel's measured fixed time per call ``fixed_ns`` (:func:`measured_setup`),
    named ``what``: before its streams start, not beside them, so serial, like a dispatch."""
    if not fixed_ns:
        return cost
    return replace(cost, overhead_ns=cost.overhead_ns + fixed_ns, energy_pj=cost.energy_pj + energy_pj(unit.active_w, fixed_ns),
                   note=f"{cost.note}, {what} {fixed_ns / 1e3:.3g} us")  # fmt: skip


def kernel_setup_ns(op: Op, unit: CpuUnit) -> float | None:
    """The measured fixed time per call of ``op``'s per-element kernel beside its dispatch
    (``kernel_setup_ns`` by op type), ns; None where the unit has none for it: the generic
    set-up of :func:`shape_factor` holds. On an AMD EPYC an Add, Mul or Sigmoid of 16 values
    took 0.0-0.05 us beside the 0.27 us dispatch, where the generic set-up at their efficiencies
    (0.15-0.37) priced 0.5-1.2 us.

    >>> from graph_ir.ir import Tensor
    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, kernel_setup_ns={"Add": 30.0})
    >>> x = Tensor("x", (1, 16), "float32")
    >>> kernel_setup_ns(Op("a", "Add", "elementwise", (x, x), (x,), flops=16), u)
    30.0
    >>> kernel_setup_ns(Op("m", "Mul", "elementwise", (x, x), (x,), flops=16), u) is None
    True
    """
    return (unit.kernel_setup_ns or {}).get(op.op_type)


def broadcast_spans(op: Op) -> int:
    """How many spans onnxruntime's broadcast looper splits a binary op's output into (1: one call
    over the whole output, as for equal shapes or a scalar input; 1 for an op type not in
    :data:`BROADCAST_OP_TYPES`). Dims of size 1 in the output drop out; from the innermost dim out,
    the dims over which each input either moves with the output or stays put merge into one run;
    the innermost run is a span, and the spans are the output's elements over it.

    >>> from graph_ir.ir import Tensor
    >>> def add(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> Op:
    ...     return Op("a", "Add", "elementwise", (Tensor("x", a, "float32"), Tensor("y", b, "float32")),
    ...               (Tensor("z", out, "float32"),))
    >>> broadcast_spans(add((1, 12, 128, 128), (1, 1, 1, 128), (1, 12, 128, 128)))  # an attention mask
    1536
    >>> broadcast_spans(add((2048, 16), (2048, 1), (2048, 16))), broadcast_spans(add((1, 64, 56, 56), (64, 1, 1), (1, 64, 56, 56)))
    (2048, 64)
    >>> broadcast_spans(add((8, 16), (8, 16), (8, 16))), broadcast_spans(add((8, 16), (), (8, 16)))
    (1, 1)
    """
    if op.op_type not in BROADCAST_OP_TYPES or len(op.inputs) != 2 or not op.outputs:
        return 1
    return _looper_spans(op.inputs[0].shape, op.inputs[1].shape, op.outputs[0].shape)


def _looper_spans(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> int:
    """The spans of one broadcast looper pass over inputs of shapes ``a`` and ``b`` into ``out``
    (:func:`broadcast_spans`)."""
    run, pattern = 1, None
    for i in range(1, len(out) + 1):
        if out[-i] == 1:
            continue
        moves = tuple(len(s) >= i and s[-i] == out[-i] for s in (a, b))
        if pattern is not None and moves != pattern:
            break
        run, pattern = run * out[-i], moves
    return max(1, math.prod(out) // run)


def looper_passes(op: Op) -> tuple[int, ...]:
    """The spans of each pass of onnxruntime's broadcast looper a kernel for ``op`` makes: one pass
    for a binary op of :data:`BROADCAST_OP_TYPES` (:func:`broadcast_spans`); three for ``Where``,
    which broadcasts over two tensors at a time: the condition with X (X's values where it holds),
    the condition with Y, then the two selections merged into the output (onnxruntime's
    ``where_op.cc``); none for other ops.

    >>> from graph_ir.ir import Tensor
    >>> def where(c: tuple[int, ...], x: tuple[int, ...], y: tuple[int, ...], out: tuple[int, ...]) -> Op:
    ...     ts = [Tensor(n, s, "float32") for n, s in (("c", c), ("x", x), ("y", y))]
    ...     return Op("w", "Where", "elementwise", tuple(ts), (Tensor("z", out, "float32"),))
    >>> looper_passes(where((1, 1, 1, 128), (1, 12, 128, 128), (), (1, 12, 128, 128)))  # a mask, a scalar fill
    (1536, 1, 1536)
    >>> looper_passes(where((8, 16), (8, 16), (8, 16), (8, 16)))
    (1, 1, 1)
    """
    if op.op_type == "Where" and len(op.inputs) == 3 and op.outputs:
        c, x, y = (t.shape for t in op.inputs)
        cx, cy = np.broadcast_shapes(c, x), np.broadcast_shapes(c, y)
        return _looper_spans(c, x, cx), _looper_spans(c, y, cy), _looper_spans(cx, cy, op.outputs[0].shape)
    return (broadcast_spans(op),) if op.op_type in BROADCAST_OP_TYPES else ()


def broadcast_spans_ns(op: Op, unit: CpuUnit) -> float:
    """What an op's broadcast spans add to its kernel, ns: the unit's ``broadcast_span_ns`` each
    beyond the first of each looper pass (:func:`looper_passes`: one call over the whole output is
    the kernel's own); 0 on a unit without the figure. On an AMD EPYC an Add over 196,608 floats
    took 31 us with equal shapes, 46 us with a row of 128 repeated (1,536 spans) and 256 us with a
    row of 8 (24,576 spans); the elementwise efficiency calibration fit on a transformer's mask Adds
    had put an equal-shape Add 1.8-2.5x slow. A ``Where`` over as many floats with a row of 16 as
    its condition and a scalar as Y took 355 us against 132 with a row of 1,024 (two passes of
    12,288 spans: 18.4 ns a span, twice a binary op's)."""
    span_ns = unit.broadcast_span_ns
    if not span_ns:
        return 0.0
    return sum(spans - 1 for spans in looper_passes(op)) * span_ns


def _with_pass(cost: OpCost, unit: CpuUnit, extra_ns: float, what: str) -> OpCost:
    """``cost`` with a pass of ``extra_ns`` after its roofline (in ``compute_ns`` and ``stall_ns``:
    no efficiency scales it), named ``what`` in the note."""
    if not extra_ns:
        return cost
    extra_pj = energy_pj(unit.active_w, max(cost.compute_ns + extra_ns, cost.memory_ns) - max(cost.compute_ns, cost.memory_ns))
    return replace(cost, compute_ns=cost.compute_ns + extra_ns, stall_ns=cost.stall_ns + extra_ns,
                   energy_pj=cost.energy_pj + extra_pj, note=f"{cost.note}, {what} {extra_ns / 1e3:.3g} us")  # fmt: skip



def requant_ns(op: Op, unit: CpuUnit) -> float:
    """Time an integer GEMM kernel (:data:`INTEGER_GEMM_OP_TYPES`) spends beside its MACs, ns:
    ``requant_ns`` per output element (each int32 accumulator corrected for the zero points, scaled,
    rounded and stored as 8 bits), and for a QLinearMatMul whose B is no constant (attention's K
    and V) ``int8_pack_ns`` per element of B (MLAS packs a constant B once, at load; this one at
    every run). 0 for other ops or a unit without the figures.

    Measured (onnxruntime 1.32, CI Xeon, AMX; U8S8 QLinearMatMul, 64-384 rows, K 128-2048, N
    128-2048): time = MACs at 2115 GOP/s (the fingerprint's ``MatMulInteger`` rate: 2113) + 0.33 ns
    per output, within 15 % over the ten shapes; MACs alone at that rate were 2-4x fast at K <= 512.

    >>> from graph_ir.ir import Tensor
    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"int8": 512}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, requant_ns=0.5)
    >>> y = Tensor("y", (1, 64, 128), "uint8")
    >>> requant_ns(Op("mm", "QLinearMatMul", "matmul", (), (y,)), u), requant_ns(Op("mm", "MatMul", "matmul", (), (y,)), u)
    (4096.0, 0.0)
    """
    if op.op_type not in INTEGER_GEMM_OP_TYPES or not op.outputs:
        return 0.0
    requant = op.outputs[0].elements * (unit.requant_ns or 0.0)
    b = op.inputs[1] if len(op.inputs) > 1 and op.op_type == "QLinearMatMul" else None
    return requant + (b.elements * (unit.int8_pack_ns or 0.0) if b is not None and not b.is_weight else 0.0)


def conv_sym_path(op: Op) -> bool | None:
    """Whether MLAS runs a ``QLinearConv`` on its symmetric indirect-conv kernel (True) or as im2col
    and an integer GEMM (False); None for any other op and for a grouped conv (depthwise kernels).

    onnxruntime's ``QLinearConv::TryConvSymPrepack`` takes the symmetric kernel when the weights
    are int8 with zero points 0 (what ``quantize_static`` writes) and ``MlasConvSymPackWSize``
    (``core/mlas/lib/convsym.cpp``) accepts the shape: on x86 (AVX2, AVX-VNNI, AVX-512) input
    channels a multiple of :data:`CONV_SYM_INPUT_ALIGN`, output channels at least
    :data:`CONV_SYM_OUTPUT_PACK` and a multiple of :data:`CONV_SYM_OUTPUT_ALIGN` (8 on AVX2).
    A 3-channel stem and an 8-channel conv take im2col.

    >>> from graph_ir.ir import Tensor
    >>> def conv(cin: int, cout: int) -> Op:
    ...     x, w = Tensor("x", (1, cin, 8, 8), "uint8"), Tensor("w", (cout, cin, 3, 3), "int8", is_weight=True)
    ...     return Op("c", "QLinearConv", "conv", (x, w), (Tensor("y", (1, cout, 8, 8), "uint8"),))
    >>> conv_sym_path(conv(3, 16)), conv_sym_path(conv(8, 8)), conv_sym_path(conv(8, 16))
    (False, False, True)
    """
    if op.op_type != "QLinearConv" or len(op.inputs) < 2 or conv_group(op) != 1:
        return None
    w = op.inputs[1]
    if len(w.shape) < 2:
        return None
    cout, cin = w.shape[0], w.shape[1]
    return (w.dtype == "int8" and cin % CONV_SYM_INPUT_ALIGN == 0 and cout >= CONV_SYM_OUTPUT_PACK
            and cout % CONV_SYM_OUTPUT_ALIGN == 0)  # fmt: skip


def integer_conv_ns(op: Op, unit: CpuUnit, dtype: Dtype) -> tuple[float, str]:
    """Time a ``QLinearConv`` spends beside its MACs and its requantization (:func:`requant_ns`),
    ns, and the path it is spent on; ``(0.0, "")`` for other ops, a grouped conv or a unit without
    the figure.

    - on MLAS's symmetric kernel (:func:`conv_sym_path`): ``int8_conv_pixel_ns`` per output pixel
      (the kernel computes 6 pixels x up to 64 channels per call, reading each pixel's input through
      an indirection buffer) and the MACs of the output channels padded to whole filter blocks of
      :data:`CONV_SYM_OUTPUT_PACK` (``MlasConvSymPackW``), at the conv's rate. On the CI Xeon a
      4 -> 16 conv ran at a sixth of the 64-channel one's rate per MAC, 32 -> 32 at 0.9 of it;
      where the filter one call reads (:data:`CONV_SYM_KERNEL_CHANNELS` output channels x input
      channels x kernel window bytes) exceeds L1, each 6-pixel call streams it from L2: its MACs
      at ``int8_conv_l2_mac_ps`` (96-256 channels: 2.6-2.9 ps a MAC where 48-64 took 2.2);
    - on im2col and an integer GEMM: ``int8_im2col_pixel_ns`` per output pixel (a 3-channel stem:
      18-20 ns a pixel where its MACs take 3);
    - on either path, ``int8_conv_call_ns`` once per call, whatever the pixels (about 0.95 us on an
      AMD EPYC: a 16 -> 16 conv took 5.9 us at 16 x 16 and 76.2 us at 64 x 64).

    >>> from graph_ir.ir import Tensor
    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"int8": 512}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, int8_im2col_pixel_ns=20.0, int8_conv_pixel_ns=6.0)
    >>> x, w = Tensor("x", (1, 3, 8, 8), "uint8"), Tensor("w", (16, 3, 3, 3), "int8", is_weight=True)
    >>> integer_conv_ns(Op("c", "QLinearConv", "conv", (x, w), (Tensor("y", (1, 16, 8, 8), "uint8"),)), u, "int8")
    (1280.0, 'im2col')
    >>> x, w = Tensor("x", (1, 16, 8, 8), "uint8"), Tensor("w", (16, 16, 3, 3), "int8", is_weight=True)
    >>> integer_conv_ns(Op("c", "QLinearConv", "conv", (x, w), (Tensor("y", (1, 16, 8, 8), "uint8"),)), u, "int8")
    (384.0, 'indirect conv')
    """
    sym = conv_sym_path(op)
    gemm = gemm_of(op) if sym is not None else None
    if gemm is None:
        return 0.0, ""
    pixels = gemm.batch * gemm.m
    call = unit.int8_conv_call_ns or 0.0
    if sym and unit.int8_conv_pixel_ns:
        padded = math.ceil(gemm.n / CONV_SYM_OUTPUT_PACK) * CONV_SYM_OUTPUT_PACK / gemm.n
        macs_ns = roof_ns = _compute_ns(op, unit, dtype)
        filter_bytes = min(gemm.n, CONV_SYM_KERNEL_CHANNELS) * gemm.k
        if unit.int8_conv_l2_mac_ps and filter_bytes > unit.l1_kib * 1024 and op.macs:
            macs_ns = max(macs_ns, op.macs * unit.int8_conv_l2_mac_ps / 1e3)
        return call + pixels * unit.int8_conv_pixel_ns + padded * macs_ns - roof_ns, "indirect conv"
    if not sym and unit.int8_im2col_pixel_ns:
        return call + pixels * unit.int8_im2col_pixel_ns, "im2col"
    return 0.0, ""


def one_row_call_ns(op: Op, unit: CpuUnit) -> float:
    """The fixed set-up of a one-row product over constant weights (:func:`is_gemv`), ns:
    ``int8_gemv_call_ns`` for an integer one (``QGemm``, ``QLinearMatMul``), ``fp32_gemv_call_ns``
    for a float one (``Gemm``, ``MatMul``); 0 for other ops or without the figure. It replaces the
    generic set-up of a small kernel (:func:`shape_factor`, :func:`_compute_ns`). MLAS's QGEMM packs
    the row and runs the blocked kernel it runs for many rows; on the CI Xeon a chain of one-row
    ``QGemm`` s took 0.8-0.9 us per call beside the dispatch and the weight stream (the first of a
    run about 0.5 us more), where the MACs of a 64 x 64 one take 0.01. On an AMD EPYC a one-row
    float ``Gemm`` took 0.44 us beside the dispatch, then streamed its weights at 78 GB/s from L2 or
    L3 alike (``fp32_gemv_gbps``; the recurrent step's kernel: 103 GB/s from L2).

    >>> from graph_ir.ir import Tensor
    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"int8": 512}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, int8_gemv_call_ns=850.0)
    >>> a, b = Tensor("a", (1, 256), "uint8"), Tensor("b", (256, 10), "int8", is_weight=True)
    >>> one_row_call_ns(Op("g", "QGemm", "matmul", (a, b), (Tensor("y", (1, 10), "uint8"),)), u)
    850.0
    >>> one_row_call_ns(Op("g", "Gemm", "matmul", (a, b), (Tensor("y", (1, 10), "float32"),)), u)
    0.0
    """
    if op.op_type in ("QGemm", "QLinearMatMul") and unit.int8_gemv_call_ns and is_gemv(op):
        return unit.int8_gemv_call_ns
    if unit.fp32_gemv_call_ns and float_one_row(op) and (gemm := gemm_of(op)) is not None:
        return unit.fp32_gemv_call_ns * gemm.batch  # a call per matrix (a row product's heads)
    return 0.0


def batch_calls_ns(op: Op, unit: CpuUnit) -> float:
    """What a batched float ``MatMul`` of two matrices or more pays per matrix beside its FMAs:
    ``fp32_batch_call_ns`` per matrix, ns; 0 without the figure or for another op. Batched are
    products over run-time matrices (``B`` no weight) of more than one row each (a one-row product
    over them has its own call, :func:`one_row_call_ns`), and products over a weight ``B`` of more
    than two dimensions, one row or more (a capsule layer's predictions); a 2-D weight ``B`` is
    packed once and every row of ``A`` runs in one GEMM. onnxruntime hands MLAS one GEMM per
    matrix, each packing its ``B``: on an AMD EPYC, 64 products of 9 x 64 x 9 (a DLRM's pairwise
    interaction) took 31 us where their FMAs at the peak take 6, and the same FMAs in 512 matrices
    of K = 16 took 136 us against 45 in 32 of K = 256: about 190 ns a matrix. On the CI Xeon
    (``fp32_batch_call_ns`` 83) 11,520 products of 1 x 8 x 16 over a ``[1152, 10, 8, 16]`` weight
    took 0.83 ms (72 ns each) where the generic rates priced 0.17.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, fp32_batch_call_ns=190.0)
    >>> a, b = Tensor("a", (64, 9, 64), "float32"), Tensor("b", (64, 64, 9), "float32")
    >>> batch_calls_ns(Op("m", "MatMul", "matmul", (a, b), (Tensor("y", (64, 9, 9), "float32"),)), u)
    12160.0
    >>> u3, w3 = Tensor("u", (32, 1, 1, 8), "float32"), Tensor("w", (32, 10, 8, 16), "float32", is_weight=True)
    >>> batch_calls_ns(Op("m", "MatMul", "matmul", (u3, w3), (Tensor("y", (32, 10, 1, 16), "float32"),)), u)
    60800.0
    >>> w2 = Tensor("w", (64, 9), "float32", is_weight=True)  # packed once: one GEMM of every row
    >>> batch_calls_ns(Op("m", "MatMul", "matmul", (a, w2), (Tensor("y", (64, 9, 9), "float32"),)), u)
    0.0
    """
    if not unit.fp32_batch_call_ns or op.op_type != "MatMul" or len(op.inputs) < 2:
        return 0.0
    b = op.inputs[1]
    if op.inputs[0].dtype not in ("float32", "float16") or (gemm := gemm_of(op)) is None or gemm.batch < 2:
        return 0.0
    if (b.is_weight and len(b.shape) <= 2) or (not b.is_weight and gemm.m < 2):
        return 0.0
    return gemm.batch * unit.fp32_batch_call_ns


def _compute_ns(op: Op, unit: CpuUnit, dtype: Dtype) -> float:
    """The op's work at the core's SIMD peak times its efficiency (kernel class, shape); a dense
    conv on onnxruntime's NCHWc kernel only its taps inside the input (:func:`valid_tap_share`)."""
    key = kernel_type(op)
    if key == "DepthwiseConv" and NCHWC_ATTR in op.attrs:  # onnxruntime's NCHWc kernel
        if measured_depthwise_ns(op, unit) is not None:
            return 0.0  # priced apart at the figures measured for it (:meth:`CpuModel.conv`)
        return depthwise_nchwc_ns(op, unit, dtype, unit.efficiency.get(key) or efficiency(unit, op, DEFAULT_EFFICIENCY))
    shape = 1.0 if measured_setup(op, unit) is not None else shape_factor(op)
    if key != op.op_type and key in unit.efficiency:  # a kernel class of its own, fitted as such
        eff = unit.efficiency[key] * shape / (DEPTHWISE_FACTOR if key == "DepthwiseConv" else 1.0)
    else:
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY) * shape
    eff *= aliased_factor(op, unit, dtype)
    flops = op.flops * (valid_tap_share(op) if key == "Conv" and NCHWC_ATTR in op.attrs else column_padding(op, unit))
    return flops / (_peak_flops_per_ns(op, unit, dtype) * eff) if flops else 0.0


def column_padding(op: Op, unit: CpuUnit) -> float:
    """How much more a float MatMul or Gemm computes than its FMAs: MLAS's SGEMM kernels work the
    output's ``N`` columns in whole vectors of the unit's ``vector_floats``, so ``ceil(N / v) * v / N``;
    1 without the figure, for another op or an integer one.

    Measured (AMD EPYC, Zen 5, AVX-512, onnxruntime 1.32, 1 thread): 4,096 x 256 by N took 185 /
    191 / 204 us for N = 8 / 10 / 16 (B constant), 352 / 316 for 24 / 32, 506 / 512 for 40 / 48;
    336 matrices of 64 x 64 by 64 x N 272 / 270 / 267 us for N = 4 / 8 / 16 (PatchTST's attention over
    heads of 8 floats priced at half its time).

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, vector_floats=16)
    >>> mm = lambda n: Op("m", "MatMul", "matmul", (Tensor("a", (64, 64), "float32"), Tensor("b", (64, n), "float32")),
    ...                   (Tensor("y", (64, n), "float32"),))
    >>> column_padding(mm(8), u), column_padding(mm(24), u), column_padding(mm(64), u)
    (2.0, 1.3333333333333333, 1.0)
    """
    v = unit.vector_floats
    if not v or op.op_type not in ("MatMul", "Gemm") or not op.outputs or not op.outputs[0].shape:
        return 1.0
    if op.outputs[0].dtype != "float32":
        return 1.0
    n = int(op.outputs[0].shape[-1])
    return -(-n // v) * v / n if n > 0 else 1.0


def revisit_bytes(rows: int, k: int, n: int, stride_k: int, l2_bytes: float, elem: int = 4) -> float:
    """Bytes MLAS's SGEMM reads again from beyond L2 in a product of ``rows`` rows, ``k`` and ``n``.
    It takes B in slices of :data:`MLAS_SGEMM_STRIDE_N` columns, each in slices of ``stride_k`` of
    K, and runs every row of A against each:

    - the slice of C is added into once per slice of K: every pass after the first reads and
      writes it again, from beyond L2 where the rows' A and C of one step (``stride_k`` + 128
      values a row, and the B panel) do not keep within L2;
    - A is read once per slice of N: every slice after the first reads it again, from beyond L2
      where all of A and a slice of C do not keep within L2.

    Each is from L2 up to half of ``l2_bytes`` (the other half holds the lines just streamed past
    and what the prefetchers bring) and from beyond from the whole L2 on, a linear share between.
    Measured (CI Xeon, 1.7 MiB of L2 usable, onnxruntime 1.32, 1 thread, constant B; 11 shapes of
    256-8,192 rows, K 500-3,072, N 128-3,072): the time beyond the FMAs is these bytes at 30-52 GB/s
    (median 42), not overlapped; 13-34 GB/s counting the C passes alone.

    >>> mib = 1.7 * 2**20
    >>> revisit_bytes(4096, 768, 128, 256, mib) == 2 * 2 * 4096 * 128 * 4  # three passes over C, A read once
    True
    >>> revisit_bytes(4096, 256, 256, 256, mib) == 4096 * 256 * 4  # one pass over C, A read twice
    True
    >>> revisit_bytes(128, 768, 768, 256, mib)  # C and A stay in L2
    0.0
    """
    slices_n, passes_k = -(-n // MLAS_SGEMM_STRIDE_N), -(-k // stride_k)
    if rows <= 0 or l2_bytes <= 0:
        return 0.0
    step = rows * (stride_k + MLAS_SGEMM_STRIDE_N) * elem + stride_k * MLAS_SGEMM_STRIDE_N * elem
    a_bytes = rows * k * elem
    c_far = (passes_k - 1) * 2 * rows * n * elem * _beyond_share(step, l2_bytes)
    a_far = (slices_n - 1) * a_bytes * _beyond_share(a_bytes + rows * MLAS_SGEMM_STRIDE_N * elem, l2_bytes)
    return c_far + a_far


def _beyond_share(stream: float, l2_bytes: float) -> float:
    """Share of a stream of ``stream`` bytes read again that comes from beyond an L2 of ``l2_bytes``
    (:func:`revisit_bytes`): none up to half of it, all from the whole of it on."""
    return min(1.0, max(0.0, (stream - l2_bytes / 2) / (l2_bytes / 2)))


def gemm_revisit_ns(op: Op, unit: CpuUnit, dtype: Dtype) -> float:
    """What a float32 MatMul or Gemm (not a one-row product) spends reading its A and C again from
    beyond L2 (:func:`revisit_bytes`) at the unit's ``gemm_revisit_gbps``, ns; 0 without the figure.

    A B of two dimensions (a weight) makes one product of all the rows (onnxruntime flattens A), a
    batched B one product per matrix. Those reads do not overlap the kernel's FMAs: on the CI Xeon
    a 2,048 x 768 x 768 product's ran at about 40 GB/s, the L3's streaming rate. On several threads
    they split with the product (each core's own L2 holding its rows is not priced apart)."""
    gbps = unit.gemm_revisit_gbps
    if not gbps or op.op_type not in FLOAT_GEMM_OP_TYPES or dtype != "fp32" or is_gemv(op):
        return 0.0
    gemm = gemm_of(op)
    if gemm is None:
        return 0.0
    b = op.inputs[1]  # a GEMM has two operands
    rows, products = (gemm.batch * gemm.m, 1) if b.is_weight and len(b.shape) == 2 else (gemm.m, gemm.batch)
    l2 = run_levels(unit, _cache_levels(unit))[1][0] * 1024
    stride_k = MLAS_SGEMM_PACKED_STRIDE_K if b.is_weight else MLAS_SGEMM_STRIDE_K
    return products * revisit_bytes(rows, gemm.k, gemm.n, stride_k, l2) / gbps


def aliased_factor(op: Op, unit: CpuUnit, dtype: Dtype) -> float:
    """The unit's ``gemm_aliased_factor`` for a float32 MatMul or Gemm (not a one-row product,
    :func:`is_gemv`) whose A rows lie a multiple of :data:`ALIAS_STRIDE_BYTES` apart, else 1.

    MLAS's SGEMM kernel reads several rows of A at once; rows a multiple of 4 KiB apart fall in
    the same L1 cache sets. Measured (AMD EPYC, onnxruntime 1.32, 1 thread, ``(M, K) x (K, 768)``
    with constant B, M = 32-512): K = 1024, 2048, 3072, 4096, 6144 ran at 102-105 GFLOP/s, K = 256,
    512, 768, 1280, 1536, 2304, 2560, 3200, 3584 at 112.9-116, whatever M, N or the size of A.

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, gemm_aliased_factor=0.9)
    >>> def mm(k): return Op("m", "MatMul", "matmul", (Tensor("a", (1, 128, k), "float32"),
    ...                      Tensor("b", (k, 768), "float32", is_weight=True)), (Tensor("y", (1, 128, 768), "float32"),))
    >>> aliased_factor(mm(3072), u, "fp32"), aliased_factor(mm(2304), u, "fp32")
    (0.9, 1.0)
    """
    if not unit.gemm_aliased_factor or op.op_type not in FLOAT_GEMM_OP_TYPES or dtype != "fp32" or is_gemv(op):
        return 1.0
    a = op.inputs[0] if op.inputs else None
    if a is None or len(a.shape) < 2 or a.elements <= a.shape[-1]:
        return 1.0
    row_bytes = a.nbytes // max(1, a.elements) * a.shape[-1]
    return unit.gemm_aliased_factor if row_bytes % ALIAS_STRIDE_BYTES == 0 else 1.0


def _peak_flops_per_ns(op: Op, unit: CpuUnit, dtype: Dtype) -> float:
    """One core's peak for ``op``, FLOP/ns: the unit's SIMD peak at ``dtype``, or for a QLinearConv
    MLAS's conv kernel runs (:func:`conv_sym_path`) the MAC rate measured for that kernel
    (``int8_conv_mac_ps``), which an efficiency capped at 1 against the int8 MatMul's rate could not
    reach where it runs faster (an AMD EPYC: 4.0 ps a MAC against 4.5; its int8 CNNs +6..+15 %).

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"int8": 400}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, int8_conv_mac_ps=4.0)
    >>> x, w = Tensor("x", (1, 16, 8, 8), "uint8"), Tensor("w", (16, 16, 3, 3), "int8", is_weight=True)
    >>> conv = Op("c", "QLinearConv", "conv", (x, w), (Tensor("y", (1, 16, 8, 8), "uint8"),))
    >>> _peak_flops_per_ns(conv, u, "int8"), u.peak_flops_per_ns("int8")
    (500.0, 400.0)
    """
    if unit.int8_conv_mac_ps and conv_sym_path(op) is not None:
        return 2e3 / unit.int8_conv_mac_ps
    return unit.peak_flops_per_ns(dtype)


def depthwise_nchwc_ns(op: Op, unit: CpuUnit, dtype: Dtype, eff: float) -> float:
    """A depthwise conv on onnxruntime's NCHWc kernel, ns: per output its ``k x k`` taps and
    :data:`DEPTHWISE_OUTPUT_TAPS` more, one FMA each at ``eff`` times the core's peak.

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Op, Tensor
    >>> unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...                l1_bandwidth_gbps=200, l2_bandwidth_gbps=100)
    >>> def dw(k: int) -> Op:
    ...     x, w, y = Tensor("x", (1, 32, 8, 8), "f"), Tensor("w", (32, 1, k, k), "f", True), Tensor("y", (1, 32, 8, 8), "f")
    ...     return Op("dw", "Conv", "conv", (x, w), (y,), {"group": 32})
    >>> [depthwise_nchwc_ns(dw(k), unit, "fp32", 1.0) for k in (3, 7)]  # 2048 outputs x (9 or 49 + 7) FMAs at 32/ns
    [1024.0, 3584.0]
    """
    taps = _conv_depth(op) + DEPTHWISE_OUTPUT_TAPS
    return 2.0 * op.outputs[0].elements * taps / (unit.peak_flops_per_ns(dtype) * eff)


def _width_geometry(op: Op) -> tuple[int, int, int, int, int, int] | None:
    """A 2-D conv's kernel width, input and output widths, stride, dilation and left padding along
    its last axis; None for another rank."""
    if not op.weights or len(op.weights[0].shape) != 4 or len(op.inputs[0].shape) != 4 or len(op.outputs[0].shape) != 4:
        return None
    k, n, o = int(op.weights[0].shape[3]), int(op.inputs[0].shape[3]), int(op.outputs[0].shape[3])
    s = int(list(op.attrs.get("strides") or [1, 1])[1])  # type: ignore[call-overload]
    d = int(list(op.attrs.get("dilations") or [1, 1])[1])  # type: ignore[call-overload]
    pads = list(op.attrs.get("pads") or [0, 0, 0, 0])  # type: ignore[call-overload]
    return k, n, o, s, d, _pad_begin(str(op.attrs.get("auto_pad", "NOTSET")), int(pads[1]), k, n, o, s, d)


def depthwise_row_tiles(op: Op) -> tuple[int, int] | None:
    """The outputs of one output row of a 2-D depthwise conv on MLAS's sliding-window kernel
    (:data:`DEPTHWISE_TILE_OUTPUTS`) in tiles whose inputs lie inside the row and in tiles that
    reach into its padding (masked): ``(inside, masked)``. None for a conv that kernel does not
    take (strided or dilated along the width, another kernel width, not 2-D).

    >>> from graph_ir.ir import Tensor
    >>> def dw(side: int) -> Op:
    ...     x, w = Tensor("x", (1, 16, side, side), "f"), Tensor("w", (16, 1, 3, 3), "f", True)
    ...     return Op("dw", "Conv", "conv", (x, w), (Tensor("y", (1, 16, side, side), "f"),), {"group": 16, "pads": [1] * 4})
    >>> [depthwise_row_tiles(dw(side)) for side in (7, 24, 56)]  # the first tile and the last masked
    [(0, 7), (0, 24), (36, 20)]
    """
    geometry = _width_geometry(op)
    if geometry is None:
        return None
    k, n, o, s, d, column = geometry
    tile = DEPTHWISE_TILE_OUTPUTS.get(k)
    if tile is None or s != 1 or d != 1:
        return None
    column, inside, masked = -column, 0, 0
    while o > 0:
        count = min(o, tile)
        if column < 0 or column + count + k - 1 > n:
            masked += count
        else:
            inside += count
        column, o = column + count, o - count
    return inside, masked


def blocked_depthwise_ns(op: Op, unit: CpuUnit) -> float:
    """A depthwise conv on onnxruntime's NCHWc kernel (:data:`NCHWC_ATTR`) at the figures measured
    for it (:func:`measured_depthwise_ns`), ns; 0 for any other op or where there are none (the
    taps at the calibrated rate then, :func:`depthwise_nchwc_ns`). No efficiency scales it: the
    probes time the kernel itself, and a calibration fit on MobileNetV1, whose depthwise inputs the
    pointwise convs' weights leave in the L3 (1.5x a chain's time), put MobileNetV3's, EfficientNet's
    and the MLPerf Tiny models' 8-41 % slow on an AMD EPYC."""
    if NCHWC_ATTR not in op.attrs or kernel_type(op) != "DepthwiseConv":
        return 0.0
    return measured_depthwise_ns(op, unit) or 0.0


def measured_depthwise_ns(op: Op, unit: CpuUnit) -> float | None:
    """An NCHWc depthwise conv at the figures ``hwsim fingerprint`` measured, ns (its FMAs, loads
    and stores; the padded channels are :func:`hwsim.host.validate.nchwc_work`'s): on MLAS's
    sliding-window kernel its rows' tiles (:func:`depthwise_row_tiles`) at the unit's
    ``depthwise_tile_ns`` for the kernel width, inside and masked, ``depthwise_row_ns`` per
    output row of a block of channels and ``depthwise_call_ns`` once; on the assembly kernel
    ``depthwise_output_ns`` per output and ``depthwise_tap_ns`` per tap, for kernels of at least
    :data:`DEPTHWISE_MEASURED_MIN_TAPS` taps. Both at the share of kernel rows inside the input
    (:func:`valid_tap_share`). None where the unit has no such figure.

    On an AMD EPYC (Zen 5), chains of 3x3 depthwise convs of the same outputs took 0.11 ns per
    output in rows of 120 and 0.22 in rows of 12, one masked tile (0.13 priced by the taps at
    one rate), and 0.28-0.30 at stride 2 on the assembly kernel.

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Tensor
    >>> unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, depthwise_tile_ns={3: (0.1, 0.2)},
    ...                depthwise_output_ns=0.2, depthwise_tap_ns=0.01)
    >>> def dw(side: int, stride: int) -> Op:
    ...     x, w = Tensor("x", (1, 16, side, side), "f"), Tensor("w", (16, 1, 3, 3), "f", True)
    ...     y = Tensor("y", (1, 16, side // stride, side // stride), "f")
    ...     return Op("dw", "Conv", "conv", (x, w), (y,), {"group": 16, "pads": [1] * 4, "strides": [stride] * 2})
    >>> round(measured_depthwise_ns(dw(24, 1), unit))  # 9216 outputs, all masked, x 0.2 x 70 of 72 kernel rows
    1792
    >>> round(measured_depthwise_ns(dw(24, 2), unit))  # 2304 outputs x (0.2 + 9 taps x 0.01 x 35 of 36 kernel rows)
    662
    """
    share = valid_tap_share(op)
    outputs = op.outputs[0].elements
    if unit.depthwise_tile_ns is not None and (tiles := depthwise_row_tiles(op)) is not None:
        rates = unit.depthwise_tile_ns.get(int(op.weights[0].shape[3]))  # type: ignore[call-overload]
        if rates is not None:
            inside, masked = tiles
            block = int(op.attrs.get(NCHWC_ATTR) or 16)  # type: ignore[call-overload]
            rows = outputs / (inside + masked) / block  # calls: output rows of each block of channels
            tiles_ns = outputs * share * (inside * rates[0] + masked * rates[1]) / (inside + masked)
            return tiles_ns + rows * (unit.depthwise_row_ns or 0.0) + (unit.depthwise_call_ns or 0.0)
    taps = _conv_depth(op)
    if unit.depthwise_output_ns is None or unit.depthwise_tap_ns is None or taps < DEPTHWISE_MEASURED_MIN_TAPS:
        return None
    return outputs * (unit.depthwise_output_ns + unit.depthwise_tap_ns * taps * share)


def valid_tap_share(op: Op) -> float:
    """The share of a conv's multiply-adds that MLAS's NCHWc conv kernel does: the kernel rows of
    each output row that fall inside the input rather than on the padding (those it skips, a row
    at a time), over ``kernel rows x output rows``, for every spatial axis but the last. Along the
    last axis it skips the padded taps too, but computes the outputs at either edge one at a time
    instead of several together, so no saving is counted there. im2col writes zeros for padded
    taps and its GEMM multiplies them: a conv on that path does all of its MACs. 1 for an op
    without a kernel and an input of the same rank.

    Measured on an AMD EPYC, 1 thread, a text-line recognizer's 3x3 convs of 64-256 channels
    (``crnn``, fifth unseen batch), against their full MACs at the calibrated Conv efficiency:
    16 x 64 ran 0.939 of the time (this share: 0.958; counting the columns too, 0.938), 8 x 32
    0.911-0.920 (0.917; 0.897), 4 x 32 0.849 (0.833; 0.816). Counting the columns too put
    ResNet-18, whose last stage runs on 7 x 7, at -6.3 % after calibration (-2.0 % before).

    >>> from graph_ir.ir import Tensor
    >>> x, w = Tensor("x", (1, 8, 4, 32), "float32"), Tensor("w", (8, 8, 3, 3), "float32", True)
    >>> op = Op("c", "Conv", "conv", (x, w), (Tensor("y", (1, 8, 4, 32), "float32"),), {"pads": [1, 1, 1, 1]})
    >>> round(valid_tap_share(op), 4)  # rows (2 + 3 + 3 + 2) / 12
    0.8333
    """
    if not op.weights or not op.inputs or not op.outputs:
        return 1.0
    kernel, ins, outs = op.weights[0].shape[2:], op.inputs[0].shape[2:], op.outputs[0].shape[2:]
    if not kernel or not (len(kernel) == len(ins) == len(outs)):
        return 1.0
    rank = len(kernel)
    strides = list(op.attrs.get("strides") or [1] * rank)  # type: ignore[call-overload]
    dilations = list(op.attrs.get("dilations") or [1] * rank)  # type: ignore[call-overload]
    pads = list(op.attrs.get("pads") or [0] * (2 * rank))  # type: ignore[call-overload]
    share = 1.0
    for axis, (k, n, o) in enumerate(zip(kernel[:-1], ins[:-1], outs[:-1])):
        s, d = int(strides[axis]), int(dilations[axis])
        begin = _pad_begin(str(op.attrs.get("auto_pad", "NOTSET")), int(pads[axis]), k, n, o, s, d)
        rows = np.arange(o)[:, None] * s - begin + np.arange(k)[None, :] * d
        share *= float(((rows >= 0) & (rows < n)).sum()) / (k * o)
    return share


def _pad_begin(auto_pad: str, pad: int, k: int, n: int, o: int, s: int, d: int) -> int:
    """The padding before an axis: the ``pads`` attribute's, or what ``SAME_UPPER`` (the smaller
    half first) or ``SAME_LOWER`` puts there; 0 for ``VALID``."""
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = max(0, (o - 1) * s + (k - 1) * d + 1 - n)
        return total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    return 0 if auto_pad == "VALID" else pad


def _conv_depth(op: Op) -> int:
    """A conv's products per output: input channels per group times the kernel's taps."""
    return math.prod(op.weights[0].shape[1:]) if op.weights else 1


def nchwc_activation_ns(op: Op, unit: CpuUnit | None = None) -> float:
    """The activation pass MLAS runs over an NCHWc conv's output when the activation is fused but
    not applied in the kernel's stores (:data:`NCHWC_ACTIVATION_ATTR`), ns: the ``unit``'s
    ``nchwc_activation_pass_ns`` for that activation per output element, or :data:`NCHWC_ACTIVATION_PASS_NS`."""
    if not (act := op.attrs.get(NCHWC_ACTIVATION_ATTR)):
        return 0.0
    measured = (unit.nchwc_activation_pass_ns or {}) if unit is not None else {}
    return op.outputs[0].elements * measured.get(str(act), NCHWC_ACTIVATION_PASS_NS)


#: Output-channel blocks one call of MLAS's NCHWc conv kernels computes (``FilterSetSize``).
NCHWC_FILTER_SET = 4
#: Input channels MLAS's NCHWc pointwise kernel takes per call (``MaximumInputChannelBatch``).
NCHWC_POINTWISE_CHANNELS = 128


def nchwc_conv_calls(op: Op) -> int:
    """Calls a dense conv on onnxruntime's NCHWc kernels (:data:`NCHWC_ATTR`; not a depthwise one)
    makes to its MLAS kernel on one thread: per image, group and set of :data:`NCHWC_FILTER_SET`
    output blocks (``snchwc.cpp``), one per output row and block of input channels on the NCHWc
    kernel; one per :data:`NCHWC_POINTWISE_CHANNELS` input channels on the pointwise kernel (1x1,
    no padding), per output row where it is strided, else over all rows at once. 0 for any other
    op, and for a conv whose input is narrower than a block: the NCHW kernel it runs calls once per
    output row and input channel, each call a few taps of one channel, lighter than the calls
    ``nchwc_call_ns`` measures (priced at that figure, a VWW-like CNN's 8 -> 16 channel 3x3 conv
    over 48 x 48 came out 19 us against 9.8 measured).

    >>> from graph_ir.ir import Tensor
    >>> def conv(cin: int, cout: int, k: int, side: int, pad: int = 1) -> Op:
    ...     x, w = Tensor("x", (1, cin, side, side), "f"), Tensor("w", (cout, cin, k, k), "f", True)
    ...     y = Tensor("y", (1, cout, side, side), "f")
    ...     return Op("c", "Conv", "conv", (x, w), (y,), {"pads": [pad] * 4, NCHWC_ATTR: 16})
    >>> nchwc_conv_calls(conv(192, 192, 3, 4))  # 4 rows x 3 sets of 4 blocks x 12 input blocks
    144
    >>> nchwc_conv_calls(conv(256, 64, 1, 56, 0)), nchwc_conv_calls(conv(3, 32, 3, 112))  # pointwise; NCHW
    (2, 0)
    """
    block = op.attrs.get(NCHWC_ATTR)
    if not isinstance(block, int) or block <= 0 or kernel_type(op) != "Conv" or not op.weights:
        return 0
    w, y = op.weights[0].shape, op.outputs[0].shape
    if len(w) != 4 or len(y) != 4:
        return 0
    groups, cin = conv_group(op), int(w[1])
    if cin < block:
        return 0
    out_blocks = -(-(int(w[0]) // groups) // block)
    sets = -(-out_blocks // NCHWC_FILTER_SET)
    if _unpadded_pointwise(op):
        per_set = -(-cin // NCHWC_POINTWISE_CHANNELS) * (int(y[2]) if _strided(op) else 1)
    else:
        per_set = int(y[2]) * -(-cin // block)
    return int(y[0]) * groups * sets * per_set


def nchwc_conv_pass_ns(op: Op, unit: CpuUnit, chip: Chip, w_b: int) -> float:
    """What a dense conv on onnxruntime's NCHWc kernels pays beside its FMAs, ns, where the ``unit``
    has a measured ``nchwc_call_ns``: its kernel calls (:func:`nchwc_conv_calls`) at that figure,
    and its filter's ``w_b`` bytes read once, serially, from the level that keeps the model's
    weights between runs (:func:`first_pass_gbps`; DRAM's bandwidth where none does). No
    efficiency scales either. 0 for any other op (:func:`nchwc_conv_calls`), or a unit without the
    figure. Each image of a batch after the first reads the filter again (MLAS's image loop is
    the outermost), from the smallest cache level that holds it (:func:`holding_gbps`).

    MLAS walks each set of four output blocks and each block of input channels over all output
    rows, one kernel call a row; the first row's call brings that slice of the filter in, with
    little work to hide it behind where the rows are short. Batches of 8 (chains of 3x3 convs, the
    same EPYC): each image after the first took 13 us more than its FMAs and calls at 256 channels
    over 2 x 2 (2.4 MB of filter from the L3, 15 priced), 25 over 4 x 4, 9 over 8 x 8; 88-123 at
    512 channels over 2 x 2 and 3 x 3 (9.4 MB; 61 priced: a set's slice of the filter, 1.2 MB, over
    the L2 is read again row after row); at 128 channels (0.6 MB, in the L2) 1; over 6 x 6 and
    larger maps what a single image misses and no more (``docs/fidelity_cpu.md``, "A batch's
    images each read the filter"). On an AMD EPYC (Zen 5, onnxruntime
    1.32, 1 thread) chains of 3x3 convs of 32-256 channels over 2 x 2 to 28 x 28 maps ran 0.94-0.97
    of the peak on the FMAs inside the rows, 17-28 ns a call (four runs of the probe) and their
    filters at about the L3's rate; the same convs sharing one filter (in L2) took 1.0-2.4 us less
    (``docs/fidelity_cpu.md``, "Dense NCHWc convs over small maps"). ResNet-18's 512-channel 3x3 convs over 7 x 7, 9.4 MB of
    filter each from DRAM, ran 1.26-1.29 ms where their FMAs at the calibrated rate were 0.90. A
    filter from DRAM came in at 19-35 GB/s in chains and models where the DRAM's triad reached 49:
    measured, not modelled (a probe of it moved 19 -> 26 GB/s within minutes, and GhostNet, whose
    loop keeps most of its weights, came out +30 % with it).
    """
    if unit.nchwc_call_ns is None or not (calls := nchwc_conv_calls(op)):
        return 0.0
    levels = _cache_levels(unit)
    gbps = first_pass_gbps(unit, levels, w_b) or unit_bandwidth_gbps(unit, chip)
    again = (int(op.inputs[0].shape[0]) - 1) * w_b / (holding_gbps(levels, w_b) or unit_bandwidth_gbps(unit, chip))
    return calls * unit.nchwc_call_ns + w_b / gbps + max(again, 0.0)


def sgemm_conv_ns(op: Op, unit: CpuUnit | None = None) -> float:
    """What a conv on onnxruntime's plain kernel (:data:`SGEMM_CONV_ATTR`) pays beside its FMAs,
    ns: MLAS packs its B, the ``K x N`` expanded input (``K`` products per output, ``N`` outputs
    per channel), at the ``unit``'s ``im2col_pack_ns`` per element (:data:`SGEMM_PACK_NS`, the CI
    Xeon's, without it: an AMD EPYC, Zen 5, with AVX-512 at full width, measured 0.15); a conv of one group also pays
    :data:`IM2COL_RUN_NS` per run its im2col (vol2col in 3-D) copies (:func:`im2col_rows` per row of
    B) and, strided, :data:`STRIDED_IM2COL_NS` per element (its gather, as a grouped conv's: a
    wav2vec-like feature encoder's stride-2 1-D convs, 256 -> 256 channels, ran 0.1-0.36 ns an
    element of B over their price without it on the Intel Xeon, the model -11.7 %).

    Measured (Intel Xeon, onnxruntime 1.32, 1 thread, ``benchmarks/micro_cpu_kernels.py conv3d``):
    3x3x3 convs of 24 -> 48 channels over 8 frames, B of 1.5 M elements each, took 0.24 ns (72
    wide) to 0.74 (6 wide) per element of B beyond their FMAs at a 768-cubed MatMul's rate, a fit
    of 0.24 + 3.1 / width over seven shapes: the per-element figure is :data:`SGEMM_PACK_NS`'s, the
    per-run one near the plain depthwise kernel's (kept at :data:`IM2COL_RUN_NS`). Without the runs
    the video CNNs of ``benchmarks/heldout_unseen8.py`` came out -22 / -25 % on that Xeon, with them
    -13 / -14 %.

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w, y = Tensor("x", (1, 64, 4000), "f"), Tensor("w", (64, 64, 3), "f", True), Tensor("y", (1, 64, 4000), "f")
    >>> round(sgemm_conv_ns(Op("c", "Conv", "conv", (x, w), (y,), {SGEMM_CONV_ATTR: 1})))  # 192 x (4000 x 0.26 + 2.85)
    200227
    """
    if SGEMM_CONV_ATTR not in op.attrs:
        return 0.0
    if _one_filter_per_channel(op):
        return depthwise_plain_ns(op)
    y, group = op.outputs[0], conv_group(op)
    b_elements = _conv_depth(op) * group * (y.elements // max(1, y.shape[1]))
    pack = getattr(unit, "im2col_pack_ns", None) or SGEMM_PACK_NS
    if group > 1:  # the grouped law's row cost carries its im2col's runs
        return b_elements * pack + grouped_conv_ns(op, unit)  # (one with measured figures: CpuModel.conv)
    return b_elements * (pack + _gather_ns(op, unit)) + _conv_depth(op) * im2col_rows(op) * IM2COL_RUN_NS


def _gather_ns(op: Op, unit: CpuUnit | None) -> float:
    """What a plain conv's im2col pays per element of B for its stride: the ``unit``'s
    ``im2col_stride_ns`` (:data:`STRIDED_IM2COL_NS` without it) where strided, else 0."""
    if not _strided(op):
        return 0.0
    return getattr(unit, "im2col_stride_ns", None) or STRIDED_IM2COL_NS


def _strided(op: Op) -> bool:
    """Whether conv ``op`` has a stride other than 1 (its im2col gathers instead of copying rows)."""
    strides = op.attrs.get("strides", ())
    return isinstance(strides, (list, tuple)) and any(s != 1 for s in strides)


def im2col_rows(op: Op) -> int:
    """Runs an im2col (a vol2col in 3-D) copies per row of a conv's expanded input: one per output
    row (every spatial dimension but the last; one in 1-D), each as long as the output is wide.

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w = Tensor("x", (1, 24, 8, 24, 12), "f"), Tensor("w", (48, 24, 3, 3, 3), "f", True)
    >>> im2col_rows(Op("c", "Conv", "conv", (x, w), (Tensor("y", (1, 48, 8, 24, 12), "f"),), {}))  # 8 x 24
    192
    """
    return math.prod(op.outputs[0].shape[2:-1])


def depthwise_plain_ns(op: Op) -> float:
    """What a depthwise conv of one filter per channel on onnxruntime's plain kernel pays beside
    its FMAs, ns: :data:`DEPTHWISE_PLAIN_CHANNEL_NS` per channel, :data:`DEPTHWISE_PLAIN_ELEMENT_NS`
    per element of its expanded input (channels x taps x outputs per channel) and
    :data:`IM2COL_RUN_NS` per run the im2col copies (channels x taps x output rows; one row in 1-D).

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w, y = Tensor("x", (1, 144, 128), "f"), Tensor("w", (144, 1, 31), "f", True), Tensor("y", (1, 144, 128), "f")
    >>> round(depthwise_plain_ns(Op("c", "Conv", "conv", (x, w), (y,), {"group": 144})))  # 144 x 110 + 571,392 x 0.099 + 4,464 x 2.85
    85130
    """
    y, channels = op.outputs[0], conv_group(op)
    taps, rows = math.prod(op.weights[0].shape[2:]), im2col_rows(op)
    return channels * (DEPTHWISE_PLAIN_CHANNEL_NS + taps * (y.elements // max(1, channels) * DEPTHWISE_PLAIN_ELEMENT_NS
                                                            + rows * IM2COL_RUN_NS))  # fmt: skip


def einsum_move_ns(op: Op, unit: CpuUnit) -> float:
    """Time of the data moves onnxruntime's Einsum makes around its GEMM
    (:func:`~cost_models.cpu_layout.einsum_moves`), ns: an element a Transpose walks at the unit's
    ``transpose_element_ns`` (without it, as a copied one), any other moved element :data:`EINSUM_MOVE_NS`;
    0 where the kernel's moves are not modelled (one operand, three, a diagonal).

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...             l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, transpose_element_ns=3.0)
    >>> q = Tensor("q", (1, 128, 4, 64), "float32")
    >>> op = Op("e", "Einsum", "matmul", (q, q), (Tensor("s", (1, 4, 128, 128), "float32"),), {"equation": "bqhd,bkhd->bhqk"})
    >>> round(einsum_move_ns(op, u) - 3.0 * 32768 - EINSUM_MOVE_NS * (2 * 32768 + 2 * 65536))  # q walked
    0
    """
    if op.op_type != "Einsum" or len(op.inputs) != 2:
        return 0.0
    moves = einsum_moves(str(op.attrs.get("equation", "")), [t.shape for t in op.inputs])
    if not moves:
        return 0.0
    walk = unit.transpose_element_ns or EINSUM_MOVE_NS
    return sum(math.prod(shape) * (walk if transpose_path(shape, perm) == "walk" else EINSUM_MOVE_NS) for shape, perm in moves)


def denormal_softmax_ns(op: Op, unit: CpuUnit) -> float:
    """What a Softmax pays for the elements of its input that a constant mask puts far below the
    row's maximum (:data:`SOFTMAX_DENORMAL_ATTR`): ``softmax_denormal_ns`` each, ns (0 without
    the mark or the unit's figure). Measured (CI Xeon, onnxruntime 1.32, 1 thread): Add + Softmax
    over 4 x 128 x 128 took 32.6 us with a causal mask of 0, -30 or -80 and 180-185 us with -1e4,
    -1e9 or -inf, ~4.5 ns per masked element.

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Op, Tensor
    >>> unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...                l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, softmax_denormal_ns=4.5)
    >>> x = Tensor("x", (1, 4, 128, 128), "f")
    >>> denormal_softmax_ns(Op("s", "Softmax", "softmax", (x,), (x,), {SOFTMAX_DENORMAL_ATTR: 32512}), unit)
    146304.0
    """
    count = op.attrs.get(SOFTMAX_DENORMAL_ATTR, 0)
    return float(count) * unit.softmax_denormal_ns if unit.softmax_denormal_ns and isinstance(count, int) else 0.0


def norm_rows_ns(op: Op, unit: CpuUnit) -> float:
    """What a LayerNormalization (:data:`ROW_NORM_OP_TYPES`) pays per row beside its time per
    element: ``norm_row_ns`` per row (the elements before ``axis``), ns; 0 without the unit's
    figure or for another op. onnxruntime's kernel normalizes a row at a time, each with its own
    mean and variance reductions. Measured (AMD EPYC, onnxruntime 1.32, 1 thread, 98 Ki and 384 Ki
    elements, three rounds): LayerNormalization 0.45-0.50 ns per element over rows of 768-1536
    floats, 0.61-0.91 over rows of 96, 0.95-1.9 over rows of 32: about 16 ns a row (15-21 over
    three more rounds at 147 Ki elements, RMSNormalization 13-30). ConvNeXt's LayerNormalizations
    over 48-192 channels ran 0.93-1.27 ns per element in a model where the per-element rate alone
    priced them at 0.49.

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Op, Tensor
    >>> unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...                l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, norm_row_ns=16.0)
    >>> x, g = Tensor("x", (1, 32, 32, 48), "f"), Tensor("g", (48,), "f", True)
    >>> norm_rows_ns(Op("n", "LayerNormalization", "norm", (x, g), (x,), {"axis": -1}), unit)
    16384.0
    """
    if not unit.norm_row_ns or op.op_type not in ROW_NORM_OP_TYPES:
        return 0.0
    return float(norm_rows(op)) * unit.norm_row_ns


def norm_rows(op: Op) -> int:
    """The rows a layer normalization normalizes one at a time: the elements of its first input
    before ``axis`` (-1 where it has none, as the fused ``Skip...`` kernels); 0 for an input of
    unknown rank or an axis out of range.

    >>> from graph_ir.ir import Op, Tensor
    >>> x = Tensor("x", (1, 64, 256), "f")
    >>> norm_rows(Op("n", "SkipLayerNormalization", "norm", (x, x), (x,))), norm_rows(Op("n", "LayerNormalization", "norm", (x,), (x,), {"axis": 1}))
    (64, 1)
    """
    if not op.inputs or not op.inputs[0].shape:
        return 0
    return _before_axis(op.inputs[0].shape, op.attrs.get("axis", -1)) or 0


def grouped_conv_ns(op: Op, unit: CpuUnit | None = None) -> float:
    """What a grouped conv on onnxruntime's plain kernel (:data:`SGEMM_CONV_ATTR`, ``group`` > 1)
    pays beside its FMAs and its B packing, ns: each group's im2col + SGEMM call per row of its
    expanded input (:data:`GROUPED_CONV_ROW_NS`), a strided im2col's gather per element of B
    (:func:`_gather_ns`: the ``unit``'s ``im2col_stride_ns`` or :data:`STRIDED_IM2COL_NS`) and the FMAs of its rows outside MLAS's full passes
    (:data:`SMALL_M_FMA_NS`, :data:`SGEMM_FULL_PASS_ROWS`). 0 for a
    conv of one group.

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w, y = Tensor("x", (1, 128, 28, 28), "f"), Tensor("w", (128, 4, 3, 3), "f", True), Tensor("y", (1, 128, 28, 28), "f")
    >>> round(grouped_conv_ns(Op("c", "Conv", "conv", (x, w), (y,), {"group": 32, SGEMM_CONV_ATTR: 1})))  # 32 x 36 rows, 3.6 M FMAs
    48036
    """
    group = conv_group(op)
    if SGEMM_CONV_ATTR not in op.attrs or group == 1:
        return 0.0
    y = op.outputs[0]
    rows = _conv_depth(op) * group
    b_elements = rows * (y.elements // max(1, y.shape[1]))
    m = y.shape[1] // group
    small = b_elements * (m % SGEMM_FULL_PASS_ROWS)  # the FMAs of rows outside full passes
    return rows * GROUPED_CONV_ROW_NS + b_elements * _gather_ns(op, unit) + small * SMALL_M_FMA_NS


@dataclass(frozen=True)
class GroupedWork:
    """What MLAS does for a grouped conv on its plain kernel (:func:`grouped_work`), counted over
    every image and group: ``runs`` its im2col copies (an output row of one row of a group's
    expanded input, within one slice of columns; none for a 1x1 conv of stride 1 and no padding,
    which MLAS multiplies directly), ``elements`` of B it builds and packs (each slice's columns
    rounded up to the kernel's 16), ``fmas`` against them, ``small`` of those in rows outside
    MLAS's full 12-row passes (:data:`SGEMM_FULL_PASS_ROWS`) and ``gathered`` elements a strided
    im2col gathers one at a time."""

    runs: int
    elements: int
    fmas: int
    small: int
    gathered: int


def conv_strides(n: int, k: int) -> tuple[int, int]:
    """The columns and rows of B MLAS's conv (and SGEMM) take per slice for ``n`` outputs per
    channel and ``k`` products per output: :data:`MLAS_SGEMM_STRIDE_N` by
    :data:`MLAS_SGEMM_STRIDE_K`, the columns doubled while half the rows still hold ``k``, or the
    rows doubled while half the columns still hold ``n`` (``MlasConvOperation``).

    >>> conv_strides(784, 36), conv_strides(784, 18), conv_strides(49, 512)
    ((256, 64), (512, 32), (64, 256))
    """
    stride_n, stride_k = MLAS_SGEMM_STRIDE_N, MLAS_SGEMM_STRIDE_K
    if n >= k:
        while stride_k // 2 >= k:
            stride_n, stride_k = stride_n * 2, stride_k // 2
    else:
        while stride_n > MLAS_STRIDE_N and stride_n // 2 >= n:
            stride_n, stride_k = stride_n // 2, stride_k * 2
    return stride_n, stride_k


def grouped_work(op: Op) -> GroupedWork:
    """The work of grouped conv ``op`` as MLAS runs it, one im2col + SGEMM per image and group in
    slices of :func:`conv_strides` columns (:class:`GroupedWork`). A slice that starts or ends
    inside an output row copies that row in two runs.

    >>> from graph_ir.ir import Tensor
    >>> x, w, y = Tensor("x", (1, 128, 28, 28), "f"), Tensor("w", (128, 4, 3, 3), "f", True), Tensor("y", (1, 128, 28, 28), "f")
    >>> grouped_work(Op("c", "Conv", "conv", (x, w), (y,), {"group": 32, "pads": [1] * 4}))  # 784 columns in slices of 256: 31 row runs
    GroupedWork(runs=35712, elements=903168, fmas=3612672, small=3612672, gathered=0)
    """
    y, group, k = op.outputs[0], conv_group(op), _conv_depth(op)
    n, width = math.prod(y.shape[2:]), y.shape[-1] if len(y.shape) > 2 else 1
    per = y.shape[0] * group * k  # rows of B over every image and group
    stride_n, _ = conv_strides(n, k)
    slices = -(-n // stride_n)
    last = n - (slices - 1) * stride_n
    columns = (slices - 1) * stride_n + -(-last // MLAS_STRIDE_N) * MLAS_STRIDE_N
    rows = -(-n // width)
    # each slice copies the rows it touches: one more run per slice boundary inside a row
    whole = (slices - 1) // (width // math.gcd(stride_n, width))
    runs = 0 if _direct(op) else per * (rows + slices - 1 - whole)
    m = y.shape[1] // group
    return GroupedWork(runs=runs, elements=per * columns, fmas=per * columns * m,
                       small=per * columns * (m % SGEMM_FULL_PASS_ROWS), gathered=per * n if _strided(op) else 0)  # fmt: skip


def plain_grouped_ns(op: Op, unit: CpuUnit | None) -> float:
    """A grouped conv on onnxruntime's plain kernel (:data:`SGEMM_CONV_ATTR`; not a depthwise one)
    at its measured figures (:func:`measured_grouped_ns`), ns, which no efficiency scales: 0 for
    any other op or where the unit has none."""
    if SGEMM_CONV_ATTR not in op.attrs or conv_group(op) == 1 or _one_filter_per_channel(op):
        return 0.0
    return measured_grouped_ns(op, unit) or 0.0


def _unpadded_pointwise(op: Op) -> bool:
    """Whether conv ``op`` has a 1x1 kernel and no padding (any stride)."""
    kernel = op.weights[0].shape[2:] if op.weights else ()
    pads = op.attrs.get("pads", ())
    return all(d == 1 for d in kernel) and not (isinstance(pads, (list, tuple)) and any(pads))


def _direct(op: Op) -> bool:
    """Whether MLAS multiplies conv ``op`` without an im2col: a 1x1 kernel of stride 1 and no padding."""
    return _unpadded_pointwise(op) and not _strided(op)


def measured_grouped_ns(op: Op, unit: CpuUnit | None) -> float | None:
    """A grouped conv on onnxruntime's plain kernel at the figures ``hwsim fingerprint`` measured,
    ns (:func:`grouped_work`): its runs at the ``unit``'s ``grouped_run_ns``, its elements of B at
    ``grouped_element_ns``, their FMAs at the unit's fp32 peak and those outside full passes at
    ``grouped_small_m_ns`` more, a strided im2col's gather as a plain conv's (:func:`_gather_ns`). None
    where the unit has no such figures (:func:`grouped_conv_ns` then).

    On an AMD EPYC (Zen 5, onnxruntime 1.32, 1 thread, 2026-12-07) the fingerprint measured 2.0 ns
    a run, 0.116 an element and 0.0016 a small-row FMA; 37 grouped convs (2-24 channels a group,
    8-128 groups, 7 x 7 to 112 x 112, 1x1 to 5x5, strides 1 and 2) then came out 33 of 37 within
    10 % (median 3.9 %; the 30 of stride 1 all, within -9.5..+6.0 %), where the law per row of B
    (:func:`grouped_conv_ns`, :data:`GROUPED_CONV_ROW_NS`, the CI Xeon's) put 15 of 37 (+6..+49 %).
    The misses are strided: +16..+21 % over planes of 14-28, -17 % over 112.

    >>> from chips.schema import CpuUnit
    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, grouped_run_ns=2.0,
    ...             grouped_element_ns=0.1, grouped_small_m_ns=0.002)
    >>> x, w, y = Tensor("x", (1, 128, 28, 28), "f"), Tensor("w", (128, 4, 3, 3), "f", True), Tensor("y", (1, 128, 28, 28), "f")
    >>> round(measured_grouped_ns(Op("c", "Conv", "conv", (x, w), (y,), {"group": 32, "pads": [1] * 4}), u))  # 35,712 x 2 + 903,168 x 0.1 + 3,612,672 x (2 / 64 + 0.002)
    281862
    """
    if unit is None or not (unit.grouped_run_ns and unit.grouped_element_ns) or unit.peak_flops_per_ns("fp32") <= 0:
        return None
    work = grouped_work(op)
    return (work.runs * unit.grouped_run_ns + work.elements * unit.grouped_element_ns
            + work.fmas * 2 / unit.peak_flops_per_ns("fp32") + work.small * (unit.grouped_small_m_ns or 0.0)
            + work.gathered * _gather_ns(op, unit))  # fmt: skip


#: Passes over its output a GEMM makes for a bias onnxruntime folds into it (``MatMulAddFusion``:
#: ``MatMul`` + ``Add`` run as one ``Gemm`` with ``C``): ``GemmBroadcastBias`` stores the bias into
#: every row of ``Y``, a store that first reads each line (2 passes), then MLAS adds the GEMM onto
#: it (``beta = 1``: ``Y`` read once more).
GEMM_BIAS_PASSES = 3


def gemm_bias_ns(out_bytes: int, unit: CpuUnit, dram_gbps: float, threads: int = 1, weight_bytes: int = 0) -> float:
    """Time a GEMM spends on a bias folded into it (:data:`GEMM_BIAS_PASSES` over its ``out_bytes``
    output), ns. Between the broadcast and MLAS's pass over a block of the output the kernel streams
    the rest of the output and, on average, half of its ``weight_bytes``: a pass finds the output's
    lines where a cyclic stream of that many bytes keeps them (:func:`stream_ns`: a level of ``C``
    bytes keeps ``2 C - S`` of ``S``), the rest beyond. The broadcast runs on one thread; MLAS's
    pass is split over ``threads``.

    Measured (``benchmarks/gemm_bias.py``, 2-D ``MatMul`` + ``Add`` against the ``MatMul`` alone,
    Xeon with a 1.8 MiB L2 at 140 GB/s and L3 at 39; rule in brackets): 0.08-0.12 ns per element
    for outputs of 384-768 KiB (0.085), 0.36 for 1.5 MiB behind 9 MiB of weights (0.31), 0.19 at
    2 MiB (0.14), 0.25-0.27 at 3-16 MiB (0.27-0.31).

    >>> u = CpuUnit(name="c", domain="d", clock_mhz=2600, flops_per_cycle={"fp32": 64},
    ...             l1_kib=64, l1_bandwidth_gbps=180, l2_kib=1813, l2_bandwidth_gbps=140, l3_kib=32768, l3_bandwidth_gbps=39)
    >>> [round(gemm_bias_ns(n * 4, u, 17.0) / n, 3) for n in (196_608, 786_432, 4_194_304)]  # ns per fp32 element
    [0.086, 0.268, 0.308]
    >>> round(gemm_bias_ns(393_216 * 4, u, 17.0, weight_bytes=768 * 3072 * 4) / 393_216, 3)  # BERT's FFN, 9 MiB of weights
    0.308
    """
    levels = _cache_levels(unit)
    reuse = out_bytes + weight_bytes / 2
    one = stream_ns(reuse, levels, math.inf, dram_gbps, levels[2][1] if len(levels) > 2 else None) * out_bytes / reuse
    return one * (GEMM_BIAS_PASSES - 1) + one / max(threads, 1)


def _cache_levels(unit: CpuUnit) -> list[tuple[float, float]]:
    """``(KiB, GB/s)`` of each cache level, L1 first."""
    levels = [(unit.l1_kib, unit.l1_bandwidth_gbps), (unit.l2_kib, unit.l2_bandwidth_gbps)]
    if unit.l3_kib:
        levels.append((unit.l3_kib, unit.l3_bandwidth_gbps))
    return levels


def holding_gbps(levels: list[tuple[float, float]], nbytes: float) -> float:
    """GB/s of the smallest of ``levels`` (:func:`_cache_levels`) that holds ``nbytes``; 0 where none
    does (DRAM)."""
    return next((g for kib, g in levels if nbytes <= kib * 1024), 0.0)


def _far_gemv_gbps(op: Op, unit: CpuUnit) -> float | None:
    """The rate at which ``op`` streams a matrix from beyond L2 when it is a matrix-vector
    product (:func:`is_gemv`): onnxruntime's measured GEMV rate (``gemv_far_gbps``, the same
    MLAS kernel as a recurrent step's: 27-29 GB/s here where a read sweep gets 38), or a float
    product's own rate (``fp32_gemv_gbps``) where that is lower, or an integer product's own
    (``int8_gemv_far_gbps``); for a one-row product over run-time matrices (:func:`is_row_product`)
    the float kernel's. None for any other op, or a unit without the figures: the level's own
    bandwidth holds."""
    if unit.fp32_gemv_gbps is not None and float_one_row(op):
        return min(unit.fp32_gemv_gbps, unit.gemv_far_gbps or math.inf)  # its own kernel, at any level
    if not is_gemv(op):
        return None
    if unit.int8_gemv_far_gbps is not None and op.op_type in INTEGER_GEMM_OP_TYPES:
        return unit.int8_gemv_far_gbps  # the integer kernel's own, fingerprinted on 3 MiB of weights
    return unit.gemv_far_gbps


def dram_gemv_gbps(op: Op, unit: CpuUnit) -> float | None:
    """The rate at which a one-row float product (:func:`is_gemv`) streams weights no cache holds,
    from DRAM, on one core: the fingerprint's ``gemv_dram_gbps`` (23-26 GB/s on an AMD EPYC, where
    the read sweep and the triad reach 38-39: AlexNet's, ZFNet's and VGG's fully connected layers
    of 16-411 MB ran 19-25 GB/s, a one-row Gemm of 67-151 MB alone 20). None for any other op or a
    unit without the figure."""
    if unit.gemv_dram_gbps is None or op.op_type not in FLOAT_GEMM_OP_TYPES or not is_gemv(op):
        return None
    return unit.gemv_dram_gbps


def _gemv_from_dram(cost: OpCost, op: Op, unit: CpuUnit, chip: Chip, w_b: int) -> OpCost:
    """``cost`` (its ``w_b`` weight bytes priced from DRAM at the DRAM's bandwidth: its working set
    beyond the last cache level, or :func:`_evicted_gemv` without the model's total) with a one-row
    float product's weights read from DRAM at :func:`dram_gemv_gbps` instead, where that is slower."""
    gbps = dram_gemv_gbps(op, unit)
    dram_bw = unit_bandwidth_gbps(unit, chip)
    if gbps is None or gbps >= dram_bw or not w_b:
        return cost
    return _weights_in(cost, unit, w_b / gbps - w_b / dram_bw, f"weights from DRAM at {gbps:.3g} GB/s")


def _weights_in(cost: OpCost, unit: CpuUnit, extra_ns: float, note: str) -> OpCost:
    """``cost`` with its weights' memory time changed by ``extra_ns`` (and the energy of the
    longer or shorter op), ``note`` added."""
    memory_ns = cost.memory_ns + extra_ns
    extra_pj = energy_pj(unit.active_w, max(cost.compute_ns, memory_ns) - max(cost.compute_ns, cost.memory_ns))
    return replace(cost, memory_ns=memory_ns, energy_pj=cost.energy_pj + extra_pj, note=f"{cost.note}, {note}")


def _evicted_gemv(cost: OpCost, op: Op, unit: CpuUnit, chip: Chip, levels: list[tuple[float, float]], w_b: int) -> OpCost:
    """``cost`` (its working set in a cache, its ``w_b`` weight bytes from DRAM at the DRAM's
    bandwidth: a loop of inferences does not keep all the model's weights cached) with a one-row
    float product's weights taken as its share of the loop's cyclic pass over all of them
    (``resident_weight_bytes``, :func:`stream_ns`): the part the last level keeps from one pass to
    the next (none from twice its size on) at the far rate, the rest at :func:`dram_gemv_gbps`.
    A decoding step of 170 MB of weights ran its 768 x 768 MatMuls at 24-25 GB/s, where the DRAM's
    triad is 40; a 1024-2048-2048-1000 MLP of 33 MB in a 25 MiB L3 ran far faster than DRAM allows.
    Without the total, :func:`_gemv_from_dram`."""
    gbps, total = dram_gemv_gbps(op, unit), unit.resident_weight_bytes
    if gbps is None or not w_b or not total or total <= w_b:
        return _gemv_from_dram(cost, op, unit, chip, w_b)
    far = _far_gemv_gbps(op, unit)
    w_ns = w_b * stream_ns(total, run_levels(unit, levels), _near_gemv_gbps(op, unit) or math.inf, gbps, far) / total
    return _weights_in(cost, unit, w_ns - w_b / unit_bandwidth_gbps(unit, chip),
                       f"weights a share of a {total / 2**20:.3g} MiB cyclic pass")  # fmt: skip


def _near_gemv_gbps(op: Op, unit: CpuUnit) -> float | None:
    """The rate at which a matrix-vector product (:func:`is_gemv`) streams a matrix from L1/L2:
    ``gemv_gbps`` (a recurrent step's GEMV in L2: 114 GB/s here, where the read sweep gets 163;
    a batch-1 1024 x 256 Gemm chain measured 115). None for any other op or without the figure."""
    if unit.int8_gemv_gbps is not None and op.op_type in INTEGER_GEMM_OP_TYPES and is_gemv(op):
        return unit.int8_gemv_gbps  # an integer product's packed int8 weights (:func:`one_row_call_ns`)
    if unit.fp32_gemv_gbps is not None and float_one_row(op):
        return unit.fp32_gemv_gbps  # a float product's own kernel (:func:`one_row_call_ns`)
    return unit.gemv_gbps if unit.gemv_gbps is not None and is_gemv(op) else None


def is_gemv(op: Op) -> bool:
    """Whether ``op`` is a matrix-vector product over weights (one row, batch 1: MLAS's GEMV path)."""
    gemm = gemm_of(op) if op.weights else None
    return gemm is not None and gemm.m == 1 and gemm.batch == 1


def is_row_product(op: Op) -> bool:
    """Whether ``op`` is a float ``MatMul`` of one row against matrices made at run time (``B`` no
    weight): a decoding step's ``q K^T`` and ``p V`` over its cache, one row per head. MLAS runs
    each matrix on its one-row kernel (:func:`one_row_call_ns`, ``fp32_gemv_gbps``), ``B``
    transposed or not alike: on an AMD EPYC, 8 heads of a 513 x 96 cache ran 24 us either way, where
    the generic GEMM rates had priced 11.

    >>> from graph_ir.ir import Tensor
    >>> q, k = Tensor("q", (1, 8, 1, 64), "float32"), Tensor("k", (1, 8, 64, 256), "float32")
    >>> is_row_product(Op("m", "MatMul", "matmul", (q, k), (Tensor("s", (1, 8, 1, 256), "float32"),)))
    True
    """
    if op.op_type != "MatMul" or len(op.inputs) < 2 or op.inputs[1].is_weight:
        return False
    gemm = gemm_of(op)
    return gemm is not None and gemm.m == 1


def float_one_row(op: Op) -> bool:
    """Whether MLAS runs ``op`` on its one-row float kernel: a one-row float product over weights
    (:func:`is_gemv`) or over run-time matrices (:func:`is_row_product`)."""
    return op.op_type in FLOAT_GEMM_OP_TYPES and (is_gemv(op) or is_row_product(op))


def row_pack_ns(op: Op, unit: CpuUnit) -> float:
    """What a one-row product over run-time matrices (:func:`is_row_product`) that onnxruntime runs
    with a scale folded in (:data:`SCALED_ATTR`: a ``FusedMatMul`` whose alpha is not 1) pays beside
    the one-row kernel, ns: MLAS takes its one-row path only at alpha 1, so it packs each ``B`` for
    its blocked kernel, ``fp32_pack_ns`` per element. 0 for other ops or without the figure."""
    if not unit.fp32_pack_ns or SCALED_ATTR not in op.attrs or not is_row_product(op):
        return 0.0
    return op.inputs[1].elements * unit.fp32_pack_ns


def _resident_weights_gbps(
    op: Op, unit: CpuUnit, levels: list[tuple[float, float]], act_b: int, w_b: int, level_gbps: float
) -> float:
    """The rate at which an op with cached weights streams its working set when a loop of
    inferences keeps the model's weights (``resident_weight_bytes``) in a level larger than the
    one holding the op's own working set: the activations at ``level_gbps``, the weights from
    the smallest level holding them all (each layer's weights were evicted by the others' since
    the last inference). ``level_gbps`` unchanged otherwise."""
    total = unit.resident_weight_bytes
    if not total or total <= act_b + w_b:
        return level_gbps
    # the op's share of one cyclic pass over all the weights (:func:`stream_ns`)
    w_ns = resident_stream_ns(op, unit, levels, w_b)
    return max(0.0, min(level_gbps, (act_b + w_b) / (act_b / level_gbps + w_ns)))


def resident_stream_ns(op: Op, unit: CpuUnit, levels: list[tuple[float, float]], w_b: int, threads: int = 1) -> float:
    """Time ``op`` takes for its ``w_b`` weight bytes in a cyclic pass over all the model's
    weights (``resident_weight_bytes``, :func:`stream_ns`), ns. On ``threads`` cores a
    matrix-vector product is split by rows: each core streams its share of every layer, so a
    pass over ``1 / threads`` of the weights from its own caches (a 2.7 MB MLP, 2 x 1.3 MB, fits
    two L2s where it did not fit one). The activations are not included."""
    total = (unit.resident_weight_bytes if unit.weights_in_cache else None) or float(w_b)
    share = total / threads
    far = _far_gemv_gbps(op, unit)
    core = _near_gemv_gbps(op, unit) or math.inf
    dram = dram_gemv_gbps(op, unit) or levels[-1][1]
    return w_b / threads * stream_ns(share, run_levels(unit, levels), core, dram, far) / share


def run_levels(unit: CpuUnit, levels: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``levels`` as a stream of weights read once per onnxruntime run call sees them: the L2
    (the second level) less the run call's own footprint (``run_footprint_kib``), the L3 no more
    than a loop of runs keeps of it (``loop_cache_kib``, :func:`loop_cache_bytes`). A 2.5 MiB
    two-matrix Gemm chain kept 1.84 MiB of a pass in L2 from its second pass in a run on, 1.62 MiB
    on its first (the 784-512-512-10 MLP's only pass per run): the interpreter and onnxruntime's
    run path between two runs take ~0.2 MiB.

    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=2048, l2_bandwidth_gbps=50, run_footprint_kib=256)
    >>> run_levels(u, [(32.0, 100.0), (2048.0, 50.0)])
    [(32.0, 100.0), (1792.0, 50.0)]
    """
    if len(levels) < 2:
        return levels
    kib, gbps = levels[1]
    out = [levels[0], (max(0.0, kib - (unit.run_footprint_kib or 0.0)), gbps), *levels[2:]]
    if len(out) > 2:  # the L3: no more than the loop keeps of it
        out[2] = (min(out[2][0], loop_cache_bytes(unit) / 1024), out[2][1])
    return out


def gemv_split_speedup(op: Op, unit: CpuUnit, threads: int) -> float:
    """How much faster a matrix-vector product's weight stream runs split by rows over
    ``threads`` cores than on one (:func:`resident_stream_ns`): super-linear where each core's
    share stays in its own L2 (the 784-512-512-10 MLP ran 4x faster on 2 threads). ``threads``
    for any other op, or a unit without the GEMV rates."""
    if threads <= 1 or not is_gemv(op) or unit.gemv_gbps is None:
        return float(threads)
    w_b = op.weight_bytes(None)
    levels = _cache_levels(unit)
    one = resident_stream_ns(op, unit, levels, w_b)
    split = resident_stream_ns(op, unit, levels, w_b, threads)
    return one / split if split > 0 else float(threads)


def gather_rows_ns(op: Op, unit: CpuUnit) -> float:
    """What onnxruntime's ``Gather`` pays per row beside its bytes, ns: ``gather_row_ns`` for each
    row it copies, one per id and per index of the axes before ``axis`` (0 for another op or a
    unit without the figure). An embedding lookup of 26,624 ids of one float took 230 us on an AMD
    EPYC (2026-12-06), 8.6 ns an id, where its 104 KiB priced as a copy gave 13 us.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, gather_row_ns=8.0)
    >>> table, ids = Tensor("t", (1000, 4, 16), "float32", True), Tensor("i", (2, 5), "int64")
    >>> [gather_rows_ns(Op("g", "Gather", "data", (table, ids), (Tensor("y", s, "float32"),), {"axis": a}), u)
    ...  for a, s in ((0, (2, 5, 4, 16)), (1, (1000, 2, 5, 16)))]  # 10 ids; then 1000 x 10
    [80.0, 80000.0]
    """
    if op.op_type != "Gather" or not unit.gather_row_ns or len(op.inputs) < 2 or not op.inputs[0].shape:
        return 0.0
    outer = _before_axis(op.inputs[0].shape, op.attrs.get("axis", 0)) or 1
    return outer * op.inputs[1].elements * unit.gather_row_ns


def cold_gather_ns(op: Op, unit: CpuUnit, dtype: str) -> float:
    """What an embedding lookup (a ``Gather`` over axis 0 of a weight table) pays beyond its time
    with the rows cached where its rows are in DRAM, ns: ``gather_dram_row_ns`` per distinct row it
    reads plus ``gather_dram_line_ns`` per 64-byte line of each (:mod:`hwsim.host.gather_probe`);
    rows narrower than a line miss once per distinct line. Its ids are taken as spread over the
    table, as ``hwsim validate`` feeds them: ``n`` ids hit ``N (1 - (1 - 1/N)^n)`` of ``N`` rows (or
    lines); an id that comes back to a row (or line) read before finds it in the L2 as often as
    the L2 holds the table, and misses again otherwise. On an AMD EPYC (2026-12-06, 1 MiB of L2) a
    DeepFM's 159,744 ids of one float into a 780 KB table took 12 ns an id (its 12,188 lines missed
    once each, where a miss per id priced 49), and as many ids of 10 floats into a 7.8 MB table 43
    ns (a miss per id, 89,000 lines of it distinct). 0 where the model's weights stay in the caches
    from run to run (``weights_in_cache``: :func:`cost_models.table.steady_state_unit`, which counts
    a lookup's rows, not its table), without the unit's figures, or for another op.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=1024, l2_bandwidth_gbps=50, gather_dram_row_ns=40.0, gather_dram_line_ns=8.0)
    >>> table, ids = Tensor("t", (30522, 768), "float32", True), Tensor("i", (1, 128), "int64")
    >>> op = Op("g", "Gather", "data", (table, ids), (Tensor("y", (1, 128, 768), "float32"),))
    >>> round(cold_gather_ns(op, u, "fp32")), cold_gather_ns(op, u.model_copy(update={"weights_in_cache": True}), "fp32")
    (54271, 0.0)
    >>> many = Tensor("i", (4096, 39), "int64")
    >>> def lookup(width: int) -> Op:
    ...     table = Tensor("t", (195000, width), "float32", True)
    ...     return Op("g", "Gather", "data", (table, many), (Tensor("y", (4096, 39, width), "float32"),))
    >>> [round(cold_gather_ns(lookup(w), u, "fp32")) for w in (1, 10)]  # 12,188 lines in the L2; 7.8 MB beyond it
    [585023, 7211311]
    """
    if op.op_type != "Gather" or not (unit.gather_dram_row_ns and unit.gather_dram_line_ns) or unit.weights_in_cache:
        return 0.0
    if op.attrs.get("axis", 0) != 0 or len(op.inputs) < 2 or not op.inputs[0].is_weight or not op.inputs[0].shape:
        return 0.0
    ids, table_rows = op.inputs[1].elements, op.inputs[0].shape[0]
    if not ids or not table_rows:
        return 0.0
    table_bytes = deployed_bytes(op.inputs[0], dtype)
    lines = math.ceil(table_bytes / table_rows / LINE_BYTES)
    places = table_rows if lines > 1 else math.ceil(table_bytes / LINE_BYTES)  # rows, or the lines narrow rows share
    distinct = places * -math.expm1(ids * math.log1p(-1.0 / places)) if places > 1 else 1.0
    again = (ids - distinct) * max(0.0, 1.0 - unit.l2_kib * 1024 / table_bytes) if unit.l2_kib else 0.0
    return (distinct + again) * (unit.gather_dram_row_ns + lines * unit.gather_dram_line_ns)


def scatter_updates_beyond_l2(op: Op, unit: CpuUnit, dtype: str = "fp32") -> float:
    """The updates of a ``ScatterElements`` past the first ``L2 / (bytes of an index and an
    update)``: those whose index and value stream from beyond L2 (0 for another op).

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l2_kib=1536)
    >>> def scatter(rows):
    ...     data, idx, upd = (Tensor("d", (2000, 32), "float32"), Tensor("i", (rows, 32), "int64", True),
    ...                       Tensor("u", (rows, 32), "float32"))
    ...     return Op("s", "ScatterElements", "data", (data, idx, upd), (Tensor("y", (2000, 32), "float32"),))
    >>> [scatter_updates_beyond_l2(scatter(r), u) for r in (2048, 8192, 32768)]  # 131,072 updates fit
    [0.0, 131072.0, 917504.0]
    """
    if op.op_type != "ScatterElements" or len(op.inputs) < 3 or not op.inputs[2].elements:
        return 0.0
    idx, upd = op.inputs[1], op.inputs[2]
    per_update = (deployed_bytes(idx, dtype) + deployed_bytes(upd, dtype)) / upd.elements
    return max(0.0, upd.elements - unit.l2_kib * 1024 / per_update)


def scatter_far_ns(op: Op, unit: CpuUnit, dtype: str = "fp32") -> float:
    """What a ``ScatterElements`` pays beyond its calibrated rate for the updates whose index and
    value stream from beyond L2 (:func:`scatter_updates_beyond_l2`), ns: ``scatter_far_update_ns``
    each. 0 for another op or a unit without the figure.

    onnxruntime adds one update at a time, each index looked up alone, and that loop does not hide
    a stream from beyond L2 as a vectorized one does. Alone on an Intel Xeon (2 MiB of L2, 1 thread,
    onnxruntime 1.32; rows of 32 floats summed into 2,000): 3.5-3.9 ns an update up to 131 Ki
    updates (1.5 MiB of indices and updates), 8.3 at 256 Ki, 11 at 512 Ki, 12.7-12.9 from 1 Mi to
    4 Mi, whatever the order of the indices or the rows summed into (200 or 10,000); on an AMD EPYC
    (1 MiB of L2) 4.5 at 256 Ki, 5.5-6.0 at 1 Mi (``docs/fidelity_cpu.md``, "Back on the Intel Xeon").
    """
    if not unit.scatter_far_update_ns:
        return 0.0
    return scatter_updates_beyond_l2(op, unit, dtype) * unit.scatter_far_update_ns


def calibrated_efficiency(op: Op, unit: CpuUnit) -> float | None:
    """The unit's calibrated efficiency for ``op``: its kernel class's (:func:`kernel_type`), else
    its op type's; None when the unit has neither."""
    return unit.efficiency.get(kernel_type(op), unit.efficiency.get(op.op_type))


#: Kernel classes whose calibrated efficiency is their taps' arithmetic per output (each output
#: weighs 4 or 16 input values): their input bytes stream at the core's rate, not at that
#: efficiency, and are the roofline's to price. A 480 x 640 frame resized to 224 x 224 reads six
#: inputs an output; priced as bytes through L1 at the linear Resize's efficiency it took 6.5 ns an
#: output, measured 1.76 (upsampling probe: 1.36).
TAP_KERNELS = frozenset(("ResizeLinear", "ResizeLinearNchwc", "ResizeLinearND", "ResizeCubic"))


def _calibrated(op: Op, unit: CpuUnit, dtype: Dtype, cost: OpCost) -> OpCost:
    """``cost`` corrected by the unit's calibrated efficiency for the op's kernel class, if any
    (see the module docstring): the core's own throughput for most ops and for onnxruntime's
    recurrent and FFT kernels (their part less ``stall_ns``), the weight stream's share of the
    level bandwidth for recurrent ones on a unit without ``gemv_gbps``."""
    calibrated = calibrated_efficiency(op, unit)
    if calibrated is None:
        return cost
    # onnxruntime's own kernel structure: e scales its core part (a Transpose priced as it walks or
    # moves one axis has none: its time, all in stall_ns, was measured as a whole)
    if _kernel_modelled(op, unit) or (op.op_type == "Transpose" and cost.stall_ns > 0):
        core = cost.compute_ns - cost.stall_ns  # (a recurrent kernel's RecurrentTime.core_ns)
        new_compute, new_memory = core / calibrated + cost.stall_ns, cost.memory_ns
        extra_pj = energy_pj(unit.active_w, max(new_compute, new_memory) - max(cost.compute_ns, cost.memory_ns))
        return replace(cost, compute_ns=new_compute, memory_ns=new_memory, energy_pj=cost.energy_pj + extra_pj,
                       note=f"{cost.note}, calibrated {calibrated:.3g}")  # fmt: skip
    compute_ns = _compute_ns(op, unit, dtype)
    if op.category == "rnn":  # without the kernel's steps: weight streaming at a fraction of the level's bandwidth
        if calibrated >= 1.0:
            return cost
        new_compute, new_memory = compute_ns, cost.memory_ns / calibrated
    else:  # the core's own throughput: work, or the bytes streamed through L1, over e (a tap kernel: its work)
        streamed = 0.0 if kernel_type(op) in TAP_KERNELS else core_bytes(op, dtype) / (unit.l1_bandwidth_gbps * calibrated)
        new_compute, new_memory = max(compute_ns, streamed) + cost.stall_ns, cost.memory_ns
    old = max(cost.compute_ns, cost.memory_ns)
    extra_pj = energy_pj(unit.active_w, max(new_compute, new_memory) - old)
    return replace(cost, compute_ns=new_compute, memory_ns=new_memory, energy_pj=cost.energy_pj + extra_pj,
                   note=f"{cost.note}, calibrated {calibrated:.3g}")  # fmt: skip


def _kernel_modelled(op: Op, unit: CpuUnit) -> bool:
    """Whether the unit costs ``op`` as onnxruntime's kernel runs it (steps, transforms, a blocked
    depthwise conv's tiles)."""
    if op.category == "rnn":
        return unit.gemv_gbps is not None and len(op.inputs) >= 3
    if blocked_depthwise_ns(op, unit) or plain_grouped_ns(op, unit):
        return True
    return op.op_type in FFT_OP_TYPES and bool(unit.fft_butterfly_ns and unit.fft_point_ns) and fft_plan(op) is not None


def core_bytes(op: Op, dtype: str) -> int:
    """Bytes a kernel streams through the core: activations in and out and its weights (a
    Gather only the rows it reads); for a recurrent op also ``R`` once more per extra step."""
    total = op.input_bytes(dtype) + op.output_bytes(dtype) + weight_bytes_read(op, dtype)
    if op.category == "rnn" and len(op.inputs) >= 3:
        steps, r_b = recurrent_bytes(op, dtype)
        total += max(0, steps - 1) * r_b
    return total


def calibration_basis_ns(op: Op, cost: OpCost) -> float:
    """The part of an estimate at efficiency 1 (no overhead) that a calibrated efficiency
    divides, i.e. what calibration compares measured kernel times with.

    For most op types that is the core-bound time ``compute_ns``: the work at peak, or the
    bytes streamed through L1 at L1 bandwidth, whichever is longer. Single-thread
    onnxruntime kernels for elementwise, normalization and data-movement ops run at a rate
    of their own (15-30 GB/s here) whether the data sits in L2 or L3, so their efficiency is a
    property of the core, and the cache level only matters when its bandwidth is lower
    still (DRAM). A recurrent op as onnxruntime's kernel runs it (a unit with ``gemv_gbps``) is
    the same: its projection at the core's peak and its steps' ``R`` from L1/L2 at the GEMV
    kernel's rate (:attr:`RecurrentTime.core_ns`); its ``R`` from beyond L2 and its first
    weight pass at the rates the fingerprint measured, and its fixed step costs, are its
    ``stall_ns`` (an efficiency fit on small LSTMs whose steps run from L2 put the ones whose
    ``R`` streams from L3 12-18 % slow when it scaled those too). Without the kernel's steps a
    recurrent op streams its weights at a fraction of the bandwidth of the level holding them
    (~60 % at L2 and at L3 here): there it is the whole roofline.
    """
    if op.category == "rnn":
        return max(cost.compute_ns, cost.memory_ns) - cost.stall_ns
    return cost.compute_ns - cost.stall_ns


def intra_op_threads(op: Op, threads: int) -> int:
    """How many of onnxruntime's ``threads`` intra-op threads a kernel for ``op`` runs on.

    - STFT/DFT: 1 (the kernel loops over its frames on the calling thread: 1.00x on 2 threads);
    - :data:`ONE_THREAD_KERNELS` (Slice, Expand, Tile, Pad, Where, DequantizeLinear, CumSum, Sin,
      Cos, Sum, MaxUnpool, OneHot, ScatterND, every Resize but the bilinear kernel): 1 (0.94-1.04x
      on 2 threads);
    - TopK: split over its rows (a probe of 256 rows: 2.01x);
    - a Transpose that walks its input element by element, and a Softmax over a middle axis whose
      Transposes do (:func:`~cost_models.cpu_layout.walks`): 1;
    - a Transpose on the memcpy path (:func:`~cost_models.cpu_layout.memcpy_units`: attention's heads):
      all threads from :data:`~cost_models.cpu_layout.MEMCPY_PARALLEL_BYTES`, else 1;
    - a Transpose that moves one axis inwards (NCHW -> NHWC; :func:`~cost_models.cpu_layout.transpose_moves`):
      1 (MLAS splits the few moving rows, both threads then write every output line: 0.73-1.22x on
      two threads on the CI Xeon); outwards, as elementwise (1.86-1.98x);
    - Softmax/LogSoftmax: split over rows only (one 1 Mi row: 1.03x);
    - the layer normalizations (:data:`ROW_SPLIT_NORM_OP_TYPES`): over their rows, however few
      elements (onnxruntime's kernels hand each row to the pool as a task of its own);
    - GEMM-like and recurrent ops: MLAS runs a product on ``MACs / MLAS_THREAD_MACS + 1``
      threads (:data:`MLAS_THREAD_MACS`), so a product below it stays on one thread; a matrix
      product also on at most one thread per :data:`MLAS_STRIDE_N` columns when ``N > M`` (a
      batch-1 Gemm with 10 outputs: one); a recurrent op uses the threads its input projection
      or one of its step products splits over (:func:`recurrent_threads`);
    - the reductions (``Reduce*``): as the pool's cost model splits their input
      (:func:`~cost_models.cpu_reduce.reduce_threads`: two threads from about 8,500 floats);
    - elementwise and activations: from :data:`PARALLEL_MIN_ELEMENTS` elements; the binary ops of
      the broadcast looper from :data:`BROADCAST_PARALLEL_MIN_ELEMENTS`, QuantizeLinear from
      :data:`QUANTIZE_PARALLEL_MIN_ELEMENTS`;
    - anything else with at least 64 Ki output elements: all threads.

    >>> from graph_ir.ir import Op, Tensor
    >>> y = Tensor("y", (1, 1 << 20), "float32")
    >>> intra_op_threads(Op("s", "Softmax", "softmax", (y,), (y,)), 2), intra_op_threads(Op("a", "Add", "elementwise", (y, y), (y,)), 2)
    (1, 2)
    """
    if threads <= 1 or not op.outputs:
        return 1
    out = op.outputs[0]
    if op.category == "signal" or kernel_type(op) in ONE_THREAD_KERNELS or walks(op):
        return 1
    if op.op_type == "Transpose" and op.inputs and memcpy_units(op, DTYPE_BYTES.get(op.inputs[0].dtype, 4)):
        return threads if op.inputs[0].nbytes >= MEMCPY_PARALLEL_BYTES else 1  # the memcpy path: split once large
    if (moves := transpose_moves(op)) is not None and not moves[4]:
        return 1  # MLAS splits the rows, here the few moving ones: both threads write every output line
    if op.op_type == "TopK":  # its rows over the pool, however few values it keeps (2.01x)
        return max(1, min(threads, topk_rows(op)))
    if op.op_type in SOFTMAX_OP_TYPES:
        return max(1, min(threads, softmax_rows(op) or 1))
    if op.op_type in ROW_SPLIT_NORM_OP_TYPES:
        return max(1, min(threads, norm_rows(op)))
    if op.category == "rnn" and len(op.inputs) >= 3 and len(op.inputs[2].shape) == 3:
        projection, steps = recurrent_threads(op, threads)
        return max(projection, *steps)
    if op.category == "matmul":
        return _mlas_gemm_threads(op, threads)
    if op.category == "conv":
        return max(1, min(threads, op.macs // MLAS_THREAD_MACS))
    if op.op_type.startswith("Reduce"):
        return reduce_threads(op, threads)
    floor = PARALLEL_MIN_ELEMENTS.get(op.category, 64 * 1024)
    if op.op_type in BROADCAST_OP_TYPES:
        floor = BROADCAST_PARALLEL_MIN_ELEMENTS
    if op.op_type == "QuantizeLinear":
        floor = QUANTIZE_PARALLEL_MIN_ELEMENTS
    return threads if out.elements >= floor else 1


def topk_rows(op: Op) -> int:
    """The rows a TopK selects from, one at a time: its input's elements over the length of its
    axis (1 without shapes or with an axis out of range).

    >>> from graph_ir.ir import Tensor
    >>> topk_rows(Op("t", "TopK", "reduce", (Tensor("x", (4, 256, 1024), "float32"),), (), {"axis": -1}))
    1024
    """
    shape = op.inputs[0].shape if op.inputs else ()
    axis = op.attrs.get("axis", -1)
    if not shape or not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        return 1
    return math.prod(shape) // max(1, shape[axis])


def mlas_threads(m: int, n: int, k: int, threads: int) -> int:
    """Threads MLAS runs one ``m x n x k`` product on (``MlasGemmBatch``): ``m n k /
    MLAS_THREAD_MACS + 1``, at most one per :data:`MLAS_STRIDE_N` columns when ``n > m``, at most
    ``threads``.

    >>> mlas_threads(1, 512, 256, 2), mlas_threads(1, 384, 128, 2), mlas_threads(32, 384, 128, 2)
    (2, 1, 2)
    """
    target = min(threads, m * n * k // MLAS_THREAD_MACS + 1)
    if n > m:
        target = min(target, -(-n // MLAS_STRIDE_N))
    return max(1, target)


def recurrent_dims(op: Op) -> tuple[int, int, int, int, int]:
    """(steps, directions, hidden, batch, input features) of an LSTM/GRU/RNN node."""
    x, r = op.inputs[0].shape, op.inputs[2].shape
    layout = op.attrs.get("layout", 0)
    if len(x) == 3:
        steps, batch = (x[1], x[0]) if layout else (x[0], x[1])
    else:
        steps, batch = (x[0] if x else 1), 1
    dirs, hidden = (int(r[0]), int(r[2])) if len(r) == 3 else (1, 1)
    return int(steps), dirs, hidden, int(batch), int(x[-1]) if x else 1


def recurrent_step_gemms(op: Op) -> tuple[int, ...]:
    """Gate blocks of the products a step of ``op`` runs on ``R`` (:data:`RECURRENT_STEP_GEMMS`;
    one product over all of ``R`` for another op type)."""
    r = op.inputs[2].shape
    return RECURRENT_STEP_GEMMS.get(op.op_type, (int(r[1]) // max(1, int(r[2])),) if len(r) == 3 else (1,))


def recurrent_threads(op: Op, threads: int) -> tuple[int, tuple[int, ...]]:
    """Threads onnxruntime's recurrent kernel runs its parts on (:func:`mlas_threads`): the input
    projection ``X·Wᵀ`` (steps x batch rows, every gate, the input features) and each product of
    a step (:func:`recurrent_step_gemms`: batch rows, its gates, hidden). A hidden-128 GRU's step
    products (256 x 128 and 128 x 128 MACs) stay on one thread while its projection over 32
    steps splits.

    >>> from graph_ir.ir import Op, Tensor
    >>> x = Tensor("x", (32, 1, 128), "float32")
    >>> w = Tensor("w", (1, 384, 128), "float32", is_weight=True)
    >>> recurrent_threads(Op("g", "GRU", "rnn", (x, w, w), ()), 2)
    (2, (1, 1))
    """
    steps, _, hidden, batch, features = recurrent_dims(op)
    blocks = recurrent_step_gemms(op)
    projection = mlas_threads(steps * batch, sum(blocks) * hidden, features, threads)
    return projection, tuple(mlas_threads(batch, b * hidden, hidden, threads) for b in blocks)


def _mlas_gemm_threads(op: Op, threads: int) -> int:
    """Threads MLAS runs a matrix product on (``MlasGemmBatch``): ``M N K / MLAS_THREAD_MACS + 1``
    per product, at most one per :data:`MLAS_STRIDE_N` columns when ``N > M``, times the batch of
    products (a product with weights folds its batch into ``M``), at most ``threads``."""
    gemm = gemm_of(op)
    if gemm is None:
        return max(1, min(threads, op.macs // MLAS_THREAD_MACS + 1))
    batch, m = (1, gemm.batch * gemm.m) if op.weights else (gemm.batch, gemm.m)
    target = min(threads, m * gemm.n * gemm.k // MLAS_THREAD_MACS + 1)
    per_product = -(-target // batch)
    if gemm.n > m:
        per_product = min(per_product, -(-gemm.n // MLAS_STRIDE_N))
    return max(1, min(threads, per_product * batch))


def section_ns(unit: CpuUnit) -> float:
    """One parallel section's cost on ``unit``: its measured ``parallel_section_ns``, else
    :data:`PARALLEL_SECTION_NS`."""
    return unit.parallel_section_ns or PARALLEL_SECTION_NS


def step_section_ns(unit: CpuUnit) -> float:
    """What one split product of a recurrent step that is its own parallel section (an LSTM's, an
    RNN's) pays the pool on ``unit``: its calibrated ``recurrent_section_ns``, else
    :data:`RECURRENT_SPLIT_STEP_NS`."""
    return unit.recurrent_section_ns or RECURRENT_SPLIT_STEP_NS


def step_handoff_ns(op: Op, unit: CpuUnit) -> float:
    """What one split product of a step of ``op`` pays the pool on ``unit``, ns: the figure the
    fingerprint measured for its op type (``step_handoff_ns``; an RNN takes the LSTM's: both run
    each product as a section of its own), except that a calibrated ``recurrent_section_ns``
    (:func:`step_section_ns`) goes first for an LSTM's or an RNN's; else a loop in the section a GRU
    keeps open over its steps (:data:`RECURRENT_SECTION_OP_TYPES`) pays
    :data:`RECURRENT_SPLIT_STEP_NS`, any other product :func:`step_section_ns`. The idle 2-thread
    tables of the CI Xeon bear the defaults out: priced from each model's own one-thread core rate,
    the hidden-256 GRUs' products took 2.0 us each, the LSTMs' 2.3-3.8 us (a calibration fit 2.65 us
    on ``lstm_gru``'s LSTM, which put the GRUs 13-15 % slow). On an AMD EPYC, whose two threads run
    on two cores, they took 0.6-1.5 us (``benchmarks/recurrent_handoff.py``).

    >>> from graph_ir.ir import Op, Tensor
    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=2048, l2_bandwidth_gbps=50, recurrent_section_ns=2650.0)
    >>> x, w = Tensor("x", (8, 1, 256), "float32"), Tensor("w", (1, 768, 256), "float32", is_weight=True)
    >>> gru, lstm = Op("g", "GRU", "rnn", (x, w, w), ()), Op("l", "LSTM", "rnn", (x, w, w), ())
    >>> step_handoff_ns(gru, u), step_handoff_ns(lstm, u)
    (2000.0, 2650.0)
    >>> m = u.model_copy(update={"step_handoff_ns": {"GRU": 600.0, "LSTM": 850.0}, "recurrent_section_ns": None})
    >>> step_handoff_ns(gru, m), step_handoff_ns(lstm, m)
    (600.0, 850.0)
    """
    measured = unit.step_handoff_ns or {}
    if op.op_type in RECURRENT_SECTION_OP_TYPES:
        return measured.get(op.op_type, RECURRENT_SPLIT_STEP_NS)
    if unit.recurrent_section_ns is not None:
        return unit.recurrent_section_ns
    return measured.get(op.op_type, measured.get("LSTM", RECURRENT_SPLIT_STEP_NS))


def sections_ns(op: Op, unit: CpuUnit, threads_used: int) -> float:
    """What ``op``'s kernel pays onnxruntime's intra-op pool on ``threads_used`` threads, ns: a
    section (:func:`section_ns`) each (:func:`parallel_sections`), and :func:`step_section_ns` for
    each split product of a recurrent step (:func:`recurrent_sections`); 0 on one thread."""
    if threads_used <= 1:
        return 0.0
    if op.category == "rnn" and len(op.inputs) >= 3:
        calls, steps = recurrent_sections(op, threads_used)
        return calls * section_ns(unit) + steps * step_handoff_ns(op, unit)
    return parallel_sections(op, threads_used) * section_ns(unit)


def parallel_sections(op: Op, threads_used: int) -> int:
    """Parallel sections a kernel on ``threads_used`` threads pays the pool for: one, but for a
    recurrent op one per split MLAS call (:func:`recurrent_sections`) and for a Transpose that moves
    one axis one per matrix (:func:`~cost_models.cpu_layout.transpose_moves`: 12 heads' K^T, 12 on
    the CI Xeon took 54-57 us on two threads against 29-31 on one), none on one thread."""
    if threads_used <= 1:
        return 0
    if op.category == "rnn" and len(op.inputs) >= 3:
        return sum(recurrent_sections(op, threads_used))
    if (moves := transpose_moves(op)) is not None:
        return moves[0]  # one MLAS transpose, split over the pool, per matrix
    return 1


def recurrent_sections(op: Op, threads: int) -> tuple[int, int]:
    """(parallel sections outside the steps, split step products) of a recurrent op on ``threads``
    threads: each direction runs its own projection (a section where it splits) and, per step, its
    own products (:func:`recurrent_threads`), one after the other; a GRU also opens one section per
    direction around its steps when a product splits (:data:`RECURRENT_SECTION_OP_TYPES`).

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w = Tensor("x", (10, 1, 256), "float32"), Tensor("w", (2, 768, 256), "float32", is_weight=True)
    >>> recurrent_sections(Op("g", "GRU", "rnn", (x, w, w), ()), 2)  # 2 projections, 2 step sections; 2 x 10 x 2
    (4, 40)
    """
    steps, dirs, *_ = recurrent_dims(op)
    projection, products = recurrent_threads(op, threads)
    split = sum(t > 1 for t in products)
    looped = dirs if split and op.op_type in RECURRENT_SECTION_OP_TYPES else 0
    return dirs * (projection > 1) + looped, steps * dirs * split


#: The col2im of :func:`col2im_ns` on onnxruntime's slower paths, per column element against its
#: ``Add`` pass (AMD EPYC, onnxruntime 1.32, 1 thread, ConvTranspose less a MatMul of its GEMM; the
#: pass priced 0.186 ns there): a 2-D one with stride over 1 and padding or dilation runs the generic
#: loop, a bounds check and a scalar add at the stride per element (4x4 stride 2 pad 1, 16-256
#: input channels, 4x4 to 32x32: 0.34-0.39 ns, 0.60 at 4x4; the CI Xeon 0.36-0.42, "ConvTranspose:
#: the col2im pass"), where a stride-1 or unpadded one (3x3 stride 1, 2x2 stride 2) took 0.14-0.21;
#: any other rank runs ``Col2imNd``, an index computed per element (1-D, 32-128 input channels,
#: kernel 4 / 8 / 16 at stride 2 / 8 / 8: 0.40-0.51 ns, 0.79 at 32 positions).
COL2IM_STRIDED_FACTOR, COL2IM_ND_FACTOR = 1.9, 2.5
#: Each col2im path (:func:`col2im_path`) and its factor over the ``Add`` pass.
COL2IM_PATH_FACTORS: Mapping[str, float] = {"fast": 1.0, "strided": COL2IM_STRIDED_FACTOR, "nd": COL2IM_ND_FACTOR}


def col2im_path(op: Op) -> str:
    """The col2im path onnxruntime runs for a ConvTranspose's shape: ``"fast"`` (2-D, stride 1 or
    unpadded), ``"strided"`` (2-D, strided with padding or dilation: the generic loop) or ``"nd"``
    (any other rank: ``Col2imNd``)."""
    if not op.inputs or len(op.inputs[0].shape) != 4:
        return "nd"
    strides, pads, dilations = (_ints(op.attrs.get(k)) for k in ("strides", "pads", "dilations"))
    padded = any(pads) or any(d != 1 for d in dilations) or str(op.attrs.get("auto_pad", "NOTSET")).startswith("SAME")
    return "strided" if padded and any(s > 1 for s in strides) else "fast"


def col2im_path_factor(op: Op) -> float:
    """How many times its ``Add`` pass a ConvTranspose's col2im takes on the path onnxruntime runs
    for its shape (:func:`col2im_path`: :data:`COL2IM_STRIDED_FACTOR`, :data:`COL2IM_ND_FACTOR`; 1
    for the 2-D fast path).

    >>> from graph_ir.ir import Tensor
    >>> ct = lambda rank, **a: Op("ct", "ConvTranspose", "conv", (Tensor("x", (1, 8) + (4,) * rank, "f"),), (), a)
    >>> [col2im_path_factor(ct(2, strides=[2, 2])), col2im_path_factor(ct(2, strides=[2, 2], pads=[1] * 4)),
    ...  col2im_path_factor(ct(2, pads=[1] * 4)), col2im_path_factor(ct(1, strides=[2]))]
    [1.0, 1.9, 1.0, 2.5]
    """
    return COL2IM_PATH_FACTORS[col2im_path(op)]


def _ints(value: object) -> list[int]:
    """An int-list attribute's values (none where absent or not a list of ints)."""
    return [v for v in value if isinstance(v, int)] if isinstance(value, (list, tuple)) else []


def col2im_ns(op: Op, unit: CpuUnit, dtype: str) -> float:
    """Time of the col2im pass of onnxruntime's ConvTranspose, ns: the GEMM writes a column buffer
    of ``Cout/group x kh x kw`` rows by ``H x W`` input pixels per group, then col2im adds each
    column element into its output pixel (``y[o] += col[i]``: read one, read-modify-write one),
    i.e. an ``Add`` over the column elements, costed at the unit's ``Add`` rate through L1 (its
    calibrated efficiency, else the elementwise default), times the path's factor
    (:func:`col2im_path_factor`); where the host measured it, at its own figure
    (:func:`measured_col2im_ns`).

    Measured, onnxruntime 1.32 on the CI Xeon, ConvTranspose less a MatMul of the same GEMM,
    per column element: 0.15-0.32 ns for 2x2 stride 2 and 3x3 stride 1, 0.36-0.42 for 4x4
    stride 2 (overlapping windows), 16-256 input channels, 16x16 to 64x64; the calibrated ``Add``
    (0.24) gives 0.25. 1.1-1.3x the GEMM at 64-256 input channels, 1.6-3x at 16-32.

    >>> from graph_ir.ir import Op, Tensor
    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=512, l2_bandwidth_gbps=50, efficiency={"Add": 0.5})
    >>> x, w = Tensor("x", (1, 8, 4, 4), "float32"), Tensor("w", (8, 2, 2, 2), "float32", is_weight=True)
    >>> op = Op("ct", "ConvTranspose", "conv", (x, w), (Tensor("y", (1, 2, 8, 8), "float32"),), {}, 8 * 16 * 8)
    >>> col2im_ns(op, u, "fp32")  # 2 x 2 x 2 rows x 16 pixels, 12 bytes each, at 100 x 0.5 GB/s
    30.72
    """
    if op.op_type != "ConvTranspose" or not op.weights or not op.inputs or len(op.inputs[0].shape) < 2:
        return 0.0
    cin = int(op.inputs[0].shape[1])
    group = op.attrs.get("group", 1)
    columns = op.macs * (group if isinstance(group, int) else 1) // max(cin, 1)
    if (measured := measured_col2im_ns(op, unit)) is not None:
        return columns * measured
    e_add = unit.efficiency.get("Add", DEFAULT_EFFICIENCY["elementwise"])
    out = op.outputs[0]
    word = deployed_bytes(out, dtype) / max(out.elements, 1)
    return 3 * columns * word / (unit.l1_bandwidth_gbps * e_add) * col2im_path_factor(op)


def one_thread_pass_ns(op: Op, unit: CpuUnit, dtype: str) -> float:
    """The part of ``op``'s kernel onnxruntime runs on one thread whatever its intra-op threads, ns:
    a ConvTranspose's col2im (its GEMM splits, the col2im loop does not). On an AMD EPYC (Zen 5), 2
    threads, ConvTransposes of 64 -> 32 and 128 -> 64 channels (4x4 stride 2, 16 x 16; 2x2 stride 2,
    32 x 32) less a MatMul of their GEMM took 48 / 91 / 13 us, where the same on one thread took
    47 / 94 / 12: DCGAN's ConvTransposes ran 1.35-1.8x faster on 2 threads, priced 2.0-2.2x."""
    return col2im_ns(op, unit, dtype) if op.op_type == "ConvTranspose" else 0.0


def measured_col2im_ns(op: Op, unit: CpuUnit) -> float | None:
    """What the ``unit``'s measured figures say a ConvTranspose's col2im pays per column element on
    the path onnxruntime runs for its shape (:func:`col2im_path`): ``col2im_ns`` on the 2-D
    fast path, ``col2im_strided_ns`` on the generic loop, and that times
    :data:`COL2IM_ND_FACTOR` / :data:`COL2IM_STRIDED_FACTOR` for ``Col2imNd`` (the two slow paths'
    ratio on the AMD EPYC they were measured on). None where the path's figure is not measured.

    On an AMD EPYC (Zen 5) the L1 sweep's 283 GB/s and the calibrated ``Add`` priced the pass at
    0.10 ns (fast) and 0.20 (strided); ConvTransposes less a MatMul of their GEMM took 0.12-0.15
    and 0.29-0.36 (64-256 input channels, 8 x 8 to 32 x 32), and DCGAN came out -16..-19 %.
    """
    path = col2im_path(op)
    if path == "fast":
        return unit.col2im_ns
    if unit.col2im_strided_ns is None:
        return None
    return unit.col2im_strided_ns * (COL2IM_ND_FACTOR / COL2IM_STRIDED_FACTOR if path == "nd" else 1.0)


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def fft_ns(n: int, butterfly_ns: float, point_ns: float) -> float:
    """Time of one ``n``-point transform of onnxruntime's STFT/DFT kernel, ns.

    A power-of-two ``n`` runs radix-2: ``n/2 log2 n`` butterflies and ``n`` points (bit-reversed
    load, window, copy out). Any other ``n`` runs Bluestein's chirp-z transform: two radix-2
    FFTs of ``M``, the next power of two at or above ``2 n - 1``, and
    :data:`BLUESTEIN_POINT_FACTOR` more per point of ``M``. So 400 points cost about as much as
    2048 do and 11 times what 256 cost (measured, onnxruntime 1.32: 256 points 3.2 us, 400
    points 35 us, 512 points 6.8 us per frame).

    >>> fft_ns(256, 1.0, 8.0)  # 128 x 8 butterflies + 256 points x 8 ns
    3072.0
    >>> fft_ns(200, 1.0, 8.0) == 2 * fft_ns(512, 1.0, 8.0) + 0.7 * 8.0 * 512
    True
    """
    if n <= 1:
        return point_ns
    if _is_pow2(n):
        return butterfly_ns * n / 2 * math.log2(n) + point_ns * n
    m = _next_pow2(2 * n - 1)
    return 2 * fft_ns(m, butterfly_ns, point_ns) + BLUESTEIN_POINT_FACTOR * point_ns * m


def fft_plan(op: Op) -> tuple[int, int] | None:
    """(transforms, points per transform) of an STFT or DFT node; None when its shapes do not say.

    STFT: batch x frames of its output, each as long as the window (its third input), else
    the frame length the one-sided output implies. DFT: the transform axis of its output.
    """
    if not op.outputs or not op.inputs:
        return None
    y = op.outputs[0].shape
    if op.op_type == "STFT":
        if len(y) < 3:
            return None
        window = op.inputs[2].shape if len(op.inputs) > 2 and op.inputs[2].name else ()
        onesided = op.attrs.get("onesided", 1)
        n = int(window[0]) if len(window) == 1 and window[0] > 0 else (2 * (y[2] - 1) if onesided else y[2])
        return int(y[0] * y[1]), max(int(n), 1)
    axis = int(op.attrs.get("axis", 1))  # type: ignore[call-overload]
    if not -len(y) <= axis < len(y) or axis % len(y) == len(y) - 1:
        return None
    m = int(y[axis])
    n = 2 * (m - 1) if op.attrs.get("onesided", 0) and m > 1 else m
    total = math.prod(int(d) for d in y[:-1])
    return total // max(m, 1), max(n, 1)


def fft_stride_bytes(op: Op) -> int:
    """Bytes between the points of one transform where onnxruntime's DFT runs its butterflies in
    place on the output: a two-sided radix-2 DFT along an axis that is not the last (the axis's
    stride in the output, complex values of its element size). 0 where they run in a buffer of their
    own: an STFT, a one-sided DFT, Bluestein's transform (any length not a power of two)."""
    plan = fft_plan(op)
    if op.op_type != "DFT" or plan is None or op.attrs.get("onesided", 0) or not _is_pow2(plan[1]):
        return 0
    y = op.outputs[0].shape
    axis = int(op.attrs.get("axis", 1)) % len(y)  # type: ignore[call-overload]
    return math.prod(int(d) for d in y[axis + 1 :]) * DTYPE_BYTES.get(op.outputs[0].dtype, 4)


def strided_fft_stages(n: int, stride_bytes: int, l1_bytes: float) -> float:
    """Stages of an ``n``-point radix-2 transform whose points ``stride_bytes`` apart miss the L1.

    Its ``n`` points lie on ``n`` lines that fall in few of the L1's sets when the stride is a
    multiple of a large power of two (all in one set at a multiple of 4 KiB: :data:`ALIAS_STRIDE_BYTES`).
    Where those sets hold ``1/r`` of the lines, the first ``log2 n - log2 r`` stages find their
    points in the L1 and the last ``log2 r`` do not (the radix-2 FFT's cache bound: a transform
    that fits ``C`` lines pays ``log2(n / C)`` passes beyond them). Measured on an AMD EPYC
    (2026-12-07, ``DFT`` along axis 1 of (1, n, w, 2), 1 thread): strides of 3 and 6 KiB ran as 1
    and 2 KiB do, and the time per butterfly of the stages this counts held within 24-31 ns over
    19 shapes (:func:`strided_fft_ns`).

    >>> strided_fft_stages(128, 2048, 32 * 1024)  # 2 sets of 8 ways: 16 lines hold 128 / 8
    3.0
    >>> strided_fft_stages(128, 256, 32 * 1024), strided_fft_stages(4096, 8, 32 * 1024)
    (0.0, 0.0)
    """
    if n < 2 or stride_bytes < LINE_BYTES:
        return 0.0
    lines = np.unique(np.arange(n, dtype=np.int64) * stride_bytes // LINE_BYTES)
    r = spread_bytes(lines.size * LINE_BYTES, page_slots(lines)) / max(l1_bytes, ALIAS_STRIDE_BYTES)
    return min(math.log2(n), math.log2(r)) if r > 1 else 0.0


def missed_butterflies(n: int, stride_bytes: int, l1_bytes: float) -> float:
    """Butterflies of one ``n``-point radix-2 transform in the stages whose points ``stride_bytes``
    apart miss an L1 of ``l1_bytes`` (:func:`strided_fft_stages`): ``n/2`` a stage.

    >>> missed_butterflies(128, 2048, 32 * 1024)
    192.0
    """
    return n / 2 * strided_fft_stages(n, stride_bytes, l1_bytes)


def strided_fft_ns(n: int, stride_bytes: int, unit: CpuUnit) -> float:
    """Time of one ``n``-point radix-2 transform whose points lie ``stride_bytes`` apart
    (:func:`fft_stride_bytes`) as its misses set it, ns: ``fft_stride_ns`` per butterfly of each
    stage that misses the L1 (:func:`strided_fft_stages`; ``fft_page_stride_ns`` where the points lie
    a multiple of 4 KiB apart, each load also waiting on the store before it to an address with the
    same low 12 bits), the stages that hit running in their shadow. The transform takes the longer
    of this and its time on contiguous points (:func:`fft_ns`). 0 on a unit without
    ``fft_stride_ns`` or where no stage misses.

    The longer of the two, not their sum: on an AMD EPYC VM (2026-12-07) the contiguous DFT of
    (1, 128, 256, 2) ran 0.50, 0.69 and 0.99 ms within an hour while the strided one ran
    1.15-1.29 ms throughout. Per butterfly of a stage past the L1 the strided DFTs of the fast hour
    took 23.8-30.9 ns over 19 shapes of 64-512 points 256 B-6 KiB apart with 2-5 such stages
    (34.6-39.3 ns 4 and 8 KiB apart with 3-5, 26.1 with 6); with one such stage, 36-46 ns: the two
    paths overlap less there, and those transforms run 20-30 % above the longer (measured, not
    modelled).

    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32,
    ...             fft_stride_ns=25.0, fft_page_stride_ns=37.0)
    >>> strided_fft_ns(128, 2048, u)  # 64 butterflies x 3 stages past a 32 KiB L1 x 25 ns
    4800.0
    >>> strided_fft_ns(128, 4096, u), strided_fft_ns(128, 256, u)  # 4 stages at 37; none
    (9472.0, 0.0)
    """
    if not unit.fft_stride_ns or not stride_bytes:
        return 0.0
    rate = unit.fft_page_stride_ns if stride_bytes % ALIAS_STRIDE_BYTES == 0 and unit.fft_page_stride_ns else unit.fft_stride_ns
    return rate * missed_butterflies(n, stride_bytes, unit.l1_kib * 1024)


def weight_stream_ns(op: Op, unit: CpuUnit, weight_bytes: int) -> float:
    """Time a MatMul/Gemm kernel stalls on its weights coming from DRAM, beside its compute.

    Measured on onnxruntime's MLAS SGEMM (``hwsim fingerprint``, the 2-core CI Xeon): a batch
    of 128 rows times 768x3072 fp32 weights takes 3.9 ms with the weights in cache and 4.7 ms
    when they come from DRAM, whatever their share of the compute; the extra is the weight
    bytes at ~12 GB/s, which is ``weight_stream_gbps``. The packed weight panels are consumed
    at the micro-kernel's rate and the hardware prefetcher does not run ahead of it, so the
    stream adds to the work instead of hiding under it. A ConvTranspose is such a GEMM too, its
    weights the streamed operand, each used for only the input's pixels (a DCGAN's 512 -> 256
    channels from 4 x 4: 8 MB of weights, 16 columns; on the Intel Xeon its three largest ran
    383 / 406 / 453 us priced without the stall and 548 / 465 / 496 measured, the DCGANs -16 % ->
    -5 / 0 %). 0 without ``weight_stream_gbps`` (the
    roofline's full overlap), for other op categories (convolutions reuse each weight over
    the whole output plane and showed at most half this stall) and for ops without weights
    (attention's activation-by-activation MatMuls). A GEMV (one row: MLAS's vector kernel)
    streams its weights at the memory roof instead: 26 MB took 1.13-1.16 ms from DRAM and
    0.97-0.98 ms from cache, i.e. overlapped.

    Weights that stay in the last-level cache from one inference to the next do not come from
    DRAM at all: :func:`cost_models.table.cost_table` drops ``weight_stream_gbps`` when a
    model's weights fit the unit's last-level cache together (steady state: the model run in a
    loop, as published and measured latencies are). Where the fingerprint measured what such a
    loop keeps (``weight_cache_kib``: chains of 128-row MatMuls over distinct 256 x 256 weights),
    the model's ``resident_weight_bytes`` pass cyclically through it instead (:func:`cyclic_kept`):
    the kept share stalls at ``weight_cached_gbps``, the rest at ``weight_stream_gbps``. On the
    Intel Xeon VM (an L3 the read sweep puts at 48 MiB) such chains stalled 44-51 GB/s at 16 MiB
    of weights, 18 at 24 MiB and 12.5-16 at 32-64 MiB: a cyclic capacity of about 14 MiB, and a
    LLaMA-like model's 26 MB of weights ran its MatMuls 10-14 % over their FMAs.
    """
    gbps = unit.weight_stream_gbps
    gemm = op.category == "matmul" and gemm_rows(op) > 1
    if not gbps or weight_bytes <= 0 or not (gemm or op.op_type == "ConvTranspose"):
        return 0.0
    total = unit.resident_weight_bytes
    if unit.weight_cache_kib is None or not total:
        return weight_bytes / gbps
    kept = cyclic_kept(total, unit.weight_cache_kib * 1024) / total
    cached = kept / unit.weight_cached_gbps if unit.weight_cached_gbps else 0.0
    return weight_bytes * ((1.0 - kept) / gbps + cached)


def cyclic_kept(nbytes: float, capacity: float) -> float:
    """Bytes of an ``nbytes`` cyclic stream a cache of ``capacity`` keeps from one pass to the next:
    all of it where it fits, else ``max(0, 2 C - S)`` (a line is reused only after the whole
    stream has passed; LRU-like replacement keeps none from twice the cache on).

    >>> cyclic_kept(8e6, 16e6), cyclic_kept(24e6, 16e6), cyclic_kept(40e6, 16e6)
    (8000000.0, 8000000.0, 0.0)
    """
    return float(nbytes) if nbytes <= capacity else max(0.0, 2.0 * capacity - nbytes)


def marked_cold_bytes(op: Op) -> int:
    """The op's :data:`COLD_DST_ATTR` bytes: its output bytes no longer in L2 (0 unmarked)."""
    cold = op.attrs.get(COLD_DST_ATTR)
    return cold if isinstance(cold, int) and cold > 0 else 0


def cold_destination_ns(op: Op, unit: CpuUnit, chip: Chip) -> float:
    """Time a kernel on data in L2 stalls writing into memory no longer there, ns: the op's
    :data:`COLD_DST_ATTR` bytes, :data:`COLD_DST_TRANSFERS` times, at the last-level cache's
    bandwidth (DRAM's without an L3). A kernel streaming from beyond L2 pays them as one more
    transfer of its stream instead (:meth:`CpuModel.roofline`).

    Channel Concats of two 256 KiB inputs just made (profiled, onnxruntime 1.32, loaded 2-core
    Xeon, 38 GB/s L3) took 15-16.5 us into a 512 KiB region touched 0.25-1.5 MiB of distinct
    bytes before, 24.5-28 us into one touched 2.5-16.5 MiB before (10-13 us more: 1-1.3
    transfers) and 33-41 us after a 32 MiB Add that left the L2 full of dirty lines (2-3
    transfers). Beyond L2 a copy into cold memory runs at ``(in + 2 out)`` bytes at the L3 rate
    (``docs/fidelity_cpu.md``, "Channel Concats").

    >>> from chips.schema import Chip
    >>> chip = Chip.model_validate({"name": "c", "dram": {"bandwidth_gbps": 20, "latency_ns": 100}, "domains": [{"name": "d", "kind": "dram"}],
    ...     "units": [{"name": "cpu", "kind": "cpu", "domain": "d", "clock_mhz": 1000, "flops_per_cycle": {"fp32": 32},
    ...                "l1_kib": 32, "l1_bandwidth_gbps": 200, "l2_kib": 2048, "l2_bandwidth_gbps": 100,
    ...                "l3_kib": 65536, "l3_bandwidth_gbps": 40}]})
    >>> cold_destination_ns(Op("c", "Concat", "data", (), (), {COLD_DST_ATTR: 400_000}), chip.units[0], chip)
    20000.0
    """
    cold = marked_cold_bytes(op)
    if not cold:
        return 0.0
    gbps = unit.l3_bandwidth_gbps if unit.l3_kib and unit.l3_bandwidth_gbps else unit_bandwidth_gbps(unit, chip)
    return COLD_DST_TRANSFERS * cold / gbps


def marked_cold_sources(op: Op) -> int | None:
    """The op's :data:`COLD_SRC_ATTR` bytes: its inputs' bytes no longer in L2 when it starts;
    None where the op is unmarked (where its inputs sit is not known)."""
    cold = op.attrs.get(COLD_SRC_ATTR)
    return max(cold, 0) if isinstance(cold, int) else None


def far_source_bytes(op: Op, most: int) -> int:
    """The op's :data:`FAR_SRC_ATTR` bytes (0 unmarked), at most ``most``: its inputs' bytes from DRAM."""
    far = op.attrs.get(FAR_SRC_ATTR)
    return min(max(far, 0), max(most, 0)) if isinstance(far, int) else 0


def cold_source_ns(op: Op, unit: CpuUnit, chip: Chip) -> float:
    """Time a streaming kernel whose inputs sit in L2 waits for the part that does not, ns: the
    op's :data:`COLD_SRC_ATTR` bytes once at the last-level cache's bandwidth (DRAM's without an
    L3), beside its work at the core's rate (``stall_ns``: no efficiency scales it).

    Measured (onnxruntime 1.32, CI Xeon under load, profiled): the NCHWc GlobalAveragePool takes
    0.06-0.07 ns per input element (~60 GB/s) after a conv with little weight, 0.17-0.24 after a
    1024- or 1280-channel one that streamed 4-6.5 MB of weights through the L2 after writing the
    GAP's input; one element from the L3 at 37.5 GB/s is 0.11 ns (``docs/fidelity_cpu.md``,
    "Where a kernel's inputs sit").

    >>> from chips.schema import Chip
    >>> chip = Chip.model_validate({"name": "c", "dram": {"bandwidth_gbps": 20, "latency_ns": 100}, "domains": [{"name": "d", "kind": "dram"}],
    ...     "units": [{"name": "cpu", "kind": "cpu", "domain": "d", "clock_mhz": 1000, "flops_per_cycle": {"fp32": 32},
    ...                "l1_kib": 32, "l1_bandwidth_gbps": 200, "l2_kib": 2048, "l2_bandwidth_gbps": 100,
    ...                "l3_kib": 65536, "l3_bandwidth_gbps": 40}]})
    >>> cold_source_ns(Op("g", "GlobalAveragePool", "pool", (), (), {COLD_SRC_ATTR: 400_000}), chip.units[0], chip)
    10000.0
    """
    cold = marked_cold_sources(op)
    if not cold:
        return 0.0
    dram = unit_bandwidth_gbps(unit, chip)
    gbps = unit.l3_bandwidth_gbps if unit.l3_kib and unit.l3_bandwidth_gbps else dram
    far = far_source_bytes(op, cold)  # a graph input the run's traffic evicted (FAR_SRC_ATTR)
    return (cold - far) / gbps + far / dram


def code_refetch_ns(op: Op, unit: CpuUnit) -> float:
    """Time a kernel pays to bring its code back after the run streamed :data:`CODE_REFETCH_ATTR`
    bytes since it last ran, ns: :data:`CODE_REFETCH_NS` per doubling of those bytes beyond the
    unit's L2 (0 unmarked, or within the L2). A stall beside the work: no efficiency scales it.

    Measured (onnxruntime 1.32, CI Xeon under load, profiled, medians of 5 rounds;
    ``python benchmarks/micro_cpu_kernels.py gap``): an NCHWc GlobalAveragePool whose input a small
    conv has just written (in L1/L2) takes 4-6 us alone and 0-1 / 1 / 1 / 2-4 / 3-4 / 4-5 / 5-6 us
    more when a 1x1 conv with 1 / 2 / 4 / 8 / 16 / 32 / 64 MiB of weights runs between two of its
    calls (least squares without the 32 MiB point: 1.06 and 1.19 us per doubling beyond the L2 in
    two sessions, 1.13 their mean; that point within 0.6 us); a Flatten (no work at all) 1 to 7.5
    us more. A model's only GAP pays it (the whole run streams
    between two calls: resnet18 47 MB); the eight squeeze-and-excitation GAPs of an EfficientNet
    find their code a block (under 2 MB) after the last one ran.

    >>> from chips.schema import CpuUnit
    >>> unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l2_kib=2048)
    >>> [round(code_refetch_ns(Op("g", "GlobalAveragePool", "pool", (), (), {CODE_REFETCH_ATTR: mib * 2**20}), unit))
    ...  for mib in (1, 2, 8, 64)]
    [0, 0, 2260, 5650]
    """
    streamed = op.attrs.get(CODE_REFETCH_ATTR)
    l2 = unit.l2_kib * 1024
    if not isinstance(streamed, int) or l2 <= 0 or streamed <= l2:
        return 0.0
    return CODE_REFETCH_NS * math.log2(streamed / l2)


def gemm_rows(op: Op) -> int:
    """Rows of a MatMul/Gemm's output, all batches together (``batch x M`` of its
    :func:`~cost_models.base.gemm_of`; 1 for a matrix-vector product or no GEMM at all).

    >>> from graph_ir.ir import Op, Tensor
    >>> a, b = Tensor("a", (1, 128, 768), "float32"), Tensor("b", (768, 3072), "float32", is_weight=True)
    >>> gemm_rows(Op("mm", "MatMul", "matmul", (a, b), (Tensor("y", (1, 128, 3072), "float32"),)))
    128
    """
    gemm = gemm_of(op)
    return gemm.batch * gemm.m if gemm is not None else 1


def last_level_cache_bytes(unit: CpuUnit) -> float:
    """Capacity of the unit's last cache level (L3 if it has one, else L2)."""
    return (unit.l3_kib or unit.l2_kib) * 1024


def loop_cache_bytes(unit: CpuUnit) -> float:
    """What a loop of inferences keeps of the unit's last cache level between two runs' uses of a
    byte: the fingerprint's ``loop_cache_kib`` where measured (at most the level), else the whole
    level (:func:`last_level_cache_bytes`). On the AMD EPYC VM here (L3 26 MiB by the read sweep)
    chains of 4-row MatMuls kept 16-19 MiB of weights between runs; a decoding step over a 6 MB
    static cache with 7 MB of weights (19 MB a run), priced as all kept, ran its cache copies and
    products 14-34 % slower (``docs/fidelity_cpu.md``, "What a loop keeps of a shared L3")."""
    whole = last_level_cache_bytes(unit)
    return min(whole, unit.loop_cache_kib * 1024) if unit.loop_cache_kib else whole


def recurrent_bytes(op: Op, dtype: str) -> tuple[int, int]:
    """(time steps, bytes of the recurrent weights ``R``) of an LSTM/GRU/RNN node.

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w, r = Tensor("x", (35, 1, 650), "float32"), Tensor("w", (1, 2600, 650), "float32"), Tensor("r", (1, 2600, 650), "float32")
    >>> recurrent_bytes(Op("lstm", "LSTM", "rnn", (x, w, r), ()), "fp32")
    (35, 6760000)
    """
    x, r = op.inputs[0], op.inputs[2]
    steps = x.shape[1] if op.attrs.get("layout", 0) else x.shape[0]
    return int(steps), deployed_bytes(r, dtype)


def recurrent_steps_ns(op: Op, dtype: str, r_stream_ns: float) -> float:
    """Time of the recurrent steps of an LSTM/GRU/RNN node as onnxruntime runs them, ns: per
    direction (one after the other) and step, a matrix-vector product streaming that
    direction's ``R`` (``r_stream_ns``, see :func:`stream_ns`), plus :data:`RECURRENT_STEP_NS`
    and :data:`RECURRENT_GATE_NS` per gate element and batch row.

    >>> from graph_ir.ir import Op, Tensor
    >>> x, w = Tensor("x", (10, 1, 64), "float32"), Tensor("w", (1, 256, 64), "float32", is_weight=True)
    >>> r = Tensor("r", (1, 256, 64), "float32", is_weight=True)
    >>> recurrent_steps_ns(Op("l", "LSTM", "rnn", (x, w, r), ()), "fp32", 1000.0)  # 10 x (1000 + 100 + 256 x 0.3)
    11768.0
    """
    steps, _ = recurrent_bytes(op, dtype)
    r = op.inputs[2].shape
    dirs, gate_rows = (int(r[0]), int(r[1])) if len(r) == 3 else (1, 1)
    x = op.inputs[0].shape
    batch = int(x[0] if op.attrs.get("layout", 0) else x[1]) if len(x) == 3 else 1
    gate_ns = RECURRENT_GATE_NS.get(op.op_type, max(RECURRENT_GATE_NS.values()))
    return steps * dirs * (r_stream_ns + RECURRENT_STEP_NS + gate_ns * gate_rows * batch)


def stream_ns(
    nbytes: float,
    levels: list[tuple[float, float]],
    core_gbps: float,
    dram_gbps: float,
    far_gbps: float | None = None,
) -> float:
    """Time to stream ``nbytes`` that are read again and again (a recurrent matrix), ns: the
    part each cache level holds beyond the levels above it comes from that level, at the slower
    of its bandwidth and the kernel's own rate ``core_gbps``; the rest from DRAM. (A matrix a
    little larger than L2 still streams mostly from L2: a GRU's 1.8 MB ``R`` ran at 69 GB/s
    here, an L3 rate would be 37.)

    With ``far_gbps`` (the kernel's measured rate on a matrix twice the L2 or more) a level of
    ``C`` bytes that cannot hold the whole matrix keeps only ``max(0, 2 C - S)`` of it: a cyclic
    stream reuses a line only after the whole matrix has passed, so just above ``C`` nearly all
    of it hits and from ``2 C`` on (LRU-like replacement) none; bytes from beyond L2 go at
    ``far_gbps`` at most (onnxruntime's GEMV reaches 27-28 GB/s from L3 on this machine for
    4-32 MiB, where a plain read sweep gets 38).

    >>> round(stream_ns(3e6, [(1024.0, 200.0), (2048.0, 100.0)], 80.0, 10.0), 1)  # 1 MiB at 80, 1 MiB at 80, rest at 10
    116499.2
    >>> round(stream_ns(3e6, [(1024.0, 200.0), (2048.0, 100.0)], 80.0, 10.0, 8.0), 1)  # L2 keeps 4 MiB - 3 MB; rest at 8
    240640.8
    """
    return sum(stream_parts_ns(nbytes, levels, core_gbps, dram_gbps, far_gbps), 0.0)


def stream_parts_ns(
    nbytes: float,
    levels: list[tuple[float, float]],
    core_gbps: float,
    dram_gbps: float,
    far_gbps: float | None = None,
    l1_gbps: float | None = None,
) -> list[float]:
    """:func:`stream_ns` level by level, ns: what the bytes each cache level serves take (``levels``
    order, L1 first), then DRAM's share last. The first two (L1, L2) are where the kernel's own rate
    ``core_gbps`` binds; beyond them the level's bandwidth (or ``far_gbps``) does.

    With ``l1_gbps`` (the kernel's measured rate on a matrix that fits the L1) L1 serves the whole
    stream at that rate where it fits and none of it where it does not: an L1's near-LRU
    replacement keeps nothing of a cyclic stream larger than itself (an LSTM step of hidden 48, a
    36 KiB ``R``, ran 355 ns on a 48 KiB L1, hidden 64, 64 KiB, 694: the L2 rate for all of it).

    >>> [round(t, 1) for t in stream_parts_ns(3e6, [(1024.0, 200.0), (2048.0, 100.0)], 80.0, 10.0, 8.0)]
    [0.0, 14928.8, 225712.0]
    >>> [round(t, 1) for t in stream_parts_ns(40e3, [(48.0, 400.0), (1024.0, 150.0)], 120.0, 10.0, 8.0, 200.0)]
    [200.0, 0.0, 0.0]
    """
    far = far_gbps or math.inf
    left, parts = float(nbytes), []
    for i, (kib, gbps) in enumerate(levels):
        cap = kib * 1024
        keep = cap if far_gbps is None else cyclic_kept(nbytes, cap)
        if i == 0 and l1_gbps is not None:
            keep, core = (nbytes if nbytes <= cap else 0.0), l1_gbps
        else:
            core = core_gbps
        part = min(left, max(0.0, keep - (nbytes - left)))  # beyond what the levels above served
        parts.append(part / (min(gbps, core, far) if i >= 2 else min(gbps, core)))
        left -= part
    return [*parts, left / min(dram_gbps, core_gbps, far)]


def cyclic_capacity_bytes(nbytes: float, gbps: float, near_gbps: float, far_gbps: float) -> float | None:
    """The cache capacity ``C`` under which :func:`stream_ns`'s cyclic rule streams ``nbytes``
    (more than ``C``) at ``gbps``, with ``near_gbps`` from the cache and ``far_gbps`` beyond it:
    the bytes served by the cache are the ``h`` for which ``nbytes / gbps = h / near_gbps +
    (nbytes - h) / far_gbps`` (clipped to ``[0, nbytes]``), and ``h = 2 C - nbytes``. None when the
    two rates do not tell (``near_gbps <= far_gbps``). How ``hwsim fingerprint`` reads an L2
    capacity off the first point of its read sweep past the L2 plateau.

    >>> cyclic_capacity_bytes(3e6, 2 * 100 * 25 / 125, 100.0, 25.0)  # half at 100, half at 25: C = 2.25 MB
    2250000.0
    """
    if near_gbps <= far_gbps:
        return None
    hits = nbytes * (1 / far_gbps - 1 / gbps) / (1 / far_gbps - 1 / near_gbps)
    return (nbytes + min(max(hits, 0.0), nbytes)) / 2


def first_pass_gbps(unit: CpuUnit, levels: list[tuple[float, float]], w_b: int) -> float:
    """GB/s of a recurrent op's first read of its ``w_b`` weight bytes in a run, 0.0 for DRAM: the
    smallest cache level holding all the model's weights where a loop of inferences keeps them
    there (``weights_in_cache``, ``resident_weight_bytes``: :func:`cost_models.table.steady_state_unit`),
    else DRAM: between two runs the model's other weights evicted them. Measured on an AMD EPYC
    (25 MiB of L3): one 35-step LSTM of hidden 384 / 512 took 1.61 / 2.79 ms behind a 20 MB
    embedding and a 20 MB decoder, 1.38 / 2.60 ms alone, the same kernel.

    >>> from chips.schema import CpuUnit
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=32, l1_bandwidth_gbps=100,
    ...             l2_kib=1024, l2_bandwidth_gbps=50, l3_kib=8192, l3_bandwidth_gbps=40)
    >>> levels = [(32.0, 100.0), (1024.0, 50.0), (8192.0, 40.0)]
    >>> first_pass_gbps(u, levels, 2**19)
    0.0
    >>> cached = u.model_copy(update={"weights_in_cache": True, "resident_weight_bytes": 4.0 * 2**20})
    >>> first_pass_gbps(cached, levels, 2**19)
    40.0
    """
    if not unit.weights_in_cache:
        return 0.0
    held = max(float(w_b), unit.resident_weight_bytes or 0.0)
    return holding_gbps(levels, held)


def _ort_recurrent(op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
    """An LSTM/GRU/RNN as onnxruntime's CPU kernel runs it, in sequence: ``X·Wᵀ`` for all steps
    as one GEMM, then the steps (:func:`recurrent_steps_ns`). The weights come from the
    smallest cache level holding them (the model runs in a loop), from DRAM when none does."""
    steps, r_b = recurrent_bytes(op, dtype)
    dirs = int(op.inputs[2].shape[0]) if len(op.inputs[2].shape) == 3 else 1
    levels = _cache_levels(unit)
    dram_gbps = unit_bandwidth_gbps(unit, chip)
    w_gbps = first_pass_gbps(unit, levels, w_b)
    w_ns = w_b / (w_gbps or dram_gbps)
    in_cache = r_b / dirs <= levels[-1][0] * 1024
    dram_read = (0 if w_gbps else w_b) + (0 if in_cache else steps * r_b)
    # the memory roof: the same bytes at the levels' own bandwidths (never above the steps' time)
    memory_ns = w_ns + steps * dirs * stream_ns(r_b / dirs, levels, math.inf, dram_gbps)
    note = f"{dtype}, onnxruntime steps: {dirs} x {steps}, R from {'cache' if in_cache else 'DRAM'}"
    time = recurrent_time(op, unit, chip, dtype, w_b, 1)
    cost = finish(op, unit, chip, dtype, time.total_ns, 0, 0.0, dram_read, 0, note)
    # what no efficiency scales (calibration_basis_ns): the measured streams and the fixed step costs
    return replace(cost, memory_ns=memory_ns, stall_ns=time.stream_ns + time.fixed_ns)


@dataclass(frozen=True, slots=True)
class RecurrentTime:
    """onnxruntime's LSTM/GRU/RNN kernel (:func:`recurrent_time`) in three parts by what sets
    each, ns; the calibration basis of a recurrent op is ``core_ns`` (:func:`calibration_basis_ns`)."""

    #: The input projection's GEMM at the core's peak, and each step's share of ``R`` served from
    #: L1/L2 at the GEMV kernel's rate (``gemv_gbps``; from L1, ``gemv_l1_gbps`` where measured): the
    #: core's rate, which an efficiency scales.
    core_ns: float
    #: The weights' first pass (the level holding them) and each step's share of ``R`` from beyond
    #: L2 (``gemv_far_gbps``, the level's or DRAM's bandwidth): rates the fingerprint measured
    #: directly, which no efficiency scales.
    stream_ns: float
    #: Each step's fixed and gate costs (:data:`RECURRENT_STEP_NS`, :data:`RECURRENT_GATE_NS`,
    #: measured apart) and each direction's set-up (:func:`direction_setup_ns`): no efficiency
    #: scales them either.
    fixed_ns: float

    @property
    def total_ns(self) -> float:
        """The kernel's time at efficiency 1, ns."""
        return self.core_ns + self.stream_ns + self.fixed_ns

    def calibrated_ns(self, efficiency: float) -> float:
        """The kernel's time with its core part at ``efficiency`` of the core's rate, ns.

        >>> RecurrentTime(800.0, 1000.0, 200.0).calibrated_ns(0.8)
        2200.0
        """
        return self.core_ns / efficiency + self.stream_ns + self.fixed_ns


def recurrent_kernel_ns(op: Op, unit: CpuUnit, chip: Chip, dtype: str, w_b: int, threads: int) -> float:
    """onnxruntime's LSTM/GRU/RNN kernel on ``threads`` intra-op threads at efficiency 1, ns
    (:func:`recurrent_time`'s total)."""
    return recurrent_time(op, unit, chip, dtype, w_b, threads).total_ns


def recurrent_time(op: Op, unit: CpuUnit, chip: Chip, dtype: str, w_b: int, threads: int) -> RecurrentTime:
    """onnxruntime's LSTM/GRU/RNN kernel on ``threads`` intra-op threads (a unit with
    ``gemv_gbps``), by part: ``X·Wᵀ`` as one MLAS SGEMM, ``W`` read once, then each step's products (a
    GRU's two) split by rows, each thread streaming its share of ``R`` from its own core's
    caches (a share that fits a core's L2 where the whole ``R`` did not streams at the L2 rate:
    a hidden-512 LSTM ran 4x faster on 2 threads here), plus each step's fixed and gate costs.
    The projection and each product run on the threads MLAS gives them (:func:`recurrent_threads`).
    The weights' first pass (``W`` and ``R`` from the level holding them) splits over the
    products' threads too, unless it comes from DRAM; from a cache it streams under the
    projection's FMAs, and only what it takes beyond them adds. (On an AMD EPYC, Zen 5, LSTMs and
    GRUs of hidden 384-768 over 4 and 64 steps, their weights in the L3, put that first pass at
    9-28 us where its bytes at the L3's rate are 28-90: an LSTM of hidden 512 ran 204 us over 4
    steps, 48 a step, priced 256. Weights from DRAM did not hide: a bidirectional LSTM of hidden
    768, 19 MB of W, spent 618 us at no steps, about W at DRAM's rate.)
    Parallel sections are not included (:func:`parallel_sections`)."""
    assert unit.gemv_gbps is not None
    steps, r_b = recurrent_bytes(op, dtype)
    dirs = int(op.inputs[2].shape[0]) if len(op.inputs[2].shape) == 3 else 1
    proj_threads, step_threads = recurrent_threads(op, threads)
    blocks = recurrent_step_gemms(op)
    # the calling thread's share of R in one step: each product's rows over its own threads
    r_share = sum(b / t for b, t in zip(blocks, step_threads, strict=True)) / sum(blocks)
    levels = _cache_levels(unit)
    dram_gbps = unit_bandwidth_gbps(unit, chip)
    w_gbps = first_pass_gbps(unit, levels, w_b)
    w_in = op.inputs[1]
    proj_flops = 2.0 * op.inputs[0].elements * (w_in.shape[1] if len(w_in.shape) == 3 else 1) * dirs
    # the projection is an MLAS SGEMM: the fingerprint's peak (its own rate) times the small-kernel
    # factor; no MatMul efficiency, the op's own calibrated efficiency scales the core part
    shape = proj_flops / (proj_flops + HALF_EFFICIENCY_FLOPS)
    proj_ns = proj_flops / (unit.peak_flops_per_ns(dtype) * shape) / proj_threads if proj_flops else 0.0
    r_parts = stream_parts_ns(r_b / dirs * r_share, levels, unit.gemv_gbps, dram_gbps, unit.gemv_far_gbps,
                              unit.gemv_l1_gbps)  # fmt: skip
    # the weights' first pass: each thread reads its share from the cache level (DRAM's bandwidth is shared)
    w_ns = w_b / w_gbps / max(step_threads) if w_gbps else w_b / dram_gbps
    products = steps * dirs
    # the projection reads W as it computes: a first pass from the caches streams under its FMAs
    w_left = max(0.0, w_ns - proj_ns) if w_gbps else w_ns
    return RecurrentTime(proj_ns + products * sum(r_parts[:2]), w_left + products * sum(r_parts[2:]),
                         recurrent_steps_ns(op, dtype, 0.0) + dirs * (direction_setup_ns(op, unit) or 0.0))


def direction_setup_ns(op: Op, unit: CpuUnit) -> float | None:
    """What onnxruntime's LSTM or GRU pays per direction beside its steps, ns: the ``unit``'s
    measured ``lstm_direction_ns`` / ``gru_direction_ns`` (None where not measured, or another op).
    On an AMD EPYC (Zen 5), one-node LSTMs of hidden 8-32 took 1.6-1.7 us per direction at no steps
    beyond a one-node Relu's run, GRUs 1.0-1.2 (4 and 16 steps, one and two directions); priced
    without it, those over 4 steps came out -9..-32 %."""
    return {"LSTM": unit.lstm_direction_ns, "GRU": unit.gru_direction_ns}.get(op.op_type)


def _recurrence(op: Op, unit: CpuUnit, chip: Chip, dtype: str, cost: OpCost) -> OpCost:
    """``cost`` (the op as one kernel: every weight read once, the work of all steps) plus the
    re-reads of ``R`` in steps 2..n from the smallest level that holds ``R`` and one step's
    input and state (DRAM when none does)."""
    steps, r_b = recurrent_bytes(op, dtype)
    if steps <= 1 or r_b <= 0:
        return cost
    state = (op.input_bytes(dtype) + op.output_bytes(dtype)) // steps
    levels = _cache_levels(unit)
    reread = (steps - 1) * r_b
    gbps = holding_gbps(levels, r_b + state)
    if gbps > 0:
        memory_ns = cost.memory_ns + reread / gbps
        dram_read = cost.dram_read_bytes
        where = "cache"
    else:
        bw = unit_bandwidth_gbps(unit, chip)
        memory_ns = cost.memory_ns + reread / bw
        dram_read = cost.dram_read_bytes + reread
        where = "DRAM"
    extra_pj = energy_pj(unit.active_w, max(cost.compute_ns, memory_ns) - max(cost.compute_ns, cost.memory_ns))
    extra_pj += dram_energy_pj(chip.dram, dram_read - cost.dram_read_bytes)
    return replace(cost, memory_ns=memory_ns, dram_read_bytes=dram_read, energy_pj=cost.energy_pj + extra_pj,
                   note=f"{cost.note}, R re-read {steps - 1}x from {where}")  # fmt: skip


def shape_factor(op: Op) -> float:
    """Efficiency lost to the op's shape: small kernels pay set-up (half efficiency at
    :data:`HALF_EFFICIENCY_FLOPS`), depthwise convolutions reuse little data per load.

    >>> from graph_ir.ir import Op
    >>> shape_factor(Op("n", "Relu", "activation", (), (), flops=20_000))
    0.5
    """
    factor = op.flops / (op.flops + HALF_EFFICIENCY_FLOPS) if op.flops else 1.0
    if op.category == "conv" and _is_depthwise(op):
        factor *= DEPTHWISE_FACTOR
    return factor


#: Element types a ``Cast`` kernel converts one element at a time (:func:`kernel_type`: ``CastWide``).
WIDE_DTYPES = frozenset({"int64", "uint64", "float64"})


def kernel_type(op: Op) -> str:
    """The kernel class an op runs as, the key of its efficiency: its op type, except

    - ``DepthwiseConv`` for a depthwise convolution (onnxruntime runs those on a kernel of their
      own, at a fraction of the dense kernels' rate; without a ``DepthwiseConv`` efficiency the
      ``Conv`` one times :data:`DEPTHWISE_FACTOR` applies);
    - a Resize/Upsample by mode (:func:`resize_kernel`);
    - ``MatMul`` for an Einsum (onnxruntime's Einsum runs its product as MLAS GEMMs, one per
      batch: a 256-cube ``ij,jk->ik`` ran 106 GFLOP/s where the MatMul probe ran 114.5);
    - ``ConvIntegerS8`` for a ``ConvInteger`` with int8 weights (``quantize_dynamic``'s default):
      onnxruntime runs it on another kernel than one with uint8 weights, 4x slower on an AMD EPYC;
    - ``CastWide`` for a ``Cast`` to or from an 8-byte type (int64, uint64, double): onnxruntime
      converts those one element at a time (AVX2 has no int64 conversion), where the 1-4-byte
      conversions are vectorized: on an AMD EPYC, timed in chains, 0.38-0.42 ns an element
      (int64) against 0.06-0.07 (int32), 256 Ki values.
    - ``CumSumRows`` for a ``CumSum`` along an outer axis (a constant one, :data:`CUM_AXIS_ATTR`):
      onnxruntime adds each row to the sum of the rows before it, a vectorized pass, where along
      the last axis it adds one element after another: on the CI Xeon 0.23 ns an element in a
      model against 2.0 along the last axis (the probe of ``CumSum``).
    - ``MaxPoolIndices`` for a ``MaxPool`` that also outputs its ``Indices`` (SegNet's, for a
      ``MaxUnpool``): onnxruntime runs MLAS's pooling only for a MaxPool of one output, and this
      one on a loop that computes each window's position element by element, never blocked
      (``MaxPool<8>``): on the CI Xeon 13-15 ns an output where the calibrated MaxPool priced 0.6.
    - ``OneHotOuter`` for a ``OneHot`` whose depth is not its output's last axis (:func:`onehot_suffix`):
      onnxruntime fills a ``OneHot``'s output by an Eigen generator, one call per value that splits
      its position into (rows, depth, suffix); with a suffix of one (the default ``axis=-1``) each
      value is computed alone, 1.7-1.9 ns on the CI Xeon (depth 64-1024), with a longer suffix
      Eigen vectorizes along it, 0.23 ns (a copy priced 0.08).

    A class without an efficiency of its own takes its op type's."""
    if op.op_type in RESIZE_OP_TYPES:
        return resize_kernel(op, bool(op.attrs.get(NCHWC_ATTR)))
    if op.op_type == "Einsum":
        return "MatMul"
    if op.op_type == "ConvInteger" and len(op.inputs) > 1 and op.inputs[1].dtype == "int8":
        return "ConvIntegerS8"
    if op.op_type == "Cast" and any(t.dtype in WIDE_DTYPES for t in (*op.inputs[:1], *op.outputs[:1])):
        return "CastWide"
    if op.op_type == "MaxPool" and len(op.outputs) > 1:
        return "MaxPoolIndices"
    if op.op_type == "OneHot" and onehot_suffix(op) > 1:
        return "OneHotOuter"
    if op.op_type == "CumSum" and op.inputs and (_after_axis(op.inputs[0].shape, op.attrs.get(CUM_AXIS_ATTR)) or 1) > 1:
        return "CumSumRows"
    return "DepthwiseConv" if op.category == "conv" and _is_depthwise(op) else op.op_type


def onehot_suffix(op: Op) -> int:
    """The values after the depth axis of a ``OneHot``'s output (its ``axis``, -1 by default: 1).

    >>> from graph_ir.ir import Tensor
    >>> y = lambda *s: Op("o", "OneHot", "data", (), (Tensor("y", s, "float32"),), {"axis": 1})
    >>> onehot_suffix(y(8, 100)), onehot_suffix(y(8, 100, 16))
    (1, 16)
    """
    return (_after_axis(op.outputs[0].shape, op.attrs.get("axis", -1)) or 1) if op.outputs else 1


def _axis_index(shape: tuple[int, ...], axis: object) -> int | None:
    """``axis`` of ``shape`` as an index from the front (a negative axis counts from the end); None
    where it is no int within the shape's rank."""
    if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        return None
    return axis % len(shape)


def _after_axis(shape: tuple[int, ...], axis: object) -> int | None:
    """The values after ``axis`` of ``shape`` (:func:`_axis_index`); None for no such axis."""
    i = _axis_index(shape, axis)
    return None if i is None else math.prod(shape[i + 1 :])


def _before_axis(shape: tuple[int, ...], axis: object) -> int | None:
    """The values before ``axis`` of ``shape`` (:func:`_axis_index`); None for no such axis."""
    i = _axis_index(shape, axis)
    return None if i is None else math.prod(shape[:i])


def resize_kernel(op: Op, blocked: bool = False) -> str:
    """The kernel class of a Resize/Upsample node as onnxruntime 1.32's CPU kernels run it, by mode,
    coordinate transform and layout (``blocked``: its input is in the NCHWc layout and the
    transformer keeps it there, :func:`resize_runs_blocked`). Measured per output element,
    2x-3x upsampling of 16-64 channels, 32x32 to 96x96 (profiled, fastest of 3 rounds):

    - ``Resize``: nearest with ``asymmetric`` coordinates and ``floor`` rounding (YOLO's,
      ``Upsample``'s): 0.11-0.20 ns, blocked or plain (plain only at 2x: 0.46 at 3x);
    - ``ResizeNearest``: any other nearest (the default ``half_pixel``/``round_prefer_floor``):
      0.47-0.60 ns, always plain (the transformer reorders around it);
    - ``ResizeLinear``: linear on a plain tensor, 1.34-1.40 ns;
    - ``ResizeLinearNchwc``: linear on a blocked tensor, 0.36-0.40 ns;
    - ``ResizeLinearND``: linear over other axes than the last two of a 4-D tensor (a 3-D
      ``[N, C, W]`` signal's, Wave-U-Net's): onnxruntime's generic N-linear loop, 2.75-2.83 ns on the
      CI Xeon where ``[N, C, 1, W]`` ran the bilinear kernel at 1.38;
    - ``ResizeCubic``: cubic (not measured).

    >>> from graph_ir.ir import Op
    >>> resize_kernel(Op("r", "Resize", "elementwise", (), (), {"mode": "linear"})), resize_kernel(Op("u", "Upsample", "data", (), ()))
    ('ResizeLinear', 'Resize')
    """
    mode = str(op.attrs.get("mode", "nearest"))
    if mode == "nearest":
        return "Resize" if _nearest_floor(op) else "ResizeNearest"
    if mode == "linear":
        return "ResizeLinearNchwc" if blocked else "ResizeLinear" if _bilinear(op) else "ResizeLinearND"
    return "ResizeCubic"


def _bilinear(op: Op) -> bool:
    """Whether onnxruntime runs a linear Resize on its bilinear kernel: a 2-D tensor, or a 4-D one
    whose first two axes keep their size (an op without shapes is taken as one)."""
    if not op.inputs or not op.outputs:
        return True
    x, y = op.inputs[0].shape, op.outputs[0].shape
    return len(x) == 2 or (len(x) == 4 and x[:2] == y[:2])


def resize_runs_blocked(op: Op) -> bool:
    """Whether onnxruntime's NCHWc transformer runs this Resize/Upsample on a blocked input as
    its NCHWc ``Upsample`` (measured: linear with any of these coordinate transforms, nearest only
    with ``asymmetric`` coordinates and ``floor`` rounding; other nearest Resizes are reordered
    out of the layout and back)."""
    mode = str(op.attrs.get("mode", "nearest"))
    if mode == "linear":
        ctm = str(op.attrs.get("coordinate_transformation_mode", "half_pixel"))
        return ctm in ("asymmetric", "align_corners", "half_pixel")
    return mode == "nearest" and _nearest_floor(op)


def _nearest_floor(op: Op) -> bool:
    """Nearest with asymmetric coordinates and floor rounding (always so for ``Upsample``)."""
    if op.op_type == "Upsample":
        return True
    ctm = str(op.attrs.get("coordinate_transformation_mode", "half_pixel"))
    return ctm == "asymmetric" and str(op.attrs.get("nearest_mode", "round_prefer_floor")) == "floor"


def _is_depthwise(op: Op) -> bool:
    return conv_group(op) > 1 and len(op.weights) > 0 and op.weights[0].shape[1:2] == (1,)


def _one_filter_per_channel(op: Op) -> bool:
    """A depthwise conv without a channel multiplier: one input and one output channel per group."""
    return _is_depthwise(op) and op.weights[0].shape[0] == conv_group(op)


register_model(CpuModel())
