"""Shared builders for tests: tiny chips, tiny graphs, random chips for hypothesis."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import networkx as nx
import numpy as np
import onnx
import pytest
import yaml
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from chips import Chip, chip_from_dict
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph, Op, Tensor, add_data_edge
from graph_ir.op_metrics import metrics
from scheduler.problem import Problem, Solution
from scheduler.schedule import Placement, Schedule, implied_transfers

#: The repository root, its bundled models, and the data the tests carry (copied from ../shared).
ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
DATA = ROOT / "tests" / "data"


def load_benchmarks(*names: str) -> ModuleType:
    """Import ``benchmarks/NAME.py`` for each of ``names`` in order (a builder imports its
    siblings by module name, so each is registered in ``sys.modules``); the last one."""
    import importlib.util
    import sys

    for name in names:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[names[-1]]


def check_unseen_model(model: onnx.ModelProto, path: Path, op_type: str, out_shape: tuple[int, ...]) -> None:
    """An unseen batch's model (``benchmarks/heldout_unseen*.py``), saved at ``path``: hwsim reads
    it with ``op_type`` among its ops and ``out_shape`` for its output, and onnxruntime runs it to
    that shape on the inputs ``hwsim validate`` feeds it."""
    import onnxruntime as ort

    from graph_ir.onnx_import import load_onnx
    from hwsim.host.measure import random_inputs

    onnx.save(model, str(path))
    graph = load_onnx(path)
    assert op_type in {graph.op(n).op_type for n in graph.order}
    assert graph.outputs[0].shape == out_shape
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.run(None, random_inputs(model, 0))[0].shape == out_shape


def runs_finite(model: onnx.ModelProto, path: Path) -> None:
    """An unseen batch's model, saved at ``path``, runs under onnxruntime on the inputs ``hwsim
    validate`` feeds it to a finite first output."""
    import onnxruntime as ort

    from hwsim.host.measure import random_inputs

    onnx.save(model, str(path))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert np.all(np.isfinite(sess.run(None, random_inputs(model, 0))[0]))


def batch_runs(mod: ModuleType, small: Mapping[str, onnx.ModelProto], tmp_path: Path) -> None:
    """An unseen batch ``mod`` (``benchmarks/heldout_unseenN.py``) holds two sizes of each family of
    ``small`` (family -> a small model of it), and each small model runs (:func:`runs_finite`)."""
    assert sorted({k.split("_")[0] for k in mod.SIZES}) == sorted(small)
    assert all(sum(k.startswith(f + "_") for k in mod.SIZES) == 2 for f in small)
    for name, model in small.items():
        runs_finite(model, tmp_path / f"{name}.onnx")


def make_op(op_type: str, ins: list[Tensor], outs: list[Tensor], **attrs: Any) -> Op:
    """An op named ``op`` with its category, MACs and FLOPs from :func:`graph_ir.op_metrics.metrics`."""
    m = metrics(op_type, ins, outs, attrs)
    return Op("op", op_type, m.category, tuple(ins), tuple(outs), attrs, m.macs, m.flops)


def two_cpu_chip(dram_gbps: float = 10.0, port_gbps: float = 10.0, channels: int = 1) -> dict[str, Any]:
    """Two one-core CPUs in one DRAM domain, a third in another domain behind one link."""
    cpu = {
        "kind": "cpu", "clock_mhz": 1000, "cores": 1, "flops_per_cycle": {"int8": 64, "fp32": 16},
        "l1_kib": 1, "l2_kib": 2, "l3_kib": 0, "mem_bandwidth_gbps": port_gbps, "op_overhead_ns": 100,
    }  # fmt: skip
    return {
        "name": "toy",
        "dram": {"bandwidth_gbps": dram_gbps, "latency_ns": 0},
        "domains": [{"name": "a"}, {"name": "b"}],
        "units": [
            {"name": "cpu0", "domain": "a", **cpu},
            {"name": "cpu1", "domain": "a", **cpu},
            {"name": "cpu2", "domain": "b", **cpu},
        ],
        "links": [{"src": "a", "dst": "b", "bandwidth_gbps": 5.0, "latency_ns": 50, "dma_channels": channels}],
    }


def graph_from_ops(name: str, inputs: list[Tensor], ops: list[tuple[str, str, list[Tensor], list[Tensor]]]) -> ModelGraph:
    """Build a ModelGraph from (name, op_type, inputs, outputs) in topological order."""
    g = nx.DiGraph()
    producer: dict[str, str] = {}
    order = []
    consumed: set[str] = set()
    for op_name, op_type, ins, outs in ops:
        m = metrics(op_type, ins, outs, {})
        g.add_node(op_name, op=Op(op_name, op_type, m.category, tuple(ins), tuple(outs), {}, m.macs, m.flops))
        order.append(op_name)
        for t in ins:
            consumed.add(t.name)
            src = producer.get(t.name)
            if src is not None:
                add_data_edge(g, src, op_name, t.name)
        for t in outs:
            producer[t.name] = op_name
    outputs = tuple(t for _, _, _, outs in ops for t in outs if t.name not in consumed)
    return ModelGraph(name, g, tuple(inputs), outputs, producer, tuple(order))


def fixed_schedule(
    graph: ModelGraph, chip: Chip, table: CostTable, where: dict[str, tuple[str, int]]
) -> Schedule:
    """A schedule placing each op on (unit, core), per-core order = topological order."""
    order: dict[tuple[str, int], list[str]] = {}
    for n in graph.order:
        order.setdefault(where[n], []).append(n)
    placements = {n: Placement(n, u, c, 0.0, 0.0, "fixed") for n, (u, c) in where.items()}
    unit_of = {n: u for n, (u, _) in where.items()}
    transfers = implied_transfers(graph, chip, table, unit_of)
    return Schedule("fixed", placements, {k: tuple(v) for k, v in order.items()}, transfers, 0.0)


@st.composite
def random_chips(draw: st.DrawFn) -> Chip:
    """Random but valid chips: 1-3 domains, 1-4 units of any kind, a link between every pair."""
    n_dom = draw(st.integers(1, 3))
    domains = []
    for i in range(n_dom):
        if draw(st.booleans()):
            domains.append({"name": f"d{i}", "kind": "dram"})
        else:
            domains.append({"name": f"d{i}", "kind": "sram", "bandwidth_gbps": draw(st.floats(5, 200))})
    units = []
    n_units = draw(st.integers(1, 4))
    for i in range(n_units):
        kind = "cpu" if i == 0 else draw(st.sampled_from(["cpu", "gpu", "npu", "dsp"]))
        base: dict[str, Any] = {
            "name": f"u{i}", "kind": kind, "domain": f"d{draw(st.integers(0, n_dom - 1))}",
            "clock_mhz": draw(st.floats(200, 3000)), "op_overhead_ns": draw(st.floats(0, 5000)),
        }  # fmt: skip
        if kind == "cpu":
            base |= {"cores": draw(st.integers(1, 4)), "flops_per_cycle": {"int8": 32, "fp32": 8}}
        elif kind == "gpu":
            base |= {"compute_units": draw(st.integers(1, 16)), "flops_per_cycle": {"fp16": 128, "fp32": 64}}
        elif kind == "npu":
            base |= {
                "cores": draw(st.integers(1, 3)), "mac_rows": draw(st.sampled_from([8, 16, 32])),
                "mac_cols": draw(st.sampled_from([8, 16, 32])), "macs_per_pe_per_cycle": {"int8": 1.0},
                "sram_kib": draw(st.floats(16, 1024)),
            }  # fmt: skip
        else:
            base |= {"flops_per_cycle": {"int8": 64, "fp32": 16}, "sram_kib": 128}
        units.append(base)
    links = [
        {
            "src": f"d{a}", "dst": f"d{b}", "bandwidth_gbps": draw(st.floats(0.5, 50)),
            "latency_ns": draw(st.floats(0, 20000)), "dma_channels": draw(st.integers(1, 3)),
        }
        for a in range(n_dom)
        for b in range(a + 1, n_dom)
    ]
    return chip_from_dict(
        {
            "name": "random",
            "dram": {"bandwidth_gbps": draw(st.floats(2, 100)), "latency_ns": draw(st.floats(0, 200))},
            "domains": domains,
            "units": units,
            "links": links,
        }
    )


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The captured stderr, checked to be one line without a traceback."""
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


