"""The budgeted search (hwsim.studies.sweep_search) on a synthetic space: no simulation needed."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.studies.sweep import Point, SweepSpec, grid_points
from hwsim.studies.sweep_search import neighbours, search_model
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
