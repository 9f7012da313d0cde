"""Multi-model workloads: loading, criticality served first, the CLI's reports and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from chips.schema import chip_from_dict
from hwsim.cli import main
from hwsim.studies.workload import Workload, WorkloadError, load_workload, run_workload
from tests.helpers import MODELS, host_chip, mlp, one_line_error, write_chip


def _workload(tmp_path: Path, models: list[dict[str, Any]], window_ms: float = 10.0) -> Path:
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump({"window_ms": window_ms, "models": models}))
    return path


@pytest.fixture
def two_mlps(tmp_path: Path) -> tuple[Path, Path]:
    return mlp(tmp_path / "a.onnx", n=256, layers=3), mlp(tmp_path / "b.onnx", n=256, layers=2)


# ---- criticality


def _run(tmp_path: Path, crit_a: str, crit_b: str) -> dict[str, Any]:
    """Model a (listed first) and b, one instance each, both released at time 0 on a one-core chip."""
    models = [
        {"name": "a", "model": "a.onnx", "period_ms": 1000, "criticality": crit_a},
        {"name": "b", "model": "b.onnx", "period_ms": 1000, "criticality": crit_b},
    ]
    spec = load_workload(_workload(tmp_path, models, window_ms=1000))
    run = run_workload(spec, chip_from_dict(host_chip(cores=1)))
    return run.to_json()["models"]


def test_the_low_criticality_model_is_delayed_not_the_high_one(tmp_path: Path, two_mlps: tuple[Path, Path]) -> None:
    out = _run(tmp_path, "low", "high")
    a, b = out["a"], out["b"]
    assert b["latency_p50_ms"] == pytest.approx(b["solo_latency_ms"], rel=1e-9)  # high: as if alone
    assert a["latency_p50_ms"] >= a["solo_latency_ms"] + b["solo_latency_ms"] * 0.99  # low: waits for it


def test_swapping_criticality_swaps_who_waits(tmp_path: Path, two_mlps: tuple[Path, Path]) -> None:
    out = _run(tmp_path, "high", "low")
    a, b = out["a"], out["b"]
    assert a["latency_p50_ms"] == pytest.approx(a["solo_latency_ms"], rel=1e-9)
    assert b["latency_p50_ms"] > b["solo_latency_ms"] * 1.5


def test_integer_criticality_orders_like_levels(tmp_path: Path, two_mlps: tuple[Path, Path]) -> None:
    models = [
        {"name": "a", "model": "a.onnx", "period_ms": 1000, "criticality": 3},
        {"name": "b", "model": "b.onnx", "period_ms": 1000, "criticality": 7},
    ]
    run = run_workload(load_workload(_workload(tmp_path, models, 1000)), chip_from_dict(host_chip(cores=1)))
    b = run.to_json()["models"]["b"]
    assert b["latency_p50_ms"] == pytest.approx(b["solo_latency_ms"], rel=1e-9)


def test_instances_rates_and_deadline_misses(tmp_path: Path, two_mlps: tuple[Path, Path]) -> None:
    solo = _run(tmp_path, "low", "high")
    period_ms = 0.8 * (solo["a"]["solo_latency_ms"] + solo["b"]["solo_latency_ms"])  # overloaded
    models = [
        {"name": "a", "model": "a.onnx", "period_ms": period_ms, "criticality": "low",
         "deadline_ms": solo["a"]["solo_latency_ms"] * 1.01},
        {"name": "b", "model": "b.onnx", "period_ms": period_ms, "criticality": "high",
         "deadline_ms": solo["b"]["solo_latency_ms"] * 1.01},
    ]  # fmt: skip
    window_ms = 4 * period_ms
    run = run_workload(load_workload(_workload(tmp_path, models, window_ms)), chip_from_dict(host_chip(cores=1)))
    a, b = run.models
    assert [i.instance for i in a.instances] == [0, 1, 2, 3]
    assert [i.release_ms for i in b.instances] == pytest.approx([k * period_ms for k in range(4)])
    assert b.misses == ()  # the high model keeps its deadline
    assert a.misses == (0, 1, 2, 3)  # each low instance waits for the high one released with it
    assert min(a.latencies_ms) > a.solo_latency_ms + 0.99 * b.solo_latency_ms
    assert a.achieved_fps < b.achieved_fps == pytest.approx(4 / (window_ms / 1000))


def test_phone_example_on_rk3588() -> None:
    from chips.schema import load_chip

    spec = load_workload(Path(__file__).parents[3] / "examples" / "workloads" / "phone.yaml")
    assert [m.name for m in spec.models] == ["detector", "classifier", "kws"]
    run = run_workload(spec, load_chip("rk3588"))
    out = run.to_json()["models"]
    assert out["kws"]["instances"] == int(spec.window_ms / 10)
    assert out["detector"]["latency_p99_ms"] <= out["detector"]["solo_latency_ms"] * 1.1
    assert out["classifier"]["latency_p50_ms"] > out["classifier"]["solo_latency_ms"]


# ---- the CLI


def test_cli_writes_summary_and_a_trace_of_every_instance(tmp_path: Path, two_mlps: tuple[Path, Path]) -> None:
    chip = write_chip(tmp_path / "chip.yaml", cores=1)
    models = [
        {"name": "a", "model": "a.onnx", "fps": 500, "criticality": "low"},
        {"name": "b", "model": "b.onnx", "period_ms": 5, "criticality": "high", "offset_ms": 1},
    ]
    w = _workload(tmp_path, models, window_ms=10)
    assert main(["run", str(chip), "--workload", str(w), "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    section = summary["workload"]
    assert section["instances"] == 5 + 2
    assert set(section["models"]["a"]) >= {"latency_p50_ms", "latency_p99_ms", "deadline_misses", "achieved_fps"}
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    seen = {(e["args"]["model"], e["args"]["instance"]) for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert seen == {("a", k) for k in range(5)} | {("b", 0), ("b", 1)}
    assert any(e.get("name", "").startswith("b#1/") for e in trace["traceEvents"])


def test_cli_missed_deadline_exits_1(tmp_path: Path, two_mlps: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    chip = write_chip(tmp_path / "chip.yaml", cores=1)
    w = _workload(tmp_path, [{"name": "a", "model": "a.onnx", "fps": 100, "deadline_ms": 1e-6}])
    assert main(["run", str(chip), "--workload", str(w), "--out", str(tmp_path / "out")]) == 1
    assert "deadline missed" in capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["workload"]["models"]["a"]["missed_instances"] == [0]


@pytest.mark.parametrize(
    ("models", "key"),
    [
        ([{"name": "a", "model": "a.onnx", "fps": 10, "colour": "red"}], "models[0].colour"),
        ([{"name": "a", "model": "a.onnx", "fps": 0}], "models[0].fps"),
        ([{"name": "a", "model": "a.onnx", "period_ms": -5}], "models[0].period_ms"),
        ([{"name": "a", "model": "nowhere.onnx", "fps": 10}], "models[0].model"),
        ([], "models"),
        ([{"name": "a", "model": "a.onnx"}], "models[0]"),
    ],
)
def test_bad_workload_is_one_line_exit_2_nothing_written(
    tmp_path: Path, two_mlps: tuple[Path, Path], capsys: pytest.CaptureFixture[str], models: list[dict[str, Any]], key: str
) -> None:
    w = _workload(tmp_path, models)
    out = tmp_path / "out"
    assert main(["run", "rk3588", "--workload", str(w), "--out", str(out)]) == 2
    err = one_line_error(capsys)
    assert f"{w}: {key}" in err
    assert not out.exists()


def test_unknown_top_level_key_and_bad_window(tmp_path: Path, two_mlps: tuple[Path, Path]) -> None:
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"window_ms": 10, "models": [{"name": "a", "model": "a.onnx", "fps": 1}], "x": 1}))
    with pytest.raises(WorkloadError, match=r"w.yaml: x: unknown key"):
        load_workload(w)
    w.write_text(yaml.safe_dump({"window_ms": 0, "models": [{"name": "a", "model": "a.onnx", "fps": 1}]}))
    with pytest.raises(WorkloadError, match=r"w.yaml: window_ms: "):
        load_workload(w)


@pytest.mark.parametrize("argv", [["run", "rk3588"], ["run", "rk3588", str(MODELS / "mlp_mnist.onnx"), "--workload", "w.yaml"]])
def test_model_or_workload_exactly_one(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "MODEL or --workload" in one_line_error(capsys)


def test_spec_is_frozen_and_rejects_extra() -> None:
    spec = Workload.model_validate({"window_ms": 5, "models": [{"name": "a", "model": "m", "fps": 1}]})
    with pytest.raises(ValueError):
        spec.models[0].fps = 3  # type: ignore[misc]
    assert spec.models[0].period == pytest.approx(1000.0)
