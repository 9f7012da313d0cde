"""Memory over time (hwsim.analysis.memory): live ranges, spills, DRAM overcommit, the property."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict
from cost_models import cost_table
from cost_models.energy import dram_energy_pj
from graph_ir.ir import Tensor
from graph_ir.synthetic import random_dag
from hwsim.analysis.analyze import analyze
from hwsim.analysis.energy import dram_bytes_moved, dram_power_timeline, run_energy
from hwsim.analysis.memory import (
    BYTES_PER_KIB,
    DRAM,
    Buffer,
    choose_spills,
    fit_memory,
    memory_use,
    tile_bytes,
    use_steps,
    view_aliases,
)
from hwsim.cli import main
from hwsim.pipeline import run_graph
from hwsim.report.summary import build_summary
from hwsim.sim.engine import simulate
from hwsim.sim.records import OpRecord, Trace, TransferRecord
from scheduler import POLICIES
from tests.helpers import (
    MODELS,
    fixed_schedule,
    graph_from_ops,
    one_line_error,
    random_chips,
    two_cpu_chip,
)

X = Tensor("x", (1, 100), "float32")
W = Tensor("w", (100, 100), "float32", is_weight=True)
A, Y1, Y2 = (Tensor(n, (1, 100), "float32") for n in ("a", "y1", "y2"))


def _hand_run() -> tuple[object, Chip, object, Trace]:
    """p = MatMul(x, w) and c1 = Relu(a) on cpu0 (domain a), c2 = Relu(a) on cpu2 (domain b),
    with a trace written by hand (ps) so every live range is known."""
    g = graph_from_ops("hand", [X], [("p", "MatMul", [X, W], [A]), ("c1", "Relu", [A], [Y1]), ("c2", "Relu", [A], [Y2])])
    chip = chip_from_dict(two_cpu_chip())
    table = cost_table(g, chip, "fp32")
    ops = (
        OpRecord("p", "MatMul", "cpu0", 0, 0, 10, 0),
        OpRecord("c1", "Relu", "cpu0", 0, 10, 20, 0),
        OpRecord("c2", "Relu", "cpu2", 0, 30, 40, 0),
    )
    transfers = (
        TransferRecord("a", "a", "b", 0, 400, "p", ("c2",), 10, 12, 30),
        TransferRecord("y2", "b", "a", 0, 400, "c2", ("",), 40, 40, 50),
    )
    return g, chip, table, Trace(50, ops, transfers, ())


class TestLiveRanges:
    def test_exact_bytes_at_each_instant(self):
        g, chip, table, trace = _hand_run()
        use = memory_use(g, chip, table, trace)
        # domain a: x [0,10) 400, w [0,50) 40000, a [0,20) then held for its DMA [20,30),
        # y1 (graph output) [10,50), y2's copy from its transfer's start [40,50)
        assert use.steps["a"] == ((0, 40800), (10, 40800), (20, 40800), (30, 40400), (40, 40800), (50, 0))
        # domain b: a's copy [12,40), y2 [30,40) then staged for its DMA [40,50)
        assert use.steps["b"] == ((0, 0), (12, 400), (30, 800), (40, 400), (50, 0))
        assert use.steps[DRAM] == ((0, 40800), (10, 40800), (12, 41200), (20, 41200), (30, 41200), (40, 41200), (50, 0))

    def test_kinds_and_peak(self):
        g, chip, table, trace = _hand_run()
        use = memory_use(g, chip, table, trace)
        kinds = {(b.tensor, b.place): b.kind for b in use.buffers}
        assert kinds[("w", "a")] == "weights"
        assert {(b.tensor, b.place, b.kind, b.start_ps, b.end_ps) for b in use.buffers if b.kind == "staging"} == {
            ("a", "a", "staging", 20, 30), ("y2", "b", "staging", 40, 50)
        }  # fmt: skip
        b = next(p for p in use.peaks if p.place == "b")
        assert (b.peak_bytes, b.at_ps, b.at_op, b.activations_bytes, b.staging_bytes) == (800, 30, "c2", 800, 0)
        assert b.capacity_bytes is None and use.spills == () and use.overcommitted() is None

    def test_tiles_and_shards(self):
        assert tile_bytes(OpRecord("c", "Conv", "npu", 0, 0, 10, 1000, tiles=10)) == 200
        assert tile_bytes(OpRecord("c", "Conv", "npu", 0, 0, 10, 1000, tiles=10), double_buffer=False) == 100
        assert tile_bytes(OpRecord("c", "Conv", "npu", 0, 0, 10, 1000, cores=(0, 2))) == 1000
        assert tile_bytes(OpRecord("c", "Conv", "npu", 0, 0, 10, 1000)) == 0

    def test_bundled_run_places_and_summary(self):
        from hwsim.pipeline import run

        r = run("rk3588", MODELS / "resnet18.onnx")
        s = build_summary(r).to_json()
        # a unit's buffer is listed when the schedule runs ops there (the re-planned default keeps resnet18 off the GPU)
        buffers = {f"{u} buffer" for u in ("gpu", "npu") if any(p.unit == u for p in r.schedule.placements.values())}
        assert "npu buffer" in buffers
        assert set(s["peak_memory"]) == {"cpu", "gpu", "npu", DRAM} | buffers
        npu = s["peak_memory"]["npu"]
        assert npu["capacity_bytes"] == 8192 * 1024 * 1024 and npu["at_op"] in r.graph.order
        assert sum(npu["resident_bytes"].values()) == npu["peak_bytes"]
        assert s["spills"] == [] and "overcommitted" not in s


def _sram_chip(capacity_kib: float | None) -> Chip:
    data = two_cpu_chip()
    data["domains"] = [{"name": "a"}, {"name": "b", "kind": "sram", "bandwidth_gbps": 50.0, "capacity_kib": capacity_kib}]
    return chip_from_dict(data)


def _chain():
    x = Tensor("x", (1, 4096), "float32")
    ts = [Tensor(f"t{i}", (1, 4096), "float32") for i in range(4)]
    ops = [("r0", "Relu", [x], [ts[0]])] + [(f"r{i}", "Relu", [ts[i - 1]], [ts[i]]) for i in range(1, 4)]
    return graph_from_ops("chain", [x], ops)


class TestSpills:
    def _run(self, capacity_kib):
        g, chip = _chain(), _sram_chip(capacity_kib)
        table = cost_table(g, chip, "fp32")
        sched = fixed_schedule(g, chip, table, {f"r{i}": ("cpu2", 0) for i in range(4)})
        return g, chip, table, sched, fit_memory(g, chip, table, sched, simulate(g, chip, table, sched))

    def test_small_sram_spills_and_costs_them(self):
        g, _, table, _, fit = self._run(20)  # 20 KiB: one 16 KiB tensor, not the two an op holds
        _, _, roomy_table, _, roomy = self._run(1024)
        assert roomy.memory.spills == () and roomy.table is roomy_table
        spilled = {(s.tensor, s.domain) for s in fit.memory.spills}
        assert spilled and all(d == "b" for _, d in spilled)
        assert all(s.bytes == 16384 for s in fit.memory.spills)
        cap = 20 * BYTES_PER_KIB
        assert max(v for _, v in fit.memory.steps["b"]) <= cap
        assert max(v for _, v in roomy.memory.steps["b"]) > cap
        # spilled tensors are written by their producer and read back by their reader in DRAM
        t = next(iter(spilled))[0]
        producer = g.producer.get(t)
        if producer is not None:
            assert fit.table.costs[producer]["cpu2"].dram_write_bytes == table.costs[producer]["cpu2"].dram_write_bytes + 16384
        assert fit.trace.makespan_ps > roomy.trace.makespan_ps
        # spilled bytes count in the DRAM, not in the SRAM domain
        assert max(v for _, v in fit.memory.steps[DRAM]) >= 16384

    def test_spill_traffic_is_dram_energy_and_power(self):
        """Spill bytes of ops in an SRAM domain are DRAM bytes of the run, priced per byte like all
        DRAM traffic, streamed through the DRAM (its power timeline integrates to them)."""
        g, chip, _, _, fit = self._run(20)
        _, _, _, _, roomy = self._run(1024)
        assert fit.memory.spills and all(chip.domain(s.domain).kind == "sram" for s in fit.memory.spills)
        spill = sum(r.spill_bytes for r in fit.trace.ops)
        assert spill > 0 and spill == sum(fit.table.costs[n]["cpu2"].spill_bytes for n in g.order)
        assert all(r.spill_bytes == 0 for r in roomy.trace.ops)
        e, e0 = run_energy(chip, fit.trace), run_energy(chip, roomy.trace)
        assert e.dram_bytes == e0.dram_bytes + spill  # the same transfers, plus the spills
        assert e.dram_pj == pytest.approx(e0.dram_pj + dram_energy_pj(chip.dram, spill))
        span = fit.trace.makespan_ps
        steps = (*dram_power_timeline(chip, fit.trace), (span, 0.0))
        integral = sum(w * (t1 - t0) for (t0, w), (t1, _) in itertools.pairwise(steps))
        assert integral == pytest.approx(e.dram_pj, rel=1e-6)
        assert analyze(g, chip, fit.trace).dram_bytes == e.dram_bytes

    def test_spill_energy_reaches_the_summary(self):
        g, chip = _chain(), _sram_chip(20)
        on_sram = {f"r{i}": ("cpu2", 0) for i in range(4)}
        r = run_graph(g, chip, "fp32", schedule=lambda graph, table: fixed_schedule(graph, chip, table, on_sram))
        spill = sum(rec.spill_bytes for rec in r.trace.ops)
        assert spill > 0 and r.memory is not None and r.memory.spills
        assert r.analysis.dram_bytes == dram_bytes_moved(chip, r.trace)
        ops_in_dram = sum(rec.dram_bytes for rec in r.trace.ops if chip.domain(chip.unit(rec.unit).domain).kind == "dram")
        moved = sum(x.bytes * ((chip.domain(x.src_domain).kind == "dram") + (chip.domain(x.dst_domain).kind == "dram"))
                    for x in r.trace.transfers)  # fmt: skip
        assert r.analysis.dram_bytes == ops_in_dram + moved + spill
        s = build_summary(r).to_json()
        assert s["spills"] and s["dram_bytes"] == r.analysis.dram_bytes
        assert s["dram_energy_mj"] == pytest.approx(dram_energy_pj(chip.dram, r.analysis.dram_bytes) / 1e9, rel=1e-3)

    def test_one_frame_spills_bound_a_stream_only_one_frame_in_flight(self):
        """The documented limit: with in_flight=1 the one-frame spills keep the stream's SRAM to
        capacity; interleaved frames hold several frames' tensors at once and pass it."""
        g, chip = _chain(), _sram_chip(20)
        on_sram = {f"r{i}": ("cpu2", 0) for i in range(4)}
        cap = 20 * BYTES_PER_KIB
        peaks = {}
        for in_flight in (1, None):
            r = run_graph(g, chip, "fp32", frames=4, in_flight=in_flight,
                          schedule=lambda graph, table: fixed_schedule(graph, chip, table, on_sram))  # fmt: skip
            assert r.memory is not None and r.stream_trace is not None
            use = memory_use(r.graph, chip, r.table, r.stream_trace, r.memory.spilled)
            peaks[in_flight] = max(v for _, v in use.steps["b"])
        assert peaks[1] <= cap < peaks[None]

    def test_choose_spills_keeps_earlier_ones(self):
        _, chip, _, _, fit = self._run(20)
        before = fit.memory.spilled
        assert choose_spills(chip, fit.memory.buffers, before) == before

    def test_summary_lists_spills(self):
        g, chip = _chain(), _sram_chip(20)
        r = run_graph(g, chip, "fp32", "single-unit")
        s = build_summary(r).to_json()
        if r.schedule.placements["r0"].unit == "cpu2":
            assert s["spills"] and all(x["domain"] == "b" and x["bytes"] == 16384 for x in s["spills"])
        assert s["peak_memory"]["b"]["peak_bytes"] <= 20 * BYTES_PER_KIB
        assert s["peak_memory"]["b"]["capacity_bytes"] == 20 * BYTES_PER_KIB


