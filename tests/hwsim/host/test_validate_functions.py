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
