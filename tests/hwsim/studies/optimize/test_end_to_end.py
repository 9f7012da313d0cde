"""``hwsim optimize`` end to end on resnet18 and rk3588, through :func:`hwsim.cli.main` (and a
real ``python -m hwsim`` process for the kill test): schedule replay, a SIGKILL mid-search,
resume, transfer to a chip variant."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from chips import load_chip, override
from hwsim.cli import main
from hwsim.studies.optimize import search
from hwsim.studies.optimize.db import ExperienceDB

ROOT = Path(__file__).resolve().parents[4]
RESNET = str(ROOT / "examples" / "models" / "resnet18.onnx")
MOBILENET = str(ROOT / "examples" / "models" / "mobilenetv2.onnx")


def _optimize(tmp_path: Path, chip: str, db: Path, out: str, *extra: str, model: str = RESNET) -> dict[str, object]:
    args = ["optimize", chip, model, "--db", str(db), "--workers", "1", "--quiet", "-o", str(tmp_path / out), *extra]
    assert main(args) == 0
    summary: dict[str, object] = json.loads((tmp_path / out / "summary.json").read_text())
    return summary


def _log(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "search_log.jsonl").read_text().splitlines()]


def test_mapped_schedule_replay_reproduces_the_optimized_latency(tmp_path: Path) -> None:
    summary = _optimize(tmp_path, "rk3588", tmp_path / "e.sqlite", "out", "--budget", "12")
    best = summary["best"]
    assert isinstance(best, dict) and best["signatures"], "the best should map some op off its default"
    assert best["latency_ms"] < summary["baseline"]["latency_ms"]  # type: ignore[index]
    out = tmp_path / "out"
    code = main(["run", "rk3588", str(out / "model.onnx"), "--schedule", str(out / "schedule.json"),
                 "--out", str(tmp_path / "replay"), "--no-plots"])  # fmt: skip
    assert code == 0
    assert json.loads((tmp_path / "replay" / "summary.json").read_text())["latency_ms"] == best["latency_ms"]


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not there yet, or a writer holds a lock
        return 0


def test_sigkill_mid_search_leaves_a_sound_db_and_a_rerun_resumes(tmp_path: Path) -> None:
    db = tmp_path / "e.sqlite"
    cmd = [sys.executable, "-m", "hwsim", "optimize", "rk3588", RESNET, "--budget", "30", "--db", str(db),
           "--workers", "1", "--quiet", "-o", str(tmp_path / "killed")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # its own process group, so the kill takes the search's pool workers too (killed alone, the
    # parent leaves them orphaned, sleeping on a queue nobody writes)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while _rows(db) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the search ended before it could be killed"
    assert not (tmp_path / "killed").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    kept = ExperienceDB.open(db)
    stored = len(kept.trials())
    kept.close()
    assert stored >= 4
    summary = _optimize(tmp_path, "rk3588", db, "resumed", "--budget", "30")
    assert summary["reused_trials"] == stored and summary["trials"] == 30
    again = ExperienceDB.open(db)
    assert len(again.trials()) == 30  # each candidate once: nothing of the killed run was duplicated
    again.close()


def test_rerun_with_the_same_db_simulates_nothing_and_finds_the_same_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "e.sqlite"
    first = _optimize(tmp_path, "rk3588", db, "first", "--budget", "12")
    simulated: list[object] = []
    real = search.evaluate_round
    monkeypatch.setattr(search, "evaluate_round", lambda ex, tasks, done: (simulated.extend(tasks), real(ex, tasks, done)))
    again = _optimize(tmp_path, "rk3588", db, "again", "--budget", "12")
    assert simulated == []
    assert again["reused_trials"] == again["trials"] == first["trials"]
    assert again["best"] == first["best"]
    assert [r["candidate_key"] for r in _log(tmp_path / "again")] == [r["candidate_key"] for r in _log(tmp_path / "first")]


def test_transfer_auto_to_a_faster_npu_variant_hits(tmp_path: Path) -> None:
    db = tmp_path / "e.sqlite"
    _optimize(tmp_path, "rk3588", db, "source", "--budget", "24")
    rk = load_chip("rk3588")
    npu = next(u for u in rk.units if u.kind == "npu")
    variant = override(rk, [f"npu.clock_mhz={npu.clock_mhz * 1.25:g}"])  # type: ignore[attr-defined]
    chip_file = tmp_path / "rk3588_npu125.yaml"
    chip_file.write_text(yaml.safe_dump(variant.model_dump(mode="json", exclude_none=True), sort_keys=False))
    summary = _optimize(tmp_path, str(chip_file), db, "target", "--budget", "12", "--transfer-from", "auto")
    transfer = summary["transfer"]
    assert isinstance(transfer, dict) and transfer["tried"] > 0 and transfer["hits"] >= 1
    rows = _log(tmp_path / "target")
    assert any(r["transferred"] and r["latency_ms"] < r["parent_latency_ms"] for r in rows)
    assert summary["reused_trials"] == 0  # the variant's fingerprint differs: nothing of rk3588 taken as its own
    assert len({r["candidate_key"] for r in rows}) == len(rows)  # no candidate tried twice


def _first_round(rows: list[dict[str, object]], order: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Stage 2's first round: per trial that changed one op of the round's parent (the first
    trial on its graph with the parent's latency), (op, signature less its ``fusion`` knob),
    up to the first op tried again or, given the ops' ``order`` in the round (the queues'),
    the first that comes before the one tried last (the next round: a round without a winner
    keeps its parent). The ``fusion`` knob is left out: each search judges it on its own
    incumbent's placement (``placed``), and the transferred incumbent's is not the cold one's."""
    kernel = [i for i, r in enumerate(rows) if r["stage"] == "kernel"]
    first = rows[kernel[0]]
    parent = next(q for q in rows if q["transforms"] == first["transforms"] and q["latency_ms"] == first["parent_latency_ms"])
    held: dict[str, object] = parent["signatures"]  # type: ignore[assignment]
    out: list[tuple[str, str]] = []
    for i in kernel:
        sigs: dict[str, dict[str, object]] = rows[i]["signatures"]  # type: ignore[assignment]
        changed = [op for op in {*held, *sigs} if held.get(op) != sigs.get(op)]
        if rows[i]["parent_latency_ms"] == first["parent_latency_ms"] and len(changed) == 1:
            rank = {op: i for i, op in enumerate(order)}
            if any(op == changed[0] for op, _ in out) or (out and rank.get(changed[0], 0) < rank.get(out[-1][0], 0)):
                break
            bare = {k: v for k, v in sigs.get(changed[0], {}).items() if k != "fusion"}
            out.append((changed[0], json.dumps(bare, sort_keys=True)))
    return out


