"""onnxruntime's arena replayed over a graph: reuse, memory pattern, and how long ago a kernel's
destination was last touched. Graphs are tiny and built here."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips.schema import CpuUnit, chip_from_dict
from cost_models.cpu import CODE_REFETCH_ATTR, CODE_REFETCH_NS, COLD_DST_ATTR, COLD_SRC_ATTR
from cost_models.cpu_layout import IN_PLACE_ATTR
from cost_models.table import estimate
from graph_ir.ir import Tensor
from hwsim.host.ort_arena import (
    arena_plan,
    code_reuse_bytes,
    cold_bytes,
    cold_destination_bytes,
    cold_source_bytes,
    destination_reuse,
    in_place,
    source_reuse,
)
from hwsim.host.ort_fusions import ort_fusions
from hwsim.host.validate import cache_residency, cpu_chip, predict_nodes
from tests.helpers import graph_from_ops, host_chip

KIB = 1024


def act(name: str, channels: int, hw: int = 32) -> Tensor:
    return Tensor(name, (1, channels, hw, hw), "float32")


def scalar(name: str) -> Tensor:
    return Tensor(name, (1,), "float32")


def concat_after_chain(chain_channels: int, chain: int = 2, y_channels: int = 128):
    """``Y = Relu(X)`` dies at once; a chain of Adds over ``chain_channels``; then ``C =
    Concat(A, B)`` of Y's shape, made from tensors made just before it (micro-model of the docs)."""
    x, x1, x2, z = act("X", y_channels), act("X1", 64), act("X2", 64), act("Z", chain_channels)
    ops = [("relu", "Relu", [x], [act("Y", y_channels)]), ("ry", "ReduceMax", [act("Y", y_channels)], [scalar("y1")]),
           ("c0", "Add", [z, scalar("y1")], [act("t0", chain_channels)])]  # fmt: skip
    for i in range(chain):
        ops.append(
            (
                f"c{i + 1}",
                "Add",
                [act(f"t{i}", chain_channels)] * 2,
                [act(f"t{i + 1}", chain_channels)],
            )
        )
    ops += [("rw", "ReduceMax", [act(f"t{chain}", chain_channels)], [scalar("v")]),
            ("a", "Add", [x1, scalar("v")], [act("A", 64)]), ("b", "Add", [x2, scalar("v")], [act("B", 64)]),
            ("concat", "Concat", [act("A", 64), act("B", 64)], [act("C", 128)]),
            ("rc", "ReduceMax", [act("C", 128)], [scalar("out")])]  # fmt: skip
    return graph_from_ops("m", [x, x1, x2, z], ops)


def erf_gelu(prefix: str, x: Tensor, y: Tensor) -> list[tuple]:
    """The five nodes of an exported Erf-Gelu ``y = x * 0.5 * (1 + erf(x / sqrt 2))``."""
    c = [Tensor(n, (1,), "float32", is_weight=True) for n in ("sqrt2", "one", "half")]
    d, e, e1, m = (Tensor(f"{prefix}.{n}", x.shape, x.dtype) for n in ("d", "e", "e1", "m"))
    return [(f"{prefix}.div", "Div", [x, c[0]], [d]), (f"{prefix}.erf", "Erf", [d], [e]),
            (f"{prefix}.add", "Add", [e, c[1]], [e1]), (f"{prefix}.mul", "Mul", [x, e1], [m]),
            (f"{prefix}.mul2", "Mul", [m, c[2]], [y])]  # fmt: skip


