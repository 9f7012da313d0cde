"""Chip descriptions as data: frozen pydantic models validated from YAML.

A chip is a set of compute units (CPU clusters, GPUs, NPUs, DSPs), each living in one
memory domain, plus the links (DMA) between domains, the shared DRAM, the per-op-type
affinity table and power figures. Units of measure live in the field names.

>>> chip = load_chip("rk3588")
>>> [u.name for u in chip.units][:2]
['cpu_big', 'cpu_little']
"""

from __future__ import annotations

import difflib
import functools
import operator
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, cast

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from graph_ir.files import MAX_TEXT_BYTES, oversize

__all__ = [
    "CATALOG_DIR",
    "DTYPES",
    "Calibration",
    "Chip",
    "ChipError",
    "CpuUnit",
    "Domain",
    "Dram",
    "DspUnit",
    "Dtype",
    "GpuUnit",
    "Link",
    "NpuUnit",
    "Thermal",
    "Unit",
    "UnitCalibration",
    "bundled_chips",
    "chip_json_schema",
    "kind_tag",
    "load_chip",
    "printable",
    "register_unit_kind",
    "unit_class",
    "unit_kinds",
    "unregister_unit_kind",
]

CATALOG_DIR = Path(__file__).resolve().parent

Dtype = Literal["int4", "int8", "fp16", "bf16", "fp32"]
#: Dtypes from narrowest to widest: a unit that lacks the requested dtype runs the next wider one.
DTYPES: tuple[str, ...] = ("int4", "int8", "fp16", "bf16", "fp32")

#: The smallest positive number a chip field takes. No rate, size, time or fraction of a chip is
#: this small (a thermal test's capacitance goes to 2e-11 J/C), and a value far below it (1e-320
#: GB/s) underflows to a zero rate in the engine. What a run of numbers just above it takes, the
#: analysis bounds (``hwsim.analysis.analyze.MAX_RUN_PS``).
SMALLEST_POSITIVE = 1e-15
#: The most cores one unit may have: a many-core host CPU (a 2 x 192-core server with SMT) is under
#: it; every core is a lane the scheduler, the engine and the Gantt chart keep.
MAX_CORES = 1024
#: The most channels one DMA link may have: TI's EDMA3 controller has 64, Arm's PL330 up to 8.
MAX_DMA_CHANNELS = 64


def _not_vanishing(value: float) -> float:
    """Refuse a positive number below :data:`SMALLEST_POSITIVE`.

    >>> _not_vanishing(0.5)
    0.5
    >>> _not_vanishing(1e-320)
    Traceback (most recent call last):
    ValueError: 1e-320 is below 1e-15: no physical value of this field is that small
    """
    if value < SMALLEST_POSITIVE:
        raise ValueError(f"{value:.3g} is below {SMALLEST_POSITIVE:g}: no physical value of this field is that small")
    return value


PositiveFloat = Annotated[float, Field(gt=0), AfterValidator(_not_vanishing)]
NonNegFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Efficiency = Annotated[float, Field(gt=0, le=1), AfterValidator(_not_vanishing)]


