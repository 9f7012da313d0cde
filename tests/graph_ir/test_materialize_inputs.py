"""Random feeds for a model's inputs: an integer input that indexes a table gets indices the
table has (a segment id into a table of 2 rows), so onnxruntime can run the model."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.materialize import random_inputs


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 300), seed=st.integers(0, 2**16))
def test_an_index_input_spreads_over_the_smallest_table_it_indexes(rows: int, seed: int) -> None:
    # ids spread over the whole table, as real token or item ids are (a lookup's rows then come from
    # where such rows would: a 100-row prefix of a 100,000-row table sat in L2 from run to run)
    tables = [numpy_helper.from_array(np.zeros((rows, 4), np.float32), "small"),
              numpy_helper.from_array(np.zeros((500, 4), np.float32), "big")]  # fmt: skip
    nodes = [helper.make_node("Gather", ["small", "ids"], ["a"]), helper.make_node("Gather", ["big", "ids"], ["b"]),
             helper.make_node("Gather", ["big", "item"], ["c"]), helper.make_node("Add", ["other", "other"], ["d"])]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.INT64, [4, 64]) for n in ("ids", "item", "other")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "abc"]
        + [helper.make_tensor_value_info("d", TensorProto.INT64, None)], tables,
    )  # fmt: skip
    feeds = random_inputs(helper.make_model(graph), seed)
    assert feeds["ids"].min() >= 0 and feeds["ids"].max() < rows
    assert feeds["ids"].max() >= rows // 2  # 256 draws: the top half of the table is reached
    assert 250 <= feeds["item"].max() < 500  # bound by its table only, not by 100
    assert 50 <= feeds["other"].max() < 100  # an integer that indexes no table: small values


def test_embed_layer_norm_ids_and_segments_fit_their_tables() -> None:
    tables = {"word": (30, 8), "pos": (16, 8), "seg": (2, 8), "g": (8,), "b": (8,)}
    inits = [numpy_helper.from_array(np.zeros(s, np.float32), n) for n, s in tables.items()]
    node = helper.make_node("EmbedLayerNormalization", ["ids", "sids", "word", "pos", "seg", "g", "b"], ["y"],
                            domain="com.microsoft")  # fmt: skip
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.INT32, [2, 16]) for n in ("ids", "sids")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    feeds = random_inputs(helper.make_model(graph), 0)
    assert feeds["ids"].max() < 30 and feeds["sids"].max() < 2 and set(np.unique(feeds["sids"])) == {0, 1}
