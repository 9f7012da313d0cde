"""Engine fidelity: double-buffered tiles, ops split across cores, frames streamed, power over time.

Timing tests use hand-made costs (a :class:`CostTable` written out here) so the expected times
are plain arithmetic, or the cost model's own shard costs where quantization is the point.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from cost_models import cost_table
from cost_models.base import OpCost
from cost_models.npu import array_cycles
from cost_models.table import CostTable, estimate
from graph_ir.ir import Tensor
from hwsim.analysis.analyze import analyze
from hwsim.analysis.energy import power_timeline
from hwsim.analysis.frames import frame_stats
from hwsim.cli import main
from hwsim.sim.engine import (
    PS_PER_NS,
    EngineOptions,
    SimulationError,
    op_blocks,
    op_time_ns,
    simulate,
)
from hwsim.sim.splitting import shard_cost, shard_op
from tests.helpers import fixed_schedule, graph_from_ops, two_cpu_chip

X = (1, 8, 16, 16)


def _chain(n: int = 1):
    x = Tensor("x", X, "float32")
    ops, prev = [], x
    for i in range(n):
        y = Tensor(f"y{i}", X, "float32")
        ops.append((f"op{i}", "Relu", [prev], [y]))
        prev = y
    return graph_from_ops("chain", [x], ops)


def _table(costs: dict[str, OpCost]) -> CostTable:
    return CostTable("int8", {op: {c.unit: c for c in [cost]} for op, cost in costs.items()})


def _cost(unit: str, compute_ns: float, read_b: int = 0, write_b: int = 0, ns_per_byte: float = 0.2,
          overhead_ns: float = 100.0, tiles: int = 1) -> OpCost:  # fmt: skip
    mem = (read_b + write_b) * ns_per_byte
    return OpCost(unit, "int8", compute_ns, mem, overhead_ns, read_b, write_b, 0.0, "", tiles)


class TestDoubleBuffering:
    # 8000 B read and 2000 B written at 0.2 ns/B (5 GB/s, half the DRAM), 4000 ns of compute,
    # 4 tiles: L = 400 ns, S = 100 ns, c = 1000 ns per tile.
    COST = _cost("cpu0", 4000.0, 8000, 2000, tiles=4)

    def _run(self, cost: OpCost, options: EngineOptions | None = None):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=10.0))
        g = _chain()
        table = _table({"op0": cost})
        return simulate(
            g, chip, table, fixed_schedule(g, chip, table, {"op0": ("cpu0", 0)}), options
        )

    @pytest.mark.parametrize("double_buffer", [True, False])
    def test_a_finely_tiled_op_is_a_few_blocks_with_the_exact_time(self, double_buffer):
        # fine tiling (one array fold at a time) can mean millions of tiles
        fine = _cost("cpu0", 4000.0, 8000, 2000, tiles=10**7)
        blocks = op_blocks(fine, double_buffer)
        assert len(blocks) <= 24
        assert sum(b.bytes for b in blocks) == 10000
        # tile by tile: every load, compute and store in turn, whatever the tile count
        expected = 100 + 4000 + 2000 if not double_buffer else 100 + 4000
        assert op_time_ns(fine, double_buffer) == pytest.approx(expected, abs=1)

    def test_tiled_op_alone_takes_the_pipelined_time(self):
        rec = self._run(self.COST).ops[0]
        # overhead + L + max(c, L) + (T-2) max(c, L+S) + max(c, S) + S
        expected_ns = 100 + 400 + 1000 + 2 * 1000 + 1000 + 100
        assert op_time_ns(self.COST) == expected_ns
        assert rec.duration_ps == pytest.approx(expected_ns * PS_PER_NS, abs=5)
        assert rec.tiles == 4

    def test_without_double_buffering_each_tile_loads_computes_stores_in_turn(self):
        rec = self._run(self.COST, EngineOptions(double_buffer=False)).ops[0]
        expected_ns = 100 + 4 * (400 + 1000 + 100)
        assert op_time_ns(self.COST, double_buffer=False) == expected_ns
        assert rec.duration_ps == pytest.approx(expected_ns * PS_PER_NS, abs=15)

    def test_memory_bound_tiles_are_paced_by_their_loads(self):
        cost = _cost("cpu0", 400.0, 8000, 2000, tiles=4)  # c = 100 ns < L + S = 500 ns
        expected_ns = 100 + 400 + 400 + 2 * 500 + 100 + 100
        assert op_time_ns(cost) == expected_ns
        assert self._run(cost).ops[0].duration_ps == pytest.approx(expected_ns * PS_PER_NS, abs=5)

    def test_two_tiles(self):
        cost = _cost("cpu0", 2000.0, 8000, 2000, tiles=2)  # L = 800, S = 200, c = 1000
        assert op_time_ns(cost) == 100 + 800 + 1000 + 1000 + 200

    def test_an_untiled_op_is_one_block_of_its_cost_model_latency(self):
        cost = _cost("cpu0", 4000.0, 8000, 2000)
        assert op_time_ns(cost) == cost.latency_ns
        assert self._run(cost).ops[0].duration_ps == pytest.approx(
            cost.latency_ns * PS_PER_NS, abs=2
        )

    def test_next_load_overlaps_current_compute_in_the_phases(self):
        rec = self._run(self.COST).ops[0]
        compute = [p for p in rec.phases if p.kind == "compute"]
        memory = [p for p in rec.phases if p.kind == "memory"]
        assert [p.tiles for p in compute] == ["0", "1-2", "3"]
        assert [p.tiles for p in memory] == ["load 0", "0", "1-2", "3", "store 3"]
        # the first load is exposed: it starts after the overhead and ends before any compute
        assert memory[0].start_ps == rec.start_ps + 100 * PS_PER_NS
        assert compute[0].start_ps == memory[0].end_ps
        # tile 1's load runs alongside tile 0's compute
        assert (
            memory[1].start_ps == compute[0].start_ps and memory[1].end_ps <= compute[0].end_ps + 1
        )
        assert memory[-1].end_ps == rec.end_ps  # the last store is exposed
        assert sum(p.bytes for p in memory) == 10_000 == rec.dram_bytes

    def test_bytes_of_blocks_add_up_for_any_tiling(self):
        for tiles in range(1, 9):
            cost = _cost("cpu0", 1000.0, 1001, 333, tiles=tiles)
            for db in (True, False):
                assert sum(b.bytes for b in op_blocks(cost, db)) == 1334

    def test_cost_model_tiles_reach_the_engine(self):
        # a MatMul whose 1 MiB of weights cannot fit a 64 KiB buffer is tiled by the NPU model
        data = two_cpu_chip()
        data["units"].append(
            {"name": "npu", "kind": "npu", "domain": "a", "clock_mhz": 1000, "mac_rows": 16,
             "mac_cols": 16, "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 64}
        )  # fmt: skip
        chip = chip_from_dict(data)
        a = Tensor("a", (1, 256, 1024), "float32")
        w = Tensor("w", (1024, 1024), "float32", is_weight=True)
        g = graph_from_ops(
            "mm", [a], [("mm", "MatMul", [a, w], [Tensor("y", (1, 256, 1024), "float32")])]
        )
        table = cost_table(g, chip, "int8")
        cost = table.costs["mm"]["npu"]
        assert cost.tiles > 2
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"mm": ("npu", 0)}))
        assert trace.ops[0].tiles == cost.tiles
        assert trace.ops[0].duration_ps == pytest.approx(op_time_ns(cost) * PS_PER_NS, abs=10)
        assert op_time_ns(cost) < op_time_ns(cost, double_buffer=False)


def _npu_chip(cores: int = 3, split_overhead_ns: float = 500.0, split_ops=("MatMul",)):
    data = two_cpu_chip(dram_gbps=100.0, port_gbps=100.0)
    data["units"].append(
        {"name": "npu", "kind": "npu", "domain": "a", "clock_mhz": 1000, "cores": cores, "mac_rows": 32,
         "mac_cols": 32, "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 4096, "op_overhead_ns": 1000,
         "split_ops": list(split_ops), "split_overhead_ns": split_overhead_ns}
    )  # fmt: skip
    return chip_from_dict(data)


def _matmuls(n: int = 1, m: int = 100):
    a = Tensor("a", (1, m, 512), "float32")
    ops = []
    for i in range(n):
        w = Tensor(f"w{i}", (512, 256), "float32", is_weight=True)
        ops.append((f"mm{i}", "MatMul", [a, w], [Tensor(f"y{i}", (1, m, 256), "float32")]))
    return graph_from_ops("mms", [a], ops)


def _with_cores(schedule, cores: dict[str, int]):
    placements = {
        n: dataclasses.replace(p, cores=cores.get(n, p.cores))
        for n, p in schedule.placements.items()
    }
    return dataclasses.replace(schedule, placements=placements)


class TestLockstep:
    """``core_mode: lockstep``: the unit's cores run one op at a time, splitting what they can."""

    def _run(self, mode: str):
        data = _npu_chip(split_ops=("MatMul",)).model_dump()
        data["units"][-1]["core_mode"] = mode
        chip = chip_from_dict(data)
        g = _matmuls(n=3)
        # each MatMul on its own core: independent cores run them side by side
        table = cost_table(g, chip, "int8")
        where = {f"mm{i}": ("npu", i) for i in range(3)}
        return simulate(g, chip, table, fixed_schedule(g, chip, table, where))

    def test_independent_cores_run_different_ops_at_once(self):
        ops = self._run("independent").ops
        assert [r.all_cores for r in ops] == [(0,), (1,), (2,)]
        assert len({r.start_ps for r in ops}) == 1

    def test_lockstep_cores_split_each_op_and_run_them_in_turn(self):
        ops = sorted(self._run("lockstep").ops, key=lambda r: r.start_ps)
        assert [r.op for r in ops] == ["mm0", "mm1", "mm2"]
        assert all(r.core == 0 and r.all_cores == (0, 1, 2) for r in ops)
        assert all(a.end_ps <= b.start_ps for a, b in itertools.pairwise(ops))

    def test_lockstep_runs_an_unsplittable_op_on_core_0_alone(self):
        data = _npu_chip(split_ops=("Conv",)).model_dump()
        data["units"][-1]["core_mode"] = "lockstep"
        chip = chip_from_dict(data)
        g = _matmuls(n=2)
        table = cost_table(g, chip, "int8")
        s = fixed_schedule(g, chip, table, {"mm0": ("npu", 1), "mm1": ("npu", 2)})
        ops = sorted(simulate(g, chip, table, s).ops, key=lambda r: r.start_ps)
        assert [r.all_cores for r in ops] == [(0,), (0,)]
        assert ops[0].end_ps <= ops[1].start_ps


