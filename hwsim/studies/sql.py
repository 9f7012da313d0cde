"""Opening a database through SQLAlchemy, the one way every hwsim store does it.

:func:`open_engine` turns a URL into a connected :class:`~sqlalchemy.engine.Engine` or raises
the caller's bad-input error with one line naming the URL (password hidden): an unparsable URL,
a scheme SQLAlchemy does not know, a driver that is not installed (with the ``pip install`` that
fixes it), a server that does not answer (PostgreSQL gives up after :data:`CONNECT_TIMEOUT_S`).

SQLite connections get a busy timeout, so that a writer waits for another's transaction instead
of failing, and every transaction starts with ``BEGIN IMMEDIATE`` (the write lock is taken at the
start, so two processes never both read and then both try to write). ``wal=True`` also puts the
file in write-ahead-log mode: readers never block the writer, and a process killed mid-write
leaves the last committed state behind. Turning WAL on is the one step SQLite refuses at once
while another process holds the file, without waiting; :func:`_set_wal` waits it out instead.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, String, Text, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Mapped, mapped_column

__all__ = ["BUSY_TIMEOUT_MS", "CONNECT_TIMEOUT_S", "DRIVER_PIP", "MetaRow", "open_engine", "shown_url"]

class MetaRow:
    """The ``meta`` table every store keeps (key -> value; its ``schema_version`` above all): mix
    it into a store's own declarative base, ``class _Meta(MetaRow, _Base): pass``."""

    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


#: How long a SQLite writer waits for another's transaction before it fails.
BUSY_TIMEOUT_MS = 60_000

#: How long a connection to a database server may take before the URL counts as unreachable.
CONNECT_TIMEOUT_S = 5

#: The driver a bare ``postgresql://`` URL uses (the one ``pip install "hwsim[postgres]"`` installs).
_POSTGRES_DRIVER = "postgresql+psycopg"

#: Driver module -> what ``pip install`` takes to install it.
DRIVER_PIP: dict[str, str] = {
    "psycopg": '"hwsim[postgres]"',
    "psycopg2": '"hwsim[postgres]"',
    "MySQLdb": "mysqlclient",
}


def shown_url(url: str | URL) -> str:
    """The URL as error messages show it: the password hidden.

    >>> shown_url("postgresql+psycopg://me:secret@db.example:5432/hwsim")
    'postgresql+psycopg://me:***@db.example:5432/hwsim'
    """
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return str(url)


def _parse(url: str, error: type[ValueError]) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise error(f"{url}: not a database URL (expected a path, sqlite:///PATH or postgresql://USER@HOST/DB)") from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername=_POSTGRES_DRIVER)
    return parsed


def _sqlite_locked(exc: Exception) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _set_wal(cursor: Any) -> None:
    """Put the file in WAL mode, waiting out other processes that hold it.

    Switching the journal mode takes the file's exclusive lock, and SQLite answers "database is
    locked" at once, without its busy handler, when another process holds the file at that moment
    (three workers creating one database together). The mode is kept in the file, so once any
    process has set it the others find it set; until then they retry until the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:  # sqlite3.OperationalError; the DB-API module is the engine's to choose
            if not _sqlite_locked(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


def _on_sqlite_connect(wal: bool) -> Any:
    def configure(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" hook starts the transactions
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if wal:  # synchronous=NORMAL: a commit survives a killed process, not a power cut (no fsync each)
            _set_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    return configure


def _create(parsed: URL, shown: str, error: type[ValueError], wal: bool) -> Engine:
    sqlite = parsed.get_backend_name() == "sqlite"
    args: dict[str, Any] = {}
    if parsed.get_backend_name() == "postgresql":
        args["connect_timeout"] = CONNECT_TIMEOUT_S
    try:
        engine = create_engine(parsed, connect_args=args)
    except NoSuchModuleError:
        raise error(f"{shown}: unknown database scheme {parsed.drivername!r} (expected sqlite or postgresql)") from None
    except ModuleNotFoundError as exc:
        module = (exc.name or "").partition(".")[0]
        pip = DRIVER_PIP.get(module, module)
        raise error(f"{shown}: the database driver {module} is not installed; install it with: pip install {pip}") from None
    if sqlite:
        event.listen(engine, "connect", _on_sqlite_connect(wal))
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    return engine


def open_engine(url: str, error: type[ValueError], *, wal: bool = False) -> Engine:
    """A connected engine for ``url``; ``error(message)`` for a URL that cannot be used.

    Parameters
    ----------
    url
        Any SQLAlchemy URL; a bare ``postgresql://`` uses the psycopg (3) driver. The folder of a
        SQLite file is created when missing.
    error
        The caller's bad-input exception (a ``ValueError`` subclass: the CLI prints one line, exit 2).
    wal
        SQLite only: put the file in write-ahead-log mode (safe with parallel writer processes).
    """
    parsed = _parse(url, error)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        try:
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a folder under a regular file, no permission, a read-only disk
            raise error(f"{shown_url(url)}: cannot open the database: {exc.strerror or exc}") from None
    engine = _create(parsed, shown_url(url), error, wal)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except DBAPIError as exc:
        engine.dispose()
        reason = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__
        raise error(f"{shown_url(url)}: cannot open the database: {reason}") from None
    return engine
