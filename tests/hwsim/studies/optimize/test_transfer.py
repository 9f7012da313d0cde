"""Transfer: nearest chips in the database and their best signatures, re-legalized here."""

from __future__ import annotations

import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import load_chip, override
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph
from hwsim.studies.optimize.db import DbError
from hwsim.studies.optimize.stages import predicted_ns
from hwsim.studies.optimize.transfer import (
    MATCH_FEATURES,
    MATCH_INTENSITY_RADIUS,
    MATCH_RADIUS,
    consensus,
    match_ops,
    nearest_chips,
    source_best_trials,
    source_bests,
    transferred,
)
from tests.hwsim.studies.optimize.conftest import TrialFactory


def test_nearest_chips_skip_the_chip_itself_and_sort_by_distance(experience_db: Any, make_trial: TrialFactory) -> None:
    rk = load_chip("rk3588")
    fast = override(rk, ["npu.clock_mhz=1250"])
    for chip in (rk, fast, load_chip("jetson_orin_nano"), load_chip("edge8")):
        experience_db.add(make_trial(chip, {"x": {"unit": "cpu"}}))
    near = nearest_chips(experience_db, rk, k=3)
    assert next(n for _, n, _ in near) == "rk3588"  # the variant keeps the base's name
    assert all(fp != near[0][0] or n == "rk3588" for fp, n, _ in near)
    assert len(near) == 3 and [d for *_, d in near] == sorted(d for *_, d in near)
    assert nearest_chips(experience_db, rk, k=1)[0][0] != make_trial(rk, {}).chip_fingerprint
    assert nearest_chips(experience_db, rk, k=0) == []


def test_source_best_trials_reach_past_the_three_nearest_chips(experience_db: Any, make_trial: TrialFactory) -> None:
    """Each source chip's best trial of the model, nearest first, from more chips than the 3
    the mappings come from (on the RK3588 family the x0.75 NPU clock's best is the x1.25's, its
    5th nearest chip); a plain trial (nothing to carry) and another model's are not taken."""
    rk = load_chip("rk3588")
    variants = [override(rk, [f"npu.clock_mhz={1000 * f:g}"]) for f in (0.9, 1.1, 1.25, 1.5, 2.0)]
    for i, chip in enumerate(variants):
        experience_db.add(make_trial(chip, {"x": {"unit": "npu"}}, latency_ms=2.0 + i))
        experience_db.add(make_trial(chip, {}, transforms=("concat_fold",), latency_ms=1.5 + i))
        experience_db.add(make_trial(chip, {}, latency_ms=0.5))  # the baseline: nothing to carry
        experience_db.add(make_trial(chip, {"x": {"unit": "gpu"}}, latency_ms=0.1, model_sha256="o" * 64))
    got = source_best_trials(experience_db, "m" * 64, rk)
    assert [t.chip_fingerprint for t in got] == [fp for fp, _, _ in nearest_chips(experience_db, rk, k=5)]
    assert all(t.transforms == ("concat_fold",) and t.model_sha256 == "m" * 64 for t in got)
    assert len(got) == 5 and len(source_best_trials(experience_db, "m" * 64, rk, k=3)) == 3


def test_consensus_keeps_what_more_than_half_of_the_bests_chose(make_trial: TrialFactory) -> None:
    rk = load_chip("rk3588")
    bests = [
        make_trial(rk, {"a": {"layout": "im2col", "unit": "npu"}, "b": {"cores": 3}}, transforms=("concat_fold",)),
        make_trial(rk, {"a": {"layout": "im2col"}, "b": {"cores": 3, "dataflow": "os"}}),
        make_trial(rk, {"a": {"layout": "im2col", "cores": 2}, "c": {"tile": "single"}}, transforms=("concat_fold",)),
    ]
    assert consensus(bests) == (("concat_fold",), {"a": {"layout": "im2col"}, "b": {"cores": 3}})
    # a half is not more than half: neither graph, nor the unit or dataflow one of two chose
    assert consensus(bests[:2]) == ((), {"a": {"layout": "im2col"}, "b": {"cores": 3}})
    assert consensus(bests[:1]) == ((), {}) and consensus([]) == ((), {})


