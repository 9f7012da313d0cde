"""Choosing the schedule a run simulates: the default checked through the engine, energy mode, deadlines.

The default policy's search works on an abstract problem that leaves out DRAM contention and
DMA channels. On graphs of at most :data:`CHECK_MAX_OPS` ops, :func:`choose_schedule` therefore
also schedules the graph with HEFT, the best single unit and the one-pass ``affinity-list``,
simulates every candidate with the engine (fusion applied as in the real run) and keeps the
fastest, ties going to the search. Larger graphs get the search alone. On a chip with SRAM
domains of a capacity every simulated schedule is the fitted run (its spills to DRAM costed,
:func:`hwsim.analysis.memory.fit_memory`), so candidates, energy and deadlines are judged on
the latency the run reports: judged before the spills, a schedule that overflows the SRAM could
win the check and then run slower than one that does not.

``objective="energy"`` then looks for the least energy with a simulated latency within
``latency_budget_ms``: every simulated candidate (the default's schedule before re-planning
included) and the energy search of :mod:`scheduler.energy` from each of them at a few
estimated budgets, each checked with the engine; the latency-optimal schedule stays when
nothing cheaper fits. Seeding from every candidate, not the latency winner alone, keeps a
change of winner from making the energy found worse. A budget below the
fastest simulated latency raises :class:`BudgetError`.

Deadlines (node name -> ms, see :func:`resolve_deadlines`) re-order every candidate so that the
constrained ops and their ancestors run first (earliest deadline first); the schedule kept is
the fastest one meeting every deadline, else the one with the largest worst slack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from chips.schema import Chip
from chips.units import NS_PER_MS, PJ_PER_MJ, PS_PER_MS
from cost_models.fusion import FUSE_MODES, FusedPair, FusionResult, least_fused_table
from cost_models.fusion import fuse as apply_fusion
from cost_models.mapping import OpMapping
from cost_models.table import CostTable
from graph_ir.ir import ModelError, ModelGraph
from hwsim.analysis.energy import run_energy
from hwsim.analysis.memory import MemoryUse, capped_domains, fit_memory
from hwsim.replan import SLOWER, default_plan, replan
from hwsim.sim.engine import EngineOptions, Trace, simulate, simulate_unless_slower
from hwsim.sim.floor import placement_floor_ps
from hwsim.sim.power import PowerCapError
from scheduler import DEFAULT_POLICY, POLICIES, Schedule, get_policy
from scheduler.problem import Problem

__all__ = [
    "CHECKED_AGAINST",
    "CHECK_MAX_OPS",
    "LEAST_POWER",
    "BudgetError",
    "Candidate",
    "Chosen",
    "Deadline",
    "DeadlineResult",
    "ScheduleChoice",
    "choose_schedule",
    "least_power_schedule",
    "replay_schedule",
    "resolve_deadlines",
    "with_mapped_cores",
]

#: The policies the default is checked against.
CHECKED_AGAINST = ("heft", "single-unit", "affinity-list")
#: Graphs with more ops than this get the default's search alone (each check is a full simulation).
CHECK_MAX_OPS = 5000
#: What the default's schedule before re-planning is called where it is an energy candidate.
UNREPLANNED = f"{DEFAULT_POLICY}-first-plan"
#: Fractions of the latency headroom given to the energy search as its estimated budget.
ENERGY_HEADROOM = (1.0, 0.5, 0.2)


class BudgetError(RuntimeError):
    """No schedule found meets the latency budget (a run failure, exit code 1)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One simulated schedule: simulated latency (ms) and energy (mJ; 0 when not computed)."""

    name: str
    latency_ms: float
    energy_mj: float = 0.0


@dataclass(frozen=True, slots=True)
class Deadline:
    """A deadline as given (``name``: a graph output or node) and the node it constrains."""

    name: str
    node: str
    deadline_ms: float


@dataclass(frozen=True, slots=True)
class DeadlineResult:
    """One deadline: the constrained node, its simulated finish and the slack (negative: missed)."""

    name: str
    node: str
    deadline_ms: float
    finish_ms: float

    @property
    def slack_ms(self) -> float:
        return self.deadline_ms - self.finish_ms

    @property
    def met(self) -> bool:
        return self.slack_ms >= 0.0


@dataclass(frozen=True, slots=True)
class ScheduleChoice:
    """How the simulated schedule was chosen.

    ``candidates`` are the latency candidates simulated (one when nothing was checked),
    ``winner`` the one kept for latency. With ``objective == "energy"``: ``energy_candidates``
    are the schedules tried for energy, ``latency_optimal`` the winner's figures and ``chosen``
    the schedule kept.
    """

    policy: str
    winner: str
    candidates: tuple[Candidate, ...]
    objective: str = "latency"
    latency_budget_ms: float | None = None
    latency_optimal: Candidate | None = None
    chosen: Candidate | None = None
    energy_candidates: tuple[Candidate, ...] = ()
    deadlines: tuple[DeadlineResult, ...] = ()
    #: The placement of every schedule simulated while choosing, (op, unit) by op name, in the
    #: order simulated, without repeats (None: not recorded): a ``fusion`` knob that changes the
    #: fusion (:func:`cost_models.fusion.fuse`) of none of them changes nothing in this choice.
    simulated: tuple[tuple[tuple[str, str], ...], ...] | None = None

    @property
    def checked(self) -> bool:
        return len(self.candidates) > 1

    @property
    def missed(self) -> tuple[DeadlineResult, ...]:
        return tuple(d for d in self.deadlines if not d.met)


@dataclass(frozen=True, slots=True)
class Chosen:
    """The schedule to report, the cost table it ran with (fused), its fused pairs and trace."""

    schedule: Schedule
    table: CostTable
    fused: tuple[FusedPair, ...]
    trace: Trace
    choice: ScheduleChoice
    #: The fusion mode and decisions of the kept schedule (:func:`cost_models.fusion.fuse`).
    fusion: FusionResult | None = None
    #: Its memory where the chip has SRAM domains with a capacity: ``table`` and ``trace`` then
    #: include the spills that keep them to it (:func:`hwsim.analysis.memory.fit_memory`); None:
    #: not fitted yet.
    memory: MemoryUse | None = None


def resolve_deadlines(
    graph: ModelGraph, deadlines_ms: Sequence[tuple[str, float]], source: str = ""
) -> tuple[Deadline, ...]:
    """Resolve each ``(NAME, ms)``: NAME is a graph output tensor (its producer is constrained) or a node.

    Raises
    ------
    ModelError
        A NAME that is neither a graph output nor a node, or a negative deadline.
    """
    outputs = {t.name for t in graph.outputs}
    nodes = set(graph.order)
    out: list[Deadline] = []
    where = f"{source}: " if source else ""
    for name, ms in deadlines_ms:
        if not ms >= 0.0:
            raise ModelError(f"{where}--deadline {name}: deadline must be a non-negative number of ms, got {ms}")
        if name in outputs and name in graph.producer:
            node = graph.producer[name]
        elif name in nodes:
            node = name
        else:
            raise ModelError(f"{where}--deadline {name!r}: no graph output or node of that name")
        out.append(Deadline(name, node, float(ms)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Sim:
    name: str
    schedule: Schedule
    table: CostTable
    fusion: FusionResult
    trace: Trace
    finish_ms: Mapping[str, float]
    memory: MemoryUse | None = None

    @property
    def latency_ms(self) -> float:
        return self.trace.makespan_ps / PS_PER_MS


def _simulate(
    name: str,
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    sched: Schedule,
    options: EngineOptions | None,
    fuse: str,
    nodes: Sequence[str],
    mapping: Mapping[str, OpMapping] | None = None,
) -> _Sim:
    got = _simulate_unless_slower(name, graph, chip, table, sched, options, fuse, nodes, mapping, None)
    assert got is not None  # nothing to beat: always simulated
    return got


def _simulate_unless_slower(
    name: str,
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    sched: Schedule,
    options: EngineOptions | None,
    fuse: str,
    nodes: Sequence[str],
    mapping: Mapping[str, OpMapping] | None,
    beat_ps: int | None,
) -> _Sim | None:
    """:func:`_simulate`, or None when ``beat_ps`` is given and the fused schedule cannot finish
    before it (:func:`hwsim.sim.engine.simulate_unless_slower`: it is then not run).

    On a chip with SRAM domains of a capacity the run is the fitted one (the spills that keep
    them to it costed, :func:`hwsim.analysis.memory.fit_memory`): candidates are compared on
    the latency the run reports, not on one their SRAM could not hold."""
    forced: dict[str, bool] = {}
    if mapping:
        sched = with_mapped_cores(sched, mapping)
        forced = {n: m.fusion for n, m in mapping.items() if m.fusion is not None}
    fusion = apply_fusion(graph, chip, table, {n: p.unit for n, p in sched.placements.items()}, fuse, forced)
    if beat_ps is None:
        trace = simulate(graph, chip, fusion.table, sched, options)
    elif (got := simulate_unless_slower(graph, chip, fusion.table, sched, beat_ps, options)) is None:
        return None
    else:
        trace = got
    table, memory = fusion.table, None
    if capped_domains(chip):
        fit = fit_memory(graph, chip, table, sched, trace, options)
        table, trace, memory = fit.table, fit.trace, fit.memory
    want = set(nodes)
    finish = {r.op: r.end_ps / PS_PER_MS for r in trace.ops if r.op in want and r.frame == 0}
    return _Sim(name, sched, table, fusion, trace, finish, memory)


def _probe_floor(
    graph: ModelGraph, chip: Chip, table: CostTable, options: EngineOptions | None,
    mapping: Mapping[str, OpMapping] | None, where: Mapping[str, tuple[str, int]],
) -> int:  # fmt: skip
    """A makespan (ps) no run of a schedule placing the ops as ``where`` says (op -> ``(unit,
    core)``) can beat, fused in any way (:func:`cost_models.fusion.least_fused_table`): found
    before the schedule is built or fused. 0 where a mapping fixes cores (the plan's floor then)."""
    if mapping and any(m.cores is not None for m in mapping.values()):
        return 0
    least = least_fused_table(graph, chip, table, {n: u for n, (u, _) in where.items()})
    opts = options if options is not None else EngineOptions()
    return placement_floor_ps(graph, chip, least, where, opts.double_buffer, opts.split)


def simulate_candidate(
    name: str,
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    sched: Schedule,
    options: EngineOptions | None = None,
    fuse: str = "auto",
) -> _Sim:
    """Simulate one candidate schedule as :func:`choose_schedule` does (fusion ``fuse`` applied)."""
    return _simulate(name, graph, chip, table, sched, options, fuse, ())


def default_schedule(
    graph: ModelGraph, chip: Chip, table: CostTable, options: EngineOptions | None = None, fuse: str = "auto"
) -> _Sim:
    """The default policy's own schedule (re-planned with what the engine observed,
    :func:`hwsim.replan.replan`), simulated: before any comparison with the baselines."""

    def sim(sched: Schedule) -> _Sim:
        return _simulate(DEFAULT_POLICY, graph, chip, table, sched, options, fuse, ())

    def probe(sched: Schedule, beat_ps: int) -> _Sim | None:
        return _simulate_unless_slower(DEFAULT_POLICY, graph, chip, table, sched, options, fuse, (), None, beat_ps)

    def floor(where: Mapping[str, tuple[str, int]]) -> int:
        return _probe_floor(graph, chip, table, options, None, where)

    return _replanned(graph, chip, table, *default_plan(graph, chip, table), sim, probe, floor)[0]


def _replanned(
    graph: ModelGraph, chip: Chip, table: CostTable, first: Schedule, problem: Problem,
    sim: Callable[[Schedule], _Sim], probe: Callable[[Schedule, int], _Sim | None],
    floor: Callable[[Mapping[str, tuple[str, int]]], int],
) -> tuple[_Sim, _Sim]:  # fmt: skip
    """The fastest simulated of the default's first schedule (planned on ``problem``:
    :func:`hwsim.replan.default_plan`) and its re-plans (the first on ties), and the first
    schedule as simulated. ``probe``: a large graph's probe, not run when it cannot win
    (:func:`hwsim.replan.replan`); ``floor``: its floor before it is built (:func:`_probe_floor`)."""

    def ruled_out_is_none(sched: Schedule) -> _Sim | None:
        try:
            return sim(sched)
        except PowerCapError:
            return None

    def probe_unless_ruled_out(sched: Schedule, beat_ps: int) -> _Sim | None | Literal["slower"]:
        try:
            got = probe(sched, beat_ps)
        except PowerCapError:
            return None
        return SLOWER if got is None else got

    tried = replan(
        graph, chip, table, sim(first), ruled_out_is_none, problem=problem, probe=probe_unless_ruled_out, floor=floor
    )
    best = tried[0]
    for s in tried[1:]:
        if s.latency_ms < best.latency_ms:
            best = s
    return best, tried[0]


def with_mapped_cores(sched: Schedule, mapping: Mapping[str, OpMapping]) -> Schedule:
    """``sched`` with each mapped op's ``cores`` knob as its placement's ``cores``."""
    cores = {n: m.cores for n, m in mapping.items() if m.cores is not None and n in sched.placements}
    if not cores:
        return sched
    placements = dict(sched.placements)
    for n, k in cores.items():
        placements[n] = replace(placements[n], cores=k)
    return replace(sched, placements=placements)


def _worst_slack(sim: _Sim, deadlines: Mapping[str, float]) -> float:
    return min((ms - sim.finish_ms.get(node, 0.0) for node, ms in deadlines.items()), default=0.0)


def _energy_mj(graph: ModelGraph, chip: Chip, sim: _Sim) -> float:
    return run_energy(chip, sim.trace).total_pj / PJ_PER_MJ


def _candidates(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    names: Sequence[str],
    sim: Callable[[str, Schedule], _Sim],
    dl: Mapping[str, float],
    probe: Callable[[Schedule, int], _Sim | None],
    floor: Callable[[Mapping[str, tuple[str, int]]], int],
) -> tuple[list[_Sim], list[_Sim]]:
    """Each policy in ``names`` scheduled and simulated (the default re-planned, deadlines served
    first where that helps), and the default's schedule before re-planning where it differs.

    Raises
    ------
    PowerCapError
        The cap rules out every candidate (one that it rules out is skipped).
    """
    from scheduler.onnx_policies import deadline_schedule

    sims: list[_Sim] = []
    first_plan: list[_Sim] = []  # the default's schedule before re-planning (an energy seed)
    for name in names:
        problem = None
        if name == DEFAULT_POLICY:  # built once: the re-planning starts from the same problem
            sched, problem = default_plan(graph, chip, table)
        else:
            sched = POLICIES[name](graph, chip, table)
        try:
            if problem is not None:
                s, first = _replanned(graph, chip, table, sched, problem, lambda x: sim(DEFAULT_POLICY, x), probe, floor)
                first_plan = [] if first is s else [replace(first, name=UNREPLANNED)]
            else:
                s = sim(name, sched)
        except PowerCapError:  # the cap rules this candidate out; the others may still run
            continue
        if dl:
            s2 = sim(name, deadline_schedule(graph, chip, table, sched, {k: v * NS_PER_MS for k, v in dl.items()}))
            if (_worst_slack(s2, dl), -s2.latency_ms) > (_worst_slack(s, dl), -s.latency_ms):
                s = s2
        sims.append(s)
    if not sims:
        # no policy plans for power: the schedule that draws the least, before refusing (its
        # refusal names the op that draws the most even there)
        sims.append(sim(LEAST_POWER, least_power_schedule(graph, chip, table)))
    return sims, first_plan


#: The schedule tried when a power cap rules out every policy's (:func:`least_power_schedule`).
LEAST_POWER = "least-power"


def least_power_schedule(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
    """Every op on the unit that draws the least while it runs it (one core's active power over
    its idle power; the faster on ties), list-scheduled: what a power cap leaves when it rules
    out every policy's schedule, since no policy plans for power (a cap that one little core
    meets was refused while the policies put the work on the NPU and the big cores)."""
    from cost_models.energy import unit_power_w

    units = {u.name: u for u in chip.units}

    def drawn_w(name: str) -> float:
        return unit_power_w(units[name], 1) - unit_power_w(units[name], 0)

    costs = {n: dict([min(c.items(), key=lambda kv: (drawn_w(kv[0]), kv[1].latency_ns))]) for n, c in table.costs.items()}
    schedule = POLICIES["heft"](graph, chip, replace(table, costs=costs))
    return replace(schedule, policy=LEAST_POWER)


def choose_schedule(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    policy: str = DEFAULT_POLICY,
    *,
    options: EngineOptions | None = None,
    fuse: str = "auto",
    objective: str = "latency",
    latency_budget_ms: float | None = None,
    deadlines: Sequence[Deadline] = (),
    mapping: Mapping[str, OpMapping] | None = None,
) -> Chosen:
    """Schedule, check and simulate ``graph`` (see the module docstring).

    ``deadlines`` come from :func:`resolve_deadlines`; ``fuse`` is the fusion mode
    (:data:`cost_models.fusion.FUSE_MODES`) each candidate is simulated with. ``mapping``'s
    ``cores`` and ``fusion`` knobs are applied to every candidate before it is simulated (its
    ``unit`` pins and kernel knobs are already in ``table``: :func:`cost_models.table.cost_table`).

    Raises
    ------
    ValueError
        Unknown policy, objective or fusion mode, or ``objective="energy"`` without a budget.
    BudgetError
        ``objective="energy"`` and even the fastest schedule is slower than the budget.
    PowerCapError
        ``options.max_power_w`` rules out every candidate (one that it rules out is skipped).
    """
    if objective not in ("latency", "energy"):
        raise ValueError(f"unknown objective {objective!r}; have latency, energy")
    if objective == "energy" and latency_budget_ms is None:
        raise ValueError("objective 'energy' needs a latency budget")
    if fuse not in FUSE_MODES:
        raise ValueError(f"unknown fusion mode {fuse!r}; have {', '.join(FUSE_MODES)}")
    get_policy(policy)  # an unknown name is an error listing the registered ones
    dl: dict[str, float] = {}
    for d in deadlines:
        dl[d.node] = min(d.deadline_ms, dl.get(d.node, d.deadline_ms))
    nodes = tuple(dl)
    names = [policy]
    if policy == DEFAULT_POLICY and len(graph) <= CHECK_MAX_OPS:
        names += [p for p in CHECKED_AGAINST if p in POLICIES]

    simulated: dict[tuple[tuple[str, str], ...], None] = {}

    def sim(name: str, sched: Schedule) -> _Sim:
        simulated.setdefault(_placement(sched))
        return _simulate(name, graph, chip, table, sched, options, fuse, nodes, mapping)

    def probe(sched: Schedule, beat_ps: int) -> _Sim | None:  # the default's, at large sizes
        return _simulate_unless_slower(DEFAULT_POLICY, graph, chip, table, sched, options, fuse, nodes, mapping, beat_ps)

    def floor(where: Mapping[str, tuple[str, int]]) -> int:  # the probe's, before it is built
        return _probe_floor(graph, chip, table, options, mapping, where)

    sims, first_plan = _candidates(graph, chip, table, names, sim, dl, probe, floor)
    if dl:
        meeting = [s for s in sims if _worst_slack(s, dl) >= 0.0]
        pool = meeting or [max(sims, key=lambda s: _worst_slack(s, dl))]
    else:
        pool = sims
    best = pool[0]
    for s in pool[1:]:
        if s.latency_ms < best.latency_ms:
            best = s
    candidates = tuple(Candidate(s.name, s.latency_ms) for s in sims)
    choice = ScheduleChoice(policy, best.name, candidates)
    kept = best
    if objective == "energy":
        assert latency_budget_ms is not None
        kept, choice = _energy(graph, chip, table, best, [*sims, *first_plan], choice, latency_budget_ms, sim, dl)
    choice = replace(choice, simulated=tuple(simulated))
    sched = kept.schedule
    if sched.policy != kept.name:  # the schedule is named for the candidate that ran, not the request
        sched = replace(sched, policy=kept.name)
    results = tuple(DeadlineResult(d.name, d.node, d.deadline_ms, kept.finish_ms.get(d.node, 0.0)) for d in deadlines)
    fusion = kept.fusion
    return Chosen(sched, kept.table, fusion.pairs, kept.trace, replace(choice, deadlines=results), fusion, kept.memory)


def _placement(sched: Schedule) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((n, p.unit) for n, p in sched.placements.items()))


def _energy(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    best: _Sim,
    sims: Sequence[_Sim],
    choice: ScheduleChoice,
    budget_ms: float,
    sim: Callable[[str, Schedule], _Sim],
    dl: Mapping[str, float],
) -> tuple[_Sim, ScheduleChoice]:
    """The least-energy schedule within ``budget_ms`` (see the module docstring).

    ``best`` is the latency winner among ``sims`` (every schedule simulated so far); each of
    ``sims`` within the budget is a candidate and seeds the energy search (``energy@k`` from
    ``best``, ``energy@k:NAME`` from the one named NAME), so a change of the latency winner
    never makes the energy found worse than what the search finds from any other seed.
    """
    from scheduler.onnx_policies import energy_schedule

    if best.latency_ms > budget_ms:
        raise BudgetError(
            f"no schedule meets the latency budget of {budget_ms:g} ms: the fastest found "
            f"({best.name}) takes {best.latency_ms:.6g} ms"
        )
    opt = Candidate(best.name, best.latency_ms, _energy_mj(graph, chip, best))
    tried: list[tuple[_Sim, Candidate]] = [(best, opt)]
    for s in sims:
        if s is not best and s.latency_ms <= budget_ms:
            tried.append((s, Candidate(s.name, s.latency_ms, _energy_mj(graph, chip, s))))
    seen = {_placement(s.schedule) for s, _ in tried}
    for seed, _ in list(tried):
        est = seed.schedule.est_makespan_ns
        ratio = budget_ms / seed.latency_ms if seed.latency_ms > 0 else 1.0
        suffix = "" if seed is best else f":{seed.name}"
        for k in ENERGY_HEADROOM:
            sched = energy_schedule(
                graph, chip, table, seed.schedule, est * (1.0 + (ratio - 1.0) * k), "energy"
            )
            key = _placement(sched)
            if key in seen:
                continue
            seen.add(key)
            s = sim(f"energy@{k:g}{suffix}", sched)
            tried.append((s, Candidate(s.name, s.latency_ms, _energy_mj(graph, chip, s))))
    floor = _worst_slack(best, dl)
    ok = [
        (s, c)
        for s, c in tried
        if c.latency_ms <= budget_ms and (not dl or _worst_slack(s, dl) >= min(0.0, floor))
    ]
    kept, chosen = min(ok, key=lambda sc: (sc[1].energy_mj, sc[1].latency_ms))
    if chosen.energy_mj >= opt.energy_mj:
        kept, chosen = best, opt
    return kept, replace(
        choice,
        objective="energy",
        latency_budget_ms=budget_ms,
        latency_optimal=opt,
        chosen=chosen,
        energy_candidates=tuple(c for _, c in tried),
    )


def replay_schedule(
    graph: ModelGraph,
    chip: Chip,
    table: CostTable,
    schedule: Schedule,
    *,
    options: EngineOptions | None = None,
    fuse: str = "auto",
    deadlines: Sequence[Deadline] = (),
    label: str = "replayed",
    mapping: Mapping[str, OpMapping] | None = None,
) -> Chosen:
    """Simulate a given ``schedule`` as it is: no policy, no engine check (a replayed schedule file).

    ``label`` becomes the choice's ``policy`` (``requested_policy`` in ``summary.json``); the
    schedule keeps its own name. Fusion is decided by ``fuse`` on this chip, as in a normal run,
    ``mapping``'s ``fusion`` and ``cores`` knobs applied as in :func:`choose_schedule`.
    """
    if fuse not in FUSE_MODES:
        raise ValueError(f"unknown fusion mode {fuse!r}; have {', '.join(FUSE_MODES)}")
    nodes = tuple(d.node for d in deadlines)
    s = _simulate(schedule.policy, graph, chip, table, schedule, options, fuse, nodes, mapping)
    results = tuple(DeadlineResult(d.name, d.node, d.deadline_ms, s.finish_ms.get(d.node, 0.0)) for d in deadlines)
    choice = ScheduleChoice(label, s.name, (Candidate(s.name, s.latency_ms),), deadlines=results)
    return Chosen(s.schedule, s.table, s.fusion.pairs, s.trace, choice, s.fusion, s.memory)