class TestArenaPlan:
    def test_empty_graph(self) -> None:
        plan = arena_plan(graph_from_ops("e", [act("x", 4)], []))
        assert plan.kernels == () and plan.offsets == {} and plan.peak_bytes == 0

    def test_same_shape_tensor_takes_the_freed_buffer(self) -> None:
        plan = arena_plan(concat_after_chain(64))
        assert (
            plan.offsets["C"] == plan.offsets["Y"] and plan.offsets["A"][0] != plan.offsets["C"][0]
        )

    def test_activation_writes_over_its_dying_input_and_views_share(self) -> None:
        x = act("x", 8)
        g = graph_from_ops("g", [x], [
            ("add", "Add", [x, x], [act("a", 8)]), ("relu", "Relu", [act("a", 8)], [act("r", 8)]),
            ("flat", "Flatten", [act("r", 8)], [Tensor("f", (1, 8 * 32 * 32), "float32")]),
            ("neg", "Neg", [Tensor("f", (1, 8 * 32 * 32), "float32")], [Tensor("n", (1, 8 * 32 * 32), "float32")]),
        ])  # fmt: skip
        plan = arena_plan(g)
        assert plan.offsets["r"] == plan.offsets["a"] and plan.offsets["f"] == plan.offsets["a"]
        assert "n" not in plan.offsets and [k.name for k in plan.kernels] == ["add", "relu", "neg"]

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["Relu", "Add", "Concat", "Gelu"]), st.integers(1, 8), st.integers(0, 99),
                              st.integers(0, 99)), min_size=1, max_size=25))  # fmt: skip
    def test_tensors_alive_together_never_share_memory(
        self, steps: list[tuple[str, int, int, int]]
    ) -> None:
        # "Gelu": an exported Erf-Gelu, five nodes onnxruntime runs as one kernel the plan places
        tensors = [act("x", 4, 8)]
        ops = []
        for i, (kind, ch, a, b) in enumerate(steps):
            p, q = tensors[a % len(tensors)], tensors[b % len(tensors)]
            if kind == "Gelu":
                ops += erf_gelu(f"g{i}", p, act(f"t{i}", p.shape[1], 8))
                tensors.append(act(f"t{i}", p.shape[1], 8))
                continue
            if kind == "Relu":
                out, ins = act(f"t{i}", p.shape[1], 8), [p]
            elif kind == "Add":
                out, ins = act(f"t{i}", p.shape[1], 8), [p, p]
            else:
                out, ins = act(f"t{i}", p.shape[1] + q.shape[1], 8), [p, q]
            ops.append((f"op{i}", kind, ins, [out]))
            tensors.append(out)
            del ch
        graph = graph_from_ops("r", [tensors[0]], ops)
        fusions = ort_fusions(graph)
        assert len(fusions) == sum(kind == "Gelu" for kind, *_ in steps)
        plan = arena_plan(graph, {m for f in fusions for m in f.members}, [f.kernel for f in fusions])
        made = {t.name: i for i, k in enumerate(plan.kernels) for t in k.writes}
        last = dict(made)
        for i, k in enumerate(plan.kernels):
            last.update((t.name, i) for t in k.reads if t.name in made)
        arena = [n for n in made if n in plan.offsets]
        for m in arena:
            for n in arena:
                (om, sm), (on, sn) = plan.offsets[m], plan.offsets[n]
                if m != n and made[m] <= made[n] < last[m]:
                    assert om + sm <= on or on + sn <= om, (m, n)
        assert all(o + s <= plan.peak_bytes for o, s in plan.offsets.values())
        for k in plan.kernels:  # every part of a destination is accounted for once
            pieces = destination_reuse(plan, k.name, run_bytes=1000.0)
            assert sum(n for n, _ in pieces) == k.writes[0].nbytes and all(
                d >= 0 for _, d in pieces
            )
            colds = [
                cold_destination_bytes(plan, k.name, c, 1000.0)
                for c in (0.0, 4 * KIB, 64 * KIB, 1e12)
            ]
            assert colds == sorted(colds, reverse=True)
            assert colds[-1] == (
                0 if k.writes[0].name in plan.offsets else k.writes[0].nbytes
            )  # outputs: unknown


class TestDestinationReuse:
    def test_a_chain_that_fits_the_cache_leaves_the_destination_warm(self) -> None:
        # the chain keeps touching two 256 KiB buffers (and Z): about 1 MiB of distinct bytes
        plan = arena_plan(concat_after_chain(64, chain=16))
        ((size, distance),) = destination_reuse(plan, "concat")
        assert size == 512 * KIB and distance < 1.5 * 1024 * KIB
        assert cold_destination_bytes(plan, "concat", 1.9 * 1024 * KIB) == 0

    def test_a_wide_chain_leaves_it_cold(self) -> None:
        plan = arena_plan(concat_after_chain(256, chain=2))  # 1 MiB tensors: 3 MiB distinct
        ((size, distance),) = destination_reuse(plan, "concat")
        assert distance > 3 * 1024 * KIB
        assert cold_destination_bytes(plan, "concat", 1.9 * 1024 * KIB) == size == 512 * KIB

    def test_region_first_touched_later_wraps_to_the_previous_run(self) -> None:
        x = act("x", 8)
        g = graph_from_ops("g", [x], [("a", "Add", [x, x], [act("a", 8)]), ("b", "Concat", [act("a", 8)] * 2,
                                      [act("b", 16)]), ("c", "Neg", [act("b", 16)], [act("c", 16)])])  # fmt: skip
        plan = arena_plan(g)
        near = destination_reuse(plan, "b", run_bytes=0.0)
        far = destination_reuse(plan, "b", run_bytes=1e9)
        assert sum(n for n, _ in near) == sum(n for n, _ in far) == act("b", 16).nbytes
        assert max(d for _, d in far) >= 1e9 > max(d for _, d in near)


