"""cost_models.cpu_layout: which onnxruntime Transposes walk a tensor one element at a time, the
Transposes of a Softmax over another axis than the last, and a Softmax's rows."""

from __future__ import annotations

import itertools
import math

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

from chips.schema import chip_from_dict
from cost_models.cpu import EINSUM_MOVE_NS
from cost_models.cpu_layout import (
    IN_PLACE_ATTR,
    IN_PLACE_TAIL_VECTORS,
    MEMCPY_PARALLEL_BYTES,
    einsum_moves,
    pass_slots,
    single_axis_far_bytes,
    single_axis_memcpy_ns,
    single_axis_moves,
    single_axis_ns,
    slice_ns,
    slice_runs,
    softmax_axis,
    softmax_rows,
    softmax_tails_ns,
    spread_bytes,
    transpose_path,
    transpose_walks,
    walk_ns,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.onnx_import import from_model_proto
from graph_ir.op_metrics import COERCED_AXIS_ATTR
from tests.helpers import host_chip

WALK_NS = 3.5
ROW_NS = 10.0


def _chip(**fields: object):  # type: ignore[no-untyped-def]
    data = host_chip()
    data["units"][0].update(fields)
    return chip_from_dict(data)


def _softmax(shape: tuple[int, ...], **attrs: object) -> Op:
    x = Tensor("x", shape, "float32")
    return Op("s", "Softmax", "softmax", (x,), (x,), dict(attrs), 0, 5 * x.elements)


def _transpose(shape: tuple[int, ...], perm: tuple[int, ...]) -> Op:
    x = Tensor("x", shape, "float32")
    y = Tensor("y", tuple(shape[a] for a in perm), "float32")
    return Op("t", "Transpose", "data", (x,), (y,), {"perm": perm})


@pytest.mark.parametrize(
    ("shape", "perm", "walks"),
    [
        ((1, 16, 4, 8400), (0, 3, 2, 1), True),  # two axes swapped, the last among them (1.83 ms measured)
        ((1, 8, 16, 16, 64), (0, 2, 1, 4, 3), True),
        ((2, 3, 4, 5, 6, 7), (5, 4, 3, 2, 1, 0), True),
        ((1, 16, 4, 8400), (0, 2, 3, 1), False),  # NCHW -> NHWC: one axis moves
        ((1, 128, 12, 64), (0, 3, 1, 2), False),  # NHWC -> NCHW
        ((1, 12, 128, 64), (0, 1, 3, 2), False),  # the last two swapped
        ((1, 128, 12, 64), (0, 2, 1, 3), False),  # the last axis stays: runs of 64 copied
        ((8, 8, 8, 8, 8, 8), (0, 2, 4, 1, 3, 5), False),
        ((256, 1024), (1, 0), False),
        ((1, 1, 64, 64), (1, 0, 3, 2), False),  # axes of one element do not count
    ],
)
def test_paths_of_measured_transposes(shape: tuple[int, ...], perm: tuple[int, ...], walks: bool) -> None:
    assert transpose_walks(shape, perm) is walks


@given(st.permutations(range(5)), st.lists(st.sampled_from([1, 2, 3, 5]), min_size=5, max_size=5))
def test_a_walk_moves_more_than_one_axis_and_the_last(perm: list[int], dims: list[int]) -> None:
    shape = tuple(dims)
    kept = [a for a in perm if shape[a] != 1]
    if transpose_walks(shape, perm):
        assert kept[-1] != max(kept)  # the last axis of more than one element moved
        assert not any(kept[:i] + kept[i + 1 :] == sorted(kept[:i] + kept[i + 1 :]) for i in range(len(kept)))
    # axes of one element added anywhere change nothing
    wider = (1, *shape)
    assert transpose_walks(wider, (0, *(a + 1 for a in perm))) == transpose_walks(shape, perm)


def test_every_permutation_that_keeps_the_last_axis_copies() -> None:
    shape = (2, 3, 4, 5)
    for head in itertools.permutations(range(3)):
        assert not transpose_walks(shape, (*head, 3))


def test_a_walking_transpose_costs_its_walk_and_no_efficiency() -> None:
    op = _transpose((1, 64, 32, 32), (0, 3, 2, 1))
    plain = estimate(op, _chip(), "cpu", "model")
    walked = estimate(op, _chip(transpose_element_ns=WALK_NS), "cpu", "model")
    assert plain is not None and walked is not None
    assert walked.compute_ns == pytest.approx(64 * 32 * 32 * WALK_NS)
    assert walked.stall_ns == walked.compute_ns  # nothing for calibration to scale
    copied = estimate(_transpose((1, 64, 32, 32), (0, 2, 3, 1)), _chip(transpose_element_ns=WALK_NS), "cpu", "model")
    assert copied is not None and copied.stall_ns == 0.0


def test_softmax_over_a_middle_axis_pays_two_walks_and_its_rows() -> None:
    chip = _chip(transpose_element_ns=WALK_NS, softmax_row_ns=ROW_NS)
    shape = (1, 16, 4, 8400)
    last = estimate(_softmax(shape, axis=-1), chip, "cpu", "model")
    middle = estimate(_softmax(shape, axis=1), chip, "cpu", "model")
    assert last is not None and middle is not None
    elements = 16 * 4 * 8400
    walks = 2 * elements * WALK_NS
    rows_last, rows_middle = elements // 8400 * ROW_NS, elements // 16 * ROW_NS
    assert middle.stall_ns - last.stall_ns == pytest.approx(walks + rows_middle - rows_last)
    assert walk_ns(_softmax(shape, axis=2), chip.units[0]) == 0.0  # (0, 1, 3, 2): one axis moves


def test_softmax_of_an_old_opset_coerces_and_transposes_nothing() -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], name="s", axis=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 64])])  # fmt: skip
    for opset, coerced in ((11, True), (13, False)):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        op = from_model_proto(onnx.shape_inference.infer_shapes(model), source="m").op("s")
        assert bool(op.attrs.get(COERCED_AXIS_ATTR)) is coerced
        assert softmax_axis(op) == (None if coerced else 1)
        assert softmax_rows(op) == (1 if coerced else 16 * 4 * 64 // 16)
        assert (walk_ns(op, _chip(transpose_element_ns=WALK_NS).units[0]) > 0) is not coerced


def test_a_walk_takes_no_second_thread() -> None:
    from cost_models.cpu import intra_op_threads

    shape = (1, 16, 4, 8400)
    assert intra_op_threads(_transpose(shape, (0, 3, 2, 1)), 2) == 1  # measured 1.00x on two threads
    assert intra_op_threads(_softmax(shape, axis=1), 2) == 1  # measured 0.57-0.71x: no faster on two
    assert intra_op_threads(_softmax(shape, axis=-1), 2) == 2  # its rows split


@pytest.mark.parametrize(
    ("shape", "perm", "moves"),
    [
        ((1, 480, 640, 3), (0, 3, 1, 2), (1, 307200, 3, 1, True)),  # a camera frame to NCHW: 3 columns
        ((1, 3, 480, 640), (0, 2, 3, 1), (1, 3, 307200, 1, False)),  # and back: 3 rows
        ((1, 12, 64, 128), (0, 1, 3, 2), (12, 64, 128, 1, True)),  # K^T per head
        ((1, 128, 12, 64), (0, 2, 1, 3), (1, 128, 12, 64, True)),  # heads apart: units of 64 floats
        ((256, 1024), (1, 0), (1, 256, 1024, 1, True)),
        ((1, 1, 64, 64), (1, 0, 3, 2), (1, 64, 64, 1, True)),  # axes of one element do not count
        ((1, 16, 4, 8400), (0, 3, 2, 1), None),  # two axes move
        ((2, 3, 4), (0, 1, 2), None),  # none does
    ],
)
def test_the_matrices_onnxruntime_transposes_when_one_axis_moves(shape: tuple[int, ...], perm: tuple[int, ...],
                                                                  moves: tuple[int, int, int, int, bool] | None) -> None:  # fmt: skip
    assert single_axis_moves(shape, perm) == moves


@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.data())
def test_one_moving_axis_is_a_batch_of_matrix_transposes(dims: list[int], data: st.DataObject) -> None:
    # what single_axis_moves says onnxruntime does gives numpy's transpose exactly
    perm = tuple(data.draw(st.permutations(range(len(dims)))))
    moves = single_axis_moves(dims, perm)
    kept = [a for a in perm if dims[a] != 1]  # axes of one element left out, as onnxruntime's order stays
    dims_kept, perm_kept = [dims[a] for a in sorted(kept)], [sorted(kept).index(a) for a in kept]
    assert (moves is not None) == (transpose_path(dims_kept, perm_kept) == "single"), (dims, perm)
    if moves is None:
        return
    loops, rows, cols, unit, _ = moves
    x = np.arange(math.prod(dims)).reshape(dims)
    want = np.transpose(x, perm).ravel()
    got = x.reshape(loops, rows, cols, unit).transpose(0, 2, 1, 3).ravel()
    assert np.array_equal(got, want), (dims_kept, perm_kept, moves)


