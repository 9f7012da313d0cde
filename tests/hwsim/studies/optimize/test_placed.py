"""Fusion legality from the placement a candidate runs with (``hwsim.studies.optimize.placed``)."""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict
from chips.schema import load_chip
from cost_models.mapping import OpMapping, legality
from cost_models.table import cost_table
from graph_ir.ir import ModelGraph, Tensor
from hwsim.pipeline import RunResult, run_graph
from hwsim.studies.optimize.evaluate import Candidate
from hwsim.studies.optimize.placed import inert_fusion, placed_units, resolved, same_fusion
from tests.helpers import graph_from_ops


def _toy_chip() -> Chip:
    """An NPU and a CPU in one DRAM domain: both fuse activations, so a group forms on either."""
    return chip_from_dict({
        "name": "fz", "dram": {"bandwidth_gbps": 4.0, "latency_ns": 100}, "domains": [{"name": "d"}],
        "units": [
            {"name": "npu", "kind": "npu", "domain": "d", "clock_mhz": 1000, "mac_rows": 16, "mac_cols": 16,
             "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 512, "op_overhead_ns": 1000,
             "vector_ops_per_cycle": 64},
            {"name": "cpu", "kind": "cpu", "domain": "d", "clock_mhz": 1000, "flops_per_cycle": {"int8": 32},
             "l1_kib": 32, "l2_kib": 256, "op_overhead_ns": 1000},
        ],
    })  # fmt: skip


def _t(name: str, c: int = 16, hw: int = 14) -> Tensor:
    return Tensor(name, (1, c, hw, hw), "float32")


def _w(name: str, c: int = 16) -> Tensor:
    return Tensor(name, (c, c, 3, 3), "float32", is_weight=True)


EPILOGUES = ("Relu", "Sigmoid", "silu", "add", "fork")


def _graph(stages: list[list[str]]) -> ModelGraph:
    """Conv layers in a chain, each followed by its epilogue ops: ``silu`` is Sigmoid then a Mul
    that also reads the op before it, ``add`` a residual Add of the graph's second input, ``fork``
    a Relu beside the next op (the value read twice: no group can take both)."""
    ops: list[tuple[str, str, list[Tensor], list[Tensor]]] = []
    prev = "x"
    for i, epilogue in enumerate(stages):
        ops.append((f"conv{i}", "Conv", [_t(prev), _w(f"w{i}")], [_t(f"c{i}")]))
        prev = f"c{i}"
        for j, kind in enumerate(epilogue):
            name = f"e{i}_{j}"
            if kind == "silu":
                ops.append((f"{name}s", "Sigmoid", [_t(prev)], [_t(f"{name}s")]))
                ops.append((name, "Mul", [_t(prev), _t(f"{name}s")], [_t(name)]))
            elif kind == "add":
                ops.append((name, "Add", [_t(prev), _t("skip")], [_t(name)]))
            elif kind == "fork":
                ops.append((f"{name}f", "Relu", [_t(prev)], [_t(f"{name}f")]))
                ops.append((name, "Relu", [_t(prev)], [_t(name)]))
            else:
                ops.append((name, kind, [_t(prev)], [_t(name)]))
            prev = name
    return graph_from_ops("fz", [_t("x"), _t("skip")], ops)


@st.composite
def cases(draw: st.DrawFn) -> tuple[ModelGraph, Chip, dict[str, OpMapping], dict[str, OpMapping]]:
    """A small graph, a chip, a parent's mapping (unit pins) and a candidate's (the parent's with
    some pins changed and fusion knobs set), every mapping legal."""
    chip_obj = load_chip(draw(st.sampled_from(["rk3588", "edge8"])))
    stages = draw(st.lists(st.lists(st.sampled_from(EPILOGUES), min_size=1, max_size=3), min_size=1, max_size=2))
    graph = _graph(stages)
    table = cost_table(graph, chip_obj, "int8")

    def legal(op: str, m: OpMapping) -> OpMapping:
        return m if legality(graph.op(op), chip_obj, table, m) is None else OpMapping()

    parent: dict[str, OpMapping] = {}
    child: dict[str, OpMapping] = {}
    for op in graph.order:
        units = (None, *table.eligible(op))
        pin = draw(st.sampled_from(units))
        parent[op] = legal(op, OpMapping(unit=pin))
        moved = draw(st.sampled_from(units)) if draw(st.booleans()) else parent[op].unit
        child[op] = legal(op, OpMapping(unit=moved, fusion=draw(st.sampled_from((None, True, False)))))
    return graph, chip_obj, parent, child