_KNOBS = st.dictionaries(st.sampled_from(["unit", "cores", "layout"]), st.sampled_from(["npu", "cpu", 1, 2]), max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([(), ("concat_fold",), ("fold_bn", "concat_fold")]),
                          st.dictionaries(st.sampled_from("xyz"), _KNOBS, max_size=3)), max_size=6))  # fmt: skip
def test_consensus_is_each_knob_value_set_by_more_than_half(found: list[tuple[tuple[str, ...], dict[str, Any]]]) -> None:
    """The definition, checked knob by knob against a count over the bests: a value is in the
    consensus exactly where more than half of two or more bests set that op's knob to it; the
    rewrites are those more than half ran on, else none."""
    from tests.hwsim.studies.optimize.conftest import build_trial

    rk = load_chip("rk3588")
    bests = [build_trial(rk, sigs, transforms=tr, candidate_key=str(i)) for i, (tr, sigs) in enumerate(found)]
    transforms, agreed = consensus(bests)
    n = len(bests)
    for op in "xyz":
        for knob in ("unit", "cores", "layout"):
            for value in ("npu", "cpu", 1, 2):
                count = sum(1 for _, sigs in found if knob in sigs.get(op, {}) and sigs[op][knob] == value
                            and type(sigs[op][knob]) is type(value))  # fmt: skip
                assert (agreed.get(op, {}).get(knob, object()) == value) == (n >= 2 and 2 * count > n)
    majority = [tr for tr in {tr for tr, _ in found} if 2 * sum(1 for t, _ in found if t == tr) > n]
    assert transforms == (majority[0] if majority and n >= 2 else ())


_FEATS = st.fixed_dictionaries(
    {"cat.conv": st.sampled_from([0.0, 1.0]), "depthwise": st.sampled_from([0.0, 1.0])},
    optional={n: st.floats(0.0, 8.0).map(lambda x: round(x, 1)) for n in MATCH_FEATURES},
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), _FEATS, max_size=6),
       st.dictionaries(st.sampled_from("uvwxyz"), _FEATS, max_size=6))  # fmt: skip
def test_match_ops_takes_the_nearest_op_of_the_same_kind(source: dict[str, Any], target: dict[str, Any]) -> None:
    """Each target op's match is, of the source ops of its kind within the intensity radius,
    the nearest by shape and intensity (ties by name), where within the radius; no other op is
    matched (the definition, checked against every pair)."""
    import math

    def kind(f: dict[str, float]) -> tuple[float, float]:
        return (f["cat.conv"], f["depthwise"])

    def dist(a: dict[str, float], b: dict[str, float]) -> float:
        if kind(a) != kind(b) or abs(a.get("intensity_log2", 0.0) - b.get("intensity_log2", 0.0)) > MATCH_INTENSITY_RADIUS:
            return math.inf
        return math.sqrt(sum((a.get(n, 0.0) - b.get(n, 0.0)) ** 2 for n in MATCH_FEATURES))

    want = {}
    for t, tf in target.items():
        d, s = min(((dist(sf, tf), s) for s, sf in source.items()), default=(math.inf, ""))
        if d <= MATCH_RADIUS:
            want[t] = s
    assert match_ops(source, target) == want


def test_transferred_same_model_by_name_relegalized(
    experience_db: Any, make_trial: TrialFactory, mapping_module: types.ModuleType, yolov8n: ModelGraph
) -> None:
    rk = load_chip("rk3588")
    two_cores = override(rk, ["npu.cores=2"])
    table = cost_table(yolov8n, two_cores, "int8")
    conv = next(o.name for o in yolov8n.ops() if o.category == "conv")
    sigmoid = next(o.name for o in yolov8n.ops() if o.op_type == "Sigmoid")
    good = make_trial(rk, {conv: {"unit": "npu", "cores": 3}}, latency_ms=5.0)
    worse = make_trial(rk, {conv: {"unit": "gpu"}}, latency_ms=8.0)
    dup = make_trial(rk, {conv: {"unit": "npu", "cores": 3}, "gone": {"unit": "npu"}}, latency_ms=6.0)
    illegal = make_trial(rk, {"gone": {"unit": "npu"}}, latency_ms=1.0)
    for t in (worse, dup, good, illegal):
        experience_db.add(t)
    # its own records never transfer
    experience_db.add(make_trial(two_cores, {sigmoid: {"unit": "cpu_big"}}, latency_ms=0.1))
    got = transferred(experience_db, two_cores, yolov8n, table, good.model_sha256, k=3)
    OpMapping = mapping_module.OpMapping
    # best objective first; cores clipped to this chip's 2; the duplicate and the op-less trial dropped
    assert got == [{conv: OpMapping(unit="npu", cores=2)}, {conv: OpMapping(unit="gpu")}]


