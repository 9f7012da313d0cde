"""More real architectures for CPU validation (``hwsim validate``), weightless like the rest.

Built with the helpers of :mod:`make_models`; registered in its ``MODELS`` with one line:

- ``squeezenet11``: SqueezeNet 1.1 (torchvision layout): Fire modules of 1x1 squeeze and
  parallel 1x1/3x3 expand convolutions joined by Concat.
- ``distilbert``: DistilBERT-base encoder (6 layers, hidden 768, 12 heads, FFN 3072) at
  sequence 128, HF export layout (no token-type embedding, GELU, LayerNorm).
- ``mlp_mnist``: a 3-layer MLP (784-1024-1024-10, batch 64, Gemm + Relu), the classic MNIST MLP.
- ``lstm_lm``: a 2-layer LSTM word language model (PyTorch word_language_model example:
  embedding 650, hidden 650, vocabulary 10000, sequence 35, batch 1).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from make_models import GraphBuilder

__all__ = ["MODELS"]


def _mm() -> Any:
    """``make_models``, imported late: its ``MODELS`` takes in this module's (circular at the top)."""
    import make_models

    return make_models


def conv(g: GraphBuilder, x: str, cin: int, cout: int, k: int, path: str, **kw: Any) -> str:
    return str(_mm().conv(g, x, cin, cout, k, path, **kw))


def _fire(g: GraphBuilder, x: str, cin: int, squeeze: int, expand: int, path: str) -> str:
    s = g.op("Relu", [conv(g, x, cin, squeeze, 1, f"{path}/squeeze", pad=0)], f"{path}/squeeze_activation/Relu")
    e1 = g.op("Relu", [conv(g, s, squeeze, expand, 1, f"{path}/expand1x1", pad=0)], f"{path}/expand1x1_activation/Relu")
    e3 = g.op("Relu", [conv(g, s, squeeze, expand, 3, f"{path}/expand3x3")], f"{path}/expand3x3_activation/Relu")
    return g.op("Concat", [e1, e3], f"{path}/Concat", axis=1)


def build_squeezenet11() -> onnx.ModelProto:
    g = _mm().GraphBuilder("squeezenet11")
    x = g.input("input", TensorProto.FLOAT, [1, 3, 224, 224])
    x = g.op("Relu", [conv(g, x, 3, 64, 3, "/features/features.0", s=2, pad=0)], "/features/features.1/Relu")

    def pool(x: str, i: int) -> str:
        return g.op("MaxPool", [x], f"/features/features.{i}/MaxPool", ceil_mode=1, kernel_shape=[3, 3],
                    pads=[0, 0, 0, 0], strides=[2, 2])  # fmt: skip

    x = pool(x, 2)
    x = _fire(g, x, 64, 16, 64, "/features/features.3")
    x = _fire(g, x, 128, 16, 64, "/features/features.4")
    x = pool(x, 5)
    x = _fire(g, x, 128, 32, 128, "/features/features.6")
    x = _fire(g, x, 256, 32, 128, "/features/features.7")
    x = pool(x, 8)
    x = _fire(g, x, 256, 48, 192, "/features/features.9")
    x = _fire(g, x, 384, 48, 192, "/features/features.10")
    x = _fire(g, x, 384, 64, 256, "/features/features.11")
    x = _fire(g, x, 512, 64, 256, "/features/features.12")
    x = g.op("Relu", [conv(g, x, 512, 1000, 1, "/classifier/classifier.1", pad=0)], "/classifier/classifier.2/Relu")
    x = g.op("GlobalAveragePool", [x], "/classifier/classifier.3/GlobalAveragePool")
    x = g.op("Flatten", [x], "/Flatten", axis=1)
    g.output(x, "output", TensorProto.FLOAT, [1, 1000])
    return g.model("SqueezeNet 1.1 (torchvision layout), weightless: weights are absent external data.")


