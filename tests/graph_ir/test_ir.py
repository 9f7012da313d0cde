"""Tests for ``graph_ir``: ONNX import, op metrics, tensor bytes and the synthetic DAGs.

Tiny models are built in memory with ``onnx.helper``; weights are initializers that carry
only ``dims`` and ``data_type`` (like the bundled weightless models), shape-driving integers
carry their values. The bundled models come from ``examples/models``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir import (
    Metrics,
    ModelError,
    ModelGraph,
    Op,
    Tensor,
    deployed_bytes,
    from_model_proto,
    load_onnx,
    metrics,
    parse_input_shape,
    registered_op_types,
)
from graph_ir.synthetic import layered_dag, random_dag, transformer_dag
from tests.helpers import ROOT

MODELS_DIR = ROOT / "examples" / "models"
ALL_MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.onnx"))
PUBLISHED_MACS = {
    "resnet18": 1.82e9,
    "mobilenetv2": 0.30e9,
    "yolov8n": 4.35e9,
    "bert_base": 11.2e9,
    "vit_b16": 17.56e9,
}


@functools.cache
def bundled(name: str) -> ModelGraph:
    """A bundled example model, loaded once per test session (tests only read it)."""
    return load_onnx(MODELS_DIR / f"{name}.onnx")


# ---------------------------------------------------------------- tiny ONNX model builders
def value(
    name: str, dims: Sequence[int | str] | None, elem: int = TensorProto.FLOAT
) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, dims)


def weight(name: str, dims: Sequence[int], elem: int = TensorProto.FLOAT) -> onnx.TensorProto:
    """A weightless initializer: dims and type only, no data."""
    t = onnx.TensorProto()
    t.name = name
    t.dims.extend(dims)
    t.data_type = elem
    return t


def ints(name: str, values: int | Sequence[int]) -> onnx.TensorProto:
    """An int64 initializer with data (shape-driving arguments)."""
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    initializers: Sequence[onnx.TensorProto] = (),
    value_info: Sequence[onnx.ValueInfoProto] = (),
    opset: int = 17,
    domains: Sequence[str] = (),
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        list(inputs),
        list(outputs),
        list(initializers),
        value_info=list(value_info),
    )
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets)


def single_op(
    op_type: str,
    inputs: Mapping[str, Sequence[int]],
    initializers: Sequence[onnx.TensorProto] = (),
    n_outputs: int = 1,
    opset: int = 17,
    **attrs: Any,
) -> Op:
    """Import a one-node model: graph inputs (float) in order, then the initializers."""
    in_names = list(inputs) + [t.name for t in initializers]
    out_names = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, in_names, out_names, name="the_op", **attrs)
    model = make_model(
        [node],
        [value(n, d) for n, d in inputs.items()],
        [value(n, None) for n in out_names],
        initializers,
        opset=opset,
    )
    graph = from_model_proto(model)
    assert len(graph) == 1
    return graph.op("the_op")


def save(tmp_path: Path, model: onnx.ModelProto, name: str = "model.onnx") -> Path:
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


# ---------------------------------------------------------------- bundled models
class TestBundledModels:
    def test_examples_are_present(self) -> None:
        assert set(PUBLISHED_MACS) <= set(ALL_MODELS)

    @pytest.mark.parametrize("name", ALL_MODELS)
    def test_loads_with_static_positive_shapes(self, name: str) -> None:
        graph = bundled(name)
        assert len(graph) > 0
        assert graph.name == name
        assert len(graph.order) == len(graph) == len(set(graph.order))
        for op in graph.ops():
            assert op.outputs, op.name
            for t in op.outputs + op.inputs:
                assert all(isinstance(d, int) and d > 0 for d in t.shape), (op.name, t)
        for t in graph.inputs + graph.outputs:
            assert t.shape and all(d > 0 for d in t.shape), t

    @pytest.mark.parametrize("name", sorted(PUBLISHED_MACS))
    def test_total_macs_match_published(self, name: str) -> None:
        assert bundled(name).total_macs == pytest.approx(PUBLISHED_MACS[name], rel=0.05)

    @pytest.mark.parametrize("name", sorted(PUBLISHED_MACS))
    def test_no_unknown_ops(self, name: str) -> None:
        assert bundled(name).unknown_ops == ()

    @pytest.mark.parametrize("name", ALL_MODELS)
    def test_edges_carry_tensors_the_source_produces(self, name: str) -> None:
        graph = bundled(name)
        g = graph.g
        assert g.number_of_edges() > 0
        for u, v, tensors in g.edges(data="tensors"):
            assert tensors, (u, v)
            produced = {t.name for t in graph.op(u).outputs}
            read = {t.name for t in graph.op(v).inputs}
            assert set(tensors) <= produced & read, (u, v, tensors)
            for t in tensors:
                assert graph.producer[t] == u

    @pytest.mark.parametrize("name", ALL_MODELS)
    def test_order_is_topological(self, name: str) -> None:
        graph = bundled(name)
        pos = {n: i for i, n in enumerate(graph.order)}
        assert set(pos) == set(graph.g.nodes)
        assert all(pos[u] < pos[v] for u, v in graph.g.edges)

    def test_resnet18_io(self) -> None:
        graph = bundled("resnet18")
        assert [(t.name, t.shape) for t in graph.inputs] == [("input", (1, 3, 224, 224))]
        assert [(t.name, t.shape) for t in graph.outputs] == [("output", (1, 1000))]
        assert all(t.is_weight for op in graph.ops() if op.op_type == "Conv" for t in op.inputs[1:])


# ---------------------------------------------------------------- op metrics
class TestMetricsConv:
    def test_dense_conv_stem(self) -> None:
        op = single_op(
            "Conv", {"x": (1, 3, 224, 224)}, [weight("w", (64, 3, 7, 7))],
            kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3],
        )  # fmt: skip
        assert op.outputs[0].shape == (1, 64, 112, 112)
        assert op.category == "conv"
        assert op.macs == 64 * 112 * 112 * (3 * 7 * 7)
        assert op.flops == 2 * op.macs

    def test_grouped_conv(self) -> None:
        op = single_op(
            "Conv", {"x": (1, 32, 28, 28)}, [weight("w", (64, 8, 3, 3))], group=4, pads=[1] * 4
        )
        assert op.outputs[0].shape == (1, 64, 28, 28)
        assert op.macs == 64 * 28 * 28 * (32 // 4) * 9

    def test_depthwise_conv(self) -> None:
        op = single_op(
            "Conv", {"x": (1, 32, 28, 28)}, [weight("w", (32, 1, 3, 3)), weight("b", (32,))],
            group=32, pads=[1] * 4, strides=[2, 2],
        )  # fmt: skip
        assert op.outputs[0].shape == (1, 32, 14, 14)
        assert op.macs == 32 * 14 * 14 * 9
        assert [t.name for t in op.weights] == ["w", "b"]

    def test_conv_transpose(self) -> None:
        op = single_op(
            "ConvTranspose", {"x": (1, 16, 8, 8)}, [weight("w", (16, 8, 4, 4))],
            strides=[2, 2], pads=[1] * 4,
        )  # fmt: skip
        assert op.outputs[0].shape == (1, 8, 16, 16)
        assert op.category == "conv"
        assert op.macs == 16 * 8 * 8 * 8 * 4 * 4  # every input pixel x Cout x kernel

    def test_grouped_conv_transpose(self) -> None:
        op = single_op(
            "ConvTranspose", {"x": (1, 16, 8, 8)}, [weight("w", (16, 4, 4, 4))],
            strides=[2, 2], pads=[1] * 4, group=2,
        )  # fmt: skip
        assert op.outputs[0].shape == (1, 8, 16, 16)
        assert op.macs == 16 * 8 * 8 * 4 * 4 * 4  # Cout / group per input pixel


class TestMetricsMatmul:
    def test_gemm_trans_a_with_bias(self) -> None:
        op = single_op(
            "Gemm",
            {"a": (256, 32)},
            [weight("b", (64, 256)), weight("c", (64,))],
            transA=1,
            transB=1,
        )
        assert op.outputs[0].shape == (32, 64)
        assert op.category == "matmul"
        assert op.macs == 32 * 64 * 256
        assert op.flops == 2 * op.macs + 32 * 64

    def test_gemm_plain(self) -> None:
        op = single_op("Gemm", {"a": (1, 512)}, [weight("b", (512, 1000))])
        assert op.macs == 1000 * 512

    def test_batched_matmul(self) -> None:
        op = single_op("MatMul", {"a": (2, 12, 128, 64), "b": (2, 12, 64, 128)})
        assert op.outputs[0].shape == (2, 12, 128, 128)
        assert op.macs == 2 * 12 * 128 * 128 * 64
        assert op.flops == 2 * op.macs
        assert op.weights == ()

    def test_broadcast_matmul_with_weight(self) -> None:
        op = single_op("MatMul", {"a": (4, 128, 64)}, [weight("b", (64, 32))])
        assert op.macs == 4 * 128 * 32 * 64

    def test_vector_matmul(self) -> None:
        op = single_op("MatMul", {"a": (64,)}, [weight("b", (64, 32))])
        assert op.outputs[0].shape == (32,)
        assert op.macs == 64 * 32

    @pytest.mark.parametrize(
        ("equation", "a", "b", "macs"),
        [
            ("bij,bjk->bik", (3, 4, 5), (3, 5, 6), 3 * 4 * 5 * 6),
            ("bhqd,bhkd->bhqk", (1, 2, 8, 16), (1, 2, 8, 16), 1 * 2 * 8 * 8 * 16),
            ("ij,jk->ik", (7, 3), (3, 2), 7 * 3 * 2),
        ],
    )
    def test_einsum(self, equation: str, a: tuple[int, ...], b: tuple[int, ...], macs: int) -> None:
        op = single_op("Einsum", {"a": a, "b": b}, equation=equation)
        assert op.category == "matmul"
        assert op.macs == macs
        assert op.flops == 2 * macs


class TestMetricsRecurrent:
    def test_lstm(self) -> None:
        seq, batch, inp, hid = 10, 2, 40, 64
        op = single_op(
            "LSTM", {"x": (seq, batch, inp)}, [weight("w", (1, 4 * hid, inp)), weight("r", (1, 4 * hid, hid))],
            n_outputs=3, hidden_size=hid,
        )  # fmt: skip
        assert op.outputs[0].shape == (seq, 1, batch, hid)
        assert op.category == "rnn"
        assert op.macs == seq * batch * 4 * hid * (inp + hid)
        assert op.flops > 2 * op.macs

    def test_bidirectional_lstm_batch_first(self) -> None:
        seq, batch, inp, hid = 10, 2, 40, 64
        op = single_op(
            "LSTM", {"x": (batch, seq, inp)}, [weight("w", (2, 4 * hid, inp)), weight("r", (2, 4 * hid, hid))],
            hidden_size=hid, direction="bidirectional", layout=1,
        )  # fmt: skip
        assert op.outputs[0].shape == (batch, seq, 2, hid)
        assert op.macs == 2 * seq * batch * 4 * hid * (inp + hid)

    def test_gru(self) -> None:
        seq, batch, inp, hid = 100, 1, 128, 128
        op = single_op(
            "GRU", {"x": (seq, batch, inp)}, [weight("w", (1, 3 * hid, inp)), weight("r", (1, 3 * hid, hid))],
            hidden_size=hid,
        )  # fmt: skip
        assert op.category == "rnn"
        assert op.macs == seq * batch * 3 * hid * (inp + hid)
        assert op.flops > 2 * op.macs


def fft_flops(n: int) -> int:
    return int(5 * n * math.log2(n))


class TestMetricsSignal:
    def test_stft(self) -> None:
        op = single_op(
            "STFT", {"s": (1, 16000, 1)},
            [ints("step", 160), weight("win", (512,)), ints("len", 512)], onesided=1,
        )  # fmt: skip
        frames = (16000 - 512) // 160 + 1
        assert op.outputs[0].shape == (1, frames, 257, 2)
        assert op.category == "signal"
        assert op.macs == 0
        assert op.flops == frames * (fft_flops(512) + 512)

    def test_dft(self) -> None:
        op = single_op("DFT", {"x": (4, 512, 2)}, axis=1)
        assert op.outputs[0].shape == (4, 512, 2)
        assert op.category == "signal"
        assert op.flops == 4 * fft_flops(512)

    def test_dft_inner_axis(self) -> None:
        op = single_op("DFT", {"x": (2, 3, 256, 1)}, axis=2)
        assert op.flops == 6 * fft_flops(256)

    def test_dft_zero_padded_length(self) -> None:
        op = single_op("DFT", {"x": (2, 400, 1)}, [ints("n", 512)], axis=1, onesided=1)
        assert op.outputs[0].shape == (2, 257, 2)
        assert op.flops == 2 * fft_flops(512)

    def test_dft_opset20_default_axis(self) -> None:
        op = single_op("DFT", {"x": (1, 10, 512, 1)}, opset=20)
        assert op.outputs[0].shape == (1, 10, 512, 2)
        assert op.flops == 10 * fft_flops(512)

    def test_dft_opset20_axis_from_a_constant_input(self) -> None:
        # the axis is an input from opset 20: read from the initializer, not the default -2
        op = single_op("DFT", {"x": (1, 512, 10, 1)}, [ints("n", 512), ints("ax", 1)], opset=20)
        assert op.attrs["axis"] == 1 and op.outputs[0].shape == (1, 512, 10, 2)
        assert op.flops == 10 * fft_flops(512)


class TestMetricsPoolingAndLayout:
    def test_maxpool(self) -> None:
        op = single_op(
            "MaxPool", {"x": (1, 64, 112, 112)}, kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
        assert op.outputs[0].shape == (1, 64, 56, 56)
        assert op.category == "pool"
        assert (op.macs, op.flops) == (0, 64 * 56 * 56 * 9)

    def test_average_pool(self) -> None:
        op = single_op("AveragePool", {"x": (1, 8, 8, 8)}, kernel_shape=[2, 2], strides=[2, 2])
        assert op.outputs[0].shape == (1, 8, 4, 4)
        assert op.flops == 8 * 4 * 4 * 4

    def test_global_average_pool(self) -> None:
        op = single_op("GlobalAveragePool", {"x": (1, 512, 7, 7)})
        assert op.outputs[0].shape == (1, 512, 1, 1)
        assert (op.category, op.flops) == ("pool", 512 * 7 * 7)

    def test_reshape_is_a_free_view(self) -> None:
        op = single_op("Reshape", {"x": (1, 64, 7, 7)}, [ints("shape", [1, -1])])
        assert op.outputs[0].shape == (1, 64 * 49)
        assert (op.category, op.macs, op.flops) == ("layout", 0, 0)
        assert op.weights[0].name == "shape"

    def test_flatten_is_a_free_view(self) -> None:
        op = single_op("Flatten", {"x": (1, 512, 1, 1)}, axis=1)
        assert op.outputs[0].shape == (1, 512)
        assert (op.category, op.macs, op.flops) == ("layout", 0, 0)


class TestMetricsRegistry:
    def test_unregistered_op_type_is_unknown(self) -> None:
        x = Tensor("x", (4, 4), "float32")
        assert "NoSuchOp" not in registered_op_types()
        assert metrics("NoSuchOp", (x,), (x,), {}) == Metrics("unknown", 0, 0)

    def test_unknown_with_no_tensors(self) -> None:
        assert metrics("NoSuchOp", (), (), {}) == Metrics("unknown")

    def test_registered_types_are_sorted_and_cover_the_families(self) -> None:
        types = registered_op_types()
        assert list(types) == sorted(types)
        for t in ("Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "LSTM", "GRU", "STFT", "DFT",
                  "MaxPool", "Reshape", "Flatten"):  # fmt: skip
            assert t in types
        assert "Det" not in types

    def test_elementwise_binary(self) -> None:
        op = single_op("Add", {"a": (1, 8, 4, 4), "b": (1, 8, 4, 4)})
        assert (op.category, op.macs, op.flops) == ("elementwise", 0, 8 * 16)


class TestDetectionAndScalarOps:
    """Op types of detection heads, samplers and libm-style functions: each costed by what it
    computes, none a memory copy of unknown cost."""

    @staticmethod
    def t(name: str, shape: tuple[int, ...]) -> Tensor:
        return Tensor(name, shape, "float32")

    def test_lrn_sums_its_window_per_element(self) -> None:
        x = self.t("x", (1, 64, 8, 8))
        assert metrics("LRN", (x,), (x,), {"size": 5}) == Metrics("norm", 0, (2 * 5 + 12) * x.elements)

    @pytest.mark.parametrize(("mode", "taps"), [("linear", 4), ("bilinear", 4), ("cubic", 16), ("nearest", 1)])
    def test_grid_sample_interpolates_its_taps(self, mode: str, taps: int) -> None:
        x, grid, y = self.t("x", (1, 8, 16, 16)), self.t("g", (1, 16, 16, 2)), self.t("y", (1, 8, 16, 16))
        m = metrics("GridSample", (x, grid), (y,), {"mode": mode})
        assert m == Metrics("data" if taps == 1 else "elementwise", 0, 2 * taps * y.elements)

    def test_roi_align_averages_its_samples(self) -> None:
        x, rois, y = self.t("x", (1, 64, 32, 32)), self.t("r", (10, 4)), self.t("y", (10, 64, 7, 7))
        assert metrics("RoiAlign", (x, rois), (y,), {"sampling_ratio": 3}) == Metrics("pool", 0, 9 * 8 * y.elements)
        assert metrics("RoiAlign", (x, rois), (y,), {}).flops == 4 * 8 * y.elements  # adaptive: counted as 2

    def test_nms_sorts_and_compares_against_the_kept(self) -> None:
        boxes, scores = self.t("b", (1, 1000, 4)), self.t("s", (1, 4, 1000))
        sel = Tensor("sel", (4 * 50, 3), "int64")  # 50 kept per class
        m = metrics("NonMaxSuppression", (boxes, scores), (sel,), {})
        assert m == Metrics("reduce", 0, 4 * (int(1000 * math.log2(1000)) + 12 * 1000 * 50))

    def test_max_roi_pool_takes_each_bins_max(self) -> None:
        x, y = self.t("x", (1, 8, 28, 28)), self.t("y", (5, 8, 7, 7))
        assert metrics("MaxRoiPool", (x, self.t("r", (5, 5))), (y,), {}) == Metrics("pool", 0, 16 * y.elements)

    def test_affine_grid_is_a_matrix_per_point(self) -> None:
        theta, y = self.t("th", (1, 2, 3)), self.t("y", (1, 8, 8, 2))
        assert metrics("AffineGrid", (theta,), (y,), {}) == Metrics("elementwise", 0, 6 * y.elements)

    @pytest.mark.parametrize(("op_type", "category", "per"), [
        ("Asinh", "activation", 8), ("Acosh", "activation", 8), ("Atanh", "activation", 8), ("CastLike", "activation", 1),
        ("BitwiseNot", "activation", 1), ("Shrink", "activation", 2), ("BitwiseAnd", "elementwise", 1),
        ("BitwiseXor", "elementwise", 1), ("CumProd", "reduce", 1), ("Col2Im", "data", 0), ("MaxUnpool", "data", 0),
        ("CenterCropPad", "data", 0), ("TensorScatter", "data", 0), ("BitCast", "layout", 0),
    ])  # fmt: skip
    def test_elementwise_and_copies(self, op_type: str, category: str, per: int) -> None:
        x = self.t("x", (4, 32))
        ins = (x,) if category in ("activation", "reduce", "layout") else (x, x)
        assert metrics(op_type, ins, (x,), {}) == Metrics(category, 0, per * x.elements)  # type: ignore[arg-type]


# ---------------------------------------------------------------- import of tiny models
class TestFromModelProto:
    def test_empty_graph(self) -> None:
        x = value("x", (1, 4))
        graph = from_model_proto(make_model([], [x], [x]))
        assert len(graph) == 0
        assert graph.order == ()
        assert (graph.total_macs, graph.unknown_ops) == (0, ())
        assert [t.name for t in graph.inputs] == ["x"]

    def test_single_identity_loads(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("Identity", ["x"], ["y"])], [value("x", (2, 3))], [value("y", None)]
        )
        graph = load_onnx(save(tmp_path, model, "identity.onnx"))
        assert graph.name == "identity"
        assert len(graph) == 1
        (op,) = graph.ops()
        assert (op.op_type, op.category, op.flops) == ("Identity", "layout", 0)
        assert graph.outputs[0].shape == (2, 3)
        assert graph.g.number_of_edges() == 0
        assert graph.producer == {"y": op.name}

    def test_unnamed_nodes_get_unique_names(self) -> None:
        nodes = [
            helper.make_node("Relu", ["x"], ["a"]),
            helper.make_node("Relu", ["a"], ["b"], name="Relu_2"),
            helper.make_node("Relu", ["b"], ["c"]),  # its default name would be Relu_2 too
            helper.make_node("Relu", ["c"], ["d"], name="dup"),
            helper.make_node("Relu", ["d"], ["y"], name="dup"),
        ]
        graph = from_model_proto(make_model(nodes, [value("x", (1, 4))], [value("y", None)]))
        assert len(graph) == 5
        assert len(set(graph.order)) == 5
        assert all(graph.order)
        assert graph.order[1] == "Relu_2"
        assert "dup" in graph.order

    def test_non_topological_nodes_are_sorted(self) -> None:
        nodes = [
            helper.make_node("Sigmoid", ["b"], ["y"], name="third"),
            helper.make_node("Relu", ["a"], ["b"], name="second"),
            helper.make_node("Abs", ["x"], ["a"], name="first"),
        ]
        graph = from_model_proto(make_model(nodes, [value("x", (1, 4))], [value("y", None)]))
        assert graph.order == ("first", "second", "third")
        assert [op.op_type for op in graph.ops()] == ["Abs", "Relu", "Sigmoid"]
        assert set(graph.g.edges) == {("first", "second"), ("second", "third")}
        assert graph.g.edges["first", "second"]["tensors"] == ("a",)

    def test_file_order_kept_when_valid(self) -> None:
        nodes = [
            helper.make_node("Relu", ["x"], ["b"], name="z_branch"),
            helper.make_node("Abs", ["x"], ["a"], name="a_branch"),
            helper.make_node("Add", ["a", "b"], ["y"], name="join"),
        ]
        graph = from_model_proto(make_model(nodes, [value("x", (1, 4))], [value("y", None)]))
        assert graph.order == ("z_branch", "a_branch", "join")

    def test_constant_nodes_become_weights(self) -> None:
        const = helper.make_node(
            "Constant",
            [],
            ["c"],
            name="k",
            value=helper.make_tensor("v", TensorProto.FLOAT, (1, 4), [1, 2, 3, 4]),
        )
        add = helper.make_node("Add", ["x", "c"], ["y"], name="add")
        graph = from_model_proto(make_model([const, add], [value("x", (1, 4))], [value("y", None)]))
        assert graph.order == ("add",)
        assert "k" not in graph.g
        op = graph.op("add")
        assert [(t.name, t.shape, t.is_weight) for t in op.inputs] == [
            ("x", (1, 4), False),
            ("c", (1, 4), True),
        ]
        assert "c" not in graph.producer

    def test_standard_op_without_handler_is_unknown(self) -> None:
        assert "Det" not in registered_op_types()
        op = single_op("Det", {"x": (2, 3, 3)})
        assert op.category == "unknown"
        assert op.outputs[0].shape == (2,)

    def test_unknown_ops_lists_unhandled_types(self) -> None:
        nodes = [helper.make_node("Det", ["x"], ["d"]), helper.make_node("Relu", ["d"], ["y"])]
        graph = from_model_proto(make_model(nodes, [value("x", (2, 3, 3))], [value("y", None)]))
        assert graph.unknown_ops == ("Det",)

    def test_custom_op_with_value_info_is_kept(self) -> None:
        nodes = [
            helper.make_node("MyOp", ["x"], ["c"], name="custom", domain="com.example"),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ]
        model = make_model(
            nodes, [value("x", (2, 8))], [value("y", None)],
            value_info=[value("c", (2, 8))], domains=["com.example"],
        )  # fmt: skip
        graph = from_model_proto(model)
        assert graph.op("custom").category == "unknown"
        assert graph.op("custom").outputs[0].shape == (2, 8)
        assert graph.unknown_ops == ("MyOp",)
        assert graph.g.edges["custom", "relu"]["tensors"] == ("c",)

    def test_custom_op_without_shape_is_an_error(self) -> None:
        nodes = [helper.make_node("MyOp", ["x"], ["c"], name="custom", domain="com.example")]
        model = make_model(nodes, [value("x", (2, 8))], [value("c", None)], domains=["com.example"])
        with pytest.raises(ModelError, match=r"'custom'.*'c'"):
            from_model_proto(model, source="mem.onnx")

    def test_does_not_modify_the_callers_model(self) -> None:
        nodes = [helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Abs", ["x"], ["a"])]
        model = make_model(nodes, [value("x", ("N", 4))], [value("y", None)])
        before = model.SerializeToString()
        from_model_proto(model, input_shapes={"x": (1, 4)})
        assert model.SerializeToString() == before

    def test_edge_lists_each_tensor_once(self) -> None:
        nodes = [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Mul", ["r", "r"], ["y"], name="sq"),
        ]
        graph = from_model_proto(make_model(nodes, [value("x", (1, 4))], [value("y", None)]))
        assert graph.g.edges["relu", "sq"]["tensors"] == ("r",)


# ---------------------------------------------------------------- errors
class TestLoadErrors:
    def test_missing_file(self, tmp_path: Path) -> None:
        path = tmp_path / "absent.onnx"
        with pytest.raises(ModelError, match="not found") as info:
            load_onnx(path)
        assert str(path) in str(info.value)

    def test_text_file(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.onnx"
        path.write_text("hello, this is not a model\n", encoding="utf-8")
        with pytest.raises(ModelError) as info:
            load_onnx(path)
        assert str(path) in str(info.value)

    def test_empty_file(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.onnx"
        path.write_bytes(b"")
        with pytest.raises(ModelError) as info:
            load_onnx(path)
        assert str(path) in str(info.value)

    def test_truncated_file(self, tmp_path: Path) -> None:
        data = (MODELS_DIR / "resnet18.onnx").read_bytes()
        path = tmp_path / "half.onnx"
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(ModelError) as info:
            load_onnx(path)
        assert str(path) in str(info.value)

    def test_cycle_names_the_nodes(self, tmp_path: Path) -> None:
        nodes = [
            helper.make_node("Add", ["x", "b"], ["a"], name="first"),
            helper.make_node("Relu", ["a"], ["b"], name="second"),
            helper.make_node("Relu", ["a"], ["y"], name="out"),
        ]
        path = save(tmp_path, make_model(nodes, [value("x", (1, 4))], [value("y", None)]))
        with pytest.raises(ModelError, match="cycle") as info:
            load_onnx(path)
        msg = str(info.value)
        assert str(path) in msg
        assert "first" in msg and "second" in msg
        assert "out" not in msg.split("cycle")[-1]

    def test_self_loop_names_the_node(self, tmp_path: Path) -> None:
        nodes = [
            helper.make_node("Add", ["x", "a"], ["a"], name="loop"),
            helper.make_node("Relu", ["a"], ["y"]),
        ]
        path = save(tmp_path, make_model(nodes, [value("x", (1, 4))], [value("y", None)]))
        with pytest.raises(ModelError, match="cycle") as info:
            load_onnx(path)
        assert str(path) in str(info.value) and "'loop'" in str(info.value)

    def test_dynamic_input_needs_a_shape(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("Relu", ["x"], ["y"])], [value("x", ("N", 3, 8))], [value("y", None)]
        )
        path = save(tmp_path, model)
        with pytest.raises(ModelError) as info:
            load_onnx(path)
        msg = str(info.value)
        assert str(path) in msg and "'x'" in msg
        assert "--input-shape x=1x3x8" in msg

    def test_dynamic_input_loads_with_input_shapes(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("Relu", ["x"], ["y"])], [value("x", ("N", 3, 8))], [value("y", None)]
        )
        graph = load_onnx(save(tmp_path, model), input_shapes={"x": (2, 3, 8)})
        assert graph.inputs[0].shape == (2, 3, 8)
        assert graph.outputs[0].shape == (2, 3, 8)

    def test_input_without_shape(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("Relu", ["x"], ["y"])], [value("x", None)], [value("y", None)]
        )
        path = save(tmp_path, model)
        with pytest.raises(ModelError, match=r"--input-shape x=1") as info:
            load_onnx(path)
        assert str(path) in str(info.value)
        assert load_onnx(path, input_shapes={"x": [4, 4]}).outputs[0].shape == (4, 4)

    def test_input_shapes_names_unknown_input(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("Relu", ["x"], ["y"])], [value("x", ("N", 4))], [value("y", None)]
        )
        path = save(tmp_path, model)
        with pytest.raises(ModelError) as info:
            load_onnx(path, input_shapes={"images": (1, 4)})
        msg = str(info.value)
        assert str(path) in msg and "'images'" in msg and "'x'" in msg

    def test_input_shapes_rank_mismatch(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("Relu", ["x"], ["y"])], [value("x", ("N", 4))], [value("y", None)]
        )
        path = save(tmp_path, model)
        with pytest.raises(ModelError, match="rank") as info:
            load_onnx(path, input_shapes={"x": (1, 4, 4)})
        assert str(path) in str(info.value) and "x" in str(info.value)

    def test_shape_inference_failure_names_the_file(self, tmp_path: Path) -> None:
        model = make_model(
            [helper.make_node("MatMul", ["a", "b"], ["y"])],
            [value("a", (2, 3)), value("b", (4, 5))],
            [value("y", None)],
        )
        path = save(tmp_path, model)
        with pytest.raises(ModelError) as info:
            load_onnx(path)
        assert str(path) in str(info.value)


class TestParseInputShape:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("images=1x3x640x640", ("images", (1, 3, 640, 640))),
            ("x=7", ("x", (7,))),
            ("a=b=1X2", ("a=b", (1, 2))),
        ],
    )
    def test_valid(self, text: str, expected: tuple[str, tuple[int, ...]]) -> None:
        assert parse_input_shape(text) == expected

    @pytest.mark.parametrize(
        "text", ["", "x", "=1x2", "x=", "x=1xAx3", "x=0x3", "x=1x-3", "x=1x", "x=1.5x2"]
    )
    def test_bad_syntax(self, text: str) -> None:
        with pytest.raises(ModelError, match="NAME=") as info:
            parse_input_shape(text)
        assert repr(text) in str(info.value)


# ---------------------------------------------------------------- bytes
class TestDeployedBytes:
    @pytest.mark.parametrize(
        ("precision", "expected"),
        [
            ("int8", 4096),
            ("fp16", 8192),
            ("bf16", 8192),
            ("int4", 2048),
            ("fp32", 16384),
            (None, 16384),
        ],
    )
    def test_float_tensor(self, precision: str | None, expected: int) -> None:
        assert deployed_bytes(Tensor("w", (64, 64), "float32", True), precision) == expected

    @pytest.mark.parametrize("precision", ["int4", "int8", "fp16", "fp32", None])
    def test_int64_tensor_keeps_its_size(self, precision: str | None) -> None:
        assert deployed_bytes(Tensor("ids", (1, 128), "int64"), precision) == 1024

    def test_int4_rounds_up_to_whole_bytes(self) -> None:
        assert deployed_bytes(Tensor("w", (3,), "float32"), "int4") == 2
        assert deployed_bytes(Tensor("s", (), "float32"), "int4") == 1

    def test_float16_model_tensor(self) -> None:
        t = Tensor("h", (10,), "float16")
        assert [deployed_bytes(t, p) for p in (None, "int8", "fp32")] == [20, 10, 40]

    def test_empty_tensor(self) -> None:
        t = Tensor("e", (0, 4), "float32")
        assert t.elements == 0
        assert [deployed_bytes(t, p) for p in ("int4", "int8", "fp16", None)] == [0, 0, 0, 0]

    def test_op_byte_sums(self) -> None:
        op = single_op("Conv", {"x": (1, 8, 4, 4)}, [weight("w", (16, 8, 1, 1))])
        assert op.input_bytes("int8") == 8 * 16
        assert op.weight_bytes("int8") == 16 * 8
        assert op.output_bytes("fp16") == 16 * 16 * 2
        assert op.input_bytes() == 8 * 16 * 4


# ---------------------------------------------------------------- synthetic DAGs
class TestRandomDag:
    def test_empty(self) -> None:
        graph = random_dag(0, seed=3)
        assert len(graph) == 0
        assert graph.order == () and graph.outputs == ()

    def test_deterministic(self) -> None:
        a, b = random_dag(40, seed=7), random_dag(40, seed=7)
        assert a.order == b.order
        assert sorted(a.g.edges(data="tensors")) == sorted(b.g.edges(data="tensors"))

    @settings(max_examples=60, deadline=None)
    @given(
        n=st.integers(min_value=0, max_value=80), seed=st.integers(min_value=0, max_value=2**32 - 1)
    )
    def test_order_and_edges_are_consistent(self, n: int, seed: int) -> None:
        graph = random_dag(n, seed=seed)
        g = graph.g
        assert len(graph) == n
        assert nx.is_directed_acyclic_graph(g)
        pos = {name: i for i, name in enumerate(graph.order)}
        assert len(pos) == n and set(pos) == set(g.nodes)
        for u, v, tensors in g.edges(data="tensors"):
            assert pos[u] < pos[v]
            assert tensors
            assert set(tensors) <= {t.name for t in graph.op(u).outputs}
            assert set(tensors) <= {t.name for t in graph.op(v).inputs}
            assert all(graph.producer[t] == u for t in tensors)
        for op in graph.ops():
            assert all(d > 0 for t in op.outputs for d in t.shape)
        if n:
            assert nx.is_weakly_connected(g)


def _check_consistent(graph: Any, n: int) -> None:
    """Shared invariants of the synthetic generators: size, order, edges, outputs."""
    g = graph.g
    assert len(graph) == n
    assert nx.is_directed_acyclic_graph(g)
    pos = {name: i for i, name in enumerate(graph.order)}
    assert set(pos) == set(g.nodes)
    for u, v, tensors in g.edges(data="tensors"):
        assert pos[u] < pos[v]
        assert all(graph.producer[t] == u for t in tensors)
        assert set(tensors) <= {t.name for t in graph.op(v).inputs}
    consumed = {t for _, _, ts in g.edges(data="tensors") for t in ts}
    produced = {t.name for op in graph.ops() for t in op.outputs}
    # every produced tensor nobody reads is a graph output, and only those
    assert {t.name for t in graph.outputs} == produced - consumed


class TestLayeredDag:
    def test_empty(self) -> None:
        assert len(layered_dag(0)) == 0

    @settings(max_examples=25, deadline=None)
    @given(n=st.integers(min_value=1, max_value=300), seed=st.integers(min_value=0, max_value=2**32 - 1))
    def test_consistent_with_bounded_fan_in(self, n: int, seed: int) -> None:
        graph = layered_dag(n, seed=seed)
        _check_consistent(graph, n)
        assert all(graph.g.in_degree(v) <= 3 for v in graph.g)
        # ops without a producer upstream read the graph input (the first layer's branches)
        for op in graph.ops():
            assert graph.g.in_degree(op.name) > 0 or graph.inputs[0] in op.inputs

    def test_wide_and_deterministic(self) -> None:
        a, b = layered_dag(400, seed=5), layered_dag(400, seed=5)
        assert a.order == b.order
        # layers of 8: the longest chain is far shorter than the graph
        assert len(nx.dag_longest_path(a.g)) < 400 / 3
        assert max(d for _, d in a.g.out_degree()) >= 2


class TestTransformerDag:
    def test_empty(self) -> None:
        assert len(transformer_dag(0)) == 0

    @settings(max_examples=20, deadline=None)
    @given(n=st.integers(min_value=1, max_value=250), heads=st.sampled_from([1, 2, 4, 8]))
    def test_consistent(self, n: int, heads: int) -> None:
        _check_consistent(transformer_dag(n, heads=heads), n)

    def test_heads_fan_out_and_in(self) -> None:
        heads = 4
        graph = transformer_dag(11 + 6 * heads, heads=heads)  # exactly one block
        g = graph.g
        concat = next(n for n in graph.order if graph.op(n).op_type == "Concat")
        assert g.in_degree(concat) == heads
        q_proj = next(n for n in graph.order if graph.op(n).op_type == "MatMul")
        assert g.out_degree(q_proj) == heads  # one Slice per head
        assert len(graph.outputs) == 1
        assert graph.total_macs > 0
