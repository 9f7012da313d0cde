"""A large real architecture for the scale benchmark: a 24-layer GPT-style decoder at sequence 2048.

Built in memory with the helpers of ``make_models.py`` (weightless: weights and the causal mask
are absent external data, so the proto stays small). Not one of the bundled example files: its
point is size (2048 x 2048 attention maps per head, 0.82 T MACs), which the scale benchmark
imports through :func:`graph_ir.onnx_import.from_model_proto`.

Run ``python examples/zoo_large.py OUT.onnx`` to write it to a file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
from onnx import TensorProto

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_models import GraphBuilder, attention_core, gelu_erf, layer_norm, linear

__all__ = ["build_decoder"]


def build_decoder(layers: int = 24, seq: int = 2048, hidden: int = 1024, heads: int = 16) -> onnx.ModelProto:
    """GPT-2-medium-sized decoder (24 x (pre-LN attention + 4x FFN)), causal mask, batch 1."""
    g = GraphBuilder(f"decoder{layers}_s{seq}")
    x = g.input("hidden_in", TensorProto.FLOAT, [1, seq, hidden])
    mask = g.weight("causal_mask", [1, 1, seq, seq])  # 0 on and below the diagonal, -inf above
    for li in range(layers):
        path, pn = f"/h.{li}", f"h.{li}"
        a = layer_norm(g, x, hidden, f"{path}/ln_1", f"{pn}.ln_1", 1e-5)
        q = linear(g, a, hidden, hidden, f"{path}/attn/q", f"{pn}.attn.q")
        k = linear(g, a, hidden, hidden, f"{path}/attn/k", f"{pn}.attn.k")
        v = linear(g, a, hidden, hidden, f"{path}/attn/v", f"{pn}.attn.v")
        ctx = attention_core(g, q, k, v, seq, hidden, heads, f"{path}/attn", mask, scale_q=False)
        o = linear(g, ctx, hidden, hidden, f"{path}/attn/c_proj", f"{pn}.attn.c_proj")
        x = g.op("Add", [x, o], f"{path}/Add")
        m = layer_norm(g, x, hidden, f"{path}/ln_2", f"{pn}.ln_2", 1e-5)
        m = linear(g, m, hidden, 4 * hidden, f"{path}/mlp/c_fc", f"{pn}.mlp.c_fc")
        m = gelu_erf(g, m, f"{path}/mlp/gelu")
        m = linear(g, m, 4 * hidden, hidden, f"{path}/mlp/c_proj", f"{pn}.mlp.c_proj")
        x = g.op("Add", [x, m], f"{path}/Add_1")
    x = layer_norm(g, x, hidden, "/ln_f", "ln_f", 1e-5)
    g.output(x, "hidden_out", TensorProto.FLOAT, [1, seq, hidden])
    return g.model(f"GPT-style decoder, {layers} layers, hidden {hidden}, {heads} heads, sequence {seq}, "
                   "batch 1, weightless.")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "decoder24_s2048.onnx")
    out.write_bytes(build_decoder().SerializeToString(deterministic=True))
    print(f"wrote {out}")
