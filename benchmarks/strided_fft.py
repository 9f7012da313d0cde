#!/usr/bin/env python3
"""onnxruntime's radix-2 DFT along an axis that is not the last, measured against hwsim's price
(``docs/fidelity_cpu.md``, "A strided FFT's stages past the L1").

    python benchmarks/strided_fft.py --chip FP.yaml [--rounds 3] [--shapes 128x256,512x384]

Each shape ``NxW`` is a DFT of N points over each of W complex columns: along axis 1 of
(1, N, W, 2), its points 8 W bytes apart, and the same transforms along axis 2 of (1, W, N, 2),
contiguous. Each is the kernel's time (the profiler's, the fastest of 11 runs), the shapes'
rounds interleaved; the table gives the lowest and highest over the rounds beside hwsim's price of
the same node on ``--chip`` (a fingerprinted host: ``fft_butterfly_ns``, ``fft_point_ns`` and,
for the strided axis, ``fft_stride_ns`` and ``fft_page_stride_ns``). The default shapes are the
fingerprint's three probes (256x128, 512x128, 64x512) and 15 shapes it does not run, FNet's two
(128x256, 512x384) among them; the summary line counts the shapes of the run that are not probes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op_kernels import kernel_ns, parser, price_ns  # the one-op benchmarks share it

#: (points, complex columns): the fingerprint's probes (:data:`hwsim.host.kernels.FFT_STRIDE_PROBES`)
#: first, then shapes it does not run.
SHAPES = ((256, 128), (512, 128), (64, 512), (128, 256), (512, 384), (64, 256), (128, 64), (128, 128), (128, 192),
          (128, 384), (128, 512), (256, 64), (256, 96), (256, 192), (256, 256), (512, 32), (512, 64), (64, 768))  # fmt: skip


def dft_model(n: int, w: int, axis: int) -> onnx.ModelProto:
    """One DFT of ``n`` points over ``w`` complex columns along ``axis`` (1: strided, 2: contiguous)."""
    from onnx import TensorProto, helper

    shape = [1, n, w, 2] if axis == 1 else [1, w, n, 2]
    graph = helper.make_graph([helper.make_node("DFT", ["x"], ["y"], axis=axis, name="dft")], "dft",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def measured_ns(model: onnx.ModelProto) -> float:
    """The DFT kernel's time, the fastest of 11 profiled runs, 1 thread."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return kernel_ns(model, {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)})


def _shapes(text: str | None) -> tuple[tuple[int, int], ...]:
    if not text:
        return SHAPES
    return tuple((int(a), int(b)) for a, b in (s.split("x") for s in text.split(",")))


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--shapes", help="NxW,NxW,... (default: the fingerprint's probes and 16 more)")
    args = ap.parse_args(argv)
    shapes = _shapes(args.shapes)
    models = {(n, w, a): dft_model(n, w, a) for n, w in shapes for a in (1, 2)}
    got: dict[tuple[int, int, int], list[float]] = {k: [] for k in models}
    for _ in range(args.rounds):
        for key, model in models.items():
            got[key].append(measured_ns(model))
    print(f"DFT kernel, us: lowest-highest of {args.rounds} rounds; hwsim on {args.chip}\n")
    print("| points | bytes apart | contiguous | predicted | strided | predicted | error (strided) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    errors = []
    for n, w in shapes:
        cont, strided = got[n, w, 2], got[n, w, 1]
        p_cont, p_strided = (price_ns(models[n, w, a], args.chip) for a in (2, 1))
        err = [p_strided / t - 1 for t in strided]
        errors.append(min(err, key=abs))
        print(f"| {n} | {8 * w} | {min(cont) / 1e3:.0f}-{max(cont) / 1e3:.0f} | {p_cont / 1e3:.0f} | "
              f"{min(strided) / 1e3:.0f}-{max(strided) / 1e3:.0f} | {p_strided / 1e3:.0f} | "
              f"{100 * min(err):+.1f}..{100 * max(err):+.1f} % |")  # fmt: skip
    from hwsim.host.kernels import FFT_STRIDE_PROBES

    probed = {(n, w) for _, _, n, w in FFT_STRIDE_PROBES}
    held = [e for (n, w), e in zip(shapes, errors, strict=True) if (n, w) not in probed]
    if held:
        print(f"\nshapes the fingerprint does not run: {sum(abs(e) <= 0.10 for e in held)} of {len(held)} within 10 % "
              f"in their best round; median of the best rounds' errors {100 * float(np.median(np.abs(held))):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
