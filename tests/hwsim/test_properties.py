"""Invariants of scheduling and simulation over random DAGs and random chips (hypothesis)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict
from cost_models import cost_table
from graph_ir.synthetic import random_dag
from hwsim.analysis.energy import power_timeline
from hwsim.analysis.frames import frame_stats
from hwsim.pipeline import run_graph
from hwsim.report.summary import build_summary
from hwsim.sim.blocks import op_blocks, op_time_ns
from hwsim.sim.engine import FRAME_ORDERS, PS_PER_NS, EngineOptions, simulate
from hwsim.sim.splitting import shard_cost
from scheduler import POLICIES, schedule
from scheduler.bounds import critical_path_bound_ns, load_bound_ns
from scheduler.heft import heft
from scheduler.onnx_policies import problem_from_graph, schedule_from_solution
from scheduler.problem import solution_from_times
from scheduler.schedule import tensor_bytes, transfer_ns
from tests.helpers import fixed_schedule, random_chips

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
graphs = st.builds(random_dag, st.integers(1, 40), st.integers(0, 2**31 - 1))
policies = st.sampled_from(sorted(POLICIES))


def _slowed(chip, factor):
    """``chip`` with its DRAM and link bandwidths and every unit's clock scaled by ``factor``."""
    data = chip.model_dump()
    data["dram"]["bandwidth_gbps"] *= factor
    for link in data["links"]:
        link["bandwidth_gbps"] *= factor
    for u in data["units"]:
        u["clock_mhz"] *= factor
    return type(chip).model_validate(data)


@SETTINGS
@given(graph=graphs, chip=random_chips(), policy=policies)
def test_simulation_invariants(graph, chip, policy):
    result = run_graph(graph, chip, "int8", policy)
    table, trace = result.table, result.trace
    units = {u.name: u for u in chip.units}
    rec = {r.op: r for r in trace.ops}

    # every op runs exactly once, on a unit (and core) able to run it
    assert sorted(r.op for r in trace.ops) == sorted(graph.order)
    for r in trace.ops:
        assert r.unit in table.costs[r.op]
        assert 0 <= r.core < units[r.unit].cores
        # never faster than the cost model says
        assert r.duration_ps >= table.costs[r.op][r.unit].latency_ns * PS_PER_NS - 2

    # precedence: after each predecessor, plus the transfer when domains differ
    moved = {(x.tensor, x.dst_domain): x for x in trace.transfers}
    for p, v, data in graph.g.edges(data=True):
        dp, dv = units[rec[p].unit].domain, units[rec[v].unit].domain
        for t in data["tensors"]:
            if dp == dv:
                assert rec[v].start_ps >= rec[p].end_ps
            else:
                x = moved[(t, dv)]
                assert x.start_ps >= rec[p].end_ps and rec[v].start_ps >= x.end_ps

    # no two ops overlap on one core
    by_core: dict[tuple[str, int], list] = {}
    for r in trace.ops:
        by_core.setdefault((r.unit, r.core), []).append(r)
    for rs in by_core.values():
        rs.sort(key=lambda r: (r.start_ps, r.end_ps))
        for a, b in itertools.pairwise(rs):
            assert b.start_ps >= a.end_ps

    # lower bounds
    lb_cp = critical_path_bound_ns(graph, table) * PS_PER_NS
    lb_load = load_bound_ns(graph, table, chip) * PS_PER_NS
    assert trace.makespan_ps >= lb_cp * (1 - 1e-9) - 2 * len(graph)
    assert trace.makespan_ps >= lb_load * (1 - 1e-9) - 2 * len(graph)
    assert result.analysis.critical_path_ms * 1e9 <= trace.makespan_ps + 1

    # utilizations in [0, 1]
    for u in result.analysis.units:
        assert 0.0 <= u.utilization <= 1.0

    # traffic table = bytes of the cross-domain edges (each tensor once per destination domain)
    expected: dict[tuple[str, str], int] = {}
    seen: set[tuple[str, str]] = set()
    domain_of = {n: units[rec[n].unit].domain for n in graph.order}
    for n in graph.order:
        for t in graph.op(n).activations:
            src = domain_of[graph.producer[t.name]] if t.name in graph.producer else chip.host
            key = (t.name, domain_of[n])
            if src != domain_of[n] and key not in seen:
                seen.add(key)
                nbytes = next(x.bytes for x in trace.transfers if (x.tensor, x.dst_domain) == key)
                expected[(src, domain_of[n])] = expected.get((src, domain_of[n]), 0) + nbytes
    for t in graph.outputs:
        src = domain_of[graph.producer[t.name]]
        if src != chip.host:
            nbytes = next(x.bytes for x in trace.transfers if (x.tensor, x.dst_domain) == (t.name, chip.host))
            expected[(src, chip.host)] = expected.get((src, chip.host), 0) + nbytes
    got = {(row.src_domain, row.dst_domain): row.bytes for row in result.analysis.traffic}
    assert got == expected

    # memory bandwidth in use never exceeds capacity
    for _, mem, use in trace.bandwidth_samples:
        assert use <= trace.memory_capacity_bytes_per_ps[mem] * (1 + 1e-9)

    # determinism, byte for byte
    again = run_graph(graph, chip, "int8", policy)
    assert json.dumps(build_summary(again).to_json()) == json.dumps(build_summary(result).to_json())
    assert again.trace == trace