class ChipError(ValueError):
    """A chip description is missing, malformed or inconsistent (bad input, exit code 2).

    The message names the file; one problem is one line, several are a first line with the
    file and their count, then one indented line each (:attr:`problems`).
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        #: Each problem as ``where: what`` (the message's own text when there is one problem).
        self.problems: tuple[str, ...] = tuple(problems) or (message,)

    @classmethod
    def listing(cls, source: str, problems: Sequence[str]) -> ChipError:
        """One error for every problem of ``source``.

        >>> print(ChipError.listing("chip.yaml", ["dram.latency_ns: Field required"]))
        chip.yaml: dram.latency_ns: Field required
        >>> print(ChipError.listing("chip.yaml", ["a: bad", "b: worse"]))
        chip.yaml: 2 problems:
          a: bad
          b: worse
        """
        problems = [printable(p) for p in problems]
        if len(problems) == 1:
            return cls(f"{source}: {problems[0]}", problems)
        lines = "".join(f"\n  {p}" for p in problems)
        return cls(f"{source}: {len(problems)} problems:{lines}", problems)


def printable(text: str) -> str:
    """``text`` with its control characters escaped, so that a problem stays on its one line
    whatever key or name the file holds.

    >>> print(printable("units.a\\rb: unknown key"))
    units.a\\rb: unknown key
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class _Problems(ValueError):
    """Every cross-field problem of a chip at once (raised inside validation, unpacked by
    :func:`chip_from_dict`)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


class _Spec(BaseModel):
    #: An infinite or NaN number is refused in every field: no clock, bandwidth or power is.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    #: Defaulted fields that shape the simulated numbers although their default is not a number
    #: (a choice of model, such as an NPU's dataflow).
    numeric_choices: ClassVar[frozenset[str]] = frozenset()

    def defaulted_fields(self) -> tuple[str, ...]:
        """This spec's fields that shape timing, power or energy and that its data left out, so
        that they hold a default nobody chose: those whose default is a number (not a flag),
        and :attr:`numeric_choices`. A default of None (take another field's value, or leave a
        term out), names, kinds, op lists and flags are structure and never listed."""
        out = []
        for name, info in type(self).model_fields.items():
            if name in self.model_fields_set or info.is_required():
                continue
            default = info.get_default(call_default_factory=True)
            number = isinstance(default, (int, float)) and not isinstance(default, bool)
            if number or name in self.numeric_choices:
                out.append(name)
        return tuple(out)


class Dram(_Spec):
    """The physical DRAM every ``kind: dram`` domain is carved from; its bandwidth is shared."""

    bandwidth_gbps: PositiveFloat = Field(
        description="Peak bandwidth in GB/s (1e9 bytes/s), shared by every unit in a dram domain."
    )
    latency_ns: NonNegFloat = Field(description="Access latency in ns, added once per op or transfer.")
    energy_pj_per_byte: NonNegFloat = Field(
        20.0, description="Energy in pJ per byte moved to or from DRAM."
    )
    capacity_mib: PositiveFloat | None = Field(
        None, description="Size in MiB: a run whose memory passes it fails (hwsim run --allow-overcommit reports it)."
    )


class Domain(_Spec):
    """A memory domain: where the tensors of the units placed in it live.

    ``kind: dram`` domains are views of the shared DRAM (their traffic competes for
    :attr:`Dram.bandwidth_gbps`); ``kind: sram`` domains are on-chip buffers with their
    own bandwidth and capacity.
    """

    name: str = Field(description="The domain's name; units and links refer to it.")
    kind: Literal["dram", "sram"] = Field(
        "dram",
        description="dram: a view of the shared DRAM (dram domains reach each other through it); "
        "sram: an on-chip buffer with its own bandwidth_gbps.",
    )
    bandwidth_gbps: PositiveFloat | None = Field(
        None, description="Own bandwidth in GB/s of an sram domain; dram domains use the DRAM's."
    )
    capacity_kib: PositiveFloat | None = Field(
        None, description="Size in KiB of an sram domain: what it cannot hold spills to DRAM (costed)."
    )

    @model_validator(mode="after")
    def _sram_has_bandwidth(self) -> Domain:
        if self.kind == "sram" and self.bandwidth_gbps is None:
            raise ValueError(f"sram domain {self.name!r} needs bandwidth_gbps")
        return self


class Link(_Spec):
    """A DMA path between two domains (both directions unless ``bidirectional: false``)."""

    src: str = Field(description="The domain data comes from.")
    dst: str = Field(description="The domain data goes to.")
    bandwidth_gbps: PositiveFloat = Field(description="Copy bandwidth in GB/s of one DMA channel.")
    latency_ns: NonNegFloat = Field(description="Set-up latency in ns paid once per transfer.")
    dma_channels: PositiveInt = Field(
        1, le=MAX_DMA_CHANNELS,
        description=f"Transfers the link carries at once (each at bandwidth_gbps); at most {MAX_DMA_CHANNELS}.",
    )
    bidirectional: bool = Field(
        True, description="Whether the link also carries dst -> src (sharing its channels)."
    )
    derived: bool = Field(
        False,
        description="Set by hwsim, never in a chip file: two dram domains the file links by no "
        "link reach each other through the DRAM, a DRAM-to-DRAM copy at the DRAM's "
        "bandwidth_gbps and latency_ns on 1 channel. A derived link is derived again, following "
        "the DRAM, each time the chip is validated; an explicit link always wins.",
    )

    @property
    def key(self) -> str:
        """The link's one name: ``a<->b`` (both directions share its channels) or ``a->b``.

        The engine keys its channel pools by it, the trace and plots name DMA tracks by it, and
        ``--set`` / ``sensitivity --param`` address its fields as ``link.KEY.FIELD``.
        """
        return f"{self.src}<->{self.dst}" if self.bidirectional else f"{self.src}->{self.dst}"

    @property
    def names(self) -> tuple[str, ...]:
        """Every name that addresses this link in ``link.NAME.FIELD``: :attr:`key` first, then
        ``src-dst``; a bidirectional link answers to both with its ends swapped too.

        >>> Link(src="cpu", dst="npu", bandwidth_gbps=8, latency_ns=0).names
        ('cpu<->npu', 'npu<->cpu', 'cpu-npu', 'npu-cpu')
        """
        ends = [(self.src, self.dst)] + ([(self.dst, self.src)] if self.bidirectional else [])
        arrow = "<->" if self.bidirectional else "->"
        return tuple(f"{a}{arrow}{b}" for a, b in ends) + tuple(f"{a}-{b}" for a, b in ends)

    def transfer_ns(self, nbytes: float) -> float:
        """Uncontended time to move ``nbytes`` over this link: bytes over bandwidth plus set-up.

        Returns
        -------
        float
            Nanoseconds (1 GB/s = 1 byte/ns).

        >>> Link(src="cpu", dst="npu", bandwidth_gbps=8, latency_ns=100).transfer_ns(800)
        200.0
        """
        return nbytes / self.bandwidth_gbps + self.latency_ns


class Unit(_Spec):
    """What every compute unit has, whatever its kind; a kind is a subclass registered with
    :func:`register_unit_kind` (the chip's ``units`` accept every registered kind).

    A kind states its facts on its class, so nothing elsewhere asks ``if kind == ...``:
    ``kind`` (a ``Literal`` field with that one value as default), the class attributes
    :attr:`general_purpose`, :attr:`ep_priority` and :attr:`sweep_fields`, and the methods
    :meth:`dtypes`, :meth:`onchip_bytes` and :meth:`peak_flops_per_ns`. Its cost model lives in ``cost_models``.
    """

    #: Whether the unit runs any op, those without a cost formula (category ``unknown``)
    #: included; other units run those only when they list them in ``supported_ops``.
    general_purpose: ClassVar[bool]
    #: The kind's place in onnxruntime's execution-provider priority (lowest first: accelerators
    #: before the CPU, which takes the rest); the ``ort-greedy`` policy orders units by it.
    ep_priority: ClassVar[int]
    #: The unit's fields a sensitivity study sweeps by default (``hwsim sensitivity``).
    sweep_fields: ClassVar[tuple[str, ...]]
    #: What :meth:`onchip_bytes` is called in a sentence ("SRAM", "L2").
    onchip_level: ClassVar[str] = "on-chip buffer"

    name: str = Field(description="The unit's name (reports, --set, --units and affinity use it).")
    domain: str = Field(
        "",
        description="The memory domain the unit's tensors live in. Left out: a domain of its own, "
        "named after the unit, of kind dram (the chip adds it to domains).",
    )
    clock_mhz: PositiveFloat = Field(description="Clock in MHz.")
    cores: PositiveInt = Field(
        1, le=MAX_CORES,
        description=f"Identical cores (an NPU's MAC arrays); each runs one op at a time. At most {MAX_CORES}.",
    )
    mem_bandwidth_gbps: PositiveFloat | None = Field(
        None, description="The unit's own port into its domain in GB/s; None means the domain's."
    )
    op_overhead_ns: NonNegFloat = Field(
        0.0, description="Fixed cost in ns per op (dispatch, launch, layer set-up)."
    )
    active_w: NonNegFloat = Field(1.0, description="Power in W of one core while it runs an op.")
    idle_w: NonNegFloat = Field(0.05, description="Power in W of the whole unit while it idles.")
    supported_ops: tuple[str, ...] | None = Field(
        None, description="If set, the only ONNX op types this unit can run."
    )
    unsupported_ops: tuple[str, ...] = Field((), description="ONNX op types this unit cannot run.")
    fuses: tuple[str, ...] | None = Field(
        None,
        description=(
            "Elementwise/activation op types this unit fuses into the conv/matmul before them "
            "(no DRAM round trip for the intermediate); None means the default of the unit's kind."
        ),
    )
    efficiency: dict[str, Efficiency] = Field(
        default_factory=dict,
        description="Achieved fraction of peak per ONNX op type (calibration), overrides defaults.",
    )
    split_ops: tuple[str, ...] = Field(
        (),
        description=(
            "ONNX op types one op of which may be split across several cores of this unit "
            "(each core computes a slice of the output rows; weights are read by every core)."
        ),
    )
    split_overhead_ns: NonNegFloat = Field(
        0.0, description="Extra cost in ns of running one op split across cores (partition, sync)."
    )
    split_cores: Literal["fastest", "all"] = Field(
        "fastest",
        description=(
            "How many cores an op of ``split_ops`` takes when the schedule leaves it open: "
            "'fastest' the count that runs it soonest, its shards sharing their memory's "
            "bandwidth (a runtime that chooses per layer); 'all' every idle core, as a compiler "
            "that splits each such layer over the whole core mask does (RKNN's multi-core mode), "
            "one core where the op does not split that many ways."
        ),
    )
    core_mode: Literal["independent", "lockstep"] = Field(
        "independent",
        description=(
            "How the unit's cores share one model: 'independent' runs different ops on different "
            "cores at once; 'lockstep' runs the ops one at a time in the model's order, each op "
            "in ``split_ops`` split over the cores and every other op on core 0 (RKNN's "
            "multi-core mode); the cores sync at job boundaries, each one more ``op_overhead_ns`` "
            "(hwsim.sim.jobs)."
        ),
    )
    #: The unit kind (``cpu``, ``gpu``, ...): each kind's class fixes it to one value.
    kind: str

    @property
    def ops_at_once(self) -> int:
        """How many ops the unit runs at the same time: one per core, or one in all when its
        cores run in lockstep (each op split over them, or on core 0 while the others wait).

        A scheduler that plans such a unit as several cores plans ops side by side that the
        unit runs one after the other.
        """
        return 1 if self.core_mode == "lockstep" else self.cores

    def defaulted_fields(self) -> tuple[str, ...]:
        """As :meth:`_Spec.defaulted_fields`; ``split_overhead_ns`` only when the unit splits ops."""
        out = super().defaulted_fields()
        return out if self.split_ops else tuple(f for f in out if f != "split_overhead_ns")

    @model_validator(mode="after")
    def _splittable_ops_run_here(self) -> Unit:
        for op_type in self.split_ops:
            if not self.can_run(op_type):
                raise ValueError(f"split_ops: {op_type!r} is not an op type unit {self.name!r} runs")
        return self

    def can_run(self, op_type: str) -> bool:
        """Whether this unit accepts ``op_type`` at all (dtype aside)."""
        if op_type in self.unsupported_ops:
            return False
        return self.supported_ops is None or op_type in self.supported_ops

    def dtypes(self) -> tuple[str, ...]:
        """Dtypes this unit computes natively, narrowest first."""
        raise NotImplementedError

    def onchip_bytes(self) -> float:
        """Bytes of the on-chip buffer an op's output tile stays in between a layer and the ops
        fused into its epilogue (SRAM, or the cache level the kind's kernels block for)."""
        raise NotImplementedError

    def peak_flops_per_ns(self, dtype: str) -> float:
        """Peak arithmetic rate of one core at ``dtype`` (a MAC counts 2): FLOP per ns, that is
        GFLOP/s; 0.0 for a dtype the unit does not compute natively (see :meth:`dtype_for`)."""
        raise NotImplementedError

    def dtype_for(self, requested: str) -> Dtype | None:
        """The dtype the unit runs for ``requested``: itself, else the next wider it supports.

        >>> NpuUnit(name="n", domain="d", clock_mhz=1000, mac_rows=8, mac_cols=8, sram_kib=64,
        ...         macs_per_pe_per_cycle={"int8": 1.0, "fp16": 0.5}).dtype_for("int4")
        'int8'
        """
        if requested not in DTYPES:
            raise ValueError(f"unknown dtype {requested!r}; expected one of {DTYPES}")
        have = self.dtypes()
        for d in DTYPES[DTYPES.index(requested) :]:
            if d in have:
                return cast(Dtype, d)
        return None


#: The registered unit kinds by their ``kind`` tag: the chip's ``units`` are their union.
_KINDS: dict[str, type[Unit]] = {}
#: What a kind's class must state (see :class:`Unit`).
_KIND_FACTS = ("general_purpose", "ep_priority", "sweep_fields")
_KIND_METHODS = ("dtypes", "onchip_bytes", "peak_flops_per_ns")
U = TypeVar("U", bound=Unit)


def kind_tag(cls: type[Unit]) -> str:
    """The ``kind`` value a unit class is fixed to (its ``Literal`` default).

    >>> kind_tag(NpuUnit)
    'npu'
    """
    default = cls.model_fields["kind"].default
    if not isinstance(default, str):
        raise TypeError(f"{cls.__name__} must fix its kind: kind: Literal['x'] = 'x'")
    return default


def register_unit_kind(cls: type[U]) -> type[U]:
    """Add a unit kind: chips may then hold units of ``cls`` (class decorator).

    Raises
    ------
    TypeError
        When ``cls`` does not fix its ``kind`` or lacks one of the facts every kind states.
    ValueError
        When another class already holds its kind.
    """
    kind = kind_tag(cls)
    missing = [f for f in _KIND_FACTS if not hasattr(cls, f)]
    missing += [f"{m}()" for m in _KIND_METHODS if getattr(cls, m) is getattr(Unit, m)]
    if missing:
        raise TypeError(f"unit kind {kind!r} ({cls.__name__}) does not state {', '.join(missing)}")
    if _KINDS.get(kind, cls) is not cls:
        raise ValueError(f"unit kind {kind!r} is already registered by {_KINDS[kind].__name__}")
    _KINDS[kind] = cls
    _rebuild_chip()
    return cls


def unregister_unit_kind(kind: str) -> None:
    """Remove a unit kind added by :func:`register_unit_kind` (a test's clean-up)."""
    unit_class(kind)
    del _KINDS[kind]
    _rebuild_chip()


def unit_kinds() -> tuple[str, ...]:
    """The registered unit kinds, in registration order (built-ins: cpu, gpu, npu, dsp)."""
    return tuple(_KINDS)


def unit_class(kind: str) -> type[Unit]:
    """The class of unit ``kind``.

    Raises
    ------
    KeyError
        Naming the kind and the registered ones.
    """
    try:
        return _KINDS[kind]
    except KeyError:
        raise KeyError(f"unknown unit kind {kind!r}; registered kinds: {', '.join(_KINDS)}") from None


def _rebuild_chip() -> None:
    """Make :class:`Chip` accept exactly the registered kinds: its ``units`` are a union of
    their classes, told apart by ``kind`` (an unknown kind is a validation error naming the
    registered ones)."""
    chip = globals().get("Chip")
    if chip is None:  # the built-in kinds register before Chip is defined
        return
    kinds: list[Any] = list(_KINDS.values())
    member: Any = kinds[0]
    if len(kinds) > 1:
        member = Annotated[functools.reduce(operator.or_, kinds), Field(discriminator="kind")]
    chip.model_fields["units"] = FieldInfo.merge_field_infos(
        chip.model_fields["units"], annotation=tuple[member, ...]
    )
    chip.model_rebuild(force=True)


@register_unit_kind
class CpuUnit(Unit):
    """A CPU cluster: ``cores`` identical cores with SIMD, private L1/L2 and a shared L3."""

    general_purpose: ClassVar[bool] = True
    ep_priority: ClassVar[int] = 3
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz",)
    onchip_level: ClassVar[str] = "L2"

    kind: Literal["cpu"] = "cpu"
    flops_per_cycle: dict[Dtype, PositiveFloat] = Field(
        description="FLOP per cycle per core by dtype; a MAC counts 2 (e.g. NEON fp32 2x128-bit FMA = 16)."
    )
    l1_kib: PositiveFloat = Field(64, description="L1 data cache per core in KiB.")
    l2_kib: PositiveFloat = Field(512, description="L2 cache per core in KiB.")
    l3_kib: NonNegFloat = Field(0, description="L3 cache shared by the cluster in KiB (0: none).")
    l1_bandwidth_gbps: PositiveFloat = Field(100.0, description="L1 bandwidth per core in GB/s.")
    l2_bandwidth_gbps: PositiveFloat = Field(50.0, description="L2 bandwidth per core in GB/s.")
    l3_bandwidth_gbps: PositiveFloat = Field(30.0, description="L3 bandwidth per core in GB/s.")
    weight_stream_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a MatMul/Gemm kernel streams its weights from DRAM *in addition to* its "
        "compute: the stream stalls the kernel instead of overlapping it (measured by `hwsim fingerprint`). "
        "None: weights overlap the compute (plain roofline).",
    )
    weight_cache_kib: PositiveFloat | None = Field(
        None,
        description="What a loop of inferences keeps of a model's GEMM weights from one run to the next, KiB: the "
        "capacity C of the cyclic law (a pass over S bytes of weights keeps max(0, 2 C - S) of them; the rest "
        "stalls at weight_stream_gbps), measured by `hwsim fingerprint` on chains of MatMuls over distinct weights. "
        "None: all of them where they fit the last-level cache with the largest working set, none otherwise.",
    )
    loop_cache_kib: PositiveFloat | None = Field(
        None,
        description="What a loop of inferences keeps of the last-level cache between two runs' uses of a byte, KiB: "
        "the capacity C of the cyclic law (a pass over S bytes keeps max(0, 2 C - S) of them) for the model's weights "
        "and the run's other bytes, measured by `hwsim fingerprint` on chains of memory-bound 4-row MatMuls over "
        "distinct weights (a VM's neighbours share the L3). None: l3_kib.",
    )
    weight_cached_gbps: PositiveFloat | None = Field(
        None,
        description="With weight_cache_kib: the rate at which a MatMul/Gemm kernel stalls on the weights kept "
        "there (beyond L2), in addition to its compute, as weight_stream_gbps does on the rest (measured by "
        "`hwsim fingerprint`). None: the kept weights add nothing.",
    )
    weights_in_cache: bool = Field(
        False,
        exclude=True,
        description="The model's weights stay in the caches between inferences (set for a fingerprinted CPU whose "
        "last-level cache holds all of a model's weights, by `cost_models.table.steady_state_unit`): an op reads "
        "its weights from the cache level that holds its working set, not from DRAM. A property of one model on "
        "the unit, not of the chip: left out of dumps (and of the chip's sha256).",
    )
    resident_weight_bytes: NonNegFloat | None = Field(
        None,
        exclude=True,
        description="With weights_in_cache: the bytes of all the model's weights, which a loop of inferences "
        "streams cyclically, so an op's weights come from the smallest cache level holding all of them, not "
        "from the level of its own working set. Set with weights_in_cache; without it, the bytes the loop streams "
        "through the caches from DRAM, the weights and the run's other bytes (a one-row product's weights: the "
        "part the last level keeps from one pass to the next). Left out of dumps.",
    )
    gemv_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a matrix-vector kernel (one row, as onnxruntime's LSTM/GRU steps run) streams "
        "its matrix from a cache level that is faster still: core-bound (measured by `hwsim fingerprint`). "
        "None: recurrent ops keep the cache-level roofline.",
    )
    gemv_l1_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which that matrix-vector kernel streams a matrix that fits the L1 (an LSTM's R of "
        "hidden 40 on a 48 KiB L1), measured by `hwsim fingerprint`; a matrix larger than the L1 keeps none of it "
        "there. None: `gemv_gbps` holds in L1 too.",
    )
    lstm_direction_ns: PositiveFloat | None = Field(
        None,
        description="What onnxruntime's LSTM pays per direction beside its steps (its buffers, a reversed "
        "direction's copies), ns, measured by `hwsim fingerprint` from one and two directions. None: nothing.",
    )
    gru_direction_ns: PositiveFloat | None = Field(
        None,
        description="The same for onnxruntime's GRU, ns. None: nothing.",
    )
    gemv_far_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which that matrix-vector kernel streams a matrix at least twice the L2 (from L3 or "
        "DRAM), measured by `hwsim fingerprint`; with it a cyclic stream keeps only max(0, 2 C - S) of an S-byte "
        "matrix in a C-byte cache it overflows. None: the bytes beyond L2 at the level's own bandwidth.",
    )
    gemv_dram_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a one-row float GEMM (Gemm or MatMul with M = 1 over constant weights) streams "
        "weights that no cache holds, from DRAM, on one core (measured by `hwsim fingerprint` on weights of four "
        "times the last-level cache: 23-26 GB/s on an AMD EPYC whose read sweep and triad reach 38-39). None: the "
        "DRAM bandwidth.",
    )
    fft_butterfly_ns: PositiveFloat | None = Field(
        None,
        description="Time per radix-2 butterfly of onnxruntime's STFT/DFT kernel (measured by `hwsim fingerprint`; "
        "with fft_point_ns). None: STFT/DFT cost their FLOPs on the roofline.",
    )
    fft_point_ns: PositiveFloat | None = Field(
        None, description="Time per point of one transform of onnxruntime's STFT/DFT kernel, beside its butterflies."
    )
    fft_stride_ns: PositiveFloat | None = Field(
        None,
        description="Time per butterfly of each stage of onnxruntime's radix-2 DFT along an axis that is not the "
        "last whose points no longer fit the L1 sets they fall in, the other stages in its shadow (the transform "
        "takes the longer of this and its time on contiguous points), measured by `hwsim fingerprint` from two "
        "transforms 1 KiB apart. None: not costed.",
    )
    fft_page_stride_ns: PositiveFloat | None = Field(
        None,
        description="fft_stride_ns where the points lie a multiple of 4 KiB apart (one L1 set, and each load waits "
        "on the store before it with the same low address bits), measured from a transform 4 KiB apart. None: "
        "fft_stride_ns.",
    )
    parallel_section_ns: PositiveFloat | None = Field(
        None,
        description="Cost of one parallel section of onnxruntime's intra-op thread pool (hand the work out, join), "
        "measured by `hwsim fingerprint` on a host with 2 or more threads. None: the CPU model's default.",
    )
    recurrent_section_ns: PositiveFloat | None = Field(
        None,
        description="What one split product of a recurrent step that is its own parallel section (LSTM/RNN on 2 "
        "or more threads; a GRU's are loops in one section and keep the model's figure) pays onnxruntime's "
        "intra-op pool, ns: fit by calibration on several threads from the LSTM/RNN kernels whose step hand-offs "
        "outweigh their compute. None: the CPU model's default.",
    )
    run_footprint_kib: NonNegFloat | None = Field(
        None,
        description="L2 that one onnxruntime run call takes for itself (the interpreter's and the runtime's own "
        "code and data) from weights a model streams once per run: a cyclic stream of the weights keeps "
        "l2_kib less this much in L2 (measured by `hwsim fingerprint` as the difference between a weight "
        "stream's first pass in a run and its later passes). None: the whole l2_kib.",
    )
    requant_ns: PositiveFloat | None = Field(
        None,
        description="Time per output element of onnxruntime's integer GEMM kernels (QLinearMatMul, QLinearConv, "
        "QGemm: requantizing each int32 accumulator to 8 bits), beside their MACs at the int8 rate (measured by "
        "`hwsim fingerprint`). None: those kernels cost their MACs only.",
    )
    int8_pack_ns: PositiveFloat | None = Field(
        None,
        description="Time per element of a B matrix that is no constant (attention's K and V) that onnxruntime's "
        "integer GEMM packs at run time (a constant one is packed once, at load), measured by `hwsim fingerprint`. "
        "None: not costed.",
    )
    int8_conv_call_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time of one QLinearConv call beside its per-pixel costs, MACs and requantization (the "
        "indirection buffer and kernel set-up; measured by `hwsim fingerprint` from the same conv over two planes). "
        "None: not costed (folded into int8_conv_pixel_ns, as before it was measured).",
    )
    int8_conv_pixel_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per output pixel of MLAS's symmetric (indirect) int8 conv kernel, beside its MACs "
        "(output channels padded to blocks of 16) and requantization (measured by `hwsim fingerprint` from a narrow "
        "and a wide QLinearConv). None: not costed.",
    )
    int8_im2col_pixel_ns: PositiveFloat | None = Field(
        None,
        description="Time per output pixel of a QLinearConv MLAS's symmetric kernel does not take (input channels "
        "not a multiple of 4, under 16 output channels: a 3-channel stem), run as im2col and an integer GEMM, "
        "beside its MACs and requantization (measured by `hwsim fingerprint`). None: not costed.",
    )
    int8_conv_mac_ps: PositiveFloat | None = Field(
        None,
        description="Time per MAC of MLAS's symmetric int8 conv kernel with its packed filter block in L1: the rate "
        "a QLinearConv's MACs run at, on either path (measured by `hwsim fingerprint` from the 64 -> 64 and 8 -> 16 "
        "channel convs; on an AMD EPYC 12 % above the int8 MatMul's rate, the unit's int8 peak). None: the unit's "
        "int8 peak holds.",
    )
    int8_conv_l2_mac_ps: PositiveFloat | None = Field(
        None,
        description="Time per MAC of MLAS's symmetric int8 conv kernel when its packed filter block (64 output "
        "channels x input channels x kernel window bytes) exceeds L1 and streams from L2 for every 6 output pixels "
        "(measured by `hwsim fingerprint` from a 256 -> 64 channel conv). None: the QLinearConv rate holds.",
    )
    int8_gemv_call_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per call of a one-row integer GEMM (QGemm, QLinearMatMul with M = 1 and constant "
        "weights), beside its weight stream (measured by `hwsim fingerprint` from two sizes). None: not costed.",
    )
    softmax_denormal_ns: PositiveFloat | None = Field(
        None,
        description="Time per element of a Softmax's input whose additive mask constant lies below ln(FLT_MIN) "
        "(about -87.3: a causal mask of -1e4 or -inf), where exp gives denormals that x86 without flush-to-zero "
        "computes slowly (onnxruntime leaves denormals on), measured by `hwsim fingerprint` from a masked and an "
        "unmasked Softmax. None: not costed.",
    )
    norm_row_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per row of onnxruntime's LayerNormalization kernel, beside its time per element (each "
        "row's mean and variance reductions and their set-up), measured by `hwsim fingerprint` from rows of 32 and of "
        "768 floats at the same element count. None: not costed.",
    )
    reduce_row_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per row of onnxruntime's ReduceSum/Mean/Max/Min over contiguous rows (the reduced axes "
        "last: one aggregation per row), beside the time per element, measured by `hwsim fingerprint` from rows of 2 and "
        "of 256 floats at the same element count. None: not costed.",
    )
    reduce_block_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per block of onnxruntime's ReduceSum/Mean over a middle run of axes (a matrix product "
        "of ones per block of the kept leading axes), beside the time per element, measured by `hwsim fingerprint` from "
        "2,048 and 64 blocks at the same element count. None: not costed.",
    )
    reduce_column_row_ns: PositiveFloat | None = Field(
        None,
        description="Time per reduced row of onnxruntime's ReduceSum/Mean over a middle run of axes when each block "
        "is narrower than 16 floats (its matrix product of ones walks the rows one at a time), beside the time per "
        "element, measured by `hwsim fingerprint` from 2,048 blocks of 64 x 1 and of 2 x 1. None: not costed.",
    )
    reduce_generic_ns: PositiveFloat | None = Field(
        None,
        description="Time per element of onnxruntime's ReduceSum/Mean/Max/Min on its generic loop (off the "
        "KR, RK and KRK fast paths: a middle axis of a single block, a short leading axis), beside the fast "
        "paths' time per element, measured by `hwsim fingerprint` from one block of 64 x 3,000 floats against two "
        "of 32 x 3,000. None: not costed.",
    )
    slice_run_ns: PositiveFloat | None = Field(
        None,
        description="Time per run of contiguous elements onnxruntime's Slice copies (each run a copy and a step "
        "of its multi-axis index), beside the time per byte, measured by `hwsim fingerprint` from runs of one "
        "float. None: not costed.",
    )
    slice_step_element_ns: PositiveFloat | None = Field(
        None,
        description="Time per element of onnxruntime's Slice where its innermost sliced axis steps by other than "
        "1 (a decimation, copied element by element), measured by `hwsim fingerprint`. None: not costed.",
    )
    gather_row_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per row of onnxruntime's Gather (each id read, its offset computed and one copy "
        "called for its row), beside the time per byte, measured by `hwsim fingerprint` from rows of 1 and of 256 "
        "floats at the same output size. None: not costed.",
    )
    gather_dram_row_ns: PositiveFloat | None = Field(
        None,
        description="What an embedding lookup (Gather from a weight table) pays per row beyond its time with the rows "
        "cached, where its rows are in DRAM (a model whose weights do not stay in the last-level cache from run to run), "
        "measured by `hwsim fingerprint`. None: not costed.",
    )
    gather_dram_line_ns: PositiveFloat | None = Field(
        None,
        description="What such a lookup pays per 64-byte line of each row from DRAM beside gather_dram_row_ns, measured "
        "by `hwsim fingerprint` from rows of 4 and of 48 lines. None: not costed.",
    )
    thread_check_speedup: PositiveFloat | None = Field(
        None,
        description="How many times faster a chain of 16 MatMuls of 128 cubed ran on all the unit's cores than on one "
        "when `hwsim fingerprint` measured the host (1.67-1.81 on a 2-vCPU Intel Xeon, 1.9-2.0 on a 2-vCPU AMD EPYC): "
        "`hwsim validate` marks a round whose chain ran under 0.9 of this (or of the core count) as taken while the "
        "other threads lagged. None: the core count.",
    )
    scatter_far_update_ns: PositiveFloat | None = Field(
        None,
        description="What onnxruntime's ScatterElements pays per update beyond its rate in L2 when its indices and "
        "updates stream from beyond L2 (it adds one update at a time, each index looked up alone), measured by "
        "`hwsim fingerprint` from a probe in L2 and one of 12 MiB. None: not costed.",
    )
    fp32_batch_call_ns: PositiveFloat | None = Field(
        None,
        description="What onnxruntime's batched float MatMul over run-time matrices (more than one row each) pays per "
        "matrix beside its FMAs (one MLAS GEMM call per matrix), measured by `hwsim fingerprint` from the same FMAs and "
        "elements of B in 512 and in 32 matrices. None: not costed.",
    )
    softmax_row_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per row of onnxruntime's Softmax kernel, beside its time per element (each row's max, "
        "sum and scale), measured by `hwsim fingerprint` from rows of 32 and of 768 floats at the same element count. "
        "None: not costed.",
    )
    vector_floats: PositiveInt | None = Field(
        None,
        description="Floats in one vector of the widest instruction set onnxruntime's MLAS kernels use on this CPU: 16 "
        "with AVX-512, 8 with AVX2, written by `hwsim fingerprint`. A row-at-a-time kernel works each row in such "
        "vectors, the last one partial (masked) where the row is not a whole number of them. None: not known.",
    )
    softmax_tail_ns: PositiveFloat | None = Field(
        None,
        description="What onnxruntime's Softmax pays more per row whose last vector (vector_floats) is partial, beside "
        "its time per element and softmax_row_ns, with softmax_tail_element_ns per float of that vector, measured by "
        "`hwsim fingerprint` (hwsim.host.softmax_probe) from partial vectors of 1 and of vector_floats - 1 floats, "
        "each row written to a buffer of its own. None: not costed.",
    )
    softmax_tail_element_ns: PositiveFloat | None = Field(
        None,
        description="What each float of such a partial vector costs more than one of a whole vector (see "
        "softmax_tail_ns). None: not costed.",
    )
    softmax_in_place_tail_ns: PositiveFloat | None = Field(
        None,
        description="What such a row pays more again where the Softmax writes over its input (onnxruntime gives a float "
        "Softmax its input's buffer where nothing else reads it: attention's scores), for rows of up to "
        "cost_models.cpu_layout.IN_PLACE_TAIL_VECTORS vectors, measured by `hwsim fingerprint` from rows of "
        "3 x vector_floats - 1 floats in place and apart. None: not costed.",
    )
    transpose_element_ns: PositiveFloat | None = Field(
        None,
        description="Time per element of onnxruntime's Transpose where it walks the tensor one element at a time (more "
        "than one axis moves and the last does not stay; a Softmax over another axis than the last runs two such), "
        "measured by `hwsim fingerprint`. None: such a Transpose is priced as a copy.",
    )
    transpose_block_ns: PositiveFloat | None = Field(
        None,
        description="Time per 16- or 32-bit unit of onnxruntime's Transpose that moves one axis (NCHW <-> NHWC, the "
        "last two axes swapped) where MLAS moves it in its 4 x 4 blocks, the axis moving inwards (NCHW -> NHWC), "
        "measured by `hwsim fingerprint` from floats. None (or without transpose_edge_ns): such a Transpose is priced "
        "as a copy.",
    )
    transpose_outward_factor: float | None = Field(
        None,
        ge=1.0,
        description="How much longer MLAS's blocks of floats take where onnxruntime's Transpose moves an axis outwards "
        "(NHWC -> NCHW, the last two axes swapped: each block written to as many output rows) than inwards, measured "
        "by `hwsim fingerprint` from the float probes moved both ways (1.2 on the CI Xeon, 1.48 on an AMD EPYC; an "
        "older fingerprint's is that of floats and bytes together, 1.3-1.5). None: 1.",
    )
    transpose_byte_outward_factor: float | None = Field(
        None,
        ge=1.0,
        description="transpose_outward_factor for blocks of bytes (1.7 on the CI Xeon where floats took 1.2; 2.0 and "
        "1.48 on an AMD EPYC, Zen 5), measured by `hwsim fingerprint` from the byte probes moved both ways. None: "
        "transpose_outward_factor.",
    )
    transpose_shared_line_factor: float | None = Field(
        None,
        ge=1.0,
        description="transpose_outward_factor where the rows lie less than a cache line apart (several share each line "
        "a pass reads, in order): 1.0 on an AMD EPYC (Zen 5), 1.7 on the CI Xeon, measured by `hwsim fingerprint` "
        "from 32 channels of bytes moved both ways. None: the factor of the unit's size.",
    )
    transpose_pass_lines: float | None = Field(
        None,
        ge=1.0,
        le=2.0,
        description="Cache lines per row a pass of onnxruntime's Transpose that moves an axis outwards (NHWC -> NCHW) "
        "reads again from beyond L2 once its rows' lines outgrow L2: 2 where the L2 fetches each line's 128-byte pair "
        "with it (the CI Xeon), 1 where it does not (an AMD EPYC, Zen 5). Measured by `hwsim fingerprint` from floats "
        "whose passes fit L2 at one line a row and not at two. None: 2.",
    )
    transpose_byte_block_ns: PositiveFloat | None = Field(
        None,
        description="Time per byte-sized unit of onnxruntime's Transpose that moves one axis where MLAS moves it in "
        "its 8 x 8 blocks, the axis moving inwards, measured by `hwsim fingerprint` from bytes. None: a Transpose of "
        "bytes is priced as a copy.",
    )
    transpose_edge_ns: PositiveFloat | None = Field(
        None,
        description="Time per unit of onnxruntime's Transpose that moves one axis where MLAS moves it one at a time "
        "(the rows and columns no square block covers: a camera frame's 3 channels), measured by `hwsim "
        "fingerprint` from 3 channels of bytes moved both ways; a unit of 8 bytes counts twice. None: such a "
        "Transpose is priced as a copy.",
    )
    transpose_memcpy_ns: PositiveFloat | None = Field(
        None,
        description="Time per unit of onnxruntime's Transpose that moves one axis in units of another size than 1, 2, 4 "
        "or 8 bytes (an attention head of 3-32 floats carried with the axis it follows): one memcpy call per unit "
        "(`TransposeSingleAxisOutwards`/`Inwards`), measured by `hwsim fingerprint` from heads of 8 floats (7.0-7.5 "
        "ns on an AMD EPYC, Zen 5, for units of 12-128 bytes alike). None: such a Transpose is priced as a copy.",
    )
    gemm_aliased_factor: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="Rate of onnxruntime's float GEMM (MLAS SGEMM: MatMul, Gemm) whose A rows lie a multiple of "
        "4 KiB apart (K = 1024, 2048, 3072, ... floats), relative to its rate otherwise: the rows its kernel reads "
        "together fall in the same L1 cache sets. Measured by `hwsim fingerprint` from MatMuls of K = 2048 and 2304 "
        "(0.90 on an AMD EPYC). None: not costed.",
    )
    col2im_ns: PositiveFloat | None = Field(
        None,
        description="What a ConvTranspose's col2im pays per element of its column buffer on onnxruntime's 2-D fast "
        "path (stride 1, or no padding), ns, measured by `hwsim fingerprint` (a ConvTranspose less a MatMul of its "
        "GEMM). None: an Add pass over the columns through L1.",
    )
    col2im_strided_ns: PositiveFloat | None = Field(
        None,
        description="The same on onnxruntime's generic col2im loop (2-D, strided and padded; Col2imNd in other ranks "
        "at 1.3x it), ns, measured by `hwsim fingerprint`. None: the Add pass times the path's factor.",
    )
    nchwc_activation_pass_ns: dict[str, PositiveFloat] | None = Field(
        None,
        description="Per activation (Clip, HardSigmoid, HardSwish, LeakyRelu, Sigmoid, Tanh), what MLAS's pass over "
        "an NCHWc conv's output costs per output element when the activation is fused (a Relu the kernel applies "
        "in its stores, free), ns. Measured by `hwsim fingerprint` as the time each adds to a chain of 64-channel "
        "3x3 depthwise convs (Clip 0.08, Sigmoid 0.24 on an AMD EPYC, Zen 5). None, or one not named: 0.14, the "
        "CI Xeon's Clip.",
    )
    depthwise_tile_ns: dict[Literal[3, 5, 7], tuple[PositiveFloat, PositiveFloat]] | None = Field(
        None,
        description="Per kernel width (3, 5, 7), what onnxruntime's NCHWc depthwise conv pays per output element "
        "(a channel at one pixel, at the full kernel height) on MLAS's sliding-window kernel (stride and dilation 1 "
        "along the width): in a tile of outputs whose inputs all lie inside the row, and in one that touches the "
        "padding (masked loads and FMAs), ns. Measured by `hwsim fingerprint` from chains of 64-channel depthwise "
        "convs with rows of ten tiles and of one (3x3 on an AMD EPYC, Zen 5: 0.094 and 0.216). None: the taps at "
        "the calibrated rate (depthwise_output_ns and depthwise_tap_ns where measured).",
    )
    depthwise_row_ns: PositiveFloat | None = Field(
        None,
        description="What the sliding-window kernel of depthwise_tile_ns pays per call, one output row of one "
        "block of channels, beside its tiles, ns. Measured by `hwsim fingerprint` from 3x3 rows of 12 and of 3 "
        "outputs (7 on an AMD EPYC, Zen 5). None: in the tiles' figures.",
    )
    depthwise_call_ns: PositiveFloat | None = Field(
        None,
        description="What the same kernel pays per call beside its rows and tiles (the conv's set-up beyond "
        "onnxruntime's dispatch), ns. Measured by `hwsim fingerprint` from a 3x3 map of 64 channels. None: "
        "nothing.",
    )
    depthwise_output_ns: PositiveFloat | None = Field(
        None,
        description="What onnxruntime's NCHWc depthwise conv pays per output element on MLAS's assembly kernel "
        "(strided along the width, dilated, or a kernel width other than 3, 5, 7) beside depthwise_tap_ns per tap, "
        "ns. Measured by `hwsim fingerprint` from 3x3 and 7x7 depthwise convs at stride 2 (0.18 on an AMD EPYC, "
        "Zen 5). None, or depthwise_tap_ns None: the taps and seven more at the calibrated rate.",
    )
    depthwise_tap_ns: PositiveFloat | None = Field(
        None,
        description="What the same kernel pays per tap of each output element, ns (0.011 on an AMD EPYC, Zen 5). "
        "None: see depthwise_output_ns.",
    )
    grouped_run_ns: PositiveFloat | None = Field(
        None,
        description="What a grouped conv on onnxruntime's plain kernel (one im2col + SGEMM per group) pays per run its "
        "im2col copies (an output row of one row of a group's expanded input, within one slice of columns), ns. "
        "Measured by `hwsim fingerprint` from grouped 3x3 convs (2.0 on an AMD EPYC, Zen 5). None, or "
        "grouped_element_ns None: the CI Xeon's law per row of B (cost_models.cpu.grouped_conv_ns).",
    )
    grouped_element_ns: PositiveFloat | None = Field(
        None,
        description="What the same kernel pays per element of the B it builds and packs (each slice's columns rounded "
        "up to 16), beside the FMAs at the fp32 peak, ns (0.12 on an AMD EPYC, Zen 5). None: see grouped_run_ns.",
    )
    grouped_small_m_ns: NonNegFloat | None = Field(
        None,
        description="What the same kernel pays per FMA of its rows outside MLAS's full 12-row passes beyond the peak, "
        "ns (0.0016 on an AMD EPYC, Zen 5). None: 0.",
    )
    im2col_pack_ns: PositiveFloat | None = Field(
        None,
        description="What MLAS's SGEMM pays per element of a B it builds and packs on the run (a conv on onnxruntime's "
        "plain kernel: 1-D convs, grouped convs; the expanded input), beside its FMAs. Measured by `hwsim "
        "fingerprint` from 1-D convs of 64 channels, k = 3, over 4,000 steps to 64 and to 128 channels (0.15 on an "
        "AMD EPYC, Zen 5). None: 0.26, the CI Xeon's.",
    )
    im2col_stride_ns: PositiveFloat | None = Field(
        None,
        description="What a strided conv on onnxruntime's plain kernel pays beyond im2col_pack_ns per element of its "
        "B (its im2col gathers instead of copying rows). Measured by `hwsim fingerprint` from the same 1-D conv at "
        "stride 2 over twice the steps (0.18 on an AMD EPYC, Zen 5). None: 0.32, the CI Xeon's.",
    )
    gemm_revisit_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which onnxruntime's float GEMM (MLAS SGEMM) reads again from beyond L2 what it cannot "
        "keep there: the slices of its output it adds into once per slice of K, and A once per slice of 128 "
        "columns of B (1,024 rows and more on a 2 MiB L2), not overlapped with its FMAs. Measured by `hwsim "
        "fingerprint` from MatMuls of 256 and 2,048 rows (about 40 GB/s on the CI Xeon, its L3's streaming "
        "rate). None: not costed.",
    )
    int8_gemv_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a one-row integer GEMM streams its int8 weights from L1/L2 (the slope of the "
        "same two sizes). None: `gemv_gbps` holds.",
    )
    int8_gemv_far_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a one-row integer GEMM streams int8 weights from beyond L2 (measured by `hwsim "
        "fingerprint` on 1792 x 1792 weights, 3 MiB; 76-80 GB/s on an AMD EPYC where the float kernel's is 85). "
        "None: `gemv_far_gbps` holds.",
    )
    fp32_gemv_call_ns: PositiveFloat | None = Field(
        None,
        description="Fixed time per call of a one-row float GEMM (Gemm, MatMul with M = 1 and constant weights), "
        "beside its dispatch and its weight stream (measured by `hwsim fingerprint` from two sizes). None: not "
        "costed.",
    )
    fp32_gemv_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a one-row float GEMM streams its weights from any cache level (the slope of the "
        "same two sizes; MLAS's kernel, not the recurrent step's `gemv_gbps`). None: `gemv_gbps` holds.",
    )
    fp32_pack_ns: PositiveFloat | None = Field(
        None,
        description="Time per element of B that a one-row float product over run-time matrices (attention of a "
        "decoding step) pays when onnxruntime folds a scale into it: MLAS packs B for its blocked kernel instead "
        "of taking its one-row path (measured by `hwsim fingerprint` as the scaled product's time less the "
        "unscaled one's). None: not costed.",
    )
    kernel_setup_ns: dict[str, NonNegFloat] | None = Field(
        None,
        description="Fixed time per call of onnxruntime's per-element kernel of each op type named (Add, Mul, "
        "Sigmoid, ...) beside its dispatch, measured by `hwsim fingerprint` from chains of 16-element ops. An op "
        "type named pays it instead of the generic set-up of a small kernel (half efficiency at 20 kFLOP, which "
        "its efficiency scales). None, or an op type not named: the generic set-up.",
    )
    broadcast_span_ns: PositiveFloat | None = Field(
        None,
        description="What each span of onnxruntime's broadcast looper adds to a binary elementwise kernel (Add, "
        "Mul, ... whose inputs broadcast: an attention mask's row repeated, a bias over rows), ns, measured by "
        "`hwsim fingerprint` from Adds of one size with a row of 16 and of 1024 floats repeated: 9 ns on an AMD "
        "EPYC. None: not costed.",
    )
    step_handoff_ns: dict[str, NonNegFloat] | None = Field(
        None,
        description="What one split product of a recurrent step pays onnxruntime's intra-op pool, ns, by op type "
        "(LSTM, GRU), measured by `hwsim fingerprint` on its threads (2 or more) from one-direction kernels of "
        "hidden 256 whose step products split: 1.1 (LSTM) and 0.64 us (GRU) on an AMD EPYC at 2 threads, where "
        "the CPU model's default is 2 us. A calibrated `recurrent_section_ns` takes precedence for LSTM/RNN "
        "products; an RNN takes the LSTM's figure. None, or an op type not named: the CPU model's default.",
    )
    nchwc_one_block_efficiency: PositiveFloat | None = Field(
        None,
        description="Rate of onnxruntime's NCHWc conv with one block of output channels (3x3, 64 -> 16) over one "
        "with four (64 -> 64), measured by `hwsim fingerprint`: how load-bound a conv with few output blocks "
        "is on this core (0.68 on the CI Xeon, 0.88 on an AMD EPYC). None: 2/3.",
    )
    nchwc_two_block_efficiency: PositiveFloat | None = Field(
        None,
        description="Rate of onnxruntime's NCHWc conv with two blocks of output channels (3x3, 64 -> 32) over one "
        "with four (64 -> 64), measured by `hwsim fingerprint` (at most 1 applies): 0.90 on the CI Xeon, the full "
        "rate on a Xeon without AMX whose one block ran at 0.63. None: the law from the one-block rate.",
    )
    nchwc_call_ns: PositiveFloat | None = Field(
        None,
        description="What a dense conv on onnxruntime's NCHWc kernels pays per call of its MLAS kernel (an output row "
        "of one set of four output blocks and one input block; cost_models.cpu.nchwc_conv_calls), beside its FMAs, "
        "ns. With it such a conv also reads its filter once, serially, from where the model's weights are kept "
        "(cost_models.cpu.nchwc_conv_pass_ns). Measured by `hwsim fingerprint` from chains of 3x3 convs over "
        "2 x 2 to 28 x 28 maps (hwsim.host.nchwc_probe). None: neither is priced.",
    )

    #: Fields a dump leaves out while unset, so that a chip without them dumps (and hashes,
    #: :func:`hwsim.report.provenance.chip_sha256`) as it did before they existed.
    omitted_when_unset: ClassVar[tuple[str, ...]] = (
        "gemv_gbps", "gemv_l1_gbps", "gemv_far_gbps", "lstm_direction_ns", "gru_direction_ns", "fft_butterfly_ns", "fft_point_ns", "fft_stride_ns", "fft_page_stride_ns",
        "parallel_section_ns",
        "recurrent_section_ns", "run_footprint_kib", "requant_ns", "int8_pack_ns", "int8_conv_call_ns", "int8_conv_pixel_ns",
        "int8_im2col_pixel_ns", "int8_conv_mac_ps", "int8_conv_l2_mac_ps", "int8_gemv_call_ns", "int8_gemv_gbps",
        "int8_gemv_far_gbps", "softmax_denormal_ns", "nchwc_one_block_efficiency", "nchwc_two_block_efficiency", "nchwc_call_ns", "norm_row_ns", "fp32_gemv_call_ns", "fp32_gemv_gbps",
        "fp32_pack_ns", "kernel_setup_ns", "step_handoff_ns", "broadcast_span_ns", "softmax_row_ns", "vector_floats", "softmax_tail_ns", "softmax_tail_element_ns", "softmax_in_place_tail_ns", "transpose_element_ns",
        "im2col_pack_ns", "im2col_stride_ns", "grouped_run_ns", "grouped_element_ns", "grouped_small_m_ns", "col2im_ns", "col2im_strided_ns", "nchwc_activation_pass_ns", "depthwise_tile_ns", "depthwise_row_ns", "depthwise_call_ns", "depthwise_output_ns", "depthwise_tap_ns", "transpose_block_ns", "transpose_outward_factor", "transpose_byte_outward_factor", "transpose_shared_line_factor", "transpose_pass_lines", "transpose_byte_block_ns", "transpose_edge_ns", "transpose_memcpy_ns", "gemm_aliased_factor", "gemm_revisit_gbps", "gemv_dram_gbps", "reduce_row_ns", "reduce_block_ns", "reduce_column_row_ns", "reduce_generic_ns",
        "slice_run_ns", "slice_step_element_ns", "gather_row_ns", "gather_dram_row_ns", "gather_dram_line_ns", "fp32_batch_call_ns", "scatter_far_update_ns", "thread_check_speedup",
        "weight_cache_kib", "weight_cached_gbps", "loop_cache_kib",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in self.omitted_when_unset:
            if key in data and data[key] is None:
                del data[key]
        return data

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.flops_per_cycle)

    def onchip_bytes(self) -> float:
        """L2: the level a fused epilogue's tile is blocked for (L3 is shared by the cluster)."""
        return self.l2_kib * 1024

    def peak_flops_per_ns(self, dtype: str) -> float:
        """One core's SIMD peak: ``flops_per_cycle[dtype]`` at ``clock_mhz``."""
        per_cycle = self.flops_per_cycle.get(cast(Dtype, dtype), 0.0)
        return per_cycle * self.clock_mhz * 1e-3


