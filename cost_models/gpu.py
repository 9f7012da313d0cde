"""GPU cost model: one op is one kernel that uses the whole GPU.

Convs and matmuls run as an implicit GEMM, the way CUTLASS / cuDNN / TensorRT kernels do:

* **CTA tiles.** The GEMM (``M = N*OH*OW``, ``N = Cout``, ``K = Cin*kh*kw`` per group for a
  conv) is cut into ``tm x tn`` output tiles, one per thread block (CTA), each looping over K
  in steps of ``tk`` (64 bytes of K: 64 int8, 32 fp16, 16 fp32/TF32, as CUTLASS's sm80 tiles
  ``128x128x64`` int8 / ``128x128x32`` fp16 / ``128x128x16`` tf32). Work is padded to whole
  tiles (:func:`padded_macs`): a 16-channel conv on a 64-wide tile does 4x its MACs.
* **Occupancy.** A CTA holds its A and B tiles double-buffered in shared memory
  (``2 * (tm + tn) * tk * bytes``); CTAs resident per CU are limited by shared memory, by
  threads and by the CTA cap (:func:`ctas_per_cu`).
* **Waves and tail.** The busiest CU runs ``ceil(CTAs / CUs)`` CTAs in
  ``waves = ceil(CTAs / (CUs * resident))`` rounds; a round of ``q`` CTAs runs at the CU's
  rate times ``min(1, q * warps / WARPS_TO_SATURATE)`` (fewer warps cannot hide the MMA and
  shared-memory latencies), so a last partial wave costs as much as its busiest CU needs, up
  to a full wave when one CTA per CU is all that fits (:func:`gemm_cycles`).
* **Shared-memory feed.** A warp tile ``wm x wn`` needs ``(wm + wn) * bytes`` of shared memory
  per ``2 * wm * wn`` FLOP; the CU's shared-memory bandwidth caps small warp tiles.
* **Memory.** Every CTA reads its A and B tiles from L2 (A is re-read ``N / tn`` times, B
  ``M / tm`` times) at ``l2_bytes_per_cycle``; DRAM sees the unique operands plus the spill
  re-reads when the working set exceeds L2 (:func:`cost_models.base.spill_plan`).
* **Tile choice.** Each candidate of :data:`CTA_TILES` is costed and the fastest kept (ties:
  the least padded compute, then the larger tile), as TensorRT's tactic timing would pick.

Everything else (elementwise, activations, pooling, norms, depthwise convs) is memory bound
on the vector (CUDA) cores: one thread per output element, waves of ``threads_per_cu`` per
CU, the last partial wave leaving CUs idle (:func:`wave_utilization`).

``Concat`` and ``Split`` are no kernels at all: TensorRT has the producers write into slices of
the concatenated buffer and the readers read slices of the split one (assumption: the builder's
concat / slice elimination always applies), so they cost nothing on the GPU.

Every other op is one kernel and pays ``op_overhead_ns`` (launch + inter-kernel gap); ops fused
into a conv's epilogue (:mod:`cost_models.fusion`) drop theirs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from chips.schema import Chip, Dtype, GpuUnit
from cost_models.base import (
    ACTIVATIONS,
    STREAM_CHUNK_BYTES,
    Gemm,
    OpCost,
    UnitModel,
    conv_group,
    efficiency,
    finish,
    layout_cost,
    op_handlers,
    register_model,
    spill_plan,
    unit_bandwidth_gbps,
)
from cost_models.base import gemm_of as base_gemm_of
from graph_ir.categories import Category
from graph_ir.gemm import GEMM_OP_TYPES
from graph_ir.ir import PRECISION_BYTES, Op

__all__ = [
    "CTA_TILES",
    "DEFAULT_EFFICIENCY",
    "ELIDED_OPS",
    "K_STEP_BYTES",
    "MATRIX_RATE_CATEGORIES",
    "STAGES",
    "WARPS_TO_SATURATE",
    "CtaTile",
    "Gemm",
    "GemmPlan",
    "GpuModel",
    "ctas_per_cu",
    "gemm_cycles",
    "gemm_of",
    "padded_macs",
    "plan_gemm",
    "wave_utilization",
]

#: Achieved fraction of the rate each op category gets. conv/matmul: the mainloop of a large
#: CUTLASS GEMM reaches ~85-90 % of the dense tensor-core peak (assumption); tile padding,
#: waves and the shared-memory feed are modelled on top, not folded in here.
DEFAULT_EFFICIENCY: Mapping[Category, float] = {
    "conv": 0.85, "matmul": 0.85, "rnn": 0.25, "elementwise": 0.5, "activation": 0.5,
    "pool": 0.4, "reduce": 0.3, "norm": 0.3, "softmax": 0.3, "signal": 0.35, "data": 1.0,
    "unknown": 1.0,
}  # fmt: skip

#: Bytes of K one mainloop step loads per row (CUTLASS sm80: 128x128x64 int8, x32 fp16, x16 tf32).
K_STEP_BYTES = 64
#: Shared-memory buffers per operand tile: double buffering (assumption; CUTLASS sm80 kernels
#: often use 3-5 stages, which only lowers occupancy further).
STAGES = 2
#: Warps a CU needs resident to keep its tensor cores busy: two per sub-partition of an Ampere
#: SM (4 sub-partitions, Ampere whitepaper) to hide MMA / ldmatrix latency (assumption).
WARPS_TO_SATURATE = 8
#: Ops the engine builder removes: producers/readers address slices of one buffer.
ELIDED_OPS = frozenset(("Concat", "Split"))
#: Categories whose ops, when they are no GEMM, still run at ``flops_per_cycle`` (a matmul
#: without a GEMM shape, recurrent cells, transforms); every other category runs on the vector
#: cores at ``vector_flops_per_cycle``.
MATRIX_RATE_CATEGORIES: frozenset[Category] = frozenset(("matmul", "rnn", "signal"))


@dataclass(frozen=True, slots=True)
class CtaTile:
    """A thread-block tile: ``m x n`` outputs computed by ``warps`` warps of ``wm x wn`` each."""

    m: int
    n: int
    wm: int
    wn: int

    @property
    def warps(self) -> int:
        return (self.m // self.wm) * (self.n // self.wn)

    @property
    def threads(self) -> int:
        return 32 * self.warps

    def k_step(self, dtype: str) -> int:
        """K per mainloop step: :data:`K_STEP_BYTES` of the dtype."""
        return max(1, int(K_STEP_BYTES / PRECISION_BYTES[dtype]))

    def smem_bytes(self, dtype: str) -> float:
        """Shared memory one CTA holds: A and B tiles, :data:`STAGES` deep."""
        return STAGES * (self.m + self.n) * self.k_step(dtype) * PRECISION_BYTES[dtype]


#: Candidate tiles, largest first: CUTLASS's sm80 tensor-op threadblock/warp shapes
#: (``default_gemm_configuration`` and the profiler's tile list: 256x128 and 128x256 with
#: 64x64 warps, 128x128 / 128x64 / 64x128 / 64x64 with 4 warps, 64x32 with 2).
CTA_TILES: tuple[CtaTile, ...] = (
    CtaTile(256, 128, 64, 64),
    CtaTile(128, 256, 64, 64),
    CtaTile(128, 128, 64, 64),
    CtaTile(128, 64, 64, 32),
    CtaTile(64, 128, 32, 64),
    CtaTile(64, 64, 32, 32),
    CtaTile(64, 32, 32, 32),
)


def gemm_of(op: Op) -> Gemm | None:
    """The implicit GEMM a conv/matmul runs as on the tensor cores
    (:func:`cost_models.base.gemm_of`), or None for what runs on the vector cores instead:
    other ops, and depthwise or narrow grouped convs (under 8 output channels per group, no
    GEMM worth a tensor core).

    >>> from graph_ir.ir import Tensor
    >>> x = Tensor("x", (1, 16, 32, 32), "float32")
    >>> w = Tensor("w", (16, 1, 3, 3), "float32", is_weight=True)
    >>> gemm_of(Op("dw", "Conv", "conv", (x, w), (x,), {"group": 16})) is None
    True
    """
    if op.category == "conv" and op.weights and op.op_type != "ConvTranspose":
        w = op.weights[0].shape
        group = conv_group(op)
        if group > 1 and len(w) >= 2 and w[0] // group < 8:
            return None
    return base_gemm_of(op)


def padded_macs(gemm: Gemm, tile: CtaTile, k_step: int) -> int:
    """MACs the tiles really do: M, N and K rounded up to whole tiles and K steps.

    >>> padded_macs(Gemm(1, 100, 16, 27), CtaTile(64, 64, 32, 32), 32)
    262144
    """
    m = math.ceil(gemm.m / tile.m) * tile.m
    n = math.ceil(gemm.n / tile.n) * tile.n
    k = math.ceil(gemm.k / k_step) * k_step
    return gemm.batch * m * n * k


def ctas_per_cu(unit: GpuUnit, tile: CtaTile, dtype: str) -> int:
    """CTAs of ``tile`` resident on one CU: limited by shared memory, threads and the CTA cap
    (0: the tile does not fit at all).

    >>> u = GpuUnit(name="g", domain="d", clock_mhz=1000, compute_units=8,
    ...             flops_per_cycle={"fp16": 2048}, threads_per_cu=1536, shared_mem_kib=164)
    >>> ctas_per_cu(u, CtaTile(128, 128, 64, 64), "fp16")  # 32 KiB each: 5 by shared memory
    5
    """
    by_smem = int(unit.shared_mem_kib * 1024 // tile.smem_bytes(dtype))
    by_threads = unit.threads_per_cu // tile.threads
    return max(0, min(unit.max_ctas_per_cu, by_smem, by_threads))


def gemm_cycles(
    gemm: Gemm, tile: CtaTile, unit: GpuUnit, dtype: Dtype, eff: float, resident: int
) -> tuple[float, int]:
    """``(cycles, waves)`` of the GEMM's CTAs on the GPU with ``resident`` CTAs per CU.

    The busiest CU runs ``ceil(CTAs / CUs)`` CTAs in rounds of ``resident``; a round of ``q``
    CTAs runs at ``rate * min(1, q * warps / WARPS_TO_SATURATE)``, where ``rate`` is the CU's
    GEMM rate times ``eff``, capped by what shared memory can feed the warp tiles.

    >>> u = GpuUnit(name="g", domain="d", clock_mhz=1000, compute_units=2,
    ...             flops_per_cycle={"fp16": 1024}, threads_per_cu=1024)
    >>> t = CtaTile(64, 64, 32, 32)
    >>> gemm_cycles(Gemm(1, 128, 64, 32), t, u, "fp16", 1.0, 1)  # 2 CTAs, one per CU, 4 warps
    (512.0, 1)
    >>> gemm_cycles(Gemm(1, 192, 64, 32), t, u, "fp16", 1.0, 1)  # a third: a full extra wave
    (1024.0, 2)
    """
    k_step = tile.k_step(dtype)
    ctas = gemm.batch * math.ceil(gemm.m / tile.m) * math.ceil(gemm.n / tile.n)
    cta_flops = 2.0 * tile.m * tile.n * math.ceil(gemm.k / k_step) * k_step
    nbytes = PRECISION_BYTES[dtype]
    feed = unit.shared_mem_bytes_per_cycle * 2 * tile.wm * tile.wn / ((tile.wm + tile.wn) * nbytes)
    rate = min(unit.flops_per_cycle[dtype] * eff, feed)
    resident = max(1, resident)
    per_cu = math.ceil(ctas / unit.compute_units)
    full, rest = divmod(per_cu, resident)

    def round_cycles(q: int) -> float:
        return q * cta_flops / (rate * min(1.0, q * tile.warps / WARPS_TO_SATURATE))

    cycles = full * round_cycles(resident) + (round_cycles(rest) if rest else 0.0)
    return cycles, full + (1 if rest else 0)


@dataclass(frozen=True, slots=True)
class GemmPlan:
    """How one GEMM-like op runs: its tile, occupancy, waves, time and traffic."""

    tile: CtaTile
    resident: int
    waves: int
    ctas: int
    compute_ns: float
    l2_bytes: int
    padded_macs: int


def plan_gemm(
    gemm: Gemm,
    unit: GpuUnit,
    dtype: Dtype,
    eff: float,
    out_bytes: int,
    dram_ns: float,
    l2_gbps: float,
) -> GemmPlan:
    """Cost every tile of :data:`CTA_TILES` and keep the fastest; among equally fast
    (memory-bound) tiles the one with the least compute, then the larger.

    A tile's time is ``max(compute, dram_ns + L2 operand traffic / l2_gbps)``; tiles that do
    not fit the CU's shared memory are skipped, and if none fits the smallest runs one CTA per
    CU. ``l2_gbps`` 0 leaves the L2 term out.
    """
    nbytes = PRECISION_BYTES[dtype]
    candidates = [(t, ctas_per_cu(unit, t, dtype)) for t in CTA_TILES]
    fitting = [(t, r) for t, r in candidates if r > 0] or [(CTA_TILES[-1], 1)]
    best: tuple[float, float, GemmPlan] | None = None
    for tile, resident in fitting:
        cycles, waves = gemm_cycles(gemm, tile, unit, dtype, eff, resident)
        compute_ns = cycles / (unit.clock_mhz * 1e-3)
        k_pad = math.ceil(gemm.k / tile.k_step(dtype)) * tile.k_step(dtype)
        ctas = gemm.batch * math.ceil(gemm.m / tile.m) * math.ceil(gemm.n / tile.n)
        l2_bytes = int(ctas * (tile.m + tile.n) * k_pad * nbytes) + out_bytes
        l2_ns = l2_bytes / l2_gbps if l2_gbps > 0 else 0.0
        time = max(compute_ns, dram_ns + l2_ns)
        plan = GemmPlan(
            tile, resident, waves, ctas, compute_ns, l2_bytes, padded_macs(gemm, tile, k_pad)
        )
        if best is None or (time, compute_ns) < best[:2]:
            best = (time, compute_ns, plan)
    assert best is not None
    return best[2]


def wave_utilization(threads: int, compute_units: int, threads_per_cu: int) -> float:
    """Fraction of thread slots busy over all waves, in (0, 1].

    >>> wave_utilization(4096, 4, 1024)
    1.0
    >>> wave_utilization(5000, 4, 1024)
    0.6103515625
    """
    slots = compute_units * threads_per_cu
    waves = max(1, math.ceil(threads / slots))
    return max(threads, 1) / (waves * slots)


class GpuModel(UnitModel[GpuUnit]):
    """Convs and matmuls as implicit GEMMs on the tensor cores (:meth:`gemm`), Concat/Split
    elided (:meth:`elided`), everything else a wave-quantized roofline on the vector cores."""

    unit_class = GpuUnit
    #: Epilogue fusion as cuDNN/TensorRT do it, and a BatchNormalization after a conv folded into
    #: its weights: TensorRT's ONNX parser imports it as a Scale layer, and "Convolution and
    #: Scale" is one of its fusions (TensorRT Developer Guide, "Types of Fusions").
    default_fuses = frozenset((*ACTIVATIONS, "Add", "Mul", "BatchNormalization"))
    default_efficiency = DEFAULT_EFFICIENCY

    def elided(self, op: Op, unit: GpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """Producers and readers address slices of one buffer: no kernel at all."""
        return layout_cost(unit, dtype)

    def gemm(self, op: Op, unit: GpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """The implicit GEMM's best CTA tile (:func:`plan_gemm`); a conv with no GEMM worth a
        tensor core (:func:`gemm_of`) runs the roofline instead."""
        gemm = gemm_of(op)
        if gemm is None:
            return self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY)
        extra, tiles = spill_plan(in_b, w_b, out_b, unit.l2_kib * 1024, STREAM_CHUNK_BYTES)
        spill = f", {tiles} L2 tiles" if tiles > 1 else ""
        l2_gbps = (unit.l2_bytes_per_cycle or 0.0) * unit.clock_mhz * 1e-3
        dram_ns = (in_b + w_b + extra + out_b) / unit_bandwidth_gbps(unit, chip)
        plan = plan_gemm(gemm, unit, dtype, eff, out_b, dram_ns, l2_gbps)
        t = plan.tile
        note = (
            f"{dtype}, CTA {t.m}x{t.n}x{t.k_step(dtype)}, {plan.ctas} CTAs, {plan.resident}/CU, "
            f"{plan.waves} waves, {gemm.batch * gemm.m * gemm.n * gemm.k / plan.padded_macs:.0%} "
            f"of padded MACs useful{spill}"
        )
        return finish(op, unit, chip, dtype, plan.compute_ns, plan.l2_bytes if l2_gbps else 0, l2_gbps,
                      in_b + w_b + extra, out_b, note, tiles)  # fmt: skip

    def roofline(
        self, op: Op, unit: GpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        """One thread per output element in waves of ``threads_per_cu`` per CU, at the vector
        cores' rate (the matrix rate for :data:`MATRIX_RATE_CATEGORIES`)."""
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY)
        extra, tiles = spill_plan(in_b, w_b, out_b, unit.l2_kib * 1024, STREAM_CHUNK_BYTES)
        spill = f", {tiles} L2 tiles" if tiles > 1 else ""
        threads = sum(t.elements for t in op.outputs)
        util = wave_utilization(threads, unit.compute_units, unit.threads_per_cu)
        per_cu = (
            unit.flops_per_cycle[dtype]
            if op.category in MATRIX_RATE_CATEGORIES
            else unit.vector_flops_per_cycle.get(dtype, unit.flops_per_cycle[dtype])
        )
        peak = unit.compute_units * per_cu * unit.clock_mhz * 1e-3  # FLOP/ns
        compute_ns = op.flops / (peak * eff * util) if op.flops else 0.0
        note = f"{dtype}, waves {util:.0%} full{spill}"
        return finish(
            op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles
        )

    handlers = op_handlers((GEMM_OP_TYPES, gemm), (ELIDED_OPS, elided))


register_model(GpuModel())
