"""``hwsim schedule``: a missed deadline still prints the schedule (issue 11 item 13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hwsim.cli import main

#: t1 then t2 on the one unit that can run t2: t2 finishes at 1.1 + 0.7 + 2.0 = 3.8 at best.
GRAPH: dict[str, Any] = {
    "units": ["u0", "u1"],
    "tasks": [
        {"name": "t1", "cost": {"u0": 3.2, "u1": 1.1}},
        {"name": "t2", "cost": {"u0": 2.0}},
        {"name": "t3", "cost": {"u0": 1.0, "u1": 2.0}},
    ],
    "edges": [{"src": "t1", "dst": "t2", "comm": 0.7}, {"src": "t1", "dst": "t3", "comm": 0.2}],
}


def _graph(tmp_path: Path, t2_deadline: float) -> str:
    data = json.loads(json.dumps(GRAPH))
    data["tasks"][1]["deadline"] = t2_deadline
    path = tmp_path / f"g{t2_deadline:g}.json"
    path.write_text(json.dumps(data))
    return str(path)


class TestMissedDeadline:
    def test_text_prints_the_schedule_then_the_verdict_on_stderr(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        late = _graph(tmp_path, 1.0)
        assert main(["schedule", late]) == 1
        captured = capsys.readouterr()
        out = captured.out.splitlines()
        assert out[0].startswith(f"{late}: 3 tasks on 2 units") and out[1].startswith("makespan ")
        assert {line.split()[0] for line in out[2:5]} == {"t1", "t2", "t3"}
        assert "deadline t2: slack" in captured.out and "MISSED" in captured.out
        err = captured.err.strip()
        assert err.count("\n") == 0 and err.startswith(f"hwsim: deadline missed: {late}: task 't2'")

    def test_json_prints_the_schedule_with_negative_slack(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["schedule", _graph(tmp_path, 1.0), "--json"]) == 1
        captured = capsys.readouterr()
        data = json.loads(captured.out)
        assert {p["task"] for p in data["placements"]} == {"t1", "t2", "t3"}
        t2 = next(p for p in data["placements"] if p["task"] == "t2")
        assert data["slack"]["t2"] == pytest.approx(1.0 - t2["finish"]) and data["slack"]["t2"] < 0
        assert data["deadline_missed"] is True
        assert "deadline missed" in captured.err

    def test_a_met_deadline_is_exit_0_with_the_same_fields(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["schedule", _graph(tmp_path, 10.0), "--json"]) == 0
        captured = capsys.readouterr()
        data = json.loads(captured.out)
        assert data["deadline_missed"] is False and data["slack"]["t2"] > 0
        assert captured.err == ""
