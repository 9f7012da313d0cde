"""The fingerprint's probe of what onnxruntime's Softmax pays for a row whose last vector is
partial, apart and in place (the chip fields ``vector_floats``, ``softmax_tail_ns``,
``softmax_tail_element_ns`` and ``softmax_in_place_tail_ns``;
:func:`cost_models.cpu_layout.softmax_tails_ns`).

MLAS works a Softmax row in vectors of the host's widest instruction set, the last one partial
where the row is not a whole number of them. On an AMD EPYC (Zen 5, AVX-512, onnxruntime 1.32) a
row of 47 floats took 23.9 ns where one of 48 took 15.1: a partial vector of 1 float cost 3.4 ns
beyond the time per element of whole vectors, one of 15 floats 11.2-11.8. onnxruntime's arena plan
lets a float Softmax write over its input where nothing else reads it (attention's scores): then
such a row costs 10-13.7 ns more again, whatever its partial vector (rows of 33 to 63 floats).

The probe runs ``x -> Mul -> t -> Softmax -> y -> Mul -> z`` (the Muls keep ``t`` and ``y`` in the
arena, as in a model: a graph output has a buffer of its own) and the same model with ``t`` also
an output (the Softmax then writes a buffer of its own), and times the Softmax kernel alone with
onnxruntime's profiler, over rows of ``2v``, ``2v + 1``, ``3v - 1`` and ``3v`` floats (``v`` the
host's vector), the same row count:

- the whole rows give the time per element (``3v`` against ``2v``);
- ``2v + 1`` and ``3v - 1`` what a partial vector of 1 and of ``v - 1`` floats costs beyond it:
  ``softmax_tail_ns`` per row and ``softmax_tail_element_ns`` per float of the partial vector,
  the line through the two (on that EPYC the partial vectors of 8 to 14 floats cost 1-2.5 ns
  less than the line says);
- ``softmax_in_place_tail_ns``: rows of ``3v - 1`` in place against apart, per row.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from hwsim.host.measure import nchwc_block, profile_nodes

__all__ = ["SOFTMAX_TAIL_FIELDS", "SOFTMAX_TAIL_ROWS", "softmax_tail_model", "softmax_tail_rates", "tail_fields"]

#: Rows of each probe: 2,048 rows of up to 48 floats are 385 KiB a tensor, in any L2 this project
#: runs on with the Softmax's input and output.
SOFTMAX_TAIL_ROWS = 2048
#: The chip fields :func:`softmax_tail_rates` writes.
SOFTMAX_TAIL_FIELDS = ("vector_floats", "softmax_tail_ns", "softmax_tail_element_ns", "softmax_in_place_tail_ns")


def softmax_tail_model(rows: int, width: int, apart: bool) -> onnx.ModelProto:
    """``x -> Mul -> t -> Softmax -> y -> Mul -> z`` over ``rows`` x ``width`` floats; with
    ``apart`` ``t`` is an output too, so the Softmax cannot write over it."""
    outs = [helper.make_tensor_value_info("z", TensorProto.FLOAT, [rows, width])]
    if apart:
        outs.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, [rows, width]))
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "c"], ["t"], name="scale"),
         helper.make_node("Softmax", ["t"], ["y"], name="softmax", axis=-1),
         helper.make_node("Mul", ["y", "c"], ["z"], name="after")],
        "softmax_tail", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])], outs,
        [numpy_helper.from_array(np.array(0.5, np.float32), "c")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _softmax_ns(rows: int, width: int, apart: bool, rounds: int) -> float:
    """The fastest profiled Softmax time of :func:`softmax_tail_model` over ``rounds`` profiled runs of 10, ns."""
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (rows, width)).astype(np.float32)
    model = softmax_tail_model(rows, width, apart)
    return min(profile_nodes(model, {"x": x}, runs=10)["softmax"][1] for _ in range(rounds))


def tail_fields(apart: Mapping[int, float], in_place: float, vector: int, rows: int) -> dict[str, float]:
    """``softmax_tail_ns``, ``softmax_tail_element_ns`` and ``softmax_in_place_tail_ns`` from the
    probe's Softmax times over ``rows`` rows: ``apart`` by row length (``2v``, ``2v + 1``, ``3v - 1``,
    ``3v`` for a ``vector`` of ``v`` floats), ``in_place`` rows of ``3v - 1``; each left out where
    it is not positive.

    >>> t = {32: 12.8e3, 33: 16.4e3, 47: 24.2e3, 48: 15.2e3}  # us over 1,000 rows: 0.15 ns a float
    >>> {k: round(v, 2) for k, v in tail_fields(t, 36.4e3, 16, 1000).items()}
    {'softmax_tail_ns': 3.04, 'softmax_tail_element_ns': 0.41, 'softmax_in_place_tail_ns': 12.2}
    """
    v = vector
    per_float = (apart[3 * v] - apart[2 * v]) / (v * rows)
    one = (apart[2 * v + 1] - apart[2 * v]) / rows - per_float
    most = (apart[3 * v - 1] - apart[2 * v]) / rows - (v - 1) * per_float
    element = (most - one) / (v - 2)
    out = {"softmax_tail_ns": one - element, "softmax_tail_element_ns": element,
           "softmax_in_place_tail_ns": (in_place - apart[3 * v - 1]) / rows}  # fmt: skip
    return {k: x for k, x in out.items() if x > 0}


def softmax_tail_rates(rounds: int = 5) -> dict[str, float]:
    """:data:`SOFTMAX_TAIL_FIELDS` on this host (see the module docstring); ``vector_floats`` from
    the CPU's flags (:func:`~hwsim.host.measure.nchwc_block`), nothing where they name no AVX2."""
    v = nchwc_block()
    if not v:
        return {}
    rows = SOFTMAX_TAIL_ROWS
    apart = {w: _softmax_ns(rows, w, True, rounds) for w in (2 * v, 2 * v + 1, 3 * v - 1, 3 * v)}
    in_place = _softmax_ns(rows, 3 * v - 1, False, rounds)
    return {"vector_floats": float(v), **tail_fields(apart, in_place, v, rows)}
