"""The files a sweep writes from its stored points: ``points.csv``, ``front.csv``, ``pareto.png``
and ``report.html``.

Rows follow the points' order (the grid's, or the search's), never the order workers finished
in, so the same sweep on a process pool or on Dask writes the same files. Objective values
are what a user reads (accuracy as a fraction, not negated); the front and its hypervolume are
computed on the minimized values over the sweep's ``objectives``, per model, among the feasible
points (:mod:`hwsim.studies.sweep_front`).
"""

from __future__ import annotations

import base64
import csv
import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import numpy as np

from hwsim.studies.sweep import OBJECTIVES, Point, SweepSpec, available_objectives, feasibility
from hwsim.studies.sweep_front import REFERENCE, box_of, normalized_hypervolume, pareto_mask
from hwsim.studies.sweep_store import StoredPoint

__all__ = ["Row", "SweepTables", "sweep_tables", "write_outputs"]


@dataclass(frozen=True, slots=True)
class Row:
    """One evaluated point as the outputs show it."""

    point: Point
    values: tuple[tuple[str, float], ...]  # user-facing sign
    feasible: bool
    reason: str

    @property
    def model(self) -> str:
        return Path(self.point.model).stem


@dataclass(frozen=True, slots=True)
class SweepTables:
    """Every row, the front per model and its normalized hypervolume (see sweep_front)."""

    rows: tuple[Row, ...]
    fronts: tuple[tuple[str, tuple[Row, ...], float], ...]  # (model, front rows, hypervolume)
    objectives: tuple[str, ...]
    grid_keys: tuple[str, ...]


def _minimized(row: Row, objectives: Sequence[str]) -> list[float]:
    v = dict(row.values)
    return [OBJECTIVES[o].sign * v[o] for o in objectives]


def sweep_tables(spec: SweepSpec, points: Sequence[Point], stored: dict[str, StoredPoint]) -> SweepTables:
    """The rows of ``points`` (those stored) with feasibility, and the front of each model."""
    constraints = spec.constraint_list()
    rows = []
    for p in points:
        s = stored.get(p.key)
        if s is None:
            continue
        ok, why = feasibility(s, constraints)
        values = tuple((name, OBJECTIVES[name].sign * v) for name, v in s.objectives)
        rows.append(Row(p, values, ok, why))
    fronts: list[tuple[str, tuple[Row, ...], float]] = []
    for model in dict.fromkeys(r.model for r in rows):
        feasible = [r for r in rows if r.model == model and r.feasible]
        if not feasible:
            fronts.append((model, (), 0.0))
            continue
        v = np.array([_minimized(r, spec.objectives) for r in feasible])
        mask = pareto_mask(v)
        front = tuple(r for r, keep in zip(feasible, mask, strict=True) if keep)
        fronts.append((model, front, normalized_hypervolume(v[mask], box_of(v))))
    keys = tuple(dict.fromkeys(k for p in points for k, _ in p.params))
    return SweepTables(tuple(rows), tuple(fronts), spec.objectives, keys)


def _csv(tables: SweepTables, rows: Sequence[Row], with_reason: bool) -> str:
    objectives = available_objectives()
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    head = ["model", "chip", *tables.grid_keys, *objectives]
    w.writerow(head + (["feasible", "reason"] if with_reason else []))
    for r in rows:
        values = dict(r.values)
        params = dict(r.point.params)
        line = [r.model, r.point.chip, *(params.get(k, "") for k in tables.grid_keys)]
        line += [repr(values[o]) if o in values else "" for o in objectives]
        w.writerow(line + ([r.feasible, r.reason] if with_reason else []))
    return out.getvalue()


