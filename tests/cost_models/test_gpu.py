"""Tests for the GPU cost model's implicit-GEMM path (``cost_models.gpu``): CTA-tile
quantization, occupancy limited by shared memory and threads, waves and the tail at CTA
granularity, the tile heuristic, free Concat/Split, and monotonicity in CUs and clock.

Ops are built from :class:`graph_ir.Tensor` with ``graph_ir.metrics``; chips are the bundled
Jetson Orin Nano with fields changed through ``chips.chip_from_dict``.
"""

from __future__ import annotations

import copy
import csv
import functools
import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import CATALOG_DIR, Chip, GpuUnit, chip_from_dict, load_chip
from chips.variants import override, restrict
from cost_models import estimate
from cost_models.gpu import (
    CTA_TILES,
    CtaTile,
    Gemm,
    ctas_per_cu,
    gemm_cycles,
    gemm_of,
    padded_macs,
    plan_gemm,
)
from graph_ir import Op, Tensor, load_onnx, metrics
from hwsim.pipeline import run_graph
from tests.helpers import DATA, ROOT


def gpu(cus: int = 8, smem_kib: float = 164, threads: int = 1536, max_ctas: int = 16) -> GpuUnit:
    return GpuUnit(
        name="g", domain="d", clock_mhz=1000, compute_units=cus, flops_per_cycle={"fp16": 2048, "int8": 4096},
        threads_per_cu=threads, shared_mem_kib=smem_kib, max_ctas_per_cu=max_ctas,
    )  # fmt: skip


@functools.cache
def _jetson_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (CATALOG_DIR / "jetson_orin_nano.yaml").read_text(encoding="utf-8")
    )
    return data


def jetson(**gpu_fields: Any) -> Chip:
    data = copy.deepcopy(_jetson_data())
    (unit,) = [u for u in data["units"] if u["name"] == "gpu"]
    unit.update(gpu_fields)
    return chip_from_dict(data, source="jetson_orin_nano (modified)")


def make_op(
    op_type: str,
    inputs: list[Tensor],
    outputs: list[Tensor],
    attrs: dict[str, object] | None = None,
) -> Op:
    attrs = attrs or {}
    m = metrics(op_type, inputs, outputs, attrs)
    return Op("op", op_type, m.category, tuple(inputs), tuple(outputs), attrs, m.macs, m.flops)


