"""``hwsim sweep``: the sweep file, the front and its hypervolume, resuming, Dask, bad input."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.cli import main
from hwsim.studies.sweep import (
    OBJECTIVES,
    ObjectiveUnavailable,
    _peak_memory_mib,
    batch_size,
    load_sweep,
)
from hwsim.studies.sweep_front import hypervolume, pareto_mask
from tests.helpers import MODELS, one_line_error

SMALL = f"""\
models: [{MODELS / "mlp_mnist.onnx"}, {MODELS / "resnet18.onnx"}]
chips: [rk3588]
grid:
  precision: [int8, fp16]
  npu.sram_kib: [256, 1024]
  prune: [0.0, 0.5]
  policy: [heft]
objectives: [latency_ms, energy_mj]
constraints: {{latency_ms: "<= 2.5"}}
"""


def _write(tmp: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sweep")
    assert main(["sweep", str(_write(tmp, SMALL)), "--out", str(tmp / "out"), "--workers", "2"]) == 0
    return tmp / "out"


class TestSweepRun:
    def test_writes_every_point_and_a_front_per_model(self, pool_run: Path) -> None:
        assert sorted(p.name for p in pool_run.iterdir()) == [
            "front.csv", "pareto.png", "points.csv", "report.html", "results.sqlite",
        ]  # fmt: skip
        rows = _rows(pool_run / "points.csv")
        assert len(rows) == 16
        assert {r["model"] for r in rows} == {"mlp_mnist", "resnet18"}
        infeasible = [r for r in rows if r["feasible"] == "False"]
        assert infeasible and all("latency_ms" in r["reason"] and "<= 2.5" in r["reason"] for r in infeasible)
        assert all(float(r["latency_ms"]) > 2.5 for r in infeasible)
        front = _rows(pool_run / "front.csv")
        for model in ("mlp_mnist", "resnet18"):
            feasible = [r for r in rows if r["model"] == model and r["feasible"] == "True"]
            mine = [r for r in front if r["model"] == model]
            assert mine
            for f in mine:  # no feasible point dominates a front point
                fv = (float(f["latency_ms"]), float(f["energy_mj"]))
                assert not any(
                    (float(r["latency_ms"]), float(r["energy_mj"])) < fv
                    and float(r["latency_ms"]) <= fv[0] and float(r["energy_mj"]) <= fv[1]
                    for r in feasible
                )

    def test_pruning_lowers_latency(self, pool_run: Path) -> None:
        rows = _rows(pool_run / "points.csv")

        def lat(prune: str) -> float:
            return next(
                float(r["latency_ms"]) for r in rows
                if r["model"] == "resnet18" and r["prune"] == prune and r["precision"] == "int8"
            )  # fmt: skip

        assert lat("0.5") < lat("0.0")

    def test_report_shows_front_and_hypervolume(self, pool_run: Path) -> None:
        html = (pool_run / "report.html").read_text(encoding="utf-8")
        assert "hypervolume" in html and "resnet18" in html and "npu.sram_kib" in html
        assert (pool_run / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    def test_rerun_resumes_and_says_so(self, pool_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
        before = (pool_run / "points.csv").read_text()
        capsys.readouterr()
        spec = pool_run.parent / "sweep.yaml"
        assert main(["sweep", str(spec), "--out", str(pool_run), "--workers", "1"]) == 0
        assert "resuming: 16 of 16 points already in results.sqlite" in capsys.readouterr().err
        assert (pool_run / "points.csv").read_text() == before

    def test_dask_local_cluster_gives_the_same_points(self, pool_run: Path, tmp_path: Path) -> None:
        spec = pool_run.parent / "sweep.yaml"
        out = tmp_path / "dask"
        assert main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--dask", "local"]) == 0
        assert (out / "points.csv").read_text() == (pool_run / "points.csv").read_text()
        assert (out / "front.csv").read_text() == (pool_run / "front.csv").read_text()

    def test_a_tcp_scheduler_gives_the_same_points(self, pool_run: Path, tmp_path: Path) -> None:
        """--dask with a real scheduler address: a LocalCluster listening on a free tcp port."""
        from distributed import LocalCluster

        spec = pool_run.parent / "sweep.yaml"
        out = tmp_path / "tcp"
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                          scheduler_port=0, dashboard_address=None) as cluster:  # fmt: skip
            address = cluster.scheduler_address
            assert address.startswith("tcp://")
            assert main(["sweep", str(spec), "--out", str(out), "--dask", address]) == 0
        assert (out / "points.csv").read_bytes() == (pool_run / "points.csv").read_bytes()
        assert (out / "front.csv").read_bytes() == (pool_run / "front.csv").read_bytes()

    def test_budget_runs_a_search_within_its_trials(self, tmp_path: Path) -> None:
        text = SMALL.replace(f", {MODELS / 'resnet18.onnx'}", "")
        out = tmp_path / "search"
        assert main(["sweep", str(_write(tmp_path, text)), "--out", str(out), "--budget", "6", "--workers", "1"]) == 0
        rows = _rows(out / "points.csv")
        assert 1 <= len(rows) <= 6 and {r["model"] for r in rows} == {"mlp_mnist"}


BAD = {
    "unknown field": (SMALL + "colour: red\n", "colour: unknown field"),
    "empty grid": (SMALL.split("grid:")[0] + "grid: {}\nobjectives: [latency_ms]\n", "grid: empty"),
    "no values": (SMALL.replace("[int8, fp16]", "[]"), "grid.precision: no values"),
    "unknown chip field": (SMALL.replace("npu.sram_kib", "npu.sram_kb"), "grid.npu.sram_kb"),
    "bad precision": (SMALL.replace("fp16", "fp7"), "grid.precision: 'fp7'"),
    "unknown objective": (SMALL.replace("[latency_ms, energy_mj]", "[latency_ms, speed]"), "objectives[1]"),
    "constraint on no objective": (SMALL.replace("{latency_ms:", "{lat:"), "constraints.lat: unknown objective"),
    "bad constraint": (SMALL.replace('"<= 2.5"', '"about 3"'), "constraints.latency_ms: 'about 3'"),
    "unquoted constraint": (SMALL.replace('"<= 2.5"', "2.5"), "constraints.latency_ms: 2.5: expected a quoted condition"),
    "no model": (SMALL.replace("mlp_mnist.onnx", "nope.onnx"), "models[0]"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_sweep_file_is_one_line_exit_2_nothing_written(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = BAD[case]
    spec = _write(tmp_path, text)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = one_line_error(capsys)
    assert str(spec) in err and expected in err
    assert not (tmp_path / "out").exists()


def _relu_onnx(path: Path, dims: list[int | str]) -> Path:
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("prune", [False, True])
def test_a_model_it_cannot_import_is_refused_before_anything_is_written(
    prune: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    static, dynamic = _relu_onnx(tmp_path / "static.onnx", [1, 16, 32]), _relu_onnx(tmp_path / "dynamic.onnx", ["N", 16, 32])
    grid = "  precision: [int8, fp16]\n" + ("  prune: [0.5]\n" if prune else "")
    spec = _write(tmp_path, f"models: [{static}, {dynamic}]\nchips: [rk3588]\ngrid:\n{grid}objectives: [latency_ms]\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--workers", "1"]) == 2
    err = one_line_error(capsys)
    assert err.startswith(f"hwsim: error: {spec}: models[1]: {dynamic}: input 'x' has a dynamic shape [N, 16, 32]; ")
    assert "make_dynamic_shape_fixed" in err and "--input-shape" not in err
    assert not (tmp_path / "out").exists()


def test_unreachable_dask_scheduler_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _write(tmp_path, SMALL)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--dask", "tcp://127.0.0.1:1"]) == 2
    assert "--dask tcp://127.0.0.1:1: cannot reach a Dask scheduler" in one_line_error(capsys)
    assert not (tmp_path / "out").exists()


def test_memory_and_power_objectives_read_the_run(tmp_path: Path, rk3588) -> None:
    from graph_ir import load_onnx
    from hwsim.analysis.memory import DRAM
    from hwsim.pipeline import run_graph
    from hwsim.report.summary import build_summary
    from tests.helpers import MODELS

    summary = build_summary(run_graph(load_onnx(MODELS / "resnet18.onnx"), rk3588))
    dram = next(p for p in summary.peak_memory if p.place == DRAM)
    assert _peak_memory_mib(summary, DRAM) == dram.peak_bytes / (1 << 20) > 1.0
    with pytest.raises(ObjectiveUnavailable, match="no place 'sram9'"):
        _peak_memory_mib(summary, "sram9")
    assert summary.power is not None and OBJECTIVES["peak_power_w"].read(summary) == summary.power.chip.peak_w > 0
    assert OBJECTIVES["peak_dram_mib"].available() and OBJECTIVES["peak_power_w"].available()
    sweep = load_sweep(_write(tmp_path, SMALL.replace("[latency_ms, energy_mj]", "[peak_dram_mib, peak_power_w]")))
    assert [o for o in sweep.objectives] == ["peak_dram_mib", "peak_power_w"]


def test_batch_keeps_overhead_under_one_percent() -> None:
    size = batch_size(point_s=0.004, overhead_s=0.0008, points=10_000, workers=2)
    assert 0.0008 / (size * 0.004) <= 0.01
    assert batch_size(point_s=0.3, overhead_s=0.0008, points=10_000, workers=2) == 1


def _dominates(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(a <= b) and np.any(a < b))


def _union_volume(points: np.ndarray, ref: np.ndarray) -> float:
    """The volume of the union of boxes [p, ref], by coordinate compression (brute force)."""
    pts = points[np.all(points < ref, axis=1)]
    if len(pts) == 0:
        return 0.0
    axes = [np.unique(np.append(pts[:, k], ref[k])) for k in range(points.shape[1])]
    total = 0.0
    for cell in itertools.product(*(range(len(a) - 1) for a in axes)):
        lo = np.array([axes[k][i] for k, i in enumerate(cell)])
        if np.any(np.all(pts <= lo, axis=1)):
            total += float(np.prod([axes[k][i + 1] - axes[k][i] for k, i in enumerate(cell)]))
    return total


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 3),
    data=st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3), min_size=0, max_size=7),
)
def test_front_and_hypervolume_match_brute_force(k: int, data: list[list[int]]) -> None:
    v = np.array(data, dtype=float).reshape(len(data), 3)[:, :k]
    mask = pareto_mask(v)
    for i in range(len(v)):
        assert mask[i] == (not any(_dominates(v[j], v[i]) for j in range(len(v))))
    ref = np.full(k, 7.0)
    assert hypervolume(v, ref) == pytest.approx(_union_volume(v, ref))
    assert hypervolume(v[mask], ref) == pytest.approx(hypervolume(v, ref))
