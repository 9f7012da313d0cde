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
from tests.helpers import MODELS, ROOT

MLP = ROOT / "examples" / "models" / "mlp_mnist.onnx"
#: A run whose kept schedule is not the one requested, for the tests that need one: ViT-B/16 on
#: a phone-like chip written for the tests, where the engine check keeps HEFT (17.496 ms against
#: the default's 17.500). YOLOv5s on edge8 served until the re-planning simulated the NPU's probe
#: in its own order, and the MNIST MLP on rk3588 until a re-plan that repeats a placement learned
#: that run's times (issue 15 item 6): the default then won both. If a scheduler change makes the
#: default win here too, move the case to a pair where the check keeps another schedule
#: (``benchmarks/bench_default_policy.py`` lists them on the bundled chips).
PHONE = ROOT / "tests" / "data" / "chips" / "phone.yaml"
VIT = ROOT / "examples" / "models" / "vit_b16.onnx"
KEPT = "heft"

#: summary.json's keys for a one-frame run checked through the engine, in their order.
KEYS = [
    "chip", "chip_description", "model", "precision", "policy", "requested_policy", "latency_ms", "energy_mj",
    "dram_energy_mj", "dram_bytes", "ops", "total_macs", "units", "ops_per_unit", "critical_path",
    "critical_path_ms", "contention", "traffic", "cross_domain_bytes", "unknown_ops", "dtype_fallbacks", "fused_ops",
    "fusion",
    "scheduler_estimate_ms", "lower_bound_ms", "split_ops", "tiled_ops", "defaulted_fields",
    "policy_check", "policy_check_winner", "power", "peak_memory", "spills",
]  # fmt: skip
#: Only with ``--frames N`` (N > 1), between ``defaulted_fields`` and ``policy_check`` (issue 11:
#: ``throughput_fps`` and ``frame_latency_ms`` appeared in one-frame runs).
FRAME_KEYS = [
    "frames", "in_flight", "frame_order", "throughput_fps", "initiation_interval_ms", "frame_latency_ms",
    "frame_latency_mean_ms", "frame_latency_max_ms", "bottleneck_unit", "bottleneck_busy_ms_per_frame",
    "energy_per_frame_mj",
]  # fmt: skip


@pytest.fixture(scope="module")
def checked() -> RunResult:
    return run(PHONE, VIT)


def test_policy_names_the_kept_schedule(checked: RunResult) -> None:
    c = checked.choice
    assert c is not None and c.checked
    assert c.winner == KEPT and c.policy == "affinity-locality"
    s = build_summary(checked)
    assert (s.policy, s.requested_policy) == (KEPT, "affinity-locality") == (checked.schedule.policy, requested_policy(checked))
    assert format_summary(s).splitlines()[0] == f"hwsim: vit_b16 on phone (int8, {KEPT})"


def test_to_json_is_plain_ordered_and_round_trips(checked: RunResult) -> None:
    s = build_summary(checked)
    data = s.to_json()
    assert list(data) == KEYS
    assert json.loads(json.dumps(data)) == data
    assert all(data["units"][u]["ops"] == n for u, n in s.ops_per_unit) and s.ops_per_unit
    assert data["cross_domain_bytes"] == sum(t["bytes"] for t in data["traffic"])
    assert data["policy_check"] == dict(s.policy_check) and data["policy_check_winner"] == KEPT


def test_summary_is_frozen(checked: RunResult) -> None:
    s = build_summary(checked)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.policy = "heft"  # type: ignore[misc]
    assert isinstance(s, Summary) and not hasattr(s, "__dict__")


def test_terminal_summary_reads_the_summary(checked: RunResult, tmp_path: Path) -> None:
    s = build_summary(checked)
    text = format_summary(s, tmp_path)
    assert f"latency       {s.latency_ms:.3f} ms" in text
    assert f"policy check  kept {KEPT}" in text
    assert text.endswith(f"reports       {tmp_path}/")
    for u in s.units:
        assert f"    {u.unit:<12}{u.active_ms:10.3f} ms{u.busy_ms:10.3f} ms{u.cores:7d}" in text


def test_terminal_says_which_busy_time_is_core_time(tmp_path: Path) -> None:
    # issue 11: a unit's core-time was printed beside a smaller latency with no word on what it was.
    # The case needs a unit whose core-time exceeds the latency: RK3588's three NPU cores run
    # ResNet-18's layers in lockstep, so its core-time is about three times its wall time.
    s = build_summary(run("rk3588", MODELS / "resnet18.onnx"))
    text = format_summary(s, tmp_path)
    assert "busy (wall)" in text and "core-time" in text
    for u in s.units:  # wall time fits in the run; core-time is at most wall time on every core
        assert f"    {u.unit:<12}{u.active_ms:10.3f} ms{u.busy_ms:10.3f} ms{u.cores:7d}" in text
        assert u.active_ms <= s.latency_ms and u.active_ms <= u.busy_ms <= u.active_ms * u.cores + 1e-6
    assert any(u.busy_ms > s.latency_ms for u in s.units)


