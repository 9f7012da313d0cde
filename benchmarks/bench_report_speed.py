"""Speed of ``hwsim run`` with all its reports, stage by stage (issue 10, deliverable 7).

Run: ``python benchmarks/bench_report_speed.py [--repeat 7] [--cli 5] [CHIP MODEL]`` (default
``chips/rk3588.yaml examples/models/resnet18.onnx``). Prints two markdown tables:

1. **Stages, in one process after the imports**: the run's stages (load the model; cost +
   schedule + simulate; the summary; every file of the report registry, ``hwsim.report.files.REPORTS``,
   so a new report file shows up here by itself; the atomic folder write), repeated ``--repeat``
   times, interleaved (each repeat runs every stage once, in the order ``hwsim run`` does). The
   first repeat is what ``hwsim run`` pays (first text drawn loads the fonts, first PNG the
   encoder), so it has its own column; the others give the median and the spread (min-max)
   of warm runs. Wall and CPU time: CPU time is the robust one on a shared machine.
2. **End to end**: ``python -m hwsim run CHIP MODEL`` against a process that only starts the
   interpreter and imports the very modules that run imports (recorded from a run), alternated
   ``--cli`` times; the difference is the time the run takes beyond start and imports (the
   issue asks for at most 0.5 s).

Times, not assertions: these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chips.schema import load_chip
from graph_ir.onnx_import import load_onnx
from hwsim.pipeline import RunResult, run_graph
from hwsim.report import plots as _plots  # noqa: F401  (imported here: imports are not timed)
from hwsim.report.files import REPORTS, ReportInputs, write_reports
from hwsim.report.summary import build_summary
from hwsim.report.trace import chrome_trace as _chrome_trace  # noqa: F401

Times = dict[str, list[tuple[float, float]]]  # stage -> [(wall s, cpu s)] per repeat
T = TypeVar("T")


def _timed(times: Times, stage: str, fn: Callable[[], T]) -> T:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    times.setdefault(stage, []).append((time.perf_counter() - w0, time.process_time() - c0))
    return out


def _one_repeat(times: Times, chip_path: str, model: str, tmp: Path) -> None:
    """Every stage of ``hwsim run`` once, in its order."""
    chip = load_chip(chip_path)
    graph = _timed(times, "load model", lambda: load_onnx(model))
    result: RunResult = _timed(times, "cost + schedule + simulate", lambda: run_graph(graph, chip))
    summary = _timed(times, "summary", lambda: build_summary(result))
    figures: dict[str, bytes] = {}
    for f in REPORTS:
        inputs = ReportInputs(result, summary, dict(figures))
        data = _timed(times, f.name, partial(f.write, inputs))
        if f.figure:
            figures[f.name] = data
    _timed(times, "write_reports (all files, atomic folder)", lambda: write_reports(result, tmp / "out", summary=summary))


def stage_table(chip: str, model: str, repeat: int) -> str:
    times: Times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            _one_repeat(times, chip, model, Path(tmp))
    lines = [
        f"Stages of `hwsim run {chip} {model}` in one process after the imports ({repeat} repeats, interleaved):",
        "",
        "| stage | first run wall s | first run CPU s | warm median wall s | warm min-max wall s | warm median CPU s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    firsts = [0.0, 0.0]
    for stage, ts in times.items():
        warm = ts[1:] or ts
        walls, cpus = [w for w, _ in warm], [c for _, c in warm]
        if not stage.startswith("write_reports"):
            firsts[0] += ts[0][0]
            firsts[1] += ts[0][1]
        lines.append(
            f"| {stage} | {ts[0][0]:.4f} | {ts[0][1]:.4f} | {statistics.median(walls):.4f} | "
            f"{min(walls):.4f}-{max(walls):.4f} | {statistics.median(cpus):.4f} |"
        )
    lines.append(f"| **all stages above but write_reports** | **{firsts[0]:.4f}** | **{firsts[1]:.4f}** | | | |")
    return "\n".join(lines)


def _record_imports(chip: str, model: str, tmp: Path) -> list[str]:
    """The modules ``hwsim run`` imports, recorded from a run in a fresh process."""
    code = (
        "import sys, json; from hwsim.cli import main; "
        f"main(['run', {chip!r}, {model!r}, '--out', {str(tmp / 'rec')!r}]); "
        f"json.dump(sorted(m for m in sys.modules if m != '__main__' and not m.startswith('_')), open({str(tmp / 'mods.json')!r}, 'w'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd=ROOT, env=_env())
    return list(json.loads((tmp / "mods.json").read_text()))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=_env())
    return time.perf_counter() - t0


def cli_table(chip: str, model: str, repeat: int) -> str:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        mods = _record_imports(chip, model, tmp)
        imports = "import importlib\nfor m in " + repr(mods) + ":\n    try:\n        importlib.import_module(m)\n    except Exception:\n        pass\n"
        run_cmd = [sys.executable, "-m", "hwsim", "run", chip, model, "--out", str(tmp / "r")]
        base, full = [], []
        for _ in range(repeat):
            base.append(_wall([sys.executable, "-c", imports]))
            full.append(_wall(run_cmd))
    beyond = [f - b for f, b in zip(full, base)]
    return "\n".join(
        [
            f"End to end, {repeat} alternated runs ({len(mods)} modules imported by the run):",
            "",
            "| process | median wall s | min-max wall s |",
            "|---|---:|---:|",
            f"| interpreter start + the run's imports | {statistics.median(base):.3f} | {min(base):.3f}-{max(base):.3f} |",
            f"| `python -m hwsim run {chip} {model}` | {statistics.median(full):.3f} | {min(full):.3f}-{max(full):.3f} |",
            f"| **run beyond start and imports** | **{statistics.median(beyond):.3f}** | {min(beyond):.3f}-{max(beyond):.3f} |",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chip", nargs="?", default="chips/rk3588.yaml")
    ap.add_argument("model", nargs="?", default="examples/models/resnet18.onnx")
    ap.add_argument("--repeat", type=int, default=7, help="repeats of the stages in this process")
    ap.add_argument("--cli", type=int, default=5, help="alternated end-to-end runs (0: skip)")
    args = ap.parse_args()
    os.chdir(ROOT)
    print(stage_table(args.chip, args.model, args.repeat))
    if args.cli > 0:
        print()
        print(cli_table(args.chip, args.model, args.cli))


if __name__ == "__main__":
    main()
