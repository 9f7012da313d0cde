"""The int8 GEMM check: onnxruntime's integer kernel here against the fingerprint's."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hwsim.cli import main
from hwsim.host import fingerprint
from hwsim.host.errors import MeasureError
from hwsim.host.int8_check import RATIO_LIMIT, Int8Check, check_int8, uses_int8_gemm
from tests.helpers import ROOT, mlp, qdq_matmul, write_chip

#: A fingerprinted chip file of this project's CI Xeon, and its int8 MatMul rate on one thread.
HOST = ROOT / "examples" / "host" / "host_ci.yaml"
HOST_INT8 = (fingerprint.read_fingerprint(HOST) or {})["matmul_gflops_1t"]["int8"]


def _chip_with(tmp_path: Path, record: dict[str, object]) -> Path:
    chip = write_chip(tmp_path / "host.yaml")
    chip.write_text(f"# fingerprint-json: {json.dumps(record)}\n" + chip.read_text())
    return chip


class TestInt8Check:
    @pytest.mark.parametrize("ratio", [1.0, 1.4, 1 / 1.4])
    def test_a_speed_change_agrees(self, ratio: float) -> None:
        assert Int8Check(2000.0, 2000.0 * ratio).agrees

    @pytest.mark.parametrize("ratio", [0.32, 1 / (RATIO_LIMIT * 1.01), RATIO_LIMIT * 1.01, 3.1])
    def test_another_kernel_does_not(self, ratio: float) -> None:
        assert not Int8Check(2000.0, 2000.0 * ratio).agrees

    def test_the_warning_names_the_file_both_rates_and_a_different_mask(self) -> None:
        text = Int8Check(2417.0, 776.0, cpus_now=1, cpus_fingerprint=2).warning("host.yaml")
        assert text.startswith("host.yaml: ") and "776 GOP/s" in text and "2417" in text and "x0.32" in text
        assert "on 1 CPU(s), the fingerprint's on 2" in text and "\n" not in text

    def test_no_mask_hint_when_the_masks_match_or_are_unknown(self) -> None:
        assert "CPU(s)" not in Int8Check(2417.0, 776.0, 2, 2).warning("h.yaml")
        assert "CPU(s)" not in Int8Check(2417.0, 776.0, 1, None).warning("h.yaml")

    def test_integer_gemm_kernels(self) -> None:
        assert uses_int8_gemm(["Add", "QLinearMatMul"]) and uses_int8_gemm(["MatMulInteger"])
        assert not uses_int8_gemm(["MatMul", "QuantizeLinear", "DequantizeLinear", "QLinearAdd"])


class TestCheckInt8:
    def test_compares_the_probe_with_the_recorded_rate_at_its_size(self, tmp_path: Path) -> None:
        chip = _chip_with(tmp_path, {"matmul_gflops_1t": {"fp32": 200.0, "int8": 2400.0}, "matmul_n": 512,
                                     "cpus_allowed": 2})  # fmt: skip
        sizes: list[tuple[int, int]] = []

        def probe(n: int, threads: int) -> float:
            sizes.append((n, threads))
            return 800.0

        got = check_int8(chip, 1, probe)
        assert got is not None and sizes == [(512, 1)]
        assert got.ratio == pytest.approx(800.0 / 2400.0) and not got.agrees and got.cpus_fingerprint == 2

    def test_none_without_an_int8_rate_at_that_thread_count(self, tmp_path: Path) -> None:
        chip = _chip_with(tmp_path, {"matmul_gflops_1t": {"fp32": 200.0}, "threads": 2})
        assert check_int8(chip, 1, lambda n, t: 1.0) is None
        assert check_int8(chip, 2, lambda n, t: 1.0) is None
        assert check_int8(write_chip(tmp_path / "plain.yaml"), 1, lambda n, t: 1.0) is None

    def test_a_bad_rate_is_an_error_naming_the_field(self, tmp_path: Path) -> None:
        chip = _chip_with(tmp_path, {"matmul_gflops_1t": {"int8": -5}})
        with pytest.raises(MeasureError, match=r"matmul_gflops_1t\.int8"):
            check_int8(chip, 1, lambda n, t: 1.0)


class TestValidateCommand:
    def _run(self, tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, gops: float) -> Path:
        chip = tmp_path / "host.yaml"
        shutil.copy(HOST, chip)
        shutil.copy(HOST.with_name("host_ci_calibration.yaml"), tmp_path)
        calls: list[str] = []

        def probe(n: int = 768, threads: int = 1, min_s: float = 0.2, dtype: str = "fp32") -> float:
            calls.append(dtype)
            return gops if dtype == "int8" else 213.3

        monkeypatch.setattr(fingerprint, "probe_gflops", probe)
        results = tmp_path / "v.jsonl"
        assert main(["validate", str(chip), str(model), "--runs", "10", "--results", str(results)]) == 0
        return results

    def test_an_int8_model_under_another_kernel_is_warned_and_recorded(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        results = self._run(tmp_path, qdq_matmul(tmp_path / "q.onnx", 64, 256, 256), monkeypatch, HOST_INT8 / 3.2)
        err = capsys.readouterr().err
        assert f"int8 GEMM runs at {HOST_INT8 / 3.2:.0f} GOP/s" in err and "host.yaml" in err
        rec = json.loads(results.read_text())
        assert rec["int8_gemm_vs_fingerprint"] == pytest.approx(1 / 3.2)

    def test_the_same_kernel_is_not_warned(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        results = self._run(tmp_path, qdq_matmul(tmp_path / "q.onnx", 64, 256, 256), monkeypatch, HOST_INT8 * 0.9)
        assert "int8 GEMM" not in capsys.readouterr().err
        assert json.loads(results.read_text())["int8_gemm_vs_fingerprint"] == pytest.approx(0.9)

    def test_a_float_model_is_not_probed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        results = self._run(tmp_path, mlp(tmp_path / "m.onnx"), monkeypatch, 1.0)
        assert "int8 GEMM" not in capsys.readouterr().err
        assert json.loads(results.read_text())["int8_gemm_vs_fingerprint"] is None


class TestFingerprintRecordsTheMask:
    def test_a_narrower_mask_is_noted(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(fingerprint, "cpus_allowed", lambda: 1)
        monkeypatch.setattr(os, "cpu_count", lambda: 4)
        note = fingerprint._mask_note()
        assert note is not None and "allowed 1 of the 4 CPUs" in note

    def test_the_whole_machine_is_not(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(fingerprint, "cpus_allowed", lambda: 4)
        monkeypatch.setattr(os, "cpu_count", lambda: 4)
        assert fingerprint._mask_note() is None

    @pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity masks here")
    def test_cpus_allowed_is_this_process_mask(self) -> None:
        assert fingerprint.cpus_allowed() == len(os.sched_getaffinity(0))

    def test_the_mask_travels_in_the_chip_file_and_back_to_the_check(self, tmp_path: Path) -> None:
        from dataclasses import replace

        from tests.hwsim.host.test_calibrate_host import fake_fingerprint

        fp = replace(fake_fingerprint(), matmul_gflops_1t={"fp32": 64.0, "int8": 900.0},
                     matmul_spread={"fp32": 0.01, "int8": 0.02}, cpus_allowed=1)  # fmt: skip
        chip = tmp_path / "host.yaml"
        fingerprint.write_chip(fp, chip)
        assert (fingerprint.read_fingerprint(chip) or {}).get("cpus_allowed") == 1
        got = check_int8(chip, 1, lambda n, t: 300.0)
        assert got is not None and got.cpus_fingerprint == 1 and got.fingerprint_gops == 900.0
