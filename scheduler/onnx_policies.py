"""The policies on ONNX models: ``(ModelGraph, Chip, CostTable)`` -> Problem -> policy -> Schedule.

Units keep their cores (a task goes to a unit; the evaluator picks the core); an edge's volume
is the bytes of the tensors it carries (stored in the table's precision) and costs
``bytes / bandwidth + latency`` of the link between the two domains, nothing within one. Graph
inputs come from, and outputs return to, the host domain: two zero-time tasks ``<inputs>`` and
``<outputs>`` that only the host domain's units run carry those trips. This ignores DRAM
contention and DMA channels, which the engine adds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from chips.schema import Chip
from cost_models.energy import dram_energy_pj
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.affinity_list import affinity_rank
from scheduler.affinity_locality import DEFAULT_WORK_BUDGET
from scheduler.deadlines import deadline_first
from scheduler.energy import EnergyModel, min_energy
from scheduler.explain import explain
from scheduler.ort_greedy import ort_greedy
from scheduler.policy import ProblemPolicy, SolveOptions
from scheduler.problem import Problem, Solution, make_problem, solution_from_times, start_order
from scheduler.schedule import Placement, Schedule, implied_transfers, tensor_bytes

__all__ = [
    "COLOCATED_MAX_OPS",
    "INPUTS",
    "ONNX_WORK_BUDGET",
    "OUTPUTS",
    "colocated_costs",
    "core_orders",
    "deadline_schedule",
    "energy_model",
    "energy_schedule",
    "model_options",
    "model_problem",
    "ort_greedy_model",
    "problem_from_graph",
    "schedule_from_solution",
    "schedule_model",
    "schedule_on",
    "solution_from_schedule",
]

#: Above this many ops the search plans with the plain costs: :func:`colocated_costs` runs
#: fusion once per unit, ~7 s at 100k ops on 4 units (the whole run takes ~18 s there).
COLOCATED_MAX_OPS = 20_000


def colocated_costs(graph: ModelGraph, chip: Chip, table: CostTable) -> CostTable:
    """Each op's cost on each unit as it is when its neighbours run on that unit too: with
    the conv/matmul epilogues, BatchNormalization folds and residual Adds the unit fuses
    (:func:`cost_models.fusion.fuse` with every op the unit can run placed on it).

    The search estimates schedules with these, so it sees what keeping a conv's activation on
    the conv's unit saves (on an NPU or GPU that is a whole layer set-up, 20-26 us on the
    bundled chips); with the plain table it moved activations off their conv for free and the
    engine paid for it (up to 35 % slower than the best single unit on the bundled models).
    The estimate is optimistic where a neighbour lands elsewhere after all; the engine
    applies fusion to the placement the schedule actually has.
    """
    from cost_models.fusion import fuse

    costs = {op: dict(row) for op, row in table.costs.items()}
    for unit in chip.units:
        placement = {op: unit.name if unit.name in row else next(iter(row)) for op, row in table.costs.items()}
        # Every legal group, as planning always assumed: the run's fusion decisions come after.
        for op, row in fuse(graph, chip, table, placement, mode="on").table.costs.items():
            if unit.name in row:
                costs[op][unit.name] = row[unit.name]
    return CostTable(table.precision, costs, table.dtypes, table.knobs)


def problem_from_graph(
    graph: ModelGraph, chip: Chip, table: CostTable, colocated: bool = False, serial_lockstep: bool = False
) -> Problem:
    """The scheduling problem of ``graph`` on ``chip`` with the costs in ``table`` (with
    ``colocated``, those of :func:`colocated_costs`: what the default search plans with; the
    baselines keep the plain costs, as their published definitions have no fusion).

    A unit has one core per core of the chip's unit; with ``serial_lockstep`` a unit whose
    cores run in lockstep has one (:attr:`chips.schema.Unit.ops_at_once`: the engine runs its
    ops one at a time, where the cores would let the plan put up to ``cores`` side by side)."""
    host_units = [u for u, unit in enumerate(chip.units) if unit.domain == chip.host]
    io = bool(host_units)
    names = [INPUTS, *graph.order, OUTPUTS] if io else list(graph.order)
    index = {n: k for k, n in enumerate(names)}
    planned = colocated_costs(graph, chip, table) if colocated else table
    ex, aff = _exec_and_affinity(graph, chip, planned, index, host_units)
    edges = _edges(graph, table, index, io)
    dom_ix, scale, lat = _domain_links(chip)
    return make_problem(
        names,
        [u.name for u in chip.units],
        ex,
        sorted(edges),
        kinds=[graph.op(x).op_type if x not in (INPUTS, OUTPUTS) else "" for x in names],
        cores=[u.ops_at_once if serial_lockstep else u.cores for u in chip.units],
        unit_domain=[dom_ix[u.domain] for u in chip.units],
        comm_scale=scale,
        comm_lat=lat,
        affinity=aff,
        volume_scale=_volume_scale(graph, table, [u.name for u in chip.units]),
    )


def _volume_scale(graph: ModelGraph, table: CostTable, units: Sequence[str]) -> list[float]:
    """Per unit: the bytes the ops' outputs take stored in the dtype each op runs in there
    (what the engine moves, :func:`~scheduler.schedule.implied_transfers`) over the bytes at the
    table's precision (the edges' volumes), summed over the ops the unit can run: 2 for a GPU
    without int8 that runs an int8 deployment in fp16, 1 where every unit runs the precision."""
    default_dtype = None if table.precision == "model" else table.precision
    wide = dict.fromkeys(units, 0.0)
    base = dict.fromkeys(units, 0.0)
    costs = table.costs
    for name in graph.order:
        outs = graph.op(name).outputs
        at: dict[str | None, int] = {default_dtype: sum(tensor_bytes(t, default_dtype) for t in outs)}
        for u, c in costs[name].items():
            if c.dtype not in at:
                at[c.dtype] = sum(tensor_bytes(t, c.dtype) for t in outs)
            wide[u] += at[c.dtype]
            base[u] += at[default_dtype]
    return [wide[u] / base[u] if base[u] > 0 else 1.0 for u in units]


def _exec_and_affinity(
    graph: ModelGraph, chip: Chip, planned: CostTable, index: Mapping[str, int], host_units: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Run times (ns; ``inf``: cannot run) and affinity ranks, task x unit. The pseudo tasks
    (present when ``host_units`` is not empty) take no time on the host domain's units."""
    units = [u.name for u in chip.units]
    n, m = len(index), len(units)
    inf = math.inf
    ex_rows = [[inf] * m for _ in range(n)]  # filled as lists: a numpy item set per op and unit costs
    aff_rows = [[0] * m for _ in range(n)]
    if host_units:
        for u in host_units:
            ex_rows[0][u] = ex_rows[n - 1][u] = 0.0
    ranks: dict[str, list[int]] = {}
    costs = planned.costs
    for name in graph.order:
        i = index[name]
        row = costs[name]
        op_type = graph.op(name).op_type
        if op_type not in ranks:
            ranks[op_type] = [affinity_rank(chip, op_type, uname) for uname in units]
        aff_rows[i] = ranks[op_type]  # np.array copies it
        ex_i = ex_rows[i]
        for u, uname in enumerate(units):
            if uname in row:
                ex_i[u] = row[uname].latency_ns
    return np.array(ex_rows, dtype=float).reshape(n, m), np.array(aff_rows, dtype=int).reshape(n, m)


