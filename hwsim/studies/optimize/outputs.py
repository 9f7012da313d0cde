"""What ``hwsim optimize`` writes into its folder, all at once (temporary folder, then renamed):

``model.onnx`` (the best graph), ``schedule.json`` (its run's schedule file: ``hwsim run CHIP
OUTDIR/model.onnx --schedule OUTDIR/schedule.json`` reproduces the reported latency),
``before/`` and ``after/`` (the report folders of ``hwsim run`` for the original model and the
best candidate), ``changes.md`` (what changed and what each change bought), ``best_so_far.png``,
``search_log.jsonl`` (one line per trial) and ``summary.json`` (baseline against best).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwsim.pipeline import RunResult, run_graph
from hwsim.studies.optimize.evaluate import Candidate, graph_of

if TYPE_CHECKING:
    from hwsim.studies.optimize.search import Record, SearchInputs, SearchResult

__all__ = ["OPTIMIZE_FILES", "Written", "write_outputs"]

#: Everything the command writes into OUTDIR (a folder holding only these may be replaced).
OPTIMIZE_FILES = ("model.onnx", "model.onnx.data", "schedule.json", "before", "after", "changes.md",
                  "best_so_far.png", "search_log.jsonl", "summary.json")  # fmt: skip
#: Where the best model's weights go when the searched model kept them in external data files.
EXTERNAL_DATA = "model.onnx.data"


@dataclass(frozen=True, slots=True)
class Written:
    """What the outputs say: the best run's latency as ``hwsim run --schedule`` reproduces it."""

    baseline_latency_ms: float
    best_latency_ms: float
    summary: dict[str, Any]


def _log_line(r: Record, measured: Mapping[str, float]) -> str:
    o = r.outcome
    row = {
        "trial": r.index, "stage": r.stage, "candidate_key": o.key, "transforms": list(r.candidate.transforms),
        "signatures": r.candidate.signature_dict(), "objective": o.objective, "latency_ms": o.latency_ms,
        "energy_mj": o.energy_mj, "peak_memory_bytes": o.peak_memory_bytes, "feasible": o.feasible,
        "error": o.error, "parent_latency_ms": r.parent_latency_ms, "reused": r.reused,
        "transferred": r.transferred, "measured_latency_ms": measured.get(o.key),
    }  # fmt: skip
    return json.dumps(row, default=_finite)


def _finite(value: object) -> object:
    return str(value)


