"""One test per crash the reader fuzzers found, and the bounded huge inputs (sparse 2 GiB files)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from tests.fuzz.harness import Outcome, check_refusal_or_run


def _sparse(path: Path, size_bytes: int) -> Path:
    """A file of ``size_bytes`` that takes no disk space (a hole, as ``truncate -s`` makes)."""
    path.touch()
    os.truncate(path, size_bytes)
    return path


# --- task graphs (hwsim schedule) -------------------------------------------------------------


@pytest.mark.parametrize("name", ["g.json", "g.stg"])
def test_taskgraph_not_utf8_is_refused(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    f.write_bytes(b"{\x80")
    res = check_refusal_or_run("regression", ["schedule", str(f)], f)
    assert res.code == 2 and "not a text file" in res.stderr


def test_taskgraph_edge_end_not_a_string_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "g.json"
    f.write_text(
        '{"units": ["u"], "tasks": [{"name": "a", "cost": {"u": 1}}], "edges": [{"src": [], "dst": "a"}]}'
    )
    res = check_refusal_or_run("regression", ["schedule", str(f)], f)
    assert res.code == 2 and "edges[0].src: unknown task []" in res.stderr


def test_taskgraph_transfer_of_6e13_beside_a_10_ns_schedule_is_scheduled(tmp_path: Path) -> None:
    # found by test_taskgraph_json once EXTREMES joined its values: CP-SAT's polish scaled the
    # transfer to 6e18 steps and refused the constant past 2^63 (a TypeError, an internal error)
    f = tmp_path / "g.json"
    f.write_text(
        '{"units": ["cpu", "npu"], "tasks": [{"name": "a", "cost": {"cpu": 4.0, "npu": 1.0}}, '
        '{"name": "b", "cost": {"cpu": 2.0}}, {"name": "c", "cost": {"npu": 3.0}}], '
        '"edges": [{"src": "a", "dst": "b", "comm": 64563604257984}, {"src": "a", "dst": "c"}]}'
    )
    res = check_refusal_or_run("regression", ["schedule", str(f)], f)
    assert res.code == 0 and "makespan 7 " in res.stdout  # a on the cpu beside b: the transfer is never paid


@pytest.mark.parametrize("limit", ["nan", "0", "-1"])
def test_schedule_time_limit_not_positive_is_refused(tmp_path: Path, limit: str) -> None:
    from tests.fuzz.harness import run_cli

    f = tmp_path / "g.json"  # NaN passed "limit <= 0" and went on to the solver
    f.write_text('{"units": ["u"], "tasks": [{"name": "a", "cost": {"u": 1}}], "edges": []}')
    res = run_cli(["schedule", str(f), "--time-limit", limit])
    assert res.code == 2 and res.stderr == f"hwsim: error: --time-limit must be positive, got {float(limit)}\n"


@pytest.mark.parametrize("name", ["g.json", "g.stg"])
def test_taskgraph_2gib_file_is_refused_unread(tmp_path: Path, name: str) -> None:
    f = _sparse(tmp_path / name, 2 * 2**30)
    res = check_refusal_or_run("regression", ["schedule", str(f)], f)
    assert res.code == 2 and "2048.0 MiB, over the 256.0 MiB limit" in res.stderr


# --- chips and calibrations -------------------------------------------------------------------

RK3588 = Path(__file__).parents[2] / "chips" / "rk3588.yaml"
MLP = Path(__file__).parents[2] / "examples" / "models" / "mlp_mnist.onnx"


def _run_chip(chip: Path, out: Path) -> list[str]:
    return ["run", str(chip), str(MLP), "--out", str(out), "--no-plots"]


def test_chip_key_with_a_carriage_return_stays_on_one_line(tmp_path: Path) -> None:
    chip = tmp_path / "chip.yaml"
    chip.write_text('"\\r": null\n' + RK3588.read_text())
    res = check_refusal_or_run(
        "regression", _run_chip(chip, tmp_path / "out"), chip, tmp_path / "out"
    )
    assert res.code == 2 and "\\r: unknown key" in res.stderr


def test_calibration_not_utf8_is_refused(tmp_path: Path) -> None:
    chip, cal = tmp_path / "chip.yaml", tmp_path / "cal.yaml"
    chip.write_text(RK3588.read_text() + "\ncalibration: cal.yaml\n")
    cal.write_bytes(b"\x80")
    res = check_refusal_or_run(
        "regression", _run_chip(chip, tmp_path / "out"), cal, tmp_path / "out"
    )
    assert res.code == 2 and "not a text file" in res.stderr


def test_chip_and_calibration_of_2gib_are_refused_unread(tmp_path: Path) -> None:
    chip = _sparse(tmp_path / "chip.yaml", 2 * 2**30)
    res = check_refusal_or_run(
        "regression", _run_chip(chip, tmp_path / "out"), chip, tmp_path / "out"
    )
    assert res.code == 2 and "over the 256.0 MiB limit" in res.stderr
    chip2, cal = tmp_path / "chip2.yaml", _sparse(tmp_path / "cal.yaml", 2 * 2**30)
    chip2.write_text(RK3588.read_text() + "\ncalibration: cal.yaml\n")
    res = check_refusal_or_run(
        "regression", _run_chip(chip2, tmp_path / "out"), cal, tmp_path / "out"
    )
    assert res.code == 2 and "over the 256.0 MiB limit" in res.stderr


# --- ONNX -----------------------------------------------------------------------------------


def _mlp_edited(tmp_path: Path, edit: str) -> Path:
    import onnx

    m = onnx.load(str(MLP), load_external_data=False)
    if edit == "dup":
        m.graph.node[0].output[0] = m.graph.node[1].output[0]
    else:
        m.graph.node[1].input[0] = "nothing"
    f = tmp_path / f"{edit}.onnx"
    onnx.save(m, str(f))
    return f


@pytest.mark.parametrize(
    ("edit", "said"),
    [("dup", "is an output of two nodes"), ("dangling", "which no node, input or initializer")],
)
def test_onnx_tensor_with_two_producers_or_none_is_refused(
    tmp_path: Path, edit: str, said: str
) -> None:
    f = _mlp_edited(tmp_path, edit)
    res = check_refusal_or_run(
        "regression", ["run", "rk3588", str(f), "--out", str(tmp_path / "o")], f, tmp_path / "o"
    )
    assert res.code == 2 and said in res.stderr


def test_onnx_attribute_name_not_utf8_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "m.onnx"
    f.write_bytes(MLP.read_bytes().replace(b"\x04beta", b"\x04\xe2eta", 1))
    res = check_refusal_or_run(
        "regression", ["run", "rk3588", str(f), "--out", str(tmp_path / "o")], f, tmp_path / "o"
    )
    assert res.code == 2 and "is not UTF-8 text" in res.stderr


def test_onnx_of_2gib_is_refused_unread(tmp_path: Path) -> None:
    f = _sparse(tmp_path / "big.onnx", 2 * 2**30)
    res = check_refusal_or_run(
        "regression", ["run", "rk3588", str(f), "--out", str(tmp_path / "o")], f, tmp_path / "o"
    )
    assert res.code == 2 and "over the 2048.0 MiB limit" in res.stderr


@pytest.mark.parametrize("size", ["garbage", "huge"])
def test_sweep_and_binding_files_not_utf8_or_huge_are_one_line(tmp_path: Path, size: str, capsys) -> None:
    from hwsim.cli import main
    from tests.helpers import MODELS

    bad = tmp_path / "bad.yaml"
    if size == "garbage":
        bad.write_bytes(b"models: [\xff\xfe\x00]\n")
    else:
        bad.write_bytes(b"")
        os.truncate(bad, 2**31)  # sparse: no space taken
    out = tmp_path / "out"
    assert main(["sweep", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(bad) in err and "Traceback" not in err and not out.exists()
    assert main(["run", "rk3588", str(MODELS / "mlp_mnist.onnx"), "--quant", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(bad) in err and "Traceback" not in err and not out.exists()


def test_onnx_node_with_too_few_inputs_is_one_line(tmp_path: Path, capsys) -> None:
    # found by the ONNX fuzzer: a Relu turned into a Conv (one input, no weight) hit an IndexError
    import onnx

    from hwsim.cli import main
    from tests.helpers import MODELS

    model = onnx.load(str(MODELS / "mlp_mnist.onnx"), load_external_data=False)
    next(n for n in model.graph.node if n.op_type == "Relu").op_type = "Conv"
    bad = tmp_path / "bad.onnx"
    onnx.save(model, str(bad))
    out = tmp_path / "out"
    assert main(["run", "rk3588", str(bad), "--out", str(out), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "(Conv) has 1 input(s)" in err and str(bad) in err and not out.exists()


def test_calibration_unit_named_with_a_carriage_return_stays_one_line(tmp_path: Path, capsys) -> None:
    # found by the chip fuzzer in CI: a calibration unit named "\r" split the error line
    from hwsim.cli import main
    from tests.helpers import MODELS, ROOT

    chip = (ROOT / "chips" / "rk3588.yaml").read_text() + "\ncalibration: cal.yaml\n"
    (tmp_path / "chip.yaml").write_text(chip)
    (tmp_path / "cal.yaml").write_text('chip: rk3588\nunits:\n  "\\r": {}\n')
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "chip.yaml"), str(MODELS / "mlp_mnist.onnx"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "\r" not in err and "units.\\r" in err and not out.exists()


# --- workload, schedule, sweep and binding files, huge graphs (issue 14, part 4) ------------------


def _workload(tmp_path: Path, window_ms: float, offset_ms: float, period_ms: float) -> Path:
    model = Path(__file__).parents[2] / "examples" / "models" / "mlp_mnist.onnx"
    f = tmp_path / "w.yaml"
    f.write_text(
        f"window_ms: {window_ms}\nmodels:\n  - name: m\n    model: {model}\n"
        f"    period_ms: {period_ms}\n    offset_ms: {offset_ms}\n"
    )
    return f


def test_workload_model_released_after_the_window_is_refused(tmp_path: Path) -> None:
    f = _workload(tmp_path, 5, 5, 2.5)  # found by test_workload_yaml: IndexError, no instance at all
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out)], f, out)
    assert res.code == 2 and "models[0].offset_ms: 5 is not before window_ms 5" in res.stderr


def test_workload_of_too_many_instances_is_refused_quickly(tmp_path: Path) -> None:
    import time

    f = _workload(tmp_path, 1e300, 0, 1)  # 10^300 instances: a hang before the check
    out = tmp_path / "out"
    t0 = time.perf_counter()
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out)], f, out)
    assert res.code == 2 and "window_ms" in res.stderr and time.perf_counter() - t0 < 5


def test_workload_window_far_shorter_than_a_period_runs_its_first_release(tmp_path: Path) -> None:
    # a window of 1e-10 ms released no instance (ceil(window / period - 1e-9) = 0): an IndexError
    f = _workload(tmp_path, 1e-10, 0, 33.3)
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out), "--json"], f, out)
    assert res.code == 0 and json.loads(res.stdout)["workload"]["models"]["m"]["instances"] == 1


def test_workload_period_of_1e_320_is_refused(tmp_path: Path) -> None:
    f = _workload(tmp_path, 100, 0, 1e-320)  # window / period overflowed to inf: ceil(inf) raised
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out)], f, out)
    assert res.code == 2 and "releases over 200,000 instances" in res.stderr


def test_workload_fps_whose_period_is_infinite_is_refused(tmp_path: Path) -> None:
    # found by test_workload_yaml once EXTREMES joined its values: fps 5e-324 is a period of inf ms,
    # and the first release, offset + 0 x inf, was NaN (a ValueError in int())
    f = _workload(tmp_path, 5, 0, 1.0)
    f.write_text(f.read_text().replace("period_ms: 1.0", "fps: 5.0e-324"))
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out)], f, out)
    assert res.code == 2 and "models[0]: fps 4.94066e-324 is a period of 1000 / fps ms, past the largest float" in res.stderr


def test_frames_over_the_op_limit_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"  # 10^9 frames of the 5-op MLP ran for hours
    res = check_refusal_or_run("regression", ["run", "rk3588", str(MLP), "--frames", "1000000000", "--out", str(out)], MLP, out)
    assert res.code == 2 and "1,000,000,000 frames of 5 ops are 5,000,000,000 ops, over the limit of 200,000" in res.stderr


def test_workload_of_too_many_ops_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graph_ir import files

    monkeypatch.setattr(files, "MAX_GRAPH_OPS", 12)  # 3 instances of the 5-op MLP: 15 ops
    f = _workload(tmp_path, 3, 0, 1)
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out)], f, out)
    assert res.code == 2 and "hold 15 ops, over the limit of 12" in res.stderr


def test_onnx_slice_after_a_conv_whose_kernel_outgrows_its_input_is_refused(tmp_path: Path) -> None:
    # found by test_onnx_cnn_attributes: kernel_shape [32, 15] on a 16x16 input made dim -13, and
    # onnx's Slice shape inference aborted the whole process on it (SIGABRT, onnx/onnx#8481)
    from onnx import helper

    from tests.fuzz.test_onnx_fuzz import CNN

    model = onnx.ModelProto()
    model.CopyFrom(CNN)
    conv = next(n for n in model.graph.node if n.name == "conv")
    kept = [a for a in conv.attribute if a.name != "kernel_shape"]
    del conv.attribute[:]
    conv.attribute.extend([*kept, helper.make_attribute("kernel_shape", [32, 15])])
    f, out = tmp_path / "cnn.onnx", tmp_path / "out"
    onnx.save(model, f)
    data = tmp_path / "x.npz"  # quantize and accuracy: onnxruntime's quantizer runs onnx's inference too
    np.savez(data, x=np.zeros((2, 4, 16, 16), np.float32))
    for argv in (["run", "rk3588", str(f), "--out", str(out)], ["quantize", str(f), "--calib", str(data), "-o", str(out / "q.onnx")],
                 ["accuracy", str(f), str(f), "--data", str(data)]):  # fmt: skip
        res = check_refusal_or_run("regression", argv, f, out)
        assert res.code == 2 and "aborted (SIGABRT; onnx/onnx#8481): node 'conv' (Conv) makes 'c' of shape [1, 8, -13, 4]" in res.stderr


def test_onnx_graph_over_the_op_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graph_ir import files

    monkeypatch.setattr(files, "MAX_GRAPH_OPS", 4)  # the MLP has 5 nodes
    model = Path(__file__).parents[2] / "examples" / "models" / "mlp_mnist.onnx"
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", str(model), "--out", str(out)], model, out)
    assert res.code == 2 and "graph.node: 5 nodes, over the limit of 4" in res.stderr


def test_onnx_tensor_of_10_to_the_12_elements_is_bounded(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    n = 10**6  # a 10^6 x 10^6 weight declared by its dims only: no data is ever read or made
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[n, n])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "big", [x], [y], [w])
    model = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", str(model), "--out", str(out), "--no-plots"], model, out, ok=(1,))
    assert res.code == 1 and "DRAM peaks at 1000002000000 bytes" in res.stderr and "at op mm" in res.stderr
    assert not out.exists()


def test_workload_key_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"  # found by test_workload_yaml: the key's newline split the error line
    model = Path(__file__).parents[2] / "examples" / "models" / "mlp_mnist.onnx"
    f.write_text(f"? '\n\n  '\n: null\nwindow_ms: 5\nmodels:\n  - {{name: m, model: {model}, fps: 1000}}\n")
    out = tmp_path / "out"
    res = check_refusal_or_run("regression", ["run", "rk3588", "--workload", str(f), "--out", str(out)], f, out)
    assert res.code == 2 and "'\\n': unknown key" in res.stderr


def _replay_edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Outcome:
    """Export mlp_mnist's schedule on rk3588, ``edit`` the parsed file, replay it (refusal checked)."""
    from hwsim.cli import main

    model = Path(__file__).parents[2] / "examples" / "models" / "mlp_mnist.onnx"
    sched = tmp_path / "s.json"
    assert main(["run", "rk3588", str(model), "--out", str(tmp_path / "r"), "--no-plots",
                 "--export-schedule", str(sched)]) == 0  # fmt: skip
    data = json.loads(sched.read_text())
    edit(data)
    sched.write_text(json.dumps(data))
    out = tmp_path / "out"
    argv = ["run", "rk3588", str(model), "--schedule", str(sched), "--out", str(out)]
    return check_refusal_or_run("regression", argv, sched, out)


