"""What an op costs on a unit: the :class:`OpCost` result, the :class:`CostModel` protocol,
the registry of one model per unit kind, and the helpers every model shares.

A model's ``estimate`` returns ``None`` when the unit cannot run the op (unsupported op type or
dtype); an exception from a model is a bug and propagates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from chips.schema import Chip, Dtype, Unit
from cost_models.energy import op_energy_pj
from graph_ir.ir import Op

__all__ = [
    "CostModel",
    "Gemm",
    "OpCost",
    "conv_group",
    "finish",
    "gemm_of",
    "layout_cost",
    "model_for",
    "pipeline_tiles",
    "register_model",
    "requested_dtype",
    "spill_plan",
    "tiling_extra_bytes",
    "unit_bandwidth_gbps",
]


@dataclass(frozen=True, slots=True)
class OpCost:
    """Cost of one op on one core of one unit, uncontended.

    Times are in nanoseconds, traffic in bytes, energy in picojoules.
    ``latency_ns = max(compute_ns, memory_ns) + overhead_ns``.
    """

    unit: str
    dtype: str
    compute_ns: float
    memory_ns: float
    overhead_ns: float
    dram_read_bytes: int
    dram_write_bytes: int
    energy_pj: float
    note: str = ""
    #: SRAM/cache tiles the working set is cut into (1: it fits); the engine runs a tiled op
    #: as double-buffered load/compute/store phases (see ``hwsim.sim.engine``).
    tiles: int = 1
    #: The part of ``compute_ns`` the core spends waiting on a stream it does not overlap with
    #: its work (a CPU GEMM's weights from DRAM, :func:`cost_models.cpu.weight_stream_ns`); an
    #: efficiency does not scale it.
    stall_ns: float = 0.0

    @property
    def latency_ns(self) -> float:
        return max(self.compute_ns, self.memory_ns) + self.overhead_ns

    @property
    def bound(self) -> str:
        """Which term sets the latency: ``compute``, ``memory`` or ``overhead``."""
        if self.overhead_ns >= max(self.compute_ns, self.memory_ns):
            return "overhead"
        return "compute" if self.compute_ns >= self.memory_ns else "memory"

    @property
    def dram_bytes(self) -> int:
        return self.dram_read_bytes + self.dram_write_bytes


class CostModel(Protocol):
    """One model per unit kind."""

    kind: str

    def estimate(self, op: Op, unit: Unit, chip: Chip, precision: str) -> OpCost | None:
        """Cost of ``op`` on one core of ``unit`` at ``precision`` (int4..fp32 or ``model``)."""
        ...


_MODELS: dict[str, CostModel] = {}


def register_model(model: CostModel) -> CostModel:
    """Register the cost model for ``model.kind`` (a plugin may add a new kind)."""
    _MODELS[model.kind] = model
    return model


def model_for(kind: str) -> CostModel:
    try:
        return _MODELS[kind]
    except KeyError:
        raise KeyError(f"no cost model for unit kind {kind!r}; registered: {sorted(_MODELS)}") from None


_ONNX_TO_DTYPE = {"float32": "fp32", "float64": "fp32", "float16": "fp16", "bfloat16": "bf16",
                  "int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4"}  # fmt: skip


def requested_dtype(op: Op, precision: str) -> str:
    """The dtype an op asks for: ``precision`` itself, or for ``model`` the op's own float type."""
    if precision != "model":
        return precision
    for t in op.outputs + op.inputs:
        if t.dtype in _ONNX_TO_DTYPE:
            return _ONNX_TO_DTYPE[t.dtype]
    return "fp32"


def unit_bandwidth_gbps(unit: Unit, chip: Chip) -> float:
    """Bandwidth the unit sees into its domain: its own port capped by the domain's."""
    dom = chip.domain(unit.domain)
    domain_bw = chip.dram.bandwidth_gbps if dom.kind == "dram" else float(dom.bandwidth_gbps or 0)
    return min(unit.mem_bandwidth_gbps or domain_bw, domain_bw)


def tiling_extra_bytes(in_bytes: int, weight_bytes: int, out_bytes: int, capacity_bytes: float) -> tuple[int, int]:
    """Extra DRAM reads when an op's working set does not fit in ``capacity_bytes``.

    Two tilings are considered and the cheaper is kept: weights split in tiles of half the
    buffer (the input is re-read once per extra tile), or the input split likewise (the weights
    are re-read). Returns ``(extra_bytes, tiles)``.

    >>> tiling_extra_bytes(100, 100, 100, 1000)
    (0, 1)
    >>> tiling_extra_bytes(1000, 4000, 1000, 2000)  # the input stays, weights stream once
    (0, 1)
    >>> tiling_extra_bytes(3000, 4000, 1000, 2000)  # 3 input tiles, weights read 3 times
    (8000, 3)
    """
    if in_bytes + weight_bytes + out_bytes <= capacity_bytes or capacity_bytes <= 0:
        return 0, 1
    half = capacity_bytes / 2
    w_tiles = max(1, math.ceil(weight_bytes / half))
    i_tiles = max(1, math.ceil(in_bytes / half))
    by_weight = (w_tiles - 1) * in_bytes
    by_input = (i_tiles - 1) * weight_bytes
    if by_weight <= by_input:
        return by_weight, w_tiles
    return by_input, i_tiles


