"""How onnxruntime's CPU kernels walk memory where the order of the elements changes: which path a
Transpose takes, the Transposes a Softmax over another axis than the last makes, and the rows a
Softmax normalizes one at a time.

onnxruntime 1.32's Transpose takes one of three paths (measured on an AMD EPYC, 1 thread, the
fastest of 30 runs):

- **one axis moves** (every other axis keeps its order: NCHW <-> NHWC, the last two swapped, a
  2-D transpose): MLAS's blocked 2-D transpose where the axes after the moving one make 1, 2 or 4
  bytes, 0.10-0.27 ns per element in its blocks and about 0.25 outside them (:func:`single_axis_ns`);
- **the last axis stays**: contiguous runs of the inner dimensions copied, 0.2 ns per element for
  runs of 64 floats, 0.63 for runs of 8 (attention's ``(0, 2, 1, 3)``, a Swin window shuffle);
- **anything else**: one element at a time through a multi-axis index, **3.4-4.6 ns** per element
  ((1, 16, 4, 8400) by ``(0, 3, 2, 1)``: 1.83 ms; (1, 64, 32, 32) by ``(0, 3, 2, 1)``: 220 us;
  (1, 8, 16, 16, 64) by ``(0, 2, 1, 4, 3)``: 452 us), 15-30x the other two.

The second is a copy at the op type's calibrated rate (the roofline), as is the first without the
fingerprint's single-axis rates; the first is priced per unit of MLAS's blocks and of what they
leave (:func:`single_axis_ns`), and by what it reads again beyond L2 (:func:`single_axis_far_bytes`);
the third at the fingerprint's ``transpose_element_ns`` per element (:func:`walk_ns`). No
efficiency scales the first or the third.
Axes of one element are left out first: they do not change the order in memory.

A Softmax (or LogSoftmax) of opset 13 and later over an axis other than the last runs as a
Transpose that swaps that axis with the last, the Softmax over the last axis, and the same
Transpose back: YOLOv8's DFL Softmax over 16 bins of (1, 16, 4, 8400) took 4.57 ms where the same
elements over the last axis took 0.50 (two walks of 537,600 elements at 3.4 ns). Before opset 13
the axis coerces the input to 2-D (rows = the elements before it) and nothing is transposed
(:data:`graph_ir.op_metrics.COERCED_AXIS_ATTR`, set at import).

A Softmax normalizes its rows one at a time, each with its own max, sum and scale: 11-14 ns a row
beside 0.28 ns per element here, so rows of 16 floats (33,600 of them in the DFL) cost 0.44 ms
of row time and rows of 4096 none to speak of (:func:`softmax_rows_ns`, ``softmax_row_ns``).
MLAS works a row in vectors (16 floats with AVX-512), the last one partial where the row is not a
whole number of them: such a row paid 3.4 ns more here for a partial vector of 1 float, 11.2-11.8
for one of 15, beyond the time per element of whole vectors (a row of 47 floats 23.9 ns, of 48
15.1), and 8-13.7 ns more again where the Softmax writes over its input, as onnxruntime plans
attention's (its scores read by nothing else; rows of 21 to 145 floats; with the output bound to
the input's buffer rows of 42 took 31.5 ns against 18.3 apart, the buffers 64 or 256 bytes apart
74 / 41 ns, 1 KiB or more apart 18 ns; a LogSoftmax's partial vectors cost as much, in place or
not). From 11 vectors on the in-place rows paid 0-7.5 ns more, by no rule the measurements
showed, from 14 on nothing (:func:`softmax_tails_ns`; :mod:`hwsim.host.softmax_probe`).

A Slice copies runs of contiguous elements one after another (onnxruntime's ``SliceIterator``: the
trailing axes it keeps whole merged into the innermost), each run a copy and a step of a
multi-axis index: 3.9 ns a run here, so the real part of a complex tensor, ``x[..., 0:1]`` over
(1, 128, 256, 2), took 129 us for 32,768 runs of one value where a copy of its bytes takes 2. A
step other than 1 on the innermost axis (a decimation ``x[..., ::2]``) copies element by element,
0.9-1.3 ns each (:func:`slice_ns`: ``slice_run_ns``, ``slice_step_element_ns``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

from chips.schema import CpuUnit
from graph_ir.ir import Op
from graph_ir.op_metrics import COERCED_AXIS_ATTR, SLICE_STEPS_ATTR

__all__ = ["ALIAS_STRIDE_BYTES", "IN_PLACE_ATTR", "IN_PLACE_TAIL_VECTORS", "LINE_BYTES", "MEMCPY_PARALLEL_BYTES", "MLAS_BLOCK_SIDE", "PAGE_LINES", "PREFETCH_PAGE_ROWS", "SOFTMAX_OP_TYPES",
           "WIDE_UNIT_BYTES", "einsum_moves", "l1_crowded", "memcpy_units", "page_slots", "pass_slots", "single_axis_far_bytes",
           "single_axis_memcpy_ns", "single_axis_moves", "single_axis_ns", "slice_ns", "slice_runs", "softmax_axis", "softmax_rows",
           "softmax_rows_ns", "softmax_tails_ns", "spread_bytes", "transpose_moves", "transpose_path", "transpose_walks", "walk_ns",
           "walks"]

#: Op types onnxruntime runs as its Softmax kernel (rows, and the axis swap of opset 13 and later).
SOFTMAX_OP_TYPES = ("Softmax", "LogSoftmax")
#: Bytes a Transpose on the memcpy path (:func:`memcpy_units`) moves before onnxruntime 1.32 splits
#: it over its intra-op threads (:func:`cost_models.cpu.intra_op_threads`). AMD EPYC (Zen 5), heads
#: moved by ``(0, 2, 1, 3)``: 150-384 KB ran 0.93-1.07x on two threads (PatchTST's 4,704 heads of
#: 32 bytes, BERT's 1,536 of 256), 512 KB 1.37-1.74x, 768 KB to 2 MB 1.42-1.89x.
MEMCPY_PARALLEL_BYTES = 512 * 1024
#: Attribute (not ONNX's) on a kernel that writes its output over its input, as onnxruntime's arena
#: plan gives it (:func:`hwsim.host.validate.cache_residency`); 1 when it does.
IN_PLACE_ATTR = "hwsim_in_place"
#: The longest rows, in vectors, whose partial last vector an in-place Softmax pays
#: ``softmax_in_place_tail_ns`` for (:func:`softmax_tails_ns`): 8-13 ns up to 10 vectors on an
#: AMD EPYC (Zen 5), 0-7.5 at 11 to 13 with no rule, nothing from 14.
IN_PLACE_TAIL_VECTORS = 10


def _squeezed(shape: Sequence[int], perm: Sequence[int]) -> tuple[list[int], list[int]]:
    """``shape`` and ``perm`` without the axes of one element (they do not change the order in memory)."""
    kept = [a for a in perm if 0 <= a < len(shape) and shape[a] != 1]
    order = {a: i for i, a in enumerate(sorted(kept))}
    return [int(shape[a]) for a in sorted(kept)], [order[a] for a in kept]


def transpose_walks(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether onnxruntime's Transpose of a tensor of ``shape`` by ``perm`` walks it one element at
    a time: more than one axis moves and the last does not stay (axes of one element left out
    first, as the Transpose op's shapes come; :func:`transpose_path` of what is left).

    >>> transpose_walks((1, 16, 4, 8400), (0, 3, 2, 1)), transpose_walks((1, 16, 4, 8400), (0, 2, 3, 1))
    (True, False)
    >>> transpose_walks((1, 128, 12, 64), (0, 2, 1, 3)), transpose_walks((2, 3, 4), (2, 1, 0))
    (False, True)
    """
    return transpose_path(*_squeezed(shape, perm)) == "walk"


