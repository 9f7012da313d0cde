"""The eighteenth unseen batch (``benchmarks/heldout_unseen18.py``): each family builds, runs under
onnxruntime to a finite output, and is priced by ``hwsim validate`` kernel by kernel."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx

from chips.schema import chip_from_dict
from graph_ir.onnx_import import load_onnx
from hwsim.host.validate import cpu_chip, predict_nodes
from tests.helpers import batch_runs, host_chip, load_benchmarks


def _unseen18() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen18")


def _small(mod: ModuleType) -> dict[str, onnx.ModelProto]:
    return {"cbam": mod.cbam(32, (16, 32)), "centernet": mod.centernet(64, 32, 4), "convmixer": mod.convmixer(32, 16, 1, 9, 4),
            "nonlocal": mod.nonlocal_net(8, 16, 1), "tasnet": mod.tasnet(256, 16, 16, 1, 2)}  # fmt: skip


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen18()
    batch_runs(mod, _small(mod), tmp_path)


def test_every_node_of_each_family_is_priced(tmp_path: Path) -> None:
    chip = cpu_chip(chip_from_dict(host_chip()), 1)
    for name, model in _small(_unseen18()).items():
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        graph = load_onnx(path)
        preds = predict_nodes(graph, chip, 1, set())
        assert {op.name for op in graph.ops()} <= preds.keys(), name
        assert all(p.predicted_ns > 0 for n, p in preds.items() if graph.op(n).op_type in ("Conv", "ConvTranspose", "MatMul")), name
