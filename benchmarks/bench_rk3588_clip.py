"""RK3588 NPU at fp16 on a transformer: CLIP ViT-B/32 image encoder against rknn_model_zoo.

Run: ``python benchmarks/bench_rk3588_clip.py``. Builds the CLIP ViT-B/32 image encoder at 224
(OpenAI layout: 32x32 patch conv, class token, ``ln_pre``, 12 pre-norm layers of width 768 and
12 heads over 50 tokens, QuickGELU ``x * sigmoid(1.702 x)``, ``ln_post`` on the class token,
projection to 512), weightless, with the helpers of ``examples/make_models.py``; simulates it
on ``chips/rk3588.yaml`` restricted to one NPU core at fp16 (``--units npu:1,cpu_big``, the CPU for what the NPU lacks; rknn_model_zoo
runs the CLIP image model as fp16 on the NPU) and prints predicted / published / error.
Nothing is fitted on it. Simulated times, not wall times.

Published: rknn_model_zoo v2.3.2 README (airockchip/rknn_model_zoo, commit bad6c73), CLIP
image encoder ``clip_images`` FP16 on RK3588, 6.5 FPS (153.8 ms).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import onnx
from onnx import TensorProto

from chips import load_chip
from chips.variants import restrict
from graph_ir import load_onnx
from hwsim.pipeline import run_graph

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import make_models as mm

#: rknn_model_zoo v2.3.2, clip_images fp16 on RK3588: 6.5 FPS.
PUBLISHED_MS = 1000 / 6.5


def quick_gelu(g: mm.GraphBuilder, x: str, path: str) -> str:
    """CLIP's QuickGELU: x * sigmoid(1.702 x)."""
    s = g.op("Sigmoid", [g.op("Mul", [x, g.f32(1.702, "const_1702")], f"{path}/Mul")], f"{path}/Sigmoid")
    return g.op("Mul", [x, s], f"{path}/Mul_1")


def build_clip_vit_b32() -> onnx.ModelProto:
    """The CLIP ViT-B/32 image encoder at 224x224, weightless."""
    g = mm.GraphBuilder("clip_vit_b32")
    img, patch, width, heads, layers, out_dim = 224, 32, 768, 12, 12, 512
    grid = img // patch
    seq = grid * grid + 1  # 50 tokens
    x = g.input("pixel_values", TensorProto.FLOAT, [1, 3, img, img])
    x = mm.conv(g, x, 3, width, patch, "/conv1", s=patch, pad=0)  # 1x768x7x7
    x = g.op("Reshape", [x, g.i64([1, width, grid * grid])], "/Reshape")
    x = g.op("Transpose", [x], "/Transpose", perm=[0, 2, 1])
    x = g.op("Concat", [g.weight("class_embedding", [1, 1, width]), x], "/Concat", axis=1)
    x = g.op("Add", [x, g.weight("positional_embedding", [1, seq, width])], "/Add")
    x = mm.layer_norm(g, x, width, "/ln_pre", "ln_pre", 1e-5)
    split = g.i64([width, width, width])
    for i in range(layers):
        p, pn = f"/transformer/resblocks.{i}", f"transformer.resblocks.{i}"
        h = mm.layer_norm(g, x, width, f"{p}/ln_1", f"{pn}.ln_1", 1e-5)
        qkv = mm.linear(g, h, width, 3 * width, f"{p}/attn/in_proj", f"{pn}.attn.in_proj")
        q, k, v = g.op_multi("Split", [qkv, split], f"{p}/attn/Split", 3, axis=-1)
        ctx = mm.attention_core(g, q, k, v, seq, width, heads, f"{p}/attn", None, scale_q=True)
        x = g.op("Add", [x, mm.linear(g, ctx, width, width, f"{p}/attn/out_proj", f"{pn}.attn.out_proj")], f"{p}/Add")
        h = mm.layer_norm(g, x, width, f"{p}/ln_2", f"{pn}.ln_2", 1e-5)
        h = quick_gelu(g, mm.linear(g, h, width, 4 * width, f"{p}/mlp/c_fc", f"{pn}.mlp.c_fc"), f"{p}/mlp/gelu")
        x = g.op("Add", [x, mm.linear(g, h, 4 * width, width, f"{p}/mlp/c_proj", f"{pn}.mlp.c_proj")], f"{p}/Add_1")
    x = g.op("Gather", [x, g.i64(0, "const_class_index")], "/Gather", axis=1)
    x = mm.layer_norm(g, x, width, "/ln_post", "ln_post", 1e-5)
    x = g.op("MatMul", [x, g.weight("proj", [width, out_dim])], "/proj/MatMul")
    g.output(x, "image_embeds", TensorProto.FLOAT, [1, out_dim])
    return g.model("CLIP ViT-B/32 image encoder @224 (OpenAI layout), weightless.")


def table() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip_vit_b32.onnx"
        onnx.save(build_clip_vit_b32(), path)
        graph = load_onnx(path)
    # the NPU lacks Gather (the class-token pick): it falls back to the big CPU cores
    chip = restrict(load_chip("rk3588"), "npu:1,cpu_big")
    res = run_graph(graph, chip, "fp16")
    ms = res.analysis.latency_ms
    row = (
        f"| clip_vit_b32 (image) | {graph.total_macs / 1e9:.2f} | {ms:.1f} | {PUBLISHED_MS:.1f} | "
        f"{ms / PUBLISHED_MS - 1:+.1%} | rknn_model_zoo v2.3.2, 6.5 FPS |"
    )
    lines = [
        "| model | GMAC | hwsim ms (fp16, 1 NPU core + CPU fallback) | published ms | error | source |",
        "|---|---:|---:|---:|---:|---|",
    ]
    return "\n".join([*lines, row])


if __name__ == "__main__":
    print(table())
