"""Every pass of this file's table on every bundled model where it applies, proven numerically
(random weights materialized), and the table itself: where each pass applies."""

from __future__ import annotations

import os

import pytest

from graph_ir.rewrites import get_pass
from tests.graph_ir.rewrites.proving import MODELS, bundled, proven

#: pass -> the bundled models it rewrites somewhere.
APPLIES: dict[str, tuple[str, ...]] = {
    "eliminate_identity": (),
    "const_fold": ("audio_kws",),
    "fold_bn": ("resnet50_v2",),
    "concat_fold": ("yolov8n",),
    "split_to_slice": ("vit_b16", "yolov8n"),
}
#: Cases over 20 s on two shared cores (ViT-B/16 runs 10 x 0.7 s per proof and more to load):
#: run with HWSIM_SLOW_TESTS=1.
SLOW = {("split_to_slice", "vit_b16")}
ALL_MODELS = sorted(p.stem for p in MODELS.glob("*.onnx"))


@pytest.mark.parametrize("name", sorted(APPLIES))
def test_where_each_pass_applies(name: str) -> None:
    hits = tuple(m for m in ALL_MODELS if get_pass(name)(bundled(m)).applied)
    assert hits == APPLIES[name]


@pytest.mark.parametrize(("name", "model"), [(p, m) for p, ms in sorted(APPLIES.items()) for m in ms])
def test_bundled_rewrite_is_equal(name: str, model: str) -> None:
    if (name, model) in SLOW and not os.environ.get("HWSIM_SLOW_TESTS"):
        pytest.skip("slow proof; set HWSIM_SLOW_TESTS=1")
    result = proven(name, bundled(model))
    assert result.applied


def test_weightless_result_stays_weightless() -> None:
    """fold_bn on the weightless file: same structure, new absent weights of the right shapes."""
    from graph_ir.rewrites.edit import is_weightless

    result = get_pass("fold_bn")(bundled("resnet50_v2"))
    assert is_weightless(result.model) and len(result.applied) == 33
    ops = [n.op_type for n in result.model.graph.node]
    assert ops.count("BatchNormalization") == 51 - 33
    convs = {n.name: n for n in result.model.graph.node if n.op_type == "Conv"}
    inits = {t.name: t for t in result.model.graph.initializer}
    for site in result.applied:
        conv = convs[site.nodes[0]]
        w, b = inits[conv.input[1]], inits[conv.input[2]]
        assert list(b.dims) == [w.dims[0]]
        length = int({e.key: e.value for e in b.external_data}["length"])
        assert length == 4 * w.dims[0]
