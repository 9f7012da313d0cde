"""Transferred mappings judged on the target chip: re-ranking, the composed candidate, reverts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_rerank_scores_each_mapping_of_a_batch_as_it_would_alone(ctx: SignatureContext, yolov8n: ModelGraph) -> None:
    """The prior predicts each op's distinct signatures of a batch in one call: every mapping's
    score is the one it gets reranked alone, shared ops and signatures included."""
    from dataclasses import replace

    from hwsim.studies.optimize.features import op_features

    ops = _convs(yolov8n)[3:6]
    rng = random.Random(7)
    samples = [Sample(op_features(o, ctx.table), ctx.chip_features, {"unit": u, "cores": c}, rng.uniform(-1, 1))
               for o in ops for u in ("npu", "gpu", "cpu_big") for c in (1, 2, 3)]  # fmt: skip
    learned = replace(ctx, prior=Prior.fit_samples(samples, k=3))
    maps = [{o.name: OpMapping(unit=rng.choice(("npu", "gpu")), cores=rng.choice((1, 3))) for o in rng.sample(ops, 2)}
            for _ in range(8)]  # fmt: skip
    batch = {repr(s.mapping): s.log_gain for s in rerank(learned, yolov8n, maps, PARENT_NS)}
    for m in maps:
        assert batch[repr(m)] == pytest.approx(rerank(learned, yolov8n, [m], PARENT_NS)[0].log_gain, rel=1e-9, abs=1e-12)
    assert len(set(batch.values())) > 1  # the prior tells them apart


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
    the pin; the pin itself is never simulated (the screen does not back it)."""
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
    # the pin alone is predicted slower here: it is never simulated (it would displace a trial of the search's own)
    assert not [r for r in rows if r["signatures"].get("/fc0/Gemm") == pin and r["transferred"]]


def test_a_transferred_mapping_is_tried_only_where_the_screen_predicts_it_wins(
    ctx: SignatureContext, yolov8n: ModelGraph
) -> None:
    from hwsim.studies.optimize.driver import predicted_win
    from hwsim.studies.optimize.evaluate import Candidate, Outcome
    from hwsim.studies.optimize.search import Record

    op = max(_convs(yolov8n), key=lambda o: o.macs)
    base = Record(0, "baseline", Candidate(), Outcome("k", 10.0, 10.0, 1.0, 0, True, None, 0.0), 0.0, None, False)
    default_ns = _ns(ctx, op, OpMapping())
    pool = signature_pool(random.Random(0), op, ctx, {})
    faster = next(m for m in pool if _ns(ctx, op, m) < 0.99 * default_ns)
    slower = next(m for m in pool if _ns(ctx, op, m) > 1.01 * default_ns)
    assert predicted_win(ctx, yolov8n, {op.name: faster}, base)
    assert not predicted_win(ctx, yolov8n, {op.name: slower}, base)
    held = Record(1, "transfer", Candidate.of((), {op.name: faster.as_dict()}), base.outcome, 10.0, None, False)
    # against an incumbent that holds the faster signature, the slower one (and dropping it) loses
    assert not predicted_win(ctx, yolov8n, {op.name: slower}, held)
    assert not predicted_win(ctx, yolov8n, {}, held)


def _weight_bound_conv() -> ModelGraph:
    """A 1x1 conv 320 -> 1280 on a 7x7 map (MobileNetV2's last): its weights dominate its traffic."""
    import networkx as nx

    from graph_ir.ir import Tensor
    from graph_ir.op_metrics import metrics

    x, y = Tensor("x", (1, 320, 7, 7), "float32"), Tensor("y", (1, 1280, 7, 7), "float32")
    w = Tensor("w", (1280, 320, 1, 1), "float32", is_weight=True)
    m = metrics("Conv", (x, w), (y,), {})
    dag = nx.DiGraph()
    dag.add_node("head", op=Op("head", "Conv", m.category, (x, w), (y,), {}, m.macs, m.flops))
    return ModelGraph("g", dag, (x,), (y,), {"y": "head"}, ("head",))