def test_with_transfer_stage_1_proposes_what_a_cold_search_proposes_and_trial_1_is_refined_first(tmp_path: Path) -> None:
    """Transfer displaces none of stage 1's trials: with ``--transfer-from`` it tries the graphs
    the same search without it tries (on the same database: the same learned prior). A first
    transferred trial that beat the baseline is refined at once (``refine_first``): the trials
    right after it, before stage 1's, are one stage 2 round on it (each changes one op of it,
    no op twice), and no signature of that round is proposed again on that graph."""
    source = tmp_path / "source.sqlite"
    _optimize(tmp_path, "rk3588", source, "source", "--budget", "24", model=MOBILENET)
    rk = load_chip("rk3588")
    npu = next(u for u in rk.units if u.kind == "npu")
    variant = override(rk, [f"npu.clock_mhz={npu.clock_mhz * 1.25:g}"])
    chip_file = tmp_path / "rk3588_npu_clock125.yaml"
    chip_file.write_text(yaml.safe_dump(variant.model_dump(mode="json", exclude_none=True), sort_keys=False))
    shutil.copyfile(source, tmp_path / "cold.sqlite")
    _optimize(tmp_path, str(chip_file), tmp_path / "cold.sqlite", "cold", "--budget", "24", model=MOBILENET)
    _optimize(tmp_path, str(chip_file), source, "warm", "--budget", "24", "--transfer-from", "auto", model=MOBILENET)
    cold, warm = _log(tmp_path / "cold"), _log(tmp_path / "warm")
    assert any(r["stage"] == "transfer" for r in warm)
    graphs = [[r["candidate_key"] for r in rows if r["stage"] == "graph"] for rows in (cold, warm)]
    assert graphs[0] and graphs[0] == graphs[1]  # mobilenetv2: channel_align applies
    first = warm[1]
    assert first["stage"] == "transfer" and first["latency_ms"] < warm[0]["latency_ms"]
    graph_at = next(i for i, r in enumerate(warm) if r["stage"] == "graph")
    refine = [r for r in warm[2:graph_at] if r["parent_latency_ms"] == first["latency_ms"]]
    assert all(r["stage"] == "kernel" and r["transforms"] == [] for r in warm[2:graph_at])
    changes = [_change(warm, r) for r in warm if r["stage"] == "kernel" and r["transforms"] == []]
    ones = [c for c in changes if c is not None]
    in_refine = [c for r in refine if (c := _change(warm, r)) is not None]
    assert len(in_refine) >= 2 and len({op for op, _ in in_refine}) == len(in_refine)  # one round: each op once
    assert len(set(ones)) == len(ones)  # no op's signature proposed twice on the graph


