"""The budgeted search (hwsim.studies.sweep_search) on a synthetic space: no simulation needed."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.studies.sweep import Point, SweepSpec, grid_points
from hwsim.studies.sweep_front import pareto_mask
from hwsim.studies.sweep_search import neighbours, screen_order, search_model
from hwsim.studies.sweep_store import StoredPoint

SPEC = SweepSpec(
    models=("m.onnx",),
    chips=("rk3588",),
    grid={"npu.clock_mhz": (600, 800, 1000), "npu.cores": (1, 2, 3), "policy": ("heft", "eft")},
    objectives=("latency_ms", "energy_mj"),
    constraints={"latency_ms": "<= 3.0"},
)


def _result(p: Point) -> StoredPoint:
    """A trade-off: a faster clock and more cores cut latency and cost energy; 'eft' is slower."""
    clock, cores = float(p.get("npu.clock_mhz", 0)), float(p.get("npu.cores", 0))
    latency = 2400.0 / (clock * cores) + (0.3 if p.get("policy", "") == "eft" else 0.0)
    return StoredPoint(p.key, (("latency_ms", latency), ("energy_mj", clock * cores / 600.0)), None, 0.0)


class _Evaluator:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, points: Sequence[Point]) -> dict[str, StoredPoint]:
        self.calls += [p.key for p in points]
        return {p.key: _result(p) for p in points}


class TestSearchModel:
    @settings(max_examples=15, deadline=None)
    @given(seed=st.integers(0, 2**16), budget=st.integers(1, 25), round_size=st.integers(1, 8))
    def test_no_point_is_evaluated_twice(self, seed: int, budget: int, round_size: int) -> None:
        ev = _Evaluator()
        found = search_model(SPEC, "m.onnx", budget, ev, seed, round_size)
        assert len(ev.calls) == len(set(ev.calls))
        assert ev.calls == [p.key for p in found]
        assert len(found) == min(budget, 18)  # 3 x 3 x 2 distinct points exist

    def test_same_seed_same_points(self) -> None:
        runs = [[p.key for p in search_model(SPEC, "m.onnx", 10, _Evaluator(), seed=7)] for _ in range(2)]
        assert runs[0] == runs[1]

    def test_a_budget_over_the_grid_evaluates_all_of_it(self) -> None:
        found = search_model(SPEC, "m.onnx", 40, _Evaluator(), seed=1)
        assert {p.key for p in found} == {p.key for p in grid_points(SPEC)}

    def test_rounds_are_at_most_round_size(self) -> None:
        sizes: list[int] = []
        ev = _Evaluator()
        search_model(SPEC, "m.onnx", 11, ev, seed=3, round_size=4, on_round=sizes.append)
        assert sum(sizes) == len(ev.calls) == 11 and max(sizes) <= 4


def _true_screen(p: Point) -> tuple[float, ...]:
    """A perfect screen: the objectives themselves."""
    return tuple(v for _, v in _result(p).objectives)


def _reversed_screen(p: Point) -> tuple[float, ...]:
    """The worst screen: it ranks the front last."""
    return tuple(-v for v in _true_screen(p))


class TestScreenOrder:
    @settings(max_examples=20, deadline=None)
    @given(seed=st.integers(0, 2**16), values=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=18, max_size=18))
    def test_no_point_precedes_one_that_dominates_it_on_the_screen(self, seed: int, values: list[tuple[int, int]]) -> None:
        index = {p.key: i for i, p in enumerate(grid_points(SPEC))}
        order = screen_order(SPEC, "m.onnx", lambda p: values[index[p.key]], random.Random(seed))
        assert sorted(p.key for p in order) == sorted(index)  # every point once
        seen = [values[index[p.key]] for p in order]
        for i, a in enumerate(seen):
            for b in seen[i + 1 :]:
                assert not (b[0] <= a[0] and b[1] <= a[1] and b != a), "a dominated point came first"

    def test_the_screens_front_comes_first(self) -> None:
        order = screen_order(SPEC, "m.onnx", _true_screen, random.Random(0))
        values = np.array([_true_screen(p) for p in order])
        front = int(pareto_mask(values).sum())
        assert pareto_mask(values)[:front].all()

    def test_points_it_cannot_estimate_come_last(self) -> None:
        order = screen_order(SPEC, "m.onnx", lambda p: None if p.get("policy", "") == "eft" else _true_screen(p), random.Random(1))
        assert [p.get("policy", "") for p in order[-9:]] == ["eft"] * 9


class TestSearchWithAScreen:
    @settings(max_examples=15, deadline=None)
    @given(seed=st.integers(0, 2**16), budget=st.integers(1, 25), round_size=st.integers(1, 8), good=st.booleans())
    def test_no_point_twice_and_the_whole_budget(self, seed: int, budget: int, round_size: int, good: bool) -> None:
        ev = _Evaluator()
        found = search_model(SPEC, "m.onnx", budget, ev, seed, round_size, screen=_true_screen if good else _reversed_screen)
        assert len(ev.calls) == len(set(ev.calls)) == min(budget, 18)
        assert ev.calls == [p.key for p in found]

    def test_the_first_quarter_is_the_screens_best(self) -> None:
        ev = _Evaluator()
        found = search_model(SPEC, "m.onnx", 12, ev, seed=5, screen=_reversed_screen, screen_share=0.25)
        worst_first = screen_order(SPEC, "m.onnx", _reversed_screen, random.Random(5))
        rank_zero = {p.key for p in worst_first[: int(pareto_mask(np.array([_reversed_screen(p) for p in worst_first])).sum())]}
        assert {p.key for p in found[:3]} <= rank_zero

    def test_a_perfect_screen_spends_the_budget_on_the_front(self) -> None:
        values = np.array([_true_screen(p) for p in grid_points(SPEC)])
        front = {p.key for p, keep in zip(grid_points(SPEC), pareto_mask(values), strict=True) if keep}
        assert len(front) == 9  # every 'heft' point; 'eft' is slower at the same energy
        for seed in range(3):
            found = search_model(SPEC, "m.onnx", 9, _Evaluator(), seed, screen=_true_screen, screen_share=1.0)
            assert {p.key for p in found} == front

    def test_same_seed_same_points(self) -> None:
        runs = [[p.key for p in search_model(SPEC, "m.onnx", 10, _Evaluator(), seed=7, screen=_true_screen)] for _ in range(2)]
        assert runs[0] == runs[1]


class TestNeighbours:
    def test_one_key_one_step(self) -> None:
        p = Point("m.onnx", "rk3588", (("npu.clock_mhz", 800), ("npu.cores", 1), ("policy", "heft")))
        got = {tuple(v for _, v in q.params) for q in neighbours(p, SPEC)}
        assert got == {(600, 1, "heft"), (1000, 1, "heft"), (800, 2, "heft"), (800, 1, "eft")}

    @settings(max_examples=30, deadline=None)
    @given(index=st.integers(0, 17))
    def test_every_neighbour_differs_in_exactly_one_key(self, index: int) -> None:
        p = grid_points(SPEC)[index]
        for q in neighbours(p, SPEC):
            changed = [k for (k, a), (_, b) in zip(p.params, q.params, strict=True) if a != b]
            assert len(changed) == 1
            assert p in neighbours(q, SPEC)  # one step back
