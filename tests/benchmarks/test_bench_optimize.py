"""The optimize benchmarks (``benchmarks/bench_optimize.py``, ``benchmarks/bench_transfer.py``):
their table logic on small inputs, the chip family they write, and one tiny real search through
the CLI, so that a change to ``hwsim optimize``'s outputs shows here, not in a 20-minute run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from chips.schema import load_chip
from hwsim.report.provenance import chip_sha256
from tests.helpers import ROOT


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # bench_transfer imports bench_optimize by name
    spec.loader.exec_module(module)
    return module


bench_optimize = _load("bench_optimize")
bench_transfer = _load("bench_transfer")
Search = bench_transfer.Search


class TestWhatChanged:
    def test_nothing(self) -> None:
        assert bench_optimize.what_changed({"transforms": [], "signatures": {}}) == "nothing better found"

    def test_transforms_then_knobs_counted_over_ops(self) -> None:
        best = {"transforms": ["fold_bn"],
                "signatures": {"a": {"dataflow": "os", "unit": "npu"}, "b": {"dataflow": "os"}}}  # fmt: skip
        assert bench_optimize.what_changed(best) == "fold_bn; 2 ops mapped (dataflow=os x2, unit=npu)"


class TestReplaceSection:
    def test_appends_a_missing_section(self, tmp_path: Path) -> None:
        doc = tmp_path / "d.md"
        doc.write_text("# T\n\ntext\n", encoding="utf-8")
        bench_optimize.replace_section(doc, "## M", "| a |")
        assert doc.read_text(encoding="utf-8") == "# T\n\ntext\n\n## M\n\n| a |\n"

    def test_replaces_only_its_own_section(self, tmp_path: Path) -> None:
        doc = tmp_path / "d.md"
        doc.write_text("# T\n\n## M\n\nold\n\n## N\n\nkeep\n", encoding="utf-8")
        bench_optimize.replace_section(doc, "## M", "new")
        assert doc.read_text(encoding="utf-8") == "# T\n\n## M\n\nnew\n\n## N\n\nkeep\n"


class TestTrialsTo95:
    cold = Search(baseline=10.0, curve=(10.0, 10.0, 9.0, 8.0, 8.0, 6.0), transferred=0, transferred_hits=0, seconds=1.0)

    def test_first_trial_at_or_under_the_threshold_counting_the_baseline(self) -> None:
        assert bench_transfer.trials_to(self.cold, 6.0) == 6
        assert bench_transfer.trials_to(self.cold, 9.5) == 3
        assert bench_transfer.trials_to(self.cold, 5.0) is None

    def test_row_ratio_and_hit_rate(self) -> None:
        warm = Search(10.0, (10.0, 6.1, 5.9), transferred=2, transferred_hits=1, seconds=1.0)
        text, ratio, n_cold = bench_transfer.row("same model", "m", "clk125", self.cold, warm, 40)
        # threshold 10 - 0.95 * 4 = 6.2: cold reaches it at trial 6, transfer at trial 2
        assert ratio == 3.0 and n_cold == 6 and "| 6 | 2 | 3.00x | 1/2 |" in text
        # the ceiling: 6 cold trials allow at most 3x, which transfer took in the fewest trials (2)
        assert bench_transfer.summary("same model", [(n_cold, ratio)]).endswith(
            "geometric mean 3.00x, >= 10x possible on 0; the fewest possible trials (2) on 1")

    def test_row_without_gain_or_never_reached(self) -> None:
        flat = Search(10.0, (10.0, 10.0), 0, 0, 1.0)
        assert bench_transfer.row("same model", "m", "clk125", flat, flat, 40)[1:] == (None, None)
        text, ratio, n_cold = bench_transfer.row("same model", "m", "clk125", self.cold, flat, 40)
        assert ratio is None and n_cold == 6 and "> 40" in text
        assert "over 0 targets reached of 1 with a gain" in bench_transfer.summary("same model", [(n_cold, ratio)])


def test_the_family_is_seven_distinct_valid_chips_with_the_scaled_fields(tmp_path: Path) -> None:
    family = bench_transfer.write_family(tmp_path)
    chips = {name: load_chip(str(path)) for name, path in family.items()}
    assert len({chip_sha256(c) for c in chips.values()}) == 7
    base = chips["rk3588"]
    assert chips["clk125"].unit("npu").clock_mhz == 1.25 * base.unit("npu").clock_mhz
    assert chips["sram05"].unit("npu").sram_kib == 0.5 * base.unit("npu").sram_kib
    assert chips["cores2"].unit("npu").cores == 2
    assert chips["dram05"].dram.bandwidth_gbps == pytest.approx(0.5 * base.dram.bandwidth_gbps)


def test_a_tiny_real_pair_and_search_read_back(tmp_path: Path) -> None:
    model = ROOT / "examples" / "models" / "mlp_mnist.onnx"
    line = bench_optimize.bench_pair(model, "rk3588", 4, 0, tmp_path)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:2] == ["mlp_mnist", "rk3588"] and cells[5] == "4"
    assert float(cells[3]) <= float(cells[2]) and "summary.json" not in line  # the replay agrees
    found = bench_transfer.read_search(tmp_path / "mlp_mnist-rk3588")
    assert len(found.curve) == 4 and found.curve[0] == found.baseline
    assert list(found.curve) == sorted(found.curve, reverse=True)
    assert float(cells[3]) == pytest.approx(found.best, abs=5e-4)


def test_model_dir_compares_the_folder_s_models_on_every_chip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    shutil.copy(ROOT / "examples" / "models" / "mlp_mnist.onnx", tmp_path / "unseen.onnx")
    assert bench_optimize.main(["--model-dir", str(tmp_path), "--budget", "2"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| unseen |")]
    assert [r.split(" | ")[1] for r in rows] == bench_optimize.CHIPS
    assert not any("failed" in r or "**" in r for r in rows)  # every search ran and replayed as it said


@pytest.mark.parametrize("extra", [[], ["--write-doc"]])
def test_model_dir_must_be_a_folder_and_never_writes_the_doc(tmp_path: Path, extra: list[str]) -> None:
    folder = tmp_path / ("missing" if not extra else "")
    with pytest.raises(SystemExit) as exc:
        bench_optimize.main(["--model-dir", str(folder), *extra])
    assert exc.value.code == 2
