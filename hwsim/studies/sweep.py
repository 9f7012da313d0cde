"""Pareto sweeps: every model x chip x grid point simulated, through any ``concurrent.futures`` engine.

The sweep file (:class:`SweepSpec`, read by :func:`load_sweep`) names the models, the chips,
the grid (any chip field in the ``--set`` grammar, plus ``precision``, ``prune`` and
``policy``), the objectives (all minimized) and the constraints. :func:`grid_points` expands
it; :func:`evaluate_batch` simulates a batch of :class:`Point` s in a worker and reads every
objective of :data:`OBJECTIVES` from the run's :class:`~hwsim.report.summary.Summary`;
:func:`run_points` sends the batches to an ``Executor`` (a process pool, or a Dask
``Client.get_executor()``: the same code) and stores each finished batch.

Batching: a task costs the engine a fixed overhead (a process pool's pickling and pipe, Dask's
scheduler round trip, 0.2-1 ms). :func:`batch_size` takes the measured time of one point and the
measured overhead of one task and puts enough points in a task that the overhead stays under
1% of the work (:data:`OVERHEAD_SHARE`), with at most as many points as keep every worker busy.

>>> spec = SweepSpec(models=("m.onnx",), chips=("rk3588",), grid={"precision": ("int8", "fp16")},
...                  objectives=("latency_ms",), constraints={"latency_ms": "<= 30"})
>>> [p.params for p in grid_points(spec)]
[(('precision', 'int8'),), (('precision', 'fp16'),)]
>>> parse_constraint("latency_ms", "<= 30")
Constraint(objective='latency_ms', op='<=', bound=30.0)
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph_ir.files import field_path, read_yaml_mapping
from hwsim.analysis.memory import DRAM
from hwsim.studies.sweep_store import StoredPoint, SweepStore

if TYPE_CHECKING:
    from chips.schema import Chip
    from graph_ir.ir import ModelGraph
    from hwsim.report.summary import Summary

__all__ = [
    "OBJECTIVES",
    "OVERHEAD_SHARE",
    "Constraint",
    "Objective",
    "ObjectiveUnavailable",
    "Point",
    "SweepError",
    "SweepSpec",
    "batch_size",
    "evaluate_batch",
    "feasibility",
    "grid_points",
    "load_sweep",
    "open_executor",
    "parse_constraint",
    "run_points",
    "task_overhead_s",
]

GridValue = str | int | float | bool

#: Grid keys that are not chip fields.
SPECIAL_KEYS = ("precision", "prune", "policy")

#: The largest share of a task's time the engine's per-task overhead may take (1%).
OVERHEAD_SHARE = 0.01

MIB = 1 << 20
#: Most worker processes a pool on this machine may have, per CPU: the evaluations are CPU-bound,
#: so more only queue, and a fork pool starts all of them at once (--workers 10^6 forked until
#: the machine ran out of processes).
WORKERS_PER_CPU = 4


class SweepError(ValueError):
    """Bad sweep input: one line naming the file and the key, or the Dask address (exit 2)."""


class ObjectiveUnavailable(SweepError):
    """An objective this hwsim's summary does not carry (yet)."""


# -- objectives ---------------------------------------------------------------------------------


def _peak_memory_mib(summary: Summary, place: str) -> float:
    """Peak bytes of memory place ``place`` (a domain, or ``DRAM``: the physical DRAM all dram
    domains share) from the summary's ``peak_memory`` (:mod:`hwsim.analysis.memory`), in MiB."""
    peaks = {p.place: p for p in summary.peak_memory}
    if place not in peaks:
        raise ObjectiveUnavailable(f"peak_memory has no place {place!r} (places: {', '.join(peaks)})")
    return peaks[place].peak_bytes / MIB


def _peak_power_w(summary: Summary) -> float:
    """The chip's peak power in W (``power`` of the summary, :func:`hwsim.analysis.energy.run_power`)."""
    if summary.power is None:
        raise ObjectiveUnavailable("objective not available: the run has no power figures")
    return summary.power.chip.peak_w


