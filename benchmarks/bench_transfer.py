"""Transfer of ``hwsim optimize`` across the RK3588 family: trials to 95 % of the cold-start gain.

    python benchmarks/bench_transfer.py [--budget 40] [--seed 0] [--quick] [--write-doc]

The family: the bundled ``rk3588`` and six variants written as chip files
(``chips.variants.override``): NPU clock x0.75 and x1.25 (``npu.clock_mhz``), NPU SRAM x0.5 and x2
(``npu.sram_kib``, per core), two NPU cores instead of three (``npu.cores``), DRAM bandwidth x0.5
(``dram.bandwidth_gbps``). Every variant is a target T; for each model M:

- **cold**: ``hwsim optimize T M --budget B --seed S`` on an empty database. Its best objective
  is C, its baseline (trial 0, the plain ``hwsim run``) b.
- **transfer**: a fresh database holding the cold searches of M on every OTHER family member
  (base and the other variants; T's own trials are never in it), then
  ``hwsim optimize T M --transfer-from auto`` with the same budget and seed.
- **cross-model** (targets of ``CROSS_TARGETS``): the same, but the database holds the cold
  searches of the other models only, on the other family members (neither T nor M is in it).

Trials to 95 %: the best-so-far curve is read from ``search_log.jsonl`` (feasible trials, in
trial order); the count is 1 + the number of the first trial whose best-so-far objective is
<= b - 0.95 (b - C), the baseline counted as trial 1 as ``--budget`` counts it; the same threshold
(from the cold run's C) for both runs. A run that never reaches it counts as "> B". Hit rate of
transferred candidates: trials logged ``transferred`` whose objective beats b, over all trials
logged ``transferred``. Only the CLI (``hwsim.cli.main``) and its outputs are used.

``--quick``: resnet18, targets clk x1.25 and SRAM x0.5, budget 20. ``--json FILE`` keeps every curve.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_optimize import hwsim, replace_section

from chips.schema import load_chip
from chips.variants import override

DOC = ROOT / "docs" / "optimize.md"
HEADING = "## Measured: transfer on the rk3588 family"
PREAMBLE = """\
The family: `rk3588` and six variants of it (NPU clock x0.75 / x1.25, NPU SRAM per core x0.5 / x2,
2 NPU cores instead of 3, DRAM bandwidth x0.5), each written as a chip file. For a target T and a
model M, *cold* is `hwsim optimize T M` on an empty database; *transfer* is the same search with
`--transfer-from auto` on a fresh database holding the cold searches of M on every other family
member. **Held out: T's own trials are never in the database** (leave-one-out); in the *other
models* rows M's trials are held out too (the database holds the other models' searches on the
other members). Same budget and seed for both. *Trials to 95 %*: 1 + the number of the first trial
whose best-so-far latency is <= b - 0.95 (b - C), b the baseline (trial 0, a plain `hwsim run`),
C the cold search's best; the baseline counts as a trial, as `--budget` counts it, so the fewest
possible is 2. *Ratio*: cold trials / transfer trials. *Transferred hits*: trials logged
`transferred` that beat b / trials logged `transferred`. Target of issue 16: >= 10x
(published learned-cost-model transfer: 4.7x-9.1x).
"""
MODELS = ("resnet18", "yolov8n", "mobilenetv2")
#: variant name -> (field, factor on the base chip's value)
VARIANTS = {
    "clk075": ("npu.clock_mhz", 0.75),
    "clk125": ("npu.clock_mhz", 1.25),
    "sram05": ("npu.sram_kib", 0.5),
    "sram2": ("npu.sram_kib", 2.0),
    "cores2": ("npu.cores", 2 / 3),
    "dram05": ("dram.bandwidth_gbps", 0.5),
}
#: targets that also get a cross-model row (the database holds the other models only)
CROSS_TARGETS = ("clk125", "sram05")
QUICK = {"models": ("resnet18",), "targets": ("clk125", "sram05"), "budget": 20}


@dataclass(frozen=True, slots=True)
class Search:
    """One search's log, reduced: baseline, best-so-far curve, transferred trials and their wins."""

    baseline: float
    curve: tuple[float, ...]
    transferred: int
    transferred_hits: int
    seconds: float

    @property
    def best(self) -> float:
        return self.curve[-1]


def write_family(folder: Path) -> dict[str, Path]:
    """The chip files of the family (``rk3588`` is the bundled name itself)."""
    base = load_chip("rk3588")
    paths: dict[str, Path] = {"rk3588": Path("rk3588")}
    for name, (field, factor) in VARIANTS.items():
        target, _, attr = field.partition(".")
        old = getattr(base.dram if target == "dram" else base.unit(target), attr)
        new = round(old * factor) if isinstance(old, int) else round(old * factor, 3)
        data = override(base, [f"{field}={new}"]).model_dump(mode="json")
        data["name"] = f"rk3588_{name}"
        data["description"] = f"{base.description} with {field}={new} ({factor:g}x)"
        paths[name] = folder / f"rk3588_{name}.yaml"
        paths[name].write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return paths