def _same_run(a: RunResult, b: RunResult) -> bool:
    from hwsim.report.summary import build_summary

    sa, sb = build_summary(a), build_summary(b)
    return (a.trace.makespan_ps, sa.energy_mj, a.fused) == (b.trace.makespan_ps, sb.energy_mj, b.fused)


class TestInertFusion:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=cases())
    def test_a_knob_it_drops_changes_nothing_when_no_schedule_of_the_run_without_it_fuses_otherwise(
        self, case: tuple[ModelGraph, Chip, dict[str, OpMapping], dict[str, OpMapping]]
    ) -> None:
        """The legality filter never drops a knob that could change the simulated result: the
        candidate less the knobs inert on its parent's placement simulates exactly as the
        candidate itself wherever the knobs change the fusion of none of the schedules that run
        simulated (``same_fusion`` on ``ScheduleChoice.simulated``: what the search checks
        before it skips the candidate). Inert on the parent's placement alone is not enough: a
        pin moves other ops, and a knob can change a schedule the run simulated and did not keep."""
        graph, chip, parent, child = case
        run = run_graph(graph, chip, "int8", mapping=parent)
        placement = {n: p.unit for n, p in run.schedule.placements.items()}
        inert = inert_fusion(graph, chip, "int8", placement, child)
        assert inert <= {op for op, m in child.items() if m.fusion is not None}
        kept = {op: replace(m, fusion=None) if op in inert else m for op, m in child.items()}
        twin = run_graph(graph, chip, "int8", mapping=kept)
        assert twin.choice is not None and twin.choice.simulated
        checked = bool(inert) and same_fusion(graph, chip, "int8", [dict(p) for p in twin.choice.simulated], child, kept)
        event(f"inert knobs: {bool(inert)}, skipped: {checked}")
        if checked:
            assert _same_run(run_graph(graph, chip, "int8", mapping=child), twin)

    def test_a_split_pair_makes_the_knob_inert_and_a_pin_that_joins_it_makes_it_count(self) -> None:
        """conv on the NPU, its ReLU on the CPU: no group, so forcing fusion changes nothing; the
        candidate that pins the ReLU to the NPU too makes the group, and its knob counts."""
        graph, chip = _graph([["Relu"]]), _toy_chip()
        split = {"conv0": "npu", "e0_0": "cpu"}
        off = {"conv0": OpMapping(fusion=False)}
        assert inert_fusion(graph, chip, "int8", split, off) == {"conv0"}
        assert inert_fusion(graph, chip, "int8", split, {**off, "e0_0": OpMapping(unit="npu")}) == frozenset()
        assert placed_units(split, {"e0_0": OpMapping(unit="npu")}) == {"conv0": "npu", "e0_0": "npu"}

    def test_fusion_on_a_group_auto_keeps_is_inert_and_off_is_not(self) -> None:
        graph, chip = _graph([["Relu"]]), _toy_chip()
        together = {"conv0": "npu", "e0_0": "npu"}
        assert inert_fusion(graph, chip, "int8", together, {"e0_0": OpMapping(fusion=True)}) == {"e0_0"}
        assert inert_fusion(graph, chip, "int8", together, {"e0_0": OpMapping(fusion=False)}) == frozenset()

    def test_a_knob_another_member_overrides_is_inert(self) -> None:
        """The group's first member with a knob decides (head first): the second's changes nothing."""
        graph, chip = _graph([["Relu"]]), _toy_chip()
        together = {"conv0": "npu", "e0_0": "npu"}
        both = {"conv0": OpMapping(fusion=False), "e0_0": OpMapping(fusion=True)}
        assert inert_fusion(graph, chip, "int8", together, both) == {"e0_0"}

    def test_no_knob_no_work(self) -> None:
        graph, chip = _graph([["Relu"]]), _toy_chip()
        assert inert_fusion(graph, chip, "int8", {}, {}) == frozenset()
        assert inert_fusion(graph, chip, "int8", {"conv0": "npu"}, {"conv0": OpMapping(unit="npu")}) == frozenset()