@SETTINGS
@given(graph=graphs, chip=random_chips(), factor=st.floats(0.1, 0.9))
def test_lower_bandwidth_or_clock_never_speeds_up_a_fixed_schedule(graph, chip, factor):
    table = cost_table(graph, chip, "int8")
    base = schedule(graph, chip, table)
    where = {n: (p.unit, p.core) for n, p in base.placements.items()}
    before = simulate(graph, chip, table, fixed_schedule(graph, chip, table, where)).makespan_ps

    slower = _slowed(chip, factor)
    table2 = cost_table(graph, slower, "int8")
    after = simulate(graph, slower, table2, fixed_schedule(graph, slower, table2, where)).makespan_ps
    assert after >= before - 2 * len(graph)


# ---------------------------------------------------------------- schedules from a solver's start times

#: The chip on which hypothesis found ``exact`` deadlocking (with ``random_dag(16, 115797212)``):
#: u1-u3 have no per-op overhead, so a Reshape takes no time there.
ZERO_TIME_CHIP = chip_from_dict(
    {
        "name": "random",
        "dram": {"bandwidth_gbps": 2.0, "latency_ns": 0.0},
        "domains": [
            {"name": "d0", "kind": "sram", "bandwidth_gbps": 5.0},
            {"name": "d1", "kind": "sram", "bandwidth_gbps": 5.0},
        ],
        "units": [
            {"name": "u0", "kind": "cpu", "domain": "d0", "clock_mhz": 200.0, "op_overhead_ns": 3773.758012935674,
             "cores": 1, "flops_per_cycle": {"int8": 32, "fp32": 8}},
            {"name": "u1", "kind": "dsp", "domain": "d0", "clock_mhz": 200.0, "op_overhead_ns": 0.0,
             "flops_per_cycle": {"int8": 64, "fp32": 16}, "sram_kib": 128},
            {"name": "u2", "kind": "npu", "domain": "d0", "clock_mhz": 200.0, "op_overhead_ns": 0.0, "cores": 1,
             "mac_rows": 8, "mac_cols": 8, "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 16.0},
            {"name": "u3", "kind": "cpu", "domain": "d1", "clock_mhz": 200.0, "op_overhead_ns": 0.0, "cores": 1,
             "flops_per_cycle": {"int8": 32, "fp32": 8}},
        ],
        "links": [
            {"src": "d0", "dst": "d1", "bandwidth_gbps": 17.040917056026686, "latency_ns": 0.0, "dma_channels": 1}
        ],
    }
)  # fmt: skip


def _check_estimates_respect_the_graph(graph, sched) -> None:
    """Every op's estimated start is at or after each producer's estimated finish."""
    for src, dst in graph.g.edges:
        assert sched.placements[dst].est_start_ns >= sched.placements[src].est_finish_ns


def test_exact_runs_where_the_milp_starts_an_op_before_its_zero_time_producer():
    # HiGHS started n3_Conv one rounding step before n2_Reshape (0 ns, same NPU). Rebuilt in
    # plain start order the schedule ran n3 before n2 on the NPU ("14 ops never ran"), and its
    # estimate (575843 ns) had n3 ignore n2.
    graph = random_dag(16, 115797212)
    result = run_graph(graph, ZERO_TIME_CHIP, "int8", "exact")
    assert sorted(r.op for r in result.trace.ops) == sorted(graph.order)
    assert result.schedule.policy == "exact"
    _check_estimates_respect_the_graph(graph, result.schedule)
    assert result.schedule.est_makespan_ns == pytest.approx(584647.4265105529, rel=1e-9)


def _earlier(t: float, steps: int) -> float:
    """``t`` moved ``steps`` representable floats earlier (a solver's rounding)."""
    for _ in range(steps):
        t = math.nextafter(t, -math.inf)
    return t


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, steps=st.lists(st.integers(0, 2), min_size=42, max_size=42))
def test_schedules_from_rounded_start_times_always_run(graph, steps):
    # A solver's start times respect the graph only to its tolerance: with zero-time ops a
    # consumer may start a step or two before its producer. The engine must still run it all,
    # whether the times are re-timed first (as `exact` does) or taken as they are.
    chip = ZERO_TIME_CHIP
    table = cost_table(graph, chip, "int8")
    problem = problem_from_graph(graph, chip, table)
    sol = heft(problem)
    rounded = tuple(_earlier(t, steps[i]) for i, t in enumerate(sol.start_ns))
    retimed = solution_from_times(problem, sol.unit, rounded)
    for rebuilt in (retimed, dataclasses.replace(sol, start_ns=rounded)):
        sched = schedule_from_solution(graph, chip, table, problem, rebuilt, "heft")
        trace = simulate(graph, chip, table, sched)
        assert sorted(r.op for r in trace.ops) == sorted(graph.order)
    _check_estimates_respect_the_graph(graph, schedule_from_solution(graph, chip, table, problem, retimed, "heft"))