class TestPricedInValidate:
    def test_cold_concat_costs_more_and_the_extra_is_its_stall(self) -> None:
        chip = chip_from_dict(host_chip())
        unit = cpu_chip(chip, 1).units[0]
        for channels, cold in ((64, False), (256, True)):
            graph = concat_after_chain(channels, chain=2 if cold else 16)
            marked = {n: m for n, m in cache_residency(graph, unit).items() if COLD_DST_ATTR in m}
            assert ("concat" in marked) == cold
            if cold:
                assert marked["concat"][COLD_DST_ATTR] == 512 * KIB
            pred = predict_nodes(graph, cpu_chip(chip, 1), 1, set())["concat"]
            assert (pred.stall_ns > 0) == cold


def conv_then_pool(out_channels: int, cin: int = 256, hw: int = 7):
    """``Y = Conv(X, W)`` (1x1, ``cin -> out_channels``: its weights streamed while it writes Y),
    then ``G = GlobalAveragePool(Y)``, ``N = Neg(G)``."""
    x, y = act("X", cin, hw), act("Y", out_channels, hw)
    w = Tensor("W", (out_channels, cin, 1, 1), "float32", is_weight=True)
    g = Tensor("G", (1, out_channels, 1, 1), "float32")
    return graph_from_ops("cp", [x], [("conv", "Conv", [x, w], [y]), ("gap", "GlobalAveragePool", [y], [g]),
                                      ("neg", "Neg", [g], [Tensor("N", (1, out_channels, 1, 1), "float32")])])  # fmt: skip


class TestSourceReuse:
    def test_an_input_just_written_lies_within_its_producers_traffic(self) -> None:
        plan = arena_plan(conv_then_pool(1024))  # 1 MiB of weights, 200 KiB of input
        pieces = source_reuse(plan, "gap")
        assert sum(n for n, _ in pieces) == act("Y", 1024, 7).nbytes
        traffic = 1024 * 256 * 4 + act("X", 256, 7).nbytes
        assert max(d for _, d in pieces) == traffic * 7 / 8 and min(d for _, d in pieces) == traffic / 8

    def test_a_heavy_producer_leaves_the_first_lines_it_wrote_cold(self) -> None:
        light, heavy = arena_plan(conv_then_pool(256)), arena_plan(conv_then_pool(4096))  # 0.25 / 4 MiB of weights
        cache = 1.9 * 1024 * KIB
        assert cold_source_bytes(light, "gap", cache) == 0
        assert 0 < cold_source_bytes(heavy, "gap", cache) < act("Y", 4096, 7).nbytes

    def test_a_graph_input_is_cold_and_each_tensor_counts_once(self) -> None:
        x = act("x", 8)
        plan = arena_plan(graph_from_ops("g", [x], [("add", "Add", [x, x], [act("a", 8)])]))
        assert cold_source_bytes(plan, "add", 1e12) == x.nbytes

    @settings(max_examples=40, deadline=None)
    @given(st.integers(1, 64), st.lists(st.floats(0, 1e7), min_size=2, max_size=2))
    def test_cold_bytes_fall_with_the_cache_and_stay_within_the_inputs(self, c: int, caches: list[float]) -> None:
        plan = arena_plan(concat_after_chain(c * 4, chain=2))
        small, big = sorted(caches)
        for k in plan.kernels:
            inputs = sum({t.name: t.nbytes for t in k.reads if not t.is_weight}.values())
            assert inputs >= cold_source_bytes(plan, k.name, small) >= cold_source_bytes(plan, k.name, big) >= 0


class TestColdBytes:
    @given(st.lists(st.tuples(st.integers(0, 10**6), st.floats(0, 1e8)), max_size=8), st.floats(1, 1e7))
    def test_the_ramp_counts_no_more_than_the_step_nor_less_than_the_step_at_twice_the_cache(
        self, pieces: list[tuple[int, float]], cache: float
    ) -> None:
        step, ramp = cold_bytes(pieces, cache), cold_bytes(pieces, cache, ramp=True)
        assert cold_bytes(pieces, 2 * cache) - len(pieces) <= ramp <= step + len(pieces)