def _edges(graph: ModelGraph, table: CostTable, index: Mapping[str, int], io: bool) -> list[tuple[int, int, float]]:
    """``(producer, consumer, bytes)`` per pair of dependent tasks, the trips from and to the
    host included when ``io``."""
    size: dict[str, int] = {}
    default_dtype = None if table.precision == "model" else table.precision
    for name in graph.order:
        for t in graph.op(name).outputs:
            size[t.name] = tensor_bytes(t, default_dtype)
    edges = []
    g = graph.g
    for s, d, tensors in g.edges(data="tensors"):
        total = 0  # the bytes summed in a loop, not a generator per edge (100k ops: 130k edges)
        for t in tensors:
            total += size.get(t, 0)
        edges.append((index[s], index[d], float(total)))
    if not io:
        return edges
    n = len(index)
    for t in graph.inputs:
        size[t.name] = tensor_bytes(t, default_dtype)
    producer = graph.producer
    for name in graph.order:
        total = 0
        for t in graph.op(name).inputs:  # its activations from outside the graph
            if not t.is_weight and t.name not in producer:
                total += size[t.name]
        if total:
            edges.append((0, index[name], float(total)))
    for t in graph.outputs:
        if t.name in graph.producer:
            # Every output returns home (the engine moves it once per destination domain, and
            # transfers here do not contend, so an edge per consumer times the same arrival).
            edges.append((index[graph.producer[t.name]], n - 1, float(size[t.name])))
    return _merge(edges)


