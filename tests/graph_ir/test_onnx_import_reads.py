"""The ONNX import reads each distinct attribute and tensor type once: the same values as reading
every one (graph_ir.onnx_import._node_attrs_cached, the type cache of _build and dynamic._shapes)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from graph_ir.dynamic import _shapes
from graph_ir.onnx_import import _node_attrs_cached, _tensor_type, node_attrs

_VALUES = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, width=32),
    st.text(max_size=4),
    st.lists(st.integers(-5, 5), min_size=1, max_size=4),
    st.lists(st.text(max_size=3), min_size=1, max_size=3),
)
_ATTRS = st.dictionaries(st.sampled_from(["axis", "perm", "mode", "alpha", "k"]), _VALUES, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(_ATTRS, min_size=1, max_size=12))
def test_cached_attributes_are_each_nodes_own(attr_sets: list[dict[str, object]]) -> None:
    nodes = []
    for i, attrs in enumerate(attr_sets):
        node = helper.make_node("Custom", ["x"], [f"y{i}"], name=f"n{i}")
        node.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
        nodes.append(node)
    seen: dict[bytes, tuple[str, object]] = {}
    got = [_node_attrs_cached(n, seen) for n in nodes]
    assert got == [node_attrs(n) for n in nodes]
    if len(got) > 1:  # each node gets a dict of its own (the DFT axis is written into one)
        assert got[0] is not got[1]


_DIMS = st.lists(st.one_of(st.integers(0, 9), st.sampled_from(["N", "S"]), st.none()), max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([TensorProto.FLOAT, TensorProto.INT8]), st.one_of(st.none(), _DIMS)), max_size=10))
def test_shapes_read_once_per_type_match_each_reading(types: list[tuple[int, list[int | str | None] | None]]) -> None:
    infos = [helper.make_tensor_value_info(f"t{i}", et, dims) for i, (et, dims) in enumerate(types)]
    graph = helper.make_graph([], "g", [], [], value_info=infos)
    expected = {}
    for vi in infos:
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            expected[vi.name] = tuple(int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim)
    assert _shapes(graph) == expected
    for vi in infos:  # what _build reads of a type depends on the type alone
        twin = helper.make_tensor_value_info("other", vi.type.tensor_type.elem_type, None)
        twin.type.CopyFrom(vi.type)
        assert twin.type.SerializeToString() == vi.type.SerializeToString()
        assert _tensor_type(twin) == _tensor_type(vi)
