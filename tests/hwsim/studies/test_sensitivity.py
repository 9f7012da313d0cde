"""``hwsim sensitivity``: parameter scaling, elasticities, the bottleneck, the CLI and its bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import load_chip
from chips.schema import ChipError, bundled_chips
from graph_ir.onnx_import import load_onnx
from hwsim.cli import main
from hwsim.pipeline import run_graph
from hwsim.studies import sensitivity as sens
from tests.helpers import conv_argmax_onnx, one_line_error

CHIPS = sorted(bundled_chips())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A conv that keeps the NPU busy, then an ArgMax for the CPU (a transfer between them)."""
    return conv_argmax_onnx(tmp_path_factory.mktemp("model") / "tiny.onnx", 128, 56)


# ---------------------------------------------------------------- parameters


def test_default_parameters_of_rk3588() -> None:
    names = sens.default_parameters(load_chip("rk3588"))
    assert names == [
        "cpu_big.clock_mhz", "cpu_little.clock_mhz", "gpu.clock_mhz", "gpu.compute_units",
        "npu.clock_mhz", "npu.mac_cols", "npu.sram_kib", "dram.bandwidth_gbps",
        "link.cpu<->npu.bandwidth_gbps", "link.cpu<->gpu.bandwidth_gbps", "link.gpu<->npu.bandwidth_gbps",
    ]  # fmt: skip


@given(st.data(), st.sampled_from(CHIPS), st.floats(0.2, 5.0))
@settings(max_examples=40, deadline=None)
def test_scaling_changes_exactly_one_field(
    data: st.DataObject, chip_name: str, factor: float
) -> None:
    chip = load_chip(chip_name)
    name = data.draw(st.sampled_from(sens.default_parameters(chip)))
    scaled = sens.scaled_chip(chip, name, factor)
    before, after = chip.model_dump(), scaled.model_dump()
    holder_b, field = sens._holder(before, name)
    holder_a, _ = sens._holder(after, name)
    old, new = holder_b[field], holder_a[field]
    if isinstance(old, int):
        assert new == max(1, round(old * factor))
    else:
        assert new == pytest.approx(old * factor)
    holder_a[field] = old
    after["description"] = before["description"]
    assert after == before


@pytest.mark.parametrize("spelling", ["cpu<->npu", "npu<->cpu", "cpu-npu", "npu-cpu"])
def test_link_named_by_key_or_either_way_when_bidirectional(spelling: str) -> None:
    chip = load_chip("rk3588")
    a = sens.scaled_chip(chip, f"link.{spelling}.bandwidth_gbps", 2.0)
    assert a.links[0].bandwidth_gbps == 2 * chip.links[0].bandwidth_gbps
    assert [k.bandwidth_gbps for k in a.links[1:]] == [k.bandwidth_gbps for k in chip.links[1:]]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("warp.clock_mhz", "no unit or domain named 'warp'"),
        ("npu.warp_factor", "no field 'warp_factor' (numeric fields: "),
        ("npu.clock_mzh", "no field 'clock_mzh' (did you mean clock_mhz? numeric fields: "),
        ("npu.mem_bandwidth_gbps", "has no value to scale"),
        ("npu.kind", "is not a positive number"),
        ("link.cpu-dsp.bandwidth_gbps", "no link 'cpu-dsp' (links: link.cpu<->npu"),
        ("clock_mhz", "expected TARGET.FIELD"),
    ],
)
def test_unknown_parameters_are_named(name: str, message: str) -> None:
    with pytest.raises(sens.SensitivityError, match="^--param ") as info:
        sens.scaled_chip(load_chip("rk3588"), name, 2.0)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2,0.5", (0.5, 1.0, 2.0)), ("1", (1.0,)), (" 0.25 , 4 ,", (0.25, 1.0, 4.0))],
)
def test_parse_factors(text: str, expected: tuple[float, ...]) -> None:
    assert sens.parse_factors(text) == expected


