"""Splitting one op across several cores of a unit (an NPU's cores, a CPU cluster's cores).

A unit lists the op types it can split in ``split_ops`` (see :class:`chips.schema.NpuUnit`).
An op split ``k`` ways runs as ``k`` identical shards, one per core, each computing a slice of
the output rows: the height of a 4-D (NCHW) output, the rows ``M`` of a matrix product, the
outermost non-trivial axis otherwise. Each shard is costed by the unit's own cost model as an
op of its own, so the array/tile quantization of the slice is kept (a 32-row slice of a
100-row GEMM still pays whole array folds). Every shard reads all the weights, a convolution
shard reads its input rows plus the kernel's halo, and the split pays the unit's
``split_overhead_ns`` once.

The shards themselves are :func:`graph_ir.shard.shard_op`'s (with its example).
"""

from __future__ import annotations

from dataclasses import replace

from chips.schema import Chip, Unit
from cost_models.base import DEFAULT_KNOBS, KernelKnobs, OpCost, applicable_knobs, model_for
from graph_ir.ir import Op
from graph_ir.shard import shard_op, split_axis

__all__ = ["shard_cost", "shard_op", "split_axis"]


def shard_cost(
    op: Op, unit: Unit, chip: Chip, precision: str, k: int, knobs: KernelKnobs = DEFAULT_KNOBS
) -> OpCost | None:
    """Cost of one shard of ``op`` split ``k`` ways on ``unit`` (None: it does not split so),
    run with those of ``knobs`` the unit offers for the shard.

    The overhead of the returned cost includes the unit's ``split_overhead_ns``.
    """
    shard = shard_op(op, k)
    if shard is None:
        return None
    model = model_for(unit.kind)
    cost = model.estimate(shard, unit, chip, precision, applicable_knobs(model, shard, unit, chip, precision, knobs))
    if cost is None:
        return None
    return replace(cost, overhead_ns=cost.overhead_ns + unit.split_overhead_ns)
