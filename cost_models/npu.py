"""NPU cost model: convolutions and matrix products on a systolic MAC array of ``rows x cols``.

A conv or matmul is lowered to a GEMM ``(M x K) . (K x N)`` (M output pixels or tokens, N
output channels, K the reduction ``C_in x kernel window``) and mapped onto the array by the
unit's dataflow, the way SCALE-Sim v3 counts it (:func:`array_cycles`): two GEMM dimensions are
folded onto the array's rows and columns, the third streams through; every fold pays the fill,
the skew and the drain of the array, and a dimension that does not fill the array leaves PEs
idle (tile quantization). A unit with a ``channel_atom`` reduces over input channels in atoms of
that many per kernel position, so K is padded per kernel position (:func:`atom_padded`; RK3588:
32). Other ops run on the per-core vector unit.

Operands stream through the core's SRAM in tiles no larger than half the buffer, so the next
tile can load while the current one computes (double buffering, :func:`sram_plan`; the engine
runs the tiles, see :attr:`~cost_models.base.OpCost.tiles`). When even one array fold cannot be
held twice, loads and compute serialise. A working set larger than the SRAM is re-read from
DRAM (:func:`~cost_models.base.tiling_extra_bytes`).

Three per-op knobs (:class:`~cost_models.base.KernelKnobs`, offered by
:meth:`NpuModel.knob_choices`) change how an op runs; each is a trade-off, not a free gain:

- ``dataflow``: the op's own ``ws``/``os``/``is`` instead of the unit's (:func:`array_folds`);
  assumption: the array switches dataflow per layer at no cost (SCALE-Sim treats each layer alone).
- ``layout="im2col"``: a conv's whole im2col reduction ``C_in x kh x kw`` (per group) is packed
  into channel atoms once (:func:`im2col_padded`) instead of per kernel position, so a thin
  stem conv wastes few MACs; in exchange the array reads the im2col matrix itself,
  ``M x C_in x kh x kw`` elements, gathered from DRAM (assumption: the DMA gathers each row from
  the input in DRAM with no on-chip reuse across kernel positions, so the input is read about
  ``kh x kw / stride^2`` times).
- ``tile="single"``: the whole SRAM per tile (:func:`sram_plan` with ``single=True``): fewer
  re-reads of a working set larger than the SRAM, but loads and compute take turns (the
  single-buffered path: the shorter of the two adds to the longer).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import cast

from chips.schema import Chip, Dtype, NpuUnit, Unit
from cost_models.base import (
    ACTIVATIONS,
    DEFAULT_KNOBS,
    Gemm,
    KernelKnobs,
    OpCost,
    UnitModel,
    conv_group,
    efficiency,
    finish,
    gemm_of,
    op_bytes,
    op_handlers,
    pipeline_tiles,
    register_model,
    tiling_extra_bytes,
    unit_dtype,
)
from cost_models.energy import energy_pj
from graph_ir.categories import Category
from graph_ir.gemm import GEMM_OP_TYPES
from graph_ir.ir import PRECISION_BYTES, Op

__all__ = [
    "DATAFLOWS", "NpuModel", "SramPlan", "array_cycles", "array_folds", "atom_padded", "gemm_of", "im2col_padded",
    "sram_plan",
]  # fmt: skip

#: Fraction of the vector unit's peak per category. Ops on the MAC array are set by its
#: geometry instead; conv and matmul here are those that do not lower to a GEMM.
DEFAULT_EFFICIENCY: Mapping[Category, float] = {
    "elementwise": 0.8, "activation": 0.8, "pool": 0.7, "reduce": 0.5, "norm": 0.4,
    "softmax": 0.4, "signal": 0.2, "data": 1.0, "unknown": 1.0, "rnn": 0.3, "conv": 0.5,
    "matmul": 0.5,
}  # fmt: skip

#: Dataflows of a systolic array: weight-, output- and input-stationary.
DATAFLOWS = ("ws", "os", "is")
#: How a conv's reduction is packed: channel atoms per kernel position, or the whole im2col K.
LAYOUTS = ("atom", "im2col")
#: SRAM buffering: double (half the SRAM per tile, loads overlap compute) or single.
TILES = ("double", "single")


def atom_padded(op: Op, gemm: tuple[int, int, int, int], atom: int | None) -> Gemm:
    """``gemm`` with its reduction padded to whole input-channel atoms per kernel position.

    An array that reduces over ``atom`` input channels at a time (RK3588: 32, from the RKNPU2
    matmul API's K alignment) spends a whole atom on a 3- or 16-channel input at every kernel
    position: K becomes ``ceil(C_in / atom) x atom x kh x kw`` (per group) instead of the
    im2col ``C_in x kh x kw``. A matmul pads K the same way (kernel 1x1). A depthwise conv
    reduces over the kernel window of one channel, its channels already on the columns: not
    padded. ``atom=None`` returns ``gemm`` unchanged (plain im2col, SCALE-Sim's mapping).

    >>> from graph_ir.ir import Tensor
    >>> x = Tensor("x", (1, 3, 64, 64), "float32")
    >>> w = Tensor("w", (16, 3, 3, 3), "float32", is_weight=True)
    >>> y = Tensor("y", (1, 16, 64, 64), "float32")
    >>> stem = Op("c", "Conv", "conv", (x, w), (y,), {"pads": [1, 1, 1, 1]})
    >>> tuple(gemm_of(stem)), tuple(atom_padded(stem, gemm_of(stem), 32))
    ((1, 4096, 16, 27), (1, 4096, 16, 288))
    """
    gemm = Gemm(*gemm)
    if atom is None:
        return gemm
    if op.category == "matmul" or op.op_type == "ConvTranspose":  # K: the channels alone
        return gemm._replace(k=math.ceil(gemm.k / atom) * atom)
    if op.category != "conv" or not op.weights:
        return gemm
    w = op.weights[0].shape
    if conv_group(op) > 1 and w[1] == 1:  # depthwise
        return gemm
    return gemm._replace(k=math.ceil(w[1] / atom) * atom * math.prod(w[2:]))


def _im2col_packable(op: Op) -> bool:
    """A conv (not transposed, not depthwise) with a kernel window larger than one position."""
    if op.category != "conv" or op.op_type == "ConvTranspose" or not op.weights:
        return False
    w = op.weights[0].shape
    return len(w) > 2 and math.prod(w[2:]) > 1 and not (conv_group(op) > 1 and w[1] == 1)


def im2col_padded(op: Op, gemm: tuple[int, int, int, int], atom: int | None) -> Gemm:
    """``gemm`` with its whole im2col reduction ``C_in x kh x kw`` (per group) padded to atoms once.

    The ``layout="im2col"`` alternative to :func:`atom_padded`: the input is re-laid as the
    im2col matrix, so the array's atoms run along the whole reduction, not per kernel position.
    Ops it does not apply to (matmuls, 1x1 and depthwise convs) keep :func:`atom_padded`'s K.

    >>> from graph_ir.ir import Tensor
    >>> x = Tensor("x", (1, 3, 64, 64), "float32")
    >>> w = Tensor("w", (16, 3, 3, 3), "float32", is_weight=True)
    >>> y = Tensor("y", (1, 16, 64, 64), "float32")
    >>> stem = Op("c", "Conv", "conv", (x, w), (y,), {"pads": [1, 1, 1, 1]})
    >>> tuple(im2col_padded(stem, gemm_of(stem), 32))  # 27 -> 32, not 9 x 32 = 288
    (1, 4096, 16, 32)
    """
    gemm = Gemm(*gemm)
    if atom is None or not _im2col_packable(op):
        return atom_padded(op, gemm, atom)
    return gemm._replace(k=math.ceil(gemm.k / atom) * atom)


def array_folds(gemm: tuple[int, int, int, int], rows: int, cols: int, dataflow: str = "ws") -> tuple[int, int]:
    """How a GEMM maps onto the array: ``(folds, cycles_per_fold)`` per batch element.

    ``ws`` keeps a ``rows x cols`` tile of weights (K x N) in the PEs and streams the M rows of
    input through; ``os`` keeps an M x N tile of outputs and streams K; ``is`` keeps a K x M tile
    of inputs and streams N. A fold of ``ws`` or ``is`` first loads its stationary tile (``rows``
    cycles), then streams, then pays the skew across the rows and the drain across the columns
    (``rows - 1 + cols - 1``); ``os`` has no load phase: its operands skew in while they stream.

    >>> array_folds((1, 100, 64, 64), 32, 32, "ws")  # 2 x 2 weight tiles, 100 rows streamed
    (4, 194)
    >>> array_folds((1, 100, 64, 64), 32, 32, "os")  # 4 x 2 output tiles, K = 64 streamed
    (8, 126)
    """
    _, m, n, k = gemm
    if dataflow == "ws":
        return math.ceil(k / rows) * math.ceil(n / cols), m + 2 * rows + cols - 2
    if dataflow == "os":
        return math.ceil(m / rows) * math.ceil(n / cols), k + rows + cols - 2
    if dataflow == "is":
        return math.ceil(k / rows) * math.ceil(m / cols), n + 2 * rows + cols - 2
    raise ValueError(f"unknown dataflow {dataflow!r}; expected one of {DATAFLOWS}")


def array_cycles(gemm: tuple[int, int, int, int], rows: int, cols: int, dataflow: str = "ws") -> int:
    """Stall-free cycles of a ``(batch, M, N, K)`` GEMM on a ``rows x cols`` systolic array.

    Folds run back to back (``batch x folds x cycles_per_fold`` from :func:`array_folds`);
    the last cycle is the one the final output leaves the array, counted from 0 as SCALE-Sim
    v3 does (its ``Total Cycles - Stall Cycles``), which this matches exactly on the
    reference layers in ``tests/data/scalesim/``.

    >>> array_cycles((1, 256, 256, 256), 16, 16, "os")  # SCALE-Sim v3: 73215
    73215
    >>> array_cycles((1, 256, 256, 256), 16, 16, "ws")  # SCALE-Sim v3: 77311
    77311
    >>> array_cycles((1, 100, 33, 32), 32, 32)  # one extra column: a second fold
    387
    """
    batch, m, n, k = gemm
    if min(batch, m, n, k) <= 0:
        return 0
    folds, per_fold = array_folds(gemm, rows, cols, dataflow)
    return batch * folds * per_fold - 1


@dataclass(frozen=True, slots=True)
class SramPlan:
    """How an op's operands move between DRAM and one core's SRAM.

    Attributes
    ----------
    tiles : int
        Tiles the op is pipelined in (1: the whole working set fits in half the SRAM). A working
        set that does not fit is streamed one array fold's operands at a time (the smallest
        piece the core can start on), the next fold loading while the current one computes.
    double_buffered : bool
        Whether two of the smallest tiles the core can work on (one array fold's operands)
        fit the buffer; if not, loads and compute take turns.
    dram_read_bytes, dram_write_bytes : int
        DRAM traffic, re-reads of a working set larger than the SRAM included.
    """

    tiles: int
    double_buffered: bool
    dram_read_bytes: int
    dram_write_bytes: int


def sram_plan(in_bytes: int, weight_bytes: int, out_bytes: int, capacity_bytes: float,
              min_tile_bytes: float, single: bool = False) -> SramPlan:
    """Tile an op's operands (bytes of inputs, weights, outputs) through ``capacity_bytes`` of SRAM.

    ``min_tile_bytes`` is the smallest piece of work the core can start on (one array fold:
    its stationary ``rows x cols`` tile and an array-wide slice of each streamed operand).
    ``single``: single buffering, every tile the whole buffer (fewer, larger tiles, fewer
    re-reads), loaded, computed and stored in turn (``double_buffered`` False).

    >>> sram_plan(1000, 1000, 1000, 64 * 1024, 3 * 1024)  # fits in half the buffer
    SramPlan(tiles=1, double_buffered=True, dram_read_bytes=2000, dram_write_bytes=1000)
    >>> sram_plan(300_000, 60_000, 300_000, 384 * 1024, 3 * 1024)  # streamed fold by fold
    SramPlan(tiles=215, double_buffered=True, dram_read_bytes=360000, dram_write_bytes=300000)
    >>> sram_plan(1000, 1000, 1000, 1500, 1000).double_buffered  # a fold fits only once
    False
    >>> sram_plan(600_000, 600_000, 100_000, 384 * 1024, 3 * 1024).dram_read_bytes  # inputs read 4 times
    3000000
    >>> sram_plan(600_000, 600_000, 100_000, 384 * 1024, 3 * 1024, single=True)  # twice
    SramPlan(tiles=4, double_buffered=False, dram_read_bytes=1800000, dram_write_bytes=100000)
    """
    buffers = 1 if single else 2
    extra, reread_tiles = tiling_extra_bytes(in_bytes, weight_bytes, out_bytes, capacity_bytes, buffers)
    total = in_bytes + weight_bytes + out_bytes
    half = capacity_bytes / buffers
    needed = max(reread_tiles, math.ceil(total / half) if half > 0 and total > 0 else 1)
    if single:
        return SramPlan(needed, False, in_bytes + weight_bytes + extra, out_bytes)
    # Pipelined fold by fold: a bigger SRAM saves re-reads but never coarsens the pipeline.
    tiles = pipeline_tiles(total + extra, min_tile_bytes, needed)
    return SramPlan(tiles, 2 * min_tile_bytes <= capacity_bytes, in_bytes + weight_bytes + extra, out_bytes)


class NpuModel(UnitModel[NpuUnit]):
    """Systolic MAC array for conv/matmul, vector unit for the rest, SRAM-tiled operands.

    A tiled op reports its tile count (:attr:`OpCost.tiles`); the engine overlaps tile
    ``i + 1``'s load with tile ``i``'s compute. When the SRAM cannot hold one array fold twice
    there is no such overlap and the shorter of compute and memory time is added as overhead.
    """

    unit_class = NpuUnit
    #: RKNN-class compilers emit Conv+activation, Conv+Add(+activation) and Conv+Sigmoid+Mul
    #: (SiLU) as one layer (assumption from rknn-toolkit2's fused-layer listings), and fold a
    #: BatchNormalization after a conv into its weights when they convert the model (RKNN's
    #: converter does: ``chips/rk3588.yaml``).
    default_fuses = frozenset((*ACTIVATIONS, "Add", "Mul", "BatchNormalization"))
    default_efficiency = DEFAULT_EFFICIENCY
    #: The array's accumulators drain into the SRAM tile the epilogue reads (assumption).
    accumulates_in_buffer = True

    def gemm(self, op: Op, unit: NpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int,
             knobs: KernelKnobs = DEFAULT_KNOBS) -> OpCost:
        """A conv or matmul on the MAC array (:func:`array_cycles`); one that does not lower
        to a GEMM (a conv with computed weights) runs on the vector unit (:meth:`roofline`).
        ``knobs``: the dataflow, layout and buffering (see the module docstring)."""
        gemm = gemm_of(op)
        if gemm is None:
            return self.roofline(op, unit, chip, dtype, in_b, w_b, out_b, knobs)
        rows, cols = unit.mac_rows, unit.mac_cols
        dataflow = knobs.dataflow or unit.dataflow
        if knobs.layout == "im2col" and _im2col_packable(op):
            in_b = max(in_b, math.ceil(gemm[0] * gemm[1] * gemm[3] * PRECISION_BYTES[dtype]))  # im2col B x M x K
            gemm = im2col_padded(op, gemm, unit.channel_atom)
        else:
            gemm = atom_padded(op, gemm, unit.channel_atom)
        cycles = array_cycles(gemm, rows, cols, dataflow)
        rate = unit.macs_per_pe_per_cycle[dtype] * unit.efficiency.get(op.op_type, 1.0)
        compute_ns = cycles / rate / (unit.clock_mhz * 1e-3)
        util = op.macs / (cycles * rows * cols) if cycles > 0 else 0.0
        min_tile = 3 * rows * cols * PRECISION_BYTES[dtype]
        note = f"{dtype}, {dataflow} array {util:.0%} busy (B,M,N,K={tuple(gemm)})"
        if knobs.layout == "im2col":
            note += ", im2col layout"
        return _sram_tiled(op, unit, chip, dtype, (in_b, w_b, out_b), compute_ns, min_tile, note, knobs.tile)

    def roofline(
        self, op: Op, unit: NpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int,
        knobs: KernelKnobs = DEFAULT_KNOBS,
    ) -> OpCost:
        """The per-core vector unit; recurrent cells run their MACs on the array's PEs."""
        clock_ghz = unit.clock_mhz * 1e-3
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY)
        work = op.flops if op.category != "rnn" else op.macs * 2
        lanes = unit.vector_ops_per_cycle if op.category != "rnn" else unit.mac_rows * unit.mac_cols
        compute_ns = work / (lanes * clock_ghz * eff) if work else 0.0
        min_tile = 3 * lanes * PRECISION_BYTES[dtype]
        note = f"{dtype}, vector unit"
        return _sram_tiled(op, unit, chip, dtype, (in_b, w_b, out_b), compute_ns, min_tile, note, knobs.tile)

    handlers = op_handlers((GEMM_OP_TYPES, gemm))

    def knob_choices(self, op: Op, unit: Unit, chip: Chip, precision: str) -> Mapping[str, tuple[str, ...]]:
        """What an op offers here, the unit's default first: ``dataflow`` for an op on the array,
        ``layout`` for a conv with a kernel window larger than 1x1 on a unit with a
        ``channel_atom`` (where packing the whole im2col K saves padded MACs), ``tile`` for an op
        whose operands do not fit half the SRAM (where single buffering can save re-reads)."""
        assert isinstance(unit, NpuUnit)
        dtype = unit_dtype(op, unit, precision)
        if dtype is None or op.category == "layout":
            return {}
        out: dict[str, tuple[str, ...]] = {}
        gemm = gemm_of(op) if op.op_type in GEMM_OP_TYPES else None
        if gemm is not None:
            out["dataflow"] = (unit.dataflow, *(d for d in DATAFLOWS if d != unit.dataflow))
            if im2col_padded(op, gemm, unit.channel_atom).k < atom_padded(op, gemm, unit.channel_atom).k:
                out["layout"] = LAYOUTS
        if sum(op_bytes(op, dtype)) > unit.sram_kib * 1024 / 2:
            out["tile"] = TILES
        return out

    def mapped_cost(self, op: Op, unit: NpuUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int,
                    knobs: KernelKnobs) -> OpCost:
        """The op's handler (or the roofline) told ``knobs``."""
        handler = cast(_KnobHandler, self.handlers.get(op.op_type, NpuModel.roofline))
        return handler(self, op, unit, chip, dtype, in_b, w_b, out_b, knobs)


#: An NPU handler with its knobs (every handler of :class:`NpuModel` takes them, defaulted).
_KnobHandler = Callable[[NpuModel, Op, NpuUnit, Chip, Dtype, int, int, int, KernelKnobs], OpCost]


def _sram_tiled(op: Op, unit: NpuUnit, chip: Chip, dtype: Dtype, nbytes: tuple[int, int, int],
                compute_ns: float, min_tile: float, note: str, tile: str | None = None) -> OpCost:
    """The cost of ``compute_ns`` of work whose operands (``nbytes``: inputs, weights, outputs)
    stream through the core's SRAM in tiles of at least ``min_tile`` bytes (:func:`sram_plan`;
    ``tile="single"``: single-buffered whole-SRAM tiles)."""
    in_b, w_b, out_b = nbytes
    plan = sram_plan(in_b, w_b, out_b, unit.sram_kib * 1024, min_tile, single=tile == "single")
    extra = plan.dram_read_bytes - in_b - w_b
    if plan.tiles > 1:
        note += f", {plan.tiles} SRAM tiles" + (f" (+{extra} B re-read)" if extra else "")
    tiles = plan.tiles if plan.double_buffered else 1
    cost = finish(op, unit, chip, dtype, compute_ns, 0, 0.0, plan.dram_read_bytes, plan.dram_write_bytes,
                  note, tiles)  # fmt: skip
    if plan.double_buffered:
        return cost
    # loads and compute take turns: the shorter of the two adds to the longer
    serial_ns = min(cost.compute_ns, cost.memory_ns)
    return replace(
        cost,
        overhead_ns=cost.overhead_ns + serial_ns,
        energy_pj=cost.energy_pj + energy_pj(unit.active_w, serial_ns),
        note=cost.note + ", single-buffered",
    )


register_model(NpuModel())
