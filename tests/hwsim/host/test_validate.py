"""``hwsim validate``: predicted against measured on this machine, records, calibration
round trip, and models onnxruntime cannot run. Models are tiny and built here."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from chips.schema import CpuUnit, chip_from_dict, load_chip
from cost_models.cpu import (
    DEPTHWISE_PLAIN_CHANNEL_NS,
    DEPTHWISE_PLAIN_ELEMENT_NS,
    GROUPED_CONV_ROW_NS,
    IM2COL_RUN_NS,
    NCHWC_ACTIVATION_ATTR,
    NCHWC_ACTIVATION_PASS_NS,
    NCHWC_ATTR,
    SGEMM_CONV_ATTR,
    SGEMM_PACK_NS,
    gemm_bias_ns,
    intra_op_threads,
    sections_ns,
)
from cost_models.table import estimate
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from hwsim.cli import main
from hwsim.host.calibration import apply, fit, timed_over_profiled, write_calibration
from hwsim.host.measure import Timing, attribute_nodes, load_with_random_weights, random_inputs
from hwsim.host.validate import (
    NodeResult,
    Validation,
    cpu_chip,
    folded_batch_norms,
    format_validation,
    gemm_biases,
    lag_note,
    layout_kernels,
    merge_rounds,
    nchwc_kernels,
    nchwc_reorders,
    nchwc_work,
    own_biases,
    predict_nodes,
    reordered_transposes,
    repredict,
    scaled_products,
    validate_model,
)
from tests.helpers import host_chip, mlp, write_chip


def _dw_transpose_net(path: Path, perm: tuple[int, ...]) -> Path:
    """A ConvNeXt-like start: a 7x7 depthwise conv over 48 channels, a Transpose by ``perm``,
    then a LayerNormalization over the last axis."""
    w = numpy_helper.from_array(np.ones((48, 1, 7, 7), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="dw", group=48, pads=[3, 3, 3, 3]),
             helper.make_node("Transpose", ["c"], ["t_out"], name="t", perm=list(perm)),
             helper.make_node("LayerNormalization", ["t_out", "g"], ["y"], name="ln", axis=-1)]  # fmt: skip
    shape = [1, 48, 16, 16]
    out = [shape[i] for i in perm]
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
                          [w, numpy_helper.from_array(np.ones(out[-1], np.float32), "g")])  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path

class TestMeasure:
    def test_weightless_file_gets_random_weights(self, tmp_path: Path) -> None:
        m = load_with_random_weights(mlp(tmp_path / "m.onnx"), seed=3)
        w = numpy_helper.to_array(next(t for t in m.graph.initializer if t.name == "w0"))
        assert w.shape == (256, 256) and w.std() > 0

    @settings(max_examples=5, deadline=None)
    @given(seed=st.integers(0, 2**31 - 1))
    def test_random_inputs_match_the_graph(self, seed: int) -> None:
        g = helper.make_graph([helper.make_node("Identity", ["ids"], ["y"])], "g",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 7])])  # fmt: skip
        feeds = random_inputs(helper.make_model(g), seed)
        assert feeds["ids"].shape == (2, 7) and feeds["ids"].dtype == np.int64
        assert 0 <= feeds["ids"].min() and feeds["ids"].max() < 100

    @settings(max_examples=5, deadline=None)
    @given(seed=st.integers(0, 2**31 - 1), elem=st.sampled_from([TensorProto.FLOAT, TensorProto.INT64]))
    def test_mask_inputs_are_ones_whatever_their_dtype(self, seed: int, elem: int) -> None:
        # a float mask of random values would put a Softmax on denormals (4-6 ns per element)
        g = helper.make_graph([helper.make_node("Identity", ["attention_mask"], ["y"])], "g",
                              [helper.make_tensor_value_info("attention_mask", elem, [1, 9])],
                              [helper.make_tensor_value_info("y", elem, [1, 9])])  # fmt: skip
        feeds = random_inputs(helper.make_model(g), seed)
        assert feeds["attention_mask"].shape == (1, 9) and (feeds["attention_mask"] == 1).all()

    def test_attribution_of_fused_and_inserted_kernels(self, tmp_path: Path) -> None:
        m = onnx.load(mlp(tmp_path / "m.onnx"), load_external_data=False)
        profiled = {"/l0/MatMul/MatMulAddFusion": "Gemm", "r1_nchwc": "Conv", "/l2/Relu": "Relu",
                    "reorder_token_3": "ReorderOutput", "fused /l1/MatMul/MatMulAddFusion": "FusedGemm",
                    "fused /l0/Add": "FusedGemm"}  # fmt: skip
        assert attribute_nodes(m, profiled) == {
            "/l0/MatMul/MatMulAddFusion": "/l0/MatMul",
            "fused /l1/MatMul/MatMulAddFusion": "/l1/MatMul",
            "r1_nchwc": "/l1/Relu",  # no Conv upstream: stays on the producer of the tensor
            "/l2/Relu": "/l2/Relu",
            "reorder_token_3": None,
            "fused /l0/Add": "/l0/Add",  # "fused <node>" of a node that exists: the prefix goes
        }


class TestLowQuantile:
    @settings(max_examples=30, deadline=None)
    @given(base=st.floats(1e3, 1e8), n=st.integers(8, 60), data=st.data())
    def test_bursts_of_other_load_do_not_move_it(self, base: float, n: int, data: st.DataObject) -> None:
        # other processes only add time; as long as a quarter of the runs are quiet the figure is the quiet time
        quiet = data.draw(st.integers(-(-(n - 1) // 4) + 1, n))
        bursts = data.draw(st.lists(st.floats(0.01 * base, 2 * base), min_size=n - quiet, max_size=n - quiet))
        samples = [base] * quiet + [base + b for b in bursts]
        order = data.draw(st.permutations(samples))
        t = Timing(tuple(order))
        assert t.low_ns == pytest.approx(base)
        assert t.low_ns <= t.median_ns


def _validation(model: str, total_ns: float, node_ns: list[float]) -> Validation:
    nodes = tuple(NodeResult(f"n{i}", "Relu", False, 100.0, ns, 50.0) for i, ns in enumerate(node_ns))
    return Validation(model, "host", 1, "all", Timing((total_ns,) * 4), nodes, 0.0, (), sum(node_ns),
                      total_ns, (total_ns,))  # fmt: skip


class TestMergeRounds:
    @settings(max_examples=20, deadline=None)
    @given(rounds=st.lists(st.tuples(st.floats(1e3, 1e6), st.lists(st.floats(1.0, 1e5), min_size=3, max_size=3)),
                           min_size=1, max_size=4))  # fmt: skip
    def test_best_round_per_model_and_per_node(self, rounds: list[tuple[float, list[float]]]) -> None:
        m = merge_rounds([_validation("m", t, ns) for t, ns in rounds])
        assert m.measured_ns == min(t for t, _ in rounds)
        assert m.rounds_ns == tuple(t for t, _ in rounds)
        assert [n.measured_ns for n in m.nodes] == [min(ns[i] for _, ns in rounds) for i in range(3)]
        assert len(m.measured.samples_ns) == 4 * len(rounds)
        assert m.error == pytest.approx(300.0 / m.measured_ns - 1)
        assert m.round_range == pytest.approx((max(m.rounds_ns) - min(m.rounds_ns)) / 2 / m.measured_ns)

    @settings(max_examples=30, deadline=None)
    @given(rounds=st.lists(st.tuples(st.floats(1e3, 1e6), st.booleans()), min_size=1, max_size=5))
    def test_rounds_whose_other_threads_lagged_count_only_alone(self, rounds: list[tuple[float, bool]]) -> None:
        m = merge_rounds([replace(_validation("m", t, [t / 2]), threads=2, second_core_lagged=(lag,)) for t, lag in rounds])
        kept = [t for t, lag in rounds if not lag] or [t for t, _ in rounds]
        assert m.measured_ns == min(kept) and m.nodes[0].measured_ns == min(kept) / 2
        assert m.lagged == all(lag for _, lag in rounds)
        assert m.rounds_ns == tuple(t for t, _ in rounds) and m.second_core_lagged == tuple(lag for _, lag in rounds)
        assert len(m.measured.samples_ns) == 4 * len(kept)

    def test_rounds_of_different_models(self) -> None:
        with pytest.raises(ValueError, match="different models"):
            merge_rounds([_validation("a", 1e3, [1.0]), _validation("b", 1e3, [1.0])])
        with pytest.raises(ValueError, match="no rounds"):
            merge_rounds([])


def conv_net(path: Path, cin: int, cout: int, tail: str) -> Path:
    """x -> Conv(cin->cout, 3x3) -> tail ('silu': Sigmoid+Mul, 'relu_reshape': Relu then Reshape) -> y."""
    w = numpy_helper.from_array(np.zeros((cout, cin, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1])]
    inits = [w]
    if tail == "silu":
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"], name="sig"), helper.make_node("Mul", ["c", "s"], ["y"], name="mul")]
        shape = [1, cout, 32, 32]
    elif tail.startswith("hardsigmoid_mul"):  # 'hardsigmoid_mul<alpha>': x * HardSigmoid(x), Mul's inputs swapped
        alpha = float(tail.removeprefix("hardsigmoid_mul"))
        nodes += [helper.make_node("HardSigmoid", ["c"], ["s"], name="sig", alpha=alpha, beta=0.5),
                  helper.make_node("Mul", ["s", "c"], ["y"], name="mul")]  # fmt: skip
        shape = [1, cout, 32, 32]
    elif tail == "hardswish":
        nodes.append(helper.make_node("HardSwish", ["c"], ["y"], name="mul"))
        shape = [1, cout, 32, 32]
    else:
        inits.append(numpy_helper.from_array(np.array([1, -1], np.int64), "shape"))
        nodes += [helper.make_node("Relu", ["c"], ["r"], name="relu"),
                  helper.make_node("Reshape", ["r", "shape"], ["y"], name="reshape")]  # fmt: skip
        shape = [1, cout * 32 * 32]
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _matmul_bias_net(path: Path, order: str) -> Path:
    """``x (1024 x 48) -> Sigmoid -> MatMul (48 -> 192) -> Add``: the Add's other input a bias
    (``product_first``: ``Add(product, bias)``; ``bias_first``: ``Add(bias, product)``) or, for
    ``residual``, another activation of the output's shape."""
    inits = [numpy_helper.from_array(np.ones((48, 192), np.float32), "w"), numpy_helper.from_array(np.ones(192, np.float32), "b")]
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"), helper.make_node("MatMul", ["s", "w"], ["m"], name="mm")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024, 48])]
    if order == "residual":
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1024, 192]))
    other = {"product_first": ["m", "b"], "bias_first": ["b", "m"], "residual": ["m", "r"]}[order]
    nodes.append(helper.make_node("Add", other, ["a"], name="add"))
    nodes.append(helper.make_node("Relu", ["a"], ["y"], name="relu"))
    g = helper.make_graph(nodes, "net", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024, 192])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _preact_net(path: Path) -> Path:
    """A pre-activation ResNet unit's start: ``c0 = Conv(x)``, ``c1 = Conv(c0)``, ``s = c1 + c0``
    (blocked: both convs write NCHWc), then ``bn_pre``
    (after the Add: no conv to fold into) -> Relu -> ``c2 = Conv``, then ``bn_post`` after ``c2``
    (folds into it) -> Relu -> y. 32 channels at 16x16."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32), n) for n in ("w0", "w1", "w2")]
    for n in ("scale", "bias", "mean"):
        inits.append(numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), n))
    inits.append(numpy_helper.from_array(np.ones(32, np.float32), "var"))
    bn = ["scale", "bias", "mean", "var"]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c0", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "c0"], ["s"], name="add"),
             helper.make_node("BatchNormalization", ["s", *bn], ["b1"], name="bn_pre"),
             helper.make_node("Relu", ["b1"], ["r1"], name="relu_pre"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c2", *bn], ["b2"], name="bn_post"),
             helper.make_node("Relu", ["b2"], ["y"], name="relu_post")]  # fmt: skip
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 16, 16])], inits)  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


class TestPredictionStructure:
    def test_a_conv_transposes_col2im_stays_on_one_thread(self, tmp_path: Path) -> None:
        # DCGAN's 4x4 stride 2 upsampling, 64 -> 32 channels over 16 x 16: its GEMM splits, its col2im does not
        path = tmp_path / "ct.onnx"
        w = numpy_helper.from_array(np.ones((64, 32, 4, 4), np.float32), "w")
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[2, 2], pads=[1, 1, 1, 1])
        g = helper.make_graph([node], "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 32, 32])], [w])  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        one, two = (cpu_chip(chip_from_dict(host_chip(col2im_strided_ns=0.35)), t) for t in (1, 2))
        t1, t2 = (predict_nodes(graph, c, t, set())["ct"].predicted_ns for c, t in ((one, 1), (two, 2)))
        unit = two.units[0]
        assert isinstance(unit, CpuUnit)
        col2im = 32 * 16 * 16 * 16 * 0.35  # columns: output channels x taps x input pixels
        cost = estimate(graph.op("ct"), two, "cpu", "model")
        assert cost is not None and cost.compute_ns > cost.memory_ns
        used = intra_op_threads(graph.op("ct"), 2)
        assert used == 2
        overhead, sections = cost.overhead_ns, sections_ns(graph.op("ct"), unit, used)
        assert t2 - overhead - sections == pytest.approx((cost.compute_ns - col2im) / 2 + col2im)
        assert t1 - overhead == pytest.approx(cost.compute_ns)

    def test_silu_runs_as_one_quick_gelu_kernel(self, tmp_path: Path) -> None:
        graph = load_onnx(conv_net(tmp_path / "n.onnx", 16, 32, "silu"))
        chip = cpu_chip(chip_from_dict(host_chip()), 1)
        apart = predict_nodes(graph, chip, 1, set())
        quick = predict_nodes(graph, chip, 1, {"sig"}, {"conv": "Conv", "mul": "QuickGelu"})
        assert quick["mul"].op_type == "QuickGelu" and quick["sig"].predicted_ns == 0.0
        assert quick["conv"] == apart["conv"]
        # one kernel reads the conv output once and dispatches once
        assert quick["mul"].predicted_ns < apart["mul"].predicted_ns + apart["sig"].predicted_ns

    def test_fused_hardsigmoid_mul_costs_as_the_hardswish_it_runs_as(self, tmp_path: Path) -> None:
        # onnxruntime's level-all optimizer folds a conv's x * HardSigmoid(x) into Conv(activation=HardSwish)
        chip = cpu_chip(chip_from_dict(host_chip()), 1)
        whole = predict_nodes(load_onnx(conv_net(tmp_path / "w.onnx", 16, 32, "hardswish")), chip, 1, {"mul"})
        pair = predict_nodes(load_onnx(conv_net(tmp_path / "p.onnx", 16, 32, f"hardsigmoid_mul{1 / 6}")),
                             chip, 1, {"sig", "mul"})  # fmt: skip
        assert pair["sig"].predicted_ns == 0.0 and whole["mul"].predicted_ns > 0.0
        assert pair["mul"].predicted_ns == pytest.approx(whole["mul"].predicted_ns)
        # other constants are no HardSwish: each node costs its own compute
        other = predict_nodes(load_onnx(conv_net(tmp_path / "o.onnx", 16, 32, "hardsigmoid_mul0.2")), chip, 1,
                              {"sig", "mul"})  # fmt: skip
        assert other["sig"].predicted_ns > 0.0
        assert other["mul"].predicted_ns != pytest.approx(whole["mul"].predicted_ns)

    def test_a_batch_1_mlp_splits_super_linearly_over_two_cores(self, tmp_path: Path) -> None:
        # 784-512-512-10: 2.7 MB of weights overflow one core's L2 (1.75 MiB), their halves fit two
        nodes, inits, x = [], [], "x"
        for i, (k, n) in enumerate(((784, 512), (512, 512), (512, 10))):
            inits.append(numpy_helper.from_array(np.zeros((n, k), np.float32), f"w{i}"))
            nodes.append(helper.make_node("Gemm", [x, f"w{i}"], [f"y{i}"], name=f"g{i}", transB=1))
            x = f"y{i}"
        g = helper.make_graph(nodes, "mlp1", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 784])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 10])], inits)  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path / "m.onnx")
        graph = load_onnx(tmp_path / "m.onnx")
        chip = chip_from_dict(host_chip(l2_kib=1792, gemv_gbps=110.0, gemv_far_gbps=28.0, weight_stream_gbps=12.0,
                                        parallel_section_ns=900.0))  # fmt: skip
        one = predict_nodes(graph, cpu_chip(chip, 1), 1, set())
        two = predict_nodes(graph, cpu_chip(chip, 2), 2, set())
        overhead = 2000.0  # host_chip's per-op overhead, not split
        assert (one["g0"].predicted_ns - overhead) / (two["g0"].predicted_ns - overhead - 900.0) > 2.5
        assert two["g2"].predicted_ns == one["g2"].predicted_ns  # 10 outputs: one thread, no section

    def test_fused_activation_costs_its_epilogue_compute(self, tmp_path: Path) -> None:
        graph = load_onnx(conv_net(tmp_path / "n.onnx", 16, 32, "relu_reshape"))
        chip = cpu_chip(chip_from_dict(host_chip()), 1)
        pred = predict_nodes(graph, chip, 1, {"relu"})
        relu = estimate(graph.op("relu"), chip, "cpu", "model")
        assert relu is not None and relu.bound == "memory"
        assert pred["relu"].predicted_ns == pytest.approx(relu.compute_ns)
        assert pred["relu"].predicted_ns < max(relu.compute_ns, relu.memory_ns)

    @pytest.mark.parametrize(
        ("cin", "cout", "block", "expected"),
        [
            (3, 32, 16, ["ReorderOutput:r"]),  # first conv reads plain x; Reshape needs plain r
            (16, 32, 16, ["ReorderInput:x", "ReorderOutput:r"]),
            (16, 30, 16, ["ReorderInput:x", "ReorderOutput:r"]),  # 30 filters, padded to 32
            (18, 32, 16, []),  # 18 input channels: a plain conv
            (8, 32, 16, ["ReorderOutput:r"]),  # under a block of input channels: read plain
            (16, 32, 0, []),  # no NCHWc on this CPU
        ],
    )
    def test_nchwc_reorders(self, tmp_path: Path, cin: int, cout: int, block: int, expected: list[str]) -> None:
        graph = load_onnx(conv_net(tmp_path / "n.onnx", cin, cout, "relu_reshape"))
        reorders = nchwc_reorders(graph, block)
        assert [r.name for r in reorders] == expected
        chip = cpu_chip(chip_from_dict(host_chip()), 1)
        pred = predict_nodes(graph, chip, 1, {"relu"}, inserted=reorders)
        for r in reorders:  # a copy of the tensor plus a dispatch
            assert pred[r.name].predicted_ns > chip.units[0].op_overhead_ns


    @pytest.mark.parametrize(("cin", "mid", "cout"), [(32, 9, 32), (32, 6, 32), (32, 24, 32), (32, 18, 32), (8, 32, 9), (3, 1, 16)])
    def test_reorders_are_the_ones_onnxruntime_inserts(self, tmp_path: Path, cin: int, mid: int, cout: int) -> None:
        # two 3x3 convs, cin -> mid -> cout: the reorders onnxruntime's own optimized model holds
        import onnxruntime as ort

        from hwsim.host.measure import nchwc_block

        block = nchwc_block()
        if block == 0:
            pytest.skip("onnxruntime runs no NCHWc kernels on this CPU")
        inits = [numpy_helper.from_array(np.zeros(s, np.float32), n) for n, s in (("w0", (mid, cin, 3, 3)), ("w1", (cout, mid, 3, 3)))]
        nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", pads=[1] * 4),
                 helper.make_node("Conv", ["a", "w1"], ["y"], name="c1", pads=[1] * 4)]  # fmt: skip
        g = helper.make_graph(nodes, "n", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, 16, 16])], inits)  # fmt: skip
        path = tmp_path / "n.onnx"
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        so = ort.SessionOptions()
        so.optimized_model_filepath = str(tmp_path / "opt.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        theirs = sorted(n.op_type for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node if n.op_type.startswith("Reorder"))
        assert sorted(r.op_type for r in nchwc_reorders(load_onnx(path), block)) == theirs

    @pytest.mark.parametrize(("perm", "block", "fused", "free"),
                             [((0, 2, 3, 1), 16, True, True), ((0, 3, 1, 2), 16, True, False),
                              ((0, 2, 3, 1), 0, True, False), ((0, 2, 3, 1), 16, False, False)])  # fmt: skip
    def test_transpose_to_nhwc_rides_on_the_reorder(
        self, tmp_path: Path, perm: tuple[int, ...], block: int, fused: bool, free: bool
    ) -> None:
        graph = load_onnx(_dw_transpose_net(tmp_path / "cx.onnx", perm))
        reorders = nchwc_reorders(graph, block)
        assert reordered_transposes(graph, reorders, {"t"} if fused else set()) == ({"t"} if free else set())

    def test_onnxruntime_folds_the_nhwc_transpose_into_its_reorder(self, tmp_path: Path) -> None:
        # the kernel this rule stands for: onnxruntime profiles no Transpose, and validate prices it at 0
        path = _dw_transpose_net(tmp_path / "cx.onnx", (0, 2, 3, 1))
        v = validate_model(chip_from_dict(host_chip(efficiency={"Transpose": 0.1})), path, runs=10, min_total_s=0.0)
        if v.nchwc_block == 0:
            pytest.skip("onnxruntime runs no NCHWc kernels on this CPU")
        nodes = {n.name: n for n in v.nodes}
        assert nodes["t"].fused and nodes["t"].predicted_ns == 0.0
        assert nodes["ln"].predicted_ns > 0.0  # only the Transpose rides on the reorder

    @pytest.mark.parametrize(
        ("attrs", "blocked", "kernel"),
        [
            ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, True, "Resize"),
            ({"mode": "nearest"}, False, "ResizeNearest"),  # half_pixel, round_prefer_floor: reordered out and back
            ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}, False, "ResizeNearest"),
            ({"mode": "linear"}, True, "ResizeLinearNchwc"),
            ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, True, "ResizeLinearNchwc"),
        ],
    )
    def test_resize_runs_blocked_by_mode(
        self, tmp_path: Path, attrs: dict[str, str], blocked: bool, kernel: str
    ) -> None:
        path = tmp_path / "r.onnx"
        w = numpy_helper.from_array(np.ones((32, 16, 3, 3), np.float32), "w")
        w2 = numpy_helper.from_array(np.ones((16, 32, 1, 1), np.float32), "w2")
        sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                 helper.make_node("Resize", ["c", "", "sc"], ["r"], name="resize", **attrs),
                 helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2")]  # fmt: skip
        g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 64, 64])], [w, w2, sc])  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        names = [r.name for r in nchwc_reorders(graph, 16)]
        # a Resize kept blocked needs no reorders around it; one that is not goes out and back in
        assert names == (["ReorderInput:x", "ReorderOutput:y"] if blocked else
                         ["ReorderInput:x", "ReorderOutput:c", "ReorderInput:r", "ReorderOutput:y"])  # fmt: skip
        layout = nchwc_kernels(graph, 16)
        assert ("resize" in layout) == blocked and nchwc_kernels(graph, 0) == {}
        effs = {"Resize": 0.2, "ResizeNearest": 0.05, "ResizeLinear": 0.02, "ResizeLinearNchwc": 0.07}
        chip = cpu_chip(chip_from_dict(host_chip(efficiency=effs)), 1)
        pred = predict_nodes(graph, chip, 1, set(), layout_kernels=layout)
        assert pred["resize"].op_type == kernel
        plain = predict_nodes(graph, chip, 1, set())  # without the layout: the plain class
        assert plain["resize"].op_type == kernel.removesuffix("Nchwc")
        if kernel == "ResizeLinearNchwc":  # the blocked linear kernel is the faster one (0.37 against 1.35 ns)
            assert pred["resize"].predicted_ns < plain["resize"].predicted_ns

    @pytest.mark.parametrize(("act", "fused", "mark"),
                             [("Clip", True, "Clip"), ("HardSwish", True, "HardSwish"), ("Relu", True, None), ("Clip", False, None)])  # fmt: skip
    def test_depthwise_runs_blocked_with_its_activation_pass(
        self, tmp_path: Path, act: str, fused: bool, mark: str | None
    ) -> None:
        path = tmp_path / "dw.onnx"
        inits = [numpy_helper.from_array(np.ones((32, 1, 3, 3), np.float32), "w"),
                 numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]  # fmt: skip
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="dw", group=32, pads=[1, 1, 1, 1]),
                 helper.make_node(act, ["c", "lo", "hi"] if act == "Clip" else ["c"], ["y"], name="act")]  # fmt: skip
        g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 16, 16])], inits)  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        dw = nchwc_kernels(graph, 16, {"act"} if fused else set())["dw"]
        assert dw.attrs[NCHWC_ATTR] == 16 and dw.attrs.get(NCHWC_ACTIVATION_ATTR) == mark
        assert "dw" not in nchwc_kernels(graph, 0)

    @pytest.mark.parametrize(("act", "fused", "mark"), [("Clip", True, "Clip"), ("Relu", True, None), ("Clip", False, None)])
    def test_dense_blocked_conv_pays_the_activation_pass(self, tmp_path: Path, act: str, fused: bool, mark: str | None) -> None:
        # MobileNetV2's expansion convs: 1x1, 32 -> 192 channels (whole blocks: nothing padded), ReLU6 as a
        # Clip that MLAS applies in a pass
        path = tmp_path / "pw.onnx"
        inits = [numpy_helper.from_array(np.ones((192, 32, 1, 1), np.float32), "w"),
                 numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]  # fmt: skip
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="pw"),
                 helper.make_node(act, ["c", "lo", "hi"] if act == "Clip" else ["c"], ["y"], name="act")]  # fmt: skip
        g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 192, 28, 28])], inits)  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        done = {"act"} if fused else set()
        layout = nchwc_kernels(graph, 16, done)
        assert (layout["pw"].attrs.get(NCHWC_ACTIVATION_ATTR) if "pw" in layout else None) == mark
        assert "pw" not in nchwc_kernels(graph, 0, done)
        chip = cpu_chip(chip_from_dict(host_chip(efficiency={"Conv": 1.0})), 1)
        blocked = predict_nodes(graph, chip, 1, done, layout_kernels=layout)
        plain = predict_nodes(graph, chip, 1, done)
        marked, alone = blocked["pw"].predicted_ns, plain["pw"].predicted_ns
        extra = 192 * 28 * 28 * NCHWC_ACTIVATION_PASS_NS if mark else 0.0
        assert marked == pytest.approx(alone + extra)
        # the pass is the activation's whole work: the fused node costs nothing of its own there
        # (MobileNetV3's HardSwishes were priced twice), and its epilogue compute elsewhere; a fused
        # Relu the blocked kernel applies in its stores costs nothing either
        if mark or (act == "Relu" and fused):
            assert blocked["act"].predicted_ns == 0.0 < plain["act"].predicted_ns
        else:
            assert blocked["act"].predicted_ns == plain["act"].predicted_ns

    @pytest.mark.parametrize(("order", "fused", "is_bias"), [
        ("product_first", True, True), ("bias_first", True, True), ("product_first", False, False),
        ("residual", True, False)])  # fmt: skip
    def test_a_bias_folded_into_a_matmul_is_priced_in_its_kernel(self, tmp_path: Path, order: str, fused: bool,
                                                                  is_bias: bool) -> None:  # fmt: skip
        # onnxruntime's MatMulAddFusion runs MatMul + Add(bias) as one Gemm that fills its output with the
        # bias first (gemm_bias_ns); a residual Add of two activations is no bias
        graph = load_onnx(_matmul_bias_net(tmp_path / "mb.onnx", order))
        done = {"add"} if fused else set()
        assert gemm_biases(graph, done) == ({"add": "mm"} if is_bias else {})
        chip = cpu_chip(chip_from_dict(host_chip(l2_kib=1024, l3_kib=16384)), 1)
        with_rule = predict_nodes(graph, chip, 1, done)
        if not is_bias:
            return
        bare = predict_nodes(graph, chip, 1, set())  # the Add its own kernel: mm alone
        bias_ns = gemm_bias_ns(1024 * 192 * 4, chip.units[0], chip.dram.bandwidth_gbps, weight_bytes=48 * 192 * 4)
        assert with_rule["add"].predicted_ns == 0.0
        assert with_rule["mm"].predicted_ns == pytest.approx(bare["mm"].predicted_ns + bias_ns)
        assert with_rule["mm"].stall_ns == pytest.approx(bare["mm"].stall_ns + bias_ns)  # calibration takes it off

    @pytest.mark.parametrize(("rows", "pays"), [(256, True), (1, False)])
    def test_a_gemms_own_bias_pays_the_same_passes(self, tmp_path: Path, rows: int, pays: bool) -> None:
        # onnxruntime's Gemm broadcasts C into Y before MLAS adds the product: a folded bias's passes;
        # beta 0 leaves C out, and a one-row Gemm's are in its probed call
        def gemm(beta: float) -> ModelGraph:
            w = numpy_helper.from_array(np.ones((64, 48), np.float32), "w")
            c = numpy_helper.from_array(np.ones((64,), np.float32), "c")
            node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="g", transB=1, beta=beta)
            g = helper.make_graph([node], "gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 48])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 64])], [w, c])  # fmt: skip
            path = tmp_path / f"g{beta}.onnx"
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
            return load_onnx(path)

        with_c, without = gemm(1.0), gemm(0.0)
        assert own_biases(with_c, set()) == (["g"] if pays else []) and own_biases(without, set()) == []
        chip = cpu_chip(chip_from_dict(host_chip(l2_kib=1024, l3_kib=16384)), 1)
        got, bare = (predict_nodes(g, chip, 1, set())["g"] for g in (with_c, without))
        bias_ns = gemm_bias_ns(rows * 64 * 4, chip.units[0], chip.dram.bandwidth_gbps, weight_bytes=64 * 48 * 4 + 64 * 4)
        assert got.predicted_ns - bare.predicted_ns == pytest.approx(bias_ns if pays else 0.0, abs=1e-6)
        assert got.stall_ns - bare.stall_ns == pytest.approx(bias_ns if pays else 0.0, abs=1e-6)  # calibration takes it off

    def test_onnxruntime_runs_a_matmul_and_its_bias_as_one_gemm(self, tmp_path: Path) -> None:
        from hwsim.host.measure import profile_nodes

        model = onnx.load(_matmul_bias_net(tmp_path / "mb.onnx", "bias_first"))
        profiled = profile_nodes(model, random_inputs(model), runs=2)
        assert sorted(kind for kind, _ in profiled.values()) == ["FusedGemm", "Sigmoid"]  # the Relu in it too
        ran = attribute_nodes(model, {name: kind for name, (kind, _) in profiled.items()})
        assert sorted(n for n in ran.values() if n is not None) == ["mm", "sig"]  # the kernel is the MatMul's

    def test_a_batch_norm_after_an_add_runs_as_a_blocked_depthwise_conv_and_one_after_a_conv_folds(self, tmp_path: Path) -> None:
        from hwsim.host.measure import nchwc_block, profile_nodes

        path = _preact_net(tmp_path / "pre.onnx")
        block = nchwc_block()
        if block == 0:
            pytest.skip("onnxruntime runs no NCHWc kernels on this CPU")
        model = onnx.load(path)
        profiled = profile_nodes(model, random_inputs(model), runs=2)
        ran = attribute_nodes(model, {name: kind for name, (kind, _) in profiled.items()})
        assert {n: profiled[k][0] for k, n in ran.items() if n in ("bn_pre", "conv1", "conv2")} == {
            "bn_pre": "Conv", "conv1": "Conv", "conv2": "Conv"}  # the BN's own kernel, a 1x1 depthwise conv
        assert not {"bn_post", "relu_pre", "relu_post"} & set(ran.values())  # folded, fused
        graph = load_onnx(path)
        fused = {"bn_post", "relu_pre", "relu_post"}
        layout = layout_kernels(graph, block, fused)
        assert layout["bn_pre"].attrs[NCHWC_ATTR] == block and layout["bn_pre"].weights[0].shape == (32, 1, 1, 1)
        assert folded_batch_norms(graph, fused) == {"bn_post"}
        # slow caches: a Relu priced as a pass of its own would cost far more than its compute
        chip = cpu_chip(chip_from_dict(host_chip(l1_bandwidth_gbps=1, l2_bandwidth_gbps=1, l3_bandwidth_gbps=1)), 1)
        pred = predict_nodes(graph, chip, 1, fused, absorbed=folded_batch_norms(graph, fused), layout_kernels=layout)
        assert pred["bn_pre"].op_type == "DepthwiseConv" and pred["bn_post"].predicted_ns == 0.0
        # the Relu after it is in the conv's stores, like the one after conv2: nothing of its own
        assert pred["relu_pre"].predicted_ns == pytest.approx(pred["relu_post"].predicted_ns)
        assert pred["relu_pre"].predicted_ns < predict_nodes(graph, chip, 1, {"relu_pre"})["relu_pre"].predicted_ns / 10

    @pytest.mark.parametrize("shared", [False, True])
    def test_hardswish_fused_into_a_blocked_conv_stays_blocked(self, tmp_path: Path, shared: bool) -> None:
        # onnxruntime 1.32's optimized MobileNetV3: Conv(activation=HardSwish) on NCHWc, no reorders around it;
        # a conv output another node also reads is not fused, and the HardSwish alone runs plain
        path = tmp_path / "hs.onnx"
        inits = [numpy_helper.from_array(np.ones((32, 16, 3, 3), np.float32), "w"),
                 numpy_helper.from_array(np.ones((16, 32, 1, 1), np.float32), "w2")]  # fmt: skip
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                 helper.make_node("HardSwish", ["c"], ["h"], name="hs"),
                 helper.make_node("Conv", ["h", "w2"], ["y"], name="conv2")]  # fmt: skip
        outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])]
        if shared:
            nodes.append(helper.make_node("Relu", ["c"], ["z"], name="relu"))
            outs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 32, 16, 16]))
        g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
                              outs, inits)  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        names = [r.name for r in nchwc_reorders(load_onnx(path), 16)]
        assert names == (["ReorderInput:x", "ReorderOutput:c", "ReorderInput:h", "ReorderOutput:y", "ReorderOutput:z"]
                         if shared else ["ReorderInput:x", "ReorderOutput:y"])  # fmt: skip

    @pytest.mark.parametrize(("groups", "block", "plain"), [(32, 16, True), (32, 0, True), (8, 16, False), (8, 0, True)])
    def test_grouped_convs_run_per_group_unless_blocked(self, tmp_path: Path, groups: int, block: int, plain: bool) -> None:
        # onnxruntime 1.32: 128 channels in 8 groups (16 a group) run on NCHWc, in 32 groups a plain Conv per group
        path = tmp_path / "gc.onnx"
        inits = [numpy_helper.from_array(np.ones((128, 128 // groups, 3, 3), np.float32), "w")]
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="gc", group=groups, pads=[1, 1, 1, 1])
        g = helper.make_graph([node], "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 14, 14])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 14, 14])], inits)  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        layout = layout_kernels(graph, block)
        assert (SGEMM_CONV_ATTR in layout.get("gc", graph.op("gc")).attrs) == plain
        reorders = [r.name for r in nchwc_reorders(graph, block)]
        assert reorders == ([] if plain else ["ReorderInput:x", "ReorderOutput:y"])
        chip = cpu_chip(chip_from_dict(host_chip(efficiency={"Conv": 1.0})), 1)
        marked = predict_nodes(graph, chip, 1, set(), layout_kernels=layout)["gc"]
        alone = predict_nodes(graph, chip, 1, set())["gc"]
        assert (marked.predicted_ns > alone.predicted_ns + 128 * 9 * GROUPED_CONV_ROW_NS) == plain

    @pytest.mark.parametrize(("channels", "spatial", "block", "plain"),
                             [(18, 2, 16, True), (32, 2, 16, False), (32, 2, 0, True), (144, 1, 16, True), (144, 1, 0, True)])
    def test_depthwise_convs_off_nchwc_run_per_channel(self, tmp_path: Path, channels: int, spatial: int, block: int,
                                                       plain: bool) -> None:  # fmt: skip
        # onnxruntime 1.32 blocks a 2-D depthwise conv only of channels % 4 == 0; a 1-D one never. Off NCHWc each
        # channel is one im2col and one one-row product (AMD EPYC: 18 channels 3x3 at 112x112 319 us, NCHWc rate 44)
        path = tmp_path / "dw.onnx"
        k, side = (3, 14) if spatial == 2 else (31, 128)
        shape, kernel = ([1, channels] + [side] * spatial), (channels, 1) + (k,) * spatial
        inits = [numpy_helper.from_array(np.ones(kernel, np.float32), "w")]
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=channels, pads=[k // 2] * 2 * spatial)
        g = helper.make_graph([node], "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        layout = layout_kernels(graph, block)
        assert (SGEMM_CONV_ATTR in layout.get("dw", graph.op("dw")).attrs) == plain
        assert [r.name for r in nchwc_reorders(graph, block)] == ([] if plain else ["ReorderInput:x", "ReorderOutput:y"])
        if plain:  # beside its FMAs: per channel, per element of the expanded input, per run the im2col copies
            chip = cpu_chip(chip_from_dict(host_chip(efficiency={"Conv": 1.0})), 1)
            extra = predict_nodes(graph, chip, 1, set(), layout_kernels=layout)["dw"].predicted_ns - predict_nodes(graph, chip, 1, set())["dw"].predicted_ns
            outputs, taps = side**spatial, k**spatial
            runs = channels * taps * (side if spatial == 2 else 1)
            law = channels * DEPTHWISE_PLAIN_CHANNEL_NS + channels * taps * outputs * DEPTHWISE_PLAIN_ELEMENT_NS + runs * IM2COL_RUN_NS
            assert extra == pytest.approx(law, rel=1e-6)

    @pytest.mark.parametrize(("scale", "where", "free"), [("Div", "after", True), ("Mul", "before", True), ("Div", "before", True),
                                                           ("Sub", "after", False), ("Mul", "big", False)])  # fmt: skip
    def test_a_scale_fused_into_a_matmul_costs_nothing(self, tmp_path: Path, scale: str, where: str, free: bool) -> None:
        # onnxruntime's MatMulScaleFusion: attention's Q K^T / sqrt(d) runs as one FusedMatMul with alpha
        path = tmp_path / "mm.onnx"
        c = numpy_helper.from_array(np.full((16,) if where == "big" else (), 8.0, np.float32), "c")
        nodes = ([helper.make_node("MatMul", ["x", "k"], ["p"], name="mm"), helper.make_node(scale, ["p", "c"], ["y"], name="s")]
                 if where != "before" else
                 [helper.make_node(scale, ["x", "c"], ["q"], name="s"), helper.make_node("MatMul", ["q", "k"], ["y"], name="mm")])  # fmt: skip
        g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16, 4]),
                                             helper.make_tensor_value_info("k", TensorProto.FLOAT, [4, 4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [c])  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        assert scaled_products(graph, {"s"}) == ({"s"} if free else set())
        assert scaled_products(graph, set()) == set()  # only a scale onnxruntime did fuse

    @pytest.mark.parametrize("spatial", [(100,), (8, 10, 10)])
    def test_1d_and_3d_convs_run_on_the_sgemm_kernel(self, tmp_path: Path, spatial: tuple[int, ...]) -> None:
        # the NCHWc transformer takes 2-D convs only: a 1-D conv is im2col, a 3-D one vol2col, then SGEMM
        path = tmp_path / "conv.onnx"
        taps = 3 ** len(spatial)
        w = numpy_helper.from_array(np.ones((16, 8, *([3] * len(spatial))), np.float32), "w")
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="c1", pads=[1] * (2 * len(spatial)))
        g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, *spatial])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, *spatial])], [w])  # fmt: skip
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        graph = load_onnx(path)
        for block in (0, 16):  # whatever the optimization level
            assert SGEMM_CONV_ATTR in layout_kernels(graph, block)["c1"].attrs
        chip = cpu_chip(chip_from_dict(host_chip(efficiency={"Conv": 1.0})), 1)
        marked = predict_nodes(graph, chip, 1, set(), layout_kernels=layout_kernels(graph, 16))["c1"]
        plain = predict_nodes(graph, chip, 1, set())["c1"]
        outputs, runs = math.prod(spatial), math.prod(spatial[:-1])  # a run per output row and tap
        want = 8 * taps * (outputs * SGEMM_PACK_NS + runs * IM2COL_RUN_NS)
        assert marked.predicted_ns - plain.predicted_ns == pytest.approx(want, rel=1e-6)

    def test_a_2d_conv_is_not_marked_for_the_sgemm_kernel_but_1d_and_3d_are(self, tmp_path: Path) -> None:
        graph = load_onnx(conv_net(tmp_path / "n.onnx", 24, 24, "relu_reshape"))
        conv = next(op.name for op in graph.ops() if op.op_type == "Conv")
        assert conv not in layout_kernels(graph, 0) or SGEMM_CONV_ATTR not in layout_kernels(graph, 0)[conv].attrs

    @pytest.mark.parametrize(
        ("cin", "cout", "block", "factor"),
        [
            # a plain dense conv's padded channels are in its kernel (nchwc_kernels), not the factor
            (24, 24, 16, 9 / 8),  # both sides padded to two blocks; two output blocks
            (3, 36, 16, None),  # the first conv reads plain x: only its outputs are padded, to three blocks
            (8, 32, 16, 9 / 8),  # a narrow input is read unpadded; 32 outputs fill two blocks
            (32, 16, 16, 1.5),  # one output block: each input load feeds one filter block
            (32, 48, 16, None),  # three whole blocks: full rate
            (24, 24, 8, None),  # AVX2's 8-channel blocks hold 24 channels exactly, in three blocks
            (24, 24, 0, None),  # no NCHWc on this CPU
        ],
    )
    def test_nchwc_work(self, tmp_path: Path, cin: int, cout: int, block: int, factor: float | None) -> None:
        graph = load_onnx(conv_net(tmp_path / "n.onnx", cin, cout, "relu_reshape"))
        padded = nchwc_work(graph, block)
        conv = next(op.name for op in graph.ops() if op.op_type == "Conv")
        assert padded.get(conv) == (pytest.approx(factor) if factor else None)
        if block:  # the kernel it runs as computes whole blocks of output, and of a blocked input
            kernel = nchwc_kernels(graph, block)[conv]
            assert kernel.outputs[0].shape[1] == -(-cout // block) * block
            assert kernel.weights[0].shape[1] == (-(-cin // block) * block if cin >= block else cin)
            assert kernel.macs * cout * cin == graph.op(conv).macs * kernel.outputs[0].shape[1] * kernel.weights[0].shape[1]
        chip = cpu_chip(chip_from_dict(host_chip()), 1)
        plain = predict_nodes(graph, chip, 1, {"relu"})
        pred = predict_nodes(graph, chip, 1, {"relu"}, padded=padded)
        cost = estimate(graph.op(conv), chip, "cpu", "model")
        assert cost is not None
        overhead = cost.overhead_ns  # the dispatch is not padded, the kernel's work is
        assert pred[conv].predicted_ns - overhead == pytest.approx((plain[conv].predicted_ns - overhead) * (factor or 1))
        assert pred[conv].roof_ns == pytest.approx(plain[conv].roof_ns * (factor or 1))

    @pytest.mark.parametrize(("one_block", "factor"), [(None, 1.5), (2 / 3, 1.5), (0.88, 1 / 0.88), (1.0, None)])
    def test_nchwc_work_with_the_hosts_one_block_rate(
        self, tmp_path: Path, one_block: float | None, factor: float | None
    ) -> None:
        # 32 -> 16 channels: one output block, at the measured rate of one block (2/3 without it)
        graph = load_onnx(conv_net(tmp_path / "n.onnx", 32, 16, "relu_reshape"))
        conv = next(op.name for op in graph.ops() if op.op_type == "Conv")
        assert nchwc_work(graph, 16, one_block).get(conv) == (pytest.approx(factor) if factor else None)

    @pytest.mark.parametrize(("one_block", "two_block", "factor"),
                             [(None, None, 1 / (8 / 9)), (0.63, None, 1 / (2 * 0.63 * 2 / 3)), (0.63, 0.9, 1 / 0.9), (0.63, 1.02, None)])  # fmt: skip
    def test_nchwc_work_with_the_hosts_two_block_rate(
        self, tmp_path: Path, one_block: float | None, two_block: float | None, factor: float | None
    ) -> None:
        # 32 -> 32 channels: two output blocks, at the measured rate of two where it is known (not
        # the law from one block: a Xeon ran one block at 0.63 and two at the full rate)
        graph = load_onnx(conv_net(tmp_path / "n.onnx", 32, 32, "relu_reshape"))
        conv = next(op.name for op in graph.ops() if op.op_type == "Conv")
        assert nchwc_work(graph, 16, one_block, two_block).get(conv) == (pytest.approx(factor) if factor else None)


class TestCommand:
    def test_validate_prints_and_records(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        chip, model, results = write_chip(tmp_path / "host.yaml"), mlp(tmp_path / "m.onnx"), tmp_path / "r" / "v.jsonl"
        assert main(["validate", str(chip), str(model), "--runs", "10", "--rounds", "2", "--results", str(results)]) == 0
        out = capsys.readouterr().out
        assert "\nm " in out and "MatMul" in out and "1 thread" in out
        (line,) = results.read_text().splitlines()
        rec = json.loads(line)
        assert rec["model"]["name"] == "m" and rec["chip"]["name"] == "host"
        assert rec["measured"]["median_ns"] > 0 and len(rec["measured"]["samples_ns"]) >= 20
        assert len(rec["measured"]["rounds_ns"]) == 2 and rec["measured"]["low_ns"] == min(rec["measured"]["rounds_ns"])
        assert rec["predicted_ns"] > 0 and {n[1] for n in rec["nodes"]} == {"MatMul", "Add", "Relu"}

    def test_a_model_onnxruntime_refuses_is_one_line_naming_the_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # hwsim reads it (it costs a DequantizeLinear by its dtypes), onnxruntime does not: a
        # per-axis scale of 3 values for an axis of 4
        x = numpy_helper.from_array(np.zeros((4, 2), np.int8), "x")
        scale = numpy_helper.from_array(np.ones(3, np.float32), "scale")
        zero = numpy_helper.from_array(np.zeros(3, np.int8), "zero")
        node = helper.make_node("DequantizeLinear", ["x", "scale", "zero"], ["d"], axis=0)
        relu = helper.make_node("Relu", ["d"], ["y"])
        graph = helper.make_graph([node, relu], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])],
                                  [x, scale, zero])  # fmt: skip
        model = tmp_path / "bad_axis.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
        chip = write_chip(tmp_path / "host.yaml")
        assert main(["validate", str(chip), str(model), "--runs", "10"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith(f"hwsim: error: {model}: onnxruntime cannot") and "Traceback" not in err

    def test_times_go_back_on_the_fingerprints_clock(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
        from hwsim.host import fingerprint, validate

        # the host now runs the probe at 150 GFLOP/s, 1.5x the 100 it was fingerprinted at
        monkeypatch.setattr(fingerprint, "probe_gflops", lambda n=768, threads=1, min_s=0.2: 150.0)
        monkeypatch.setattr(validate, "time_session", lambda *a, **k: Timing((1e6, 1e6, 1e6, 1e6)))
        chip = chip_from_dict(host_chip())
        model = mlp(tmp_path / "m.onnx")
        raw = validate_model(chip, model, runs=10, min_total_s=0.0)
        fast = validate_model(chip, model, runs=10, min_total_s=0.0, reference=(100.0, 768))
        assert raw.speeds == (1.0,) and raw.measured_ns == pytest.approx(1e6)
        assert fast.speeds == (1.5,) and fast.measured_ns == pytest.approx(1.5e6)
        assert fast.profiled_total_ns > 0 and fast.predicted_ns == pytest.approx(raw.predicted_ns)
        # through the CLI: a fingerprinted chip file normalizes unless --raw-times
        path = write_chip(tmp_path / "host.yaml")
        path.write_text('# fingerprint-json: {"matmul_gflops_1t": {"fp32": 100.0}, "matmul_n": 768}\n' + path.read_text())
        results = tmp_path / "v.jsonl"
        assert main(["validate", str(path), str(model), "--runs", "10", "--results", str(results)]) == 0
        assert "this host ran at x1.500..x1.500" in capsys.readouterr().out
        assert json.loads(results.read_text())["speed_vs_fingerprint"] == [1.5]
        assert main(["validate", str(path), str(model), "--runs", "10", "--results", str(results), "--raw-times"]) == 0
        assert "fingerprint's clock" not in capsys.readouterr().out

    def test_a_chip_that_is_not_this_machine_is_warned_of(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
        """validate measures this machine and predicts the chip's CPU: on a chip that is not this
        machine the difference is the two CPUs', and it says so; on this machine's fingerprint, not."""
        from hwsim.host import validate
        from hwsim.host.fingerprint import cpu_model

        monkeypatch.setattr(validate, "time_session", lambda *a, **k: Timing((1e6, 1e6, 1e6, 1e6)))
        model, results = mlp(tmp_path / "m.onnx"), tmp_path / "v.jsonl"
        other = write_chip(tmp_path / "other.yaml")
        assert main(["validate", str(other), str(model), "--runs", "10", "--results", str(results)]) == 0
        err = capsys.readouterr().err
        assert "WARNING: " in err and "carries no fingerprint record" in err and "not hwsim's error" in err
        here = write_chip(tmp_path / "here.yaml")
        record = {"cpu_model": cpu_model()[0]}
        here.write_text(f"# fingerprint-json: {json.dumps(record)}\n" + here.read_text())
        assert main(["validate", str(here), str(model), "--runs", "10", "--results", str(results), "--raw-times"]) == 0
        assert "not hwsim's error" not in capsys.readouterr().err

    def test_two_threads_go_back_on_the_fingerprints_two_thread_clock(self, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
        from hwsim.host import fingerprint, validate
        from hwsim.host.fingerprint import reference_gflops

        # the probe runs on as many threads as the model: 300 GFLOP/s on 2 threads now
        seen: list[int] = []
        monkeypatch.setattr(fingerprint, "probe_gflops", lambda n=768, threads=1, min_s=0.2: seen.append(threads) or 150.0 * threads)
        monkeypatch.setattr(validate, "time_session", lambda *a, **k: Timing((1e6, 1e6, 1e6, 1e6)))
        path = write_chip(tmp_path / "host.yaml")
        path.write_text('# fingerprint-json: {"threads": 2, "matmul_gflops_1t": {"fp32": 100.0}, '
                        '"matmul_gflops_nt": {"fp32": 240.0}, "matmul_n": 768}\n' + path.read_text())  # fmt: skip
        assert reference_gflops(path) == (100.0, 768) and reference_gflops(path, 2) == (240.0, 768)
        assert reference_gflops(path, 4) is None  # the fingerprint timed 1 and 2 threads only
        chip = chip_from_dict(host_chip())
        two = validate_model(chip, mlp(tmp_path / "m.onnx"), threads=2, runs=10, min_total_s=0.0,
                             reference=reference_gflops(path, 2))  # fmt: skip
        assert set(seen) == {2} and two.speeds == (pytest.approx(1.25),) and two.measured_ns == pytest.approx(1.25e6)

    @pytest.mark.parametrize("along", [[True, True], [True, False], [False, True]])
    def test_a_round_whose_other_threads_lagged_is_marked(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], along: list[bool]) -> None:  # fmt: skip
        from hwsim.host import validate

        # the check runs before and after the timed runs; a lag on either side marks the round
        seen: list[int] = []
        answers = iter(along)

        usuals: list[float | None] = []

        def threads_along(threads: int, usual: float | None = None) -> bool:
            seen.append(threads)
            usuals.append(usual)
            return next(answers)

        monkeypatch.setattr(validate, "threads_along", threads_along)
        data = host_chip()
        data["units"][0]["thread_check_speedup"] = 1.69  # the host's own speed-up, as fingerprinted
        chip, model = chip_from_dict(data), mlp(tmp_path / "m.onnx")
        one = validate_model(chip, model, runs=10, min_total_s=0.0)
        assert one.second_core_lagged == () and not one.lagged and seen == []  # one thread: nothing to check
        two = validate_model(chip, model, threads=2, runs=10, min_total_s=0.0)
        assert seen == [2] * (2 if along[0] else 1)  # a lag before: no need to check after
        assert set(usuals) == {1.69}  # checked against the host's usual speed-up
        assert two.second_core_lagged == (not all(along),) and two.lagged == (not all(along))
        assert ("[other threads lagged]" in format_validation([two])) == two.lagged
        note = lag_note([one, two], 2)
        assert (note is not None and "m measured only while the other 1 thread(s) lagged" in note) == two.lagged
        monkeypatch.setattr(validate.os, "sched_getaffinity", lambda pid: {0, 1})
        note = lag_note([replace(two, second_core_lagged=(True,))], 4)  # more threads than CPUs: it says so
        assert note is not None and "this process may use 2 CPU(s)" in note

    def test_the_command_names_what_it_measured_while_the_other_threads_lagged(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from hwsim.host import validate

        monkeypatch.setattr(validate, "threads_along", lambda threads, usual=None: False)
        chip, model, results = write_chip(tmp_path / "host.yaml"), mlp(tmp_path / "m.onnx"), tmp_path / "v.jsonl"
        assert main(["validate", str(chip), str(model), "--runs", "10", "--threads", "2", "--results", str(results)]) == 0
        out = capsys.readouterr().out
        assert "[other threads lagged]" in out and "note: m measured only while the other 1 thread(s) lagged" in out
        assert json.loads(results.read_text())["other_threads_lagged"] == [True]

    def test_model_onnxruntime_cannot_run(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        g = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])  # fmt: skip
        model = tmp_path / "bad.onnx"
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]),
                  model)  # fmt: skip
        results = tmp_path / "v.jsonl"
        code = main(["validate", str(write_chip(tmp_path / "host.yaml")), str(model), "--results", str(results)])
        err = capsys.readouterr().err
        assert code == 2
        assert "onnxruntime cannot" in err and len(err.strip().splitlines()) == 1
        assert not results.exists()

    @pytest.mark.parametrize(
        ("args", "message"),
        [(["--runs", "3"], "at least 10"), (["--threads", "0"], "--threads 0"), (["--rounds", "0"], "--rounds 0")],
    )
    def test_bad_arguments(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
        chip, model = write_chip(tmp_path / "host.yaml"), mlp(tmp_path / "m.onnx", n=16)
        assert main(["validate", str(chip), str(model), *args]) == 2
        assert message in capsys.readouterr().err

    def test_chip_without_cpu(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        model = mlp(tmp_path / "m.onnx", n=16)
        chip = host_chip()
        chip["units"][0] = {"name": "dsp", "kind": "dsp", "domain": "cpu", "clock_mhz": 1000,
                            "flops_per_cycle": {"fp32": 8}}  # fmt: skip
        path = tmp_path / "dsp.yaml"
        path.write_text(yaml.safe_dump({**chip, "default_affinity": ["dsp"]}))
        assert main(["validate", str(path), str(model)]) == 2
        assert "has no a CPU unit" in capsys.readouterr().err


class TestCalibrationRoundTrip:
    def test_calibrate_then_predict_closer(self, tmp_path: Path) -> None:
        # a chip that claims ~100x this machine's speed: the prediction is far too fast
        data = host_chip(flops_per_cycle={"fp32": 6000.0}, l1_bandwidth_gbps=20000, l2_bandwidth_gbps=13000,
                         l3_bandwidth_gbps=3800, op_overhead_ns=0.0)  # fmt: skip
        data["dram"] = {"bandwidth_gbps": 800.0, "latency_ns": 0}
        chip_path = tmp_path / "host.yaml"
        chip_path.write_text(yaml.safe_dump(data))
        chip = load_chip(chip_path)
        model = mlp(tmp_path / "m.onnx", n=384)
        before = validate_model(chip, model, runs=10, min_total_s=0.1)
        assert before.error < -0.5
        f = fit([before], "cpu")
        assert f.efficiency["MatMul"] < 0.2 and f.op_overhead_ns >= 0
        cal = tmp_path / "host_calibration.yaml"
        write_calibration(f, chip.name, cal)
        chip_path.write_text(chip_path.read_text() + "calibration: host_calibration.yaml\n")
        loaded = load_chip(chip_path)
        assert loaded.units[0].efficiency == f.efficiency
        after = repredict(before, loaded, model)
        assert after.predicted_ns == pytest.approx(repredict(before, apply(chip, f), model).predicted_ns)
        assert abs(after.error) < abs(before.error)
        assert abs(after.error) < 0.5
        kernels = [n for n in after.nodes if n.op_type == "MatMul"]
        assert all(abs(n.predicted_ns / n.measured_ns - 1) < 0.75 for n in kernels)

    def test_kernels_their_memory_roof_explains_are_not_fit(self) -> None:
        def node(name: str, roof: float, measured: float, memory: float) -> NodeResult:
            return NodeResult(name, "Gemm", False, 0.0, measured, roof, memory)

        # two GEMMs at 0.8 of the core rate; two GEMVs slower than their cores but no slower than DRAM
        nodes = (node("a", 800.0, 1000.0, 100.0), node("b", 1600.0, 2000.0, 200.0),
                 node("c", 10.0, 100.0, 150.0), node("d", 10.0, 100.0, 120.0))  # fmt: skip
        v = Validation("m", "host", 1, "all", Timing((3200.0,)), nodes, 0.0, (), 3200.0, 3200.0, (3200.0,))
        f = fit([v], "cpu")
        assert f.efficiency["Gemm"] == pytest.approx(0.8, rel=0.05) and f.kernels["Gemm"] == 2
        # the same kernels in a model whose timed runs took 25 % longer than its profile
        slow = Validation("m", "host", 1, "all", Timing((4000.0,)), nodes, 0.0, (), 3200.0, 4000.0, (4000.0,))
        assert timed_over_profiled(slow) == pytest.approx(1.25)
        assert fit([slow], "cpu").efficiency["Gemm"] == pytest.approx(0.8 / 1.25, rel=0.05)
        only_memory = Validation("m", "host", 1, "all", Timing((200.0,)), nodes[2:], 0.0, (), 200.0, 200.0, (200.0,))
        assert fit([only_memory], "cpu").kernels["Gemm"] == 2  # nothing else to go by: use them

    def test_gemvs_do_not_vote_on_the_core_rate(self) -> None:
        # two GEMMs at 0.9 of the core rate; three GEMVs, memory-bound by the roofline (memory roof
        # 100 ns over a 4 ns basis), measured a little above their memory roof
        gemm = [NodeResult(f"g{i}", "Gemm", False, 0.0, 1000.0 * (i + 1), 900.0 * (i + 1), 50.0, 0.0, "matmul")
                for i in range(2)]  # fmt: skip
        gemv = [NodeResult(f"v{i}", "Gemm", False, 0.0, 110.0, 4.0, 100.0, 0.0, "matmul") for i in range(3)]
        nodes = (*gemm, *gemv)
        v = Validation("m", "host", 1, "all", Timing((3330.0,)), nodes, 0.0, (), 3330.0, 3330.0, (3330.0,))
        f = fit([v], "cpu")
        assert f.efficiency["Gemm"] == pytest.approx(0.9, rel=0.02) and f.kernels["Gemm"] == 2

    def test_weight_stall_is_not_divided_by_the_efficiency(self) -> None:
        # a GEMM at 0.8 of the core rate that also waits 500 ns on weights from DRAM
        nodes = (NodeResult("a", "MatMul", False, 0.0, 1500.0, 800.0, 100.0, 500.0),
                 NodeResult("b", "MatMul", False, 0.0, 3000.0, 2000.0, 100.0, 500.0))  # fmt: skip
        v = Validation("m", "host", 1, "all", Timing((4500.0,)), nodes, 0.0, (), 4500.0, 4500.0, (4500.0,))
        assert fit([v], "cpu").efficiency["MatMul"] == pytest.approx(0.8, rel=0.05)

    def test_fit_needs_kernels(self) -> None:
        with pytest.raises(ValueError, match="no measured kernels"):
            fit([], "cpu")


def test_chip_fixture_is_valid() -> None:
    assert chip_from_dict(host_chip()).units[0].name == "cpu"


def test_a_model_onnxruntime_cannot_run_is_one_line_even_from_its_logger(tmp_path: Path) -> None:
    """An Expand whose shape is a graph input (the onnx package's ``test_expand_shape_model1``):
    the random values validate feeds are a shape onnxruntime rejects at run time. Its C++ logger
    writes to the process's stderr, past Python's: run in a child process, stderr holds hwsim's
    one line and nothing else, exit 2, no record written."""
    import subprocess
    import sys

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 1])
    shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 3, 1])  # as the onnx test declares it
    graph = helper.make_graph([helper.make_node("Expand", ["X", "shape"], ["Y"], name="test")], "g", [x, shape], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 4
    path = tmp_path / "expand.onnx"
    onnx.save(model, str(path))
    chip = write_chip(tmp_path / "host.yaml")
    results = tmp_path / "v.jsonl"
    got = subprocess.run([sys.executable, "-m", "hwsim", "validate", str(chip), str(path), "--runs", "10", "--results", str(results)],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert got.returncode == 2, got.stderr
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"hwsim: error: {path}: onnxruntime cannot run the model"), got.stderr
    assert not results.exists()
