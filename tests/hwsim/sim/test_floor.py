"""hwsim.sim.floor: a makespan no run of a plan can beat, and the engine's run that skips a
schedule when it cannot beat a given makespan."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips import Chip, load_chip
from chips.units import PS_PER_NS
from cost_models import cost_table
from cost_models.fusion import least_fused_table
from graph_ir.ir import ModelGraph, Tensor
from graph_ir.synthetic import random_dag
from hwsim.policy_check import simulate_candidate
from hwsim.sim.engine import EngineOptions, Simulation, simulate, simulate_unless_slower
from hwsim.sim.floor import any_schedule_floor_ns, makespan_floor_ps, placement_floor_ps
from hwsim.sim.plan import plan
from scheduler import POLICIES
from scheduler.schedule import Schedule
from tests.helpers import graph_from_ops, random_chips

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
graphs = st.builds(random_dag, st.integers(1, 30), st.integers(0, 2**31 - 1))
#: Op types of random_dag a multi-core unit may split.
SPLITTABLE = ("Conv", "MatMul", "Add", "Relu", "Concat")


@st.composite
def splitting_chips(draw: st.DrawFn) -> Chip:
    """:func:`tests.helpers.random_chips` whose multi-core units split some op types, some of
    them in lockstep, with a split overhead."""
    chip = draw(random_chips())
    data: dict[str, Any] = chip.model_dump()
    for u, unit in zip(data["units"], chip.units, strict=True):
        if unit.cores > 1:
            runs = [t for t in SPLITTABLE if unit.can_run(t)]
            u["split_ops"] = draw(st.lists(st.sampled_from(runs), unique=True)) if runs else []
            u["split_overhead_ns"] = draw(st.floats(0, 3000))
            u["core_mode"] = draw(st.sampled_from(["independent", "lockstep"]))
    return type(chip).model_validate(data)


def _floor(graph, chip, table, sched: Schedule, options: EngineOptions) -> int:  # type: ignore[no-untyped-def]
    sim = Simulation(graph, chip, table, plan(graph, chip, table, sched), options, 1, None)
    return makespan_floor_ps(sim.plan, sim.shard_cost, options.double_buffer, options.split)


@SETTINGS
@given(
    graph=graphs, chip=splitting_chips(), policy=st.sampled_from(sorted(POLICIES)),
    double_buffer=st.booleans(), split=st.booleans(), fuse=st.sampled_from(["auto", "on", "off"]),
)  # fmt: skip
def test_no_run_beats_the_floor(graph, chip, policy, double_buffer, split, fuse):  # type: ignore[no-untyped-def]
    table = cost_table(graph, chip, "int8")
    options = EngineOptions(double_buffer=double_buffer, split=split)
    sim = simulate_candidate(policy, graph, chip, table, POLICIES[policy](graph, chip, table), options, fuse)
    floor = _floor(graph, chip, sim.table, sim.schedule, options)
    assert 0 <= floor <= sim.trace.makespan_ps
    # the floor of any schedule (summary.json's lower_bound_ms) is no higher than this run's
    assert 0 <= any_schedule_floor_ns(graph, chip, sim.table) * PS_PER_NS <= sim.trace.makespan_ps
    # a makespan it can beat: simulated, the same trace; one it cannot: not run
    again = simulate_unless_slower(graph, chip, sim.table, sim.schedule, sim.trace.makespan_ps + 1, options)
    assert again == simulate(graph, chip, sim.table, sim.schedule, options) == sim.trace
    assert simulate_unless_slower(graph, chip, sim.table, sim.schedule, floor, options) is None
    if any(p.cores is not None for p in sim.schedule.placements.values()):
        return  # the placement's floor is for schedules that fix no core counts
    # found from the placement alone (no schedule, no plan): the same; under every fusion of it
    # (found before fusing): no higher
    where = {n: (p.unit, p.core) for n, p in sim.schedule.placements.items()}
    assert placement_floor_ps(graph, chip, sim.table, where, double_buffer, split) == floor
    least = least_fused_table(graph, chip, table, {n: u for n, (u, _) in where.items()})
    assert 0 <= placement_floor_ps(graph, chip, least, where, double_buffer, split) <= floor


def test_a_lockstep_unit_alone_is_floored_near_its_run() -> None:
    """The NPU of rk3588 runs one op at a time (splitting some over its cores): the floor, the
    sum of its ops' least times, is within 10 % of the run without its job boundaries (its inputs
    and outputs cross to the host and back; the re-planning's probe of a 100,000-op transformer
    is skipped on this). The boundaries (hwsim.sim.jobs) are not in the floor: it stays below the
    run, further below by what they cost."""
    graph = random_dag(80, 0, op_types=("Conv", "MatMul", "Add", "Relu", "Softmax"))
    chip = load_chip("rk3588")
    table = cost_table(graph, chip, "int8")
    alone = POLICIES["single-unit"](graph, chip, table)
    assert {p.unit for p in alone.placements.values()} == {"npu"}
    sim = simulate_candidate("single-unit", graph, chip, table, alone)
    assert any(len(r.cores) > 1 for r in sim.trace.ops)  # some ops split over the cores
    floor = _floor(graph, chip, sim.table, sim.schedule, EngineOptions())
    assert floor <= sim.trace.makespan_ps
    with mock.patch("hwsim.sim.jobs.lockstep_barrier_ns", lambda unit: 0.0):
        free = simulate_candidate("single-unit", graph, chip, table, alone)
    assert 0.9 * free.trace.makespan_ps <= floor <= free.trace.makespan_ps < sim.trace.makespan_ps
    where = {n: (p.unit, p.core) for n, p in alone.placements.items()}
    least = least_fused_table(graph, chip, table, {n: u for n, (u, _) in where.items()})
    assert placement_floor_ps(graph, chip, least, where) <= floor


def _transformer(blocks: int, seq: int = 128, hidden: int = 256) -> ModelGraph:
    """``blocks`` of ``hwsim run``'s scale benchmark: LayerNorm, Q/K/V, Transpose, QK^T,
    Softmax, attention x V, output projection, residual Add."""

    def t(name: str, *shape: int) -> Tensor:
        return Tensor(name, shape or (1, seq, hidden), "float32")

    w = [Tensor(f"W{i}", (hidden, hidden), "float32", True) for i in range(4)]
    norm = [Tensor(p, (hidden,), "float32", True) for p in "gb"]
    ops: list[tuple[str, str, list[Tensor], list[Tensor]]] = []
    h = t("x")
    for k in range(blocks):
        p = f"b{k}_"
        ln, q, kk, v, c, o, y = (t(p + n) for n in ("ln", "q", "k", "v", "c", "o", "y"))
        kt, s, pr = t(p + "kt", 1, hidden, seq), t(p + "s", 1, seq, seq), t(p + "p", 1, seq, seq)
        ops += [
            (p + "ln", "LayerNormalization", [h, *norm], [ln]), (p + "q", "MatMul", [ln, w[0]], [q]),
            (p + "k", "MatMul", [ln, w[1]], [kk]), (p + "v", "MatMul", [ln, w[2]], [v]),
            (p + "kt", "Transpose", [kk], [kt]), (p + "s", "MatMul", [q, kt], [s]),
            (p + "p", "Softmax", [s], [pr]), (p + "c", "MatMul", [pr, v], [c]),
            (p + "o", "MatMul", [c, w[3]], [o]), (p + "y", "Add", [o, h], [y]),
        ]  # fmt: skip
        h = y
    return graph_from_ops("transformer", [t("x")], ops)


def test_a_transformer_on_the_npu_alone_is_floored_before_fusing_as_after() -> None:
    """The re-planning's probe of the 100,000-op scale benchmark (the NPU alone) is ruled out
    before it is built: the floor of its placement under every fusion equals the fused plan's
    here (only the projection and the residual Add may fuse, and they do)."""
    graph, chip = _transformer(5), load_chip("rk3588")
    table = cost_table(graph, chip, "int8")
    alone = POLICIES["single-unit"](graph, chip, table)
    assert {p.unit for p in alone.placements.values()} == {"npu"}
    sim = simulate_candidate("single-unit", graph, chip, table, alone)
    assert len(sim.fusion.pairs) == 5
    where = {n: (p.unit, p.core) for n, p in alone.placements.items()}
    floor = placement_floor_ps(graph, chip, least_fused_table(graph, chip, table, {n: "npu" for n in where}), where)
    assert floor == _floor(graph, chip, sim.table, alone, EngineOptions())
    assert 0.9 * sim.trace.makespan_ps <= floor <= sim.trace.makespan_ps


def test_the_floor_of_an_empty_graph_is_zero() -> None:
    graph = random_dag(0, 0)
    chip = load_chip("rk3588")
    table = cost_table(graph, chip, "int8")
    sched = POLICIES["heft"](graph, chip, table)
    assert _floor(graph, chip, table, sched, EngineOptions()) == 0
