"""Golden outputs: every bundled model on every bundled chip, plus engine and scheduler variants.

Run ``python benchmarks/golden.py record`` to (re)write ``tests/data/golden/golden.json`` and
``python benchmarks/golden.py check`` to compare the current code with it (exit 1 on any
difference, listing each). Each case runs ``hwsim run ... --no-plots`` in this process and keeps
``summary.json`` whole and the sha256 of ``trace.json``, ``critical_path.txt`` and
``traffic.csv``. The test suite (``tests/test_golden.py``) checks the same cases.

Intended differences are applied by :func:`normalize` (one place), so a change of format that
was decided on is not mistaken for a change of simulated numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden" / "golden.json"
HASHED = ("trace.json", "critical_path.txt", "traffic.csv")

#: Option variants, run on the models named (engine features, frames, policies, objectives).
VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "frames4": (("--frames", "4"), ("resnet18", "yolov8n", "lstm_gru")),
    "frames6-inflight2-fm": (
        ("--frames", "6", "--in-flight", "2", "--frame-order", "frame-major"),
        ("resnet18", "yolov8n"),
    ),
    "frames5-inflight3": (("--frames", "5", "--in-flight", "3"), ("yolov8n", "mobilenetv2")),
    "no-db-no-split": (("--no-double-buffer", "--no-split"), ("resnet18", "yolov8n", "bert_base")),
    "fp16": (("--precision", "fp16"), ("resnet18", "vit_b16")),
    "model-precision": (("--precision", "model"), ("mobilenetv2", "lstm_lm")),
    "heft": (("--policy", "heft"), ("resnet18", "yolov8n", "bert_base")),
    "cpop": (("--policy", "cpop"), ("yolov8n",)),
    "peft": (("--policy", "peft"), ("yolov8n",)),
    "ort-greedy": (("--policy", "ort-greedy"), ("yolov8n", "bert_base")),
    "single-unit": (("--policy", "single-unit"), ("resnet18",)),
    "affinity-list": (("--policy", "affinity-list"), ("resnet18",)),
    "energy": (("--objective", "energy", "--latency-budget-ms", "40"), ("resnet18", "yolov8n")),
    "npu1": (("--units", "npu:1,cpu_big"), ("yolov8n",)),
    "set-dram": (("--set", "dram.bandwidth_gbps=8", "--set", "npu.clock_mhz=600"), ("yolov8n",)),
}


def cases() -> list[tuple[str, list[str]]]:
    """``(case name, argv of hwsim run without --out)`` for every golden case; paths are relative to
    the repository root (:func:`run_case` runs there), so the recorded ``provenance`` holds no
    checkout's absolute path."""
    models = sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.onnx"))
    chips = sorted(p.stem for p in (ROOT / "chips").glob("*.yaml"))
    out: list[tuple[str, list[str]]] = []
    for chip in chips:
        for model in models:
            argv = [f"chips/{chip}.yaml", f"examples/models/{model}.onnx"]
            out.append((f"{chip}/{model}", argv))
    for variant, (opts, names) in VARIANTS.items():
        for model in names:
            argv = ["chips/rk3588.yaml", f"examples/models/{model}.onnx"]
            out.append((f"rk3588/{model}/{variant}", argv + list(opts)))
    return out


def normalize(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary as compared: every key (the place for a decided format change while it is
    under way, with its reason; the recording is redone once the change lands)."""
    return dict(summary)


def normalize_file(name: str, data: bytes) -> bytes:
    """A hashed file as compared: as written (the place to take out a decided format change
    before hashing, while it is under way)."""
    return data


def run_case(argv: list[str]) -> dict[str, Any]:
    """Run one case through the CLI; its summary and the hashes of the hashed files."""
    from hwsim.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r"
        sink = io.StringIO()
        here = os.getcwd()
        try:
            os.chdir(ROOT)
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                code = main(["run", *argv, "--out", str(out), "--no-plots"])
        finally:
            os.chdir(here)
        if code not in (0, 1) or not (out / "summary.json").exists():
            raise RuntimeError(f"hwsim run {' '.join(argv)} exited {code}: {sink.getvalue()[-500:]}")
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        hashes = {n: hashlib.sha256(normalize_file(n, (out / n).read_bytes())).hexdigest() for n in HASHED}
    return {"exit": code, "summary": summary, "sha256": hashes}


def differences(name: str, want: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """One line per difference between a recorded case and a fresh run of it."""
    out = []
    if want["exit"] != got["exit"]:
        out.append(f"{name}: exit {want['exit']} -> {got['exit']}")
    ws, gs = normalize(want["summary"]), normalize(got["summary"])
    for key in sorted(set(ws) | set(gs)):
        if ws.get(key) != gs.get(key):
            out.append(f"{name}: summary.{key}: {str(ws.get(key))[:120]} -> {str(gs.get(key))[:120]}")
    for f in HASHED:
        if want["sha256"][f] != got["sha256"][f]:
            out.append(f"{name}: {f} differs")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "check"))
    ap.add_argument("--only", help="only cases whose name contains this text")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    todo = [(n, a) for n, a in cases() if args.only is None or args.only in n]
    if args.mode == "record":
        data = {n: run_case(a) for n, a in todo}
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"recorded {len(data)} cases in {GOLDEN.relative_to(ROOT)}")
        return 0
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    problems = []
    for name, a in todo:
        if name not in golden:
            problems.append(f"{name}: not recorded")
            continue
        problems += differences(name, golden[name], run_case(a))
    print("\n".join(problems) if problems else f"{len(todo)} cases identical to {GOLDEN.relative_to(ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