class TestSplit:
    def test_shard_is_a_gemm_slice_with_quantization(self):
        chip = _npu_chip()
        g = _matmuls(m=100)
        op = g.op("mm0")
        shard = shard_op(op, 3)
        assert shard is not None
        assert shard.outputs[0].shape == (1, 34, 256) and shard.inputs[0].shape == (1, 34, 512)
        assert shard.inputs[1].shape == (512, 256)  # every core reads all the weights
        cost = shard_cost(op, chip.unit("npu"), chip, "int8", 3)
        assert cost is not None
        # 34 rows through 16 folds of the 32x32 array, each paying fill and drain
        assert cost.compute_ns == pytest.approx(array_cycles((1, 34, 256, 512), 32, 32))
        alone = estimate(shard, chip, "npu", "int8")
        assert alone is not None and cost.overhead_ns == alone.overhead_ns + 500.0

    def test_a_lone_splittable_op_runs_on_every_core_in_its_split_time(self):
        chip = _npu_chip()
        g = _matmuls()
        table = cost_table(g, chip, "int8")
        trace = simulate(g, chip, table, fixed_schedule(g, chip, table, {"mm0": ("npu", 0)}))
        rec = trace.ops[0]
        assert rec.all_cores == (0, 1, 2)
        shard = shard_cost(g.op("mm0"), chip.unit("npu"), chip, "int8", 3)
        assert shard is not None
        # split overhead + the shard's own latency (its overhead included)
        assert rec.duration_ps == pytest.approx(shard.latency_ns * PS_PER_NS, abs=2)
        assert rec.duration_ps < table.costs["mm0"]["npu"].latency_ns * PS_PER_NS
        assert rec.dram_bytes == 3 * shard.dram_bytes  # weights read by each core

    def test_no_split_option_and_unsplittable_types_keep_one_core(self):
        chip = _npu_chip()
        g = _matmuls()
        table = cost_table(g, chip, "int8")
        s = fixed_schedule(g, chip, table, {"mm0": ("npu", 0)})
        rec = simulate(g, chip, table, s, EngineOptions(split=False)).ops[0]
        assert rec.all_cores == (0,)
        assert rec.duration_ps == pytest.approx(
            table.costs["mm0"]["npu"].latency_ns * PS_PER_NS, abs=2
        )
        chip2 = _npu_chip(split_ops=("Conv",))
        table2 = cost_table(g, chip2, "int8")
        assert (
            simulate(g, chip2, table2, fixed_schedule(g, chip2, table2, {"mm0": ("npu", 0)}))
            .ops[0]
            .cores
            == ()
        )

    def test_split_is_skipped_when_its_overhead_outweighs_it(self):
        chip = _npu_chip(split_overhead_ns=1e6)
        g = _matmuls()
        table = cost_table(g, chip, "int8")
        assert (
            simulate(g, chip, table, fixed_schedule(g, chip, table, {"mm0": ("npu", 0)}))
            .ops[0]
            .cores
            == ()
        )

    def test_split_cores_all_takes_every_idle_core_even_where_one_is_faster(self):
        data = _npu_chip(split_overhead_ns=1e6).model_dump()
        data["units"][-1]["split_cores"] = "all"
        chip = chip_from_dict(data)
        g = _matmuls()
        table = cost_table(g, chip, "int8")
        rec = simulate(g, chip, table, fixed_schedule(g, chip, table, {"mm0": ("npu", 0)})).ops[0]
        assert rec.all_cores == (0, 1, 2)  # what RKNN's multi-core mode does, the overhead notwithstanding
        one_way = _matmuls(m=2)  # two rows: no three-way split, so one core, as RKNN falls back
        table = cost_table(one_way, chip, "int8")
        s = fixed_schedule(one_way, chip, table, {"mm0": ("npu", 0)})
        assert simulate(one_way, chip, table, s).ops[0].all_cores == (0,)

    def test_fastest_split_counts_the_dram_its_shards_share(self):
        """Every shard reads all the weights: a weight-heavy op split 16 ways streams 16 copies
        through one DRAM. The chosen split is the fastest as the engine then runs it, and more
        cores never make the op slower."""
        big = Tensor("x", (1, 64, 2048), "float32")
        w = Tensor("w", (2048, 2048), "float32", is_weight=True)
        g = graph_from_ops("wide", [big], [("mm0", "MatMul", [big, w], [Tensor("y", (1, 64, 2048), "float32")])])
        times = []
        for cores in (1, 2, 4, 8, 16):
            chip = _npu_chip(cores=cores, split_overhead_ns=0.0)
            table = cost_table(g, chip, "int8")
            s = fixed_schedule(g, chip, table, {"mm0": ("npu", 0)})
            rec = simulate(g, chip, table, s).ops[0]
            times.append(rec.duration_ps)
            if cores == 16:
                every = simulate(g, chip, table, _with_cores(s, {"mm0": 16})).ops[0]
                assert len(rec.all_cores) < 16  # 16 copies of the weights would wait on the DRAM
                assert every.stretch_ps > 0 and rec.duration_ps < every.duration_ps
        assert times == sorted(times, reverse=True) and times[-1] < times[0]

    def test_ready_work_on_other_cores_is_not_displaced(self):
        chip = _npu_chip()
        g = _matmuls(2)
        table = cost_table(g, chip, "int8")
        trace = simulate(
            g, chip, table, fixed_schedule(g, chip, table, {"mm0": ("npu", 0), "mm1": ("npu", 1)})
        )
        rec = {r.op: r for r in trace.ops}
        assert rec["mm0"].all_cores == (0, 2)  # core 1 had mm1 ready: only core 2 was spare
        assert rec["mm1"].all_cores == (1,)
        assert rec["mm1"].start_ps == rec["mm0"].start_ps == 0

    def test_placement_fixes_the_number_of_cores(self):
        chip = _npu_chip()
        g = _matmuls()
        table = cost_table(g, chip, "int8")
        s = fixed_schedule(g, chip, table, {"mm0": ("npu", 1)})
        rec = simulate(g, chip, table, _with_cores(s, {"mm0": 2})).ops[0]
        assert rec.all_cores == (1, 0)
        shard = shard_cost(g.op("mm0"), chip.unit("npu"), chip, "int8", 2)
        assert shard is not None
        assert rec.duration_ps == pytest.approx(shard.latency_ns * PS_PER_NS, abs=2)
        assert simulate(g, chip, table, _with_cores(s, {"mm0": 1})).ops[0].all_cores == (1,)

    def test_impossible_core_counts_are_refused(self):
        chip = _npu_chip(split_ops=("Conv",))
        g = _matmuls()
        table = cost_table(g, chip, "int8")
        s = fixed_schedule(g, chip, table, {"mm0": ("npu", 0)})
        with pytest.raises(SimulationError, match="asks for 4 cores"):
            simulate(g, chip, table, _with_cores(s, {"mm0": 4}))
        with pytest.raises(SimulationError, match="cannot be split"):
            simulate(g, chip, table, _with_cores(s, {"mm0": 2}))

    def test_schema_refuses_split_ops_the_unit_cannot_run(self):
        from chips.schema import ChipError

        data = two_cpu_chip()
        data["units"][0] |= {"supported_ops": ["Add"], "split_ops": ["Conv"]}
        with pytest.raises(ChipError, match="split_ops: 'Conv'"):
            chip_from_dict(data)


