"""Fuzz the readers of the files around a run, through ``hwsim.cli.main``: a workload YAML
(``run --workload``), a schedule file (``run --schedule``), a sweep YAML (``hwsim sweep``) and a
quantization binding (``run --quant``). Each: a valid file with any value at any key path, keys
deleted or added, any YAML/JSON value, garbage bytes."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.harness import VALUES, check_refusal_or_run, fuzz_settings, mutated, run_cli
from tests.helpers import MODELS

MLP = MODELS / "mlp_mnist.onnx"
KWS = MODELS / "audio_kws.onnx"

WORKLOAD: dict[str, Any] = {
    "window_ms": 5,
    "models": [
        {"name": "mlp", "model": str(MLP), "fps": 1000, "criticality": "high", "deadline_ms": 1.0},
        {"name": "kws", "model": str(KWS), "period_ms": 2.5, "criticality": 1, "offset_ms": 0.5},
    ],
}
SWEEP: dict[str, Any] = {
    "models": [str(MLP)],
    "chips": ["rk3588"],
    "grid": {"precision": ["int8", "fp16"], "npu.sram_kib": [256]},
    "objectives": ["latency_ms", "energy_mj"],
    "constraints": {"latency_ms": "<= 30"},
}
BINDING: dict[str, Any] = {
    "default": "int8",
    "granularity": "per-channel",
    "rules": [
        {"name": "/fc0/Gemm", "dtype": "fp16"},
        {"pattern": "/fc*", "op_type": "Gemm", "granularity": "per-tensor"},
        {"regex": "^/relu[01]/", "dtype": "int4"},
    ],
}

GARBAGE = st.one_of(
    st.binary(max_size=64),
    st.text(alphabet=":-[]{}!&*#|>'\"\n\t ab1.", max_size=40).map(str.encode),
)


def _yaml(data: Any) -> bytes:
    return yaml.safe_dump(data, allow_unicode=True).encode()


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _yaml_inputs(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    return st.one_of(mutated(valid).map(_yaml), VALUES.map(_yaml), GARBAGE)


def _run_with(reader: str, name: str, content: bytes, argv: list[str], ok: tuple[int, ...] = (0, 1)) -> None:
    """``argv`` with ``{file}`` and ``{out}`` filled in, ``content`` written to ``name``."""
    with tempfile.TemporaryDirectory() as d:
        f, out = Path(d) / name, Path(d) / "out"
        f.write_bytes(content)
        filled = [a.format(file=f, out=out) for a in argv]
        check_refusal_or_run(reader, filled, f, out, ok=ok)


@fuzz_settings(30)
@given(_yaml_inputs(WORKLOAD))
def test_workload_yaml(content: bytes) -> None:
    argv = ["run", "rk3588", "--workload", "{file}", "--out", "{out}", "--no-plots"]
    _run_with("workload-yaml", "w.yaml", content, argv)


@fuzz_settings(30)
@given(_yaml_inputs(BINDING))
def test_quant_binding_yaml(content: bytes) -> None:
    argv = ["run", "rk3588", str(MLP), "--quant", "{file}", "--out", "{out}", "--no-plots"]
    _run_with("quant-binding", "b.yaml", content, argv, ok=(0,))


@fuzz_settings(20)
@given(_yaml_inputs(SWEEP))
def test_sweep_yaml(content: bytes) -> None:
    _run_with("sweep-yaml", "s.yaml", content, ["sweep", "{file}", "--out", "{out}", "--workers", "1"], ok=(0,))


_SCHEDULE: dict[str, Any] = {}


def _valid_schedule() -> dict[str, Any]:
    """A schedule file of the MLP on the RK3588, exported once per process."""
    if not _SCHEDULE:
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "s.json"
            res = run_cli(["run", "rk3588", str(MLP), "--out", f"{d}/r", "--no-plots", "--export-schedule", str(f)])
            assert res.code == 0, res.stderr
            _SCHEDULE.update(json.loads(f.read_text(encoding="utf-8")))
    return _SCHEDULE


@st.composite
def _json_inputs(draw: st.DrawFn, valid: Callable[[], dict[str, Any]]) -> bytes:
    """A JSON file: ``valid()`` (made once per process) mutated, any JSON value, or garbage."""
    kind = draw(st.sampled_from(["mutated", "value", "garbage"]))
    if kind == "mutated":
        return _json(draw(mutated(valid())))
    if kind == "value":
        return _json(draw(VALUES))
    return draw(GARBAGE)


@fuzz_settings(30)
@given(_json_inputs(_valid_schedule))
def test_schedule_json(content: bytes) -> None:
    argv = ["run", "rk3588", str(MLP), "--schedule", "{file}", "--out", "{out}", "--no-plots"]
    _run_with("schedule-json", "s.json", content, argv, ok=(0,))


# --- validation data (hwsim accuracy --data) ----------------------------------------------------

DIGITS = MODELS.parent / "trained" / "digits_mlp.onnx"


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def _forged(shape: tuple[int, ...], dtype: str, payload: bytes) -> bytes:
    """An .npz whose ``input`` member's header declares ``shape`` and ``dtype`` over ``payload``."""
    header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape}
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, header)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("input.npy", npy.getvalue() + payload)
    return buf.getvalue()