BLOCK, BYTE_BLOCK, EDGE = 0.25, 0.09, 0.24


def _moving(shape: tuple[int, ...], perm: tuple[int, ...], dtype: str = "float32") -> Op:
    x = Tensor("x", shape, dtype)
    return Op("t", "Transpose", "data", (x,), (Tensor("y", tuple(shape[a] for a in perm), dtype),), {"perm": perm})


@pytest.mark.parametrize(
    ("shape", "perm", "dtype", "ns"),
    [
        ((1, 224, 224, 3), (0, 3, 1, 2), "uint8", 150528 * EDGE),  # 3 columns of bytes: no 8 x 8 block
        ((1, 224, 224, 9), (0, 3, 1, 2), "uint8", 50176 * (8 * BYTE_BLOCK + EDGE)),  # 8 of 9 in blocks
        ((1, 32, 56, 56), (0, 2, 3, 1), "float32", 100352 * BLOCK),  # every float in a 4 x 4 block
        ((1, 5, 56, 56), (0, 2, 3, 1), "float32", 3136 * (4 * BLOCK + EDGE)),  # the fifth row left over
        ((1, 56, 56, 8), (0, 3, 1, 2), "int64", 25088 * 2 * EDGE),  # 8-byte units: the scalar loop
        ((1, 56, 56, 8), (0, 3, 1, 2), "float16", 25088 * (BLOCK / 4 + BYTE_BLOCK)),  # between the two per byte
        ((1, 128, 12, 64), (0, 2, 1, 3), "float32", 0.0),  # units of 256 bytes: a strided copy
        ((1, 16, 4, 8400), (0, 3, 2, 1), "float32", 0.0),  # a walk
    ],
)
def test_a_transpose_moving_one_axis_pays_its_blocks_and_what_is_left(shape: tuple[int, ...], perm: tuple[int, ...],
                                                                      dtype: str, ns: float) -> None:  # fmt: skip
    unit = _chip(transpose_block_ns=BLOCK, transpose_byte_block_ns=BYTE_BLOCK, transpose_edge_ns=EDGE).units[0]
    from graph_ir.ir import DTYPE_BYTES

    assert single_axis_ns(_moving(shape, perm, dtype), unit, DTYPE_BYTES[dtype]) == pytest.approx(ns)  # type: ignore[arg-type]


