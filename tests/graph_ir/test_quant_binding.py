"""The quantization binding: validation, rule order, selectors, and the conversions it inserts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph_ir.onnx_import import load_onnx
from graph_ir.quant_binding import (
    DTYPES,
    BindingError,
    QuantBinding,
    insert_conversions,
    load_binding,
    resolve,
    resolve_graph,
)
from tests.helpers import ROOT

DIGITS = ROOT / "examples" / "trained" / "digits_mlp.onnx"
OPS = [("fc1", "Gemm"), ("relu1", "Relu"), ("fc2", "Gemm"), ("relu2", "Relu"), ("fc3", "Gemm")]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "b.yaml"
    p.write_text(text)
    return p


class TestLoad:
    def test_valid(self, tmp_path: Path) -> None:
        b = load_binding(_write(tmp_path, "default: int4\nrules:\n  - name: fc3\n    dtype: fp32\n"))
        assert b.default == "int4" and b.rules[0].name == "fc3"

    @pytest.mark.parametrize(
        ("text", "where"),
        [
            ("rules:\n  - name: fc3\n    dtype: int5\n", "rules[0].dtype"),
            ("rules:\n  - name: fc3\n    dtype: int8\n    colour: red\n", "rules[0].colour"),
            ("rules:\n  - dtype: int8\n", "rules[0]"),
            ("rules:\n  - name: fc3\n", "rules[0]"),
            ("rules:\n  - regex: '('\n    dtype: int8\n", "rules[0]"),
            ("default: int3\n", "default"),
        ],
    )
    def test_errors_name_file_and_rule(self, tmp_path: Path, text: str, where: str) -> None:
        p = _write(tmp_path, text)
        with pytest.raises(BindingError) as e:
            load_binding(p)
        assert str(e.value).startswith(f"{p}: {where}")
        assert "\n" not in str(e.value)

    def test_not_a_mapping(self, tmp_path: Path) -> None:
        with pytest.raises(BindingError, match="a mapping"):
            load_binding(_write(tmp_path, "- int8\n"))


class TestResolve:
    def test_later_rule_overrides(self) -> None:
        b = QuantBinding.model_validate(
            {"default": "int8", "rules": [{"op_type": "Gemm", "dtype": "int4"}, {"name": "fc3", "dtype": "fp16"}]}
        )
        got = {n: q.dtype for n, q in resolve(b, OPS, "b").items()}
        assert got == {"fc1": "int4", "relu1": "int8", "fc2": "int4", "relu2": "int8", "fc3": "fp16"}

    def test_selectors_all_must_match(self) -> None:
        b = QuantBinding.model_validate(
            {"granularity": "per-tensor", "rules": [{"regex": "^fc[12]$", "op_type": "Gemm", "granularity": "per-channel"},
                                                    {"pattern": "relu*", "dtype": "fp32"}]}
        )  # fmt: skip
        got = resolve(b, OPS, "b")
        assert [n for n, q in got.items() if q.granularity == "per-channel"] == ["fc1", "fc2"]
        assert [n for n, q in got.items() if q.dtype == "fp32"] == ["relu1", "relu2"]

    def test_rule_matching_nothing_is_an_error(self) -> None:
        b = QuantBinding.model_validate({"rules": [{"name": "fc9", "dtype": "int8"}]})
        with pytest.raises(BindingError, match=r"^b.yaml: rules\[0\] \(name 'fc9'\) matches no op"):
            resolve(b, OPS, "b.yaml")


class TestConversions:
    def test_none_when_one_dtype(self) -> None:
        g = load_onnx(DIGITS)
        q = resolve_graph(QuantBinding(), g, "b")
        assert insert_conversions(g, q.dtypes, q.default) == (g, ())

    def test_fp32_tail(self) -> None:
        g = load_onnx(DIGITS)
        b = QuantBinding.model_validate({"default": "int4", "rules": [{"name": "fc3", "dtype": "fp32"}]})
        q = resolve_graph(b, g, "b")
        g2, conv = insert_conversions(g, q.dtypes, q.default)
        assert [(c.op_type, c.tensor, c.src_dtype, c.dst_dtype, c.consumers) for c in conv] == [
            ("DequantizeLinear", "relu2_out", "int4", "fp32", ("fc3",))
        ]
        assert list(g2.order) == ["fc1", "relu1", "fc2", "relu2", "relu2_out->fp32", "fc3"]
        assert [t.name for t in g2.op("fc3").activations] == ["relu2_out@fp32"]
        assert set(g2.g.edges) == {("fc1", "relu1"), ("relu1", "fc2"), ("fc2", "relu2"),
                                   ("relu2", "relu2_out->fp32"), ("relu2_out->fp32", "fc3")}  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(DTYPES), min_size=5, max_size=5), st.sampled_from(DTYPES))
def test_every_read_is_in_the_readers_dtype(dtypes: list[str], default: str) -> None:
    """After insertion, every float activation an op reads was produced in that op's dtype."""
    g = load_onnx(DIGITS)
    names = list(g.order)
    dt = dict(zip(names, dtypes))
    g2, conv = insert_conversions(g, dt, default)
    produced = {t.name: default for t in g2.inputs}
    all_dt = {**dt, **{c.op: c.dst_dtype for c in conv}}
    reads = {**dt, **{c.op: c.src_dtype for c in conv}}  # a conversion reads its source dtype
    for op in g2.ops():
        for t in op.activations:
            assert produced[t.name] == reads[op.name], (op.name, t.name)
        for t in op.outputs:
            produced[t.name] = all_dt[op.name]
    changes = sum(1 for a, b in zip([default, *dtypes], dtypes) if a != b)
    assert len(conv) == changes
    assert len(g2) == len(g) + changes
