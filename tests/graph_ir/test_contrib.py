"""onnxruntime's contrib ops lowered into ONNX ops: the lowered model computes what onnxruntime's
contrib kernel computes, and the importer builds a graph of ONNX ops from an optimized model."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.contrib import LOWERINGS, contrib_nodes, lower_contrib
from graph_ir.ir import ModelError
from graph_ir.onnx_import import from_model_proto, name_nodes

MS = "com.microsoft"


def _model(node: onnx.NodeProto, inputs: dict[str, tuple[int, ...]], weights: dict[str, np.ndarray], opset: int,
           outputs: int = 1) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output[:outputs] if o],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [np.asarray(v) for v in sess.run(None, feeds)]


def _check(node: onnx.NodeProto, inputs: dict[str, tuple[int, ...]], weights: dict[str, np.ndarray], opset: int,
           seed: int = 0, outputs: int = 1) -> onnx.ModelProto:  # fmt: skip
    """Lower the one-node model and compare both under onnxruntime; the lowered model."""
    node.name = node.name or "n"
    model = _model(node, inputs, weights, opset, outputs)
    lowered = lower_contrib(model, "m.onnx")
    assert lowered is not None
    assert not contrib_nodes(lowered.model)
    assert all(n.domain in ("", "ai.onnx") for n in lowered.model.graph.node)
    assert all(n.name.startswith(f"{node.name}/") for n in lowered.model.graph.node)
    rng = np.random.default_rng(seed)
    feeds = {k: rng.standard_normal(v).astype(np.float32) for k, v in inputs.items()}
    want, got = _run(model, feeds), _run(lowered.model, feeds)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    return lowered.model


def _w(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("op", ["Gelu", "BiasGelu", "FastGelu", "FastGeluBias", "QuickGelu"])
def test_gelu_family_matches_onnxruntime(op: str, opset: int) -> None:
    x = {"x": (2, 8, 16)}
    if op == "BiasGelu":
        node, w = helper.make_node("BiasGelu", ["x", "b"], ["y"], domain=MS), {"b": _w(16)}
    elif op == "FastGeluBias":
        node, w = helper.make_node("FastGelu", ["x", "b"], ["y"], domain=MS), {"b": _w(16)}
    elif op == "QuickGelu":
        node, w = helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, alpha=1.702), {}
    else:
        node, w = helper.make_node(op, ["x"], ["y"], domain=MS), {}
    lowered = _check(node, x, w, opset)
    types = {n.op_type for n in lowered.graph.node}
    if op in ("Gelu", "BiasGelu", "FastGelu", "FastGeluBias"):
        assert ("Gelu" in types) == (opset >= 20)


def test_bias_add_is_the_two_adds() -> None:
    """onnxruntime runs BiasAdd on CUDA only: checked against its definition, X + bias + skip."""
    node = helper.make_node("BiasAdd", ["x", "b", "s"], ["y"], name="n", domain=MS)
    b, s = _w(16), _w(2, 8, 16, seed=2)
    lowered = lower_contrib(_model(node, {"x": (2, 8, 16)}, {"b": b, "s": s}, 17), "m.onnx")
    assert lowered is not None
    x = _w(2, 8, 16, seed=3)
    np.testing.assert_allclose(_run(lowered.model, {"x": x})[0], x + b + s, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    activation=st.sampled_from(["", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip"]),
    params=st.lists(st.floats(-2.0, 2.0, allow_nan=False, width=32), min_size=2, max_size=2),
    bias=st.booleans(), residual=st.booleans(), group=st.sampled_from([1, 2]), stride=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_fused_conv_matches_onnxruntime(activation: str, params: list[float], bias: bool, residual: bool, group: int,
                                        stride: int, seed: int) -> None:  # fmt: skip
    params = sorted(params) if activation == "Clip" else params[: {"LeakyRelu": 1, "HardSigmoid": 2}.get(activation, 0)]
    attrs: dict[str, object] = {"group": group, "strides": [stride, stride], "pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    if activation:
        attrs["activation"] = activation
        if params:
            attrs["activation_params"] = params
    out_hw = (8 + 2 - 3) // stride + 1
    inputs = {"x": (1, 4, 8, 8)} | ({"z": (1, 6, out_hw, out_hw)} if residual else {})
    names = ["x", "w", "b" if bias else ""] + (["z"] if residual else [])
    node = helper.make_node("FusedConv", names, ["y"], domain=MS, **attrs)
    w = {"w": _w(6, 4 // group, 3, 3, seed=seed)} | ({"b": _w(6, seed=seed + 1)} if bias else {})
    _check(node, inputs, w, 17, seed)


@pytest.mark.parametrize("activation", ["Relu", "LeakyRelu", "HardSigmoid", "Sigmoid", "Tanh"])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_fused_gemm_matches_onnxruntime(activation: str, trans_b: int) -> None:
    attrs: dict[str, object] = {"transB": trans_b, "alpha": 0.5, "beta": 2.0}
    if activation:
        attrs |= {"activation": activation, "activation_alpha": 0.3, "activation_beta": 0.4}
    node = helper.make_node("FusedGemm", ["a", "b", "c"], ["y"], domain=MS, **attrs)
    b = _w(12, 16) if trans_b else _w(16, 12)
    _check(node, {"a": (4, 16)}, {"b": b, "c": _w(12)}, 17)


@settings(max_examples=25, deadline=None)
@given(trans_a=st.booleans(), trans_b=st.booleans(), alpha=st.sampled_from([1.0, 0.125, 2.0]),
       batch=st.sampled_from([(), (3,), (2, 3)]), seed=st.integers(0, 2**16))  # fmt: skip
def test_fused_matmul_matches_onnxruntime(trans_a: bool, trans_b: bool, alpha: float, batch: tuple[int, ...], seed: int) -> None:
    a = (*batch, 8, 5) if trans_a else (*batch, 5, 8)
    b = (*batch, 6, 8) if trans_b else (*batch, 8, 6)
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transA=int(trans_a), transB=int(trans_b), alpha=alpha)
    lowered = _check(node, {"a": a, "b": b}, {}, 17, seed)
    transposes = sum(n.op_type == "Transpose" for n in lowered.graph.node)
    assert transposes == int(trans_a) + int(trans_b)


@pytest.mark.parametrize("opset", [13, 17, 18, 23])
@pytest.mark.parametrize("beta", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("sum_output", [True, False])
def test_skip_layer_norm_matches_onnxruntime(opset: int, beta: bool, bias: bool, sum_output: bool) -> None:
    names = ["x", "s", "g", "be" if beta else "", "bi" if bias else ""]
    outs = ["y", "", "", "sum"] if sum_output else ["y"]
    node = helper.make_node("SkipLayerNormalization", names, outs, domain=MS, epsilon=1e-5)
    w = {"g": _w(16, seed=2), "s": _w(2, 8, 16, seed=3)} | ({"be": _w(16, seed=4)} if beta else {}) | ({"bi": _w(16, seed=5)} if bias else {})
    model = _model(node, {"x": (2, 8, 16)}, w, opset)
    if sum_output:  # the sum is a graph output too
        model.graph.output.append(helper.make_tensor_value_info("sum", TensorProto.FLOAT, None))
    lowered = lower_contrib(model, "m.onnx")
    assert lowered is not None
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float32)}
    for w_, g_ in zip(_run(model, feeds), _run(lowered.model, feeds), strict=True):
        np.testing.assert_allclose(g_, w_, rtol=2e-4, atol=2e-5)
    assert ("LayerNormalization" in {n.op_type for n in lowered.model.graph.node}) == (opset >= 17)


@pytest.mark.parametrize("opset", [17, 18, 23])
def test_simplified_layer_norms_match_onnxruntime(opset: int) -> None:
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "s", "g", "bi"], ["y"], domain=MS, epsilon=1e-6)
    _check(node, {"x": (2, 8, 16)}, {"s": _w(2, 8, 16), "g": _w(16, seed=2), "bi": _w(16, seed=3)}, opset)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], axis=-1, epsilon=1e-6)
    lowered = _check(node, {"x": (2, 8, 16)}, {"g": _w(16, seed=2)}, opset)
    assert ("RMSNormalization" in {n.op_type for n in lowered.graph.node}) == (opset >= 23)


def test_every_lowering_is_tested_here() -> None:
    """The tests above cover each op type of the table (a new entry needs its own test)."""
    covered = {"FusedConv", "FusedGemm", "FusedMatMul", "Gelu", "BiasGelu", "FastGelu", "QuickGelu", "BiasAdd",
               "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization",
               "Attention", "MultiHeadAttention", "EmbedLayerNormalization"}  # fmt: skip
    assert {t for _, t in LOWERINGS} == covered


def test_bad_activation_is_one_line_naming_the_node() -> None:
    node = helper.make_node("FusedConv", ["x", "w"], ["y"], name="conv7", domain=MS, activation="Swish")
    model = _model(node, {"x": (1, 4, 8, 8)}, {"w": _w(6, 4, 3, 3)}, 17)
    with pytest.raises(ModelError, match=r"^m\.onnx: node 'conv7' \(FusedConv\): activation 'Swish'") as exc:
        lower_contrib(model, "m.onnx")
    assert "\n" not in str(exc.value)


def _optimized(model: onnx.ModelProto, tmp_path: object) -> onnx.ModelProto:
    """``model`` as onnxruntime saves it after its extended graph optimizations."""
    path = f"{tmp_path}/opt.onnx"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = path
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return onnx.load(path)


def test_an_onnxruntime_optimized_model_imports_as_its_original(tmp_path: object) -> None:
    """A conv block and an MLP block saved by onnxruntime hold FusedConv, FusedMatMul, Gelu...;
    imported, they are ONNX ops again, with the original's MACs and the optimized nodes' names."""
    rng = np.random.default_rng(0)
    inits = {"w1": rng.standard_normal((8, 3, 3, 3)), "b1": rng.standard_normal(8), "w2": rng.standard_normal((64, 32)),
             "sq2": np.array(np.sqrt(2.0)), "one": np.array(1.0), "half": np.array(0.5), "scale": np.array(0.25)}  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "w2"], ["m"]),
        helper.make_node("Div", ["m", "sq2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["m", "a"], ["g0"]),
        helper.make_node("Mul", ["g0", "half"], ["g"]),
        helper.make_node("Transpose", ["g"], ["gt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["g", "gt"], ["mm"]), helper.make_node("Mul", ["mm", "scale"], ["y"]),
    ]  # fmt: skip
    tensors = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()]
    tensors.append(numpy_helper.from_array(np.array([1, 16, 64], np.int64), "shape"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], tensors)  # fmt: skip
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    optimized = _optimized(original, tmp_path)
    fused = {n.op_type for n in contrib_nodes(optimized)}
    assert {"FusedConv", "Gelu", "FusedMatMul"} <= fused
    g_opt, g_orig = from_model_proto(optimized, "opt.onnx"), from_model_proto(original, "orig.onnx")
    ops = [g_opt.op(n) for n in g_opt.order]
    assert all(op.op_type not in fused - {"Gelu"} for op in ops)
    assert sum(op.macs for op in ops) == sum(g_orig.op(n).macs for n in g_orig.order)
    assert any(w.startswith("onnxruntime contrib ops lowered") for w in g_opt.warnings)
    name_nodes(optimized.graph)  # the names the importer gives (onnxruntime saves fused nodes unnamed)
    conv = next(n for n in contrib_nodes(optimized) if n.op_type == "FusedConv")
    assert [g_opt.op(n).op_type for n in g_opt.order if n.startswith(conv.name + "/")] == ["Conv", "Relu"]


def test_lowered_names_never_repeat_a_name_in_use() -> None:
    """A name already in use taken again by a lowered op would give the graph two
    producers of one name: the lowering picks another name."""
    node = helper.make_node("QuickGelu", ["x"], ["y"], name="q", domain=MS, alpha=2.0)
    clash = helper.make_node("Relu", ["x"], ["q/mul_0"], name="q/Mul_0")
    graph = helper.make_graph([clash, node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("q/mul_0", TensorProto.FLOAT, None)])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    lowered = lower_contrib(model, "m.onnx")
    assert lowered is not None
    names = [n.name for n in lowered.model.graph.node]
    outputs = [o for n in lowered.model.graph.node for o in n.output]
    assert len(names) == len(set(names)) and len(outputs) == len(set(outputs))
    x = np.linspace(-2, 2, 4, dtype=np.float32)
    np.testing.assert_allclose(_run(lowered.model, {"x": x})[0], x / (1 + np.exp(-2 * x)), rtol=1e-5)


def test_a_contrib_op_not_lowered_is_refused_in_one_line_naming_it() -> None:
    node = helper.make_node("MatMulNBits", ["x"], ["y"], name="mm4", domain=MS)
    model = _model(node, {"x": (2, 3)}, {}, 17)
    with pytest.raises(ModelError) as exc:
        from_model_proto(model, "llm.onnx")
    msg = str(exc.value)
    assert msg.startswith("llm.onnx: node 'mm4' (com.microsoft.MatMulNBits)") and "\n" not in msg
    # its output has no rank, so --assume (a dimension's size) cannot help: not offered
    assert "--assume mm4=" not in msg and "FusedConv" in msg
    assert "add the output's type and shape to the model's graph.value_info" in msg


def _typed(node: onnx.NodeProto, inputs: dict[str, tuple[int, tuple[int, ...]]], weights: dict[str, np.ndarray],
           opset: int) -> onnx.ModelProto:  # fmt: skip
    """A one-node model whose inputs have their own element types (``inputs``: name -> (type, shape))."""
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, t, list(s)) for k, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.INT32 if o == "mask_index" else TensorProto.FLOAT, None)
         for o in node.output if o],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])


def _same_under_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    lowered = lower_contrib(model, "m.onnx")
    assert lowered is not None and not contrib_nodes(lowered.model)
    want, got = _run(model, feeds), _run(lowered.model, feeds)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    return lowered.model


@settings(max_examples=20, deadline=None)
@given(mask=st.sampled_from(["", "raw", "lengths"]), causal=st.booleans(), v_hidden=st.sampled_from([32, 16]),
       bias=st.booleans(), opset=st.sampled_from([12, 17]), seed=st.integers(0, 2**16))  # fmt: skip
def test_attention_matches_onnxruntime(mask: str, causal: bool, v_hidden: int, bias: bool, opset: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    b, s, d, heads = 2, 8, 32, 4
    total = 2 * d + v_hidden
    w = {"w": (rng.standard_normal((d, total)) * 0.2).astype(np.float32)}
    if bias:
        w["b"] = rng.standard_normal(total).astype(np.float32)
    inputs: dict[str, tuple[int, tuple[int, ...]]] = {"x": (TensorProto.FLOAT, (b, s, d))}
    feeds = {"x": rng.standard_normal((b, s, d)).astype(np.float32)}
    if mask == "raw":
        inputs["m"] = (TensorProto.INT32, (b, s))
        feeds["m"] = np.array([[1] * s, [1] * (s - 3) + [0] * 3], np.int32)
    elif mask == "lengths":
        inputs["m"] = (TensorProto.INT32, (b,))
        feeds["m"] = np.array([s, s - 2], np.int32)
    attrs: dict[str, object] = {"num_heads": heads, "unidirectional": int(causal)}
    if v_hidden != d:
        attrs["qkv_hidden_sizes"] = [d, d, v_hidden]
    node = helper.make_node("Attention", ["x", "w", "b" if bias else "", "m" if mask else ""], ["y"], name="attn",
                            domain=MS, **attrs)  # fmt: skip
    lowered = _same_under_onnxruntime(_typed(node, inputs, w, opset), feeds)
    assert sum(n.op_type == "MatMul" for n in lowered.graph.node) == 3  # the projection and the two products
    assert sum(n.op_type == "Softmax" for n in lowered.graph.node) == 1


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mask", [True, False])
def test_multi_head_attention_matches_onnxruntime(bias: bool, mask: bool) -> None:
    rng = np.random.default_rng(3)
    b, s, t, d, dv, heads = 2, 8, 6, 32, 16, 4
    inputs = {"q": (TensorProto.FLOAT, (b, s, d)), "k": (TensorProto.FLOAT, (b, t, d)), "v": (TensorProto.FLOAT, (b, t, dv))}
    feeds = {k: rng.standard_normal(shape).astype(np.float32) for k, (_, shape) in inputs.items()}
    w = {"bias": rng.standard_normal(d + d + dv).astype(np.float32)} if bias else {}
    if mask:
        inputs["m"] = (TensorProto.INT32, (b, t))
        feeds["m"] = np.array([[1] * t, [1] * (t - 2) + [0] * 2], np.int32)
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v", "bias" if bias else "", "m" if mask else ""], ["y"],
                            name="mha", domain=MS, num_heads=heads)  # fmt: skip
    _same_under_onnxruntime(_typed(node, inputs, w, 17), feeds)


@pytest.mark.parametrize("opset", [12, 17])
@pytest.mark.parametrize("segments", [True, False])
def test_embed_layer_norm_matches_onnxruntime(opset: int, segments: bool) -> None:
    rng = np.random.default_rng(4)
    b, s, h = 2, 8, 32
    w = {"word": rng.standard_normal((50, h)).astype(np.float32), "pos": rng.standard_normal((16, h)).astype(np.float32),
         "gamma": rng.standard_normal(h).astype(np.float32), "beta": rng.standard_normal(h).astype(np.float32)}  # fmt: skip
    inputs = {"ids": (TensorProto.INT32, (b, s)), "mask": (TensorProto.INT32, (b, s))}
    feeds = {"ids": rng.integers(0, 50, (b, s)).astype(np.int32), "mask": np.array([[1] * s, [1] * 5 + [0] * 3], np.int32)}
    if segments:
        w["seg"] = rng.standard_normal((2, h)).astype(np.float32)
        inputs["sid"] = (TensorProto.INT32, (b, s))
        feeds["sid"] = rng.integers(0, 2, (b, s)).astype(np.int32)
    names = ["ids", "sid" if segments else "", "word", "pos", "seg" if segments else "", "gamma", "beta", "mask"]
    node = helper.make_node("EmbedLayerNormalization", names, ["y", "mask_index"], name="emb", domain=MS, epsilon=1e-12)
    _same_under_onnxruntime(_typed(node, inputs, w, opset), feeds)


def test_attention_parts_not_lowered_are_refused_naming_the_node() -> None:
    node = helper.make_node("Attention", ["x", "w", "", "", "past"], ["y"], name="attn", domain=MS, num_heads=4)
    inputs = {"x": (TensorProto.FLOAT, (1, 4, 8)), "past": (TensorProto.FLOAT, (2, 1, 4, 2, 2))}
    model = _typed(node, inputs, {"w": np.zeros((8, 24), np.float32)}, 17)
    with pytest.raises(ModelError, match=r"^m\.onnx: node 'attn' \(Attention\): a past state is not lowered"):
        lower_contrib(model, "m.onnx")
    node = helper.make_node("Attention", ["x", "w"], ["y"], name="attn", domain=MS, num_heads=5)
    with pytest.raises(ModelError, match=r"num_heads 5 does not divide"):
        lower_contrib(_typed(node, {"x": (TensorProto.FLOAT, (1, 4, 8))}, {"w": np.zeros((8, 24), np.float32)}, 17), "m.onnx")


def test_a_lowering_waits_for_the_shapes_an_earlier_lowering_gives() -> None:
    """A FusedMatMul with transA needs its input's rank; that input comes from a QuickGelu, which
    onnx's shape inference cannot see through until it is lowered: a second pass lowers it."""
    nodes = [helper.make_node("QuickGelu", ["x"], ["q"], name="q", domain=MS, alpha=1.0),
             helper.make_node("FusedMatMul", ["q", "w"], ["y"], name="mm", domain=MS, transA=1, alpha=0.5)]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(_w(8, 6), "w")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    lowered = lower_contrib(model, "m.onnx")
    assert lowered is not None and not contrib_nodes(lowered.model)
    x = _w(3, 8, 5, seed=7)
    np.testing.assert_allclose(_run(lowered.model, {"x": x})[0], _run(model, {"x": x})[0], rtol=2e-4, atol=2e-5)


def test_a_rank_never_known_is_refused_naming_the_node() -> None:
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], name="mm", domain=MS, transA=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    with pytest.raises(ModelError, match=r"^m\.onnx: node 'mm': the shape of an input is unknown"):
        lower_contrib(model, "m.onnx")


def test_a_mask_index_of_start_and_end_positions_is_refused_naming_the_node() -> None:
    node = helper.make_node("Attention", ["x", "w", "", "m"], ["y"], name="attn", domain=MS, num_heads=2)
    inputs = {"x": (TensorProto.FLOAT, (2, 4, 8)), "m": (TensorProto.INT32, (4,))}
    with pytest.raises(ModelError, match=r"^m\.onnx: node 'attn' \(Attention\): a mask index of start and end positions"):
        lower_contrib(_typed(node, inputs, {"w": np.zeros((8, 24), np.float32)}, 17), "m.onnx")