#: Granularity (bytes) at which a unit without an array geometry streams a tiled working set:
#: a DMA descriptor / prefetch stream of one 4 KiB page (assumption).
STREAM_CHUNK_BYTES = 4096


def pipeline_tiles(total_bytes: int, chunk_bytes: float, at_least: int = 1) -> int:
    """Tiles a double-buffered op is pipelined in: as fine as ``chunk_bytes`` allows.

    Capacity only says how many tiles are *needed* (``at_least``); smaller tiles always fit,
    and with a load overlapping each compute the finest tiling exposes the least (one chunk's
    load before the first compute and one chunk's store after the last). So a bigger buffer
    never makes a tiled op slower: it only saves re-reads, or lets the op fit (1 tile).

    >>> pipeline_tiles(1_000_000, 4096, at_least=3)
    245
    >>> pipeline_tiles(0, 4096, at_least=2), pipeline_tiles(10_000, 4096, at_least=1)
    (1, 1)
    """
    if at_least <= 1 or total_bytes <= 0:
        return 1
    return max(at_least, math.ceil(total_bytes / max(chunk_bytes, 1.0)))


def spill_plan(in_bytes: int, weight_bytes: int, out_bytes: int, capacity_bytes: float,
               chunk_bytes: float) -> tuple[int, int]:
    """``(extra_bytes, tiles)`` of an op's working set against a buffer of ``capacity_bytes``.

    A working set that fits is one tile with no re-reads. One that does not is re-read as
    :func:`tiling_extra_bytes` says and streamed in ``chunk_bytes`` tiles
    (:func:`pipeline_tiles`), at least two.

    >>> spill_plan(100, 100, 100, 1000, 64)
    (0, 1)
    >>> spill_plan(3000, 4000, 1000, 2000, 1024)  # input in 3 tiles, weights read 3 times
    (8000, 16)
    """
    total = in_bytes + weight_bytes + out_bytes
    if total <= capacity_bytes:
        return 0, 1
    extra, needed = tiling_extra_bytes(in_bytes, weight_bytes, out_bytes, capacity_bytes)
    return extra, pipeline_tiles(total + extra, chunk_bytes, max(needed, 2))


def layout_cost(unit: Unit, dtype: str) -> OpCost:
    """Views (Reshape, Flatten, ...) cost nothing on any unit."""
    return OpCost(unit.name, dtype, 0.0, 0.0, 0.0, 0, 0, 0.0, "view")


def finish(
    op: Op,
    unit: Unit,
    chip: Chip,
    dtype: str,
    compute_ns: float,
    cache_bytes: int,
    cache_gbps: float,
    dram_read_bytes: int,
    dram_write_bytes: int,
    note: str = "",
    tiles: int = 1,
) -> OpCost:
    """Assemble an :class:`OpCost` from the compute time and the traffic per memory level.

    ``cache_bytes`` move at ``cache_gbps`` (on-chip), DRAM bytes at the unit's DRAM bandwidth;
    the overhead is the unit's per-op overhead plus one DRAM latency when DRAM is touched.
    """
    bw = unit_bandwidth_gbps(unit, chip)
    dram = dram_read_bytes + dram_write_bytes
    memory_ns = dram / bw + (cache_bytes / cache_gbps if cache_gbps > 0 else 0.0)
    overhead_ns = unit.op_overhead_ns + (chip.dram.latency_ns if dram else 0.0)
    latency = max(compute_ns, memory_ns) + overhead_ns
    energy = op_energy_pj(unit, chip.dram, latency, dram)
    return OpCost(
        unit.name, dtype, compute_ns, memory_ns, overhead_ns, dram_read_bytes, dram_write_bytes, energy, note, tiles
    )


def efficiency(unit: Unit, op: Op, defaults: Mapping[str, float], fallback: float) -> float:
    """Achieved fraction of peak: the chip's per-op-type override, else the model's default."""
    if op.op_type in unit.efficiency:
        return unit.efficiency[op.op_type]
    return defaults.get(op.category, fallback)


