"""``hwsim db stats|export|import`` through :func:`hwsim.cli.main`: output, sharing, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from hwsim.cli import main
from hwsim.studies.optimize.db import ExperienceDB
from tests.helpers import one_line_error
from tests.hwsim.studies.optimize.builders import make_trial


def _filled(path: Path) -> str:
    db = ExperienceDB.open(path)
    db.add(make_trial())
    db.add(make_trial(candidate_key="k1", stage="graph"))
    db.add(make_trial(candidate_key="k2", chip_fingerprint="d" * 64, chip_name="rk3588-npu-x2"))
    db.set_measured(1, 3.1)
    db.close()
    return f"sqlite:///{path}"


class TestStats:
    def test_text_lists_trials_per_chip_model_and_stage(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        url = _filled(tmp_path / "x.sqlite")
        assert main(["db", "stats", "--db", url]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == f"{url}: schema version 1, 3 trials (1 measured) on 2 chips, 1 models"
        assert lines[1].split() == ["chip", "model", "stage", "trials", "measured"]
        assert [line.split() for line in lines[2:]] == [
            ["rk3588", "resnet18", "graph", "1", "0"],
            ["rk3588", "resnet18", "kernel", "1", "1"],
            ["rk3588-npu-x2", "resnet18", "kernel", "1", "0"],
        ]

    def test_json(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        url = _filled(tmp_path / "x.sqlite")
        assert main(["db", "stats", "--db", url, "--json"]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert (stats["schema_version"], stats["trials"], stats["measured"], len(stats["groups"])) == (1, 3, 1, 3)

    def test_default_database_is_hwsim_db(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
        _filled(tmp_path / "team.sqlite")
        monkeypatch.setenv("HWSIM_DB", str(tmp_path / "team.sqlite"))
        assert main(["db", "stats", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["trials"] == 3


def test_export_then_import_shares_the_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _filled(tmp_path / "x.sqlite")
    assert main(["db", "export", str(tmp_path / "t.jsonl"), "--db", url]) == 0
    assert "3 trials exported" in capsys.readouterr().out
    assert len((tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()) == 3
    other = f"sqlite:///{tmp_path / 'y.sqlite'}"
    assert main(["db", "import", str(tmp_path / "t.jsonl"), "--db", other, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["imported"] == 3
    assert main(["db", "import", str(tmp_path / "t.jsonl"), "--db", other]) == 0
    out = capsys.readouterr().out
    assert "0 trials imported" in out and "(now 3)" in out
    source, copy = ExperienceDB(url), ExperienceDB(other)
    assert copy.trials() == source.trials()
    source.close()
    copy.close()


class TestBadInput:
    def test_an_import_line_that_is_not_a_trial(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        url = _filled(tmp_path / "x.sqlite")
        path = tmp_path / "bad.jsonl"
        path.write_text('{"chip_fingerprint": 7}\n', encoding="utf-8")
        assert main(["db", "import", str(path), "--db", url]) == 2
        assert one_line_error(capsys) == f"hwsim: error: {path}:1: chip_fingerprint: expected a string, got 7"
        assert len(ExperienceDB(url).trials()) == 3

    def test_a_newer_schema_names_the_url_and_both_versions(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        url = _filled(tmp_path / "x.sqlite")
        db = ExperienceDB(url)
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE meta SET value = '7' WHERE key = 'schema_version'"))
        db.close()
        assert main(["db", "stats", "--db", url]) == 2
        err = one_line_error(capsys)
        assert err.startswith(f"hwsim: error: {url}: schema version 7 is newer than this hwsim's (1)")

    @pytest.mark.parametrize("url", ["foo://x/y", "sqlite+:://"])
    def test_an_unusable_url(self, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["db", "export", str(tmp_path / "t.jsonl"), "--db", url]) == 2
        assert url in one_line_error(capsys)
        assert not (tmp_path / "t.jsonl").exists()

    def test_no_action_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["db"]) == 2
        assert "ACTION" in capsys.readouterr().err
