"""The experience database: every trial of every ``hwsim optimize`` search, through SQLAlchemy.

One row per trial (:class:`Trial`), unique per (chip fingerprint, model sha256, candidate key):
a search skips the candidates already there, which is what makes it resume, and one chip's
results are never read as another's. Each trial is committed in its own transaction, so a search
killed mid-write leaves every earlier trial readable and the file sound.

SQLite (``~/.cache/hwsim/experience.sqlite`` by default, see :func:`default_db_url`) runs in
write-ahead-log mode with a busy timeout on every connection: parallel worker processes may add
trials at once. Any SQLAlchemy URL works, a PostgreSQL server for a team
(``postgresql://user@host/db``, driver from ``pip install "hwsim[postgres]"``). JSON fields are
stored as text, the same on both.

The ``meta`` table holds the schema version. An older database is migrated on open, one version
at a time (:data:`MIGRATIONS`); a newer one is refused rather than misread. Trials are shared
between databases as JSON lines (:meth:`ExperienceDB.export_jsonl`, :meth:`ExperienceDB.import_jsonl`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Connection,
    Float,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from graph_ir.files import field_path
from hwsim.studies.sql import MetaRow, open_engine, shown_url

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STAGES",
    "DbError",
    "ExperienceDB",
    "Trial",
    "as_url",
    "default_db_url",
    "trial_from_json",
    "trial_json",
]

#: The version of the tables this hwsim writes; bumped with a new entry in :data:`MIGRATIONS`.
SCHEMA_VERSION = 1

#: from_version -> the function that upgrades a database of that version to the next, inside
#: one transaction (its connection). Version 1 is the first: nothing to migrate yet.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}

#: The stages a trial may come from.
STAGES = ("baseline", "graph", "kernel", "transfer")

#: Where the database lives unless ``--db`` or ``HWSIM_DB`` says otherwise.
DEFAULT_PATH = Path("~/.cache/hwsim/experience.sqlite")

#: Key of the PostgreSQL advisory lock held while the tables are created or migrated.
_SCHEMA_LOCK = 0x6877_7369_6D64_62


class DbError(ValueError):
    """The database cannot be used (bad input, one line naming the URL, exit 2): a newer schema,
    an unreachable URL, an unknown scheme, a missing driver, an import line that is not a trial."""


@dataclass(frozen=True, slots=True)
class Trial:
    """One evaluated candidate of a search (see the module docstring; spec: docs/optimize.md).

    ``candidate_key`` is unique per (``chip_fingerprint``, ``model_sha256``); lower ``objective``
    is better; ``parent_latency_ms / latency_ms`` is the candidate's gain over its incumbent.
    """

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

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"stage {self.stage!r}: expected one of {', '.join(STAGES)}")
        for name in ("objective", "latency_ms", "energy_mj", "parent_latency_ms", "measured_latency_ms", "accuracy"):
            value = getattr(self, name)
            if value is not None and math.isnan(value):
                raise ValueError(f"{name}: NaN is not a value a trial may hold")


class _Base(DeclarativeBase):
    pass


class _Meta(MetaRow, _Base):
    pass


class _Trial(_Base):
    __tablename__ = "trials"
    __table_args__ = (UniqueConstraint("chip_fingerprint", "model_sha256", "candidate_key", name="uq_trial_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    chip_fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    chip_name: Mapped[str] = mapped_column(Text)
    chip_features_json: Mapped[str] = mapped_column(Text)
    model_sha256: Mapped[str] = mapped_column(String(64), index=True)
    model_name: Mapped[str] = mapped_column(Text)
    graph_features_json: Mapped[str] = mapped_column(Text)
    search_id: Mapped[str] = mapped_column(String(64), index=True)
    stage: Mapped[str] = mapped_column(String(16))
    candidate_key: Mapped[str] = mapped_column(String(64))
    transforms_json: Mapped[str] = mapped_column(Text)
    signatures_json: Mapped[str] = mapped_column(Text)
    op_features_json: Mapped[str] = mapped_column(Text)
    objective: Mapped[float] = mapped_column(Float)
    latency_ms: Mapped[float] = mapped_column(Float)
    energy_mj: Mapped[float] = mapped_column(Float)
    peak_memory_bytes: Mapped[int] = mapped_column(BigInteger)
    parent_latency_ms: Mapped[float] = mapped_column(Float)
    feasible: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    measured_latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)
    hwsim_version: Mapped[str] = mapped_column(Text)
    created_at: Mapped[str] = mapped_column(Text)


#: Trial fields stored as JSON text: field -> column.
_JSON_FIELDS = {
    "chip_features": "chip_features_json",
    "graph_features": "graph_features_json",
    "transforms": "transforms_json",
    "signatures": "signatures_json",
    "op_features": "op_features_json",
}


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _row(t: Trial) -> _Trial:
    values: dict[str, Any] = {f.name: getattr(t, f.name) for f in fields(Trial) if f.name not in _JSON_FIELDS}
    values.pop("id")
    for name, column in _JSON_FIELDS.items():
        values[column] = _dumps(getattr(t, name))
    return _Trial(**values)


def _trial(row: _Trial) -> Trial:
    values = {f.name: getattr(row, f.name) for f in fields(Trial) if f.name not in _JSON_FIELDS}
    for name, column in _JSON_FIELDS.items():
        values[name] = json.loads(getattr(row, column))
    values["transforms"] = tuple(values["transforms"])
    return Trial(**values)


def as_url(url_or_path: str | Path) -> str:
    """A SQLAlchemy URL: ``url_or_path`` itself when it has a scheme, else SQLite at that path.

    >>> as_url("postgresql://me@db/hwsim")
    'postgresql://me@db/hwsim'
    >>> as_url("/tmp/x.sqlite")
    'sqlite:////tmp/x.sqlite'
    """
    text_ = str(url_or_path)
    if "://" in text_:
        return text_
    return f"sqlite:///{Path(text_).expanduser().resolve()}"


def default_db_url() -> str:
    """The experience database's URL when no ``--db`` is given: ``$HWSIM_DB`` (a URL or a path)
    when set, else SQLite at ``~/.cache/hwsim/experience.sqlite``."""
    return as_url(os.environ.get("HWSIM_DB") or DEFAULT_PATH)


def _lock_schema(conn: Connection) -> None:
    """Serialize schema work between processes (SQLite: ``BEGIN IMMEDIATE`` already does)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})


