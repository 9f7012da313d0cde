"""hwsim.host.op_probes: the single-op probes the fingerprint times for op types no calibration
model holds, and the efficiencies it writes from them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.cpu import kernel_type
from cost_models.table import estimate
from graph_ir.onnx_import import from_model_proto
from hwsim.host.kernels import per_element_efficiencies
from hwsim.host.measure import profile_nodes
from hwsim.host.op_probes import (
    PROBE_RATES,
    PROBED_OP_TYPES,
    SCATTER_FAR_PROBE,
    SCATTER_FAR_SHAPE,
    SHARED_PROBE_RATES,
    probe_efficiencies,
    probe_model,
    probe_rates,
    scatter_far_from,
    scatter_probe,
)
from tests.helpers import host_chip


@pytest.mark.parametrize("op_type", PROBED_OP_TYPES)
def test_each_probe_is_one_costed_op_that_onnxruntime_runs(op_type: str) -> None:
    import onnxruntime as ort

    model, feeds = probe_model(op_type)
    onnx.checker.check_model(model, full_check=True)
    graph = from_model_proto(model, source=op_type)
    op = graph.op("probe")  # the probe's name is the kernel class it times (CastWide: a Cast of int64)
    assert len(graph) == 1 and kernel_type(op) == op_type
    # a data shuffle does no arithmetic: its bytes are its work
    assert op.category != "unknown" and (op.flops > 0 or op.category == "data")
    y = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    if y.dtype == np.float32:  # in each function's domain: no NaN from the probe's inputs
        assert np.isfinite(y).all()
    # a kernel of its own: not a function body onnxruntime runs instead (HardSwish's, Mish's)
    assert [kind for kind, _ in profile_nodes(model, feeds, runs=1, opt="disable").values()] == [op.op_type]


def test_unknown_op_type_is_refused() -> None:
    with pytest.raises(ValueError, match="no probe for op type 'Conv'"):
        probe_model("Conv")


def test_rates_are_measured_kernel_times() -> None:
    rates, notes = probe_rates(rounds=1, op_types=("Abs", "Asinh"))
    assert notes == [] and set(rates) == {PROBE_RATES["Abs"], PROBE_RATES["Asinh"]}
    # libm's asinh per element against a vectorized absolute value: far slower on every CPU
    assert rates[PROBE_RATES["Asinh"]] > 3 * rates[PROBE_RATES["Abs"]] > 0


@settings(max_examples=15, deadline=None)
@given(op_type=st.sampled_from(PROBED_OP_TYPES), us=st.floats(20.0, 20_000.0))
def test_the_efficiency_predicts_the_probe_time_back(op_type: str, us: float) -> None:
    chip = chip_from_dict(host_chip())
    effs = probe_efficiencies(chip, {PROBE_RATES[op_type]: us * 1000})
    assert set(effs) == {op_type, *SHARED_PROBE_RATES.get(op_type, ())} and 0.0 < effs[op_type] <= 1.0
    assert per_element_efficiencies(chip, {PROBE_RATES[op_type]: us * 1000}) == effs
    data = host_chip()
    data["units"][0]["efficiency"] = effs
    data["units"][0]["op_overhead_ns"] = 0.0
    graph = from_model_proto(probe_model(op_type)[0], source=op_type)
    cost = estimate(graph.op("probe"), chip_from_dict(data), "cpu", "model")
    assert cost is not None
    if effs[op_type] < 1.0:  # a kernel no faster than the core's peak: its time comes back
        assert cost.compute_ns == pytest.approx(us * 1000, rel=0.05)


@settings(max_examples=10, deadline=None)
@given(us=st.floats(5.0, 200.0), row_ns=st.floats(0.5, 3.0))
def test_a_reduction_probe_less_its_rows_gives_the_rate_that_predicts_it_back(us: float, row_ns: float) -> None:
    # the probe sums 1024 rows: their set-ups are priced apart (reduce_row_ns), so the efficiency
    # is fit on the time less them, and the two together give the probe's time back
    data = host_chip()
    data["units"][0].update(reduce_row_ns=row_ns, op_overhead_ns=0.0)
    rows_ns = 1024 * row_ns
    ns = rows_ns + us * 1000
    effs = probe_efficiencies(chip_from_dict(data), {PROBE_RATES["ReduceSum"]: ns})
    plain = probe_efficiencies(chip_from_dict(host_chip()), {PROBE_RATES["ReduceSum"]: ns})
    assert effs["ReduceSum"] >= plain["ReduceSum"]
    data["units"][0]["efficiency"] = effs
    cost = estimate(from_model_proto(probe_model("ReduceSum")[0], source="r").op("probe"), chip_from_dict(data), "cpu", "model")
    assert cost is not None and cost.stall_ns == pytest.approx(rows_ns)
    if effs["ReduceSum"] < 1.0:
        assert cost.compute_ns == pytest.approx(ns, rel=0.05)


@given(us=st.floats(20.0, 2_000.0), op_type=st.sampled_from(SHARED_PROBE_RATES["ReduceSum"]))
def test_the_other_reductions_run_at_the_reduce_sum_probe_s_rate(us: float, op_type: str) -> None:
    # ReduceMean, ReduceMax and ReduceMin aggregate rows as ReduceSum does; calibration then leaves
    # them as probed, as it does ReduceSum
    from hwsim.host.calibration import probed_classes

    effs = probe_efficiencies(chip_from_dict(host_chip()), {PROBE_RATES["ReduceSum"]: us * 1000})
    assert effs[op_type] == effs["ReduceSum"]
    data = host_chip()
    data["units"][0]["efficiency"] = effs
    assert {"ReduceSum", op_type} <= probed_classes(chip_from_dict(data), "cpu")


def test_the_scatter_is_probed_in_l2_and_beyond() -> None:
    rates, notes = probe_rates(rounds=1, op_types=("ScatterElements",))
    assert notes == [] and set(rates) == {PROBE_RATES["ScatterElements"], SCATTER_FAR_PROBE}
    near_updates = probe_model("ScatterElements")[0].graph.initializer[1].dims
    far_updates = SCATTER_FAR_SHAPE[0] * SCATTER_FAR_SHAPE[1]
    per_near = rates[PROBE_RATES["ScatterElements"]] / (near_updates[0] * near_updates[1])
    # one update at a time: no faster per update with 32x as many (slower beyond L2 on the hosts measured)
    assert rates[SCATTER_FAR_PROBE] / far_updates > 0.8 * per_near > 0


@settings(max_examples=10, deadline=None)
@given(near_us=st.floats(50.0, 500.0), far_ns=st.floats(0.5, 20.0))
def test_the_far_scatter_figure_gives_the_far_probe_time_back(near_us: float, far_ns: float) -> None:
    data = host_chip()
    data["units"][0]["op_overhead_ns"] = 0.0
    data["units"][0]["efficiency"] = probe_efficiencies(chip_from_dict(data), {PROBE_RATES["ScatterElements"]: near_us * 1000})
    op = from_model_proto(scatter_probe(*SCATTER_FAR_SHAPE)[0], source="far").op("probe")
    base = estimate(op, chip_from_dict(data), "cpu", "model")
    assert base is not None
    l2_updates = data["units"][0]["l2_kib"] * 1024 / 12  # an int64 index and a float update each
    # the figure adds to the op's compute time (its memory time a floor, as before)
    measured = base.overhead_ns + base.compute_ns + (op.inputs[2].elements - l2_updates) * far_ns
    assert measured > base.latency_ns
    got = scatter_far_from(chip_from_dict(data), {SCATTER_FAR_PROBE: measured})
    assert got == pytest.approx(far_ns, rel=1e-6)
    data["units"][0]["scatter_far_update_ns"] = got
    cost = estimate(op, chip_from_dict(data), "cpu", "model")
    assert cost is not None and cost.latency_ns == pytest.approx(measured, rel=1e-6)
    # the probe in L2 is not moved by it; a far probe no slower than priced leaves the field out
    near = estimate(from_model_proto(probe_model("ScatterElements")[0], source="near").op("probe"), chip_from_dict(data), "cpu", "model")
    assert near is not None and "beyond L2" not in near.note
    assert scatter_far_from(chip_from_dict(data), {SCATTER_FAR_PROBE: base.latency_ns * 0.9}) is None
