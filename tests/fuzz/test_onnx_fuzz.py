"""Fuzz the ONNX reader through ``hwsim run``: the bundled MLP's bytes flipped, cut or spliced,
and its proto edited: attributes of the wrong type, dangling inputs, cycles, huge, zero or
negative dims, unknown ops and domains, missing outputs."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import onnx
from hypothesis import given
from hypothesis import strategies as st
from onnx import AttributeProto, TensorProto, helper

from tests.fuzz.harness import check_refusal_or_run, fuzz_settings
from tests.helpers import MODELS

MODEL_BYTES = (MODELS / "mlp_mnist.onnx").read_bytes()


@st.composite
def _byte_mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(MODEL_BYTES)
    kind = draw(st.sampled_from(["flip", "truncate", "splice"]))
    if kind == "truncate":
        return bytes(data[: draw(st.integers(0, len(data) - 1))])
    for _ in range(draw(st.integers(1, 4))):
        k = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[k] ^= 1 << draw(st.integers(0, 7))
        else:
            data[k : k + draw(st.integers(0, 8))] = draw(st.binary(max_size=8))
    return bytes(data)


def _bad_attribute(draw: st.DrawFn) -> AttributeProto:
    name = draw(st.sampled_from(["alpha", "beta", "transA", "transB", "axis", "kernel_shape", "x"]))
    value = draw(
        st.one_of(
            st.integers(-(2**40), 2**40),
            st.floats(allow_nan=True),
            st.text(max_size=4),
            st.lists(st.integers(-3, 2**33), min_size=1, max_size=3),
            st.lists(st.floats(), min_size=1, max_size=2),
        )
    )
    return helper.make_attribute(name, value)


@st.composite
def _proto_mutations(draw: st.DrawFn) -> bytes:
    m = onnx.load_from_string(MODEL_BYTES)
    g = m.graph
    nodes = list(g.node)
    k = draw(st.integers(0, len(nodes) - 1))
    edit = draw(
        st.sampled_from(
            [
                "attr",
                "dangling",
                "cycle",
                "dim",
                "op",
                "domain",
                "no_output",
                "dup_output",
                "opset",
                "dtype",
            ]
        )
    )
    node = g.node[k]
    if edit == "attr":
        attr = _bad_attribute(draw)
        kept = [a for a in node.attribute if a.name != attr.name]
        del node.attribute[:]
        node.attribute.extend([*kept, attr])
    elif edit == "dangling":
        node.input[draw(st.integers(0, len(node.input) - 1))] = draw(st.text(max_size=5))
    elif edit == "cycle":
        node.input[0] = g.node[draw(st.integers(k, len(nodes) - 1))].output[0]
    elif edit == "dim":
        dims = g.input[0].type.tensor_type.shape.dim
        d = dims[draw(st.integers(0, len(dims) - 1))]
        d.dim_value = draw(st.sampled_from([0, -1, 2**31, 10**12, 2**62, 10**6]))
    elif edit == "op":
        node.op_type = draw(
            st.sampled_from(["", "Conv", "NoSuchOp", "Loop", "Reshape", "Gemm", "If"])
        )
    elif edit == "domain":
        node.domain = draw(st.sampled_from(["com.microsoft", "ai.onnx.ml", "x.y"]))
    elif edit == "no_output":
        del g.output[:]
    elif edit == "dup_output":
        node.output[0] = g.node[draw(st.integers(0, len(nodes) - 1))].output[0]
    elif edit == "opset":
        m.opset_import[0].version = draw(st.sampled_from([0, 1, 6, 99, -1]))
    else:
        g.input[0].type.tensor_type.elem_type = draw(
            st.sampled_from([TensorProto.UNDEFINED, TensorProto.STRING, TensorProto.BOOL, 99])
        )
    return m.SerializeToString()


ONNX_INPUTS = st.one_of(_byte_mutations(), _proto_mutations(), st.binary(max_size=64))


@fuzz_settings(100)
@given(ONNX_INPUTS)
def test_onnx_bytes(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        model, out = Path(d) / "model.onnx", Path(d) / "out"
        model.write_bytes(content)
        argv = ["run", "rk3588", str(model), "--out", str(out), "--no-plots", "--allow-overcommit"]
        check_refusal_or_run("onnx", argv, model, out)


# --- the attributes and shape inputs of the ops a CNN is made of --------------------------------

#: Integers at the edges of what an attribute or a shape input may hold.
EDGE_INTS = (0, 1, -1, 2, -2, 3, 7, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1, 10**12)


def _cnn() -> onnx.ModelProto:
    """A small CNN whose ops carry the attributes and shape inputs fuzzed: Conv, MaxPool,
    ConvTranspose, AveragePool, Resize, Reshape, Slice, Transpose, Concat, Softmax, ReduceMean."""
    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, [1, 4, 16, 16])
    y = helper.make_tensor_value_info("y", f, [1, 1, 4])
    inits = [
        helper.make_tensor("w", f, [8, 4, 3, 3], [0.01] * 288),
        helper.make_tensor("wt", f, [8, 4, 2, 2], [0.01] * 128),
        helper.make_tensor("scales", f, [4], [1.0, 1.0, 2.0, 2.0]),
        helper.make_tensor("shape", TensorProto.INT64, [3], [1, 4, -1]),
        helper.make_tensor("starts", TensorProto.INT64, [1], [0]),
        helper.make_tensor("ends", TensorProto.INT64, [1], [32]),
        helper.make_tensor("axes", TensorProto.INT64, [1], [2]),
        helper.make_tensor("steps", TensorProto.INT64, [1], [2]),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[1, 1], dilations=[1, 1], group=1),
        helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("ConvTranspose", ["p", "wt"], ["t"], name="deconv", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["t"], ["a"], name="avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[1, 1]),
        helper.make_node("Resize", ["a", "", "scales"], ["r"], name="resize", mode="nearest"),
        helper.make_node("Reshape", ["r", "shape"], ["s"], name="reshape"),
        helper.make_node("Slice", ["s", "starts", "ends", "axes", "steps"], ["sl"], name="slice"),
        helper.make_node("Transpose", ["sl"], ["tr"], name="transpose", perm=[0, 2, 1]),
        helper.make_node("Concat", ["tr", "tr"], ["cc"], name="concat", axis=1),
        helper.make_node("Softmax", ["cc"], ["sm"], name="softmax", axis=-1),
        helper.make_node("ReduceMean", ["sm"], ["y"], name="mean", axes=[1], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "cnn", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _shape_ops() -> onnx.ModelProto:
    """A graph of the ops that move and reshape data, with attributes and shape inputs to fuzz:
    Pad, Split, Tile, Expand, Gather, Squeeze, Unsqueeze, Flatten, TopK, Concat."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    x = helper.make_tensor_value_info("x", f, [1, 4, 6, 6])
    y = helper.make_tensor_value_info("y", f, None)
    ints = {"pads": [0, 0, 1, 1, 0, 0, 1, 1], "split": [2, 2], "repeats": [1, 1, 2, 1], "shape": [1, 2, 8, 8],
            "idx": [0, 1], "sq_axes": [0], "unsq_axes": [0], "k": [3]}  # fmt: skip
    inits = [helper.make_tensor(n, i64, [len(v)], v) for n, v in ints.items()]
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="constant"),
        helper.make_node("Split", ["p", "split"], ["s0", "s1"], name="split", axis=1),
        helper.make_node("Tile", ["s0", "repeats"], ["t"], name="tile"),
        helper.make_node("Expand", ["s1", "shape"], ["e"], name="expand"),
        helper.make_node("Concat", ["t", "e"], ["c"], name="concat", axis=2),
        helper.make_node("Gather", ["c", "idx"], ["g"], name="gather", axis=1),
        helper.make_node("Squeeze", ["g", "sq_axes"], ["q"], name="squeeze"),
        helper.make_node("Unsqueeze", ["q", "unsq_axes"], ["u"], name="unsqueeze"),
        helper.make_node("Flatten", ["u"], ["fl"], name="flatten", axis=2),
        helper.make_node("TopK", ["fl", "k"], ["y", "yi"], name="topk", axis=-1),
    ]
    graph = helper.make_graph(nodes, "shape_ops", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _function_ops() -> onnx.ModelProto:
    """A transformer block at opset 23 whose function ops hwsim expands at import
    (:mod:`graph_ir.functions`): RMSNormalization, RotaryEmbedding on Q and K, Attention."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    x = helper.make_tensor_value_info("x", f, [1, 8, 16])
    y = helper.make_tensor_value_info("y", f, None)
    inits = [helper.make_tensor("g", f, [16], [1.0] * 16), helper.make_tensor("w", f, [16, 16], [0.1] * 256),
             helper.make_tensor("wkv", f, [16, 8], [0.1] * 128), helper.make_tensor("cos", f, [8, 2], [1.0] * 16),
             helper.make_tensor("sin", f, [8, 2], [0.0] * 16), helper.make_tensor("pos", i64, [1, 8], list(range(8)))]  # fmt: skip
    nodes = [
        helper.make_node("RMSNormalization", ["x", "g"], ["n"], name="norm", axis=-1),
        helper.make_node("MatMul", ["n", "w"], ["q"], name="q"),
        helper.make_node("MatMul", ["n", "wkv"], ["kv"], name="kv"),
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "pos"], ["qr"], name="rope", num_heads=4),
        helper.make_node("Attention", ["qr", "kv", "kv"], ["y"], name="attn", q_num_heads=4, kv_num_heads=2, is_causal=1),
    ]
    graph = helper.make_graph(nodes, "function_ops", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def _contrib_ops() -> onnx.ModelProto:
    """A conv and MLP block as onnxruntime saves it after its optimizations, whose contrib ops
    hwsim lowers at import (:mod:`graph_ir.contrib`): FusedConv, FusedGemm, FusedMatMul,
    QuickGelu, SkipLayerNormalization, SimplifiedLayerNormalization, Attention (causal, a mask of lengths)."""
    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, [1, 4, 6, 6])
    y = helper.make_tensor_value_info("y", f, None)
    shapes = {"w": [4, 4, 3, 3], "b": [4], "wm": [36, 36], "g": [36], "wg": [36, 8], "cg": [8], "wa": [8, 24], "ba": [24]}
    inits = [helper.make_tensor(n, f, d, [0.1] * math.prod(d)) for n, d in shapes.items()]
    inits.append(helper.make_tensor("shape", TensorProto.INT64, [2], [4, 36]))
    ms = "com.microsoft"
    nodes = [
        helper.make_node("FusedConv", ["x", "w", "b"], ["c"], name="conv", domain=ms, pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3], activation="LeakyRelu", activation_params=[0.1]),
        helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
        helper.make_node("FusedMatMul", ["r", "wm"], ["m"], name="matmul", domain=ms, transB=1, alpha=0.5),
        helper.make_node("QuickGelu", ["m"], ["q"], name="gelu", domain=ms, alpha=1.702),
        helper.make_node("SkipLayerNormalization", ["q", "r", "g", "g"], ["n"], name="skipln", domain=ms),
        helper.make_node("SimplifiedLayerNormalization", ["n", "g"], ["s"], name="rms", axis=-1),
        helper.make_node("FusedGemm", ["s", "wg", "cg"], ["gm"], name="gemm", domain=ms, activation="Relu"),
        helper.make_node("Reshape", ["gm", "shape3"], ["g3"], name="reshape3"),
        helper.make_node("Attention", ["g3", "wa", "ba", "lens"], ["y"], name="attention", domain=ms, num_heads=2,
                         unidirectional=1),
    ]  # fmt: skip
    inits.append(helper.make_tensor("shape3", TensorProto.INT64, [3], [1, 4, 8]))
    inits.append(helper.make_tensor("lens", TensorProto.INT32, [1], [3]))
    graph = helper.make_graph(nodes, "contrib_ops", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)])


CNN = _cnn()
SHAPE_OPS = _shape_ops()
FUNCTION_OPS = _function_ops()
CONTRIB_OPS = _contrib_ops()
INT_ATTRIBUTES = ("kernel_shape", "pads", "strides", "dilations", "group", "perm", "axis", "axes", "keepdims",
                  "ceil_mode", "count_include_pad", "output_padding", "output_shape", "largest", "sorted",
                  "q_num_heads", "kv_num_heads", "is_causal", "num_heads", "rotary_embedding_dim", "interleaved",
                  "qk_matmul_output_mode", "transA", "transB", "transBatchA", "transBatchB", "unidirectional",
                  "qkv_hidden_sizes")  # fmt: skip
EDGE_INT = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-4, 40))


@st.composite
def _mutations(draw: st.DrawFn, base: onnx.ModelProto) -> bytes:
    """``base`` with one to three edits: an int attribute of a node set to edge integers or
    removed, an int64 shape input replaced by edge integers, float scales by edge floats."""
    m = onnx.ModelProto()
    m.CopyFrom(base)
    g = m.graph
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):  # an attribute of a node: a list of ints, one int, or gone
            node = g.node[draw(st.integers(0, len(g.node) - 1))]
            name = draw(st.sampled_from(INT_ATTRIBUTES))
            kept = [a for a in node.attribute if a.name != name]
            del node.attribute[:]
            node.attribute.extend(kept)
            value = draw(st.one_of(st.none(), EDGE_INT, st.lists(EDGE_INT, max_size=5)))
            if value is not None and value != []:
                node.attribute.append(helper.make_attribute(name, value))
        else:  # a shape input: Reshape's shape, Slice's starts/ends/axes/steps, Resize's scales, pads, ...
            k = draw(st.integers(0, len(g.initializer) - 1))
            t = g.initializer[k]
            if t.data_type == TensorProto.INT64:
                values = draw(st.lists(EDGE_INT, min_size=0, max_size=8))
                g.initializer[k].CopyFrom(helper.make_tensor(t.name, TensorProto.INT64, [len(values)], values))
            elif t.name == "scales":
                values = draw(st.lists(st.one_of(st.floats(width=32), st.sampled_from([0.0, 1e-40, 1e30])), max_size=5))
                g.initializer[k].CopyFrom(helper.make_tensor(t.name, TensorProto.FLOAT, [len(values)], values))
    return m.SerializeToString()


def _run_model(reader: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        model, out = Path(d) / "model.onnx", Path(d) / "out"
        model.write_bytes(content)
        argv = ["run", "rk3588", str(model), "--out", str(out), "--no-plots", "--allow-overcommit"]
        check_refusal_or_run(reader, argv, model, out)


@fuzz_settings(100)
@given(_mutations(CNN))
def test_onnx_cnn_attributes(content: bytes) -> None:
    _run_model("onnx-cnn", content)


@fuzz_settings(100)
@given(_mutations(SHAPE_OPS))
def test_onnx_shape_op_attributes(content: bytes) -> None:
    _run_model("onnx-shape-ops", content)


@fuzz_settings(100)
@given(_mutations(FUNCTION_OPS))
def test_onnx_function_op_attributes(content: bytes) -> None:
    _run_model("onnx-function-ops", content)


@st.composite
def _contrib_mutations(draw: st.DrawFn) -> bytes:
    """:data:`CONTRIB_OPS` with :func:`_mutations`' edits, and maybe a fused activation (and its
    parameters, edge floats) changed on the FusedConv or the FusedGemm."""
    m = onnx.ModelProto.FromString(draw(_mutations(CONTRIB_OPS)))
    if draw(st.booleans()):
        node = m.graph.node[draw(st.sampled_from([0, len(m.graph.node) - 1]))]
        kept = [a for a in node.attribute if a.name not in ("activation", "activation_params")]
        del node.attribute[:]
        node.attribute.extend(kept)
        kind = draw(st.sampled_from(["", "Relu", "LeakyRelu", "HardSigmoid", "Clip", "Tanh", "Sigmoid", "Swish", "relu"]))
        if kind:
            node.attribute.append(helper.make_attribute("activation", kind))
        params = draw(st.lists(st.one_of(st.floats(width=32), st.sampled_from([0.0, 1e-40, 1e30])), max_size=3))
        if params:
            node.attribute.append(helper.make_attribute("activation_params", params))
    return m.SerializeToString()


@fuzz_settings(100)
@given(_contrib_mutations())
def test_onnx_contrib_op_attributes(content: bytes) -> None:
    _run_model("onnx-contrib-ops", content)
