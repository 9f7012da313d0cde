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
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

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
    "Unit",
    "UnitCalibration",
    "bundled_chips",
    "chip_json_schema",
    "kind_tag",
    "load_chip",
    "register_unit_kind",
    "unit_class",
    "unit_kinds",
    "unregister_unit_kind",
]

CATALOG_DIR = Path(__file__).resolve().parent

Dtype = Literal["int4", "int8", "fp16", "bf16", "fp32"]
#: Dtypes from narrowest to widest: a unit that lacks the requested dtype runs the next wider one.
DTYPES: tuple[str, ...] = ("int4", "int8", "fp16", "bf16", "fp32")

PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Efficiency = Annotated[float, Field(gt=0, le=1)]


class ChipError(ValueError):
    """A chip description is missing, malformed or inconsistent (bad input, exit code 2)."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Dram(_Spec):
    """The physical DRAM every ``kind: dram`` domain is carved from; its bandwidth is shared."""

    bandwidth_gbps: PositiveFloat = Field(description="Peak bandwidth in GB/s (1e9 bytes/s).")
    latency_ns: NonNegFloat = Field(description="Access latency added once per op or transfer.")
    energy_pj_per_byte: NonNegFloat = Field(20.0, description="Energy per byte moved to/from DRAM.")
    capacity_mib: PositiveFloat | None = None


class Domain(_Spec):
    """A memory domain: where the tensors of the units placed in it live.

    ``kind: dram`` domains are views of the shared DRAM (their traffic competes for
    :attr:`Dram.bandwidth_gbps`); ``kind: sram`` domains are on-chip buffers with their
    own bandwidth and capacity.
    """

    name: str
    kind: Literal["dram", "sram"] = "dram"
    bandwidth_gbps: PositiveFloat | None = Field(
        None, description="Own bandwidth of an sram domain; dram domains use the DRAM's."
    )
    capacity_kib: PositiveFloat | None = None

    @model_validator(mode="after")
    def _sram_has_bandwidth(self) -> Domain:
        if self.kind == "sram" and self.bandwidth_gbps is None:
            raise ValueError(f"sram domain {self.name!r} needs bandwidth_gbps")
        return self


class Link(_Spec):
    """A DMA path between two domains (both directions unless ``bidirectional: false``)."""

    src: str
    dst: str
    bandwidth_gbps: PositiveFloat
    latency_ns: NonNegFloat = Field(description="Set-up latency paid once per transfer.")
    dma_channels: PositiveInt = 1
    bidirectional: bool = True

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
    :meth:`dtypes` and :meth:`onchip_bytes`. Its cost model lives in ``cost_models``.
    """

    #: Whether the unit runs any op, those without a cost formula (category ``unknown``)
    #: included; other units run those only when they list them in ``supported_ops``.
    general_purpose: ClassVar[bool]
    #: The kind's place in onnxruntime's execution-provider priority (lowest first: accelerators
    #: before the CPU, which takes the rest); the ``ort-greedy`` policy orders units by it.
    ep_priority: ClassVar[int]
    #: The unit's fields a sensitivity study sweeps by default (``hwsim sensitivity``).
    sweep_fields: ClassVar[tuple[str, ...]]

    name: str
    domain: str
    clock_mhz: PositiveFloat
    cores: PositiveInt = 1
    mem_bandwidth_gbps: PositiveFloat | None = Field(
        None, description="The unit's own port into its domain; None means the domain's."
    )
    op_overhead_ns: NonNegFloat = Field(0.0, description="Fixed cost per op (dispatch, launch).")
    active_w: NonNegFloat = Field(1.0, description="Power while a core runs an op, per core.")
    idle_w: NonNegFloat = Field(0.05, description="Power while idle, whole unit.")
    supported_ops: tuple[str, ...] | None = Field(
        None, description="If set, the only ONNX op types this unit can run."
    )
    unsupported_ops: tuple[str, ...] = ()
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
        0.0, description="Extra cost of running one op split across cores (partition, sync)."
    )
    #: The unit kind (``cpu``, ``gpu``, ...): each kind's class fixes it to one value.
    kind: str

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
_KIND_METHODS = ("dtypes", "onchip_bytes")
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

    kind: Literal["cpu"] = "cpu"
    flops_per_cycle: dict[Dtype, PositiveFloat] = Field(
        description="Per core; a MAC counts 2 (e.g. NEON fp32 2x128-bit FMA = 16)."
    )
    l1_kib: PositiveFloat = 64
    l2_kib: PositiveFloat = 512
    l3_kib: NonNegFloat = 0
    l1_bandwidth_gbps: PositiveFloat = 100.0
    l2_bandwidth_gbps: PositiveFloat = 50.0
    l3_bandwidth_gbps: PositiveFloat = 30.0
    weight_stream_gbps: PositiveFloat | None = Field(
        None,
        description="Rate at which a MatMul/Gemm kernel streams its weights from DRAM *in addition to* its "
        "compute: the stream stalls the kernel instead of overlapping it (measured by `hwsim fingerprint`). "
        "None: weights overlap the compute (plain roofline).",
    )

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.flops_per_cycle)

    def onchip_bytes(self) -> float:
        """L2: the level a fused epilogue's tile is blocked for (L3 is shared by the cluster)."""
        return self.l2_kib * 1024


