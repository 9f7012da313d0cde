"""The eleventh unseen batch (``benchmarks/heldout_unseen11.py``): a vocoder, a DeepLabV3-like
segmenter, a DCGAN generator, a NeRF-like MLP and a pix2pix-like U-Net, small ones of the same
graphs, which onnxruntime runs and hwsim reads with the shapes onnxruntime computes."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from graph_ir.onnx_import import load_onnx
from hwsim.host.measure import random_inputs
from tests.helpers import load_benchmarks

MOD = load_benchmarks("heldout_models", "heldout_unseen11")

CASES = {
    "vocoder": (lambda: MOD.vocoder(4, 32, ups=(4, 2)), "ConvTranspose", (1, 1, 32)),
    "deeplab": (lambda: MOD.deeplab(64, width=8, classes=3), "Resize", (1, 3, 64, 64)),
    "dcgan": (lambda: MOD.dcgan(16, 8), "ConvTranspose", (1, 3, 16, 16)),
    "nerf": (lambda: MOD.nerf(16, width=16), "Sin", (16, 4)),
    "pix2pix": (lambda: MOD.pix2pix(32, 4, depth=3), "ConvTranspose", (1, 3, 32, 32)),
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_each_family_runs_and_reads_as_built(tmp_path: Path, family: str) -> None:
    import onnxruntime as ort

    build, op_type, out_shape = CASES[family]
    model = build()
    path = tmp_path / f"{family}.onnx"
    onnx.save(model, str(path))
    graph = load_onnx(path)
    assert op_type in {graph.op(n).op_type for n in graph.order}
    assert graph.outputs[0].shape == out_shape
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.run(None, random_inputs(model, 0))[0].shape == out_shape


def test_the_batch_has_two_sizes_of_each_family() -> None:
    assert sorted({stem.split("_")[0] for stem in MOD.SIZES}) == sorted(CASES)
    assert len(MOD.SIZES) == 2 * len(CASES)
