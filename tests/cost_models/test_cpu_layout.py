"""cost_models.cpu_layout: which onnxruntime Transposes walk a tensor one element at a time, the
Transposes of a Softmax over another axis than the last, and a Softmax's rows."""

from __future__ import annotations

import itertools

import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

from chips.schema import chip_from_dict
from cost_models.cpu_layout import softmax_axis, softmax_rows, transpose_walks, walk_ns
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.onnx_import import from_model_proto
from graph_ir.op_metrics import COERCED_AXIS_ATTR
from tests.helpers import host_chip

WALK_NS = 3.5
ROW_NS = 10.0


def _chip(**fields: float):  # type: ignore[no-untyped-def]
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
