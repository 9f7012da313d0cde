"""A float MatMul or Gemm computes whole vectors of output columns (cost_models.cpu.column_padding):
its FMA time is that of N rounded up to the unit's vector_floats."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.cpu import column_padding
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from tests.cost_models.test_cpu_batch_calls import matmul
from tests.helpers import host_chip


def compute_ns(op: Op, **unit: float) -> float:
    got = estimate(op, chip_from_dict(host_chip(**unit)), "cpu", "model")
    assert got is not None
    return got.compute_ns


@given(m=st.integers(8, 512), k=st.integers(8, 512), n=st.integers(1, 80))
def test_the_fmas_of_n_columns_cost_those_of_whole_vectors(m: int, k: int, n: int) -> None:
    op = matmul(1, m, k, n, weight_b=True)
    padded = -(-n // 16) * 16
    assert compute_ns(op, vector_floats=16) == pytest.approx(compute_ns(op) * padded / n)
    assert compute_ns(op, vector_floats=8) == pytest.approx(compute_ns(op) * (-(-n // 8) * 8) / n)


def test_integer_products_and_other_ops_are_not_padded() -> None:
    unit = chip_from_dict(host_chip(vector_floats=16)).units[0]
    a, b = Tensor("a", (64, 64), "int8"), Tensor("b", (64, 8), "int8", is_weight=True)
    assert column_padding(Op("q", "MatMulInteger", "matmul", (a, b), (Tensor("y", (64, 8), "int32"),)), unit) == 1.0  # type: ignore[arg-type]
    assert column_padding(Op("q", "MatMul", "matmul", (a, b), (Tensor("y", (64, 8), "int32"),)), unit) == 1.0  # type: ignore[arg-type]
    x = Tensor("x", (64, 8), "float32")
    assert column_padding(Op("r", "Relu", "activation", (x,), (x,)), unit) == 1.0  # type: ignore[arg-type]
