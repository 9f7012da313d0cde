"""Whether a rewritten model computes what the original does, checked the way onnxsim checks its
simplifications (``onnxsim/model_checking.py``): both models in onnxruntime with graph
optimizations disabled (``ORT_DISABLE_ALL``, so that onnxruntime's own rewrites prove nothing on
our behalf), the same random inputs (at least 5 sets), and per output
``np.allclose(candidate, reference, rtol=1e-4, atol=1e-5)``.

A weightless model (absent external initializers) cannot run: :func:`prove` materializes it
with seeded random weights (:func:`graph_ir.materialize.fill_absent_weights`), runs the pass
on the materialized model and compares the two; ``hwsim rewrite --check`` does the same.
onnxruntime is imported lazily.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from graph_ir.materialize import fill_absent_weights, random_inputs
from graph_ir.rewrites.base import Pass, PassOptions, PassResult
from graph_ir.rewrites.edit import is_weightless

__all__ = ["ATOL", "INPUT_SETS", "RTOL", "CheckError", "Equivalence", "equivalent", "prove"]

#: onnxsim's tolerances, never raised to make a rewrite pass.
RTOL = 1e-4
ATOL = 1e-5
#: The fewest random input sets a check runs.
INPUT_SETS = 5


class CheckError(ValueError):
    """The models cannot be compared (weightless, an input that cannot be fed, a model
    onnxruntime rejects)."""


@dataclass(frozen=True, slots=True)
class Equivalence:
    """The outcome of :func:`equivalent`.

    Attributes
    ----------
    equal : every output of every input set within ``rtol`` / ``atol``.
    inputs : how many random input sets were run.
    output : the output with the largest absolute error (or the one that is missing / of
        another shape).
    max_abs_error : the largest ``|candidate - reference|`` over all outputs and inputs.
    max_rel_error : the largest ``|candidate - reference| / |reference|`` (where the reference
        is not 0).
    problem : a structural mismatch (output missing, shape or dtype differs), else "".
    """

    equal: bool
    inputs: int
    output: str
    max_abs_error: float
    max_rel_error: float
    problem: str = ""

    def line(self) -> str:
        """One line that says the outcome."""
        if self.problem:
            return f"output {self.output!r}: {self.problem}"
        verdict = "equal" if self.equal else "differs"
        return (
            f"{verdict} on {self.inputs} random inputs: worst output {self.output!r}, "
            f"max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g} "
            f"(rtol={RTOL:g}, atol={ATOL:g})"
        )


def _session(model: onnx.ModelProto, which: str) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    try:
        return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own Fail/InvalidGraph/... types
        raise CheckError(f"{which} model does not load in onnxruntime: {str(exc).splitlines()[0]}") from None


def equivalent(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    inputs: int = INPUT_SETS,
    rtol: float = RTOL,
    atol: float = ATOL,
    seed: int = 0,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Equivalence:
    """Run both models on ``inputs`` random input sets (seeds ``seed``, ``seed+1``...) and compare
    every output of the reference with the candidate's output of the same name.

    Raises
    ------
    CheckError
        A model is weightless (materialize it first, see :func:`prove`), does not load in
        onnxruntime, or has an input with an unpinned dynamic dimension.
    """
    for which, m in (("reference", reference), ("candidate", candidate)):
        if is_weightless(m):
            raise CheckError(f"{which} model is weightless; give it weights first (graph_ir.materialize)")
    ref, cand = _session(reference, "reference"), _session(candidate, "candidate")
    cand_outputs = {o.name for o in cand.get_outputs()}
    worst = Equivalence(True, 0, "", 0.0, 0.0)
    for k in range(max(inputs, 1)):
        try:
            feeds = random_inputs(reference, seed + k, input_shapes)
        except ValueError as exc:
            raise CheckError(str(exc)) from None
        names = [o.name for o in ref.get_outputs()]
        missing = [n for n in names if n not in cand_outputs]
        if missing:
            return Equivalence(False, k, missing[0], np.inf, np.inf, "missing from the candidate")
        expected = dict(zip(names, ref.run(names, feeds), strict=True))
        got = dict(zip(names, cand.run(names, {i.name: feeds[i.name] for i in cand.get_inputs()}), strict=True))
        for name in names:
            worst = _compare(worst, name, np.asarray(expected[name]), np.asarray(got[name]), rtol, atol)
            if worst.problem:
                return worst
        worst = Equivalence(worst.equal, k + 1, worst.output, worst.max_abs_error, worst.max_rel_error)
    return worst


def _compare(worst: Equivalence, name: str, ref: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> Equivalence:
    """``worst`` updated with output ``name``."""
    if ref.shape != got.shape or ref.dtype != got.dtype:
        what = f"shape {got.shape} {got.dtype} where the reference has {ref.shape} {ref.dtype}"
        return Equivalence(False, worst.inputs, name, np.inf, np.inf, what)
    ok = bool(np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True))
    if ref.size == 0:
        return Equivalence(worst.equal and ok, worst.inputs, worst.output or name, worst.max_abs_error, worst.max_rel_error)
    r, g = ref.astype(np.float64), got.astype(np.float64)
    both_nan = np.isnan(r) & np.isnan(g)
    diff = np.where(both_nan, 0.0, np.abs(g - r))
    diff = np.where(np.isnan(diff), np.inf, diff)
    abs_err = float(diff.max())
    nonzero = np.abs(r) > 0
    rel_err = float((diff[nonzero] / np.abs(r[nonzero])).max()) if nonzero.any() else 0.0
    out = worst.output if worst.output and abs_err <= worst.max_abs_error else name
    if not ok and worst.equal:
        out = name  # the first output that fails is the one named
    elif not worst.equal:
        out = worst.output
    return Equivalence(
        worst.equal and ok, worst.inputs, out, max(abs_err, worst.max_abs_error), max(rel_err, worst.max_rel_error)
    )


def prove(
    pass_: Pass,
    model: onnx.ModelProto,
    options: PassOptions | None = None,
    seed: int = 0,
    inputs: int = INPUT_SETS,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> tuple[PassResult, Equivalence]:
    """Run ``pass_`` on ``model`` (materialized with seeded random weights when weightless) and
    compare the result with its input (:func:`equivalent`).

    Returns
    -------
    The pass's result on the materialized model, and the comparison.
    """
    reference = fill_absent_weights(model, None, seed) if is_weightless(model) else model
    result = pass_(reference, options)
    return result, equivalent(reference, result.model, inputs=inputs, seed=seed, input_shapes=input_shapes)
