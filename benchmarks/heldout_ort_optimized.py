#!/usr/bin/env python3
"""Held-out models as onnxruntime saves them after its graph optimizations: each model of a
folder (the held-out set of ``benchmarks/heldout_models.py``), optimized by onnxruntime at its
extended level and saved (``SessionOptions.optimized_model_filepath``, what a deployment pipeline
keeps), and, for the encoders and decoders when ``sympy`` is installed, by
``onnxruntime.transformers.optimizer``. Such a file holds onnxruntime's ``com.microsoft`` ops
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
    print(f"wrote {kept} optimized models (and their originals) to {args.folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
