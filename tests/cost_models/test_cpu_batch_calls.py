"""A batched float MatMul over run-time matrices pays one MLAS call per matrix beside its FMAs
(cost_models.cpu.batch_calls_ns, the fingerprint's fp32_batch_call_ns)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.base import OpCost
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from tests.helpers import host_chip

CALL_NS = 150.0


def matmul(batch: int, m: int, k: int, n: int, weight_b: bool = False) -> Op:
    a = Tensor("a", (batch, m, k), "float32")
    b = Tensor("b", (k, n) if weight_b else (batch, k, n), "float32", is_weight=weight_b)
    return Op("mm", "MatMul", "matmul", (a, b), (Tensor("y", (batch, m, n), "float32"),), {}, batch * m * k * n,
              2 * batch * m * k * n)  # fmt: skip


def cost(op: Op, **unit: float) -> OpCost:
    got = estimate(op, chip_from_dict(host_chip(**unit)), "cpu", "model")
    assert got is not None
    return got


@given(batch=st.integers(2, 512), m=st.integers(2, 64), k=st.integers(1, 256), n=st.integers(1, 64))
def test_each_matrix_adds_a_call(batch: int, m: int, k: int, n: int) -> None:
    # a pass beside the FMAs, no efficiency scales it (it shows where the product is core-bound)
    op = matmul(batch, m, k, n)
    plain, called = cost(op), cost(op, fp32_batch_call_ns=CALL_NS)
    assert called.stall_ns == pytest.approx(plain.stall_ns + batch * CALL_NS)
    assert called.compute_ns == pytest.approx(plain.compute_ns + batch * CALL_NS)
    assert called.latency_ns >= plain.latency_ns


@pytest.mark.parametrize("op", [matmul(1, 9, 64, 9), matmul(64, 1, 64, 9), matmul(64, 9, 64, 9, weight_b=True)],
                         ids=["one matrix", "one row (its own call)", "over weights"])  # fmt: skip
def test_no_call_for_one_matrix_one_row_or_weights(op: Op) -> None:
    assert cost(op, fp32_batch_call_ns=CALL_NS) == cost(op)