@pytest.mark.parametrize("text", ["0,1", "-1", "a,b", "", "inf"])
def test_parse_factors_rejects(text: str) -> None:
    with pytest.raises(sens.SensitivityError, match="--factors"):
        sens.parse_factors(text)


# ---------------------------------------------------------------- elasticity


@given(st.floats(-2.0, 2.0), st.floats(1.0, 1e4), st.floats(0.01, 100.0))
@settings(max_examples=50, deadline=None)
def test_elasticity_of_a_power_law_is_its_exponent(
    exponent: float, base: float, scale: float
) -> None:
    points = [sens.Point(f, base * f, scale * f**exponent, 1.0) for f in (0.5, 1.0, 2.0)]
    assert sens._elasticity(base, scale, points) == pytest.approx(exponent, abs=1e-9)


def test_elasticity_skips_invalid_points_and_needs_two_values() -> None:
    p = [
        sens.Point(0.5, 5.0, None, None, "bad"),
        sens.Point(1.0, 10.0, 4.0, 1.0),
        sens.Point(2.0, 20.0, 2.0, 1.0),
    ]
    assert sens._elasticity(10.0, 4.0, p) == pytest.approx(-1.0)  # one-sided from the base
    assert sens._elasticity(10.0, 4.0, p[:2]) is None


# ---------------------------------------------------------------- the study


@pytest.fixture(scope="module")
def study(tiny: Path) -> sens.Sensitivity:
    params = ["npu.clock_mhz", "cpu_little.clock_mhz", "link.cpu-npu.bandwidth_gbps"]
    return sens.sensitivity(load_onnx(tiny), load_chip("rk3588"), params, (0.5, 2.0))


def test_study_points_are_direct_runs(study: sens.Sensitivity, tiny: Path) -> None:
    graph, chip = load_onnx(tiny), load_chip("rk3588")
    assert study.factors == (0.5, 1.0, 2.0)
    assert study.base_latency_ms == pytest.approx(run_graph(graph, chip).analysis.latency_ms)
    for sweep in study.sweeps:
        for q in sweep.points:
            direct = run_graph(graph, sens.scaled_chip(chip, sweep.name, q.factor)).analysis
            assert q.latency_ms == pytest.approx(direct.latency_ms) and q.error == ""
            assert q.value == pytest.approx(sweep.base_value * q.factor)
        lat = {q.factor: float(q.latency_ms or "nan") for q in sweep.points}
        assert sweep.elasticity == pytest.approx(math.log(lat[2.0] / lat[0.5]) / math.log(4.0))


def test_study_finds_the_npu_clock(study: sens.Sensitivity) -> None:
    by_name = {s.name: s for s in study.sweeps}
    npu = by_name["npu.clock_mhz"]
    assert npu.points[0].latency_ms > npu.points[1].latency_ms > npu.points[2].latency_ms  # type: ignore[operator]
    assert npu.elasticity is not None and npu.elasticity < -0.2
    assert by_name["cpu_little.clock_mhz"].elasticity == pytest.approx(
        0.0, abs=1e-9
    )  # runs nothing
    assert study.bottleneck is not None and study.bottleneck.name == "npu.clock_mhz"
    data = sens.to_json(study)
    assert data["bottleneck"] == {"parameter": "npu.clock_mhz", "elasticity": npu.elasticity}
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    table = sens.format_table(study)
    assert "bottleneck: npu.clock_mhz" in table and "cpu_little.clock_mhz" in table


def test_bottom_line_agrees_with_the_table(tiny: Path) -> None:
    # issue 11: the bottom line said "doubling scales latency by x0.832" (2 ** elasticity, a local
    # slope) while the x2 column of the same table measured x0.900
    s = sens.sensitivity(load_onnx(tiny), load_chip("rk3588"), ["npu.clock_mhz"], (0.7071, 1.4142, 2.0))
    (sweep,) = s.sweeps
    x2 = next(q.latency_ms for q in sweep.points if q.factor == 2.0)
    assert x2 is not None
    line = sens.format_table(s).splitlines()[-1]
    assert f"x2 gives latency x{x2 / s.base_latency_ms:.3f} ({x2:.3f} ms)" in line


