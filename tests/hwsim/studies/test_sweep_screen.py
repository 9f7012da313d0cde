"""The analytic screen of a sweep point (hwsim.studies.sweep_screen) on real models and chips."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwsim.studies.sweep import Point
from hwsim.studies.sweep_screen import SCREENED, ScreenError, screen, screener
from tests.helpers import MODELS, write_chip

RESNET = str(MODELS / "resnet18.onnx")


def _at(**params: object) -> Point:
    return Point(RESNET, "rk3588", tuple(params.items()))  # type: ignore[arg-type]


class TestScreen:
    def test_a_faster_npu_clock_cuts_latency_and_energy_not_power(self) -> None:
        slow, fast = screen(_at(**{"npu.clock_mhz": 600})), screen(_at(**{"npu.clock_mhz": 1200}))
        assert fast.unit == slow.unit == "npu"
        assert fast.latency_ms < slow.latency_ms and fast.energy_mj < slow.energy_mj
        assert fast.peak_power_w == slow.peak_power_w  # a core draws active_w whatever its clock

    def test_pruning_cuts_latency_and_energy(self) -> None:
        whole, pruned = screen(_at(prune=0.0)), screen(_at(prune=0.5))
        assert pruned.latency_ms < whole.latency_ms and pruned.energy_mj < whole.energy_mj

    def test_more_npu_cores_draw_more_peak_power_and_finish_sooner(self) -> None:
        one, three = screen(_at(**{"npu.cores": 1})), screen(_at(**{"npu.cores": 3}))
        assert three.peak_power_w > one.peak_power_w and three.latency_ms < one.latency_ms

    def test_fp16_goes_to_the_unit_with_the_highest_fp16_rate(self) -> None:
        # rk3588: the GPU's fp16 peak (1024 GFLOP/s) beats the NPU's three cores at fp16
        assert screen(_at(precision="fp16")).unit == "gpu"
        assert screen(_at(precision="int8")).unit == "npu"

    def test_the_estimate_is_in_the_simulations_order_of_magnitude(self) -> None:
        from hwsim.studies.sweep import evaluate

        p = _at(precision="int8", policy="heft")
        simulated = dict(evaluate(p).objectives)
        s = screen(p)
        for name in SCREENED:
            assert 0.1 < getattr(s, name) / simulated[name] < 10, name


class TestScreener:
    def test_none_when_no_objective_is_screened(self) -> None:
        assert screener(("peak_dram_mib",)) is None

    def test_values_by_name_and_skip_the_unscreened(self) -> None:
        values = screener(("peak_power_w", "peak_dram_mib", "latency_ms"))
        assert values is not None
        s = screen(_at())
        assert values(_at()) == {"peak_power_w": s.peak_power_w, "latency_ms": s.latency_ms}

    def test_an_invalid_chip_variant_is_none(self) -> None:
        values = screener(("latency_ms",))
        assert values is not None and values(_at(**{"npu.cores": 0})) is None

    def test_a_precision_no_unit_computes(self, tmp_path: Path) -> None:
        chip = str(write_chip(tmp_path / "int8only.yaml", flops_per_cycle={"int8": 64.0}))
        p = Point(RESNET, chip, (("precision", "fp32"),))
        with pytest.raises(ScreenError, match="computes fp32"):
            screen(p)
        values = screener(("latency_ms",))
        assert values is not None and values(p) is None
