"""The held-out ``cnn_modern`` family (``benchmarks/heldout_cnn_modern.py``): deterministic, runnable,
and marked the way onnxruntime runs its convs (NCHWc depthwise, 1-D convs on the SGEMM kernel)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import onnx

from cost_models.cpu import NCHWC_ACTIVATION_ATTR, NCHWC_ATTR, SGEMM_CONV_ATTR
from graph_ir.onnx_import import load_onnx
from hwsim.host.validate import layout_kernels
from tests.helpers import load_benchmarks


def _modern() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_cnn_modern")


def test_two_sizes_each_and_deterministic() -> None:
    mod = _modern()
    assert {m: len(s) for m, s in mod.CNN_MODERN_SIZES.items()} == {"effnet": 2, "convnext": 2, "tcn": 2}
    assert mod.tcn_model(64, 8).SerializeToString() == mod.tcn_model(64, 8).SerializeToString()


def test_runnable_and_marked(tmp_path: Path) -> None:
    import onnxruntime as ort

    mod = _modern()
    for name, model, x in (("effnet", mod.effnet_model(32), np.zeros((1, 3, 32, 32), np.float32)),
                           ("convnext", mod.convnext_model(32), np.zeros((1, 3, 32, 32), np.float32)),
                           ("tcn", mod.tcn_model(64, 8), np.zeros((1, 1, 64), np.float32))):  # fmt: skip
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert np.all(np.isfinite(sess.run(None, {"x": x})[0]))
        graph = load_onnx(path)
        marked = layout_kernels(graph, 16)
        convs = [op for op in graph.ops() if op.op_type == "Conv"]
        if name == "tcn":  # every conv is 1-D
            assert all(SGEMM_CONV_ATTR in marked[op.name].attrs for op in convs)
        else:  # the depthwise ones run on the NCHWc kernel, no activation pass (SiLU is no fused activation)
            dw = [op for op in convs if op.attrs.get("group", 1) != 1]
            assert dw and all(marked[op.name].attrs[NCHWC_ATTR] == 16 for op in dw)
            assert not any(NCHWC_ACTIVATION_ATTR in marked[op.name].attrs for op in dw)
