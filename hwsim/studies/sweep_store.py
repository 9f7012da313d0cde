"""Where a sweep keeps its evaluated points: ``results.sqlite``, through SQLAlchemy.

One row per point, keyed by the point's canonical key (:attr:`hwsim.studies.sweep.Point.key`),
with every objective the run measured and the error that made it fail, if any. Feasibility is
not stored: it is decided from the constraints each time the outputs are written, so a rerun
with other constraints re-reads the same rows. A rerun skips every key already here, which is
what makes a sweep resume after an interruption (each finished batch is committed at once).
``meta`` holds the schema version; a file of another version is refused rather than misread.

The URL is SQLite's by default; any SQLAlchemy URL works (PostgreSQL for a team sharing one
study), as Optuna's own storage does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Float, Text, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from hwsim.studies.sql import MetaRow, open_engine

__all__ = ["SCHEMA_VERSION", "StoreError", "StoredPoint", "SweepStore"]

#: Bumped when the tables change; a store of another version is refused.
SCHEMA_VERSION = "1"


class StoreError(ValueError):
    """``results.sqlite`` is of another schema version, or its URL cannot be opened (bad input, exit 2)."""


class _Base(DeclarativeBase):
    pass


class _Meta(MetaRow, _Base):
    pass


class _Point(_Base):
    __tablename__ = "points"
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    objectives_json: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    seconds: Mapped[float] = mapped_column(Float)


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """One evaluated point: its key, objective values (name -> value), error, and the seconds
    its simulation took in the worker."""

    key: str
    objectives: tuple[tuple[str, float], ...]
    error: str | None
    seconds: float


class SweepStore:
    """The rows of one sweep's ``results.sqlite`` (or another SQLAlchemy URL)."""

    def __init__(self, url: str) -> None:
        self.engine = open_engine(url, StoreError)
        _Base.metadata.create_all(self.engine)
        with Session(self.engine) as s:
            row = s.get(_Meta, "schema_version")
            if row is None:
                s.add(_Meta(key="schema_version", value=SCHEMA_VERSION))
                s.commit()
            elif row.value != SCHEMA_VERSION:
                raise StoreError(f"{url}: schema version {row.value}, this hwsim reads {SCHEMA_VERSION}")

    @classmethod
    def at(cls, path: Path) -> SweepStore:
        """The SQLite store in file ``path`` (created with its tables if absent)."""
        return cls(f"sqlite:///{Path(path).resolve()}")

    def keys(self) -> set[str]:
        """The keys of the points already evaluated."""
        with Session(self.engine) as s:
            return set(s.scalars(select(_Point.key)))

    def add(self, points: Iterable[StoredPoint]) -> None:
        """Store points (replacing any with the same key) in one transaction."""
        with Session(self.engine) as s:
            for p in points:
                s.merge(
                    _Point(key=p.key, objectives_json=json.dumps(dict(p.objectives)), error=p.error, seconds=p.seconds)
                )
            s.commit()

    def get(self, keys: Iterable[str]) -> dict[str, StoredPoint]:
        """The stored points among ``keys`` (key -> point)."""
        wanted = set(keys)
        with Session(self.engine) as s:
            rows = s.scalars(select(_Point)).all()
            return {r.key: _stored(r) for r in rows if r.key in wanted}

    def close(self) -> None:
        self.engine.dispose()


def _stored(row: _Point) -> StoredPoint:
    values = json.loads(row.objectives_json)
    return StoredPoint(row.key, tuple((str(k), float(v)) for k, v in values.items()), row.error, row.seconds)
