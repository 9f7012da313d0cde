"""Tests for ``hwsim.report.summary`` (the typed summary) and ``hwsim.report.terminal``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hwsim.cli import main
from hwsim.pipeline import RunResult, run
from hwsim.report.summary import Summary, build_summary, requested_policy
from hwsim.report.terminal import format_summary
from tests.helpers import ROOT

YOLO = ROOT / "examples" / "models" / "yolov8n.onnx"

#: summary.json's keys for a one-frame run checked through the engine, in their order.
KEYS = [
    "chip", "chip_description", "model", "precision", "policy", "requested_policy", "latency_ms", "energy_mj",
    "dram_energy_mj", "dram_bytes", "ops", "total_macs", "units", "ops_per_unit", "critical_path",
    "critical_path_ms", "traffic", "cross_domain_bytes", "unknown_ops", "dtype_fallbacks", "fused_ops",
    "scheduler_estimate_ms", "lower_bound_ms", "frames", "in_flight", "frame_order", "throughput_fps",
    "initiation_interval_ms", "frame_latency_ms", "frame_latency_mean_ms", "frame_latency_max_ms",
    "bottleneck_unit", "bottleneck_busy_ms_per_frame", "energy_per_frame_mj", "split_ops", "tiled_ops",
    "policy_check", "policy_check_winner",
]  # fmt: skip


@pytest.fixture(scope="module")
def yolo() -> RunResult:
    return run("rk3588", YOLO)


def test_policy_names_the_kept_schedule(yolo: RunResult) -> None:
    c = yolo.choice
    assert c is not None and c.checked
    # recorded before issue 10: the engine check keeps single-unit for YOLOv8n on RK3588
    assert c.winner == "single-unit" and c.policy == "affinity-locality"
    s = build_summary(yolo)
    assert (s.policy, s.requested_policy) == ("single-unit", "affinity-locality") == (yolo.schedule.policy, requested_policy(yolo))
    assert format_summary(s).splitlines()[0] == "hwsim: yolov8n on rk3588 (int8, single-unit)"


def test_to_json_is_plain_ordered_and_round_trips(yolo: RunResult) -> None:
    s = build_summary(yolo)
    data = s.to_json()
    assert list(data) == KEYS
    assert json.loads(json.dumps(data)) == data
    assert data["units"]["npu"]["ops"] == dict(s.ops_per_unit)["npu"]
    assert data["cross_domain_bytes"] == sum(t["bytes"] for t in data["traffic"])
    assert data["policy_check"] == dict(s.policy_check) and data["policy_check_winner"] == "single-unit"


def test_summary_is_frozen(yolo: RunResult) -> None:
    s = build_summary(yolo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.policy = "heft"  # type: ignore[misc]
    assert isinstance(s, Summary) and not hasattr(s, "__dict__")


def test_terminal_summary_reads_the_summary(yolo: RunResult, tmp_path: Path) -> None:
    s = build_summary(yolo)
    text = format_summary(s, tmp_path)
    assert f"latency       {s.latency_ms:.3f} ms" in text
    assert "policy check  kept single-unit" in text
    assert text.endswith(f"reports       {tmp_path}/")
    for u in s.units:
        assert f"    {u.unit:<12}{u.busy_ms:8.3f} ms" in text


def test_cli_writes_and_prints_the_kept_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    assert main(["run", "rk3588", str(YOLO), "--out", str(out), "--no-plots", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert printed == written
    assert (written["policy"], written["requested_policy"]) == ("single-unit", "affinity-locality")
    assert main(["run", "rk3588", str(YOLO), "--out", str(out), "--no-plots", "--policy", "heft"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "hwsim: yolov8n on rk3588 (int8, heft)"
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (written["policy"], written["requested_policy"]) == ("heft", "heft")
