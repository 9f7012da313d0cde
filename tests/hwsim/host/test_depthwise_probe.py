"""The NCHWc depthwise conv's probes (:mod:`hwsim.host.depthwise_probe`): what each times, and the
chip fields they give back (:func:`cost_models.cpu.measured_depthwise_ns`)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import CpuUnit, chip_from_dict
from cost_models.cpu import NCHWC_PASS_ACTIVATIONS, measured_depthwise_ns
from hwsim.host import depthwise_probe as dp
from hwsim.host.fingerprint import chip_data
from hwsim.host.measure import make_session
from tests.helpers import host_chip
from tests.hwsim.host.test_calibrate_host import fake_fingerprint


def probe_times(fields: dict[str, Any], pass_ns: float) -> dict[str, float]:
    """What each probe takes per output element on a host whose figures are ``fields`` exactly, and
    whose activation passes take ``pass_ns`` times their place in :data:`NCHWC_PASS_ACTIVATIONS`."""
    unit = chip_from_dict(host_chip(**fields)).units[0]
    assert isinstance(unit, CpuUnit)
    out = {}
    for key, spec in dp.DEPTHWISE_PROBES.items():
        op = dp._probe_op(*spec)
        ns = measured_depthwise_ns(op, unit)
        assert ns is not None
        act = key.rsplit(":", 1)[-1]
        out[key] = ns / op.outputs[0].elements + (pass_ns * (1 + NCHWC_PASS_ACTIVATIONS.index(act)) if act in NCHWC_PASS_ACTIVATIONS else 0.0)
    return out


@settings(max_examples=25, deadline=None)
@given(inside=st.floats(0.05, 0.3), masked_over=st.floats(1.05, 3.0), row=st.floats(1.0, 20.0), call=st.floats(20.0, 400.0),
       output=st.floats(0.05, 0.3), tap=st.floats(0.005, 0.03), pass_ns=st.floats(0.02, 0.2))  # fmt: skip
def test_the_fields_come_back_from_the_times_they_give(inside: float, masked_over: float, row: float, call: float, output: float,
                                                       tap: float, pass_ns: float) -> None:  # fmt: skip
    tiles = {k: (inside * k / 3, inside * k / 3 * masked_over) for k in (3, 5, 7)}
    fields = {"depthwise_tile_ns": tiles, "depthwise_row_ns": row, "depthwise_call_ns": call, "depthwise_output_ns": output,
              "depthwise_tap_ns": tap}  # fmt: skip
    got = dp.depthwise_fields(probe_times(fields, pass_ns))
    assert got["depthwise_row_ns"] == pytest.approx(row, abs=0.01)
    assert got["depthwise_call_ns"] == pytest.approx(call, abs=0.1)
    for k, (i, m) in tiles.items():
        assert got["depthwise_tile_ns"][k] == pytest.approx((i, m), abs=2e-4)
    assert (got["depthwise_output_ns"], got["depthwise_tap_ns"]) == pytest.approx((output, tap), abs=2e-4)
    assert got["nchwc_activation_pass_ns"] == pytest.approx({a: pass_ns * (1 + i) for i, a in enumerate(NCHWC_PASS_ACTIVATIONS)}, abs=2e-4)


def test_unresolved_figures_are_left_out() -> None:
    times = probe_times({"depthwise_tile_ns": {3: (0.09, 0.2), 5: (0.2, 0.4), 7: (0.4, 0.5)}, "depthwise_row_ns": 6.0,
                         "depthwise_output_ns": 0.12, "depthwise_tap_ns": 0.011}, 0.08)  # fmt: skip
    times["depthwise_probe_ns:7:strided"] = times["depthwise_probe_ns:3:strided"] * 0.5  # a 7x7 faster than a 3x3
    times["depthwise_probe_ns:3:Clip"] = times["depthwise_probe_ns:3"]  # the Clip added nothing
    del times["depthwise_probe_ns:5:masked"]
    got = dp.depthwise_fields(times)
    assert set(got) == {"depthwise_tile_ns", "depthwise_row_ns", "nchwc_activation_pass_ns"} and set(got["depthwise_tile_ns"]) == {3, 7}
    assert "depthwise_call_ns" not in got  # no set-up beyond the rows and tiles: left out
    assert set(got["nchwc_activation_pass_ns"]) == set(NCHWC_PASS_ACTIVATIONS) - {"Clip"}


def test_a_chain_takes_off_the_dispatch_and_a_profile_the_profilers_empty_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    compute = {1: 20_000.0, 2: 30_000.0}  # ns a conv, by stride

    def timed(sess: Any, feeds: Any, **_: Any) -> SimpleNamespace:  # a run: 3 us, then 250 ns of dispatch a conv
        convs = [n for n in sess.graph.node if n.op_type == "Conv"]
        passes = [n for n in sess.graph.node if n.op_type in NCHWC_PASS_ACTIVATIONS]  # 1 us each
        return SimpleNamespace(min_ns=3000.0 + len(convs) * (250.0 + compute[1]) + 1000.0 * len(passes))

    def profiled(model: Any, feeds: Any, runs: int = 10) -> dict[str, tuple[str, float]]:
        return {"ReorderInput": ("ReorderInput", 90_000.0), "y_nchwc": ("Conv", compute[2] + 2000.0)}

    monkeypatch.setattr(dp, "make_session", lambda model, threads, opt: model)
    monkeypatch.setattr(dp, "time_session", timed)
    monkeypatch.setattr(dp, "profile_nodes", profiled)
    got = dp.depthwise_times(rounds=1, kernel_ns=250.0, empty_ns=2000.0)
    for key, (_k, rows, width, stride) in dp.DEPTHWISE_PROBES.items():
        passed = 1000.0 if key.rsplit(":", 1)[-1] in NCHWC_PASS_ACTIVATIONS else 0.0
        assert got[key] == pytest.approx((compute[stride] + passed) / (dp.PROBE_CHANNELS * rows * width))


def test_a_chip_gets_the_fields_and_not_the_probe_times() -> None:
    fields = {"depthwise_tile_ns": {3: (0.09, 0.2), 5: (0.2, 0.4), 7: (0.4, 0.5)}, "depthwise_row_ns": 6.0,
              "depthwise_output_ns": 0.12, "depthwise_tap_ns": 0.011}  # fmt: skip
    fp = replace(fake_fingerprint(), kernel_rates=probe_times(fields, 0.08))
    unit = chip_data(fp)["units"][0]
    assert not any(k.startswith("depthwise_probe_ns") for k in unit)
    chip = chip_from_dict({**chip_data(fp)})
    cpu = chip.units[0]
    assert isinstance(cpu, CpuUnit)
    assert cpu.depthwise_tile_ns is not None
    for k, figures in fields["depthwise_tile_ns"].items():  # type: ignore[attr-defined]
        assert cpu.depthwise_tile_ns[k] == pytest.approx(figures, abs=2e-4)
    assert cpu.nchwc_activation_pass_ns is not None and cpu.nchwc_activation_pass_ns["Clip"] == pytest.approx(0.08, abs=2e-4)


def test_the_probes_run_under_onnxruntime() -> None:
    model = dp.depthwise_probe(3, 4, 24, 1, 2, "Clip")
    out = make_session(model, 1, "all").run(None, {"x": np.ones((1, dp.PROBE_CHANNELS, 4, 24), np.float32)})
    assert out[0].shape == (1, dp.PROBE_CHANNELS, 4, 24) and float(out[0].max()) <= 6.0
    strided = dp.depthwise_probe(7, 4, 8, 2, 3)
    assert len(strided.graph.output) == 3
