"""The eleventh and twelfth unseen batches (``benchmarks/heldout_unseen11.py``, ``heldout_unseen12.py``):
small ones of each family's graph, which onnxruntime runs and hwsim reads with the shapes
onnxruntime computes.

- eleventh: a vocoder (1-D ConvTranspose), a DeepLabV3-like segmenter, a DCGAN generator, a
  NeRF-like MLP and a pix2pix-like U-Net;
- twelfth: message passing by ScatterElements, a bicubic Resize, a mixture of experts by TopK and
  GatherElements, and every pooling kind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from tests.helpers import check_unseen_model, load_benchmarks

B11 = load_benchmarks("heldout_models", "heldout_unseen11")
B12 = load_benchmarks("heldout_models", "heldout_unseen12")

#: batch -> family -> (a small model of the family, an op type it holds, its output's shape)
CASES: dict[str, dict[str, tuple[Callable[[], onnx.ModelProto], str, tuple[int, ...]]]] = {
    "11": {
        "vocoder": (lambda: B11.vocoder(4, 32, ups=(4, 2)), "ConvTranspose", (1, 1, 32)),
        "deeplab": (lambda: B11.deeplab(64, width=8, classes=3), "Resize", (1, 3, 64, 64)),
        "dcgan": (lambda: B11.dcgan(16, 8), "ConvTranspose", (1, 3, 16, 16)),
        "nerf": (lambda: B11.nerf(16, width=16), "Sin", (16, 4)),
        "pix2pix": (lambda: B11.pix2pix(32, 4, depth=3), "ConvTranspose", (1, 3, 32, 32)),
    },
    "12": {
        "gnn": (lambda: B12.gnn(20, 60, 8), "ScatterElements", (1, 16)),
        "srcubic": (lambda: B12.srcubic(8, 2, width=4), "Resize", (1, 3, 16, 16)),
        "moe": (lambda: B12.moe(6, 8, 4, 16), "GatherElements", (6, 8)),
        "pools": (lambda: B12.pools(32, 4), "LpPool", (1, 100)),
    },
}


@pytest.mark.parametrize(("batch", "family"), [(b, f) for b, fams in CASES.items() for f in sorted(fams)])
def test_each_family_runs_and_reads_as_built(tmp_path: Path, batch: str, family: str) -> None:
    build, op_type, out_shape = CASES[batch][family]
    check_unseen_model(build(), tmp_path / f"{family}.onnx", op_type, out_shape)


@pytest.mark.parametrize(("batch", "sizes"), [("11", B11.SIZES), ("12", B12.SIZES)])
def test_each_batch_has_two_sizes_of_each_family(batch: str, sizes: dict[str, object]) -> None:
    assert sorted({stem.split("_")[0] for stem in sizes}) == sorted(CASES[batch])
    assert len(sizes) == 2 * len(CASES[batch])
