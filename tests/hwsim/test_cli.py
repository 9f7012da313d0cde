"""The command line: exit codes, outputs, and one-line errors that leave nothing behind."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from hwsim.cli import main
from tests.helpers import ROOT, one_line_error

RESNET = ROOT / "examples" / "models" / "resnet18.onnx"
RK3588 = ROOT / "chips" / "rk3588.yaml"


class TestRun:
    def test_writes_every_report(self, tmp_path, capsys):
        out = tmp_path / "r"
        assert main(["run", str(RK3588), str(RESNET), "--out", str(out)]) == 0
        names = {p.name for p in out.iterdir()}
        assert {"summary.json", "trace.json", "heatmap.png", "gantt.png", "critical_path.txt",
                "traffic.csv", "traffic.png"} <= names  # fmt: skip
        s = json.loads((out / "summary.json").read_text())
        for key in ("chip", "model", "latency_ms", "energy_mj", "units", "critical_path",
                    "critical_path_ms", "traffic", "unknown_ops"):  # fmt: skip
            assert key in s
        assert s["chip"] == "rk3588" and s["model"] == "resnet18"
        assert s["latency_ms"] > 0 and s["critical_path_ms"] <= s["latency_ms"] + 1e-9
        for u in s["units"].values():
            assert {"busy_ms", "utilization"} <= set(u) and 0 <= u["utilization"] <= 1
        assert "latency" in capsys.readouterr().out

    def test_bundled_chip_by_name_and_json(self, tmp_path, capsys):
        assert main(["run", "rk3588", str(RESNET), "--out", str(tmp_path / "r"), "--json", "--no-plots"]) == 0
        s = json.loads(capsys.readouterr().out)
        assert s["chip"] == "rk3588"
        assert not (tmp_path / "r" / "heatmap.png").exists()

    def test_units_and_set_change_the_simulated_chip(self, tmp_path, capsys):
        base = ["run", "rk3588", str(RESNET), "--no-plots", "--json"]
        assert main([*base, "--out", str(tmp_path / "a")]) == 0
        full = json.loads(capsys.readouterr().out)
        assert main([*base, "--out", str(tmp_path / "b"), "--units", "npu:1,cpu_big"]) == 0
        one = json.loads(capsys.readouterr().out)
        assert set(one["units"]) == {"npu", "cpu_big"} and one["units"]["npu"]["cores"] == 1
        assert "--units npu:1,cpu_big" in one["chip_description"]
        assert main([*base, "--out", str(tmp_path / "c"), "--set", "npu.clock_mhz=500"]) == 0
        slow = json.loads(capsys.readouterr().out)
        assert slow["latency_ms"] > full["latency_ms"]
        assert main([*base, "--out", str(tmp_path / "d"), "--set", "npu.clock_mhz=-5"]) == 2
        assert "npu.clock_mhz" in one_line_error(capsys)
        assert not (tmp_path / "d").exists()

    def test_rerun_replaces_an_earlier_report(self, tmp_path):
        out = tmp_path / "r"
        assert main(["run", "rk3588", str(RESNET), "--out", str(out), "--no-plots"]) == 0
        first = (out / "summary.json").read_text()
        assert main(["run", "rk3588", str(RESNET), "--out", str(out), "--no-plots"]) == 0
        assert (out / "summary.json").read_text() == first

    def test_refuses_a_folder_it_did_not_write(self, tmp_path, capsys):
        (tmp_path / "notes.txt").write_text("mine")
        assert main(["run", "rk3588", str(RESNET), "--out", str(tmp_path), "--no-plots"]) == 2
        assert "notes.txt" in one_line_error(capsys)
        assert (tmp_path / "notes.txt").read_text() == "mine"

    def test_unknown_op_is_reported(self, tmp_path, capsys):
        onnx = pytest.importorskip("onnx")
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
        node = helper.make_node("Hardmax", ["x"], ["h"], name="hm")
        node2 = helper.make_node("Celu", ["h"], ["y"], name="celu")
        m = helper.make_model(helper.make_graph([node, node2], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
        path = tmp_path / "m.onnx"
        onnx.save(m, str(path))
        from graph_ir.op_metrics import registered_op_types

        unknown = "Hardmax" not in registered_op_types()
        assert main(["run", "rk3588", str(path), "--out", str(tmp_path / "r"), "--json", "--no-plots"]) == 0
        s = json.loads(capsys.readouterr().out)
        assert s["unknown_ops"] == (["Hardmax"] if unknown else [])


BAD_CHIPS = {
    "negative_bandwidth": (lambda d: d["dram"].update(bandwidth_gbps=-1), "dram.bandwidth_gbps"),
    "unknown_key": (lambda d: d["units"][0].update(turbo=True), "unknown key"),
    "missing_field": (lambda d: d["units"][0].pop("clock_mhz"), "clock_mhz"),
    "unknown_domain": (lambda d: d["units"][0].update(domain="nowhere"), "nowhere"),
}


class TestBadInput:
    def _run(self, tmp_path, chip, model):
        out = tmp_path / "out"
        code = main(["run", str(chip), str(model), "--out", str(out)])
        assert not out.exists()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
        return code

    @pytest.mark.parametrize("case", sorted(BAD_CHIPS))
    def test_schema_violations(self, tmp_path, capsys, case):
        change, expect = BAD_CHIPS[case]
        data = yaml.safe_load(RK3588.read_text())
        change(data)
        chip = tmp_path / "bad.yaml"
        chip.write_text(yaml.safe_dump(data))
        assert self._run(tmp_path, chip, RESNET) == 2
        err = one_line_error(capsys)
        assert str(chip) in err and expect in err

    def test_yaml_syntax_error(self, tmp_path, capsys):
        chip = tmp_path / "bad.yaml"
        chip.write_text("name: x\nunits: [\n")
        assert self._run(tmp_path, chip, RESNET) == 2
        assert "YAML syntax error" in one_line_error(capsys)

    def test_missing_model(self, tmp_path, capsys):
        assert self._run(tmp_path, RK3588, tmp_path / "nope.onnx") == 2
        assert "nope.onnx: file not found" in one_line_error(capsys)

    def test_not_onnx_and_truncated(self, tmp_path, capsys):
        text = tmp_path / "text.onnx"
        text.write_text("hello, I am not a model\n" * 10)
        assert self._run(tmp_path, RK3588, text) == 2
        assert "text.onnx" in one_line_error(capsys)
        cut = tmp_path / "cut.onnx"
        cut.write_bytes(RESNET.read_bytes()[: RESNET.stat().st_size // 2])
        assert self._run(tmp_path, RK3588, cut) == 2
        assert "cut.onnx" in one_line_error(capsys)

    def test_dynamic_dim_suggests_input_shape(self, tmp_path, capsys):
        onnx = pytest.importorskip("onnx")
        m = onnx.load(str(RESNET), load_external_data=False)
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
        for vi in list(m.graph.value_info) + list(m.graph.output):
            vi.type.tensor_type.shape.dim[0].dim_param = "batch"
        path = tmp_path / "dyn.onnx"
        onnx.save(m, str(path))
        assert self._run(tmp_path, RK3588, path) == 2
        err = one_line_error(capsys)
        assert "--input-shape input=1x3x224x224" in err
        out = tmp_path / "ok"
        assert main(["run", str(RK3588), str(path), "--input-shape", "input=1x3x224x224",
                     "--out", str(out), "--no-plots"]) == 0  # fmt: skip

    def test_unplaceable_op_names_model_and_node(self, tmp_path, capsys):
        # edge8's NPU has no float datapath and its CPU/DSP take everything else; force fp16 on a
        # chip whose only unit is that NPU.
        data = yaml.safe_load((ROOT / "chips" / "edge8.yaml").read_text())
        npu = next(u for u in data["units"] if u["kind"] == "npu")
        data["units"] = [npu]
        data["domains"] = [d for d in data["domains"] if d["name"] == npu["domain"]]
        data["links"] = []
        data.pop("host_domain", None)
        data["affinity"] = {}
        data["default_affinity"] = ["npu"]
        chip = tmp_path / "npu_only.yaml"
        chip.write_text(yaml.safe_dump(data))
        code = main(["run", str(chip), str(RESNET), "--precision", "fp16", "--out", str(tmp_path / "out")])
        assert code == 2
        err = one_line_error(capsys)
        assert str(RESNET) in err and "node" in err
        assert not (tmp_path / "out").exists()

    def test_usage_errors_exit_2(self, capsys):
        assert main(["run"]) == 2
        assert main(["frobnicate"]) == 2
        assert main(["run", "rk3588", str(RESNET), "--precision", "int3"]) == 2

    def test_debug_shows_the_traceback(self, tmp_path, capsys):
        assert main(["--debug", "run", str(RK3588), str(tmp_path / "nope.onnx")]) == 2
        assert "Traceback" in capsys.readouterr().err


class TestOtherCommands:
    def test_chips_lists_the_catalog(self, capsys):
        assert main(["chips"]) == 0
        out = capsys.readouterr().out
        for name in ("rk3588", "edge8", "jetson_orin_nano"):
            assert name in out

    def test_schema_is_json_schema(self, capsys):
        assert main(["schema"]) == 0
        schema = json.loads(capsys.readouterr().out)
        assert schema["title"] == "Chip" and "units" in schema["properties"]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "rk3588", "m.onnx", "--policy", "nope"],
        ["run", "rk3588"],
        ["nope"],
        ["run", "rk3588", "m.onnx", "--precision", "int3"],
    ],
)
def test_usage_errors_are_one_line(argv, capsys):
    assert main(argv) == 2
    err = one_line_error(capsys)
    assert "error:" in err and "--help" in err


#: An option without its partner: (extra argv, the option the one-line error names, its partner).
PARTNERLESS = {
    "budget-without-energy": (["--latency-budget-ms", "40"], "--latency-budget-ms", "--objective energy"),
    "budget-with-latency": (["--objective", "latency", "--latency-budget-ms", "40"], "--latency-budget-ms",
                            "--objective energy"),
    "energy-without-budget": (["--objective", "energy"], "--latency-budget-ms", "--objective energy"),
    "energy-with-zero-budget": (["--objective", "energy", "--latency-budget-ms", "0"], "--latency-budget-ms",
                                "--objective energy"),
    "in-flight-without-frames": (["--in-flight", "2"], "--in-flight", "--frames"),
    "in-flight-with-one-frame": (["--frames", "1", "--in-flight", "1"], "--in-flight", "--frames"),
    "frame-order-without-frames": (["--frame-order", "frame-major"], "--frame-order", "--frames"),
    "default-frame-order-spelled-out": (["--frame-order", "interleaved"], "--frame-order", "--frames"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(PARTNERLESS))
def test_an_option_without_its_partner_is_a_usage_error(case, tmp_path, capsys):
    extra, option, partner = PARTNERLESS[case]
    out = tmp_path / "r"
    assert main(["run", "rk3588", str(RESNET), "--out", str(out), *extra]) == 2
    err = one_line_error(capsys)
    assert err.startswith("hwsim run: error: ") and option in err and partner in err, err
    assert "--help" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_options_with_their_partners_are_accepted(tmp_path, capsys):
    out = tmp_path / "r"
    argv = ["run", "rk3588", str(RESNET), "--out", str(out), "--no-plots", "--json",
            "--frames", "2", "--in-flight", "1", "--frame-order", "frame-major"]  # fmt: skip
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["frame_order"] == "frame-major" and s["frames"] == 2


@pytest.mark.parametrize("spelling", ["cpu<->npu", "npu<->cpu", "cpu-npu", "npu-cpu"])
def test_set_addresses_a_link_by_its_key(spelling, tmp_path, capsys):
    base = ["run", "rk3588", str(RESNET), "--no-plots", "--json"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    before = json.loads(capsys.readouterr().out)
    assert main([*base, "--out", str(tmp_path / "b"), "--set", f"link.{spelling}.bandwidth_gbps=0.5"]) == 0
    slow = json.loads(capsys.readouterr().out)
    assert f"link.{spelling}.bandwidth_gbps=0.5" in slow["chip_description"]
    assert slow["latency_ms"] > before["latency_ms"]


def test_set_names_the_links_when_one_is_unknown(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "rk3588", str(RESNET), "--out", str(out), "--set", "link.cpu<->dsp.bandwidth_gbps=8"]) == 2
    err = one_line_error(capsys)
    assert "cpu<->dsp" in err and "link.cpu<->npu" in err and not out.exists()


class TestMissingPackage:
    """A package hwsim needs that is not installed: one line with the pip command, exit 2 (issue 11 item 1)."""

    @pytest.fixture
    def no_onnxruntime(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails

    def test_validate(self, no_onnxruntime, tmp_path, capsys):
        results = tmp_path / "v.jsonl"
        assert main(["validate", "rk3588", str(RESNET), "--results", str(results)]) == 2
        err = one_line_error(capsys)
        assert err.startswith("hwsim validate: error: onnxruntime is not installed")
        assert err.endswith("install it with: pip install onnxruntime") and "internal error" not in err
        assert not results.exists()

    def test_fingerprint(self, no_onnxruntime, tmp_path, capsys):
        out = tmp_path / "host.yaml"
        assert main(["fingerprint", "--quick", "-o", str(out)]) == 2
        err = one_line_error(capsys)
        assert err.startswith("hwsim fingerprint: error: onnxruntime is not installed")
        assert err.endswith("pip install onnxruntime") and not out.exists()

    def test_debug_shows_the_traceback_and_does_not_suggest_debug(self, no_onnxruntime, tmp_path, capsys):
        assert main(["--debug", "fingerprint", "--quick", "-o", str(tmp_path / "h.yaml")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[0] == "Traceback (most recent call last):" and "ModuleNotFoundError" in err[-2]
        assert err[-1].startswith("hwsim fingerprint: error: onnxruntime is not installed")
        assert not any("--debug" in line for line in err)

    def test_every_dependency_has_its_pip_name(self):
        import tomllib

        from hwsim.cli import PIP_NAMES

        deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
        names = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() for d in deps}
        assert set(PIP_NAMES.values()) == names

    def test_an_import_error_of_hwsim_itself_stays_an_internal_error(self, monkeypatch, capsys):
        def broken(args):
            raise ModuleNotFoundError("No module named 'hwsim.nope'", name="hwsim.nope")

        monkeypatch.setattr("hwsim.commands.chips.main", broken)
        assert main(["chips"]) == 1
        err = one_line_error(capsys)
        assert err.startswith("hwsim: internal error: ModuleNotFoundError") and "pip install" not in err


class TestInternalError:
    @pytest.fixture
    def crash(self, monkeypatch):
        def boom(args):
            raise RuntimeError("boom")

        monkeypatch.setattr("hwsim.commands.chips.main", boom)

    def test_one_line_that_suggests_debug(self, crash, capsys):
        assert main(["chips"]) == 1
        assert one_line_error(capsys) == "hwsim: internal error: RuntimeError: boom (rerun with --debug)"

    def test_with_debug_the_traceback_and_no_suggestion_to_rerun_with_debug(self, crash, capsys):
        assert main(["--debug", "chips"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err[0] == "Traceback (most recent call last):"
        assert err[-1] == "hwsim: internal error: RuntimeError: boom"


class TestClosedStdout:
    """A reader that stops early ends hwsim quietly, exit 0 (issue 11 item 15; the choice is in hwsim.cli)."""

    @staticmethod
    def _pipeline(command: str) -> subprocess.CompletedProcess[str]:
        script = f"set -o pipefail; {shlex.quote(sys.executable)} -m hwsim {command} | head -1"
        return subprocess.run(["bash", "-c", script], check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)

    @staticmethod
    def _closed_reader(*argv: str) -> tuple[int, str]:
        """Run hwsim with a stdout pipe whose read end is closed before hwsim writes (no race)."""
        p = subprocess.Popen([sys.executable, "-m", "hwsim", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()
        err = p.stderr.read()
        return p.wait(timeout=300), err

    def test_chips_into_head(self):
        done = self._pipeline("chips")
        assert (done.returncode, done.stderr) == (0, "")
        assert len(done.stdout.splitlines()) == 1

    def test_run_json_into_head(self, tmp_path):
        done = self._pipeline(f"run rk3588 {RESNET} --json --no-plots --out {tmp_path / 'r'}")
        assert (done.returncode, _not_warnings(done.stderr), done.stdout) == (0, "", "{\n")
        assert json.loads((tmp_path / "r" / "summary.json").read_text())["chip"] == "rk3588"  # written first

    @pytest.mark.parametrize("argv", [["chips"], ["schema"]])
    def test_a_reader_gone_before_the_first_write(self, argv):
        assert self._closed_reader(*argv) == (0, "")

    def test_run_with_a_reader_gone(self, tmp_path):
        out = tmp_path / "r"
        code, err = self._closed_reader("run", "rk3588", str(RESNET), "--json", "--no-plots", "--out", str(out))
        assert (code, _not_warnings(err)) == (0, "")
        assert (out / "summary.json").is_file()


class TestEntry:
    """``python -m hwsim`` (:func:`hwsim.cli.entry`): a ``run`` ends without the interpreter's
    teardown, after flushing everything it printed and logged; the exit code is the command's."""

    @pytest.mark.parametrize("deadline", [None, "output=0.01"])
    def test_run_output_whole_and_exit_code_kept(self, tmp_path, capsys, deadline):
        argv = ["run", "rk3588", str(RESNET), "--json", "--no-plots"]
        argv += ["--deadline", deadline] if deadline else []
        with open(tmp_path / "out.json", "w") as out, open(tmp_path / "err.txt", "w") as err:  # files: fully buffered
            code = subprocess.run([sys.executable, "-m", "hwsim", *argv, "--out", str(tmp_path / "a")], cwd=ROOT,
                                  stdout=out, stderr=err, timeout=300, check=False).returncode  # fmt: skip
        in_process = main([*argv, "--out", str(tmp_path / "b")])
        printed = capsys.readouterr()
        assert code == in_process == (1 if deadline else 0)
        got = json.loads((tmp_path / "out.json").read_text())
        want = json.loads(printed.out)
        assert {k: v for k, v in got.items() if k != "out_dir"} == {k: v for k, v in want.items() if k != "out_dir"}
        err = (tmp_path / "err.txt").read_text()
        assert err.splitlines()[-1].startswith("hwsim: deadline missed: ") if deadline else _not_warnings(err) == ""
        assert "hwsim: WARNING: " in err  # a log record (this run warns of fp16 ops) reaches the file too

    def test_a_command_that_is_not_one_run_returns(self, capsys):
        assert main(["chips"], exit_now=True) == 0  # returns: only a ONE_RUN command ends the process
        assert "rk3588" in capsys.readouterr().out


