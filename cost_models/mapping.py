"""Per-op mapping signatures: how one op is run, the knobs a co-adaptation search varies.

An :class:`OpMapping` pins an op to a unit, splits it over some cores of that unit, picks the
NPU's dataflow, reduction layout and SRAM buffering for it, and forces its fusion group fused
or not. Every knob left ``None`` keeps what a plain ``hwsim run`` does, so an all-default
mapping changes nothing. Where each knob acts:

- ``unit``: the cost table keeps only that unit for the op (:func:`cost_models.table.cost_table`),
  so every policy places it there;
- ``cores``: the placement's ``cores`` (:class:`scheduler.schedule.Placement`), which the engine
  honours (:mod:`hwsim.sim.splitting`);
- ``dataflow``, ``layout``, ``tile``: the cost model's :class:`~cost_models.base.KernelKnobs`
  (:mod:`cost_models.npu` documents their physics), on every unit that offers them for the op;
- ``fusion``: the op's fusion group forced on or off (:func:`cost_models.fusion.fuse`).

:func:`choices` lists the legal values of each knob, :func:`legality` says why a mapping is
illegal, :func:`legalize` drops what is.

>>> m = OpMapping(dataflow="os", fusion=False)
>>> m.as_dict(), OpMapping.from_dict(m.as_dict()) == m, OpMapping().is_default()
({'dataflow': 'os', 'fusion': False}, True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from chips.schema import Chip, Unit
from cost_models.base import KernelKnobs, model_for
from cost_models.fusion import can_fuse
from cost_models.npu import DATAFLOWS, LAYOUTS, TILES
from cost_models.table import CostTable
from graph_ir.ir import Op
from graph_ir.shard import shard_op

__all__ = ["DATAFLOWS", "KNOBS", "LAYOUTS", "TILES", "OpMapping", "choices", "legality", "legalize"]

#: The knobs of a mapping signature, in the order they are listed.
KNOBS = ("unit", "cores", "dataflow", "layout", "tile", "fusion")
_KERNEL = ("dataflow", "layout", "tile")


@dataclass(frozen=True, slots=True)
class OpMapping:
    """One op's mapping signature; ``None`` = the default (what a plain ``hwsim run`` does).

    Attributes
    ----------
    unit : str or None
        Pin the op to this unit (the scheduler may only place it there).
    cores : int or None
        Split it over this many cores of its unit (None: the engine decides).
    dataflow : str or None
        NPU GEMM ops: ``ws``, ``os`` or ``is`` (None: the unit's own).
    layout : str or None
        NPU convs: one of :data:`LAYOUTS` (None: ``atom``).
    tile : str or None
        SRAM-tiled units: one of :data:`TILES` (None: ``double``).
    fusion : bool or None
        This op's fusion group forced fused or unfused (None: the run's fusion mode decides).
    """

    unit: str | None = None
    cores: int | None = None
    dataflow: str | None = None
    layout: str | None = None
    tile: str | None = None
    fusion: bool | None = None

    def as_dict(self) -> dict[str, object]:
        """Only the knobs set, JSON-plain, in :data:`KNOBS` order."""
        return {k: getattr(self, k) for k in KNOBS if getattr(self, k) is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> OpMapping:
        """The mapping ``d`` describes (as :meth:`as_dict` writes it).

        Raises
        ------
        ValueError
            An unknown knob or a value of the wrong kind, naming it.

        >>> OpMapping.from_dict({"cores": 2, "tile": "single"})
        OpMapping(unit=None, cores=2, dataflow=None, layout=None, tile='single', fusion=None)
        >>> OpMapping.from_dict({"colour": "red"})
        Traceback (most recent call last):
        ...
        ValueError: unknown mapping knob 'colour'; knobs: unit, cores, dataflow, layout, tile, fusion
        """
        unknown = [k for k in d if k not in KNOBS]
        if unknown:
            raise ValueError(f"unknown mapping knob {unknown[0]!r}; knobs: {', '.join(KNOBS)}")
        allowed: dict[str, tuple[object, ...] | None] = {"dataflow": DATAFLOWS, "layout": LAYOUTS, "tile": TILES}
        for k, v in d.items():
            if v is None:
                continue
            if k == "cores" and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValueError(f"mapping knob 'cores' must be a whole number >= 1, got {v!r}")
            if k == "fusion" and not isinstance(v, bool):
                raise ValueError(f"mapping knob 'fusion' must be true or false, got {v!r}")
            if k == "unit" and not isinstance(v, str):
                raise ValueError(f"mapping knob 'unit' must be a unit name, got {v!r}")
            values = allowed.get(k)
            if values is not None and v not in values:
                raise ValueError(f"mapping knob {k!r} must be one of {', '.join(map(str, values))}, got {v!r}")
        return cls(**{k: v for k, v in d.items()})  # type: ignore[arg-type]

    def is_default(self) -> bool:
        """Whether no knob is set."""
        return all(getattr(self, f.name) is None for f in fields(self))

    def kernel(self) -> KernelKnobs:
        """The knobs a cost model is told (:class:`~cost_models.base.KernelKnobs`)."""
        return KernelKnobs(self.dataflow, self.layout, self.tile)


def _units(op: Op, chip: Chip, table: CostTable, unit: str | None) -> list[Unit]:
    """The units the op may run on under a pin to ``unit`` (None: every eligible one)."""
    eligible = table.eligible(op.name)
    return [u for u in chip.units if u.name in eligible and (unit is None or u.name == unit)]


def _offered(op: Op, chip: Chip, table: CostTable, units: list[Unit]) -> dict[str, set[str]]:
    p = table.precision_of(op.name)
    out: dict[str, set[str]] = {k: set() for k in _KERNEL}
    for u in units:
        for k, values in model_for(u.kind).knob_choices(op, u, chip, p).items():
            out[k].update(values)
    return out


def _split_cores(op: Op, units: list[Unit], every: bool = True) -> tuple[int, ...]:
    """Core counts ``op`` can be split over on every one of ``units`` (``every=False``: on one of
    them); 1 (unsplit) is always legal."""
    most = [u.cores if op.op_type in u.split_ops else 1 for u in units]
    top = (min if every else max)(most, default=1)
    return (1, *(k for k in range(2, top + 1) if shard_op(op, k) is not None))


def choices(op: Op, chip: Chip, table: CostTable) -> dict[str, tuple[object, ...]]:
    """The legal values of every knob for ``op`` on ``chip``, ``None`` (the default) first.

    Each value is legal alone on some unit; :func:`legality` checks a combination (a dataflow
    with a pin to a CPU is not; a split over more than one core needs every unit the op may
    run on to make it, so in practice a ``unit`` pin). ``table`` is the plain cost table.

    >>> import networkx as nx
    >>> from chips.schema import load_chip
    >>> from graph_ir.ir import ModelGraph, Tensor
    >>> from cost_models.table import cost_table
    >>> x, y = Tensor("x", (1, 3, 224, 224), "float32"), Tensor("y", (1, 64, 112, 112), "float32")
    >>> w = Tensor("w", (64, 3, 7, 7), "float32", is_weight=True)
    >>> stem = Op("stem", "Conv", "conv", (x, w), (y,), {"strides": [2, 2], "pads": [3, 3, 3, 3]})
    >>> dag = nx.DiGraph(); dag.add_node("stem", op=stem)
    >>> g = ModelGraph("g", dag, (x,), (y,), {"y": "stem"}, ("stem",)); chip = load_chip("rk3588")
    >>> c = choices(g.op("stem"), chip, cost_table(g, chip))
    >>> c["dataflow"], c["layout"], c["tile"], c["cores"]
    ((None, 'os', 'is'), (None, 'im2col'), (None, 'single'), (None, 1, 2, 3))
    """
    units = _units(op, chip, table, None)
    offered = _offered(op, chip, table, units)
    defaults = {"dataflow": None, "layout": LAYOUTS[0], "tile": TILES[0]}
    out: dict[str, tuple[object, ...]] = {
        "unit": (None, *(u.name for u in units)),
        "cores": (None, *_split_cores(op, units, every=False)),
    }
    for k in _KERNEL:
        npu_default = {u.dataflow for u in units if hasattr(u, "dataflow")} if k == "dataflow" else {defaults[k]}
        ordered = (DATAFLOWS, LAYOUTS, TILES)[_KERNEL.index(k)]
        out[k] = (None, *(v for v in ordered if v in offered[k] and v not in npu_default))
    fusable = any(can_fuse(op, u) for u in units)
    out["fusion"] = (None, True, False) if fusable else (None,)
    return out


def legality(op: Op, chip: Chip, table: CostTable, mapping: OpMapping) -> str | None:
    """Why ``mapping`` is illegal for ``op`` on ``chip``, or None when it is legal.

    Refused: a unit the chip lacks or that cannot run the op at its precision; cores below 1,
    above the unit's, or a split the unit cannot make of this op; a dataflow, layout or tile
    no allowed unit offers for the op (a dataflow on a CPU, on a non-GEMM op; single buffering
    of an op whose operands fit half the SRAM); fusion of an op no allowed unit fuses.
    """
    names = {u.name for u in chip.units}
    if mapping.unit is not None and mapping.unit not in names:
        return f"chip {chip.name!r} has no unit {mapping.unit!r}"
    units = _units(op, chip, table, mapping.unit)
    if not units:
        return f"unit {mapping.unit!r} cannot run {op.name!r} ({op.op_type}) at {table.precision_of(op.name)}"
    if mapping.cores is not None and mapping.cores not in _split_cores(op, units):
        where = mapping.unit or "/".join(u.name for u in units)
        return f"{op.name!r} ({op.op_type}) cannot be split over {mapping.cores} cores of {where}"
    offered = _offered(op, chip, table, units)
    for k in _KERNEL:
        v = getattr(mapping, k)
        if v is not None and v not in offered[k]:
            where = mapping.unit or "any unit able to run it"
            return f"{k} {v!r} is not offered for {op.name!r} ({op.op_type}) on {where}"
    if mapping.fusion is not None and not any(can_fuse(op, u) for u in units):
        return f"{op.name!r} ({op.op_type}) is in no fusion group on {mapping.unit or 'its units'}"
    return None


def legalize(op: Op, chip: Chip, table: CostTable, mapping: OpMapping) -> OpMapping:
    """``mapping`` with each knob that is illegal here dropped to its default (``cores``: clipped
    to the most this op splits over), the unit first, so that :func:`legality` then holds.

    >>> import networkx as nx
    >>> from chips.schema import load_chip
    >>> from graph_ir.ir import ModelGraph, Tensor
    >>> from cost_models.table import cost_table
    >>> x, y = Tensor("x", (1, 64), "float32"), Tensor("y", (1, 64), "float32")
    >>> dag = nx.DiGraph(); dag.add_node("r", op=Op("r", "Relu", "activation", (x,), (y,)))
    >>> g = ModelGraph("g", dag, (x,), (y,), {"y": "r"}, ("r",)); chip = load_chip("rk3588")
    >>> legalize(g.op("r"), chip, cost_table(g, chip), OpMapping(unit="cpu_big", dataflow="os"))
    OpMapping(unit='cpu_big', cores=None, dataflow=None, layout=None, tile=None, fusion=None)
    """
    m = mapping
    if m.unit is not None and legality(op, chip, table, OpMapping(unit=m.unit)) is not None:
        m = replace(m, unit=None)
    if m.cores is not None:
        legal = _split_cores(op, _units(op, chip, table, m.unit))
        m = replace(m, cores=max((k for k in legal if k <= m.cores), default=None))
    for k in ("dataflow", "layout", "tile", "fusion"):
        if getattr(m, k) is not None and legality(op, chip, table, OpMapping(unit=m.unit, **{k: getattr(m, k)})):
            m = replace(m, **{k: None})
    return m
