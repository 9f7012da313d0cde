"""What onnxruntime's plain kernel pays for a grouped conv on this host: the fingerprint's
``grouped_run_ns``, ``grouped_element_ns`` and ``grouped_small_m_ns``
(:func:`cost_models.cpu.measured_grouped_ns`).

A grouped conv whose groups are not whole NCHWc blocks (ResNeXt's 32 groups of 4-8 channels)
runs on MLAS's plain kernel: per image and group, in slices of columns, an im2col of the group's
input and an SGEMM of M = the group's output channels (:func:`cost_models.cpu.grouped_work`).
Its time is the im2col's runs (one per output row and row of B: the copy's set-up and scalar
tails), the elements of B it writes and packs, their FMAs (few per B load where M is small) and
those of the rows outside MLAS's 12-row passes. A law of the rows of B fit on the CI Xeon
(:data:`cost_models.cpu.GROUPED_CONV_ROW_NS`) put ResNeXt-like convs +6..+41 % slow on an AMD
EPYC (Zen 5): pairs of convs with the same B, FMAs and rows of B and twice the output rows cost
twice the rows' price, so the runs set it, not the rows.

The probes (:data:`GROUPED_PROBES`): seven 3x3 grouped convs, four of 4 channels a group over
square planes of 56 to 7 (a run per 56 to 7 elements of B, as ResNeXt's stages) and three at 28 x
28 with 2, 8 and 12 output channels a group (the small rows), each profiled alone less the
profiler's time for an empty kernel; their FMAs at the fp32 peak, the three figures by
non-negative least squares on the rest, each probe weighed by its time (:func:`grouped_fields`).
They run only where onnxruntime's NCHWc blocks are 16 channels (AVX-512): with blocks of 8, the
probe of 8 channels a group would run blocked.

On an AMD EPYC (Zen 5, 2026-12-07): 2.0 ns a run, 0.116 an element, 0.0016 a small-row FMA; 37
grouped convs (2-24 channels a group, 7 x 7 to 112 x 112, strides 1 and 2, 1x1 to 5x5; four of
them the probes' shapes) then came out 33 of 37 within 10 % (median 3.9 %), the misses strided.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper
from scipy.optimize import nnls

from cost_models.cpu import grouped_work
from graph_ir.ir import Op, Tensor
from hwsim.host.measure import profile_nodes

__all__ = ["GROUPED_DERIVED", "GROUPED_PROBES", "grouped_fields", "grouped_probe", "grouped_times"]

#: The probes, key -> (input channels, output channels, groups, output rows, output columns): 3x3
#: convs of stride 1 and padding 1. The first four differ by their runs per element of B.
GROUPED_PROBES = {
    "grouped_probe_ns:c64g16:56x56": (64, 64, 16, 56, 56),
    "grouped_probe_ns:c128g32:28x28": (128, 128, 32, 28, 28),
    "grouped_probe_ns:c256g64:14x14": (256, 256, 64, 14, 14),
    "grouped_probe_ns:c512g128:7x7": (512, 512, 128, 7, 7),
    "grouped_probe_ns:c128o384g32:28x28": (128, 384, 32, 28, 28),
    "grouped_probe_ns:c128g16:28x28": (128, 128, 16, 28, 28),
    "grouped_probe_ns:c128g64:28x28": (128, 128, 64, 28, 28),
}
#: The chip fields :func:`grouped_fields` derives.
GROUPED_DERIVED = ("grouped_run_ns", "grouped_element_ns", "grouped_small_m_ns")


def _op(cin: int, cout: int, groups: int, rows: int, cols: int) -> Op:
    x, y = Tensor("x", (1, cin, rows, cols), "f"), Tensor("y", (1, cout, rows, cols), "f")
    w = Tensor("w", (cout, cin // groups, 3, 3), "f", True)
    return Op("g", "Conv", "conv", (x, w), (y,), {"group": groups, "pads": [1] * 4})


def grouped_probe(cin: int, cout: int, groups: int, rows: int, cols: int) -> onnx.ModelProto:
    """The one-conv model of a probe of :data:`GROUPED_PROBES` (input ``x``: 1 x cin x rows x cols)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((cout, cin // groups, 3, 3)) * 0.1).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="grouped", pads=[1] * 4, group=groups)
    graph = helper.make_graph([node], "grouped", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, cin, rows, cols])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [w])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def grouped_times(rounds: int = 3, empty_ns: float = 0.0) -> dict[str, float]:
    """Each probe of :data:`GROUPED_PROBES`: its fastest profiled kernel time over ``rounds`` runs of
    10, less ``empty_ns`` (the profiler's time for an empty kernel), ns."""
    out: dict[str, float] = {}
    for key, spec in GROUPED_PROBES.items():
        cin, _, _, rows, cols = spec
        feed = np.random.default_rng(1).standard_normal((1, cin, rows, cols)).astype(np.float32)
        times = [ns for _ in range(rounds) for _, (_, ns) in profile_nodes(grouped_probe(*spec), {"x": feed}, runs=10).items()]
        out[key] = min(times) - empty_ns
    return out


def grouped_fields(rates: Mapping[str, float], peak_flops_per_ns: float) -> dict[str, float]:
    """The chip fields of :data:`GROUPED_DERIVED` from the probe times in ``rates`` and the fp32
    peak (FLOP/ns): each probe's time less its FMAs at the peak, fit by non-negative least squares
    (each probe weighed by its time) to its runs, elements of B and small-row FMAs
    (:func:`cost_models.cpu.grouped_work`). Empty where a probe is missing or the runs or the
    elements come out at 0; ``grouped_small_m_ns`` may be 0.

    >>> from cost_models.cpu import grouped_work
    >>> def t(spec):  # a host of 2 ns a run, 0.1 an element, 0.002 a small-row FMA, 32 FLOP/ns
    ...     w = grouped_work(_op(*spec))
    ...     return w.runs * 2.0 + w.elements * 0.1 + w.small * 0.002 + w.fmas * 2 / 32
    >>> grouped_fields({k: t(s) for k, s in GROUPED_PROBES.items()}, 32.0)
    {'grouped_run_ns': 2.0, 'grouped_element_ns': 0.1, 'grouped_small_m_ns': 0.002}
    """
    if peak_flops_per_ns <= 0 or any(key not in rates for key in GROUPED_PROBES):
        return {}
    works = {key: grouped_work(_op(*spec)) for key, spec in GROUPED_PROBES.items()}
    times = np.array([rates[key] for key in GROUPED_PROBES])
    rest = times - np.array([w.fmas * 2 / peak_flops_per_ns for w in works.values()])
    design = np.array([[w.runs, w.elements, w.small] for w in works.values()], float)
    coef, _ = nnls(design / times[:, None], rest / times)
    run, element, small = (float(c) for c in coef)
    if run <= 0 or element <= 0:
        return {}
    return {"grouped_run_ns": round(run, 4), "grouped_element_ns": round(element, 5), "grouped_small_m_ns": round(small, 6)}
