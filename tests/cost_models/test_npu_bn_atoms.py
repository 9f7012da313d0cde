"""BatchNormalization folding (``cost_models.fusion``) and input-channel atoms (``NpuUnit.channel_atom``)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict, load_chip
from chips.variants import restrict
from cost_models.fusion import fuse
from cost_models.npu import array_cycles, atom_padded, gemm_of
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph, Op, Tensor, deployed_bytes
from hwsim.sim.engine import simulate
from tests.helpers import ROOT, fixed_schedule, graph_from_ops


def _chip(fuses: list[str] | None = None, atom: int | None = None) -> Chip:
    npu: dict[str, Any] = {
        "name": "npu", "kind": "npu", "domain": "d", "clock_mhz": 1000, "mac_rows": 32, "mac_cols": 32,
        "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 512, "op_overhead_ns": 1000,
        "vector_ops_per_cycle": 64,
    }  # fmt: skip
    if fuses is not None:
        npu["fuses"] = fuses
    if atom is not None:
        npu["channel_atom"] = atom
    return chip_from_dict({"name": "bn", "dram": {"bandwidth_gbps": 4.0, "latency_ns": 100},
                           "domains": [{"name": "d"}], "units": [npu]})  # fmt: skip


RKNN_LIKE = ["Relu", "Add", "BatchNormalization"]


def _t(name: str, c: int = 32, hw: int = 28) -> Tensor:
    return Tensor(name, (1, c, hw, hw), "float32")


def _w(name: str, cout: int = 32, cin: int = 32, k: int = 3) -> Tensor:
    return Tensor(name, (cout, cin, k, k), "float32", is_weight=True)


def _bn(x: str, y: str) -> tuple[str, str, list[Tensor], list[Tensor]]:
    params = [Tensor(f"{y}_{p}", (32,), "float32", is_weight=True) for p in ("s", "b", "m", "v")]
    return (f"bn_{y}", "BatchNormalization", [_t(x), *params], [_t(y)])


def _makespan_ps(g: ModelGraph, chip: Chip) -> int:
    table = fuse(g, chip, cost_table(g, chip), dict.fromkeys(g.order, "npu")).table
    return simulate(g, chip, table, fixed_schedule(g, chip, table, dict.fromkeys(g.order, ("npu", 0)))).makespan_ps


class TestBatchNormFolding:
    def test_conv_bn_relu_costs_exactly_like_conv_relu(self) -> None:
        chip = _chip(RKNN_LIKE)
        with_bn = graph_from_ops("cbr", [_t("x")], [
            ("conv", "Conv", [_t("x"), _w("w")], [_t("c")]), _bn("c", "b"), ("relu", "Relu", [_t("b")], [_t("y")]),
        ])  # fmt: skip
        without = graph_from_ops("cr", [_t("x")], [
            ("conv", "Conv", [_t("x"), _w("w")], [_t("c")]), ("relu", "Relu", [_t("c")], [_t("y")]),
        ])  # fmt: skip
        fused = fuse(with_bn, chip, cost_table(with_bn, chip), dict.fromkeys(with_bn.order, "npu"))
        assert [(p.producer, p.consumer) for p in fused.pairs] == [("conv", "bn_b"), ("conv", "relu")]
        bn = fused.table.costs["bn_b"]["npu"]
        assert (bn.compute_ns, bn.memory_ns, bn.overhead_ns, bn.dram_bytes, bn.latency_ns) == (0, 0, 0, 0, 0)
        assert "folded into conv" in bn.note
        assert _makespan_ps(with_bn, chip) == _makespan_ps(without, chip)

    def test_a_bn_after_an_add_that_feeds_the_skip_path_runs_as_its_own_layer_with_its_relu(self) -> None:
        # pre-activation residual block: conv1 -> add1 -> BN -> ReLU -> conv2 -> add2(+add1)
        chip = _chip(RKNN_LIKE)
        g = graph_from_ops("preact", [_t("x")], [
            ("conv1", "Conv", [_t("x"), _w("w1")], [_t("c1")]),
            ("add1", "Add", [_t("c1"), _t("x")], [_t("a1")]),
            _bn("a1", "b"),
            ("relu", "Relu", [_t("b")], [_t("r")]),
            ("conv2", "Conv", [_t("r"), _w("w2")], [_t("c2")]),
            ("add2", "Add", [_t("c2"), _t("a1")], [_t("y")]),
        ])  # fmt: skip
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, dict.fromkeys(g.order, "npu"))
        # add2 reads a1 but also conv2's output, not ready when conv1 runs: it stays out of conv1's group
        assert [(p.producer, p.consumer) for p in fused.pairs] == [
            ("conv1", "add1"), ("bn_b", "relu"), ("conv2", "add2")
        ]
        before, after = table.costs["bn_b"]["npu"], fused.table.costs["bn_b"]["npu"]
        assert after.compute_ns == before.compute_ns  # a per-channel affine, not folded into weights
        assert after.overhead_ns == before.overhead_ns == 1000 + 100  # one layer set-up + DRAM latency
        a1 = deployed_bytes(_t("a1"), "int8")
        params = sum(deployed_bytes(t, "int8") for t in g.op("bn_b").weights)
        assert after.dram_read_bytes == a1 + params  # the sum comes back from DRAM (the skip path reads it too)
        assert after.dram_write_bytes == 0  # its ReLU rides along: b never reaches DRAM
        assert fused.table.costs["relu"]["npu"].overhead_ns == 100  # no set-up; its output's DRAM latency

    def test_a_bn_after_an_add_with_no_other_reader_joins_the_conv_layer_unfolded(self) -> None:
        chip = _chip(RKNN_LIKE)
        g = graph_from_ops("post", [_t("x"), _t("skip")], [
            ("conv", "Conv", [_t("x"), _w("w")], [_t("c")]),
            ("add", "Add", [_t("c"), _t("skip")], [_t("a")]),
            _bn("a", "b"),
            ("relu", "Relu", [_t("b")], [_t("y")]),
        ])  # fmt: skip
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, dict.fromkeys(g.order, "npu"))
        assert [p.consumer for p in fused.pairs] == ["add", "bn_b", "relu"]
        bn = fused.table.costs["bn_b"]["npu"]
        assert bn.compute_ns == table.costs["bn_b"]["npu"].compute_ns > 0
        assert "folded" not in bn.note

    def test_a_conv_output_read_by_more_than_its_bn_is_not_folded(self) -> None:
        chip = _chip(RKNN_LIKE)
        g = graph_from_ops("two", [_t("x")], [
            ("conv", "Conv", [_t("x"), _w("w")], [_t("c")]), _bn("c", "b"),
            ("add", "Add", [_t("c"), _t("b")], [_t("y")]),
        ])  # fmt: skip
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, dict.fromkeys(g.order, "npu"))
        assert [p.consumer for p in fused.pairs] == ["bn_b", "add"]
        assert fused.table.costs["bn_b"]["npu"].compute_ns == table.costs["bn_b"]["npu"].compute_ns > 0

    def test_a_unit_that_does_not_list_batchnormalization_keeps_it_as_a_layer(self) -> None:
        chip = _chip(["Relu", "Add"])
        g = graph_from_ops("cb", [_t("x")], [("conv", "Conv", [_t("x"), _w("w")], [_t("c")]), _bn("c", "b")])
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, dict.fromkeys(g.order, "npu"))
        assert fused.pairs == () and fused.table.costs == table.costs


def _conv(cin: int, cout: int, k: int, hw: int, group: int = 1) -> Op:
    x = Tensor("x", (1, cin, hw, hw), "float32")
    w = Tensor("w", (cout, cin // group, k, k), "float32", is_weight=True)
    y = Tensor("y", (1, cout, hw, hw), "float32")
    return Op("c", "Conv", "conv", (x, w), (y,), {"group": group}, hw * hw * cout * cin // group * k * k, 0)


class TestChannelAtom:
    @pytest.mark.parametrize(
        ("cin", "cout", "k", "group", "k_eff"),
        [
            (3, 32, 3, 1, 32 * 9),  # RGB stem: a whole atom per kernel position
            (16, 32, 3, 1, 32 * 9),
            (32, 32, 3, 1, 32 * 9),  # already aligned: unchanged
            (33, 32, 1, 1, 64),
            (3, 32, 6, 1, 32 * 36),  # yolov5's 6x6 stem
            (64, 64, 3, 64, 9),  # depthwise: one channel's window, not padded
            (64, 64, 3, 4, 32 * 9),  # grouped: 16 channels per group padded to 32
        ],
    )
    def test_k_is_padded_per_kernel_position(self, cin: int, cout: int, k: int, group: int, k_eff: int) -> None:
        op = _conv(cin, cout, k, 8, group)
        gemm = gemm_of(op)
        assert gemm is not None
        assert atom_padded(op, gemm, 32) == (*gemm[:3], k_eff)
        assert atom_padded(op, gemm, None) == gemm

    def test_a_matmul_pads_its_reduction(self) -> None:
        a = Tensor("a", (1, 8, 40), "float32")
        b = Tensor("b", (40, 64), "float32", is_weight=True)
        op = Op("m", "MatMul", "matmul", (a, b), (Tensor("y", (1, 8, 64), "float32"),))
        assert atom_padded(op, (1, 8, 64, 40), 32) == (1, 8, 64, 64)

    def test_the_cost_model_uses_the_padded_reduction(self) -> None:
        g = graph_from_ops("stem", [_t("x", 3, 64)], [("conv", "Conv", [_t("x", 3, 64), _w("w", 32, 3)],
                                                                [_t("y", 32, 64)])])  # fmt: skip
        plain = cost_table(g, _chip()).costs["conv"]["npu"]
        padded = cost_table(g, _chip(atom=32)).costs["conv"]["npu"]
        m = 64 * 64
        assert plain.compute_ns == array_cycles((1, m, 32, 27), 32, 32)  # 1 GHz, 1 MAC/PE/cycle
        assert padded.compute_ns == array_cycles((1, m, 32, 288), 32, 32)
        assert padded.compute_ns / plain.compute_ns == pytest.approx(9, rel=0.01)  # 9 folds of rows, not 1

    def test_rk3588_sets_32_and_keeps_the_scalesim_default_elsewhere(self) -> None:
        npu = load_chip("rk3588").unit("npu")
        assert getattr(npu, "channel_atom", None) == 32
        assert _chip().unit("npu").channel_atom is None  # type: ignore[union-attr]

    @settings(max_examples=40, deadline=None)
    @given(
        cin=st.integers(1, 96), cout=st.integers(1, 96), k=st.sampled_from([1, 3, 5]),
        depthwise=st.booleans(), atom=st.sampled_from([4, 8, 16, 32]),
        rows=st.sampled_from([8, 16, 32]), dataflow=st.sampled_from(["ws", "os", "is"]),
    )  # fmt: skip
    def test_atom_padding_never_makes_a_conv_faster(
        self, cin: int, cout: int, k: int, depthwise: bool, atom: int, rows: int, dataflow: str
    ) -> None:
        op = _conv(cin, cin, k, 6, cin) if depthwise else _conv(cin, cout, k, 6)
        gemm = gemm_of(op)
        assert gemm is not None
        padded = atom_padded(op, gemm, atom)
        assert padded[:3] == gemm[:3] and padded[3] >= gemm[3]
        if not depthwise:
            assert padded[3] % atom == 0 and padded[3] - gemm[3] < atom * k * k
            assert (padded == gemm) == (cin % atom == 0)
        assert array_cycles(padded, rows, rows, dataflow) >= array_cycles(gemm, rows, rows, dataflow)


MODELS = ROOT / "examples" / "models"


def test_resnet50_v2_on_rk3588_folds_its_33_conv_bns_and_keeps_18_as_layers() -> None:
    from graph_ir import load_onnx
    from hwsim.pipeline import run_graph

    graph = load_onnx(MODELS / "resnet50_v2.onnx")
    result = run_graph(graph, restrict(load_chip("rk3588"), "npu:1"), "int8")
    bns = [n for n in graph.order if graph.op(n).op_type == "BatchNormalization"]
    folded = {p.consumer for p in result.fused if graph.op(p.producer).op_type == "Conv"
              and graph.op(p.consumer).op_type == "BatchNormalization"
              and graph.op(p.consumer).inputs[0] in graph.op(p.producer).outputs}  # fmt: skip
    heads = {p.producer for p in result.fused if graph.op(p.producer).op_type == "BatchNormalization"}
    assert len(bns) == 51 and len(folded) == 33
    assert len(heads) == 13  # BN -> ReLU after a residual Add (or the first pool) that also feeds the skip
    assert all(result.table.costs[n]["npu"].compute_ns == 0 for n in folded)
    assert math.isclose(result.analysis.latency_ms, 1000 / 110.1, rel_tol=0.15)
