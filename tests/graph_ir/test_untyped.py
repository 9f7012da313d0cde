"""Outputs ONNX shape inference leaves with no tensor type of known rank (graph_ir.untyped), through
``hwsim run``: typed by an op's rule, or refused naming the op that left them (never its reader),
without offering an ``--assume`` that cannot apply."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_ir.onnx_import import from_model_proto, load_onnx
from hwsim.cli import main
from tests.fuzz.harness import Outcome, check_refusal_or_run

ML, MS = "ai.onnx.ml", "com.microsoft"
Inits = tuple[onnx.TensorProto, ...]
Infos = tuple[onnx.ValueInfoProto, ...]


def _save(
    tmp_path: Path, nodes: list[onnx.NodeProto], shape: list[int], opsets: dict[str, int], inits: Inits = (),
    value_info: Infos = (),
) -> Path:  # fmt: skip
    """``nodes`` reading ``x`` of ``shape`` and writing ``y`` of the same shape, saved as m.onnx."""
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "xy")
    graph = helper.make_graph(nodes, "g", [x], [y], list(inits), value_info=list(value_info))
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    model.ir_version = 10
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def _run(tmp_path: Path, path: Path) -> None:
    out = tmp_path / "r"
    assert main(["run", "edge8", str(path), "--out", str(out), "--no-plots"]) == 0
    assert json.loads((out / "summary.json").read_text())["ops"] == 2


def _refused(tmp_path: Path, path: Path, *extra: str) -> Outcome:
    """The one-line refusal of ``path`` (exit 2, naming the file, nothing written)."""
    out = tmp_path / "r"
    return check_refusal_or_run(
        "untyped", ["run", "edge8", str(path), "--out", str(out), *extra], path, out, ok=()
    )


def _norm_params() -> Inits:
    return numpy_helper.from_array(np.ones(8, np.float32), "s"), numpy_helper.from_array(
        np.zeros(8, np.float32), "b"
    )


def _inverse(tmp_path: Path, value_info: Infos = ()) -> Path:
    nodes = [
        helper.make_node("Inverse", ["x"], ["a"], domain=MS),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    return _save(tmp_path, nodes, [2, 4, 4], {"": 17, MS: 1}, value_info=value_info)


def test_groupnorm21_read_by_another_op_runs_with_its_input_shape(tmp_path: Path) -> None:
    nodes = [helper.make_node("GroupNormalization", ["x", "s", "b"], ["a"], num_groups=4),
             helper.make_node("Relu", ["a"], ["y"])]  # fmt: skip
    path = _save(tmp_path, nodes, [1, 8, 4, 4], {"": 21}, _norm_params())
    _run(tmp_path, path)
    g = load_onnx(path)
    norm = g.op("GroupNormalization_0")
    assert (norm.category, norm.outputs[0].shape, norm.outputs[0].dtype) == (
        "norm",
        (1, 8, 4, 4),
        "float32",
    )
    assert g.op("Relu_1").inputs[0].shape == (1, 8, 4, 4) and g.assumed == ()


def test_ml_normalizer_read_by_another_op_runs_as_float_of_its_input_shape(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Normalizer", ["x"], ["n"], domain=ML, norm="L2"),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    path = _save(tmp_path, nodes, [4, 32], {"": 17, ML: 3})
    _run(tmp_path, path)
    assert load_onnx(path).op("Relu_1").inputs[0].shape == (4, 32)


@pytest.mark.parametrize("assume", [(), ("--assume", "Inverse_0=4")])
def test_untyped_output_without_a_rule_is_refused_naming_its_producer(
    tmp_path: Path, assume: tuple[str, ...]
) -> None:
    res = _refused(tmp_path, _inverse(tmp_path), *assume)
    assert "node 'Inverse_0' (com.microsoft.Inverse)" in res.stderr and "Relu_1" not in res.stderr
    assert "--assume Inverse_0=" not in res.stderr  # a count cannot give a rank: not offered
    assert "add the output's type and shape to the model's graph.value_info" in res.stderr


def test_the_value_info_the_refusal_advises_makes_it_run(tmp_path: Path) -> None:
    path = _inverse(tmp_path, (helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 4, 4]),))
    _run(tmp_path, path)
    assert load_onnx(path).op("Relu_1").inputs[0].shape == (2, 4, 4)


def test_a_fault_before_an_untyped_op_is_still_reported_as_itself(tmp_path: Path) -> None:
    """Lenient inference leaves the faulty Add untyped too: its own inference fails, so strict
    inference's error stands."""
    z = numpy_helper.from_array(np.ones((5, 7), np.float32), "z")
    nodes = [helper.make_node("Add", ["x", "z"], ["e"]),
             helper.make_node("GroupNormalization", ["e", "s", "b"], ["a"], num_groups=4),
             helper.make_node("Relu", ["a"], ["y"])]  # fmt: skip
    path = _save(tmp_path, nodes, [1, 8, 4, 4], {"": 21}, (z, *_norm_params()))
    assert "Incompatible dimensions" in _refused(tmp_path, path).stderr