def _not_warnings(stderr: str) -> str:
    """stderr without hwsim's warning lines (a run may warn, e.g. of ops run in a wider dtype)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("hwsim: WARNING: "))


def test_a_command_collects_garbage_less_often_and_restores_the_callers_thresholds(monkeypatch, capsys):
    import gc

    from hwsim import cli

    seen: list[tuple[int, ...]] = []
    real = cli._run

    def spy(args):  # what the collector is told while the command runs
        seen.append(gc.get_threshold())
        return real(args)

    monkeypatch.setattr(cli, "_run", spy)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert main(["chips"]) == 0
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*before)
    assert seen == [(cli._GC_YOUNG_THRESHOLD, cli._GC_MIDDLE_THRESHOLD, 10)]
    assert after == (700, 10, 10)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_one_run_command_runs_without_collections_and_restores_the_callers_switch(monkeypatch, tmp_path, enabled):
    import gc

    from hwsim import cli

    seen: list[bool] = []
    real = cli._run

    def spy(args):  # whether the collector runs while the command does
        seen.append(gc.isenabled())
        return real(args)

    monkeypatch.setattr(cli, "_run", spy)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert main(["chips"]) == 0  # many runs (none is ONE_RUN): collected, less often
        assert main(["run", "rk3588", str(ROOT / "examples" / "models" / "mlp_mnist.onnx"), "--out", str(tmp_path / "r"), "--no-plots"]) == 0
        after = gc.isenabled()
        young = gc.get_count()[0]  # what the run made went to the oldest generation, not the young one
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [enabled, False]
    assert after is enabled
    assert young < 1000


def test_root_logger_records_of_libraries_stay_off_stderr_unless_debug(capsys: pytest.CaptureFixture[str]) -> None:
    """onnxruntime's quantizer warns through the root logger (``logging.warning``), which with no
    handler configured installs one on stderr: a refusal would no longer be one line."""
    import logging

    from hwsim.cli import configure_logging

    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        configure_logging(debug=False)
        logging.warning("from a library")  # noqa: LOG015 - what a library does
        assert "from a library" not in capsys.readouterr().err
        configure_logging(debug=True)
        logging.warning("from a library, debugging")  # noqa: LOG015 - what a library does
        assert "from a library, debugging" in capsys.readouterr().err
    finally:
        root.handlers[:] = saved
        configure_logging(debug=False)
