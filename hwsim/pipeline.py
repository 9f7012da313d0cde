"""One typed pipeline: graph -> chip -> costs -> schedule -> trace -> analysis.

Each step is a plain function a test can call alone; :func:`run` chains them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from chips.schema import Chip, load_chip
from cost_models.table import CostTable, cost_table
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from hwsim.analysis import Analysis, analyze
from hwsim.engine import Trace, simulate
from scheduler import Schedule, schedule

__all__ = ["RunResult", "run", "run_graph"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything one simulation produced."""

    graph: ModelGraph
    chip: Chip
    precision: str
    table: CostTable
    schedule: Schedule
    trace: Trace
    analysis: Analysis


def run_graph(graph: ModelGraph, chip: Chip, precision: str = "int8", policy: str = "affinity-locality") -> RunResult:
    """Cost, schedule, simulate and analyze an already loaded graph on a chip."""
    table = cost_table(graph, chip, precision)
    sched = schedule(graph, chip, table, policy)
    trace = simulate(graph, chip, table, sched)
    return RunResult(graph, chip, precision, table, sched, trace, analyze(graph, chip, trace))


def run(
    chip: str | Path,
    model: str | Path,
    precision: str = "int8",
    policy: str = "affinity-locality",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> RunResult:
    """Load ``chip`` (a YAML path or bundled name) and ``model`` (an ONNX path) and run them."""
    spec = load_chip(chip)
    graph = load_onnx(model, input_shapes)
    return run_graph(graph, spec, precision, policy)
