"""Fixtures of the optimize tests: the databases to test on, a trial builder and the mapping layer."""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cost_models.mapping
from chips import Chip
from hwsim.report.provenance import chip_sha256
from hwsim.studies.optimize.db import ExperienceDB, Trial
from hwsim.studies.optimize.features import chip_features
from tests.hwsim.studies.optimize.builders import POSTGRES_ENV, POSTGRES_SKIP, drop_tables


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The test PostgreSQL database, emptied before and after the test."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(POSTGRES_SKIP)
    pytest.importorskip("psycopg", reason=f"{POSTGRES_ENV} is set but psycopg is not installed")
    drop_tables(url)
    yield url
    drop_tables(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each backend in turn: a fresh SQLite file, then the test PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'experience.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def mapping_module() -> types.ModuleType:
    """``cost_models.mapping`` (a fixture so the transfer tests read as they did)."""
    return cost_models.mapping


TrialFactory = Callable[..., Trial]


def build_trial(chip: Chip, signatures: dict[str, dict[str, object]], **kw: Any) -> Trial:
    """A trial of ``chip`` with these signatures; ``kw`` overrides any field (``objective``
    defaults to ``latency_ms``)."""
    base: dict[str, Any] = {
        "chip_fingerprint": chip_sha256(chip), "chip_name": chip.name, "chip_features": chip_features(chip),
        "model_sha256": "m" * 64, "model_name": "model", "graph_features": {}, "search_id": "s",
        "stage": "kernel", "candidate_key": repr(sorted(signatures.items())) + repr(sorted(kw.items())),
        "transforms": (), "signatures": signatures, "op_features": {}, "latency_ms": 1.0, "energy_mj": 1.0,
        "peak_memory_bytes": 0, "parent_latency_ms": 1.0, "feasible": True,
    }  # fmt: skip
    base |= kw
    base.setdefault("objective", base["latency_ms"])
    return Trial(**base)


@pytest.fixture
def make_trial() -> TrialFactory:
    """Build a trial of ``chip``: ``make_trial(chip, signatures, latency_ms=..., ...)``."""
    return build_trial


@pytest.fixture
def experience_db(tmp_path: Path) -> Iterator[ExperienceDB]:
    """An empty SQLite experience database."""
    db = ExperienceDB.open(tmp_path / "experience.sqlite")
    yield db
    db.close()
