"""``hwsim optimize`` against a plain ``hwsim run``: every bundled model on every bundled chip.

    python benchmarks/bench_optimize.py [--budget 40] [--seed 0] [--quick] [--write-doc]
    python benchmarks/bench_optimize.py --model-dir DIR --budget 6    # models the project never searched

For each (model, chip) pair: ``hwsim optimize CHIP MODEL --budget B --seed S`` with a fresh
experience database of its own (nothing to transfer from, nothing to resume), then the default
latency (``hwsim run CHIP MODEL``) and the optimized one (``hwsim run CHIP OUTDIR/model.onnx
--schedule OUTDIR/schedule.json``, the replay the issue promises reproduces the search's best).
A replay that disagrees with ``summary.json`` is flagged in the table. A model that fails on a
chip is listed with its error. Only the CLI (``hwsim.cli.main``, in this process so that the
imports are paid once) and its public outputs are used.

``--model-dir DIR``: the ONNX files of DIR instead of the bundled models (for instance the 52
held-out models ``python benchmarks/heldout_models.py DIR`` writes: int8 QDQ CNNs and encoders,
recurrent stacks, STFT front ends, U-Nets, EfficientNet- and ConvNeXt-like CNNs).

Prints a Markdown table; ``--write-doc`` also puts it in docs/optimize.md under
"Measured: optimized vs default" (replacing that section). ``--quick``: 3 models x 3 chips, budget 20.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hwsim.cli import main as hwsim_main

MODELS = sorted((ROOT / "examples" / "models").glob("*.onnx"))
CHIPS = sorted(p.stem for p in (ROOT / "chips").glob("*.yaml"))
QUICK_MODELS = ("mobilenetv2", "resnet18", "mlp_mnist")
DOC = ROOT / "docs" / "optimize.md"
HEADING = "## Measured: optimized vs default"
PREAMBLE = """\
Each bundled model on each bundled chip: `hwsim optimize` with a fixed budget and seed and a fresh
experience database per pair (no transfer, nothing resumed), against a plain `hwsim run`. *default
ms* is `hwsim run CHIP MODEL`; *optimized ms* is `hwsim run CHIP OUTDIR/model.onnx --schedule
OUTDIR/schedule.json`, the replay of the best found (a replay that disagreed with `summary.json`
would be flagged in bold); *search s* is `summary.json`'s seconds (2 workers on a shared, loaded
2-core machine); *what changed*: the best's rewrite passes, then its per-op knobs counted over the
ops they were set on (a `unit=` knob pins an op, often to the unit it ran on already).
"""


@dataclass(frozen=True, slots=True)
class CliResult:
    """One ``hwsim`` call: exit code, stdout, and the last line of stderr (its error, if any)."""

    code: int
    stdout: str
    error: str


def hwsim(*argv: str) -> CliResult:
    """Run ``hwsim ARGV`` in this process, capturing its output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = hwsim_main(list(argv))
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip() and "INFO" not in ln]
    return CliResult(code, out.getvalue(), lines[-1] if lines else "")


def run_latency_ms(chip: str, model: Path, out: Path, *extra: str) -> float:
    """``hwsim run CHIP MODEL --json``'s latency (RuntimeError with hwsim's error line when it fails)."""
    res = hwsim("run", chip, str(model), "--out", str(out), "--json", "--no-plots", *extra)
    if res.code != 0:
        raise RuntimeError(res.error or f"hwsim run exited {res.code}")
    return float(json.loads(res.stdout)["latency_ms"])


def what_changed(best: dict[str, object]) -> str:
    """The best candidate in a few words: its rewrite passes, then its knobs counted over the ops."""
    transforms = list(best.get("transforms") or [])  # type: ignore[call-overload]
    sigs: dict[str, dict[str, object]] = best.get("signatures") or {}  # type: ignore[assignment]
    knobs = Counter(f"{k}={str(v).lower()}" for sig in sigs.values() for k, v in sorted(sig.items()))
    parts = [", ".join(transforms)] if transforms else []
    if sigs:
        common = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in knobs.most_common(3))
        more = ", ..." if len(knobs) > 3 else ""
        parts.append(f"{len(sigs)} op{'s' if len(sigs) > 1 else ''} mapped ({common}{more})")
    return "; ".join(parts) or "nothing better found"


