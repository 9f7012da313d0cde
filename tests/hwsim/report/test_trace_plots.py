"""Tests for ``hwsim.report.trace`` and ``hwsim.report.plots``.

Runs: yolov8n on rk3588, and three tiny models built with ``onnx.helper``: one that crosses
domains (Conv on the NPU, ArgMax on the CPU, an output returned to the host), one with no
transfers (an ArgMax: most units never used) and one of views only (zero-length run).
"""

from __future__ import annotations

import json
import re
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from chips import load_chip
from graph_ir import from_model_proto
from hwsim.analysis.busy import busy_core_steps
from hwsim.pipeline import RunResult, run, run_graph
from hwsim.report import plots
from hwsim.report.trace import check_trace, chrome_trace, chrome_trace_json, separate_overlaps
from tests.helpers import ROOT

YOLO = ROOT / "examples" / "models" / "yolov8n.onnx"
RUNS = ["yolo", "cross", "no_transfers", "views"]


def _model(
    name: str,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: list[onnx.TensorProto] | None = None,
) -> RunResult:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return run_graph(from_model_proto(model, name=name), load_chip("rk3588"))


@pytest.fixture(scope="module")
def results() -> dict[str, RunResult]:
    # big enough that the NPU wins despite the transfers
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 32, 32])
    w = helper.make_tensor("w", TensorProto.FLOAT, [64, 64, 3, 3], np.full(64 * 64 * 9, 0.1))
    relu = helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 64, 32, 32])
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [1, 1, 32, 32])
    cross = _model(
        "cross",
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("ArgMax", ["r"], ["idx"], name="argmax", axis=1),
        ],
        [x],
        [idx, relu],
        [w],
    )
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 16])
    am = helper.make_tensor_value_info("am", TensorProto.INT64, [1, 1])
    no_transfers = _model(
        "argmax", [helper.make_node("ArgMax", ["v"], ["am"], name="am", axis=1)], [v], [am]
    )
    flat = helper.make_tensor_value_info("sq", TensorProto.FLOAT, [16])
    views = _model(
        "views",
        [
            helper.make_node("Flatten", ["v"], ["f"], name="flatten", axis=0),
            helper.make_node("Squeeze", ["f"], ["sq"], name="squeeze"),
        ],
        [v],
        [flat],
    )
    return {
        "yolo": run("rk3588", YOLO),
        "cross": cross,
        "no_transfers": no_transfers,
        "views": views,
    }


def test_fixture_runs_cover_the_degenerate_cases(results: dict[str, RunResult]) -> None:
    assert results["yolo"].trace.transfers and len(results["yolo"].trace.ops) > 100
    cross = results["cross"]
    assert {r.unit for r in cross.trace.ops} == {"npu", "cpu_big"}
    assert any(x.producer == "" for x in cross.trace.transfers)
    assert any("" in x.consumers for x in cross.trace.transfers)
    assert results["no_transfers"].trace.transfers == ()
    assert results["views"].trace.makespan_ps == 0 and results["views"].trace.ops


# ---------------------------------------------------------------- chrome_trace


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