class TestOvercommit:
    ARGS = ("run", "rk3588", str(MODELS / "resnet18.onnx"), "--set", "dram.capacity_mib=4", "--no-plots")

    def test_dram_overflow_fails_in_one_line(self, tmp_path, capsys):
        out = tmp_path / "r"
        assert main([*self.ARGS, "--out", str(out)]) == 1
        err = one_line_error(capsys)
        assert "memory domain DRAM peaks at" in err and "capacity of 4194304 bytes (4.0 MiB)" in err
        assert not out.exists()

    def test_allow_overcommit_reports_the_same_numbers(self, tmp_path, capsys):
        out = tmp_path / "r"
        assert main([*self.ARGS, "--out", str(out)]) == 1
        err = one_line_error(capsys)
        assert main([*self.ARGS, "--out", str(out), "--allow-overcommit"]) == 0
        s = json.loads((out / "summary.json").read_text())
        over = s["overcommitted"]
        assert over["domain"] == DRAM and over["capacity_bytes"] == 4 * 1024 * 1024
        assert over["peak_bytes"] == s["peak_memory"][DRAM]["peak_bytes"] > over["capacity_bytes"]
        assert f"peaks at {over['peak_bytes']} bytes" in err
        assert "Overcommitted" in (out / "report.html").read_text()