def optimize(chip: Path, model: str, db: Path, out: Path, budget: int, seed: int, *extra: str) -> Search:
    """Run one search and read its log (RuntimeError with hwsim's error line when it fails)."""
    res = hwsim("optimize", str(chip), str(ROOT / "examples" / "models" / f"{model}.onnx"),
                "--budget", str(budget), "--seed", str(seed), "--db", str(db), "-o", str(out),
                "--quiet", *extra)  # fmt: skip
    if res.code != 0:
        raise RuntimeError(f"hwsim optimize {chip} {model}: {res.error or f'exit {res.code}'}")
    return read_search(out)


def read_search(out: Path) -> Search:
    """The search of output folder ``out``, from its ``search_log.jsonl`` and ``summary.json``."""
    rows = [json.loads(ln) for ln in (out / "search_log.jsonl").read_text(encoding="utf-8").splitlines() if ln]
    rows.sort(key=lambda r: r["trial"])
    baseline = float(rows[0]["objective"])
    curve, best = [], math.inf
    for r in rows:
        if r["feasible"] and r["error"] is None:
            best = min(best, float(r["objective"]))
        curve.append(best)
    moved = [r for r in rows if r.get("transferred")]
    hits = sum(1 for r in moved if r["feasible"] and r["error"] is None and r["objective"] < baseline)
    seconds = json.loads((out / "summary.json").read_text(encoding="utf-8"))["seconds"]
    return Search(baseline, tuple(curve), len(moved), hits, float(seconds))


def trials_to(search: Search, threshold: float) -> int | None:
    """Trials (the baseline counted) until the best-so-far is at or under ``threshold``; None if never."""
    return next((i + 1 for i, v in enumerate(search.curve) if v <= threshold + 1e-12), None)


def merged_db(folder: Path, name: str, exports: Sequence[Path]) -> Path:
    """A fresh database holding the trials of ``exports`` (``hwsim db import``)."""
    lines = folder / f"{name}.jsonl"
    lines.write_text("".join(p.read_text(encoding="utf-8") for p in exports), encoding="utf-8")
    db = folder / f"{name}.sqlite"
    res = hwsim("db", "import", str(lines), "--db", str(db))
    if res.code != 0:
        raise RuntimeError(f"hwsim db import: {res.error}")
    return db


def cold_searches(family: dict[str, Path], models: Sequence[str], tmp: Path, budget: int, seed: int
                  ) -> tuple[dict[tuple[str, str], Search], dict[tuple[str, str], Path]]:  # fmt: skip
    """Every family member x model from an empty database; each database exported to JSON lines."""
    runs, exports = {}, {}
    for model in models:
        for name, chip in family.items():
            db, key = tmp / f"cold-{model}-{name}.sqlite", (model, name)
            runs[key] = optimize(chip, model, db, tmp / f"cold-{model}-{name}", budget, seed)
            exports[key] = tmp / f"cold-{model}-{name}.jsonl"
            res = hwsim("db", "export", str(exports[key]), "--db", str(db))
            if res.code != 0:
                raise RuntimeError(f"hwsim db export: {res.error}")
            print(f"  cold {model} on {name}: {runs[key].baseline:.4f} -> {runs[key].best:.4f} ms",
                  file=sys.stderr, flush=True)  # fmt: skip
    return runs, exports


#: The fewest trials to 95 % a search can take: the baseline and one trial.
FEWEST = 2


def row(kind: str, model: str, target: str, cold: Search, warm: Search, budget: int
        ) -> tuple[str, float | None, int | None]:  # fmt: skip
    """A table row, the trial ratio (None when the cold search found no gain or transfer never
    got there) and the cold search's trials to 95 % (None without a gain)."""
    gain = cold.baseline - cold.best
    cells = [model, VARIANTS_LABEL[target], kind, f"{cold.baseline:.3f}", f"{cold.best:.3f}", f"{warm.best:.3f}"]
    if gain <= 0:
        return "| " + " | ".join([*cells, "no gain", "-", "-", "-"]) + " |", None, None
    thr = cold.baseline - 0.95 * gain
    n_cold, n_warm = trials_to(cold, thr), trials_to(warm, thr)
    ratio = n_cold / n_warm if n_cold and n_warm else None
    hit = f"{warm.transferred_hits}/{warm.transferred}" if warm.transferred else "0/0"
    shown = [str(n_cold), str(n_warm) if n_warm else f"> {budget}", f"{ratio:.2f}x" if ratio else "-", hit]
    return "| " + " | ".join(cells + shown) + " |", ratio, n_cold