def build_distilbert() -> onnx.ModelProto:
    g = _mm().GraphBuilder("distilbert")
    seq, hidden, heads, ffn, layers, vocab, eps = 128, 768, 12, 3072, 6, 30522, 1e-12
    ids = g.input("input_ids", TensorProto.INT64, [1, seq])
    e = "/distilbert/embeddings"
    pos = g.const("distilbert.embeddings.position_ids", np.arange(seq, dtype=np.int64)[None])
    we = g.op("Gather", [g.weight("distilbert.embeddings.word_embeddings.weight", [vocab, hidden]), ids],
              f"{e}/word_embeddings/Gather", axis=0)  # fmt: skip
    pe = g.op("Gather", [g.weight("distilbert.embeddings.position_embeddings.weight", [512, hidden]), pos],
              f"{e}/position_embeddings/Gather", axis=0)  # fmt: skip
    x = _mm().layer_norm(g, g.op("Add", [we, pe], f"{e}/Add"), hidden, f"{e}/LayerNorm", "distilbert.embeddings.LayerNorm", eps)
    for li in range(layers):
        path, pn = f"/distilbert/transformer/layer.{li}", f"distilbert.transformer.layer.{li}"
        a, an = f"{path}/attention", f"{pn}.attention"
        q = _mm().linear(g, x, hidden, hidden, f"{a}/q_lin", f"{an}.q_lin")
        k = _mm().linear(g, x, hidden, hidden, f"{a}/k_lin", f"{an}.k_lin")
        v = _mm().linear(g, x, hidden, hidden, f"{a}/v_lin", f"{an}.v_lin")
        ctx = _mm().attention_core(g, q, k, v, seq, hidden, heads, a, None, scale_q=True)
        o = _mm().linear(g, ctx, hidden, hidden, f"{a}/out_lin", f"{an}.out_lin")
        x = _mm().layer_norm(g, g.op("Add", [o, x], f"{path}/Add"), hidden, f"{path}/sa_layer_norm",
                       f"{pn}.sa_layer_norm", eps)  # fmt: skip
        h = _mm().linear(g, x, hidden, ffn, f"{path}/ffn/lin1", f"{pn}.ffn.lin1")
        h = _mm().gelu_erf(g, h, f"{path}/ffn/activation")
        h = _mm().linear(g, h, ffn, hidden, f"{path}/ffn/lin2", f"{pn}.ffn.lin2")
        x = _mm().layer_norm(g, g.op("Add", [h, x], f"{path}/Add_1"), hidden, f"{path}/output_layer_norm",
                       f"{pn}.output_layer_norm", eps)  # fmt: skip
    g.output(x, "last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])
    return g.model("DistilBERT-base encoder (6 layers, hidden 768, 12 heads, FFN 3072), sequence 128, "
                   "HF export layout, weightless: weights are absent external data.")  # fmt: skip


def build_mlp_mnist() -> onnx.ModelProto:
    g = _mm().GraphBuilder("mlp_mnist")
    x = g.input("input", TensorProto.FLOAT, [64, 784])
    dims = [784, 1024, 1024, 10]
    for i, (din, dout) in enumerate(itertools.pairwise(dims)):
        x = g.op("Gemm", [x, g.weight(f"fc{i}.weight", [dout, din]), g.weight(f"fc{i}.bias", [dout])],
                 f"/fc{i}/Gemm", alpha=1.0, beta=1.0, transB=1)  # fmt: skip
        if i < len(dims) - 2:
            x = g.op("Relu", [x], f"/relu{i}/Relu")
    g.output(x, "logits", TensorProto.FLOAT, [64, 10])
    return g.model("3-layer MNIST MLP (784-1024-1024-10), batch 64, weightless.")


def build_lstm_lm() -> onnx.ModelProto:
    g = _mm().GraphBuilder("lstm_lm")
    seq, emb, hid, vocab = 35, 650, 650, 10000
    ids = g.input("tokens", TensorProto.INT64, [seq, 1])
    x = g.op("Gather", [g.weight("encoder.weight", [vocab, emb]), ids], "/encoder/Gather", axis=0)
    din = emb
    for li in range(2):
        w = g.weight(f"rnn.weight_ih_l{li}", [1, 4 * hid, din])
        r = g.weight(f"rnn.weight_hh_l{li}", [1, 4 * hid, hid])
        b = g.weight(f"rnn.bias_l{li}", [1, 8 * hid])
        y = g.op("LSTM", [x, w, r, b], f"/rnn/LSTM_{li}", hidden_size=hid)  # Y: [seq, 1, 1, hid]
        x = g.op("Squeeze", [y, g.i64([1])], f"/rnn/Squeeze_{li}")
        din = hid
    x = g.op("Reshape", [x, g.i64([seq, hid])], "/Reshape")
    x = g.op("Gemm", [x, g.weight("decoder.weight", [vocab, hid]), g.weight("decoder.bias", [vocab])],
             "/decoder/Gemm", alpha=1.0, beta=1.0, transB=1)  # fmt: skip
    g.output(x, "logits", TensorProto.FLOAT, [seq, vocab])
    return g.model("2-layer LSTM word language model (PyTorch word_language_model: 650/650, vocab 10000), "
                   "sequence 35, batch 1, weightless.")  # fmt: skip


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "squeezenet11": build_squeezenet11,
    "distilbert": build_distilbert,
    "mlp_mnist": build_mlp_mnist,
    "lstm_lm": build_lstm_lm,
}
