"""The sixteenth unseen batch (``benchmarks/heldout_unseen16.py``): each family runs under
onnxruntime, and a Sum of many inputs (WaveNet's skips) pays onnxruntime's pass over its output
per input after the second."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from chips.schema import chip_from_dict
from cost_models.cpu import variadic_passes
from cost_models.table import estimate
from graph_ir.ir import Tensor
from tests.helpers import host_chip, load_benchmarks, make_op, runs_finite


def _unseen16() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen16")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen16()
    families = ("t5", "wavenet")
    assert sorted({k.split("_")[0] for k in mod.SIZES}) == sorted(families)
    assert all(sum(k.startswith(f + "_") for k in mod.SIZES) == 2 for f in families)
    for name, model in (("t5", mod.t5(32, 64, 4, 1)), ("wavenet", mod.wavenet(256, 8, 1))):
        runs_finite(model, tmp_path / f"{name}.onnx")


@pytest.mark.parametrize("op_type", ["Sum", "Mean", "Max", "Min"])
def test_each_input_after_the_second_is_a_pass_over_the_output(op_type: str) -> None:
    chip = chip_from_dict(host_chip(op_overhead_ns=0.0))
    x = Tensor("x", (1, 32, 16000), "float32")
    cost = {n: estimate(make_op(op_type, [x] * n, [x]), chip, "cpu", "model") for n in (2, 3, 20)}
    assert [variadic_passes(make_op(op_type, [x] * n, [x])) for n in (2, 3, 20)] == [0, 1, 18]
    assert cost[2] is not None and "passes" not in cost[2].note
    for n in (3, 20):
        c = cost[n]
        assert c is not None
        first = max(c.compute_ns, c.memory_ns) - c.stall_ns  # the roofline of its first pass
        # each pass streams the output twice and one input: 3 of the n + 1 tensors its first pass streams
        assert c.stall_ns == pytest.approx(first * (n - 2) * 3 / (n + 1), rel=1e-9)
        assert c.latency_ns - c.overhead_ns == pytest.approx(first + c.stall_ns, rel=1e-9)
