"""What the one-op kernel benchmarks share (``strided_fft.py``, ``single_axis_transposes.py``): the
command line, a kernel's measured time, and hwsim's price of the model's one op on a fingerprinted
host's chip file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

__all__ = ["kernel_ns", "node_prices", "parser", "price_ns"]


def parser(doc: str) -> argparse.ArgumentParser:
    """The command line of a one-op benchmark: ``--chip`` (required) and ``--rounds`` (default 3)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--chip", required=True, help="a fingerprinted host's chip file")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, interleaved (default 3)")
    return ap


def kernel_ns(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> float:
    """The model's one kernel's time, the fastest of 11 profiled runs on 1 thread, ns."""
    from hwsim.host.measure import profile_nodes

    return min(ns for _, ns in profile_nodes(model, feeds, threads=1, runs=11).values())


def price_ns(model: onnx.ModelProto, chip_path: str) -> float:
    """hwsim's price of the model's one op on the chip file's CPU, ns."""
    from chips import load_chip
    from cost_models.table import estimate
    from graph_ir.onnx_import import from_model_proto

    chip = load_chip(chip_path)
    cost = estimate(next(iter(from_model_proto(model).ops())), chip, chip.units[0].name, "model")
    assert cost is not None
    return cost.latency_ns


def node_prices(model: onnx.ModelProto, chip_path: str) -> dict[str, float]:
    """hwsim's price of each node of ``model`` as ``hwsim validate`` predicts the model on 1 thread
    (onnxruntime's arena and the caches replayed), ns, by node name."""
    from chips import load_chip
    from graph_ir.onnx_import import from_model_proto
    from hwsim.host.validate import cpu_chip, predict_nodes

    pred = predict_nodes(from_model_proto(model, f"{model.graph.name}.onnx"), cpu_chip(load_chip(chip_path), 1), 1, set())
    return {name: p.predicted_ns for name, p in pred.items()}
