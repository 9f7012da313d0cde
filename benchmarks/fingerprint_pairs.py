"""Two fingerprints of one host against each other (issue 15 item 2): every model predicted on each chip file.

Run: ``python benchmarks/fingerprint_pairs.py A.yaml B.yaml [HELD_OUT_DIR]`` after two ``hwsim fingerprint
--calibrate -o`` in a row. Each model in ``examples/models/`` (and HELD_OUT_DIR, from ``heldout_models.py``)
is predicted by ``hwsim run FILE MODEL --json --precision model`` on both files, in this process; the table
gives both latencies and their difference, and the last line how many are within 5 % of each other.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

from hwsim.cli import main as hwsim_main

ROOT = Path(__file__).resolve().parents[1]


def predict_ms(chip: str, model: Path) -> float | None:
    """``hwsim run chip model --json --precision model``'s latency, ms; None when the run fails."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            hwsim_main(["run", chip, str(model), "--json", "--precision", "model"])
        except SystemExit:
            pass
    try:
        return float(json.loads(out.getvalue())["latency_ms"])
    except (ValueError, KeyError):
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("heldout", nargs="?")
    args = ap.parse_args()
    models = sorted((ROOT / "examples" / "models").glob("*.onnx"))  # from any folder, not only the repository's
    models += sorted(Path(args.heldout).glob("*.onnx")) if args.heldout else []
    diffs = []
    print("| model | A ms | B ms | B / A - 1 |\n|---|---:|---:|---:|")
    for m in models:
        a, b = predict_ms(args.a, m), predict_ms(args.b, m)
        if a is None or b is None or a <= 0:
            print(f"| {m.stem} | failed | | |")
            continue
        diffs.append(b / a - 1)
        print(f"| {m.stem} | {a:.3f} | {b:.3f} | {diffs[-1]:+.1%} |", flush=True)
    if diffs:
        print(f"\nwithin 5 %: {sum(abs(d) <= 0.05 for d in diffs)} of {len(diffs)}; max |difference| {max(map(abs, diffs)):.1%}")


if __name__ == "__main__":
    main()