class TestResidencyMarks:
    def test_streaming_kernels_are_marked_with_their_cold_inputs_and_destinations(self) -> None:
        unit = cpu_chip(chip_from_dict(host_chip()), 1).units[0]
        marks = cache_residency(conv_then_pool(256), unit)
        assert "conv" not in marks and marks["gap"][COLD_SRC_ATTR] == 0  # no streaming kernel; a warm input
        assert marks["neg"][COLD_DST_ATTR] == 1024  # a graph output: outside the arena
        heavy = cache_residency(conv_then_pool(4096), unit)
        assert heavy["gap"][COLD_SRC_ATTR] > 0

    def test_a_cold_input_makes_a_stall_in_the_prediction(self) -> None:
        chip = chip_from_dict(host_chip())
        light = predict_nodes(conv_then_pool(256), cpu_chip(chip, 1), 1, set())["gap"]
        heavy = predict_nodes(conv_then_pool(4096), cpu_chip(chip, 1), 1, set())["gap"]
        assert light.stall_ns == 0 < heavy.stall_ns

    def test_a_graph_input_the_runs_traffic_evicts_comes_from_dram(self) -> None:
        # a ScatterND copying a 3 MiB cache fed as an input, beside w MiB of GEMV weights, 16 MiB of
        # L3: with 1 MiB everything stays; with 24 MiB the run's cyclic pass keeps none of it
        from cost_models.cpu import FAR_SRC_ATTR

        def scatter(weight_mib: int) -> tuple:
            kv, idx, upd = Tensor("kv", (768, 1024), "float32"), Tensor("i", (1, 1), "int64", True), Tensor("u", (1, 1024), "float32")
            x, out = Tensor("x", (1, 1024), "float32"), Tensor("kv2", (768, 1024), "float32")
            ops = [("put", "ScatterND", [kv, idx, upd], [out]), ("neg", "Neg", [out], [Tensor("n", out.shape, "float32")])]
            ops += [(f"fc{i}", "MatMul", [x, Tensor(f"w{i}", (1024, 256), "float32", True)], [Tensor(f"y{i}", (1, 256), "float32")])
                    for i in range(weight_mib)]  # fmt: skip
            return graph_from_ops("s", [kv, upd, x], ops)

        chip = cpu_chip(chip_from_dict(host_chip(l2_kib=512, l3_kib=16384, gemv_gbps=90.0)), 1)
        unit = chip.units[0]
        assert FAR_SRC_ATTR not in cache_residency(scatter(1), unit).get("put", {})
        assert cache_residency(scatter(24), unit)["put"][FAR_SRC_ATTR] == (768 + 1) * 1024 * 4  # the cache and the update
        light, heavy = (predict_nodes(scatter(w), chip, 1, set())["put"].predicted_ns for w in (1, 24))
        assert heavy > light + 768 * 1024 * 4 * (1 / chip.dram.bandwidth_gbps - 1 / unit.l3_bandwidth_gbps) * 0.9

    def test_integer_kernels_keep_their_probes_rates(self) -> None:
        unit = cpu_chip(chip_from_dict(host_chip()), 1).units[0]
        x, y = Tensor("x", (1, 8, 32, 32), "uint8"), Tensor("y", (1, 8, 32, 32), "uint8")
        graph = graph_from_ops("q", [x], [("relu", "Relu", [x], [y]), ("neg", "Neg", [y], [Tensor("n", y.shape, "uint8")])])
        assert cache_residency(graph, unit) == {}


def matmul_gelu(weight_cols: int) -> tuple:
    """``H = X W`` (``X`` 128 x 256, ``W`` 256 x ``weight_cols``), then an exported Erf-Gelu of
    ``H`` (five nodes onnxruntime runs as one ``Gelu``) into a Neg."""
    x = Tensor("X", (128, 256), "float32")
    w = Tensor("W", (256, weight_cols), "float32", is_weight=True)
    h, y = (Tensor(n, (128, weight_cols), "float32") for n in ("H", "Y"))
    ops = [("mm", "MatMul", [x, w], [h]), *erf_gelu("gelu", h, y), ("neg", "Neg", [y], [Tensor("N", y.shape, "float32")])]
    graph = graph_from_ops("mg", [x], ops)
    (fusion,) = ort_fusions(graph)
    return graph, fusion