# ---------------------------------------------------------------- engine fidelity (splits, tiles, frames)


@st.composite
def splitting_chips(draw: st.DrawFn) -> Chip:
    """Random chips whose multi-core units may split some op types, with a split overhead,
    and whose on-chip buffers may be tiny (so that weighty ops run tiled)."""
    chip = draw(random_chips())
    data = chip.model_dump()
    for u in data["units"]:
        if draw(st.booleans()):
            kib = draw(st.floats(0.5, 8))
            if u["kind"] in ("npu", "dsp"):
                u["sram_kib"] = kib
            elif u["kind"] == "gpu":
                u["l2_kib"] = kib
            else:
                u |= {"l1_kib": kib / 4, "l2_kib": kib / 2, "l3_kib": kib}
        if draw(st.booleans()):
            allowed = u["supported_ops"]
            u["split_ops"] = [t for t in ("Conv", "MatMul", "Add", "Relu", "Concat") if allowed is None or t in allowed]
            u["split_overhead_ns"] = draw(st.floats(0, 3000))
    return type(chip).model_validate(data)


def _expected_op_bytes(graph, chip, table, r) -> int:
    k = len(r.all_cores)
    if k == 1:
        return table.costs[r.op][r.unit].dram_bytes
    shard = shard_cost(graph.op(r.op), chip.unit(r.unit), chip, table.precision, k)
    assert shard is not None
    return k * shard.dram_bytes


def _random_placement(graph, chip, table, seed: int) -> dict[str, tuple[str, int]]:
    """Each op on a random unit able to run it, on a random core (no scheduler: fast, varied)."""
    rng = random.Random(seed)
    where = {}
    for n in graph.order:
        unit = rng.choice(table.eligible(n))
        where[n] = (unit, rng.randrange(chip.unit(unit).cores))
    return where


ENGINE_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2**31 - 1)


#: Random graphs on random splitting chips, run through the engine with random frames and options.
engine_cases = given(
    graph=graphs,
    chip=splitting_chips(),
    seed=seeds,
    frames=st.integers(1, 3),
    in_flight=st.none() | st.integers(1, 2),
    double_buffer=st.booleans(),
    frame_order=st.sampled_from(FRAME_ORDERS),
)


