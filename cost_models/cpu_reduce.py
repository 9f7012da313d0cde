"""How onnxruntime's CPU reductions walk their input: a fixed time per row or per block beside
the time per element.

onnxruntime 1.32 first merges adjacent axes that are all reduced or all kept
(``OptimizeShapeForFastReduce`` in ``reduction_ops.cc``; axes of one element are not dropped) and
takes a fast path by the merged shape:

- **KR** (kept rows, each reduced over its contiguous run: ``axes=[-1]``): one aggregation per
  row, each paying its set-up (ReduceSum, ReduceMean, ReduceMax, ReduceMin);
- **KRK** (a middle run reduced, ``d0 >= 2`` blocks): ReduceSum and ReduceMean call a ``1 x d1``
  by ``d1 x d2`` matrix product of ones per block (a GEMM call each); ReduceMax and ReduceMin
  take Eigen's vectorized row-wise maximum, with no call to speak of;
- **RK** (the leading run reduced, more than 16 rows and a side over 256): rows added as vectors;
- anything else takes the generic loop.

Measured alone (AMD EPYC, 1 thread, 256 Ki floats, the fastest of three rounds, 2026-12-05):

=================  ===========  ================  ==================
ReduceSum, shape   axes         us                per output
=================  ===========  ================  ==================
(131072, 2)        -1 (KR)      258               1.97 ns
(32768, 8)         -1 (KR)      80.1              2.44 ns
(1024, 256)        -1 (KR)      25.2              24.7 ns
(2048, 2, 64)      1 (KRK)      266               2.03 ns (130 ns a block)
(204, 20, 64)      1 (KRK)      45.3              3.47 ns (222 ns a block)
(64, 4096)         0 (RK)       31.2              7.6 ns
=================  ===========  ================  ==================

So a reduction costs its elements at a rate (0.08-0.1 ns here, an efficiency like any op type's)
plus ``reduce_row_ns`` per row on the KR path (about 1.8 ns) and ``reduce_block_ns`` per block on
ReduceSum's and ReduceMean's KRK path (about 120 ns), both measured by ``hwsim fingerprint``
(:func:`reduce_passes_ns`), with ``reduce_column_row_ns`` per row of a block narrower than a vector
and, off the fast paths, ``reduce_generic_ns`` per element (the generic loop: 0.6-0.9 ns an element
measured, :func:`generic_reduce`). On more threads the pool splits a reduction by its input's size
(:func:`reduce_threads`), not its output's. ReduceMean and ReduceMax ran within 10 % of ReduceSum on the KR
path; ReduceMax over (2048, 2, 64) took 41 us on its KRK path, a sixth of ReduceSum's. A DLRM
embedding bag sums 20 rows of 64 per sample: (64, 20, 64) over axis 1, 64 blocks.
"""

from __future__ import annotations

from chips.schema import CpuUnit
from graph_ir.ir import Op
from graph_ir.op_metrics import INPUT_AXES_ATTR

__all__ = ["REDUCE_BLOCK_OP_TYPES", "REDUCE_NARROW_COLUMNS", "REDUCE_ROW_OP_TYPES", "RK_FAST_OP_TYPES", "RK_MIN_ROWS", "RK_MIN_SIDE", "fast_reduce", "generic_reduce", "reduce_passes_ns", "reduce_threads", "reduced_axes"]

#: What onnxruntime tells its thread pool a reduction costs per byte of input
#: (``ParallelReduceFastCost``: the bytes loaded, and 6 compute cycles a byte) and the pool's Eigen
#: cost model's thresholds (``TensorCostModel``: a load at 11/64 cycle a byte, 100,000 cycles to
#: start and 100,000 more per thread): a reduction of ``E`` floats runs on
#: ``(24.7 E - 100,000) / 100,000 + 0.9`` threads, two from about 8,500 floats (:func:`reduce_threads`).
REDUCE_CYCLES_PER_BYTE = 11 / 64 + 6
REDUCE_STARTUP_CYCLES = 100_000
REDUCE_CYCLES_PER_THREAD = 100_000
#: Reductions whose KR path aggregates each row on its own (a set-up per row).
REDUCE_ROW_OP_TYPES = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
#: Reductions whose KRK path calls a matrix product per block.
REDUCE_BLOCK_OP_TYPES = frozenset({"ReduceSum", "ReduceMean"})
#: Blocks narrower than this many floats (one AVX-512 vector) walk their rows one at a time on the KRK
#: path: ``reduce_column_row_ns`` each. Measured (AMD EPYC, 2026-12-07, 1 thread): blocks of 16 rows of
#: 1 / 4 / 16 / 64 floats took 162-170 / 176 / 137 / 130-140 ns, 2.2 / 2.9 / 0.4 / 0.1 ns a row beyond
#: the per-block set-up; 64 and 256 rows of one float 269 and 679 ns.
REDUCE_NARROW_COLUMNS = 16