@register_unit_kind
class GpuUnit(Unit):
    """A GPU: ``compute_units`` shader cores/SMs; one op uses the whole GPU."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 1
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "compute_units")
    onchip_level: ClassVar[str] = "L2"

    kind: Literal["gpu"] = "gpu"
    compute_units: PositiveInt = Field(description="Shader cores / SMs; one op uses them all.")
    flops_per_cycle: dict[Dtype, PositiveFloat] = Field(
        description="FLOP per cycle per compute unit by dtype (a MAC counts 2)."
    )
    threads_per_cu: PositiveInt = Field(1024, description="Resident threads per CU (waves).")
    l2_kib: PositiveFloat = Field(512, description="L2 cache of the whole GPU in KiB.")
    shared_mem_kib: PositiveFloat = Field(
        32, description="Shared memory per CU in KiB (limits resident CTAs)."
    )
    vector_flops_per_cycle: dict[Dtype, PositiveFloat] = Field(
        default_factory=dict,
        description="Per CU, for non-GEMM ops (elementwise, pooling ...) where it differs from "
        "flops_per_cycle (e.g. CUDA cores beside tensor cores); a dtype absent uses flops_per_cycle.",
    )
    max_ctas_per_cu: PositiveInt = Field(16, description="Resident thread blocks (CTAs) per CU at most.")
    shared_mem_bytes_per_cycle: PositiveFloat = Field(
        128, description="Shared-memory bandwidth per CU in bytes per cycle."
    )
    l2_bytes_per_cycle: PositiveFloat | None = Field(
        None,
        description="L2 -> CUs bandwidth of the whole GPU in bytes per cycle; None: no L2 term.",
    )

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.flops_per_cycle)

    def onchip_bytes(self) -> float:
        """L2: where a kernel's output tile waits for the fused epilogue."""
        return self.l2_kib * 1024

    def peak_flops_per_ns(self, dtype: str) -> float:
        """The whole GPU's matrix rate (one op uses every CU): ``compute_units x flops_per_cycle``."""
        per_cycle = self.flops_per_cycle.get(cast(Dtype, dtype), 0.0)
        return self.compute_units * per_cycle * self.clock_mhz * 1e-3


