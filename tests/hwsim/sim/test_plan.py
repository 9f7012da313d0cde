"""The schedule resolved for the event loop: what each op waits for, what each transfer uses."""

from __future__ import annotations

import dataclasses

import pytest

from chips import chip_from_dict
from cost_models import cost_table
from graph_ir.ir import Tensor
from hwsim.sim.options import SimulationError
from hwsim.sim.plan import memory_capacity, plan
from tests.helpers import fixed_schedule, graph_from_ops, two_cpu_chip

BIG = (1, 64, 32, 32)


def _cross():
    """``p`` on cpu0 (domain a) feeds ``c`` on cpu2 (domain b) across the a<->b link."""
    chip = chip_from_dict(two_cpu_chip(channels=2))
    x, a = Tensor("x", BIG, "float32"), Tensor("a", BIG, "float32")
    g = graph_from_ops("cross", [x], [("p", "Relu", [x], [a]), ("c", "Relu", [a], [Tensor("y", BIG, "float32")])])
    table = cost_table(g, chip, "int8")
    return g, chip, table, fixed_schedule(g, chip, table, {"p": ("cpu0", 0), "c": ("cpu2", 0)})


def test_ops_wait_for_their_inputs_in_their_own_domain():
    g, chip, table, s = _cross()
    p = plan(g, chip, table, s)
    assert p.names == ("p", "c")
    assert (p.unit, p.domain, p.memory) == (("cpu0", "cpu2"), ("a", "b"), ("dram", "dram"))
    assert p.inputs_needed == (1, 1)
    assert dict(p.waiting) == {("x", "a"): (0,), ("a", "b"): (1,)}
    assert p.outputs == (("a",), ("y",))
    assert p.core_order[("cpu0", 0)] == (0,) and p.core_order[("cpu1", 0)] == ()
    assert (p.graph_inputs, p.host) == (("x",), "a")


def test_a_transfer_is_named_by_its_link_and_counts_twice_within_dram():
    g, chip, table, s = _cross()
    xp = plan(g, chip, table, s).transfers
    # ``a`` crosses to ``c``; the graph's output ``y`` goes back to the host domain
    assert [(t.tensor, t.src_domain, t.dst_domain) for t in xp.transfers] == [("a", "a", "b"), ("y", "b", "a")]
    assert xp.link == ("a<->b", "a<->b") and dict(xp.channels) == {"a<->b": 2}
    assert xp.latency_ps == (50_000, 50_000)  # 50 ns set-up
    assert xp.rate_bytes_per_ps == (0.005, 0.005)  # 5 GB/s
    assert xp.uses == ({"dram": 2.0}, {"dram": 2.0})  # both domains live in the shared DRAM
    assert dict(xp.outgoing) == {("a", "a"): (0,), ("y", "b"): (1,)}


def test_memory_capacity_lists_dram_then_each_sram_domain():
    spec = two_cpu_chip(dram_gbps=20.0)
    spec["domains"][1] = {"name": "b", "kind": "sram", "bandwidth_gbps": 50.0}
    assert memory_capacity(chip_from_dict(spec)) == {"dram": 0.02, "b": 0.05}


def test_a_placement_asking_for_too_many_cores_is_refused():
    g, chip, table, s = _cross()
    placements = dict(s.placements)
    placements["p"] = dataclasses.replace(placements["p"], cores=2)
    with pytest.raises(SimulationError, match="asks for 2 cores of unit 'cpu0', which has 1"):
        plan(g, chip, table, dataclasses.replace(s, placements=placements))