def test_transferred_other_model_by_op_features(
    experience_db: Any, make_trial: TrialFactory, mapping_module: types.ModuleType, yolov8n: ModelGraph
) -> None:
    from hwsim.studies.optimize.features import op_features

    rk = load_chip("rk3588")
    table = cost_table(yolov8n, rk, "int8")
    convs = [o for o in yolov8n.ops() if o.category == "conv"]
    src = convs[5]
    feats = {"elsewhere": op_features(src, table)}
    experience_db.add(make_trial(load_chip("edge8"), {"elsewhere": {"unit": "npu"}}, op_features=feats,
                                 model_sha256="o" * 64, parent_latency_ms=2.0, latency_ms=1.0))  # fmt: skip
    got = transferred(experience_db, rk, yolov8n, table, "m" * 64)
    assert len(got) == 1 and got[0][src.name] == mapping_module.OpMapping(unit="npu")
    # every op it went to is a conv of the same kind and near in shape class and intensity
    here = {o.name: op_features(o, table) for o in yolov8n.ops()}
    matched = set(match_ops(feats, here))
    assert set(got[0]) <= matched and all(yolov8n.op(n).category == "conv" for n in got[0])
    assert len(got[0]) < len(convs)
    # spread over several ops, it stays only where the screen predicts it no slower than the default
    OpMapping = mapping_module.OpMapping
    slower = {n for n in matched if predicted_ns(yolov8n.op(n), rk, table, OpMapping(unit="npu"))
              > predicted_ns(yolov8n.op(n), rk, table, OpMapping())}  # fmt: skip
    assert len(matched) > 1 and slower and set(got[0]) == matched - slower


def test_transferred_from_an_empty_database(experience_db: Any, yolov8n: ModelGraph, mapping_module: types.ModuleType) -> None:
    rk = load_chip("rk3588")
    assert transferred(experience_db, rk, yolov8n, cost_table(yolov8n, rk, "int8"), "m" * 64) == []


def test_match_ops_by_kind_shape_class_and_intensity_not_by_name() -> None:
    conv = {"cat.conv": 1.0, "dtype.int8": 1.0, "kernel_log2": 3.3, "channels_out_log2": 6.0, "intensity_log2": 5.0}
    dw = conv | {"depthwise": 1.0}
    source = {"c": conv, "d": dw, "far": conv | {"channels_out_log2": 12.0}}
    target = {
        "c": {"cat.activation": 1.0, "dtype.int8": 1.0},  # same name, other type: no match
        "x": conv | {"intensity_log2": 5.5}, "y": conv | {"kernel_log2": 0.0, "channels_out_log2": 11.0},
        "z": dw | {"best_log2_ns": 20.0}, "w": conv | {"dtype.int8": 0.0, "dtype.fp16": 1.0},
    }  # fmt: skip
    # a source op serves several target ops; out of MATCH_RADIUS, another kind or precision: none
    assert match_ops(source, target) == {"x": "c", "z": "d"}
    assert match_ops({}, target) == {} and match_ops(source, {}) == {}
    assert match_ops(source, {"y": target["y"]}) == {}
    assert match_ops(source, {"v": conv | {"channels_out_log2": 11.0}}) == {"v": "far"}
    # one shape class, but intensity too far on its own (though within MATCH_RADIUS overall): none
    assert match_ops(source, {"u": conv | {"intensity_log2": 5.0 + MATCH_INTENSITY_RADIUS + 0.1}}) == {}
    assert match_ops(source, {"u": conv | {"intensity_log2": 5.0 + MATCH_INTENSITY_RADIUS}}) == {"u": "c"}


