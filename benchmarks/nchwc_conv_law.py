"""Dense 3x3 convs on onnxruntime's NCHWc kernels over 2 x 2 to 28 x 28 maps, priced with the
fingerprint's ``nchwc_call_ns`` (each kernel call, and the filter read once from where the
weights are kept: :func:`cost_models.cpu.nchwc_conv_pass_ns`) and without it (their FMAs alone,
at the same calibrated efficiency).

``python benchmarks/nchwc_conv_law.py --chip FP.yaml [--rounds 2]`` (a fingerprinted host chip
file with the field): one line per shape, 1 thread. Each conv is timed as a chain of 8 less a
chain of 2 (``hwsim.host.nchwc_probe.nchwc_chain``: c -> c channels, padding 1, a filter of its
own per conv, Relu fused), both validated ``--rounds`` times as ``bench_cpu_fidelity.py`` merges
rounds, and priced the same way. Six of the shapes are the fingerprint's probes
(``hwsim.host.nchwc_probe.NCHWC_PROBES``, marked); the rest were never fit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

if TYPE_CHECKING:
    from chips.schema import Chip
    from hwsim.host.fingerprint import Dispatch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (channels in and out, map side).
SHAPES = ((32, 8), (32, 16), (32, 28), (48, 8), (48, 16), (64, 4), (64, 6), (64, 8), (64, 12), (64, 16), (64, 28),
          (80, 8), (80, 14), (96, 4), (96, 8), (96, 14), (128, 2), (128, 3), (128, 4), (128, 5), (128, 7), (128, 8),
          (128, 14), (192, 2), (192, 3), (192, 4), (192, 7), (192, 8), (192, 14), (256, 2), (256, 4), (256, 7),
          (256, 14), (384, 2), (384, 4), (512, 4), (512, 7))  # fmt: skip
#: The chip field whose law is checked.
FIELD = "nchwc_call_ns"
LONG, SHORT = 8, 2


def _per_conv(chip: Chip, plain: Chip, chains: dict[int, Path], rounds: int, ref: tuple[float, int] | None,
              disp: Dispatch | None) -> tuple[float, float, float]:  # fmt: skip
    """(measured, priced with the field, priced without it) of one conv, ns: chain differences."""
    from hwsim.host.validate import merge_rounds, repredict, validate_model

    got = {}
    for n, path in chains.items():
        v = merge_rounds([validate_model(chip, path, 1, "all", 15, reference=ref, dispatch=disp) for _ in range(rounds)])
        got[n] = (v.measured_ns, repredict(v, chip, path).predicted_ns, repredict(v, plain, path).predicted_ns)
    measured, new, old = ((got[LONG][i] - got[SHORT][i]) / (LONG - SHORT) for i in range(3))
    return measured, new, old


def main() -> int:
    from chips import chip_from_dict, load_chip
    from hwsim.host.fingerprint import read_dispatch, reference_gflops
    from hwsim.host.nchwc_probe import NCHWC_PROBES, nchwc_chain

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", type=Path, required=True, help=f"a fingerprinted host chip file with {FIELD}")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    chip, ref, disp = load_chip(args.chip), reference_gflops(args.chip, 1), read_dispatch(args.chip)
    data = chip.model_dump()
    data["units"] = [{k: v for k, v in u.items() if k != FIELD} for u in data["units"]]
    plain = chip_from_dict(data)
    probes = set(NCHWC_PROBES.values())
    print("| channels | map | measured us a conv | FMAs alone | with calls and filter |")
    print("|---:|---:|---:|---:|---:|")
    errors: dict[str, list[tuple[float, float]]] = {"probes": [], "held out, maps up to 7": [], "held out, maps 8 and more": []}
    with tempfile.TemporaryDirectory() as tmp:
        for c, side in SHAPES:
            chains = {}
            for n in (SHORT, LONG):
                chains[n] = Path(tmp) / f"c{c}_s{side}_k{n}.onnx"
                onnx.save(nchwc_chain(c, side, n), chains[n])
            measured, new, old = _per_conv(chip, plain, chains, args.rounds, ref, disp)
            e_old, e_new = old / measured - 1, new / measured - 1
            key = "probes" if (c, side) in probes else "held out, maps up to 7" if side <= 7 else "held out, maps 8 and more"
            errors[key].append((e_old, e_new))
            mark = " (probe)" if (c, side) in probes else ""
            print(f"| {c} | {side} x {side}{mark} | {measured / 1e3:.2f} | {100 * e_old:+.1f} % | {100 * e_new:+.1f} % |", flush=True)
    for label, es in errors.items():
        parts = [f"{name} {sum(abs(e) <= 0.1 for e in col)} of {len(col)} within 10 %, median {100 * statistics.median(abs(e) for e in col):.1f} %"
                 for name, col in (("FMAs alone", [b for b, _ in es]), ("with calls and filter", [a for _, a in es]))]  # fmt: skip
        print(f"{label}: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
