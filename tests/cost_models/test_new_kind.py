"""A new unit kind is one schema class plus one cost model: a toy kind defined here, registered
for the test and removed afterwards, runs a bundled model through the whole pipeline (costs,
fusion, scheduling, the engine, analysis and every report file), and an unknown or incomplete
kind is an error that names what is missing, never a silent default."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field

from chips import Chip, ChipError, chip_from_dict
from chips.schema import Dtype, Unit, register_unit_kind, unit_kinds, unregister_unit_kind
from cost_models.base import (
    OpCost,
    UnitModel,
    efficiency,
    finish,
    model_for,
    op_handlers,
    register_model,
    registered_kinds,
    unregister_model,
)
from cost_models.fusion import fuses
from cost_models.table import cost_table
from graph_ir.categories import COSTED_CATEGORIES, Category
from graph_ir.ir import ModelGraph, Op
from graph_ir.onnx_import import load_onnx
from hwsim.pipeline import run_graph
from hwsim.report.files import write_reports
from hwsim.studies.sensitivity import default_parameters
from tests.helpers import MODELS


class ToyUnit(Unit):
    """A vector engine of ``lanes`` lanes with a ``buffer_kib`` scratchpad."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 0
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "lanes")

    kind: Literal["toy"] = "toy"
    lanes: int = Field(gt=0)
    buffer_kib: float = Field(gt=0)

    def dtypes(self) -> tuple[str, ...]:
        return ("int8", "fp16", "fp32")

    def onchip_bytes(self) -> float:
        return self.buffer_kib * 1024

    def peak_flops_per_ns(self, dtype: str) -> float:
        return 4 * self.lanes * self.clock_mhz * 1e-3 if dtype in self.dtypes() else 0.0


TOY_EFFICIENCY: dict[Category, float] = dict.fromkeys(COSTED_CATEGORIES, 0.5)