def conv(cin: int, cout: int, hw: int, k: int = 3, group: int = 1) -> Op:
    return make_op(
        "Conv",
        [
            Tensor("x", (1, cin, hw, hw), "float32"),
            Tensor("w", (cout, cin // group, k, k), "float32", is_weight=True),
        ],
        [Tensor("y", (1, cout, hw, hw), "float32")],
        {"kernel_shape": (k, k), "group": group},
    )


def matmul(m: int, k: int, n: int) -> Op:
    return make_op(
        "MatMul",
        [Tensor("a", (m, k), "float32"), Tensor("b", (k, n), "float32", is_weight=True)],
        [Tensor("y", (m, n), "float32")],
    )


# ---------------------------------------------------------------- GEMM shapes and tile padding
class TestGemmAndPadding:
    def test_conv_lowers_to_implicit_gemm(self) -> None:
        # M = N*OH*OW, N = Cout, K = Cin*kh*kw
        assert gemm_of(conv(16, 32, 40)) == Gemm(1, 1600, 32, 144)
        assert gemm_of(conv(64, 64, 10, k=1, group=2)) == Gemm(2, 100, 32, 32)
        assert gemm_of(matmul(100, 300, 70)) == Gemm(1, 100, 70, 300)

    def test_depthwise_conv_is_no_gemm(self) -> None:
        assert gemm_of(conv(32, 32, 20, group=32)) is None
        cost = estimate(conv(32, 32, 20, group=32), jetson(), "gpu", "fp16")
        assert cost is not None and "waves" in cost.note and "CTA" not in cost.note

    @pytest.mark.parametrize(
        ("gemm", "tile", "k_step", "expected"),
        [
            (Gemm(1, 128, 64, 32), CtaTile(128, 64, 64, 32), 32, 128 * 64 * 32),  # exact fit
            (Gemm(1, 129, 64, 32), CtaTile(128, 64, 64, 32), 32, 256 * 64 * 32),  # one row over
            (Gemm(2, 130, 70, 40), CtaTile(128, 64, 64, 32), 32, 2 * 256 * 128 * 64),
            (Gemm(1, 6400, 16, 27), CtaTile(64, 32, 32, 32), 32, 6400 * 32 * 32),  # first YOLO conv
        ],
    )
    def test_padded_macs(self, gemm: Gemm, tile: CtaTile, k_step: int, expected: int) -> None:
        assert padded_macs(gemm, tile, k_step) == expected

    def test_k_step_is_64_bytes(self) -> None:
        t = CtaTile(128, 128, 64, 64)
        assert (t.k_step("int8"), t.k_step("fp16"), t.k_step("fp32")) == (64, 32, 16)
        assert t.smem_bytes("fp16") == 2 * (128 + 128) * 32 * 2  # double-buffered A and B


# ---------------------------------------------------------------- occupancy
class TestOccupancy:
    def test_shared_memory_limits_resident_ctas(self) -> None:
        t = CtaTile(128, 128, 64, 64)  # 32 KiB of fp16 tiles, 128 threads
        assert ctas_per_cu(gpu(smem_kib=164), t, "fp16") == 5
        assert ctas_per_cu(gpu(smem_kib=64), t, "fp16") == 2
        assert ctas_per_cu(gpu(smem_kib=40), t, "fp16") == 1
        assert ctas_per_cu(gpu(smem_kib=16), t, "fp16") == 0  # does not fit at all

    def test_threads_and_cap_limit_resident_ctas(self) -> None:
        small = CtaTile(64, 32, 32, 32)  # 2 warps, 12 KiB of fp16
        assert ctas_per_cu(gpu(threads=256), small, "fp16") == 4
        assert ctas_per_cu(gpu(max_ctas=3), small, "fp16") == 3

    def test_a_tile_that_fits_nowhere_falls_back_to_the_smallest(self) -> None:
        plan = plan_gemm(Gemm(1, 4096, 4096, 4096), gpu(smem_kib=4), "fp16", 1.0, 0, 0.0, 0.0)
        assert plan.tile == CTA_TILES[-1] and plan.resident == 1


# ---------------------------------------------------------------- waves and tail
class TestWaves:
    @pytest.mark.parametrize("k", [1, 2, 5])
    def test_one_cta_more_than_full_waves_costs_a_full_extra_wave(self, k: int) -> None:
        unit = gpu(cus=8, smem_kib=40)  # one 128x128 fp16 CTA per SM
        t = CtaTile(128, 128, 64, 64)
        assert ctas_per_cu(unit, t, "fp16") == 1
        full, waves_full = gemm_cycles(Gemm(1, 128 * 8 * k, 128, 256), t, unit, "fp16", 1.0, 1)
        over, waves_over = gemm_cycles(
            Gemm(1, 128 * (8 * k + 1), 128, 256), t, unit, "fp16", 1.0, 1
        )
        assert (waves_full, waves_over) == (k, k + 1)
        assert over == pytest.approx(full * (k + 1) / k)

    def test_partial_wave_of_resident_ctas_costs_its_busiest_cu(self) -> None:
        unit = gpu(cus=4)
        t = CtaTile(256, 128, 64, 64)  # 8 warps: one CTA alone keeps an SM busy
        r = ctas_per_cu(unit, t, "fp16")
        assert r == 3
        one, _ = gemm_cycles(Gemm(1, 256 * 4, 128, 64), t, unit, "fp16", 1.0, r)  # 1 CTA per SM
        full, waves = gemm_cycles(Gemm(1, 256 * 4 * r, 128, 64), t, unit, "fp16", 1.0, r)
        assert waves == 1 and full == pytest.approx(r * one)
        # 4 warps alone cannot saturate: half the rate of two resident CTAs
        t4 = CtaTile(128, 128, 64, 64)
        alone, _ = gemm_cycles(Gemm(1, 128 * 4, 128, 64), t4, unit, "fp16", 1.0, 5)
        pair, _ = gemm_cycles(Gemm(1, 128 * 8, 128, 64), t4, unit, "fp16", 1.0, 5)
        assert pair == pytest.approx(alone)

    def test_cycles_match_the_rate_when_full(self) -> None:
        unit = gpu(cus=2)
        t = CtaTile(128, 128, 64, 64)
        cycles, waves = gemm_cycles(Gemm(1, 128 * 2 * 5, 128, 64), t, unit, "fp16", 1.0, 5)
        assert waves == 1
        assert cycles == pytest.approx(5 * 2 * 128 * 128 * 64 / 2048)


# ---------------------------------------------------------------- the heuristic and the op cost
class TestTileChoice:
    def test_narrow_layer_picks_a_narrow_tile(self) -> None:
        cost = estimate(conv(3, 16, 320), jetson(), "gpu", "fp16")
        assert cost is not None and "CTA 64x32" in cost.note

    def test_chosen_tile_is_no_slower_than_any_other(self) -> None:
        unit = gpu()
        g = Gemm(1, 3000, 200, 500)
        best = plan_gemm(g, unit, "fp16", 0.85, 0, 0.0, 0.0)
        for t in CTA_TILES:
            r = ctas_per_cu(unit, t, "fp16")
            cycles, _ = gemm_cycles(g, t, unit, "fp16", 0.85, r)
            assert best.compute_ns <= cycles / (unit.clock_mhz * 1e-3) + 1e-6

    def test_concat_and_split_are_free(self) -> None:
        a, b = Tensor("a", (1, 8, 10, 10), "float32"), Tensor("b", (1, 8, 10, 10), "float32")
        cat = make_op("Concat", [a, b], [Tensor("c", (1, 16, 10, 10), "float32")], {"axis": 1})
        cost = estimate(cat, jetson(), "gpu", "fp16")
        assert cost is not None and cost.latency_ns == 0 and cost.dram_bytes == 0

    def test_elementwise_runs_on_cuda_cores(self) -> None:
        op = make_op(
            "Sigmoid",
            [Tensor("x", (1, 64, 80, 80), "float32")],
            [Tensor("y", (1, 64, 80, 80), "float32")],
        )
        slow = estimate(op, jetson(), "gpu", "fp16")
        fast = estimate(op, jetson(vector_flops_per_cycle={"fp16": 2048}), "gpu", "fp16")
        assert slow is not None and fast is not None
        assert slow.compute_ns == pytest.approx(8 * fast.compute_ns)

    def test_every_kernel_pays_the_launch_overhead(self) -> None:
        c = jetson()
        cost = estimate(conv(64, 64, 20), c, "gpu", "int8")
        assert cost is not None and cost.overhead_ns >= c.unit("gpu").op_overhead_ns


# ---------------------------------------------------------------- monotonicity
ops = st.one_of(
    st.builds(
        conv, st.integers(1, 96), st.integers(1, 96), st.integers(1, 48), st.sampled_from([1, 3])
    ),
    st.builds(matmul, st.integers(1, 600), st.integers(1, 600), st.integers(1, 600)),
    st.builds(
        lambda c, hw: make_op(
            "Sigmoid",
            [Tensor("x", (1, c, hw, hw), "float32")],
            [Tensor("y", (1, c, hw, hw), "float32")],
        ),
        st.integers(1, 64),
        st.integers(1, 64),
    ),
)


@settings(max_examples=40, deadline=None)
@given(
    op=ops,
    dtype=st.sampled_from(["int8", "fp16", "fp32"]),
    cus=st.integers(1, 16),
    more=st.integers(1, 8),
    clock=st.floats(200, 1500),
    faster=st.floats(1.0, 3.0),
)
def test_more_cus_or_higher_clock_is_never_slower(
    op: Op, dtype: str, cus: int, more: int, clock: float, faster: float
) -> None:
    base = estimate(op, jetson(compute_units=cus, clock_mhz=clock), "gpu", dtype)
    wider = estimate(op, jetson(compute_units=cus + more, clock_mhz=clock), "gpu", dtype)
    quicker = estimate(op, jetson(compute_units=cus, clock_mhz=clock * faster), "gpu", dtype)
    assert base is not None and wider is not None and quicker is not None
    assert wider.latency_ns <= base.latency_ns * (1 + 1e-9)
    assert quicker.latency_ns <= base.latency_ns * (1 + 1e-9)
    assert math.isfinite(base.latency_ns) and base.latency_ns > 0


# ---------------------------------------------------------------- published figures
DATA = DATA / "jetson_orin_nano_published.csv"
MODELS = ROOT / "examples" / "models"
MAXN_SUPER = [
    "gpu.clock_mhz=1020", "cpu.clock_mhz=1700", "dram.bandwidth_gbps=102", "gpu.mem_bandwidth_gbps=76.1",
]


def test_yolov8n_maxn_super_against_tensorrt() -> None:
    """fp16 is the one fitted row (op_overhead_ns): it must match; int8 and fp32 are held
    out and must stay within the errors docs/fidelity_gpu.md reports (-6 % and -19 %). The
    figures are trtexec's GPU compute time, kernels only: the GPU's active time, not the whole
    run with the input's copy to the GPU and the output's copy back."""
    rows = [
        r
        for r in csv.DictReader(
            ln for ln in DATA.read_text(encoding="utf-8").splitlines() if ln[:1] != "#"
        )
    ]
    published = {r["precision"]: float(r["ms"]) for r in rows if r["model"] == "yolov8n"}
    chip = restrict(override(load_chip("jetson_orin_nano"), MAXN_SUPER), "gpu")  # as TensorRT runs it
    graph = load_onnx(MODELS / "yolov8n.onnx")
    def kernels_ms(precision: str) -> float:
        result = run_graph(graph, chip, precision)
        active_ms = next(u.active_ms for u in result.analysis.units if u.unit == "gpu")
        assert active_ms < result.analysis.latency_ms  # the copies in and out are not kernels
        return active_ms

    err = {p: kernels_ms(p) / ms - 1 for p, ms in published.items()}
    assert abs(err["fp16"]) < 0.02
    assert abs(err["int8"]) < 0.10
    assert -0.20 < err["fp32"] < 0
