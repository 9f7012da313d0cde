"""What an embedding lookup pays for rows that are not in any cache: the fingerprint's
``gather_dram_row_ns`` and ``gather_dram_line_ns`` (:func:`cost_models.cpu.cold_gather_ns`).

onnxruntime's Gather copies one row per index. Where the rows sit in a cache (a loop of runs over
the same ids, a model whose weights stay cached) the copy runs at the op's calibrated rate. Where
they do not (BERT's word embeddings, evicted between runs by the 340 MB of weights that stream
through the caches), each row is a demand miss to DRAM, and the misses of one row overlap better
than those of successive rows. Measured alone on an AMD EPYC (1 thread, onnxruntime 1.32; ids
spread over tables of 25-94 MB; a 64 MB pass over another tensor first, so that no row is cached;
2026-12-05):

==============  =====  ==========
row             lines  ns a row
==============  =====  ==========
256 B           4      80-93
768 B           12     177
1 KB            16     198
3 KB            48     633
==============  =====  ==========

against 9-44 ns a row from the caches (150 for 3 KB rows). Beyond its time with the rows cached
(the calibrated rate), a row from DRAM costs 29-46 ns more plus 5.6-8 ns a line of 64 bytes: the probe
times two row widths (:data:`GATHER_DRAM_PROBES`) both ways and solves for the two figures.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from cost_models.cpu_layout import LINE_BYTES

__all__ = ["FLUSH_FLOATS", "GATHER_DRAM_DERIVED", "GATHER_DRAM_PROBES", "gather_dram_from", "gather_dram_probe", "gather_dram_times"]

#: ``(table rows, row floats, ids)`` of the two probes, and the key of each probe's time per row:
#: 4 and 48 lines a row (a recommender's item vector, a transformer's token), tables of 26 and 37 MB.
GATHER_DRAM_PROBES: dict[str, tuple[int, int, int]] = {
    "gather_dram_probe_ns:64": (100_000, 64, 2048),
    "gather_dram_probe_ns:768": (12_000, 768, 512),
}
#: Floats of the pass that runs before each probe's Gather (64 MiB: more than any last-level cache
#: this project runs on), so that none of the table's rows is cached when it starts.
FLUSH_FLOATS = 16 * 1024 * 1024
#: The chip fields :func:`gather_dram_from` gives, in its order.
GATHER_DRAM_DERIVED = ("gather_dram_row_ns", "gather_dram_line_ns")


def gather_dram_probe(rows: int, width: int, ids: int, flush: int = FLUSH_FLOATS) -> onnx.ModelProto:
    """A Gather (node ``gather``) of ``ids`` rows from a ``rows x width`` float table whose ids wait
    on a pass over ``big`` (``flush`` floats: Neg, then a max that becomes a zero added to the ids)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((rows, width)).astype(np.float32), "table"),
             numpy_helper.from_array(np.array([0], np.int64), "zero")]  # fmt: skip
    nodes = [
        helper.make_node("Neg", ["big"], ["neg"], name="flush"),
        helper.make_node("ReduceMax", ["neg"], ["top"], name="top", keepdims=1),
        helper.make_node("Cast", ["top"], ["top_i"], name="cast", to=TensorProto.INT64),
        helper.make_node("Mul", ["top_i", "zero"], ["nil"], name="nil"),
        helper.make_node("Add", ["ids", "nil"], ["late_ids"], name="late"),
        helper.make_node("Gather", ["table", "late_ids"], ["y"], name="gather", axis=0),
    ]
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [ids]),
              helper.make_tensor_value_info("big", TensorProto.FLOAT, [flush])]  # fmt: skip
    graph = helper.make_graph(nodes, "gather_dram", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ids, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def gather_dram_times(rounds: int = 3) -> dict[str, float]:
    """Each probe of :data:`GATHER_DRAM_PROBES`: what its Gather takes per row with its rows in
    DRAM beyond what it takes with them cached (the same ids after a pass of 16 floats), ns, from
    onnxruntime's profiler, the fastest of ``rounds`` profiled runs of 5 each."""
    from hwsim.host.measure import profile_nodes

    rng = np.random.default_rng(1)
    out: dict[str, float] = {}
    for key, (rows, width, ids) in GATHER_DRAM_PROBES.items():
        feeds = {"ids": rng.integers(0, rows, ids).astype(np.int64)}
        best = {}
        for flush in (FLUSH_FLOATS, 16):
            model, big = gather_dram_probe(rows, width, ids, flush), rng.standard_normal(flush).astype(np.float32)
            best[flush] = min(profile_nodes(model, {**feeds, "big": big}, runs=5, opt="disable")["gather"][1] for _ in range(rounds))
        if best[FLUSH_FLOATS] > best[16]:
            out[key] = (best[FLUSH_FLOATS] - best[16]) / ids
    return out


def gather_dram_from(times: Mapping[str, float]) -> tuple[float, float] | None:
    """``(gather_dram_row_ns, gather_dram_line_ns)`` from the probes' extra times per row
    (:func:`gather_dram_times`): ``t = row + lines x line`` solved on the two widths; None without
    both or for a figure not positive.

    >>> gather_dram_from({"gather_dram_probe_ns:64": 31.0 + 4 * 12.0, "gather_dram_probe_ns:768": 31.0 + 48 * 12.0})
    (31.0, 12.0)
    >>> gather_dram_from({"gather_dram_probe_ns:64": 80.0}) is None
    True
    """
    if not all(k in times for k in GATHER_DRAM_PROBES):
        return None
    (narrow, (_, w1, _)), (wide, (_, w2, _)) = ((k, GATHER_DRAM_PROBES[k]) for k in GATHER_DRAM_PROBES)
    lines1, lines2 = w1 * 4 / LINE_BYTES, w2 * 4 / LINE_BYTES
    line = (times[wide] - times[narrow]) / (lines2 - lines1)
    row = times[narrow] - lines1 * line
    return (row, line) if row > 0 and line > 0 else None