class TestFrames:
    def _pipeline(self, frames: int):
        chip = chip_from_dict(two_cpu_chip())
        g = _chain(2)
        table = _table({"op0": _cost("cpu0", 300.0), "op1": _cost("cpu1", 150.0)})
        s = fixed_schedule(g, chip, table, {"op0": ("cpu0", 0), "op1": ("cpu1", 0)})
        return chip, simulate(g, chip, table, s, frames=frames)

    def test_two_stage_pipeline_is_paced_by_its_slower_stage(self):
        chip, trace = self._pipeline(4)
        stats = frame_stats(chip, trace)
        # cpu0 takes 400 ns per frame, cpu1 250 ns: frame i ends at 400 (i + 1) + 250
        assert stats.frame_end_ms == pytest.approx(
            tuple((400 * (i + 1) + 250) * 1e-6 for i in range(4))
        )
        assert stats.frame_latency_ms == pytest.approx((650e-6,) * 4)
        assert stats.initiation_interval_ms == pytest.approx(400e-6)
        assert stats.throughput_fps == pytest.approx(2.5e6)
        assert stats.bottleneck_unit == "cpu0"
        assert stats.makespan_ms == pytest.approx(1850e-6)
        assert sorted(r.frame for r in trace.ops) == [0, 0, 1, 1, 2, 2, 3, 3]

    def test_one_frame_ii_is_its_latency(self):
        chip, trace = self._pipeline(1)
        stats = frame_stats(chip, trace)
        assert stats.initiation_interval_ms == pytest.approx(650e-6) == stats.frame_latency_ms[0]

    def test_frames_must_be_positive(self):
        chip = chip_from_dict(two_cpu_chip())
        g = _chain()
        table = _table({"op0": _cost("cpu0", 300.0)})
        with pytest.raises(ValueError, match="frames"):
            simulate(g, chip, table, fixed_schedule(g, chip, table, {"op0": ("cpu0", 0)}), frames=0)

    def test_energy_per_frame_is_energy_over_frames(self):
        chip, trace = self._pipeline(3)
        stats = frame_stats(chip, trace)
        assert stats.energy_per_frame_mj * 3 == pytest.approx(stats.energy_mj)
        assert stats.energy_mj * 1e9 == pytest.approx(_integral_pj(power_timeline(chip, trace)))