@register_unit_kind
class NpuUnit(Unit):
    """An NPU: ``cores`` MAC arrays of ``mac_rows x mac_cols`` processing elements."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 0
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "mac_cols", "sram_kib")
    onchip_level: ClassVar[str] = "SRAM"

    numeric_choices: ClassVar[frozenset[str]] = frozenset({"dataflow"})

    kind: Literal["npu"] = "npu"
    mac_rows: PositiveInt = Field(description="Rows of each core's MAC array (processing elements).")
    mac_cols: PositiveInt = Field(description="Columns of each core's MAC array.")
    macs_per_pe_per_cycle: dict[Dtype, PositiveFloat] = Field(
        description="MACs per PE per cycle by dtype (int8 1.0, int4 2.0, fp16 0.25 ...)."
    )
    vector_ops_per_cycle: PositiveFloat = Field(
        64,
        description="Elementwise/activation/pooling operations per cycle per core "
        "(post-processing unit).",
    )
    sram_kib: PositiveFloat = Field(
        description="On-core buffer per core in KiB for inputs, weights, outputs."
    )
    dataflow: Literal["ws", "os", "is"] = Field(
        "ws",
        description=(
            "What stays in the PEs while the other operands stream past: ws (weight-stationary: "
            "the reduction folds onto the rows, output channels onto the columns, pixels/tokens "
            "stream), os (output-stationary: pixels/tokens x output channels stay, the reduction "
            "streams), is (input-stationary: reduction x pixels/tokens stay, output channels stream)."
        ),
    )
    channel_atom: PositiveInt | None = Field(
        None,
        description=(
            "Input channels the array reduces over per kernel position: a conv's reduction is "
            "ceil(C_in / atom) x atom x kh x kw instead of the im2col C_in x kh x kw (depthwise "
            "convs are not padded). None: plain im2col (SCALE-Sim's mapping)."
        ),
    )

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.macs_per_pe_per_cycle)

    def onchip_bytes(self) -> float:
        """One core's SRAM."""
        return self.sram_kib * 1024

    def peak_flops_per_ns(self, dtype: str) -> float:
        """One core's MAC array: ``2 x mac_rows x mac_cols x macs_per_pe_per_cycle[dtype]``."""
        macs = self.mac_rows * self.mac_cols * self.macs_per_pe_per_cycle.get(cast(Dtype, dtype), 0.0)
        return 2 * macs * self.clock_mhz * 1e-3