def test_split_shards_share_their_memory_bandwidth_in_the_screen() -> None:
    """Each shard of a split reads every weight; three shards read them three times through one
    DRAM. On 7 output rows, 2 and 3 shards cost the same alone (4 and 3 rows fill the array
    alike): the screen must still rank 3 cores slower, as the engine runs them."""
    from cost_models.base import KernelKnobs
    from hwsim.sim.blocks import op_time_ns
    from hwsim.sim.splitting import shard_cost
    from hwsim.studies.optimize.stages import split_latency_ns

    graph, chip = _weight_bound_conv(), load_chip("rk3588")
    table, op, npu = cost_table(graph, chip, "int8"), graph.op("head"), chip.unit("npu")
    alone = {k: shard_cost(op, npu, chip, "int8", k, KernelKnobs("is", None, None)) for k in (2, 3)}
    assert alone[2] is not None and alone[3] is not None
    assert alone[2].latency_ns == alone[3].latency_ns  # the premise: alone, a tie
    ns = {k: predicted_ns(op, chip, table, OpMapping(unit="npu", cores=k, dataflow="is")) for k in (2, 3)}
    assert ns[3] > ns[2] > alone[2].latency_ns
    assert ns[3] == split_latency_ns(alone[3], npu, chip, 3)
    # shards with little traffic keep their own time, as the engine runs their tiles
    assert split_latency_ns(alone[3], npu, chip, 1) == op_time_ns(alone[3])


def test_composed_rederives_a_split_the_screen_judges_slower_here() -> None:
    """A neighbour's 3-core split of a weight-bound conv (predicted no worse than the default, so
    kept before) comes back as the split the screen predicts fastest here; the unit and fusion
    stay as transferred."""
    from hwsim.studies.optimize.compose import REDERIVE_MARGIN, rederived

    graph, chip = _weight_bound_conv(), load_chip("rk3588")
    ctx = SignatureContext(chip, cost_table(graph, chip, "int8"), KNOBS, 0.5, None, chip_features(chip))
    op = graph.op("head")
    moved = OpMapping(unit="npu", cores=3, dataflow="is", fusion=False)
    assert _ns(ctx, op, moved) <= _ns(ctx, op, OpMapping())  # the premise: no worse than the default
    got = composed(ctx, graph, {"head": moved}, PARENT_NS)["head"]
    assert got.unit == "npu" and got.fusion is False and got.cores != 3
    assert _ns(ctx, op, got) <= (1 - REDERIVE_MARGIN) * _ns(ctx, op, moved)
    assert rederived(ctx, op, got) == got  # a fixed point: nothing left the screen judges better


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_rederived_is_legal_and_never_predicted_slower(seed: int) -> None:
    from cost_models.mapping import legality
    from hwsim.studies.optimize.compose import rederived

    graph, chip = _weight_bound_conv(), load_chip("rk3588")
    ctx = SignatureContext(chip, cost_table(graph, chip, "int8"), KNOBS, 0.5, None, chip_features(chip))
    op = graph.op("head")
    pool = signature_pool(random.Random(seed), op, ctx, {})
    m = pool[seed % len(pool)]
    got = rederived(ctx, op, m)
    assert legality(op, chip, ctx.table, got) is None
    assert _ns(ctx, op, got) <= _ns(ctx, op, m)
    assert (got.unit, got.fusion) == (m.unit, m.fusion)


def test_fusion_is_offered_only_on_ops_that_can_end_up_in_a_fusion_group(ctx: SignatureContext, yolov8n: ModelGraph) -> None:
    """A conv whose type a unit fuses but whose output feeds more than its epilogue heads no group
    on any unit: the ``fusion`` knob would change nothing there, so stage 2 does not offer it."""
    from dataclasses import replace

    from cost_models.mapping import choices
    from hwsim.studies.optimize.stages import fusable_ops

    fusable = fusable_ops(yolov8n, ctx.chip, ctx.table)
    typed = [o for o in yolov8n.ops() if len(choices(o, ctx.chip, ctx.table)["fusion"]) > 1]
    lone = next(o for o in typed if o.name not in fusable)
    grouped = next(o for o in typed if o.name in fusable)
    real = replace(ctx, fusable=fusable)
    for op, offered in ((lone, False), (grouped, True)):
        pool = signature_pool(random.Random(0), op, real, {})
        assert any(m.fusion is not None for m in pool) == offered
        assert any(m.fusion is not None for m in signature_pool(random.Random(0), op, ctx, {}))  # by type: offered
    assert fusable <= {o.name for o in typed}  # a group holds only ops whose type some unit fuses


