"""hwsim.replan: the default re-planned with the times the engine observed."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips import Chip, load_chip
from cost_models.table import cost_table
from graph_ir import load_onnx
from graph_ir.synthetic import layered_dag, random_dag
from hwsim import replan as rp
from hwsim.policy_check import CHECKED_AGAINST, default_schedule, simulate_candidate
from scheduler import DEFAULT_POLICY, POLICIES
from scheduler.heft import heft
from scheduler.onnx_policies import (
    core_orders,
    problem_from_graph,
    schedule_from_solution,
    schedule_on,
)
from tests.helpers import ROOT, random_chips

MODELS = ROOT / "examples" / "models"


def test_observed_times_replace_the_plan_of_the_ops_that_ran() -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    sim = simulate_candidate("x", g, chip, table, POLICIES["single-unit"](g, chip, table))
    problem = problem_from_graph(g, chip, table, colocated=True)
    seen = rp.Observed()
    seen.learn(problem, chip, sim.trace)
    ran = {(r.op, r.unit): r.duration_ps / 1000 for r in sim.trace.ops}
    assert len(seen.exec_ns) == len(ran) == len(g)
    p2 = rp.observed_problem(problem, seen)
    for (i, u), ns in seen.exec_ns.items():
        assert p2.exec_ns[i, u] == ns == pytest.approx(ran[problem.tasks[i], problem.units[u]])
    # units that ran nothing keep their plan; what no unit can run stays impossible
    used = {u for _, u in seen.exec_ns}
    idle = [u for u in range(problem.n_units) if u not in used]
    assert idle
    assert np.array_equal(p2.exec_ns[:, idle], problem.exec_ns[:, idle])
    assert np.array_equal(np.isfinite(p2.exec_ns), np.isfinite(problem.exec_ns))


def test_a_unit_s_ratio_scales_the_ops_not_seen_on_it() -> None:
    g = load_onnx(MODELS / "yolov5s_relu.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    problem = problem_from_graph(g, chip, table, colocated=True)
    sim = simulate_candidate("x", g, chip, table, POLICIES[DEFAULT_POLICY](g, chip, table))
    seen = rp.Observed()
    seen.learn(problem, chip, sim.trace)
    npu = problem.units.index("npu")
    on_npu = [i for i, u in seen.exec_ns if u == npu]
    ratio = sum(seen.exec_ns[i, npu] for i in on_npu) / sum(problem.exec_ns[i, npu] for i in on_npu)
    assert ratio < 0.9  # the engine splits ops over the NPU's three cores: faster than planned
    p2 = rp.observed_problem(problem, seen)
    off = next(i for i in range(1, problem.n - 1) if (i, npu) not in seen.exec_ns and np.isfinite(problem.exec_ns[i, npu]))
    assert p2.exec_ns[off, npu] == pytest.approx(problem.exec_ns[off, npu] * ratio)


@pytest.mark.parametrize(
    ("model", "chip_name"),
    [
        ("yolov5s_relu", "rk3588"),
        ("yolov5n", "rk3588"),
        ("distilbert", "jetson_orin_nano"),
        ("bert_base", "jetson_orin_nano"),
        ("yolov5s", "edge8"),
    ],
)
def test_the_default_s_own_schedule_is_no_slower_than_any_baseline(model: str, chip_name: str) -> None:
    """Before re-planning the first two lost to one unit alone by 21% and 15%; before the search
    was seeded with ``affinity-list`` the two transformers lost to it by 1.5% on the Jetson
    (its placement was shorter by the search's own estimate too, but the search never reached it);
    yolov5s on edge8 lost to one unit alone by 0.2%: the same placement in another order."""
    g = load_onnx(MODELS / f"{model}.onnx")
    chip = load_chip(chip_name)
    table = cost_table(g, chip, "int8")
    own = default_schedule(g, chip, table)
    for name in CHECKED_AGAINST:
        other = simulate_candidate(name, g, chip, table, POLICIES[name](g, chip, table))
        assert own.latency_ms <= other.latency_ms * (1 + 1e-9), name
    assert own.schedule.policy == DEFAULT_POLICY


def test_replan_keeps_its_first_schedule_and_never_repeats_a_placement() -> None:
    g = load_onnx(MODELS / "yolov8n.onnx")
    chip = load_chip("edge8")
    table = cost_table(g, chip, "int8")

    def sim(sched):  # type: ignore[no-untyped-def]
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)

    first = sim(POLICIES[DEFAULT_POLICY](g, chip, table))
    tried = rp.replan(g, chip, table, first, sim)
    assert tried[0] is first
    keys = [tuple(sorted((n, p.unit) for n, p in s.schedule.placements.items())) for s in tried]
    assert len(set(keys)) == len(keys)
    assert 1 < len(tried) <= 1 + rp.MAX_PROBES + rp.REPLAN_ROUNDS
    assert Counter(k for s in tried for k in s.schedule.placements) == Counter(
        {n: len(tried) for n in g.order}
    )


def test_a_probe_placed_as_the_first_schedule_but_ordered_otherwise_is_simulated() -> None:
    # on edge8 the search puts all of yolov5s on the NPU (one core), as the NPU's probe does,
    # in another order; the engine runs the probe's order 0.2% faster
    g = load_onnx(MODELS / "yolov5s.onnx")
    chip = load_chip("edge8")
    table = cost_table(g, chip, "int8")

    def sim(sched):  # type: ignore[no-untyped-def]
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)

    first, problem = rp.default_plan(g, chip, table)
    tried = rp.replan(g, chip, table, sim(first), sim, problem=problem)
    same = [s for s in tried[1:] if rp._placement(s.schedule) == rp._placement(first)]
    assert same and all(s.schedule.core_order != first.core_order for s in same)
    assert min(s.latency_ms for s in same) < tried[0].latency_ms


def test_a_ruled_out_replan_ends_the_loop() -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    first = simulate_candidate(DEFAULT_POLICY, g, chip, table, POLICIES[DEFAULT_POLICY](g, chip, table))
    assert rp.replan(g, chip, table, first, lambda s: None) == [first]


@pytest.mark.parametrize("model", ["resnet18.onnx", "yolov8n.onnx"])
def test_a_solutions_placement_is_its_schedules(model: str) -> None:
    # the re-plan checks a solution for a repeat before building its schedule
    from scheduler.onnx_policies import schedule_from_solution
    from scheduler.single_unit import single_unit_each

    g = load_onnx(MODELS / model)
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    _, problem = rp.default_plan(g, chip, table)
    sols = [*single_unit_each(problem)]
    keys = {rp._solution_placement(problem, s) for s in sols}
    assert len(keys) == len(sols) > 1  # the units alone: as many placements
    for sol in sols:
        built = schedule_from_solution(g, chip, table, problem, sol, DEFAULT_POLICY)
        assert rp._solution_placement(problem, sol) == rp._placement(built)
        assert core_orders(problem, sol) == {k: ops for k, ops in built.core_order.items() if ops}


def test_a_large_graph_s_probe_that_cannot_win_ends_the_re_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    monkeypatch.setattr(rp, "LARGE_OPS", 10)  # resnet18's 49 ops count as large
    monkeypatch.setattr(rp, "COLOCATED_MAX_OPS", 10)  # and no plan on plain costs: the probes alone
    first = simulate_candidate(DEFAULT_POLICY, g, chip, table, POLICIES[DEFAULT_POLICY](g, chip, table))
    simulated, probed = [], []

    def sim(sched):  # type: ignore[no-untyped-def]
        simulated.append(sched)
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)

    def slower(sched, beat_ps):  # type: ignore[no-untyped-def]
        probed.append(beat_ps)
        return rp.SLOWER

    assert rp.replan(g, chip, table, first, sim, probe=slower) == [first]
    assert probed == [first.trace.makespan_ps] and not simulated  # the probe's, then no re-plan

    def run(sched, beat_ps):  # type: ignore[no-untyped-def]
        return sim(sched)

    # a probe that runs: as without one (one probe, then one re-plan at most)
    with_probe = rp.replan(g, chip, table, first, sim, probe=run)
    simulated.clear()
    without = rp.replan(g, chip, table, first, sim)
    assert [s.trace for s in with_probe] == [s.trace for s in without]
    assert 1 < len(without) <= 3


def test_a_large_graph_s_probe_whose_floor_cannot_win_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    monkeypatch.setattr(rp, "LARGE_OPS", 10)  # resnet18's 49 ops count as large
    monkeypatch.setattr(rp, "COLOCATED_MAX_OPS", 10)  # and no plan on plain costs: the probes alone
    first = simulate_candidate(DEFAULT_POLICY, g, chip, table, POLICIES[DEFAULT_POLICY](g, chip, table))
    _, problem = rp.default_plan(g, chip, table)
    probe_sol = rp._probes(problem, 1)[0]
    floors, probed = [], []

    def floor_at(ps: int):  # type: ignore[no-untyped-def]
        def floor(where):  # type: ignore[no-untyped-def]
            floors.append(where)
            return ps

        return floor

    def probe(sched, beat_ps):  # type: ignore[no-untyped-def]
        probed.append(sched)
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)

    def sim(sched):  # type: ignore[no-untyped-def]
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)

    beat = first.trace.makespan_ps
    assert rp.replan(g, chip, table, first, sim, probe=probe, floor=floor_at(beat)) == [first]
    assert not probed  # a floor reaching the first makespan: neither built nor probed
    assert floors == [rp._solution_where(problem, probe_sol)]
    assert set(floors[0]) == set(g.order)  # every op, placed on the probe's unit and core
    # a floor below it: the probe runs, as without a floor
    with_floor = rp.replan(g, chip, table, first, sim, probe=probe, floor=floor_at(beat - 1))
    assert len(probed) == 1 and with_floor[1].schedule == probed[0]
    assert [s.trace for s in with_floor] == [s.trace for s in rp.replan(g, chip, table, first, sim, probe=probe)]


@st.composite
def _some_lockstep(draw: st.DrawFn) -> Chip:
    """:func:`tests.helpers.random_chips` whose units run their cores in lockstep or not."""
    chip = draw(random_chips())
    data = chip.model_dump()
    for u in data["units"]:
        u["core_mode"] = draw(st.sampled_from(["independent", "lockstep"]))
    return type(chip).model_validate(data)


def _plain_cost_heft(g, chip, table):  # type: ignore[no-untyped-def]
    """HEFT's plan on plain costs, a lockstep unit as one core: what a large graph's default also tries."""
    plain = problem_from_graph(g, chip, table, serial_lockstep=True)
    return schedule_from_solution(g, chip, table, plain, heft(plain), DEFAULT_POLICY)


def test_a_large_graph_also_tries_the_plan_on_plain_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above LARGE_OPS ops (and up to COLOCATED_MAX_OPS, where the default plans on colocated
    costs) the plan on plain costs is probed first, against the first schedule's makespan; one
    that cannot win is left out and the single-unit probe still runs."""
    g = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("jetson_orin_nano")
    table = cost_table(g, chip, "int8")
    monkeypatch.setattr(rp, "LARGE_OPS", 10)  # resnet18's 49 ops count as large
    sched, _ = rp.default_plan(g, chip, table)
    first = simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)
    plain = _plain_cost_heft(g, chip, table)
    assert rp._order(plain.core_order) != rp._order(first.schedule.core_order)  # (else it is not tried)
    probed = []

    def slower(s, beat_ps):  # type: ignore[no-untyped-def]
        probed.append((s, beat_ps))
        return rp.SLOWER

    assert rp.replan(g, chip, table, first, lambda s: None, probe=slower) == [first]
    assert [b for _, b in probed] == [first.trace.makespan_ps] * 2  # the plain plan, then the probe
    assert probed[0][0] == plain
    probed.clear()

    def run(s, beat_ps):  # type: ignore[no-untyped-def]
        probed.append((s, beat_ps))
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, s)

    got = rp.replan(g, chip, table, first, lambda s: None, probe=run)
    assert got[1].schedule == plain and got[:2] == [first, run(plain, 0)]
    monkeypatch.setattr(rp, "COLOCATED_MAX_OPS", 10)  # planned on plain costs already: not tried
    probed.clear()
    rp.replan(g, chip, table, first, lambda s: None, probe=run)
    assert plain not in [s for s, _ in probed]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=st.builds(random_dag, st.integers(2, 30), st.integers(0, 2**31 - 1)), chip=_some_lockstep())