def test_a_camera_frame_to_nchw_costs_its_edges_not_a_calibrated_copy() -> None:
    # CI Xeon, onnxruntime 1.32, 2026-12-07: (1, 480, 640, 3) bytes to NCHW 197-227 us; floats 492-570
    # us (3.7 MB: 3 passes over the input from L3); a calibrated copy priced them 148 and 591
    fields = {"transpose_block_ns": BLOCK, "transpose_byte_block_ns": BYTE_BLOCK, "transpose_edge_ns": EDGE}
    frame = _moving((1, 480, 640, 3), (0, 3, 1, 2), "uint8")
    chip, plain = _chip(**fields), _chip()
    got, before = estimate(frame, chip, "cpu", "model"), estimate(frame, plain, "cpu", "model")
    assert got is not None and before is not None
    assert got.stall_ns == got.compute_ns == pytest.approx(921600 * EDGE)  # nothing for calibration to scale
    assert got.latency_ns == pytest.approx(212e3, rel=0.1)
    assert before.stall_ns == 0.0 and before.latency_ns < 0.5 * got.latency_ns
    floats = estimate(_moving((1, 480, 640, 3), (0, 3, 1, 2)), chip, "cpu", "model")
    unit = chip.units[0]
    far, waited = single_axis_far_bytes(_moving((1, 480, 640, 3), (0, 3, 1, 2)), 4, unit.l2_kib * 1024)  # type: ignore[union-attr]
    assert far == 5 * 3686400 and waited == 0.0  # read 3 times, written (and read for ownership) once
    assert floats is not None and floats.compute_ns == pytest.approx(max(921600 * EDGE, far / unit.l3_bandwidth_gbps))  # type: ignore[union-attr]


