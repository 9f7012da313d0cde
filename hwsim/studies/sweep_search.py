"""``--budget N``: a multi-objective search over a sweep's space instead of its full grid.

Optuna's multi-objective TPE sampler (``TPESampler(multivariate=True)``, MOTPE) proposes
points: the chip and one value per grid key. A key whose values are all numbers is ordered, so
it is searched as an integer index into its sorted values (``suggest_int``: TPE's density then
knows that 800 MHz lies between 600 and 1000); any other key is a categorical choice. The
sweep's constraints reach the sampler as each trial's constraint values (``Trial.set_constraint``:
each constraint's violation, <= 0 when it holds), and a point the chip cannot run is a failed
trial. Each model gets its own study (fronts are per model) and ``N`` trials. Trials are asked
for in rounds of ``round_size`` and evaluated together (``constant_liar`` keeps a round's
proposals apart), so a search uses the same engine and batches as a grid; a point proposed twice
is evaluated once (the store answers the second time).

Why TPE and not NSGA-II: at a tenth of a 324-point grid (32 trials), NSGA-II has four
generations of eight to work with; on the benchmark of ``benchmarks/bench_sweep.py`` it reached
a mean 90.5% of the grid's hypervolume against 92-97% for MOTPE (docs/sweep.md has the figures).
The first :func:`startup_trials` trials are random (TPE's start-up), the rest model-guided.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from hwsim.studies.sweep import OBJECTIVES, GridValue, Point, SweepSpec
from hwsim.studies.sweep_store import StoredPoint

__all__ = ["search_model", "startup_trials"]

Evaluate = Callable[[Sequence[Point]], dict[str, StoredPoint]]


def startup_trials(budget: int) -> int:
    """Random trials before TPE models the results: a fifth of the budget, between 6 and 10.

    >>> startup_trials(32), startup_trials(40), startup_trials(1000)
    (6, 8, 10)
    """
    return max(6, min(10, budget // 5))


def _ordered(values: Sequence[GridValue]) -> bool:
    """Whether a grid key's values are all numbers (searched as an index into them, sorted)."""
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _suggest(trial: object, key: str, values: Sequence[GridValue]) -> GridValue:
    if _ordered(values):
        ordered = sorted(values, key=float)
        return ordered[trial.suggest_int(key, 0, len(ordered) - 1)]  # type: ignore[attr-defined]
    return trial.suggest_categorical(key, list(values))  # type: ignore[attr-defined,no-any-return]


def _point(trial: object, spec: SweepSpec, model: str) -> Point:
    chip = _suggest(trial, "chip", spec.chips) if len(spec.chips) > 1 else spec.chips[0]
    params = tuple((k, _suggest(trial, k, values)) for k, values in spec.grid.items())
    return Point(model, str(chip), params)


def search_model(
    spec: SweepSpec,
    model: str,
    budget: int,
    evaluate: Evaluate,
    seed: int = 0,
    round_size: int = 8,
    on_round: Callable[[int], None] = lambda n: None,
) -> list[Point]:
    """Run ``budget`` MOTPE trials for ``model``; returns the distinct points evaluated, in
    the order first proposed. ``evaluate`` simulates points (and stores them) and returns them
    by key; ``on_round(trials)`` is told after each round."""
    import optuna
    from optuna.samplers import TPESampler
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    constraints = spec.constraint_list()
    with warnings.catch_warnings():  # multivariate TPE is marked experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = TPESampler(n_startup_trials=startup_trials(budget), multivariate=True, constant_liar=True, seed=seed)
    study = optuna.create_study(directions=["minimize"] * len(spec.objectives), sampler=sampler)
    seen: dict[str, Point] = {}
    told = 0
    while told < budget:
        trials = [study.ask() for _ in range(min(round_size, budget - told))]
        points = [_point(t, spec, model) for t in trials]
        for p in points:
            seen.setdefault(p.key, p)
        results = evaluate(list({p.key: p for p in points}.values()))
        for trial, p in zip(trials, points, strict=True):
            r = results[p.key]
            if r.error is not None:
                study.tell(trial, state=TrialState.FAIL)
                continue
            values = dict(r.objectives)
            for i, c in enumerate(constraints):
                trial.set_constraint(f"{i}:{c.objective}", c.violation(OBJECTIVES[c.objective].sign * values[c.objective]))
            study.tell(trial, [values[o] for o in spec.objectives])
        told += len(trials)
        on_round(len(trials))
    return list(seen.values())
