"""int8 QDQ models: onnxruntime's integer kernels matched to the file's nodes and priced
(:mod:`hwsim.host.ort_qdq`, :func:`cost_models.cpu.requant_ns`, :mod:`hwsim.host.int8_probe`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from chips.schema import chip_from_dict
from cost_models.cpu import requant_ns
from cost_models.table import estimate
from graph_ir.onnx_import import from_model_proto, load_onnx
from hwsim.host.int8_probe import (
    ATTENTION_PROBE,
    INT8_RATES,
    SHORT_MATMUL,
    attention_probe,
    conv_probe,
    pack_from,
    probe_kernels,
    requant_from,
)
from hwsim.host.kernels import int8_efficiencies
from hwsim.host.measure import profile_nodes
from hwsim.host.ort_qdq import nhwc_transposes, qdq_kernel
from hwsim.host.validate import validate_model
from tests.helpers import host_chip, qdq_matmul

#: An int8 rate like the CI Xeon's (AMX MatMulInteger, ~2.1 TOP/s at 2.6 GHz).
INT8_CHIP = {"flops_per_cycle": {"fp32": 60.0, "int8": 800.0}, "requant_ns": 0.4}


class TestQdqKernel:
    def test_folds_the_dq_of_its_inputs_and_the_q_of_its_output(self, tmp_path: Path) -> None:
        g = load_onnx(qdq_matmul(tmp_path / "q.onnx"))
        hit = qdq_kernel(g, "mm", "QLinearMatMul")
        assert hit is not None
        k, members = hit
        assert k.op_type == "QLinearMatMul" and k.macs == g.op("mm").macs
        assert [t.dtype for t in k.inputs] == ["uint8", "int8"] and k.inputs[1].is_weight
        assert k.outputs[0].name == "yq" and members == {"dqx", "dqw", "qy"}

    def test_an_integer_kernel_of_another_op_type_is_no_match(self, tmp_path: Path) -> None:
        g = load_onnx(qdq_matmul(tmp_path / "q.onnx"))
        assert qdq_kernel(g, "mm", "QLinearConv") is None and qdq_kernel(g, "qx", "QLinearMatMul") is None

    def test_channels_last_kernels_get_a_transpose_in_and_out(self) -> None:
        g = from_model_proto(onnx.shape_inference.infer_shapes(conv_probe()))
        kernels = {"conv": "QLinearConv", "add": "QLinearAdd"}
        absorbed = {m for n, k in kernels.items() for m in qdq_kernel(g, n, k)[1]}  # type: ignore[index]
        ts = nhwc_transposes(g, kernels, absorbed)
        # x enters the chain once (conv and add read it), the add's output leaves it once
        assert sorted(t.name for t in ts) == ["Transpose:add", "Transpose:xd"]
        # each moves the 8-bit tensor the channels-last kernels read and write, not hwsim's dequantized float
        floats = {t.name: t for op in g.ops() for t in op.outputs}
        assert all(floats[t.name.split(":")[1]].dtype == "float32" for t in ts)
        assert all(x.dtype == "uint8" and x.shape == floats[x.name].shape for t in ts for x in (*t.inputs, *t.outputs))
        assert nhwc_transposes(g, {}, absorbed) == []


class TestPricing:
    def test_an_integer_gemm_costs_its_macs_at_the_int8_rate_and_a_requantization_per_output(self, tmp_path: Path) -> None:
        chip = chip_from_dict(host_chip(**INT8_CHIP, efficiency={"QLinearMatMul": 1.0}))
        g = load_onnx(qdq_matmul(tmp_path / "q.onnx", m=256, k=512, n=256))
        k, _ = qdq_kernel(g, "mm", "QLinearMatMul")  # type: ignore[misc]
        c = estimate(k, chip, "cpu", "model")
        assert c is not None and c.dtype == "int8"
        macs_ns = 2 * 256 * 512 * 256 / (800.0 * 2.6)  # FLOP / (FLOP per ns)
        assert requant_ns(k, chip.units[0]) == pytest.approx(256 * 256 * 0.4)
        assert c.compute_ns == pytest.approx(macs_ns + 256 * 256 * 0.4, rel=1e-3)  # shape_factor: 0.02 %
        assert c.stall_ns == pytest.approx(256 * 256 * 0.4)  # no efficiency scales it
        # the fp32 MatMul of the same file is priced at the fp32 rate, without requantization
        f = estimate(g.op("mm"), chip, "cpu", "model")
        assert f is not None and f.dtype == "fp32" and f.compute_ns > 5 * macs_ns

    def test_a_b_packed_at_run_time_costs_per_element(self, tmp_path: Path) -> None:
        # attention's scores: B is the transposed activation, no constant: packed at every run
        g = from_model_proto(onnx.shape_inference.infer_shapes(attention_probe()))
        k, _ = qdq_kernel(g, "mm", "QLinearMatMul")  # type: ignore[misc]
        assert not k.inputs[1].is_weight and k.inputs[1].dtype == "uint8"
        heads, rows, width = ATTENTION_PROBE
        unit = chip_from_dict(host_chip(**INT8_CHIP, int8_pack_ns=0.8)).units[0]
        assert requant_ns(k, unit) == pytest.approx(heads * rows * rows * 0.4 + heads * width * rows * 0.8)
        # a constant B (packed once, at load) costs no packing
        c, _ = qdq_kernel(load_onnx(qdq_matmul(tmp_path / "q.onnx")), "mm", "QLinearMatMul")  # type: ignore[misc]
        assert requant_ns(c, unit) == pytest.approx(c.outputs[0].elements * 0.4)
        assert pack_from({SHORT_MATMUL: 1.0}, 0.4) is None

    def test_requantization_and_efficiencies_from_the_probes(self) -> None:
        # the probes' MACs at 1 TOP/s plus 0.4 ns per output, as a fingerprint measures them
        ops = probe_kernels()
        mm = ops["QLinearMatMul"]
        out = mm.outputs[0].elements
        short = mm.macs * 128 // 2048
        rates = {SHORT_MATMUL: 2 * short / 1000.0 + 0.4 * out, INT8_RATES["QLinearMatMul"]: 2 * mm.macs / 1000.0 + 0.4 * out}
        assert requant_from(rates) == pytest.approx(0.4)
        assert requant_from({SHORT_MATMUL: 1.0}) is None
        chip = chip_from_dict(host_chip(**{**INT8_CHIP, "flops_per_cycle": {"fp32": 60.0, "int8": 1000.0 / 2.6}}))
        conv = ops["QLinearConv"]  # at a third of the int8 rate
        rates[INT8_RATES["QLinearConv"]] = 3 * 2 * conv.macs / 1000.0 + 0.4 * conv.outputs[0].elements
        effs = int8_efficiencies(chip, rates)
        assert effs["QLinearMatMul"] == pytest.approx(1.0, rel=0.02)
        assert effs["QLinearConv"] == pytest.approx(1 / 3, rel=0.02)


class TestAgainstOnnxruntime:
    def test_a_qdq_matmul_is_matched_to_its_integer_kernel(self, tmp_path: Path) -> None:
        chip = chip_from_dict(host_chip(**INT8_CHIP))
        v = validate_model(chip, qdq_matmul(tmp_path / "q.onnx"), runs=10, min_total_s=0.0)
        by = {n.name: n for n in v.nodes}
        assert by["mm"].op_type == "QLinearMatMul" and not by["mm"].fused and by["mm"].measured_ns > 0
        assert all(by[n].fused and by[n].predicted_ns == 0 for n in ("dqx", "dqw", "qy"))
        assert v.inserted_ops == ()  # every kernel onnxruntime ran is a predicted one

    def test_the_conv_probe_runs_the_kernels_it_measures(self) -> None:
        x = np.random.default_rng(0).standard_normal((1, 64, 40, 40)).astype(np.float32)
        kinds = sorted(kind for kind, _ in profile_nodes(conv_probe(), {"x": x}, runs=2).values())
        assert kinds == ["DequantizeLinear", "QLinearAdd", "QLinearConv", "QuantizeLinear", "Transpose", "Transpose"]

    def test_the_channels_last_transposes_are_matched(self, tmp_path: Path) -> None:
        path = tmp_path / "c.onnx"
        onnx.save(conv_probe(), str(path))
        v = validate_model(chip_from_dict(host_chip(**INT8_CHIP)), path, runs=10, min_total_s=0.0)
        by = {n.name: n for n in v.nodes}
        assert by["conv"].op_type == "QLinearConv" and by["add"].op_type == "QLinearAdd"
        assert by["Transpose:xd"].measured_ns > 0 and by["Transpose:add"].measured_ns > 0
        assert v.inserted_ops == ()
