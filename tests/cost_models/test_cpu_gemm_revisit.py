"""cost_models.cpu.gemm_revisit_ns: a float GEMM whose A and slices of C do not stay in L2 reads
them again from beyond it (MLAS's SGEMM runs every row of A against each slice of B, adding into
the same slice of C once per slice of K), at the fingerprint's ``gemm_revisit_gbps``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.cpu import MLAS_SGEMM_PACKED_STRIDE_K, gemm_revisit_ns, revisit_bytes
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from hwsim.host import kernels
from tests.helpers import host_chip

GBPS = 40.0
L2 = 2048 * 1024  # host_chip's L2, no run footprint


def _chip(**fields: float):  # type: ignore[no-untyped-def]
    data = host_chip(efficiency={"MatMul": 1.0, "Gemm": 1.0})
    data["units"][0].update(fields)
    return chip_from_dict(data)


def _matmul(m: int, k: int, n: int, op_type: str = "MatMul", dtype: str = "float32", batch: int = 0) -> Op:
    lead = (batch,) if batch else (1,)
    a = Tensor("a", (*lead, m, k), dtype)
    b = Tensor("b", (batch, k, n) if batch else (k, n), dtype, is_weight=not batch)
    y = Tensor("y", (*lead, m, n), "float32")
    return Op("m", op_type, "matmul", (a, b), (y,), {}, max(batch, 1) * m * k * n, 2 * max(batch, 1) * m * k * n)


def test_a_large_product_pays_its_passes_over_c_and_a_beyond_l2() -> None:
    op = _matmul(4096, 768, 768)
    plain = estimate(op, _chip(), "cpu", "model")
    paid = estimate(op, _chip(gemm_revisit_gbps=GBPS), "cpu", "model")
    assert plain is not None and paid is not None
    # C: three slices of K, two passes again, read and written; A: six slices of N, five reads again
    again = 2 * 2 * 4096 * 768 * 4 + 5 * 4096 * 768 * 4
    assert paid.compute_ns - plain.compute_ns == pytest.approx(again / GBPS, rel=1e-9)
    assert paid.stall_ns - plain.stall_ns == pytest.approx(again / GBPS, rel=1e-9)  # no efficiency scales it


def test_what_stays_in_l2_and_what_is_not_such_a_product_pays_nothing() -> None:
    unit = _chip(gemm_revisit_gbps=GBPS).units[0]
    assert gemm_revisit_ns(_matmul(256, 768, 768), unit, "fp32") == 0.0  # 0.75 MiB of A, 0.4 MiB a step
    assert gemm_revisit_ns(_matmul(16384, 128, 128), unit, "fp32") == 0.0  # one slice of K and of N
    assert gemm_revisit_ns(_matmul(1, 4096, 4096), unit, "fp32") == 0.0  # one row: MLAS's GEMV
    assert gemm_revisit_ns(_matmul(4096, 768, 768, "QLinearMatMul", "uint8"), unit, "int8") == 0.0
    assert gemm_revisit_ns(_matmul(4096, 768, 768), _chip().units[0], "fp32") == 0.0  # not measured
    # attention's batched products: each matrix alone, 128 rows of it
    assert gemm_revisit_ns(_matmul(128, 768, 768, batch=12), unit, "fp32") == 0.0
    assert gemm_revisit_ns(_matmul(2048, 768, 768, batch=2), unit, "fp32") == pytest.approx(
        2 * revisit_bytes(2048, 768, 768, 128, L2) / GBPS)


@given(st.integers(1, 8192), st.integers(1, 8192), st.integers(1, 4096), st.integers(1, 4096))
def test_what_is_read_again_grows_with_the_rows_up_to_every_pass(m: int, more: int, k: int, n: int) -> None:
    stride = MLAS_SGEMM_PACKED_STRIDE_K
    few, many = revisit_bytes(m, k, n, stride, L2), revisit_bytes(m + more, k, n, stride, L2)
    every_pass = (-(-k // stride) - 1) * 2 * m * n * 4 + (-(-n // 128) - 1) * m * k * 4
    assert 0.0 <= few <= every_pass * (1 + 1e-12)
    assert many >= few * (1 - 1e-12)


def test_the_probe_solves_for_the_rate_the_two_products_ran_at(monkeypatch: pytest.MonkeyPatch) -> None:
    (k, n), near, far = kernels.REVISIT_PROBE
    times = iter([2 * m * k * n / 200.0 + revisit_bytes(m, k, n, MLAS_SGEMM_PACKED_STRIDE_K, L2) / 35.0 for m in (near, far)])
    monkeypatch.setattr(kernels, "_fastest_ns", lambda *_: next(times))
    assert kernels.gemm_revisit_gbps(L2) == pytest.approx(35.0)
    flat = iter([2 * m * k * n / 200.0 for m in (near, far)])  # an L2 that keeps them: nothing to price
    monkeypatch.setattr(kernels, "_fastest_ns", lambda *_: next(flat))
    assert kernels.gemm_revisit_gbps(L2) is None
