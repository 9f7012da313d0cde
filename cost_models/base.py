"""What an op costs on a unit: the :class:`OpCost` result, the :class:`CostModel` protocol,
the registry of one model per unit kind, the :class:`UnitModel` base with its registry of op
handlers, and the helpers every model shares.

A model's ``estimate`` returns ``None`` when the unit cannot run the op (unsupported op type or
dtype); an exception from a model is a bug and propagates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from chips.schema import Chip, Dtype, Unit, kind_tag, unit_class
from cost_models.energy import op_energy_pj
from graph_ir.categories import COSTED_CATEGORIES, Category
from graph_ir.gemm import Gemm, conv_group, gemm_of
from graph_ir.ir import Op

__all__ = [
    "ACTIVATIONS",
    "DEFAULT_KNOBS",
    "CostModel",
    "Gemm",
    "Handler",
    "KernelKnobs",
    "OpCost",
    "UnitModel",
    "applicable_knobs",
    "conv_group",
    "efficiency",
    "element_precision",
    "finish",
    "gemm_of",
    "layout_cost",
    "model_for",
    "op_handlers",
    "pipeline_tiles",
    "register_model",
    "registered_kinds",
    "repeated",
    "requested_dtype",
    "spill_plan",
    "tiling_extra_bytes",
    "unit_bandwidth_gbps",
    "unregister_model",
    "weight_bytes_read",
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
    #: as double-buffered load/compute/store phases (see ``hwsim.sim.blocks``).
    tiles: int = 1
    #: The part of ``compute_ns`` the core spends waiting on a stream it does not overlap with
    #: its work (a CPU GEMM's weights from DRAM, :func:`cost_models.cpu.weight_stream_ns`); an
    #: efficiency does not scale it.
    stall_ns: float = 0.0
    #: The part of ``dram_read_bytes + dram_write_bytes`` that is SRAM spill traffic
    #: (``hwsim.analysis.memory.spill_table``): it streams through the DRAM even when the
    #: op's unit sits in an SRAM domain.
    spill_bytes: int = 0

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


@dataclass(frozen=True, slots=True)
class KernelKnobs:
    """How a unit runs one op, where its kind offers a choice (None: the unit's default).

    The kernel part of a mapping signature (:class:`cost_models.mapping.OpMapping`): what a cost
    model itself is told. ``dataflow`` is a systolic array's (``ws``, ``os``, ``is``), ``layout``
    how a conv's reduction is packed (``atom``, ``im2col``), ``tile`` how operands are buffered
    on chip (``double``, ``single``). A kind lists what it offers for an op in
    :meth:`CostModel.knob_choices`.
    """

    dataflow: str | None = None
    layout: str | None = None
    tile: str | None = None

    def is_default(self) -> bool:
        return self.dataflow is None and self.layout is None and self.tile is None


#: No knob set: every op costed as a plain run costs it.
DEFAULT_KNOBS = KernelKnobs()


class CostModel(Protocol):
    """One model per unit kind: what an op costs on a unit of that kind, and the kind's facts
    that only a cost model knows."""

    @property
    def kind(self) -> str:
        """The unit kind it models (:func:`chips.schema.unit_kinds`)."""
        ...

    @property
    def default_fuses(self) -> frozenset[str]:
        """Op types a unit of this kind fuses into the conv/matmul before them when its
        ``fuses`` field does not say (:mod:`cost_models.fusion`)."""
        ...

    @property
    def accumulates_in_buffer(self) -> bool:
        """Whether a conv/matmul's accumulators sit in the unit's on-chip buffer (an NPU's SRAM),
        so a fused epilogue holds the output tile there at accumulator width; CPU and GPU kernels
        keep them in registers and apply the epilogue there (:mod:`cost_models.fusion`)."""
        ...

    @property
    def default_efficiency(self) -> Mapping[Category, float]:
        """Achieved fraction of peak per op category where the unit's ``efficiency`` names no
        value for the op type; one entry per category of :data:`graph_ir.categories.COSTED_CATEGORIES`."""
        ...

    def estimate(
        self, op: Op, unit: Unit, chip: Chip, precision: str, knobs: KernelKnobs = DEFAULT_KNOBS
    ) -> OpCost | None:
        """Cost of ``op`` on one core of ``unit`` at ``precision`` (int4..fp32 or ``model``), run
        as ``knobs`` say (each one :meth:`knob_choices` offers; an other is a bug: ValueError)."""
        ...

    def knob_choices(self, op: Op, unit: Unit, chip: Chip, precision: str) -> Mapping[str, tuple[str, ...]]:
        """The values of each :class:`KernelKnobs` field this kind offers for ``op`` on ``unit``,
        the default first; a knob not listed has only its default."""
        ...


_MODELS: dict[str, CostModel] = {}


def applicable_knobs(
    model: CostModel, op: Op, unit: Unit, chip: Chip, precision: str, knobs: KernelKnobs
) -> KernelKnobs:
    """Those of ``knobs`` that ``model`` offers for ``op`` on ``unit`` (the others: default).

    A mapping not pinned to a unit sets its knobs on whichever unit offers them: an NPU's
    dataflow leaves the op's CPU cost as it is.
    """
    if knobs.is_default():
        return knobs
    offered = model.knob_choices(op, unit, chip, precision)
    return KernelKnobs(*(v if v in offered.get(k, ()) else None for k, v in _knob_items(knobs)))


def _knob_items(knobs: KernelKnobs) -> tuple[tuple[str, str | None], ...]:
    return (("dataflow", knobs.dataflow), ("layout", knobs.layout), ("tile", knobs.tile))

#: Activations accelerator compilers run in a conv/matmul's epilogue (a kind's
#: :attr:`CostModel.default_fuses` builds on them).
ACTIVATIONS: tuple[str, ...] = (
    "Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
)  # fmt: skip


def register_model(model: CostModel) -> CostModel:
    """Register the cost model for ``model.kind`` (a plugin may add a new kind).

    Raises
    ------
    KeyError
        When ``chips.schema`` has no such unit kind (register the unit class first).
    ValueError
        When the model lacks a default efficiency for some op category.
    """
    unit_class(model.kind)
    missing = [c for c in COSTED_CATEGORIES if c not in model.default_efficiency]
    if missing:
        raise ValueError(f"cost model for unit kind {model.kind!r}: no default efficiency for {missing}")
    _MODELS[model.kind] = model
    return model


def unregister_model(kind: str) -> None:
    """Remove the cost model of ``kind`` (a test's clean-up)."""
    model_for(kind)
    del _MODELS[kind]


def registered_kinds() -> tuple[str, ...]:
    """Unit kinds that have a cost model, in registration order."""
    return tuple(_MODELS)


def model_for(kind: str) -> CostModel:
    """The cost model of unit ``kind``.

    Raises
    ------
    KeyError
        Naming the kind and the kinds that have a model.
    """
    try:
        return _MODELS[kind]
    except KeyError:
        raise KeyError(f"no cost model for unit kind {kind!r}; registered: {sorted(_MODELS)}") from None


_ONNX_TO_DTYPE = {"float32": "fp32", "float64": "fp32", "float16": "fp16", "bfloat16": "bf16",
                  "int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4"}  # fmt: skip


def element_precision(onnx_dtype: str) -> str | None:
    """The precision an ONNX element type is deployed in (``float16`` -> ``fp16``, ``uint8`` ->
    ``int8``), None for one no op is costed in."""
    return _ONNX_TO_DTYPE.get(onnx_dtype)


def requested_dtype(op: Op, precision: str) -> str:
    """The dtype an op asks for: ``precision`` itself, or for ``model`` the op's own float type."""
    if precision != "model":
        return precision
    for t in op.outputs + op.inputs:
        if (got := element_precision(t.dtype)) is not None:
            return got
    return "fp32"


def unit_bandwidth_gbps(unit: Unit, chip: Chip) -> float:
    """Bandwidth the unit sees into its domain: its own port capped by the domain's."""
    dom = chip.domain(unit.domain)
    domain_bw = chip.dram.bandwidth_gbps if dom.kind == "dram" else float(dom.bandwidth_gbps or 0)
    return min(unit.mem_bandwidth_gbps or domain_bw, domain_bw)


def tiling_extra_bytes(
    in_bytes: int, weight_bytes: int, out_bytes: int, capacity_bytes: float, buffers: int = 2
) -> tuple[int, int]:
    """Extra DRAM reads when an op's working set does not fit in ``capacity_bytes``.

    Two tilings are considered and the cheaper is kept: weights split in tiles of half the
    buffer (the input is re-read once per extra tile), or the input split likewise (the weights
    are re-read). ``buffers=1`` (single buffering) gives each tile the whole buffer instead.
    Returns ``(extra_bytes, tiles)``.

    >>> tiling_extra_bytes(100, 100, 100, 1000)
    (0, 1)
    >>> tiling_extra_bytes(1000, 4000, 1000, 2000)  # the input stays, weights stream once
    (0, 1)
    >>> tiling_extra_bytes(3000, 4000, 1000, 2000)  # 3 input tiles, weights read 3 times
    (8000, 3)
    >>> tiling_extra_bytes(3000, 4000, 1000, 2000, buffers=1)  # whole-buffer tiles: 2 weight tiles
    (3000, 2)
    """
    if in_bytes + weight_bytes + out_bytes <= capacity_bytes or capacity_bytes <= 0:
        return 0, 1
    half = capacity_bytes / buffers
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


def repeated(cost: OpCost, times: int) -> OpCost:
    """``cost`` of an op run ``times`` times back to back (:attr:`graph_ir.ir.Op.repeat`): its
    times, traffic and energy multiplied; its tiling is per run.

    >>> c = repeated(OpCost("npu", "int8", 2.0, 1.0, 0.5, 10, 4, 3.0), 3)
    >>> c.latency_ns, c.dram_bytes, c.energy_pj
    (7.5, 42, 9.0)
    """
    if times == 1:
        return cost
    return replace(
        cost,
        compute_ns=cost.compute_ns * times, memory_ns=cost.memory_ns * times, overhead_ns=cost.overhead_ns * times,
        dram_read_bytes=cost.dram_read_bytes * times, dram_write_bytes=cost.dram_write_bytes * times,
        energy_pj=cost.energy_pj * times, stall_ns=cost.stall_ns * times, spill_bytes=cost.spill_bytes * times,
    )  # fmt: skip


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


def efficiency(unit: Unit, op: Op, defaults: Mapping[Category, float]) -> float:
    """Achieved fraction of peak: the chip's per-op-type override, else the model's default for
    the op's category (every model has one per category: :func:`register_model` checks)."""
    if op.op_type in unit.efficiency:
        return unit.efficiency[op.op_type]
    return defaults[op.category]


def unit_dtype(op: Op, unit: Unit, precision: str) -> Dtype | None:
    """The dtype ``unit`` runs ``op`` in, or None when it cannot run the op at all.

    Views run anywhere. Ops without a cost formula (``unknown``) run only on general-purpose
    units (:attr:`chips.schema.Unit.general_purpose`: CPUs) or on units that list them in
    ``supported_ops``. Otherwise the unit must accept the op type and have the requested dtype
    or a wider one.
    """
    unknown = op.category == "unknown"
    if unknown and not unit.general_purpose and op.op_type not in (unit.supported_ops or ()):
        return None
    if op.category != "layout" and not unit.can_run(op.op_type):
        return None
    return unit.dtype_for(requested_dtype(op, precision))


def op_bytes(op: Op, dtype: str) -> tuple[int, int, int]:
    """(activation input, weight, output) bytes with floats stored as ``dtype``."""
    return op.input_bytes(dtype), op.weight_bytes(dtype), op.output_bytes(dtype)


def weight_bytes_read(op: Op, precision: str | None = None) -> int:
    """The bytes of ``op``'s weights one run reads: all of them, but for an embedding lookup
    (``Gather`` from a weight table) the rows it gathers, at most its output, not its table.

    >>> from graph_ir.ir import Tensor
    >>> table, ids = Tensor("t", (100_000, 64), "float32", True), Tensor("i", (1280,), "int64")
    >>> weight_bytes_read(Op("g", "Gather", "data", (table, ids), (Tensor("y", (1280, 64), "float32"),)))
    327680
    """
    w_b = op.weight_bytes(precision)
    return min(w_b, op.output_bytes(precision)) if op.op_type == "Gather" else w_b


U = TypeVar("U", bound=Unit)
#: Costs one op family on one unit: ``(model, op, unit, chip, dtype, in_b, w_b, out_b)``, the
#: bytes of the op's activation inputs, weights and outputs in ``dtype``.
Handler = Callable[[Any, Op, Any, Chip, Dtype, int, int, int], OpCost]


def op_handlers(*families: tuple[Iterable[str], Handler]) -> Mapping[str, Handler]:
    """A model's handler registry from ``(op types, handler)`` families (a later one wins)."""
    return MappingProxyType({t: h for op_types, h in families for t in op_types})


class UnitModel(Generic[U]):
    """The base of the built-in models: eligibility, dtype choice, free views, then the handler
    registered for the op's type, else the model's :meth:`roofline`.

    A subclass sets :attr:`unit_class` (the schema class of its kind, which names the kind),
    :attr:`default_fuses`, :attr:`default_efficiency`, :attr:`handlers` (op type -> handler,
    built with :func:`op_handlers`) and implements :meth:`roofline`.
    """

    #: The schema class of the modelled kind (:mod:`chips.schema`).
    unit_class: type[U]
    default_fuses: ClassVar[frozenset[str]]
    default_efficiency: ClassVar[Mapping[Category, float]]
    accumulates_in_buffer: ClassVar[bool] = False
    #: Op type -> the handler of its family; an op type not listed is costed by :meth:`roofline`.
    handlers: ClassVar[Mapping[str, Handler]] = MappingProxyType({})

    @property
    def kind(self) -> str:
        return kind_tag(self.unit_class)

    def estimate(
        self, op: Op, unit: Unit, chip: Chip, precision: str, knobs: KernelKnobs = DEFAULT_KNOBS
    ) -> OpCost | None:
        if not isinstance(unit, self.unit_class):
            raise TypeError(f"{type(self).__name__} models {self.kind} units; {unit.name!r} is a {unit.kind}")
        dtype = unit_dtype(op, unit, precision)
        if dtype is None:
            return None
        if op.category == "layout":
            return layout_cost(unit, dtype)
        if knobs.is_default():
            return repeated(self.cost(op, unit, chip, dtype, *op_bytes(op, dtype)), op.repeat)
        offered = self.knob_choices(op, unit, chip, precision)
        for name, value in _knob_items(knobs):
            if value is not None and value not in offered.get(name, ()):
                raise ValueError(
                    f"{self.kind} unit {unit.name!r} offers no {name} {value!r} for {op.name!r} ({op.op_type}); "
                    f"offered: {dict(offered)}"
                )
        return repeated(self.mapped_cost(op, unit, chip, dtype, *op_bytes(op, dtype), knobs), op.repeat)

    def knob_choices(self, op: Op, unit: Unit, chip: Chip, precision: str) -> Mapping[str, tuple[str, ...]]:
        """No knobs: a kind that offers some overrides this and :meth:`mapped_cost`."""
        return MappingProxyType({})

    def mapped_cost(
        self, op: Op, unit: U, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int, knobs: KernelKnobs
    ) -> OpCost:
        """Cost of an op run as ``knobs`` say (each checked against :meth:`knob_choices`)."""
        raise NotImplementedError(f"{self.kind} units offer no mapping knobs")

    def cost(self, op: Op, unit: U, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """Cost of an op the unit runs in ``dtype``: its op type's handler, else the roofline."""
        handler = self.handlers.get(op.op_type)
        if handler is None:
            return self.roofline(op, unit, chip, dtype, in_b, w_b, out_b)
        return handler(self, op, unit, chip, dtype, in_b, w_b, out_b)

    def roofline(self, op: Op, unit: U, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int) -> OpCost:
        """The generic cost of an op no handler claims: work at the unit's rate against bytes
        at its bandwidth."""
        raise NotImplementedError