class TestSameFusion:
    def test_a_knob_counts_where_one_simulated_schedule_groups_its_op(self) -> None:
        """Split on the final placement, together on another schedule the run simulated: the
        knob changes that one, so the runs may differ."""
        graph, chip = _graph([["Relu"]]), _toy_chip()
        split, together = {"conv0": "npu", "e0_0": "cpu"}, {"conv0": "npu", "e0_0": "npu"}
        a, b = {"conv0": OpMapping(fusion=False)}, {}
        assert same_fusion(graph, chip, "int8", [split], a, b)
        assert not same_fusion(graph, chip, "int8", [split, together], a, b)
        assert same_fusion(graph, chip, "int8", [together], {"conv0": OpMapping(fusion=True)}, b)  # auto fuses it anyway


class TestResolved:
    def test_drops_only_the_inert_knobs_and_keeps_the_others(self) -> None:
        graph, chip = _graph([["Relu"]]), _toy_chip()
        c = Candidate.of((), {"conv0": {"unit": "npu", "fusion": False}, "e0_0": {"fusion": True}})
        got = resolved(c, graph, chip, "int8", {"conv0": "npu", "e0_0": "cpu"})
        assert got.signature_dict() == {"conv0": {"unit": "npu"}}
        assert resolved(got, graph, chip, "int8", {"conv0": "npu", "e0_0": "cpu"}) == got
        fused = {"conv0": "npu", "e0_0": "npu"}
        assert resolved(c, graph, chip, "int8", fused).signature_dict() == {"conv0": {"unit": "npu", "fusion": False}}


def test_stage_2_skips_a_signature_that_resolves_to_one_tried() -> None:
    """A queued signature whose fusion knob is inert on the incumbent's placement is the
    incumbent itself once resolved; the incumbent's run grouped neither op, so the candidate
    would run exactly as it did: skipped (counted in ``skipped``, not a trial); the op's next
    signature comes in the next round."""
    from hwsim.studies.optimize import driver
    from hwsim.studies.optimize.evaluate import Outcome
    from hwsim.studies.optimize.search import Record, SearchResult

    graph, chip = _graph([["Relu"]]), _toy_chip()
    split = (("conv0", "npu"), ("e0_0", "cpu"))
    inc = Record(0, "baseline", Candidate(), Outcome("k", 1.0, 1.0, 1.0, 0, True, None, 0.0, split, (split,)), 0.0, None, False)

    class S:
        result = SearchResult(records=[inc])

        def resolve(self, c: Candidate, parent: Record) -> Candidate:
            return resolved(c, graph, chip, "int8", dict(parent.outcome.placement))

        def same_run(self, raw: Candidate, c: Candidate) -> bool | None:
            return True if c == inc.candidate else None

    queues = {"conv0": deque([OpMapping(fusion=False), OpMapping(unit="npu")])}
    s, pending = S(), {}  # type: ignore[var-annotated]
    tried = {inc.candidate.key}
    assert driver._next_new(s, inc, "conv0", queues, tried, pending) is None  # type: ignore[arg-type]
    assert s.result.skipped == 1 and list(queues["conv0"]) == [OpMapping(unit="npu")]
    got = driver._next_new(s, inc, "conv0", queues, tried, pending)  # type: ignore[arg-type]
    assert got is not None and got.signature_dict() == {"conv0": {"unit": "npu"}}
    assert s.result.skipped == 1 and "conv0" not in queues and pending == {} and got.key in tried