def test_rerank_goes_by_the_screen_first_the_prior_only_breaking_its_ties(ctx: SignatureContext, yolov8n: ModelGraph) -> None:
    """A prior that says the screen's favourite cost and a mapping the screen predicts slower paid
    does not reorder them: summed over a mapping's ops its per-op errors add up; it only breaks
    the screen's ties (see test_rerank_averages_in_the_prior)."""
    from dataclasses import replace

    from hwsim.studies.optimize.compose import screen_score
    from hwsim.studies.optimize.features import op_features

    op = _convs(yolov8n)[3]
    fast, slow = {op.name: OpMapping(unit="npu", cores=3)}, {op.name: OpMapping(unit="cpu_big")}
    feats = op_features(op, ctx.table)
    samples = [Sample(feats, ctx.chip_features, {"unit": "npu", "cores": 3}, -2.0),
               Sample(feats, ctx.chip_features, {"unit": "cpu_big"}, 2.0)]  # fmt: skip
    learned = replace(ctx, prior=Prior.fit_samples(samples, k=1))
    got = rerank(learned, yolov8n, [slow, fast], PARENT_NS)
    assert [s.mapping for s in got] == [fast, slow]
    assert got[0].screen_log_gain == screen_score(ctx, yolov8n, fast, PARENT_NS) > 0 > got[1].screen_log_gain
    assert got[1].log_gain > got[0].log_gain  # averaged with the prior, the order would flip


def test_united_keeps_the_pins_the_screen_predicts_slower_and_the_nearest_chips_signature(
    ctx: SignatureContext, yolov8n: ModelGraph
) -> None:
    """The screen predicts a Concat pinned to the NPU slower than on the CPU, alone; beside the
    convs it joins, the pin is what paid on the source chip. The source chips' bests made one
    keep it (``composed``, judging each op alone, drops it), take each op's signature from the
    nearest chip that mapped it, and re-derive the split, dataflow and layout."""
    from hwsim.studies.optimize.compose import rederived, united

    concat = next(o for o in yolov8n.ops() if o.op_type == "Concat")
    near_conv, far_conv = _convs(yolov8n)[3:5]
    pin = OpMapping(unit="npu")
    assert _ns(ctx, concat, pin) > _ns(ctx, concat, OpMapping())  # the premise
    split = OpMapping(unit="npu", cores=3, dataflow="os")
    nearest = {concat.name: pin, near_conv.name: split}
    farther = {near_conv.name: OpMapping(unit="gpu"), far_conv.name: OpMapping(unit="npu", cores=2)}
    got = united(ctx, yolov8n, [nearest, farther])
    assert set(got) == {concat.name, near_conv.name, far_conv.name}
    assert got[concat.name] == pin
    again = ("cores", "dataflow", "layout")
    assert got[near_conv.name] == rederived(ctx, near_conv, split, again) and got[near_conv.name].unit == "npu"
    assert got[far_conv.name] == rederived(ctx, far_conv, OpMapping(unit="npu", cores=2), again)
    assert composed(ctx, yolov8n, nearest, PARENT_NS).get(concat.name) != pin  # judged alone, it goes
    assert united(ctx, yolov8n, []) == {}


