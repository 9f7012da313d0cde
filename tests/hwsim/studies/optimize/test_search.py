"""``hwsim optimize``: config errors, a small search and its outputs, resume, Ctrl-C, replay, bad db."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwsim.cli import main
from hwsim.studies.optimize import driver, search

MLP = "examples/models/mlp_mnist.onnx"
SMALL = "stage_graph: {rounds: 1, candidates_per_round: 2}\nstage_kernel: {k: 2, trials_per_op: 3}\n"


def _config(tmp_path: Path, text: str = SMALL) -> Path:
    p = tmp_path / "search.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _run(tmp_path: Path, *extra: str, out: str = "out", db: str | None = None) -> int:
    db = db or str(tmp_path / "exp.sqlite")
    return main(["optimize", "rk3588", MLP, "--config", str(_config(tmp_path)), "--db", db, "--workers", "1",
                 "--quiet", "-o", str(tmp_path / out), *extra])  # fmt: skip


def _log(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "search_log.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("stage_graph: {rounds: 2, bogus: 1}\n", "stage_graph.bogus: unknown key"),
        ("stage_graph: {transforms: [fold_bn, no_such_pass]}\n", "stage_graph.transforms[1]: 'no_such_pass' is not a rewrite pass"),
        ("objective: speed\n", "objective: unknown objective 'speed'"),
        ("mystery: 1\n", "mystery: unknown key"),
        ("constraints: {latency_ms: 30}\n", "constraints.latency_ms: 30: expected a quoted condition"),
    ],
)
def test_bad_config_is_one_line_exit_2_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: str) -> None:
    cfg = _config(tmp_path, text)
    code = main(["optimize", "rk3588", MLP, "--config", str(cfg), "--db", str(tmp_path / "e.sqlite"), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{cfg}: {words}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_small_search_is_no_worse_than_baseline_and_writes_everything(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="hwsim"):
        assert _run(tmp_path, "--budget", "6") == 0
    assert sum("nothing measured" in r.getMessage() for r in caplog.records) == 1
    out = tmp_path / "out"
    for name in ("model.onnx", "schedule.json", "before/report.html", "after/report.html", "changes.md",
                 "best_so_far.png", "search_log.jsonl", "summary.json"):  # fmt: skip
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best"]["latency_ms"] <= summary["baseline"]["latency_ms"]
    rows = _log(out)
    assert rows[0]["stage"] == "baseline" and rows[0]["transforms"] == [] and rows[0]["signatures"] == {}
    assert 1 < len(rows) <= 6 and summary["trials"] == len(rows)
    assert any(r["stage"] == "kernel" for r in rows)
    assert "nothing measured" in " ".join(summary["notes"])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_same_seed_and_db_content_gives_the_same_search(tmp_path: Path) -> None:
    assert _run(tmp_path, "--budget", "6", "--seed", "3", db=str(tmp_path / "a.sqlite"), out="a") == 0
    assert _run(tmp_path, "--budget", "6", "--seed", "3", db=str(tmp_path / "b.sqlite"), out="b") == 0
    keys = [[r["candidate_key"] for r in _log(tmp_path / d)] for d in ("a", "b")]
    assert keys[0] == keys[1]


def test_rerun_with_the_same_db_reuses_every_done_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(tmp_path, "--budget", "6") == 0
    first = _log(tmp_path / "out")
    simulated: list[object] = []
    real = search.evaluate_round
    monkeypatch.setattr(search, "evaluate_round", lambda ex, tasks, done: (simulated.extend(tasks), real(ex, tasks, done)))
    assert _run(tmp_path, "--budget", "6", out="again") == 0
    again = _log(tmp_path / "again")
    assert [r["candidate_key"] for r in again] == [r["candidate_key"] for r in first]
    assert all(r["reused"] for r in again) and simulated == []
    assert [r["latency_ms"] for r in again] == [r["latency_ms"] for r in first]


def test_ctrl_c_mid_search_still_writes_outputs_and_keeps_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = search.evaluate_round
    rounds = []

    def interrupted(ex: object, tasks: object, done: object) -> None:
        rounds.append(1)
        if len(rounds) == 3:
            raise KeyboardInterrupt
        real(ex, tasks, done)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "evaluate_round", interrupted)
    assert _run(tmp_path, "--budget", "20") == 130
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and (out / "after" / "report.html").is_file()
    monkeypatch.setattr(search, "evaluate_round", real)
    assert _run(tmp_path, "--budget", "20", out="resumed") == 0
    resumed = _log(tmp_path / "resumed")
    done_before = {r["candidate_key"] for r in _log(out)}
    assert done_before and all(r["reused"] for r in resumed if r["candidate_key"] in done_before)


def test_schedule_replay_reproduces_the_reported_latency(tmp_path: Path) -> None:
    assert _run(tmp_path, "--budget", "6") == 0
    out = tmp_path / "out"
    best_ms = json.loads((out / "summary.json").read_text())["best"]["latency_ms"]
    code = main(["run", "rk3588", str(out / "model.onnx"), "--schedule", str(out / "schedule.json"),
                 "--out", str(tmp_path / "replay"), "--no-plots"])  # fmt: skip
    assert code == 0
    assert json.loads((tmp_path / "replay" / "summary.json").read_text())["latency_ms"] == best_ms


@pytest.mark.parametrize("db", ["sqlite:///{file}/x.sqlite", "postgresql://nobody@127.0.0.1:1/unreachable"])
def test_unreachable_db_is_exit_2_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str) -> None:
    plain = tmp_path / "plain-file"  # a folder under a regular file cannot be made, not even by root
    plain.write_text("", encoding="utf-8")
    assert _run(tmp_path, "--budget", "3", db=db.format(file=plain)) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_db_of_a_newer_schema_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlalchemy

    from hwsim.studies.optimize.db import SCHEMA_VERSION, ExperienceDB

    path = tmp_path / "newer.sqlite"
    ExperienceDB.open(path).close()
    engine = sqlalchemy.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # the db helper's meta table: bump the recorded version
        conn.execute(sqlalchemy.text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(SCHEMA_VERSION + 1)})
    engine.dispose()
    assert _run(tmp_path, "--budget", "3", db=str(path)) == 2
    assert str(path) in capsys.readouterr().err


def test_top_ops_and_budget_split() -> None:
    assert driver.BEAM_WIDTH >= driver.KERNEL_GRAPHS
    b = search.Budget(total=10, graph_share=0.3)
    b.used = 1  # the baseline
    assert b.graph_left(24) == 3
    b.used = 4
    assert b.kernel_left(100) == 6 and b.kernel_left(2) == 2


def test_transfer_trials_come_out_of_stage_2_never_stage_1() -> None:
    cold = search.Budget(total=40, graph_share=0.3, used=1)  # the baseline
    warm = search.Budget(total=40, graph_share=0.3, used=3, transferred=2)  # and two transferred trials
    assert warm.graph_left(100) == cold.graph_left(100) == 12
    assert warm.kernel_left(100) == cold.kernel_left(100) - 2


def test_trials_are_numbered_in_the_candidates_order_not_the_order_workers_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run(tmp_path, "--budget", "6", db=str(tmp_path / "a.sqlite"), out="a") == 0
    real = search.evaluate_round

    def backwards(ex: object, tasks: list[object], done: object) -> None:
        real(None, list(reversed(tasks)), done)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "evaluate_round", backwards)
    assert _run(tmp_path, "--budget", "6", db=str(tmp_path / "b.sqlite"), out="b") == 0
    logs = [[(r["trial"], r["candidate_key"]) for r in _log(tmp_path / d)] for d in ("a", "b")]
    assert len({key for _, key in logs[0] if key}) > 2 and logs[0] == logs[1]


def test_a_fingerprinted_chip_of_this_machine_is_measured_and_backfilled(tmp_path: Path) -> None:
    # predict, measure, backfill (issue 16 item 2): the best graphs are timed with onnxruntime and the
    # measurement lands next to the prediction, in summary.json, the log and the database
    from hwsim.host.fingerprint import measure_host, write_chip
    from hwsim.studies.optimize.db import ExperienceDB

    chip = tmp_path / "host.yaml"
    write_chip(measure_host(threads=1, quick=True), chip)
    cfg = _config(tmp_path, SMALL.replace("trials_per_op: 3}", "trials_per_op: 3, measure_repeats: 5}"))
    db = tmp_path / "exp.sqlite"
    assert main(["optimize", str(chip), MLP, "--config", str(cfg), "--db", str(db), "--workers", "1", "--quiet",
                 "--budget", "6", "-o", str(tmp_path / "out")]) == 0  # fmt: skip
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    measured = summary["measured_latency_ms"]
    assert measured and all(ms > 0 for ms in measured.values())
    assert not any("nothing measured" in n for n in summary["notes"])
    logged = {r["candidate_key"]: r["measured_latency_ms"] for r in _log(tmp_path / "out")}
    assert {k: logged[k] for k in measured} == measured
    stored = {t.candidate_key: t.measured_latency_ms for t in ExperienceDB.open(db).trials()}
    assert {k: stored[k] for k in measured} == measured


def test_a_bundled_chip_is_not_measured_and_says_why(tmp_path: Path) -> None:
    assert _run(tmp_path, "--budget", "3") == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["measured_latency_ms"] == {}
    assert any(n.startswith("nothing measured: rk3588") for n in summary["notes"])


def test_a_search_without_transfer_proposes_the_pinned_trial_sequence(tmp_path: Path) -> None:
    """yolov8n on rk3588, budget 24, seed 0, the default search file: every trial's stage and
    candidate (transforms and signatures, by key), in order, as recorded before transfer's
    first candidate became the source chips' bests made one. A change of the search itself
    (not of ``--transfer-from``) shows here; re-pin it only on purpose (last: 2026-12-06, the
    re-plans pricing an observed transfer's latency at its observed time too: the baseline
    10.795 -> 10.818 ms, the best 10.577 -> 10.566; before, the plan pricing the fp16 GPU's
    outputs at two bytes an element: 10.840 -> 10.795 and 10.591 -> 10.577; before, the default's re-plans searching the lockstep NPU as
    one core: 11.351 -> 10.840 and 11.032 -> 10.591; before, 2026-12-04, the RK3588's NPU
    splitting every layer over its cores, ``split_cores: all``, and stage 2's whole-unit core counts)."""
    import hashlib

    out = tmp_path / "out"
    args = ["optimize", "rk3588", "examples/models/yolov8n.onnx", "--budget", "24", "--seed", "0",
            "--db", str(tmp_path / "e.sqlite"), "--workers", "1", "--quiet", "-o", str(out)]  # fmt: skip
    assert main(args) == 0
    rows = _log(out)
    sequence = json.dumps([[r["stage"], r["candidate_key"]] for r in rows])
    assert len(rows) == 24
    assert hashlib.sha256(sequence.encode()).hexdigest() == "16ac30733a067b12f77fe983a4bc2b40577b91c2771fefd93256b8c08ad29a37"
    assert min(float(r["objective"]) for r in rows) == pytest.approx(10.566353, abs=1e-6)  # type: ignore[arg-type]


def test_changes_md_gives_a_knob_setting_bought_by_one_trial_on_many_ops_one_line(tmp_path: Path) -> None:
    """MobileNetV2 on the RK3588: the first kernel trial runs every op on one NPU core (each
    depthwise 3x3 would end a three-core job), one setting on 97 ops, listed once with them all."""
    out = tmp_path / "out"
    assert main(["optimize", "rk3588", "examples/models/mobilenetv2.onnx", "--budget", "3", "--workers", "1", "--quiet",
                 "--db", str(tmp_path / "e.sqlite"), "-o", str(out)]) == 0  # fmt: skip
    sigs = json.loads((out / "summary.json").read_text())["best"]["signatures"]
    section = (out / "changes.md").read_text().split("## Op mappings (stage 2)")[1].split("##")[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("- ")]
    assert len(sigs) > 1 and len(lines) < len(sigs)
    for op in sigs:  # every op of the best, on exactly one line
        assert sum(f"`{op}`" in ln for ln in lines) == 1, op
    assert any(" ops: " in ln for ln in lines)
