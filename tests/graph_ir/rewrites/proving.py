"""What every pass test does: run a pass and prove its result equal to its input
(:func:`graph_ir.rewrites.check.equivalent`, onnxsim's tolerances, at least 5 random inputs)."""

from __future__ import annotations

from pathlib import Path

import onnx

from graph_ir.rewrites import PassResult, get_pass
from graph_ir.rewrites.check import INPUT_SETS, prove

__all__ = ["MODELS", "bundled", "proven"]

MODELS = Path(__file__).resolve().parents[3] / "examples" / "models"


def bundled(name: str) -> onnx.ModelProto:
    """A bundled model as stored: weightless."""
    return onnx.load(str(MODELS / f"{name}.onnx"), load_external_data=False)


def proven(pass_name: str, model: onnx.ModelProto) -> PassResult:
    """``pass_name`` on ``model`` (materialized with random weights when weightless), asserted
    equal to its input on at least 5 random inputs; the result."""
    result, eq = prove(get_pass(pass_name), model)
    assert eq.inputs >= INPUT_SETS
    assert eq.equal, eq.line()
    onnx.checker.check_model(result.model, full_check=True)
    return result