def test_invalid_points_are_recorded_not_fatal(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = sens.scaled_chip

    def fragile(chip, name, factor):  # type: ignore[no-untyped-def]
        if factor > 1:
            raise ChipError(f"{chip.name} with {name} x{factor:g}: too fast")
        return real(chip, name, factor)

    monkeypatch.setattr(sens, "scaled_chip", fragile)
    s = sens.sensitivity(load_onnx(tiny), load_chip("rk3588"), ["npu.clock_mhz"], (0.5, 2.0))
    high = s.sweeps[0].points[-1]
    assert high.latency_ms is None and "too fast" in high.error and high.value == 2000.0
    assert s.sweeps[0].elasticity is not None and s.sweeps[0].elasticity < 0  # from 0.5x and 1x
    assert "invalid" in sens.format_table(s) and "too fast" in json.dumps(sens.to_json(s))


# ---------------------------------------------------------------- CLI


def test_cli_writes_json_and_png(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s"
    args = ["sensitivity", "rk3588", str(tiny), "--param", "npu.clock_mhz", "--param", "dram.bandwidth_gbps",
            "--factors", "0.5,2", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("hwsim sensitivity: tiny on rk3588") and "bottleneck:" in printed
    assert sorted(p.name for p in out.iterdir()) == ["sensitivity.json", "sensitivity.png"]
    data = json.loads((out / "sensitivity.json").read_text())
    direct = sens.sensitivity(
        load_onnx(tiny), load_chip("rk3588"), ["npu.clock_mhz", "dram.bandwidth_gbps"], (0.5, 2.0)
    )
    assert data == json.loads(json.dumps(sens.to_json(direct)))
    png = (out / "sensitivity.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert main([*args, "--json"]) == 0  # same folder again; JSON on stdout
    assert json.loads(capsys.readouterr().out) == data


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--param", "warp.clock_mhz"], "--param warp.clock_mhz: no unit or domain named 'warp'"),
        (["--param", "npu.clock_mhz", "--param", "npu.nope"], "no field 'nope'"),
        (["--factors", "0,2"], "--factors '0,2': every factor must be a number > 0"),
        (["--set", "npu.clock_mhz=-5"], "clock_mhz"),
    ],
)
def test_cli_bad_input(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    out = tmp_path / "s"
    assert main(["sensitivity", "rk3588", str(tiny), *extra, "--out", str(out)]) == 2
    assert message in one_line_error(capsys)
    assert not out.exists()


def test_cli_refuses_a_foreign_folder(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "data.csv").write_text("keep")
    assert (
        main(["sensitivity", "rk3588", str(tiny), "--param", "npu.clock_mhz", "--out", str(out)])
        == 2
    )
    assert "holds files hwsim did not write (data.csv)" in one_line_error(capsys)
    assert [p.name for p in out.iterdir()] == ["data.csv"]


def test_a_derived_link_is_swept_through_the_dram_or_by_name() -> None:
    """A link the chip file left out follows the DRAM: not a default parameter of its own, and
    scaling it by name makes it explicit (the change is not derived away)."""
    from chips import chip_from_dict

    unit = {"kind": "cpu", "clock_mhz": 1000, "flops_per_cycle": {"fp32": 16}}
    chip = chip_from_dict({"name": "c", "dram": {"bandwidth_gbps": 10, "latency_ns": 0},
                           "units": [{"name": "a", **unit}, {"name": "b", **unit}]})  # fmt: skip
    assert sens.default_parameters(chip) == ["a.clock_mhz", "b.clock_mhz", "dram.bandwidth_gbps"]
    assert sens.scaled_chip(chip, "dram.bandwidth_gbps", 2.0).links[0].bandwidth_gbps == 20
    scaled = sens.scaled_chip(chip, "link.a<->b.bandwidth_gbps", 0.5)
    assert [(k.bandwidth_gbps, k.derived) for k in scaled.links] == [(5, False)]
