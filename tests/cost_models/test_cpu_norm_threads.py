"""A layer normalization runs on as many threads as it has rows, however few elements: onnxruntime's
kernels hand each row to the pool as a task (``TryBatchParallelFor``), with no size threshold such
as an elementwise kernel's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cost_models.cpu import (
    PARALLEL_MIN_ELEMENTS,
    ROW_SPLIT_NORM_OP_TYPES,
    intra_op_threads,
    norm_rows,
)
from graph_ir.ir import Op, Tensor


def _norm(op_type: str, shape: tuple[int, ...], axis: int | None = None) -> Op:
    x = Tensor("x", shape, "float32")
    attrs = {} if axis is None else {"axis": axis}
    return Op("n", op_type, "norm", (x, x), (x,), attrs)


@given(st.sampled_from(ROW_SPLIT_NORM_OP_TYPES), st.integers(1, 512), st.integers(1, 1024), st.integers(1, 8))
def test_threads_follow_the_rows_not_the_elements(op_type: str, rows: int, width: int, threads: int) -> None:
    op = _norm(op_type, (1, rows, width))
    assert norm_rows(op) == rows
    assert intra_op_threads(op, threads) == min(threads, rows)


def test_a_small_norm_splits_where_an_elementwise_op_of_its_size_does_not() -> None:
    # 64 rows of 256 (an encoder's SkipLayerNormalization): 16 Ki elements, below any elementwise floor
    op = _norm("SkipLayerNormalization", (1, 64, 256))
    assert op.outputs[0].elements < min(PARALLEL_MIN_ELEMENTS.values())
    assert intra_op_threads(op, 2) == 2
    y = Tensor("y", (1, 64, 256), "float32")
    assert intra_op_threads(Op("a", "Add", "elementwise", (y, y), (y,)), 2) == 1


def test_the_axis_decides_the_rows() -> None:
    assert intra_op_threads(_norm("LayerNormalization", (1, 64, 256), axis=1), 4) == 1
    assert intra_op_threads(_norm("LayerNormalization", (8, 64, 256), axis=2), 4) == 4
    assert norm_rows(_norm("LayerNormalization", (8, 64, 256), axis=5)) == 0