def test_transferred_from_named_chips_only(
    experience_db: Any, make_trial: TrialFactory, mapping_module: types.ModuleType, yolov8n: ModelGraph
) -> None:
    rk = load_chip("rk3588")
    slow = override(rk, ["npu.clock_mhz=750"])
    table = cost_table(yolov8n, slow, "int8")
    conv = next(o.name for o in yolov8n.ops() if o.category == "conv")
    experience_db.add(make_trial(rk, {conv: {"unit": "npu", "tile": "single"}}, latency_ms=5.0))
    experience_db.add(make_trial(load_chip("edge8"), {conv: {"unit": "gpu"}}, latency_ms=1.0))
    OpMapping = mapping_module.OpMapping
    got = transferred(experience_db, slow, yolov8n, table, "m" * 64, from_chips=["rk3588"])
    assert got == [{conv: OpMapping(unit="npu", tile="single")}]
    with pytest.raises(DbError, match="--transfer-from nosuch: no chip of that name"):
        transferred(experience_db, slow, yolov8n, table, "m" * 64, from_chips=["nosuch"])


def test_source_bests_one_best_mapping_of_this_model_per_source_chip_nearest_first(
    experience_db: Any, make_trial: TrialFactory, mapping_module: types.ModuleType, yolov8n: ModelGraph
) -> None:
    rk = load_chip("rk3588")
    slow, fast, edge = override(rk, ["npu.clock_mhz=750"]), override(rk, ["npu.clock_mhz=1250"]), load_chip("edge8")
    table = cost_table(yolov8n, slow, "int8")
    a, b = [o.name for o in yolov8n.ops() if o.category == "conv"][:2]
    concat = next(o.name for o in yolov8n.ops() if o.op_type == "Concat")
    experience_db.add(make_trial(rk, {a: {"unit": "npu", "cores": 3}, concat: {"unit": "npu"}}, latency_ms=5.0))
    experience_db.add(make_trial(rk, {b: {"unit": "gpu"}}, latency_ms=6.0))
    experience_db.add(make_trial(rk, {b: {"unit": "npu"}}, latency_ms=0.5, model_sha256="o" * 64))  # another model
    experience_db.add(make_trial(fast, {"gone": {"unit": "npu"}}, latency_ms=1.0))  # nothing left here
    experience_db.add(make_trial(fast, {b: {"unit": "npu", "tile": "single"}}, latency_ms=2.0))
    experience_db.add(make_trial(edge, {b: {"unit": "npu"}}, latency_ms=0.1, model_sha256="o" * 64))  # no trial of it
    experience_db.add(make_trial(slow, {a: {"unit": "cpu_big"}}, latency_ms=0.1))  # its own: never
    OpMapping = mapping_module.OpMapping
    got = source_bests(experience_db, slow, yolov8n, table, "m" * 64)
    # rk3588 (nearer the x0.75 clock than x1.25) first, each chip's best of this model, pins kept
    assert got == [{a: OpMapping(unit="npu", cores=3), concat: OpMapping(unit="npu")},
                   {b: OpMapping(unit="npu", tile="single")}]  # fmt: skip
    assert source_bests(experience_db, slow, yolov8n, table, "m" * 64, from_chips=["rk3588"])[0] == got[0]
    assert source_bests(experience_db, slow, yolov8n, table, "x" * 64) == []


def test_the_prior_learns_from_this_model_s_earlier_trials_only(experience_db: Any, make_trial: TrialFactory) -> None:
    """Other models' trials give transfer candidates but do not teach the prior that ranks this
    search's own (on the RK3588 family they made a third model's queues worse than the screen
    alone); this model's trials on every chip do, but not the running search's own."""
    from hwsim.studies.optimize.driver import prior_trials

    rk = load_chip("rk3588")
    fast = override(rk, ["npu.clock_mhz=1250"])
    kept = [make_trial(rk, {"x": {"unit": "npu"}}, search_id="a"), make_trial(fast, {"x": {"unit": "cpu"}}, search_id="b")]
    for t in kept:
        experience_db.add(t)
    experience_db.add(make_trial(fast, {"x": {"unit": "gpu"}}, search_id="c", model_sha256="o" * 64))
    experience_db.add(make_trial(rk, {"y": {"unit": "gpu"}}, search_id="now"))
    s = types.SimpleNamespace(db=experience_db, inputs=types.SimpleNamespace(model_sha256="m" * 64), search_id="now")
    got = prior_trials(s)  # type: ignore[arg-type]
    assert sorted(t.candidate_key for t in got) == sorted(t.candidate_key for t in kept)
