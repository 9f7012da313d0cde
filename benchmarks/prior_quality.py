"""How well the learned prior ranks mapping candidates it has not seen (issue 16, item 4).

The dataset is what can be simulated today without the mapping knobs: for each op of a bundled
model that more than one unit can run, the candidates are "pin it to unit U" for each eligible U,
and the gain of a candidate is the op's latency on the unit the chip's affinity prefers first
over its latency on U (``cost_table`` per chip). Chips: rk3588 and its variants (NPU clock x0.75 /
x1.25, SRAM x0.5 / x2, two NPU cores, DRAM bandwidth x0.5), edge8 and jetson_orin_nano. Op
features are taken without the cost table (no latency leaks into them).

Three splits, each fit on one part and scored on the other:
- held-out models: fit on some models (all chips), score the others;
- held-out chips: fit on some chips (all models), score the others;
- both held out: fit on (train models x train chips), score (test models x test chips).

Scores per (op, chip) group of >= 2 candidates: Spearman rank correlation between predicted and
true gains (groups of >= 3), and top-1 hit rate (the predicted best is the true best, ties
counted as hits). Baselines: the given order (the affinity's first unit, i.e. the default) and
a uniform random pick (expected 1/n).

    python benchmarks/prior_quality.py [--models a,b,...]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from chips import Chip, load_chip, override
from cost_models.table import cost_table
from graph_ir.onnx_import import load_onnx
from hwsim.studies.optimize.features import chip_features, op_features
from hwsim.studies.optimize.prior import Prior, Sample
from tests.helpers import MODELS

MODELS_DEFAULT = ("mobilenetv2", "resnet18", "squeezenet11", "yolov5n", "yolov8n", "mlp_mnist", "distilbert", "audio_kws")
VARIANTS = {
    "rk3588": [],
    "rk3588_npu_x0.75": ["npu.clock_mhz=750"],
    "rk3588_npu_x1.25": ["npu.clock_mhz=1250"],
    "rk3588_sram_x0.5": ["npu.sram_kib=192"],
    "rk3588_sram_x2": ["npu.sram_kib=768"],
    "rk3588_npu_2core": ["npu.cores=2"],
    "rk3588_dram_x0.5": ["dram.bandwidth_gbps=17.05"],
}


@dataclass(frozen=True)
class Group:
    model: str
    chip: str
    op_feats: dict[str, float]
    chip_feats: dict[str, float]
    candidates: list[dict[str, object]]
    log_gains: np.ndarray


def chips() -> dict[str, Chip]:
    rk = load_chip("rk3588")
    out = {name: override(rk, sets) if sets else rk for name, sets in VARIANTS.items()}
    out["edge8"] = load_chip("edge8")
    out["jetson_orin_nano"] = load_chip("jetson_orin_nano")
    return out


def _default_unit(chip: Chip, op_type: str, eligible: list[str]) -> str:
    for pref in chip.preference(op_type):
        for u in chip.units:
            if u.name in eligible and pref in (u.name, u.kind):
                return u.name
    return eligible[0]


def groups(model: str, chip_name: str, chip: Chip) -> list[Group]:
    graph = load_onnx(MODELS / f"{model}.onnx")
    table = cost_table(graph, chip, "int8")
    cf = chip_features(chip)
    out, seen = [], set()
    for op in graph.ops():
        row = table.costs[op.name]
        if len(row) < 2:
            continue
        lat = {u: c.latency_ns for u, c in row.items()}
        parent = lat[_default_unit(chip, op.op_type, list(row))]
        of = op_features(op)
        key = (tuple(sorted(of.items())), tuple(sorted(lat.items())))
        if key in seen or parent <= 0:
            continue
        seen.add(key)
        cands = [{"unit": u} for u in row]
        gains = np.log([parent / max(lat[u], 1e-9) for u in row])
        out.append(Group(model, chip_name, of, cf, cands, gains))
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def score(prior: Prior, test: list[Group]) -> dict[str, float]:
    rho, hit, given, rand = [], [], [], []
    for g in test:
        pred = prior.log_gains(g.op_feats, g.chip_feats, g.candidates)
        best = g.log_gains.max()
        hit.append(float(g.log_gains[int(np.argmax(pred))] >= best - 1e-12))
        given.append(float(abs(best) < 1e-12 or best <= 0))  # the default (gain 1) is the best
        rand.append(float((g.log_gains >= best - 1e-12).sum()) / len(g.log_gains))
        if len(g.candidates) >= 3:
            rho.append(spearman(pred, g.log_gains))
    return {"groups": len(test), "spearman": float(np.mean(rho)) if rho else float("nan"),
            "top1": float(np.mean(hit)), "top1_given_order": float(np.mean(given)),
            "top1_random": float(np.mean(rand))}  # fmt: skip


def fit(train: list[Group], **kw: float) -> Prior:
    samples = [Sample(g.op_feats, g.chip_feats, c, float(y)) for g in train for c, y in zip(g.candidates, g.log_gains)]
    return Prior.fit_samples(samples, **kw)  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS_DEFAULT))
    args = ap.parse_args()
    models = args.models.split(",")
    t0 = time.perf_counter()
    data = [g for name, chip in chips().items() for m in models for g in groups(m, name, chip)]
    print(f"{len(data)} (op, chip) groups from {len(models)} models x {len(VARIANTS) + 2} chips "
          f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    test_models = set(models[1::2])
    test_chips = {"rk3588_npu_x1.25", "rk3588_sram_x0.5", "rk3588_dram_x0.5", "edge8"}
    splits = {
        f"held-out models {sorted(test_models)}": (lambda g: g.model not in test_models, lambda g: g.model in test_models),
        f"held-out chips {sorted(test_chips)}": (lambda g: g.chip not in test_chips, lambda g: g.chip in test_chips),
        "both held out": (lambda g: g.model not in test_models and g.chip not in test_chips,
                          lambda g: g.model in test_models and g.chip in test_chips),
    }  # fmt: skip
    for split, (is_train, is_test) in splits.items():
        train, test = [g for g in data if is_train(g)], [g for g in data if is_test(g)]
        print(f"\n{split}: train {len(train)} groups, test {len(test)}")
        for kw in ({"blend": 0.0, "alpha": 0.01}, {"blend": 1.0, "k": 5}, {"blend": 1.0, "k": 3}, {"blend": 0.8, "k": 5, "alpha": 0.01}):
            s = score(fit(train, **kw), test)
            print(f"  {kw}: spearman {s['spearman']:.3f}, top-1 {s['top1']:.3f} "
                  f"(given order {s['top1_given_order']:.3f}, random {s['top1_random']:.3f}) over {s['groups']} groups")  # fmt: skip


if __name__ == "__main__":
    main()