def reduced_axes(op: Op) -> tuple[int, ...] | None:
    """The axes ``op`` reduces, non-negative and sorted: its ``axes`` attribute, else those its
    constant input gave (:data:`graph_ir.op_metrics.INPUT_AXES_ATTR`), else every axis (none given);
    None for an input of unknown rank, an axis out of range, or axes known only at run time.

    >>> from graph_ir.ir import Tensor
    >>> x, ax = Tensor("x", (64, 20, 64), "float32"), Tensor("a", (1,), "int64", True)
    >>> reduced_axes(Op("r", "ReduceSum", "reduce", (x, ax), (x,), {INPUT_AXES_ATTR: (-2,)}))
    (1,)
    >>> reduced_axes(Op("r", "ReduceMean", "reduce", (x,), (x,), {"axes": (0, 2)})), reduced_axes(Op("r", "ReduceSum", "reduce", (x, ax), (x,)))
    ((0, 2), None)
    """
    if not op.inputs or not op.inputs[0].shape:
        return None
    rank = len(op.inputs[0].shape)
    given = op.attrs.get("axes", op.attrs.get(INPUT_AXES_ATTR))
    if given is None:
        if len(op.inputs) > 1 and op.inputs[1].elements:  # axes computed at run time
            return None
        return tuple(range(rank))
    if not isinstance(given, (tuple, list)) or not all(isinstance(a, int) and -rank <= a < rank for a in given):
        return None
    return tuple(sorted({a % rank for a in given}))


def fast_reduce(op: Op) -> tuple[str, tuple[int, ...]] | None:
    """onnxruntime's merged shape of ``op``'s reduction and its kind (``"KR"``, ``"RK"``, ``"KRK"``,
    ``"RKR"``, ``"R"``, ``"K"`` or ``""`` for more runs than three); None where the axes are not known
    (:func:`reduced_axes`) or the input is empty.

    >>> from graph_ir.ir import Tensor
    >>> def red(shape, axes):
    ...     x = Tensor("x", shape, "float32")
    ...     return fast_reduce(Op("r", "ReduceSum", "reduce", (x,), (x,), {"axes": axes}))
    >>> red((64, 20, 64), (1,)), red((8, 16, 32), (1, 2)), red((1, 20, 64), (1,))
    (('KRK', (64, 20, 64)), ('KR', (8, 512)), ('KRK', (1, 20, 64)))
    >>> red((64, 4096), (0,)), red((2, 3, 4, 5), (0, 2))
    (('RK', (64, 4096)), ('', (2, 3, 4, 5)))
    """
    axes = reduced_axes(op)
    if axes is None or not op.inputs[0].elements:
        return None
    shape = op.inputs[0].shape
    flags = [i in axes for i in range(len(shape))]
    merged, kinds = [shape[0]], [flags[0]]
    for n, reduce in zip(shape[1:], flags[1:]):
        if reduce == kinds[-1]:
            merged[-1] *= n
        else:
            merged.append(n)
            kinds.append(reduce)
    name = "".join("R" if k else "K" for k in kinds) if len(kinds) <= 3 else ""
    return name, tuple(merged)


def reduce_threads(op: Op, threads: int) -> int:
    """How many of ``threads`` onnxruntime's reduction ``op`` runs on: its rows (or blocks) handed to
    the thread pool with :data:`REDUCE_CYCLES_PER_BYTE` per input byte, split as the pool's cost model
    says. Measured (AMD EPYC, 2026-12-07, ReduceSum, 1 and 2 threads): 18,432 floats in blocks of 16 x 1
    1.78x, (2048, 2, 64) 1.86x, (64, 20, 64) 1.28x, (1024, 256) 1.47x, (4096, 8) 1.20x; 1,024 floats
    0.92x (one thread).

    >>> from graph_ir.ir import Tensor
    >>> def red(shape):
    ...     return Op("r", "ReduceSum", "reduce", (Tensor("x", shape, "float32"),), (Tensor("y", shape[:1], "float32"),), {"axes": (1,)})
    >>> reduce_threads(red((64, 16)), 2), reduce_threads(red((1152, 16)), 2), reduce_threads(red((4096, 256)), 8)
    (1, 2, 8)
    """
    if threads <= 1 or not op.inputs:
        return 1
    x = op.inputs[0]
    cycles = x.nbytes * REDUCE_CYCLES_PER_BYTE
    return max(1, min(threads, int((cycles - REDUCE_STARTUP_CYCLES) / REDUCE_CYCLES_PER_THREAD + 0.9)))


