"""Tests for ``graph_ir.categories`` (one home for the op categories and their facts) and
``graph_ir.gemm`` (one GEMM lowering): every category has what each consumer needs, and the
lowering agrees with the MAC counts of ``graph_ir.op_metrics``."""

from __future__ import annotations

import functools
import re
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cost_models.base import model_for, registered_kinds
from graph_ir.categories import (
    CATEGORIES,
    CATEGORY_INFO,
    COSTED_CATEGORIES,
    EPILOGUE_CATEGORIES,
    GEMM_CATEGORIES,
    Category,
)
from graph_ir.gemm import GEMM_OP_TYPES, Gemm, gemm_of
from graph_ir.ir import ModelGraph, Op, Tensor
from graph_ir.onnx_import import load_onnx
from graph_ir.op_metrics import metrics
from hwsim.report.plots import CATEGORY_COLORS
from tests.helpers import MODELS


@functools.cache
def _bundled() -> tuple[ModelGraph, ...]:
    return tuple(load_onnx(p) for p in sorted(MODELS.glob("*.onnx")))


class TestCategories:
    def test_every_category_has_its_facts_and_a_colour_of_its_own(self) -> None:
        assert CATEGORIES == get_args(Category) == tuple(CATEGORY_INFO)
        assert list(CATEGORY_COLORS) == list(CATEGORIES)
        colours = [CATEGORY_COLORS[c] for c in CATEGORIES]
        assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours)
        assert len(set(colours)) == len(colours)

    def test_every_cost_model_has_an_efficiency_for_every_costed_category(self) -> None:
        assert set(registered_kinds()) >= {"cpu", "gpu", "npu", "dsp"}
        for kind in registered_kinds():
            table = model_for(kind).default_efficiency
            assert set(table) >= set(COSTED_CATEGORIES), kind
            assert all(0 < table[c] <= 1 for c in COSTED_CATEGORIES), kind

    def test_views_alone_cost_nothing_and_gemms_head_epilogues(self) -> None:
        assert [c for c in CATEGORIES if c not in COSTED_CATEGORIES] == ["layout"]
        assert GEMM_CATEGORIES == {"conv", "matmul"}
        assert EPILOGUE_CATEGORIES == {"activation", "elementwise"}

    def test_bundled_models_use_only_known_categories_and_gemm_op_types_agree(self) -> None:
        seen: set[str] = set()
        for graph in _bundled():
            for op in graph.ops():
                assert op.category in CATEGORY_INFO, (graph.name, op.op_type)
                assert (op.category in GEMM_CATEGORIES) == (op.op_type in GEMM_OP_TYPES), op.op_type
                seen.add(op.category)
        assert seen >= {"conv", "matmul", "layout", "rnn", "signal"}


def _op(op_type: str, inputs: tuple[Tensor, ...], out_shape: tuple[int, ...], attrs: dict[str, object]) -> Op:
    y = (Tensor("y", out_shape, "float32"),)
    m = metrics(op_type, inputs, y, attrs)
    return Op("n", op_type, m.category, inputs, y, attrs, m.macs, m.flops)


def _macs(g: Gemm) -> int:
    return g.batch * g.m * g.n * g.k


class TestGemmLowering:
    @given(st.integers(1, 4), st.integers(1, 64), st.integers(1, 64), st.integers(1, 64), st.booleans())
    def test_a_matmul_or_gemm_lowers_to_its_macs(self, batch: int, m: int, k: int, n: int, trans_a: bool) -> None:
        a = Tensor("a", (batch, m, k), "float32")
        b = Tensor("b", (k, n), "float32", is_weight=True)
        matmul = _op("MatMul", (a, b), (batch, m, n), {})
        assert gemm_of(matmul) == Gemm(batch, m, n, k)
        assert _macs(Gemm(batch, m, n, k)) == matmul.macs
        a2 = Tensor("a", (k, m) if trans_a else (m, k), "float32")
        gemm = _op("Gemm", (a2, b), (m, n), {"transA": int(trans_a)})
        assert gemm_of(gemm) == Gemm(1, m, n, k)
        assert _macs(Gemm(1, m, n, k)) == gemm.macs

    @given(st.integers(1, 4), st.sampled_from([1, 2, 4]), st.integers(1, 8), st.integers(1, 8),
           st.integers(1, 12), st.sampled_from([1, 3, 5]), st.booleans())  # fmt: skip
    def test_a_conv_lowers_to_its_macs(
        self, n: int, group: int, cin_g: int, cout_g: int, hw: int, kernel: int, depthwise: bool
    ) -> None:
        cin, cout = (group, group) if depthwise else (cin_g * group, cout_g * group)
        x = Tensor("x", (n, cin, hw, hw), "float32")
        w = Tensor("w", (cout, cin // group, kernel, kernel), "float32", is_weight=True)
        conv = _op("Conv", (x, w), (n, cout, hw, hw), {"group": group})
        lowered = gemm_of(conv)
        assert lowered is not None and _macs(lowered) == conv.macs
        if depthwise and group > 1:
            assert lowered == Gemm(1, n * hw * hw, cout, kernel * kernel)

    def test_other_ops_do_not_lower(self) -> None:
        x = Tensor("x", (1, 8), "float32")
        assert gemm_of(_op("Relu", (x,), (1, 8), {})) is None

    @pytest.mark.parametrize("op_type", GEMM_OP_TYPES)
    def test_every_gemm_op_type_is_a_gemm_category_and_lowers(self, op_type: str) -> None:
        x = Tensor("x", (1, 4, 6, 6), "float32")
        w = Tensor("w", (8, 4, 3, 3), "float32", is_weight=True)
        s = Tensor("s", (), "float32", is_weight=True)
        a, b = Tensor("a", (6, 4), "float32"), Tensor("b", (4, 8), "float32", is_weight=True)
        sample: dict[str, tuple[tuple[Tensor, ...], tuple[int, ...], dict[str, object]]] = {
            "Conv": ((x, w), (1, 8, 6, 6), {}),
            "ConvInteger": ((x, w), (1, 8, 6, 6), {}),
            "QLinearConv": ((x, s, s, w, s, s, s, s), (1, 8, 6, 6), {}),
            "ConvTranspose": ((x, Tensor("wt", (4, 8, 3, 3), "float32", is_weight=True)), (1, 8, 8, 8), {}),
            "Gemm": ((a, b), (6, 8), {}),
            "MatMul": ((a, b), (6, 8), {}),
            "MatMulInteger": ((a, b), (6, 8), {}),
            "QLinearMatMul": ((a, s, s, b, s, s, s, s), (6, 8), {}),
            "Einsum": ((a, b), (6, 8), {"equation": "mk,kn->mn"}),
        }
        assert set(sample) == set(GEMM_OP_TYPES)
        inputs, out_shape, attrs = sample[op_type]
        op = _op(op_type, inputs, out_shape, attrs)
        assert op.category in GEMM_CATEGORIES
        assert op.macs > 0
        lowered = gemm_of(op)
        if op_type != "QLinearConv":  # its first weight is a scale: no GEMM shape (kept as it was)
            assert lowered is not None and _macs(lowered) == op.macs
