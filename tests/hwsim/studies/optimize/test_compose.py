"""Transferred mappings judged on the target chip: re-ranking, the composed candidate, reverts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from chips import load_chip
from cost_models.mapping import KNOBS, OpMapping
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph, Op
from hwsim.studies.optimize.compose import composed, rerank
from hwsim.studies.optimize.features import chip_features
from hwsim.studies.optimize.prior import Prior, Sample
from hwsim.studies.optimize.stages import (
    SignatureContext,
    predicted_ns,
    screened,
    signature_pool,
    signature_queue,
)

PARENT_NS = 10e6


@pytest.fixture(scope="module")
def ctx(yolov8n: ModelGraph) -> SignatureContext:
    chip = load_chip("rk3588")
    return SignatureContext(chip, cost_table(yolov8n, chip, "int8"), KNOBS, 0.5, None, chip_features(chip))


def _convs(graph: ModelGraph) -> list[Op]:
    return [o for o in graph.ops() if o.category == "conv"]


def _ns(ctx: SignatureContext, op: Op, m: OpMapping) -> float:
    return predicted_ns(op, ctx.chip, ctx.table, m)


def test_a_signature_predicted_worse_here_is_not_taken_into_the_composed_candidate(
    ctx: SignatureContext, yolov8n: ModelGraph
) -> None:
    bad_op, good_op = _convs(yolov8n)[3:5]
    bad, good = OpMapping(unit="cpu_big"), OpMapping(unit="npu", cores=3)
    assert _ns(ctx, bad_op, bad) > _ns(ctx, bad_op, OpMapping())  # the premise
    assert _ns(ctx, good_op, good) <= _ns(ctx, good_op, OpMapping())
    got = composed(ctx, yolov8n, {bad_op.name: bad, good_op.name: good}, PARENT_NS)
    assert got[good_op.name] == good  # predicted at least as good as the default: kept as transferred
    assert got[bad_op.name] != bad  # predicted worse: the screen's best instead, predicted better than default
    assert _ns(ctx, bad_op, got[bad_op.name]) < _ns(ctx, bad_op, OpMapping())
    assert got[bad_op.name].unit != "cpu_big"


def test_composed_leaves_an_op_at_its_default_when_the_screen_predicts_nothing_better(
    ctx: SignatureContext, yolov8n: ModelGraph
) -> None:
    conv = _convs(yolov8n)[3]
    sigmoid = next(o for o in yolov8n.ops() if o.op_type == "Sigmoid")
    # a pin to the little CPU is predicted slower than the default on both ops
    assert _ns(ctx, sigmoid, OpMapping(unit="cpu_little")) > _ns(ctx, sigmoid, OpMapping())
    pool = signature_pool(random.Random(sigmoid.name), sigmoid, ctx, {})
    better = [m for m in pool if _ns(ctx, sigmoid, m) < _ns(ctx, sigmoid, OpMapping())]
    got = composed(ctx, yolov8n, {sigmoid.name: OpMapping(unit="cpu_little"), conv.name: OpMapping(unit="cpu_little")}, PARENT_NS)
    assert (sigmoid.name in got) == bool(better)
    assert all(not m.is_default() and m.unit != "cpu_little" for m in got.values())


def test_rerank_puts_mappings_predicted_better_on_this_chip_first(ctx: SignatureContext, yolov8n: ModelGraph) -> None:
    op = _convs(yolov8n)[3]
    slow = {op.name: OpMapping(unit="cpu_big")}
    fast = {op.name: OpMapping(unit="npu", cores=3)}
    same = {op.name: OpMapping(unit="npu", cores=3, fusion=True)}  # fusion is not predicted: ties fast
    got = rerank(ctx, yolov8n, [slow, fast, same], PARENT_NS)
    assert [s.mapping for s in got] == [fast, same, slow]  # ties keep the given order
    assert got[0].log_gain == got[1].log_gain > 0 > got[2].log_gain


def test_rerank_averages_in_the_prior(ctx: SignatureContext, yolov8n: ModelGraph) -> None:
    from dataclasses import replace

    from hwsim.studies.optimize.features import op_features

    op = _convs(yolov8n)[3]
    a, b = {op.name: OpMapping(unit="npu", cores=3)}, {op.name: OpMapping(unit="npu", cores=3, fusion=True)}
    feats = op_features(op, ctx.table)
    # the past says the fused one paid a lot and the other cost: the screen alone ties them
    samples = [Sample(feats, ctx.chip_features, {"unit": "npu", "cores": 3, "fusion": True}, 0.5),
               Sample(feats, ctx.chip_features, {"unit": "npu", "cores": 3}, -0.5)]  # fmt: skip
    learned = replace(ctx, prior=Prior.fit_samples(samples, k=1))
    got = rerank(learned, yolov8n, [a, b], PARENT_NS)
    assert [s.mapping for s in got] == [b, a]
    assert got[0].log_gain > rerank(ctx, yolov8n, [b], PARENT_NS)[0].log_gain


def test_the_default_is_a_candidate_only_for_a_mapped_op(ctx: SignatureContext, yolov8n: ModelGraph) -> None:
    op = _convs(yolov8n)[3]
    assert all(not m.is_default() for m in signature_pool(random.Random(0), op, ctx, {}))
    pinned = {"unit": "cpu_big"}
    pool = signature_pool(random.Random(0), op, ctx, pinned)
    assert OpMapping() in pool and OpMapping(unit="cpu_big") not in pool
    # predicted slower than the default here: reverting it is among the screened (exploited) candidates
    assert OpMapping() in screened(op, ctx, pool, OpMapping(unit="cpu_big"), PARENT_NS)
    queue, _ = signature_queue(random.Random(0), op, ctx, pinned, 400, PARENT_NS)
    assert OpMapping() in queue


def test_with_transfer_the_composed_candidate_comes_right_after_the_baseline(tmp_path: Path) -> None:
    """A neighbour's trial pins an MLP layer to the little CPU, which the screen predicts slower
    on rk3588: the search tries its composed candidate first (trial 1, before stage 1), without
    the pin; the pin itself comes later, ranked after it."""
    import json

    from chips import override
    from hwsim.cli import main
    from hwsim.report.provenance import file_sha256
    from hwsim.studies.optimize.db import ExperienceDB
    from tests.hwsim.studies.optimize.conftest import build_trial

    model = Path(__file__).resolve().parents[4] / "examples" / "models" / "mlp_mnist.onnx"
    rk = load_chip("rk3588")
    pin: dict[str, object] = {"unit": "cpu_little"}
    db = ExperienceDB.open(tmp_path / "db.sqlite")
    db.add(build_trial(override(rk, ["npu.clock_mhz=1250"]), {"/fc0/Gemm": pin}, model_sha256=file_sha256(model),
                       parent_latency_ms=2.0, latency_ms=1.0))  # fmt: skip
    db.close()
    args = ["optimize", "rk3588", str(model), "--budget", "8", "--db", str(tmp_path / "db.sqlite"), "--workers", "1",
            "--quiet", "--transfer-from", "auto", "-o", str(tmp_path / "out")]  # fmt: skip
    assert main(args) == 0
    rows = [json.loads(ln) for ln in (tmp_path / "out" / "search_log.jsonl").read_text().splitlines()]
    first = rows[1]
    assert first["stage"] == "transfer" and first["transferred"]
    assert first["signatures"].get("/fc0/Gemm") != pin
    pinned = [r for r in rows if r["signatures"].get("/fc0/Gemm") == pin]
    assert all(r["trial"] > first["trial"] for r in pinned)
