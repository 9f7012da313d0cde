"""The check that onnxruntime's other intra-op threads work along (hwsim.host.second_core)."""

from __future__ import annotations

import pytest

from hwsim.host import second_core
from hwsim.host.measure import Timing


class _Session:
    def __init__(self, threads: int) -> None:
        self.threads = threads

    def run(self, outputs: object, feeds: object) -> None:  # what time_call would call
        raise AssertionError("timed by the fake time_call, not run")


def _fake(monkeypatch: pytest.MonkeyPatch, ns: dict[int, float]) -> list[int]:
    """Sessions that take ``ns[threads]`` per run; the thread counts of the sessions made."""
    made: list[int] = []
    monkeypatch.setattr(second_core, "make_session", lambda model, threads: made.append(threads) or _Session(threads))
    monkeypatch.setattr(second_core, "time_call", lambda fn, runs, warmup: Timing((ns[fn.func.__self__.threads],) * runs))
    return made


@pytest.mark.parametrize(("one", "two", "along"), [(11000.0, 5800.0, True), (11000.0, 6200.0, False), (11000.0, 11500.0, False)])
def test_the_chain_must_run_nearly_twice_as_fast_on_two_threads(
    monkeypatch: pytest.MonkeyPatch, one: float, two: float, along: bool
) -> None:
    made = _fake(monkeypatch, {1: one, 2: two})
    assert second_core.speedup(2) == pytest.approx(one / two)
    assert second_core.threads_along(2) is along
    assert sorted(set(made)) == [1, 2]


def test_one_thread_is_along_without_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _fake(monkeypatch, {1: 1.0})
    assert second_core.threads_along(1) and made == []
    assert second_core.threads_along(4, ratio=3.7) and not second_core.threads_along(4, ratio=3.5) and made == []
    # a host whose chain never runs 0.9 x the thread count faster is judged against its usual speed-up
    assert second_core.threads_along(2, ratio=1.6, usual=1.7) and not second_core.threads_along(2, ratio=1.5, usual=1.7)
    assert not second_core.threads_along(2, ratio=1.7, usual=2.4) and made == []  # never above the thread count


def test_the_chain_is_dependent_matmuls_of_the_checked_side() -> None:
    model, x = second_core.matmul_chain(second_core.CHECK_N, 3)
    assert [n.op_type for n in model.graph.node] == ["MatMul"] * 3
    assert [n.input[0] for n in model.graph.node] == ["x", "y0", "y1"] and x.shape == (second_core.CHECK_N,) * 2
