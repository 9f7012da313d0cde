"""The pool hand-off of a split recurrent step product, measured by the fingerprint on its threads
(``step_handoff_ns``): read off two runs of a one-direction LSTM/GRU that differ in their steps, less
what the CPU model gives the extra steps without their hand-offs, and priced back by that model."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from chips.schema import Chip, CpuUnit
from cost_models.cpu import (
    RECURRENT_SPLIT_STEP_NS,
    recurrent_sections,
    sections_ns,
    step_handoff_ns,
)
from graph_ir.ir import Op
from graph_ir.onnx_import import from_model_proto
from hwsim.host.fingerprint import Dispatch, chip_data
from hwsim.host.kernels import (
    HANDOFF_PROBES,
    HANDOFF_STEPS,
    _modelled_split,
    handoff_probe,
    step_handoffs,
)
from hwsim.host.validate import predict_nodes
from tests.helpers import host_chip
from tests.hwsim.host.test_calibrate_host import fake_fingerprint

UNIT = {"gemv_gbps": 100.0, "parallel_section_ns": 800.0, "op_overhead_ns": 300.0}


def _chip(threads: int, **unit: object) -> Chip:
    return chip_from_dict(host_chip(**{**UNIT, "cores": threads, **unit}))


def _probe_op(op_type: str, steps: int) -> Op:
    graph = from_model_proto(handoff_probe(op_type, steps)[0])
    return next(o for o in graph.ops() if o.op_type == op_type)


def _measured(
    chip: Chip, threads: int, handoff: dict[str, float], run_ns: float = 5000.0
) -> dict[str, float]:
    """The probe times a host whose split products each take ``handoff`` would show: the model's
    kernel without hand-offs, the products' hand-offs, and a run call."""
    out = {}
    for (op_type, steps), key in HANDOFF_PROBES.items():
        ns, products = _modelled_split(from_model_proto(handoff_probe(op_type, steps)[0]), op_type, chip, threads)
        out[key] = run_ns + ns + products * handoff[op_type]
    return out


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([2, 4]), st.floats(50.0, 5000.0), st.floats(50.0, 5000.0))
def test_the_hand_offs_are_read_back_from_the_probe_times(
    threads: int, lstm: float, gru: float
) -> None:
    chip = _chip(threads)
    got = step_handoffs(chip, _measured(chip, threads, {"LSTM": lstm, "GRU": gru}), threads)
    assert got == pytest.approx({"LSTM": lstm, "GRU": gru}, abs=0.06)


def test_every_probe_step_product_splits_and_its_projection_does_not() -> None:
    # the probe reads hand-offs only where the products of each step split over two threads, and the
    # input projection (one feature) adds no section of its own to the longer run
    for op_type in ("LSTM", "GRU"):
        short, long = (_probe_op(op_type, n) for n in HANDOFF_STEPS)
        (a_calls, a_products), (b_calls, b_products) = (
            recurrent_sections(short, 2),
            recurrent_sections(long, 2),
        )
        per_step = {"LSTM": 1, "GRU": 2}[op_type]
        assert (a_products, b_products) == (
            HANDOFF_STEPS[0] * per_step,
            HANDOFF_STEPS[1] * per_step,
        )
        assert a_calls == b_calls


def test_nothing_is_read_on_one_thread_or_from_a_residual_that_is_not_positive() -> None:
    chip = _chip(2)
    rates = _measured(chip, 2, {"LSTM": 900.0, "GRU": 600.0})
    assert step_handoffs(_chip(1), rates, 1) == {}
    slow_short = {
        **rates,
        HANDOFF_PROBES["GRU", HANDOFF_STEPS[0]]: rates[HANDOFF_PROBES["GRU", HANDOFF_STEPS[1]]],
    }
    assert step_handoffs(chip, slow_short, 2) == {"LSTM": pytest.approx(900.0, abs=0.06)}
    assert step_handoffs(chip, {k: v for k, v in rates.items() if ":LSTM:" in k}, 2) == {
        "LSTM": pytest.approx(900.0, abs=0.06)
    }