def conv_argmax_onnx(path: Path, channels: int, size: int) -> Path:
    """Save a Conv -> Relu -> ArgMax model: NPU work, then a CPU op (a transfer between them)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])
    w = helper.make_tensor("w", TensorProto.FLOAT, [channels, channels, 3, 3], np.full(channels * channels * 9, 0.1))
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [1, 1, size, size])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("ArgMax", ["r"], ["idx"], name="argmax", axis=1),
    ]
    graph = helper.make_graph(nodes, "tiny", [x], [idx], initializer=[w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def mlp(path: Path, n: int = 256, layers: int = 3, external: bool = True) -> Path:
    """A MatMul+Add+Relu stack; weights as absent external data (like examples/models)."""
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        w = numpy_helper.from_array(np.zeros((n, n), np.float32), f"w{i}")
        if external:
            w.ClearField("raw_data")
            w.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "absent.bin"), ("offset", "0"), ("length", str(n * n * 4))):
                e = w.external_data.add()
                e.key, e.value = k, v
        inits += [w, numpy_helper.from_array(np.full((n,), 0.1, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"/l{i}/MatMul"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"/l{i}/Add"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"/l{i}/Relu")]  # fmt: skip
        x = f"r{i}"
    g = helper.make_graph(nodes, "tiny_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, n])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [64, n])], inits)  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def write_chip(path: Path, **unit: Any) -> Path:
    path.write_text(yaml.safe_dump(host_chip(**unit)))
    return path


EPS = 1e-7


def check_valid(p: Problem, s: Solution) -> None:
    """Each task once on a unit that can run it, precedence + transfers respected, no overlap."""
    assert len(s.unit) == p.n
    for i in range(p.n):
        u = s.unit[i]
        assert math.isfinite(p.exec_ns[i, u]), f"{p.tasks[i]} on a unit that cannot run it"
        assert 0 <= s.core[i] < p.cores[u]
        assert s.finish_ns[i] == pytest.approx(s.start_ns[i] + p.exec_ns[i, u])
        assert s.start_ns[i] >= -EPS
        for j, vol in p.preds[i]:
            arrive = s.finish_ns[j] + p.comm(vol, s.unit[j], u)
            assert s.start_ns[i] >= arrive - EPS, f"{p.tasks[i]} starts before {p.tasks[j]}'s data arrives"
    slots: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for i in range(p.n):
        if p.exec_ns[i, s.unit[i]] > 0:
            slots.setdefault((s.unit[i], s.core[i]), []).append((s.start_ns[i], s.finish_ns[i]))
    for iv in slots.values():
        iv.sort()
        for (_, f0), (s1, _) in itertools.pairwise(iv):
            assert s1 >= f0 - EPS, "two tasks overlap on one core"
    assert s.makespan_ns == pytest.approx(max(s.finish_ns, default=0.0))


def host_chip(**unit: Any) -> dict[str, Any]:
    """A one-CPU chip shaped like a `hwsim fingerprint` file (plausible made-up numbers)."""
    cpu = {"name": "cpu", "kind": "cpu", "domain": "cpu", "cores": 2, "clock_mhz": 2600,
           "flops_per_cycle": {"fp32": 60.0}, "l1_kib": 48, "l2_kib": 2048, "l3_kib": 32768,
           "l1_bandwidth_gbps": 200, "l2_bandwidth_gbps": 130, "l3_bandwidth_gbps": 38,
           "op_overhead_ns": 2000.0, **unit}  # fmt: skip
    return {"name": "host", "dram": {"bandwidth_gbps": 8.0, "latency_ns": 300},
            "domains": [{"name": "cpu"}], "units": [cpu], "default_affinity": ["cpu"]}  # fmt: skip


def qdq_matmul(path: Path, m: int = 32, k: int = 64, n: int = 48) -> Path:
    """x -> Q/DQ -> MatMul (int8 weights through DQ) -> Q/DQ: quantize_static's QDQ shape."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), "wq"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(np.array(0.5, np.float32), "ys"), numpy_helper.from_array(np.array(128, np.uint8), "yz")]  # fmt: skip
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="dqw"),
             helper.make_node("MatMul", ["xd", "w"], ["y"], name="mm"),
             helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"], name="qy"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["out"], name="dqy")]  # fmt: skip
    graph = helper.make_graph(nodes, "qmm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, m, n])], inits)  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path