def test_frame_fields_only_with_frames() -> None:
    from chips import load_chip
    from graph_ir import load_onnx
    from hwsim.pipeline import run_graph
    from tests.helpers import MODELS

    graph, chip = load_onnx(MODELS / "resnet18.onnx"), load_chip("rk3588")
    one = build_summary(run_graph(graph, chip)).to_json()
    assert not set(FRAME_KEYS) & set(one) and "frames" not in format_summary(build_summary(run_graph(graph, chip)))
    three = build_summary(run_graph(graph, chip, frames=3)).to_json()
    keys = list(three)
    at = keys.index("defaulted_fields") + 1
    assert keys[at : at + len(FRAME_KEYS)] == FRAME_KEYS and three["frames"] == 3


def test_cli_writes_and_prints_the_kept_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    assert main(["run", str(PHONE), str(VIT), "--out", str(out), "--no-plots", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert printed == written
    assert (written["policy"], written["requested_policy"]) == (KEPT, "affinity-locality")
    assert main(["run", "rk3588", str(MLP), "--out", str(out), "--no-plots", "--policy", "single-unit"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "hwsim: mlp_mnist on rk3588 (int8, single-unit)"
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (written["policy"], written["requested_policy"]) == ("single-unit", "single-unit")


def test_dtype_fallbacks_name_only_units_that_ran_such_ops(
    rk3588, yolov8n, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 11: a fallback was listed for a GPU that ran no op, and a real one never reached the terminal
    from hwsim.cli import main
    from hwsim.pipeline import run_graph
    from hwsim.report.summary import dtype_fallback_ops

    result = run_graph(yolov8n, rk3588, "int4")
    ran = {p.unit for p in result.schedule.placements.values()}
    fallbacks = dtype_fallback_ops(result)
    assert fallbacks and all(k.rsplit(":", 1)[1] in ran for k in fallbacks)
    assert sum(fallbacks.values()) == sum(
        1 for op, p in result.schedule.placements.items() if result.table.costs[op][p.unit].dtype != "int4"
    )
    assert build_summary(result).dtype_fallbacks == tuple(fallbacks)
    assert main(["run", "rk3588", str(MODELS / "yolov8n.onnx"), "--precision", "int4", "--no-plots",
                 "--out", str(tmp_path / "r")]) == 0  # fmt: skip
    err = capsys.readouterr().err
    for key, count in fallbacks.items():
        dtypes, unit = key.rsplit(":", 1)
        dtype = dtypes.split("<-")[0]
        assert f"WARNING: {count} op(s) on {unit} run in {dtype}: the unit has no int4 for them" in err


def test_defaulted_chip_fields_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 11: a chip silently got active_w 1.0, idle_w 0.05, op_overhead_ns 0
    import yaml

    from hwsim.cli import main

    chip = {"name": "mine", "dram": {"bandwidth_gbps": 10, "latency_ns": 100},
            "units": [{"name": "cpu", "kind": "cpu", "clock_mhz": 2000, "flops_per_cycle": {"fp32": 16},
                       "l1_kib": 32, "l2_kib": 512}]}  # fmt: skip
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(chip))
    assert main(["run", str(tmp_path / "mine.yaml"), str(MODELS / "mlp_mnist.onnx"), "--no-plots",
                 "--out", str(tmp_path / "r")]) == 0  # fmt: skip
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert {"units[cpu].active_w", "units[cpu].idle_w", "units[cpu].op_overhead_ns"} <= set(s["defaulted_fields"])
    out = capsys.readouterr().out
    assert f"defaults      {len(s['defaulted_fields'])} chip field(s) not set in the file" in out


@pytest.mark.parametrize("options", [(), ("--no-split",)])
def test_lower_bound_is_below_the_latency_of_split_ops(tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...]) -> None:
    """ResNet-18 on the RK3588 splits convs over the NPU's cores: a bound with every op unsplit
    (3.47 ms) was above the run's 3.05 ms; the bound counts the splits the engine may make."""
    out = tmp_path / "r"
    assert main(["run", "rk3588", str(MODELS / "resnet18.onnx"), "--out", str(out), "--no-plots", *options]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert 0 < s["lower_bound_ms"] <= s["latency_ms"]
    assert s["lower_bound_ms"] >= 0.5 * s["latency_ms"]  # a bound, not a zero