@register_unit_kind
class DspUnit(Unit):
    """A DSP: VLIW/SIMD vector lanes; strong at FFT, filters and elementwise, weak at big GEMM."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 2
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "sram_kib")
    onchip_level: ClassVar[str] = "SRAM"

    kind: Literal["dsp"] = "dsp"
    flops_per_cycle: dict[Dtype, PositiveFloat] = Field(
        description="FLOP per cycle per core by dtype (a MAC counts 2)."
    )
    sram_kib: PositiveFloat = Field(256, description="Local SRAM (TCM) in KiB.")

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.flops_per_cycle)

    def onchip_bytes(self) -> float:
        """The local SRAM."""
        return self.sram_kib * 1024

    def peak_flops_per_ns(self, dtype: str) -> float:
        """The vector lanes' peak: ``flops_per_cycle[dtype]`` at ``clock_mhz``."""
        per_cycle = self.flops_per_cycle.get(cast(Dtype, dtype), 0.0)
        return per_cycle * self.clock_mhz * 1e-3




class Thermal(_Spec):
    """A first-order thermal model of the whole chip (an optional what-if; no bundled chip has one).

    One thermal mass: ``C dT/dt = P(t) - (T - ambient) / R``, with ``P`` the chip's power as the
    trace gives it (:func:`cost_models.energy.power_w`). While ``T`` is at or above
    ``throttle_c`` the clocks run at ``throttle_clock_factor``: an op that starts then has the
    clock-bound part of its compute time divided by the factor, and its cores draw ``active_w``
    times the factor (``cost_models.energy.core_power_w``; ``hwsim.sim.thermal``).
    """

    resistance_c_per_w: PositiveFloat = Field(
        description="Junction-to-ambient thermal resistance in degrees C per W."
    )
    capacitance_j_per_c: PositiveFloat = Field(description="Heat capacity in J per degree C.")
    ambient_c: float = Field(description="Ambient temperature in degrees C (the start temperature).")
    throttle_c: float = Field(description="Temperature in degrees C at which the clocks throttle.")
    throttle_clock_factor: Efficiency = Field(
        description="Clock while throttled, as a fraction of the nominal clock (0 < f <= 1)."
    )

    @model_validator(mode="after")
    def _throttle_above_ambient(self) -> Thermal:
        if not self.throttle_c > self.ambient_c:
            raise ValueError(
                f"throttle_c ({self.throttle_c:g}) must be above ambient_c ({self.ambient_c:g})"
            )
        return self

    @property
    def time_constant_s(self) -> float:
        """``R * C``: how fast the temperature follows the power, in seconds."""
        return self.resistance_c_per_w * self.capacitance_j_per_c


