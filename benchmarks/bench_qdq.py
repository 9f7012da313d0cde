"""QDQ models as deployed: each int8 QDQ model of the held-out families (:mod:`heldout_int8`) next
to its fp32 twin at ``--precision int8``, on every bundled chip.

    python benchmarks/bench_qdq.py [--chips rk3588 edge8 jetson_orin_nano] [--out FILE.md]

A toolchain (TensorRT's explicit quantization, RKNN, onnxruntime's QDQ selectors) folds the
``QuantizeLinear`` / ``DequantizeLinear`` nodes into int8 kernels, so a QDQ model fully quantized
should run as its fp32 twin does at int8: the ratio column says how close (the quantizer drops a
ReLU after a quantized conv, and a ``DequantizeLinear`` stays at each quantized graph output).
``ops on accelerators`` is the share of the QDQ run's ops placed on an NPU or GPU. Run it on a
checkout without :func:`hwsim.pipeline.deployed` to see the QDQ nodes simulated as ops. The
encoders quantize only their MatMuls: their ``--precision model`` run keeps the rest in fp32.
Nothing is fit here; the figures are deterministic.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from heldout_int8 import CNN_SIZES, ENCODER_INT8, MLP_INT8, cnn_model, quantize
from heldout_models import ENCODER_SIZES, MLP_SIZES, encoder_model, mlp_model

from chips.schema import load_chip
from graph_ir.onnx_import import load_onnx
from hwsim.pipeline import run_graph

ROOT = Path(__file__).resolve().parents[1]


def twins(tmp: Path) -> list[tuple[str, Path, Path]]:
    """(name, fp32 file, QDQ file) for each held-out int8 model that has an fp32 twin."""
    made = [(f"cnn_int8_{n}", cnn_model(*s), True, None) for n, s in CNN_SIZES.items()]
    made += [(f"mlp_int8_{n}", mlp_model(MLP_SIZES[n]), False, None) for n in MLP_INT8]
    made += [(f"encoder_int8_{n}", encoder_model(*ENCODER_SIZES[n]), True, ("MatMul",)) for n in ENCODER_INT8]
    out = []
    for name, model, per_channel, op_types in made:
        plain = tmp / f"{name}_fp32.onnx"
        onnx.save(model, str(plain))
        out.append((name, plain, quantize(model, tmp / f"{name}.onnx", per_channel, op_types)))
    return out


def row(name: str, chip_name: str, plain: Path, qdq: Path) -> str:
    chip = load_chip(ROOT / "chips" / f"{chip_name}.yaml")
    f = run_graph(load_onnx(plain), chip, "int8")
    q = run_graph(load_onnx(qdq), chip, "int8")
    m = run_graph(load_onnx(qdq), chip, "model")
    kinds = {u.name: u.kind for u in chip.units}
    acc = sum(1 for p in q.schedule.placements.values() if kinds[p.unit] in ("npu", "gpu"))
    f_ms, q_ms, m_ms = (r.trace.makespan_ns / 1e6 for r in (f, q, m))
    return (f"| {name} | {chip_name} | {f_ms:.3f} | {q_ms:.3f} | {q_ms / f_ms:.3f} | {m_ms:.3f} | "
            f"{len(q.graph.order)} | {acc / max(1, len(q.schedule.placements)):.0%} |")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chips", nargs="+", default=["rk3588", "edge8", "jetson_orin_nano"])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    head = ("| model | chip | fp32 twin at int8 ms | QDQ at int8 ms | QDQ / twin | QDQ at `model` ms | QDQ ops simulated | "
            "ops on accelerators |")  # fmt: skip
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, plain, qdq in twins(Path(tmp)):
            for chip in args.chips:
                lines.append(row(name, chip, plain, qdq))
                print(lines[-1], flush=True)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
