"""Task-graph files (JSON, STG) and ``hwsim schedule``: parsing, errors, output."""

from __future__ import annotations

import json
import re

import pytest

from hwsim.cli import main
from scheduler.taskgraph import TaskGraphError, load_task_graph, parse_stg, parse_task_graph

GOOD = {
    "units": ["u0", "u1"],
    "tasks": [
        {"name": "t1", "cost": {"u0": 3.2, "u1": 1.1}},
        {"name": "t2", "cost": {"u0": 2.0}},
        {"name": "t3", "cost": {"u0": 1.0, "u1": 2.0}},
    ],
    "edges": [{"src": "t1", "dst": "t2", "comm": 0.7}, {"src": "t1", "dst": "t3", "comm": 0.2}],
}


def write(tmp_path, data, name="g.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return p


def test_json_is_read_in_topological_order():
    data = dict(GOOD, tasks=list(reversed(GOOD["tasks"])))
    tg = parse_task_graph(data, "x.json")
    assert tg.problem.tasks[0] == "t1"
    assert tg.problem.n_edges() == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["tasks"][0]["cost"].update({"u9": 1.0}), "task 't1': cost: unknown unit 'u9'"),
        (lambda d: d["tasks"][1].update(cost={}), "task 't2': no unit can run it"),
        (lambda d: d["tasks"][2]["cost"].update({"u0": -1}), "task 't3': cost.u0: must be a finite number >= 0"),
        (lambda d: d["tasks"].append({"name": "t1", "cost": {"u0": 1}}), "duplicate task name 't1'"),
        (lambda d: d["edges"].append({"src": "t2", "dst": "t1", "comm": 0}), "cycle through task"),
        (lambda d: d["edges"].append({"src": "t2", "dst": "zz"}), "edges[2].dst: unknown task 'zz'"),
        (lambda d: d["edges"][0].update(comm=-0.5), "edges[0].comm: must be a finite number >= 0"),
        (lambda d: d.update(units=["u0", "u0"]), "duplicate unit 'u0'"),
    ],
)
def test_bad_json_names_the_file_and_field(tmp_path, capsys, change, message):
    data = json.loads(json.dumps(GOOD))
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(TaskGraphError, match=re.escape(message)):
        load_task_graph(path)
    assert main(["schedule", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "Traceback" not in err[0]


STG = """3
0 0 0
1 5 1 0
2 3 1 0
3 4 2 1 2
4 0 1 3
# a comment block
"""


def test_stg_homogeneous_units():
    tg = parse_stg(STG, 2, "g.stg")
    p = tg.problem
    assert p.n == 5 and p.units == ("p0", "p1")
    assert (p.exec_ns[:, 0] == p.exec_ns[:, 1]).all()


def test_stg_errors(tmp_path):
    with pytest.raises(TaskGraphError, match="negative cost"):
        parse_stg("1\n0 0 0\n1 -2 1 0\n2 0 1 1\n", 2, "x.stg")
    with pytest.raises(TaskGraphError, match="unknown predecessor 9"):
        parse_stg("1\n0 0 0\n1 2 1 9\n2 0 1 1\n", 2, "x.stg")
    with pytest.raises(TaskGraphError, match="expected 3 task lines"):
        parse_stg("1\n0 0 0\n", 2, "x.stg")
    with pytest.raises(TaskGraphError, match="cycle"):
        parse_stg("2\n0 0 0\n1 1 1 2\n2 1 1 1\n3 0 2 1 2\n", 2, "x.stg")


def test_cli_json_output(tmp_path, capsys):
    path = write(tmp_path, GOOD)
    assert main(["schedule", str(path), "--json", "--policy", "exact"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "exact" and out["proven_optimal"]
    assert out["makespan"] == pytest.approx(3.8)
    assert out["lower_bound"] <= out["makespan"]
    assert sorted(p["task"] for p in out["placements"]) == ["t1", "t2", "t3"]
    assert {"task", "unit", "start", "finish"} <= set(out["placements"][0])


def test_cli_stg_and_text(tmp_path, capsys):
    path = write(tmp_path, STG, "g.stg")
    assert main(["schedule", str(path), "--units", "2", "--policy", "heft"]) == 0
    out = capsys.readouterr().out
    assert "makespan 9" in out and "proven optimal" in out


def test_cli_deadline(tmp_path, capsys):
    data = json.loads(json.dumps(GOOD))
    data["tasks"][1]["deadline"] = 10.0
    assert main(["schedule", str(write(tmp_path, data)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slack"]["t2"] == pytest.approx(6.2)
    data["tasks"][1]["deadline"] = 1.0
    assert main(["schedule", str(write(tmp_path, data, "late.json"))]) == 1
    assert "deadline" in capsys.readouterr().err


def test_cli_units_only_for_stg(tmp_path, capsys):
    assert main(["schedule", str(write(tmp_path, GOOD)), "--units", "3"]) == 2
    assert "--units applies only to STG" in capsys.readouterr().err


def test_cli_missing_file(tmp_path, capsys):
    assert main(["schedule", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_malformed_json_file_is_a_json_error(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text("units: [a]\n")  # YAML, not JSON: must not be read as STG
    assert main(["schedule", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{path}: invalid JSON at line 1" in err


def _two_tasks(tmp_path, cost: float) -> str:
    g = {"units": ["u0", "u1"], "tasks": [{"name": "a", "cost": {"u0": cost, "u1": cost}},
                                          {"name": "b", "cost": {"u0": cost, "u1": cost}}],
         "edges": [{"src": "a", "dst": "b", "comm": cost}]}  # fmt: skip
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g))
    return str(path)


@pytest.mark.parametrize("policy", ["heft", "affinity-locality", "exact", "best"])
def test_tiny_costs_schedule_in_order(tmp_path, capsys, policy):
    """Costs of 1e-303: CP-SAT's integer scale (its steps per unit of time) overflowed (an
    internal error); the schedule is the list schedule's, b after a."""
    assert main(["schedule", _two_tasks(tmp_path, 1e-303), "--policy", policy, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    at = {p["task"]: p for p in out["placements"]}
    assert at["b"]["start"] >= at["a"]["finish"] > 0
    assert 0 < out["lower_bound"] <= out["makespan"]


def test_costs_adding_up_past_the_largest_float_are_refused(tmp_path, capsys):
    """Two finite costs of 1.7e308: a schedule's end overflowed to infinity, and HEFT put b at 0,
    overlapping a on the same unit, called proven optimal."""
    assert main(["schedule", _two_tasks(tmp_path, 1.7e308), "--policy", "heft", "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "g.json" in err and "past the largest float" in err and "\n" not in err
