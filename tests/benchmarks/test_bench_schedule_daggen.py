"""``benchmarks/bench_schedule_daggen.py``: the task graphs it builds from a daggen DAG (daggen
itself is not a dependency: a stand-in module gives the tasks and edges daggen would), and its
refusal where daggen is missing."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.helpers import ROOT


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_schedule_daggen", ROOT / "benchmarks" / "bench_schedule_daggen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_schedule_daggen"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load()

TASKS = [{"name": k, "computation": c} for k, c in ((1, 4.0e9), (2, 1.0e9), (3, 2.0e11), (4, 5.0e9))]
# daggen can list one pair twice (seen with jump_size 4): 2 -> 4 appears two times
EDGES = [{"source": 1, "target": 2, "data": 100}, {"source": 1, "target": 3, "data": 300},
         {"source": 2, "target": 4, "data": 50}, {"source": 2, "target": 4, "data": 150},
         {"source": 3, "target": 4, "data": 200}]  # fmt: skip


@pytest.fixture
def fake_daggen(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def dag(**kw: Any) -> SimpleNamespace:
        calls.append(kw)
        return SimpleNamespace(task_n_edge_dicts=lambda: (TASKS, EDGES))

    monkeypatch.setitem(sys.modules, "daggen", SimpleNamespace(DAG=dag))
    return calls


@pytest.mark.parametrize("kind", ["related", "unrelated"])
@pytest.mark.parametrize("ccr", [0.5, 5.0])
def test_a_daggen_dag_becomes_a_task_graph_at_the_asked_ccr(fake_daggen: list[dict[str, Any]], kind: str, ccr: float) -> None:
    doc = bench.graph_json(7, 4, 3, ccr, kind)
    assert fake_daggen[0]["seed"] == 7 and fake_daggen[0]["num_tasks"] == 4
    cost = np.array([[t["cost"][u] for u in doc["units"]] for t in doc["tasks"]])
    assert cost.shape == (4, 3) and (cost > 0).all()
    if kind == "related":  # one speed per unit: every task's costs are in the same ratios
        ratios = cost / cost[:, :1]
        assert np.allclose(ratios, ratios[0])
    pairs = [(e["src"], e["dst"]) for e in doc["edges"]]
    assert pairs == [("t1", "t2"), ("t1", "t3"), ("t2", "t4"), ("t3", "t4")]  # the pair listed twice is one edge
    comm = {(e["src"], e["dst"]): e["comm"] for e in doc["edges"]}
    assert np.mean(list(comm.values())) == pytest.approx(ccr * cost.mean())
    assert comm["t2", "t4"] == pytest.approx(comm["t3", "t4"])  # 50 + 150 against 200: the volumes add up
    p = bench.parse_task_graph(doc, "test").problem
    assert p.n == 4


def test_without_daggen_it_says_how_to_install_it_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "daggen", None)  # import daggen raises ImportError
    monkeypatch.setattr(sys, "argv", ["bench_schedule_daggen.py"])
    assert bench.main() == 2
    assert "pip install daggen" in capsys.readouterr().err
