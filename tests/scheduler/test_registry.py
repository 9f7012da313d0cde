"""The one policy registry: every policy on a task-graph file and on an ONNX model, unknown names."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from chips.schema import Chip
from cost_models import cost_table
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from hwsim.cli import main
from hwsim.sim.engine import simulate
from scheduler import (
    DEFAULT_POLICY,
    POLICIES,
    Policy,
    UnknownPolicyError,
    get_policy,
    register_policy,
    schedule,
)
from scheduler.heft import heft
from scheduler.schedule import Schedule
from scheduler.solver import solve
from scheduler.taskgraph import load_task_graph
from tests.helpers import EPS, MODELS, check_valid

#: Six tasks on three units, one of which runs only some of them; transfers between units cost.
TASK_GRAPH = {
    "units": ["cpu", "npu", "dsp"],
    "tasks": [
        {"name": "load", "cost": {"cpu": 2.0, "npu": 4.0, "dsp": 3.0}},
        {"name": "conv1", "cost": {"cpu": 12.0, "npu": 1.5}},
        {"name": "conv2", "cost": {"cpu": 10.0, "npu": 1.2, "dsp": 6.0}},
        {"name": "fft", "cost": {"cpu": 8.0, "dsp": 1.0}},
        {"name": "add", "cost": {"cpu": 1.0, "npu": 0.5, "dsp": 0.6}},
        {"name": "store", "cost": {"cpu": 1.0}},
    ],
    "edges": [
        {"src": "load", "dst": "conv1", "comm": 2.0},
        {"src": "load", "dst": "fft", "comm": 1.0},
        {"src": "conv1", "dst": "conv2", "comm": 3.0},
        {"src": "conv2", "dst": "add", "comm": 0.5},
        {"src": "fft", "dst": "add", "comm": 0.5},
        {"src": "add", "dst": "store", "comm": 0.2},
    ],
}

#: A small bundled model with branches (25 ops).
MODEL = "audio_kws"


@pytest.fixture(scope="module")
def task_graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tg") / "graph.json"
    path.write_text(json.dumps(TASK_GRAPH))
    return path


@pytest.fixture(scope="module")
def model() -> ModelGraph:
    return load_onnx(MODELS / f"{MODEL}.onnx")


def check_model_schedule(graph: ModelGraph, chip: Chip, sched: Schedule, table) -> None:
    """Every op once on a unit (and core) able to run it, the per-core orders a partition of the
    ops in estimated start order, each op estimated after its producers, and the engine runs it:
    every op once, on its unit, no two at once on a core.

    (Estimated intervals on one core may overlap where a zero-time task shares a start with
    another: ``Timeline.insert`` then leaves its finish times unsorted; the engine is unaffected.)
    """
    units = {u.name: u for u in chip.units}
    assert set(sched.placements) == set(graph.order)
    for name, p in sched.placements.items():
        assert p.op == name and p.unit in table.costs[name]
        assert 0 <= p.core < units[p.unit].cores
        assert p.est_finish_ns >= p.est_start_ns >= -EPS
        assert name in sched.core_order[(p.unit, p.core)]
    assert sorted(itertools.chain.from_iterable(sched.core_order.values())) == sorted(graph.order)
    for ops in sched.core_order.values():
        for a, b in itertools.pairwise(ops):
            assert sched.placements[b].est_start_ns >= sched.placements[a].est_start_ns
    for src, dst in graph.g.edges:
        assert sched.placements[dst].est_start_ns >= sched.placements[src].est_finish_ns - EPS
    assert sched.est_makespan_ns >= max(p.est_finish_ns for p in sched.placements.values()) - EPS
    trace = simulate(graph, chip, table, sched)
    assert sorted(r.op for r in trace.ops) == sorted(graph.order)
    by_core: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in trace.ops:
        assert r.unit == sched.placements[r.op].unit
        by_core.setdefault((r.unit, r.core), []).append((r.start_ps, r.end_ps))
    for spans in by_core.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end


def test_the_builtin_policies_are_registered_under_the_names_users_type():
    assert set(POLICIES) == {
        "affinity-locality", "heft", "peft", "cpop", "single-unit", "ort-greedy", "best", "exact",
        "eft", "affinity-list", "single-unit-list",
    }  # fmt: skip
    assert DEFAULT_POLICY in POLICIES
    assert all(isinstance(p, Policy) and p.name == n and p.solve is not None for n, p in POLICIES.items())


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_runs_on_a_task_graph_file(task_graph_file, name):
    tg = load_task_graph(task_graph_file)
    result = solve(tg.problem, name)
    check_valid(tg.problem, result.solution)
    assert result.policy.startswith(name)
    assert result.lower_bound_ns <= result.solution.makespan_ns + EPS


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_runs_from_the_schedule_command(task_graph_file, name, capsys):
    assert main(["schedule", str(task_graph_file), "--policy", name, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"].startswith(name)
    assert sorted(p["task"] for p in out["placements"]) == sorted(t["name"] for t in TASK_GRAPH["tasks"])


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_runs_on_an_onnx_model(model, rk3588, name):
    table = cost_table(model, rk3588, "int8")
    sched = POLICIES[name](model, rk3588, table)
    check_model_schedule(model, rk3588, sched, table)
    assert sched == schedule(model, rk3588, table, name)


def _listed(message: str) -> list[str]:
    match = re.search(r"registered: (.*)$", message)
    assert match, message
    return match.group(1).split(", ")


def test_an_unknown_policy_is_an_error_listing_the_registry(model, rk3588, task_graph_file):
    table = cost_table(model, rk3588, "int8")
    tg = load_task_graph(task_graph_file)
    for call in (
        lambda: get_policy("fastest"),
        lambda: schedule(model, rk3588, table, "fastest"),
        lambda: solve(tg.problem, "fastest"),
    ):
        with pytest.raises(UnknownPolicyError, match="unknown policy 'fastest'") as err:
            call()
        assert isinstance(err.value, ValueError)
        assert _listed(str(err.value)) == list(POLICIES)


def test_a_plugin_policy_is_listed_and_runs_on_models_only(model, rk3588, task_graph_file):
    def plugin(graph, chip, table):
        return POLICIES["heft"](graph, chip, table)

    register_policy("plugin-heft", plugin)
    try:
        assert "plugin-heft" in _listed(str(pytest.raises(UnknownPolicyError, get_policy, "x").value))
        table = cost_table(model, rk3588, "int8")
        assert schedule(model, rk3588, table, "plugin-heft") == POLICIES["heft"](model, rk3588, table)
        with pytest.raises(ValueError, match="runs on models only"):
            solve(load_task_graph(task_graph_file).problem, "plugin-heft")
    finally:
        del POLICIES["plugin-heft"]


def test_a_plugin_policy_on_the_problem_serves_task_graphs_and_models(model, rk3588, task_graph_file):
    from scheduler.policy import Solved

    register_policy("plugin-heft", Policy("plugin-heft", lambda p, o: Solved(heft(p), "plugin-heft")))
    try:
        tg = load_task_graph(task_graph_file)
        assert solve(tg.problem, "plugin-heft").solution == solve(tg.problem, "heft").solution
        table = cost_table(model, rk3588, "int8")
        sched = schedule(model, rk3588, table, "plugin-heft")
        assert sched.policy == "plugin-heft"
        assert sched.placements == POLICIES["heft"](model, rk3588, table).placements
    finally:
        del POLICIES["plugin-heft"]
