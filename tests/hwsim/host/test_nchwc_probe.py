"""The dense NCHWc conv's calls and filter pass (:func:`cost_models.cpu.nchwc_conv_calls`,
:func:`cost_models.cpu.nchwc_conv_pass_ns`) and the probes that measure them
(:mod:`hwsim.host.nchwc_probe`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import CpuUnit, chip_from_dict
from cost_models.cpu import NCHWC_ATTR, nchwc_conv_calls, nchwc_conv_pass_ns, valid_tap_share
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from hwsim.host import nchwc_probe as npb
from hwsim.host.fingerprint import chip_data
from hwsim.host.measure import make_session
from tests.helpers import host_chip, make_op
from tests.hwsim.host.test_calibrate_host import fake_fingerprint


def conv(cin: int, cout: int, side: int, k: int = 3, pad: int = 1, stride: int = 1, groups: int = 1, batch: int = 1,
         block: int | None = 16) -> Op:  # fmt: skip
    out = (side + 2 * pad - k) // stride + 1
    ins = [Tensor("x", (batch, cin, side, side), "float32"), Tensor("w", (cout, cin // groups, k, k), "float32", is_weight=True)]
    attrs: dict[str, Any] = {"pads": [pad] * 4, "strides": [stride] * 2, "group": groups}
    if block:
        attrs[NCHWC_ATTR] = block
    return make_op("Conv", ins, [Tensor("y", (batch, cout, out, out), "float32")], **attrs)


def calls_by_walking(batch: int, groups: int, cin: int, cout: int, rows: int, k: int, pad: int, stride: int, block: int) -> int:
    """The kernel calls as ``snchwc.cpp`` walks a dense conv on one thread: per image, group and
    set of four output blocks, its algorithm's loops."""
    calls = 0
    per_in, blocks = cin // groups, -(-(cout // groups) // block)
    for _image in range(batch):
        for _group in range(groups):
            for _set in range(0, blocks, 4):
                if per_in < block:  # the NCHW algorithm: its calls are not the ones priced
                    continue
                if k == 1 and pad == 0:  # pointwise: all rows in one pass where unstrided
                    passes = rows if stride > 1 else 1
                    calls += sum(1 for _pass in range(passes) for _ic in range(0, per_in, 128))
                else:  # NCHWc: every input block, every row
                    calls += sum(1 for _ic in range(0, per_in, block) for _row in range(rows))
    return calls


@settings(max_examples=80, deadline=None)
@given(per_in=st.integers(1, 80).map(lambda c: c * 4), per_out=st.integers(1, 40).map(lambda c: c * 8), side=st.integers(1, 40),
       k=st.sampled_from([1, 3, 5]), pad=st.sampled_from([0, 1, 2]), stride=st.sampled_from([1, 2]), groups=st.sampled_from([1, 2]),
       batch=st.integers(1, 3), block=st.sampled_from([8, 16]))  # fmt: skip
def test_the_calls_are_those_mlas_makes(per_in: int, per_out: int, side: int, k: int, pad: int, stride: int, groups: int,
                                        batch: int, block: int) -> None:  # fmt: skip
    side = max(side, k)
    op = conv(per_in * groups, per_out * groups, side, k, pad, stride, groups, batch, block)
    rows = op.outputs[0].shape[2]
    assert nchwc_conv_calls(op) == calls_by_walking(batch, groups, per_in * groups, per_out * groups, rows, k, pad, stride, block)


def test_other_convs_make_no_calls() -> None:
    assert nchwc_conv_calls(conv(64, 64, 8, block=None)) == 0  # not blocked: im2col + SGEMM
    depthwise = conv(64, 64, 8, groups=64)
    assert nchwc_conv_calls(depthwise) == 0


def cpu(**fields: Any) -> CpuUnit:
    unit = chip_from_dict(host_chip(**fields)).units[0]
    assert isinstance(unit, CpuUnit)
    return unit


def test_without_the_figure_nothing_is_priced_beside_the_fmas() -> None:
    op = conv(192, 192, 4)
    chip = chip_from_dict(host_chip())
    unit = chip.units[0]
    assert isinstance(unit, CpuUnit)
    assert nchwc_conv_pass_ns(op, unit, chip, 192 * 192 * 36) == 0.0


def test_the_pass_is_the_calls_and_the_filter_from_where_the_weights_are_kept() -> None:
    op, w_b = conv(192, 192, 4), 192 * 192 * 36
    chip = chip_from_dict(host_chip(nchwc_call_ns=30.0))
    unit = chip.units[0]
    assert isinstance(unit, CpuUnit)
    from_dram = w_b / chip.dram.bandwidth_gbps  # a plain run: no loop keeps the weights
    assert nchwc_conv_pass_ns(op, unit, chip, w_b) == pytest.approx(144 * 30.0 + from_dram)
    kept = unit.model_copy(update={"weights_in_cache": True, "resident_weight_bytes": 4.0 * 2**20})
    assert nchwc_conv_pass_ns(op, kept, chip, w_b) == pytest.approx(144 * 30.0 + w_b / unit.l3_bandwidth_gbps)