def transpose_path(shape: Sequence[int], perm: Sequence[int]) -> str:
    """The path onnxruntime's ``DoTranspose`` takes for ``shape`` by ``perm`` as given, axes of
    one element included (the Einsum kernel passes its operands so, :func:`einsum_moves`):

    - ``"copy"``: the axes of more than one element keep their order (a reshape: one memcpy);
    - ``"single"``: one axis moves, the rest keep their order (a blocked copy);
    - ``"runs"``: the trailing axes that stay hold more than one element (runs of them copied);
    - ``"walk"``: anything else, one element at a time through a multi-axis index.

    >>> transpose_path((1, 128, 4, 64, 1), (2, 1, 3, 0, 4))  # a trailing axis of one: no runs
    'walk'
    >>> transpose_path((1, 128, 4, 64), (0, 2, 1, 3)), transpose_path((1, 8, 1, 64, 128), (1, 3, 0, 4, 2))
    ('single', 'copy')
    >>> transpose_path((2, 3, 4, 5), (1, 0, 3, 2)), transpose_path((2, 3, 4, 5), (2, 0, 1, 3))
    ('walk', 'single')
    >>> transpose_path((2, 3, 4, 5), (1, 0, 2, 3)), transpose_path((2, 3, 4, 5), (2, 1, 0, 3))
    ('single', 'runs')
    """
    big = [a for a in perm if shape[a] != 1]
    if _ascending(big):
        return "copy"
    if any(_ascending([b for b in perm if b != a]) for a in perm):
        return "single"
    suffix = 1
    for i in range(len(perm) - 1, -1, -1):
        if perm[i] != i:
            break
        suffix *= shape[i]
    return "walk" if suffix == 1 else "runs"