@st.composite
def capped_chips(draw: st.DrawFn) -> Chip:
    """Random chips whose SRAM domains have a small capacity."""
    chip = draw(random_chips())
    domains = [
        replace_domain(d, draw(st.floats(1, 64))) if d.kind == "sram" else d for d in chip.domains
    ]
    return chip.model_copy(update={"domains": domains})


def replace_domain(domain, capacity_kib: float):
    return domain.model_copy(update={"capacity_kib": capacity_kib})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    graph=st.builds(random_dag, st.integers(1, 25), st.integers(0, 2**31 - 1)),
    chip=capped_chips(),
    policy=st.sampled_from(sorted(POLICIES)),
)
def test_every_policy_keeps_sram_to_capacity(graph, chip, policy):
    result = run_graph(graph, chip, "int8", policy)
    use = result.memory
    assert use is not None
    for d in chip.domains:
        if d.kind == "sram" and d.capacity_kib is not None:
            assert max(v for _, v in use.steps[d.name]) <= d.capacity_kib * BYTES_PER_KIB
    # every op still ran once, spilled or not
    assert sorted(r.op for r in result.trace.ops) == sorted(graph.order)
    assert {(s.tensor, s.domain) for s in use.spills} == use.spilled


def test_rerun_of_hand_trace_is_deterministic():
    g, chip, table, trace = _hand_run()
    assert memory_use(g, chip, table, trace) == memory_use(g, chip, table, trace)
    assert memory_use(g, chip, table, replace(trace, makespan_ps=60)).steps["a"][-1] == (60, 0)