def _accuracy(summary: Summary) -> float:
    value = getattr(summary, "accuracy", None)
    if value is None:
        raise ObjectiveUnavailable("objective not available: the model has no accuracy data")
    return -float(value)  # maximized, so its negative is minimized


@dataclass(frozen=True, slots=True)
class Objective:
    """One objective: how to read it from a run's summary (as a value to minimize) and, for a
    maximized one, the sign that turns it back into what a user reads (-1)."""

    name: str
    read: Callable[[Summary], float]
    #: The summary field it needs (None: always present); without it, it is unavailable.
    needs: str | None = None
    sign: float = 1.0
    description: str = ""

    def available(self) -> bool:
        from hwsim.report.summary import Summary

        return self.needs is None or self.needs in Summary.__dataclass_fields__


#: Every objective a sweep may minimize or constrain, by name.
OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("latency_ms", lambda s: s.latency_ms, description="end-to-end latency of one inference"),
        Objective("energy_mj", lambda s: s.energy_mj, description="energy of one inference"),
        Objective("peak_dram_mib", lambda s: _peak_memory_mib(s, DRAM), "peak_memory",
                  description="peak of the physical DRAM in use (all dram domains)"),
        Objective("peak_power_w", _peak_power_w, "power", description="peak chip power"),
        Objective("accuracy", _accuracy, "accuracy", sign=-1.0, description="model accuracy (maximized)"),
    )
}  # fmt: skip


def available_objectives() -> list[str]:
    """The objectives every point is measured in (those this hwsim's summary carries)."""
    return [name for name, o in OBJECTIVES.items() if o.available()]


# -- constraints --------------------------------------------------------------------------------

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Constraint:
    """``objective op bound``, e.g. latency_ms <= 30."""

    objective: str
    op: str
    bound: float

    def holds(self, value: float) -> bool:
        return _OPS[self.op](value, self.bound)

    def violation(self, value: float) -> float:
        """How far ``value`` is outside (<= 0: it holds), as Optuna's constraints want."""
        return value - self.bound if self.op in ("<=", "<") else self.bound - value


def parse_constraint(objective: str, text: str | float) -> Constraint:
    """Read ``"<= 30"`` for ``objective``.

    Raises
    ------
    SweepError
        For another operator or a bound that is not a finite number.
    """
    s = str(text).strip()
    op = next((o for o in ("<=", ">=", "<", ">") if s.startswith(o)), None)
    try:
        bound = float(s[len(op) :]) if op else math.nan
    except ValueError:
        bound = math.nan
    if op is None or not math.isfinite(bound):
        raise SweepError(
            f"constraints.{objective}: {text!r}: expected a quoted condition: '<= N', '>= N', '< N' or '> N'"
        )
    return Constraint(objective, op, bound)


# -- the sweep file -----------------------------------------------------------------------------


class SweepSpec(BaseModel):
    """The sweep file: models, chips, grid, objectives (minimized) and constraints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    models: tuple[str, ...] = Field(min_length=1)
    chips: tuple[str, ...] = Field(min_length=1)
    grid: dict[str, tuple[GridValue, ...]]
    objectives: tuple[str, ...] = Field(min_length=1)
    constraints: dict[str, str | int | float] = Field(default_factory=dict)  # a bare number: parse_constraint says why not

    def constraint_list(self) -> list[Constraint]:
        return [parse_constraint(k, v) for k, v in self.constraints.items()]



def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file; relative model and chip paths are read from the file's folder
    first, else from the current one.

    Raises
    ------
    SweepError
        One line: the file, the key and what is wrong with it.
    """
    path = Path(path)
    data = read_yaml_mapping(path, SweepError, "models, chips, grid, objectives")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        if err["type"] == "extra_forbidden":
            msg += f" (fields: {', '.join(SweepSpec.model_fields)})"
        raise SweepError(f"{path}: {field_path(err['loc'])}: {msg}") from None
    spec = spec.model_copy(update={"models": tuple(_resolve(path, m) for m in spec.models)})
    try:
        check_spec(spec)
    except SweepError as exc:
        raise SweepError(f"{path}: {exc}") from None
    return spec


