"""``--budget N``: a multi-objective search over a sweep's space instead of its full grid.

Three phases share one Optuna study per model (fronts are per model):

0. **Screened** (when a ``screen`` is given, :data:`SCREEN_SHARE` of the budget): the grid
   points in the order a cheap estimate ranks them (:func:`screen_order`; the CLI's estimate is
   :mod:`hwsim.studies.sweep_screen`), the estimate's own front first, handed to the study with
   ``Study.enqueue_trial``. It only orders: no point is skipped on the estimate's word.
1. **Model-guided**: Optuna's multi-objective TPE sampler (``TPESampler(multivariate=True,
   constant_liar=True)``, MOTPE) proposes points: the chip and one value per grid key. A key
   whose values are all numbers is ordered, so it is searched as an integer index into its
   sorted values (``suggest_int``: TPE's density then knows that 800 MHz lies between 600 and
   1000); any other key is a categorical choice. The first :func:`startup_trials` trials are
   random (TPE's start-up).
2. **Pareto local search** (Paquete, Chiarandini and Stützle, 2004) for the last
   :data:`LOCAL_SHARE` of the budget: the grid neighbours (:func:`neighbours`: one key one step)
   of the feasible front found so far that are not evaluated yet, handed to the study with
   ``Study.enqueue_trial`` so it records them like any other trial. A discrete grid's front is
   usually reached from a nearby front point by one change (a core fewer, a precision lower),
   which a density model, at a few dozen trials, often misses.

``N`` counts distinct points: the grid is discrete, and a point the sampler proposes again is
told its stored result without being evaluated or counted (after :data:`RETRIES` repeats in a
row an unevaluated point is drawn at random instead). The sweep's constraints reach the sampler
as each trial's constraint values (``Trial.set_constraint``: each constraint's violation, <= 0
when it holds); a point the chip cannot run is a failed trial. Points are evaluated in rounds of
``round_size`` (``constant_liar`` keeps a round's proposals apart), so a search uses the same
engine and batches as a grid.

Why TPE and not NSGA-II: at a tenth of a 324-point grid (32 points), NSGA-II has four
generations of eight to work with; on the benchmark of ``benchmarks/bench_sweep.py`` it reached
a mean 90.5% of the grid's hypervolume against 92-97% for MOTPE alone (docs/sweep.md has the
figures, and what the local search and the screen add).
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hwsim.studies.sweep import OBJECTIVES, GridValue, Point, SweepSpec, feasibility, grid_points
from hwsim.studies.sweep_correction import Correction, fit_correction
from hwsim.studies.sweep_front import box_of, normalized_hypervolume, pareto_mask
from hwsim.studies.sweep_store import StoredPoint

__all__ = ["LOCAL_SHARE", "RETRIES", "SCREEN_SHARE", "Screener", "neighbours", "screen_order", "search_model", "startup_trials"]

Evaluate = Callable[[Sequence[Point]], dict[str, StoredPoint]]
#: A point's cheap estimate of the screened objectives (None: it cannot estimate this point).
#: Objective name -> estimate (natural units, as constraints read them), the ones it screens.
Screener = Callable[[Point], Mapping[str, float] | None]

#: The share of the budget spent on the Pareto local search (the last rounds).
LOCAL_SHARE = 0.5
#: The share of the budget spent first on the points the screen ranks best (when there is one).
SCREEN_SHARE = 0.25
#: Repeated proposals in a row before a random unevaluated point is drawn instead.
RETRIES = 20


def startup_trials(budget: int) -> int:
    """Random trials before TPE models the results: a fifth of the budget, between 6 and 10.

    >>> startup_trials(32), startup_trials(40), startup_trials(1000)
    (6, 8, 10)
    """
    return max(6, min(10, budget // 5))


def _ordered(values: Sequence[GridValue]) -> bool:
    """Whether a grid key's values are all numbers (searched as an index into them, sorted)."""
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _axes(spec: SweepSpec) -> dict[str, list[GridValue]]:
    """The searched keys ("chip" where there are several) and their values, numbers sorted."""
    axes: dict[str, Sequence[GridValue]] = {"chip": spec.chips} if len(spec.chips) > 1 else {}
    axes.update(spec.grid)
    return {k: sorted(v, key=float) if _ordered(v) else list(v) for k, v in axes.items()}


def _suggest(trial: Any, key: str, values: list[GridValue]) -> GridValue:
    if _ordered(values):
        return values[trial.suggest_int(key, 0, len(values) - 1)]
    return trial.suggest_categorical(key, values)  # type: ignore[no-any-return]