def test_a_large_default_is_never_slower_than_heft_on_plain_costs(graph, chip) -> None:  # type: ignore[no-untyped-def]
    table = cost_table(graph, chip, "int8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rp, "LARGE_OPS", 0)  # every graph counts as large
        own = default_schedule(graph, chip, table)
    plain = simulate_candidate(DEFAULT_POLICY, graph, chip, table, _plain_cost_heft(graph, chip, table))
    assert own.trace.makespan_ps <= plain.trace.makespan_ps


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=st.builds(random_dag, st.integers(1, 30), st.integers(0, 2**31 - 1)), chip=_some_lockstep())
def test_a_serial_lockstep_plan_runs_one_op_at_a_time_on_a_lockstep_unit(graph, chip) -> None:  # type: ignore[no-untyped-def]
    table = cost_table(graph, chip, "int8")
    assert problem_from_graph(graph, chip, table).cores == tuple(u.cores for u in chip.units)
    problem = problem_from_graph(graph, chip, table, serial_lockstep=True)
    assert problem.cores == tuple(1 if u.core_mode == "lockstep" else u.cores for u in chip.units)
    solve = POLICIES[DEFAULT_POLICY].solve
    assert solve is not None
    sched = schedule_on(solve, graph, chip, table, problem)
    for unit in chip.units:
        placed = sorted((p.est_start_ns, p.est_finish_ns) for p in sched.placements.values() if p.unit == unit.name)
        if unit.core_mode == "lockstep":
            assert all(s >= f - 1e-6 for (_, f), (s, _) in pairwise(placed))
    trace = simulate_candidate(DEFAULT_POLICY, graph, chip, table, sched).trace
    assert sorted(r.op for r in trace.ops) == sorted(graph.order)


