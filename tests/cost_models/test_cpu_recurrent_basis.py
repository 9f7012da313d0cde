"""The calibration basis of onnxruntime's recurrent kernels: a calibrated efficiency scales the part
the core's rate sets (the projection, ``R`` from L1/L2 at the GEMV rate), not the streams the
fingerprint measured (``R`` from beyond L2, the weights' first pass) nor the fixed step costs; and
calibration fits it on that same part, so that an efficiency fit on small LSTMs whose steps run
from L2 leaves an LSTM whose ``R`` streams from L3 as its measured rates price it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import Chip, chip_from_dict
from cost_models.base import OpCost
from cost_models.cpu import (
    RecurrentTime,
    calibration_basis_ns,
    recurrent_time,
    stream_ns,
    stream_parts_ns,
)
from cost_models.table import estimate
from graph_ir.ir import Op
from hwsim.host.calibration import apply, fit
from hwsim.host.measure import Timing
from hwsim.host.validate import NodeResult, Validation
from tests.cost_models.test_cpu_kernels import rnn
from tests.helpers import host_chip

#: Kernel rates shaped like the CI VM's fingerprint: GEMV 102 GB/s in L2, 26 GB/s from beyond it.
RATES: dict[str, Any] = {"gemv_gbps": 102.0, "gemv_far_gbps": 26.0}


def chip(**efficiency: float) -> Chip:
    return chip_from_dict(host_chip(op_overhead_ns=0.0, efficiency=efficiency, **RATES))


def looped(c: Chip) -> Chip:
    """``c`` with each op run alone in a loop: its weights stay cached between runs (their first
    pass from the level holding them, :func:`cost_models.cpu.first_pass_gbps`; not dumped, so
    set again after :func:`apply`)."""
    return c.model_copy(update={"units": [u.model_copy(update={"weights_in_cache": True}) for u in c.units]})


def cost(op: Op, c: Chip) -> OpCost:
    out = estimate(op, looped(c), "cpu", "model")
    assert out is not None
    return out


def parts(op: Op) -> RecurrentTime:
    c = looped(chip())
    return recurrent_time(op, c.units[0], c, "fp32", op.weight_bytes(None), 1)  # type: ignore[arg-type]


class TestTheEfficiencyScalesTheCorePart:
    def test_an_lstm_streaming_r_from_l3_is_barely_slowed(self) -> None:
        big = rnn("LSTM", 1024, 8)  # R: 16.8 MB, eight times the L2
        t = parts(big)
        assert t.stream_ns > 5 * t.core_ns  # memory-bound: R from L3 at the far GEMV rate
        plain, calibrated = cost(big, chip()), cost(big, chip(LSTM=0.5))
        # scaling the whole kernel (the old basis) took it to 2x
        assert calibrated.compute_ns == pytest.approx(t.core_ns / 0.5 + t.stream_ns + t.fixed_ns)
        assert calibrated.latency_ns < 1.2 * plain.latency_ns

    def test_an_lstm_in_l2_is_slowed_nearly_by_the_whole_factor(self) -> None:
        small = rnn("LSTM", 128, 50)  # R: 256 KiB, in L2 at the GEMV rate
        t = parts(small)
        assert t.core_ns > 0.8 * t.total_ns
        assert cost(small, chip(LSTM=0.5)).latency_ns > 1.8 * cost(small, chip()).latency_ns

    @given(st.sampled_from(["LSTM", "GRU"]), st.integers(16, 1024), st.integers(1, 40), st.integers(1, 2),
           st.floats(0.2, 1.0))  # fmt: skip
    def test_only_the_core_part_moves(self, op_type: str, hidden: int, steps: int, dirs: int, e: float) -> None:
        op = rnn(op_type, hidden, steps, dirs)
        t = parts(op)
        plain, calibrated = cost(op, chip()), cost(op, chip(**{op_type: e}))
        assert plain.compute_ns == pytest.approx(t.total_ns)
        assert plain.stall_ns == pytest.approx(t.stream_ns + t.fixed_ns)
        assert calibration_basis_ns(op, plain) == pytest.approx(t.core_ns)
        assert calibrated.compute_ns == pytest.approx(t.calibrated_ns(e))
        assert calibrated.memory_ns == plain.memory_ns  # the memory roof stays physical
        slack = plain.latency_ns * 1e-12  # e a hair under 1: the two sums may round one ulp apart
        assert plain.latency_ns - slack <= calibrated.latency_ns <= plain.latency_ns + t.core_ns * (1 / e - 1) * (1 + 1e-9) + slack

    @given(st.floats(1e3, 1e8), st.floats(5.0, 60.0))
    def test_the_stream_parts_add_up_to_the_stream(self, nbytes: float, far: float) -> None:
        levels = [(48.0, 200.0), (2048.0, 130.0), (32768.0, 38.0)]
        assert sum(stream_parts_ns(nbytes, levels, 102.0, 8.0, far)) == pytest.approx(stream_ns(nbytes, levels, 102.0, 8.0, far))


def validation(name: str, ops: list[Op], e_true: float) -> Validation:
    """``ops`` measured as a core running them at ``e_true`` of its rate would: their core part at
    ``e_true``, their streams and fixed costs as predicted (no dispatch, timed = profiled)."""
    roof = chip()
    nodes = []
    for op in ops:
        t, r = parts(op), cost(op, roof)
        nodes.append(NodeResult(op.name, op.op_type, False, r.latency_ns, t.calibrated_ns(e_true),
                                calibration_basis_ns(op, r), r.memory_ns, r.stall_ns, "rnn"))  # fmt: skip
    total = sum(n.measured_ns for n in nodes)
    return Validation(name, "host", 1, "all", Timing((total,)), tuple(nodes), 0.0, (), total, total, (total,))


def named(op: Op, name: str) -> Op:
    return Op(name, op.op_type, op.category, op.inputs, op.outputs, op.attrs, op.macs, op.flops)


class TestCalibrationFitsTheCorePart:
    @given(st.floats(0.6, 1.0))
    def test_small_lstms_fit_the_cores_rate_and_a_big_one_keeps_its_streams(self, e_true: float) -> None:
        # the calibration set: lstm_gru- and audio_kws-like LSTMs, compute/L2-bound
        calib = [validation("lstm_gru", [named(rnn("LSTM", 128, 100), "a")], e_true),
                 validation("audio_kws", [named(rnn("LSTM", 64, 49), "b")], e_true)]  # fmt: skip
        f = fit(calib, "cpu")
        assert f.efficiency["LSTM"] == pytest.approx(e_true, abs=2e-4)
        calibrated = apply(chip(), f)
        for op in (rnn("LSTM", 128, 100), rnn("LSTM", 512, 16), rnn("LSTM", 768, 24, dirs=2)):
            truth = parts(op).calibrated_ns(e_true)
            # held out beyond the L2: within 0.1 %, where the whole-kernel basis put it up to 1 / e_true slow
            assert cost(op, calibrated).compute_ns == pytest.approx(truth, rel=1e-3)

    @given(st.floats(0.6, 1.0), st.floats(0.9, 1.2))
    def test_a_big_lstms_stream_does_not_vote_beside_small_ones(self, e_true: float, far_error: float) -> None:
        # lstm_lm-like: R 6.8 MB from L3, measured with its stream ``far_error`` times the predicted one
        big = named(rnn("LSTM", 650, 35), "big")
        t = parts(big)
        slow = validation("lm", [big], e_true)
        node = slow.nodes[0]
        measured = t.core_ns / e_true + t.stream_ns * far_error + t.fixed_ns
        slow = replace(slow, nodes=(replace(node, measured_ns=measured),), profiled_total_ns=measured,
                       measured_ns=measured)  # fmt: skip
        small = validation("lstm_gru", [named(rnn("LSTM", 128, 100), "a")], e_true)
        f = fit([small, slow], "cpu")
        # its core part is a tenth of its time: it says little about the core's rate, and is not asked
        assert f.efficiency["LSTM"] == pytest.approx(e_true, abs=2e-4)