def best_so_far_png(result: SearchResult, objective: str) -> bytes:
    """Best feasible objective against the trial number (a step curve)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    xs, ys, best = [], [], float("inf")
    for r in result.records:
        if r.outcome.feasible and r.outcome.objective < best:
            best = r.outcome.objective
        if best < float("inf"):
            xs.append(r.index)
            ys.append(best)
    fig = Figure(figsize=(6, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.step(xs, ys, where="post")
    ax.set_xlabel("trial")
    ax.set_ylabel(f"best {objective}")
    ax.set_title("best so far")
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _bought(result: SearchResult) -> tuple[list[str], list[str]]:
    """Lines of changes.md: each transform of the best with its gain, then its op signatures, one
    line per knob setting and the trial that bought it (the ops it was set on, in graph order)."""
    best = result.best
    by_cand = {(r.candidate.transforms, r.candidate.signatures): r for r in result.records}
    lines_t, prev = [], result.baseline.outcome.latency_ms
    for i, name in enumerate(best.candidate.transforms):
        r = by_cand.get((best.candidate.transforms[: i + 1], ()))
        ms = r.outcome.latency_ms if r is not None else float("nan")
        lines_t.append(f"- `{name}`: {prev:.6g} -> {ms:.6g} ms ({prev - ms:+.6g} ms)")
        prev = ms
    groups: dict[tuple[str, int], list[str]] = {}  # (knobs, trial or -1) -> ops
    hits: dict[int, Record] = {}
    for op, sig in best.candidate.signature_dict().items():
        hit = next((r for r in result.records if r.candidate.transforms == best.candidate.transforms
                    and r.candidate.signature_dict().get(op) == sig and r.outcome.latency_ms < r.parent_latency_ms), None)  # fmt: skip
        if hit is not None:
            hits[hit.index] = hit
        groups.setdefault((", ".join(f"{k}={v}" for k, v in sig.items()), hit.index if hit else -1), []).append(op)
    lines_s = []
    for (knobs, index), ops in sorted(groups.items(), key=lambda g: (g[0][1] < 0, g[0][1], g[0][0])):
        hit = hits.get(index)
        gain = f"{hit.parent_latency_ms:.6g} -> {hit.outcome.latency_ms:.6g} ms; trial {index}" if hit else "gain not isolated"
        where = f"`{ops[0]}`" if len(ops) == 1 else f"{len(ops)} ops: " + ", ".join(f"`{o}`" for o in ops)
        lines_s.append(f"- {knobs} ({gain}) on {where}")
    return lines_t, lines_s


def changes_md(result: SearchResult, before_ms: float, after_ms: float) -> str:
    transforms, sigs = _bought(result)
    lines = [
        "# What changed", "",
        (f"Latency {before_ms:.6g} ms -> {after_ms:.6g} ms ({before_ms / after_ms if after_ms else float('nan'):.3f}x), "
         f"best of {len(result.records)} trials (trial {result.best.index}, stage {result.best.stage})."), "",
        "## Graph rewrites (stage 1)", "", *(transforms or ["- none"]), "",
        "## Op mappings (stage 2)", "", *(sigs or ["- none (every op keeps the default mapping)"]), "",
    ]  # fmt: skip
    if result.notes:
        lines += ["## Notes", "", *(f"- {n}" for n in result.notes), ""]
    return "\n".join(lines)


def _simulate_file(path: Path, inputs: SearchInputs, candidate: Candidate) -> RunResult:
    from graph_ir.onnx_import import load_onnx

    return run_graph(load_onnx(path), inputs.chip, inputs.precision, mapping=candidate.mapping())


def _summary(inputs: SearchInputs, result: SearchResult, before: RunResult, after: RunResult) -> dict[str, Any]:
    from hwsim.report.summary import build_summary

    best, base = result.best, result.baseline
    hits, tried = result.transfer_hits
    b, a = build_summary(before), build_summary(after)  # the figures `hwsim run` reports
    return {
        "chip": inputs.chip.name, "model": inputs.model_name, "model_sha256": inputs.model_sha256,
        "objective": dict(inputs.config.objective_weights()), "seed": inputs.seed, "precision": inputs.precision,
        "baseline": {"latency_ms": b.latency_ms, "energy_mj": b.energy_mj,
                     "objective": base.outcome.objective},
        "best": {"latency_ms": a.latency_ms, "energy_mj": a.energy_mj,
                 "objective": best.outcome.objective, "trial": best.index, "stage": best.stage,
                 "transforms": list(best.candidate.transforms), "signatures": best.candidate.signature_dict()},
        "speedup": b.latency_ms / a.latency_ms if a.latency_ms else None,
        "trials": len(result.records), "reused_trials": sum(r.reused for r in result.records),
        "skipped_candidates": result.skipped,
        "seconds": result.seconds, "interrupted": result.interrupted,
        "transfer": {"from": list(inputs.transfer_from), "hits": hits, "tried": tried},
        "measured_latency_ms": dict(result.measured_ms), "notes": list(result.notes),
    }  # fmt: skip


def write_model(path: Path, model_bytes: bytes, source_dir: Path | None) -> None:
    """Write the model ``model_bytes`` to ``path``. Its tensors stored in external data files
    (as a large export keeps its weights) are read from ``source_dir``, beside the searched
    model, and written to :data:`EXTERNAL_DATA` beside ``path``, so that the written model loads;
    a file that is not there (a model shipped without its weights) leaves the model as it came."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    model = onnx.load_from_string(model_bytes)
    external = [t for t in model.graph.initializer if uses_external_data(t)]
    locations = {e.value for t in external for e in t.external_data if e.key == "location"}
    if source_dir is None or not locations or not all((source_dir / loc).is_file() for loc in locations):
        path.write_bytes(model_bytes)
        return
    load_external_data_for_model(model, str(source_dir))
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=EXTERNAL_DATA, size_threshold=0)  # fmt: skip


def write_outputs(out: Path, inputs: SearchInputs, result: SearchResult, models: Mapping[tuple[str, ...], bytes]) -> Written:
    """Write every file of :data:`OPTIMIZE_FILES` into ``out`` atomically; returns what they say."""
    from hwsim.report.files import write_reports
    from hwsim.report.outdir import write_dir
    from hwsim.report.provenance import chip_sha256, file_sha256
    from hwsim.report.schedule_file import schedule_file, schedule_file_json

    best = result.best
    box: dict[str, Any] = {}

    def write(tmp: Path) -> None:
        write_model(tmp / "model.onnx", models[best.candidate.transforms], inputs.model_dir)
        before = run_graph(graph_of(models[()], inputs.model_name), inputs.chip, inputs.precision)
        after = _simulate_file(tmp / "model.onnx", inputs, best.candidate)
        sf = schedule_file(after, chip_sha256(inputs.chip), file_sha256(tmp / "model.onnx"))
        (tmp / "schedule.json").write_bytes(schedule_file_json(sf))
        write_reports(before, tmp / "before")
        write_reports(after, tmp / "after")
        b_ms, a_ms = before.analysis.latency_ms, after.analysis.latency_ms
        (tmp / "changes.md").write_text(changes_md(result, b_ms, a_ms), encoding="utf-8")
        (tmp / "best_so_far.png").write_bytes(best_so_far_png(result, "/".join(n for n, _ in inputs.config.objective_weights())))
        log = "".join(_log_line(r, result.measured_ms) + "\n" for r in result.records)
        (tmp / "search_log.jsonl").write_text(log, encoding="utf-8")
        box["summary"] = _summary(inputs, result, before, after)
        (tmp / "summary.json").write_text(json.dumps(box["summary"], indent=1, default=_finite) + "\n", encoding="utf-8")
        box["ms"] = (b_ms, a_ms)

    write_dir(out, OPTIMIZE_FILES, write)
    return Written(box["ms"][0], box["ms"][1], box["summary"])