def test_a_large_graph_plans_a_lockstep_npu_as_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """rk3588's NPU runs one op at a time over its three cores: above ``LARGE_OPS`` ops, where
    nothing corrects the plan through the engine, planning it as one core halves the run."""
    g = layered_dag(1200)
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    npu = [u.name for u in chip.units].index("npu")
    every_core, below = rp.default_plan(g, chip, table)
    assert below.cores[npu] == 3
    monkeypatch.setattr(rp, "LARGE_OPS", 1000)
    one_core, above = rp.default_plan(g, chip, table)
    assert above.cores[npu] == 1 and above.cores[:npu] == below.cores[:npu]
    plans = {name: simulate_candidate(DEFAULT_POLICY, g, chip, table, s) for name, s in (("every", every_core), ("one", one_core))}
    assert plans["one"].latency_ms < 0.8 * plans["every"].latency_ms
    # the plan as one core is near its run; the plan with every core far below it
    assert plans["one"].latency_ms < 1.25 * one_core.est_makespan_ns / 1e6
    assert plans["every"].latency_ms > 1.5 * every_core.est_makespan_ns / 1e6


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=st.builds(random_dag, st.integers(1, 30), st.integers(0, 2**31 - 1)), chip=_some_lockstep())
def test_a_large_plan_is_no_longer_than_heft_with_the_cores_side_by_side(graph, chip) -> None:  # type: ignore[no-untyped-def]
    table = cost_table(graph, chip, "int8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rp, "LARGE_OPS", 0)  # every graph counts as large
        sched, problem = rp.default_plan(graph, chip, table)
    alt = rp._as_if_side_by_side(problem, chip)
    if all(u.ops_at_once == u.cores for u in chip.units):
        assert alt is None
    else:
        assert alt is not None and sched.est_makespan_ns <= alt.makespan_ns + 1e-6


def test_a_replan_that_repeats_a_simulated_placement_learns_that_run_and_searches_again() -> None:
    """On a phone-like chip (``tests/data/chips/phone.yaml``) with one NPU core and a 16 MiB
    NPU SRAM, the search plans YOLOv8n fused on each unit and splits 87 ops onto the GPU away
    from their partners; the engine runs that 30 % over the plan. The probes then run every op
    fused on its unit, the search sees the latest time per op and unit, and the first re-plan
    repeats the first placement. The loop used to stop there (best 5.538 ms, HEFT kept at
    5.482); learning the repeated run's times, the next searches find a mixed placement (4.80)."""
    from chips.variants import override

    chip = override(load_chip(ROOT / "tests" / "data" / "chips" / "phone.yaml"),
                    ["nsram.capacity_kib=16384", "htp.cores=1"])  # fmt: skip
    g = load_onnx(MODELS / "yolov8n.onnx")
    table = cost_table(g, chip, "int8")

    def sim(sched):  # type: ignore[no-untyped-def]
        return simulate_candidate(DEFAULT_POLICY, g, chip, table, sched)

    first, problem = rp.default_plan(g, chip, table)
    tried = rp.replan(g, chip, table, sim(first), sim, problem=problem)
    baselines = [simulate_candidate(n, g, chip, table, POLICIES[n](g, chip, table)).latency_ms for n in CHECKED_AGAINST]
    best = min(tried, key=lambda s: s.latency_ms)
    assert best.latency_ms < 0.95 * min(baselines)
    assert {"htp", "adreno"} <= {p.unit for p in best.schedule.placements.values()}
    keys = [rp._placement(s.schedule) for s in tried]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("model", ["yolov8n", "bert_base"])
def test_re_plans_search_a_lockstep_unit_as_one_core_and_their_estimate_holds(model: str) -> None:
    """rk3588's NPU runs its three cores in lockstep: the engine splits each op over them, so
    the times the re-plans learn there are split times. Searched as three cores, those times
    counted the cores twice: yolov8n's best re-plan was estimated 9.95 ms and ran 11.35, and
    bert_base's ran 29.54, 0.9 % ahead of HEFT's 29.80. As one core, the kept re-plan's estimate
    is within 5 % of its run, and it beats every baseline by 3 % or more."""
    g = load_onnx(MODELS / f"{model}.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    assert chip.unit("npu").cores == 3 and chip.unit("npu").ops_at_once == 1
    own = default_schedule(g, chip, table)
    est_ms = own.schedule.est_makespan_ns / 1e6
    assert own.schedule.policy == DEFAULT_POLICY and abs(est_ms / own.latency_ms - 1) < 0.05
    baselines = [simulate_candidate(n, g, chip, table, POLICIES[n](g, chip, table)).latency_ms for n in CHECKED_AGAINST]
    assert own.latency_ms < 0.97 * min(baselines)


def test_an_edge_from_the_fp16_gpu_costs_the_plan_what_the_engine_moves() -> None:
    # rk3588's GPU has no int8: in an int8 deployment it runs and stores fp16, and the engine
    # moves its outputs at two bytes an element. The plan priced them at one (a GNN's 2 MB
    # scatter input: planned 105 us, ran 191), and the default lost 7 % to HEFT there.
    from scheduler.schedule import tensor_bytes, transfer_ns

    g = load_onnx(MODELS / "resnet18.onnx")
    chip = load_chip("rk3588")
    table = cost_table(g, chip, "int8")
    problem = problem_from_graph(g, chip, table)
    gpu, cpu = problem.units.index("gpu"), problem.units.index("cpu_big")
    checked = 0
    for i, name in enumerate(problem.tasks):
        if name not in table.costs or "gpu" not in table.costs[name] or len(g.op(name).outputs) != 1:
            continue
        out = g.op(name).outputs[0]
        moved = tensor_bytes(out, table.costs[name]["gpu"].dtype)
        assert moved == 2 * tensor_bytes(out, "int8")
        for _, vol in problem.succs[i]:
            assert problem.comm(vol, gpu, cpu) == pytest.approx(transfer_ns(chip, "gpu", "cpu", moved), rel=1e-9)
            checked += 1
    assert checked > 20


def test_a_re_plan_prices_an_observed_transfer_at_its_observed_time() -> None:
    # edge8's CPU -> NPU link has one DMA channel and a 20 us latency: small tensors queue
    # behind each other. Only the volume was scaled by the observed/planned ratio, so a 3 KB
    # transfer that waited 60 us was re-planned at about 21 us (a NeRF MLP: 3.3 % behind HEFT).
    chip = load_chip("edge8")
    g = load_onnx(MODELS / "yolov8n.onnx")
    table = cost_table(g, chip, "int8")
    problem = problem_from_graph(g, chip, table, colocated=True)
    sim = simulate_candidate("x", g, chip, table, POLICIES["heft"](g, chip, table))
    seen = rp.Observed()
    seen.learn(problem, chip, sim.trace)
    p2 = rp.observed_problem(problem, seen)
    task = {n: i for i, n in enumerate(problem.tasks)}
    unit = {r.op: problem.units.index(r.unit) for r in sim.trace.ops if r.frame == 0}
    volume = {(i, j): vol for i, succ in enumerate(p2.succs) for j, vol in succ}
    one_tensor = Counter((t.producer, c) for t in sim.trace.transfers if t.frame == 0 for c in t.consumers)
    queued = 0
    for t in sim.trace.transfers:
        if t.frame or len(t.consumers) != 1 or one_tensor[t.producer, t.consumers[0]] != 1 or t.producer not in task:
            continue
        i, j = task[t.producer], task[t.consumers[0]]
        took_ns = (t.end_ps - t.queued_ps) / 1000
        assert p2.comm(volume[i, j], unit[t.producer], unit[t.consumers[0]]) == pytest.approx(took_ns, rel=1e-6)
        queued += t.start_ps > t.queued_ps
    assert queued >= 3
