"""Job boundaries of a lockstep unit (hwsim.sim.jobs) and the rows a shard reads (graph_ir.shard)."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import Chip, chip_from_dict
from cost_models import cost_table
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph, Tensor
from graph_ir.shard import reads_own_rows
from hwsim.sim.engine import Simulation
from hwsim.sim.jobs import Jobs, lockstep_barrier_ns
from hwsim.sim.options import EngineOptions
from hwsim.sim.plan import plan
from tests.helpers import fixed_schedule, graph_from_ops, make_op, two_cpu_chip

OVERHEAD_NS = 2000.0


def _chip(split_ops: tuple[str, ...] = ("Conv", "Relu", "Add", "Concat"), mode: str = "lockstep") -> Chip:
    data = two_cpu_chip(dram_gbps=100.0, port_gbps=100.0)
    data["units"].append(
        {"name": "npu", "kind": "npu", "domain": "a", "clock_mhz": 1000, "cores": 3, "mac_rows": 32,
         "mac_cols": 32, "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 4096,
         "op_overhead_ns": OVERHEAD_NS, "split_ops": list(split_ops), "split_overhead_ns": 0.0,
         "core_mode": mode, "fuses": []}
    )  # fmt: skip
    return chip_from_dict(data)


def _t(name: str, h: int, c: int = 32) -> Tensor:
    return Tensor(name, (1, c, h, 64), "int8")


def _w(name: str, k: int, c: int = 32) -> Tensor:
    return Tensor(name, (c, c, k, k), "int8", is_weight=True)


def _graph(layers: list[str], h: int = 48) -> ModelGraph:
    """A chain of layers: ``c1``/``c3`` (1x1 or 3x3 conv, no padding), ``relu``, ``add`` (the
    layer's input plus the one before it), ``pool`` (a 1x1 MaxPool, never split here)."""
    x = _t("x", h)
    prev, before = x, x
    ops = []
    for i, kind in enumerate(layers):
        k = 3 if kind == "c3" else 1
        out = _t(f"t{i}", prev.shape[2] - (k - 1))
        if kind in ("c1", "c3"):
            ops.append((f"op{i}", "Conv", [prev, _w(f"w{i}", k)], [out]))
        elif kind == "add" and before.shape == prev.shape:
            ops.append((f"op{i}", "Add", [prev, before], [out]))
        else:
            ops.append((f"op{i}", {"relu": "Relu", "add": "Relu", "pool": "MaxPool"}[kind], [prev], [out]))
        before, prev = prev, out
    return graph_from_ops("chain", [x], ops)


def _run(
    graph: ModelGraph, chip: Chip, table: CostTable | None = None, cores: list[int] | None = None
) -> tuple[int, int]:
    """(makespan in ps, job boundaries paid) of ``graph`` all on the NPU, each op on as many
    cores as ``cores`` fixes (None: as the engine chooses)."""
    table = table if table is not None else cost_table(graph, chip, "int8")
    schedule = fixed_schedule(graph, chip, table, {n: ("npu", 0) for n in graph.order})
    if cores is not None:
        fixed = {n: dataclasses.replace(schedule.placements[n], cores=k) for n, k in zip(graph.order, cores, strict=True)}
        schedule = dataclasses.replace(schedule, placements=fixed)
    sim = Simulation(graph, chip, table, plan(graph, chip, table, schedule), EngineOptions(), 1, None)
    sim.run()
    return sim.trace().makespan_ps, sim.jobs.boundaries if sim.jobs is not None else 0


def _without_barrier(graph: ModelGraph, chip: Chip, cores: list[int] | None = None) -> tuple[int, int]:
    with mock.patch("hwsim.sim.jobs.lockstep_barrier_ns", lambda unit: 0.0):
        return _run(graph, chip, cores=cores)


class TestReadsOwnRows:
    def test_a_1x1_conv_of_stride_1_does_and_a_3x3_or_strided_one_does_not(self) -> None:
        x, y = _t("x", 20), _t("y", 20)
        assert reads_own_rows(make_op("Conv", [x, _w("w", 1)], [y]))
        assert not reads_own_rows(make_op("Conv", [x, _w("w", 3)], [_t("y", 18)]))
        assert not reads_own_rows(make_op("Conv", [x, _w("w", 3)], [y], pads=[1, 1, 1, 1]))
        assert not reads_own_rows(make_op("Conv", [x, _w("w", 1)], [_t("y", 10)], strides=[2, 2]))
        assert not reads_own_rows(make_op("Conv", [x, _w("w", 1)], [_t("y", 22)], pads=[1, 1, 1, 1]))

    def test_elementwise_and_concat_on_channels_do_concat_on_height_does_not(self) -> None:
        a, b = _t("a", 20), _t("b", 20)
        assert reads_own_rows(make_op("Relu", [a], [_t("y", 20)]))
        assert reads_own_rows(make_op("Add", [a, b], [_t("y", 20)]))
        assert reads_own_rows(make_op("Concat", [a, b], [_t("y", 20, c=64)], axis=1))
        assert not reads_own_rows(make_op("Concat", [a, b], [_t("y", 40)], axis=2))

    def test_a_broadcast_a_pool_a_reshape_and_the_b_of_a_matmul_do_not(self) -> None:
        a = _t("a", 20)
        assert not reads_own_rows(make_op("Mul", [a, Tensor("s", (1, 32, 1, 1), "int8")], [_t("y", 20)]))
        assert not reads_own_rows(make_op("MaxPool", [a], [_t("y", 20)], kernel_shape=[1, 1]))
        assert not reads_own_rows(make_op("Reshape", [a], [Tensor("y", (1, 32, 20, 64), "int8")]))
        m, n = Tensor("m", (1, 20, 64), "int8"), Tensor("n", (1, 64, 20), "int8")
        assert not reads_own_rows(make_op("MatMul", [m, n], [Tensor("y", (1, 20, 20), "int8")]))

    def test_an_op_that_cannot_split_does_not(self) -> None:
        assert not reads_own_rows(make_op("Relu", [Tensor("a", (1,), "int8")], [Tensor("y", (1,), "int8")]))


class TestJobs:
    def _jobs(self, layers: list[str], chip: Chip | None = None, fused: dict[str, str] | None = None) -> Jobs:
        g = _graph(layers)
        npu = (chip or _chip()).unit("npu")
        return Jobs(g, [npu] * len(g.order), MappingProxyType(fused or {}))

    def test_a_3x3_conv_after_a_split_layer_of_the_same_job_ends_it(self) -> None:
        jobs = self._jobs(["c1", "c3"])
        assert jobs.enter(0, 3) == 0.0
        assert jobs.barrier_ns(1, 3) == jobs.barrier_ns(1, 1) == OVERHEAD_NS
        assert jobs.enter(1, 3) == OVERHEAD_NS and jobs.boundaries == 1

    def test_row_local_layers_split_alike_share_the_job_and_whole_ones_on_core_0_too(self) -> None:
        jobs = self._jobs(["c3", "c1", "relu", "add"])
        assert [jobs.enter(i, 3) for i in range(4)] == [0.0] * 4
        one = self._jobs(["c3", "c3", "pool"])
        assert [one.enter(i, 1) for i in range(3)] == [0.0] * 3
        assert one.boundaries == 0

    def test_changing_how_many_cores_a_layer_uses_ends_the_job(self) -> None:
        jobs = self._jobs(["c1", "c1", "c1"])
        assert jobs.enter(0, 1) == 0.0
        assert jobs.enter(1, 3) == OVERHEAD_NS  # cores 1 and 2 read rows core 0 made
        assert jobs.enter(2, 1) == OVERHEAD_NS  # core 0 reads rows cores 1 and 2 made

    def test_a_boundary_serves_every_later_reader_of_what_came_before_it(self) -> None:
        jobs = self._jobs(["c1", "c3", "add"])  # the Add reads op0's rows too, now in DRAM
        jobs.enter(0, 3)
        assert jobs.enter(1, 3) == OVERHEAD_NS
        assert jobs.enter(2, 3) == 0.0

    def test_a_fused_epilogue_is_part_of_its_heads_layer(self) -> None:
        chip = _chip(split_ops=("Conv",))
        alone = self._jobs(["c3", "relu", "c1"], chip)
        alone.enter(0, 3)
        assert alone.enter(1, 1) == OVERHEAD_NS
        fused = self._jobs(["c3", "relu", "c1"], chip, {"op1": "op0"})
        fused.enter(0, 3)
        assert fused.enter(1, 1) == 0.0 and fused.enter(2, 3) == 0.0

    def test_instances_of_later_frames_read_their_own_frames_producers(self) -> None:
        jobs = self._jobs(["c1", "c3"])
        jobs.enter(0, 3)
        assert jobs.enter(2, 3) == 0.0  # frame 1's first layer: no producer in this job
        assert jobs.enter(3, 3) == OVERHEAD_NS

    def test_only_a_lockstep_unit_with_several_cores_pays(self) -> None:
        assert lockstep_barrier_ns(_chip().unit("npu")) == OVERHEAD_NS
        assert lockstep_barrier_ns(_chip(mode="independent").unit("npu")) == 0.0
        jobs = self._jobs(["c1", "c3"], _chip(mode="independent"))
        jobs.enter(0, 3)
        assert jobs.enter(1, 3) == 0.0 and jobs.boundaries == 0


class TestEngine:
    def test_a_halo_costs_one_set_up_and_sync_per_boundary(self) -> None:
        g, chip = _graph(["c1", "c3", "c3"]), _chip()
        with_ps, boundaries = _run(g, chip)
        without_ps, _ = _without_barrier(g, chip)
        assert boundaries == 2
        assert with_ps - without_ps == pytest.approx(2 * OVERHEAD_NS * 1000, abs=4)

    def test_an_independent_unit_or_one_core_never_pays(self) -> None:
        g = _graph(["c1", "c3", "c3"])
        assert _run(g, _chip(mode="independent"))[1] == 0
        one = chip_from_dict({**_chip().model_dump(), "units": [
            {**u.model_dump(), "cores": 1} if u.name == "npu" else u.model_dump() for u in _chip().units
        ]})  # fmt: skip
        assert _run(g, one)[1] == 0

    def test_the_fusion_table_keeps_an_epilogue_in_its_heads_job(self) -> None:
        g, chip = _graph(["c3", "relu", "c1"]), _chip(split_ops=("Conv",))
        table = cost_table(g, chip, "int8")
        # the Relu on core 0 alone ends the conv's job; the 1x1 conv then stays on core 0 too
        # (splitting it would end another job for less than it saves)
        assert _run(g, chip, table)[1] == 1
        fused = dataclasses.replace(table, fused_into=MappingProxyType({"op1": "op0"}))
        assert _run(g, chip, fused)[1] == 0


_LAYERS = st.lists(st.sampled_from(["c1", "c3", "relu", "add", "pool"]), min_size=1, max_size=7)


@settings(max_examples=25, deadline=None)
@given(layers=_LAYERS, h=st.integers(12, 60), data=st.data())
def test_the_barrier_never_makes_a_run_faster(layers: list[str], h: int, data: st.DataObject) -> None:
    """With the same split of each layer (the engine's own choice of cores is an estimate that
    leaves out DRAM sharing, so a boundary that changes it may land on a faster split by luck)."""
    g, chip = _graph(layers, h), _chip()
    cores = [1 if g.op(n).op_type == "MaxPool" else data.draw(st.sampled_from([1, 3])) for n in g.order]
    with_ps, boundaries = _run(g, chip, cores=cores)
    without_ps, _ = _without_barrier(g, chip, cores)
    assert with_ps >= without_ps
    assert with_ps - without_ps == pytest.approx(boundaries * OVERHEAD_NS * 1000, abs=4 * len(cores))


@settings(max_examples=25, deadline=None)
@given(layers=st.lists(st.sampled_from(["c1", "relu", "add"]), min_size=1, max_size=7), h=st.integers(3, 60))
def test_row_local_consumers_never_end_a_job(layers: list[str], h: int) -> None:
    """Every layer split over the three cores, as RKNN splits every layer it can."""
    g, chip = _graph(layers, h), _chip()
    cores = [3] * len(g.order)
    with_ps, boundaries = _run(g, chip, cores=cores)
    assert boundaries == 0
    assert with_ps == _without_barrier(g, chip, cores)[0]
