"""The nineteenth unseen batch (``benchmarks/heldout_unseen19.py``): each family runs under
onnxruntime, and a weight read by many ops (an unrolled decoder's cell and output layer, used at
every step) counts once towards what a loop of runs keeps cached."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import onnx

from chips.schema import chip_from_dict
from cost_models.table import run_weight_bytes, steady_state_unit
from graph_ir.ir import Tensor
from graph_ir.onnx_import import load_onnx
from tests.helpers import batch_runs, graph_from_ops, host_chip, load_benchmarks


def _unseen19() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen18", "heldout_unseen19")


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen19()
    batch_runs(mod, {"fusedmb": mod.fusedmb(32, 8, 1, 1), "highway": mod.highway(8, 6), "mfcc": mod.mfcc(4000, 16, 1),
                     "seq2seq": mod.seq2seq(8, 16, 3, 50), "widedeep": mod.widedeep(16, 200, (100, 100), 4, (32,))},
               tmp_path)  # fmt: skip


def test_an_unrolled_decoder_s_weights_count_once(tmp_path: Path) -> None:
    path = tmp_path / "seq2seq.onnx"
    onnx.save(_unseen19().seq2seq(64, 256, 16), str(path))
    graph = load_onnx(path)
    per_use = sum(op.weight_bytes() for op in graph.ops() if op.op_type != "Gather")
    distinct = {t.name: t.elements * 4 for op in graph.ops() if op.op_type != "Gather" for t in op.weights}
    assert per_use > 10 * sum(distinct.values())  # 16 steps reuse the cell's and the output layer's
    assert run_weight_bytes(graph) < per_use / 10
    # 4 MB: a 32 MiB L3 keeps them from run to run
    unit = chip_from_dict(host_chip(gemv_gbps=90.0)).units[0]
    assert steady_state_unit(unit, graph, "model").weights_in_cache  # type: ignore[union-attr]


def test_a_table_read_whole_by_a_product_counts_once_and_lookups_their_rows() -> None:
    table, ids = Tensor("t", (1000, 64), "float32", True), Tensor("i", (10,), "int64")
    x = Tensor("x", (1, 64), "float32")
    look = [(f"g{i}", "Gather", [table, ids], [Tensor(f"y{i}", (10, 64), "float32")]) for i in range(3)]
    head = ("head", "MatMul", [x, Tensor("tT", (64, 1000), "float32", True)], [Tensor("z", (1, 1000), "float32")])
    rows = run_weight_bytes(graph_from_ops("lookups", [ids, x], look))
    assert rows == 3 * 10 * 64 * 4  # three lookups of ten rows
    h = Tensor("h", (1, 1000), "float32")
    tied = ("tied", "MatMul", [h, table], [Tensor("w", (1, 64), "float32")])  # a product reads the table whole
    assert run_weight_bytes(graph_from_ops("tied", [ids, h], [*look, tied])) == 1000 * 64 * 4
    assert run_weight_bytes(graph_from_ops("both", [ids, x], [*look, head])) == rows + 64 * 1000 * 4
