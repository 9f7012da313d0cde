"""An embedding lookup (``Gather`` from a weight table) on a fingerprinted CPU: the rows it reads
count towards what a loop of runs keeps cached, and rows from DRAM cost a miss per row and per line
beyond the cached rate (cost_models.cpu.cold_gather_ns, hwsim.host.gather_probe)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.base import weight_bytes_read
from cost_models.cpu import LINE_BYTES, cold_gather_ns
from cost_models.table import cost_table, steady_state_unit
from graph_ir.ir import Op, Tensor
from hwsim.host.gather_probe import GATHER_DRAM_PROBES, gather_dram_from, gather_dram_probe
from tests.helpers import graph_from_ops, host_chip

ROW_NS, LINE_NS = 30.0, 6.0
FINGERPRINTED = {"l3_kib": 16384, "gemv_gbps": 90.0, "gather_dram_row_ns": ROW_NS, "gather_dram_line_ns": LINE_NS}


def lookup(rows: int, width: int, ids: int, name: str = "g") -> tuple[str, str, list[Tensor], list[Tensor]]:
    table, idx = Tensor(f"{name}_table", (rows, width), "float32", True), Tensor(f"{name}_ids", (ids,), "int64")
    return (name, "Gather", [table, idx], [Tensor(f"{name}_y", (ids, width), "float32")])


def unit(**fields: Any) -> Any:
    return chip_from_dict(host_chip(**{**FINGERPRINTED, **fields})).units[0]


class TestColdRows:
    @given(ids=st.integers(1, 5000), width=st.sampled_from([16, 64, 100, 768]), rows=st.integers(1, 200_000))
    def test_a_row_and_its_lines_from_dram(self, ids: int, width: int, rows: int) -> None:
        name, op_type, ins, outs = lookup(rows, width, ids)
        op = Op(name, op_type, "data", tuple(ins), tuple(outs))
        per_miss = ROW_NS + math.ceil(width * 4 / LINE_BYTES) * LINE_NS
        misses = cold_gather_ns(op, unit(), "fp32") / per_miss
        # at most a miss per id; at least one per distinct row (or line, for rows narrower than one)
        # the ids are expected to reach: most of those they could
        places = rows if width * 4 > LINE_BYTES else math.ceil(rows * width * 4 / LINE_BYTES)
        assert misses <= ids * (1 + 1e-9)
        assert misses >= min(ids, places) * (1 - 1 / math.e) * (1 - 1e-9)
        more = Op(name, op_type, "data", (ins[0], Tensor("more", (ids + 1,), "int64")), tuple(outs))
        assert cold_gather_ns(more, unit(), "fp32") >= misses * per_miss
        # cached from run to run, or without the figures: nothing
        assert cold_gather_ns(op, unit().model_copy(update={"weights_in_cache": True}), "fp32") == 0.0
        assert cold_gather_ns(op, unit(gather_dram_row_ns=None), "fp32") == 0.0

    def test_not_for_a_gather_from_an_activation_or_over_another_axis(self) -> None:
        x, idx = Tensor("x", (100, 64), "float32"), Tensor("i", (8,), "int64")
        assert cold_gather_ns(Op("g", "Gather", "data", (x, idx), (Tensor("y", (8, 64), "float32"),)), unit(), "fp32") == 0.0
        table = Tensor("t", (100, 64), "float32", True)
        across = Op("g", "Gather", "data", (table, idx), (Tensor("y", (100, 8), "float32"),), {"axis": 1})
        assert cold_gather_ns(across, unit(), "fp32") == 0.0


class TestSteadyState:
    def test_a_lookup_counts_the_rows_it_reads_not_its_table(self) -> None:
        # eight 25.6 MB tables, 1280 rows of 256 B read from each: 2.6 MB in a 16 MiB L3
        ops = [lookup(100_000, 64, 1280, f"t{i}") for i in range(8)]
        graph = graph_from_ops("dlrm", [t for o in ops for t in o[2][1:]], ops)
        assert sum(weight_bytes_read(op) for op in graph.ops()) == 8 * 1280 * 256
        assert steady_state_unit(unit(), graph, "model").weights_in_cache  # type: ignore[union-attr]
        # so the rows are priced cached; the same lookups in a model that streams more than the L3 are not
        costs = cost_table(graph, chip_from_dict(host_chip(**FINGERPRINTED)), "model").costs
        assert "rows from DRAM" not in costs["t0"]["cpu"].note

    def test_rows_from_dram_where_the_loop_streams_past_the_cache(self) -> None:
        big = ("fc", "MatMul", [Tensor("x", (1, 4096), "float32"), Tensor("w", (4096, 4096), "float32", True)],
               [Tensor("z", (1, 4096), "float32")])  # 64 MiB of weights  # fmt: skip
        words = lookup(30522, 768, 128, "words")
        graph = graph_from_ops("bert", [big[2][0], words[2][1]], [big, words])
        cost = cost_table(graph, chip_from_dict(host_chip(**FINGERPRINTED)), "model").costs["words"]["cpu"]
        # 128 ids spread over 30,522 rows: 127.7 distinct, a repeat missing again (the L2 holds 2 % of the table)
        assert "rows from DRAM" in cost.note and cost.stall_ns == pytest.approx(128 * (ROW_NS + 48 * LINE_NS), rel=1e-4)


class TestProbe:
    def test_the_two_widths_give_the_row_and_line_back(self) -> None:
        times = {key: ROW_NS + width * 4 / LINE_BYTES * LINE_NS for key, (_, width, _) in GATHER_DRAM_PROBES.items()}
        row, line = gather_dram_from(times)  # type: ignore[misc]
        assert row == pytest.approx(ROW_NS) and line == pytest.approx(LINE_NS)
        assert gather_dram_from({k: 100.0 for k in GATHER_DRAM_PROBES}) is None  # no slope: not resolved

    def test_the_probe_model_waits_on_its_flush(self) -> None:
        import onnx

        model = gather_dram_probe(100, 8, 16, flush=32)
        onnx.checker.check_model(model)
        # the lookup's ids come from the pass over the flush input: it runs after it
        assert [n.op_type for n in model.graph.node][-1] == "Gather" and model.graph.node[-1].input[1] == "late_ids"
