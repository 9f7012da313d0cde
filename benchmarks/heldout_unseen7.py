"""The seventh batch of unseen models for the host CPU fidelity check: the ONNX model zoo's classic
image classifiers as the ``onnx`` package ships them in its backend test data (``light`` models:
the zoo's graphs, opset 9 and before, their weights made at load by ``ConstantOfShape``), run as
they are, nothing built here and nothing downloaded:

- AlexNet (``bvlc_alexnet``) and ZFNet-512: LRN, large kernels, fully connected layers of
  16-151 MB of weights (beyond any cache);
- VGG-19: sixteen 3x3 convs at full width, 494 MB of fully connected weights;
- GoogLeNet (``inception_v1``, LRN) and BN-Inception (``inception_v2``);
- ResNet-50, DenseNet-121, SqueezeNet 1.0;
- ShuffleNet (v1, ``g = 3``): grouped 1x1 convs and the channel shuffle as Reshape-Transpose-Reshape.

``python benchmarks/heldout_unseen7.py DIR --chip FP.yaml`` copies them into ``DIR`` and validates
each (:func:`heldout_models.batch_main`). The Dropouts of AlexNet, VGG-19, SqueezeNet and GoogLeNet
carry an untyped ``mask`` nothing reads; hwsim refused these four files before 2026-12-05.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "ZOO", "zoo_model"]

#: The ``light`` models of the ``onnx`` package's backend test data.
ZOO = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
STEMS = ("bvlc_alexnet", "zfnet512", "vgg19", "inception_v1", "inception_v2", "resnet50", "densenet121", "squeezenet",
         "shufflenet")  # fmt: skip


def zoo_model(stem: str) -> onnx.ModelProto:
    """The ``light_{stem}.onnx`` file of :data:`ZOO`, as it is."""
    return onnx.load(str(ZOO / f"light_{stem}.onnx"))


#: File stem -> loader, one model a family.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {f"zoo_{s}": partial(zoo_model, s) for s in STEMS}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
