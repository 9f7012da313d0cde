"""A large run's figures and ``schedule.json`` written in a forked process
(:mod:`hwsim.report.side`): the same bytes as one process, and a failure on either side leaves
nothing behind."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from chips import load_chip
from graph_ir.synthetic import random_dag
from hwsim.pipeline import RunResult, run_graph
from hwsim.report import files
from hwsim.report.files import REPORT_FILES, ReportInputs, write_reports
from hwsim.report.side import can_fork, in_side_process

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")


@pytest.fixture(scope="module")
def result() -> RunResult:
    return run_graph(random_dag(40, seed=3), load_chip("rk3588"))


def _with_writer(name: str, write: object) -> tuple[files.ReportFile, ...]:
    return tuple(replace(f, write=write) if f.name == name else f for f in files.REPORTS)


def _fail(run: ReportInputs) -> bytes:
    raise ValueError(f"cannot draw {run.result.graph.name}")


def test_side_process_writes_the_same_bytes(result: RunResult, tmp_path: Path) -> None:
    one = write_reports(result, tmp_path / "one", side=False)
    two = write_reports(result, tmp_path / "two", side=True)
    assert [p.name for p in one] == [p.name for p in two] == sorted(REPORT_FILES)
    for a, b in zip(one, two):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_a_failure_in_the_side_process_leaves_nothing(
    result: RunResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "REPORTS", _with_writer("gantt.png", _fail))
    with pytest.raises(RuntimeError, match="ValueError: cannot draw"):
        write_reports(result, tmp_path / "out", side=True)
    assert list(tmp_path.iterdir()) == []


def test_a_failure_beside_a_running_side_process_stops_it(
    result: RunResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_reports(result, tmp_path / "out", side=False)  # an earlier folder, to be kept as it was
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    monkeypatch.setattr(files, "REPORTS", _with_writer("trace.json", _fail))
    with pytest.raises(ValueError, match="cannot draw"):
        write_reports(result, tmp_path / "out", side=True)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_join_reports_the_childs_error_once() -> None:
    def work() -> None:
        raise KeyError("lost")

    join = in_side_process(work)
    with pytest.raises(RuntimeError, match="KeyError: 'lost'"):
        join()
    join()  # waited for already: nothing more to do


def test_no_fork_while_another_thread_runs() -> None:
    assert can_fork() == (threading.active_count() == 1)  # an earlier test may have left one
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not can_fork()
    finally:
        stop.set()
        t.join()