@ENGINE_SETTINGS
@engine_cases
def test_engine_cores_bytes_and_bandwidth(graph, chip, seed, frames, in_flight, double_buffer, frame_order):
    table = cost_table(graph, chip, "int8")
    sched = fixed_schedule(graph, chip, table, _random_placement(graph, chip, table, seed))
    options = EngineOptions(double_buffer=double_buffer, frame_order=frame_order)
    trace = simulate(graph, chip, table, sched, options, frames, in_flight)
    units = {u.name: u for u in chip.units}
    memory = {d.name: ("dram" if d.kind == "dram" else d.name) for d in chip.domains}

    # every op once per frame
    assert sorted((r.frame, r.op) for r in trace.ops) == sorted((f, n) for f in range(frames) for n in graph.order)

    # each core runs each frame's ops in the schedule's order; frame-major: frame after frame
    for key, order in sched.core_order.items():
        pos = {op: i for i, op in enumerate(order)}  # ties (zero-length ops) in the core's order
        ran = sorted((r.start_ps, r.end_ps, r.frame, pos[r.op], r.op) for r in trace.ops if (r.unit, r.core) == key)
        for f in range(frames):
            assert [op for *_, g, _, op in ran if g == f] == list(order)
        if frame_order == "frame-major":
            assert [g for *_, g, _, _ in ran] == sorted(g for *_, g, _, _ in ran)

    # a core runs one op or shard at a time; a unit never more than it has cores
    by_core: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in trace.ops:
        assert len(set(r.all_cores)) == len(r.all_cores) <= units[r.unit].cores
        assert all(0 <= c < units[r.unit].cores for c in r.all_cores)
        if len(r.all_cores) > 1:
            assert r.op_type in units[r.unit].split_ops
        for c in r.all_cores:
            by_core.setdefault((r.unit, c), []).append((r.start_ps, r.end_ps))
    for spans in by_core.values():
        spans.sort()
        for (_, e1), (s2, _) in itertools.pairwise(spans):
            assert s2 >= e1
    for u in chip.units:
        for _, busy in busy_core_steps_of(trace, u.name):
            assert busy <= u.cores

    # bytes: transfers as the schedule implies, once per frame; ops as their (shard) costs say
    assert sorted((x.frame, x.tensor, x.dst_domain, x.bytes) for x in trace.transfers) == sorted(
        (f, t.tensor, t.dst_domain, t.bytes) for f in range(frames) for t in sched.transfers
    )
    for r in trace.ops:
        assert r.dram_bytes == _expected_op_bytes(graph, chip, table, r)
        assert sum(p.bytes for p in r.phases) in (0, r.dram_bytes)

    streams = _assert_bandwidth_counters_carry_the_bytes(trace, units, memory)

    # per frame, an op starts after its inputs exist in its domain
    rec = {(r.frame, r.op): r for r in trace.ops}
    moved = {(x.frame, x.tensor, x.dst_domain): x for x in trace.transfers}
    for f in range(frames):
        for p, v, data in graph.g.edges(data=True):
            dp, dv = units[rec[f, p].unit].domain, units[rec[f, v].unit].domain
            for t in data["tensors"]:
                ready = rec[f, p].end_ps if dp == dv else moved[f, t, dv].end_ps
                assert rec[f, v].start_ps >= ready

    # energy: the power timeline integrates to the energy; determinism
    stats = frame_stats(chip, trace)
    steps = power_timeline(chip, trace)
    integral = sum(w * (t1 - t0) for (t0, w), (t1, _) in itertools.pairwise(steps))
    dram_slack_pj = 2 * trace.memory_capacity_bytes_per_ps["dram"] * streams * chip.dram.energy_pj_per_byte
    assert integral == pytest.approx(stats.energy_mj * 1e9, rel=1e-9, abs=dram_slack_pj + 1e-3)
    assert stats.initiation_interval_ms > 0 or trace.makespan_ps == 0
    assert simulate(graph, chip, table, sched, options, frames, in_flight) == trace

    # at most in_flight frames in the system: frame f waits for frame f - in_flight to end
    if in_flight is not None and graph.order:
        ends = frame_stats(chip, trace).frame_end_ms
        for f in range(frames):
            admit = trace.frame_admit_ps[f]
            assert admit == 0 if f < in_flight else admit == round(ends[f - in_flight] * 1e9)
            assert all(r.start_ps >= admit for r in trace.ops if r.frame == f)