def _point(trial: Any, spec: SweepSpec, axes: dict[str, list[GridValue]], model: str) -> Point:
    chosen = {k: _suggest(trial, k, values) for k, values in axes.items()}
    chip = chosen.pop("chip", spec.chips[0])
    return Point(model, str(chip), tuple((k, chosen[k]) for k in spec.grid))


def _trial_params(point: Point, axes: dict[str, list[GridValue]]) -> dict[str, Any]:
    """The study's parameters of ``point`` (what ``enqueue_trial`` takes)."""
    values = {"chip": point.chip, **dict(point.params)}
    return {k: vs.index(values[k]) if _ordered(vs) else values[k] for k, vs in axes.items()}


def neighbours(point: Point, spec: SweepSpec) -> list[Point]:
    """The grid points one step from ``point``: one key changed, a numeric key to the next
    value up or down, any other key (and the chip) to each of its other values.

    >>> spec = SweepSpec(models=("m.onnx",), chips=("rk3588",), objectives=("latency_ms",),
    ...                  grid={"npu.cores": (1, 2, 3), "precision": ("int8", "fp16")})
    >>> [p.params for p in neighbours(Point("m.onnx", "rk3588", (("npu.cores", 2), ("precision", "int8"))), spec)]
    [(('npu.cores', 1), ('precision', 'int8')), (('npu.cores', 3), ('precision', 'int8')), (('npu.cores', 2), ('precision', 'fp16'))]
    """
    out = []
    for key, values in _axes(spec).items():
        current = point.chip if key == "chip" else point.get(key, "")
        i = values.index(current)
        steps = [j for j in (i - 1, i + 1) if 0 <= j < len(values)] if _ordered(values) else range(len(values))
        for j in steps:
            if j == i:
                continue
            if key == "chip":
                out.append(Point(point.model, str(values[j]), point.params))
            else:
                out.append(Point(point.model, point.chip, tuple((k, values[j] if k == key else v) for k, v in point.params)))
    return out


def _front(spec: SweepSpec, done: dict[str, tuple[Point, StoredPoint]]) -> tuple[list[Point], list[float]]:
    """The feasible non-dominated points among ``done``, and each one's share of their
    hypervolume (what the front loses without it), in the box of the feasible points."""
    constraints = spec.constraint_list()
    ok = [(p, r) for p, r in done.values() if r.error is None and feasibility(r, constraints)[0]]
    if not ok:
        return [], []
    values = np.array([[dict(r.objectives)[o] for o in spec.objectives] for _, r in ok])
    mask = pareto_mask(values)
    box = box_of(values)
    front = values[mask]
    total = normalized_hypervolume(front, box)
    gains = [total - normalized_hypervolume(np.delete(front, i, axis=0), box) for i in range(len(front))]
    return [p for (p, _), keep in zip(ok, mask, strict=True) if keep], gains


def _local_candidates(spec: SweepSpec, done: dict[str, tuple[Point, StoredPoint]], rng: random.Random) -> list[Point]:
    """Unevaluated neighbours of the current front, the most promising first: a neighbour
    scores the sum of the hypervolume shares of the front points it neighbours (ties in random
    order), so the search works around the points the front leans on."""
    score: dict[str, float] = {}
    points: dict[str, Point] = {}
    for p, gain in zip(*_front(spec, done), strict=True):
        for q in neighbours(p, spec):
            if q.key not in done:
                score[q.key] = score.get(q.key, 0.0) + gain
                points[q.key] = q
    keys = list(score)
    rng.shuffle(keys)
    keys.sort(key=lambda k: -score[k])
    return [points[k] for k in keys]


def _violation(spec: SweepSpec, estimates: Mapping[str, float], correction: Correction) -> float:
    """How far the corrected ``estimates`` break the sweep's constraints, each relative to its
    bound and given the benefit of the correction's margin (0: predicted feasible). A constraint
    on an objective the screen does not estimate is taken to hold."""
    total = 0.0
    for c in spec.constraint_list():
        if c.objective in estimates:
            v, m = estimates[c.objective], correction.margin(c.objective)
            best = min(c.violation(v * math.exp(-m)), c.violation(v * math.exp(m)))
            total += max(0.0, best) / max(abs(c.bound), 1e-12)
    return total


