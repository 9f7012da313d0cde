"""The learned prior: trained on trials, ranks candidate signatures."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chips import load_chip
from hwsim.studies.optimize.features import chip_features
from hwsim.studies.optimize.prior import Prior, samples_of
from tests.hwsim.studies.optimize.conftest import TrialFactory

CONV = {"cat.conv": 1.0, "macs_log2": 20.0, "intensity_log2": 6.0}
RELU = {"cat.activation": 1.0, "macs_log2": 0.0, "intensity_log2": 0.5}
NPU, CPU = {"unit": "npu"}, {"unit": "cpu_big"}
RK = chip_features(load_chip("rk3588"))


def _trials(make_trial: TrialFactory, n: int = 6) -> list[Any]:
    """On rk3588: convs gain 4x on the NPU and lose 2x on the CPU; activations the reverse."""
    rk = load_chip("rk3588")
    out = []
    for i in range(n):
        for op, feats, npu_gain in (("c", CONV, 4.0), ("r", RELU, 0.5)):
            scale = 1 + i / 10
            f = {k: v * scale for k, v in feats.items()}
            for sig, gain in ((NPU, npu_gain), (CPU, 1 / npu_gain)):
                out.append(make_trial(rk, {f"{op}{i}": sig}, op_features={f"{op}{i}": f},
                                      parent_latency_ms=10.0, latency_ms=10.0 / gain))  # fmt: skip
    return out


def test_without_trials_gain_is_one_and_order_is_kept() -> None:
    prior = Prior.fit([])
    assert prior.samples == 0
    assert prior.expected_gain(CONV, {}, NPU) == 1.0
    cands = [CPU, NPU, {"tile": "single"}]
    assert prior.rank(CONV, {}, cands) == cands


def test_learns_which_unit_pays_off_on_which_op(make_trial: TrialFactory) -> None:
    chip = _trials(make_trial)[0].chip_features
    prior = Prior.fit(_trials(make_trial))
    assert prior.samples == 24
    assert prior.rank(CONV, chip, [CPU, NPU]) == [NPU, CPU]
    assert prior.rank(RELU, chip, [NPU, CPU]) == [CPU, NPU]
    assert prior.expected_gain(CONV, chip, NPU) > 2.0
    assert prior.expected_gain(CONV, chip, CPU) < 1.0


@given(st.floats(0, 1), st.sampled_from([0, 1, 3, 10]), st.floats(0.001, 1))
@settings(max_examples=15, deadline=None)
def test_every_blend_ranks_the_clear_case(blend: float, k: int, alpha: float) -> None:
    from hwsim.studies.optimize.db import Trial  # built here: no function-scoped fixture in @given

    def make(chip: Any, sigs: dict[str, dict[str, object]], **kw: Any) -> Any:
        base = {"chip_fingerprint": "f", "chip_name": "rk3588", "chip_features": RK,
                    "model_sha256": "m", "model_name": "m", "graph_features": {}, "search_id": "s", "stage": "kernel",
                    "candidate_key": str(kw), "transforms": (), "signatures": sigs, "objective": 1.0, "energy_mj": 0.0,
                    "peak_memory_bytes": 0, "feasible": True}  # fmt: skip
        return Trial(**({"op_features": {}} | base | kw))

    prior = Prior.fit(_trials(make), alpha=alpha, k=k, blend=blend)
    assert prior.rank(CONV, RK, [CPU, NPU]) == [NPU, CPU]
    assert prior.rank(RELU, RK, [NPU, CPU]) == [CPU, NPU]


def test_only_kernel_and_transfer_trials_teach(make_trial: TrialFactory) -> None:
    rk = load_chip("rk3588")
    kw: dict[str, Any] = {"op_features": {"c": CONV}, "parent_latency_ms": 10.0, "latency_ms": 5.0}
    assert samples_of([make_trial(rk, {"c": NPU}, stage=s, **kw) for s in ("baseline", "graph")]) == []
    assert len(samples_of([make_trial(rk, {"c": NPU}, stage=s, **kw) for s in ("kernel", "transfer")])) == 2
    infeasible = make_trial(rk, {"c": NPU}, feasible=False, **kw)
    failed = make_trial(rk, {"c": NPU}, error="boom", **kw)
    assert samples_of([infeasible, failed, make_trial(rk, {}, **kw)]) == []


def test_a_trial_over_two_ops_shares_its_gain(make_trial: TrialFactory) -> None:
    rk = load_chip("rk3588")
    t = make_trial(rk, {"a": NPU, "b": CPU}, parent_latency_ms=4.0, latency_ms=1.0)
    assert [s.log_gain for s in samples_of([t])] == [math.log(2.0), math.log(2.0)]


def test_a_measurement_corrects_the_prediction(make_trial: TrialFactory) -> None:
    rk = load_chip("rk3588")
    # the simulator says the NPU halves the conv; measured, it doubles it (parent measured at 10 ms)
    parent = make_trial(rk, {}, stage="baseline", latency_ms=10.0, measured_latency_ms=10.0)
    trials = [parent] + [
        make_trial(rk, {f"c{i}": NPU}, op_features={f"c{i}": CONV}, parent_latency_ms=10.0,
                   latency_ms=5.0, measured_latency_ms=20.0)
        for i in range(3)
    ]
    samples = samples_of(trials)
    assert [round(math.exp(s.log_gain), 6) for s in samples] == [0.5] * 3
    assert all(s.weight > 1 for s in samples)
    assert Prior.fit(trials).expected_gain(CONV, trials[1].chip_features, NPU) < 1.0
    # without the parent's measurement, the chip's median measured/predicted ratio (4) scales it
    assert [round(math.exp(s.log_gain), 6) for s in samples_of(trials[1:])] == [2.0] * 3


@given(st.randoms(use_true_random=False))
@settings(max_examples=10, deadline=None)
def test_the_same_trials_in_any_order_give_the_same_prior(rnd: Any) -> None:
    """A database holds a search's trials in the order its workers finished them: the prior
    (ridge and nearest neighbours, whose ties go by sample order) must not depend on it. The
    trials here tie: one op and signature at one gain twice, at another once."""
    from hwsim.studies.optimize.db import Trial

    def make(sig: dict[str, object], key: str, gain: float) -> Trial:
        return Trial(chip_fingerprint="f", chip_name="rk3588", chip_features=RK, model_sha256="m", model_name="m",
                     graph_features={}, search_id="s", stage="kernel", candidate_key=key, transforms=(),
                     signatures={"c": sig}, op_features={"c": CONV}, objective=10.0 / gain, latency_ms=10.0 / gain,
                     energy_mj=0.0, peak_memory_bytes=0, parent_latency_ms=10.0, feasible=True)  # fmt: skip

    trials = [make(NPU, "a", 4.0), make(NPU, "b", 4.0), make(NPU, "c", 0.5), make(CPU, "d", 0.5), make(CPU, "e", 2.0)]
    shuffled = list(trials)
    rnd.shuffle(shuffled)
    for k in (1, 2, 3):
        want = Prior.fit(trials, k=k).log_gains(CONV, RK, [NPU, CPU])
        assert Prior.fit(shuffled, k=k).log_gains(CONV, RK, [NPU, CPU]).tolist() == want.tolist()