def test_stream_trace_has_memory_counters(tmp_path):
    frames = 3
    out = tmp_path / "r"
    assert main(["run", "rk3588", str(MODELS / "resnet18.onnx"), "--frames", str(frames), "--no-plots", "--out", str(out)]) == 0
    trace = json.loads((out / "trace.json").read_text())
    counters = [e for e in trace["traceEvents"] if e.get("ph") == "C" and e["name"].startswith("memory in use: DRAM")]
    assert counters and counters[-1]["args"]["bytes"] == 0
    assert max(e["args"]["bytes"] for e in counters) >= json.loads((out / "summary.json").read_text())["peak_memory"][DRAM]["peak_bytes"]


# ---------------------------------------------------------------- views alias their input

V = Tensor("v", (100,), "float32")  # a viewed the other way round (same 100 floats)
Z1, Z2 = Tensor("z1", (1, 100), "float32"), Tensor("z2", (1, 100), "float32")
S = Tensor("s", (1,), "float32")


def _view_run(view_unit: str = "cpu0", second_reader: bool = False):
    """p = Relu(x) -> a; r = Reshape(a) -> v; c1 = Relu(v) -> z1 [20,30), all on cpu0 (domain a)
    but the view, which runs on ``view_unit`` at 15. With ``second_reader``, c2 = Relu(a) -> z2
    runs [20,30) and c1 = ReduceMean(v) -> s (4 bytes) [30,40) instead. A hand trace (ps)."""
    c1_out, c1_at = (S, (30, 40)) if second_reader else (Z1, (20, 30))
    ops = [("p", "Relu", [X], [A]), ("r", "Reshape", [A], [V]), ("c1", "ReduceMean" if second_reader else "Relu", [V], [c1_out])]
    recs = [
        OpRecord("p", "Relu", "cpu0", 0, 0, 10, 0),
        OpRecord("r", "Reshape", view_unit, 0, 15, 15, 0),
        OpRecord("c1", ops[2][1], "cpu0", 0, *c1_at, 0),
    ]
    if second_reader:
        ops.append(("c2", "Relu", [A], [Z2]))
        recs.append(OpRecord("c2", "Relu", "cpu0", 0, 20, 30, 0))
    g = graph_from_ops("views", [X], ops)
    chip = chip_from_dict(two_cpu_chip())
    transfers = ()
    if view_unit == "cpu2":  # a goes to b for the view, v comes back for c1
        transfers = (
            TransferRecord("a", "a", "b", 0, 400, "p", ("r",), 10, 11, 15),
            TransferRecord("v", "b", "a", 0, 400, "r", ("c1",), 15, 16, 20),
        )
    end = max(r.end_ps for r in recs)
    return g, chip, cost_table(g, chip, "fp32"), Trace(end, tuple(recs), transfers, ())


