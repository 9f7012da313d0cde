"""hwsim validate on a model with a function op hwsim expands (opset 23's Attention):
onnxruntime runs each call as one kernel, hwsim as the ops of its body (graph_ir.functions);
the comparison is made per call, with the call's name and op type."""

from __future__ import annotations

from pathlib import Path

import pytest

from chips.schema import chip_from_dict
from hwsim.host.validate import function_bodies, repredict, validate_model
from tests.helpers import host_chip, load_benchmarks

bench = load_benchmarks("heldout_function_ops")


@pytest.fixture(scope="module")
def block(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fo")
    bench.transformer_block(folder, "block", 32, 64, 4, 2, 1)
    return folder / "block.onnx"


def test_each_call_is_one_node_measured_and_predicted_as_a_whole(block: Path) -> None:
    from graph_ir.onnx_import import load_onnx

    chip = chip_from_dict(host_chip())
    v = validate_model(chip, block, runs=10, min_total_s=0.0)
    by_type = {}
    for n in v.nodes:
        by_type.setdefault(n.op_type, []).append(n)
    (attn,) = by_type["Attention"]
    norms = by_type["RMSNormalization"]  # an op of hwsim's own (a formula): its kernel matched by name
    assert len(norms) == 2 and all(not n.fused and n.measured_ns > 0 for n in norms)
    graph = load_onnx(block)
    calls = function_bodies(graph, {n.name: n.op_type for n in v.nodes if not n.fused})
    assert set(calls) == {attn.name} and len(calls[attn.name]) > 5
    # no op of a body is left as a node of its own; each call measured, predicted as its ops together
    assert not {m for ms in calls.values() for m in ms} & {n.name for n in v.nodes}
    assert not attn.fused and attn.measured_ns > 0 and attn.predicted_ns > 0
    assert sum(n.predicted_ns for n in v.nodes) + v.run_ns == pytest.approx(v.predicted_ns)
    # predicted again on the same chip: the same figures (what the benchmarks' calibration does)
    again = repredict(v, chip, block)
    assert [n.name for n in again.nodes] == [n.name for n in v.nodes]
    assert [n.predicted_ns for n in again.nodes] == pytest.approx([n.predicted_ns for n in v.nodes])


def _silu_cnn(path: Path) -> None:
    """Convs with SiLU (``Mul(x, Sigmoid(x))``) and a residual: onnxruntime's extended level
    saves them as FusedConv and QuickGelu (its SiLU kernel), contrib ops hwsim lowers."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(3):
        inits.append(numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Sigmoid", [f"c{i}"], [f"s{i}"]), helper.make_node("Mul", [f"c{i}", f"s{i}"], [f"a{i}"])]  # fmt: skip
        x = f"a{i}"
    nodes.append(helper.make_node("Conv", [x, "w0"], ["y"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["y"], ["z"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 24, 24])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_contrib_kernel_is_compared_with_the_ops_hwsim_lowered_it_into(tmp_path: Path) -> None:
    """A model saved by onnxruntime holds FusedConv and QuickGelu; hwsim lowers them
    (graph_ir.contrib) and compares each kernel with its ops together, a QuickGelu costed as
    onnxruntime's one SiLU kernel, as it is in the model before optimization."""
    import onnx
    import onnxruntime as ort

    from graph_ir.contrib import contrib_nodes
    from graph_ir.onnx_import import load_onnx, name_nodes

    _silu_cnn(tmp_path / "orig.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(str(tmp_path / "orig.onnx"), so, providers=["CPUExecutionProvider"])
    assert {n.op_type for n in contrib_nodes(onnx.load(str(tmp_path / "opt.onnx")))} == {"FusedConv", "QuickGelu"}
    chip = chip_from_dict(host_chip())
    v = validate_model(chip, tmp_path / "opt.onnx", runs=10, min_total_s=0.0)
    graph, opt = load_onnx(tmp_path / "opt.onnx"), onnx.load(str(tmp_path / "opt.onnx"))
    name_nodes(opt.graph)
    calls = {n.name for n in contrib_nodes(opt)}
    names = {n.name for n in v.nodes}
    assert calls <= names  # each contrib kernel one node, none of the ops it was lowered into
    assert not {op.name for op in graph.ops() if any(op.name.startswith(c + "/") for c in calls)} & names
    quick = [n for n in v.nodes if n.op_type == "QuickGelu"]
    assert len(quick) == 3 and all(n.measured_ns > 0 and n.predicted_ns > 0 for n in quick)
    # the same SiLU predicted as in the model before optimization: one kernel, not a Sigmoid pass and a Mul pass
    before = validate_model(chip, tmp_path / "orig.onnx", runs=10, min_total_s=0.0)
    silu_before = sorted(n.predicted_ns for n in before.nodes if n.op_type == "QuickGelu")
    assert len(silu_before) == 3
    assert sorted(n.predicted_ns for n in quick) == pytest.approx(silu_before, rel=0.02)
    assert sum(n.predicted_ns for n in v.nodes) + v.run_ns == pytest.approx(v.predicted_ns)
    again = repredict(v, chip, tmp_path / "opt.onnx")
    assert [(n.name, n.op_type) for n in again.nodes] == [(n.name, n.op_type) for n in v.nodes]
    assert [n.predicted_ns for n in again.nodes] == pytest.approx([n.predicted_ns for n in v.nodes])


def test_a_lowered_bias_gelu_is_one_node_with_onnxruntimes_gelu_fusion_inside(tmp_path: Path) -> None:
    """A BiasGelu (as onnxruntime's transformer optimizer writes it) is lowered into an Add and
    the Gelu formula's ops, which hwsim prices as onnxruntime's fused Gelu kernel: that kernel
    belongs to the BiasGelu node, not a node of its own left without a measurement."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((256, 1024)) * 0.05).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(1024).astype(np.float32), "b")]  # fmt: skip
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="fc"),
             helper.make_node("BiasGelu", ["m", "b"], ["y"], name="gelu", domain="com.microsoft")]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    path = tmp_path / "bias_gelu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)
    chip = chip_from_dict(host_chip())
    v = validate_model(chip, path, runs=10, min_total_s=0.0)
    assert sorted(n.name for n in v.nodes) == ["fc", "gelu"]
    gelu = next(n for n in v.nodes if n.name == "gelu")
    assert gelu.op_type == "BiasGelu" and gelu.measured_ns > 0 and gelu.predicted_ns > 0
    assert sum(n.predicted_ns for n in v.nodes) + v.run_ns == pytest.approx(v.predicted_ns)
    again = repredict(v, chip, path)
    assert [n.predicted_ns for n in again.nodes] == pytest.approx([n.predicted_ns for n in v.nodes])


def test_an_attention_kernel_moves_its_heads_by_addressing_not_by_transposes(
    block: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime's Attention kernel reads and writes each head through strides: the
    Transposes of the call's body cost nothing inside it (validate.ADDRESSED_IN_KERNEL)."""
    from graph_ir.onnx_import import load_onnx
    from hwsim.host import validate

    chip = chip_from_dict(host_chip())
    v = validate_model(chip, block, runs=10, min_total_s=0.0)
    (attn,) = (n for n in v.nodes if n.op_type == "Attention")
    graph = load_onnx(block)
    calls = function_bodies(graph, {n.name: n.op_type for n in v.nodes if not n.fused})
    body = calls[attn.name]
    assert any(graph.op(m).op_type == "Transpose" for m in body)
    # free inside the kernel: the head moves, and the scale on Q and K (the GEMM's alpha); not the rest
    free = validate._free_in_kernel(graph, calls, {})
    assert {graph.op(m).op_type for m in free} == {"Transpose", "Mul"}
    assert all(graph.op(m).inputs[1].elements == 1 for m in free if graph.op(m).op_type == "Mul")
    monkeypatch.setattr(validate, "ADDRESSED_IN_KERNEL", frozenset())
    copied = next(n for n in repredict(v, chip, block).nodes if n.name == attn.name)
    assert attn.predicted_ns < copied.predicted_ns


def _embed_layer_norm(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    tables = {"word": (500, 64), "pos": (64, 64), "seg": (2, 64)}
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in tables.items()]
    inits += [numpy_helper.from_array(np.ones(64, np.float32), "g"), numpy_helper.from_array(np.zeros(64, np.float32), "b")]
    node = helper.make_node("EmbedLayerNormalization", ["ids", "sids", "word", "pos", "seg", "g", "b", "mask"],
                            ["h", "mask_index"], name="embed", domain="com.microsoft", epsilon=1e-5)  # fmt: skip
    ids = [helper.make_tensor_value_info(n, TensorProto.INT32, [1, 32]) for n in ("ids", "sids", "mask")]
    graph = helper.make_graph([node, helper.make_node("Relu", ["h"], ["y"], name="relu")], "g", ids,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)


def test_an_embed_layer_norm_is_not_priced_as_a_skip_layer_norm_kernel(tmp_path: Path) -> None:
    """A lowered EmbedLayerNormalization holds an Add + LayerNormalization, the pattern
    onnxruntime fuses into its SkipLayerNormalization kernel elsewhere; inside the EmbedLayerNormalization
    kernel it is normalized inline: no such fused kernel is priced in that call."""
    from graph_ir.onnx_import import load_onnx
    from hwsim.host.ort_fusions import ort_fusions
    from hwsim.host.validate import _run_fusions

    path = tmp_path / "embed.onnx"
    _embed_layer_norm(path)
    graph = load_onnx(path)
    calls = function_bodies(graph, {"embed": "EmbedLayerNormalization", "relu": "Relu"})
    found = [f for f in ort_fusions(graph) if f.kernel.op_type == "SkipLayerNormalization"]
    assert found and all(f.members <= set(calls["embed"]) for f in found)
    assert _run_fusions(found, calls, {"embed": "EmbedLayerNormalization"}) == []
    assert _run_fusions(found, calls, {"embed": "SkipLayerNormalization"}) == found  # a lowered SkipLayerNormalization's own
    chip = chip_from_dict(host_chip())
    v = validate_model(chip, path, runs=10, min_total_s=0.0)
    assert sorted(n.name for n in v.nodes) == ["embed", "relu"]
    assert sum(n.predicted_ns for n in v.nodes) + v.run_ns == pytest.approx(v.predicted_ns)
    again = repredict(v, chip, path)
    assert [n.predicted_ns for n in again.nodes] == pytest.approx([n.predicted_ns for n in v.nodes])