def _integral_pj(steps) -> float:
    return sum(w * (t1 - t0) for (t0, w), (t1, _) in itertools.pairwise(steps))


class TestPower:
    def test_power_integrates_to_the_energy(self):
        chip = chip_from_dict(two_cpu_chip(dram_gbps=10.0))
        x = Tensor("x", (1, 64, 128, 128), "float32")
        g = graph_from_ops(
            "two", [x], [("a", "Add", [x, x], [Tensor("y1", x.shape, "float32")]),
                         ("b", "Relu", [x], [Tensor("y2", x.shape, "float32")])]
        )  # fmt: skip
        table = cost_table(g, chip, "int8")
        trace = simulate(
            g, chip, table, fixed_schedule(g, chip, table, {"a": ("cpu0", 0), "b": ("cpu2", 0)})
        )
        a = analyze(g, chip, trace)
        steps = power_timeline(chip, trace)
        assert steps[-1] == (trace.makespan_ps, 0.0)
        assert _integral_pj(steps) == pytest.approx(a.energy_mj * 1e9, rel=1e-6)
        assert max(w for _, w in steps) > 3 * 0.05  # something was active


class TestCli:
    def test_frames_flag_reports_throughput(self, tmp_path, capsys):
        model = tmp_path / "m.onnx"
        _tiny_onnx(model)
        assert (
            main(
                [
                    "run",
                    "rk3588",
                    str(model),
                    "--out",
                    str(tmp_path / "r"),
                    "--no-plots",
                    "--frames",
                    "3",
                ]
            )
            == 0
        )
        out = capsys.readouterr().out
        assert "3 frames" in out and "frames/s" in out and "bottleneck" in out
        summary = json.loads((tmp_path / "r" / "summary.json").read_text())
        assert summary["frames"] == 3 and len(summary["frame_latency_ms"]) == 3
        assert summary["throughput_fps"] == pytest.approx(
            1e3 / summary["initiation_interval_ms"], rel=1e-3
        )
        assert summary["bottleneck_unit"] in summary["units"]

    @pytest.mark.parametrize("bad", ["0", "-2", "two"])
    def test_bad_frames_is_a_usage_error(self, tmp_path, capsys, bad):
        model = tmp_path / "m.onnx"
        _tiny_onnx(model)
        assert (
            main(["run", "rk3588", str(model), "--out", str(tmp_path / "r"), "--frames", bad]) == 2
        )
        assert "--frames" in capsys.readouterr().err
        assert not (tmp_path / "r").exists()

    def test_engine_switches(self, tmp_path):
        model = tmp_path / "m.onnx"
        _tiny_onnx(model)
        args = ["run", "rk3588", str(model), "--no-plots", "--json"]
        assert main([*args, "--out", str(tmp_path / "a"), "--no-split", "--no-double-buffer"]) == 0
        summary = json.loads((tmp_path / "a" / "summary.json").read_text())
        assert summary["split_ops"] == 0 and "frames" not in summary


