"""``hwsim fingerprint --calibrate``: the round logic (stubbed measurements and a stubbed
clock: nothing here depends on how fast this machine is), the chip file it writes, bad input."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import load_chip
from hwsim.cli import main
from hwsim.host.calibrate_host import (
    CALIBRATION_MODELS,
    HostRound,
    Rounds,
    bundled_models,
    run_rounds,
    spread_between,
    write_calibrated_chip,
)
from hwsim.host.calibration import CalibrationFit
from hwsim.host.fingerprint import FINGERPRINT_EFFICIENCY, Dispatch, Fingerprint, read_fingerprint
from tests.helpers import MODELS, mlp


@dataclass(frozen=True, slots=True)
class Stub:
    """A round as the round logic sees it."""

    score: float
    predicted_ns: dict[str, float]


def stubbed(rounds: list[Stub], step_s: float = 10.0) -> tuple[Callable[[], Stub], Callable[[], float], list[int]]:
    """A measurement that hands out ``rounds`` in turn, each taking ``step_s`` on a fake clock."""
    now = [0.0]
    calls = [0]
    it: Iterator[Stub] = iter(rounds)

    def measure() -> Stub:
        calls[0] += 1
        now[0] += step_s
        return next(it)

    return measure, lambda: now[0], calls


def r(score: float, *preds: float) -> Stub:
    return Stub(score, {f"m{i}": p for i, p in enumerate(preds)})


class TestRounds:
    def test_stops_as_soon_as_the_two_best_agree(self) -> None:
        # round 2 is disturbed (higher score) and disagrees; round 3 agrees with round 1
        measure, clock, calls = stubbed([r(5, 100, 10), r(9, 130, 10), r(4, 103, 10.2), r(1, 1, 1)])
        res = run_rounds(measure, max_seconds=1000, target_spread=0.05, clock=clock)
        assert calls[0] == 3 and res.converged
        assert res.best == 2 and res.runner_up == 0 and res.kept.predicted_ns["m0"] == 103
        assert res.spread == pytest.approx(3 / 103) and res.worst_model == "m0"
        assert res.median_spread == pytest.approx((3 / 103 + 0.2 / 10.2) / 2)
        assert res.seconds == (10.0, 10.0, 10.0)

    def test_never_converging_stops_at_the_time_limit_and_says_so(self) -> None:
        rounds = [r(s, 100.0 * s) for s in [3, 2, 5, 1, 4, 6, 7]]  # no two rounds agree
        measure, clock, calls = stubbed(rounds)
        # 10 s rounds, 45 s: after round 4 (40 s) a fifth would end at 50 s
        res = run_rounds(measure, max_seconds=45, target_spread=0.05, clock=clock)
        assert calls[0] == 4 and not res.converged
        assert "time limit" in res.reason and "not reached" in res.reason
        # the closest pair: rounds 2 and 1 (200 and 300), the better of them round 2 (score 2)
        assert res.best == 1 and res.runner_up == 0
        assert res.spread == pytest.approx(0.5)  # 300 against 200

    def test_a_fast_round_no_other_confirms_is_not_kept(self) -> None:
        # round 1 ran fast (the host in turbo): its predictions lie 10 % below the two that follow,
        # which agree with each other; the two fastest rounds (1 and 3) disagree
        measure, clock, calls = stubbed([r(1, 90, 9), r(3, 100, 10), r(2.9, 101, 10.1), r(5, 1, 1)])
        res = run_rounds(measure, max_seconds=1000, target_spread=0.05, clock=clock)
        assert calls[0] == 3 and res.converged
        assert res.best == 2 and res.runner_up == 1 and res.kept.predicted_ns["m0"] == 101

    def test_two_rounds_run_even_past_the_limit(self) -> None:
        measure, clock, calls = stubbed([r(1, 100), r(2, 200), r(3, 100)])
        res = run_rounds(measure, max_seconds=1, clock=clock)
        assert calls[0] == 2 and not res.converged and len(res.rounds) == 2

    def test_progress_is_reported_per_round(self) -> None:
        seen: list[tuple[int, float, float]] = []
        measure, clock, _ = stubbed([r(1, 100), r(2, 101)], step_s=7.0)
        run_rounds(measure, 100, clock=clock, on_round=lambda i, x, s: seen.append((i, x.score, s)))
        assert seen == [(1, 1, 7.0), (2, 2, 7.0)]

    @settings(max_examples=60, deadline=None)
    @given(
        rounds=st.lists(
            st.tuples(st.floats(1, 100), st.lists(st.floats(1, 1e6), min_size=3, max_size=3)), min_size=12, max_size=12
        ),
        max_rounds=st.integers(2, 12),
        target=st.floats(0.01, 0.5),
    )
    def test_matches_a_plain_replay(self, rounds: list[tuple[float, list[float]]], max_rounds: int, target: float) -> None:
        stubs = [r(s, *p) for s, p in rounds]
        measure, clock, calls = stubbed(stubs, step_s=10.0)
        res = run_rounds(measure, max_seconds=10.0 * max_rounds, target_spread=target, clock=clock)
        # replay: the first k >= 2 with a pair of rounds that agree within target, else the limit;
        # kept: the lower score of the closest pair
        for k in range(2, max_rounds + 1):
            pairs = []
            for i in range(k):
                for j in range(i + 1, k):
                    b, o = sorted((i, j), key=lambda x: (stubs[x].score, x))
                    pairs.append((max(spread_between(stubs[b].predicted_ns, stubs[o].predicted_ns).values()), b, o))
            spread, best, runner = min(pairs, key=lambda p: (p[0], stubs[p[1]].score, p[1], p[2]))
            if spread <= target or k == max_rounds:
                break
        assert calls[0] == k and res.best == best and res.runner_up == runner
        assert res.converged == (spread <= target) and res.spread == pytest.approx(spread)
        assert res.kept.score <= stubs[runner].score


def noisy(truth: list[float], slow: list[float]) -> list[Stub]:
    """Rounds that other load slowed by ``slow`` each (one-sided: 0.1 is 10 % slower), scored so."""
    return [r(1.0 + s, *(t * (1.0 + s) for t in truth)) for s in slow]


def fastest_of(rounds: Sequence[Stub]) -> Stub:
    """A merge: per model the fastest prediction (what merging the measurements does to them)."""
    return Stub(min(x.score for x in rounds), {m: min(x.predicted_ns[m] for x in rounds) for m in rounds[0].predicted_ns})


class TestMergedRounds:
    TRUTH: ClassVar[list[float]] = [100.0, 10.0, 1.0]

    def test_noisy_rounds_that_never_agree_converge_merged(self) -> None:
        # no two rounds within 5 % of each other: the kept-round rule runs to the limit and keeps
        # a round 10 %+ off; merged, the estimate stops moving at round 4 and is the quietest round
        slow = [0.40, 0.25, 0.10, 0.33, 0.18, 0.0, 0.48, 0.60]
        measure, clock, calls = stubbed(noisy(self.TRUTH, slow))
        old = run_rounds(measure, max_seconds=75, clock=clock)
        assert not old.converged and old.kept.predicted_ns["m0"] >= 110.0
        measure, clock, calls = stubbed(noisy(self.TRUTH, slow))
        res = run_rounds(measure, max_seconds=1000, clock=clock, merge=fastest_of, min_rounds=3)
        assert res.converged and calls[0] == 4 and res.change == 0.0
        assert res.merged is not None and res.kept is res.merged
        assert res.kept.predicted_ns == pytest.approx({f"m{i}": t * 1.1 for i, t in enumerate(self.TRUTH)})
        assert "merged estimate moved by up to 0.0% (m0) with round 4" in res.reason
        assert res.spread == pytest.approx(1.40 / 1.33 - 1.0)  # single rounds still reported: the closest pair

    def test_min_rounds_run_even_when_the_second_round_moves_nothing(self) -> None:
        # round 2 slower than round 1 leaves the merge unmoved: that alone says nothing
        measure, clock, calls = stubbed(noisy(self.TRUTH, [0.2, 0.3, 0.0, 0.0, 0.5]))
        res = run_rounds(measure, max_seconds=1000, clock=clock, merge=fastest_of, min_rounds=3)
        assert calls[0] == 4 and res.converged and res.kept.predicted_ns["m0"] == pytest.approx(100.0)

    @settings(max_examples=60, deadline=None)
    @given(slow=st.lists(st.floats(0.0, 0.5), min_size=12, max_size=12), max_rounds=st.integers(3, 12))
    def test_the_merged_estimate_is_the_least_disturbed_seen(self, slow: list[float], max_rounds: int) -> None:
        measure, clock, calls = stubbed(noisy(self.TRUTH, slow))
        res = run_rounds(measure, max_seconds=10.0 * max_rounds, clock=clock, merge=fastest_of, min_rounds=3)
        ran = slow[: calls[0]]
        assert 3 <= calls[0] <= max_rounds and len(res.rounds) == calls[0]
        assert res.kept.predicted_ns["m0"] == pytest.approx(100.0 * (1 + min(ran)))
        # never worse than the round the kept-round rule would keep from the same rounds
        assert res.kept.predicted_ns["m0"] <= res.rounds[res.best].predicted_ns["m0"] + 1e-9
        if res.converged:
            assert res.change <= 0.05


def fake_fingerprint(fp32_gflops: float = 64.0, gbps: float = 10.0) -> Fingerprint:
    return Fingerprint(
        cpu_model="Test CPU", clock_mhz=2000.0, threads=1, date="2026-01-01T00:00:00+00:00",
        versions={"onnxruntime": "test"}, matmul_gflops_1t={"fp32": fp32_gflops}, matmul_gflops_nt={},
        matmul_spread={"fp32": 0.01}, scaling={1: fp32_gflops}, copy_gbps=gbps, triad_gbps=gbps,
        stream_bytes=16 << 20, sweep=[(16384, 100.0)],
        caches=[{"level": 1, "kib": 32.0, "bandwidth_gbps": 20 * gbps, "source": "sweep"},
                {"level": 2, "kib": 1024.0, "bandwidth_gbps": 10 * gbps, "source": "sweep"}],
        chase_ns=[(32768, 0.5)], dram_latency_ns=90.0, matmul_n=128,
    )  # fmt: skip


def host_round(gflops: float, overhead_ns: float, score_ns: float) -> HostRound:
    fit = CalibrationFit("cpu", overhead_ns, {"MatMul": 0.5, "Relu": 0.25}, {"MatMul": 3, "Relu": 2}, (), ("m",))
    return HostRound(fake_fingerprint(gflops), fit, {"m": score_ns}, {"m": score_ns * 1.01})


class TestChipFile:
    def test_written_chip_loads_with_the_kept_rounds_calibration(self, tmp_path: Path) -> None:
        kept, other = host_round(70.0, 1234.0, 1e6), host_round(50.0, 999.0, 2e6)
        res = Rounds((other, kept), (60.0, 60.0), 1, 0, 0.02, "m", 0.02, True, "agree")
        out = tmp_path / "host.yaml"
        write_calibrated_chip(res, out, "mybox", 0.05)
        chip = load_chip(out)
        (unit,) = chip.units
        assert chip.name == "mybox" and chip.calibration is None  # in the file itself, no include
        assert unit.op_overhead_ns == 1234.0
        assert unit.efficiency == {**FINGERPRINT_EFFICIENCY, "MatMul": 0.5, "Relu": 0.25}
        assert unit.flops_per_cycle["fp32"] == pytest.approx(70.0 / 2.0)  # the kept round's fingerprint
        fp = read_fingerprint(out)
        assert fp is not None and fp["matmul_gflops_1t"]["fp32"] == 70.0
        text = out.read_text()
        assert "round 2 of 2 kept" in text and "up to 2.0% (m)" in text and "converged" in text
        assert "# fit on 1 models: m" in text

    def test_not_converged_says_so_in_the_file(self, tmp_path: Path) -> None:
        a, b = host_round(70.0, 1.0, 1e6), host_round(60.0, 2.0, 3e6)
        res = Rounds((a, b), (1.0, 1.0), 0, 1, 0.4, "m", 0.4, False, "time limit")
        write_calibrated_chip(res, tmp_path / "h.yaml", "host", 0.05)
        assert "NOT converged (time limit)" in (tmp_path / "h.yaml").read_text()

    def test_score_is_the_geometric_mean(self) -> None:
        x = HostRound(fake_fingerprint(), host_round(1, 1, 1).fit, {"a": 1e6, "b": 4e6}, {"a": 1.0, "b": 1.0})
        assert x.score == pytest.approx(2e6)


class TestMergeHostRounds:
    def test_merged_rounds_are_the_undisturbed_host(self, tmp_path: Path) -> None:
        # round A's fingerprint MatMul ran slowed (its times, on its own clock, read 50 % long);
        # round B's models ran 40 % slowed. Neither round is the host; merged, they are: the
        # fingerprint and each measured time the undisturbed one's, and so the fit and predictions
        from chips.schema import chip_from_dict
        from hwsim.host.calibrate_host import merge_host_rounds
        from hwsim.host.fingerprint import chip_data
        from hwsim.host.host_merge import on_clock
        from hwsim.host.validate import validate_model

        # a fingerprint far faster than this CPU: the fit lands well below efficiency 1 (not clamped)
        model = mlp(tmp_path / "m.onnx", n=256)
        fp = replace(fake_fingerprint(1e4, 1e4), dispatch=Dispatch(250.0, 3700.0, 2000.0))
        v = validate_model(chip_from_dict(chip_data(fp)), model, runs=3, min_total_s=0.0, dispatch=fp.dispatch)
        fit = host_round(1, 1, 1).fit
        truth = merge_host_rounds([HostRound(fp, fit, {}, {}, (v,))], [model])
        a = HostRound(replace(fp, matmul_gflops_1t={"fp32": 1e4 / 1.5}), fit, {}, {}, (on_clock(v, 1.5),))
        b = HostRound(fp, fit, {}, {}, (on_clock(v, 1.4),))
        singles = [merge_host_rounds([x], [model]) for x in (a, b)]
        merged = merge_host_rounds([a, b], [model])
        assert merged.fingerprint.matmul_gflops_1t == {"fp32": 1e4}
        assert merged.measured_ns == pytest.approx(truth.measured_ns)
        assert merged.fit.efficiency == pytest.approx(truth.fit.efficiency)
        assert merged.predicted_ns == pytest.approx(truth.predicted_ns)
        for single in singles:  # either round alone is off
            assert max(spread_between(truth.predicted_ns, single.predicted_ns).values()) > 0.05
        assert len(merged.validations) == 1 and merged.validations[0].rounds_ns == pytest.approx(
            (v.measured_ns, v.measured_ns * 1.4))

    def test_rounds_without_measurements_are_an_error(self, tmp_path: Path) -> None:
        from hwsim.host.calibrate_host import merge_host_rounds

        with pytest.raises(ValueError, match="needs the measurements of 1 model"):
            merge_host_rounds([host_round(1, 1, 1)], [tmp_path / "m.onnx"])


class TestCommand:
    def test_one_command_writes_a_calibrated_chip(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
        from hwsim.host import fingerprint

        # the fingerprint is stubbed (a minute of measuring) and claims a CPU far faster than this
        # one; the model really runs in onnxruntime, so the fit must slow MatMul down
        monkeypatch.setattr(fingerprint, "measure_host", lambda threads=None, quick=False: fake_fingerprint(1e5, 1e5))
        model, out = mlp(tmp_path / "m.onnx", n=64), tmp_path / "host.yaml"
        code = main(["fingerprint", "--calibrate", "--quick", "--models", str(model), "-o", str(out),
                     "--max-seconds", "0.001"])  # fmt: skip
        assert code == 0
        stdout = capsys.readouterr().out
        # at least three rounds, merged (the limit is past after the first)
        assert "round 3:" in stdout and "round 4:" not in stdout and "merged 3 rounds" in stdout
        assert "differ by up to" in stdout and "rounds span" in stdout and f"wrote {out}" in stdout
        unit = load_chip(out).units[0]
        assert unit.efficiency["MatMul"] < FINGERPRINT_EFFICIENCY["MatMul"]  # refit, below the 1.0 it starts at
        assert unit.op_overhead_ns != 2000.0  # the fingerprint's placeholder, refit
        text = out.read_text()
        assert "Calibrated by `hwsim fingerprint --calibrate`: 3 rounds merged" in text and "# fit on 1 models: m" in text
        assert "NOT converged (time limit)" in text or "converged" in text

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--calibrate", "--max-seconds", "0"], "--max-seconds 0"),
            (["--calibrate", "--max-seconds", "nan"], "--max-seconds nan"),
            (["--calibrate", "--target-spread", "5"], "--target-spread 5"),
            (["--calibrate", "--models", "nope.onnx"], "nope.onnx: file not found"),
            (["--models", "nope.onnx"], "--models: only with --calibrate"),
            (["--target-spread", "nan"], "--target-spread: only with --calibrate"),  # was ignored: a host file written
            (["--max-seconds", "1e-320"], "--max-seconds: only with --calibrate"),
        ],
    )
    def test_bad_input_is_one_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                   message: str) -> None:  # fmt: skip
        out = tmp_path / "host.yaml"
        assert main(["fingerprint", "--quick", "-o", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
        assert not out.exists()


def test_bundled_calibration_set() -> None:
    found = bundled_models()
    assert [p.stem for p in found] == [m for m in CALIBRATION_MODELS if (MODELS / f"{m}.onnx").is_file()]
    assert {p.stem for p in bundled_models(quick=True)} < {p.stem for p in found}


def test_no_bundled_models_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="--models"):
        bundled_models(folder=tmp_path)


def test_spread_ignores_models_missing_in_one_round() -> None:
    assert spread_between({"a": 1.0, "b": 2.0}, {"a": 1.5}) == {"a": 0.5}
    assert math.isclose(spread_between({"a": 3.0}, {"a": 3.0})["a"], 0.0)
