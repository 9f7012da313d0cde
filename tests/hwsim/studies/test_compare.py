"""``hwsim compare``: report folders or one model's variants side by side, and its bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from chips import load_chip
from chips.variants import override
from graph_ir.onnx_import import load_onnx
from hwsim.cli import main
from hwsim.pipeline import run_graph
from hwsim.studies.compare import CompareError, Variant, compare_json, format_table, load_summary
from tests.helpers import conv_argmax_onnx, one_line_error


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A conv big enough for the NPU, then an ArgMax for the CPU (a transfer between them)."""
    return conv_argmax_onnx(tmp_path_factory.mktemp("model") / "tiny.onnx", 64, 32)


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory: pytest.TempPathFactory, tiny: Path) -> list[Path]:
    base = tmp_path_factory.mktemp("runs")
    dirs = []
    for chip in ("rk3588", "edge8"):
        out = base / chip
        assert main(["run", chip, str(tiny), "--out", str(out), "--no-plots"]) == 0
        dirs.append(out)
    return dirs


def _png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


class TestFolders:
    def test_table_json_csv_and_plot(
        self, run_dirs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "cmp"
        assert main(["compare", *map(str, run_dirs), "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert printed.startswith("hwsim compare: 2 runs of tiny")
        data = json.loads((out / "compare.json").read_text())
        summaries = [json.loads((d / "summary.json").read_text()) for d in run_dirs]
        assert [r["label"] for r in data["runs"]] == ["rk3588", "edge8"]
        for row, s in zip(data["runs"], summaries):
            assert row["latency_ms"] == s["latency_ms"] and row["energy_mj"] == s["energy_mj"]
            assert row["critical_path_ms"] == s["critical_path_ms"]
            assert row["cross_domain_bytes"] == s["cross_domain_bytes"]
            assert row["utilization"] == {u: x["utilization"] for u, x in s["units"].items()}
            assert f"{s['latency_ms']:.3f}" in printed
        faster = min(data["runs"], key=lambda r: r["latency_ms"])["label"]
        assert data["fastest"] == faster and f"fastest: {faster}" in printed
        assert data["runs"][1]["speedup_vs_first"] == pytest.approx(
            summaries[0]["latency_ms"] / summaries[1]["latency_ms"]
        )
        rows = list(csv.DictReader((out / "compare.csv").open()))
        assert [r["label"] for r in rows] == ["rk3588", "edge8"]
        assert float(rows[1]["latency_ms"]) == summaries[1]["latency_ms"]
        assert rows[1]["utilization_cpu_big"] == ""  # edge8 has no such unit
        assert _png(out / "compare.png")
        self._speedup_means_one_thing(printed, data, rows)
        assert sorted(p.name for p in out.iterdir()) == [
            "compare.csv",
            "compare.json",
            "compare.png",
        ]

    @staticmethod
    def _speedup_means_one_thing(printed: str, data: dict, rows: list[dict[str, str]]) -> None:
        """The terminal's speed-up column, compare.json and compare.csv give the same number:
        the first run's latency over this run's (issue 11: the terminal showed the inverse)."""
        lines = printed.splitlines()
        assert "speed-up" in lines[1] and "vs first" not in printed
        first = data["runs"][0]["latency_ms"]
        for run, row in zip(data["runs"], rows):
            assert run["speedup_vs_first"] == pytest.approx(first / run["latency_ms"])
            assert float(row["speedup_vs_first"]) == pytest.approx(run["speedup_vs_first"])
            line = next(x for x in lines if x.strip().startswith(run["label"] + " "))
            assert line.split()[2] == f"x{run['speedup_vs_first']:.2f}"

    def test_json_output_and_rerun_into_the_same_folder(
        self, run_dirs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "cmp"
        assert main(["compare", *map(str, run_dirs), "--out", str(out)]) == 0
        capsys.readouterr()
        assert (
            main(["compare", str(run_dirs[1]), str(run_dirs[0]), "--out", str(out), "--json"]) == 0
        )
        printed = json.loads(capsys.readouterr().out)
        assert printed == json.loads((out / "compare.json").read_text())
        assert [r["label"] for r in printed["runs"]] == ["edge8", "rk3588"]


class TestModelVariants:
    def test_chips_and_policies_match_direct_runs(
        self, tmp_path: Path, tiny: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "cmp"
        args = ["compare", str(tiny), "--chip", "rk3588", "--chip", "edge8", "--policy", "single-unit",
                "--policy", "affinity-locality", "--out", str(out), "--json"]  # fmt: skip
        assert main(args) == 0
        data = json.loads(capsys.readouterr().out)
        labels = [r["label"] for r in data["runs"]]
        assert labels == [
            "rk3588 single-unit",
            "rk3588 affinity-locality",
            "edge8 single-unit",
            "edge8 affinity-locality",
        ]
        graph = load_onnx(tiny)
        for row in data["runs"]:
            chip, policy = row["label"].split()
            direct = run_graph(graph, load_chip(chip), "int8", policy).analysis
            assert row["latency_ms"] == pytest.approx(direct.latency_ms, abs=1e-6)
            assert row["policy"] == policy and row["chip"] == chip
        assert _png(out / "compare.png")

    def test_what_if_variants(
        self, tmp_path: Path, tiny: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = ["compare", str(tiny), "--what-if", "npu.clock_mhz=250", "--what-if",
                "npu.clock_mhz=2000,dram.bandwidth_gbps=68", "--out", str(tmp_path / "c")]  # fmt: skip
        assert main(args) == 0
        printed = capsys.readouterr().out
        data = json.loads((tmp_path / "c" / "compare.json").read_text())
        base, slow, fast = data["runs"]
        assert [base["label"], slow["label"], fast["label"]] == [
            "rk3588", "npu.clock_mhz=250", "npu.clock_mhz=2000,dram.bandwidth_gbps=68"
        ]  # fmt: skip
        assert slow["latency_ms"] > base["latency_ms"] > fast["latency_ms"]
        chip = override(load_chip("rk3588"), ["npu.clock_mhz=250"])
        assert slow["latency_ms"] == pytest.approx(
            run_graph(load_onnx(tiny), chip).analysis.latency_ms, abs=1e-6
        )
        assert "npu.clock_mhz=250" in printed


class TestBadInput:
    def test_folder_without_summary(
        self, run_dirs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        empty = tmp_path / "empty"
        empty.mkdir()
        out = tmp_path / "cmp"
        assert main(["compare", str(run_dirs[0]), str(empty), "--out", str(out)]) == 2
        assert (
            one_line_error(capsys)
            == f"hwsim: error: {empty}: no summary.json (not a folder written by `hwsim run`)"
        )
        assert not out.exists()

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("{not json", "not valid JSON"),
            ("[1, 2]", "expected a JSON object"),
            ('{"chip": "x", "model": "m", "energy_mj": 1, "critical_path_ms": 1, "units": {}}', "missing field 'latency_ms'"),
            ('{"chip": "x", "model": "m", "latency_ms": "fast", "energy_mj": 1, "critical_path_ms": 1, "units": {}}',
             "field 'latency_ms' has the wrong type (str)"),
            ('{"chip": "x", "model": "m", "latency_ms": 1, "energy_mj": 1, "critical_path_ms": 1, "units": {"npu": {}}}',
             "'units.npu.utilization' is missing"),
        ],
    )  # fmt: skip
    def test_bad_summary(
        self,
        run_dirs: list[Path],
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        content: str,
        message: str,
    ) -> None:
        bad = tmp_path / "bad"
        bad.mkdir()
        (bad / "summary.json").write_text(content)
        assert main(["compare", str(run_dirs[0]), str(bad), "--out", str(tmp_path / "cmp")]) == 2
        err = one_line_error(capsys)
        assert err.startswith(f"hwsim: error: {bad / 'summary.json'}: ") and message in err
        assert not (tmp_path / "cmp").exists()

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            (["--chip", "rk3588", "--chip", "nosuchchip"], "nosuchchip"),
            (["--what-if", "warp.clock_mhz=1"], "no unit or domain named 'warp'"),
            (  # a typo says which option, the nearest field and every valid one
                ["--what-if", "npu.clock_mzh=1"],
                "--what-if npu.clock_mzh=1: no field 'clock_mzh' (did you mean clock_mhz? fields: active_w,",
            ),
            (["--what-if", ","], "names no TARGET.FIELD=VALUE"),
            (["--chip", "rk3588", "--chip", "rk3588"], "same label"),
            ([], "at least two runs"),
        ],
    )
    def test_bad_variants(
        self,
        tmp_path: Path,
        tiny: Path,
        capsys: pytest.CaptureFixture[str],
        extra: list[str],
        message: str,
    ) -> None:
        out = tmp_path / "cmp"
        assert main(["compare", str(tiny), *extra, "--out", str(out)]) == 2
        assert message in one_line_error(capsys)
        assert not out.exists()

    def test_mixed_and_missing_paths_and_options_on_folders(
        self, run_dirs: list[Path], tmp_path: Path, tiny: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["compare", str(run_dirs[0]), str(tmp_path / "nope")]) == 2
        assert f"{tmp_path / 'nope'}: no such report folder or model file" in one_line_error(
            capsys
        )
        assert main(["compare", str(run_dirs[0]), str(tiny)]) == 2
        assert "report folders only, or one model file" in one_line_error(capsys)
        assert main(["compare", *map(str, run_dirs), "--chip", "edge8"]) == 2
        assert "--chip applies to a MODEL" in one_line_error(capsys)
        assert main(["compare", str(run_dirs[0])]) == 2
        assert "at least two runs" in one_line_error(capsys)

    def test_out_folder_with_foreign_files_is_left_alone(
        self, run_dirs: list[Path], tmp_path: Path, tiny: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / "mine"
        out.mkdir()
        (out / "notes.txt").write_text("keep")
        assert main(["compare", *map(str, run_dirs), "--out", str(out)]) == 2
        assert "holds files hwsim did not write (notes.txt)" in one_line_error(capsys)
        assert [p.name for p in out.iterdir()] == ["notes.txt"]
        assert (
            main(["compare", str(tiny), "--chip", "rk3588", "--chip", "edge8", "--out", str(out)])
            == 2
        )
        assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_library_functions_on_plain_summaries(tmp_path: Path) -> None:
    a = {"chip": "x", "model": "m", "latency_ms": 4.0, "energy_mj": 3.0, "critical_path_ms": 2.0,
         "units": {"u": {"utilization": 0.5}}, "traffic": [{"bytes": 1500}, {"bytes": 500}]}  # fmt: skip
    b = dict(
        a, latency_ms=1.0, energy_mj=9.0, units={"v": {"utilization": 1.0}}, cross_domain_bytes=7
    )
    data = compare_json([Variant("a", a), Variant("b", b)])
    assert data["fastest"] == "b" and data["lowest_energy"] == "a"
    assert [r["cross_domain_bytes"] for r in data["runs"]] == [2000, 7]
    assert [r["speedup_vs_first"] for r in data["runs"]] == [1.0, 4.0]
    table = format_table([Variant("a", a), Variant("b", b)])
    assert "util u" in table and "util v" in table
    assert "x4.00" in table and "0.25" not in table  # b takes a quarter of a's time: four times as fast
    with pytest.raises(CompareError, match="nothing to compare"):
        compare_json([])
    (tmp_path / "summary.json").write_text(json.dumps(a))
    assert load_summary(tmp_path) == a
    with pytest.raises(CompareError, match="no such run folder"):
        load_summary(tmp_path / "missing")
