"""hwsim.policy_check through run_graph and ``hwsim run``: the default checked through the engine,
energy mode under a latency budget, deadlines on outputs and nodes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

from chips import load_chip
from chips.variants import restrict
from graph_ir import from_model_proto, load_onnx
from graph_ir.ir import ModelError, ModelGraph
from hwsim import policy_check
from hwsim.analysis.energy import power_timeline
from hwsim.cli import main
from hwsim.pipeline import run_graph
from hwsim.policy_check import resolve_deadlines
from hwsim.report.summary import build_summary
from hwsim.report.terminal import format_summary
from tests.helpers import ROOT

MODELS = ROOT / "examples" / "models"
KWS = MODELS / "audio_kws.onnx"


@pytest.fixture(scope="module")
def kws() -> ModelGraph:
    return load_onnx(KWS)


@pytest.mark.parametrize("chip_name", ["edge8", "jetson_orin_nano", "rk3588"])
def test_default_is_checked_and_never_slower_than_heft_or_one_unit(kws, chip_name):
    res = run_graph(kws, load_chip(chip_name))
    c = res.choice
    assert c is not None and c.checked
    lat = {k.name: k.latency_ms for k in c.candidates}
    assert set(lat) == {"affinity-locality", "heft", "single-unit", "affinity-list"}
    kept = res.trace.makespan_ps / 1e9
    assert kept == pytest.approx(min(lat.values()))
    assert kept == pytest.approx(lat[c.winner])
    assert res.schedule.policy == c.winner and c.policy == "affinity-locality"
    summary = build_summary(res)
    s = summary.to_json()
    assert s["policy_check_winner"] == c.winner
    assert s["policy_check"] == {k: pytest.approx(v, abs=1e-6) for k, v in lat.items()}
    # the summary names the schedule kept, and the one asked for beside it
    assert s["policy"] == c.winner and s["requested_policy"] == "affinity-locality"
    text = format_summary(summary)
    assert f"kept {c.winner}" in text
    assert text.splitlines()[0] == f"hwsim: {kws.name} on {chip_name} (int8, {c.winner})"


def test_large_graphs_and_other_policies_are_not_checked(kws, monkeypatch):
    chip = load_chip("edge8")
    heft = run_graph(kws, chip, policy="heft")
    assert heft.choice is not None and not heft.choice.checked
    s = build_summary(heft).to_json()
    assert "policy_check" not in s and s["policy"] == s["requested_policy"] == "heft"
    monkeypatch.setattr(policy_check, "CHECK_MAX_OPS", len(kws) - 1)
    alone = run_graph(kws, chip)
    assert alone.choice is not None and [k.name for k in alone.choice.candidates] == ["affinity-locality"]


def test_energy_mode_saves_energy_within_the_budget(kws):
    chip = load_chip("edge8")
    fastest = run_graph(kws, chip).trace.makespan_ps / 1e9
    loose = run_graph(kws, chip, objective="energy", latency_budget_ms=2 * fastest).choice
    assert loose is not None and loose.chosen is not None and loose.latency_optimal is not None
    assert loose.latency_optimal.latency_ms == pytest.approx(fastest)
    assert loose.chosen.latency_ms <= 2 * fastest
    # Measured: edge8's CPU runs some of this model for less energy than its NPU at a small delay.
    assert loose.chosen.energy_mj < loose.latency_optimal.energy_mj
    tight = run_graph(kws, chip, objective="energy", latency_budget_ms=fastest).choice
    assert tight is not None and tight.chosen is not None and tight.latency_optimal is not None
    assert tight.chosen.latency_ms == pytest.approx(fastest)
    assert tight.chosen.energy_mj <= tight.latency_optimal.energy_mj + 1e-12
    with pytest.raises(policy_check.BudgetError, match="no schedule meets the latency budget"):
        run_graph(kws, chip, objective="energy", latency_budget_ms=fastest / 2)


def test_energy_mode_is_no_worse_than_the_search_from_any_seed():
    """The energy found never depends on which seed won on latency: it is at most the energy of
    every simulated candidate and of the energy search started from each (the default's schedule
    before re-planning included). Pinned on rk3588/squeezenet11 at 40 ms, where the search from the
    first plan finds 5.04 mJ, from the re-planned default 5.05 and from HEFT's schedule 4.81 (4.33
    and 4.20 from the first two before the plan priced the fp16 GPU's outputs at two bytes;
    rk3588/resnet18 was the pin until the NPU's job boundaries, hwsim.sim.jobs, made the two
    searches meet at 9.53 mJ)."""
    from chips.units import PJ_PER_MJ
    from cost_models.table import cost_table
    from hwsim.analysis.energy import run_energy
    from scheduler import DEFAULT_POLICY, POLICIES
    from scheduler.onnx_policies import energy_schedule

    chip, graph, budget_ms = load_chip("rk3588"), load_onnx(MODELS / "squeezenet11.onnx"), 40.0
    table = cost_table(graph, chip)
    res = run_graph(graph, chip, objective="energy", latency_budget_ms=budget_ms)
    c = res.choice
    assert c is not None and c.chosen is not None and c.latency_optimal is not None
    seeds = {n: POLICIES[n](graph, chip, table) for n in (DEFAULT_POLICY, *policy_check.CHECKED_AGAINST)}
    seeds["re-planned"] = policy_check.default_schedule(graph, chip, table).schedule
    found: dict[str, float] = {}
    for name, seed in seeds.items():
        ran = policy_check.simulate_candidate(name, graph, chip, table, seed)
        est_budget_ns = seed.est_makespan_ns * budget_ms / ran.latency_ms  # energy@1's estimated budget
        searched = energy_schedule(graph, chip, table, seed, est_budget_ns, "energy")
        after = policy_check.simulate_candidate(name, graph, chip, table, searched)
        for label, sim in ((name, ran), (f"from {name}", after)):
            if sim.latency_ms <= budget_ms:
                found[label] = run_energy(chip, sim.trace).total_pj / PJ_PER_MJ
    assert len(found) == 2 * len(seeds)
    assert c.chosen.latency_ms <= budget_ms
    assert all(c.chosen.energy_mj <= mj + 1e-9 for mj in found.values()), (c.chosen, found)
    # The seeds do differ here: the search from the default's schedule alone, before or after
    # re-planning, is not the least.
    assert c.chosen.energy_mj < min(found["from re-planned"], found[f"from {DEFAULT_POLICY}"]) - 1e-6


def test_cli_energy_mode(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["run", "edge8", str(KWS), "--out", str(out), "--no-plots", "--json",
               "--objective", "energy", "--latency-budget-ms", "100"])  # fmt: skip
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["objective"] == "energy" and s["latency_budget_ms"] == 100.0
    em = s["energy_mode"]
    assert em["chosen"]["energy_mj"] <= em["latency_optimal"]["energy_mj"]
    assert em["chosen"]["latency_ms"] <= 100.0
    assert s["energy_mj"] == pytest.approx(em["chosen"]["energy_mj"], abs=1e-6)
    assert s["policy"] == em["chosen"]["schedule"] and s["requested_policy"] == "affinity-locality"
    bad = tmp_path / "bad"
    rc = main(["run", "edge8", str(KWS), "--out", str(bad), "--objective", "energy", "--latency-budget-ms", "0.01"])
    err = capsys.readouterr().err
    assert rc == 1 and "no schedule meets the latency budget of 0.01 ms" in err and "audio_kws" in err
    assert len(err.strip().splitlines()) == 1 and not bad.exists()
    assert main(["run", "edge8", str(KWS), "--out", str(bad), "--objective", "energy"]) == 2
    assert "--latency-budget-ms" in capsys.readouterr().err and not bad.exists()


def _two_branches() -> ModelGraph:
    """A long chain of matmuls and a short branch beside it, both from the input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 256])
    w = helper.make_tensor("w", TensorProto.FLOAT, [256, 256], np.full(256 * 256, 0.01))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m0"], name="mm0")]
    for k in range(1, 5):
        nodes.append(helper.make_node("MatMul", [f"m{k - 1}", "w"], [f"m{k}"], name=f"mm{k}"))
    nodes.append(helper.make_node("Relu", ["x"], ["short"], name="relu"))
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [256, 256]) for n in ("m4", "short")]
    graph = helper.make_graph(nodes, "branches", [x], outs, initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return from_model_proto(model, name="branches")


def test_a_deadline_serves_its_path_first_and_reports_slack():
    graph = _two_branches()
    chip = restrict(load_chip("rk3588"), "npu:1")
    free = run_graph(graph, chip)
    relu_end = next(r.end_ps for r in free.trace.ops if r.op == "relu") / 1e9
    assert relu_end > free.trace.makespan_ps / 1e9 / 2  # without a deadline the short branch waits
    dl = resolve_deadlines(graph, [("short", relu_end / 2)])
    res = run_graph(graph, chip, deadlines=dl)
    assert res.choice is not None
    (d,) = res.choice.deadlines
    assert d.name == "short" and d.node == "relu" and d.met
    assert d.finish_ms < relu_end / 2
    assert d.slack_ms == pytest.approx(relu_end / 2 - d.finish_ms)
    s = build_summary(res).to_json()
    assert s["deadline_missed"] is False and s["deadlines"][0]["slack_ms"] >= 0


def test_cli_deadlines(tmp_path, capsys):
    graph = load_onnx(KWS)
    node = graph.order[len(graph.order) // 2]
    rc = main(["run", "rk3588", str(KWS), "--out", str(tmp_path / "ok"), "--no-plots", "--deadline", f"{node}=1000"])
    text = capsys.readouterr()
    assert rc == 0, text.err
    assert f"deadline      {node} <= 1000 ms" in text.out and "(met)" in text.out
    output = graph.outputs[0].name
    late = tmp_path / "late"
    rc = main(["run", "rk3588", str(KWS), "--out", str(late), "--no-plots", "--deadline", f"{output}=0.0001"])
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("hwsim: WARNING: ")]
    assert rc == 1 and "deadline missed" in err and output in err and len(lines) == 1
    s = json.loads((late / "summary.json").read_text())
    assert s["deadline_missed"] is True and s["deadlines"][0]["slack_ms"] < 0
    for bad, why in (("nope=3", "'nope': no graph output or node"), ("x", "expected NAME=MS"),
                     (f"{output}=-1", "expected NAME=MS"), (f"{output}=abc", "expected NAME=MS")):  # fmt: skip
        target = tmp_path / "bad"
        assert main(["run", "rk3588", str(KWS), "--out", str(target), "--deadline", bad]) == 2
        err = capsys.readouterr().err
        assert why in err.strip().splitlines()[-1] and "Traceback" not in err and not target.exists()


def test_resolve_deadlines_names_the_file_and_the_name(kws):
    with pytest.raises(ModelError, match=r"m\.onnx: --deadline 'nope'"):
        resolve_deadlines(kws, [("nope", 1.0)], "m.onnx")


def test_the_search_plans_with_colocated_fusion() -> None:
    from cost_models.table import cost_table
    from scheduler.onnx_policies import colocated_costs

    graph = load_onnx(MODELS / "yolov8n.onnx")
    chip = load_chip("rk3588")
    table = cost_table(graph, chip, "int8")
    planned = colocated_costs(graph, chip, table)
    # yolov8n's first SiLU: Conv -> Sigmoid -> Mul; the GPU fuses both into the conv's layer
    sig = next(n for n in graph.order if graph.op(n).op_type == "Sigmoid")
    plain, fused = table.costs[sig]["gpu"], planned.costs[sig]["gpu"]
    assert plain.overhead_ns > 0 and fused.overhead_ns < plain.overhead_ns
    assert fused.latency_ns < plain.latency_ns
    assert planned.costs[sig]["cpu_big"].latency_ns <= table.costs[sig]["cpu_big"].latency_ns
    assert set(planned.costs) == set(table.costs)
    assert all(set(planned.costs[op]) == set(table.costs[op]) for op in table.costs)


def test_reasons_describe_the_kept_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 11: with single-unit kept, every op's reason read "affinity: npu is preferred for Conv;
    # the schedule is no longer with it", the search's wording for a schedule that did not run
    # (yolov8n on rk3588 then). Without its probes the re-planned default loses to single-unit
    # here (with them it simulates the NPU's probe, single-unit's own order, and keeps that).
    import hwsim.replan as rp

    monkeypatch.setattr(rp, "_probes", lambda problem, most: [])
    result = run_graph(load_onnx(MODELS / "yolov5s.onnx"), load_chip("edge8"))
    assert result.choice is not None and result.choice.winner == "single-unit"
    reasons = [p.reason for p in result.schedule.placements.values()]
    assert reasons and all(r.startswith("single-unit: ") for r in reasons)
    assert all("no longer" not in r for r in reasons)
    on_npu = [p.reason for p in result.schedule.placements.values() if p.unit == "npu"]
    assert set(on_npu) == {"single-unit: the whole model on npu, the unit that finishes it first alone"}


@pytest.mark.parametrize("policy", ["affinity-locality", "heft", "cpop", "ort-greedy"])
def test_no_reason_is_worded_as_a_claim_about_the_schedule_length(kws, policy) -> None:
    result = run_graph(kws, load_chip("rk3588"), policy=policy)
    for p in result.schedule.placements.values():
        assert "no longer" not in p.reason
        if p.reason.startswith("affinity:"):
            assert p.reason == f"affinity: {p.unit} is the chip's preferred unit for {kws.op(p.op).op_type}"


def _least_cap_w(graph: ModelGraph, chip, table, name: str) -> float:
    """The lowest cap candidate ``name`` runs under (what it draws with one op alone, fused as checked)."""
    from cost_models.fusion import fuse
    from hwsim.sim.plan import plan
    from hwsim.sim.power import largest_solo_power_w
    from scheduler import POLICIES

    if name == policy_check.LEAST_POWER:
        sched = policy_check.least_power_schedule(graph, chip, table)
    else:
        sched = POLICIES[name](graph, chip, table)
    fused = fuse(graph, chip, table, {n: p.unit for n, p in sched.placements.items()}, "auto")
    p = plan(graph, chip, fused.table, sched)
    return largest_solo_power_w(chip, p, lambda i, k: p.cost[i], True)[0]


def test_a_power_cap_skips_the_candidates_it_rules_out_and_checks_the_rest():
    """mobilenetv1 on the RK3588: heft and affinity-list put an op on the GPU (3.27 W alone), the
    default and single-unit draw less; a cap between rules out heft, checked second."""
    from cost_models import cost_table
    from hwsim.sim.engine import EngineOptions
    from hwsim.sim.power import PowerCapError

    graph, chip = load_onnx(MODELS / "mobilenetv1.onnx"), load_chip("rk3588")
    table = cost_table(graph, chip, "int8")
    names = ("affinity-locality", *policy_check.CHECKED_AGAINST)
    least = {n: _least_cap_w(graph, chip, table, n) for n in names}
    cap = sorted(set(least.values()))[-2]
    fits = [n for n in names if least[n] <= cap]
    assert len(fits) >= 2 and names.index(min(set(names) - set(fits), key=names.index)) < names.index(fits[-1])
    chosen = policy_check.choose_schedule(graph, chip, table, options=EngineOptions(max_power_w=cap))
    assert [c.name for c in chosen.choice.candidates] == fits
    assert chosen.schedule.policy in fits and max(w for _, w in power_timeline(chip, chosen.trace)) <= cap * (1 + 1e-9)
    # every policy ruled out: the schedule that draws the least runs, under the cap; below what
    # it draws, the error stays
    lowest = _least_cap_w(graph, chip, table, policy_check.LEAST_POWER)
    assert lowest < min(least.values())
    cap = (lowest + min(least.values())) / 2
    chosen = policy_check.choose_schedule(graph, chip, table, options=EngineOptions(max_power_w=cap))
    assert chosen.schedule.policy == policy_check.LEAST_POWER
    assert max(w for _, w in power_timeline(chip, chosen.trace)) <= cap * (1 + 1e-9)
    with pytest.raises(PowerCapError, match="runs alone"):
        policy_check.choose_schedule(graph, chip, table, options=EngineOptions(max_power_w=lowest * 0.99))


def test_a_deadline_is_judged_on_the_run_with_its_sram_spills(tmp_path, capsys):
    """edge8 with the NPU's tensors in a 1 KiB SRAM domain: the spills (costed after the schedule
    is chosen) move the logits from 0.17 to 0.26 ms; the deadline of 0.2 ms was reported met."""
    import yaml

    chip = yaml.safe_load((ROOT / "chips" / "edge8.yaml").read_text())
    for dom in chip["domains"]:
        if dom["name"] == "npu":
            dom.update(kind="sram", bandwidth_gbps=100, capacity_kib=1)
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(chip, sort_keys=False))
    out = tmp_path / "out"
    code = main(["run", str(path), str(ROOT / "examples" / "models" / "mlp_mnist.onnx"), "--no-plots",
                 "--deadline", "logits=0.2", "--out", str(out)])  # fmt: skip
    s = json.loads((out / "summary.json").read_text())
    finish = {o["op"]: o["finish_ns"] / 1e6 for o in json.loads((out / "schedule.json").read_text())["ops"]}
    (d,) = s["deadlines"]
    assert s["spills"] and d["finish_ms"] == pytest.approx(finish[d["node"]], rel=1e-6)
    assert finish[d["node"]] > 0.2 and not d["met"] and code == 1