@register_unit_kind
class GpuUnit(Unit):
    """A GPU: ``compute_units`` shader cores/SMs; one op uses the whole GPU."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 1
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "compute_units")

    kind: Literal["gpu"] = "gpu"
    compute_units: PositiveInt
    flops_per_cycle: dict[Dtype, PositiveFloat] = Field(description="Per compute unit.")
    threads_per_cu: PositiveInt = Field(1024, description="Resident threads per CU (waves).")
    l2_kib: PositiveFloat = 512
    shared_mem_kib: PositiveFloat = Field(32, description="Shared memory per CU (limits resident CTAs).")
    vector_flops_per_cycle: dict[Dtype, PositiveFloat] = Field(
        default_factory=dict,
        description="Per CU, for non-GEMM ops (elementwise, pooling ...) where it differs from "
        "flops_per_cycle (e.g. CUDA cores beside tensor cores); a dtype absent uses flops_per_cycle.",
    )
    max_ctas_per_cu: PositiveInt = Field(16, description="Resident thread blocks (CTAs) per CU at most.")
    shared_mem_bytes_per_cycle: PositiveFloat = Field(128, description="Shared-memory bandwidth per CU.")
    l2_bytes_per_cycle: PositiveFloat | None = Field(
        None, description="L2 -> CUs bandwidth for the whole GPU at its clock; None: no L2 term."
    )

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.flops_per_cycle)

    def onchip_bytes(self) -> float:
        """L2: where a kernel's output tile waits for the fused epilogue."""
        return self.l2_kib * 1024


