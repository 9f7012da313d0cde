"""CPU cluster cost model: one op on one core, SIMD peak per dtype, cache-level bandwidth.

The working set (inputs + weights + outputs) picks the cache level that feeds the op; weights
always stream from DRAM once; a working set beyond the last-level cache re-reads through DRAM
with the tiling of :func:`~cost_models.base.tiling_extra_bytes`. A MatMul/Gemm whose weights come
from DRAM also stalls on them beside its compute (:func:`weight_stream_ns`, measured by
``hwsim fingerprint`` as ``weight_stream_gbps``). Depthwise convolutions are a kernel class of
their own (:func:`kernel_type`).

Efficiency: without a per-op-type entry in the unit's ``efficiency`` the compute roof is scaled
by a default per op category (times a small-kernel factor, and a depthwise factor for
depthwise convolutions) and memory moves at the full level bandwidth. A unit ``efficiency``
entry ``e`` (what ``hwsim validate --calibrate`` writes, or ``hwsim fingerprint``'s 1 for
GEMM-like ops) is the measured fraction of the *core's* rate reached by that op type: the
kernel takes at least its work at ``e`` times peak (with the small-kernel and depthwise
factors) and at least its bytes (:func:`core_bytes`) at ``e`` times L1 bandwidth, and the
memory roof of the level the data sits in stays physical. For recurrent ops ``e`` scales the
whole roofline instead (see :func:`calibration_basis_ns` for why).

Recurrent ops (LSTM, GRU, RNN) run as onnxruntime's CPU kernels do: the input projection
``X·Wᵀ`` for all time steps as one GEMM (``W`` read once), then one step at a time a GEMV with
the recurrent weights ``R`` and the gate arithmetic. ``R`` is re-read every step from the
level that holds it (:func:`recurrent_bytes`); for a 650-wide LSTM (6.8 MB of ``R``, beyond
L2) that re-read is most of the kernel's time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

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
)
from cost_models.energy import dram_energy_pj, energy_pj
from graph_ir.categories import Category
from graph_ir.ir import Op, deployed_bytes

__all__ = [
    "DEFAULT_EFFICIENCY",
    "DEPTHWISE_FACTOR",
    "HALF_EFFICIENCY_FLOPS",
    "RECURRENT_OP_TYPES",
    "CpuModel",
    "calibration_basis_ns",
    "core_bytes",
    "gemm_rows",
    "kernel_type",
    "last_level_cache_bytes",
    "recurrent_bytes",
    "shape_factor",
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
#: Recurrent op types (category ``rnn``): the input projection as one GEMM, then step by step.
RECURRENT_OP_TYPES = ("LSTM", "GRU", "RNN")


class CpuModel(UnitModel[CpuUnit]):
    """The cache-level roofline of one core; embedding lookups (``Gather``) and recurrent ops
    have handlers of their own; a calibrated efficiency then corrects any of them."""

    unit_class = CpuUnit
    #: The activations onnxruntime's FusedConv/MLAS applies in the kernel.
    default_fuses = frozenset(("Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid"))
    default_efficiency = DEFAULT_EFFICIENCY

    def cost(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """The op family's cost (:meth:`UnitModel.cost`), corrected by a calibrated efficiency."""
        return _calibrated(op, unit, dtype, super().cost(op, unit, chip, dtype, in_b, w_b, out_b))

    def roofline(
        self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        """Work at the core's SIMD rate against the bytes of the cache level the working set fits
        (DRAM for the weights), plus a GEMM's weight stream (:func:`weight_stream_ns`)."""
        compute_ns = _compute_ns(op, unit, dtype)
        stall_ns = weight_stream_ns(op, unit, w_b)
        act = in_b + out_b
        working = act + w_b
        # weights from DRAM, unless they stay in the caches between inferences (steady state)
        cached, dram_w = (working, 0) if unit.weights_in_cache else (act, w_b)
        levels = _cache_levels(unit)
        for kib, gbps in levels:
            if working <= kib * 1024:
                note = f"{dtype}, fits {kib:g} KiB" + (", weights cached" if dram_w == 0 < w_b else "")
                cost = finish(op, unit, chip, dtype, compute_ns + stall_ns, cached, gbps, dram_w, 0, note)
                break
        else:
            extra, tiles = spill_plan(in_b, w_b, out_b, levels[-1][0] * 1024, unit.l1_kib * 1024 / 2)
            note = f"{dtype}, spills LLC" + (f", {tiles} tiles" if tiles > 1 else "")
            cost = finish(op, unit, chip, dtype, compute_ns + stall_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)
        if stall_ns:
            cost = replace(cost, stall_ns=stall_ns, note=f"{cost.note}, weights stall {stall_ns / 1e3:.3g} us")
        return cost

    def gather(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """An embedding lookup reads the rows it gathers, not the table."""
        return self.roofline(op, unit, chip, dtype, in_b, min(w_b, out_b), out_b)

    def recurrent(self, op: Op, unit: CpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """LSTM/GRU/RNN: the roofline of the whole op, plus ``R`` re-read every step (:func:`_recurrence`)."""
        cost = self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        return _recurrence(op, unit, chip, dtype, cost) if len(op.inputs) >= 3 else cost

    handlers = op_handlers((("Gather",), gather), (RECURRENT_OP_TYPES, recurrent))


def _compute_ns(op: Op, unit: CpuUnit, dtype: Dtype) -> float:
    """The op's work at the core's SIMD peak times its efficiency (kernel class, shape)."""
    key = kernel_type(op)
    if key != op.op_type and key in unit.efficiency:  # a kernel class of its own, fitted as such
        eff = unit.efficiency[key] * shape_factor(op) / DEPTHWISE_FACTOR
    else:
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY) * shape_factor(op)
    peak = unit.peak_flops_per_ns(dtype)  # FLOP/ns, one core
    return op.flops / (peak * eff) if op.flops else 0.0


def _cache_levels(unit: CpuUnit) -> list[tuple[float, float]]:
    """``(KiB, GB/s)`` of each cache level, L1 first."""
    levels = [(unit.l1_kib, unit.l1_bandwidth_gbps), (unit.l2_kib, unit.l2_bandwidth_gbps)]
    if unit.l3_kib:
        levels.append((unit.l3_kib, unit.l3_bandwidth_gbps))
    return levels


def _calibrated(op: Op, unit: CpuUnit, dtype: Dtype, cost: OpCost) -> OpCost:
    """``cost`` corrected by the unit's calibrated efficiency for the op's kernel class, if any
    (see the module docstring): the core's own throughput for most ops, the weight stream's
    share of the level bandwidth for recurrent ones."""
    calibrated = unit.efficiency.get(kernel_type(op), unit.efficiency.get(op.op_type))
    if calibrated is None:
        return cost
    compute_ns = _compute_ns(op, unit, dtype)
    if op.category == "rnn":  # weight streaming at a fraction of the level's bandwidth
        if calibrated >= 1.0:
            return cost
        new_compute, new_memory = compute_ns, cost.memory_ns / calibrated
    else:  # the core's own throughput: work, or the bytes streamed through L1, over e
        core = max(compute_ns, core_bytes(op, dtype) / (unit.l1_bandwidth_gbps * calibrated))
        new_compute, new_memory = core + cost.stall_ns, cost.memory_ns
    old = max(cost.compute_ns, cost.memory_ns)
    extra_pj = energy_pj(unit.active_w, max(new_compute, new_memory) - old)
    return replace(cost, compute_ns=new_compute, memory_ns=new_memory, energy_pj=cost.energy_pj + extra_pj,
                   note=f"{cost.note}, calibrated {calibrated:.3g}")  # fmt: skip


def core_bytes(op: Op, dtype: str) -> int:
    """Bytes a kernel streams through the core: activations in and out and its weights (a
    Gather only the rows it reads); for a recurrent op also ``R`` once more per extra step."""
    w_b = op.weight_bytes(dtype)
    if op.op_type == "Gather":
        w_b = min(w_b, op.output_bytes(dtype))
    total = op.input_bytes(dtype) + op.output_bytes(dtype) + w_b
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
    still (DRAM). Recurrent ops stream their weights at a fraction of the bandwidth of the
    level holding them (~60 % at L2 and at L3 here): for them it is the whole roofline.
    """
    return max(cost.compute_ns, cost.memory_ns) if op.category == "rnn" else cost.compute_ns - cost.stall_ns


def weight_stream_ns(op: Op, unit: CpuUnit, weight_bytes: int) -> float:
    """Time a MatMul/Gemm kernel stalls on its weights coming from DRAM, beside its compute.

    Measured on onnxruntime's MLAS SGEMM (``hwsim fingerprint``, the 2-core CI Xeon): a batch
    of 128 rows times 768x3072 fp32 weights takes 3.9 ms with the weights in cache and 4.7 ms
    when they come from DRAM, whatever their share of the compute; the extra is the weight
    bytes at ~12 GB/s, which is ``weight_stream_gbps``. The packed weight panels are consumed
    at the micro-kernel's rate and the hardware prefetcher does not run ahead of it, so the
    stream adds to the work instead of hiding under it. 0 without ``weight_stream_gbps`` (the
    roofline's full overlap), for other op categories (convolutions reuse each weight over
    the whole output plane and showed at most half this stall) and for ops without weights
    (attention's activation-by-activation MatMuls). A GEMV (one row: MLAS's vector kernel)
    streams its weights at the memory roof instead: 26 MB took 1.13-1.16 ms from DRAM and
    0.97-0.98 ms from cache, i.e. overlapped.

    Weights that stay in the last-level cache from one inference to the next do not come from
    DRAM at all: :func:`cost_models.table.cost_table` drops ``weight_stream_gbps`` when a
    model's weights fit the unit's last-level cache together (steady state: the model run in a
    loop, as published and measured latencies are).
    """
    gbps = unit.weight_stream_gbps
    if not gbps or op.category != "matmul" or weight_bytes <= 0 or gemm_rows(op) <= 1:
        return 0.0
    return weight_bytes / gbps


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
    gbps = next((g for kib, g in levels if r_b + state <= kib * 1024), 0.0)
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


def kernel_type(op: Op) -> str:
    """The kernel class an op runs as, the key of its efficiency: its op type, except
    ``DepthwiseConv`` for a depthwise convolution (onnxruntime runs those on a kernel of their
    own, at a fraction of the dense kernels' rate; without a ``DepthwiseConv`` efficiency the
    ``Conv`` one times :data:`DEPTHWISE_FACTOR` applies)."""
    return "DepthwiseConv" if op.category == "conv" and _is_depthwise(op) else op.op_type


def _is_depthwise(op: Op) -> bool:
    return conv_group(op) > 1 and len(op.weights) > 0 and op.weights[0].shape[1:2] == (1,)


register_model(CpuModel())