def screen_order(
    spec: SweepSpec, model: str, screen: Screener, rng: random.Random, correction: Correction | None = None
) -> list[Point]:
    """Every grid point of ``model`` in the order the screen ranks them, corrected by
    ``correction`` (:mod:`hwsim.studies.sweep_correction`; none: as screened). The points it
    predicts feasible (:func:`_violation`) come first, by non-dominated rank of their screened
    objectives among themselves (rank 0: their front, then the front of the rest, ...), then the
    predicted-infeasible ones, the least violation first; ties in random order (the screen gives
    every policy of a configuration the same values). A point the screen cannot estimate comes
    last.

    >>> spec = SweepSpec(models=("m.onnx",), chips=("rk3588",), objectives=("latency_ms", "energy_mj"),
    ...                  grid={"npu.cores": (1, 2, 3)}, constraints={"latency_ms": "<= 2.6"})
    >>> cost = {1: (3.0, 1.0), 2: (2.0, 2.0), 3: (2.5, 2.5)}  # 1 core too slow, 3 dominated by 2
    >>> order = screen_order(spec, "m.onnx", lambda p: dict(zip(spec.objectives, cost[int(p.get("npu.cores", 0))])),
    ...                      random.Random(0))
    >>> [p.params for p in order]
    [(('npu.cores', 2),), (('npu.cores', 3),), (('npu.cores', 1),)]
    """
    correction = correction or Correction()
    points = [p for p in grid_points(spec) if p.model == model]
    rng.shuffle(points)
    raw = [screen(p) for p in points]
    values = [None if v is None else correction.apply(p, v) for p, v in zip(points, raw, strict=True)]
    violation = {i: _violation(spec, v, correction) for i, v in enumerate(values) if v is not None}
    known = [i for i in violation if violation[i] == 0.0]
    signs = [(o, OBJECTIVES[o].sign) for o in spec.objectives]
    rank = {i: (math.inf, math.inf) for i in range(len(points))}
    rank.update((i, (v, 0.0)) for i, v in violation.items() if v > 0.0)
    feasible = [v for v in values if v is not None and _violation(spec, v, correction) == 0.0]
    estimates = np.array([[sign * v[o] for o, sign in signs if o in v] for v in feasible], dtype=float).reshape(len(known), -1)
    left, level = np.arange(len(known)), 0  # indices into known, not ranked yet
    while len(left):
        front = pareto_mask(estimates[left])
        rank.update((known[j], (0.0, level)) for j in left[front])
        left, level = left[~front], level + 1
    return [points[i] for i in sorted(range(len(points)), key=lambda i: rank[i])]


def _random_unevaluated(spec: SweepSpec, model: str, taken: set[str], rng: random.Random) -> Point | None:
    """A random grid point of ``model`` not in ``taken`` (None when every one is)."""
    axes = _axes(spec)
    for _ in range(64):
        chosen = {k: rng.choice(v) for k, v in axes.items()}
        p = Point(model, str(chosen.pop("chip", spec.chips[0])), tuple((k, chosen[k]) for k in spec.grid))
        if p.key not in taken:
            return p
    rest = [p for p in grid_points(spec) if p.model == model and p.key not in taken]
    return rng.choice(rest) if rest else None


