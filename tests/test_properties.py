"""Invariants of scheduling and simulation over random DAGs and random chips (hypothesis)."""

from __future__ import annotations

import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cost_models import cost_table
from graph_ir.synthetic import random_dag
from hwsim.engine import PS_PER_NS, simulate
from hwsim.pipeline import run_graph
from hwsim.report import summary
from scheduler import POLICIES, schedule
from scheduler.bounds import critical_path_bound_ns, load_bound_ns
from tests.helpers import fixed_schedule, random_chips

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
graphs = st.builds(random_dag, st.integers(1, 40), st.integers(0, 2**31 - 1))
policies = st.sampled_from(sorted(POLICIES))


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
    assert json.dumps(summary(again)) == json.dumps(summary(result))
    assert again.trace == trace


@SETTINGS
@given(graph=graphs, chip=random_chips(), factor=st.floats(0.1, 0.9))
def test_lower_bandwidth_or_clock_never_speeds_up_a_fixed_schedule(graph, chip, factor):
    table = cost_table(graph, chip, "int8")
    base = schedule(graph, chip, table)
    where = {n: (p.unit, p.core) for n, p in base.placements.items()}
    before = simulate(graph, chip, table, fixed_schedule(graph, chip, table, where)).makespan_ps

    data = chip.model_dump()
    data["dram"]["bandwidth_gbps"] *= factor
    for link in data["links"]:
        link["bandwidth_gbps"] *= factor
    for u in data["units"]:
        u["clock_mhz"] *= factor
    slower = type(chip).model_validate(data)
    table2 = cost_table(graph, slower, "int8")
    after = simulate(graph, slower, table2, fixed_schedule(graph, slower, table2, where)).makespan_ps
    assert after >= before - 2 * len(graph)