@pytest.mark.parametrize(("channels", "level"), [(192, "l2"), (512, "l3")])
def test_each_image_after_the_first_reads_the_filter_again_from_the_level_holding_it(channels: int, level: str) -> None:
    chip = chip_from_dict(host_chip(nchwc_call_ns=30.0))  # L2 2 MiB, L3 32 MiB
    unit = chip.units[0]
    assert isinstance(unit, CpuUnit)
    w_b = channels * channels * 36  # 1.3 MiB in the L2, 9 MiB only in the L3
    one, eight = (nchwc_conv_pass_ns(conv(channels, channels, 4, batch=b), unit, chip, w_b) for b in (1, 8))
    calls = nchwc_conv_calls(conv(channels, channels, 4, batch=1))
    assert eight - one == pytest.approx(7 * calls * 30.0 + 7 * w_b / getattr(unit, f"{level}_bandwidth_gbps"))


def test_small_maps_pay_more_beside_their_fmas_than_wide_ones() -> None:
    chip = chip_from_dict(host_chip(nchwc_call_ns=30.0))
    plain = chip_from_dict(host_chip())
    share = {}
    for side in (4, 56):
        op = conv(192, 192, side)
        new, old = estimate(op, chip, "cpu", "model"), estimate(op, plain, "cpu", "model")
        assert new is not None and old is not None
        share[side] = new.compute_ns / old.compute_ns
    assert share[4] > share[56] > 1.0


@settings(max_examples=25, deadline=None)
@given(call=st.floats(5.0, 200.0), efficiency=st.floats(0.5, 1.0), peak=st.floats(50.0, 400.0), l3=st.floats(30.0, 300.0))
def test_the_call_figure_comes_back_from_the_times_it_gives(call: float, efficiency: float, peak: float, l3: float) -> None:
    levels = [(48.0, 4 * l3), (1024.0, 2 * l3), (32768.0, l3)]
    times = {}
    for key, (c, side) in npb.NCHWC_PROBES.items():
        op = npb._op(c, side)
        times[key] = op.flops * valid_tap_share(op) / (peak * efficiency) + call * nchwc_conv_calls(op) + c * c * 36 / l3
    assert npb.nchwc_fields(times, peak, levels, 10.0) == {"nchwc_call_ns": pytest.approx(call, rel=1e-3)}


def test_an_unresolved_figure_is_left_out() -> None:
    levels = [(48.0, 400.0), (1024.0, 200.0)]
    times = {key: 1000.0 for key in npb.NCHWC_PROBES}  # no more per conv for more calls
    assert npb.nchwc_fields(times, 100.0, levels, 10.0) == {}
    assert npb.nchwc_fields(dict(list(times.items())[1:]), 100.0, levels, 10.0) == {}


def test_a_chip_gets_the_figure_and_not_the_probe_times() -> None:
    fp = fake_fingerprint()
    peak = fp.matmul_gflops_1t["fp32"]
    times = {}
    for key, (c, side) in npb.NCHWC_PROBES.items():  # the fake L2 (1 MiB at 100 GB/s) holds no chain: DRAM's 10
        op = npb._op(c, side)
        times[key] = op.flops * valid_tap_share(op) / peak + 25.0 * nchwc_conv_calls(op) + c * c * 36 / 10.0
    data = chip_data(replace(fp, kernel_rates={**fp.kernel_rates, **times}))
    assert not any(k.startswith("nchwc_probe_ns") for k in data["units"][0])
    unit = chip_from_dict(data).units[0]
    assert isinstance(unit, CpuUnit)
    assert unit.nchwc_call_ns == pytest.approx(25.0, rel=1e-3)


def test_the_probe_chains_run_under_onnxruntime() -> None:
    out = make_session(npb.nchwc_chain(16, 4, 2), 1, "all").run(None, {"x": np.ones((1, 16, 4, 4), np.float32)})
    assert out[0].shape == (1, 16, 4, 4)


def test_the_chip_notes_a_figure_left_out_only_where_its_own_times_leave_it_out() -> None:
    from hwsim.host.fingerprint import chip_yaml

    fp = fake_fingerprint()
    peak = fp.matmul_gflops_1t["fp32"]
    good = {key: npb._op(c, side).flops * valid_tap_share(npb._op(c, side)) / peak + 25.0 * nchwc_conv_calls(npb._op(c, side))
            + c * c * 36 / 10.0 for key, (c, side) in npb.NCHWC_PROBES.items()}  # fmt: skip
    left_out = "an NCHWc conv's nchwc_call_ns not resolved; left out"
    resolved = chip_yaml(replace(fp, kernel_rates={**fp.kernel_rates, **good}))
    assert "nchwc_call_ns:" in resolved and left_out not in resolved
    flat = chip_yaml(replace(fp, kernel_rates={**fp.kernel_rates, **dict.fromkeys(good, 1000.0)}))
    assert "nchwc_call_ns:" not in flat and left_out in flat
    assert left_out not in chip_yaml(fp)  # not probed (no 16-channel blocks): nothing to say of it
