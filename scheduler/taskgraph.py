"""Abstract task graphs from files: hwsim's JSON format and Kasahara's Standard Task Graph (STG).

JSON::

    {"units": ["u0", "u1"],
     "tasks": [{"name": "t1", "cost": {"u0": 3.2, "u1": 1.1}}, {"name": "t2", "cost": {"u0": 1}}],
     "edges": [{"src": "t1", "dst": "t2", "comm": 0.7}]}

``cost`` is the run time per unit (a unit missing cannot run the task); ``comm`` is paid only
when the two tasks run on different units. A task may add ``"deadline": T`` (its finish must be
at most ``T``). STG: the first line is the number of tasks ``n``, then one line per task
``id cost npred pred...`` including the dummy entry ``0`` and exit ``n+1``; every unit is
identical and edges cost nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graph_ir.files import MAX_TEXT_BYTES, oversize
from scheduler.problem import Problem, make_problem

__all__ = ["TaskGraph", "TaskGraphError", "load_task_graph", "parse_stg", "parse_task_graph"]

#: Units of an STG file when the caller does not say.
DEFAULT_STG_UNITS = 4


class TaskGraphError(ValueError):
    """A task-graph file is malformed (the message names the file and the task or field)."""


@dataclass(frozen=True, slots=True)
class TaskGraph:
    """A loaded task graph: the problem plus per-task deadlines (task index -> time)."""

    problem: Problem
    deadlines: Mapping[int, float]
    source: str


def _num(value: Any, where: str, src: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskGraphError(f"{src}: {where}: expected a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise TaskGraphError(f"{src}: {where}: must be a finite number >= 0, got {value!r}")
    return v


def _topological(names: Sequence[str], edges: Sequence[tuple[int, int, float]], src: str) -> list[int]:
    n = len(names)
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for s, d, _ in edges:
        indeg[d] += 1
        succ[s].append(d)
    ready = [i for i in range(n) if indeg[i] == 0]
    out: list[int] = []
    k = 0
    while k < len(ready):
        i = ready[k]
        k += 1
        out.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if len(out) < n:
        stuck = min(i for i in range(n) if indeg[i] > 0)
        raise TaskGraphError(f"{src}: edges: cycle through task {names[stuck]!r}")
    return out


def _build(
    units: Sequence[str],
    names: Sequence[str],
    costs: np.ndarray,
    edges: Sequence[tuple[int, int, float]],
    deadlines: Mapping[int, float],
    src: str,
) -> TaskGraph:
    _check_total(costs, edges, src)
    order = _topological(names, edges, src)
    pos = {t: k for k, t in enumerate(order)}
    problem = make_problem(
        [names[i] for i in order],
        units,
        costs[order],
        [(pos[s], pos[d], c) for s, d, c in edges],
    )
    return TaskGraph(problem, {pos[i]: t for i, t in deadlines.items()}, src)


def _check_total(costs: np.ndarray, edges: Sequence[tuple[int, int, float]], src: str) -> None:
    """Refuse a graph whose slowest schedule (every task at its slowest unit, every transfer
    paid, one after the other) is past the largest float: each number may be finite while their
    sum is not, and a schedule's times would overflow to infinity.

    >>> _check_total(np.array([[1.7e308], [1.7e308]]), [(0, 1, 0.0)], "g.json")
    Traceback (most recent call last):
    ...
    scheduler.taskgraph.TaskGraphError: g.json: the costs and transfers add up past the largest float (1.8e+308); scale them down
    """
    slowest = [float(c[np.isfinite(c)].max(initial=0.0)) for c in costs]
    if not math.isfinite(sum(slowest) + sum(c for _, _, c in edges)):
        raise TaskGraphError(f"{src}: the costs and transfers add up past the largest float (1.8e+308); scale them down")


def parse_task_graph(data: Any, src: str = "<task graph>") -> TaskGraph:
    """Check and convert the JSON task-graph ``data`` (see the module docstring)."""
    if not isinstance(data, dict):
        raise TaskGraphError(f"{src}: expected an object with units, tasks and edges")
    extra = set(data) - {"units", "tasks", "edges"}
    if extra:
        raise TaskGraphError(f"{src}: unknown field {min(extra)!r}")
    units = _units(data.get("units"), src)
    names, costs, deadlines = _tasks(data.get("tasks"), units, src)
    edges = _edges(data.get("edges", []), {name: k for k, name in enumerate(names)}, src)
    return _build(units, names, costs, edges, deadlines, src)


def _units(units: Any, src: str) -> list[str]:
    """The ``units`` field: a non-empty list of distinct names."""
    if not isinstance(units, list) or not units or not all(isinstance(u, str) for u in units):
        raise TaskGraphError(f"{src}: units: expected a non-empty list of names")
    if len(set(units)) < len(units):
        dup = next(u for k, u in enumerate(units) if u in units[:k])
        raise TaskGraphError(f"{src}: units: duplicate unit {dup!r}")
    return units


def _tasks(tasks: Any, units: list[str], src: str) -> tuple[list[str], np.ndarray, dict[int, float]]:
    """The ``tasks`` field: names, run times (task x unit, ``inf``: cannot run) and deadlines."""
    if not isinstance(tasks, list):
        raise TaskGraphError(f"{src}: tasks: expected a list")
    unit_ix = {u: k for k, u in enumerate(units)}
    names: list[str] = []
    index: dict[str, int] = {}
    costs = np.full((len(tasks), len(units)), np.inf)
    deadlines: dict[int, float] = {}
    for k, t in enumerate(tasks):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise TaskGraphError(f"{src}: tasks[{k}]: expected an object with a string name")
        name = t["name"]
        if name in index:
            raise TaskGraphError(f"{src}: tasks[{k}]: duplicate task name {name!r}")
        extra = set(t) - {"name", "cost", "deadline"}
        if extra:
            raise TaskGraphError(f"{src}: task {name!r}: unknown field {min(extra)!r}")
        cost = t.get("cost")
        if not isinstance(cost, dict):
            raise TaskGraphError(f"{src}: task {name!r}: cost: expected an object unit -> time")
        for u, v in cost.items():
            if u not in unit_ix:
                raise TaskGraphError(f"{src}: task {name!r}: cost: unknown unit {u!r} (have {units})")
            costs[k, unit_ix[u]] = _num(v, f"task {name!r}: cost.{u}", src)
        if not cost:
            raise TaskGraphError(f"{src}: task {name!r}: no unit can run it (empty cost)")
        if "deadline" in t:
            deadlines[k] = _num(t["deadline"], f"task {name!r}: deadline", src)
        index[name] = k
        names.append(name)
    return names, costs, deadlines


def _edges(edges_in: Any, index: Mapping[str, int], src: str) -> list[tuple[int, int, float]]:
    """The ``edges`` field: ``(src, dst, comm)`` by task index, no self-loop or duplicate."""
    if not isinstance(edges_in, list):
        raise TaskGraphError(f"{src}: edges: expected a list")
    edges: list[tuple[int, int, float]] = []
    seen: set[tuple[int, int]] = set()
    for k, e in enumerate(edges_in):
        if not isinstance(e, dict):
            raise TaskGraphError(f"{src}: edges[{k}]: expected an object with src, dst, comm")
        extra = set(e) - {"src", "dst", "comm"}
        if extra:
            raise TaskGraphError(f"{src}: edges[{k}]: unknown field {min(extra)!r}")
        for end in ("src", "dst"):
            if not isinstance(e.get(end), str) or e[end] not in index:
                raise TaskGraphError(f"{src}: edges[{k}].{end}: unknown task {e.get(end)!r}")
        s, d = index[e["src"]], index[e["dst"]]
        if s == d:
            raise TaskGraphError(f"{src}: edges[{k}]: task {e['src']!r} depends on itself")
        if (s, d) in seen:
            raise TaskGraphError(f"{src}: edges[{k}]: duplicate edge {e['src']!r} -> {e['dst']!r}")
        seen.add((s, d))
        edges.append((s, d, _num(e.get("comm", 0.0), f"edges[{k}].comm", src)))
    return edges


def parse_stg(text: str, n_units: int = DEFAULT_STG_UNITS, src: str = "<stg>") -> TaskGraph:
    """Parse a Standard Task Graph file for ``n_units`` identical units."""
    if n_units < 1:
        raise TaskGraphError(f"{src}: need at least one unit, got {n_units}")
    lines = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0].strip()
        if body:
            lines.append((lineno, body.split()))
        elif raw.lstrip().startswith("#") and lines and len(lines) > 1:
            break  # trailing comment block
    if not lines:
        raise TaskGraphError(f"{src}: empty file")
    try:
        n = int(lines[0][1][0])
    except ValueError:
        raise TaskGraphError(f"{src}: line {lines[0][0]}: expected the number of tasks") from None
    rows = lines[1 : n + 3]
    if len(rows) != n + 2:
        raise TaskGraphError(f"{src}: expected {n + 2} task lines (with dummies 0 and {n + 1}), got {len(rows)}")
    names = [str(i) for i in range(n + 2)]
    costs = np.zeros((n + 2, n_units))
    edges: list[tuple[int, int, float]] = []
    seen: set[int] = set()
    for lineno, fields in rows:
        try:
            vals = [int(f) for f in fields]
        except ValueError:
            raise TaskGraphError(f"{src}: line {lineno}: expected integers") from None
        if len(vals) < 3 or len(vals) != 3 + vals[2]:
            raise TaskGraphError(f"{src}: line {lineno}: expected 'id cost npred pred...'")
        tid, cost = vals[0], vals[1]
        if not 0 <= tid <= n + 1 or tid in seen:
            raise TaskGraphError(f"{src}: line {lineno}: task id {tid} out of range or repeated")
        seen.add(tid)
        if cost < 0:
            raise TaskGraphError(f"{src}: line {lineno}: task {tid}: negative cost {cost}")
        costs[tid, :] = cost
        for p in vals[3:]:
            if not 0 <= p <= n + 1:
                raise TaskGraphError(f"{src}: line {lineno}: task {tid}: unknown predecessor {p}")
            edges.append((p, tid, 0.0))
    units = [f"p{k}" for k in range(n_units)]
    return _build(units, names, costs, edges, {}, src)


def load_task_graph(path: str | Path, n_units: int | None = None) -> TaskGraph:
    """Load a JSON task graph (``.json``, or text starting with ``{``), or an STG file with ``n_units`` units."""
    p = Path(path)
    src = str(p)
    too_big = oversize(p, MAX_TEXT_BYTES)
    if too_big:
        raise TaskGraphError(f"{src}: {too_big}")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskGraphError(f"{src}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TaskGraphError(f"{src}: not a text file (byte {exc.start} is not UTF-8)") from None
    is_json = p.suffix.lower() == ".json" or text.lstrip().startswith("{")
    if p.suffix.lower() == ".stg" or not is_json:
        return parse_stg(text, n_units if n_units is not None else DEFAULT_STG_UNITS, src)
    if n_units is not None:
        raise TaskGraphError(f"{src}: --units applies only to STG files (JSON files list their units)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskGraphError(f"{src}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    return parse_task_graph(data, src)
