"""`hwsim optimize` on valid models outside the usual CNN/transformer set: a model with no work,
a dynamic batch dimension, a data-dependent dimension, weights in an external data file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from hwsim.cli import main
from tests.helpers import one_line_error


def _save(path: Path, nodes: list[onnx.NodeProto], x: list[int | str], y: list[int | str],
          inits: list[onnx.TensorProto] = (), external: bool = False) -> Path:  # type: ignore[assignment]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], list(inits),
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    else:
        onnx.save_model(model, str(path))
    return path


def _conv(channels: int = 8) -> tuple[onnx.NodeProto, onnx.TensorProto]:
    w = np.random.default_rng(0).standard_normal((channels, channels, 3, 3)).astype(np.float32)
    return helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]), numpy_helper.from_array(w, "w")


def _optimize(tmp_path: Path, model: Path, *extra: str) -> int:
    db = f"sqlite:///{tmp_path / 'e.sqlite'}"
    return main(["optimize", "rk3588", str(model), "--budget", "4", "--workers", "1", "--quiet",
                 "--db", db, "-o", str(tmp_path / "out"), *extra])  # fmt: skip


def test_a_model_with_no_work_optimizes_to_itself(tmp_path: Path) -> None:
    """Every op free (an Identity): the search's predicted gains divided by a zero-length run."""
    model = _save(tmp_path / "identity.onnx", [helper.make_node("Identity", ["x"], ["y"])], [4, 32], [4, 32])
    assert _optimize(tmp_path, model) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["baseline"]["latency_ms"] == 0.0 == summary["best"]["latency_ms"]
    assert summary["speedup"] is None


def test_a_dynamic_batch_is_pinned_with_input_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conv, w = _conv()
    model = _save(tmp_path / "dyn.onnx", [conv], ["N", 8, 16, 16], ["N", 8, 16, 16], [w])
    assert _optimize(tmp_path, model) == 2
    err = one_line_error(capsys)
    assert str(model) in err and "--input-shape x=1x8x16x16" in err
    assert not (tmp_path / "out").exists()
    assert _optimize(tmp_path, model, "--input-shape", "x=2x8x16x16") == 0
    written = onnx.load(str(tmp_path / "out" / "model.onnx"))
    assert [d.dim_value for d in written.graph.input[0].type.tensor_type.shape.dim] == [2, 8, 16, 16]
    replay = ["run", "rk3588", str(tmp_path / "out" / "model.onnx"), "--schedule",
              str(tmp_path / "out" / "schedule.json"), "--out", str(tmp_path / "replay"), "--no-plots"]  # fmt: skip
    assert main(replay) == 0  # the written model needs no --input-shape to be replayed
    best = json.loads((tmp_path / "out" / "summary.json").read_text())["best"]["latency_ms"]
    assert json.loads((tmp_path / "replay" / "summary.json").read_text())["latency_ms"] == best


def test_a_data_dependent_dimension_is_refused_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Range whose length is the input's value: nothing bounds it (`hwsim run --assume` can)."""
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0), helper.make_node("Cast", ["m"], ["n"], to=TensorProto.INT64),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]), helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]  # fmt: skip
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("zero", 0), ("one", 1))]
    model = _save(tmp_path / "range.onnx", nodes, [4], ["n"], inits)
    assert _optimize(tmp_path, model) == 2
    err = one_line_error(capsys)
    assert str(model) in err and "hwsim optimize" in err and "give it with --assume" not in err
    assert not (tmp_path / "out").exists()


def test_external_weights_are_written_beside_the_optimized_model(tmp_path: Path) -> None:
    conv, w = _conv()
    (tmp_path / "src").mkdir()
    model = _save(tmp_path / "src" / "ext.onnx", [conv], [1, 8, 16, 16], [1, 8, 16, 16], [w], external=True)
    assert _optimize(tmp_path, model) == 0
    out = tmp_path / "out"
    assert (out / "model.onnx.data").is_file()
    x = np.random.default_rng(1).standard_normal((1, 8, 16, 16)).astype(np.float32)
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
