"""``--budget N``: a multi-objective search over a sweep's space instead of its full grid.

Optuna's NSGA-II sampler proposes points (the chip and one value per grid key, each a
categorical choice); the sweep's constraints reach it as each trial's constraint values
(``Trial.set_constraint``, Optuna 5's successor of the sampler's ``constraints_func``: each
constraint's violation, <= 0 when it holds), and a point the chip cannot run is a failed trial.
Each model gets its own study (fronts are per model) and ``N`` trials. Trials are asked for in
rounds of ``round_size`` and evaluated together, so a search uses the same engine and batches
as a grid; a point proposed twice is evaluated once (the store answers the second time).

The population is a fifth of the budget, between 8 and 50 (Optuna's default), so that a
budget of a few dozen trials still sees several generations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hwsim.studies.sweep import OBJECTIVES, Point, SweepSpec
from hwsim.studies.sweep_store import StoredPoint

__all__ = ["population_size", "search_model"]

Evaluate = Callable[[Sequence[Point]], dict[str, StoredPoint]]


def population_size(budget: int) -> int:
    """NSGA-II's population for a budget of trials (a fifth, between 8 and 50).

    >>> population_size(40), population_size(100), population_size(1000)
    (8, 20, 50)
    """
    return max(8, min(50, budget // 5))


def _point(trial: object, spec: SweepSpec, model: str) -> Point:
    suggest = trial.suggest_categorical  # type: ignore[attr-defined]
    chip = suggest("chip", list(spec.chips)) if len(spec.chips) > 1 else spec.chips[0]
    params = tuple((k, suggest(k, list(values))) for k, values in spec.grid.items())
    return Point(model, chip, params)


def search_model(
    spec: SweepSpec,
    model: str,
    budget: int,
    evaluate: Evaluate,
    seed: int = 0,
    round_size: int = 8,
    on_round: Callable[[int], None] = lambda n: None,
) -> list[Point]:
    """Run ``budget`` NSGA-II trials for ``model``; returns the distinct points evaluated, in
    the order first proposed. ``evaluate`` simulates points (and stores them) and returns them
    by key; ``on_round(trials)`` is told after each round."""
    import optuna
    from optuna.samplers import NSGAIISampler
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    constraints = spec.constraint_list()
    sampler = NSGAIISampler(population_size=population_size(budget), seed=seed)
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