def _domain_links(chip: Chip) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """Each domain's index, and per ordered pair of domains the time per byte (ns/B) and latency (ns)."""
    doms = [d.name for d in chip.domains]
    dom_ix = {d: k for k, d in enumerate(doms)}
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
    return dom_ix, scale, lat


#: Names of the host-side pseudo tasks (not ONNX node names: those cannot contain "<").
INPUTS, OUTPUTS = "<inputs>", "<outputs>"


def _merge(edges: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    out: dict[tuple[int, int], float] = {}
    for s, d, v in edges:
        out[s, d] = out.get((s, d), 0.0) + v
    return sorted((s, d, v) for (s, d), v in out.items())


def schedule_from_solution(
    graph: ModelGraph, chip: Chip, table: CostTable, problem: Problem, sol: Solution, policy: str,
    reasons: Sequence[str] | None = None,
) -> Schedule:
    """The engine's :class:`Schedule` for ``sol``: per-core order by start time, reasons attached
    (``reasons`` per task, else :func:`~scheduler.explain.explain`'s).

    The per-core orders follow one topological order (:func:`~scheduler.problem.start_order`),
    so the engine can always run them, whatever rounding the start times carry."""
    reasons = list(reasons) if reasons is not None else explain(problem, sol, " ns")
    placements = {}
    for i, name in enumerate(problem.tasks):
        if name not in (INPUTS, OUTPUTS):
            unit = problem.units[sol.unit[i]]
            placements[name] = Placement(name, unit, sol.core[i], sol.start_ns[i], sol.finish_ns[i], reasons[i])
    order = {(u.name, c): () for u in chip.units for c in range(u.cores)} | core_orders(problem, sol)
    unit_of = {n: p.unit for n, p in placements.items()}
    transfers = implied_transfers(graph, chip, table, unit_of)
    return Schedule(policy, placements, order, transfers, sol.makespan_ns)


def core_orders(problem: Problem, sol: Solution) -> dict[tuple[str, int], tuple[str, ...]]:
    """Per ``(unit, core)`` that runs an op of ``sol``: its ops in the order they start (one
    topological order, :func:`~scheduler.problem.start_order`): the :class:`Schedule`'s ``order``
    (``core_order``) that :func:`schedule_from_solution` builds, cores running nothing left out."""
    by_core: dict[tuple[str, int], list[str]] = {}
    for i in start_order(problem, sol.start_ns, sol.finish_ns):
        if (name := problem.tasks[i]) not in (INPUTS, OUTPUTS):
            by_core.setdefault((problem.units[sol.unit[i]], sol.core[i]), []).append(name)
    return {k: tuple(v) for k, v in by_core.items()}


def _ort(problem: Problem, chip: Chip) -> Solution:
    ep = [chip.unit(u).ep_priority for u in problem.units]  # accelerators first, CPUs take the rest
    prio = sorted(range(problem.n_units), key=lambda u: (ep[u], u))
    return ort_greedy(problem, prio)


def ort_greedy_model(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
    """``ort-greedy`` on a model: the units by their kind's ``ep_priority``, then as listed."""
    problem = problem_from_graph(graph, chip, table)
    return schedule_from_solution(graph, chip, table, problem, _ort(problem, chip), "ort-greedy")


#: The default policy's search effort on models: a twentieth of a task graph's. Models are
#: mostly chains with a few branches, where the seeds are already good, and `hwsim run` checks
#: the result against HEFT and the best single unit in the engine anyway (`hwsim.policy_check`).
#: Over the 17 bundled models on the 3 bundled chips this budget gave the same simulated latency
#: as the full one in 50 of 51 cases (the 51st 0.4 % longer) in a fifth of the time, and brings
#: a ResNet-18 run back near 0.1 s.
ONNX_WORK_BUDGET = DEFAULT_WORK_BUDGET // 20


def model_options() -> SolveOptions:
    """What the policies are told on a model: the search's model budget."""
    return SolveOptions(work_budget=ONNX_WORK_BUDGET)


def schedule_model(
    solve: ProblemPolicy, graph: ModelGraph, chip: Chip, table: CostTable, colocated: bool = False
) -> Schedule:
    """Run the problem policy ``solve`` on a model: build the problem (planned with colocated
    costs when ``colocated`` and the graph has at most :data:`COLOCATED_MAX_OPS` ops), solve it
    with :func:`model_options`, and turn the solution into the engine's :class:`Schedule`."""
    return schedule_on(solve, graph, chip, table, model_problem(graph, chip, table, colocated))


def model_problem(
    graph: ModelGraph, chip: Chip, table: CostTable, colocated: bool = False, serial_lockstep: bool = False
) -> Problem:
    """The problem :func:`schedule_model` plans on (colocated costs when ``colocated`` and the
    graph has at most :data:`COLOCATED_MAX_OPS` ops; ``serial_lockstep``: see :func:`problem_from_graph`)."""
    colocated = colocated and len(graph.order) <= COLOCATED_MAX_OPS
    return problem_from_graph(graph, chip, table, colocated=colocated, serial_lockstep=serial_lockstep)


def schedule_on(solve: ProblemPolicy, graph: ModelGraph, chip: Chip, table: CostTable, problem: Problem) -> Schedule:
    """:func:`schedule_model` on a ``problem`` already built by :func:`model_problem` (a caller
    that goes on planning with it builds it once: seconds at 100,000 ops)."""
    solved = solve(problem, model_options())
    return schedule_from_solution(graph, chip, table, problem, solved.solution, solved.label, solved.reasons)


def solution_from_schedule(problem: Problem, sched: Schedule) -> Solution:
    """``sched`` on ``problem``: its units, re-timed in the order of its estimated starts."""
    index = {name: i for i, name in enumerate(problem.tasks)}
    host = [u for u in range(problem.n_units) if math.isfinite(problem.exec_ns[0, u])] if problem.n else []
    assign = [host[0] if host else 0] * problem.n
    start = [0.0] * problem.n
    for name, p in sched.placements.items():
        i = index[name]
        assign[i] = problem.units.index(p.unit)
        start[i] = p.est_start_ns
    if problem.tasks and problem.tasks[-1] == OUTPUTS:
        start[-1] = math.inf
    return solution_from_times(problem, assign, start)


def energy_model(chip: Chip, table: CostTable, problem: Problem) -> EnergyModel:
    """Energy figures of ``problem`` (built by :func:`problem_from_graph` from ``table``).

    A task's energy is its cost entry's ``energy_pj`` (active power and its DRAM traffic); a
    tensor crossing domains is written to and read back from DRAM (2 x ``energy_pj_per_byte``).
    """
    tp = np.full((problem.n, problem.n_units), np.inf)
    for i, name in enumerate(problem.tasks):
        if name in (INPUTS, OUTPUTS):
            tp[i] = np.where(np.isfinite(problem.exec_ns[i]), 0.0, np.inf)
            continue
        row = table.costs[name]
        for u, uname in enumerate(problem.units):
            if uname in row:
                tp[i, u] = row[uname].energy_pj
    idle = tuple(chip.unit(u).idle_w for u in problem.units)
    return EnergyModel(tp, idle, dram_energy_pj(chip.dram, 2.0))


def energy_schedule(
    graph: ModelGraph, chip: Chip, table: CostTable, start: Schedule, latency_budget_ns: float, policy: str
) -> Schedule:
    """The least-energy schedule the search finds from ``start`` with an estimated makespan
    within ``latency_budget_ns`` (``start`` itself re-timed when nothing cheaper fits)."""
    problem = problem_from_graph(graph, chip, table)
    sol = solution_from_schedule(problem, start)
    best = min_energy(problem, energy_model(chip, table, problem), sol, latency_budget_ns)
    return schedule_from_solution(graph, chip, table, problem, best, policy)


def deadline_schedule(
    graph: ModelGraph, chip: Chip, table: CostTable, sched: Schedule, deadlines_ns: Mapping[str, float]
) -> Schedule:
    """``sched`` with the same units, re-ordered so that ops with a deadline (node name -> ns)
    and their ancestors run first, earliest deadline first."""
    problem = problem_from_graph(graph, chip, table)
    index = {name: i for i, name in enumerate(problem.tasks)}
    sol = solution_from_schedule(problem, sched)
    alt = deadline_first(problem, {index[k]: v for k, v in deadlines_ns.items()}, sol)
    return schedule_from_solution(graph, chip, table, problem, alt, sched.policy)
