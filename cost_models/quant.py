"""What a weight quantization granularity costs: the per-channel scale read.

A per-tensor int8 / int4 weight has one scale and zero point: constants the compiler folds into
the op's requantization, nothing read at run time. A per-channel one has a scale (fp32) and a
zero point (int8) per output channel, read from DRAM with the weights: ``5 * channels`` bytes
more per op, moved at the unit's DRAM bandwidth (added to ``memory_ns``, the op's latency and
energy follow). It changes nothing in the compute (the per-channel rescale rides in the
accumulator's epilogue, like a per-tensor one). Float dtypes carry no scale.

>>> from graph_ir.ir import Op, Tensor
>>> conv = Op("c", "Conv", "conv", (Tensor("x", (1, 8, 4, 4), "float32"),
...           Tensor("w", (16, 8, 3, 3), "float32", True)), (Tensor("y", (1, 16, 4, 4), "float32"),))
>>> scale_bytes(conv, "int8", "per-channel"), scale_bytes(conv, "int8", "per-tensor"), scale_bytes(conv, "fp16", "per-channel")
(80, 0, 0)
"""

from __future__ import annotations

from dataclasses import replace

from chips.schema import Chip, Unit
from cost_models.base import OpCost, unit_bandwidth_gbps
from cost_models.energy import op_energy_pj
from graph_ir.ir import Op

__all__ = ["SCALE_BYTES_PER_CHANNEL", "scale_bytes", "with_scale_read"]

#: One fp32 scale and one int8 zero point per output channel.
SCALE_BYTES_PER_CHANNEL = 5
_INT_DTYPES = frozenset({"int4", "int8"})


def _channels(op: Op) -> int:
    """Output channels of a weighted op: axis 1 of a conv's output, the last axis otherwise."""
    if not op.outputs or not op.outputs[0].shape:
        return 1
    shape = op.outputs[0].shape
    return shape[1] if op.category == "conv" and len(shape) > 1 else shape[-1]


def scale_bytes(op: Op, dtype: str, granularity: str) -> int:
    """Bytes of per-channel scales and zero points ``op`` reads (0: per-tensor, float, no weights)."""
    if granularity != "per-channel" or dtype not in _INT_DTYPES or not op.weights:
        return 0
    return SCALE_BYTES_PER_CHANNEL * _channels(op)


def with_scale_read(cost: OpCost, op: Op, unit: Unit, chip: Chip, granularity: str) -> OpCost:
    """``cost`` with the per-channel scale read of ``op`` added (unchanged when there is none).

    The bytes are costed at the op's deployed dtype (``cost.dtype``): a unit that falls back to a
    float dtype reads no scales.
    """
    extra = scale_bytes(op, cost.dtype, granularity)
    if extra == 0:
        return cost
    memory_ns = cost.memory_ns + extra / unit_bandwidth_gbps(unit, chip)
    read = cost.dram_read_bytes + extra
    latency = max(cost.compute_ns, memory_ns) + cost.overhead_ns
    energy = op_energy_pj(unit, chip.dram, latency, read + cost.dram_write_bytes)
    return replace(cost, memory_ns=memory_ns, dram_read_bytes=read, energy_pj=energy)
