"""The ninth batch of unseen models for the host CPU fidelity check: float16 models, the held-out
families' fp32 models converted as a user converts one to halve its size
(``onnxruntime.transformers.float16.convert_float_to_float16``, inputs and outputs float16 too).

onnxruntime's CPU provider has no float16 kernel for Conv, MatMul, Gemm or the elementwise ops on
x86, so it runs such a model in float32 with Casts between (``hwsim.host.ort_fp16``). Before that
was modelled (2026-12-05, AMD EPYC, 1 thread) the MLP was predicted **-74 %**, and the CNNs' convs
came out as kernels onnxruntime inserted (2.6 ms of ResNeXt's 4.0, unpredicted).

Developed on: ``mlp_medium``, ``encoder_s64w256``, ``resnext_r112``, ``convnext_r128``; the others
were built after the rule and only run.

``python benchmarks/heldout_unseen9.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_cnn_modern as cm
import heldout_models as hm  # the builder the held-out families share
import heldout_unseen2 as u2

__all__ = ["SIZES", "fp16"]


def fp16(build: Callable[[], onnx.ModelProto]) -> Callable[[], onnx.ModelProto]:
    """``build``'s model converted to float16, inputs and outputs included."""

    def made() -> onnx.ModelProto:
        from onnxruntime.transformers.float16 import convert_float_to_float16

        return convert_float_to_float16(build(), keep_io_types=False)

    return made


#: File stem -> builder: the developed-on four first.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "f16_mlp_medium": fp16(lambda: hm.mlp_model(hm.MLP_SIZES["medium"])),
    "f16_encoder_s64w256": fp16(lambda: hm.encoder_model(*hm.ENCODER_SIZES["s64w256"])),
    "f16_resnext_r112": fp16(lambda: u2.resnext_model(112)),
    "f16_convnext_r128": fp16(lambda: cm.convnext_model(128)),
    "f16_mlp_small": fp16(lambda: hm.mlp_model(hm.MLP_SIZES["small"])),
    "f16_encoder_s128w384": fp16(lambda: hm.encoder_model(*hm.ENCODER_SIZES["s128w384"])),
    "f16_resnext_r160": fp16(lambda: u2.resnext_model(160)),
    "f16_convnext_r192": fp16(lambda: cm.convnext_model(192)),
    "f16_effnet_r160": fp16(lambda: cm.effnet_model(160)),
    "f16_unet_r64c16": fp16(lambda: hm.unet_model(*hm.UNET_SIZES["r64c16"])),
    "f16_decoder_s128": fp16(lambda: u2.decoder_model(128)),
    "f16_mnv3_r160": fp16(lambda: u2.mnv3_model(160)),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