class TestFusionKernels:
    def test_the_fusion_runs_where_its_output_was_made_reading_what_its_members_read(self) -> None:
        graph, gelu = matmul_gelu(512)
        plan = arena_plan(graph, gelu.members, [gelu.kernel])
        names = [k.name for k in plan.kernels]
        assert names == ["mm", gelu.kernel.name, "neg"]
        (kernel,) = (k for k in plan.kernels if k.name == gelu.kernel.name)
        assert [t.name for t in kernel.reads] == ["H"] and [t.name for t in kernel.writes] == ["Y"]
        assert "Y" in plan.offsets and plan.offsets["Y"][0] != plan.offsets["H"][0]  # its own buffer, H still read

    def test_a_gelu_after_a_weight_stream_finds_its_input_cold_and_pays_a_stall(self) -> None:
        # BERT's FFN: its input written while 9 MiB of weights streamed; a small MatMul's is warm
        chip = cpu_chip(chip_from_dict(host_chip(l2_kib=1024)), 1)
        stalls = []
        for cols in (256, 8192):
            graph, gelu = matmul_gelu(cols)
            marks = cache_residency(graph, chip.units[0], gelu.members, [gelu.kernel])
            pred = predict_nodes(graph, chip, 1, set(gelu.members), inserted=[gelu.kernel], absorbed=gelu.members)
            stalls.append((marks[gelu.kernel.name][COLD_SRC_ATTR], pred[gelu.kernel.name].stall_ns))
        assert stalls[0] == (0, 0.0) and stalls[1][0] > 0 and stalls[1][1] > 0


def two_gaps(between_channels: int) -> tuple:
    """``G1 = GAP(X)``, then a 1x1 conv ``64 -> between_channels`` on ``X``, then ``G2 = GAP(Y)``
    (into a Neg: its destination in the arena)."""
    x, y = act("X", 64, 14), act("Y", between_channels, 14)
    w = Tensor("W", (between_channels, 64, 1, 1), "float32", is_weight=True)
    g1, g2 = Tensor("G1", (1, 64, 1, 1), "float32"), Tensor("G2", (1, between_channels, 1, 1), "float32")
    return graph_from_ops("gg", [x], [("gap1", "GlobalAveragePool", [x], [g1]), ("conv", "Conv", [x, w], [y]),
                                      ("gap2", "GlobalAveragePool", [y], [g2]),
                                      ("neg", "Neg", [g2], [Tensor("N", g2.shape, "float32")])]), (x, w, y, g1, g2)  # fmt: skip


class TestCodeReuse:
    """What the run streams between two calls of a kernel type's code (``code_reuse_bytes``)."""

    def test_the_next_kernel_of_the_type_sees_what_ran_between(self) -> None:
        graph, (x, w, y, _g1, g2) = two_gaps(256)
        plan = arena_plan(graph)
        assert code_reuse_bytes(plan, "gap2") == x.nbytes + w.nbytes + y.nbytes  # the conv's reads and writes
        g2b = g2.nbytes  # the Neg after gap2 reads G2 and writes N, then the run call ends
        assert code_reuse_bytes(plan, "gap1", run_bytes=1000.0) == 1000.0 + 2 * g2b

    def test_the_only_kernel_of_its_type_sees_the_whole_run(self) -> None:
        plan = arena_plan(conv_then_pool(1024))
        total = sum({t.name: t.nbytes for k in plan.kernels if k.name != "gap" for t in (*k.reads, *k.writes)}.values())
        assert code_reuse_bytes(plan, "gap", run_bytes=500.0) == total + 500.0

    @settings(max_examples=30, deadline=None)
    @given(st.integers(1, 64), st.floats(0, 1e7))
    def test_it_never_exceeds_the_run_and_grows_with_the_run_call(self, c: int, run: float) -> None:
        plan = arena_plan(concat_after_chain(c * 4, chain=2))
        total = sum({t.name: t.nbytes for k in plan.kernels for t in (*k.reads, *k.writes)}.values())
        for k in plan.kernels:
            alone = code_reuse_bytes(plan, k.name)
            assert 0 <= alone <= code_reuse_bytes(plan, k.name, run) <= total + run

    def test_only_gaps_are_marked_with_it(self) -> None:
        unit = cpu_chip(chip_from_dict(host_chip()), 1).units[0]
        graph, (x, w, y, _g1, _g2) = two_gaps(2048)
        marks = cache_residency(graph, unit)
        assert marks["gap2"][CODE_REFETCH_ATTR] == x.nbytes + w.nbytes + y.nbytes
        assert CODE_REFETCH_ATTR not in marks.get("conv", {})
        heavy = cache_residency(conv_then_pool(4096), unit)
        assert CODE_REFETCH_ATTR not in heavy["neg"] and heavy["gap"][CODE_REFETCH_ATTR] > 4096 * 256 * 4

    def test_a_gap_after_a_long_stream_pays_its_code_in_the_prediction(self) -> None:
        chip = cpu_chip(chip_from_dict(host_chip()), 1)
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        graph, (x, w, y, _g1, _g2) = two_gaps(8192)  # 2 MiB of weights and a 6.3 MiB output between the calls
        pred = predict_nodes(graph, chip, 1, set())["gap2"]
        marks = cache_residency(graph, unit)["gap2"]
        op = graph.op("gap2")
        priced = [estimate(replace(op, attrs={**op.attrs, **m}), chip, unit.name, "model")
                  for m in (marks, {k: v for k, v in marks.items() if k != CODE_REFETCH_ATTR})]  # fmt: skip
        assert priced[0] is not None and priced[1] is not None
        code = CODE_REFETCH_NS * math.log2((x.nbytes + w.nbytes + y.nbytes) / (unit.l2_kib * 1024))
        assert pred.stall_ns == pytest.approx(priced[0].stall_ns)
        assert code > 0 and priced[0].stall_ns - priced[1].stall_ns == pytest.approx(code)
        assert predict_nodes(two_gaps(64)[0], chip, 1, set())["gap2"].stall_ns == 0