class ToyModel(UnitModel[ToyUnit]):
    """Every op at ``lanes`` FLOP per cycle; a Conv at four times that (its own handler)."""

    unit_class = ToyUnit
    default_fuses = frozenset(("Relu",))
    default_efficiency = TOY_EFFICIENCY

    def roofline(self, op: Op, unit: ToyUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        return self._at(op, unit, chip, dtype, in_b + w_b, out_b, unit.lanes, "toy roofline")

    def conv(self, op: Op, unit: ToyUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        return self._at(op, unit, chip, dtype, in_b + w_b, out_b, 4 * unit.lanes, "toy conv")

    def _at(self, op: Op, unit: ToyUnit, chip: Chip, dtype: Dtype, read: int, written: int,
            flop_per_cycle: float, note: str) -> OpCost:  # fmt: skip
        rate = flop_per_cycle * unit.clock_mhz * 1e-3 * efficiency(unit, op, TOY_EFFICIENCY)
        return finish(op, unit, chip, dtype, op.flops / rate, 0, 0.0, read, written, note)

    handlers = op_handlers((("Conv",), conv))


@pytest.fixture
def toy_kind() -> Iterator[None]:
    """The toy kind, registered for one test and removed afterwards."""
    register_unit_kind(ToyUnit)
    try:
        register_model(ToyModel())
        yield
    finally:
        if "toy" in registered_kinds():
            unregister_model("toy")
        unregister_unit_kind("toy")


def _toy_chip_data() -> dict[str, Any]:
    """A CPU beside a toy unit; the toy is preferred for every op type."""
    return {
        "name": "toychip",
        "dram": {"bandwidth_gbps": 10.0, "latency_ns": 100},
        "domains": [{"name": "dram"}],
        "units": [
            {"name": "cpu", "kind": "cpu", "domain": "dram", "clock_mhz": 1500, "cores": 2,
             "flops_per_cycle": {"fp32": 8, "int8": 32}},
            {"name": "toy", "kind": "toy", "domain": "dram", "clock_mhz": 800, "lanes": 256,
             "buffer_kib": 512, "op_overhead_ns": 2000},
        ],
        "default_affinity": ["toy", "cpu"],
    }  # fmt: skip


@pytest.fixture(scope="module")
def resnet18() -> ModelGraph:
    return load_onnx(MODELS / "resnet18.onnx")


def test_a_toy_kind_runs_a_bundled_model_through_the_whole_pipeline(
    toy_kind: None, resnet18: ModelGraph, tmp_path: Path
) -> None:
    chip = chip_from_dict(_toy_chip_data())
    assert isinstance(chip.unit("toy"), ToyUnit)
    table = cost_table(resnet18, chip)
    convs = [op.name for op in resnet18.ops() if op.op_type == "Conv"]
    assert convs and all(table.costs[c]["toy"].note == "toy conv" for c in convs)
    assert {c.note for row in table.costs.values() if "toy" in row for c in [row["toy"]]} >= {"toy roofline"}

    result = run_graph(resnet18, chip, precision="int8")
    on_toy = {op for op, p in result.schedule.placements.items() if p.unit == "toy"}
    assert len(on_toy & set(convs)) > len(convs) / 2  # the downsampling 1x1 convs may go beside
    assert any(p.unit == "toy" and resnet18.op(p.consumer).op_type == "Relu" for p in result.fused)

    written = write_reports(result, tmp_path)
    assert {p.name for p in written} >= {"summary.json", "trace.json", "critical_path.txt", "traffic.csv"}
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["units"]["toy"]["kind"] == "toy"
    assert summary["units"]["toy"]["ops"] == len(on_toy)
    assert '"toy (toy' in (tmp_path / "trace.json").read_text(encoding="utf-8")


def test_a_toy_kinds_facts_are_read_from_its_classes(toy_kind: None, resnet18: ModelGraph) -> None:
    chip = chip_from_dict(_toy_chip_data())
    toy = chip.unit("toy")
    assert fuses(toy) == frozenset(("Relu",))
    assert default_parameters(chip)[:3] == ["cpu.clock_mhz", "toy.clock_mhz", "toy.lanes"]
    ort = run_graph(resnet18, chip, precision="int8", policy="ort-greedy")  # the toy's EP first
    assert {p.unit for p in ort.schedule.placements.values()} == {"toy"}


def test_after_clean_up_the_kind_is_unknown_and_the_error_names_the_known_ones() -> None:
    assert "toy" not in unit_kinds() and "toy" not in registered_kinds()
    with pytest.raises(ChipError, match=r"units\[toy\]: .*'toy'.*'cpu', 'gpu', 'npu', 'dsp'"):
        chip_from_dict(_toy_chip_data())


def test_a_kind_without_a_cost_model_fails_naming_it(resnet18: ModelGraph) -> None:
    register_unit_kind(ToyUnit)
    try:
        chip = chip_from_dict(_toy_chip_data())
        with pytest.raises(KeyError, match=r"no cost model for unit kind 'toy'; registered: \["):
            cost_table(resnet18, chip)
    finally:
        unregister_unit_kind("toy")


def test_a_kind_must_state_its_facts() -> None:
    class Vague(Unit):
        kind: Literal["vague"] = "vague"

        def dtypes(self) -> tuple[str, ...]:
            return ("fp32",)

    with pytest.raises(TypeError, match="'vague'.*general_purpose, ep_priority, sweep_fields, onchip_bytes()"):
        register_unit_kind(Vague)
    assert "vague" not in unit_kinds()


def test_a_kind_is_registered_once() -> None:
    class OtherCpu(ToyUnit):
        kind: Literal["cpu"] = "cpu"  # type: ignore[assignment]

    with pytest.raises(ValueError, match="'cpu' is already registered by CpuUnit"):
        register_unit_kind(OtherCpu)


def test_a_model_needs_an_efficiency_for_every_category(toy_kind: None) -> None:
    class Partial(ToyModel):
        default_efficiency = MappingProxyType({c: e for c, e in TOY_EFFICIENCY.items() if c != "softmax"})

    with pytest.raises(ValueError, match=r"'toy': no default efficiency for \['softmax'\]"):
        register_model(Partial())
    assert model_for("toy").default_efficiency is TOY_EFFICIENCY


def test_a_model_for_a_kind_the_schema_lacks_is_refused() -> None:
    with pytest.raises(KeyError, match="unknown unit kind 'toy'; registered kinds: cpu, gpu, npu, dsp"):
        register_model(ToyModel())


def test_a_model_refuses_a_unit_of_another_kind(rk3588: Chip, resnet18: ModelGraph) -> None:
    op = next(iter(resnet18.ops()))
    with pytest.raises(TypeError, match="NpuModel models npu units; 'cpu_big' is a cpu"):
        model_for("npu").estimate(op, rk3588.unit("cpu_big"), rk3588, "int8")