def _slices(events: list[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in events:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in tracks.values():
        evs.sort(key=lambda e: (e["ts"], e["dur"]))
    return tracks


def _bound(
    tracks: dict[tuple[int, int], list[dict[str, Any]]], ev: dict[str, Any]
) -> dict[str, Any]:
    """The one slice on the flow event's track that encloses its timestamp.

    Compared in whole nanoseconds, as viewers import them (so float round-off of ``ts + dur``
    cannot put a flow inside the slice that ends where it sits); a zero-length slice (a view
    op) encloses only its own instant.
    """

    def ns(us: float) -> int:
        return round(us * 1000)

    t = ns(ev["ts"])
    inside = [
        x
        for x in tracks.get((ev["pid"], ev["tid"]), [])
        if ns(x["ts"]) < t < ns(x["ts"] + x["dur"]) or ns(x["ts"]) == t == ns(x["ts"] + x["dur"])
    ]
    assert len(inside) == 1, (ev, inside)
    return inside[0]


@pytest.mark.parametrize("name", RUNS)
class TestChromeTrace:
    def test_json_round_trip_and_plain_types(
        self, results: dict[str, RunResult], name: str
    ) -> None:
        trace = chrome_trace(results[name])
        assert _plain(trace)
        assert json.loads(json.dumps(trace, allow_nan=False)) == trace
        assert trace["displayTimeUnit"] == "ns"
        other = trace["otherData"]
        assert other["chip"] == "rk3588" and other["model"] == results[name].graph.name
        assert other["latency_ms"] == results[name].analysis.latency_ms
        assert other["policy"] == results[name].schedule.policy  # the schedule that ran

    def test_deterministic(self, results: dict[str, RunResult], name: str) -> None:
        r = results[name]
        assert r.choice is not None
        again = run_graph(r.graph, r.chip, r.precision, r.choice.policy)
        assert json.dumps(chrome_trace(r)) == json.dumps(chrome_trace(again))

    def test_one_slice_per_op_with_args(self, results: dict[str, RunResult], name: str) -> None:
        r = results[name]
        trace = chrome_trace(r)
        ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "dma"]
        assert sorted(e["name"] for e in ops) == sorted(r.graph.order)
        recs = {rec.op: rec for rec in r.trace.ops}
        pid_of = {
            e["args"]["name"].split()[0]: e["pid"]
            for e in trace["traceEvents"]
            if e["name"] == "process_name"
        }
        for e in ops:
            rec = recs[e["name"]]
            assert e["cat"] == rec.op_type
            assert e["args"] == {
                "node": rec.op,
                "op_type": rec.op_type,
                "unit": rec.unit,
                "core": rec.core,
                "dram_bytes": rec.dram_bytes,
                "reason": r.schedule.placements[rec.op].reason,
                **({"stretch_us": rec.stretch_ps / 1e6} if rec.stretch_ps > 0 else {}),
            }
            assert e["pid"] == pid_of[rec.unit]
            assert e["ts"] == pytest.approx(rec.start_ps / 1e6, abs=1e-3)
            assert e["ts"] + e["dur"] == pytest.approx(rec.end_ps / 1e6, abs=1e-3)

    def test_one_slice_per_transfer_with_args(
        self, results: dict[str, RunResult], name: str
    ) -> None:
        r = results[name]
        trace = chrome_trace(r)
        dma = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "dma"]
        assert len(dma) == len(r.trace.transfers)
        expected = sorted(
            (x.tensor, x.dst_domain, x.bytes, x.producer, tuple(x.consumers), x.queued_ps / 1e6)
            for x in r.trace.transfers
        )
        got = sorted(
            (
                e["args"]["tensor"],
                e["args"]["dst"],
                e["args"]["bytes"],
                e["args"]["producer"],
                tuple(e["args"]["consumers"]),
                e["args"]["queued_us"],
            )
            for e in dma
        )
        assert got == expected
        dma_pid = {
            e["pid"]
            for e in trace["traceEvents"]
            if e["name"] == "process_name" and e["args"]["name"] == "DMA"
        }
        assert {e["pid"] for e in dma} <= dma_pid
        assert all(set(e["args"]) >= {"src", "dst"} for e in dma)

    def test_no_overlap_on_any_track(self, results: dict[str, RunResult], name: str) -> None:
        for evs in _slices(chrome_trace(results[name])["traceEvents"]).values():
            for a, b in pairwise(evs):
                assert a["dur"] >= 0
                assert a["ts"] + a["dur"] <= b["ts"] + 1e-9, (a["name"], b["name"])

    def test_metadata_names_every_track(self, results: dict[str, RunResult], name: str) -> None:
        events = chrome_trace(results[name])["traceEvents"]
        meta = [e for e in events if e["ph"] == "M"]
        assert events[: len(meta)] == meta  # metadata first
        processes = {e["pid"] for e in meta if e["name"] == "process_name"}
        threads = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
        assert {e["pid"] for e in meta if e["name"] == "process_sort_index"} == processes
        assert {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_sort_index"} == threads
        for e in events:
            assert e["pid"] in processes
            if e["ph"] in "Xsf":
                assert (e["pid"], e["tid"]) in threads
        timed = [e for e in events if e["ph"] != "M"]
        assert [e["ts"] for e in timed] == sorted(e["ts"] for e in timed)

    def test_flows_pair_up_and_cover_cross_unit_dependencies(
        self, results: dict[str, RunResult], name: str
    ) -> None:
        r = results[name]
        events = chrome_trace(r)["traceEvents"]
        starts = [e for e in events if e["ph"] == "s"]
        finishes = [e for e in events if e["ph"] == "f"]
        assert len({e["id"] for e in starts}) == len(starts)
        assert len({e["id"] for e in finishes}) == len(finishes)
        by_id = {e["id"]: e for e in finishes}
        assert set(by_id) == {e["id"] for e in starts}
        tracks = _slices(events)
        pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for s in starts:
            f = by_id[s["id"]]
            assert s["cat"] == f["cat"] == "dependency" and s["name"] == f["name"]
            assert f["bp"] == "e" and s["ts"] <= f["ts"]
            pairs.append((_bound(tracks, s), _bound(tracks, f)))
        # an arrow into every transfer from its producer, out of it to each consumer
        into: dict[int, list[str]] = {}
        out_of: dict[int, list[str]] = {}
        for a, b in pairs:
            if b["cat"] == "dma":
                into.setdefault(id(b), []).append(a["name"])
            if a["cat"] == "dma":
                out_of.setdefault(id(a), []).append(b["name"])
        for x in (e for e in events if e["ph"] == "X" and e["cat"] == "dma"):
            producer, consumers = x["args"]["producer"], x["args"]["consumers"]
            assert into.get(id(x), []) == ([producer] if producer else [])
            assert sorted(out_of.get(id(x), [])) == sorted(c for c in consumers if c)
        # the producer -> consumer pairs they describe, directly or through a transfer
        described = {(a["name"], b["name"]) for a, b in pairs if "dma" not in (a["cat"], b["cat"])}
        for a, b in pairs:
            if a["cat"] == "dma" and a["args"]["producer"]:
                described.add((a["args"]["producer"], b["name"]))
        unit = {op: p.unit for op, p in r.schedule.placements.items()}
        crossing = {(p, c) for p, c in r.graph.g.edges if unit[p] != unit[c]}
        assert described == crossing
        if name == "cross":  # whether yolov8n crosses units is the rk3588 scheduler's choice
            assert crossing

    def test_counters(self, results: dict[str, RunResult], name: str) -> None:
        r = results[name]
        events = chrome_trace(r)["traceEvents"]
        counters = [e for e in events if e["ph"] == "C"]
        cores = {
            e["pid"]: int(e["args"]["name"].split(", ")[1].split()[0])
            for e in events
            if e["name"] == "process_name" and "core" in e["args"]["name"]
        }
        busy = [e for e in counters if e["name"] == "busy cores"]
        assert {e["pid"] for e in busy} == set(cores)
        for e in busy:
            assert 0 <= e["args"]["cores"] <= cores[e["pid"]]
        bandwidth = [e for e in counters if "bandwidth" in e["name"]]
        assert {e["name"].split()[0] for e in bandwidth} == set(
            r.trace.memory_capacity_bytes_per_ps
        )
        cap = max(r.trace.memory_capacity_bytes_per_ps.values()) * 1000
        assert all(0.0 <= e["args"]["GB/s"] <= cap * (1 + 1e-9) for e in bandwidth)
        for pid in cores:  # every unit is idle again at the end
            assert [e for e in busy if e["pid"] == pid][-1]["args"]["cores"] == 0


def test_busy_core_steps_empty_and_zero_length() -> None:
    from hwsim.sim.engine import OpRecord

    assert busy_core_steps([]) == []
    assert busy_core_steps([OpRecord("a", "Reshape", "cpu", 0, 5, 5, 0)]) == []


# ---------------------------------------------------------------- plots


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


PLOTS: list[Callable[[RunResult, Path], None]] = [
    plots.heatmap_png,
    plots.gantt_png,
    plots.traffic_png,
    plots.bandwidth_png,
]


@pytest.mark.parametrize("name", RUNS)
@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_plot_writes_a_png(
    results: dict[str, RunResult],
    name: str,
    plot: Callable[[RunResult, Path], None],
    tmp_path: Path,
) -> None:
    path = tmp_path / f"{name}.png"
    plot(results[name], path)
    width, height = _png_size(path)
    assert 400 <= width <= 4000 and 250 <= height <= 4000
    assert path.stat().st_size > 5_000


def test_gantt_down_samples_large_graphs(results: dict[str, RunResult], tmp_path: Path) -> None:
    plots.gantt_png(results["yolo"], tmp_path / "g.png", max_ops=10)
    assert _png_size(tmp_path / "g.png")[0] > 400


def test_gantt_rows_of_a_many_core_unit_are_its_busy_cores_and_one_idle_row(results: dict[str, RunResult]) -> None:
    from chips.schema import chip_from_dict

    base = results["cross"]
    rows, row_of, _ = plots._gantt_rows(base, base.trace)  # rk3588: a row for every core
    assert sum(1 for r in rows if not r.startswith("DMA")) == sum(u.cores for u in base.chip.units)
    data = base.chip.model_dump()
    next(u for u in data["units"] if u["name"] == "npu")["cores"] = 40
    many = run_graph(base.graph, chip_from_dict(data, source="rk3588 with 40 NPU cores"))
    rows, row_of, _ = plots._gantt_rows(many, many.trace)
    busy = {c for r in many.trace.ops if r.unit == "npu" for c in r.all_cores}
    assert busy and [r for r in rows if r.startswith("npu")] == [
        *(f"npu/{c}" for c in sorted(busy)), f"npu: {40 - len(busy)} idle"
    ]
    assert all((r.unit, c) in row_of for r in many.trace.ops for c in r.all_cores)


def test_merge_joins_bars_closer_than_the_gap() -> None:
    bars = [(0.0, 1.0, "a"), (1.05, 1.0, "a"), (2.1, 0.5, "b"), (3.0, 0.5, "b")]
    assert plots._merge(bars, 0.1) == [(0.0, 2.6, "a"), (3.0, 0.5, "b")]
    assert plots._merge(bars, 0.0) == bars
    assert plots._merge([], 0.1) == []


# ---------------------------------------------------------------- utilization_bins


@pytest.mark.parametrize("name", RUNS)
@pytest.mark.parametrize("bins", [1, 7, 100])
def test_utilization_bins(results: dict[str, RunResult], name: str, bins: int) -> None:
    r = results[name]
    names, util, edges = plots.utilization_bins(r, bins)
    assert names == [u.name for u in r.chip.units]
    assert util.shape == (len(names), bins) and edges.shape == (bins + 1,)
    assert edges[0] == 0.0 and edges[-1] == pytest.approx(r.analysis.latency_ms)
    assert np.all(util >= 0.0) and np.all(util <= 1.0)
    by_unit = {u.unit: u.utilization for u in r.analysis.units}
    for row, unit in zip(util, names):
        assert abs(float(row.mean()) - by_unit[unit]) < 1e-6


def test_utilization_bins_matches_a_brute_force_count(results: dict[str, RunResult]) -> None:
    r = results["yolo"]
    names, util, edges = plots.utilization_bins(r, 10)
    npu = names.index("npu")
    lo, hi = edges[3] * 1e9, edges[4] * 1e9
    busy = sum(
        max(0.0, min(rec.end_ps, hi) - max(rec.start_ps, lo)) * len(rec.all_cores)  # split ops
        for rec in r.trace.ops
        if rec.unit == "npu"
    )
    assert util[npu, 3] == pytest.approx(busy / ((hi - lo) * 3), abs=1e-9)


def test_utilization_bins_rejects_no_bins(results: dict[str, RunResult]) -> None:
    with pytest.raises(ValueError, match="bins"):
        plots.utilization_bins(results["cross"], 0)


# ---------------------------------------------------------------- Perfetto validity


@pytest.mark.parametrize("name", RUNS)
def test_check_trace_accepts_every_fixture_run(results: dict[str, RunResult], name: str) -> None:
    assert check_trace(chrome_trace(results[name])) == []


@pytest.mark.parametrize("chip", ["edge8", "jetson_orin_nano"])
def test_check_trace_accepts_real_runs_on_other_chips(chip: str) -> None:
    r = run(chip, YOLO.with_name("audio_kws.onnx"))
    assert r.trace.transfers or chip == "jetson_orin_nano"
    assert check_trace(chrome_trace(r)) == []


def _named(*events: dict[str, Any]) -> list[dict[str, Any]]:
    meta = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
    ]
    return meta + list(events)


