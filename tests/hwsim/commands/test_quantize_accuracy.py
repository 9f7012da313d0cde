"""``run --quant``, ``hwsim quantize`` and ``hwsim accuracy`` on the shipped trained model: the
chain fp32 -> int8 per-channel passes the gate, int4 everywhere fails it, a binding that keeps
the most sensitive layer wide passes; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwsim.cli import main
from tests.helpers import MODELS, ROOT

TRAINED = ROOT / "examples" / "trained"
MODEL, CALIB, VAL = TRAINED / "digits_mlp.onnx", TRAINED / "digits_calib.npz", TRAINED / "digits_val.npz"


def _quantize(tmp_path: Path, name: str, binding: str | None) -> Path:
    out = tmp_path / f"{name}.onnx"
    argv = ["quantize", str(MODEL), "--calib", str(CALIB), "-o", str(out)]
    if binding is not None:
        (tmp_path / f"{name}.yaml").write_text(binding)
        argv += ["--binding", str(tmp_path / f"{name}.yaml")]
    assert main(argv) == 0
    return out


def _gate(candidate: Path) -> int:
    return main(["accuracy", str(MODEL), str(candidate), "--data", str(VAL), "--calib", str(CALIB)])


class TestChain:
    def test_int8_per_channel_passes(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert _gate(_quantize(tmp_path, "int8", None)) == 0
        assert "PASS" in capsys.readouterr().out

    def test_int4_everywhere_fails_and_mixed_passes(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        int4 = _quantize(tmp_path, "int4", "default: int4\n")
        assert "int4 as QDQ" in capsys.readouterr().out  # said, never silent
        assert _gate(int4) == 1
        assert "FAIL" in capsys.readouterr().out
        binding = tmp_path / "mixed.yaml"
        argv = ["accuracy", str(MODEL), "--sensitivity", "--calib", str(CALIB), "--data", str(VAL),
                "--binding-out", str(binding), "--json"]  # fmt: skip
        assert main(argv) == 0
        ranking = json.loads(capsys.readouterr().out)
        assert [r["layer"] for r in ranking] and sorted(r["layer"] for r in ranking) == ["fc1", "fc2", "fc3"]
        drops = [r["relative_drop"] for r in ranking]
        assert drops == sorted(drops, reverse=True)
        assert f"name: {ranking[0]['layer']}" in binding.read_text()
        assert _gate(_quantize(tmp_path, "mixed", binding.read_text())) == 0

    def test_json_report(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        cand = _quantize(tmp_path, "int8", None)
        capsys.readouterr()
        assert main(["accuracy", str(MODEL), str(cand), "--data", str(VAL), "--json"]) == 0
        r = json.loads(capsys.readouterr().out)
        assert r["metric"] == "top1_accuracy" and r["samples"] == 597
        assert r["outputs"][0]["cosine"] > 0.99 and r["passed"]


class TestBadInput:
    def _refused(self, argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        for w in words:
            assert w in err, err

    def test_same_data_refused(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self._refused(["accuracy", str(MODEL), str(MODEL), "--data", str(VAL), "--calib", str(VAL)], capsys, str(VAL))
        copy = tmp_path / "copy.npz"
        with np.load(VAL) as z:
            np.savez(copy, **{k: z[k] for k in z.files})
        self._refused(["accuracy", str(MODEL), str(MODEL), "--data", str(copy), "--calib", str(VAL)], capsys, "sha256")

    def test_weightless_model(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "q.onnx"
        weightless = MODELS / "mlp_mnist.onnx"
        self._refused(["quantize", str(weightless), "--calib", str(CALIB), "-o", str(out)], capsys, str(weightless), "weightless")
        self._refused(["accuracy", str(weightless), str(MODEL), "--data", str(VAL)], capsys, "weightless")
        assert not out.exists()

    def test_data_shape_mismatch(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = tmp_path / "bad.npz"
        np.savez(bad, input=np.zeros((5, 63), np.float32))
        out = tmp_path / "q.onnx"
        self._refused(["quantize", str(MODEL), "--calib", str(bad), "-o", str(out)], capsys, str(bad), "'input'", "5x63")
        assert not out.exists()
        np.savez(bad, images=np.zeros((5, 64), np.float32))
        self._refused(["accuracy", str(MODEL), str(MODEL), "--data", str(bad)], capsys, "no array 'input'")

    @pytest.mark.parametrize(
        ("binding", "word"), [("rules:\n  - name: fc9\n    dtype: int8\n", "fc9"), ("default: int5\n", "default")]
    )
    def test_bad_binding(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], binding: str, word: str) -> None:
        b = tmp_path / "b.yaml"
        b.write_text(binding)
        out = tmp_path / "q.onnx"
        self._refused(["quantize", str(MODEL), "--calib", str(CALIB), "--binding", str(b), "-o", str(out)], capsys, str(b), word)
        assert not out.exists()
        reports = tmp_path / "r"
        self._refused(["run", "rk3588", str(MODEL), "--quant", str(b), "--out", str(reports), "--no-plots"], capsys, word)
        assert not reports.exists()


class TestRunQuant:
    def test_conversions_in_summary_and_trace(self, tmp_path: Path) -> None:
        b = tmp_path / "b.yaml"
        b.write_text("default: int8\ngranularity: per-channel\nrules:\n  - name: fc3\n    dtype: fp16\n")
        out = tmp_path / "r"
        assert main(["run", "rk3588", str(MODEL), "--quant", str(b), "--out", str(out), "--no-plots"]) == 0
        s = json.loads((out / "summary.json").read_text())
        assert s["precision"] == "int8" and s["ops"] == 6
        assert s["quant"]["ops_per_dtype"] == {"fp16": 1, "int8": 4}
        [c] = s["quant"]["conversions"]
        assert (c["op_type"], c["from"], c["to"]) == ("DequantizeLinear", "int8", "fp16") and c["ms"] > 0
        trace = (out / "trace.json").read_text()
        assert "relu2_out->fp16" in trace

    def test_quant_with_other_precision_is_usage_error(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        b = tmp_path / "b.yaml"
        b.write_text("default: int8\n")
        argv = ["run", "rk3588", str(MODEL), "--quant", str(b), "--precision", "fp16", "--out", str(tmp_path / "r")]
        assert main(argv) == 2
        assert "--quant and --precision fp16" in capsys.readouterr().err

    def test_uniform_binding_equals_precision(self, tmp_path: Path) -> None:
        b = tmp_path / "b.yaml"
        b.write_text("default: fp16\n")
        m = str(MODELS / "resnet18.onnx")
        assert main(["run", "rk3588", m, "--quant", str(b), "--out", str(tmp_path / "q"), "--no-plots"]) == 0
        assert main(["run", "rk3588", m, "--precision", "fp16", "--out", str(tmp_path / "p"), "--no-plots"]) == 0
        q, p = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("q", "p"))
        assert q.pop("quant")["conversions"] == []
        assert q.pop("provenance")["options"]["quant"] == str(b)  # the options differ, as given
        assert p.pop("provenance")["options"]["precision"] == "fp16"
        assert q == p
