"""trace.json's directly formatted op events are the text the JSON encoder gives their dicts."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from hwsim.report.trace import _op_text
from hwsim.sim.records import OpRecord

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