def bench_pair(model: Path, chip: str, budget: int, seed: int, tmp: Path) -> str:
    """One table row for (model, chip)."""
    name = f"{model.stem}-{chip}"
    out = tmp / name
    t0 = time.perf_counter()
    res = hwsim("optimize", chip, str(model), "--budget", str(budget), "--seed", str(seed),
                "--db", str(tmp / f"{name}.sqlite"), "-o", str(out), "--quiet")  # fmt: skip
    wall_s = time.perf_counter() - t0
    if res.code != 0:
        return f"| {model.stem} | {chip} | - | - | - | - | {wall_s:.1f} | failed (exit {res.code}): {res.error} |"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    try:
        default_ms = run_latency_ms(chip, model, tmp / f"{name}-run-default")
        best_ms = run_latency_ms(chip, out / "model.onnx", tmp / f"{name}-run-best",
                                 "--schedule", str(out / "schedule.json"))  # fmt: skip
    except RuntimeError as exc:
        return f"| {model.stem} | {chip} | - | - | - | {summary['trials']} | {summary['seconds']:.1f} | replay failed: {exc} |"
    note = what_changed(summary["best"])
    for label, ran, said in (("default", default_ms, summary["baseline"]["latency_ms"]),
                             ("replay", best_ms, summary["best"]["latency_ms"])):  # fmt: skip
        if abs(ran - said) > 1e-6 * max(1.0, said):
            note += f" (**{label} {ran:.4f} ms, summary.json {said:.4f} ms**)"
    return (f"| {model.stem} | {chip} | {default_ms:.3f} | {best_ms:.3f} | {default_ms / best_ms:.3f}x "
            f"| {summary['trials']} | {summary['seconds']:.1f} | {note} |")  # fmt: skip


def table(models: Sequence[Path], chips: Sequence[str], budget: int, seed: int) -> list[str]:
    """The Markdown table, one row per pair, printed as it grows."""
    lines = ["| model | chip | default ms | optimized ms | speedup | trials | search s | what changed |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_optimize_") as tmp:
        for model in models:
            for chip in chips:
                lines.append(bench_pair(model, chip, budget, seed, Path(tmp)))
                print(lines[-1], flush=True)
    return lines


def replace_section(doc: Path, heading: str, body: str) -> None:
    """Put ``heading`` + ``body`` in ``doc``: in place of that section (up to the next ``## ``), else at the end."""
    text = doc.read_text(encoding="utf-8")
    start = text.find(heading + "\n")
    if start < 0:
        new = text.rstrip("\n") + "\n\n" + heading + "\n\n" + body.strip("\n") + "\n"
    else:
        nxt = text.find("\n## ", start + len(heading))
        tail = text[nxt + 1 :] if nxt >= 0 else ""
        new = text[:start] + heading + "\n\n" + body.strip("\n") + "\n" + ("\n" + tail if tail else "")
    doc.write_text(new, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=None, help="trials per search (default 40; --quick 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)} only, budget 20")
    ap.add_argument("--models", default=None, help="comma-separated model names (default: all bundled)")
    ap.add_argument("--model-dir", type=Path, default=None, help="the ONNX files of DIR instead of the bundled models")
    ap.add_argument("--write-doc", action="store_true", help="put the table in docs/optimize.md")
    args = ap.parse_args(argv)
    if args.model_dir is not None and not args.model_dir.is_dir():
        ap.error(f"--model-dir {args.model_dir}: not a folder")
    if args.model_dir is not None and args.write_doc:
        ap.error("--model-dir: no --write-doc with it (the doc's table is the bundled models')")
    budget = args.budget or (20 if args.quick else 40)
    wanted = args.models.split(",") if args.models else QUICK_MODELS if args.quick else None
    pool = sorted(args.model_dir.glob("*.onnx")) if args.model_dir is not None else MODELS
    models = [m for m in pool if wanted is None or m.stem in wanted]
    t0 = time.perf_counter()
    lines = table(models, CHIPS, budget, args.seed)
    total_s = time.perf_counter() - t0
    cmd = "python benchmarks/bench_optimize.py" + (" --quick" if args.quick else "") + f" --budget {budget} --seed {args.seed}"
    cmd += f" --model-dir {args.model_dir}" if args.model_dir is not None else ""
    foot = f"\n{len(lines) - 2} pairs in {total_s / 60:.1f} min wall (`{cmd}`)."
    print(foot)
    if args.write_doc:
        replace_section(DOC, HEADING, PREAMBLE + "\n" + "\n".join(lines) + "\n" + foot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
