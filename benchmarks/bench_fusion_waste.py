"""Trials of ``hwsim optimize`` that simulate nothing new: fusion knobs that change nothing, and
candidates that resolve to a state already simulated.

    python benchmarks/bench_fusion_waste.py [--pairs rk3588:resnet18,edge8:yolov8n] [--budget 40] [--seed 0]

For each (chip, model) pair: ``hwsim optimize`` with a fresh database, then every trial of its
``search_log.jsonl`` simulated again (``hwsim.pipeline.run_graph``, the candidate's mapping) to
resolve its *state*: the graph (transforms), the placement (op -> unit, cores), the fused pairs
and the kernel knobs (dataflow, layout, tile). Counted:

- *fusion trials*: trials whose candidate sets a ``fusion`` knob;
- *inert*: of those, the ones that simulate exactly as the same candidate without its fusion
  knobs (same latency, energy and fused pairs): the knob changed nothing;
- *wasted*: of the inert ones, those whose candidate without the fusion knobs was already
  simulated earlier in the same search (the trial bought nothing at all);
- *repeats*: trials whose resolved state equals that of an earlier trial of the search;
- *skipped*: candidates the search did not simulate (``summary.json`` ``skipped_candidates``).

Prints a Markdown table (best latency, search seconds and the counts per pair).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PAIRS = ("rk3588:resnet18,rk3588:yolov8n,rk3588:mobilenetv2,rk3588:yolov5s_relu,rk3588:mlp_mnist,"
                 "edge8:resnet18,edge8:yolov8n,edge8:mobilenetv2,edge8:yolov5s_relu,edge8:mlp_mnist")  # fmt: skip


def _state(result: object, transforms: Sequence[str], sigs: dict[str, dict[str, object]]) -> tuple[object, ...]:
    placement = tuple(sorted((n, p.unit, p.cores) for n, p in result.schedule.placements.items()))  # type: ignore[attr-defined]
    fused = tuple(sorted((f.producer, f.consumer, f.unit) for f in result.fused))  # type: ignore[attr-defined]
    kernel = tuple(sorted((op, k, v) for op, s in sigs.items() for k, v in s.items() if k in ("dataflow", "layout", "tile")))
    return (tuple(transforms), placement, fused, kernel)


def analyse(chip_name: str, model: Path, out: Path) -> dict[str, object]:
    """Resolve every trial of ``out/search_log.jsonl`` and count fusion waste and repeats."""
    import onnx

    from chips.schema import load_chip
    from cost_models.mapping import OpMapping
    from graph_ir.onnx_import import from_model_proto
    from hwsim.pipeline import run_graph
    from hwsim.studies.optimize.evaluate import apply_transforms

    chip = load_chip(chip_name)
    proto = onnx.load(str(model), load_external_data=False)
    cache: dict[tuple[str, ...], onnx.ModelProto] = {}
    graphs: dict[tuple[str, ...], object] = {}
    trials = [json.loads(line) for line in (out / "search_log.jsonl").read_text().splitlines()]
    states: set[tuple[object, ...]] = set()
    keys: set[str] = set()
    counts = {"trials": len(trials), "fusion": 0, "inert": 0, "wasted": 0, "repeats": 0}

    def run(transforms: tuple[str, ...], sigs: dict[str, dict[str, object]]) -> object:
        if transforms not in graphs:
            _, rewritten = apply_transforms(proto, chip, transforms, cache)
            graphs[transforms] = from_model_proto(rewritten, name=model.stem)
        mapping = {op: OpMapping.from_dict(s) for op, s in sigs.items()}
        return run_graph(graphs[transforms], chip, "int8", mapping=mapping)  # type: ignore[arg-type]

    from hwsim.studies.optimize.evaluate import candidate_key

    for t in trials:
        if t["error"]:
            keys.add(t["candidate_key"])
            continue
        tr, sigs = tuple(t["transforms"]), t["signatures"]
        res = run(tr, sigs)
        state = _state(res, tr, sigs)
        counts["repeats"] += state in states
        states.add(state)
        if any("fusion" in s for s in sigs.values()):
            counts["fusion"] += 1
            bare = {op: {k: v for k, v in s.items() if k != "fusion"} for op, s in sigs.items()}
            bare = {op: s for op, s in bare.items() if s}
            other = run(tr, bare)
            same = (other.trace.makespan_ps == res.trace.makespan_ps  # type: ignore[attr-defined]
                    and _state(other, tr, bare)[2] == state[2])  # fmt: skip
            counts["inert"] += same
            counts["wasted"] += same and candidate_key(tr, bare) in keys
        keys.add(t["candidate_key"])
    summary = json.loads((out / "summary.json").read_text())
    return {**counts, "best_ms": summary["best"]["latency_ms"], "seconds": summary.get("seconds"),
            "skipped": summary.get("skipped_candidates", 0)}


def bench_pair(chip: str, model_name: str, budget: int, seed: int, tmp: Path) -> dict[str, object]:
    model = ROOT / "examples" / "models" / f"{model_name}.onnx"
    out = tmp / f"{chip}-{model_name}"
    cmd = [sys.executable, "-m", "hwsim", "optimize", chip, str(model), "--budget", str(budget), "--seed", str(seed),
           "--db", str(tmp / f"{chip}-{model_name}.sqlite"), "-o", str(out), "--quiet"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    return {"chip": chip, "model": model_name, **analyse(chip, model, out)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--pairs", default=DEFAULT_PAIRS, help="comma-separated CHIP:MODEL")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="write the rows here too")
    args = ap.parse_args(argv)
    rows = []
    print("| chip | model | best ms | search s | trials | skipped | fusion trials | inert | wasted | repeats |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench_fusion_waste_") as tmp:
        for pair in args.pairs.split(","):
            chip, model = pair.split(":")
            r = bench_pair(chip, model, args.budget, args.seed, Path(tmp))
            rows.append(r)
            print(f"| {chip} | {model} | {r['best_ms']} | {r['seconds']:.1f} | {r['trials']} | {r['skipped']} | {r['fusion']} | "
                  f"{r['inert']} | {r['wasted']} | {r['repeats']} |", flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
