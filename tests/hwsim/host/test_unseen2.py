"""The held-out ``unseen2`` family (``benchmarks/heldout_unseen2.py``): deterministic, runnable, and
marked the way onnxruntime runs it (masked Softmax denormals, grouped convs per group, HardSwish
inside the blocked conv)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import onnx

from cost_models.cpu import SGEMM_CONV_ATTR, SOFTMAX_DENORMAL_ATTR
from graph_ir.onnx_import import load_onnx
from hwsim.host.ort_denormals import denormal_softmaxes
from hwsim.host.validate import layout_kernels, nchwc_reorders
from tests.helpers import load_benchmarks


def _unseen2() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen2")


def test_two_sizes_each_and_deterministic() -> None:
    mod = _unseen2()
    assert {m: len(s) for m, s in mod.UNSEEN2_SIZES.items()} == {"decoder": 2, "mnv3": 2, "resnext": 2}
    assert mod.decoder_model(16, 32, 2, 1).SerializeToString() == mod.decoder_model(16, 32, 2, 1).SerializeToString()


def test_runnable_and_marked(tmp_path: Path) -> None:
    import onnxruntime as ort

    mod = _unseen2()
    x = np.zeros((1, 3, 32, 32), np.float32)
    for name, model, feeds in (("decoder", mod.decoder_model(16, 32, 2, 1), {"ids": np.zeros((1, 16), np.int64)}),
                               ("mnv3", mod.mnv3_model(32), {"x": x}), ("resnext", mod.resnext_model(32), {"x": x})):  # fmt: skip
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert np.all(np.isfinite(sess.run(None, feeds)[0]))
        graph = load_onnx(path)
        if name == "decoder":  # one Softmax per layer, 2 heads x 16 x 15 / 2 scores under the causal mask
            marks = denormal_softmaxes(graph, model)
            assert [m.attrs[SOFTMAX_DENORMAL_ATTR] for m in marks.values()] == [2 * 16 * 15 // 2]
        elif name == "resnext":  # 32 groups of 4-8 channels: a plain Conv per group
            marked = layout_kernels(graph, 16)
            grouped = [op for op in graph.ops() if op.op_type == "Conv" and op.attrs.get("group", 1) == 32]
            assert len(grouped) == 4 and all(SGEMM_CONV_ATTR in marked[op.name].attrs for op in grouped)
        else:  # each HardSwish runs inside its conv: no conv output is reordered for it, no result back in
            swish = [op for op in graph.ops() if op.op_type == "HardSwish"]
            reorders = nchwc_reorders(graph, 16)
            assert swish and not {op.inputs[0].name for op in swish} & {r.inputs[0].name for r in reorders}
            assert not {op.outputs[0].name for op in swish} & {r.inputs[0].name for r in reorders if r.op_type == "ReorderInput"}
