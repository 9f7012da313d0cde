"""Issue 11, item 9: with DRAM pinned at capacity the reports no longer say no time was lost to
contention; they say what bandwidth sharing and waiting cost, in summary.json, on the terminal,
in report.html and in trace.json."""

from __future__ import annotations

import re

import pytest

from hwsim.pipeline import RunResult, run
from hwsim.report.html import html_report
from hwsim.report.summary import build_summary
from hwsim.report.terminal import format_summary
from hwsim.report.trace import chrome_trace
from tests.helpers import MODELS


@pytest.fixture(scope="module")
def yolo() -> RunResult:
    return run("rk3588", MODELS / "yolov8n.onnx")


def test_dram_is_saturated_and_the_stretch_is_reported(yolo: RunResult) -> None:
    cap = yolo.trace.memory_capacity_bytes_per_ps["dram"]
    assert any(m == "dram" and use >= cap * (1 - 1e-9) for _, m, use in yolo.trace.bandwidth_samples)
    c = build_summary(yolo).to_json()["contention"]
    assert set(c) == {
        "bandwidth_stretch_ms", "bandwidth_stretch_on_critical_path_ms", "core_wait_ms", "dma_wait_ms",
        "top_stretched_ops",
    }  # fmt: skip
    assert c["bandwidth_stretch_ms"] > 0.1
    assert 0 < c["bandwidth_stretch_on_critical_path_ms"] <= c["bandwidth_stretch_ms"]
    assert c["bandwidth_stretch_on_critical_path_ms"] <= build_summary(yolo).critical_path_ms
    top = c["top_stretched_ops"]
    assert len(top) == 10 and set(top[0]) == {"node", "unit", "stretch_ms"}
    stretch = {r.op: r.stretch_ps / 1e9 for r in yolo.trace.ops}
    assert [t["stretch_ms"] for t in top] == [round(v, 6) for v in sorted(stretch.values(), reverse=True)[:10]]
    assert all(t["stretch_ms"] == pytest.approx(stretch[t["node"]], abs=1e-6) for t in top)


def test_the_terminal_says_what_contention_cost(yolo: RunResult) -> None:
    lines = [ln for ln in format_summary(build_summary(yolo)).splitlines() if ln.strip().startswith("contention")]
    assert len(lines) == 1
    m = re.search(r"stretched ops and transfers by ([\d.]+) ms in all \(([\d.]+) ms on the critical path\)", lines[0])
    assert m is not None, lines[0]
    c = yolo.analysis.contention
    assert float(m.group(1)) == pytest.approx(c.bandwidth_stretch_ms, abs=5e-4) and float(m.group(1)) > 0
    assert float(m.group(2)) == pytest.approx(c.bandwidth_stretch_on_critical_path_ms, abs=5e-4)
    assert f"waits: cores {c.core_wait_ms:.3f} ms, DMA {c.dma_wait_ms:.3f} ms" in lines[0]


def test_the_page_no_longer_calls_latency_minus_critical_path_contention(yolo: RunResult) -> None:
    page = html_report(yolo, build_summary(yolo))
    assert "time lost to contention" not in page
    assert f"stretched ops and transfers by {yolo.analysis.contention.bandwidth_stretch_ms:.3f} ms" in page


def test_stretched_ops_carry_their_stretch_in_the_trace(yolo: RunResult) -> None:
    events = [e for e in chrome_trace(yolo)["traceEvents"] if e["ph"] == "X" and e["cat"] != "dma"]
    got = {e["args"]["node"]: e["args"].get("stretch_us") for e in events}
    want = {r.op: (r.stretch_ps / 1e6 if r.stretch_ps > 0 else None) for r in yolo.trace.ops}
    assert got == want and any(v is not None for v in got.values())
