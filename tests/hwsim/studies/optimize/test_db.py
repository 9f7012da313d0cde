"""The experience database: trials keyed by chip, schema versions, parallel writers, a writer
killed mid-stream, JSON lines round trips, and bad input (one line naming the URL or the file)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, text

from hwsim.studies.optimize import db as dbmod
from hwsim.studies.optimize.db import DbError, ExperienceDB, Trial, default_db_url
from hwsim.studies.sql import BUSY_TIMEOUT_MS, CONNECT_TIMEOUT_S, open_engine
from tests.hwsim.studies.optimize.builders import make_trial

ROOT = Path(__file__).resolve().parents[4]

#: A writer process: adds trials ``first`` .. ``first + count - 1`` to the database at argv[1],
#: printing each id once its transaction is committed.
WRITER = """
import sys
from hwsim.studies.optimize.db import ExperienceDB
from tests.hwsim.studies.optimize.builders import make_trial
url, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = ExperienceDB.open(url)
for i in range(first, first + count):
    print(i, db.add(make_trial(candidate_key=f"k{i}", objective=float(i))), flush=True)
"""


def _writer(url: str, first: int, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, str(first), str(count)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )


def _sqlite(tmp_path: Path, name: str = "experience.sqlite") -> str:
    return f"sqlite:///{tmp_path / name}"


def _set_version(url: str, version: int) -> None:
    db = ExperienceDB(url)
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(version)})
    db.close()


class TestTrials:
    def test_add_returns_ids_and_a_duplicate_key_the_stored_id(self, db_url: str) -> None:
        db = ExperienceDB(db_url)
        first = db.add(make_trial())
        second = db.add(make_trial(candidate_key="k1"))
        assert first != second
        assert db.add(make_trial(objective=99.0)) == first  # same key: the stored trial is kept
        assert [t.objective for t in db.trials()] == [3.5, 3.5]
        db.close()

    def test_trials_read_back_exactly_with_version_and_time_filled_in(self, db_url: str) -> None:
        db = ExperienceDB(db_url)
        trial = make_trial(error=None, accuracy=0.75, measured_latency_ms=3.25, peak_memory_bytes=2**40)
        tid = db.add(trial)
        [back] = db.trials()
        assert back.id == tid and back.hwsim_version and back.created_at.endswith("+00:00")
        assert dataclasses.replace(back, id=None, hwsim_version="", created_at="") == trial
        db.close()

    def test_records_are_keyed_by_chip_so_one_chip_never_reads_another(self, db_url: str) -> None:
        db = ExperienceDB(db_url)
        db.add(make_trial(chip_fingerprint="a" * 64, chip_name="a"))
        db.add(make_trial(chip_fingerprint="b" * 64, chip_name="b", latency_ms=9.0))
        db.add(make_trial(chip_fingerprint="b" * 64, chip_name="b", stage="graph", candidate_key="g"))
        assert [t.chip_name for t in db.done_keys("a" * 64, "m" * 64).values()] == ["a"]
        assert set(db.done_keys("b" * 64, "m" * 64)) == {"k0", "g"}
        assert db.done_keys("b" * 64, "x" * 64) == {}
        assert [t.candidate_key for t in db.trials(chip_fingerprint="b" * 64, stage="graph")] == ["g"]
        assert [(fp[0], name, n) for fp, name, _, n in db.chips()] == [("a", "a", 1), ("b", "b", 2)]
        db.close()

    def test_set_measured_and_stats(self, db_url: str) -> None:
        db = ExperienceDB(db_url)
        tid = db.add(make_trial())
        db.add(make_trial(candidate_key="k1", stage="graph"))
        db.set_measured(tid, 2.5)
        assert db.trials(stage="kernel")[0].measured_latency_ms == 2.5
        stats = db.stats()
        assert (stats["schema_version"], stats["trials"], stats["measured"], stats["chips"]) == (1, 2, 1, 1)
        assert [(g["stage"], g["trials"], g["measured"]) for g in stats["groups"]] == [("graph", 1, 0), ("kernel", 1, 1)]
        with pytest.raises(DbError, match="no trial with id 12345"):
            db.set_measured(12345, 1.0)
        db.close()

    def test_a_trial_refuses_an_unknown_stage_and_nan(self) -> None:
        with pytest.raises(ValueError, match="stage 'search'"):
            make_trial(stage="search")
        with pytest.raises(ValueError, match="latency_ms: NaN"):
            make_trial(latency_ms=float("nan"))


class TestSchema:
    def test_new_database_is_at_the_current_version_in_wal_mode(self, tmp_path: Path) -> None:
        db = ExperienceDB(_sqlite(tmp_path))
        with db.engine.connect() as conn:
            assert conn.scalar(text("SELECT value FROM meta WHERE key = 'schema_version'")) == str(dbmod.SCHEMA_VERSION)
            assert conn.scalar(text("PRAGMA journal_mode")) == "wal"
            assert conn.scalar(text("PRAGMA busy_timeout")) == BUSY_TIMEOUT_MS
        db.close()

    def test_a_newer_schema_is_refused_naming_the_url_and_both_versions(self, db_url: str) -> None:
        _set_version(db_url, dbmod.SCHEMA_VERSION + 1)
        with pytest.raises(DbError) as info:
            ExperienceDB(db_url)
        message = str(info.value)
        assert message.startswith(db_url.split("://")[0]) and "schema version 2" in message and "(1)" in message

    def test_older_versions_migrate_one_step_at_a_time(self, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        ExperienceDB(db_url).close()
        steps: list[int] = []

        def step(version: int) -> Callable[[Connection], None]:
            def migrate(conn: Connection) -> None:
                steps.append(version)
                conn.execute(text(f"ALTER TABLE trials ADD COLUMN extra{version} INTEGER"))

            return migrate

        monkeypatch.setattr(dbmod, "SCHEMA_VERSION", 3)
        monkeypatch.setattr(dbmod, "MIGRATIONS", {1: step(1), 2: step(2)})
        db = ExperienceDB(db_url)
        assert (steps, db.schema_version) == ([1, 2], 3)
        db.close()
        assert ExperienceDB(db_url).schema_version == 3 and steps == [1, 2]  # migrated once

    def test_a_missing_migration_and_a_foreign_database_are_refused(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        url = _sqlite(tmp_path)
        ExperienceDB(url).close()
        monkeypatch.setattr(dbmod, "SCHEMA_VERSION", 2)
        with pytest.raises(DbError, match="schema version 1: no migration to version 2"):
            ExperienceDB(url)
        from hwsim.studies.sweep_store import SweepStore

        SweepStore.at(tmp_path / "results.sqlite").close()
        with pytest.raises(DbError, match="not an hwsim experience database"):
            ExperienceDB.open(tmp_path / "results.sqlite")


class TestConcurrency:
    def test_parallel_writer_processes_lose_no_trial(self, db_url: str) -> None:
        """Three processes create the database at once, then add 25 trials each."""
        writers = [_writer(db_url, 100 * w, 25) for w in range(3)]
        outputs = [p.communicate(timeout=120)[0] for p in writers]
        assert [p.returncode for p in writers] == [0, 0, 0]
        ids = [int(line.split()[1]) for out in outputs for line in out.splitlines()]
        db = ExperienceDB(db_url)
        trials = db.trials()
        assert len(ids) == len(set(ids)) == len(trials) == 75
        assert {t.candidate_key for t in trials} == {f"k{100 * w + i}" for w in range(3) for i in range(25)}
        db.close()

    def test_a_database_another_connection_is_writing_waits_to_turn_wal(self, tmp_path: Path) -> None:
        """Turning WAL on while another connection holds the write lock: SQLite refuses at once,
        without its busy handler, so the open must wait the lock out itself."""
        path = tmp_path / "experience.sqlite"
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("INSERT INTO t VALUES (1)")
        release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
        release.start()
        try:
            engine = open_engine(f"sqlite:///{path}", DbError, wal=True)
        finally:
            release.join()
            holder.close()
        with engine.connect() as conn:
            assert conn.scalar(text("PRAGMA journal_mode")) == "wal"
            assert conn.scalar(text("SELECT x FROM t")) == 1
        engine.dispose()

    def test_a_writer_killed_mid_stream_leaves_a_sound_database_that_resumes(self, tmp_path: Path) -> None:
        url = _sqlite(tmp_path)
        writer = _writer(url, 0, 100_000)
        assert writer.stdout is not None
        committed = [writer.stdout.readline().split() for _ in range(30)]
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        assert writer.returncode == -signal.SIGKILL
        db = ExperienceDB(url)
        with db.engine.connect() as conn:
            assert conn.scalar(text("PRAGMA integrity_check")) == "ok"
        stored = {t.id: t for t in db.trials()}
        assert len(stored) >= 30
        assert all(stored[int(tid)].candidate_key == f"k{key}" for key, tid in committed)
        done = db.done_keys("c" * 64, "m" * 64)
        assert db.add(make_trial(candidate_key="resumed")) not in stored
        assert len(db.done_keys("c" * 64, "m" * 64)) == len(done) + 1
        db.close()


_floats = st.floats(allow_nan=False, width=64)
_names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
_features = st.dictionaries(_names, _floats, max_size=3)
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**31), 2**31), _floats, _names)
_trials = st.builds(
    make_trial,
    chip_fingerprint=st.sampled_from(["a" * 64, "b" * 64]), chip_name=_names, chip_features=_features,
    model_name=_names, graph_features=_features, stage=st.sampled_from(dbmod.STAGES), candidate_key=_names,
    transforms=st.lists(_names, max_size=3).map(tuple), signatures=st.dictionaries(_names, st.dictionaries(_names, _scalars, max_size=3), max_size=2),
    op_features=st.dictionaries(_names, _features, max_size=2), objective=_floats, latency_ms=_floats,
    energy_mj=_floats, peak_memory_bytes=st.integers(0, 2**63 - 1), parent_latency_ms=_floats, feasible=st.booleans(),
    error=st.none() | _names, measured_latency_ms=st.none() | _floats, accuracy=st.none() | _floats,
    hwsim_version=st.just("0.1.0"), created_at=st.just("2026-01-01T00:00:00+00:00"),
)  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_trials, max_size=6))
def test_export_then_import_round_trips_every_trial_exactly(trials: list[Trial]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source, target = ExperienceDB.open(Path(tmp) / "a.sqlite"), ExperienceDB.open(Path(tmp) / "b.sqlite")
        for t in trials:
            source.add(t)
        assert source.export_jsonl(Path(tmp) / "trials.jsonl") == len(source.trials())
        assert target.import_jsonl(Path(tmp) / "trials.jsonl") == len(source.trials())
        assert target.import_jsonl(Path(tmp) / "trials.jsonl") == 0  # deduplicated by key
        strip = [dataclasses.replace(t, id=None) for t in source.trials()]
        assert [dataclasses.replace(t, id=None) for t in target.trials()] == strip
        source.close()
        target.close()


class TestBadInput:
    @pytest.mark.parametrize(
        ("line", "field"),
        [
            ("not json", "Expecting value"),
            ("[1, 2]", "expected a JSON object"),
            ('{"chip_fingerprint": 1}', "chip_fingerprint: expected a string, got 1"),
            ('{"surprise": 1}', "surprise: unknown field"),
            ("MISSING", "latency_ms: missing"),
            ("NAN", "objective: NaN"),
            ("STAGE", "stage 'search'"),
        ],
    )
    def test_an_import_line_that_is_not_a_trial_names_file_line_and_field_and_adds_nothing(
        self, tmp_path: Path, line: str, field: str
    ) -> None:
        good = dbmod.trial_json(make_trial())
        bad = {k: v for k, v in good.items() if k != "latency_ms"} if line == "MISSING" else None
        bad = {**good, "objective": float("nan")} if line == "NAN" else bad
        bad = {**good, "stage": "search"} if line == "STAGE" else bad
        text_ = json.dumps(bad) if bad is not None else line
        path = tmp_path / "in.jsonl"
        path.write_text(json.dumps({**good, "candidate_key": "ok"}) + "\n\n" + text_ + "\n", encoding="utf-8")
        db = ExperienceDB(_sqlite(tmp_path))
        with pytest.raises(DbError) as info:
            db.import_jsonl(path)
        assert str(info.value).startswith(f"{path}:3: ") and field in str(info.value)
        assert db.trials() == []
        db.close()

    def test_unknown_scheme_and_unparsable_url(self) -> None:
        with pytest.raises(DbError, match=r"^foo://x/y: unknown database scheme 'foo'"):
            ExperienceDB("foo://x/y")
        with pytest.raises(DbError, match="not a database URL"):
            ExperienceDB("sqlite+:://")

    def test_a_missing_driver_names_the_pip_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "psycopg", None)
        with pytest.raises(DbError) as info:
            ExperienceDB("postgresql://me:secret@db.example/hwsim")
        assert str(info.value) == (
            "postgresql://me:***@db.example/hwsim: the database driver psycopg is not installed; "
            'install it with: pip install "hwsim[postgres]"'
        )

    def test_an_unreachable_server_fails_within_seconds(self) -> None:
        pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'hwsim[postgres]')")
        start = time.monotonic()
        with pytest.raises(DbError, match=r"^postgresql://hwsim@127.0.0.1:1/x: cannot open the database: "):
            ExperienceDB("postgresql://hwsim@127.0.0.1:1/x")
        assert time.monotonic() - start < CONNECT_TIMEOUT_S + 2

    def test_a_file_that_is_not_a_database(self, tmp_path: Path) -> None:
        (tmp_path / "x.sqlite").write_text("hello, not sqlite " * 100, encoding="utf-8")
        with pytest.raises(DbError, match="cannot open the database: file is not a database"):
            ExperienceDB.open(tmp_path / "x.sqlite")


class TestDefaultUrl:
    def test_home_cache_unless_hwsim_db_says_otherwise(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.delenv("HWSIM_DB", raising=False)
        assert default_db_url() == f"sqlite:///{tmp_path}/.cache/hwsim/experience.sqlite"
        monkeypatch.setenv("HWSIM_DB", str(tmp_path / "team.sqlite"))
        assert default_db_url() == f"sqlite:///{tmp_path}/team.sqlite"
        monkeypatch.setenv("HWSIM_DB", "postgresql://me@db/hwsim")
        assert default_db_url() == "postgresql://me@db/hwsim"

    def test_a_plain_path_gets_its_folder_created(self, tmp_path: Path) -> None:
        ExperienceDB.open(tmp_path / "a" / "b" / "x.sqlite").close()
        assert (tmp_path / "a" / "b" / "x.sqlite").is_file()