def test_a_transpose_moving_one_axis_within_l2_reads_nothing_twice() -> None:
    chip = _chip(transpose_block_ns=BLOCK, transpose_byte_block_ns=BYTE_BLOCK, transpose_edge_ns=EDGE)
    l2 = chip.units[0].l2_kib * 1024  # type: ignore[union-attr]
    assert single_axis_far_bytes(_moving((1, 56, 56, 32), (0, 3, 1, 2)), 4, l2) == (0.0, 0.0)
    assert single_axis_far_bytes(_moving((1, 56, 56, 32), (0, 3, 1, 2)), 4, 100_000)[0] > 0.0


#: An AMD EPYC (Zen 5) as `hwsim fingerprint` measured it, 2026-12-07 10:26: L2 853 KiB by the read
#: sweep, L3 154 GB/s, a loop keeping 19.5 MiB of it; 1 line a row per pass.
ZEN5 = {"l1_kib": 48.0, "l2_kib": 853.4, "l3_kib": 27091.9, "l1_bandwidth_gbps": 282.3, "l2_bandwidth_gbps": 295.7,
        "l3_bandwidth_gbps": 154.3, "loop_cache_kib": 19488.0, "transpose_block_ns": 0.106, "transpose_byte_block_ns": 0.0332,
        "transpose_edge_ns": 0.142, "transpose_outward_factor": 1.35, "transpose_pass_lines": 1.0}  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "perm", "us"),
    [
        # measured on that EPYC, 2026-12-07 (the kernel's profiled time, the fastest of 15 runs);
        # floats of NCHW to NHWC, planes 49 pages apart: 16 rows in one place of a page crowd the L1
        ((1, 16, 224, 224), (0, 2, 3, 1), 109.2),
        ((1, 32, 223, 224), (0, 2, 3, 1), 175.2),  # rows in 32 places
        ((1, 32, 176, 288), (0, 2, 3, 1), 239.2),  # planes 2 KiB past a page: 16 rows a place
        # to NCHW, rows 512 bytes apart: the passes on an eighth of the L2's sets, lost and waited on
        ((1, 48, 48, 128), (0, 3, 1, 2), 76.7),
        ((1, 48, 48, 120), (0, 3, 1, 2), 43.2),
        ((1, 56, 56, 128), (0, 3, 1, 2), 110.4),
        # rows 128 and 192 bytes apart: one line a row, fetched ahead (two a row priced them 1.5-1.7x)
        ((1, 224, 224, 32), (0, 3, 1, 2), 262.2),
        ((1, 96, 96, 48), (0, 3, 1, 2), 69.9),
    ],
)
def test_a_transpose_moving_one_axis_is_priced_by_the_sets_its_rows_fall_in(shape: tuple[int, ...], perm: tuple[int, ...], us: float) -> None:
    got = estimate(_moving(shape, perm), _chip(**ZEN5), "cpu", "model")
    assert got is not None
    assert got.latency_ns == pytest.approx(us * 1e3, rel=0.15)


def test_two_lines_a_row_price_a_pass_lost_from_l2_higher() -> None:
    op = _moving((1, 224, 224, 32), (0, 3, 1, 2))
    one, two = (estimate(op, _chip(**(ZEN5 | {"transpose_pass_lines": lines})), "cpu", "model") for lines in (1.0, 2.0))
    assert one is not None and two is not None
    assert two.latency_ns / one.latency_ns == pytest.approx(40 / 24, rel=0.05)  # bytes a float: 8 strips' reads and writes


@given(rows=st.integers(1, 5000), row_bytes=st.integers(1, 20000), pair=st.booleans())
def test_a_pass_takes_the_line_places_its_rows_fall_on(rows: int, row_bytes: int, pair: bool) -> None:
    lines = np.arange(rows, dtype=np.int64) * row_bytes // 64
    everything = np.concatenate([lines, lines ^ 1]) if pair else lines
    assert pass_slots(rows, row_bytes, pair) == np.unique(everything % 64).size  # its first period stands for all
    assert spread_bytes(64.0 * rows, pass_slots(rows, row_bytes, False)) >= 64.0 * rows