def test_united_re_derives_the_split_and_keeps_the_tile_as_found() -> None:
    """A neighbour's 3-core untiled split of a weight-bound conv: the screen re-splits it here
    (2 cores), and alone would also tile it; the bests made one take the new split but keep
    the tile, unit and fusion as found (a tile the screen misjudged alone paid in the source's
    whole run). The nearest chip's signature wins an op two chips mapped."""
    from hwsim.studies.optimize.compose import UNITED_KEPT_KNOBS, rederived, united

    graph, chip = _weight_bound_conv(), load_chip("rk3588")
    ctx = SignatureContext(chip, cost_table(graph, chip, "int8"), KNOBS, 0.5, None, chip_features(chip))
    op = graph.op("head")
    moved = OpMapping(unit="npu", cores=3, dataflow="is", tile="single", fusion=False)
    alone = rederived(ctx, op, moved)
    assert alone.cores != 3 and alone.tile != "single"  # the premise: the screen changes both
    got = united(ctx, graph, [{"head": moved}, {"head": OpMapping(unit="gpu")}])["head"]
    assert got == OpMapping(unit="npu", cores=alone.cores, dataflow="is", tile="single", fusion=False)
    assert UNITED_KEPT_KNOBS == ("tile",)


def test_with_transfer_trial_1_holds_the_neighbours_pin_where_the_screen_backs_the_whole(tmp_path: Path) -> None:
    """A neighbour's best pins an MLP layer's ReLU to the NPU beside its Gemm (the screen predicts
    the ReLU alone slower there) and runs the Gemm output-stationary (predicted faster): the
    screen backs the whole, and trial 1 is that mapping with the pin kept."""
    import json

    from chips import override
    from hwsim.cli import main
    from hwsim.report.provenance import file_sha256
    from hwsim.studies.optimize.db import ExperienceDB
    from tests.hwsim.studies.optimize.conftest import build_trial

    model = Path(__file__).resolve().parents[4] / "examples" / "models" / "mlp_mnist.onnx"
    rk = load_chip("rk3588")
    best = {"/fc0/Gemm": {"unit": "npu", "dataflow": "os"}, "/relu0/Relu": {"unit": "npu"}}
    db = ExperienceDB.open(tmp_path / "db.sqlite")
    db.add(build_trial(override(rk, ["npu.clock_mhz=1250"]), best, model_sha256=file_sha256(model),
                       parent_latency_ms=2.0, latency_ms=1.0))  # fmt: skip
    db.close()
    args = ["optimize", "rk3588", str(model), "--budget", "8", "--db", str(tmp_path / "db.sqlite"), "--workers", "1",
            "--quiet", "--transfer-from", "auto", "-o", str(tmp_path / "out")]  # fmt: skip
    assert main(args) == 0
    rows = [json.loads(ln) for ln in (tmp_path / "out" / "search_log.jsonl").read_text().splitlines()]
    assert rows[1]["stage"] == "transfer" and rows[1]["transferred"]
    assert rows[1]["signatures"]["/relu0/Relu"] == {"unit": "npu"}
    assert rows[1]["signatures"]["/fc0/Gemm"]["unit"] == "npu"


def _record(index: int, stage: str, latency_ms: float, parent_ms: float, feasible: bool = True) -> object:
    from hwsim.studies.optimize.evaluate import Candidate, Outcome
    from hwsim.studies.optimize.search import Record

    sigs = {} if stage != "transfer" else {f"op{index}": {"cores": 2}}
    out = Outcome(f"k{index}", latency_ms, latency_ms, 1.0, 0, feasible, None, 0.0)
    return Record(index, stage, Candidate.of((), sigs), out, parent_ms, None, False, stage == "transfer")


def test_transfer_is_refuted_once_every_transferred_trial_so_far_lost_to_its_parent() -> None:
    from hwsim.studies.optimize.driver import transfer_refuted

    base, graph = _record(0, "baseline", 10.0, 0.0), _record(1, "graph", 9.0, 10.0)
    lost, won = _record(2, "transfer", 10.5, 10.0), _record(3, "transfer", 9.5, 10.0)
    infeasible_fast = _record(4, "transfer", 5.0, 10.0, feasible=False)
    assert not transfer_refuted([base, graph])  # nothing transferred yet: nothing to refute
    assert transfer_refuted([base, lost])
    assert transfer_refuted([base, lost, graph])  # the search's own wins do not speak for transfer
    assert transfer_refuted([base, infeasible_fast])  # an infeasible one is no win
    assert not transfer_refuted([base, lost, won])  # one transferred win: the sources carry here
    assert not transfer_refuted([base, won, lost])
