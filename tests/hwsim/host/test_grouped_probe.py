"""The plain grouped conv's probes (:mod:`hwsim.host.grouped_probe`) and the law they measure
(:func:`cost_models.cpu.measured_grouped_ns`, :func:`cost_models.cpu.grouped_work`)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import CpuUnit, chip_from_dict
from cost_models.cpu import (
    GROUPED_CONV_ROW_NS,
    MLAS_STRIDE_N,
    SGEMM_CONV_ATTR,
    conv_strides,
    grouped_conv_ns,
    grouped_work,
    measured_grouped_ns,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from hwsim.host import grouped_probe as gp
from hwsim.host.fingerprint import chip_data
from hwsim.host.measure import make_session
from tests.helpers import host_chip, make_op
from tests.hwsim.host.test_calibrate_host import fake_fingerprint

FIELDS = {"grouped_run_ns": 2.0, "grouped_element_ns": 0.12, "grouped_small_m_ns": 0.0015}


def grouped(cin: int, cout: int, groups: int, rows: int, cols: int, k: int = 3, stride: int = 1, pad: int = 1) -> Op:
    ins = [Tensor("x", (1, cin, rows * stride, cols * stride), "float32"),
           Tensor("w", (cout, cin // groups, k, k), "float32", is_weight=True)]  # fmt: skip
    out = Tensor("y", (1, cout, rows, cols), "float32")
    return make_op("Conv", ins, [out], group=groups, pads=[pad] * 4, strides=[stride] * 2, **{SGEMM_CONV_ATTR: 1})


def unit(**fields: Any) -> CpuUnit:
    cpu = chip_from_dict(host_chip(**fields)).units[0]
    assert isinstance(cpu, CpuUnit)
    return cpu


def runs_by_walking(op: Op) -> int:
    """The im2col's runs as MLAS walks them: each slice of columns copies every output row it
    touches, once per row of B."""
    y = op.outputs[0]
    n, width, k = math.prod(y.shape[2:]), y.shape[-1], math.prod(op.weights[0].shape[1:])
    stride_n, _ = conv_strides(n, k)
    rows = sum((start + min(stride_n, n - start) - 1) // width - start // width + 1 for start in range(0, n, stride_n))
    return y.shape[0] * int(op.attrs["group"]) * k * rows


@settings(max_examples=60, deadline=None)
@given(per_in=st.integers(1, 24), per_out=st.integers(1, 24), groups=st.integers(2, 64), rows=st.integers(1, 60),
       cols=st.integers(1, 60), stride=st.sampled_from([1, 2]))  # fmt: skip
def test_the_work_is_what_mlas_walks(per_in: int, per_out: int, groups: int, rows: int, cols: int, stride: int) -> None:
    op = grouped(per_in * groups, per_out * groups, groups, rows, cols, stride=stride)
    work = grouped_work(op)
    assert work.runs == runs_by_walking(op)
    n, k = rows * cols, per_in * 9
    # every column of B packed once, each slice's rounded up to the kernel's 16, never more than 15 over
    rows_of_b = groups * k
    assert rows_of_b * n <= work.elements < rows_of_b * (n + MLAS_STRIDE_N)
    assert work.elements % (rows_of_b * MLAS_STRIDE_N) == 0
    assert work.fmas == work.elements * per_out
    assert work.small == work.elements * (per_out % 12)
    assert work.gathered == (rows_of_b * n if stride == 2 else 0)


def test_a_pointwise_conv_of_stride_1_has_no_im2col() -> None:
    direct = grouped(128, 128, 32, 28, 28, k=1, pad=0)
    assert grouped_work(direct).runs == 0
    assert grouped_work(grouped(128, 128, 32, 28, 28, k=1, pad=0, stride=2)).runs > 0


def test_narrow_rows_cost_more_than_wide_ones_of_the_same_work() -> None:
    cpu = unit(**FIELDS)
    wide, square, narrow = (measured_grouped_ns(grouped(128, 128, 32, r, c), cpu) for r, c in ((14, 56), (28, 28), (56, 14)))
    assert wide is not None and square is not None and narrow is not None
    assert wide < square < narrow


def test_without_the_figures_the_row_law_holds() -> None:
    op = grouped(128, 128, 32, 28, 28)
    assert measured_grouped_ns(op, unit()) is None
    assert measured_grouped_ns(op, unit(grouped_run_ns=2.0)) is None
    assert grouped_conv_ns(op) >= 32 * 36 * GROUPED_CONV_ROW_NS


def test_the_figures_price_the_conv_and_no_efficiency_scales_them() -> None:
    op = grouped(128, 128, 32, 28, 28)
    chip = chip_from_dict(host_chip(**FIELDS, efficiency={"Conv": 0.5}))
    cost = estimate(op, chip, "cpu", "model")
    assert cost is not None
    cpu = chip.units[0]
    assert isinstance(cpu, CpuUnit)
    expected = measured_grouped_ns(op, cpu)
    assert expected is not None
    assert cost.compute_ns == pytest.approx(expected, rel=1e-9)
    # without them: the roofline at the efficiency, the B packing and the row law on top
    old = estimate(op, chip_from_dict(host_chip(efficiency={"Conv": 0.5})), "cpu", "model")
    assert old is not None and old.compute_ns != pytest.approx(cost.compute_ns, rel=0.01)


@settings(max_examples=25, deadline=None)
@given(run=st.floats(0.5, 5.0), element=st.floats(0.03, 0.4), small=st.floats(0.0, 0.01), peak=st.floats(50.0, 400.0))
def test_the_fields_come_back_from_the_times_they_give(run: float, element: float, small: float, peak: float) -> None:
    times = {}
    for key, spec in gp.GROUPED_PROBES.items():
        w = grouped_work(gp._op(*spec))
        times[key] = w.runs * run + w.elements * element + w.small * small + w.fmas * 2 / peak
    got = gp.grouped_fields(times, peak)
    assert got["grouped_run_ns"] == pytest.approx(run, rel=1e-3)
    assert got["grouped_element_ns"] == pytest.approx(element, rel=1e-3)
    assert got["grouped_small_m_ns"] == pytest.approx(small, abs=1e-5)


def test_unresolved_figures_are_left_out() -> None:
    times = {key: 1000.0 for key in gp.GROUPED_PROBES}  # no more than their FMAs at this peak
    assert gp.grouped_fields(times, 1.0) == {}
    assert gp.grouped_fields(dict(list(times.items())[1:]), 263.0) == {}


def test_a_chip_gets_the_fields_and_not_the_probe_times() -> None:
    peak = fake_fingerprint().matmul_gflops_1t["fp32"]
    times = {}
    for key, spec in gp.GROUPED_PROBES.items():
        w = grouped_work(gp._op(*spec))
        times[key] = w.runs * 2.0 + w.elements * 0.1 + w.small * 0.002 + w.fmas * 2 / peak
    fp = replace(fake_fingerprint(), kernel_rates={**fake_fingerprint().kernel_rates, **times})
    data = chip_data(fp)
    assert not any(k.startswith("grouped_probe_ns") for k in data["units"][0])
    cpu = chip_from_dict(data).units[0]
    assert isinstance(cpu, CpuUnit)
    assert cpu.grouped_run_ns == pytest.approx(2.0, rel=1e-3) and cpu.grouped_element_ns == pytest.approx(0.1, rel=1e-3)


def test_the_probes_run_under_onnxruntime() -> None:
    cin, cout, groups, rows, cols = gp.GROUPED_PROBES["grouped_probe_ns:c128o384g32:28x28"]
    out = make_session(gp.grouped_probe(cin, cout, groups, rows, cols), 1, "all").run(None, {"x": np.ones((1, cin, rows, cols), np.float32)})
    assert out[0].shape == (1, cout, rows, cols)