def _version(conn: Connection, shown: str) -> int | None:
    """The schema version of the database behind ``conn``; None for an empty database."""
    tables = set(inspect(conn).get_table_names())
    if "meta" not in tables and "trials" not in tables:
        return None
    value = conn.scalar(select(_Meta.value).where(_Meta.key == "schema_version")) if "meta" in tables else None
    if value is None or "trials" not in tables or not value.isdigit():
        raise DbError(f"{shown}: not an hwsim experience database (no trials table or schema version)")
    return int(value)


def _prepare(engine: Any, shown: str) -> int:
    """Create the tables in an empty database, or migrate an older one; returns the version."""
    with engine.begin() as conn:
        _lock_schema(conn)
        version = _version(conn, shown)
        if version is None:
            _Base.metadata.create_all(conn)
            conn.execute(insert(_Meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
            return SCHEMA_VERSION
    if version > SCHEMA_VERSION:
        raise DbError(
            f"{shown}: schema version {version} is newer than this hwsim's ({SCHEMA_VERSION}); upgrade hwsim to read it"
        )
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise DbError(f"{shown}: schema version {version}: no migration to version {version + 1}")
        with engine.begin() as conn:
            _lock_schema(conn)
            if _version(conn, shown) == version:  # else another process migrated it meanwhile
                MIGRATIONS[version](conn)
                conn.execute(
                    update(_Meta).where(_Meta.key == "schema_version").values(value=str(version + 1))
                )
        version += 1
    return version


def _stamped(t: Trial, db: ExperienceDB) -> Trial:
    """``t`` with the hwsim version and the creation time filled in where empty."""
    created = t.created_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    return replace(t, hwsim_version=t.hwsim_version or db.hwsim_version(), created_at=created, id=None)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_features(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _is_number(x) for k, x in v.items())


def _is_signatures(v: object) -> bool:
    def plain(m: object) -> bool:
        scalars = (str, int, float, bool, type(None))
        return isinstance(m, dict) and all(isinstance(k, str) and isinstance(x, scalars) for k, x in m.items())

    return isinstance(v, dict) and all(isinstance(k, str) and plain(m) for k, m in v.items())


_STRING = ("a string", lambda v: isinstance(v, str))
_NUMBER = ("a number", _is_number)
_OPTIONAL_NUMBER = ("a number or null", lambda v: v is None or _is_number(v))
_FEATURES = ("an object of numbers", _is_features)

#: What each field of a trial's JSON line must hold: field -> (description, test).
_JSON_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    **dict.fromkeys(["chip_fingerprint", "chip_name", "model_sha256", "model_name", "search_id"], _STRING),
    **dict.fromkeys(["stage", "candidate_key", "hwsim_version", "created_at"], _STRING),
    **dict.fromkeys(["chip_features", "graph_features"], _FEATURES),
    "op_features": (
        "an object of objects of numbers",
        lambda v: isinstance(v, dict) and all(isinstance(k, str) and _is_features(x) for k, x in v.items()),
    ),
    "signatures": ("an object of objects of plain values", _is_signatures),
    "transforms": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
    **dict.fromkeys(["objective", "latency_ms", "energy_mj", "parent_latency_ms"], _NUMBER),
    **dict.fromkeys(["measured_latency_ms", "accuracy"], _OPTIONAL_NUMBER),
    "peak_memory_bytes": (
        "a whole number of bytes",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63,
    ),
    "feasible": ("true or false", lambda v: isinstance(v, bool)),
    "error": ("a string or null", lambda v: v is None or isinstance(v, str)),
}

_FLOAT_FIELDS = ("objective", "latency_ms", "energy_mj", "parent_latency_ms", "measured_latency_ms", "accuracy")
_OPTIONAL_FIELDS = ("error", "measured_latency_ms", "accuracy", "hwsim_version", "created_at")


def trial_json(t: Trial) -> dict[str, object]:
    """``t`` as one JSON line's object (every field but the database's own ``id``)."""
    out = asdict(t)
    del out["id"]
    out["transforms"] = list(t.transforms)
    return out


def trial_from_json(obj: object) -> Trial:
    """The trial a JSON line's object describes; ValueError naming the first bad field (TypeError
    when ``obj`` is no JSON object)."""
    if not isinstance(obj, dict):
        raise TypeError("expected a JSON object (one trial per line)")
    unknown = sorted(set(obj) - set(_JSON_TYPES))
    if unknown:
        raise ValueError(f"{field_path((unknown[0],))}: unknown field (expected {', '.join(_JSON_TYPES)})")
    for name, (kind, ok) in _JSON_TYPES.items():
        if name not in obj:
            if name in _OPTIONAL_FIELDS:
                continue
            raise ValueError(f"{name}: missing")
        if not ok(obj[name]):
            raise ValueError(f"{name}: expected {kind}, got {json.dumps(obj[name])[:60]}")
    values = dict(obj)
    for name in _FLOAT_FIELDS:
        if values.get(name) is not None:
            values[name] = float(values[name])
    values["transforms"] = tuple(values["transforms"])
    return Trial(**values)


def _key(t: Trial | _Trial) -> tuple[str, str, str]:
    return (t.chip_fingerprint, t.model_sha256, t.candidate_key)


def _read_jsonl(path: Path) -> list[Trial]:
    """The trials of a JSON lines file; DbError naming the file, line and field of the first bad one."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DbError(f"{path}: cannot read: {exc}") from None
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(trial_from_json(json.loads(line)))
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            raise DbError(f"{path}:{number}: {exc}") from None
    return out


class ExperienceDB:
    """The trials of every search, in a SQLite file or at any SQLAlchemy URL (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown_url = shown_url(url)
        self.engine = open_engine(url, DbError, wal=True)
        self._hwsim_version: str | None = None
        try:
            self.schema_version = _prepare(self.engine, self.shown_url)
        except BaseException:
            self.engine.dispose()
            raise

    @classmethod
    def open(cls, url_or_path: str | Path) -> ExperienceDB:
        """The database at a URL, or SQLite at a plain path (created with its folder when absent)."""
        return cls(as_url(url_or_path))

    def hwsim_version(self) -> str:
        """This hwsim's version, read once (it parses the installed package's metadata, and its
        module loads the chip schema: ``hwsim db stats`` stays quick without it)."""
        if self._hwsim_version is None:
            from hwsim.report.provenance import hwsim_version

            self._hwsim_version = hwsim_version()
        return self._hwsim_version

    def add(self, trial: Trial) -> int:
        """Store ``trial`` in its own transaction; returns its id (the stored one's when a trial
        of the same key is already there). An empty hwsim version or time is filled in."""
        row = _row(_stamped(trial, self))
        where = (
            _Trial.chip_fingerprint == trial.chip_fingerprint,
            _Trial.model_sha256 == trial.model_sha256,
            _Trial.candidate_key == trial.candidate_key,
        )
        try:
            with Session(self.engine) as s, s.begin():
                old = s.scalar(select(_Trial.id).where(*where))
                if old is not None:
                    return old
                s.add(row)
                s.flush()
                return row.id
        except IntegrityError:  # another process added the same key between the two statements
            with Session(self.engine) as s:
                old = s.scalar(select(_Trial.id).where(*where))
            if old is None:
                raise
            return old

    def trials(
        self,
        *,
        chip_fingerprint: str | None = None,
        model_sha256: str | None = None,
        stage: str | None = None,
        search_id: str | None = None,
    ) -> list[Trial]:
        """The stored trials that match every filter given, oldest first."""
        query = select(_Trial).order_by(_Trial.id)
        filters = {
            _Trial.chip_fingerprint: chip_fingerprint,
            _Trial.model_sha256: model_sha256,
            _Trial.stage: stage,
            _Trial.search_id: search_id,
        }
        for column, value in filters.items():
            if value is not None:
                query = query.where(column == value)
        with Session(self.engine) as s:
            return [_trial(r) for r in s.scalars(query)]

    def done_keys(self, chip_fingerprint: str, model_sha256: str) -> dict[str, Trial]:
        """The trials of this chip and model, by candidate key (what a resumed search skips)."""
        found = self.trials(chip_fingerprint=chip_fingerprint, model_sha256=model_sha256)
        return {t.candidate_key: t for t in found}

    def set_measured(self, trial_id: int, measured_latency_ms: float) -> None:
        """Record the latency measured on the real chip next to trial ``trial_id``'s prediction."""
        if math.isnan(measured_latency_ms):
            raise ValueError("measured_latency_ms is NaN")
        with Session(self.engine) as s, s.begin():
            done = s.execute(update(_Trial).where(_Trial.id == trial_id).values(measured_latency_ms=measured_latency_ms))
            if done.rowcount != 1:  # type: ignore[attr-defined]
                raise DbError(f"{self.shown_url}: no trial with id {trial_id}")

    def chips(self) -> list[tuple[str, str, dict[str, float], int]]:
        """Every chip with trials: (fingerprint, name, features, trials), from its latest trial."""
        counts = (
            select(_Trial.chip_fingerprint, func.count(), func.max(_Trial.id))
            .group_by(_Trial.chip_fingerprint)
            .order_by(_Trial.chip_fingerprint)
        )
        with Session(self.engine) as s:
            out = []
            for fingerprint, count, latest in s.execute(counts):
                row = s.get_one(_Trial, latest)
                out.append((fingerprint, row.chip_name, json.loads(row.chip_features_json), int(count)))
            return out

    def stats(self) -> dict[str, object]:
        """Counts for ``hwsim db stats``: trials and measured ones, per chip, model and stage."""
        query = (
            select(
                _Trial.chip_fingerprint, _Trial.chip_name, _Trial.model_sha256, _Trial.model_name, _Trial.stage,
                func.count(), func.count(_Trial.measured_latency_ms),
            )
            .group_by(_Trial.chip_fingerprint, _Trial.chip_name, _Trial.model_sha256, _Trial.model_name, _Trial.stage)
            .order_by(_Trial.chip_name, _Trial.chip_fingerprint, _Trial.model_name, _Trial.model_sha256, _Trial.stage)
        )  # fmt: skip
        keys = ("chip_fingerprint", "chip", "model_sha256", "model", "stage", "trials", "measured")
        with Session(self.engine) as s:
            groups = [dict(zip(keys, row, strict=True)) for row in s.execute(query)]
        return {
            "url": self.shown_url,
            "schema_version": self.schema_version,
            "trials": sum(int(str(g["trials"])) for g in groups),
            "measured": sum(int(str(g["measured"])) for g in groups),
            "chips": len({g["chip_fingerprint"] for g in groups}),
            "models": len({g["model_sha256"] for g in groups}),
            "groups": groups,
        }

    def export_jsonl(self, path: str | Path) -> int:
        """Write every trial to ``path``, one JSON object a line, oldest first; returns how many.
        The file appears whole or not at all (written beside it, then renamed)."""
        path = Path(path)
        trials = self.trials()
        partial = path.with_name(f".{path.name}.partial")
        with partial.open("w", encoding="utf-8") as f:
            for t in trials:
                f.write(json.dumps(trial_json(t), sort_keys=True) + "\n")
        partial.replace(path)
        return len(trials)

    def import_jsonl(self, path: str | Path) -> int:
        """Add the trials of a JSON lines file in one transaction, skipping keys already here;
        returns how many were added. A bad line is DbError naming the file, line and field, and
        then nothing is added."""
        trials = _read_jsonl(Path(path))
        with Session(self.engine) as s, s.begin():
            seen = {tuple(r) for r in s.execute(select(_Trial.chip_fingerprint, _Trial.model_sha256, _Trial.candidate_key))}
            added = 0
            for t in trials:
                if _key(t) not in seen:
                    seen.add(_key(t))
                    s.add(_row(_stamped(t, self)))
                    added += 1
        return added

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()