#: Fast-path thresholds onnxruntime 1.32 checks (``CommonFastReduceSwitch``, one thread): the RK path
#: takes more than this many reduced rows and a side longer than :data:`RK_MIN_SIDE`; the KRK path two
#: blocks or more.
RK_MIN_ROWS = 16
RK_MIN_SIDE = 256
#: Reductions whose RK path is their fast one: ReduceMax and ReduceMin over the leading axis ran
#: 0.87-1.12 ns an element (AMD EPYC, 2026-12-07: (2048, 256) and (64, 4096)), the generic loop's rate,
#: where ReduceSum and ReduceMean ran 0.10-0.13.
RK_FAST_OP_TYPES = frozenset({"ReduceSum", "ReduceMean"})


def generic_reduce(op: Op) -> bool:
    """Whether onnxruntime runs reduction ``op`` (one of :data:`REDUCE_ROW_OP_TYPES`) on its generic
    loop, not a fast path: a KRK of one block, an RK below :data:`RK_MIN_ROWS` rows or
    :data:`RK_MIN_SIDE` (or of ReduceMax/Min, :data:`RK_FAST_OP_TYPES`), any other merged shape but
    KR. The loop reads every element through an index table, 0.6-0.9 ns an element on an AMD EPYC
    against 0.06-0.13 on the fast paths (``reduce_generic_ns``). CBAM's channel pooling (a ReduceMean
    and a ReduceMax over the channels of a batch-1 map) runs it.

    >>> from graph_ir.ir import Tensor
    >>> def red(op_type, shape, axes):
    ...     x = Tensor("x", shape, "float32")
    ...     return generic_reduce(Op("r", op_type, "reduce", (x,), (x,), {"axes": axes}))
    >>> red("ReduceMean", (1, 64, 56, 56), (1,)), red("ReduceMean", (2, 64, 56, 56), (1,)), red("ReduceSum", (1024, 256), (1,))
    (True, False, False)
    >>> red("ReduceSum", (2048, 512), (0,)), red("ReduceMax", (2048, 512), (0,)), red("ReduceSum", (16, 4096), (0,))
    (False, True, True)
    """
    got = fast_reduce(op) if op.op_type in REDUCE_ROW_OP_TYPES else None
    return got is not None and _on_generic_loop(op.op_type, *got)


def _on_generic_loop(op_type: str, kind: str, merged: tuple[int, ...]) -> bool:
    """:func:`generic_reduce` on the path :func:`fast_reduce` gave."""
    if kind in ("KR", "K"):
        return False
    if kind == "KRK":
        return merged[0] < 2
    if kind == "RK":
        return op_type not in RK_FAST_OP_TYPES or merged[0] <= RK_MIN_ROWS or max(merged) <= RK_MIN_SIDE
    return True


def reduce_passes_ns(op: Op, unit: CpuUnit) -> float:
    """What onnxruntime's reduction ``op`` pays beside its time per element, ns: ``reduce_row_ns``
    per row on the KR path (:data:`REDUCE_ROW_OP_TYPES`), ``reduce_block_ns`` per block on the KRK
    path of :data:`REDUCE_BLOCK_OP_TYPES` (two blocks or more), and ``reduce_column_row_ns`` per row
    of such a block narrower than :data:`REDUCE_NARROW_COLUMNS` (a capsule network's agreement sums
    16 rows of one float per block: 170 ns a block where the set-up alone is 126); on the generic loop
    (:func:`generic_reduce`), ``reduce_generic_ns`` per element instead; 0 on other paths, for other op
    types, or without the unit's figure.

    >>> from graph_ir.ir import Tensor
    >>> unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...                l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, reduce_row_ns=2.0, reduce_block_ns=100.0)
    >>> x, y = Tensor("x", (64, 20, 64), "float32"), Tensor("y", (64, 1, 64), "float32")
    >>> reduce_passes_ns(Op("r", "ReduceSum", "reduce", (x,), (y,), {"axes": (1,)}), unit)
    6400.0
    >>> reduce_passes_ns(Op("r", "ReduceMax", "reduce", (x,), (y,), {"axes": (1,)}), unit)
    0.0
    >>> reduce_passes_ns(Op("r", "ReduceMax", "reduce", (x,), (y,), {"axes": (2,)}), unit)
    2560.0
    """
    if op.op_type not in REDUCE_ROW_OP_TYPES:
        return 0.0
    got = fast_reduce(op)
    if got is None:
        return 0.0
    kind, merged = got
    if unit.reduce_generic_ns and _on_generic_loop(op.op_type, kind, merged):
        return op.inputs[0].elements * unit.reduce_generic_ns
    if kind == "KR" and unit.reduce_row_ns:
        return merged[0] * unit.reduce_row_ns
    if kind == "KRK" and merged[0] >= 2 and op.op_type in REDUCE_BLOCK_OP_TYPES and unit.reduce_block_ns:
        walked = unit.reduce_column_row_ns if merged[2] < REDUCE_NARROW_COLUMNS else None
        return merged[0] * (unit.reduce_block_ns + merged[1] * (walked or 0.0))
    return 0.0
