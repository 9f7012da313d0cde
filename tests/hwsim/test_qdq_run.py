"""A QDQ model runs as a toolchain deploys it (:func:`hwsim.pipeline.deployed`): its convs on the
RK3588's NPU in int8 like the float model's at ``--precision int8``, no kernel for the folded
``QuantizeLinear`` / ``DequantizeLinear`` nodes, a layer the quantizer kept wide in float with
its conversions, and the binding said in the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chips.schema import load_chip
from graph_ir.onnx_import import load_onnx
from hwsim.cli import main
from hwsim.pipeline import run_graph
from tests.graph_ir.test_qdq import cnn, quantized
from tests.helpers import ROOT

RK3588 = ROOT / "chips" / "rk3588.yaml"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("qdq")
    plain = cnn(tmp / "plain.onnx", [32, 64, 64], 64, 3)
    whole = quantized(tmp, plain, [], True)
    wide = quantized(tmp, cnn(tmp / "wide.onnx", [32, 64, 64], 64, 3), ["fc"], True)
    return plain, whole, wide


def test_qdq_runs_like_the_float_model_in_int8(models: tuple[Path, Path, Path]) -> None:
    plain, whole, _ = models
    chip = load_chip(RK3588)
    f = run_graph(load_onnx(plain), chip, "int8")
    q = run_graph(load_onnx(whole), chip, "int8")
    convs = [n for n in q.graph.order if q.graph.op(n).op_type == "Conv"]
    assert len(convs) == 3 and all(q.schedule.placements[n].unit == "npu" for n in convs)
    assert not any(op.op_type == "QuantizeLinear" for op in q.graph.ops())
    for n in convs:  # each conv costed as the float model's at int8
        assert q.table.costs[n]["npu"].latency_ns == f.table.costs[n]["npu"].latency_ns
    # the float model's ReLUs (fused) are gone from the QDQ one, an output DequantizeLinear added
    assert 0.9 < q.trace.makespan_ns / f.trace.makespan_ns < 1.02
    assert q.quant is not None and set(q.quant.dtypes.values()) == {"int8"}


def test_a_layer_kept_wide_runs_in_float(models: tuple[Path, Path, Path]) -> None:
    _, _, wide = models
    chip = load_chip(RK3588)
    q = run_graph(load_onnx(wide), chip, "model")
    assert q.quant is not None and q.quant.dtypes["fc"] == "fp32" and q.quant.dtypes["conv0"] == "int8"
    assert any(c.dst_dtype == "fp32" and "fc" in c.consumers for c in q.conversions)
    assert q.table.precision_of("fc") == "fp32"


def test_cli_says_the_binding(models: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, whole, _ = models
    assert main(["run", str(RK3588), str(whole), "--json", "--out", str(tmp_path / "out")]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["quant"]["binding"].startswith("the QDQ nodes of")
    assert s["ops_per_unit"].get("npu", 0) >= 3


def test_a_binding_file_binds_the_folded_ops(models: tuple[Path, Path, Path]) -> None:
    """``--quant`` with a QDQ model: the file's dtypes for the ops left after folding, none for
    the folded nodes."""
    from graph_ir.quant_binding import QuantBinding, resolve_graph

    _, whole, _ = models
    graph = load_onnx(whole)
    binding = QuantBinding.model_validate({"default": "int8", "rules": [{"name": "fc", "dtype": "fp16"}]})
    q = run_graph(graph, load_chip(RK3588), "int8", quant=resolve_graph(binding, graph, "b.yaml"))
    assert q.quant is not None and q.quant.source == "b.yaml"
    assert q.quant.dtypes["fc"] == "fp16" and set(q.quant.dtypes) == set(q.graph.order) - {c.op for c in q.conversions}
    assert q.table.precision_of("fc") == "fp16"