def _sequence(tmp_path: Path) -> Path:
    shape = numpy_helper.from_array(np.array([4, 32], np.int64), "shape")
    nodes = [helper.make_node("SplitToSequence", ["x"], ["sq"], axis=0, keepdims=0),
             helper.make_node("ConcatFromSequence", ["sq"], ["c"], axis=0),
             helper.make_node("Reshape", ["c", "shape"], ["y"])]  # fmt: skip
    return _save(tmp_path, nodes, [4, 32], {"": 13}, (shape,))


def _optional(tmp_path: Path) -> Path:
    nodes = [helper.make_node("Optional", ["x"], ["o"]), helper.make_node("OptionalGetElement", ["o"], ["x2"]),
             helper.make_node("Relu", ["x2"], ["y"])]  # fmt: skip
    return _save(tmp_path, nodes, [4, 32], {"": 18})


@pytest.mark.parametrize(
    ("make", "node", "kind"),
    [(_sequence, "SplitToSequence_0", "sequence"), (_optional, "Optional_0", "optional")],
)
@pytest.mark.parametrize("with_assume", [False, True])
def test_a_value_that_is_no_tensor_is_refused_as_unsupported(
    tmp_path: Path, make: Callable[[Path], Path], node: str, kind: str, with_assume: bool
) -> None:
    """Following the refusal's advice never leads to a second refusal that advises the same."""
    res = _refused(tmp_path, make(tmp_path), *(["--assume", f"{node}=4"] if with_assume else []))
    assert f"node {node!r}" in res.stderr and "not a tensor" in res.stderr
    assert f"{kind}-typed values are not supported" in res.stderr and "--assume" not in res.stderr


def test_groupnorm21_before_an_if_runs() -> None:
    """Control flow is resolved before the shapes are bounded: its inference goes past the
    untyped output too."""
    branches = {
        f"{b}_branch": helper.make_graph([helper.make_node(op, ["a"], [b])], b, [], [helper.make_tensor_value_info(b, TensorProto.FLOAT, [1, 8, 4, 4])])
        for b, op in (("then", "Relu"), ("else", "Neg"))
    }  # fmt: skip
    nodes = [helper.make_node("GroupNormalization", ["x", "s", "b"], ["a"], num_groups=4),
             helper.make_node("Greater", ["p", "q"], ["c"]), helper.make_node("If", ["c"], ["y"], **branches)]  # fmt: skip
    flags = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in "pq"]
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 4, 4]) for n in "xy")
    graph = helper.make_graph(nodes, "g", [x, *flags], [y], list(_norm_params()))
    g = from_model_proto(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), "m.onnx"
    )
    assert [(o.op_type, o.outputs[0].shape) for o in g.ops()][:2] == [
        ("GroupNormalization", (1, 8, 4, 4)),
        ("Relu", (1, 8, 4, 4)),
    ]


def _dropout9(tmp_path: Path, mask_use: str) -> Path:
    """A Dropout of opset 9 (its ``mask`` untyped by ONNX's inference) between two Relus;
    ``mask_use``: "unread", "read" (by a Cast) or "output" (a graph output)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Dropout", ["a"], ["d", "mask"], ratio=0.5),
             helper.make_node("Relu", ["d"], ["y"])]  # fmt: skip
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 4, 4]) for n in "xy")
    outputs = [y]
    if mask_use == "read":
        nodes.append(helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT))
        outputs.append(helper.make_empty_tensor_value_info("m"))
    elif mask_use == "output":
        outputs.append(helper.make_empty_tensor_value_info("mask"))
    graph = helper.make_graph(nodes, "g", [x], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 4
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def test_an_unread_untyped_optional_output_is_left_out(tmp_path: Path) -> None:
    """The ONNX model zoo's AlexNet, VGG, SqueezeNet and Inception (opset 9 and before) hold
    Dropouts whose mask nothing reads; they were refused before."""
    path = _dropout9(tmp_path, "unread")
    out = tmp_path / "r"
    assert main(["run", "edge8", str(path), "--out", str(out), "--no-plots"]) == 0
    assert json.loads((out / "summary.json").read_text())["ops"] == 3
    drop = load_onnx(path).op("Dropout_1")
    assert [t.name for t in drop.outputs] == ["d"] and drop.outputs[0].shape == (1, 8, 4, 4)


@pytest.mark.parametrize("mask_use", ["read", "output"])
def test_an_untyped_optional_output_in_use_is_still_refused(tmp_path: Path, mask_use: str) -> None:
    res = _refused(tmp_path, _dropout9(tmp_path, mask_use))
    assert "node 'Dropout_1' (Dropout)" in res.stderr
    assert "output 'mask' has no type or rank" in res.stderr