def _assert_bandwidth_counters_carry_the_bytes(trace, units, memory) -> int:
    """The bandwidth counters carry exactly the ops' and transfers' bytes, never above capacity;
    returns the number of memory streams (each may run up to 1 ps over)."""
    # the bandwidth counters carry exactly those bytes, never above capacity
    expected: dict[str, float] = {}
    for r in trace.ops:
        m = memory[units[r.unit].domain]
        expected[m] = expected.get(m, 0.0) + r.dram_bytes
    for x in trace.transfers:
        for d in (x.src_domain, x.dst_domain):
            expected[memory[d]] = expected.get(memory[d], 0.0) + x.bytes
    carried: dict[str, float] = {}
    last: dict[str, tuple[int, float]] = {}
    for t, m, use in trace.bandwidth_samples:
        assert use <= trace.memory_capacity_bytes_per_ps[m] * (1 + 1e-9)
        if m in last:
            carried[m] = carried.get(m, 0.0) + last[m][1] * (t - last[m][0])
        last[m] = (t, use)
    assert all(abs(use) < 1e-9 for _, use in last.values())  # every stream ended
    # each stream ends on a whole picosecond: it may run up to 1 ps (at most the capacity) over
    streams = sum(max(1, sum(p.kind == "memory" for p in r.phases)) for r in trace.ops) + len(trace.transfers)
    for m in set(expected) | set(carried):
        slack = 2 * trace.memory_capacity_bytes_per_ps[m] * (streams + len(trace.bandwidth_samples))
        assert carried.get(m, 0.0) == pytest.approx(expected.get(m, 0.0), rel=1e-9, abs=slack)
    return streams


def busy_core_steps_of(trace, unit: str) -> list[tuple[int, int]]:
    delta: dict[int, int] = {}
    for r in trace.ops:
        if r.unit == unit:
            delta[r.start_ps] = delta.get(r.start_ps, 0) + len(r.all_cores)
            delta[r.end_ps] = delta.get(r.end_ps, 0) - len(r.all_cores)
    steps, busy = [], 0
    for t in sorted(delta):
        busy += delta[t]
        steps.append((t, busy))
    return steps


@ENGINE_SETTINGS
@given(graph=graphs, chip=splitting_chips(), seed=seeds, factor=st.floats(0.1, 0.9), double_buffer=st.booleans())
def test_slower_chip_never_speeds_up_a_fixed_split_schedule(graph, chip, seed, factor, double_buffer):
    # the placement, the order, and how many cores each op uses are fixed from a first run
    options = EngineOptions(double_buffer=double_buffer)
    table = cost_table(graph, chip, "int8")
    where = _random_placement(graph, chip, table, seed)
    first = simulate(graph, chip, table, fixed_schedule(graph, chip, table, where), options)
    cores = {r.op: len(r.all_cores) for r in first.ops}

    def fixed(c, t):
        s = fixed_schedule(graph, c, t, where)
        placements = {n: dataclasses.replace(p, cores=cores[n]) for n, p in s.placements.items()}
        return dataclasses.replace(s, placements=placements)

    before = simulate(graph, chip, table, fixed(chip, table), options).makespan_ps
    slower = _slowed(chip, factor)
    table2 = cost_table(graph, slower, "int8")
    after = simulate(graph, slower, table2, fixed(slower, table2), options).makespan_ps
    assert after >= before - 2 * len(graph)


@ENGINE_SETTINGS
@engine_cases
def test_stretch_is_what_sharing_added_and_waits_start_when_inputs_arrive(
    graph, chip, seed, frames, in_flight, double_buffer, frame_order
):
    table = cost_table(graph, chip, "int8")
    sched = fixed_schedule(graph, chip, table, _random_placement(graph, chip, table, seed))
    options = EngineOptions(double_buffer=double_buffer, frame_order=frame_order)
    trace = simulate(graph, chip, table, sched, options, frames, in_flight)

    # an op: actual = uncontended (overhead + blocks, its shards' cost) + stretch, to the rounding
    # of its overhead and each block to whole picoseconds
    for r in trace.ops:
        k = len(r.all_cores)
        cost = table.costs[r.op][r.unit] if k == 1 else shard_cost(graph.op(r.op), chip.unit(r.unit), chip, table.precision, k)
        assert cost is not None
        uncontended_ps = op_time_ns(cost, double_buffer) * PS_PER_NS
        assert r.stretch_ps >= 0 and r.wait_core_ps >= 0
        assert abs(r.duration_ps - (uncontended_ps + r.stretch_ps)) <= len(op_blocks(cost, double_buffer, k)) + 2

    # a transfer: actual = link latency + bytes at the link's rate + stretch, to the rounding of
    # its latency, its end and its stretch to whole picoseconds
    for x in trace.transfers:
        uncontended_ps = transfer_ns(chip, x.src_domain, x.dst_domain, x.bytes) * PS_PER_NS
        assert x.stretch_ps >= 0 and x.wait_channel_ps >= 0
        assert abs(x.end_ps - x.start_ps - (uncontended_ps + x.stretch_ps)) <= 3

    if frames == 1:  # an op is ready when its last input is there in its domain
        rec = {r.op: r for r in trace.ops}
        domain = {r.op: chip.unit(r.unit).domain for r in trace.ops}
        moved = {(x.tensor, x.dst_domain): x.end_ps for x in trace.transfers}

        def arrival(tensor: str, where: str) -> int:
            src = graph.producer.get(tensor)
            here = domain[src] if src is not None else chip.host
            if here == where:
                return rec[src].end_ps if src is not None else 0
            return moved[(tensor, where)]

        for r in trace.ops:
            ready = max((arrival(t.name, domain[r.op]) for t in graph.op(r.op).activations), default=0)
            assert r.start_ps - r.wait_core_ps == ready


