"""A per-element kernel whose fixed time per call the fingerprint measured (``kernel_setup_ns``)
pays that time beside its dispatch instead of the generic set-up of a small kernel (half
efficiency at ``HALF_EFFICIENCY_FLOPS``, scaled by its efficiency); an op type not measured, or a
unit without the field, is priced as before."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from chips.schema import Chip
from cost_models.cpu import HALF_EFFICIENCY_FLOPS, core_bytes, kernel_setup_ns
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.op_metrics import metrics
from hwsim.host.fingerprint import Dispatch, chip_data
from hwsim.host.kernels import SETUP_PROBES, kernel_setups
from tests.helpers import host_chip
from tests.hwsim.host.test_calibrate_host import fake_fingerprint

SETUPS = {"Add": 20.0, "Sigmoid": 0.0}


def _op(op_type: str, n: int) -> Op:
    x = Tensor("x", (1, n), "float32")
    ins = (x, Tensor("c", (1, n), "float32", is_weight=True)) if op_type in ("Add", "Mul") else (x,)
    y = Tensor("y", (1, n), "float32")
    m = metrics(op_type, list(ins), [y], {})
    return Op("o", op_type, m.category, ins, (y,), {}, m.macs, m.flops)


def _chips(**unit: object) -> tuple[Chip, Chip]:
    base = {"op_overhead_ns": 270.0, "weights_in_cache": True, "efficiency": {"Add": 0.15, "Mul": 0.37, "Sigmoid": 0.34}}
    return chip_from_dict(host_chip(**base, **unit)), chip_from_dict(host_chip(**base))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["Add", "Sigmoid"]), st.integers(1, 4096))
def test_a_measured_set_up_replaces_the_generic_one(op_type: str, n: int) -> None:
    chip, plain = _chips(kernel_setup_ns=SETUPS)
    op = _op(op_type, n)
    got, before = estimate(op, chip, "cpu", "fp32"), estimate(op, plain, "cpu", "fp32")
    assert got is not None and before is not None
    # the generic set-up is gone from the work (half efficiency at 20 kFLOP), which is its FLOPs
    # or its bytes through L1 at the op's efficiency; the measured set-up is in the overhead
    unit, eff = chip.units[0], chip.units[0].efficiency[op_type]
    work = max(op.flops / (unit.peak_flops_per_ns("fp32") * eff), core_bytes(op, "fp32") / (unit.l1_bandwidth_gbps * eff))
    assert got.compute_ns == pytest.approx(work)
    assert got.overhead_ns == pytest.approx(before.overhead_ns + SETUPS[op_type])
    if op.flops < HALF_EFFICIENCY_FLOPS / 20:  # where the generic set-up was most of the price
        assert got.compute_ns < 0.5 * before.compute_ns


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4096))
def test_an_op_type_not_measured_keeps_the_generic_set_up(n: int) -> None:
    chip, plain = _chips(kernel_setup_ns=SETUPS)
    op = _op("Mul", n)
    assert kernel_setup_ns(op, chip.units[0]) is None
    assert estimate(op, chip, "cpu", "fp32") == estimate(op, plain, "cpu", "fp32")


def test_the_fingerprint_writes_the_set_ups_beside_its_dispatch() -> None:
    # the probe times are the dispatch plus each kernel's set-up; a kernel faster than the
    # dispatch probe's own (a unary one) reads 0, not negative; the probe times are no chip fields
    fp = fake_fingerprint(64.0, 10.0)
    times = {SETUP_PROBES["Add"]: 290.0, SETUP_PROBES["Sigmoid"]: 230.0}
    fp = replace(fp, dispatch=Dispatch(270.0, 3700.0, 2000.0), kernel_rates={**fp.kernel_rates, **times})
    unit = chip_data(fp)["units"][0]
    assert unit["kernel_setup_ns"] == {"Add": 20.0, "Sigmoid": 0.0} == kernel_setups(times, 270.0)
    assert not set(times) & set(unit)
