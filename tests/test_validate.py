"""``hwsim validate``: predicted against measured on this machine, records, calibration
round trip, and models onnxruntime cannot run. Models are tiny and built here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from chips.schema import chip_from_dict, load_chip
from hwsim.calibration import apply, fit, write_calibration
from hwsim.cli import main
from hwsim.measure import attribute_nodes, load_with_random_weights, random_inputs
from hwsim.validate import repredict, validate_model
from tests.test_cpu_model import host_chip


def mlp(path: Path, n: int = 256, layers: int = 3, external: bool = True) -> Path:
    """A MatMul+Add+Relu stack; weights as absent external data (like examples/models)."""
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        w = numpy_helper.from_array(np.zeros((n, n), np.float32), f"w{i}")
        if external:
            w.ClearField("raw_data")
            w.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "absent.bin"), ("offset", "0"), ("length", str(n * n * 4))):
                e = w.external_data.add()
                e.key, e.value = k, v
        inits += [w, numpy_helper.from_array(np.full((n,), 0.1, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"/l{i}/MatMul"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"/l{i}/Add"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"/l{i}/Relu")]  # fmt: skip
        x = f"r{i}"
    g = helper.make_graph(nodes, "tiny_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, n])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [64, n])], inits)  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def write_chip(path: Path, **unit: Any) -> Path:
    path.write_text(yaml.safe_dump(host_chip(**unit)))
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

    def test_attribution_of_fused_and_inserted_kernels(self, tmp_path: Path) -> None:
        m = onnx.load(mlp(tmp_path / "m.onnx"), load_external_data=False)
        profiled = {"/l0/MatMul/MatMulAddFusion": "Gemm", "r1_nchwc": "Conv", "/l2/Relu": "Relu",
                    "reorder_token_3": "ReorderOutput", "fused /l1/MatMul/MatMulAddFusion": "FusedGemm"}  # fmt: skip
        assert attribute_nodes(m, profiled) == {
            "/l0/MatMul/MatMulAddFusion": "/l0/MatMul",
            "fused /l1/MatMul/MatMulAddFusion": "/l1/MatMul",
            "r1_nchwc": "/l1/Relu",  # no Conv upstream: stays on the producer of the tensor
            "/l2/Relu": "/l2/Relu",
            "reorder_token_3": None,
        }


class TestCommand:
    def test_validate_prints_and_records(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        chip, model, results = write_chip(tmp_path / "host.yaml"), mlp(tmp_path / "m.onnx"), tmp_path / "r" / "v.jsonl"
        assert main(["validate", str(chip), str(model), "--runs", "10", "--results", str(results)]) == 0
        out = capsys.readouterr().out
        assert "\nm " in out and "MatMul" in out and "1 thread" in out
        (line,) = results.read_text().splitlines()
        rec = json.loads(line)
        assert rec["model"]["name"] == "m" and rec["chip"]["name"] == "host"
        assert rec["measured"]["median_ns"] > 0 and len(rec["measured"]["samples_ns"]) >= 10
        assert rec["predicted_ns"] > 0 and {n[1] for n in rec["nodes"]} == {"MatMul", "Add", "Relu"}

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
        [(["--runs", "3"], "at least 10"), (["--threads", "0"], "--threads 0")],
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

    def test_fit_needs_kernels(self) -> None:
        with pytest.raises(ValueError, match="no measured kernels"):
            fit([], "cpu")


def test_chip_fixture_is_valid() -> None:
    assert chip_from_dict(host_chip()).units[0].name == "cpu"
