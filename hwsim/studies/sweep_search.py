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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hwsim.studies.sweep import OBJECTIVES, GridValue, Point, SweepSpec, feasibility, grid_points
from hwsim.studies.sweep_front import box_of, normalized_hypervolume, pareto_mask
from hwsim.studies.sweep_store import StoredPoint

__all__ = ["LOCAL_SHARE", "RETRIES", "SCREEN_SHARE", "Screener", "neighbours", "screen_order", "search_model", "startup_trials"]

Evaluate = Callable[[Sequence[Point]], dict[str, StoredPoint]]
#: A point's cheap estimate of the screened objectives (None: it cannot estimate this point).
Screener = Callable[[Point], Sequence[float] | None]

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


def screen_order(
    spec: SweepSpec, model: str, screen: Screener, rng: random.Random
) -> list[Point]:
    """Every grid point of ``model`` in the order the screen ranks them: by non-dominated rank
    of their screened objectives (rank 0: the screen's own front, then the front of the rest,
    ...), in random order within a rank (the screen gives every policy of a configuration the
    same values, so they tie). A point the screen cannot estimate comes last.

    >>> spec = SweepSpec(models=("m.onnx",), chips=("rk3588",), objectives=("latency_ms", "energy_mj"),
    ...                  grid={"npu.cores": (1, 2, 3)})
    >>> cost = {1: (3.0, 1.0), 2: (2.0, 2.0), 3: (2.5, 2.5)}  # 3 cores: dominated by 2
    >>> [p.params for p in screen_order(spec, "m.onnx", lambda p: cost[int(p.get("npu.cores", 0))], random.Random(0))][-1]
    (('npu.cores', 3),)
    """
    points = [p for p in grid_points(spec) if p.model == model]
    rng.shuffle(points)
    values = [screen(p) for p in points]
    known = [i for i, v in enumerate(values) if v is not None]
    rank = dict.fromkeys(range(len(points)), math.inf)
    estimates = np.array([values[i] for i in known], dtype=float)
    left, level = np.arange(len(known)), 0  # indices into known, not ranked yet
    while len(left):
        front = pareto_mask(estimates[left])
        rank.update((known[j], level) for j in left[front])
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
            for q in _local_candidates(self.spec, self.done, self.rng):
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
    the budget goes to the points it ranks best, the sampler's phase shrinks by as much."""
    s = _Search(spec, model, budget, seed)
    budget = min(budget, s.size)
    queue = screen_order(spec, model, screen, s.rng) if screen is not None else []
    screen_until = round(screen_share * budget) if screen is not None else 0
    local_from = max(screen_until, budget - round(local_share * budget))
    order: list[Point] = []
    while len(order) < budget:
        done = len(order)
        phase = "screen" if done < screen_until else "local" if done >= local_from else "model"
        end = {"screen": screen_until, "model": local_from, "local": budget}[phase]
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
