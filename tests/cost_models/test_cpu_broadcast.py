"""A binary elementwise kernel whose inputs broadcast runs in spans on onnxruntime's CPU
(``broadcast_spans``), each paying the span cost the fingerprint measures (``broadcast_span_ns``);
equal shapes, a scalar operand, an op type outside the broadcast looper, or a unit without the
figure are priced as before."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from chips.schema import Chip, CpuUnit
from cost_models.cpu import (
    BROADCAST_PARALLEL_MIN_ELEMENTS,
    PARALLEL_MIN_ELEMENTS,
    QUANTIZE_PARALLEL_MIN_ELEMENTS,
    broadcast_spans,
    broadcast_spans_ns,
    intra_op_threads,
    looper_passes,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.onnx_import import from_model_proto
from graph_ir.op_metrics import metrics
from hwsim.host.fingerprint import Dispatch, Fingerprint, chip_data
from hwsim.host.host_merge import fastest, merge_fingerprints
from hwsim.host.kernels import (
    BROADCAST_PROBE_ELEMENTS,
    BROADCAST_PROBES,
    broadcast_probe,
    broadcast_span_from,
    rederived,
)
from hwsim.host.validate import predict_nodes
from tests.helpers import host_chip
from tests.hwsim.host.test_calibrate_host import fake_fingerprint
from tests.hwsim.host.test_host_merge import undisturbed


def _op(op_type: str, a: tuple[int, ...], b: tuple[int, ...]) -> Op:
    out = tuple(max(x, y) for x, y in zip((1,) * (len(b) - len(a)) + a, (1,) * (len(a) - len(b)) + b, strict=True))
    ins = [Tensor("a", a, "float32"), Tensor("b", b, "float32")]
    y = Tensor("y", out, "float32")
    m = metrics(op_type, ins, [y], {})
    return Op("o", op_type, m.category, tuple(ins), (y,), {}, m.macs, m.flops)


dims = st.lists(st.integers(1, 6), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(dims, st.data())
def test_spans_tile_the_output_and_equal_shapes_run_as_one(shape: list[int], data: st.DataObject) -> None:
    # the other operand keeps or drops (to 1) each of the output's trailing dims
    keep = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    other = tuple(d if k else 1 for d, k in zip(shape, keep, strict=True))
    op = _op("Add", tuple(shape), other)
    spans = broadcast_spans(op)
    assert 1 <= spans and math.prod(shape) % spans == 0
    assert broadcast_spans(_op("Add", tuple(shape), tuple(shape))) == 1
    assert broadcast_spans(_op("Mul", tuple(shape), ())) == 1
    # a span never outgrows the output's innermost dim unless that dim broadcasts alike for both
    if shape[-1] > 1 and keep[-1] != all(k or d == 1 for d, k in zip(shape, keep, strict=True)):
        assert math.prod(shape) // spans <= math.prod(d for d in shape if d > 1)


def test_spans_follow_onnxruntime_looper() -> None:
    assert broadcast_spans(_op("Add", (1, 12, 128, 128), (1, 1, 1, 128))) == 12 * 128
    assert broadcast_spans(_op("Sub", (1, 128, 768), (1, 128, 1))) == 128
    assert broadcast_spans(_op("Mul", (1, 64, 56, 56), (64, 1, 1))) == 64
    assert broadcast_spans(_op("Div", (4, 1, 8), (4, 3, 8))) == 12  # broadcasts on either side
    assert broadcast_spans(_op("Relu", (4, 8), (8,))) == 1  # not a broadcast-looper op type
    # an op not in the looper's list is 1 whatever its shapes; a unit without the figure adds nothing
    unit = chip_from_dict(host_chip()).units[0]
    assert isinstance(unit, CpuUnit)
    assert broadcast_spans_ns(_op("Add", (1, 12, 128, 128), (1, 1, 1, 128)), unit) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["Add", "Sub", "Mul", "Div"]), st.sampled_from([8, 16, 64, 128, 1024]), st.integers(1, 64),
       st.floats(1.0, 40.0))
def test_each_span_beyond_the_first_pays_the_measured_cost(op_type: str, row: int, rows: int, span_ns: float) -> None:
    base = {"op_overhead_ns": 270.0, "efficiency": {op_type: 0.3}}
    chip, plain = chip_from_dict(host_chip(**base, broadcast_span_ns=span_ns)), chip_from_dict(host_chip(**base))
    op = _op(op_type, (rows, row), (row,))
    got, before = estimate(op, chip, "cpu", "fp32"), estimate(op, plain, "cpu", "fp32")
    assert got is not None and before is not None
    assert got.latency_ns - before.latency_ns == pytest.approx((rows - 1) * span_ns, rel=1e-9, abs=1e-6)
    assert got.stall_ns - before.stall_ns == pytest.approx((rows - 1) * span_ns, rel=1e-9, abs=1e-6)


def _where(cond: tuple[int, ...], x: tuple[int, ...], y: tuple[int, ...]) -> Op:
    n = max(len(cond), len(x), len(y))
    padded = [(1,) * (n - len(s)) + s for s in (cond, x, y)]
    out = tuple(max(d) for d in zip(*padded, strict=True))
    ins = (Tensor("c", cond, "bool"), Tensor("x", x, "float32"), Tensor("y", y, "float32"))
    t = Tensor("z", out, "float32")
    m = metrics("Where", ins, (t,), {})
    return Op("w", "Where", m.category, ins, (t,), {}, m.macs, m.flops)


def test_where_pays_the_spans_of_its_three_looper_passes() -> None:
    """onnxruntime's Where broadcasts two tensors at a time: the condition with X, the condition
    with Y, then the two selections merged. An attention mask (a row of 128 over 12 x 128 rows)
    with a scalar fill: 1,536 spans selecting X, one selecting the scalar, 1,536 merging."""
    mask = _where((1, 1, 1, 128), (1, 12, 128, 128), ())
    assert looper_passes(mask) == (1536, 1, 1536)
    assert looper_passes(_where((8, 16), (8, 16), (8, 16))) == (1, 1, 1)
    assert looper_passes(_where((8, 1), (8, 16), (1, 16))) == (8, 8, 1)  # a column against X, then against a row
    assert looper_passes(_op("Add", (4, 8), (8,))) == (4,) and looper_passes(_op("Relu", (4, 8), (8,))) == ()
    span = 9.0
    base = {"op_overhead_ns": 270.0, "efficiency": {"Where": 0.05}}
    chip, plain = chip_from_dict(host_chip(**base, broadcast_span_ns=span)), chip_from_dict(host_chip(**base))
    got, before = estimate(mask, chip, "cpu", "fp32"), estimate(mask, plain, "cpu", "fp32")
    assert got is not None and before is not None
    assert got.latency_ns - before.latency_ns == pytest.approx(2 * 1535 * span)


def test_where_and_the_copies_without_a_pool_stay_on_one_thread_whatever_their_size() -> None:
    """Where's looper passes get no thread pool, nor do Slice, Expand, Tile and Pad: over 1 Mi
    floats each ran 0.99-1.01x on two threads, where a Gather or a Concat of as much split."""
    big = _where((1, 1 << 10), (1 << 10, 1 << 10), ())
    assert intra_op_threads(big, 2) == 1
    assert intra_op_threads(_op("Add", (1 << 10, 1 << 10), (1 << 10,)), 2) == 2
    x, y = Tensor("x", (1 << 10, 1 << 10), "float32"), Tensor("y", (1 << 10, 1 << 10), "float32")
    for op_type in ("Slice", "Expand", "Tile", "Pad"):
        assert intra_op_threads(Op("d", op_type, "data", (x,), (y,)), 2) == 1
    assert intra_op_threads(Op("d", "Concat", "data", (x, x), (y,)), 2) == 2


def _span(times: dict[str, float]) -> float:
    span = broadcast_span_from(times)
    assert span is not None
    return span


def _probe_times(span_ns: float, per_op_ns: float = 3000.0) -> dict[str, float]:
    return {key: per_op_ns + BROADCAST_PROBE_ELEMENTS // row * span_ns for key, row in BROADCAST_PROBES.items()}


@settings(max_examples=30, deadline=None)
@given(st.floats(0.5, 100.0), st.floats(100.0, 1e5))
def test_the_span_cost_is_read_back_from_the_probe_times(span_ns: float, per_op_ns: float) -> None:
    assert broadcast_span_from(_probe_times(span_ns, per_op_ns)) == pytest.approx(span_ns)
    assert broadcast_span_from({k: 5000.0 for k in BROADCAST_PROBES}) is None  # no difference: not resolved
    assert broadcast_span_from({}) is None


def test_the_fingerprint_writes_the_field_and_its_chip_predicts_the_probes_back() -> None:
    fp = replace(fake_fingerprint(64.0, 10.0), dispatch=Dispatch(270.0, 3700.0, 2000.0))
    times = _probe_times(9.0)
    rates = {**fp.kernel_rates, **times, "broadcast_span_ns": _span(times)}
    unit = chip_data(replace(fp, kernel_rates=rates))["units"][0]
    assert unit["broadcast_span_ns"] == pytest.approx(9.0, abs=1e-3)
    assert not set(times) & set(unit)  # the probe times are no chip fields
    assert rederived(times, 270.0)["broadcast_span_ns"] == pytest.approx(9.0)
    # at a calibrated Add efficiency that keeps the kernel core-bound (as onnxruntime's is from L2):
    # a pass on the core is not hidden under the level's memory roof
    datas = [chip_data(replace(fp, kernel_rates=r)) for r in (rates, fp.kernel_rates)]
    chips = [chip_from_dict({**d, "units": [{**d["units"][0], "efficiency": {"Add": 0.2}}]}) for d in datas]

    def short_less_long(chip: Chip) -> float:
        short, long = (sum(p.predicted_ns for p in predict_nodes(from_model_proto(broadcast_probe(row)), chip, 1, set()).values())
                       for row in sorted(BROADCAST_PROBES.values()))  # fmt: skip
        return short - long

    # hwsim validate's prediction of the short-row probe beyond the long-row one grows by what the
    # spans took in the probe times (the rest is the model's own per-element cost, the same on both)
    want = times["broadcast_probe_ns:16"] - times["broadcast_probe_ns:1024"]
    assert short_less_long(chips[0]) - short_less_long(chips[1]) == pytest.approx(8 * want, rel=1e-3)


def test_a_merge_derives_the_field_again_from_the_merged_probe_times() -> None:
    # round a's short-row probe undisturbed, round b's long-row one: each round's own figure is off,
    # the merged one is what the merged (fastest) times give
    truth = _probe_times(9.0)
    (short, long) = sorted(BROADCAST_PROBES, key=lambda k: BROADCAST_PROBES[k])

    def with_times(times: dict[str, float]) -> Fingerprint:
        fp = undisturbed()
        return replace(fp, kernel_rates={**fp.kernel_rates, **times, "broadcast_span_ns": _span(times)})

    a = with_times({short: truth[short], long: truth[long] * 1.5})
    b = with_times({short: truth[short] * 1.5, long: truth[long]})
    assert a.kernel_rates["broadcast_span_ns"] != pytest.approx(9.0) != b.kernel_rates["broadcast_span_ns"]
    assert merge_fingerprints([a, b], fastest).kernel_rates["broadcast_span_ns"] == pytest.approx(9.0)


def test_a_broadcast_looper_op_splits_over_threads_from_its_own_element_count() -> None:
    # measured: 88,064 floats 1.00x on two threads, 90,112 1.65x; other elementwise kernels keep their floor
    assert 88_064 < BROADCAST_PARALLEL_MIN_ELEMENTS <= 90_112
    for n, want in ((88_064, 1), (90_112, 2), (1 << 20, 2)):
        assert intra_op_threads(_op("Add", (1, n), (1, n)), 2) == want
        assert intra_op_threads(_op("Mul", (n // 8, 8), (8,)), 2) == want
        assert intra_op_threads(_op("Add", (1, n), (1, n)), 1) == 1
    x, y = Tensor("x", (1, 8, 80, 80), "float32"), Tensor("y", (1, 8, 160, 160), "float32")
    resize = Op("r", "Resize", "elementwise", (x,), (y,), {"mode": "linear"})
    assert BROADCAST_PARALLEL_MIN_ELEMENTS < y.elements < PARALLEL_MIN_ELEMENTS["elementwise"]
    assert intra_op_threads(resize, 2) == 1
    assert intra_op_threads(_op("Add", y.shape, y.shape), 2) == 2


def _quantize_pair(n: int) -> dict[str, Op]:
    """A QuantizeLinear -> DequantizeLinear pair over ``n`` values, as the importer builds them."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(3, np.uint8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="Q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="DQ")]  # fmt: skip
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, n))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, n))], inits)  # fmt: skip
    g = from_model_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    return {op.op_type: op for op in g.ops()}


def test_the_quantize_kernels_split_as_onnxruntime_splits_them() -> None:
    # measured (onnxruntime 1.32, `benchmarks/int8_threads.py --quantize`): QuantizeLinear 0.95-1.00x on
    # two threads up to 69,632 values and 1.47x from 73,728; DequantizeLinear 0.95-1.04x up to 1.5 Mi
    assert 69_632 < QUANTIZE_PARALLEL_MIN_ELEMENTS <= 73_728
    for n, q_want in ((49_152, 1), (69_632, 1), (73_728, 2), (1 << 20, 2)):
        ops = _quantize_pair(n)
        assert intra_op_threads(ops["QuantizeLinear"], 2) == q_want
        assert intra_op_threads(ops["DequantizeLinear"], 2) == 1
        assert intra_op_threads(ops["QuantizeLinear"], 1) == 1
    # the category's floor the two kernels would otherwise take splits them from far fewer values
    small = _quantize_pair(49_152)
    assert all(PARALLEL_MIN_ELEMENTS.get(op.category, 64 * 1024) < 49_152 for op in small.values())