def test_the_fingerprint_writes_the_hand_offs_and_its_chip_predicts_the_probes_back() -> None:
    fp = replace(fake_fingerprint(64.0, 10.0), threads=2, dispatch=Dispatch(270.0, 3700.0, 2000.0))
    fp = replace(
        fp, kernel_rates={**fp.kernel_rates, "gemv_gbps": 90.0, "parallel_section_ns": 800.0}
    )
    chip0 = chip_from_dict(chip_data(fp))
    times = _measured(chip0, 2, {"LSTM": 850.0, "GRU": 600.0})
    unit = chip_data(replace(fp, kernel_rates={**fp.kernel_rates, **times}))["units"][0]
    assert unit["step_handoff_ns"] == pytest.approx({"LSTM": 850.0, "GRU": 600.0}, abs=0.06)
    assert not set(times) & set(unit)  # the probe times are no chip fields
    chip = chip_from_dict(chip_data(replace(fp, kernel_rates={**fp.kernel_rates, **times})))
    # hwsim validate's own prediction of the longer probe beyond the shorter is what was measured
    for op_type in ("LSTM", "GRU"):
        short, long = (
            predict_nodes(from_model_proto(handoff_probe(op_type, n)[0]), chip, 2, set())
            for n in HANDOFF_STEPS
        )
        got = sum(p.predicted_ns for p in long.values()) - sum(
            p.predicted_ns for p in short.values()
        )
        want = (
            times[HANDOFF_PROBES[op_type, HANDOFF_STEPS[1]]]
            - times[HANDOFF_PROBES[op_type, HANDOFF_STEPS[0]]]
        )
        assert got == pytest.approx(want, rel=1e-4)


def test_a_one_thread_fingerprint_or_one_without_the_step_rate_writes_none() -> None:
    fp = replace(fake_fingerprint(64.0, 10.0), dispatch=Dispatch(270.0, 3700.0, 2000.0))
    fp = replace(fp, kernel_rates={**fp.kernel_rates, "gemv_gbps": 90.0})
    chip0 = chip_from_dict(chip_data(replace(fp, threads=2)))
    times = _measured(chip0, 2, {"LSTM": 850.0, "GRU": 600.0})
    assert (
        "step_handoff_ns"
        not in chip_data(replace(fp, kernel_rates={**fp.kernel_rates, **times}))["units"][0]
    )
    no_rate = {k: v for k, v in {**fp.kernel_rates, **times}.items() if k != "gemv_gbps"}
    assert (
        "step_handoff_ns" not in chip_data(replace(fp, threads=2, kernel_rates=no_rate))["units"][0]
    )


class TestPricing:
    """What a measured hand-off changes in a kernel's pool cost: each split product pays it."""

    def test_a_gru_and_an_lstm_pay_their_measured_hand_offs(self) -> None:
        measured, plain = (
            _chip(2, step_handoff_ns={"GRU": 600.0, "LSTM": 850.0}).units[0],
            _chip(2).units[0],
        )
        assert isinstance(measured, CpuUnit) and isinstance(plain, CpuUnit)
        for op_type, per_product in (("GRU", 600.0), ("LSTM", 850.0)):
            op = _probe_op(op_type, 56)
            products = recurrent_sections(op, 2)[1]
            assert sections_ns(op, plain, 2) - sections_ns(op, measured, 2) == pytest.approx(
                products * (RECURRENT_SPLIT_STEP_NS - per_product)
            )

    def test_a_calibrated_lstm_figure_goes_first_and_a_gru_keeps_its_own(self) -> None:
        unit = _chip(
            2, step_handoff_ns={"GRU": 600.0, "LSTM": 850.0}, recurrent_section_ns=2300.0
        ).units[0]
        assert isinstance(unit, CpuUnit)
        assert step_handoff_ns(_probe_op("LSTM", 8), unit) == 2300.0
        assert step_handoff_ns(_probe_op("GRU", 8), unit) == 600.0

    def test_an_op_type_not_measured_keeps_the_default(self) -> None:
        unit = _chip(2, step_handoff_ns={"LSTM": 850.0}).units[0]
        assert isinstance(unit, CpuUnit)
        assert step_handoff_ns(_probe_op("GRU", 8), unit) == RECURRENT_SPLIT_STEP_NS