@register_unit_kind
class NpuUnit(Unit):
    """An NPU: ``cores`` MAC arrays of ``mac_rows x mac_cols`` processing elements."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 0
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "mac_cols", "sram_kib")

    kind: Literal["npu"] = "npu"
    mac_rows: PositiveInt
    mac_cols: PositiveInt
    macs_per_pe_per_cycle: dict[Dtype, PositiveFloat] = Field(
        description="MACs per PE per cycle by dtype (int8 1.0, int4 2.0, fp16 0.25 ...)."
    )
    vector_ops_per_cycle: PositiveFloat = Field(
        64, description="Per core, for elementwise/activation/pooling work (post-processing unit)."
    )
    sram_kib: PositiveFloat = Field(description="On-core buffer per core for inputs, weights, outputs.")
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


@register_unit_kind
class DspUnit(Unit):
    """A DSP: VLIW/SIMD vector lanes; strong at FFT, filters and elementwise, weak at big GEMM."""

    general_purpose: ClassVar[bool] = False
    ep_priority: ClassVar[int] = 2
    sweep_fields: ClassVar[tuple[str, ...]] = ("clock_mhz", "sram_kib")

    kind: Literal["dsp"] = "dsp"
    flops_per_cycle: dict[Dtype, PositiveFloat] = Field(description="Per core.")
    sram_kib: PositiveFloat = 256

    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in DTYPES if d in self.flops_per_cycle)

    def onchip_bytes(self) -> float:
        """The local SRAM."""
        return self.sram_kib * 1024




class Chip(_Spec):
    """A whole SoC."""

    name: str
    description: str = ""
    dram: Dram
    domains: tuple[Domain, ...] = Field(min_length=1)
    host_domain: str | None = Field(
        None, description="Where model inputs arrive and outputs are returned (default: first)."
    )
    units: tuple[Unit, ...] = Field(
        min_length=1, description="Compute units, each of a registered kind (``kind`` picks the class)."
    )
    links: tuple[Link, ...] = ()
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

    @model_validator(mode="after")
    def _consistent(self) -> Chip:
        domains = [d.name for d in self.domains]
        _unique("domains", domains)
        units = [u.name for u in self.units]
        _unique("units", units)
        dom_set = set(domains)
        for i, u in enumerate(self.units):
            if u.domain not in dom_set:
                raise ValueError(f"units.{i}.domain: unknown domain {u.domain!r} (have {domains})")
        if self.host_domain is not None and self.host_domain not in dom_set:
            raise ValueError(f"host_domain: unknown domain {self.host_domain!r} (have {domains})")
        for i, link in enumerate(self.links):
            for end in ("src", "dst"):
                if getattr(link, end) not in dom_set:
                    raise ValueError(
                        f"links.{i}.{end}: unknown domain {getattr(link, end)!r} (have {domains})"
                    )
        targets = set(units) | set(unit_kinds())
        for op, prefs in self.affinity.items():
            for p in prefs:
                if p not in targets:
                    raise ValueError(f"affinity.{op}: {p!r} is neither a unit nor a unit kind")
        for p in self.default_affinity:
            if p not in targets:
                raise ValueError(f"default_affinity: {p!r} is neither a unit nor a unit kind")
        used = sorted({u.domain for u in self.units} | {self.host})
        for a in used:
            for b in used:
                if a < b and (self.link_between(a, b) is None or self.link_between(b, a) is None):
                    missing = (a, b) if self.link_between(a, b) is None else (b, a)
                    raise ValueError(f"links: no link from domain {missing[0]!r} to {missing[1]!r}")
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


_rebuild_chip()


def _unique(field: str, names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValueError(f"{field}: duplicate name {n!r}")
        seen.add(n)


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
    close = difflib.get_close_matches(str(ref), list(catalog), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; bundled chips: {', '.join(catalog)}"
    raise ChipError(f"{ref}: no such chip file or bundled chip{hint}")


def load_chip(ref: str | Path) -> Chip:
    """Load and validate a chip from a YAML path or a bundled chip name.

    Raises
    ------
    ChipError
        With a one-line message naming the file and the offending field.
    """
    path = _resolve(ref)
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


class Calibration(_Spec):
    """A calibration file: measured corrections per unit name, merged into a chip at load."""

    chip: str = Field(description="Name of the chip it was measured for.")
    units: dict[str, UnitCalibration]


def _with_calibration(data: dict[str, object], chip_path: Path) -> dict[str, object]:
    """``data`` with its ``calibration`` file resolved (relative to ``chip_path``) and merged."""
    cal_path = (chip_path.parent / str(data["calibration"])).resolve()
    try:
        raw = yaml.safe_load(cal_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ChipError(f"{chip_path}: calibration: cannot read {cal_path} ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ChipError(f"{cal_path}: YAML syntax error: {str(exc).splitlines()[0]}") from None
    try:
        cal = Calibration.model_validate(raw)
    except ValidationError as exc:
        raise ChipError(f"{cal_path}: {_first_error(exc)}") from None
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
        merged.append(u)
    return {**data, "units": merged, "calibration": str(cal_path)}


def chip_from_dict(data: dict[str, object], source: str = "<chip>") -> Chip:
    """Validate a chip from plain data; errors name ``source`` and the first bad field."""
    try:
        return Chip.model_validate(data)
    except ValidationError as exc:
        raise ChipError(f"{source}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    extra = f" ({len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{loc}: {msg}{extra}" if loc else f"{msg}{extra}"


def chip_json_schema() -> dict[str, object]:
    """JSON Schema of a chip file, for editors and CI validation."""
    return Chip.model_json_schema()
