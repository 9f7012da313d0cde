"""``hwsim rewrite``: per-pass outcome, auto keeps gains, --check refuses a wrong result, the
output loads in onnxruntime and runs in ``hwsim run``, bad input is one line and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import PASSES, Pass, PassOptions, PassResult, Site
from graph_ir.rewrites.check import equivalent
from graph_ir.rewrites.edit import copy_model, finish, is_weightless, new_initializer
from hwsim.cli import main
from tests.helpers import one_line_error


def _conv_bn(path: Path, weightless: bool = False) -> Path:
    """Conv -> BN -> Relu -> Conv -> BN (16 channels, 32x32)."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x, c = "x", 3
    for i in range(2):
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("BatchNormalization", [f"c{i}", *(f"bn{i}_{k}" for k in range(4))], [f"b{i}"], name=f"bn{i}")]  # fmt: skip
        inits.append(numpy_helper.from_array((rng.standard_normal((16, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), f"w{i}"))
        for k, v in enumerate([rng.uniform(0.5, 1.5, 16), rng.standard_normal(16) * 0.1, rng.standard_normal(16) * 0.1, rng.uniform(0.5, 1.5, 16)]):
            inits.append(numpy_helper.from_array(v.astype(np.float32), f"bn{i}_{k}"))
        x, c = f"b{i}", 16
        if i == 0:
            nodes.append(helper.make_node("Relu", [x], ["r0"], name="relu0"))
            x = "r0"
    g = helper.make_graph(nodes, "convbn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16, 32, 32])], inits)  # fmt: skip
    if weightless:
        for t in list(g.initializer):
            g.initializer.remove(t)
            new_initializer(g, t.name, None, tuple(t.dims))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_fold_bn_writes_an_equal_model_that_hwsim_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _conv_bn(tmp_path / "m.onnx"), tmp_path / "out.onnx"
    assert main(["rewrite", "rk3588", str(src), "--passes", "fold_bn", "-o", str(out), "--check"]) == 0
    text = capsys.readouterr().out
    assert "fold_bn: applied 2, skipped 0; latency" in text and "check fold_bn: equal on 5 random inputs" in text
    rewritten = onnx.load(str(out))
    assert [n.op_type for n in rewritten.graph.node] == ["Conv", "Relu", "Conv"]
    assert equivalent(onnx.load(str(src)), rewritten).equal
    assert main(["run", "rk3588", str(out), "--out", str(tmp_path / "rep")]) == 0


def test_auto_json_on_a_weightless_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _conv_bn(tmp_path / "m.onnx", weightless=True), tmp_path / "out.onnx"
    assert main(["rewrite", "rk3588", str(src), "-o", str(out), "--json", "--check"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["pass"] for p in doc["passes"]] == list(PASSES)
    by = {p["pass"]: p for p in doc["passes"]}
    fold = by["fold_bn"]
    assert fold["applied"] == 2
    assert doc["check"]["equal"] is True
    for p in doc["passes"]:
        e = p["effect"]
        gain = e is not None and (e["latency_change_ms"] < -1e-6 or (abs(e["latency_change_ms"]) < 1e-6 and e["dram_change_bytes"] < 0))
        assert p["kept"] == gain, p
    assert is_weightless(onnx.load(str(out), load_external_data=False))


def _broken(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """A wrong "rewrite": every Relu becomes a Sigmoid."""
    del options
    out = copy_model(model)
    sites = []
    for n in out.graph.node:
        if n.op_type == "Relu":
            n.op_type = "Sigmoid"
            sites.append(Site((n.name,)))
    return PassResult(finish(out), tuple(sites))


def test_check_refuses_a_result_that_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PASSES, "broken", Pass("broken", "Relu -> Sigmoid", _broken))
    src, out = _conv_bn(tmp_path / "m.onnx"), tmp_path / "out.onnx"
    assert main(["rewrite", "rk3588", str(src), "--passes", "broken", "-o", str(out), "--check"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pass broken changes the result" in err and "'b1'" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("case", ["unknown pass", "missing model", "missing folder"])
def test_bad_input_is_one_line_and_nothing_written(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _conv_bn(tmp_path / "m.onnx"), tmp_path / "out.onnx"
    args = {"unknown pass": [str(src), "--passes", "fold_bn,nope", "-o", str(out)],
            "missing model": [str(tmp_path / "none.onnx"), "-o", str(out)],
            "missing folder": [str(src), "-o", str(tmp_path / "no" / "out.onnx")]}[case]  # fmt: skip
    assert main(["rewrite", "rk3588", *args]) == 2
    err = one_line_error(capsys)
    expected = {"unknown pass": "unknown pass 'nope'; registered: " + ", ".join(PASSES),
                "missing model": "none.onnx: file not found", "missing folder": "folder"}[case]  # fmt: skip
    assert expected in err
    assert list(tmp_path.iterdir()) == [src]


def _save(path: Path, nodes: list[onnx.NodeProto], x: list[int], y: list[int | None], sparse: onnx.SparseTensorProto | None = None) -> Path:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)])  # fmt: skip
    if sparse is not None:
        g.sparse_initializer.append(sparse)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


def _sparse_matmul(path: Path) -> Path:
    """x -> Identity -> MatMul by a sparse 32x16 weight (three values set)."""
    w = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "W"),
                                  numpy_helper.from_array(np.array([0, 17, 300], np.int64), "W_idx"), [32, 16])  # fmt: skip
    nodes = [helper.make_node("Identity", ["x"], ["xi"], name="id"), helper.make_node("MatMul", ["xi", "W"], ["y"], name="mm")]
    return _save(path, nodes, [4, 32], [4, 16], w)


@pytest.mark.parametrize("passes", ["eliminate_identity", "fold_bn", "auto"])
def test_sparse_initializer_is_made_dense_and_computes_the_same(passes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnxruntime as ort

    src, out = _sparse_matmul(tmp_path / "m.onnx"), tmp_path / "out.onnx"
    assert main(["rewrite", "rk3588", str(src), "--passes", passes, "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    rewritten = onnx.load(str(out))
    assert not rewritten.graph.sparse_initializer and [t.name for t in rewritten.graph.initializer] == ["W"]
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    run = [ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0] for p in (src, out)]
    np.testing.assert_array_equal(run[0], run[1])


def _widen_weight(model: onnx.ModelProto, options: PassOptions) -> PassResult:
    """A "rewrite" whose result ONNX's shape inference rejects: the MatMul weight gets 33 rows."""
    del options
    out = copy_model(model)
    w = next(t for t in out.graph.initializer if t.name == "W")
    w.CopyFrom(numpy_helper.from_array(np.zeros((33, 16), np.float32), "W"))
    return PassResult(finish(out), (Site(("mm",)),))


def test_a_pass_shape_inference_rejects_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PASSES, "widen", Pass("widen", "a wrong weight shape", _widen_weight))
    src, out = _sparse_matmul(tmp_path / "m.onnx"), tmp_path / "out.onnx"
    assert main(["rewrite", "rk3588", str(src), "--passes", "widen", "-o", str(out)]) == 2
    err = one_line_error(capsys)
    assert err.startswith(f"hwsim: error: {src}: pass widen cannot be applied: ") and "internal error" not in err
    assert list(tmp_path.iterdir()) == [src]


def test_assume_sizes_a_data_dependent_reshape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [helper.make_node("Identity", ["x"], ["xi"], name="id"), helper.make_node("Shape", ["xi"], ["s"], name="shape"),
             helper.make_node("ReduceProd", ["s"], ["n"], name="prod", keepdims=1),
             helper.make_node("Reshape", ["xi", "n"], ["y"], name="Reshape_7")]  # fmt: skip
    src, out = _save(tmp_path / "m.onnx", nodes, [1, 8, 16, 16], [None]), tmp_path / "out.onnx"
    args = ["rewrite", "rk3588", str(src), "--passes", "eliminate_identity", "-o", str(out)]
    assert main(args) == 2
    assert "give it with --assume Reshape_7=COUNT" in one_line_error(capsys) and not out.exists()
    assert main([*args, "--assume", "Reshape_7=2048"]) == 0
    assert "eliminate_identity: applied 1, skipped 0; latency" in capsys.readouterr().out
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Shape", "ReduceProd", "Reshape"]
