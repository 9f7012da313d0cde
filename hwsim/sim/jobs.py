"""Jobs of a lockstep unit: where its cores must all stop and sync before the next layer.

A unit with ``core_mode: lockstep`` (RKNN's multi-core mode, :func:`hwsim.sim.plan.runs_in_lockstep`)
runs one model's layers one at a time, a layer of ``split_ops`` divided over its cores by output
rows (:mod:`hwsim.sim.splitting`), every other layer on core 0. What synchronizes its cores is
the *job*: the RKNPU kernel driver (``drivers/rknpu/rknpu_job.c``) hands each core of a
multi-core job its own task range, and completes the job only when every core's interrupt has
arrived; nothing synchronizes the cores inside a job. So a layer may run in the same job as
the layers before it only when each of its cores finds the rows it reads on that core already:

- both layers run whole on core 0 (one core, in order); or
- both are split the same ``k`` ways and the later one reads only the rows of its own output
  slice (:func:`graph_ir.shard.reads_own_rows`: an elementwise op, an activation, a Concat
  along channels, a 1x1 convolution of stride 1).

Anything else between a layer and an input it reads from a layer of the same job (a 3x3
convolution reading its halo from the neighbouring slice, a layer on core 0 reading every
core's rows, a split layer reading what core 0 alone produced, a pool, a reshape) ends the job
first: every core waits for the slowest (the engine's lockstep does that already) and the
runtime pays one more set-up-and-sync, the unit's ``op_overhead_ns`` (the per-layer set-up and
sync calibrated on one core; no figure of several cores chose it). A job boundary once paid
serves every later layer: an input produced before the last boundary is in DRAM for all cores.

An op fused into the conv before it (``CostTable.fused_into``: an activation, a residual
``Add``) is part of that conv's layer: it counts as split as its head was, however the engine
runs its small fused remainder, so a ``Conv -> Relu`` pair is one layer and one job.

The engine asks :meth:`Jobs.barrier_ns` before it runs a layer and :meth:`Jobs.enter` when it
starts it; ops of other units and of units that do not run in lockstep never pay a barrier.

>>> from chips import load_chip
>>> from graph_ir.ir import Op, Tensor
>>> import networkx as nx
>>> from graph_ir.ir import ModelGraph
>>> x, a, b = (Tensor(n, (1, 16, 30, 30), "int8") for n in "xab")
>>> w = Tensor("w", (16, 16, 3, 3), "int8", is_weight=True)
>>> ops = [Op("c1", "Conv", "conv", (x, w), (a,), {"pads": [1] * 4}),
...        Op("c2", "Conv", "conv", (a, w), (b,), {"pads": [1] * 4})]
>>> g = nx.DiGraph()
>>> g.add_nodes_from((o.name, {"op": o}) for o in ops)
>>> g.add_edge("c1", "c2", tensors=("a",))
>>> graph = ModelGraph("two", g, (x,), (b,), {"a": "c1", "b": "c2"}, ("c1", "c2"))
>>> npu = load_chip("rk3588").unit("npu")
>>> jobs = Jobs(graph, [npu, npu], {})
>>> jobs.enter(0, 3), jobs.barrier_ns(1, 3) == npu.op_overhead_ns  # c2's 3x3 halo ends the job
(0.0, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chips.schema import Unit
from graph_ir.ir import ModelGraph
from graph_ir.shard import reads_own_rows
from hwsim.sim.plan import runs_in_lockstep

__all__ = ["Jobs", "lockstep_barrier_ns"]


def lockstep_barrier_ns(unit: Unit) -> float:
    """What ending a job of ``unit``'s cores costs, in ns: one more set-up-and-sync of a layer,
    the unit's ``op_overhead_ns`` (0 for a unit that does not run in lockstep)."""
    return unit.op_overhead_ns if runs_in_lockstep(unit) else 0.0