def summary(kind: str, rows: Sequence[tuple[int, float | None]]) -> str:
    """The ratios' spread over the targets reached (``rows``: per target with a gain, the cold
    search's trials to 95 % and the ratio, None where transfer did not get there), and what the
    cold searches allow: a ratio is at most cold trials / :data:`FEWEST`, so a cold search that
    reaches 95 % within 19 trials caps it under 10x whatever transfer does.

    >>> summary("same model", [(23, 11.5), (4, 2.0), (30, None)])
    'same model: ratio geometric mean 4.80x, median 6.75x, min 2.00x, max 11.50x over 2 targets reached of 3 with a gain; the most any transfer could show on those 3 (cold trials / 2): geometric mean 7.01x, >= 10x possible on 2; the fewest possible trials (2) on 2'
    """
    rs = [r for _, r in rows if r is not None]
    gm = math.exp(statistics.fmean(math.log(r) for r in rs)) if rs else math.nan
    ceil = math.exp(statistics.fmean(math.log(c / FEWEST) for c, _ in rows))
    fewest = sum(1 for c, r in rows if r is not None and math.isclose(r, c / FEWEST))
    return (f"{kind}: ratio geometric mean {gm:.2f}x, median {statistics.median(rs) if rs else math.nan:.2f}x, "
            f"min {min(rs, default=math.nan):.2f}x, max {max(rs, default=math.nan):.2f}x over {len(rs)} "
            f"targets reached of {len(rows)} with a gain; the most any transfer could show on those {len(rows)} "
            f"(cold trials / {FEWEST}): geometric mean {ceil:.2f}x, >= 10x possible on "
            f"{sum(1 for c, _ in rows if c / FEWEST >= 10)}; the fewest possible trials ({FEWEST}) on {fewest}")  # fmt: skip


VARIANTS_LABEL = {
    "clk075": "NPU clock x0.75",
    "clk125": "NPU clock x1.25",
    "sram05": "NPU SRAM x0.5",
    "sram2": "NPU SRAM x2",
    "cores2": "2 NPU cores",
    "dram05": "DRAM bandwidth x0.5",
}


def run(models: Sequence[str], targets: Sequence[str], budget: int, seed: int, tmp: Path,
        curves: dict[str, object]) -> list[str]:  # fmt: skip
    family = write_family(tmp)
    cold, exports = cold_searches(family, models, tmp, budget, seed)
    head = ("| model | target | transfer from | baseline ms | cold best ms | transfer best ms "
            "| cold trials to 95 % | transfer trials to 95 % | ratio | transferred hits |")
    lines = [head,
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    reached: dict[str, list[tuple[int, float | None]]] = {"same model": [], "other models": []}
    for model in models:
        for t in targets:
            same = [exports[(model, c)] for c in family if c != t]
            other = [exports[(m, c)] for m in models if m != model for c in family if c != t]
            for kind, files in (("same model", same), ("other models", other)):
                if not files or (kind == "other models" and t not in CROSS_TARGETS):
                    continue
                db = merged_db(tmp, f"xfer-{model}-{t}-{kind.replace(' ', '_')}", files)
                warm = optimize(family[t], model, db, tmp / f"out-{db.stem}", budget, seed, "--transfer-from", "auto")
                text, ratio, n_cold = row(kind, model, t, cold[(model, t)], warm, budget)
                lines.append(text)
                print(text, flush=True)
                if n_cold is not None:
                    reached[kind].append((n_cold, ratio))
                curves[f"{model}/{t}/{kind}"] = {"cold": asdict(cold[(model, t)]), "transfer": asdict(warm)}
    lines += [f"\n{summary(kind, rows)}" for kind, rows in reached.items() if rows]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=None, help="trials per search (default 40; --quick 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default=None, help=f"comma-separated (default {','.join(MODELS)})")
    ap.add_argument("--quick", action="store_true", help="resnet18, two targets, budget 20")
    ap.add_argument("--json", type=Path, default=None, help="write every best-so-far curve here")
    ap.add_argument("--write-doc", action="store_true", help="put the table in docs/optimize.md")
    args = ap.parse_args(argv)
    models = args.models.split(",") if args.models else QUICK["models"] if args.quick else MODELS
    targets = QUICK["targets"] if args.quick else tuple(VARIANTS)
    budget = args.budget or (QUICK["budget"] if args.quick else 40)
    curves: dict[str, object] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_transfer_") as tmp:
        lines = run(models, targets, budget, args.seed, Path(tmp), curves)  # type: ignore[arg-type]
    cmd = ("python benchmarks/bench_transfer.py" + (" --quick" if args.quick else "")
           + (f" --models {args.models}" if args.models else "") + f" --budget {budget} --seed {args.seed}")  # fmt: skip
    foot = f"\n{(time.perf_counter() - t0) / 60:.1f} min wall (`{cmd}`)."
    print("\n".join(ln for ln in lines if not ln.startswith("|")) + foot)
    if args.json:
        args.json.write_text(json.dumps(curves, indent=1), encoding="utf-8")
    if args.write_doc:
        replace_section(DOC, HEADING, PREAMBLE + "\n" + "\n".join(lines) + "\n" + foot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
