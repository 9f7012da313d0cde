"""``hwsim quantize`` and ``hwsim accuracy`` on valid models onnxruntime's quantizer mishandles:
a quantizer failure or a quantized model onnxruntime cannot load is one line, exit 2, nothing
written; in a sensitivity study such a layer is reported, not fatal. Unnamed nodes get the
importer's names, so a binding written by ``--binding-out`` is one ``hwsim run --quant`` takes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hwsim.cli import main
from tests.helpers import one_line_error


def _save(path: Path, nodes: list[onnx.NodeProto], x: list[int], y: list[int], inits: dict[str, np.ndarray],
          dtype: int = TensorProto.FLOAT, opset: int = 17, check: bool = True) -> Path:  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", dtype, x)], [helper.make_tensor_value_info("y", dtype, y)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def _data(path: Path, shape: list[int], seed: int, dtype: type = np.float32) -> Path:
    np.savez(path, x=np.random.default_rng(seed).standard_normal(shape).astype(dtype))
    return path


def _weights(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)


def _gemm_2d_c(tmp_path: Path) -> tuple[Path, Path]:
    node = helper.make_node("Gemm", ["x", "W", "C"], ["y"], transB=1)
    m = _save(tmp_path / "gemm.onnx", [node], [4, 16], [4, 8], {"W": _weights(8, 16), "C": _weights(4, 8)})
    return m, _data(tmp_path / "calib.npz", [8, 16], 1)


def _convtranspose_group(tmp_path: Path) -> tuple[Path, Path]:
    node = helper.make_node("ConvTranspose", ["x", "W", "B"], ["y"], group=4)
    inits = {"W": _weights(8, 4, 3, 3), "B": _weights(16)}
    m = _save(tmp_path / "convt.onnx", [node], [1, 8, 4, 4], [1, 16, 6, 6], inits)
    return m, _data(tmp_path / "calib.npz", [2, 8, 4, 4], 1)


def _conv_maxpool(tmp_path: Path) -> Path:
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    return _save(tmp_path / "pool.onnx", nodes, [1, 8, 8, 8], [1, 16, 4, 4], {"W": _weights(16, 8, 3, 3)})


class TestQuantizerFailure:
    @pytest.mark.parametrize("build", [_gemm_2d_c, _convtranspose_group])
    def test_quantize_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], build: Callable[[Path], tuple[Path, Path]]
    ) -> None:
        model, calib = build(tmp_path)
        out = tmp_path / "q.onnx"
        assert main(["quantize", str(model), "--calib", str(calib), "-o", str(out)]) == 2
        err = one_line_error(capsys)
        assert f"{model}: onnxruntime's quantizer failed (ValueError: " in err, err
        assert not out.exists()
        assert [p.name for p in tmp_path.iterdir() if p.suffix == ".onnx"] == [model.name]  # no temporary left


class TestUnloadableResult:
    def test_fp16_model_refused(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        node = helper.make_node("Conv", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1])
        inits = {"W": _weights(16, 8, 3, 3, dtype=np.float16), "B": _weights(16, dtype=np.float16)}
        model = _save(tmp_path / "fp16.onnx", [node], [1, 8, 8, 8], [1, 16, 8, 8], inits, TensorProto.FLOAT16)
        calib = _data(tmp_path / "calib.npz", [2, 8, 8, 8], 1, np.float16)
        out = tmp_path / "q.onnx"
        assert main(["quantize", str(model), "--calib", str(calib), "-o", str(out)]) == 2
        err = one_line_error(capsys)
        assert f"{model}: onnxruntime cannot load the quantized model (" in err and "float16" in err, err
        assert not out.exists()

    def test_int4_maxpool_refused(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        model, binding, out = _conv_maxpool(tmp_path), tmp_path / "int4.yaml", tmp_path / "q.onnx"
        binding.write_text("default: int4\n")
        calib = _data(tmp_path / "calib.npz", [4, 8, 8, 8], 1)
        assert main(["quantize", str(model), "--calib", str(calib), "--binding", str(binding), "-o", str(out)]) == 2
        err = one_line_error(capsys)
        assert f"{model}: onnxruntime cannot load the quantized model (" in err and "MaxPool" in err, err
        assert not out.exists()

    def test_accuracy_of_unloadable_candidate(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A DequantizeLinear with a float16 scale before opset 19 (what the quantizer wrote for an
        fp16 model): a file onnxruntime will not load."""
        nodes = [
            helper.make_node("DequantizeLinear", ["q", "s"], ["d"]),
            helper.make_node("Cast", ["d"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "f"], ["y"]),
        ]
        inits: dict[str, np.ndarray] = {"q": np.arange(4, dtype=np.int8), "s": np.array(0.5, np.float16)}
        cand = _save(tmp_path / "cand.onnx", nodes, [1, 4], [1, 4], inits, check=False)
        ref = _save(tmp_path / "ref.onnx", [helper.make_node("Add", ["x", "b"], ["y"])], [1, 4], [1, 4],
                    {"b": np.arange(4, dtype=np.float32)})  # fmt: skip
        val = _data(tmp_path / "val.npz", [3, 4], 2)
        assert main(["accuracy", str(ref), str(cand), "--data", str(val)]) == 2
        err = one_line_error(capsys)
        assert f"{cand}: onnxruntime cannot load the model (" in err, err

    def test_sensitivity_reports_layer_and_keeps_it_wide(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        model, binding = _conv_maxpool(tmp_path), tmp_path / "b.yaml"
        calib, val = _data(tmp_path / "calib.npz", [4, 8, 8, 8], 1), _data(tmp_path / "val.npz", [4, 8, 8, 8], 2)
        argv = ["accuracy", str(model), "--sensitivity", "--calib", str(calib), "--data", str(val),
                "--binding-out", str(binding), "--json"]  # fmt: skip
        assert main(argv) == 0
        [row] = json.loads(capsys.readouterr().out)
        assert (row["layer"], row["score"], row["relative_drop"]) == ("Conv_0", None, None)
        assert "onnxruntime cannot load the quantized model" in row["error"] and "MaxPool" in row["error"]
        assert "name: Conv_0" in binding.read_text()
        assert [p.name for p in tmp_path.iterdir() if p.suffix == ".onnx"] == [model.name]  # work files removed
        out = tmp_path / "q.onnx"  # the binding keeps the layer wide: its quantized model loads
        assert main(["quantize", str(model), "--calib", str(calib), "--binding", str(binding), "-o", str(out)]) == 0
        assert "left in float (fp32 in the file): Conv_0" in capsys.readouterr().out and out.is_file()


class TestUnnamedNodes:
    def _model(self, tmp_path: Path) -> Path:
        nodes = [
            helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("Conv", ["r", "W2"], ["y"]),
        ]
        inits = {"W": _weights(16, 8, 3, 3), "W2": _weights(4, 16, 1, 1)}
        return _save(tmp_path / "unnamed.onnx", nodes, [1, 8, 8, 8], [1, 4, 8, 8], inits)

    def test_sensitivity_binding_runs(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        model, binding = self._model(tmp_path), tmp_path / "b.yaml"
        calib, val = _data(tmp_path / "calib.npz", [4, 8, 8, 8], 1), _data(tmp_path / "val.npz", [4, 8, 8, 8], 2)
        argv = ["accuracy", str(model), "--sensitivity", "--dtype", "int8", "--calib", str(calib), "--data", str(val),
                "--binding-out", str(binding), "--json"]  # fmt: skip
        assert main(argv) == 0
        ranking = json.loads(capsys.readouterr().out)
        assert sorted(r["layer"] for r in ranking) == ["Conv_0", "Conv_2"]
        assert f"name: {ranking[0]['layer']}" in binding.read_text()
        reports = tmp_path / "r"
        assert main(["run", "rk3588", str(model), "--quant", str(binding), "--out", str(reports), "--no-plots"]) == 0
        assert json.loads((reports / "summary.json").read_text())["quant"]["ops_per_dtype"]["fp32"] == 1

    def test_quantize_rule_on_generated_name(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        model, binding, out = self._model(tmp_path), tmp_path / "b.yaml", tmp_path / "q.onnx"
        binding.write_text("default: int8\nrules:\n  - name: Conv_2\n    dtype: fp32\n")
        calib = _data(tmp_path / "calib.npz", [2, 8, 8, 8], 1)
        assert main(["quantize", str(model), "--calib", str(calib), "--binding", str(binding), "-o", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "node(s) in int8: Conv_0," in printed and "left in float (fp32 in the file): Conv_2" in printed
        quantized = {n.input[1] for n in onnx.load(str(out)).graph.node if n.op_type == "Conv"}
        assert quantized == {"W_DequantizeLinear_Output", "W2"}
