"""graph_ir.functions: function ops (opset 23's Attention, RMSNormalization, RotaryEmbedding, a
model's own functions) expanded at import into the ops that define them, their shape arithmetic
folded; the expanded model computes what the original does."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir import functions
from graph_ir.dynamic import infer_strict
from graph_ir.functions import expand_functions, function_calls
from graph_ir.onnx_import import from_model_proto


def _model(nodes: list[onnx.NodeProto], shape: list[int], inits: dict[str, np.ndarray], opset: int = 23,
           fns: tuple[onnx.FunctionProto, ...] = (), domains: tuple[str, ...] = ()) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, 1) for d in domains)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10, functions=list(fns))
    return onnx.shape_inference.infer_shapes(model)


def _attention(seq: int, heads: int, kv_heads: int, head_dim: int, causal: int) -> onnx.ModelProto:
    """RMSNorm, then Q/K/V projections into an opset-23 Attention on 3D inputs, then out."""
    rng = np.random.default_rng(0)
    width, kv_width = heads * head_dim, kv_heads * head_dim
    w = {"g": np.ones(width, np.float32), "wq": rng.standard_normal((width, width)).astype(np.float32) * 0.1,
         "wk": rng.standard_normal((width, kv_width)).astype(np.float32) * 0.1,
         "wv": rng.standard_normal((width, kv_width)).astype(np.float32) * 0.1}  # fmt: skip
    nodes = [
        helper.make_node("RMSNormalization", ["x", "g"], ["n"], name="norm", axis=-1),
        helper.make_node("MatMul", ["n", "wq"], ["q"], name="q"),
        helper.make_node("MatMul", ["n", "wk"], ["k"], name="k"),
        helper.make_node("MatMul", ["n", "wv"], ["v"], name="v"),
        helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", q_num_heads=heads, kv_num_heads=kv_heads,
                         is_causal=causal),
    ]  # fmt: skip
    return _model(nodes, [1, seq, width], w)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def test_attention_becomes_its_products_and_softmax() -> None:
    seq, heads, head_dim = 64, 4, 16
    graph = from_model_proto(_attention(seq, heads, heads, head_dim, causal=1), source="m.onnx")
    assert graph.unknown_ops == ()
    width = heads * head_dim
    # the three projections, then Q K^T and P V per head: nothing more, nothing less
    assert graph.total_macs == 3 * seq * width * width + 2 * heads * seq * seq * head_dim
    types = [op.op_type for op in graph.ops()]
    assert types.count("Softmax") == 1 and types.count("MatMul") == 5
    assert not {"Shape", "Size", "Range", "ConstantOfShape", "Cast", "Identity"} & set(types)  # folded or no-ops
    assert all(op.name.startswith("attn/") for op in graph.ops() if op.name not in ("norm", "q", "k", "v"))
    assert any("Attention x1" in w and "RMSNormalization" not in w for w in graph.warnings)


@settings(max_examples=8, deadline=None)
@given(seq=st.sampled_from([8, 24, 40]), heads=st.sampled_from([2, 4]), group=st.sampled_from([1, 2]),
       head_dim=st.sampled_from([8, 16]), causal=st.integers(0, 1))  # fmt: skip
def test_the_expanded_model_computes_what_the_original_does(
    seq: int, heads: int, group: int, head_dim: int, causal: int
) -> None:
    model = _attention(seq, heads, heads // group, head_dim, causal)
    expanded = expand_functions(model)
    assert expanded is not None
    assert not function_calls(expanded.model)
    onnx.checker.check_model(infer_strict(expanded.model), full_check=True)
    x = np.random.default_rng(seq).standard_normal((1, seq, heads * head_dim)).astype(np.float32)
    np.testing.assert_allclose(_run(expanded.model, x), _run(model, x), rtol=1e-4, atol=1e-5)


def test_a_models_own_function_is_expanded() -> None:
    body = [helper.make_node("Mul", ["a", "a"], ["sq"]), helper.make_node("Add", ["sq", "a"], ["b"])]
    fn = helper.make_function("my.ops", "SquarePlus", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("SquarePlus", ["x"], ["y"], name="sp", domain="my.ops")]
    model = _model(nodes, [2, 8], {}, opset=17, fns=(fn,), domains=("my.ops",))
    graph = from_model_proto(model, source="m.onnx")
    assert [op.name for op in graph.ops()] == ["sp/Mul_0", "sp/Add_1"] and graph.unknown_ops == ()
    expanded = expand_functions(model)
    assert expanded is not None and not expanded.model.functions  # no call of it is left
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(expanded.model, x), x * x + x, rtol=1e-6)


def test_rms_norm_and_rotary_embedding_are_ops_of_their_own() -> None:
    """Function ops with a formula are costed as one op, as runtimes run them (onnxruntime's
    kernels, as for LayerNormalization), not expanded."""
    seq, heads, head_dim = 16, 2, 8
    rng = np.random.default_rng(0)
    inits = {"cos": np.cos(rng.standard_normal((seq, head_dim // 2))).astype(np.float32),
             "sin": np.sin(rng.standard_normal((seq, head_dim // 2))).astype(np.float32),
             "pos": np.arange(seq, dtype=np.int64)[None], "g": np.ones(heads * head_dim, np.float32)}  # fmt: skip
    nodes = [helper.make_node("RMSNormalization", ["x", "g"], ["n"], name="norm", axis=-1),
             helper.make_node("RotaryEmbedding", ["n", "cos", "sin", "pos"], ["y"], name="rope", num_heads=heads)]  # fmt: skip
    model = _model(nodes, [1, seq, heads * head_dim], inits)
    assert function_calls(model) == [] and expand_functions(model) is None
    graph = from_model_proto(model, source="m.onnx")
    assert [(op.name, op.category) for op in graph.ops()] == [("norm", "norm"), ("rope", "elementwise")]
    assert all(op.flops > 0 for op in graph.ops()) and graph.warnings == ()


def test_a_model_without_function_ops_is_left_alone() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [4], {})
    assert function_calls(model) == [] and expand_functions(model) is None


def test_a_value_over_the_limit_stays_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A causal mask larger than the fold limit is computed by the ops that make it (no
    data-dependent dim: its shape is still static)."""
    monkeypatch.setattr(functions, "MAX_FOLDED_ELEMENTS", 100)
    graph = from_model_proto(_attention(32, 2, 2, 8, causal=1), source="m.onnx")
    assert graph.unknown_ops == () and any(op.op_type == "Less" for op in graph.ops())


def test_names_the_model_already_uses_are_not_taken_again() -> None:
    """A body's value ``sq`` would become ``sp/sq``, and its first op ``sp/Mul_0``: both already
    name something of the model, so the body's get a suffix and the model computes the same."""
    body = [helper.make_node("Mul", ["a", "a"], ["sq"]), helper.make_node("Add", ["sq", "a"], ["b"])]
    fn = helper.make_function("my.ops", "SquarePlus", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("Neg", ["x"], ["sp/sq"], name="sp/Mul_0"),
             helper.make_node("SquarePlus", ["sp/sq"], ["t"], name="sp", domain="my.ops"),
             helper.make_node("Add", ["t", "sp/sq"], ["y"], name="add")]  # fmt: skip
    model = _model(nodes, [2, 8], {}, opset=17, fns=(fn,), domains=("my.ops",))
    expanded = expand_functions(model)
    assert expanded is not None
    names = [n.name for n in expanded.model.graph.node]
    assert len(set(names)) == len(names) and "sp/Mul_0#1" in names
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(expanded.model, x), (x * x - x) - x, rtol=1e-6)
    assert len(from_model_proto(model, source="m.onnx")) == 4
