"""Stand-ins for the pieces of issue 16 built on other branches (the mapping knobs, the
experience database, features/prior/transfer), installed into
:mod:`hwsim.studies.optimize.seams` only where the real module is missing. Once the branches
are merged :func:`install` installs nothing and the tests run on the real pieces."""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass, field, fields, replace
from typing import Any

import pytest

from hwsim.studies.optimize import seams


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


class FakeDbError(ValueError):
    pass


@dataclass(frozen=True)
class FakeTrial:
    chip_fingerprint: str
    chip_name: str
    chip_features: dict[str, float]
    model_sha256: str
    model_name: str
    graph_features: dict[str, float]
    search_id: str
    stage: str
    candidate_key: str
    transforms: tuple[str, ...]
    signatures: dict[str, dict[str, object]]
    op_features: dict[str, dict[str, float]]
    objective: float
    latency_ms: float
    energy_mj: float
    peak_memory_bytes: int
    parent_latency_ms: float
    feasible: bool
    error: str | None = None
    measured_latency_ms: float | None = None
    accuracy: float | None = None
    hwsim_version: str = ""
    created_at: str = ""
    id: int | None = None


#: url -> rows: a fake database lives as long as the test process.
STORES: dict[str, list[FakeTrial]] = {}


@dataclass
class FakeDB:
    url: str
    rows: list[FakeTrial] = field(default_factory=list)

    def add(self, t: FakeTrial) -> int:
        for r in self.rows:
            if (r.chip_fingerprint, r.model_sha256, r.candidate_key) == (t.chip_fingerprint, t.model_sha256, t.candidate_key):
                assert r.id is not None
                return r.id
        self.rows.append(replace(t, id=len(self.rows) + 1))
        return len(self.rows)

    def trials(self, **query: Any) -> list[FakeTrial]:
        names = {f.name for f in fields(FakeTrial)}
        return [r for r in self.rows if all(v is None or getattr(r, k) == v for k, v in query.items() if k in names)]

    def done_keys(self, chip_fingerprint: str, model_sha256: str) -> dict[str, FakeTrial]:
        return {r.candidate_key: r for r in self.trials(chip_fingerprint=chip_fingerprint, model_sha256=model_sha256)}

    def set_measured(self, trial_id: int, ms: float) -> None:
        self.rows[trial_id - 1] = replace(self.rows[trial_id - 1], measured_latency_ms=ms)

    def chips(self) -> list[tuple[str, str, dict[str, float], int]]:
        return sorted({(r.chip_fingerprint, r.chip_name): 0 for r in self.rows})  # type: ignore[return-value]

    def close(self) -> None:
        pass


def _open(url: str | None) -> FakeDB:
    key = str(url)
    if "unreachable" in key or key.endswith("newer.sqlite"):
        raise FakeDbError(f"{url}: cannot open the experience database")
    return FakeDB(key, STORES.setdefault(key, []))


@dataclass(frozen=True)
class FakeMapping:
    tile: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {} if self.tile is None else {"tile": self.tile}

    def is_default(self) -> bool:
        return self.tile is None


class FakePrior:
    def rank(self, op_feats: Any, chip_feats: Any, candidates: Any) -> list[Any]:
        return list(candidates)


def install(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Install the stand-ins for the missing pieces; returns their names (empty after merge)."""
    done = []
    if _missing("hwsim.studies.optimize.db"):
        monkeypatch.setattr(seams, "open_db", _open)
        monkeypatch.setattr(seams, "make_trial", lambda **kw: FakeTrial(**kw))
        monkeypatch.setattr(seams, "db_errors", lambda: (FakeDbError,))
        done.append("db")
    if _missing("hwsim.studies.optimize.features") or _missing("hwsim.studies.optimize.prior"):
        for name in ("chip_features", "graph_features"):
            monkeypatch.setattr(seams, name, lambda x: {"n": 1.0})
        monkeypatch.setattr(seams, "op_features", lambda op, table: {"n": 1.0})
        monkeypatch.setattr(seams, "fit_prior", lambda trials: FakePrior())
        done.append("prior")
    from hwsim.pipeline import run_graph

    if _missing("cost_models.mapping") or "mapping" not in inspect.signature(run_graph).parameters:
        monkeypatch.setattr(seams, "make_mapping", lambda s: FakeMapping(**s))  # type: ignore[arg-type]
        monkeypatch.setattr(seams, "knob_choices", lambda op, chip, table: {"tile": ("double", "single")})
        monkeypatch.setattr(seams, "legality", lambda op, chip, table, m: None)
        monkeypatch.setattr(seams, "simulate", lambda g, c, p, m: run_graph(g, c, p))
        done.append("mapping")
    return done