def test_schedule_file_key_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    # found by test_schedule_json at 10,000 inputs: an extra key "\n" split the error line in two
    res = _replay_edited(tmp_path, lambda data: data.update({"\n": None}))
    assert res.code == 2 and "'\\n': Extra inputs are not permitted" in res.stderr


@pytest.mark.parametrize(("split", "words"), [(False, "split: Input should be greater than 0"),
                                              (5, "split 5 over gpu, which has 1 cores")])  # fmt: skip
def test_schedule_file_split_the_unit_cannot_make_is_refused(tmp_path: Path, split: object, words: str) -> None:
    # found by test_schedule_json at 10,000 inputs: "split": false became 0 cores, an internal error
    def edit(data: dict[str, Any]) -> None:
        on_gpu = [o for o in data["ops"] if o["unit"] == "gpu"]
        assert on_gpu, "the case needs an op on rk3588's one-core GPU"
        on_gpu[0]["split"] = split

    res = _replay_edited(tmp_path, edit)
    assert res.code == 2 and words in res.stderr


@pytest.mark.parametrize("ops", [None, [1, "x"], {"a": 1}])
def test_schedule_file_of_version_0_with_odd_ops_is_one_line(tmp_path: Path, ops: object) -> None:
    # found by test_schedule_json at 10,000 inputs: no schema_version and "ops": null crashed the migration
    def edit(data: dict[str, Any]) -> None:
        del data["schema_version"]
        data["ops"] = ops

    res = _replay_edited(tmp_path, edit)
    assert res.code == 2 and "ops" in res.stderr