class _Search:
    """One model's study: proposes distinct unevaluated points and tells the study the results."""

    def __init__(self, spec: SweepSpec, model: str, budget: int, seed: int) -> None:
        import optuna
        from optuna.samplers import TPESampler

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():  # multivariate TPE is marked experimental
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = TPESampler(n_startup_trials=startup_trials(budget), multivariate=True, constant_liar=True, seed=seed)
        self.study = optuna.create_study(directions=["minimize"] * len(spec.objectives), sampler=sampler)
        self.spec, self.model, self.axes = spec, model, _axes(spec)
        self.rng = random.Random(seed)
        self.done: dict[str, tuple[Point, StoredPoint]] = {}
        self.size = math.prod(len(v) for v in self.axes.values())
        #: A point's predicted constraint violation (:func:`_violation`; 0 without a screen).
        self.violation: Callable[[Point], float] = lambda p: 0.0

    def correct(self, screen: Screener) -> Correction:
        """Fit how the simulated points depart from ``screen`` (:func:`fit_correction`) and
        predict each point's constraint violation from the corrected screen with it."""
        samples = []
        for p, r in self.done.values():
            estimates = screen(p)
            if r.error is None and estimates is not None:
                simulated = {o: OBJECTIVES[o].sign * v for o, v in r.objectives if o in estimates}
                samples.append((p, estimates, simulated))
        correction = fit_correction(samples)

        def violation(p: Point) -> float:
            estimates = screen(p)
            return 0.0 if estimates is None else _violation(self.spec, correction.apply(p, estimates), correction)

        self.violation = violation
        return correction

    def tell(self, trial: Any, r: StoredPoint) -> None:
        from optuna.trial import TrialState

        if r.error is not None:
            self.study.tell(trial, state=TrialState.FAIL)
            return
        values = dict(r.objectives)
        for i, c in enumerate(self.spec.constraint_list()):
            trial.set_constraint(f"{i}:{c.objective}", c.violation(OBJECTIVES[c.objective].sign * values[c.objective]))
        self.study.tell(trial, [values[o] for o in self.spec.objectives])

    def _pinned(self, point: Point) -> tuple[Any, Point]:
        self.study.enqueue_trial(_trial_params(point, self.axes))
        return self.study.ask(), point

    def propose(self, n: int, phase: str, queue: list[Point]) -> list[tuple[Any, Point]]:
        """Up to ``n`` trials on distinct unevaluated points: the next of ``queue`` (the screen's
        order) in the ``"screen"`` phase, the front's neighbours in the ``"local"`` one, else
        (and when those run out) the sampler's proposals (repeats of evaluated points are told
        their stored result on the way)."""
        from optuna.trial import TrialState

        out: list[tuple[Any, Point]] = []
        if phase == "screen":
            while queue and len(out) < n:
                q = queue.pop(0)
                if q.key not in self.done:
                    out.append(self._pinned(q))
        if phase == "local":
            candidates = _local_candidates(self.spec, self.done, self.rng)
            for q in sorted(candidates, key=lambda q: self.violation(q) > 0.0):  # stable: predicted feasible first
                if len(out) == n:
                    break
                out.append(self._pinned(q))
        repeats = 0
        while len(out) < n:
            taken = self.done.keys() | {p.key for _, p in out}
            if repeats >= RETRIES:
                drawn = _random_unevaluated(self.spec, self.model, set(taken), self.rng)
                if drawn is None:
                    break
                out.append(self._pinned(drawn))
                continue
            trial = self.study.ask()
            p = _point(trial, self.spec, self.axes, self.model)
            if p.key in self.done:
                self.tell(trial, self.done[p.key][1])
                repeats += 1
            elif p.key in taken:  # proposed twice in one round: no result to tell yet
                self.study.tell(trial, state=TrialState.FAIL)
                repeats += 1
            else:
                out.append((trial, p))
                repeats = 0
        return out


def _memo(screen: Screener) -> Screener:
    """``screen`` with its answers kept by point (the search asks for each point many times)."""
    seen: dict[str, Mapping[str, float] | None] = {}

    def cached(p: Point) -> Mapping[str, float] | None:
        if p.key not in seen:
            seen[p.key] = screen(p)
        return seen[p.key]

    return cached


def search_model(
    spec: SweepSpec,
    model: str,
    budget: int,
    evaluate: Evaluate,
    seed: int = 0,
    round_size: int = 2,
    on_round: Callable[[int], None] = lambda n: None,
    local_share: float = LOCAL_SHARE,
    screen: Screener | None = None,
    screen_share: float = SCREEN_SHARE,
) -> list[Point]:
    """Evaluate ``budget`` distinct points of ``model`` chosen by the search (all of them where
    the grid has fewer); returns them in the order evaluated. ``evaluate`` simulates points (and
    stores them) and returns them by key; ``on_round(points)`` is told after each round.
    ``screen`` (a point's cheap estimate, :func:`screen_order`): the first ``screen_share`` of
    the budget goes to the points it ranks best, the sampler's phase shrinks by as much; before
    each of those rounds and of the local search's, the screen is corrected by the points
    simulated so far (:meth:`_Search.correct`) and the unevaluated points re-ranked by it."""
    s = _Search(spec, model, budget, seed)
    budget = min(budget, s.size)
    if screen is not None:
        screen = _memo(screen)
    queue: list[Point] = []
    screen_until = round(screen_share * budget) if screen is not None else 0
    local_from = max(screen_until, budget - round(local_share * budget))
    order: list[Point] = []
    while len(order) < budget:
        done = len(order)
        phase = "screen" if done < screen_until else "local" if done >= local_from else "model"
        end = {"screen": screen_until, "model": local_from, "local": budget}[phase]
        if screen is not None and phase != "model":
            correction = s.correct(screen)
            if phase == "screen":
                queue = [p for p in screen_order(spec, model, screen, s.rng, correction) if p.key not in s.done]
        trials = s.propose(min(round_size, end - done), phase, queue)
        if not trials:
            break
        results = evaluate([p for _, p in trials])
        for trial, p in trials:
            s.done[p.key] = (p, results[p.key])
            s.tell(trial, results[p.key])
            order.append(p)
        on_round(len(trials))
    return order
