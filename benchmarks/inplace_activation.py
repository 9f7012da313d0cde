#!/usr/bin/env python3
"""An activation onnxruntime runs in place against one that writes a buffer of its own, and the
streaming Add and Mul around it, measured against hwsim's price (``docs/fidelity_cpu.md``, "The
Intel Xeon again, without AMX and under load").

    python benchmarks/inplace_activation.py --chip FP.yaml [--rounds 3] [--op Relu] [--kib 256,1024]

Each case runs ``x, x2 -> Add -> t -> OP -> u -> Mul(u, x2) -> z`` over ``[1, n]`` floats twice: as
it is (onnxruntime's arena gives ``OP`` the buffer of ``t``: :data:`hwsim.host.ort_arena.INPLACE_OPS`)
and with ``t`` also a graph output (``OP`` writes a buffer of its own). Each kernel's time is the
fastest of 11 profiled runs, 1 thread, the rounds interleaved, the profiler's own cost off where
the chip file has the fingerprint's dispatch; hwsim's price is the node's in ``hwsim validate``'s
prediction of the model (the arena and the caches replayed). Nothing here is fitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op_kernels import node_prices, parser  # the one-op benchmarks share them

#: Tensor sizes, KiB: from within any L2 to beyond it.
KIB = (64, 256, 512, 1024, 1536, 2048, 4096, 8192)
NODES = ("add", "act", "mul")


def chain(n: int, op: str, apart: bool) -> onnx.ModelProto:
    """``Add -> op -> Mul`` over ``[1, n]`` floats; ``apart``: the Add's output also a graph output."""
    shape = [1, n]
    nodes = [helper.make_node("Add", ["x", "x2"], ["t"], name="add"), helper.make_node(op, ["t"], ["u"], name="act"),
             helper.make_node("Mul", ["u", "x2"], ["z"], name="mul")]  # fmt: skip
    outs = [helper.make_tensor_value_info("z", TensorProto.FLOAT, shape)]
    if apart:
        outs.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, shape))
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, shape) for k in ("x", "x2")]
    graph = helper.make_graph(nodes, f"{op}_chain", ins, outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def measured(model: onnx.ModelProto, n: int) -> dict[str, float]:
    """Each node's kernel time in ``model``, the fastest of 11 profiled runs, ns."""
    from hwsim.host.measure import profile_nodes

    x = np.random.default_rng(0).uniform(-1.0, 1.0, (1, n)).astype(np.float32)
    got = profile_nodes(model, {"x": x, "x2": x.copy()}, threads=1, runs=11)
    return {k: got[k][1] for k in NODES}


def priced(model: onnx.ModelProto, chip_path: str) -> dict[str, float]:
    """hwsim's price of each node as ``hwsim validate`` predicts the model, ns."""
    prices = node_prices(model, chip_path)
    return {k: prices[k] for k in NODES}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--op", default="Relu", help="the activation between the Add and the Mul (default Relu)")
    ap.add_argument("--kib", help="tensor sizes in KiB, comma separated (default: 64 to 8192)")
    args = ap.parse_args(argv)
    from hwsim.host.fingerprint import read_dispatch

    dispatch = read_dispatch(Path(args.chip))
    sizes = tuple(int(v) for v in args.kib.split(",")) if args.kib else KIB
    keys = [(kib, apart) for kib in sizes for apart in (False, True)]
    got: dict[tuple[int, bool], list[dict[str, float]]] = {k: [] for k in keys}
    for _ in range(args.rounds):
        for kib, apart in keys:
            times = measured(chain(kib * 256, args.op, apart), kib * 256)
            got[(kib, apart)].append({k: dispatch.kernel_time(v) if dispatch else v for k, v in times.items()})
    print(f"kernel us, measured (fastest of {args.rounds} rounds) / hwsim on {args.chip}\n")
    print(f"| KiB | {args.op}'s buffer | Add | {args.op} | Mul |")
    print("|---:|---|---:|---:|---:|")
    for (kib, apart), rounds in got.items():
        price = priced(chain(kib * 256, args.op, apart), args.chip)
        cells = []
        for k in NODES:
            best = min(r[k] for r in rounds)
            cells.append(f"{best / 1e3:.1f} / {price[k] / 1e3:.1f} ({100 * (price[k] / best - 1):+.0f} %)")
        print(f"| {kib} | {'its own' if apart else 'in place'} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
