"""The command registry, the options shared by run/compare/sensitivity, and the load sequence."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from chips import ChipError, load_chip
from hwsim.cli import COMMANDS, build_parser, main
from hwsim.commands.common import load_chip_variant, load_model, load_target
from scheduler import DEFAULT_POLICY
from tests.helpers import MODELS, ROOT, conv_argmax_onnx, one_line_error

SHARED = ("--precision", "--policy", "--input-shape", "--set")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in p._actions for s in a.option_strings}


class TestRegistry:
    def test_every_command_is_a_module_with_the_three_hooks(self) -> None:
        for name, module in COMMANDS.items():
            m = importlib.import_module(module)
            assert callable(m.add_parser) and callable(m.main), name
            assert all(issubclass(e, BaseException) for e in m.input_errors()), name

    def test_the_parser_lists_exactly_the_registry(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert list(_subparsers(build_parser())) == list(COMMANDS)
        assert main(["--help"]) == 0
        out = capsys.readouterr().out
        assert [c for c in COMMANDS if f"\n    {c}" in out] == list(COMMANDS)

    def test_building_the_parser_loads_no_simulator(self) -> None:
        code = (
            "import sys; from hwsim.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('hwsim.pipeline', 'hwsim.report.files', 'matplotlib') if m in sys.modules))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
        assert out.stdout.strip() == "[]"


class TestSharedOptions:
    @pytest.mark.parametrize("command", ["run", "compare", "sensitivity"])
    def test_same_options_same_choices(self, command: str) -> None:
        subs = _subparsers(build_parser())
        mine, runs = _options(subs[command]), _options(subs["run"])
        for opt in SHARED:
            assert mine[opt].choices == runs[opt].choices and mine[opt].dest == runs[opt].dest, (command, opt)

    def test_policy_defaults_to_the_default_policy(self) -> None:
        p = build_parser()
        assert p.parse_args(["run", "c", "m"]).policy == DEFAULT_POLICY
        assert p.parse_args(["sensitivity", "c", "m"]).policy == DEFAULT_POLICY
        assert p.parse_args(["compare", "m"]).policy == []  # repeatable; empty means the default
        assert p.parse_args(["compare", "m", "--policy", "heft", "--policy", "eft"]).policy == ["heft", "eft"]

    @pytest.mark.parametrize("command", list(COMMANDS))
    def test_help_shows_the_default_policy_and_precision(
        self, command: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every command with --policy or --precision says its default in --help (issue 11 item 16)."""
        options = _options(_subparsers(build_parser())[command])
        assert main([command, "--help"]) == 0
        text = "".join(capsys.readouterr().out.split())  # argparse wraps help lines, at hyphens too
        assert "%(default)" not in text
        if "--policy" in options:
            assert f"schedulingpolicy(default:{DEFAULT_POLICY})" in text or (
                f"schedulingpolicy(repeatable;default:{DEFAULT_POLICY})" in text
            )
        if "--precision" in options:
            assert f"dtypes(default:{options['--precision'].default})" in text

    def test_units_where_a_single_chip_is_simulated(self) -> None:
        subs = _subparsers(build_parser())
        assert "--units" in _options(subs["run"]) and "--units" in _options(subs["sensitivity"])
        assert "--units" not in _options(subs["compare"])


class TestLoadSequence:
    def test_set_then_units(self) -> None:
        chip = load_chip_variant("rk3588", ["npu.clock_mhz=600", "link.cpu<->npu.bandwidth_gbps=4"], "npu:1,cpu_big")
        assert [(u.name, u.cores) for u in chip.units] == [("npu", 1), ("cpu_big", 4)]
        assert chip.unit("npu").clock_mhz == 600.0
        assert chip.link_between("npu", "cpu") is not None and chip.link_between("npu", "cpu").bandwidth_gbps == 4.0
        assert load_chip_variant("rk3588") == load_chip("rk3588")

    def test_units_see_the_set_values(self) -> None:
        # --set raises the NPU to 4 cores before --units keeps 4 of them
        chip = load_chip_variant("rk3588", ["npu.cores=4"], "npu:4")
        assert chip.unit("npu").cores == 4
        with pytest.raises(ChipError, match="npu has 3 cores"):
            load_chip_variant("rk3588", [], "npu:4")

    def test_model_with_shapes(self, tmp_path: Path) -> None:
        graph = load_model(str(MODELS / "resnet18.onnx"))
        assert graph.name == "resnet18" and len(graph) > 0
        args = argparse.Namespace(
            chip="edge8", model=str(MODELS / "resnet18.onnx"), overrides=[], units=None, input_shape=[]
        )
        chip, g = load_target(args)
        assert chip.name == "edge8" and g.name == "resnet18"


@pytest.mark.parametrize("spelling", ["cpu<->npu", "cpu-npu"])
def test_sensitivity_takes_set_and_param_on_a_link(spelling: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = conv_argmax_onnx(tmp_path / "m.onnx", 16, 32)
    argv = ["sensitivity", "rk3588", str(model), "--out", str(tmp_path / "s"), "--json", "--factors", "0.5,1",
            "--set", f"link.{spelling}.latency_ns=1000", "--param", f"link.{spelling}.bandwidth_gbps"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in data["parameters"]] == [f"link.{spelling}.bandwidth_gbps"]
    assert data["parameters"][0]["base_value"] == 8.0


def test_sensitivity_names_the_links_when_one_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = conv_argmax_onnx(tmp_path / "m.onnx", 8, 8)
    argv = ["sensitivity", "rk3588", str(model), "--out", str(tmp_path / "s"), "--param", "link.cpu<->dsp.bandwidth_gbps"]
    assert main(argv) == 2
    assert "link.cpu<->npu" in one_line_error(capsys) and not (tmp_path / "s").exists()