def _change(rows: list[dict[str, object]], row: dict[str, object]) -> tuple[str, str] | None:
    """The (op, signature) a trial changed of its parent (the first trial of its graph with the
    parent's latency), where it changed one op."""
    parent = next(q for q in rows if q["transforms"] == row["transforms"] and q["latency_ms"] == row["parent_latency_ms"])
    held: dict[str, object] = parent["signatures"]  # type: ignore[assignment]
    sigs: dict[str, object] = row["signatures"]  # type: ignore[assignment]
    changed = [op for op in {*held, *sigs} if held.get(op) != sigs.get(op)]
    return (changed[0], json.dumps(sigs.get(changed[0]), sort_keys=True)) if len(changed) == 1 else None


def test_a_core_mask_for_the_whole_npu_is_tried_once_and_can_win(tmp_path: Path) -> None:
    """The RK3588 splits every layer it can over its three NPU cores (``split_cores: all``);
    MobileNetV2's depthwise layers lose by it, and one layer moved alone to one core ends a job
    on each side of it. The whole unit on 1 core, then on 2 (RKNN's core masks), is one round
    of stage 2 on its first graph, and one core for all beats the default."""
    _optimize(tmp_path, "rk3588", tmp_path / "e.sqlite", "out", "--budget", "8", model=MOBILENET)
    rows = _log(tmp_path / "out")
    masks = {}
    for r in rows:
        sigs: dict[str, dict[str, object]] = r["signatures"]  # type: ignore[assignment]
        cores = {s.get("cores") for s in sigs.values()}
        if len(sigs) > 50 and len(cores) == 1:  # every split op of the NPU at one count
            masks[cores.pop()] = r
    assert set(masks) == {1, 2}
    assert all(r["stage"] == "kernel" and r["transforms"] == [] for r in masks.values())
    assert masks[1]["latency_ms"] < rows[0]["latency_ms"] < masks[2]["latency_ms"]  # type: ignore[operator]
    pinned: dict[str, dict[str, object]] = masks[2]["signatures"]  # type: ignore[assignment]
    assert all(s.get("unit") == "npu" for s in pinned.values())  # a split is legal only pinned


def test_with_transfer_a_source_s_best_on_a_rewritten_graph_is_tried_with_its_rewrites(tmp_path: Path) -> None:
    """A source chip's best trial of yolov8n is on ``concat_fold`` with two convs mapped (the
    cold best of the RK3588 with its NPU at x0.75): the search on the x1.25 variant tries it as
    it was found, rewrite included, before stage 1 (the bests made one sit on the original
    graph, where that source's gain did not carry: on the RK3588 family this took a target
    from 28 trials to 95 % of the cold gain to 3)."""
    from hwsim.report.provenance import file_sha256
    from tests.hwsim.studies.optimize.conftest import build_trial

    yolo = ROOT / "examples" / "models" / "yolov8n.onnx"
    rk = load_chip("rk3588")
    npu = next(u for u in rk.units if u.kind == "npu")
    slow = override(rk, [f"npu.clock_mhz={npu.clock_mhz * 0.75:g}"])
    sigs: dict[str, dict[str, object]] = {
        "/model.0/conv/Conv": {"cores": 2, "layout": "im2col", "unit": "npu"},
        "/model.7/conv/Conv": {"cores": 3, "dataflow": "os", "unit": "npu"},
    }
    db = ExperienceDB.open(tmp_path / "e.sqlite")
    db.add(build_trial(slow, sigs, transforms=("concat_fold",), model_sha256=file_sha256(yolo),
                       latency_ms=10.93, parent_latency_ms=11.66))  # fmt: skip
    db.close()
    fast = override(rk, [f"npu.clock_mhz={npu.clock_mhz * 1.25:g}"])
    chip_file = tmp_path / "rk3588_npu125.yaml"
    chip_file.write_text(yaml.safe_dump(fast.model_dump(mode="json", exclude_none=True), sort_keys=False))
    _optimize(tmp_path, str(chip_file), tmp_path / "e.sqlite", "out", "--budget", "6", "--transfer-from", "auto",
              model=str(yolo))  # fmt: skip
    rows = _log(tmp_path / "out")
    whole = [i for i, r in enumerate(rows) if r["stage"] == "transfer" and r["transforms"] == ["concat_fold"]]
    assert whole, [(r["stage"], r["transforms"]) for r in rows]
    assert rows[whole[0]]["signatures"] == sigs and rows[whole[0]]["transferred"]
    assert all(r["stage"] in ("baseline", "transfer") for r in rows[: whole[0]])  # before stage 1
    assert rows[whole[0]]["latency_ms"] < rows[0]["latency_ms"]


