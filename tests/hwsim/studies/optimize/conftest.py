"""Fixtures of the experience database's tests: the databases to test on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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
