"""The ninth unseen batch (``benchmarks/heldout_unseen9.py``): the held-out families' models in
float16, each read as onnxruntime's CPU provider runs it (``hwsim.host.ort_fp16``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from hwsim.host.measure import random_inputs
from hwsim.host.ort_fp16 import CAST_PREFIX, holds_fp16
from hwsim.host.validate import graph_as_run
from tests.helpers import load_benchmarks


def test_every_model_is_float16_and_runs_in_float32_between_casts(tmp_path: Path) -> None:
    import onnxruntime as ort

    sizes = load_benchmarks("heldout_models", "heldout_cnn_modern", "heldout_unseen2", "heldout_unseen9").SIZES
    assert len(sizes) == 12 and all(stem.startswith("f16_") for stem in sizes)
    for stem in ("f16_mlp_small", "f16_resnext_r112", "f16_encoder_s64w256"):
        model = sizes[stem]()
        assert holds_fp16(model) and onnx.TensorProto.FLOAT16 in {i.type.tensor_type.elem_type for i in model.graph.input}
        path = tmp_path / f"{stem}.onnx"
        onnx.save(model, str(path))
        graph = graph_as_run(path)
        casts = [op for op in graph.ops() if op.name.startswith(CAST_PREFIX)]
        assert casts and all(op.op_type == "Cast" for op in casts)
        heavy = [op for op in graph.ops() if op.op_type in ("Conv", "Gemm", "MatMul")]
        assert heavy and all(t.dtype == "float32" for op in heavy for t in (*op.inputs, *op.outputs))
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert np.all(np.isfinite(sess.run(None, random_inputs(model, 0))[0].astype(np.float32)))