def _resolve(sweep_file: Path, ref: str) -> str:
    beside = sweep_file.parent / ref
    return str(beside) if not Path(ref).is_absolute() and beside.exists() else ref


def check_spec(spec: SweepSpec) -> None:
    """Everything about the spec that can be known before simulating (messages name the key)."""
    from chips.schema import ChipError

    for i, m in enumerate(spec.models):
        if not Path(m).is_file():
            raise SweepError(f"models[{i}]: {m}: file not found")
    for i, c in enumerate(spec.chips):
        try:
            _chip(c, ())
        except ChipError as exc:
            raise SweepError(f"chips[{i}]: {exc}") from None
    if not spec.grid:
        raise SweepError("grid: empty (give values for precision, prune, policy or a chip field)")
    for key, values in spec.grid.items():
        if not values:
            raise SweepError(f"grid.{key}: no values")
        _check_grid_key(spec, key, values)
    for i, name in enumerate(spec.objectives):
        _check_objective(f"objectives[{i}]", name)
    if len(set(spec.objectives)) != len(spec.objectives):
        raise SweepError("objectives: an objective is named twice")
    for name in spec.constraints:
        _check_objective(f"constraints.{name}", name)
    spec.constraint_list()
    _check_models(spec)


def _check_models(spec: SweepSpec) -> None:
    """Import every model at every ``prune`` value of the grid (cached: the points reuse them), so
    that a model the simulator cannot read is refused before anything is simulated or written."""
    from graph_ir.ir import ModelError

    prunes = sorted({0.0, *(float(v) for v in spec.grid.get("prune", ()))})  # 0 first: the file itself
    for i, m in enumerate(spec.models):
        for prune in prunes:
            try:
                _graph(m, prune)
            except ModelError as exc:
                at = f" (prune {prune:g})" if prune else ""
                raise SweepError(f"models[{i}]{at}: {_without_flags(exc)}") from None


def _without_flags(exc: Exception) -> str:
    """A model's refusal as a sweep gives it: a sweep file has no ``--input-shape`` or
    ``--assume``, so advice to give one (:class:`graph_ir.ir.FlagAdvice`) becomes advice to make
    the model itself static.

    >>> from graph_ir.ir import FlagAdvice
    >>> _without_flags(FlagAdvice("m.onnx: input 'x' has a dynamic shape [N, 4]", "--input-shape", "pin it"))
    "m.onnx: input 'x' has a dynamic shape [N, 4]; a sweep file cannot pin shapes or give --assume counts: make them static in the model file (for inputs: python -m onnxruntime.tools.make_dynamic_shape_fixed)"
    """
    from graph_ir.ir import FlagAdvice

    if not isinstance(exc, FlagAdvice):
        return str(exc)
    return (
        f"{exc.problem}; a sweep file cannot pin shapes or give --assume counts: make them static in the model file "
        "(for inputs: python -m onnxruntime.tools.make_dynamic_shape_fixed)"
    )


def _check_objective(key: str, name: str) -> None:
    if name not in OBJECTIVES:
        raise SweepError(f"{key}: unknown objective {name!r} (objectives: {', '.join(OBJECTIVES)})")
    o = OBJECTIVES[name]
    if not o.available():
        raise SweepError(f"{key}: objective {name!r} not available in this hwsim (its summary has no {o.needs})")


def _check_grid_key(spec: SweepSpec, key: str, values: Sequence[GridValue]) -> None:
    from chips.schema import ChipError
    from cost_models.table import PRECISIONS
    from scheduler import POLICIES

    choices = {"precision": PRECISIONS, "policy": tuple(sorted(POLICIES))}
    if key in choices:
        bad = [v for v in values if v not in choices[key]]
        if bad:
            raise SweepError(f"grid.{key}: {bad[0]!r} is not one of {', '.join(choices[key])}")
        return
    if key == "prune":
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1]
        if bad:
            raise SweepError(f"grid.prune: {bad[0]!r}: expected fractions in [0, 1)")
        return
    for chip in spec.chips:
        for v in values:
            try:
                _chip(chip, (_assignment(key, v),))
            except ChipError as exc:
                raise SweepError(f"grid.{key}: {exc}") from None


