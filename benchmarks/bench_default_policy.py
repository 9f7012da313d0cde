"""Is the default policy's own schedule the best candidate the engine check would try?

Run: ``python benchmarks/bench_default_policy.py [--set bundled held-out large] [--chips ...] [--json F]``.

For every model on every bundled chip (int8, fusion ``auto``, default engine options) this
schedules the graph with the default policy (``scheduler.DEFAULT_POLICY`` as ``hwsim run``
plans it: :func:`hwsim.policy_check.default_schedule`) and with each policy of
:data:`hwsim.policy_check.CHECKED_AGAINST`, simulates every schedule with the engine as
:func:`hwsim.policy_check.choose_schedule` does, and reports the default's simulated latency
against the best baseline's. Above ``CHECK_MAX_OPS`` the run itself checks nothing; the
benchmark still simulates the baselines, to say how the default stands alone there.

Model sets:

- ``bundled``: ``examples/models/*.onnx`` (the set the re-planning was tuned on);
- ``held-out``: generated here with ``onnx.helper`` and never used for tuning: YOLOv8 s/m
  (ultralytics widths/depths), YOLOv8n at 320, YOLOv5l, and three U-Nets (BatchNormalization,
  ConvTranspose or Resize up-sampling, skip Concats);
- ``large``: graphs above 5,000 ops (``graph_ir.synthetic``: a 10k-op transformer and a 10k-op
  layered DAG), where the default must stand alone;
- ``large-held-out``: more of them, never used for tuning (layered 7k and 15k, random 10k,
  transformer 15k).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import onnx
from onnx import TensorProto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import make_models as mm
import zoo_rknn
from make_models import GraphBuilder


def _yolov8(name: str, depth: float, width: float, img: int) -> onnx.ModelProto:
    """YOLOv8 (ultralytics yolov8.yaml) at a given depth/width/image size; the head up to the
    per-level box/cls convs, flattened and concatenated, classes through a Sigmoid."""
    g = GraphBuilder(name)

    def ch(c: int) -> int:
        return max(16, int(c * width) // 8 * 8)

    def rep(n: int) -> int:
        return max(round(n * depth), 1)

    x = g.input("images", TensorProto.FLOAT, [1, 3, img, img])
    p3, p4, p5 = zoo_rknn.yolov8_trunk(g, x, ch, rep)
    flat = []
    for i, (feat, c, stride) in enumerate(((p3, ch(256), 8), (p4, ch(512), 16), (p5, ch(1024), 32))):
        hw = (img // stride) ** 2
        b = mm.y_conv(g, feat, c, 64, 3, f"/model.22/cv2.{i}.0")
        b = mm.conv(g, mm.y_conv(g, b, 64, 64, 3, f"/model.22/cv2.{i}.1"), 64, 64, 1, f"/model.22/cv2.{i}.2")
        k = mm.y_conv(g, feat, c, 80, 3, f"/model.22/cv3.{i}.0")
        k = mm.conv(g, mm.y_conv(g, k, 80, 80, 3, f"/model.22/cv3.{i}.1"), 80, 80, 1, f"/model.22/cv3.{i}.2")
        cat = g.op("Concat", [b, k], f"/model.22/Concat_{i}", axis=1)
        flat.append(g.op("Reshape", [cat, g.i64([1, 144, hw])], f"/model.22/Reshape_{i}"))
    y = g.op("Concat", flat, "/model.22/Concat_3", axis=2)
    box, cls = g.op_multi("Split", [y, g.i64([64, 80])], "/model.22/Split", 2, axis=1)
    cls = g.op("Sigmoid", [cls], "/model.22/Sigmoid")
    y = g.op("Concat", [box, cls], "/model.22/Concat_5", axis=1)
    n = sum((img // s) ** 2 for s in (8, 16, 32))
    g.output(y, "output0", TensorProto.FLOAT, [1, 144, n])
    return g.model(f"YOLOv8 depth {depth} width {width} at {img}, weightless (held out)")


def _unet(name: str, base: int, img: int, up: str) -> onnx.ModelProto:
    """A 4-level U-Net: (Conv, BatchNormalization, Relu) x 2 per level, MaxPool down,
    ``up`` = ``"convtranspose"`` or ``"resize"`` (Resize then a 1x1 conv) up, skip Concats."""
    g = GraphBuilder(name)

    def block(x: str, cin: int, cout: int, path: str) -> str:
        for j in range(2):
            y = mm.conv(g, x, cin if j == 0 else cout, cout, 3, f"{path}/conv{j}", bias=False)
            p = mm.pname_of(f"{path}/bn{j}")
            ws = [g.weight(f"{p}.{w}", [cout]) for w in ("weight", "bias", "running_mean", "running_var")]
            y = g.op("BatchNormalization", [y, *ws], f"{path}/bn{j}/BatchNormalization", epsilon=1e-5)
            x = g.op("Relu", [y], f"{path}/relu{j}/Relu")
        return x

    x = g.input("image", TensorProto.FLOAT, [1, 3, img, img])
    skips = []
    c, cin = base, 3
    for lvl in range(4):
        x = block(x, cin, c, f"/down{lvl}")
        skips.append((x, c))
        x = g.op("MaxPool", [x], f"/down{lvl}/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
        cin, c = c, c * 2
    x = block(x, cin, c, "/mid")
    for lvl in reversed(range(4)):
        skip, cs = skips[lvl]
        path = f"/up{lvl}"
        if up == "convtranspose":
            w = g.weight(f"{mm.pname_of(path)}.weight", [c, cs, 2, 2])
            x = g.op("ConvTranspose", [x, w], f"{path}/ConvTranspose", kernel_shape=[2, 2], strides=[2, 2])
        else:
            x = mm.conv(g, mm.upsample2x(g, x, path), c, cs, 1, f"{path}/proj", pad=0)
        x = g.op("Concat", [x, skip], f"{path}/Concat", axis=1)
        x = block(x, 2 * cs, cs, path)
        c = cs
    y = mm.conv(g, x, base, 2, 1, "/head", pad=0)
    g.output(y, "mask", TensorProto.FLOAT, [1, 2, img, img])
    return g.model(f"U-Net base {base} at {img}, {up} up-sampling, weightless (held out)")


def held_out() -> dict[str, Callable[[], onnx.ModelProto]]:
    """The held-out models (never used for tuning), by name."""
    return {
        "yolov8s": lambda: _yolov8("yolov8s", 0.33, 0.50, 640),
        "yolov8m": lambda: _yolov8("yolov8m", 0.67, 0.75, 640),
        "yolov8n_320": lambda: _yolov8("yolov8n_320", 0.33, 0.25, 320),
        "yolov5l": lambda: zoo_rknn.build_yolov5("yolov5l", 1.0, 1.0),
        "unet16_256_ct": lambda: _unet("unet16_256_ct", 16, 256, "convtranspose"),
        "unet32_128_ct": lambda: _unet("unet32_128_ct", 32, 128, "convtranspose"),
        "unet16_256_rs": lambda: _unet("unet16_256_rs", 16, 256, "resize"),
    }


def graphs(which: str) -> dict[str, Callable[[], object]]:
    """``name -> builder of a ModelGraph`` for one model set."""
    from graph_ir.onnx_import import from_model_proto, load_onnx
    from graph_ir.synthetic import layered_dag, random_dag, transformer_dag

    if which == "large-held-out":  # above 5,000 ops too; sizes and kinds not used to tune anything
        return {"layered7k": lambda: layered_dag(7_000), "random10k": lambda: random_dag(10_000),
                "transformer15k": lambda: transformer_dag(15_000), "layered15k": lambda: layered_dag(15_000)}  # fmt: skip
    if which == "bundled":
        return {p.stem: (lambda p=p: load_onnx(p)) for p in sorted((ROOT / "examples" / "models").glob("*.onnx"))}
    if which == "held-out":
        return {n: (lambda b=b, n=n: from_model_proto(b(), name=n)) for n, b in held_out().items()}
    return {"transformer10k": lambda: transformer_dag(10_000), "layered10k": lambda: layered_dag(10_000)}


def measure(graph: object, chip_name: str) -> dict[str, object]:
    """The default's own simulated latency, each baseline's, and the time the default took."""
    from chips import load_chip
    from cost_models.table import cost_table
    from hwsim.policy_check import CHECKED_AGAINST, default_schedule, simulate_candidate
    from scheduler import POLICIES

    chip = load_chip(chip_name)
    table = cost_table(graph, chip, "int8")  # type: ignore[arg-type]
    t0 = time.perf_counter()
    own = default_schedule(graph, chip, table)  # type: ignore[arg-type]
    t1 = time.perf_counter()
    row: dict[str, object] = {"ops": len(graph), "default_s": t1 - t0}  # type: ignore[arg-type]
    lat = {"default": own.latency_ms}
    for name in CHECKED_AGAINST:
        sched = POLICIES[name](graph, chip, table)  # type: ignore[arg-type]
        lat[name] = simulate_candidate(name, graph, chip, table, sched).latency_ms  # type: ignore[arg-type]
    row["latency_ms"] = lat
    best = min(v for k, v in lat.items() if k != "default")
    row["vs_best"] = lat["default"] / best
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", nargs="+", default=["bundled", "held-out"], choices=["bundled", "held-out", "large", "large-held-out"])
    ap.add_argument("--chips", nargs="+", default=sorted(p.stem for p in (ROOT / "chips").glob("*.yaml")))
    ap.add_argument("--models", nargs="*", default=None, help="only these model names")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = []
    print("| set | model | ops | chip | default ms | best baseline ms (which) | default / best | default s |")
    print("|---|---|---|---|---|---|---|---|")
    for which in args.set:
        for name, build in graphs(which).items():
            if args.models and name not in args.models:
                continue
            graph = build()
            for chip in args.chips:
                r = measure(graph, chip)
                lat = r["latency_ms"]
                assert isinstance(lat, dict)
                bname = min((k for k in lat if k != "default"), key=lambda k: lat[k])
                print(
                    f"| {which} | {name} | {r['ops']} | {chip} | {lat['default']:.4f} | {lat[bname]:.4f} ({bname}) "
                    f"| {r['vs_best']:.4f} | {r['default_s']:.2f} |",
                    flush=True,
                )
                rows.append({"set": which, "model": name, "chip": chip, **r})
    for which in args.set:
        sub = [r for r in rows if r["set"] == which]
        if sub:
            ratios = [float(r["vs_best"]) for r in sub]  # type: ignore[arg-type]
            ok = sum(x <= 1.0 + 1e-9 for x in ratios)
            print(f"{which}: default best-or-tied in {ok}/{len(sub)}; worst default/best {max(ratios):.4f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
