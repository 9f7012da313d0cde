"""The budgeted search (hwsim.studies.sweep_search) on a synthetic space: no simulation needed."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.studies.sweep import Point, SweepSpec, grid_points
from hwsim.studies.sweep_correction import fit_correction
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


def _true_screen(p: Point) -> dict[str, float]:
    """A perfect screen: the objectives themselves."""
    return dict(_result(p).objectives)


def _reversed_screen(p: Point) -> dict[str, float]:
    """The worst screen: it ranks the front last (and calls every point feasible)."""
    return {o: -v for o, v in _true_screen(p).items()}


def _values(screen: dict[str, float]) -> tuple[float, ...]:
    return tuple(screen.values())


UNCONSTRAINED = SPEC.model_copy(update={"constraints": {}})


class TestScreenOrder:
    @settings(max_examples=20, deadline=None)
    @given(seed=st.integers(0, 2**16), values=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=18, max_size=18))
    def test_no_point_precedes_one_that_dominates_it_on_the_screen(self, seed: int, values: list[tuple[int, int]]) -> None:
        index = {p.key: i for i, p in enumerate(grid_points(SPEC))}
        order = screen_order(UNCONSTRAINED, "m.onnx", lambda p: dict(zip(SPEC.objectives, values[index[p.key]], strict=True)),
                             random.Random(seed))
        assert sorted(p.key for p in order) == sorted(index)  # every point once
        seen = [values[index[p.key]] for p in order]
        for i, a in enumerate(seen):
            for b in seen[i + 1 :]:
                assert not (b[0] <= a[0] and b[1] <= a[1] and b != a), "a dominated point came first"

    def test_the_screens_front_comes_first(self) -> None:
        order = screen_order(UNCONSTRAINED, "m.onnx", _true_screen, random.Random(0))
        values = np.array([_values(_true_screen(p)) for p in order])
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
        rank_zero = {p.key for p in worst_first[: int(pareto_mask(np.array([_values(_reversed_screen(p)) for p in worst_first])).sum())]}
        assert {p.key for p in found[:3]} <= rank_zero

    def test_a_perfect_screen_spends_the_budget_on_the_feasible_front(self) -> None:
        feasible = [p for p in grid_points(SPEC) if _true_screen(p)["latency_ms"] <= 3.0]
        values = np.array([_values(_true_screen(p)) for p in feasible])
        front = {p.key for p, keep in zip(feasible, pareto_mask(values), strict=True) if keep}
        assert len(front) == 8  # 'heft' but at 600 MHz x 1 core (4 ms); 'eft' is slower at the same energy
        for seed in range(3):
            found = search_model(SPEC, "m.onnx", 8, _Evaluator(), seed, screen=_true_screen, screen_share=1.0)
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


def _policy_blind(p: Point) -> dict[str, float]:
    """A screen that knows no policy: every policy gets 'heft''s values (as the analytic one)."""
    return _true_screen(Point(p.model, p.chip, tuple((k, "heft" if k == "policy" else v) for k, v in p.params)))


class TestConstraintAwareOrder:
    @settings(max_examples=20, deadline=None)
    @given(seed=st.integers(0, 2**16))
    def test_predicted_feasible_points_first_then_the_least_violation(self, seed: int) -> None:
        order = screen_order(SPEC, "m.onnx", _true_screen, random.Random(seed))
        latency = [_true_screen(p)["latency_ms"] for p in order]
        feasible = [x <= 3.0 for x in latency]
        assert feasible == sorted(feasible, reverse=True) and sum(feasible) == 15
        over = latency[sum(feasible) :]
        assert over == sorted(over)  # 3.3 (800 x 1 eft), 4.0 (600 x 1 heft), 4.3

    def test_the_screens_dominating_infeasible_point_ranks_after_the_feasible_ones(self) -> None:
        slowest = Point("m.onnx", "rk3588", (("npu.clock_mhz", 600), ("npu.cores", 1), ("policy", "heft")))
        order = [p.key for p in screen_order(SPEC, "m.onnx", _true_screen, random.Random(0))]
        assert order.index(slowest.key) == 16  # least energy of all, on the unconstrained front, but 4 ms
        assert slowest.key in [p.key for p in screen_order(UNCONSTRAINED, "m.onnx", _true_screen, random.Random(0))[:9]]

    def test_the_margin_gives_a_point_near_the_bound_the_benefit_of_the_doubt(self) -> None:
        p = Point("m.onnx", "rk3588", (("npu.clock_mhz", 800), ("npu.cores", 1), ("policy", "eft")))  # 3.3 ms
        noisy = fit_correction([(q, {"latency_ms": 1.0}, {"latency_ms": x}) for q, x in ((p, 0.8), (p, 1.25))])
        assert noisy.margin("latency_ms") > math.log(3.3 / 3.0)
        def screen(q: Point) -> dict[str, float]:
            return _true_screen(q) if q.key == p.key else {"latency_ms": 1.0, "energy_mj": 9.0}

        assert screen_order(SPEC, "m.onnx", screen, random.Random(0))[-1].key == p.key  # no margin: the only infeasible
        assert screen_order(SPEC, "m.onnx", screen, random.Random(0), noisy)[-1].key != p.key


class TestCorrectedOrder:
    def _sim_says_eft_is_slower(self) -> list[tuple[Point, dict[str, float], dict[str, float]]]:
        return [(p, _policy_blind(p), _true_screen(p)) for p in grid_points(SPEC) if p.get("npu.cores", 0) == 3]

    def test_the_correction_moves_a_rank_when_the_simulation_disagrees(self) -> None:
        p = Point("m.onnx", "rk3588", (("npu.clock_mhz", 800), ("npu.cores", 1), ("policy", "eft")))  # 3.3 ms; blind: 3.0
        blind = [q.key for q in screen_order(SPEC, "m.onnx", _policy_blind, random.Random(0))]
        assert blind.index(p.key) < 16  # the blind screen calls it feasible
        correction = fit_correction(self._sim_says_eft_is_slower(), ridge_lambda=0.01)
        assert correction.log_ratio(p, "latency_ms") > 0.05 and abs(correction.log_ratio(p, "energy_mj")) < 1e-9
        corrected = [q.key for q in screen_order(SPEC, "m.onnx", _policy_blind, random.Random(0), correction)]
        assert corrected.index(p.key) >= 15  # now predicted infeasible: after every feasible point

    def test_an_agreeing_simulation_changes_nothing(self) -> None:
        samples = [(p, _true_screen(p), _true_screen(p)) for p in grid_points(SPEC)[:6]]
        correction = fit_correction(samples)
        assert correction.margin("latency_ms") == 0.0
        runs = [[q.key for q in screen_order(SPEC, "m.onnx", _true_screen, random.Random(3), c)] for c in (None, correction)]
        assert runs[0] == runs[1]