def _assignment(key: str, value: GridValue) -> str:
    """A grid value as a ``--set`` assignment (the value written as YAML reads it back)."""
    return f"{key}={json.dumps(value)}"


# -- points -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Point:
    """One configuration: a model, a chip and one value per grid key (in the grid's order)."""

    model: str
    chip: str
    params: tuple[tuple[str, GridValue], ...]

    @property
    def key(self) -> str:
        """The canonical key a point is stored under (what a rerun recognizes)."""
        return json.dumps([self.model, self.chip, [list(p) for p in self.params]])

    def get(self, name: str, default: GridValue) -> GridValue:
        return next((v for k, v in self.params if k == name), default)

    @property
    def chip_sets(self) -> tuple[str, ...]:
        return tuple(_assignment(k, v) for k, v in self.params if k not in SPECIAL_KEYS)


def grid_points(spec: SweepSpec) -> list[Point]:
    """Every model x chip x grid combination, models outermost, the grid's last key fastest."""
    keys = list(spec.grid)
    combos = list(itertools.product(*(spec.grid[k] for k in keys)))
    return [
        Point(m, c, tuple(zip(keys, combo, strict=True))) for m in spec.models for c in spec.chips for combo in combos
    ]


@lru_cache(maxsize=64)
def _chip(ref: str, sets: tuple[str, ...]) -> Chip:
    """The chip ``ref`` (a bundled name or a YAML path) with grid values as ``--set`` assignments."""
    from chips.schema import load_chip
    from chips.variants import override

    chip = load_chip(ref)
    return override(chip, sets, "grid") if sets else chip


@lru_cache(maxsize=32)
def _graph(model: str, prune: float) -> ModelGraph:
    import onnx

    from graph_ir.onnx_import import from_model_proto, load_onnx
    from graph_ir.prune import prune_channels

    if prune == 0:
        return load_onnx(model)
    proto = onnx.load(model, load_external_data=False)
    return from_model_proto(prune_channels(proto, prune).model, source=model, name=Path(model).stem)


def evaluate(point: Point) -> StoredPoint:
    """Simulate one point and read every available objective; a point the chip cannot run (an
    op no unit takes, a chip variant that is not valid) is stored with its error. ``seconds``
    is the simulation's time (loading the chip and the pruned model is cached per worker)."""
    from chips.schema import ChipError
    from cost_models.table import UnplaceableError
    from hwsim.pipeline import run_graph
    from hwsim.report.summary import build_summary
    from scheduler import DEFAULT_POLICY

    start = time.perf_counter()
    try:
        chip = _chip(point.chip, point.chip_sets)
        graph = _graph(point.model, float(point.get("prune", 0.0)))
        start = time.perf_counter()  # the simulation's time, not the (cached) loading
        result = run_graph(graph, chip, str(point.get("precision", "int8")), str(point.get("policy", DEFAULT_POLICY)))
    except (UnplaceableError, ChipError) as exc:
        return StoredPoint(point.key, (), str(exc), time.perf_counter() - start)
    summary = build_summary(result)
    values = tuple((name, OBJECTIVES[name].read(summary)) for name in available_objectives())
    return StoredPoint(point.key, values, None, time.perf_counter() - start)


def evaluate_batch(points: Sequence[Point]) -> list[StoredPoint]:
    """Evaluate points one after the other (one engine task)."""
    return [evaluate(p) for p in points]


