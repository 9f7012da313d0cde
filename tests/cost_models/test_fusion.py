"""Tests for ``cost_models.fusion``: which epilogues fuse, what they save, and the pipeline hook."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict
from cost_models.base import model_for
from cost_models.fusion import fuse, fuses
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph, Tensor, deployed_bytes
from hwsim.pipeline import run, run_graph
from hwsim.report.summary import build_summary
from hwsim.sim.engine import simulate
from tests.helpers import ROOT, fixed_schedule, graph_from_ops


def _chip(npu_fuses: list[str] | None = None, npu_sram_kib: float = 512, only_npu: bool = False) -> Chip:
    npu: dict[str, Any] = {
        "name": "npu", "kind": "npu", "domain": "d", "clock_mhz": 1000, "mac_rows": 16, "mac_cols": 16,
        "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": npu_sram_kib, "op_overhead_ns": 1000,
        "vector_ops_per_cycle": 64,
    }  # fmt: skip
    if npu_fuses is not None:
        npu["fuses"] = npu_fuses
    if only_npu:
        return chip_from_dict({"name": "fz", "dram": {"bandwidth_gbps": 4.0, "latency_ns": 100},
                               "domains": [{"name": "d"}], "units": [npu]})  # fmt: skip
    return chip_from_dict({
        "name": "fz", "dram": {"bandwidth_gbps": 4.0, "latency_ns": 100}, "domains": [{"name": "d"}],
        "units": [
            npu,
            {"name": "cpu", "kind": "cpu", "domain": "d", "clock_mhz": 1000, "flops_per_cycle": {"int8": 32},
             "l1_kib": 32, "l2_kib": 256, "op_overhead_ns": 1000},
            {"name": "dsp", "kind": "dsp", "domain": "d", "clock_mhz": 1000, "flops_per_cycle": {"int8": 64},
             "sram_kib": 256},
        ],
    })  # fmt: skip


def _t(name: str, c: int = 32, hw: int = 28) -> Tensor:
    return Tensor(name, (1, c, hw, hw), "float32")


W = Tensor("w", (32, 32, 3, 3), "float32", is_weight=True)
W2 = Tensor("w2", (32, 32, 3, 3), "float32", is_weight=True)


def conv_relu() -> ModelGraph:
    return graph_from_ops("cr", [_t("x")], [("conv", "Conv", [_t("x"), W], [_t("c")]),
                                           ("relu", "Relu", [_t("c")], [_t("y")])])  # fmt: skip


class TestFuse:
    def test_conv_relu_on_the_npu_moves_fewer_bytes_and_is_faster(self) -> None:
        chip, g = _chip(), conv_relu()
        where = {"conv": ("npu", 0), "relu": ("npu", 0)}
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, {n: u for n, (u, _) in where.items()})
        assert [(p.producer, p.consumer, p.unit) for p in fused.pairs] == [("conv", "relu", "npu")]
        c_bytes = deployed_bytes(_t("c"), "int8")
        assert fused.saved_dram_bytes == 2 * c_bytes
        before, after = table.costs, fused.table.costs
        assert after["conv"]["npu"].dram_write_bytes == before["conv"]["npu"].dram_write_bytes - c_bytes
        assert after["relu"]["npu"].dram_read_bytes == before["relu"]["npu"].dram_read_bytes - c_bytes
        assert after["relu"]["npu"].compute_ns == before["relu"]["npu"].compute_ns  # the relu still runs
        assert after["relu"]["cpu"] == before["relu"]["cpu"]  # only the placed unit's entry changes
        t0 = simulate(g, chip, table, fixed_schedule(g, chip, table, where))
        t1 = simulate(g, chip, fused.table, fixed_schedule(g, chip, fused.table, where))
        assert t1.makespan_ps < t0.makespan_ps
        assert sum(r.dram_bytes for r in t1.ops) == sum(r.dram_bytes for r in t0.ops) - 2 * c_bytes

    def test_the_given_table_is_left_as_it_was(self) -> None:
        """The fused rows are new; the table fuse was given (its rows shared where unchanged) is not touched."""
        chip, g = _chip(), conv_relu()
        table = cost_table(g, chip)
        before = {op: dict(row) for op, row in table.costs.items()}
        fused = fuse(g, chip, table, {"conv": "npu", "relu": "npu"}).table
        assert {op: dict(row) for op, row in table.costs.items()} == before
        assert fused.costs["conv"]["npu"] != before["conv"]["npu"] and fused.costs["conv"] is not table.costs["conv"]

    def test_ops_on_different_units_do_not_fuse(self) -> None:
        chip, g = _chip(), conv_relu()
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, {"conv": "npu", "relu": "cpu"})
        assert fused.pairs == () and fused.saved_dram_bytes == 0
        assert fused.table.costs == table.costs

    def test_a_conv_whose_output_has_two_consumers_does_not_fuse(self) -> None:
        chip = _chip()
        g = graph_from_ops("two", [_t("x")], [
            ("conv", "Conv", [_t("x"), W], [_t("c")]),
            ("relu", "Relu", [_t("c")], [_t("r")]),
            ("conv2", "Conv", [_t("c"), W2], [_t("c2")]),
        ])  # fmt: skip
        fused = fuse(g, chip, cost_table(g, chip), dict.fromkeys(g.order, "npu"))
        assert fused.pairs == ()

    def test_silu_and_residual_chains_fuse_whole(self) -> None:
        chip = _chip()
        g = graph_from_ops("silu", [_t("x"), _t("skip")], [
            ("conv", "Conv", [_t("x"), W], [_t("c")]),
            ("sig", "Sigmoid", [_t("c")], [_t("s")]),
            ("mul", "Mul", [_t("c"), _t("s")], [_t("m")]),
            ("add", "Add", [_t("m"), _t("skip")], [_t("a")]),
            ("relu", "Relu", [_t("a")], [_t("y")]),
        ])  # fmt: skip
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, dict.fromkeys(g.order, "npu"))
        assert [p.consumer for p in fused.pairs] == ["sig", "mul", "add", "relu"]
        assert {p.producer for p in fused.pairs} == {"conv"}
        # c, s, m, a stay on chip: written once less each and read back once less per reader
        b = deployed_bytes(_t("c"), "int8")
        assert fused.saved_dram_bytes == b * (4 + 5)
        # the residual input and the final output still go through DRAM
        assert fused.table.costs["add"]["npu"].dram_read_bytes == b
        assert fused.table.costs["relu"]["npu"].dram_write_bytes == b

    def test_the_unit_decides_what_it_fuses(self) -> None:
        chip, g = _chip(npu_fuses=[]), conv_relu()
        assert fuse(g, chip, cost_table(g, chip), dict.fromkeys(g.order, "npu")).pairs == ()
        assert fuses(chip.unit("npu")) == frozenset()
        assert fuses(_chip().unit("npu")) == model_for("npu").default_fuses
        assert fuses(chip.unit("dsp")) == frozenset()  # DSPs fuse nothing by default

    def test_cpu_fuses_activations_as_onnxruntime_does(self) -> None:
        chip, g = _chip(), conv_relu()
        fused = fuse(g, chip, cost_table(g, chip), dict.fromkeys(g.order, "cpu"))
        assert [(p.producer, p.consumer, p.unit) for p in fused.pairs] == [("conv", "relu", "cpu")]

    def test_an_output_tile_that_does_not_fit_twice_is_not_fused(self) -> None:
        chip = _chip(npu_sram_kib=1)  # 1 KiB cannot hold a tile of the conv's 25 KB output twice
        g = conv_relu()
        table = cost_table(g, chip)
        assert 2 * deployed_bytes(_t("c"), "int8") / table.costs["conv"]["npu"].tiles > 1024
        assert fuse(g, chip, table, dict.fromkeys(g.order, "npu")).pairs == ()

    def test_empty_graph(self) -> None:
        chip = _chip()
        g = graph_from_ops("empty", [], [])
        fused = fuse(g, chip, cost_table(g, chip), {})
        assert fused.pairs == () and fused.saved_dram_bytes == 0

    @settings(max_examples=25, deadline=None)
    @given(n=st.integers(1, 6), units=st.lists(st.sampled_from(["npu", "cpu"]), min_size=7, max_size=7))
    def test_fusion_never_adds_traffic_or_time(self, n: int, units: list[str]) -> None:
        chip = _chip()
        ops = [("conv", "Conv", [_t("x"), W], [_t("t0")])]
        for i in range(n):
            ops.append((f"e{i}", "Relu" if i % 2 else "Sigmoid", [_t(f"t{i}")], [_t(f"t{i + 1}")]))
        g = graph_from_ops("chain", [_t("x")], ops)
        where = dict(zip(g.order, units))
        table = cost_table(g, chip)
        fused = fuse(g, chip, table, where)
        for name in g.order:
            a, b = table.costs[name][where[name]], fused.table.costs[name][where[name]]
            assert b.dram_bytes <= a.dram_bytes and b.latency_ns <= a.latency_ns
            assert b.compute_ns == a.compute_ns
        run_on_npu = 0
        for name in g.order[1:]:
            if where[name] != where["conv"]:
                break
            run_on_npu += 1
        assert len(fused.pairs) == run_on_npu

    @settings(max_examples=25, deadline=None)
    @given(
        units=st.lists(st.lists(st.sampled_from(["npu", "cpu"]), min_size=7, max_size=7), min_size=2, max_size=3),
        modes=st.lists(st.sampled_from(["auto", "on", "off"]), min_size=3, max_size=3),
    )
    def test_fusing_again_on_the_same_table_gives_what_a_fresh_table_does(
        self, units: list[list[str]], modes: list[str]
    ) -> None:
        # fuse() keeps the last graph's wiring and group decisions; a new table starts afresh
        chip = _chip()
        ops = [("conv", "Conv", [_t("x"), W], [_t("t0")])]
        for i in range(6):
            ops.append((f"e{i}", "Relu" if i % 2 else "Sigmoid", [_t(f"t{i}")], [_t(f"t{i + 1}")]))
        g = graph_from_ops("chain", [_t("x")], ops)
        placements = [dict(zip(g.order, where)) for where in units]
        fresh = [fuse(g, chip, cost_table(g, chip), p, m) for p, m in zip(placements, modes)]
        table = cost_table(g, chip)
        assert [fuse(g, chip, table, p, m) for p, m in zip(placements, modes)] == fresh


class TestPipeline:
    def test_run_graph_fuses_and_the_summary_lists_the_pairs(self) -> None:
        chip, g = _chip(only_npu=True), conv_relu()
        plain = run_graph(g, chip, fuse_ops=False)
        fused = run_graph(g, chip)
        assert build_summary(fused).to_json()["fused_ops"] == [["conv", "relu"]]
        assert build_summary(plain).to_json()["fused_ops"] == []
        assert fused.analysis.dram_bytes < plain.analysis.dram_bytes
        assert fused.analysis.latency_ms < plain.analysis.latency_ms


MODELS = ROOT / "examples" / "models"


class TestRealModels:
    def test_resnet18_on_rk3588_fuses_its_relus_and_moves_fewer_bytes(self) -> None:
        fused = run("rk3588", MODELS / "resnet18.onnx")
        graph = fused.graph
        assert fused.fused, "no fusion on ResNet-18"
        for pair in fused.fused:
            assert graph.op(pair.producer).op_type in ("Conv", "Gemm")
            assert graph.op(pair.consumer).op_type in ("Relu", "Add")
            assert fused.schedule.placements[pair.consumer].unit == pair.unit
        plain = run_graph(graph, fused.chip, fuse_ops=False)
        assert fused.analysis.dram_bytes < plain.analysis.dram_bytes
        assert build_summary(fused).to_json()["fused_ops"] == [[p.producer, p.consumer] for p in fused.fused]

    def test_rk3588_npu_does_not_fuse_silu(self) -> None:
        # the NPU's fuse list leaves SiLU out (chips/rk3588.yaml); the GPU, where the re-planned
        # default now runs part of the model, fuses it, so only the NPU's pairs are checked
        result = run("rk3588", MODELS / "yolov5n.onnx")
        g, unit = result.graph, {n: p.unit for n, p in result.schedule.placements.items()}
        silu_on_npu = [n for n in g.order if g.op(n).op_type == "Sigmoid" and unit[n] == "npu"]
        assert silu_on_npu  # there is SiLU on the NPU that could have been fused
        assert not any(g.op(p.consumer).op_type in ("Sigmoid", "Mul") and unit[p.consumer] == "npu" for p in result.fused)


class TestRknnZooModels:
    """The weightless zoo builders keep the published MAC counts (examples/zoo_rknn.py)."""

    @pytest.mark.parametrize(
        ("name", "gmacs"),
        [("resnet50_v2", 4.10), ("mobilenetv1", 0.569), ("yolov5n", 2.25), ("yolov5s_relu", 8.25)],
    )
    def test_macs_match_the_published_figure(self, name: str, gmacs: float) -> None:
        from graph_ir import load_onnx

        graph = load_onnx(MODELS / f"{name}.onnx")
        assert abs(graph.total_macs / 1e9 / gmacs - 1) <= 0.01
        assert (MODELS / f"{name}.onnx").stat().st_size < 300 * 1024  # weightless
