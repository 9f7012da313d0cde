"""Data-dependent shapes and control flow at import (graph_ir.dynamic)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph_ir.dynamic import parse_assume, range_points
from graph_ir.ir import ModelError, ModelGraph
from graph_ir.onnx_import import from_model_proto
from hwsim.cli import main
from tests.graph_ir import dynamic_models as dm

NMS_SOURCE = "bound from max_output_boxes_per_class x classes x batch"


class TestBounds:
    def test_nms_bound_is_max_per_class_times_classes_times_batch(self) -> None:
        g = from_model_proto(dm.detector(max_per_class=7, classes=3))
        assert [(d.tensor, d.value, d.source) for d in g.assumed] == [("sel", 21, NMS_SOURCE)]
        assert g.op("pick").outputs[0].shape == (1, 21, 4)  # propagated through both Gathers
        assert g.op("post").outputs[0].shape == (1, 21, 4)

    def test_nms_bound_capped_by_box_count(self) -> None:
        g = from_model_proto(dm.detector(max_per_class=1000, classes=2, boxes=48))
        assert g.assumed[0].value == 48 * 2

    def test_nonzero_bound_is_element_count(self) -> None:
        g = from_model_proto(dm.nonzero_model())
        assert [(d.tensor, d.value) for d in g.assumed] == [("nz", 30)]
        assert g.op("tr").outputs[0].shape == (30, 3)

    def test_topk_runtime_k_bound_is_axis_length(self) -> None:
        g = from_model_proto(dm.topk_model())
        assert {d.value for d in g.assumed} == {100}
        assert g.op("relu").outputs[0].shape == (1, 100)

    def test_assume_overrides_bound_by_node_or_tensor(self) -> None:
        for name in ("nms", "sel"):
            g = from_model_proto(dm.detector(), assume={name: 5})
            assert [(d.tensor, d.value, d.source) for d in g.assumed] == [("sel", 5, "--assume")]
            assert g.op("post").outputs[0].shape == (1, 5, 4)

    def test_static_model_assumes_nothing(self) -> None:
        g = from_model_proto(dm.loop_model(2))
        assert g.assumed == () and g.warnings == ()

    @pytest.mark.parametrize(("assume", "words"), [({"zz": 1}, "no node or tensor"), ({"head": 1}, "no data-dependent")])
    def test_bad_assume_names(self, assume: dict[str, int], words: str) -> None:
        with pytest.raises(ModelError, match=words):
            from_model_proto(dm.detector(), assume=assume)


class TestControlFlow:
    @pytest.mark.parametrize("trips", [1, 3, 6])
    def test_static_loop_costs_trip_count_times_body(self, trips: int) -> None:
        g = from_model_proto(dm.loop_model(trips))
        body_macs = 64 * 64
        assert g.total_macs == trips * body_macs
        assert sum(1 for o in g.ops() if o.op_type == "MatMul") == trips

    def test_dynamic_loop_needs_assume(self) -> None:
        with pytest.raises(ModelError, match="--assume loop=N"):
            from_model_proto(dm.loop_model(None))
        g = from_model_proto(dm.loop_model(None), assume={"loop": 4})
        assert g.total_macs == 4 * 64 * 64
        assert [(d.tensor, d.value, d.source) for d in g.assumed] == [("loop", 4, "--assume")]

    @pytest.mark.parametrize(("cond", "op_type"), [(True, "MatMul"), (False, "Relu")])
    def test_constant_if_takes_its_branch(self, cond: bool, op_type: str) -> None:
        g = from_model_proto(dm.if_model(cond))
        assert [o.op_type for o in g.ops()] == [op_type, "Identity"]
        assert g.warnings == ()

    def test_dynamic_if_takes_slower_branch_with_warning(self) -> None:
        g = from_model_proto(dm.if_model(None))
        assert [o.op_type for o in g.ops()] == ["MatMul", "Identity"]
        assert len(g.warnings) == 1 and "slower branch" in g.warnings[0]


class TestParse:
    @given(st.integers(0, 10**6), st.integers(0, 10**6))
    def test_range_round_trip(self, a: int, b: int) -> None:
        lo, hi = min(a, b), max(a, b)
        assert parse_assume(f"n={lo}..{hi}") == ("n", lo, hi)
        points = range_points(lo, hi)
        assert points[0] == lo and points[-1] == hi and len(points) <= 5

    @pytest.mark.parametrize("text", ["n", "=3", "n=x", "n=1.5", "n=5..3", "n=-1"])
    def test_bad_values(self, text: str) -> None:
        with pytest.raises(ModelError):
            parse_assume(text)


@pytest.fixture()
def det_path(tmp_path: Path) -> Path:
    path = tmp_path / "det.onnx"
    onnx.save(dm.detector(), str(path))
    return path


class TestCli:
    def test_summary_lists_assumed_dims(self, det_path: Path, tmp_path: Path) -> None:
        out = tmp_path / "r"
        assert main(["run", "edge8", str(det_path), "--out", str(out), "--no-plots"]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["assumed_dims"] == [{"tensor": "sel", "value": 21, "source": NMS_SOURCE}]
        assert "assumed_range" not in summary

    def test_quant_keeps_assumed_dims(self, det_path: Path, tmp_path: Path) -> None:
        binding = tmp_path / "b.yaml"  # fp16 on one op: a conversion is inserted, the graph rebuilt
        binding.write_text("default: int8\nrules:\n  - name: post\n    dtype: fp16\n")
        out = tmp_path / "r"
        assert main(["run", "edge8", str(det_path), "--out", str(out), "--no-plots", "--quant", str(binding)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["quant"]["conversions"]  # the rebuilt graph is what ran
        assert summary["assumed_dims"] == [{"tensor": "sel", "value": 21, "source": NMS_SOURCE}]

    def test_range_gives_p50_p99(self, det_path: Path, tmp_path: Path) -> None:
        out = tmp_path / "r"
        assert main(["run", "edge8", str(det_path), "--out", str(out), "--no-plots", "--assume", "nms=1..40"]) == 0
        summary = json.loads((out / "summary.json").read_text())
        rng = summary["assumed_range"]
        values = [p["value"] for p in rng["points"]]
        latencies = [p["latency_ms"] for p in rng["points"]]
        assert values == [1, 11, 20, 30, 40]
        assert latencies == sorted(latencies) and latencies[0] < latencies[-1]  # more boxes cost more
        assert latencies[0] <= rng["latency_p50_ms"] <= rng["latency_p99_ms"] <= latencies[-1]
        assert summary["assumed_dims"][0]["value"] == 40  # the reports show the range's HI
        assert summary["latency_ms"] == latencies[-1]

    @pytest.mark.parametrize("assume", ["zz=3", "nms=5..3", "nms=x", "nms=1..2,sel=1..3"])
    def test_bad_assume_exits_2_with_one_line(
        self, det_path: Path, tmp_path: Path, assume: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = ["run", "edge8", str(det_path), "--out", str(tmp_path / "r")]
        for a in assume.split(","):
            args += ["--assume", a]
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("hwsim: error:")
        assert not (tmp_path / "r").exists()


def test_inserted_conversions_keep_assumed_dims_and_warnings() -> None:
    from graph_ir.quant_binding import insert_conversions

    graph = from_model_proto(dm.detector())
    graph = ModelGraph(
        graph.name, graph.g, graph.inputs, graph.outputs, graph.producer, graph.order, graph.assumed, ("a warning",)
    )
    dtypes = {n: "fp16" if n == "post" else "int8" for n in graph.order}
    rebuilt, conversions = insert_conversions(graph, dtypes, "int8")
    assert conversions and rebuilt.order != graph.order
    assert rebuilt.assumed == graph.assumed and rebuilt.warnings == ("a warning",)


def test_loop_latency_grows_by_one_body_per_iteration() -> None:
    """Latency(M trips) - latency(1 trip) is (M - 1) bodies: each iteration costs the same
    within the per-op overhead (the body is a serial chain, so iterations do not overlap)."""
    from chips.schema import load_chip
    from hwsim.pipeline import run_graph

    chip = load_chip("edge8")
    ms = {m: run_graph(from_model_proto(dm.loop_model(m, n=256)), chip).analysis.latency_ms for m in (1, 2, 8)}
    body = ms[2] - ms[1]
    assert body > 0
    assert ms[8] - ms[1] == pytest.approx(7 * body, rel=0.05)


class TestScanAndNesting:
    CELL_MACS = 2 * 16 * 16  # rnn_body(16): two [1, 16] x [16, 16] MatMuls

    @pytest.mark.parametrize("steps", [1, 7, 256])
    def test_static_scan_unrolls_its_length(self, steps: int) -> None:
        g = from_model_proto(dm.scan_model(steps))
        assert g.total_macs == steps * self.CELL_MACS
        assert sum(1 for o in g.ops() if o.op_type == "MatMul") == 2 * steps
        assert g.warnings == () and all(o.repeat == 1 for o in g.ops())
        assert g.op("ys/Concat").outputs[0].shape == (steps, 1, 16)

    def test_long_scan_costs_body_once_times_length_with_note(self) -> None:
        g = from_model_proto(dm.scan_model(1000))
        assert g.total_macs == 1000 * self.CELL_MACS
        assert sorted(o.repeat for o in g.ops() if o.op_type == "MatMul") == [1000, 1000]
        assert g.op("ys/Concat").outputs[0].shape == (1000, 1, 16)
        assert len(g.warnings) == 1 and "multiplied by 1000" in g.warnings[0]

    @pytest.mark.parametrize(("outer", "steps", "repeat"), [(3, 4, 1), (100, 40, 40)])
    def test_nested_scan_in_loop(self, outer: int, steps: int, repeat: int) -> None:
        g = from_model_proto(dm.nested_model(outer, steps))
        assert g.total_macs == outer * steps * self.CELL_MACS
        assert {o.repeat for o in g.ops() if o.op_type == "MatMul"} == {repeat}
        assert ("multiplied" in " ".join(g.warnings)) == (repeat > 1)

    def test_assume_names_an_inner_loop(self) -> None:
        model = dm.nested_model(3, 4, inner_loop=1)
        with pytest.raises(ModelError, match="--assume inner=N"):
            from_model_proto(model)
        g = from_model_proto(model, assume={"inner": 5})
        assert g.total_macs == 3 * (4 * self.CELL_MACS + 5 * 16 * 16)
        assert [(d.tensor, d.value, d.source) for d in g.assumed] == [("inner", 5, "--assume")]

    @settings(max_examples=15, deadline=None)
    @given(steps=st.integers(1, 600), n=st.sampled_from([4, 8, 24]), outer=st.integers(1, 3))
    def test_total_macs_is_trips_times_body(self, steps: int, n: int, outer: int) -> None:
        """Unrolled or multiplied, the MACs are the trip counts' product times the body's."""
        g = from_model_proto(dm.nested_model(outer, steps, n))
        assert g.total_macs == outer * steps * 2 * n * n


@pytest.mark.parametrize("kind", ["loop", "scan"])
def test_multiplied_body_costs_the_unrolled_work(kind: str) -> None:
    """A loop over the unroll limit, costed as its body once times its trip count: its ops'
    summed costs equal those of the same loop fully unrolled (the same work, op by op). The
    engine's latency is not compared: the unrolled graph overlaps a Scan's slicing with the
    state chain and fuses each iteration's MatMul + Relu, which the multiplied body does not."""
    from chips.schema import load_chip
    from cost_models.table import cost_table
    from graph_ir.rewrites import PassOptions, get_pass

    chip = load_chip("edge8")
    model = dm.loop_model(300, n=256) if kind == "loop" else dm.scan_model(300, n=128)
    full = from_model_proto(get_pass("unroll_loop")(model, PassOptions(max_unroll=300)).model)
    multiplied = from_model_proto(model)
    assert len(multiplied) < 10 and len(full) > 300 and multiplied.total_macs == full.total_macs
    work = {}
    for key, g in (("full", full), ("multiplied", multiplied)):
        table = cost_table(g, chip)
        work[key] = sum(table.best(o.name).latency_ns for o in g.ops())
    assert work["multiplied"] == pytest.approx(work["full"], rel=1e-9)
