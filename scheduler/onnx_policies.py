"""The abstract policies on ONNX models: ``(ModelGraph, Chip, CostTable)`` -> Problem -> Schedule.

Units keep their cores (a task goes to a unit; the evaluator picks the core); an edge's volume
is the bytes of the tensors it carries (stored in the table's precision) and costs
``bytes / bandwidth + latency`` of the link between the two domains, nothing within one. Graph
inputs come from, and outputs return to, the host domain: two zero-time tasks ``<inputs>`` and
``<outputs>`` that only the host domain's units run carry those trips. This ignores DRAM
contention and DMA channels, which the engine adds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.affinity_locality import affinity_rank
from scheduler.exact import exact
from scheduler.explain import explain
from scheduler.ort_greedy import ort_greedy
from scheduler.policies import CHEAP_POLICIES, _best
from scheduler.problem import Problem, Solution, make_problem
from scheduler.schedule import Placement, Schedule, implied_transfers, tensor_bytes

__all__ = ["graph_policy", "problem_from_graph", "schedule_from_solution"]

#: ort-greedy's unit order: accelerators first, CPUs take the rest.
ORT_KIND_ORDER = ("npu", "gpu", "dsp", "cpu")


def problem_from_graph(graph: ModelGraph, chip: Chip, table: CostTable) -> Problem:
    """The scheduling problem of ``graph`` on ``chip`` with the costs in ``table``."""
    units = [u.name for u in chip.units]
    doms = [d.name for d in chip.domains]
    dom_ix = {d: k for k, d in enumerate(doms)}
    host_units = [u for u, unit in enumerate(chip.units) if unit.domain == chip.host]
    io = bool(host_units)
    names = [INPUTS, *graph.order, OUTPUTS] if io else list(graph.order)
    index = {n: k for k, n in enumerate(names)}
    n, m = len(names), len(units)
    ex = np.full((n, m), np.inf)
    aff = np.zeros((n, m), dtype=int)
    if io:
        ex[0, host_units] = 0.0
        ex[n - 1, host_units] = 0.0
    for name in graph.order:
        i = index[name]
        row = table.costs[name]
        op_type = graph.op(name).op_type
        for u, uname in enumerate(units):
            if uname in row:
                ex[i, u] = row[uname].latency_ns
            aff[i, u] = affinity_rank(chip, op_type, uname)
    size: dict[str, int] = {}
    default_dtype = None if table.precision == "model" else table.precision
    for name in graph.order:
        for t in graph.op(name).outputs:
            size[t.name] = tensor_bytes(t, default_dtype)
    edges = []
    g = graph.g
    for s, d in g.edges:
        vol = float(sum(size.get(t, 0) for t in g.edges[s, d]["tensors"]))
        edges.append((index[s], index[d], vol))
    if io:
        for t in graph.inputs:
            size[t.name] = tensor_bytes(t, default_dtype)
        for name in graph.order:
            vol = float(sum(size[t.name] for t in graph.op(name).activations if t.name not in graph.producer))
            if vol:
                edges.append((0, index[name], vol))
        consumed = {t.name for name in graph.order for t in graph.op(name).activations}
        for t in graph.outputs:
            if t.name in graph.producer:
                # A tensor moved once serves every consumer in a domain: when ops also read the
                # output, its trip home is usually made anyway (approximation: count it once).
                vol = 0.0 if t.name in consumed else float(size[t.name])
                edges.append((index[graph.producer[t.name]], n - 1, vol))
        edges = _merge(edges)
    nd = len(doms)
    scale = np.zeros((nd, nd))
    lat = np.zeros((nd, nd))
    for a in doms:
        for b in doms:
            if a == b:
                continue
            link = chip.link_between(a, b)
            # Domains without a link hold no unit (the chip schema checks used domains).
            scale[dom_ix[a], dom_ix[b]] = 1.0 / link.bandwidth_gbps if link else 1e12
            lat[dom_ix[a], dom_ix[b]] = link.latency_ns if link else 1e12
    return make_problem(
        names,
        units,
        ex,
        sorted(edges),
        kinds=[graph.op(x).op_type if x not in (INPUTS, OUTPUTS) else "" for x in names],
        cores=[u.cores for u in chip.units],
        unit_domain=[dom_ix[u.domain] for u in chip.units],
        comm_scale=scale,
        comm_lat=lat,
        affinity=aff,
    )


#: Names of the host-side pseudo tasks (not ONNX node names: those cannot contain "<").
INPUTS, OUTPUTS = "<inputs>", "<outputs>"


def _merge(edges: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    out: dict[tuple[int, int], float] = {}
    for s, d, v in edges:
        out[s, d] = out.get((s, d), 0.0) + v
    return sorted((s, d, v) for (s, d), v in out.items())


def schedule_from_solution(
    graph: ModelGraph, chip: Chip, table: CostTable, problem: Problem, sol: Solution, policy: str
) -> Schedule:
    """The engine's :class:`Schedule` for ``sol``: per-core order by start time, reasons attached."""
    reasons = explain(problem, sol, " ns")
    placements = {}
    by_core: dict[tuple[str, int], list[tuple[float, int]]] = {
        (u.name, c): [] for u in chip.units for c in range(u.cores)
    }
    for i, name in enumerate(problem.tasks):
        if name in (INPUTS, OUTPUTS):
            continue
        unit = problem.units[sol.unit[i]]
        placements[name] = Placement(name, unit, sol.core[i], sol.start_ns[i], sol.finish_ns[i], reasons[i])
        by_core[(unit, sol.core[i])].append((sol.start_ns[i], i))
    order = {k: tuple(problem.tasks[i] for _, i in sorted(v)) for k, v in by_core.items()}
    unit_of = {n: p.unit for n, p in placements.items()}
    transfers = implied_transfers(graph, chip, table, unit_of)
    return Schedule(policy, placements, order, transfers, sol.makespan_ns)


def _ort(problem: Problem, chip: Chip) -> Solution:
    kinds = [chip.unit(u).kind for u in problem.units]
    prio = sorted(range(problem.n_units), key=lambda u: (ORT_KIND_ORDER.index(kinds[u]), u))
    return ort_greedy(problem, prio)


def graph_policy(name: str) -> Callable[[ModelGraph, Chip, CostTable], Schedule]:
    """The engine-facing policy ``name`` (a cheap policy, ``best`` or ``exact``)."""

    def run(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
        problem = problem_from_graph(graph, chip, table)
        label = name
        if name == "ort-greedy":
            sol = _ort(problem, chip)
        elif name in CHEAP_POLICIES:
            sol = CHEAP_POLICIES[name](problem)
        elif name == "best":
            winner, sol = _best(problem)
            label = f"best ({winner})"
        elif name == "exact":
            _, inc = _best(problem)
            sol = exact(problem, inc, 0.0, EXACT_TIME_LIMIT_S).solution
        else:
            raise ValueError(f"unknown policy {name!r}")
        return schedule_from_solution(graph, chip, table, problem, sol, label)

    run.__name__ = name.replace("-", "_")
    run.__doc__ = f"The {name!r} policy on an ONNX graph (see scheduler.onnx_policies)."
    return run


#: ``exact`` on a model gives up after this long and keeps the best schedule found.
EXACT_TIME_LIMIT_S = 10.0