def _x(name: str, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


@pytest.mark.parametrize(
    ("events", "needle"),
    [
        (_named(_x("a", 0, 2), _x("b", 1, 2)), "partly overlaps 'a'"),
        (
            _named(_x("a", 0, 4), _x("b", 1, 2), _x("c", 2.5, 2)),
            "'c' [2.5, 4.5] us partly overlaps 'b'",
        ),
        (_named(_x("a", 0, 1, tid=2)), "tid 2: no thread_name"),
        (_named(_x("a", 0, 1))[1:], "pid 1: no process_name"),
        (_named(_x("a", 0, -1)), "dur -1"),
        (_named(_x("a", -5, 1)), "ts -5"),
        (_named({"ph": "B", "name": "a", "ts": 1, "pid": 1, "tid": 1}), "never end"),
        (_named({"ph": "E", "ts": 1, "pid": 1, "tid": 1}), "without a begin"),
        (
            _named({"ph": "C", "name": "bw", "ts": 1, "pid": 1, "args": {"GB/s": float("nan")}}),
            "finite numbers",
        ),
        (
            _named({"ph": "s", "cat": "d", "id": 7, "ts": 1, "pid": 1, "tid": 1}),
            "1 start(s), 0 finish",
        ),
        ({"traceEvents": "nope"}, "no traceEvents"),
    ],
)
def test_check_trace_finds_each_problem(events: Any, needle: str) -> None:
    problems = check_trace(events)
    assert len(problems) == 1 and needle in problems[0], problems


def test_check_trace_allows_nesting_touching_and_round_off() -> None:
    events = _named(
        _x("a", 0, 4),
        _x("b", 1, 2),
        _x("c", 1.5, 0.5),
        _x("d", 4.00000001, 1),
        _x("e", 0.3, 0.1 + 0.2),
    )
    assert check_trace(events) == []


def test_overlapping_engine_slices_move_to_their_own_track(results: dict[str, RunResult]) -> None:
    r = results["yolo"]
    recs = list(r.trace.ops)
    by_core = [
        i for i, x in enumerate(recs) if x.unit == "npu" and x.core == 0 and x.duration_ps > 10_000
    ]
    a, b = recs[by_core[0]], recs[by_core[1]]
    # pull b back so it starts in the middle of a and ends after it
    shift = b.start_ps - (a.start_ps + a.duration_ps // 2)
    recs[by_core[1]] = replace(
        b, start_ps=b.start_ps - shift, end_ps=max(b.end_ps - shift, a.end_ps + 1000)
    )
    broken = replace(r, trace=replace(r.trace, ops=tuple(recs)))
    trace = chrome_trace(broken)
    assert check_trace(trace) == []
    events = trace["traceEvents"]
    slice_b = next(e for e in events if e["ph"] == "X" and e["name"] == b.op)
    slice_a = next(e for e in events if e["ph"] == "X" and e["name"] == a.op)
    assert slice_b["pid"] == slice_a["pid"] and slice_b["tid"] != slice_a["tid"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names[(slice_b["pid"], slice_b["tid"])] == "npu core 0 (overlap 1)"
    back = [dict(e, tid=slice_a["tid"]) if e is slice_b else e for e in events]
    assert any(b.op in p and "partly overlaps" in p for p in check_trace(back))
    tracks = _slices(events)
    for e in events:  # every flow still sits inside exactly one slice of its track
        if e["ph"] in "sf":
            _bound(tracks, e)


def test_a_flow_into_a_zero_length_slice_sharing_its_instant_gets_a_track_of_its_own(
    results: dict[str, RunResult],
) -> None:
    # Pinned: yolov8n on rk3588 runs view ops (Concat, Reshape) zero-length at one instant on a
    # GPU core, and a transfer's arrow ends at one of them; on one track the arrow's end would sit
    # inside both (Perfetto and Chrome bind it to an enclosing slice: either could be taken).
    r = results["yolo"]
    events = chrome_trace(r)["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    zero = [e for e in events if e["ph"] == "X" and e["dur"] == 0 and e["cat"] != "dma"]
    ends = {(e["pid"], e["tid"], round(e["ts"] * 1000)) for e in events if e["ph"] in "sf"}
    at = Counter((e["pid"], e["args"]["core"], round(e["ts"] * 1000)) for e in zero)
    shared = [e for e in zero if at[(e["pid"], e["args"]["core"], round(e["ts"] * 1000))] > 1]
    bound = [e for e in shared if (e["pid"], e["tid"], round(e["ts"] * 1000)) in ends]
    assert bound, "the pinned case has no flow into a zero-length slice that shares its instant"
    for e in bound:
        core_track = f"{e['args']['unit']} core {e['args']['core']}"
        assert re.fullmatch(re.escape(core_track) + r" \(instant \d+\)", names[(e["pid"], e["tid"])])
        alone = [x for x in zero if (x["pid"], x["tid"]) == (e["pid"], e["tid"]) and x["ts"] == e["ts"]]
        assert alone == [e]
    assert any(names[(e["pid"], e["tid"])] == f"{e['args']['unit']} core {e['args']['core']}" for e in shared)  # the others stay
    assert check_trace(events) == []


def _overlapping(r: RunResult) -> RunResult:
    """``r`` with its second long op on npu core 0 pulled back into the first one."""
    recs = list(r.trace.ops)
    a, b = [i for i, x in enumerate(recs) if x.unit == "npu" and x.core == 0 and x.duration_ps > 10_000][:2]
    shift = recs[b].start_ps - (recs[a].start_ps + recs[a].duration_ps // 2)
    recs[b] = replace(recs[b], start_ps=recs[b].start_ps - shift, end_ps=max(recs[b].end_ps - shift, recs[a].end_ps + 1000))
    return replace(r, trace=replace(r.trace, ops=tuple(recs)))


@pytest.mark.parametrize("name", [*RUNS, "overlapping", "frames"])
@pytest.mark.parametrize("chunk", [1, 7, 50_000])
def test_streamed_trace_json_is_the_dumped_trace(results: dict[str, RunResult], name: str, chunk: int) -> None:
    if name == "overlapping":
        r = _overlapping(results["yolo"])
    elif name == "frames":
        r = run_graph(results["cross"].graph, results["cross"].chip, frames=3)
        assert r.stream_trace is not None
    else:
        r = results[name]
    dumped = json.dumps(chrome_trace(r), separators=(",", ":")).encode()
    assert b"".join(chrome_trace_json(r, events_per_chunk=chunk)) == dumped
    if name == "overlapping":
        assert b"(overlap 1)" in dumped


@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.integers(0, 40), st.integers(0, 15)),
        max_size=25,
    )
)
@settings(max_examples=60, deadline=None)
def test_separate_overlaps_always_gives_a_valid_trace(spans: list[tuple[int, int, int]]) -> None:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}},
        *(
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": f"t{t}"}}
            for t in (1, 2, 3)
        ),
        *(_x(f"s{i}", ts / 4, dur / 4, tid) for i, (tid, ts, dur) in enumerate(spans)),
    ]
    out = separate_overlaps(events)
    assert check_trace(out) == []
    key = lambda e: (e["name"], e.get("ts"), e.get("dur"))
    assert sorted(map(key, (e for e in out if e["ph"] == "X"))) == sorted(map(key, events[4:]))
    for e in out:  # a moved slice stays in its process and names its original track
        if e["ph"] == "X" and e["tid"] > 3:
            name = next(
                m["args"]["name"]
                for m in out
                if m["name"] == "thread_name" and m["tid"] == e["tid"]
            )
            original = next(s for s in events[4:] if s["name"] == e["name"])
            assert name.startswith(f"t{original['tid']} (overlap ")
    if check_trace(events) == []:
        assert out == events