class Jobs:
    """The job boundaries of the lockstep units of one run, found as the engine starts ops.

    ``units``: each op's unit, in the graph's order; ``fused_into``: op -> the head of the
    fusion group it runs in (:attr:`cost_models.table.CostTable.fused_into`). An op instance is
    ``frame * n_ops + op`` (the engine's numbering); an instance's producers are the same frame's.
    """

    __slots__ = (
        "_barrier_ns", "_head", "_job", "_job_of", "_n_ops", "_own_rows", "_producers", "_shards_of", "_unit",
    )  # fmt: skip

    def __init__(self, graph: ModelGraph, units: Sequence[Unit], fused_into: Mapping[str, str]) -> None:
        index = {n: i for i, n in enumerate(graph.order)}
        self._n_ops = len(graph.order)
        self._barrier_ns = tuple(lockstep_barrier_ns(u) for u in units)
        self._unit = tuple(u.name for u in units)
        #: Each op's fusion head on its own unit (-1: none): the layer it is part of.
        heads = [index.get(fused_into.get(n, ""), -1) for n in graph.order]
        self._head = tuple(h if h >= 0 and self._unit[h] == self._unit[i] else -1 for i, h in enumerate(heads))
        producers: list[tuple[int, ...]] = []
        own_rows: list[bool] = []
        for i, name in enumerate(graph.order):
            op = graph.op(name)
            if self._barrier_ns[i] == 0:
                producers.append(())
                own_rows.append(True)
                continue
            found = {index[p] for t in op.activations if (p := graph.producer.get(t.name)) is not None}
            producers.append(tuple(sorted(p for p in found if self._unit[p] == self._unit[i])))
            own_rows.append(reads_own_rows(op))
        self._producers = tuple(producers)
        self._own_rows = tuple(own_rows)
        #: The current job of each lockstep unit (counts the boundaries paid).
        self._job: dict[str, int] = {}
        #: Job and shards each started op instance ran in.
        self._job_of: dict[int, int] = {}
        self._shards_of: dict[int, int] = {}

    @property
    def boundaries(self) -> int:
        """How many job boundaries the ops started so far have paid, over all lockstep units."""
        return sum(self._job.values())

    def ends_job(self, inst: int, shards: int) -> bool:
        """Whether op instance ``inst`` run as ``shards`` shards must start a new job: it reads
        from a layer of the current job rows its own cores did not produce."""
        i = inst % self._n_ops
        if self._barrier_ns[i] == 0:
            return False
        base = inst - i
        shards = self._layer_shards(inst, shards)
        job = self._job.get(self._unit[i], 0)
        for p in self._producers[i]:
            q = base + p
            if self._job_of.get(q, -1) != job:
                continue
            k = self._shards_of[q]
            if not (k == shards == 1 or (k == shards and self._own_rows[i])):
                return True
        return False

    def barrier_ns(self, inst: int, shards: int) -> float:
        """What op instance ``inst`` run as ``shards`` shards pays for a job boundary before it, in ns."""
        return self._barrier_ns[inst % self._n_ops] if self.ends_job(inst, shards) else 0.0

    def enter(self, inst: int, shards: int) -> float:
        """Op instance ``inst`` starts as ``shards`` shards: note its job (a new one when it ends
        the current one) and return the barrier it pays, in ns."""
        i = inst % self._n_ops
        if self._barrier_ns[i] == 0:
            return 0.0
        barrier = self.barrier_ns(inst, shards)
        unit = self._unit[i]
        if barrier > 0:
            self._job[unit] = self._job.get(unit, 0) + 1
        self._job_of[inst] = self._job.get(unit, 0)
        self._shards_of[inst] = self._layer_shards(inst, shards)
        return barrier

    def _layer_shards(self, inst: int, shards: int) -> int:
        """How many ways the layer of op instance ``inst`` is split: its fusion head's, else ``shards``."""
        i = inst % self._n_ops
        head = self._head[i]
        return shards if head < 0 else self._shards_of.get(inst - i + head, shards)