class Chip(_Spec):
    """A whole SoC.

    Two things a file may leave out are derived when the chip is validated: a unit without a
    ``domain`` gets a ``kind: dram`` domain of its own, named after it (or the domain of that
    name, if the file has one); and two dram domains the file links by no link reach each other
    through the DRAM (a derived :class:`Link`: the DRAM's bandwidth and latency, 1 channel).
    """

    name: str = Field(description="The chip's name (reports and report folders use it).")
    description: str = Field("", description="One line about the chip, shown by `hwsim chips`.")
    dram: Dram = Field(description="The DRAM every kind: dram domain is carved from.")
    domains: tuple[Domain, ...] = Field(
        min_length=1,
        description="Where tensors live. Units without a domain add their own (kind dram).",
    )
    host_domain: str | None = Field(
        None, description="Where model inputs arrive and outputs are returned (default: first)."
    )
    units: tuple[Unit, ...] = Field(
        min_length=1, description="Compute units, each of a registered kind (``kind`` picks the class)."
    )
    links: tuple[Link, ...] = Field(
        (),
        description="DMA between domains. Every pair of domains in use needs one, except two dram "
        "domains: those without a link copy through the DRAM (a derived link).",
    )
    affinity: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="ONNX op type -> unit kinds or unit names, most preferred first.",
    )
    default_affinity: tuple[str, ...] = Field(
        ("npu", "gpu", "dsp", "cpu"), description="Preference for op types not in `affinity`."
    )
    calibration: str | None = Field(
        None,
        description="A calibration file (written by `hwsim validate --calibrate`), relative to this "
        "file; its per-unit `efficiency` and `op_overhead_ns` replace the unit's at load time.",
    )
    thermal: Thermal | None = Field(
        None,
        description="A first-order thermal model (what-if): temperature from the power, clocks "
        "throttled above `throttle_c`. None: no thermal model, the clocks never throttle.",
    )

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        return _with_derived(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _consistent(self) -> Chip:
        problems = _layout_problems(self)
        if problems:
            raise _Problems(problems)
        return self

    @property
    def host(self) -> str:
        """The domain that holds model inputs and receives outputs."""
        return self.host_domain if self.host_domain is not None else self.domains[0].name

    def domain(self, name: str) -> Domain:
        for d in self.domains:
            if d.name == name:
                return d
        raise KeyError(name)

    def unit(self, name: str) -> Unit:
        for u in self.units:
            if u.name == name:
                return u
        raise KeyError(name)

    def link_between(self, a: str, b: str) -> Link | None:
        """The link that carries data from domain ``a`` to domain ``b`` (None if none)."""
        for link in self.links:
            if (link.src, link.dst) == (a, b) or (link.bidirectional and (link.dst, link.src) == (a, b)):
                return link
        return None

    def preference(self, op_type: str) -> tuple[str, ...]:
        """Unit kinds or names preferred for ``op_type``, best first."""
        return self.affinity.get(op_type, self.default_affinity)

    def defaulted_fields(self) -> tuple[str, ...]:
        """The fields that shape timing, power or energy which the chip's data did not set: each
        holds a default nobody chose for this chip (see :meth:`_Spec.defaulted_fields` for which
        fields count). Named like ``dram.energy_pj_per_byte``, ``units[npu].active_w`` and
        ``links[cpu<->npu].dma_channels`` (a derived link's channel count included); a
        calibration's ``op_overhead_ns`` counts as set.

        >>> chip = chip_from_dict({"name": "c", "dram": {"bandwidth_gbps": 10, "latency_ns": 100},
        ...     "units": [{"name": "cpu", "kind": "cpu", "clock_mhz": 1000, "cores": 2,
        ...                "flops_per_cycle": {"fp32": 16}}]})
        >>> chip.defaulted_fields()[:4]
        ('dram.energy_pj_per_byte', 'units[cpu].op_overhead_ns', 'units[cpu].active_w', 'units[cpu].idle_w')
        """
        out = [f"dram.{f}" for f in self.dram.defaulted_fields()]
        out += [f"domains[{d.name}].{f}" for d in self.domains for f in d.defaulted_fields()]
        out += [f"units[{u.name}].{f}" for u in self.units for f in u.defaulted_fields()]
        out += [f"links[{k.key}].{f}" for k in self.links for f in k.defaulted_fields()]
        return tuple(out)


_rebuild_chip()


def _field(obj: object, key: str, default: object = None) -> Any:
    """``obj[key]`` of raw data or ``obj.key`` of a model (``default`` when absent): the
    derivation and the layout checks read a validated chip and a file's raw data alike."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _name(obj: object, key: str) -> str | None:
    """``_field(obj, key)`` when it is a string (raw data may hold anything there)."""
    value = _field(obj, key)
    return value if isinstance(value, str) else None


def _items(obj: object, key: str) -> list[Any]:
    value = _field(obj, key, ())
    return list(value) if isinstance(value, (list, tuple)) else []


def _reaches(links: Sequence[object], a: str, b: str) -> bool:
    """Whether one of ``links`` carries data from domain ``a`` to ``b``."""
    return any(
        (_field(k, "src"), _field(k, "dst")) == (a, b)
        or (_field(k, "bidirectional", True) is not False and (_field(k, "dst"), _field(k, "src")) == (a, b))
        for k in links
    )


def _used_domains(data: object) -> list[str]:
    """The domains a chip needs links between: its units' and its host's, sorted."""
    used = {_name(u, "domain") for u in _items(data, "units")}
    host = _name(data, "host_domain")
    if _field(data, "host_domain") is None:
        first = _items(data, "domains")[:1]
        host = _name(first[0], "name") if first else None
    return sorted(d for d in used | {host} if d)


def _with_derived(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with what it leaves out derived (see :class:`Chip`); links derived earlier are
    derived again, so that they follow the DRAM."""
    out = dict(data)
    domains = _items(data, "domains")
    names = {_name(d, "name") for d in domains}
    units = []
    for u in _items(data, "units"):
        name = _name(u, "name")
        if name is not None and not _field(u, "domain"):
            u = {**u, "domain": name} if isinstance(u, dict) else u.model_copy(update={"domain": name})
            if name not in names:
                domains.append({"name": name, "kind": "dram"})
                names.add(name)
        units.append(u)
    if units:
        out["units"] = units
    if domains:
        out["domains"] = domains
    links = [k for k in _items(data, "links") if _field(k, "derived") is not True]
    dram = _field(data, "dram")
    bandwidth, latency = _field(dram, "bandwidth_gbps"), _field(dram, "latency_ns")
    kind = {_name(d, "name"): _field(d, "kind", "dram") for d in domains}
    if isinstance(bandwidth, (int, float)) and isinstance(latency, (int, float)):
        dram_link = {"bandwidth_gbps": bandwidth, "latency_ns": latency, "derived": True}
        used = [d for d in _used_domains(out) if kind.get(d) == "dram"]
        for i, a in enumerate(used):
            for b in used[i + 1 :]:
                there, back = _reaches(links, a, b), _reaches(links, b, a)
                if not there and not back:
                    links.append({"src": a, "dst": b, **dram_link})
                elif not there or not back:
                    src, dst = (a, b) if not there else (b, a)
                    links.append({"src": src, "dst": dst, "bidirectional": False, **dram_link})
    if links or "links" in data:
        out["links"] = links
    return out


def _layout_problems(chip: object) -> list[str]:
    """Every cross-reference problem of a chip (a validated one, or a file's raw data after
    :func:`_with_derived`): duplicate names, unknown domains, units or kinds, missing links."""
    problems: list[str] = []
    domains = [_name(d, "name") for d in _items(chip, "domains")]
    kinds = {_name(d, "name"): _field(d, "kind", "dram") for d in _items(chip, "domains")}
    units = [_name(u, "name") for u in _items(chip, "units")]
    problems += _duplicates("domains", domains) + _duplicates("units", units)
    have = ", ".join(str(d) for d in domains)
    for u in _items(chip, "units"):
        domain = _name(u, "domain")
        if domain is not None and domain not in kinds:
            problems.append(f"units[{_name(u, 'name')}].domain: unknown domain {domain!r} (have {have})")
    host = _name(chip, "host_domain")
    if host is not None and host not in kinds:
        problems.append(f"host_domain: unknown domain {host!r} (have {have})")
    links = _items(chip, "links")
    for k in links:
        for end in ("src", "dst"):
            if _name(k, end) is not None and _name(k, end) not in kinds:
                where = f"links[{_name(k, 'src')}-{_name(k, 'dst')}].{end}"
                problems.append(f"{where}: unknown domain {_name(k, end)!r} (have {have})")
    targets = set(units) | set(unit_kinds())
    affinity = _field(chip, "affinity")
    for op, prefs in (affinity.items() if isinstance(affinity, dict) else ()):
        bad = [p for p in _items({"p": prefs}, "p") if isinstance(p, str) and p not in targets]
        problems += [f"affinity.{op}: {p!r} is neither a unit nor a unit kind" for p in bad]
    for p in _items(chip, "default_affinity"):
        if isinstance(p, str) and p not in targets:
            problems.append(f"default_affinity: {p!r} is neither a unit nor a unit kind")
    return problems + _missing_links(links, [d for d in _used_domains(chip) if d in kinds], kinds)


def _missing_links(links: list[Any], used: list[str], kinds: dict[Any, Any]) -> list[str]:
    """A problem for each pair of ``used`` domains with a direction no link carries, where one of
    them is an sram domain (two dram domains reach each other through the DRAM)."""
    problems = []
    for i, a in enumerate(used):
        for b in used[i + 1 :]:
            sram = [d for d in (a, b) if kinds[d] == "sram"]
            there, back = _reaches(links, a, b), _reaches(links, b, a)
            if not sram or (there and back):
                continue
            pair = f"between domains {a!r} and {b!r}" if not there and not back else (
                f"from domain {a!r} to {b!r}" if not there else f"from domain {b!r} to {a!r}"
            )
            problems.append(
                f"links: no link {pair} ({sram[0]!r} is an sram domain: add a link; only two "
                "dram domains reach each other through the DRAM)"
            )
    return problems


def _duplicates(field: str, names: list[str | None]) -> list[str]:
    seen: set[str | None] = set()
    out = []
    for n in names:
        if n is not None and n in seen:
            out.append(f"{field}: duplicate name {n!r}")
        seen.add(n)
    return out


def bundled_chips() -> dict[str, Path]:
    """The chip descriptions in ``chips/``, by name (file stem).

    ``<chip>_calibration.yaml`` files there (what ``hwsim validate --calibrate`` writes beside a
    chip file) are calibrations a chip includes, not chips.
    """
    return {p.stem: p for p in sorted(CATALOG_DIR.glob("*.yaml")) if not p.stem.endswith("_calibration")}


def _resolve(ref: str | Path) -> Path:
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    catalog = bundled_chips()
    if str(ref) in catalog:
        return catalog[str(ref)]
    close = nearest(str(ref), catalog)
    hint = f"; did you mean {close!r}?" if close else f"; bundled chips: {', '.join(catalog)}"
    raise ChipError(f"{ref}: no such chip file or bundled chip{hint}")


def load_chip(ref: str | Path) -> Chip:
    """Load and validate a chip from a YAML path or a bundled chip name.

    Raises
    ------
    ChipError
        Naming the file and every problem (see :func:`chip_from_dict`).
    """
    path = _resolve(ref)
    too_big = oversize(path, MAX_TEXT_BYTES)
    if too_big:
        raise ChipError(f"{path}: {too_big}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ChipError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ChipError(f"{path}: cannot read ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ChipError(f"{path}:{where}: YAML syntax error: {problem}") from None
    if not isinstance(data, dict):
        raise ChipError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    if isinstance(data.get("calibration"), str):
        data = _with_calibration(data, path)
    return chip_from_dict(data, source=str(path))


class UnitCalibration(_Spec):
    """What a calibration measured for one unit."""

    efficiency: dict[str, Efficiency] = Field(default_factory=dict)
    op_overhead_ns: NonNegFloat | None = None
    #: A CPU unit's fitted per-step pool cost of split recurrent products (``CpuUnit.recurrent_section_ns``).
    recurrent_section_ns: PositiveFloat | None = None


class Calibration(_Spec):
    """A calibration file: measured corrections per unit name, merged into a chip at load."""

    chip: str = Field(description="Name of the chip it was measured for.")
    units: dict[str, UnitCalibration]


def _with_calibration(data: dict[str, object], chip_path: Path) -> dict[str, object]:
    """``data`` with its ``calibration`` file resolved (relative to ``chip_path``) and merged."""
    cal_path = (chip_path.parent / str(data["calibration"])).resolve()
    too_big = oversize(cal_path, MAX_TEXT_BYTES)
    if too_big:
        raise ChipError(f"{cal_path}: {too_big}")
    try:
        raw = yaml.safe_load(cal_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ChipError(f"{chip_path}: calibration: cannot read {cal_path} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ChipError(f"{cal_path}: not a text file (byte {exc.start} is not UTF-8)") from None
    except yaml.YAMLError as exc:
        raise ChipError(f"{cal_path}: YAML syntax error: {str(exc).splitlines()[0]}") from None
    try:
        cal = Calibration.model_validate(raw)
    except ValidationError as exc:
        raise ChipError.listing(str(cal_path), _error_lines(exc, raw, Calibration)) from None
    units = data.get("units")
    names = [u.get("name") for u in units if isinstance(u, dict)] if isinstance(units, list) else []
    for name in cal.units:
        if name not in names:
            raise ChipError(f"{cal_path}: units.{name}: the chip has no such unit (units: {names})")
    merged = []
    for u in units if isinstance(units, list) else []:
        c = cal.units.get(str(u.get("name"))) if isinstance(u, dict) else None
        if c is not None:
            u = dict(u)
            u["efficiency"] = {**dict(u.get("efficiency") or {}), **c.efficiency}
            if c.op_overhead_ns is not None:
                u["op_overhead_ns"] = c.op_overhead_ns
            if c.recurrent_section_ns is not None:
                u["recurrent_section_ns"] = c.recurrent_section_ns
        merged.append(u)
    return {**data, "units": merged, "calibration": str(cal_path)}


def chip_from_dict(data: dict[str, object], source: str = "<chip>") -> Chip:
    """Validate a chip from plain data.

    Raises
    ------
    ChipError
        Naming ``source`` and every problem: each field error (an unknown key first, with the
        nearest field name), then every cross-reference problem, those of the raw data too
        when a field is invalid, so that one run reports them all.
    """
    try:
        return Chip.model_validate(data)
    except ValidationError as exc:
        problems = _error_lines(exc, data, Chip)
        if not any(isinstance(_field(e.get("ctx"), "error"), _Problems) for e in exc.errors()):
            problems += [p for p in _layout_problems(_with_derived(data)) if p not in problems]
        raise ChipError.listing(source, problems) from None


def nearest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` is most likely a typo of, if any is close.

    >>> nearest("clock_mzh", ["clock_mhz", "cores"]), nearest("zzz", ["cores"])
    ('clock_mhz', None)
    """
    close = difflib.get_close_matches(word, list(choices), n=1)
    return close[0] if close else None


def spec_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields a file may set on ``model`` (what an unknown key is compared with)."""
    return tuple(f for f in model.model_fields if (model, f) != (Link, "derived"))


def _error_lines(exc: ValidationError, data: object, root: type[BaseModel]) -> list[str]:
    """One line per problem of ``exc``: unknown keys first (with the nearest field), then the
    rest; a required field that an unknown key beside it is the typo of is not repeated."""
    unknown: list[str] = []
    other: list[tuple[tuple[Any, ...], str]] = []  # (location of a missing field or (), line)
    suggested: set[tuple[Any, ...]] = set()
    # pydantic adds "should have at least 1 item" to a list whose items all failed: not news
    failed_items = {
        tuple(e["loc"][:i]) for e in exc.errors() for i, p in enumerate(e["loc"]) if isinstance(p, int)
    }
    for err in exc.errors():
        loc = tuple(err["loc"])
        error = _field(err.get("ctx"), "error")
        if err["type"] == "too_short" and loc in failed_items:
            continue
        if isinstance(error, _Problems):
            other += [((), p) for p in error.problems]
        elif err["type"] == "extra_forbidden":
            model = _model_at(root, loc[:-1])
            fields = spec_fields(model) if model is not None else ()
            close = nearest(str(loc[-1]), fields)
            hint = f" (did you mean {close}?)" if close else f" (fields: {', '.join(fields)})"
            unknown.append(f"{_where(data, loc)}: unknown key{hint if fields else ''}")
            suggested.add(loc[:-1] + (close,))
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            missing = loc if err["type"] == "missing" else ()
            other.append((missing, f"{_where(data, loc)}: {msg}" if loc else msg))
    return unknown + [line for missing, line in other if not missing or missing not in suggested]


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The spec class that holds the keys at ``loc`` (a pydantic error location), if known."""
    if root is Calibration:
        return Calibration if not loc else UnitCalibration if loc[:1] == ("units",) else None
    match loc:
        case ():
            return Chip
        case ("dram",):
            return Dram
        case ("domains", int()):
            return Domain
        case ("links", int()):
            return Link
        case ("units", int(), str(kind)) if kind in _KINDS:
            return _KINDS[kind]
    return None


def _where(data: object, loc: tuple[Any, ...]) -> str:
    """A readable location: ``units[npu_main].clock_mhz`` for pydantic's ``units.3.npu.clock_mhz``
    (an item named by its name, or a link by its ends, and no kind tag)."""
    parts = [str(p) for p in loc]
    if len(loc) >= 2 and loc[0] in ("units", "domains", "links") and isinstance(loc[1], int):
        items = _items(data, str(loc[0]))
        item = items[loc[1]] if loc[1] < len(items) else None
        name = _field(item, "name")
        if loc[0] == "links" and isinstance(_field(item, "src"), str):
            name = f"{_field(item, 'src')}-{_field(item, 'dst')}"
        head = f"{loc[0]}[{name if isinstance(name, str) else loc[1]}]"
        rest = loc[2:]
        if loc[0] == "units" and rest and rest[0] in _KINDS:
            rest = rest[1:]
        parts = [head, *(str(p) for p in rest)]
    return ".".join(parts)


def chip_json_schema() -> dict[str, object]:
    """JSON Schema of a chip file, for editors and CI validation."""
    return Chip.model_json_schema()
