"""cost_models.cpu_reduce: the path onnxruntime's reductions take by their merged shape, and the
fixed time per row or per block they pay beside their time per element."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from chips.schema import chip_from_dict
from cost_models.base import OpCost
from cost_models.cpu import intra_op_threads
from cost_models.cpu_reduce import (
    REDUCE_NARROW_COLUMNS,
    fast_reduce,
    generic_reduce,
    reduce_passes_ns,
    reduced_axes,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.onnx_import import from_model_proto
from graph_ir.op_metrics import INPUT_AXES_ATTR
from tests.helpers import host_chip

ROW_NS, BLOCK_NS = 1.8, 130.0


def reduce_op(op_type: str, shape: tuple[int, ...], axes: tuple[int, ...] | None, given_as: str = "axes") -> Op:
    x = Tensor("x", shape, "float32")
    y = Tensor("y", tuple(1 if axes is None or i in axes else n for i, n in enumerate(shape)), "float32")
    attrs: dict[str, Any] = {"keepdims": 1}
    if axes is not None:
        attrs[given_as] = axes
    ins = (x,) if given_as == "axes" else (x, Tensor("a", (len(axes or ()),), "int64", is_weight=True))
    return Op("r", op_type, "reduce", ins, (y,), attrs, 0, x.elements)


def cost(op: Op, **unit: Any) -> OpCost:
    data = host_chip()
    data["units"][0].update(unit)
    c = estimate(op, chip_from_dict(data), "cpu", "model")
    assert c is not None
    return c


class TestFastReduce:
    @pytest.mark.parametrize(
        ("shape", "axes", "kind", "merged"),
        [
            ((131072, 2), (1,), "KR", (131072, 2)),
            ((8, 16, 32), (1, 2), "KR", (8, 512)),
            ((64, 20, 64), (1,), "KRK", (64, 20, 64)),
            ((1, 20, 64), (1,), "KRK", (1, 20, 64)),  # a batch of one is not dropped: one block
            ((64, 4096), (0,), "RK", (64, 4096)),
            ((4, 5, 6), (0, 2), "RKR", (4, 5, 6)),
            ((4, 5, 6), (0, 1, 2), "R", (120,)),
            ((2, 3, 4, 5), (0, 2), "", (2, 3, 4, 5)),
        ],
    )
    def test_the_merged_shape_onnxruntime_dispatches_on(
        self, shape: tuple[int, ...], axes: tuple[int, ...], kind: str, merged: tuple[int, ...]
    ) -> None:
        assert fast_reduce(reduce_op("ReduceSum", shape, axes)) == (kind, merged)

    @given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=6), data=st.data())
    def test_merging_keeps_the_elements_and_alternates_the_runs(self, shape: list[int], data: st.DataObject) -> None:
        axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
        got = fast_reduce(reduce_op("ReduceMean", tuple(shape), axes))
        assert got is not None
        kind, merged = got
        assert math.prod(merged) == math.prod(shape)
        flags = [i in axes for i in range(len(shape))]
        runs = 1 + sum(a != b for a, b in itertools.pairwise(flags))
        assert len(merged) == runs
        assert kind == ("".join("R" if f else "K" for f in (flags[0], not flags[0], flags[0])[:runs]) if runs <= 3 else "")

    def test_axes_from_the_attribute_the_constant_input_or_every_axis(self) -> None:
        assert reduced_axes(reduce_op("ReduceSum", (4, 5, 6), (-1,), INPUT_AXES_ATTR)) == (2,)
        assert reduced_axes(reduce_op("ReduceMax", (4, 5, 6), (0, -1))) == (0, 2)
        assert reduced_axes(reduce_op("ReduceMean", (4, 5, 6), None)) == (0, 1, 2)
        # axes computed at run time: not known, so no path and no pass
        runtime = reduce_op("ReduceSum", (4, 5, 6), (1,), INPUT_AXES_ATTR)
        runtime = Op(runtime.name, runtime.op_type, runtime.category, runtime.inputs, runtime.outputs, {"keepdims": 1})
        assert reduced_axes(runtime) is None and fast_reduce(runtime) is None
        assert reduced_axes(reduce_op("ReduceSum", (4, 5, 6), (3,))) is None  # out of range


class TestPasses:
    @given(rows=st.integers(2, 50_000), width=st.integers(1, 512), op_type=st.sampled_from(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"]))
    def test_each_contiguous_row_adds_its_set_up(self, rows: int, width: int, op_type: str) -> None:
        op = reduce_op(op_type, (rows, width), (1,))
        plain, rowed = cost(op), cost(op, reduce_row_ns=ROW_NS, reduce_block_ns=BLOCK_NS)
        assert rowed.stall_ns == pytest.approx(plain.stall_ns + rows * ROW_NS)
        assert rowed.compute_ns == pytest.approx(plain.compute_ns + rows * ROW_NS)
        assert rowed.latency_ns >= plain.latency_ns

    @pytest.mark.parametrize(("op_type", "blocks"), [("ReduceSum", 64), ("ReduceMean", 64), ("ReduceMax", 0), ("ReduceMin", 0)])
    def test_a_middle_axis_pays_a_product_per_block_for_sum_and_mean(self, op_type: str, blocks: int) -> None:
        op = reduce_op(op_type, (64, 20, 64), (1,))
        unit = {"reduce_row_ns": ROW_NS, "reduce_block_ns": BLOCK_NS}
        assert cost(op, **unit).stall_ns == pytest.approx(cost(op).stall_ns + blocks * BLOCK_NS)

    @given(blocks=st.integers(2, 4096), rows=st.integers(1, 256), width=st.integers(1, 64))
    def test_a_block_narrower_than_a_vector_pays_each_of_its_rows(self, blocks: int, rows: int, width: int) -> None:
        # a capsule network's agreement: blocks of 16 rows of one float, each row walked alone
        op = reduce_op("ReduceSum", (blocks, rows + 1, width), (1,))
        unit = {"reduce_row_ns": ROW_NS, "reduce_block_ns": BLOCK_NS}
        walked = cost(op, reduce_column_row_ns=2.2, **unit).stall_ns - cost(op, **unit).stall_ns
        narrow = width < REDUCE_NARROW_COLUMNS
        assert walked == pytest.approx(blocks * (rows + 1) * 2.2 if narrow else 0.0, abs=1e-6)

    @given(rows=st.integers(1, 4096), width=st.integers(1, 512), threads=st.integers(1, 16))
    def test_the_pool_splits_a_reduction_by_its_input_whatever_its_output(self, rows: int, width: int, threads: int) -> None:
        op, more = reduce_op("ReduceSum", (rows, width), (1,)), reduce_op("ReduceSum", (2 * rows, width), (1,))
        used = intra_op_threads(op, threads)
        assert 1 <= used <= intra_op_threads(more, threads) <= threads
        # the capsule routing's 1,152 sums of 16 rows: 1,152 outputs, split (1.78x measured on 2 threads)
        assert intra_op_threads(reduce_op("ReduceSum", (1152, 16, 1), (1,)), 2) == 2
        assert intra_op_threads(reduce_op("ReduceSum", (64, 16, 1), (1,)), 2) == 1  # 0.92x measured

    @given(blocks=st.integers(1, 4), channels=st.integers(2, 256), pixels=st.integers(2, 4096),
           op_type=st.sampled_from(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"]))
    def test_one_block_over_the_channels_runs_the_generic_loop_per_element(
        self, blocks: int, channels: int, pixels: int, op_type: str
    ) -> None:
        # CBAM's channel pooling of a batch-1 map: one block, onnxruntime's generic loop (0.6-0.9 ns an
        # element measured, against 0.06-0.1 on the KRK path of two blocks or more)
        op = reduce_op(op_type, (blocks, channels, pixels), (1,))
        unit = {"reduce_row_ns": ROW_NS, "reduce_block_ns": BLOCK_NS}
        extra = cost(op, reduce_generic_ns=0.5, **unit).stall_ns - cost(op, **unit).stall_ns
        generic = blocks == 1
        assert generic_reduce(op) is generic
        assert extra == pytest.approx(blocks * channels * pixels * 0.5 if generic else 0.0, abs=1e-6)

    def test_no_pass_off_the_fast_paths_or_for_other_reductions(self) -> None:
        chip = chip_from_dict({**host_chip(), "units": [{**host_chip()["units"][0], "reduce_row_ns": ROW_NS, "reduce_block_ns": BLOCK_NS}]})
        unit = chip.units[0]
        for op in (reduce_op("ReduceSum", (1, 20, 64), (1,)),  # one block: the generic loop
                   reduce_op("ReduceSum", (64, 4096), (0,)),  # rows added as vectors
                   reduce_op("ReduceSum", (4, 5, 6), (0, 1, 2)),  # all of it
                   reduce_op("ReduceL2", (1024, 2), (1,)), reduce_op("ReduceProd", (1024, 2), (1,))):  # fmt: skip
            assert reduce_passes_ns(op, unit) == 0.0  # type: ignore[arg-type]


def _model(axes_node: str) -> Any:
    """A ReduceSum over axis 1 of (64, 20, 64), its axes an initializer, a Constant or a graph input."""
    nodes, inits, inputs = [], [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 20, 64])]
    if axes_node == "initializer":
        inits.append(numpy_helper.from_array(np.array([1], np.int64), "ax"))
    elif axes_node == "constant":
        nodes.append(helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([-2], np.int64))))
    else:
        inputs.append(helper.make_tensor_value_info("ax", TensorProto.INT64, [1]))
    nodes.append(helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="sum", keepdims=0))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class TestImport:
    @pytest.mark.parametrize("where", ["initializer", "constant"])
    def test_constant_axes_are_read_into_the_op(self, where: str) -> None:
        op = from_model_proto(_model(where), source="m.onnx").op("sum")
        assert op.attrs[INPUT_AXES_ATTR] in ((1,), (-2,))
        assert fast_reduce(op) == ("KRK", (64, 20, 64))

    def test_axes_given_at_run_time_are_left_unknown(self) -> None:
        model = _model("input")
        # a graph input of axes needs its value to infer the output's shape: pin the output
        model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64]))
        op = from_model_proto(model, source="m.onnx").op("sum")
        assert INPUT_AXES_ATTR not in op.attrs and fast_reduce(op) is None