@SETTINGS
@given(graph=graphs, chip=random_chips(), precision=st.sampled_from(["int8", "fp16", "fp32"]))
def test_the_plan_prices_an_edge_at_the_bytes_the_engine_moves(graph, chip, precision):
    # The engine stores a tensor in the dtype its producer ran in (a GPU without int8 runs fp16),
    # the plan's volumes are the precision's bytes: the producer's unit's volume scale must make
    # up the difference. Exact where the unit runs every op in one dtype (every unit of these chips).
    table = cost_table(graph, chip, precision)
    problem = problem_from_graph(graph, chip, table)
    units = {u.name: u for u in chip.units}
    one_dtype = {
        uname for uname in units if len({row[uname].dtype for row in table.costs.values() if uname in row}) == 1
    }
    for i, name in enumerate(problem.tasks):
        if name not in table.costs or len(graph.op(name).outputs) != 1:
            continue
        out = graph.op(name).outputs[0]
        for uname, cost in table.costs[name].items():
            if uname not in one_dtype:
                continue
            u = problem.units.index(uname)
            moved = tensor_bytes(out, cost.dtype)
            for other in chip.units:
                if other.domain == units[uname].domain:
                    continue
                v = problem.units.index(other.name)
                for _, vol in problem.succs[i]:
                    assert problem.comm(vol, u, v) == pytest.approx(
                        transfer_ns(chip, units[uname].domain, other.domain, moved), rel=1e-9, abs=1e-9
                    )


@SETTINGS
@given(graph=graphs, chip=random_chips(), policy=st.sampled_from(["heft", "single-unit", "affinity-list"]))
def test_a_re_plan_prices_each_observed_transfer_at_its_observed_time(graph, chip, policy):
    # What the re-plans learn of a run (hwsim.replan.Observed): an edge that carried one tensor
    # costs, on the units it ran between, the time its transfer took, queueing and latency
    # included (only the bytes term was stretched before).
    from hwsim import replan as rp

    table = cost_table(graph, chip, "int8")
    problem = problem_from_graph(graph, chip, table)
    trace = run_graph(graph, chip, "int8", policy).trace
    seen = rp.Observed()
    seen.learn(problem, chip, trace)
    p2 = rp.observed_problem(problem, seen)
    task = {n: i for i, n in enumerate(problem.tasks)}
    unit = {r.op: problem.units.index(r.unit) for r in trace.ops if r.frame == 0}
    volume = {(i, j): vol for i, succ in enumerate(p2.succs) for j, vol in succ}
    carried = Counter((t.producer, c) for t in trace.transfers if t.frame == 0 for c in t.consumers)
    for t in trace.transfers:
        if t.frame or t.producer not in task or len(t.consumers) != 1 or t.consumers[0] not in task:
            continue
        if carried[t.producer, t.consumers[0]] != 1 or len(graph.g.edges[t.producer, t.consumers[0]]["tensors"]) != 1:
            continue
        i, j = task[t.producer], task[t.consumers[0]]
        took_ns = (t.end_ps - t.queued_ps) / PS_PER_NS
        assert p2.comm(volume[i, j], unit[t.producer], unit[t.consumers[0]]) == pytest.approx(took_ns, rel=1e-6, abs=1e-6)