def test_a_transpose_moving_one_axis_inwards_takes_no_second_thread() -> None:
    # CI Xeon, 2026-12-07, two threads against one: NHWC -> NCHW 1.86-1.98x, NCHW -> NHWC 0.73-1.22x,
    # 12 heads' K^T 0.54x (a parallel section per head)
    from cost_models.cpu import intra_op_threads, parallel_sections

    outwards, inwards = _moving((1, 112, 112, 16), (0, 3, 1, 2)), _moving((1, 16, 112, 112), (0, 2, 3, 1))
    assert intra_op_threads(outwards, 2) == 2 and parallel_sections(outwards, 2) == 1
    assert intra_op_threads(inwards, 2) == 1 and parallel_sections(inwards, 1) == 0
    heads = _moving((1, 12, 64, 128), (0, 1, 3, 2))
    assert intra_op_threads(heads, 2) == 2 and parallel_sections(heads, 2) == 12


@pytest.mark.parametrize(
    ("equation", "shapes", "paths"),
    [
        # attention scores from (b, s, h, d): k put in label order (one axis moves), q to (h, q, d)
        # over five axes whose last has one element (walked: 215 us measured where the GEMM takes 76)
        ("bqhd,bkhd->bhqk", [(1, 128, 4, 64), (1, 128, 4, 64)], ["single", "walk", "copy", "copy", "copy"]),
        ("bhqk,bkhd->bqhd", [(1, 4, 128, 128), (1, 128, 4, 64)], ["single", "copy", "copy", "runs", "copy"]),
        ("ij,jk->ik", [(256, 256), (256, 256)], ["copy", "copy"]),  # B and the product copied
        ("bsd,ed->bse", [(1, 256, 256), (512, 256)], ["single", "copy", "copy", "copy", "copy"]),
    ],
)
def test_einsum_moves_follow_onnxruntimes_kernel(equation: str, shapes: list[tuple[int, ...]], paths: list[str]) -> None:
    moves = einsum_moves(equation, shapes)
    assert moves is not None
    assert [transpose_path(shape, perm) for shape, perm in moves] == paths


def test_einsum_moves_are_not_claimed_where_the_kernel_does_more() -> None:
    assert einsum_moves("ii,ij->j", [(4, 4), (4, 5)]) is None  # a diagonal
    assert einsum_moves("ij->ji", [(4, 5)]) is None  # one operand
    assert einsum_moves("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]) is None
    assert einsum_moves("ij,k->j", [(2, 3), (4,)]) is None  # i reduced in the first operand alone


_LABELS = "abcdefg"


@st.composite
def _contractions(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]], tuple[int, ...]]:
    """A two-operand Einsum: labels shared or not, an output of some of them, sizes of 1 to 4."""
    labels = draw(st.lists(st.sampled_from(_LABELS), min_size=2, max_size=6, unique=True))
    size = {lab: draw(st.integers(1, 4)) for lab in labels}
    a = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=4, unique=True))
    b = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=4, unique=True))
    both = [lab for lab in labels if lab in a or lab in b]
    out = draw(st.permutations(both)).copy()
    out = [lab for lab in out if lab in b or draw(st.booleans())]  # what only ``a`` has stays (no lone reduction)
    eq = f"{''.join(a)},{''.join(b)}->{''.join(out)}"
    return eq, [tuple(size[x] for x in a), tuple(size[x] for x in b)], tuple(size[x] for x in out)


@given(_contractions())
def test_einsum_moves_carry_the_operands_and_end_in_the_output(case: tuple[str, list[tuple[int, ...]], tuple[int, ...]]) -> None:
    equation, shapes, out_shape = case
    moves = einsum_moves(equation, shapes)
    if moves is None:  # only a label reduced on one side, then a ReduceSum runs
        return
    sizes = {math.prod(s) for s in shapes} | {math.prod(out_shape)}
    for shape, perm in moves:
        assert sorted(perm) == list(range(len(shape)))
        assert math.prod(shape) in sizes  # every move carries a whole operand or the product
    last_shape, last_perm = moves[-1]
    assert last_perm == tuple(range(len(last_shape)))  # the copy into the op's output
    assert math.prod(last_shape) == math.prod(out_shape)
    assert [d for d in last_shape if d != 1] == [d for d in out_shape if d != 1]


@given(_contractions(), st.permutations(_LABELS))
def test_einsum_moves_depend_on_where_labels_appear_not_on_their_letters(
    case: tuple[str, list[tuple[int, ...]], tuple[int, ...]], renamed: list[str]
) -> None:
    equation, shapes, _ = case
    swap = str.maketrans(_LABELS, "".join(renamed))
    assert einsum_moves(equation.translate(swap), shapes) == einsum_moves(equation, shapes)


