"""Jetson Orin Nano GPU against published TensorRT latencies.

Run: ``python benchmarks/bench_jetson_published.py [--write]``. Simulates each model of
``examples/models/`` that has a published figure (``tests/data/jetson_orin_nano_published.csv``,
copied from the hwsim reference set ``published/jetson_orin_nano.csv``) on
``chips/jetson_orin_nano.yaml`` as shipped (15 W mode) and in MAXN Super via the overrides
:data:`MAXN_SUPER` (the ``--set`` of the README), and prints model / precision / both
predictions / published / error against the prediction in the row's power mode, plus the
error over the rows held out from calibration. ``--write`` also replaces the table in
``docs/fidelity_gpu.md`` between its ``jetson`` markers. Simulated times, not wall times.

Calibration: only the GPU's ``op_overhead_ns`` is fitted, on YOLOv8n fp16 (MAXN Super); every
other row is held out. ``yolox_s_leaky`` (Idein's trtexec figures, JetPack 5.1.2, the pre-Super
15 W mode) is built by ``examples/zoo_rknn.py``; a row whose model is neither bundled nor built
(``yolov8s``: end-to-end times through ultralytics' pipeline, not GPU times) is listed as not
simulated.

What is compared is what each figure measured (its ``metric`` column, :func:`predicted_ms`):
trtexec's "GPU Compute Time" (the YOLOv8n rows: kernels only, measured with CUDA events) against
the wall time the GPU runs kernels in the simulation, without the input's copy to the GPU and the
output's copy back that the simulation also runs; trtexec's "Latency" (the YOLOX rows, H2D and
D2H copies included) against the whole simulated run. ``--fit`` prints the per-kernel cost that
makes the fitted row match (bisection, :func:`fit_overhead_ns`), for the chip file.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

import doc_table
import yolov8n_export

from chips import Chip, load_chip
from chips.variants import override, restrict
from graph_ir import ModelGraph, load_onnx
from graph_ir.onnx_import import from_model_proto
from hwsim.pipeline import RunResult, run_graph

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fidelity_gpu.md"
DATA = ROOT / "tests" / "data" / "jetson_orin_nano_published.csv"
#: The Orin Nano 8GB (P3767-0003) power modes as ``--set`` bundles over the chip file (which is
#: the pre-Super 15 W mode). Clocks from NVIDIA's nvpmodel files for that module
#: (``nvpmodel_p3767_0003.conf`` and ``nvpmodel_p3767_0003_super.conf``, JetPack 6.x; copies in
#: LineageOS/android_device_nvidia_concord ``nvpmodel/``); MAXN SUPER leaves every clock at its
#: maximum: GPU 1020 MHz, CPU 1.7 GHz, EMC 3199 MHz = 102 GB/s (Super developer kit datasheet).
#: EMC 2133 MHz = LPDDR5 4266 MT/s x 16 B = 68 GB/s; 3199 MHz = 102 GB/s. The GPU achieves 74.6 %
#: of the EMC rate (``gpu.mem_bandwidth_gbps``, measured on AGX Orin: see the chip file), so a
#: mode that raises the EMC clock raises it too: 0.746 x 102 = 76.1 GB/s.
POWER_MODES: dict[str, tuple[str, ...]] = {
    "7W (pre-Super)": (  # 4 CPU cores at 960 MHz, GPU 408 MHz on 2 TPCs (TPC_PG_MASK 252) = 4 SMs
        "gpu.clock_mhz=408", "gpu.compute_units=4", "cpu.cores=4", "cpu.clock_mhz=960",
    ),
    "15W (pre-Super, the chip file)": (),
    "15W (Super)": ("gpu.clock_mhz=612", "cpu.clock_mhz=1497.6"),  # EMC 2133 MHz
    "25W (Super)": (
        "gpu.clock_mhz=918", "cpu.clock_mhz=1344", "dram.bandwidth_gbps=102", "gpu.mem_bandwidth_gbps=76.1",
    ),
    "MAXN_SUPER": (
        "gpu.clock_mhz=1020", "cpu.clock_mhz=1700", "dram.bandwidth_gbps=102", "gpu.mem_bandwidth_gbps=76.1",
    ),
}  # fmt: skip
#: The JetPack 6.2 "Super" MAXN mode, the mode of the three YOLOv8n TensorRT figures
#: (hokwangchoi/jetson-orin-nano-benchmarks README: ``nvpmodel -m 2``, then ``jetson_clocks``, so
#: every clock sits at its maximum, as this bundle has them).
MAXN_SUPER = POWER_MODES["MAXN_SUPER"]
#: The held-out export (benchmarks/yolov8n_export.py), compared in MAXN SUPER.
EXPORT = "yolov8n (torch-style export)"
#: (model, precision) the one fitted value (the GPU's op_overhead_ns) was fitted on.
FITTED = ("yolov8n", "fp16")


def published() -> list[dict[str, str]]:
    """The published rows (comment lines skipped)."""
    lines = [ln for ln in DATA.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def table() -> str:
    # The GPU alone (`--units gpu`): TensorRT's "GPU compute latency" is the whole network on
    # the GPU, so the comparison does not depend on where the scheduler would put a layer.
    full = load_chip("jetson_orin_nano")
    chip = restrict(full, "gpu")
    super_chip = restrict(override(full, list(MAXN_SUPER)), "gpu")
    lines = [
        "| model | precision | hwsim 15 W ms | hwsim MAXN Super ms | published ms | power mode | error | role |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    held_out, missing = [], []
    for row in published():
        graph = _model(row["model"])
        if graph is None:
            missing.append(
                f"{row['model']} {row['precision']} ({row['ms']} ms, {row['power_mode']})"
            )
            continue
        ms_15w = predicted_ms(run_graph(graph, chip, row["precision"]), row["metric"])
        ms_super = predicted_ms(run_graph(graph, super_chip, row["precision"]), row["metric"])
        ms_pub = float(row["ms"])
        predicted = ms_super if row["power_mode"].startswith("MAXN") else ms_15w
        err = predicted / ms_pub - 1
        role = "fitted" if (row["model"], row["precision"]) == FITTED else "held out"
        if role == "held out":
            held_out.append(err)
        lines.append(
            f"| {row['model']} | {row['precision']} | {ms_15w:.2f} | {ms_super:.2f} | {ms_pub:.2f} | "
            f"{row['power_mode']} | {err:+.1%} | {role} |"
        )
    lines += export_rows(super_chip, held_out)
    lines.append("")
    if held_out:
        lines.append(
            f"Held out: {len(held_out)} rows, median error {statistics.median(held_out):+.1%}, "
            f"median absolute error {statistics.median(abs(e) for e in held_out):.1%}."
        )
    if missing:
        lines.append(f"Not simulated (no model bundled or built; end-to-end figures): {'; '.join(missing)}.")
    return "\n".join(lines)


def predicted_ms(result: RunResult, metric: str) -> float:
    """The simulated counterpart of a published figure measured as ``metric``: for trtexec's
    "GPU compute" time, the wall time the GPU runs kernels (its ``active_ms``: the copies of the
    input to the GPU and of the output back are not in it); for anything else (trtexec's
    "Latency", which counts those copies) the whole run."""
    if "gpu compute" not in metric.lower():
        return result.analysis.latency_ms
    return next(u.active_ms for u in result.analysis.units if u.unit == "gpu")


def fit_overhead_ns(lo: float = 0.0, hi: float = 60_000.0, tol_ns: float = 1.0) -> float:
    """The GPU's ``op_overhead_ns`` (to ``tol_ns``) that makes the :data:`FITTED` row's
    prediction (MAXN SUPER, its metric) equal its published figure: the latency only grows with
    the per-kernel cost, so bisection finds it."""
    row = next(r for r in published() if (r["model"], r["precision"]) == FITTED)
    graph = _model(row["model"])
    assert graph is not None
    full = load_chip("jetson_orin_nano")

    def error(overhead_ns: float) -> float:
        chip = restrict(override(full, [*MAXN_SUPER, f"gpu.op_overhead_ns={overhead_ns}"]), "gpu")
        return predicted_ms(run_graph(graph, chip, row["precision"]), row["metric"]) - float(row["ms"])

    while hi - lo > tol_ns:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if error(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def _model(name: str) -> ModelGraph | None:
    """A bundled model of ``examples/models``, else one ``examples/zoo_rknn.HELD_OUT`` builds
    (``yolox_s_leaky``), else None (not simulated). A figure measured end to end through a
    framework's pipeline (``yolov8s``: the0807's README) is not compared: it is not a GPU time."""
    sys.path.insert(0, str(ROOT / "examples"))
    import zoo_rknn

    return zoo_rknn.model_graph(name)


def export_rows(super_chip: Chip, held_out: list[float]) -> list[str]:
    """The YOLOv8n rows again on the independently written export (held out, MAXN SUPER)."""
    graph = from_model_proto(yolov8n_export.build(), "yolov8n_export", "yolov8n_export")
    rows = []
    for row in published():
        if row["model"] != "yolov8n":
            continue
        ms = predicted_ms(run_graph(graph, super_chip, row["precision"]), row["metric"])
        err = ms / float(row["ms"]) - 1
        held_out.append(err)
        rows.append(
            f"| {EXPORT} | {row['precision']} | | {ms:.2f} | {row['ms']} | {row['power_mode']} | "
            f"{err:+.1%} | held out |"
        )
    return rows


def power_mode_table() -> str:
    """YOLOv8n fp16 (GPU alone) in every power mode: what the mode alone changes."""
    full = load_chip("jetson_orin_nano")
    graph = load_onnx(ROOT / "examples" / "models" / "yolov8n.onnx")
    lines = ["| power mode | --set | YOLOv8n int8 / fp16 / fp32 ms |", "|---|---|---|"]
    for mode, sets in POWER_MODES.items():
        chip = restrict(override(full, list(sets)), "gpu")
        ms = [run_graph(graph, chip, p).analysis.latency_ms for p in ("int8", "fp16", "fp32")]
        lines.append(f"| {mode} | `{' '.join(sets) or '(none)'}` | {' / '.join(f'{m:.2f}' for m in ms)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--fit"]:
        print(f"gpu.op_overhead_ns fitted on {' '.join(FITTED)} (MAXN SUPER): {fit_overhead_ns():.0f}")
    else:
        doc_table.main(__doc__, DOC, "jetson", table)