def test_schedule_file_order_that_deadlocks_is_refused(tmp_path: Path) -> None:
    # found by test_schedule_json at 10,000 inputs: a core order against the data flow hung the engine's
    # dispatch ("ops never ran", an internal error)
    def edit(data: dict[str, Any]) -> None:
        first = data["ops"][0]
        same = [o for o in data["ops"] if (o["unit"], o["core"]) == (first["unit"], first["core"])]
        assert len(same) >= 2, "the case needs two dependent ops on one core"
        same[0]["order"], same[1]["order"] = same[1]["order"], same[0]["order"]

    res = _replay_edited(tmp_path, edit)
    assert res.code == 2 and "would deadlock" in res.stderr


# --- experience database imports (hwsim db import) ----------------------------------------------


def test_db_import_field_named_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    f = tmp_path / "trials.jsonl"
    f.write_text('{"\\n": null}\n')
    res = check_refusal_or_run("regression", ["db", "import", str(f), "--db", str(tmp_path / "db.sqlite")], f)
    assert res.code == 2 and ":1: '\\n': unknown field" in res.stderr


# --- validation data (hwsim accuracy --data) ----------------------------------------------------


def _accuracy_on(tmp_path: Path, content: bytes) -> Outcome:
    digits = Path(__file__).resolve().parents[2] / "examples" / "trained" / "digits_mlp.onnx"
    f = tmp_path / "val.npz"
    f.write_bytes(content)
    return check_refusal_or_run("regression", ["accuracy", str(digits), str(digits), "--data", str(f)], f)