def test_an_einsum_costs_its_gemm_at_the_matmul_efficiency_and_its_moves() -> None:
    q = Tensor("q", (1, 128, 4, 64), "float32")
    op = Op("e", "Einsum", "matmul", (q, q), (Tensor("s", (1, 4, 128, 128), "float32"),),
            {"equation": "bqhd,bkhd->bhqk"}, 4 * 128 * 128 * 64, 2 * 4 * 128 * 128 * 64)  # fmt: skip
    matmul = Op("m", "MatMul", "matmul", (Tensor("a", (4, 128, 64), "float32"), Tensor("b", (4, 64, 128), "float32")),
                (Tensor("c", (4, 128, 128), "float32"),), {}, op.macs, op.flops)  # fmt: skip
    chip = _chip(transpose_element_ns=WALK_NS, efficiency={"MatMul": 0.5})
    e, m = estimate(op, chip, "cpu", "model"), estimate(matmul, chip, "cpu", "model")
    assert e is not None and m is not None
    moved = 2 * 32768 + 2 * 65536  # k in label order, q's homogenized copy, the product twice
    assert e.stall_ns == pytest.approx(WALK_NS * 32768 + EINSUM_MOVE_NS * moved)
    assert e.compute_ns - e.stall_ns == pytest.approx(m.compute_ns - m.stall_ns)  # the same GEMM, MatMul's 0.5


def test_an_einsum_walk_costs_a_copy_where_the_unit_has_no_walk_rate() -> None:
    q = Tensor("q", (1, 128, 4, 64), "float32")
    op = Op("e", "Einsum", "matmul", (q, q), (Tensor("s", (1, 4, 128, 128), "float32"),),
            {"equation": "bqhd,bkhd->bhqk"}, 4 * 128 * 128 * 64, 2 * 4 * 128 * 128 * 64)  # fmt: skip
    cost = estimate(op, _chip(), "cpu", "model")
    assert cost is not None
    assert cost.stall_ns == pytest.approx(EINSUM_MOVE_NS * (3 * 32768 + 2 * 65536))  # the walked q among them


