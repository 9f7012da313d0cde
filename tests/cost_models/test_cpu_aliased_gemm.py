"""cost_models.cpu.aliased_factor: a float GEMM whose A rows lie a multiple of 4 KiB apart runs at
the fingerprint's ``gemm_aliased_factor`` of its rate (MLAS's SGEMM reads rows of A that share L1 sets)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.cpu import ALIAS_STRIDE_BYTES, aliased_factor
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from tests.helpers import host_chip

FACTOR = 0.9


def _chip(**fields: float):  # type: ignore[no-untyped-def]
    data = host_chip(efficiency={"MatMul": 1.0, "Gemm": 1.0})
    data["units"][0].update(fields)
    return chip_from_dict(data)


def _matmul(m: int, k: int, n: int, op_type: str = "MatMul", dtype: str = "float32") -> Op:
    a = Tensor("a", (1, m, k), dtype)
    b = Tensor("b", (k, n), dtype, is_weight=True)
    y = Tensor("y", (1, m, n), "float32")
    return Op("m", op_type, "matmul", (a, b), (y,), {}, m * k * n, 2 * m * k * n)


@pytest.mark.parametrize(("k", "aliased"), [(1024, True), (3072, True), (4096, True), (768, False), (2304, False), (1280, False)])
def test_only_rows_a_multiple_of_4_kib_apart_slow_the_gemm(k: int, aliased: bool) -> None:
    op = _matmul(128, k, 768)
    plain = estimate(op, _chip(), "cpu", "model")
    slowed = estimate(op, _chip(gemm_aliased_factor=FACTOR), "cpu", "model")
    assert plain is not None and slowed is not None
    assert slowed.compute_ns == pytest.approx(plain.compute_ns / FACTOR if aliased else plain.compute_ns, rel=1e-9)


def test_one_row_products_and_integer_gemms_keep_their_rate() -> None:
    unit = _chip(gemm_aliased_factor=FACTOR).units[0]
    assert aliased_factor(_matmul(1, 2048, 768), unit, "fp32") == 1.0  # MLAS's GEMV path
    assert aliased_factor(_matmul(128, 2048, 768, "QLinearMatMul", "uint8"), unit, "int8") == 1.0  # A is packed
    assert aliased_factor(_matmul(128, 2048, 768), _chip().units[0], "fp32") == 1.0  # not measured: not costed


@given(st.integers(2, 512), st.integers(1, 8192), st.integers(1, 2048))
def test_the_factor_follows_the_row_stride_alone(m: int, k: int, n: int) -> None:
    unit = _chip(gemm_aliased_factor=FACTOR).units[0]
    assert aliased_factor(_matmul(m, k, n), unit, "fp32") == (FACTOR if (4 * k) % ALIAS_STRIDE_BYTES == 0 else 1.0)
