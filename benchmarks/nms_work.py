#!/usr/bin/env python3
"""How much of onnxruntime's NonMaxSuppression time the boxes decide, beyond the shapes.

    python benchmarks/nms_work.py [--runs 30]

onnxruntime's CPU kernel (``non_max_suppression.cc``), per batch and class: the boxes over the
score threshold go into a priority queue; it pops them best first and compares each with the
boxes kept so far (``SuppressByIOU``, which returns early when two boxes do not intersect) until
one suppresses it, and stops when the queue is empty or ``max_output_boxes_per_class`` are kept.
This script times the kernel (one thread) on five shapes and four kinds of boxes, counts the
work the algorithm does on the same data (candidates ``C``, pops ``P``, IoU checks ``I``, kept
``S``), and fits ``t = a C + b P log2 C + c I`` over all rows by least squares: what even exact
counts leave unexplained. Boxes: ``uniform`` (corners uniform in [-1, 1), as ``hwsim validate``
draws random inputs: unordered corners, most pairs overlap), ``sparse`` (8-64 px boxes in a
600 px field, rarely overlapping), ``dense`` (30-64 px boxes in a 100 px field), ``clusters``
(32 px boxes around 50 centres, as a detector's raw output).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (boxes, classes, max kept per class, score threshold or None)
SHAPES = ((1024, 8, 64, None), (2000, 8, 100, 0.0), (1000, 4, 100, None), (4000, 2, 50, None), (500, 16, 200, None))
KINDS = ("uniform", "sparse", "dense", "clusters")
IOU = 0.5


def session(boxes: int, classes: int, most: int, threshold: float | None):  # type: ignore[no-untyped-def]
    """A one-thread onnxruntime session of one NonMaxSuppression node."""
    from onnx import TensorProto, helper, numpy_helper

    from hwsim.host.measure import make_session

    inits = [numpy_helper.from_array(np.array([most], np.int64), "most"), numpy_helper.from_array(np.array([IOU], np.float32), "iou")]
    names = ["x", "scores", "most", "iou"]
    if threshold is not None:
        inits.append(numpy_helper.from_array(np.array([threshold], np.float32), "th"))
        names.append("th")
    graph = helper.make_graph(
        [helper.make_node("NonMaxSuppression", names, ["y"])], "nms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, boxes, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, classes, boxes])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)], inits,
    )  # fmt: skip
    return make_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def draw(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` boxes ``[y1, x1, y2, x2]`` of one kind (see the module docstring)."""
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, (n, 4)).astype(np.float32)
    if kind == "clusters":
        corner = rng.uniform(0.0, 600.0, (50, 2))[rng.integers(0, 50, n)] + rng.normal(0.0, 3.0, (n, 2))
        return np.concatenate([corner, corner + 32.0], 1).astype(np.float32)
    field, low = (600.0, 8.0) if kind == "sparse" else (100.0, 30.0)
    corner = rng.uniform(0.0, field, (n, 2))
    return np.concatenate([corner, corner + rng.uniform(low, 64.0, (n, 2))], 1).astype(np.float32)


def suppresses(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether box ``a`` suppresses box ``b``: IoU over :data:`IOU` (corners in any order)."""
    ay, ax, by, bx = sorted(a[::2]), sorted(a[1::2]), sorted(b[::2]), sorted(b[1::2])
    height, width = min(ay[1], by[1]) - max(ay[0], by[0]), min(ax[1], bx[1]) - max(ax[0], bx[0])
    if height <= 0 or width <= 0:
        return False
    inter = height * width
    area_a, area_b = (ay[1] - ay[0]) * (ax[1] - ax[0]), (by[1] - by[0]) * (bx[1] - bx[0])
    return area_a > 0 and area_b > 0 and inter / (area_a + area_b - inter) > IOU


def work(boxes: np.ndarray, scores: np.ndarray, most: int, threshold: float | None) -> tuple[int, int, int, int]:
    """Candidates, pops, IoU checks and boxes kept, all classes together, as the kernel runs."""
    candidates = pops = checks = kept = 0
    for s in scores:
        order = [int(i) for i in np.argsort(-s, kind="stable") if threshold is None or s[i] > threshold]
        candidates += len(order)
        chosen: list[int] = []
        for i in order:
            pops += 1
            survived = True
            for j in chosen:
                checks += 1
                if suppresses(boxes[j], boxes[i]):
                    survived = False
                    break
            if survived:
                if len(chosen) >= most:
                    break
                chosen.append(i)
        kept += len(chosen)
    return candidates, pops, checks, kept


def kernel_us(sess, feeds: dict[str, np.ndarray], runs: int) -> float:  # type: ignore[no-untyped-def]
    """The low quantile of ``runs`` timed runs (:meth:`hwsim.host.measure.Timing.low_ns`), us."""
    from hwsim.host.measure import time_session

    return time_session(sess, feeds, runs=max(runs, 1), warmup=1, min_total_s=0.0).low_ns / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for shape in SHAPES:
        n, classes, most, threshold = shape
        sess = session(*shape)
        for kind in KINDS:
            boxes = draw(kind, n, rng)
            low = -1.0 if kind == "uniform" else 0.0
            scores = rng.uniform(low, 1.0, (classes, n)).astype(np.float32)
            t = kernel_us(sess, {"x": boxes[None], "scores": scores[None]}, args.runs)
            rows.append((shape, kind, t, *work(boxes, scores, most, threshold)))
    counts = np.array([[c, p * np.log2(max(c, 2)), i] for *_, c, p, i, _ in rows], float)
    times = np.array([r[2] for r in rows])
    coef, *_ = np.linalg.lstsq(counts, times, rcond=None)
    print(f"fit: t = {coef[0] * 1e3:.2f} ns C + {coef[1] * 1e3:.2f} ns P log2 C + {coef[2] * 1e3:.2f} ns I\n")
    print("| boxes x classes, kept at most | boxes | measured us | C | P | I | S | measured ns per IoU check (whole kernel / I) | exact-count fit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (shape, kind, t, c, p, i, s), fitted in zip(rows, counts @ coef):
        print(f"| {shape[0]} x {shape[1]}, {shape[2]} | {kind} | {t:.0f} | {c} | {p} | {i} | {s} | {t * 1e3 / max(i, 1):.1f} | {(fitted / t - 1) * 100:+.0f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