def scores_softmax(row: int, extra_reader: bool = False, dtype: str = "float32", last: bool = False):
    """``s = Mul(x, c)``, ``p = Softmax(s)`` over rows of ``row``, then ``Neg(p)`` (or ``p`` a graph
    output with ``last``); with ``extra_reader`` a ReduceMax also reads ``s`` after the Softmax."""
    x, s, p, n = (Tensor(k, (1, 4, 64, row), dtype) for k in ("x", "s", "p", "n"))
    ops = [("scale", "Mul", [x, scalar("c")], [s]), ("softmax", "Softmax", [s], [p])]  # over the last axis
    ops += [] if last else [("neg", "Neg", [p], [n])]
    ops += [("rs", "ReduceMax", [s], [scalar("m")])] if extra_reader else []
    return graph_from_ops("attn", [x], ops)


class TestSoftmaxInPlace:
    def _kernel(self, graph, name: str = "softmax"):
        plan = arena_plan(graph)
        return plan, next(k for k in plan.kernels if k.name == name)

    def test_a_float_softmax_writes_over_scores_nothing_else_reads(self) -> None:
        assert in_place(*self._kernel(scores_softmax(42)))

    @pytest.mark.parametrize("graph", [scores_softmax(42, extra_reader=True), scores_softmax(42, dtype="float64"),
                                       scores_softmax(42, last=True)], ids=["read-after", "double", "graph-output"])  # fmt: skip
    def test_not_where_the_scores_are_read_again_its_kernel_is_doubles_or_its_output_leaves_the_arena(self, graph) -> None:
        assert not in_place(*self._kernel(graph))

    def test_the_mark_follows_the_plan(self) -> None:
        unit = cpu_chip(chip_from_dict(host_chip()), 1).units[0]
        assert cache_residency(scores_softmax(42), unit)["softmax"][IN_PLACE_ATTR] == 1
        assert IN_PLACE_ATTR not in cache_residency(scores_softmax(42, extra_reader=True), unit).get("softmax", {})

    def test_in_place_rows_with_a_partial_vector_cost_more_in_the_prediction(self) -> None:
        tails = {"vector_floats": 16, "softmax_tail_ns": 3.0, "softmax_tail_element_ns": 0.4, "softmax_in_place_tail_ns": 12.0}
        chip = cpu_chip(chip_from_dict(host_chip(**tails)), 1)
        plain = cpu_chip(chip_from_dict(host_chip()), 1)
        rows = 4 * 64

        def extra(graph):
            return predict_nodes(graph, chip, 1, set())["softmax"].predicted_ns - predict_nodes(graph, plain, 1, set())["softmax"].predicted_ns

        assert extra(scores_softmax(42)) == pytest.approx(rows * (3.0 + 10 * 0.4 + 12.0))
        assert extra(scores_softmax(42, extra_reader=True)) == pytest.approx(rows * (3.0 + 10 * 0.4))
        assert extra(scores_softmax(48)) == 0.0
