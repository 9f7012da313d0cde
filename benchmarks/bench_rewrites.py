"""Rewrite passes across the bundled models and chips, and the time ``hwsim rewrite --check`` takes.

Per registered pass: the sites it rewrites across ``examples/models`` (weightless files, as
shipped), and on each bundled chip the simulated change in latency and DRAM bytes summed over
the models where it applied (each pass alone on the original model). Then the wall time of
``hwsim rewrite CHIP MODEL --passes auto --check`` on a few models. Prints markdown tables
(docs/rewrites.md holds a copy).

Usage: ``python benchmarks/bench_rewrites.py [--chips rk3588,edge8,jetson_orin_nano]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chips.schema import load_chip
from graph_ir.rewrites import PASSES
from hwsim.studies.rewrite import metrics

MODELS = sorted((ROOT / "examples" / "models").glob("*.onnx"))
CHECK_MODELS = ("audio_kws", "resnet50_v2", "yolov8n")


def sites_and_gains(chips: list[str]) -> None:
    loaded = {p.stem: onnx.load(str(p), load_external_data=False) for p in MODELS}
    specs = {c: load_chip(c) for c in chips}
    base: dict[tuple[str, str], object] = {}
    head = "| pass | sites | models | " + " | ".join(f"{c}: latency ms / DRAM MB" for c in chips) + " |"
    print(head)
    print("|" + "---|" * (3 + len(chips)))
    for name, p in PASSES.items():
        hits = {m: p(model) for m, model in loaded.items()}
        hits = {m: r for m, r in hits.items() if r.applied}
        cells = []
        for c in chips:
            d_lat, d_dram = 0.0, 0
            for m, r in hits.items():
                key = (m, c)
                if key not in base:
                    base[key] = metrics(loaded[m], specs[c])
                before = base[key]
                after = metrics(r.model, specs[c])
                d_lat += after.latency_ms - before.latency_ms  # type: ignore[attr-defined]
                d_dram += after.dram_bytes - before.dram_bytes  # type: ignore[attr-defined]
            cells.append(f"{d_lat:+.3f} / {d_dram / 1e6:+.2f}" if hits else "-")
        n_sites = sum(len(r.applied) for r in hits.values())
        print(f"| {name} | {n_sites} | {', '.join(hits) or '-'} | " + " | ".join(cells) + " |")


def check_times(chip: str) -> None:
    print(f"\n| model | `hwsim rewrite {chip} MODEL --passes auto --check` wall s | passes kept |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for m in CHECK_MODELS:
            cmd = [sys.executable, "-m", "hwsim", "rewrite", chip, str(ROOT / "examples" / "models" / f"{m}.onnx"),
                   "--passes", "auto", "--check", "-o", str(Path(tmp) / f"{m}.onnx")]  # fmt: skip
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
            wall = time.perf_counter() - t0
            kept = [ln.split(":")[0] for ln in proc.stdout.splitlines() if ln.endswith("; kept")]
            print(f"| {m} | {wall:.1f} (exit {proc.returncode}) | {', '.join(kept) or '-'} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chips", default="rk3588,edge8,jetson_orin_nano")
    args = ap.parse_args()
    chips = args.chips.split(",")
    sites_and_gains(chips)
    check_times(chips[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