def _npz(**arrays: Any) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_accuracy_data_cut_short_or_a_single_npy_is_refused(tmp_path: Path) -> None:
    # found by test_accuracy_npz: a cut .npz raised zipfile.BadZipFile, a plain .npy a TypeError (internal errors)
    whole = _npz(input=np.zeros((2, 64), np.float32))
    res = _accuracy_on(tmp_path, whole[: len(whole) // 2])
    assert res.code == 2 and "not a readable .npz file" in res.stderr
    npy = io.BytesIO()
    np.save(npy, np.zeros((2, 64), np.float32))
    res = _accuracy_on(tmp_path, npy.getvalue())
    assert res.code == 2 and "a single .npy array" in res.stderr


def test_accuracy_data_of_no_samples_or_another_dtype_is_refused(tmp_path: Path) -> None:
    # found by test_accuracy_npz: 0 samples crashed concatenating the outputs; float64 arrays for a
    # float input crashed onnxruntime (internal errors)
    res = _accuracy_on(tmp_path, _npz(input=np.zeros((0, 64), np.float32)))
    assert res.code == 2 and "'input' has no samples" in res.stderr
    res = _accuracy_on(tmp_path, _npz(input=np.zeros((2, 64), np.float64)))
    assert res.code == 2 and "'input' is float64, input 'input'" in res.stderr and "takes float32" in res.stderr


def test_accuracy_data_whose_header_declares_more_than_it_holds_is_refused_unallocated(tmp_path: Path) -> None:
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {"descr": "<f4", "fortran_order": False, "shape": (2**40, 64)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("input.npy", npy.getvalue() + b"\0" * 64)
    res = _accuracy_on(tmp_path, buf.getvalue())
    assert res.code == 2 and "declares 281474976710656 bytes" in res.stderr


# --- report folders read back (hwsim compare) -----------------------------------------------------


@pytest.mark.parametrize(("value", "code"), [(None, 0), ("12", 2), (-1, 2)])
def test_compare_summary_cross_domain_bytes_null_or_not_a_count(tmp_path: Path, value: object, code: int) -> None:
    # found by test_report_summary_json: "cross_domain_bytes": null was int(None), an internal error
    from tests.helpers import MODELS

    kept, fuzzed, out = tmp_path / "run_kept", tmp_path / "run_fuzzed", tmp_path / "out"
    res = check_refusal_or_run(
        "regression", ["run", "rk3588", str(MODELS / "mlp_mnist.onnx"), "--out", str(kept), "--no-plots"], kept
    )
    assert res.code == 0
    fuzzed.mkdir()
    summary = json.loads((kept / "summary.json").read_text(encoding="utf-8"))
    (fuzzed / "summary.json").write_text(json.dumps(summary | {"cross_domain_bytes": value}), encoding="utf-8")
    f = fuzzed / "summary.json"
    res = check_refusal_or_run("regression", ["compare", str(kept), str(fuzzed), "--out", str(out)], f, out, ok=(0,))
    assert res.code == code
    if code == 2:
        assert "field 'cross_domain_bytes' is not a byte count" in res.stderr


def test_accuracy_data_member_that_is_no_npy_is_refused(tmp_path: Path) -> None:
    # found by test_accuracy_npz at 10,000 inputs: a member named "input/npy" (no .npy suffix) was a
    # KeyError looking up its header, an internal error
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("input/npy", b"\x93NUMPY")
    res = _accuracy_on(tmp_path, buf.getvalue())
    assert res.code == 2 and "member 'input/npy' is not a .npy array" in res.stderr


@pytest.mark.parametrize(("edit", "words"), [("version", "NotImplementedError"), ("encrypted", "RuntimeError")])
def test_accuracy_data_in_a_zip_python_cannot_open_is_refused(tmp_path: Path, edit: str, words: str) -> None:
    # found by test_accuracy_npz at 10,000 inputs: a central directory asking for zip version 10.9 was
    # zipfile's NotImplementedError, an internal error; an encrypted member is zipfile's RuntimeError
    data = bytearray(_npz(input=np.zeros((3, 64), np.float32)))
    at = data.index(b"PK\x01\x02")
    if edit == "version":
        data[at + 6 : at + 8] = b"m\x00"
    else:
        data[at + 8] |= 1
    res = _accuracy_on(tmp_path, bytes(data))
    assert res.code == 2 and f"not a readable .npz file ({words}" in res.stderr


@pytest.mark.parametrize(("line", "value", "words"), [
    ("    clock_mhz: 1000          # 1024", "1e-320", "units[npu].clock_mhz: 1e-320 is below 1e-15"),
    ("    clock_mhz: 1000          # 1024", ".inf", "units[npu].clock_mhz: Input should be a finite number"),
    ("    cores: 3                 # 3 cores", "1000000", "units[npu].cores: Input should be less than or equal to 1024"),
])  # fmt: skip
def test_chip_number_too_small_infinite_or_too_many_cores_is_refused(
    tmp_path: Path, line: str, value: str, words: str
) -> None:
    # a clock or bandwidth of 1e-320 was an internal error (a zero rate in the engine); .inf ran as an
    # infinitely fast unit; 1,000,000 NPU cores ran for minutes (a lane each in the scheduler and the Gantt)
    chip, text = tmp_path / "chip.yaml", RK3588.read_text()
    assert line in text
    chip.write_text(text.replace(line, f"{line.split(':')[0]}: {value}  #"))  # the line's comment runs on
    res = check_refusal_or_run("regression", _run_chip(chip, tmp_path / "out"), chip, tmp_path / "out")
    assert res.code == 2 and words in res.stderr


def test_chip_so_slow_the_run_outlasts_the_picosecond_clock_is_refused(tmp_path: Path) -> None:
    # every clock at 1e-15 MHz (allowed): the run takes 3e9 days; the power timeline's int64
    # picoseconds overflowed (an internal OverflowError), as did a bound that bincount left int64
    import yaml

    data = yaml.safe_load(RK3588.read_text())
    for unit in data["units"]:
        unit["clock_mhz"] = 1e-15
    chip, out = tmp_path / "chip.yaml", tmp_path / "out"
    chip.write_text(yaml.safe_dump(data))
    res = check_refusal_or_run("regression", _run_chip(chip, out), chip, out)
    assert res.code == 2 and "days on rk3588, past the 106 days of picoseconds the simulator's timelines hold" in res.stderr


def test_sensitivity_factor_past_the_largest_float_is_an_invalid_point(tmp_path: Path) -> None:
    # --factors 1e308 on an integer field was an OverflowError in round(): an internal error
    from hwsim.cli import main

    out = tmp_path / "out"
    code = main(["sensitivity", str(RK3588), str(MLP), "--param", "npu.cores", "--factors", "1e308,2", "--out", str(out)])
    points = json.loads((out / "sensitivity.json").read_text())["parameters"][0]["points"]
    past = next(p for p in points if p["factor"] == 1e308)
    assert code == 0 and past["value"] is None and past["latency_ms"] is None
    assert "npu.cores: 3 x 1e+308 is not a finite number" in past["error"]


@pytest.mark.parametrize("command", ["optimize", "sweep"])
def test_workers_far_over_the_cpus_are_refused_before_anything_is_written(tmp_path: Path, command: str) -> None:
    # --workers 1000000 forked processes until the machine ran out: a fork pool starts all at once
    import os

    from hwsim.studies.sweep import WORKERS_PER_CPU

    too_many = str(WORKERS_PER_CPU * (os.cpu_count() or 1) + 1)
    out, db = tmp_path / "out", tmp_path / "e.sqlite"
    if command == "optimize":
        argv = ["optimize", "rk3588", str(MLP), "--budget", "2", "--quiet", "--out", str(out), "--db", str(db)]
    else:
        spec = tmp_path / "s.yaml"
        spec.write_text(f"models: [{MLP}]\nchips: [rk3588]\ngrid: {{precision: [int8]}}\nobjectives: [latency_ms]\n")
        argv = ["sweep", str(spec), "--out", str(out)]
    from tests.fuzz.harness import run_cli

    res = run_cli([*argv, "--workers", too_many])
    assert res.code == 2 and f"--workers {too_many}: over" in res.stderr and "CPUs" in res.stderr
    assert not out.exists() and not db.exists()


@pytest.mark.parametrize("seconds", ["nan", "inf", "0"])
def test_optimize_time_not_a_finite_positive_number_is_refused(tmp_path: Path, seconds: str) -> None:
    from tests.fuzz.harness import run_cli

    out, db = tmp_path / "out", tmp_path / "e.sqlite"  # --time inf searched until Ctrl-C
    res = run_cli(["optimize", "rk3588", str(MLP), "--time", seconds, "--quiet", "--out", str(out), "--db", str(db)])
    assert res.code == 2 and f"--time {float(seconds)}: expected a positive number of seconds" in res.stderr
    assert not out.exists() and not db.exists()


# --- onnxruntime contrib ops (lowered at import, graph_ir.contrib) ------------------------------


@pytest.mark.parametrize(("attr", "value"), [("axis", [0, 1]), ("epsilon", "x")])
def test_contrib_attribute_of_the_wrong_kind_is_refused(tmp_path: Path, attr: str, value: object) -> None:
    """A SimplifiedLayerNormalization whose ``axis`` is a list (the fuzzer's) or ``epsilon`` a
    string was an internal error (``int()`` of a list)."""
    from onnx import TensorProto, helper

    node = helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], name="rms")
    node.attribute.append(helper.make_attribute(attr, value))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("g", TensorProto.FLOAT, [8], [1.0] * 8)])  # fmt: skip
    f = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f)
    res = check_refusal_or_run("regression", ["run", "rk3588", str(f), "--out", str(tmp_path / "out")], f, tmp_path / "out")
    assert res.code == 2 and f"attribute {attr!r}" in res.stderr and "'rms'" in res.stderr
