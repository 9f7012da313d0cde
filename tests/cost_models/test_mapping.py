"""Per-op mapping signatures (cost_models.mapping): each knob moves the cost the way the physics says,
legality refuses what it must, legalize repairs."""

from __future__ import annotations

import networkx as nx
import pytest

from chips.schema import load_chip
from cost_models.base import KernelKnobs, model_for
from cost_models.mapping import KNOBS, OpMapping, choices, legality, legalize
from cost_models.table import UnplaceableError, cost_table
from graph_ir.ir import ModelGraph, Op, Tensor

RK = load_chip("rk3588")
NPU = RK.unit("npu")


def _graph(*ops: Op) -> ModelGraph:
    dag = nx.DiGraph()
    for op in ops:
        dag.add_node(op.name, op=op)
    ins = tuple(t for op in ops for t in op.activations)
    outs = tuple(t for op in ops for t in op.outputs)
    return ModelGraph("g", dag, ins, outs, {t.name: op.name for op in ops for t in op.outputs}, tuple(o.name for o in ops))


def _conv(name: str, c_in: int, c_out: int, hw: int, k: int, stride: int = 1) -> Op:
    out_hw = hw // stride
    x = Tensor(f"{name}_x", (1, c_in, hw, hw), "float32")
    w = Tensor(f"{name}_w", (c_out, c_in, k, k), "float32", is_weight=True)
    y = Tensor(f"{name}_y", (1, c_out, out_hw, out_hw), "float32")
    macs = c_out * c_in * k * k * out_hw * out_hw
    attrs = {"strides": [stride, stride], "pads": [k // 2] * 4}
    return Op(name, "Conv", "conv", (x, w), (y,), attrs, macs, 2 * macs)


def _matmul(name: str, m: int, k: int, n: int) -> Op:
    a = Tensor(f"{name}_a", (1, m, k), "float32")
    b = Tensor(f"{name}_b", (k, n), "float32", is_weight=True)
    y = Tensor(f"{name}_y", (1, m, n), "float32")
    return Op(name, "MatMul", "matmul", (a, b), (y,), {}, m * k * n, 2 * m * k * n)


def _npu_ns(op: Op, **knobs: str) -> float:
    cost = model_for("npu").estimate(op, NPU, RK, "int8", KernelKnobs(**knobs))
    assert cost is not None
    return cost.latency_ns


class TestOpMapping:
    def test_round_trip_and_default(self) -> None:
        m = OpMapping(unit="npu", cores=2, dataflow="os", layout="im2col", tile="single", fusion=True)
        assert tuple(m.as_dict()) == KNOBS
        assert OpMapping.from_dict(m.as_dict()) == m
        assert OpMapping().is_default() and OpMapping().as_dict() == {}
        assert not OpMapping(fusion=False).is_default()

    @pytest.mark.parametrize("bad", [{"colour": 1}, {"cores": 0}, {"cores": True}, {"dataflow": "xs"},
                                     {"fusion": "yes"}, {"tile": "triple"}])
    def test_from_dict_refuses(self, bad: dict) -> None:
        with pytest.raises(ValueError, match=next(iter(bad))):
            OpMapping.from_dict(bad)


class TestKnobPhysics:
    def test_os_beats_ws_on_a_gemm_with_few_rows(self) -> None:
        # M = 4 rows stream through 32 x 32 weight tiles: ws pays the fill and drain per fold for
        # 4 useful cycles; os keeps the 4 x N outputs and streams the long K
        op = _matmul("mm", 4, 2048, 2048)
        assert _npu_ns(op, dataflow="os") < 0.5 * _npu_ns(op, dataflow="ws")
        assert _npu_ns(op) == _npu_ns(op, dataflow=NPU.dataflow)

    def test_ws_beats_os_on_a_gemm_with_many_rows_and_short_k(self) -> None:
        op = _matmul("mm", 4096, 32, 32)
        assert _npu_ns(op, dataflow="ws") < _npu_ns(op, dataflow="os")

    def test_im2col_speeds_up_a_three_channel_stem_and_reads_more(self) -> None:
        stem = _conv("stem", 3, 64, 224, 7, stride=2)
        atom = model_for("npu").estimate(stem, NPU, RK, "int8")
        packed = model_for("npu").estimate(stem, NPU, RK, "int8", KernelKnobs(layout="im2col"))
        assert atom is not None and packed is not None
        assert packed.latency_ns < atom.latency_ns and packed.compute_ns < atom.compute_ns / 4
        assert packed.dram_read_bytes > 5 * atom.dram_read_bytes  # the im2col matrix, ~kh*kw/stride^2 x

    def test_im2col_is_not_offered_where_it_gains_nothing(self) -> None:
        g = _graph(_conv("pw", 64, 64, 28, 1), _conv("wide", 64, 64, 28, 3), _matmul("mm", 64, 64, 64))
        t = cost_table(g, RK)
        for name in ("pw", "wide", "mm"):  # 1x1, channels already whole atoms, matmul
            assert choices(g.op(name), RK, t)["layout"] == (None,)
            assert legality(g.op(name), RK, t, OpMapping(layout="im2col")) is not None

    def test_single_buffering_cuts_rereads_of_an_oversized_working_set(self) -> None:
        op = _matmul("big", 1024, 1024, 1024)  # 1 MiB in, 1 MiB weights (int8) vs 384 KiB SRAM
        double = model_for("npu").estimate(op, NPU, RK, "int8")
        single = model_for("npu").estimate(op, NPU, RK, "int8", KernelKnobs(tile="single"))
        assert double is not None and single is not None
        assert single.dram_read_bytes < double.dram_read_bytes
        assert single.overhead_ns > double.overhead_ns  # loads and compute take turns
        assert "single-buffered" in single.note

    def test_single_buffering_is_not_offered_when_it_fits_half_the_sram(self) -> None:
        g = _graph(_matmul("small", 16, 64, 64))
        assert choices(g.op("small"), RK, cost_table(g, RK))["tile"] == (None,)

    def test_a_knob_the_unit_does_not_offer_is_a_bug_in_the_model(self) -> None:
        with pytest.raises(ValueError, match="offers no layout"):
            model_for("npu").estimate(_matmul("mm", 4, 64, 64), NPU, RK, "int8", KernelKnobs(layout="im2col"))


class TestTable:
    def test_pin_keeps_only_the_unit_and_memo_keys_on_knobs(self) -> None:
        a, b = _matmul("a", 4, 2048, 2048), _matmul("b", 4, 2048, 2048)
        g = _graph(a, b)
        t = cost_table(g, RK, mapping={"a": OpMapping(unit="cpu_big"), "b": OpMapping(dataflow="os")})
        assert set(t.costs["a"]) == {"cpu_big"}
        plain = cost_table(g, RK)
        assert t.costs["b"]["npu"].latency_ns < plain.costs["b"]["npu"].latency_ns
        assert t.costs["b"]["cpu_big"] == plain.costs["b"]["cpu_big"]  # the NPU's knob leaves the CPU alone
        assert t.knobs_of("b") == KernelKnobs(dataflow="os") and t.knobs_of("a") == KernelKnobs()

    def test_default_mapping_changes_nothing(self) -> None:
        g = _graph(_conv("c", 3, 16, 64, 3))
        assert cost_table(g, RK, mapping={"c": OpMapping()}).costs == cost_table(g, RK).costs

    def test_pin_to_a_unit_that_cannot_run_it(self) -> None:
        x, y = Tensor("x", (1, 8), "float32"), Tensor("y", (1, 8), "float32")
        g = _graph(Op("u", "NonMaxSuppression", "unknown", (x,), (y,)))
        with pytest.raises(UnplaceableError, match="pinned unit 'npu' cannot"):
            cost_table(g, RK, mapping={"u": OpMapping(unit="npu")})


class TestLegality:
    def setup_method(self) -> None:
        self.g = _graph(_conv("c", 16, 32, 56, 3), _matmul("mm", 4, 64, 64))
        self.t = cost_table(self.g, RK)

    def _why(self, name: str, **knobs: object) -> str | None:
        return legality(self.g.op(name), RK, self.t, OpMapping(**knobs))  # type: ignore[arg-type]

    def test_legal(self) -> None:
        assert self._why("c", unit="npu", cores=3, dataflow="os", layout="im2col") is None
        assert self._why("c") is None

    @pytest.mark.parametrize(("knobs", "why"), [
        ({"unit": "tpu"}, "has no unit"),
        ({"unit": "npu", "cores": 4}, "cannot be split over 4"),
        ({"cores": 2}, "cannot be split"),  # unpinned: the CPU may get it and splits no Conv
        ({"unit": "cpu_big", "dataflow": "os"}, "dataflow 'os' is not offered"),
        ({"unit": "gpu", "layout": "im2col"}, "layout"),
    ])
    def test_refused(self, knobs: dict, why: str) -> None:
        assert why in (self._why("c", **knobs) or "")

    def test_dataflow_on_a_non_gemm_op(self) -> None:
        x, y = Tensor("x", (1, 64, 8, 8), "float32"), Tensor("y", (1, 64, 8, 8), "float32")
        g = _graph(Op("r", "Relu", "activation", (x,), (y,), {}, 0, 4096))
        assert "dataflow" in (legality(g.op("r"), RK, cost_table(g, RK), OpMapping(dataflow="os")) or "")

    def test_choices_are_each_legal_and_legalize_repairs(self) -> None:
        op = self.g.op("c")
        for knob, values in choices(op, RK, self.t).items():
            for v in values:
                m = OpMapping(**{knob: v, "unit": "npu" if knob == "cores" else None})  # type: ignore[arg-type]
                assert legality(op, RK, self.t, m) is None, (knob, v)
        bad = OpMapping(unit="cpu_big", cores=9, dataflow="os", layout="im2col", fusion=True)
        fixed = legalize(op, RK, self.t, bad)
        assert legality(op, RK, self.t, fixed) is None
        assert fixed.unit == "cpu_big" and fixed.dataflow is None and fixed.layout is None
        assert legalize(op, RK, self.t, OpMapping(unit="npu", cores=9)).cores == 3