def _unaliased(fn, *args, **kwargs):
    """``fn`` as it ran before views aliased (every view output a buffer of its own)."""
    with mock.patch("hwsim.analysis.memory.view_aliases", return_value={}):
        return fn(*args, **kwargs)


def _ranges(use, place):
    return {(b.tensor, b.kind, b.start_ps, b.end_ps) for b in use.buffers if b.place == place and b.kind != "weights"}


class TestViews:
    def test_chain_view_is_its_input_buffer(self):
        g, chip, table, trace = _view_run()
        use = memory_use(g, chip, table, trace)
        # a is held from its producer's start until the view's reader c1 ends; v is no buffer
        assert _ranges(use, "a") == {
            ("x", "activations", 0, 10), ("a", "activations", 0, 30), ("z1", "activations", 20, 30)
        }  # fmt: skip
        assert use.steps["a"] == ((0, 800), (10, 400), (20, 800), (30, 0))
        assert view_aliases(g, chip, table, {"p": "cpu0", "r": "cpu0", "c1": "cpu0"}) == {("v", "a"): "a"}

    def test_view_of_a_tensor_with_two_readers_counts_it_once(self):
        g, chip, table, trace = _view_run(second_reader=True)
        use = memory_use(g, chip, table, trace)
        assert ("a", "activations", 0, 40) in _ranges(use, "a")
        assert not any(b.tensor == "v" for b in use.buffers)
        # x [0,10), a [0,40) (its last reader is c1, through v), z2 [20,40), s [30,40)
        assert use.steps["a"] == ((0, 800), (10, 400), (20, 800), (30, 804), (40, 0))
        # before, v was a second 400-byte buffer [15,40) beside a [0,30)
        before = _unaliased(memory_use, g, chip, table, trace)
        assert before.steps["a"] == ((0, 800), (10, 400), (15, 800), (20, 1200), (30, 804), (40, 0))
        assert [p.peak_bytes for p in use.peaks if p.place == "a"] == [804]
        assert [p.peak_bytes for p in before.peaks if p.place == "a"] == [1200]

    def test_view_across_domains_keeps_its_copy(self):
        g, chip, table, trace = _view_run(view_unit="cpu2")
        use = memory_use(g, chip, table, trace)
        # the view in b works on the DMA's copy of a: v is a buffer of its own, as before
        assert ("v", "activations", 15, 15) not in _ranges(use, "b")
        assert {t for t, *_ in _ranges(use, "b")} == {"a", "v"}
        assert view_aliases(g, chip, table, {"p": "cpu0", "r": "cpu2", "c1": "cpu0"}) == {}
        assert use == _unaliased(memory_use, g, chip, table, trace)

    def test_spilled_tensor_is_read_back_through_its_view(self):
        x = Tensor("x", (1, 4096), "float32")
        t0, v, t1, t2 = (Tensor(n, s, "float32") for n, s in (("t0", (1, 4096)), ("v", (4096,)), ("t1", (1, 4096)), ("t2", (4096,))))
        g = graph_from_ops(
            "viewspill", [x],
            [("r0", "Relu", [x], [t0]), ("r", "Reshape", [t0], [v]), ("r1", "Relu", [t0], [t1]), ("r2", "Add", [v, t1], [t2])],
        )  # fmt: skip
        chip = _sram_chip(20)  # 16 KiB tensors: t0 and t1 cannot both stay
        table = cost_table(g, chip, "fp32")
        sched = fixed_schedule(g, chip, table, {n: ("cpu2", 0) for n in g.order})
        fit = fit_memory(g, chip, table, sched, simulate(g, chip, table, sched))
        assert ("t0", "b") in fit.memory.spilled and not any(s.tensor == "v" for s in fit.memory.spills)
        spill = {n: fit.table.costs[n]["cpu2"].spill_bytes for n in g.order}
        assert spill["r"] == 0  # the view touches no byte
        assert spill["r0"] >= 16384 and spill["r2"] >= 16384  # written by r0, read back by r2 through v
        assert max(v for _, v in fit.memory.steps["b"]) <= 20 * BYTES_PER_KIB


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    graph=st.builds(random_dag, st.integers(1, 25), st.integers(0, 2**31 - 1)),
    chip=random_chips(),
    policy=st.sampled_from(sorted(POLICIES)),
)
def test_aliasing_views_never_raises_a_peak(graph, chip, policy):
    r = run_graph(graph, chip, "int8", policy)
    aliased = memory_use(r.graph, r.chip, r.table, r.trace)
    plain = _unaliased(memory_use, r.graph, r.chip, r.table, r.trace)
    before = {p.place: p.peak_bytes for p in plain.peaks}
    for p in aliased.peaks:
        assert p.peak_bytes <= before[p.place]
    units = {rec.op: rec.unit for rec in r.trace.ops}
    # A view folded in its domain has no buffer of its own there (a DMA copy elsewhere is one).
    folded = set(view_aliases(r.graph, r.chip, r.table, units))
    held = {
        (b.tensor, b.place)
        for b in aliased.buffers
        if b.kind == "activations" and b.frame == 0 and b.place != r.chip.host
    }
    assert not folded & held


def _steps_event_by_event(bufs: list[Buffer]) -> tuple[tuple[int, int], ...]:
    """Bytes in use event by event (frees before allocations at a time), a step per time."""
    events = sorted(
        (t, order, delta)
        for b in bufs
        if b.end_ps > b.start_ps and b.bytes > 0
        for t, order, delta in ((b.start_ps, 1, b.bytes), (b.end_ps, 0, -b.bytes))
    )
    steps, used = [(0, 0)], 0
    for t, _, delta in events:
        used += delta
        steps[-1:] = [(t, used)] if steps[-1][0] == t else [steps[-1], (t, used)]
    return tuple(steps)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20), st.integers(0, 9)), max_size=12),
    st.sampled_from([1, 2**61]),
)
def test_use_steps_is_the_event_by_event_sum(rows: list[tuple[int, int, int]], scale: int) -> None:
    """In numpy (int64) or, past 2**62 bytes in all, in Python: the same steps, Python ints."""
    bufs = [Buffer(f"t{i}", "activations", "d", n * scale, s, s + d) for i, (s, d, n) in enumerate(rows)]
    steps = use_steps(iter(bufs))
    assert steps == _steps_event_by_event(bufs)
    assert all(type(t) is int and type(n) is int for t, n in steps)