def _pareto_png(tables: SweepTables) -> bytes:
    """One row of panels per model: every pair of objectives (feasible points grey, front red),
    and a 3-D view where there are three objectives."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    objs = tables.objectives
    pairs = list(itertools.combinations(range(len(objs)), 2)) or [(0, 0)]
    cols = len(pairs) + (1 if len(objs) == 3 else 0)
    models = tables.fronts or (("(no points)", (), 0.0),)
    fig = Figure(figsize=(4.2 * cols, 3.6 * len(models)), layout="constrained")
    FigureCanvasAgg(fig)
    for m, (model, front, _hv) in enumerate(models):
        feasible = [r for r in tables.rows if r.model == model and r.feasible]
        all_v = np.array([[dict(r.values)[o] for o in objs] for r in feasible]).reshape(-1, len(objs))
        front_v = np.array([[dict(r.values)[o] for o in objs] for r in front]).reshape(-1, len(objs))
        for c, (i, j) in enumerate(pairs):
            ax = fig.add_subplot(len(models), cols, m * cols + c + 1)
            ax.scatter(all_v[:, i], all_v[:, j], s=12, c="#bbbbbb", label="feasible")
            ax.scatter(front_v[:, i], front_v[:, j], s=22, c="#d62728", label="front")
            ax.set_xlabel(objs[i])
            ax.set_ylabel(objs[j] if i != j else "")
            ax.set_title(model, fontsize=10)
        if len(objs) == 3:
            ax3 = fig.add_subplot(len(models), cols, m * cols + cols, projection="3d")
            ax3.scatter(all_v[:, 0], all_v[:, 1], all_v[:, 2], s=8, c="#bbbbbb")
            ax3.scatter(front_v[:, 0], front_v[:, 1], front_v[:, 2], s=18, c="#d62728")
            ax3.set_xlabel(objs[0])
            ax3.set_ylabel(objs[1])
            ax3.set_zlabel(objs[2])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = "".join(f"<th>{escape(str(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _html(tables: SweepTables, spec_text: str, png: bytes) -> str:
    feasible = sum(r.feasible for r in tables.rows)
    parts = [
        "<!doctype html><meta charset=utf-8><title>hwsim sweep</title>",
        (
            "<style>body{font:14px system-ui,sans-serif;margin:1.5em}td,th{padding:2px 8px;"
            "border-bottom:1px solid #eee;text-align:left}th{background:#f5f5f5}img{max-width:100%}</style>"
        ),
        (
            f"<h1>hwsim sweep</h1><p>{len(tables.rows)} points evaluated, {feasible} feasible. Objectives "
            f"(minimized): {escape(', '.join(tables.objectives))}.</p>"
        ),
        (
            f"<p>Hypervolume: of the front of each model, with every objective scaled to [0, 1] between "
            f"the best and the worst feasible point of that model, against the reference point "
            f"{REFERENCE} in every objective, as a fraction of the reference box ({REFERENCE}^k).</p>"
        ),
    ]
    for model, front, hv in tables.fronts:
        head = ["chip", *tables.grid_keys, *tables.objectives]
        rows = [
            [r.point.chip, *(dict(r.point.params).get(k, "") for k in tables.grid_keys),
             *(f"{dict(r.values)[o]:.6g}" for o in tables.objectives)]
            for r in front
        ]  # fmt: skip
        parts.append(f"<h2>{escape(model)}: {len(front)} points on the front, hypervolume {hv:.4f}</h2>")
        parts.append(_table(head, rows) if rows else "<p>No feasible point.</p>")
    b64 = base64.b64encode(png).decode("ascii")
    parts.append(f'<h2>Pareto projections</h2><img alt="pareto.png" src="data:image/png;base64,{b64}">')
    parts.append(f"<h2>Sweep file</h2><pre>{escape(spec_text)}</pre>")
    return "\n".join(parts) + "\n"


def write_outputs(tables: SweepTables, out: Path, spec_text: str) -> list[Path]:
    """Write the four files into ``out`` (each written beside its name, then renamed)."""
    png = _pareto_png(tables)
    files = {
        "points.csv": _csv(tables, tables.rows, with_reason=True).encode(),
        "front.csv": _csv(tables, [r for _, f, _ in tables.fronts for r in f], with_reason=False).encode(),
        "pareto.png": png,
        "report.html": _html(tables, spec_text, png).encode(),
    }
    written = []
    for name, data in files.items():
        tmp = out / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(out / name)
        written.append(out / name)
    return written
