"""Regenerate ``generated.csv``: SCALE-Sim v3 compute cycles for small GEMM/conv layers.

Not part of the test suite (it needs SCALE-Sim, which the project does not depend on). Run it
with a scratch environment, never the project's:

    python3 -m venv /tmp/ssvenv
    /tmp/ssvenv/bin/pip install "numpy<2" "pandas<2.3" "numba<0.62" scalesim==3.0.0
    /tmp/ssvenv/bin/python tests/data/scalesim/generate.py OUT_DIR > tests/data/scalesim/generated.csv

Each array size and dataflow is one SCALE-Sim run (``InterfaceBandwidth: CALC``, 64 kB per
buffer, sparsity off); ``compute_cycles_no_stall`` is ``Total Cycles - Stall Cycles`` of its
COMPUTE_REPORT.csv, the figure hwsim's :func:`cost_models.npu.array_cycles` must match.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

ARRAYS = [(8, 8), (32, 32), (8, 32), (32, 8), (16, 16)]
DATAFLOWS = ["os", "ws", "is"]
#: name, M, N, K
GEMMS = [
    ("g_64_64_64", 64, 64, 64),
    ("g_100_50_70", 100, 50, 70),
    ("bert_qk_head_s128", 128, 128, 64),
    ("bert_av_head_s128", 128, 64, 128),
    ("fc_1x256x512", 1, 256, 512),
]
#: name, ifmap_h, ifmap_w, filt_h, filt_w, channels, num_filt, stride
CONVS = [
    ("c_16x16_3x3_16to32_s1", 16, 16, 3, 3, 16, 32, 1),
    ("c_23x23_7x7_3to16_s2", 23, 23, 7, 7, 3, 16, 2),
    ("c_13x13_1x1_64to128_s2", 13, 13, 1, 1, 64, 128, 2),
    ("c_9x9_3x3_32to64_s1", 9, 9, 3, 3, 32, 64, 1),
]

CFG = """[general]
run_name = {name}

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:   64
FilterSramSzkB:  64
OfmapSramSzkB:   64
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : 16
Dataflow : {df}
MemoryBanks:   1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 16
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 16
FilterSRAMBankNum: 1
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""

LAYOUT_ROW = "{name},1,1,1,1,1,1,0,1,2,0,1,2,0,1,2,3,0,1,2,3,\n"


def conv_mnk(h: int, w: int, r: int, s: int, c: int, n: int, stride: int) -> tuple[int, int, int]:
    """SCALE-Sim lowers a conv without padding: M output pixels, N filters, K window."""
    m = ((h - r) // stride + 1) * ((w - s) // stride + 1)
    return m, n, r * s * c


def run(out: Path, rows: int, cols: int, df: str, kind: str) -> list[list[str]]:
    name = f"sa{rows}x{cols}_{df}_{kind}"
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "cfg.cfg").write_text(CFG.format(name=name, rows=rows, cols=cols, df=df))
    layers = GEMMS if kind == "gemm" else CONVS
    if kind == "gemm":
        topo = "Layer, M, N, K,\n" + "".join(f"{g[0]},{g[1]},{g[2]},{g[3]},\n" for g in GEMMS)
    else:
        topo = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        topo += "".join(",".join(str(x) for x in c) + ",\n" for c in CONVS)
    (d / "topo.csv").write_text(topo)
    (d / "layout.csv").write_text("Layer name,\n" + "".join(LAYOUT_ROW.format(name=layer[0]) for layer in layers))
    subprocess.run(
        [sys.executable, "-m", "scalesim.scale", "-c", str(d / "cfg.cfg"), "-t", str(d / "topo.csv"),
         "-l", str(d / "layout.csv"), "-p", str(d / "res"), "-i", "gemm" if kind == "gemm" else "conv", "-s", "N"],
        check=True, stdout=subprocess.DEVNULL,
    )
    report = next((d / "res").rglob("COMPUTE_REPORT.csv"))
    out_rows = []
    with report.open() as f:
        reader = csv.reader(f)
        next(reader)
        for layer, rec in zip(layers, reader):
            total, stall = int(float(rec[2])), int(float(rec[3]))
            if kind == "gemm":
                m, n, k = layer[1], layer[2], layer[3]
            else:
                m, n, k = conv_mnk(*layer[1:])  # type: ignore[arg-type]
            out_rows.append([name.rsplit("_", 1)[0], str(rows), str(cols), df, str(layer[0]), kind,
                             str(m), str(n), str(k), str(total), str(stall), str(total - stall)])
    return out_rows


def main() -> int:
    out = Path(sys.argv[1])
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["config", "rows", "cols", "dataflow", "layer", "kind", "M", "N", "K",
                "total_cycles", "stall_cycles", "compute_cycles_no_stall"])
    for rows, cols in ARRAYS:
        for df in DATAFLOWS:
            if (rows, cols) == (16, 16) and df != "is":
                continue  # the shared reference set already covers 16x16 os and ws
            for kind in ("gemm", "conv"):
                for r in run(out, rows, cols, df, kind):
                    w.writerow(r)
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