def unit_dtype(op: Op, unit: Unit, precision: str) -> Dtype | None:
    """The dtype ``unit`` runs ``op`` in, or None when it cannot run the op at all.

    Views run anywhere. Ops without a cost formula (``unknown``) run only on CPUs or on units
    that list them in ``supported_ops``. Otherwise the unit must accept the op type and have
    the requested dtype or a wider one.
    """
    if op.category == "unknown" and unit.kind != "cpu" and op.op_type not in (unit.supported_ops or ()):
        return None
    if op.category != "layout" and not unit.can_run(op.op_type):
        return None
    return unit.dtype_for(requested_dtype(op, precision))


def op_bytes(op: Op, dtype: str) -> tuple[int, int, int]:
    """(activation input, weight, output) bytes with floats stored as ``dtype``."""
    return op.input_bytes(dtype), op.weight_bytes(dtype), op.output_bytes(dtype)


class UnitModel:
    """Shared front half of the built-in models: eligibility, dtype choice, free views.

    Subclasses set ``kind`` and implement :meth:`cost` for ops the unit can run.
    """

    kind: str = ""

    def estimate(self, op: Op, unit: Unit, chip: Chip, precision: str) -> OpCost | None:
        dtype = unit_dtype(op, unit, precision)
        if dtype is None:
            return None
        if op.category == "layout":
            return layout_cost(unit, dtype)
        return self.cost(op, unit, chip, dtype, *op_bytes(op, dtype))

    def cost(
        self, op: Op, unit: Unit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        """Cost of an op the unit runs in ``dtype``; bytes of inputs, weights and outputs."""
        raise NotImplementedError


class Gemm(NamedTuple):
    """``batch`` independent ``M x N x K`` GEMMs (batch: conv groups or the matmul's batch)."""

    batch: int
    m: int
    n: int
    k: int


def gemm_of(op: Op) -> Gemm | None:
    """The GEMM a conv or matmul lowers to (None for other ops), as MAC arrays and tensor-core
    kernels see it: a conv is im2col (M = output pixels, N = output channels per group,
    K = input channels per group x kernel window); a depthwise conv puts its channels across N
    and reduces over the kernel window; a transposed conv scatters (M = input pixels,
    N = output channels per group x kernel window, K = input channels per group, then col2im).

    >>> from graph_ir.ir import Tensor
    >>> y = Tensor("y", (1, 128, 64), "float32")
    >>> a = Tensor("a", (1, 128, 768), "float32")
    >>> b = Tensor("b", (768, 64), "float32", is_weight=True)
    >>> gemm_of(Op("m", "MatMul", "matmul", (a, b), (y,)))
    Gemm(batch=1, m=128, n=64, k=768)
    >>> x = Tensor("x", (1, 16, 32, 32), "float32")
    >>> w = Tensor("w", (64, 16, 3, 3), "float32", is_weight=True)
    >>> gemm_of(Op("c", "Conv", "conv", (x, w), (Tensor("o", (1, 64, 32, 32), "float32"),)))
    Gemm(batch=1, m=1024, n=64, k=144)
    """
    if op.category == "matmul" and op.outputs and len(op.inputs) >= 2:
        out = op.outputs[0].shape
        if not out:
            return None
        n = out[-1]
        m = out[-2] if len(out) >= 2 else 1
        batch = math.prod(out[:-2]) if len(out) > 2 else 1
        a = op.inputs[0].shape
        if op.op_type == "Gemm":
            k = a[0] if op.attrs.get("transA", 0) else a[-1]
        elif op.op_type in ("MatMul", "MatMulInteger", "QLinearMatMul"):
            k = a[-1] if a else 1
        else:  # Einsum and other contractions: K from the MAC count
            k = op.macs // max(1, batch * m * n)
        return Gemm(max(batch, 1), max(m, 1), max(n, 1), max(k, 1))
    if op.category == "conv" and op.weights and op.outputs:
        w, out = op.weights[0].shape, op.outputs[0].shape
        if len(w) < 2 or len(out) < 2:
            return None
        group = conv_group(op)
        kernel = math.prod(w[2:])
        if op.op_type == "ConvTranspose":
            x = op.inputs[0].shape
            return Gemm(group, x[0] * math.prod(x[2:]), w[1] * kernel, max(1, w[0] // group))
        m = out[0] * math.prod(out[2:])
        if group > 1 and w[1] == 1:  # depthwise: channels across the columns
            return Gemm(1, m, w[0], kernel)
        return Gemm(group, m, w[0] // group, w[1] * kernel)
    return None


def conv_group(op: Op) -> int:
    """A conv's ``group`` attribute (1 when absent or malformed)."""
    group = op.attrs.get("group", 1)
    return group if isinstance(group, int) and group > 0 else 1
