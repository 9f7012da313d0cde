"""Layer normalizations written out (exports before opset 17, T5/LLaMA RMSNorms): onnxruntime's
LayerNormFusion, SimplifiedLayerNormFusion and SkipLayerNormFusion run them as one kernel, and
hwsim.host.ort_fusions.decomposed_norms finds the same ones; validate prices that kernel, not the
nodes it absorbed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from chips.schema import chip_from_dict
from graph_ir.onnx_import import load_onnx
from hwsim.host.ort_fusions import decomposed_norms
from hwsim.host.validate import repredict, validate_model
from tests.helpers import host_chip

WIDTH = 64


def _norm_model(path: Path, form: str) -> None:
    """MatMul -> a written-out norm of ``form`` -> MatMul, 1 x 32 x WIDTH (``skip``: a residual Add
    only the norm reads before it; ``shared``: the centred tensor also a graph output; ``mul``: the
    square as ``Mul(d, d)``)."""
    rng = np.random.default_rng(0)
    init = {"w1": rng.standard_normal((WIDTH, WIDTH)), "w2": rng.standard_normal((WIDTH, WIDTH)), "g": np.ones(WIDTH),
            "b": np.zeros(WIDTH), "two": np.array(2.0), "eps": np.array(1e-5)}  # fmt: skip
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1")]
    x = "h"
    if form == "skip":
        nodes.append(helper.make_node("Add", ["h", "x"], ["s"], name="res"))
        x = "s"
    rms = form == "rms"
    if not rms:
        nodes += [helper.make_node("ReduceMean", [x], ["mu"], name="mean", axes=[-1]),
                  helper.make_node("Sub", [x, "mu"], ["d"], name="sub")]  # fmt: skip
    d = x if rms else "d"
    square = helper.make_node("Mul", [d, d], ["sq"], name="sq") if form == "mul" else helper.make_node("Pow", [d, "two"], ["sq"], name="sq")
    nodes += [square, helper.make_node("ReduceMean", ["sq"], ["var"], name="var", axes=[-1]),
              helper.make_node("Add", ["var", "eps"], ["ve"], name="eps_add"), helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
              helper.make_node("Div", [d, "sd"], ["n"], name="div"), helper.make_node("Mul", ["n", "g"], ["sc"], name="scale")]  # fmt: skip
    y = "sc"
    if not rms:
        nodes.append(helper.make_node("Add", ["sc", "b"], ["sh"], name="shift"))
        y = "sh"
    nodes.append(helper.make_node("MatMul", [y, "w2"], ["y"], name="mm2"))
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, WIDTH])]
    if form == "shared":
        outs.append(helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, 32, WIDTH]))
    g = helper.make_graph(nodes, "norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, WIDTH])], outs,
                          [numpy_helper.from_array(v.astype(np.float32), k) for k, v in init.items()])  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def _onnxruntime_kernels(path: Path, tmp_path: Path) -> Counter[str]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return Counter(n.op_type for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node)


#: form -> the kernel hwsim predicts (costed as), the kernel onnxruntime runs; None: left apart.
CASES = {"ln": ("LayerNormalization", "LayerNormalization"), "rms": ("RMSNormalization", "SimplifiedLayerNormalization"),
         "skip": ("SkipLayerNormalization", "SkipLayerNormalization"), "mul": (None, None),
         "shared": ("RMSNormalization", "SimplifiedLayerNormalization")}  # fmt: skip


@pytest.mark.parametrize("form", sorted(CASES))
def test_the_norms_found_are_the_ones_onnxruntime_fuses(tmp_path: Path, form: str) -> None:
    path = tmp_path / "m.onnx"
    _norm_model(path, form)
    found = decomposed_norms(load_onnx(path))
    mine, theirs = CASES[form]
    assert [f.kernel.op_type for f in found] == ([mine] if mine else [])
    kernels = _onnxruntime_kernels(path, tmp_path)
    if theirs is None:
        assert not {"LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization"} & kernels.keys()
    else:
        assert kernels[theirs] == 1 and "Sqrt" not in kernels
        assert found[0].members >= {"sq", "var", "eps_add", "sqrt", "div", "scale"}
        assert ({"mean", "sub"} <= found[0].members) == (form in ("ln", "skip"))  # shared: RMS over the centred tensor


@pytest.mark.parametrize("form", ["ln", "rms", "skip"])
def test_validate_prices_the_one_kernel(tmp_path: Path, form: str) -> None:
    path = tmp_path / "m.onnx"
    _norm_model(path, form)
    chip = chip_from_dict(host_chip())
    v = validate_model(chip, path, runs=5, min_total_s=0.0)
    priced = {n.name: n for n in v.nodes if n.predicted_ns > 0}
    mine = CASES[form][0]
    kernel = [n for n in priced.values() if n.op_type == mine]
    assert len(kernel) == 1 and kernel[0].measured_ns > 0
    assert not {"sq", "var", "eps_add", "sqrt", "div", "mean", "sub", "shift", "res"} & priced.keys()
    again = repredict(v, chip, path)
    assert {n.name: n.predicted_ns for n in again.nodes} == pytest.approx({n.name: n.predicted_ns for n in v.nodes})