def _slice_model(shape: tuple[int, ...], starts: list[int], ends: list[int], axes: list[int], steps: list[int] | None) -> onnx.ModelProto:
    inits = [helper.make_tensor(k, TensorProto.INT64, [len(v)], v) for k, v in (("s", starts), ("e", ends), ("a", axes))]
    inputs = ["x", "s", "e", "a"]
    if steps is not None:
        inits.append(helper.make_tensor("p", TensorProto.INT64, [len(steps)], steps))
        inputs.append("p")
    graph = helper.make_graph([helper.make_node("Slice", inputs, ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _slice(shape: tuple[int, ...], starts: list[int], ends: list[int], axes: list[int], steps: list[int] | None = None) -> Op:
    return next(iter(from_model_proto(_slice_model(shape, starts, ends, axes, steps)).ops()))


@pytest.mark.parametrize(
    ("shape", "starts", "ends", "axes", "steps", "runs"),
    [
        ((1, 128, 256, 2), [0], [1], [3], None, (32768, 0)),  # FNet's real part: runs of one value
        ((1, 128, 512), [0], [256], [2], [1], (128, 0)),  # half of each row: one run a row
        ((1, 3, 640, 640), [0], [640], [-2], [2], (960, 0)),  # every other row: whole rows
        ((1, 3, 640, 640), [0, 0], [640, 640], [2, 3], [2, 2], (960, 307200)),  # YOLOv5's Focus: element by element
        ((1, 12, 65536), [0], [65536], [2], [2], (12, 393216)),  # Wave-U-Net's decimation
        ((4, 8), [0], [4], [0], None, (1, 0)),  # leading rows: one block
    ],
)
def test_runs_of_measured_slices(shape: tuple[int, ...], starts: list[int], ends: list[int], axes: list[int],
                                 steps: list[int] | None, runs: tuple[int, int]) -> None:  # fmt: skip
    assert slice_runs(_slice(shape, starts, ends, axes, steps)) == runs


def test_a_slice_pays_its_runs_where_the_unit_has_their_rates() -> None:
    # AMD EPYC, 2026-12-07: the real part of (1, 128, 256, 2) 129 us; (1, 12, 65536)[..., ::2] 362 us in a model
    chip, plain = _chip(slice_run_ns=3.9, slice_step_element_ns=0.92), _chip()
    real = _slice((1, 128, 256, 2), [0], [1], [3])
    decimate = _slice((1, 12, 65536), [0], [65536], [2], [2])
    for op, measured in ((real, 129e3), (decimate, 362e3)):
        got = estimate(op, chip, "cpu", "model")
        assert got is not None and got.latency_ns == pytest.approx(measured, rel=0.12)
        before = estimate(op, plain, "cpu", "model")
        assert before is not None and before.latency_ns < 0.4 * measured  # a copy of the bytes
    assert slice_ns(real, chip.units[0]) == pytest.approx(32768 * 3.9)  # type: ignore[arg-type]


@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_runs_times_their_length_is_the_output(dims: list[int], data: st.DataObject) -> None:
    # the runs of a step-1 slice tile its output: each run as long as the trailing axes it keeps
    axis = data.draw(st.integers(0, len(dims) - 1))
    keep = data.draw(st.integers(1, dims[axis]))
    op = _slice(tuple(dims), [0], [keep], [axis])
    runs, stepped = slice_runs(op)
    out = math.prod(op.outputs[0].shape)
    assert stepped == 0 and out % runs == 0
    assert out // runs == keep * math.prod(dims[axis + 1 :]) or keep == dims[axis]


@pytest.mark.parametrize(
    ("shape", "perm", "units"),
    [
        ((7, 42, 16, 8), (0, 2, 1, 3), 7 * 42 * 16),  # attention's heads of 8 floats: 32-byte units
        ((1, 64, 16, 3), (0, 2, 1, 3), 64 * 16),  # 12-byte units
        ((1, 128, 12, 64), (0, 2, 1, 3), 128 * 12),  # 256-byte units: a call each, their bytes the copy's
        ((1, 32, 56, 56), (0, 2, 3, 1), 0),  # 4-byte units: MLAS's blocks
        ((1, 56, 56, 2), (0, 3, 1, 2), 0),  # 8-byte units: onnxruntime's scalar loop
        ((1, 16, 4, 8400), (0, 3, 2, 1), 0),  # a walk
    ],
)
def test_a_transpose_moving_units_of_other_sizes_calls_memcpy_per_unit(shape: tuple[int, ...], perm: tuple[int, ...],
                                                                       units: int) -> None:  # fmt: skip
    unit = _chip(transpose_memcpy_ns=7.0).units[0]
    assert single_axis_memcpy_ns(_moving(shape, perm), unit, 4) == pytest.approx(7.0 * units)  # type: ignore[arg-type]
    assert single_axis_memcpy_ns(_moving(shape, perm), _chip().units[0], 4) == 0.0  # type: ignore[arg-type]


@given(st.lists(st.integers(1, 9), min_size=2, max_size=4), st.integers(3, 24), st.data())
def test_the_memcpy_calls_are_the_units_numpy_moves(dims: list[int], width: int, data: st.DataObject) -> None:
    # one axis moved, the axes after it carried as units of `width` floats: a call per unit,
    # as many as the elements over the unit's
    rank = len(dims) + 1
    src = data.draw(st.integers(0, rank - 2))
    dst = data.draw(st.integers(0, rank - 2).filter(lambda d: d != src))
    order = [a for a in range(rank - 1) if a != src]
    order.insert(dst, src)
    shape, perm = (*dims, width), (*order, rank - 1)
    unit = _chip(transpose_memcpy_ns=1.0).units[0]
    moves = single_axis_moves(shape, perm)
    calls = single_axis_memcpy_ns(_moving(shape, perm), unit, 4)  # type: ignore[arg-type]
    if moves is None or width * 4 in (4, 8):
        assert calls == 0.0
    else:
        assert calls == pytest.approx(math.prod(shape) / moves[3])


def test_a_transpose_of_heads_costs_a_call_per_head_and_its_bytes_at_no_efficiency() -> None:
    def cost(shape: tuple[int, ...], **fields: object) -> float:
        got = estimate(_moving(shape, (0, 2, 1, 3)), _chip(transpose_memcpy_ns=7.0, **fields), "cpu", "model")
        assert got is not None
        return got.latency_ns - got.overhead_ns

    small = (1, 256, 16, 8)  # 4,096 heads of 32 bytes: 128 KiB in and as much out, held by the 2 MiB L2 (130 GB/s)
    assert cost(small) == pytest.approx(4096 * 7.0 + 2**18 / 130.0)
    assert cost(small) == pytest.approx(cost(small, efficiency={"Transpose": 0.05}))  # no calibrated rate
    plain = estimate(_moving(small, (0, 2, 1, 3)), _chip(), "cpu", "model")
    assert plain is not None and cost(small) > 2 * (plain.latency_ns - plain.overhead_ns)


TAILS = {"vector_floats": 16, "softmax_tail_ns": 3.0, "softmax_tail_element_ns": 0.4, "softmax_in_place_tail_ns": 12.0}


def _scores(shape: tuple[int, ...], in_place: bool, axis: int = -1) -> Op:
    x = Tensor("x", shape, "float32")
    return Op("s", "Softmax", "softmax", (x,), (x,), {"axis": axis, **({IN_PLACE_ATTR: 1} if in_place else {})})


@given(st.lists(st.integers(1, 6), min_size=0, max_size=2), st.integers(1, 300), st.booleans())
def test_a_softmax_pays_per_row_for_its_partial_vector_only(outer: list[int], row: int, in_place: bool) -> None:
    unit = chip_from_dict(host_chip(**TAILS)).units[0]
    op = _scores((*outer, row), in_place)
    rows, tail = math.prod(outer), row % 16
    got = softmax_tails_ns(op, unit)
    if tail == 0:
        assert got == 0.0
        return
    apart = rows * (3.0 + 0.4 * tail)
    more = rows * 12.0 if in_place and -(-row // 16) <= IN_PLACE_TAIL_VECTORS else 0.0
    assert got == pytest.approx(apart + more)
    assert softmax_tails_ns(op, chip_from_dict(host_chip()).units[0]) == 0.0  # no vector: nothing


def test_in_place_tails_are_for_rows_over_the_last_axis() -> None:
    unit = chip_from_dict(host_chip(**TAILS)).units[0]
    # opset 13 over a middle axis: onnxruntime runs it on a transposed copy, never over its input
    assert softmax_tails_ns(_scores((4, 42, 42), True, axis=1), unit) == softmax_tails_ns(_scores((4, 42, 42), False, axis=1), unit)
    assert softmax_tails_ns(_scores((4, 42, 42), True), unit) > softmax_tails_ns(_scores((4, 42, 42), False), unit)


def test_a_softmax_of_partial_rows_costs_its_tails_beside_its_roofline() -> None:
    x = Tensor("x", (7, 16, 42, 42), "float32")
    op = Op("s", "Softmax", "softmax", (x,), (x,), {"axis": -1, IN_PLACE_ATTR: 1})
    with_tails, without = (estimate(op, chip_from_dict(host_chip(**f)), "cpu", "model") for f in (TAILS, {}))
    assert with_tails.compute_ns - without.compute_ns == pytest.approx(7 * 16 * 42 * (3.0 + 0.4 * 10 + 12.0))
    assert with_tails.stall_ns - without.stall_ns == pytest.approx(with_tails.compute_ns - without.compute_ns)


def test_a_log_softmax_pays_its_tails_but_nothing_more_in_place() -> None:
    unit = chip_from_dict(host_chip(**TAILS)).units[0]
    x = Tensor("x", (4, 42, 42), "float32")
    log = [Op("l", "LogSoftmax", "softmax", (x,), (x,), {"axis": -1, **m}) for m in ({IN_PLACE_ATTR: 1}, {})]
    assert softmax_tails_ns(log[0], unit) == softmax_tails_ns(log[1], unit) == pytest.approx(4 * 42 * (3.0 + 0.4 * 10))


@pytest.mark.parametrize(("shape", "threads"), [((7, 42, 16, 8), 1), ((1, 128, 12, 64), 1), ((1, 1024, 16, 8), 2), ((1, 256, 12, 64), 2)])
def test_a_memcpy_path_transpose_takes_a_second_thread_only_once_large(shape: tuple[int, ...], threads: int) -> None:
    from cost_models.cpu import intra_op_threads

    op = _moving(shape, (0, 2, 1, 3))
    assert (op.inputs[0].nbytes >= MEMCPY_PARALLEL_BYTES) is (threads == 2)
    assert intra_op_threads(op, 2) == threads
