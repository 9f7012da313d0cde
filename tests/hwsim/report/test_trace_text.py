"""trace.json's directly formatted op events are the text the JSON encoder gives their dicts."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from hwsim.report.trace import _all_plain, _Events, _op_text, _plain_number, _transfer_text
from hwsim.sim.records import OpRecord, TransferRecord

names = st.text(min_size=1, max_size=12)  # quotes, backslashes, control and non-ASCII characters
ints = st.integers(min_value=0, max_value=2**62)


@given(names, names, names, names, st.integers(0, 63), ints, ints, st.integers(0, 10**15), ints)
def test_op_text_is_the_encoded_dict(
    op: str, op_type: str, unit: str, reason: str, core: int, start_ns: int, dur_ns: int, dram: int, stretch_ps: int
) -> None:
    r = OpRecord(op, op_type, unit, core, start_ns * 1000, (start_ns + dur_ns) * 1000, dram, stretch_ps=stretch_ps)
    ts, dur = start_ns / 1000.0, dur_ns / 1000.0
    args = {"node": op, "op_type": op_type, "unit": unit, "core": core, "dram_bytes": dram, "reason": reason}
    if stretch_ps > 0:
        args["stretch_us"] = stretch_ps / 1e6
    event = {"name": op, "cat": op_type, "ph": "X", "ts": ts, "dur": dur, "pid": 3, "tid": core + 1, "args": args}
    assert _op_text(r, ts, dur, 3, core + 1, reason) == json.dumps(event, separators=(",", ":"))


slices = st.tuples(st.integers(1, 9), st.integers(1, 99), st.integers(0, 10**12), st.integers(0, 10**6))


@given(names, slices, slices)
def test_flow_text_is_the_encoded_dicts(name: str, src: tuple[int, int, int, int], dst: tuple[int, int, int, int]) -> None:
    src = (src[0], src[1], src[2], src[2] + src[3])
    dst = (dst[0], dst[1], dst[2], dst[2] + dst[3])
    ev = _Events(multi=False)
    ev.flow(name, src, dst)
    base = {"name": name, "cat": "dependency", "id": 1}
    s = {**base, "ph": "s", "ts": (src[3] - min(1.0, (src[3] - src[2]) / 2)) / 1000.0, "pid": src[0], "tid": src[1]}
    f = {**base, "ph": "f", "bp": "e", "ts": (dst[2] + min(1.0, (dst[3] - dst[2]) / 2)) / 1000.0, "pid": dst[0],
         "tid": dst[1]}  # fmt: skip
    assert ev.text == [json.dumps(e, separators=(",", ":")) for e in (s, f)]


@given(names, names, names, st.lists(names, max_size=3), st.integers(0, 7), ints, ints, ints, ints)
def test_transfer_text_is_the_encoded_dict(
    tensor: str, producer: str, link: str, consumers: list[str], ch: int, nbytes: int, queued_ps: int, wait_ps: int,
    stretch_ps: int,
) -> None:  # fmt: skip
    start = queued_ps + wait_ps
    x = TransferRecord(tensor, "npu", "cpu", ch, nbytes, producer, tuple(consumers), queued_ps, start, start + 5000,
                       stretch_ps=stretch_ps)  # fmt: skip
    args = {"tensor": tensor, "bytes": nbytes, "src": "npu", "dst": "cpu", "producer": producer,
            "consumers": consumers, "queued_us": queued_ps / 1e6, "wait_us": wait_ps / 1e6, "link": link,
            "channel": ch}  # fmt: skip
    if stretch_ps > 0:
        args["stretch_us"] = stretch_ps / 1e6
    event = {"name": tensor, "cat": "dma", "ph": "X", "ts": 1.5, "dur": 0.25, "pid": 5, "tid": ch + 1, "args": args}
    assert _transfer_text(x, 1.5, 0.25, 5, ch + 1, link, ch) == json.dumps(event, separators=(",", ":"))


counter_values = st.one_of(st.integers(-(2**60), 2**60), st.floats(allow_nan=True, allow_infinity=True))


@given(st.lists(st.tuples(st.integers(0, 2), st.floats(0, 1e6), counter_values), max_size=20))
def test_counters_are_counter_one_at_a_time(rows: list[tuple[int, float, float]]) -> None:
    series = (("busy cores", "cores"), ("utilization", "%"), ('quote " name', "W"))
    one, batch = _Events(multi=False), _Events(multi=False)
    for s, t, v in rows:
        one.counter(series[s][0], 4, t, series[s][1], v)
    batch.counters(4, series, [s for s, _, _ in rows], [t for _, t, _ in rows], [v for _, _, v in rows])
    assert list(batch.sorted_text(7)) == list(one.sorted_text(7))


@given(st.one_of(
    st.lists(st.integers(-(2**60), 2**60)),
    st.lists(st.floats(allow_nan=True, allow_infinity=True)),
    st.lists(counter_values),
    st.lists(st.one_of(counter_values, st.booleans())),
))  # fmt: skip
def test_all_plain_is_plain_number_of_each(values: list[float]) -> None:
    """The type-at-a-time check says what a call per value says (ints near 2**53, inf, nan, bools)."""
    assert _all_plain(values) == all(map(_plain_number, values))


def test_all_plain_edges() -> None:
    assert _all_plain([]) and _all_plain([2**53 - 1, -(2**53) + 1]) and _all_plain([0.0, -1.5])
    assert not _all_plain([2**53]) and not _all_plain([-(2**53)]) and not _all_plain([1.0, math.inf])
    assert not _all_plain([True])


@given(
    st.lists(st.tuples(st.integers(0, 2), st.floats(0, 1e6), counter_values, st.integers(1, 3)), max_size=30),
    st.integers(1, 9),
)
def test_counters_kept_as_numbers_are_their_encoded_dicts(rows: list[tuple[int, float, float, int]], chunk: int) -> None:
    """A counter kept as numbers comes out as the encoder's text of its dict, in time order
    among the events added as text (ties in the order added)."""
    series = (("busy cores", "cores"), ("utilization", "%"), ('quote " name\u00e9', "W"))
    kept, encoded = _Events(multi=False), _Events(multi=False)
    for k, (s, t, v, pid) in enumerate(rows):
        for ev in (kept, encoded):
            if k % 3 == 2:  # a slice between the counters, added as text by both
                ev.add({"name": f"op{k}", "ph": "X", "ts": t, "dur": 1.0, "pid": pid, "tid": 1}, 0.0)
        kept.counter(series[s][0], pid, t, series[s][1], v)
        encoded.add({"name": series[s][0], "ph": "C", "ts": t, "pid": pid, "args": {series[s][1]: v}})
    assert list(kept.sorted_text(chunk)) == list(encoded.sorted_text(chunk))


@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.floats(0, 1e3), st.sampled_from([0.0, -0.0, 1.0, 2.5, 0, 3, 2**40]),
                  st.integers(1, 2)),
        max_size=40,
    ),
    st.integers(1, 9),
)  # fmt: skip
def test_repeated_counter_values_are_their_encoded_dicts(rows: list[tuple[int, float, float, int]], chunk: int) -> None:
    """Counters repeating a few values (what a run's busy cores and bandwidth do; each
    (series, pid, value) is written once and reused) still come out as their dicts' text,
    zeros keeping their sign, an int value and the same float apart."""
    series = (("busy cores", "cores"), ("utilization", "%"), ("bandwidth", "GB/s"))
    kept, encoded = _Events(multi=False), _Events(multi=False)
    for s, t, v, pid in rows:
        kept.counter(series[s][0], pid, t, series[s][1], v)
        encoded.add({"name": series[s][0], "ph": "C", "ts": t, "pid": pid, "args": {series[s][1]: v}})
    assert list(kept.sorted_text(chunk)) == list(encoded.sorted_text(chunk))