@pytest.mark.parametrize("name", RUNS)
def test_utilization_counters_follow_busy_cores(results: dict[str, RunResult], name: str) -> None:
    r = results[name]
    events = chrome_trace(r)["traceEvents"]
    cores = {i + 1: u.cores for i, u in enumerate(r.chip.units)}
    busy = [
        (e["pid"], e["ts"], e["args"]["cores"]) for e in events if e.get("name") == "busy cores"
    ]
    util = [(e["pid"], e["ts"], e["args"]["%"]) for e in events if e.get("name") == "utilization"]
    assert len(busy) == len(util) > 0
    for (pid, ts, n), (pid2, ts2, pct) in zip(busy, util):
        assert (pid, ts) == (pid2, ts2)
        assert pct == pytest.approx(100.0 * n / cores[pid])
        assert 0.0 <= pct <= 100.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 10**6), min_size=2, max_size=200, unique=True),
    st.data(),
)
def test_memory_plot_envelope_keeps_peaks_and_stacking(raw_times: list[int], data: st.DataObject) -> None:
    """A memory plot with more steps than bins draws each bin's maximum: the highest point of every
    stacked layer survives, the layers stay stacked, the first and last times stay, at most one step per bin."""
    times = np.array(sorted(raw_times), dtype=np.float64)
    lower = np.array(data.draw(st.lists(st.integers(0, 1000), min_size=len(times), max_size=len(times))), float)
    extra = np.array(data.draw(st.lists(st.integers(0, 1000), min_size=len(times), max_size=len(times))), float)
    upper = lower + extra
    bins = data.draw(st.integers(1, 50))
    old = plots._MAX_STEPS
    plots._MAX_STEPS = bins
    try:
        xs, (lo, hi) = plots._pixel_envelope(times, [lower, upper])
    finally:
        plots._MAX_STEPS = old
    assert len(xs) <= max(bins + 1, len(times) if len(times) <= bins else 0)
    assert xs[0] == times[0] and xs[-1] == times[-1]
    assert lo.max() == lower.max() and hi.max() == upper.max()
    assert (hi >= lo).all()


@given(
    st.lists(st.tuples(st.floats(0, 100), st.floats(0, 5), st.sampled_from(["conv", "add", "dma", "matmul"])), max_size=30),
    st.floats(0, 3),
)
def test_merge_keeps_the_colour_covering_most(bars: list[tuple[float, float, str]], gap: float) -> None:
    """The merged bars and their colours are what recomputing the largest share at each step gives."""
    from hwsim.report.plots import _merge

    bars = sorted(bars)
    want: list[tuple[float, float, str]] = []
    share: dict[str, float] = {}
    for s, w, key in bars:
        if want and s - (want[-1][0] + want[-1][1]) < gap:
            s0, w0, _ = want[-1]
            share[key] = share.get(key, 0.0) + w
            want[-1] = (s0, max(w0, s + w - s0), max(share, key=lambda k: (share[k], k)))
        else:
            share = {key: w}
            want.append((s, w, key))
    assert _merge(bars, gap) == want
