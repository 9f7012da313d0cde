#!/usr/bin/env python3
"""Held-out models as onnxruntime saves them after its graph optimizations: each model of a
folder (the held-out set of ``benchmarks/heldout_models.py``), optimized by onnxruntime at its
extended level and saved (``SessionOptions.optimized_model_filepath``, what a deployment pipeline
keeps), and, for the encoders and decoders when ``sympy`` is installed, by
``onnxruntime.transformers.optimizer``; and two BERT encoders written as that optimizer writes
one when every pattern fuses (``EmbedLayerNormalization``, ``Attention``, ``BiasGelu``,
``SkipLayerNormalization``: :func:`bert_optimized`), which the held-out encoders' export does not
reach. Such a file holds onnxruntime's ``com.microsoft`` ops
(``FusedConv``, ``FusedGemm``, ``FusedMatMul``, ``Gelu``, ``BiasGelu``, ``QuickGelu``,
``SkipLayerNormalization``, ...), which hwsim lowers into the ONNX ops they fuse
(:mod:`graph_ir.contrib`). Only files that hold at least one such op are kept, beside a copy of
their original, so that one ``validate`` measures both, interleaved:

    python benchmarks/heldout_models.py /tmp/ho
    python benchmarks/heldout_ort_optimized.py /tmp/ho /tmp/ox
    python -m hwsim validate chips/host.yaml /tmp/ox/*.onnx --runs 30 --rounds 3

Nothing is fitted on them; no file is downloaded.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections import Counter
from pathlib import Path

import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph_ir.contrib import contrib_nodes

#: Held-out model name prefixes the transformer optimizer is run on, with its model type.
TRANSFORMER_TYPES = {"encoder": "bert", "decoder": "gpt2"}


def ort_optimized(src: Path, dst: Path) -> None:
    """``src`` optimized by onnxruntime's extended level (no NCHWc layout: that is the 'all' level's), saved to ``dst``."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(dst)
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])


def transformer_optimized(src: Path, dst: Path, model_type: str) -> bool:
    """``src`` through ``onnxruntime.transformers.optimizer`` (its fusions only, no onnxruntime
    pass), saved to ``dst``; False when that optimizer cannot run here (it needs ``sympy``)."""
    try:
        import sympy  # noqa: F401
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError:
        return False
    logging.disable(logging.WARNING)
    optimize_model(str(src), model_type=model_type, num_heads=0, hidden_size=0, opt_level=0).save_model_to_file(str(dst))
    return True


def bert_optimized(path: Path, layers: int, seq: int, hidden: int, heads: int, vocab: int = 8000) -> None:
    """A BERT encoder as ``onnxruntime.transformers.optimizer`` writes one when it fuses every
    pattern (what a downloaded "optimized BERT" holds): ``EmbedLayerNormalization`` with its mask
    index, per layer an ``Attention`` (packed Q/K/V weights, the 1-D mask index), a MatMul and
    ``SkipLayerNormalization``, the FFN's MatMul + ``BiasGelu``, a MatMul and
    ``SkipLayerNormalization``. Random weights (seeded)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    ms = "com.microsoft"
    inits: dict[str, np.ndarray] = {"word": rng.standard_normal((vocab, hidden)), "pos": rng.standard_normal((512, hidden)),
                                    "seg": rng.standard_normal((2, hidden)), "g0": np.ones(hidden), "b0": np.zeros(hidden)}  # fmt: skip
    nodes = [helper.make_node("EmbedLayerNormalization", ["ids", "sids", "word", "pos", "seg", "g0", "b0", "mask"],
                              ["h0", "mask_index"], name="embed", domain=ms, epsilon=1e-12)]  # fmt: skip
    x = "h0"
    for i in range(layers):
        p = f"l{i}_"
        inits |= {p + "wqkv": rng.standard_normal((hidden, 3 * hidden)) * 0.02, p + "bqkv": np.zeros(3 * hidden),
                  p + "wo": rng.standard_normal((hidden, hidden)) * 0.02, p + "bo": np.zeros(hidden),
                  p + "w1": rng.standard_normal((hidden, 4 * hidden)) * 0.02, p + "b1": np.zeros(4 * hidden),
                  p + "w2": rng.standard_normal((4 * hidden, hidden)) * 0.02, p + "b2": np.zeros(hidden),
                  p + "g1": np.ones(hidden), p + "g2": np.ones(hidden), p + "be1": np.zeros(hidden), p + "be2": np.zeros(hidden)}  # fmt: skip
        nodes += [
            helper.make_node("Attention", [x, p + "wqkv", p + "bqkv", "mask_index"], [p + "a"], name=p + "attention",
                             domain=ms, num_heads=heads),
            helper.make_node("MatMul", [p + "a", p + "wo"], [p + "o"], name=p + "out"),
            helper.make_node("SkipLayerNormalization", [p + "o", x, p + "g1", p + "be1", p + "bo"], [p + "n1"],
                             name=p + "norm1", domain=ms, epsilon=1e-12),
            helper.make_node("MatMul", [p + "n1", p + "w1"], [p + "f1"], name=p + "ffn1"),
            helper.make_node("BiasGelu", [p + "f1", p + "b1"], [p + "g"], name=p + "gelu", domain=ms),
            helper.make_node("MatMul", [p + "g", p + "w2"], [p + "f2"], name=p + "ffn2"),
            helper.make_node("SkipLayerNormalization", [p + "f2", p + "n1", p + "g2", p + "be2", p + "b2"], [p + "n2"],
                             name=p + "norm2", domain=ms, epsilon=1e-12),
        ]  # fmt: skip
        x = p + "n2"
    ints = [helper.make_tensor_value_info(n, TensorProto.INT32, [1, seq]) for n in ("ids", "sids", "mask")]
    graph = helper.make_graph(nodes, path.stem, ints, [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, hidden])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)])
    onnx.save(model, path)


def contrib_counts(path: Path) -> Counter[str]:
    return Counter(n.op_type for n in contrib_nodes(onnx.load(str(path))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="folder of held-out models")
    ap.add_argument("folder", type=Path, help="where to write the optimized models and copies of their originals")
    args = ap.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    kept = 0
    for src in sorted(args.source.glob("*.onnx")):
        outs: list[tuple[Path, str | None]] = [(args.folder / f"{src.stem}_ortx.onnx", None)]
        kind = next((t for p, t in TRANSFORMER_TYPES.items() if src.stem.startswith(p)), None)
        if kind is not None:
            outs.append((args.folder / f"{src.stem}_tfopt.onnx", kind))
        for dst, model_type in outs:
            if model_type is None:
                ort_optimized(src, dst)
            elif not transformer_optimized(src, dst, model_type):
                continue
            counts = contrib_counts(dst)
            if not counts:
                dst.unlink(missing_ok=True)
                continue
            shutil.copyfile(src, args.folder / src.name)
            kept += 1
            print(f"{dst.name}: {', '.join(f'{t} x{n}' for t, n in sorted(counts.items()))}")
    for layers, seq, hidden, heads in ((4, 128, 256, 4), (4, 256, 384, 6)):
        bert_optimized(args.folder / f"bert_opt_l{layers}s{seq}w{hidden}.onnx", layers, seq, hidden, heads)
        kept += 1
    print(f"wrote {kept} optimized models (and their originals) to {args.folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