_DIMS = st.integers(0, 3) | st.sampled_from([64, 65, 10**6, 2**40])
_ARRAYS = st.dictionaries(
    st.sampled_from(["input", "labels", "x", ""]),
    st.tuples(st.lists(_DIMS, max_size=3), st.sampled_from(["float32", "float64", "int64", "uint8", "bool"])),
    max_size=3,
)


@st.composite
def _npz_inputs(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["arrays", "valid-edited", "forged", "garbage"]))
    if kind == "garbage":
        return draw(GARBAGE | st.just(b"PK\x03\x04") | st.just(b"\x93NUMPY"))
    if kind == "forged":
        dims = draw(st.lists(_DIMS, min_size=1, max_size=3))
        return _forged(tuple(dims), draw(st.sampled_from(["<f4", "<i8", "|b1"])), draw(st.binary(max_size=32)))
    if kind == "arrays":  # small shapes only: the file is made here
        spec = {k: ([d for d in dims if d <= 65], t) for k, (dims, t) in draw(_ARRAYS).items()}
        return _npz({k: np.zeros(dims, t) for k, (dims, t) in spec.items()})
    valid = _npz({"input": np.zeros((3, 64), np.float32), "labels": np.arange(3)})
    cut = draw(st.integers(0, len(valid)))
    flips = draw(st.lists(st.tuples(st.integers(0, len(valid) - 1), st.integers(1, 255)), max_size=3))
    data = bytearray(valid[:cut] if draw(st.booleans()) else valid)
    for at, x in flips:
        if at < len(data):
            data[at] ^= x
    return bytes(data)


@fuzz_settings(40)
@given(_npz_inputs())
def test_accuracy_npz(content: bytes) -> None:
    argv = ["accuracy", str(DIGITS), str(DIGITS), "--data", "{file}", "--json"]
    _run_with("accuracy-npz", "val.npz", content, argv, ok=(0, 1))


# --- report folders read back (hwsim compare, hwsim diff) ----------------------------------------

_REPORT: dict[str, Any] = {}


def _report_folder() -> dict[str, Any]:
    """The summary.json of the MLP's run on the RK3588, written once per process."""
    if not _REPORT:
        with tempfile.TemporaryDirectory() as d:
            res = run_cli(["run", "rk3588", str(MLP), "--out", f"{d}/r", "--no-plots"])
            assert res.code == 0, res.stderr
            _REPORT.update(json.loads((Path(d) / "r" / "summary.json").read_text(encoding="utf-8")))
    return _REPORT


@fuzz_settings(30)
@given(_json_inputs(_report_folder))
def test_report_summary_json(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        a, b, out = Path(d) / "run_kept", Path(d) / "run_fuzzed", Path(d) / "out"
        for folder, data in ((a, _json(_report_folder())), (b, content)):
            folder.mkdir()
            (folder / "summary.json").write_bytes(data)
        f = b / "summary.json"
        check_refusal_or_run("report-summary-json", ["compare", str(a), str(b), "--out", str(out)], (f, b), out)
        check_refusal_or_run("report-summary-json", ["diff", str(a), str(b)], (f, b))