def _tiny_onnx(path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 32, 32])
    w = helper.make_tensor("w", TensorProto.FLOAT, [32, 16, 3, 3], [0.0] * (32 * 16 * 9))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["y"], "relu"),
    ]
    onnx.save(helper.make_model(helper.make_graph(nodes, "tiny", [x], [y], [w])), str(path))


class TestChromeTrace:
    def test_shards_phases_and_power_show_and_the_trace_stays_valid(self):
        from hwsim.pipeline import RunResult
        from hwsim.report.trace import check_trace, chrome_trace

        chip = _npu_chip()
        a = Tensor("a", (1, 100, 512), "float32")
        w = Tensor("w", (512, 256), "float32", is_weight=True)
        y = Tensor("y", (1, 100, 256), "float32")
        g = graph_from_ops(
            "mm",
            [a],
            [("mm", "MatMul", [a, w], [y]), ("r", "Relu", [y], [Tensor("z", y.shape, "float32")])],
        )
        table = cost_table(g, chip, "int8")
        # the Relu runs tiled (hand-made cost) on cpu0; the MatMul splits over the NPU's cores
        costs = {op: dict(row) for op, row in table.costs.items()}
        costs["r"]["cpu0"] = _cost("cpu0", 4000.0, 8000, 2000, tiles=4)
        table = CostTable("int8", costs)
        s = fixed_schedule(g, chip, table, {"mm": ("npu", 0), "r": ("cpu0", 0)})
        trace = simulate(g, chip, table, s)
        result = RunResult(g, chip, "int8", table, s, trace, analyze(g, chip, trace))
        ct = chrome_trace(result)
        assert check_trace(ct) == []
        events = ct["traceEvents"]
        threads = {
            (e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"
        }
        begins = [e for e in events if e["ph"] == "B"]
        shards = [e for e in begins if e["cat"] == "shard"]
        assert sorted(threads[e["pid"], e["tid"]] for e in shards) == ["npu core 1", "npu core 2"]
        tiles = [e for e in begins if e["cat"] == "tile"]
        tracks = {threads[e["pid"], e["tid"]] for e in tiles}
        assert tracks == {"cpu0 core 0 tiles", "cpu0 core 0 load/store"}
        load1 = next(e for e in tiles if e["name"] == "load/store while computing 0")
        compute0 = next(e for e in tiles if e["name"] == "compute 0")
        assert load1["ts"] == compute0["ts"]  # the overlap, visible
        power = [e for e in events if e["ph"] == "C" and e["name"] == "chip power (W)"]
        assert power and power[-1]["args"]["W"] == 0.0
        assert max(e["args"]["W"] for e in power) >= 3 * 1.0  # three NPU cores at 1 W each


class TestInFlight:
    def _run(self, frames: int, in_flight: int | None):
        chip = chip_from_dict(two_cpu_chip())
        g = _chain(2)
        table = _table({"op0": _cost("cpu0", 300.0), "op1": _cost("cpu1", 150.0)})
        s = fixed_schedule(g, chip, table, {"op0": ("cpu0", 0), "op1": ("cpu1", 0)})
        return chip, simulate(g, chip, table, s, frames=frames, in_flight=in_flight)

    def test_one_in_flight_runs_frames_one_after_another(self):
        chip, trace = self._run(3, 1)
        stats = frame_stats(chip, trace)
        assert trace.frame_admit_ps == (0, 650_000, 1_300_000)
        assert stats.frame_latency_ms == pytest.approx((650e-6,) * 3)
        assert stats.initiation_interval_ms == pytest.approx(650e-6) and stats.in_flight == 1

    def test_two_in_flight_latency_counts_from_admission(self):
        chip, trace = self._run(4, 2)
        stats = frame_stats(chip, trace)
        # frames 2 and 3 are admitted when frames 0 and 1 end (650 and 1050 ns); cpu0 paces at 400
        assert trace.frame_admit_ps == (0, 0, 650_000, 1_050_000)
        assert stats.frame_end_ms == pytest.approx(
            tuple((400 * (i + 1) + 250) * 1e-6 for i in range(4))
        )
        assert stats.frame_latency_ms == pytest.approx((650e-6, 1050e-6, 800e-6, 800e-6))

    def test_in_flight_must_be_positive(self):
        with pytest.raises(ValueError, match="in_flight"):
            self._run(2, 0)

    def test_cli_in_flight(self, tmp_path):
        model = tmp_path / "m.onnx"
        _tiny_onnx(model)
        out = tmp_path / "r"
        assert (
            main(
                [
                    "run",
                    "rk3588",
                    str(model),
                    "--out",
                    str(out),
                    "--no-plots",
                    "--frames",
                    "3",
                    "--in-flight",
                    "1",
                ]
            )
            == 0
        )
        summary = json.loads((out / "summary.json").read_text())
        assert summary["in_flight"] == 1
        assert summary["frame_latency_ms"] == pytest.approx([summary["latency_ms"]] * 3, rel=1e-6)


class TestInterleavedFrames:
    """A chain alternating between two cores: op0, op2 on cpu0, op1, op3 on cpu1, 200 ns each."""

    def _run(self, order: str, frames: int = 4, in_flight: int | None = None):
        chip = chip_from_dict(two_cpu_chip())
        g = _chain(4)
        table = _table({f"op{i}": _cost(f"cpu{i % 2}", 100.0) for i in range(4)})
        s = fixed_schedule(g, chip, table, {f"op{i}": (f"cpu{i % 2}", 0) for i in range(4)})
        return chip, simulate(g, chip, table, s, EngineOptions(frame_order=order), frames, in_flight)

    def test_frame_major_overlaps_only_the_ends_of_frames(self):
        chip, trace = self._run("frame-major")
        stats = frame_stats(chip, trace)
        # cpu0 starts op0 of frame i + 1 only after op2 of frame i (at 600 ns): 600 ns per frame
        assert stats.frame_end_ms == pytest.approx((800e-6, 1400e-6, 2000e-6, 2600e-6))
        assert stats.initiation_interval_ms == pytest.approx(600e-6)
        assert trace.frame_order == "frame-major" and stats.frame_order == "frame-major"

    def test_interleaved_reaches_the_busiest_core_bound(self):
        chip, trace = self._run("interleaved")
        stats = frame_stats(chip, trace)
        # by hand: cpu0 runs op0 f0, op0 f1 (op2 f0 waits for op1 f0), op2 f0, op2 f1, op0 f2, op0 f3, ...
        assert stats.frame_end_ms == pytest.approx((800e-6, 1000e-6, 1600e-6, 1800e-6))
        assert stats.initiation_interval_ms == pytest.approx(400e-6)  # 2 ops x 200 ns per core
        cpu0 = [(r.op, r.frame, r.start_ps // 1000) for r in sorted(trace.ops, key=lambda r: r.start_ps) if r.unit == "cpu0"]
        assert cpu0 == [
            ("op0", 0, 0), ("op0", 1, 200), ("op2", 0, 400), ("op2", 1, 600),
            ("op0", 2, 800), ("op0", 3, 1000), ("op2", 2, 1200), ("op2", 3, 1400),
        ]  # fmt: skip
        assert trace.frame_order == "interleaved"

    def test_in_flight_bounds_the_interleaving(self):
        chip, trace = self._run("interleaved", in_flight=2)
        stats = frame_stats(chip, trace)
        assert trace.frame_admit_ps == (0, 0, 800_000, 1_000_000)
        assert stats.frame_latency_ms == pytest.approx((800e-6, 1000e-6, 800e-6, 800e-6))
        _, one = self._run("interleaved", in_flight=1)  # one frame at a time: nothing to interleave
        _, major = self._run("frame-major", in_flight=1)
        assert [(r.op, r.frame, r.start_ps) for r in one.ops] == [(r.op, r.frame, r.start_ps) for r in major.ops]

    def test_one_frame_is_the_same_in_both_orders_and_runs_are_deterministic(self):
        _, a = self._run("interleaved", frames=1)
        _, b = self._run("frame-major", frames=1)
        assert a.ops == b.ops and a.makespan_ps == b.makespan_ps == 800_000
        assert self._run("interleaved")[1] == self._run("interleaved")[1]

    def test_unknown_order_is_refused(self):
        with pytest.raises(ValueError, match="frame_order"):
            self._run("zigzag")


class TestStreamReports:
    def test_frames_trace_and_gantt_show_every_frame(self, tmp_path):
        from hwsim.report.trace import check_trace

        model = tmp_path / "m.onnx"
        _tiny_onnx(model)
        out = tmp_path / "r"
        assert main(["run", "rk3588", str(model), "--out", str(out), "--frames", "3"]) == 0
        ct = json.loads((out / "trace.json").read_text())
        assert check_trace(ct) == []
        ops = [e for e in ct["traceEvents"] if e["ph"] == "X" and e.get("cat") not in ("dma",) and "node" in e.get("args", {})]
        assert sorted((e["args"]["node"], e["args"]["frame"]) for e in ops) == [
            (n, f) for n in ("conv", "relu") for f in range(3)
        ]
        assert {e["name"] for e in ops} >= {"conv [f0]", "relu [f2]"}
        assert len({e["cname"] for e in ops}) == 3  # a colour per frame
        xfers = [e for e in ct["traceEvents"] if e["ph"] == "X" and e.get("cat") == "dma"]
        assert sorted({e["args"]["frame"] for e in xfers}) == [0, 1, 2]
        assert ct["otherData"]["frames"] == 3 and ct["otherData"]["frame_order"] == "interleaved"
        assert (out / "gantt.png").stat().st_size > 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["frame_order"] == "interleaved" and summary["frames"] == 3
        # the one-frame run keeps its own trace: no frame labels, no colours
        assert main(["run", "rk3588", str(model), "--out", str(tmp_path / "one"), "--no-plots"]) == 0
        one = json.loads((tmp_path / "one" / "trace.json").read_text())
        assert check_trace(one) == [] and "frames" not in one["otherData"]
        assert not any("cname" in e or "[f0]" in e.get("name", "") for e in one["traceEvents"])

    def test_frame_order_flag(self, tmp_path, capsys):
        model = tmp_path / "m.onnx"
        _tiny_onnx(model)
        args = ["run", "rk3588", str(model), "--no-plots", "--frames", "2", "--out"]
        assert main([*args, str(tmp_path / "a"), "--frame-order", "frame-major"]) == 0
        assert "(frame-major)" in capsys.readouterr().out
        assert json.loads((tmp_path / "a" / "summary.json").read_text())["frame_order"] == "frame-major"
        assert main([*args, str(tmp_path / "b"), "--frame-order", "zigzag"]) == 2
        assert "--frame-order" in capsys.readouterr().err and not (tmp_path / "b").exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 200), k=st.sampled_from([64, 256, 1024, 2048]), n=st.sampled_from([32, 256, 1024, 2048]),
    cores=st.integers(1, 8), dram=st.sampled_from([5.0, 20.0, 100.0]),
)
def test_a_lone_op_is_never_slower_on_more_cores(m: int, k: int, n: int, cores: int, dram: float) -> None:
    """``split_cores: fastest`` takes the count that runs an op soonest with its shards sharing
    the DRAM, so a unit with more cores runs a lone splittable op no slower (a ps of rounding)."""
    x = Tensor("x", (1, m, k), "float32")
    w = Tensor("w", (k, n), "float32", is_weight=True)
    g = graph_from_ops("one", [x], [("mm0", "MatMul", [x, w], [Tensor("y", (1, m, n), "float32")])])
    times = []
    for c in (cores, 2 * cores):
        data = _npu_chip(cores=c, split_overhead_ns=0.0).model_dump()
        data["dram"]["bandwidth_gbps"] = dram
        chip = chip_from_dict(data)
        table = cost_table(g, chip, "int8")
        times.append(simulate(g, chip, table, fixed_schedule(g, chip, table, {"mm0": ("npu", 0)})).makespan_ps)
    assert times[1] <= times[0] + 2