def _ascending(axes: Sequence[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(axes))


def _einsum_terms(equation: str, ranks: Sequence[int]) -> tuple[list[list[str]], list[str]] | None:
    """The labels of each Einsum operand and of the output, an ellipsis's dims labelled ``".0"``,
    ``".1"``, ... from the left as onnxruntime numbers them (the implicit output: the ellipsis, then
    the letters seen once in sorted order); None for a label repeated within an operand (a
    diagonal) or a malformed equation."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        return None
    labels: list[list[str]] = []
    for term, rank in zip(terms, ranks):
        head, dots, tail = term.partition("...")
        if len(set(head + tail)) != len(head + tail) or (not dots and len(term) != rank):
            return None
        labels.append([*head, *(f".{j}" for j in range(rank - len(head) - len(tail))), *tail])
    width = max((sum(lab.startswith(".") for lab in t) for t in labels), default=0)
    ellipsis = [f".{j}" for j in range(width)]
    if arrow:
        head, has, tail = rhs.partition("...")
        return labels, [*head, *(ellipsis if has else []), *tail]
    seen = [lab for t in labels for lab in t if not lab.startswith(".")]
    return labels, [*ellipsis, *sorted(lab for lab in set(seen) if seen.count(lab) == 1)]


def einsum_moves(equation: str, shapes: Sequence[Sequence[int]]) -> list[tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """The Transposes and copies onnxruntime 1.32's Einsum kernel makes around its batched GEMM
    for two operands, each as ``(shape, perm)`` for :func:`transpose_path` (an identity ``perm``: a
    plain copy): each operand put in the order the labels first appear (ellipsis dims first), then
    in the pairwise step the left one to [batch, rows, reduced] and the right one to [batch,
    reduced, columns] (each over every label, those of one element included), the product's
    axes to the output's order, and last a copy into the op's output. None where the kernel does
    more than that (one operand, three or more, a diagonal, a label reduced on one side alone).

    >>> einsum_moves("bqhd,bkhd->bhqk", [(1, 128, 4, 64), (1, 128, 4, 64)])  # doctest: +NORMALIZE_WHITESPACE
    [((1, 128, 4, 64), (0, 2, 3, 1)), ((1, 128, 4, 64, 1), (2, 1, 3, 0, 4)),
     ((1, 1, 4, 64, 128), (2, 3, 0, 4, 1)), ((4, 128, 1, 128), (2, 0, 1, 3)), ((1, 4, 128, 128), (0, 1, 2, 3))]
    >>> einsum_moves("ij,jk->ik", [(8, 4), (4, 2)])  # B copied as it is (a reshape), the product copied out
    [((1, 4, 2), (1, 2, 0)), ((8, 2), (0, 1))]
    """
    parsed = _einsum_terms(equation, [len(s) for s in shapes])
    if parsed is None or len(shapes) != 2:
        return None
    labels, out = parsed
    order = sorted({lab for t in labels for lab in t}, key=lambda lab: (not lab.startswith("."), _first(labels, lab)))
    index = {lab: i for i, lab in enumerate(order)}
    moves, homog = [], []
    for term, shape in zip(labels, shapes):
        perm = tuple(sorted(range(len(term)), key=lambda d: index[term[d]]))
        if perm != tuple(range(len(perm))):
            moves.append((tuple(shape), perm))
        h = [1] * len(order)
        for lab, dim in zip(term, shape):
            h[index[lab]] = int(dim)
        homog.append(h)
    left, right = homog
    if any(lab not in out and lab not in labels[1] for lab in labels[0]):
        return None  # reduced in the first operand alone: a ReduceSum first
    reduce = [index[lab] for lab in order if lab not in out and lab in labels[1]]
    if any((left[i] > 1) != (right[i] > 1) for i in reduce):
        return None  # a ReduceSum on one side
    lro = [i for i in range(len(order)) if i not in reduce and left[i] > 1 and right[i] > 1]
    lo = [i for i in range(len(order)) if i not in reduce and left[i] > 1 and right[i] == 1]
    ro = [i for i in range(len(order)) if i not in reduce and left[i] == 1]
    for dims, perm in ((left, (*lro, *lo, *reduce, *ro)), (right, (*lro, *reduce, *ro, *lo))):
        if perm != tuple(range(len(perm))):
            moves.append((tuple(dims), perm))
    kept = [(i, left[i] if i in lro or i in lo else right[i]) for i in (*lro, *lo, *ro) if order[i] in out]
    shape_out = tuple(d for _, d in kept)
    perm_out = [0] * len(kept)
    for pos, (i, _) in enumerate(kept):
        perm_out[out.index(order[i])] = pos
    if perm_out != sorted(perm_out):
        moves.append((shape_out, tuple(perm_out)))
    return [*moves, (tuple(shape_out[p] for p in perm_out), tuple(range(len(kept))))]


def _first(labels: Sequence[Sequence[str]], label: str) -> int:
    """Where ``label`` first appears, counting through the operands in order."""
    return next(k for k, lab in enumerate(lab for t in labels for lab in t) if lab == label)


def softmax_axis(op: Op) -> int | None:
    """The axis a Softmax of opset 13 or later normalizes over, from 0; None for an op of another
    type, of an earlier opset (:data:`COERCED_AXIS_ATTR`: coerced to 2-D) or of unknown rank."""
    if op.op_type not in SOFTMAX_OP_TYPES or not op.inputs or not op.inputs[0].shape or op.attrs.get(COERCED_AXIS_ATTR):
        return None
    rank = len(op.inputs[0].shape)
    axis = op.attrs.get("axis", -1)
    if not isinstance(axis, int) or not -rank <= axis < rank:
        return None
    return axis % rank


def softmax_rows(op: Op) -> int:
    """The rows a Softmax normalizes one at a time: the elements over the length of its axis (of
    opset 13 and later), or before its axis where it coerces its input to 2-D; 0 for another op.

    >>> from graph_ir.ir import Tensor
    >>> x = Tensor("x", (1, 16, 4, 8400), "float32")
    >>> softmax_rows(Op("s", "Softmax", "softmax", (x,), (x,), {"axis": 1}))
    33600
    >>> softmax_rows(Op("s", "Softmax", "softmax", (x,), (x,), {"axis": 1, COERCED_AXIS_ATTR: 1}))
    1
    """
    if op.op_type not in SOFTMAX_OP_TYPES or not op.inputs or not op.inputs[0].shape:
        return 0
    shape = op.inputs[0].shape
    axis = softmax_axis(op)
    if axis is not None:
        return int(math.prod(shape)) // max(1, int(shape[axis]))
    coerced = op.attrs.get("axis", 1)  # opset 11's default
    if not isinstance(coerced, int) or not -len(shape) <= coerced <= len(shape):
        return 0
    return int(math.prod(shape[: coerced if coerced >= 0 else coerced + len(shape)]))


def softmax_rows_ns(op: Op, unit: CpuUnit) -> float:
    """What a Softmax pays per row beside its time per element: ``softmax_row_ns`` per row
    (:func:`softmax_rows`), ns; 0 without the unit's figure or for another op."""
    if not unit.softmax_row_ns:
        return 0.0
    return float(softmax_rows(op)) * unit.softmax_row_ns


def softmax_tails_ns(op: Op, unit: CpuUnit) -> float:
    """What a Softmax pays for rows whose last vector of ``vector_floats`` is partial, ns: per such
    row ``softmax_tail_ns`` and ``softmax_tail_element_ns`` per float of that vector, and
    ``softmax_in_place_tail_ns`` more where it writes over its input (:data:`IN_PLACE_ATTR`) over its
    last axis in rows of at most :data:`IN_PLACE_TAIL_VECTORS` vectors, a Softmax only (a LogSoftmax
    in place ran as fast as apart: rows of 42 and 47 floats, 22.9 / 26.9 ns against 23.4 / 26.9); 0
    without ``vector_floats``, for rows of whole vectors or another op.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...             l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, vector_floats=16, softmax_tail_ns=3.0,
    ...             softmax_tail_element_ns=0.4, softmax_in_place_tail_ns=12.0)
    >>> x = Tensor("x", (7, 16, 42, 42), "float32")  # 4704 rows, partial vectors of 10 floats
    >>> round(softmax_tails_ns(Op("s", "Softmax", "softmax", (x,), (x,), {"axis": -1}), u))  # apart: 7 ns a row
    32928
    >>> round(softmax_tails_ns(Op("s", "Softmax", "softmax", (x,), (x,), {"axis": -1, IN_PLACE_ATTR: 1}), u))
    89376
    >>> w = Tensor("w", (7, 16, 42, 48), "float32")  # whole vectors
    >>> softmax_tails_ns(Op("s", "Softmax", "softmax", (w,), (w,), {"axis": -1, IN_PLACE_ATTR: 1}), u)
    0.0
    """
    vector, rows = unit.vector_floats, softmax_rows(op)
    if not vector or not rows:
        return 0.0
    length = math.prod(op.inputs[0].shape) // rows
    if length % vector == 0:
        return 0.0
    apart = (unit.softmax_tail_ns or 0.0) + (length % vector) * (unit.softmax_tail_element_ns or 0.0)
    in_place = op.op_type == "Softmax" and op.attrs.get(IN_PLACE_ATTR) and softmax_axis(op) in (None, len(op.inputs[0].shape) - 1)
    more = unit.softmax_in_place_tail_ns or 0.0 if in_place and -(-length // vector) <= IN_PLACE_TAIL_VECTORS else 0.0
    return float(rows) * (apart + more)


def walk_ns(op: Op, unit: CpuUnit) -> float:
    """Time of the element-at-a-time Transposes of ``op`` (:func:`walks`), ns:
    ``transpose_element_ns`` per element each time; 0 without the unit's figure.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...             l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, transpose_element_ns=3.5)
    >>> x = Tensor("x", (1, 16, 4, 8400), "float32")
    >>> walk_ns(Op("s", "Softmax", "softmax", (x,), (x,), {"axis": 1}), u)
    3763200.0
    >>> walk_ns(Op("s", "Softmax", "softmax", (x,), (x,), {"axis": 2}), u)  # (0, 1, 3, 2): one axis moves
    0.0
    """
    if not unit.transpose_element_ns:
        return 0.0
    return walks(op) * float(math.prod(op.inputs[0].shape)) * unit.transpose_element_ns


def walks(op: Op) -> int:
    """How many times onnxruntime walks ``op``'s input one element at a time: once for a Transpose
    whose path walks (:func:`transpose_walks`), twice for a Softmax of opset 13 and later over
    another axis than the last where the swap of that axis with the last walks, else 0. Such a
    walk takes no second thread: on two threads the walk alone ran 1.00x, and a Softmax over a
    middle axis 0.57-0.71x (slower) of its time on one (AMD EPYC, 1,024 to 537,600 elements)."""
    if not op.inputs or not op.inputs[0].shape:
        return 0
    shape = op.inputs[0].shape
    if op.op_type == "Transpose":
        perm = op.attrs.get("perm")
        order = tuple(perm) if isinstance(perm, Sequence) else tuple(range(len(shape)))[::-1]
        return int(transpose_walks(shape, order))
    axis = softmax_axis(op)
    if axis is None or axis == len(shape) - 1:
        return 0
    swap = list(range(len(shape)))
    swap[axis], swap[-1] = swap[-1], swap[axis]
    return 2 * int(transpose_walks(shape, swap))


#: The side of the square blocks MLAS transposes with vector shuffles, by the bytes of the unit it
#: moves (``MlasTranspose``: 8 x 8 of bytes; 4 x 4 of 16- and 32-bit units). A unit of 8 bytes takes
#: onnxruntime's own scalar loop; any other size a strided copy (not this path).
MLAS_BLOCK_SIDE: dict[int, int] = {1: 8, 2: 4, 4: 4}
#: Bytes of the unit onnxruntime's scalar single-axis loop moves (``SimpleTransposeSingleAxis*``).
WIDE_UNIT_BYTES = 8
#: Bytes of a cache line: what a pass over strided rows reads per row (:func:`single_axis_far_bytes`),
#: the unit an embedding row from DRAM is fetched in (:func:`cost_models.cpu.cold_gather_ns`).
LINE_BYTES = 64
#: Distance apart at which two addresses fall in the same cache sets (x86's 4 KiB page): a
#: float GEMM whose A rows lie a multiple of it apart runs at ``gemm_aliased_factor``
#: (:func:`cost_models.cpu.aliased_factor`). It is also the bytes one way of an x86 L1 holds
#: (indexed by the address bits inside a page; Zen 4: 32 KiB, 8 ways of 64 sets; Golden Cove and
#: Zen 5: 48 KiB, 12 ways of 64 sets), and a larger cache's sets a line can use follow from its
#: place in the page too, the page's frame picking among them (:func:`spread_bytes`).
ALIAS_STRIDE_BYTES = 4096
#: Lines of a 4 KiB page.
PAGE_LINES = ALIAS_STRIDE_BYTES // LINE_BYTES
#: Rows of a 4 KiB page a strided pass must read for the L2's stride prefetcher, which keeps to a
#: page, to fetch the pass's lines from beyond L2 ahead of it (:func:`single_axis_far_bytes`): on
#: an AMD EPYC (Zen 5) passes over rows 128 and 256 bytes apart lost from L2 ran at the rate of the
#: longer of the blocks and the re-reads, rows 512-2048 bytes apart at their sum or more.
PREFETCH_PAGE_ROWS = 16


def page_slots(lines: np.ndarray) -> int:
    """How many of a page's :data:`PAGE_LINES` places the cache ``lines`` (line indices) take.

    >>> page_slots(np.arange(128) * 16), page_slots(np.arange(128) * 44)  # rows 1 KiB and 2.75 KiB apart
    (4, 16)
    """
    return int(np.unique(np.asarray(lines) % PAGE_LINES).size)


def spread_bytes(nbytes: float, slots: int) -> float:
    """The cache ``nbytes`` on ``slots`` of a page's line places (:func:`page_slots`) take up: the
    sets the other places index count as taken. Where it exceeds a cache's bytes, a pass over those
    lines loses them before it comes back to them (an L1 of 48 KiB holds 12 lines in one place).

    >>> spread_bytes(16 * LINE_BYTES, 1), spread_bytes(16 * LINE_BYTES, 64)
    (65536.0, 1024.0)
    """
    return float(nbytes) * PAGE_LINES / max(1, slots)


@functools.lru_cache(maxsize=4096)
def pass_slots(rows: int, row_bytes: int, pair: bool) -> int:
    """:func:`page_slots` of one pass of MLAS's Transpose down ``rows`` rows ``row_bytes`` apart:
    the line each row's first strip reads, and where ``pair`` the line beside it (the other half
    of its 128-byte pair, which the L2's adjacent-line prefetch brings).

    >>> pass_slots(784, 1024, True), pass_slots(784, 960, True), pass_slots(16, 200704, False)
    (8, 64, 1)
    """
    period = ALIAS_STRIDE_BYTES // math.gcd(row_bytes, ALIAS_STRIDE_BYTES)
    lines = np.arange(min(rows, period), dtype=np.int64) * row_bytes // LINE_BYTES
    return page_slots(np.concatenate([lines, lines ^ 1]) if pair else lines)


def single_axis_moves(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, int, int, int, bool] | None:
    """``(loops, rows, columns, unit, outwards)`` of onnxruntime's Transpose of ``shape`` by
    ``perm`` where it moves one axis (axes of one element left out first): ``loops`` matrices of
    ``rows x columns`` units transposed one after another, a unit being ``unit`` elements (the
    axes after the moving one, which travel with it). None where more than one axis moves or none
    does.

    Moved ``outwards`` (to an earlier place, NHWC -> NCHW) the moving axis is the columns and the
    axes it passes the rows; moved inwards (NCHW -> NHWC) the moving axis is the rows.

    >>> single_axis_moves((1, 56, 56, 32), (0, 3, 1, 2)), single_axis_moves((1, 32, 56, 56), (0, 2, 3, 1))
    ((1, 3136, 32, 1, True), (1, 32, 3136, 1, False))
    >>> single_axis_moves((1, 12, 64, 128), (0, 1, 3, 2)), single_axis_moves((1, 128, 12, 64), (0, 2, 1, 3))
    ((12, 64, 128, 1, True), (1, 128, 12, 64, True))
    >>> single_axis_moves((2, 3, 4), (2, 1, 0)) is None
    True
    """
    dims, order = _squeezed(shape, perm)
    i = next((k for k, a in enumerate(order) if a != k), None)
    if i is None:
        return None
    if order[i] > i and _ascending([b for b in order if b != order[i]]):
        src, dst = order[i], i  # outwards, as onnxruntime checks first
        rows, cols = math.prod(dims[dst:src]), dims[src]
    elif _ascending([b for b in order if b != i]):
        src, dst = i, order.index(i)  # inwards
        rows, cols = dims[src], math.prod(dims[src + 1 : dst + 1])
    else:
        return None
    return math.prod(dims[: min(src, dst)]), rows, cols, math.prod(dims[max(src, dst) + 1 :]), src > dst


def transpose_moves(op: Op) -> tuple[int, int, int, int, bool] | None:
    """:func:`single_axis_moves` of a Transpose op (its ``perm``, or the axes reversed), else None."""
    if op.op_type != "Transpose" or not op.inputs or not op.inputs[0].shape:
        return None
    shape = op.inputs[0].shape
    perm = op.attrs.get("perm")
    return single_axis_moves(shape, tuple(perm) if isinstance(perm, Sequence) else tuple(range(len(shape)))[::-1])


def _unit_moves(op: Op, element_bytes: int) -> tuple[int, int, int, int, bool] | None:
    """:func:`transpose_moves` of ``op`` with its unit in bytes (elements of ``element_bytes``)."""
    moves = transpose_moves(op)
    if moves is None:
        return None
    loops, rows, cols, elements, outwards = moves
    return loops, rows, cols, elements * element_bytes, outwards


def single_axis_ns(op: Op, unit: CpuUnit, element_bytes: int) -> float:
    """Time of onnxruntime's Transpose of ``op`` where it moves one axis in units of 1, 2, 4 or 8
    bytes (:func:`single_axis_moves`), ns; 0 on any other path or without the unit's figures.

    MLAS transposes each matrix in square blocks of :data:`MLAS_BLOCK_SIDE` and the rows and
    columns left over one unit at a time: ``transpose_block_ns`` per unit in a block of 16- or
    32-bit units, ``transpose_byte_block_ns`` in a block of bytes (16-bit units between the two,
    :func:`_block_ns`; ``transpose_outward_factor`` and ``transpose_byte_outward_factor`` times
    them where the axis moves outwards: each block is written to as many output rows, and
    each strip down the thousands of rows finds the lines it shares with the strip before gone from
    the L1; so too moved inwards where the few rows crowd the L1's sets, :func:`l1_crowded`),
    ``transpose_edge_ns`` per unit left over. A unit of 8 bytes goes through onnxruntime's scalar
    loop, priced as two left-over units of 4 bytes. On the CI Xeon (onnxruntime 1.32, 1 thread, in
    L2): a float 0.15-0.21 ns in blocks moved inwards and 0.21-0.29 outwards, a byte 0.05-0.08 and
    0.07-0.11, a left-over unit 0.22-0.35 (1, 2 or 4 bytes alike) and an 8-byte unit 0.56-0.80, so
    a camera frame's 3 channels of bytes (no block: fewer than 8 columns) run 3x the time per
    element of 8 or more channels.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, l1_kib=32, l2_kib=1024,
    ...             l1_bandwidth_gbps=200, l2_bandwidth_gbps=100, transpose_block_ns=0.25, transpose_byte_block_ns=0.1,
    ...             transpose_edge_ns=0.3)
    >>> t = lambda shape, perm: Op("t", "Transpose", "data", (Tensor("x", shape, "uint8"),), (), {"perm": perm})
    >>> single_axis_ns(t((1, 480, 640, 3), (0, 3, 1, 2)), u, 1)  # 3 columns: no block of 8
    276480.0
    >>> single_axis_ns(t((1, 480, 640, 9), (0, 3, 1, 2)), u, 1)  # 8 of 9 columns in blocks
    337920.0
    >>> round(single_axis_ns(t((1, 480, 640, 9), (0, 3, 1, 2)), u.model_copy(update={"transpose_outward_factor": 1.5}), 1))
    460800
    >>> v = u.model_copy(update={"transpose_outward_factor": 1.5})  # 16 planes 4 KiB apart crowd a 32 KiB L1
    >>> round(single_axis_ns(t((1, 16, 64, 64), (0, 2, 3, 1)), v, 1)), round(single_axis_ns(t((1, 16, 64, 63), (0, 2, 3, 1)), v, 1))
    (9830, 6451)
    >>> single_axis_ns(t((1, 128, 12, 64), (0, 2, 1, 3)), u, 4)  # units of 256 bytes: a strided copy
    0.0
    """
    moves = _unit_moves(op, element_bytes)
    if moves is None:
        return 0.0
    loops, rows, cols, size, outwards = moves
    edge = unit.transpose_edge_ns
    if size == WIDE_UNIT_BYTES:
        return loops * rows * cols * 2 * edge if edge else 0.0
    side = MLAS_BLOCK_SIDE.get(size)
    if side is None or not edge:
        return 0.0
    block = _block_ns(unit, size, outwards or l1_crowded(rows, cols * size, unit.l1_kib * 1024), cols * size)
    if not block:
        return 0.0
    blocked = (rows // side * side) * (cols // side * side)
    return loops * (blocked * block + (rows * cols - blocked) * edge)


def single_axis_memcpy_ns(op: Op, unit: CpuUnit, element_bytes: int) -> float:
    """Time of the memcpy calls onnxruntime's Transpose of ``op`` makes where it moves one axis in
    units of another size than 1, 2, 4 or 8 bytes (:func:`single_axis_moves`): one call per unit
    (the ``default:`` branch of ``TransposeSingleAxisOutwards`` and ``Inwards``), at the unit's
    ``transpose_memcpy_ns``, ns; 0 on any other path or without the figure. The units' bytes come on
    top, at the rate of the level holding them (:meth:`cost_models.cpu.CpuModel.transpose`).

    Attention's ``(0, 2, 1, 3)`` over heads of 8 floats moves 32-byte units: on an AMD EPYC (Zen 5,
    onnxruntime 1.32, 1 thread, 2026-12-07) 4,096-32,768 units of 12 to 128 bytes took 6.7-7.8 ns
    each whatever their size, 256-byte units 9.4-10.1 and 512-byte ones 13-29 (their bytes), where
    the copy's rate priced a 32-byte unit at 1.4 ns (PatchTST's head Transposes: 34 us against 6.9).
    The longer of the calls and the copy at the calibrated Transpose rate priced units of 256 and
    512 bytes 24-39 % fast once the calibration refit that rate without the calls; their sum, at
    the rate fit with the calls inside it, 13-156 % slow.

    >>> from graph_ir.ir import Tensor
    >>> u = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 64}, transpose_memcpy_ns=7.0)
    >>> t = lambda shape, perm: Op("t", "Transpose", "data", (Tensor("x", shape, "float32"),), (), {"perm": perm})
    >>> single_axis_memcpy_ns(t((7, 42, 16, 8), (0, 2, 1, 3)), u, 4)  # 4,704 heads of 32 bytes
    32928.0
    >>> single_axis_memcpy_ns(t((1, 42, 16, 1), (0, 2, 1, 3)), u, 4)  # 4-byte units: MLAS's blocks
    0.0
    """
    if not unit.transpose_memcpy_ns:
        return 0.0
    return memcpy_units(op, element_bytes) * unit.transpose_memcpy_ns


def memcpy_units(op: Op, element_bytes: int) -> int:
    """The memcpy calls onnxruntime's Transpose of ``op`` makes, one per unit, where it moves one
    axis in units of another size than 1, 2, 4 or 8 bytes (elements of ``element_bytes``); 0 on any
    other path."""
    moves = _unit_moves(op, element_bytes)
    if moves is None or moves[3] in MLAS_BLOCK_SIDE or moves[3] == WIDE_UNIT_BYTES:
        return 0
    loops, rows, cols, _, _ = moves
    return loops * rows * cols


def l1_crowded(rows: int, row_bytes: int, l1_bytes: float) -> bool:
    """Whether a pass of MLAS's Transpose down ``rows`` rows ``row_bytes`` apart loses the line it
    reads in each row from an L1 of ``l1_bytes`` before the next strip reads it again: the rows'
    lines crowd the sets they fall in (:func:`spread_bytes`; planes a multiple of 4 KiB apart all
    fall in one, 12 lines in a 48 KiB L1).

    Measured on an AMD EPYC (Zen 5, 48 KiB L1 of 12 ways; 2026-12-07, 1 thread, floats of NCHW to
    NHWC): planes of 224 x 224 (49 pages apart) ran 0.100 ns per element at 8 channels, 0.118 at
    12, 0.147 at 16 and 0.17-0.18 at 24-32 where planes of 223 x 224 ran 0.10-0.11 at 8-32; planes
    of 112 x 112 (rows in 4 places) 0.10-0.11 up to 48 channels and 0.158 at 64; planes of 176 x
    288 (2 places) 0.098 at 16 and 0.147 at 32. A pass whose lines the L1 loses runs as an outward
    pass does (the outward factor: 1.35 there).

    >>> l1_crowded(16, 224 * 224 * 4, 48 * 1024), l1_crowded(12, 224 * 224 * 4, 48 * 1024)
    (True, False)
    >>> l1_crowded(64, 112 * 112 * 4, 48 * 1024), l1_crowded(48, 112 * 112 * 4, 48 * 1024)
    (True, False)
    >>> l1_crowded(32, 223 * 224 * 4, 48 * 1024)
    False
    """
    if row_bytes < LINE_BYTES:
        return False
    return spread_bytes(rows * LINE_BYTES, pass_slots(rows, row_bytes, False)) > l1_bytes


def _block_ns(unit: CpuUnit, size: int, away: bool, row_bytes: int) -> float | None:
    """Time per unit of ``size`` bytes in MLAS's blocks: the fingerprint's rate for floats or bytes
    moved inwards, and for 16-bit units the mean of the two per byte, times 2 (a block's cost
    follows its bytes: 0.050 ns a byte of floats, 0.047 of bytes and of halves on the CI Xeon);
    where ``away`` (moved outwards, or inwards over rows that crowd the L1), each rate times its
    outward factor: ``transpose_outward_factor`` for floats, ``transpose_byte_outward_factor`` for
    bytes (that of floats where unset), and ``transpose_shared_line_factor`` for either where
    ``row_bytes`` is under a line (a pass reads the lines its rows share in order). Floats ran 1.2x
    and bytes of 32 channels 1.7x on the CI Xeon; 1.48x, bytes of 128-256 channels 1.8-2.2x and of
    16-32 channels 0.7-1.0x on an AMD EPYC (Zen 5)."""
    shared = unit.transpose_shared_line_factor if away and row_bytes < LINE_BYTES else None
    common = (shared or unit.transpose_outward_factor or 1.0) if away else 1.0
    floats = unit.transpose_block_ns and unit.transpose_block_ns * common
    byte_factor = (shared or unit.transpose_byte_outward_factor or common) if away else 1.0
    octets = unit.transpose_byte_block_ns and unit.transpose_byte_block_ns * byte_factor
    if size == 1:
        return octets
    if size == 2 and floats and octets:
        return floats / 4 + octets
    return floats


def single_axis_far_bytes(op: Op, element_bytes: int, l2_bytes: float, pass_lines: float = 2.0) -> tuple[float, float]:
    """``(hidden, waited)``: bytes onnxruntime's Transpose of ``op`` that moves one axis
    (:func:`single_axis_ns`) moves beyond L2, those the blocks' time hides and those it waits on;
    ``(0, 0)`` where it all stays in L2 or takes another path.

    Moved outwards, MLAS passes over every row of a matrix once per strip of
    :data:`MLAS_BLOCK_SIDE` columns and once per column left over. A pass reads all of the input's
    lines where a row is at most a line, else ``pass_lines`` lines a row (2 where the L2 fetches
    each line's 128-byte pair with it: the CI Xeon; 1 where it does not: an AMD EPYC, Zen 5). Where
    those lines, spread over the L2's sets as their places in a page allow (:func:`spread_bytes`:
    rows 512 bytes apart use an eighth of them), and what the pass writes outgrow L2, every pass
    reads them again from beyond it. A stride prefetcher that keeps to a 4 KiB page fetches them
    ahead of the pass where it reads :data:`PREFETCH_PAGE_ROWS` rows or more of a page; rows
    further apart it waits on. Moved inwards, the input is read once, where it and the output
    outgrow L2. Writes beyond L2 count twice: each line is read for ownership first.

    On the CI Xeon (2026-12-07, 1 thread, the input in L3; `benchmarks/single_axis_transposes.py`)
    these bytes at the L3's read rate gave 0.84-1.0x the time of floats of 6.4-12.8 MB moved
    inwards, 0.94-1.05x of 3 channels of 3.7 MB moved outwards, 0.92x of 8 strided passes over
    6.4 MB; (1, 112, 112, 64) moved outwards took 5x the price while its passes were counted
    within L2 (1.6 MB of lines in 2 MiB, but on half of its sets). On an AMD EPYC (Zen 5, L2 853 KiB
    by the read sweep, L3 at 154 GB/s; 2026-12-07), floats moved outwards over 40 x 40 to 64 x 64
    ran 0.155-0.163 ns per element at 112-192 channels, rows 448-768 bytes apart, within L2 on
    16 or more of a page's 64 line places, but 0.21-0.28 at 128 and 384 channels (8 places),
    0.32-0.33 at 256 (4) and 0.51 at 512 (2): the blocks' time plus the re-reads at the L3's rate
    gives 0.9-1.0x at 8 places, 0.77-0.82x at 4 and 0.48x at 2. Rows 256 bytes apart (16 a
    page) lost from L2 ran 1.06-1.11x the rate within it: the re-reads hidden.

    >>> from graph_ir.ir import Tensor
    >>> t = lambda shape, perm: Op("t", "Transpose", "data", (Tensor("x", shape, "float32"),), (), {"perm": perm})
    >>> single_axis_far_bytes(t((1, 480, 640, 3), (0, 3, 1, 2)), 4, 2**21)[0] / 3686400  # 3 passes, 2 writes
    5.0
    >>> single_axis_far_bytes(t((1, 3, 480, 640), (0, 2, 3, 1)), 4, 2**21)[0] / 3686400  # inwards: one read
    3.0
    >>> single_axis_far_bytes(t((1, 224, 224, 32), (0, 3, 1, 2)), 4, 2**21)[0] / (224 * 224 * 32)  # 8 strips, 2 lines a row
    40.0
    >>> single_axis_far_bytes(t((1, 224, 224, 32), (0, 3, 1, 2)), 4, 2**21, 1.0)[0] / (224 * 224 * 32)  # 1 line a row
    24.0
    >>> single_axis_far_bytes(t((1, 56, 56, 96), (0, 3, 1, 2)), 4, 2**21)  # 24 strips of 3136 rows: each in L2
    (0.0, 0.0)
    >>> single_axis_far_bytes(t((1, 112, 112, 64), (0, 3, 1, 2)), 4, 2**21)[0] / (112 * 112 * 64)  # rows on half the sets
    40.0
    >>> [b / (48 * 48 * 128) for b in single_axis_far_bytes(t((1, 48, 48, 128), (0, 3, 1, 2)), 4, 873_000, 1.0)]
    [8.0, 16.0]
    """
    moves = _unit_moves(op, element_bytes)
    if moves is None or (moves[3] not in MLAS_BLOCK_SIDE and moves[3] != WIDE_UNIT_BYTES):
        return 0.0, 0.0
    loops, rows, cols, size, outwards = moves
    matrix = float(rows * cols * size)
    total = loops * matrix
    if not outwards:
        return (3 * total if 2 * total > l2_bytes else 0.0), 0.0
    side = MLAS_BLOCK_SIDE.get(size, 1)
    row = cols * size
    read = pass_lines * rows * LINE_BYTES if row > LINE_BYTES else matrix
    slots = pass_slots(rows, row, pass_lines > 1) if row > LINE_BYTES else PAGE_LINES
    if spread_bytes(read, slots) + rows * min(side, cols) * size <= l2_bytes:
        return 0.0, 0.0
    again = loops * (cols // side + cols % side) * read
    if ALIAS_STRIDE_BYTES // row >= PREFETCH_PAGE_ROWS:
        return again + 2 * total, 0.0
    return 2 * total, again


def slice_runs(op: Op) -> tuple[int, int]:
    """``(runs, stepped elements)`` of onnxruntime's Slice of ``op``: the runs of contiguous elements
    it copies one after another, and the elements it copies one at a time where its innermost
    sliced axis steps by other than 1 (:data:`~graph_ir.op_metrics.SLICE_STEPS_ATTR`). The trailing
    axes the Slice keeps whole, step 1, make one run with the first axis it cuts.

    >>> from graph_ir.ir import Tensor
    >>> def sl(x, y, **attrs): return Op("s", "Slice", "data", (Tensor("x", x, "float32"),), (Tensor("y", y, "float32"),), attrs)
    >>> slice_runs(sl((1, 128, 256, 2), (1, 128, 256, 1)))  # a complex tensor's real part: runs of one
    (32768, 0)
    >>> slice_runs(sl((1, 3, 640, 640), (1, 3, 320, 640), hwsim_slice_steps=(2, 2)))  # every other row
    (960, 0)
    >>> slice_runs(sl((1, 12, 65536), (1, 12, 32768), hwsim_slice_steps=(2, 2)))  # every other sample
    (12, 393216)
    """
    if not op.inputs or not op.outputs or len(op.inputs[0].shape) != len(op.outputs[0].shape):
        return 0, 0
    x, y = op.inputs[0].shape, op.outputs[0].shape
    flat = op.attrs.get(SLICE_STEPS_ATTR, ())
    pairs = flat if isinstance(flat, Sequence) else ()
    steps = {int(a) % len(y): int(s) for a, s in zip(pairs[::2], pairs[1::2], strict=True)}
    total, run = math.prod(y), 1
    for d in range(len(y) - 1, -1, -1):
        step = steps.get(d, 1)
        if step == 1:
            run *= y[d]
            if y[d] == x[d]:
                continue
        elif run == 1:  # the innermost axis cut steps: element by element along it
            return total // max(y[d], 1), total
        break
    return (total // run if run else 0), 0


def slice_ns(op: Op, unit: CpuUnit) -> float:
    """Time onnxruntime's Slice of ``op`` spends beside its bytes, ns: ``slice_run_ns`` per run and
    ``slice_step_element_ns`` per element copied one at a time (:func:`slice_runs`); 0 for another op
    or without the unit's figures. On an AMD EPYC (2026-12-07): 3.9 ns a run ((1, 128, 256, 2) to
    its real part, 129 us; (1, 512, 384, 2), 756 us) and 0.9 ns a stepped element (a Wave-U-Net's
    decimations of (1, 12, 65536): 362 us in the model, priced 30 as a copy)."""
    if op.op_type != "Slice" or not (unit.slice_run_ns or unit.slice_step_element_ns):
        return 0.0
    runs, stepped = slice_runs(op)
    return runs * (unit.slice_run_ns or 0.0) + stepped * (unit.slice_step_element_ns or 0.0)
