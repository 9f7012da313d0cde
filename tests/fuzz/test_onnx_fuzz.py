"""Fuzz the ONNX reader through ``hwsim run``: the bundled MLP's bytes flipped, cut or spliced,
and its proto edited: attributes of the wrong type, dangling inputs, cycles, huge, zero or
negative dims, unknown ops and domains, missing outputs."""

from __future__ import annotations

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