#: The best trial of yolov8n each RK3588 family member's cold search found (``bench_transfer.py
#: --budget 40 --seed 0``): (overrides, rewrites, signatures, latency, baseline) in ms.
_YOLO_BESTS: list[tuple[list[str], tuple[str, ...], dict[str, dict[str, object]], float, float]] = [
    ([], (), {"/model.0/conv/Conv": {"layout": "im2col"}, "/model.18/cv2/conv/Conv": {"cores": 3, "unit": "npu"},
              "/model.19/conv/Conv": {"tile": "single"},
              "/model.7/conv/Conv": {"cores": 3, "dataflow": "os", "unit": "npu"}}, 10.573, 10.818),
    (["npu.clock_mhz=750"], ("concat_fold",), {"/model.0/conv/Conv": {"cores": 2, "layout": "im2col", "unit": "npu"},
                                               "/model.7/conv/Conv": {"cores": 3, "dataflow": "os", "unit": "npu"}},
     10.931, 11.655),
    (["npu.clock_mhz=1250"], ("concat_fold",), {"/model.0/conv/Conv": {"layout": "im2col"},
                                                "/model.7/conv/Conv": {"cores": 3, "dataflow": "os", "unit": "npu"}},
     10.089, 10.5),
    (["npu.sram_kib=192"], (), {"/model.0/conv/Conv": {"layout": "im2col"}, "/model.18/cv2/conv/Conv": {"cores": 3, "unit": "npu"},
                                "/model.19/conv/Conv": {"tile": "single"},
                                "/model.7/conv/Conv": {"cores": 3, "dataflow": "os", "unit": "npu"}}, 10.579, 10.822),
    (["npu.sram_kib=768"], (), {"/model.0/conv/Conv": {"layout": "im2col"}, "/model.14/Concat": {"cores": 1, "unit": "npu"},
                                "/model.18/cv2/conv/Conv": {"cores": 3, "unit": "npu"},
                                "/model.7/conv/Conv": {"cores": 3, "dataflow": "os", "unit": "npu"}}, 10.582, 10.815),
    (["dram.bandwidth_gbps=17.05"], ("concat_fold",), {"/model.0/conv/Conv": {"layout": "im2col"},
                                                       "/model.1/conv/Conv": {"cores": 2, "unit": "npu"}}, 12.808, 13.249),
]  # fmt: skip


def test_with_transfer_what_most_sources_chose_is_tried_after_their_bests_made_one(tmp_path: Path) -> None:
    """Six RK3588 family members' bests of yolov8n all put the stem conv in ``im2col`` layout,
    five split ``model.7`` over the NPU's cores as ``os``; the rest each chip chose alone. On
    two NPU cores their consensus, on the original graph (half of them ran on ``concat_fold``:
    not more than half), is trial 2, right after the bests made one, and runs faster than
    them: the screen, adding up ops priced alone, would have judged it slower than those."""
    from hwsim.report.provenance import file_sha256
    from tests.hwsim.studies.optimize.conftest import build_trial

    yolo = ROOT / "examples" / "models" / "yolov8n.onnx"
    rk = load_chip("rk3588")
    db = ExperienceDB.open(tmp_path / "e.sqlite")
    for sets, transforms, sigs, best, base in _YOLO_BESTS:
        db.add(build_trial(override(rk, sets), sigs, transforms=transforms, model_sha256=file_sha256(yolo),
                           latency_ms=best, parent_latency_ms=base))  # fmt: skip
    db.close()
    chip_file = tmp_path / "rk3588_npu2.yaml"
    chip_file.write_text(yaml.safe_dump(override(rk, ["npu.cores=2"]).model_dump(mode="json", exclude_none=True)))
    _optimize(tmp_path, str(chip_file), tmp_path / "e.sqlite", "out", "--budget", "3", "--transfer-from", "auto",
              model=str(yolo))  # fmt: skip
    rows = _log(tmp_path / "out")
    assert [r["stage"] for r in rows] == ["baseline", "transfer", "transfer"]
    assert rows[2]["transforms"] == [] and rows[2]["signatures"] == {
        "/model.0/conv/Conv": {"layout": "im2col"}, "/model.7/conv/Conv": {"cores": 2, "dataflow": "os", "unit": "npu"},
    }  # fmt: skip
    assert len(rows[1]["signatures"]) > 2  # type: ignore[arg-type]
    assert rows[2]["latency_ms"] < rows[1]["latency_ms"] < rows[0]["latency_ms"]  # type: ignore[operator]
