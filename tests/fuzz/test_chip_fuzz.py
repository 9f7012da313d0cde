"""Fuzz the chip reader and the calibration reader behind it, through ``hwsim run``: the bundled
RK3588 with any YAML value at any key path, keys deleted or added, YAML garbage, bytes that are
not UTF-8; a calibration file mutated the same way."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.harness import check_refusal_or_run, fuzz_settings, mutated
from tests.helpers import MODELS

CHIP: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parents[2] / "chips" / "rk3588.yaml").read_text()
)
CALIBRATION: dict[str, Any] = {
    "chip": "rk3588",
    "units": {
        "npu": {"efficiency": {"Conv": 0.5, "Gemm": 0.4}, "op_overhead_ns": 2000.0},
        "cpu_big": {},
    },
}
MODEL = MODELS / "mlp_mnist.onnx"


def _yaml(data: Any) -> bytes:
    return yaml.safe_dump(data, allow_unicode=True).encode()


YAML_GARBAGE = st.one_of(
    st.binary(max_size=64),
    st.text(alphabet=":-[]{}!&*#|>'\"\n\t ab1.", max_size=40).map(str.encode),
)


def _run(reader: str, chip_text: bytes, cal_text: bytes | None = None) -> None:
    with tempfile.TemporaryDirectory() as d:
        chip, out = Path(d) / "chip.yaml", Path(d) / "out"
        chip.write_bytes(chip_text)
        files: tuple[Path, ...] = (chip,)
        if cal_text is not None:
            cal = Path(d) / "cal.yaml"
            cal.write_bytes(cal_text)
            files += (cal,)
        argv = ["run", str(chip), str(MODEL), "--out", str(out), "--no-plots", "--allow-overcommit"]
        check_refusal_or_run(reader, argv, files, out)


@fuzz_settings(100)
@given(st.one_of(mutated(CHIP).map(_yaml), YAML_GARBAGE))
def test_chip_yaml(content: bytes) -> None:
    _run("chip-yaml", content)


@fuzz_settings(100)
@given(st.one_of(mutated(CALIBRATION).map(_yaml), YAML_GARBAGE))
def test_calibration_yaml(content: bytes) -> None:
    _run("calibration-yaml", _yaml({**CHIP, "calibration": "cal.yaml"}), content)
