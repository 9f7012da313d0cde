"""Fuzz the task-graph readers of ``hwsim schedule``: JSON (mutated valid graphs, any JSON,
garbage bytes) and STG (mutated valid files, random lines)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.harness import VALUES, check_refusal_or_run, fuzz_settings, mutated

VALID_JSON: dict[str, Any] = {
    "units": ["cpu", "npu"],
    "tasks": [
        {"name": "a", "cost": {"cpu": 4.0, "npu": 1.0}},
        {"name": "b", "cost": {"cpu": 2.0}, "deadline": 50},
        {"name": "c", "cost": {"npu": 3.0}},
    ],
    "edges": [{"src": "a", "dst": "b", "comm": 1.0}, {"src": "a", "dst": "c"}],
}

VALID_STG = """3
0 0 0
1 4 1 0
2 3 1 0
3 5 2 1 2
4 0 1 3
"""


def _schedule(reader: str, name: str, content: bytes, extra: list[str] = ()) -> None:  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / name
        f.write_bytes(content)
        check_refusal_or_run(
            reader, ["schedule", str(f), "--time-limit", "0.5", *extra], f, ok=(0, 1)
        )


def _json_text(data: Any) -> bytes:
    return json.dumps(data).encode()


JSON_INPUTS = st.one_of(
    mutated(VALID_JSON).map(_json_text),
    VALUES.map(_json_text),
    st.binary(max_size=64).map(lambda b: b"{" + b),
)


@fuzz_settings(200)
@given(JSON_INPUTS)
def test_taskgraph_json(content: bytes) -> None:
    _schedule("taskgraph-json", "g.json", content)


def _stg_lines(rows: list[list[int]]) -> bytes:
    return ("\n".join(" ".join(str(v) for v in r) for r in rows) + "\n").encode()


@st.composite
def _mutated_stg(draw: st.DrawFn) -> bytes:
    rows = [line.split() for line in VALID_STG.splitlines()]
    k = draw(st.integers(0, len(rows) - 1))
    tokens = st.one_of(
        st.integers(-3, 8).map(str), st.sampled_from(["x", "-", "1e3", "99999999999", "#", ""])
    )
    rows[k] = draw(st.lists(tokens, max_size=6))
    if draw(st.booleans()):
        rows = rows[: draw(st.integers(0, len(rows)))]
    return ("\n".join(" ".join(r) for r in rows) + "\n").encode()


STG_INPUTS = st.one_of(
    _mutated_stg(),
    st.lists(st.lists(st.integers(-2, 10), max_size=6), max_size=8).map(_stg_lines),
    st.binary(max_size=64),
)


@fuzz_settings(200)
@given(STG_INPUTS, st.sampled_from([[], ["--units", "1"], ["--units", "3"]]))
def test_taskgraph_stg(content: bytes, units: list[str]) -> None:
    _schedule("taskgraph-stg", "g.stg", content, units)