def _edge8_with_npu_sram(capacity_kib: float):
    """edge8 with the NPU's tensors in an SRAM domain of ``capacity_kib``."""
    import yaml

    from chips import chip_from_dict

    data = yaml.safe_load((ROOT / "chips" / "edge8.yaml").read_text())
    for dom in data["domains"]:
        if dom["name"] == "npu":
            dom.update(kind="sram", bandwidth_gbps=100, capacity_kib=capacity_kib)
    return chip_from_dict(data)


@pytest.mark.parametrize("model", ["resnet18", "mobilenetv2"])
def test_the_check_judges_each_candidate_on_its_run_with_the_sram_spills(model):
    """With the NPU's SRAM too small for the activations, every candidate the check reports is
    the latency of its run with the spills costed: the kept one is the run's latency and the
    fastest of them. Judged before the spills (as it was), the check kept a schedule whose run
    was slower than the figure it reported for it."""
    chip = _edge8_with_npu_sram(512)
    r = run_graph(load_onnx(MODELS / f"{model}.onnx"), chip)
    assert r.memory is not None and r.memory.spills  # the case under test: the SRAM overflows
    got = {c.name: c.latency_ms for c in r.choice.candidates}
    latency = r.trace.makespan_ps / 1e9
    assert got[r.choice.winner] == pytest.approx(latency, rel=1e-12)
    assert latency <= min(got.values()) * (1 + 1e-12)
