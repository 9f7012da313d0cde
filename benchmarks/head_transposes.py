#!/usr/bin/env python3
"""onnxruntime's Transposes that move one axis carrying units of another size than 1, 2, 4 or 8
bytes (attention's heads split and merged: ``(1, S, H, D)`` by ``(0, 2, 1, 3)``), measured against
hwsim's price (``docs/fidelity_cpu.md``, "A twenty-fourth batch and a Transpose's memcpy per unit").

    python benchmarks/head_transposes.py --chip FP.yaml [--rounds 3] [--cases 16x256x8,16x2048x64]

Each case ``HxSxD`` is a float tensor of ``(1, S, H, D)`` moved by ``(0, 2, 1, 3)``: ``S x H`` units
of ``D`` floats, each one memcpy call in onnxruntime (``cost_models.cpu_layout.single_axis_memcpy_ns``).
Times as in ``single_axis_transposes.py`` (the kernel's, the fastest of 11 profiled runs, 1 thread,
the rounds interleaved). The fingerprint probes heads of 8 floats at S = 256 and 2048 over 16
heads (``hwsim.host.kernels.MEMCPY_PROBE``); the default cases are other widths and counts.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op_kernels import parser  # the one-op benchmarks share it
from single_axis_transposes import _summary, priced_cells, timed_rounds, transpose_model

#: (heads, sequence, head width in floats): units of 12 to 512 bytes, 1,024 to 32,768 of them.
CASES = ((16, 64, 3), (16, 512, 5), (8, 128, 6), (12, 197, 8), (7, 42, 16), (21, 64, 16), (16, 1024, 12), (4, 256, 24),
         (12, 128, 32), (8, 2048, 32), (12, 128, 64), (16, 2048, 64), (16, 256, 128))  # fmt: skip


def _cases(text: str | None) -> tuple[tuple[int, int, int], ...]:
    if not text:
        return CASES
    return tuple(tuple(int(v) for v in item.split("x")) for item in text.split(","))  # type: ignore[misc]


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--cases", help="HxSxD,... (heads x sequence x head width; default: 13 shapes the probe does not run)")
    args = ap.parse_args(argv)
    models = {case: transpose_model("f32", (1, case[1], case[0], case[2]), (0, 2, 1, 3)) for case in _cases(args.cases)}
    got = timed_rounds(models, lambda _: "f32", args.chip, args.rounds)
    print(f"Transpose kernel, us: lowest-highest of {args.rounds} rounds; hwsim on {args.chip}\n")
    print("| heads x S x D | unit, bytes | units | measured | predicted | error |")
    print("|---|---:|---:|---:|---:|---:|")
    small, large = [], []
    for (h, s, d), times in got.items():
        cells, err = priced_cells(models[h, s, d], args.chip, times)
        (small if d * 4 <= 128 else large).append(err)
        print(f"| {h} x {s} x {d} | {4 * d} | {h * s} | {cells}")
    print("\n" + _summary("units of up to 128 bytes", small) + "\n" + _summary("larger units", large))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
