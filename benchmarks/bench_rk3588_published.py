"""RK3588 single NPU core at int8 against published rknn_model_zoo / go-rknnlite figures.

Run: ``python benchmarks/bench_rk3588_published.py [--write]``. Simulates each model of
``examples/models/`` that has a published figure on ``chips/rk3588.yaml`` restricted to one NPU
core (``--units npu:1``: rknn runs these models wholly on the NPU, core mask 1), with fusion on
and off, and prints model / predicted ms / published ms / error plus the median error, then the
three-core table (``--units npu``: RKNN's multi-core mode, ``core_mode: lockstep``; and three
instances of the model at once, one per core, as three processes with core masks 1, 2 and 4 run
them: the check of the cores' shared-DRAM contention); ``--write`` also replaces the table in ``docs/fidelity_npu.md`` between its ``rk3588`` markers.
Simulated times, not wall times: the figures do not depend on the machine.

Published figures (copied from the hwsim reference set, ``published/rk3588_npu_measured.csv``):
rknn_model_zoo v2.3.2 README (airockchip/rknn_model_zoo, commit bad6c73), FPS of inference only,
single core, max NPU clock; mobilenet_v1 is the p50 latency of swdee/go-rknnlite's example
(RKNN API 1.6.0, Rock 5B). The YOLOv8 n/s/m rows (same README and commit, 73.5 / 38.0 / 16.2
FPS; the segment models 60.8 / 28.9 / 12.6) YOLOv5 n/s/m-seg (69.3 / 36.8 / 16.4), YOLOX s/m (37.1 / 16.0) and YOLO11 n/s/m (60.0 / 33.0 /
12.7) are built by ``examples/zoo_rknn.py`` (``HELD_OUT``: the ultralytics scales, the Detect head as
airockchip/ultralytics_yolov8 exports it for RKNN); held out like every row but MobileNetV2.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import doc_table
import onnx
from onnx import compose, helper

from chips import load_chip
from chips.variants import override, restrict
from graph_ir import ModelGraph, load_onnx
from graph_ir.onnx_import import from_model_proto
from hwsim.pipeline import run_graph

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fidelity_npu.md"

#: model -> (published ms, source)
PUBLISHED = {
    "mobilenetv2": (1000 / 450.7, "rknn_model_zoo v2.3.2, 450.7 FPS (calibration anchor)"),
    "resnet50_v2": (1000 / 110.1, "rknn_model_zoo v2.3.2, 110.1 FPS"),
    "yolov5n": (1000 / 82.5, "rknn_model_zoo v2.3.2, 82.5 FPS"),
    "yolov5s": (1000 / 48.4, "rknn_model_zoo v2.3.2, 48.4 FPS"),
    "yolov5s_relu": (1000 / 66.1, "rknn_model_zoo v2.3.2, 66.1 FPS"),
    "yolov5m": (1000 / 20.9, "rknn_model_zoo v2.3.2, 20.9 FPS"),
    "mobilenetv1": (1.94, "go-rknnlite, p50 1.94 ms"),
    # not bundled: built by examples/zoo_rknn.py (HELD_OUT) as airockchip's RKNN export has them
    "yolov8n_rknn": (1000 / 73.5, "rknn_model_zoo v2.3.2, 73.5 FPS (built, RKNN export head)"),
    "yolov8s_rknn": (1000 / 38.0, "rknn_model_zoo v2.3.2, 38.0 FPS (built, RKNN export head)"),
    "yolov8m_rknn": (1000 / 16.2, "rknn_model_zoo v2.3.2, 16.2 FPS (built, RKNN export head)"),
    "yolo11n_rknn": (1000 / 60.0, "rknn_model_zoo v2.3.2, 60.0 FPS (built, RKNN export head)"),
    "yolo11s_rknn": (1000 / 33.0, "rknn_model_zoo v2.3.2, 33.0 FPS (built, RKNN export head)"),
    "yolo11m_rknn": (1000 / 12.7, "rknn_model_zoo v2.3.2, 12.7 FPS (built, RKNN export head)"),
    "yolox_s": (1000 / 37.1, "rknn_model_zoo v2.3.2, 37.1 FPS (built)"),
    "yolox_m": (1000 / 16.0, "rknn_model_zoo v2.3.2, 16.0 FPS (built)"),
    "yolov5n_seg": (1000 / 69.3, "rknn_model_zoo v2.3.2, 69.3 FPS (built)"),
    "yolov5s_seg": (1000 / 36.8, "rknn_model_zoo v2.3.2, 36.8 FPS (built)"),
    "yolov5m_seg": (1000 / 16.4, "rknn_model_zoo v2.3.2, 16.4 FPS (built)"),
    "yolov8n_seg_rknn": (1000 / 60.8, "rknn_model_zoo v2.3.2, 60.8 FPS (built, RKNN export head)"),
    "yolov8s_seg_rknn": (1000 / 28.9, "rknn_model_zoo v2.3.2, 28.9 FPS (built, RKNN export head)"),
    "yolov8m_seg_rknn": (1000 / 12.6, "rknn_model_zoo v2.3.2, 12.6 FPS (built, RKNN export head)"),
}


def model_graph(name: str) -> ModelGraph:
    """A bundled model of ``examples/models``, else one ``examples/zoo_rknn.HELD_OUT`` builds."""
    sys.path.insert(0, str(ROOT / "examples"))
    import zoo_rknn

    graph = zoo_rknn.model_graph(name)
    if graph is None:
        raise KeyError(f"{name}: neither in examples/models nor built by examples/zoo_rknn.py")
    return graph


#: Three cores together (core mask 7): model -> (published ms, source). rknn_benchmark's
#: ``yolov5s-640-640.rknn`` of RKNPU SDK v1.5.0 is the ReLU YOLOv5s: rknpu2's
#: ``examples/rknn_yolov5_demo/convert_rknn_demo/yolov5/README.md`` makes it from rknn-toolkit2's
#: ``examples/onnx/yolov5/yolov5s.onnx``, which rknn-toolkit2 later ships as ``yolov5s_relu.onnx``
#: (rockchip-linux/rknn-toolkit2 commit 2c2d03d, same README). Held out: nothing is fitted on it.
THREE_CORES = {
    "yolov5s_relu": (9.86, "rknn_benchmark core mask 7, RKNPU SDK v1.5.0 (jas-hacks.blogspot.com 2023/06)"),
}

#: Three instances at once, one per core (three rknn_benchmark processes, core masks 1, 2, 4):
#: model -> (published ms per instance, source). Held out: nothing is fitted on it.
THREE_INSTANCES = {
    "yolov5s_relu": (18.84, "rknn_benchmark x3, core masks 1/2/4, SDK v1.5.0 (jas-hacks.blogspot.com 2023/06)"),
}

#: Each instance on a core of its own: no layer split, no lockstep (what core masks 1/2/4 do).
ONE_PER_CORE = ("npu.core_mode=independent", "npu.split_ops=[]")
#: The what-if of a runtime that chooses each layer's cores (the fastest count, its shards
#: sharing the DRAM) instead of RKNN's split of every layer it can over the core mask.
FASTEST_SPLIT = ("npu.split_cores=fastest",)


def instances(path: Path, n: int) -> ModelGraph:
    """``n`` independent copies of the model at ``path`` (names prefixed ``i0_``, ``i1_``, ...)."""
    model = onnx.load(str(path), load_external_data=False)
    copies = [compose.add_prefix(model, f"i{k}_") for k in range(n)]
    graph = helper.make_graph(
        [node for c in copies for node in c.graph.node], f"{path.stem}_x{n}",
        [t for c in copies for t in c.graph.input], [t for c in copies for t in c.graph.output],
        [t for c in copies for t in c.graph.initializer],
        value_info=[t for c in copies for t in c.graph.value_info],
    )  # fmt: skip
    merged = helper.make_model(graph, opset_imports=model.opset_import)
    return from_model_proto(merged, f"{path.stem}_x{n}", str(path))


def three_core_table() -> str:
    """One model on all three NPU cores (``--units npu``), and three instances one per core,
    against the published figures."""
    one, three = restrict(load_chip("rk3588"), "npu:1"), restrict(load_chip("rk3588"), "npu")
    lines = [
        "| model | run | hwsim ms, 1 core alone | hwsim ms, 3 cores | vs 1 core alone | published ms | error | source |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    what_if = restrict(override(load_chip("rk3588"), list(FASTEST_SPLIT)), "npu")
    for name, (ms_pub, source) in THREE_CORES.items():
        graph = load_onnx(ROOT / "examples" / "models" / f"{name}.onnx")
        ms_1 = run_graph(graph, one, "int8").analysis.latency_ms
        for run, chip in (("one model split over 3 cores", three),
                          (f"the same, `--set {FASTEST_SPLIT[0]}` (what-if)", what_if)):  # fmt: skip
            ms_3 = run_graph(graph, chip, "int8").analysis.latency_ms
            lines.append(
                f"| {name} | {run} | {ms_1:.2f} | {ms_3:.2f} | {ms_1 / ms_3:.2f}x faster | "
                f"{ms_pub:.2f} | {ms_3 / ms_pub - 1:+.1%} | {source} |"
            )
    per_core = restrict(override(load_chip("rk3588"), list(ONE_PER_CORE)), "npu")
    for name, (ms_pub, source) in THREE_INSTANCES.items():
        path = ROOT / "examples" / "models" / f"{name}.onnx"
        ms_1 = run_graph(load_onnx(path), one, "int8").analysis.latency_ms
        ms_3 = run_graph(instances(path, 3), per_core, "int8").analysis.latency_ms
        lines.append(
            f"| {name} | 3 instances, one per core (ms per instance) | {ms_1:.2f} | {ms_3:.2f} | "
            f"{ms_3 / ms_1:.2f}x slower | {ms_pub:.2f} | {ms_3 / ms_pub - 1:+.1%} | {source} |"
        )
    return "\n".join(lines)


def table() -> str:
    return single_core_table() + "\n\n" + three_core_table()


def single_core_table() -> str:
    chip = restrict(load_chip("rk3588"), "npu:1")
    lines = [
        "| model | GMAC | hwsim ms (fused) | hwsim ms (no fusion) | published ms | error (fused) | fused pairs | source |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    errors, held_out = [], []
    for name, (ms_pub, source) in PUBLISHED.items():
        graph = model_graph(name)
        fused = run_graph(graph, chip, "int8")
        plain = run_graph(graph, chip, "int8", fuse="off")
        err = fused.analysis.latency_ms / ms_pub - 1
        errors.append(err)
        if "anchor" not in source:
            held_out.append(err)
        lines.append(
            f"| {name} | {graph.total_macs / 1e9:.2f} | {fused.analysis.latency_ms:.2f} | "
            f"{plain.analysis.latency_ms:.2f} | {ms_pub:.2f} | {err:+.1%} | {len(fused.fused)} | {source} |"
        )
    lines += [
        "",
        (
            f"Median error {statistics.median(errors):+.1%} over {len(errors)} models "
            f"({statistics.median(held_out):+.1%} over the {len(held_out)} held out from calibration); "
            f"median absolute error {statistics.median(abs(e) for e in errors):.1%}."
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    doc_table.main(__doc__, DOC, "rk3588", table)