def feasibility(stored: StoredPoint, constraints: Sequence[Constraint]) -> tuple[bool, str]:
    """Whether a point is feasible, and why not (``""`` when it is)."""
    if stored.error is not None:
        return False, f"not simulated: {stored.error}"
    values = dict(stored.objectives)
    broken = [
        f"{c.objective} {OBJECTIVES[c.objective].sign * values[c.objective]:g} breaks {c.op} {c.bound:g}"
        for c in constraints
        if not c.holds(OBJECTIVES[c.objective].sign * values[c.objective])
    ]
    return not broken, "; ".join(broken)


# -- engines and batches ------------------------------------------------------------------------


def _noop() -> None:
    return None


def task_overhead_s(executor: Executor, tasks: int = 16) -> float:
    """The engine's cost of one task: the mean round trip of ``tasks`` empty ones, one at a time."""
    executor.submit(_noop).result()  # warm: workers started, code imported
    start = time.perf_counter()
    for _ in range(tasks):
        executor.submit(_noop).result()
    return (time.perf_counter() - start) / tasks


def batch_size(point_s: float, overhead_s: float, points: int, workers: int) -> int:
    """Points per task so that the overhead is at most :data:`OVERHEAD_SHARE` of the work,
    capped so that every worker still gets at least two tasks.

    >>> batch_size(point_s=0.05, overhead_s=0.001, points=1000, workers=2)  # 0.001 / (0.01 * 0.05)
    2
    >>> batch_size(point_s=0.001, overhead_s=0.001, points=40, workers=2)  # 100 wanted, 10 allowed
    10
    """
    wanted = math.ceil(overhead_s / (OVERHEAD_SHARE * max(point_s, 1e-9)))
    cap = max(1, math.ceil(points / (2 * max(workers, 1))))
    return max(1, min(wanted, cap))


def _batches(points: Sequence[Point], size: int) -> Iterator[list[Point]]:
    for i in range(0, len(points), size):
        yield list(points[i : i + size])


def run_points(
    executor: Executor,
    points: Sequence[Point],
    store: SweepStore,
    size: int,
    on_done: Callable[[int], None] = lambda n: None,
) -> None:
    """Evaluate ``points`` in batches of ``size`` on ``executor``; each finished batch is stored
    at once (an interrupted sweep resumes from there) and reported to ``on_done(count)``."""
    futures: list[Future[list[StoredPoint]]] = [
        executor.submit(evaluate_batch, batch) for batch in _batches(points, size)
    ]
    for fut in as_completed(futures):
        done = fut.result()
        store.add(done)
        on_done(len(done))


def describe(spec: SweepSpec) -> dict[str, Any]:
    """The spec as plain JSON (for the report)."""
    return json.loads(spec.model_dump_json())


@contextmanager
def open_executor(workers: int, dask: str | None, connect_timeout_s: float = 3.0) -> Iterator[Executor]:
    """The engine points are evaluated on: a process pool of ``workers`` by default; with
    ``dask="local"`` a Dask ``LocalCluster`` of ``workers`` single-threaded processes; with a
    scheduler address (``tcp://HOST:PORT``) that cluster. Either way a
    ``concurrent.futures.Executor`` (Dask's ``Client.get_executor()``), closed on exit.

    Raises
    ------
    SweepError
        When the scheduler cannot be reached within ``connect_timeout_s`` (naming the address),
        or ``workers`` on this machine are over :data:`WORKERS_PER_CPU` per CPU.
    """
    cpus = os.cpu_count() or 1
    if dask in (None, "local") and workers > WORKERS_PER_CPU * cpus:
        raise SweepError(
            f"--workers {workers}: over {WORKERS_PER_CPU * cpus} processes ({WORKERS_PER_CPU} for each of this "
            f"machine's {cpus} CPUs), where each only queues for a CPU"
        )
    if dask is None:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield pool
        return
    from distributed import Client, LocalCluster

    if dask == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        with cluster, Client(cluster) as client:
            yield client.get_executor()
        return
    try:
        client = Client(dask, timeout=f"{connect_timeout_s}s")
    except (OSError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SweepError(f"--dask {dask}: cannot reach a Dask scheduler ({first})") from None
    with client:
        yield client.get_executor()
