"""Feature vectors of chips, ops, graphs and mapping signatures, and a distance between chips.

Every vector is a plain ``dict[str, float]`` with stable names, so that vectors of different
chips or ops line up by name (a name one vector lacks counts as 0). Magnitudes are scaled by
``log2(1 + x)`` with ``x`` in the unit the name states: a factor of two in a large quantity is
a step of about 1, whatever its unit, so that no feature dominates a distance by its unit alone.

>>> from chips import load_chip, override
>>> rk = chip_features(load_chip("rk3588"))
>>> round(rk["npu.peak_int8_log2_gflops"], 2)  # log2(1 + 3 cores x 2048 GFLOP/s)
12.59
>>> rk["dsp.units"], rk["npu.units"]
(0.0, 1.0)
>>> fast = chip_features(override(load_chip("rk3588"), ["npu.clock_mhz=1250"]))
>>> chip_distance(rk, fast) < chip_distance(rk, chip_features(load_chip("jetson_orin_nano")))
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

import networkx as nx

from chips.schema import DTYPES, Chip, Unit, unit_class, unit_kinds
from cost_models.base import unit_bandwidth_gbps
from graph_ir.categories import CATEGORIES
from graph_ir.gemm import conv_group, gemm_of
from graph_ir.ir import ModelGraph, Op

if TYPE_CHECKING:
    from cost_models.table import CostTable

__all__ = [
    "GEOMETRY_FIELDS",
    "UNIT_PREFIX",
    "chip_distance",
    "chip_features",
    "graph_features",
    "log2p",
    "mapping_features",
    "op_features",
]

#: Fields of a unit kind's class that describe its array geometry, read where the kind has them
#: (``{kind}.{field}_log2``, the largest over the chip's units of that kind).
GEOMETRY_FIELDS: tuple[str, ...] = ("mac_rows", "mac_cols", "channel_atom", "compute_units")
#: Prefix of the per-unit entries of :func:`chip_features` (``unit.NAME.…``): they let
#: :func:`mapping_features` describe a pinned unit, and :func:`chip_distance` skips them (unit
#: names are each chip's own; kinds compare chips).
UNIT_PREFIX = "unit."
#: Precisions an op may be costed at, by the numpy dtype of a model's own float tensors.
_NUMPY_PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp32"}


class MappingLike(Protocol):
    """What :func:`mapping_features` reads of a :class:`cost_models.mapping.OpMapping`."""

    def as_dict(self) -> dict[str, object]: ...


def log2p(x: float) -> float:
    """``log2(1 + x)``, 0 for ``x <= 0``: the scale of every magnitude feature.

    >>> log2p(0), log2p(1), log2p(-5)
    (0.0, 1.0, 0.0)
    """
    return math.log2(1.0 + x) if x > 0 else 0.0


def _unit_peak(unit: Unit, dtype: str) -> float:
    """GFLOP/s of the whole unit (every core) for a request at ``dtype``: the dtype it runs
    that request in (:meth:`Unit.dtype_for`), 0 when it cannot."""
    runs = unit.dtype_for(dtype)
    return unit.peak_flops_per_ns(runs) * unit.cores if runs is not None else 0.0


def _host_link_gbps(chip: Chip, unit: Unit) -> float:
    """GB/s (all DMA channels) of the link between the host's domain and ``unit``'s; 0 when the
    unit lives in the host's domain (no copy) or no link joins them."""
    if unit.domain == chip.host:
        return 0.0
    link = chip.link_between(chip.host, unit.domain)
    return link.bandwidth_gbps * link.dma_channels if link is not None else 0.0


def _kind_features(chip: Chip, kind: str) -> dict[str, float]:
    """The features of one unit kind of ``chip`` (zeros when it has no unit of that kind)."""
    units = [u for u in chip.units if u.kind == kind]
    out: dict[str, float] = {
        f"{kind}.units": float(len(units)),
        f"{kind}.cores_log2": log2p(sum(u.cores for u in units)),
        f"{kind}.onchip_log2_bytes": log2p(max((u.onchip_bytes() for u in units), default=0.0)),
        f"{kind}.bandwidth_log2_gbps": log2p(max((unit_bandwidth_gbps(u, chip) for u in units), default=0.0)),
        f"{kind}.host_link_log2_gbps": log2p(max((_host_link_gbps(chip, u) for u in units), default=0.0)),
    }
    for dtype in DTYPES:
        peak = sum(_unit_peak(u, dtype) for u in units)
        ridge = max((_unit_peak(u, dtype) / unit_bandwidth_gbps(u, chip) for u in units), default=0.0)
        out[f"{kind}.peak_{dtype}_log2_gflops"] = log2p(peak)
        out[f"{kind}.ridge_{dtype}_log2_flop_per_byte"] = log2p(ridge)
    fields = unit_class(kind).model_fields
    for name in GEOMETRY_FIELDS:
        if name in fields:
            values = [float(getattr(u, name) or 0) for u in units]
            out[f"{kind}.{name}_log2"] = log2p(max(values, default=0.0))
    return out


def _unit_entries(chip: Chip, unit: Unit) -> dict[str, float]:
    """``unit.NAME.…``: what :func:`mapping_features` says of an op pinned to ``unit``."""
    p = f"{UNIT_PREFIX}{unit.name}."
    out = {f"{p}kind.{unit.kind}": 1.0, f"{p}cores_log2": log2p(unit.cores)}
    out[f"{p}bandwidth_log2_gbps"] = log2p(unit_bandwidth_gbps(unit, chip))
    for dtype in ("int8", "fp16", "fp32"):
        out[f"{p}peak_{dtype}_log2_gflops"] = log2p(_unit_peak(unit, dtype))
    return out


def chip_features(chip: Chip) -> dict[str, float]:
    """The chip's hardware feature vector (stable names; zeros for unit kinds it lacks).

    Per registered unit kind ``K`` (``cpu``, ``gpu``, ``npu``, ``dsp`` and every kind a plugin
    registers):

    - ``K.units``: how many units of that kind (a count, not scaled);
    - ``K.cores_log2``: their cores together;
    - ``K.peak_D_log2_gflops`` for each dtype ``D``: GFLOP/s of all of them for a request at
      ``D`` (in the dtype each runs it in; :meth:`chips.schema.Unit.peak_flops_per_ns` x cores);
    - ``K.ridge_D_log2_flop_per_byte``: the ridge point, the largest unit's peak over its
      bandwidth (FLOP per byte);
    - ``K.onchip_log2_bytes``: on-chip buffer per core in bytes (SRAM, L2; the largest unit);
    - ``K.bandwidth_log2_gbps``: the unit's bandwidth into its memory domain in GB/s;
    - ``K.host_link_log2_gbps``: the DMA link (all channels) between the host's domain and the
      unit's in GB/s (0 where the unit shares the host's domain);
    - ``K.F_log2`` for each :data:`GEOMETRY_FIELDS` ``F`` the kind has (NPU array rows, columns
      and channel atom, GPU compute units).

    Chip-wide: ``dram.bandwidth_log2_gbps`` (GB/s), ``dram.latency_log2_ns`` (ns),
    ``links.max_log2_gbps`` and ``links.total_log2_gbps`` (explicit links, GB/s over all channels).
    And per unit ``unit.NAME.…`` (kind one-hot, cores, bandwidth, peaks): see :data:`UNIT_PREFIX`.
    Every magnitude is ``log2(1 + x)`` (:func:`log2p`).
    """
    out: dict[str, float] = {}
    for kind in unit_kinds():
        out |= _kind_features(chip, kind)
    explicit = [k.bandwidth_gbps * k.dma_channels for k in chip.links if not k.derived]
    out["dram.bandwidth_log2_gbps"] = log2p(chip.dram.bandwidth_gbps)
    out["dram.latency_log2_ns"] = log2p(chip.dram.latency_ns)
    out["links.max_log2_gbps"] = log2p(max(explicit, default=0.0))
    out["links.total_log2_gbps"] = log2p(sum(explicit))
    for unit in chip.units:
        out |= _unit_entries(chip, unit)
    return out


def chip_distance(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Euclidean distance between two :func:`chip_features` vectors over the union of their
    names (a name one lacks counts as 0), per-unit entries (:data:`UNIT_PREFIX`) left out.

    A metric on the vectors: symmetric, 0 on itself, and the triangle inequality holds.

    >>> chip_distance({"npu.units": 1.0, "dram.bandwidth_log2_gbps": 5.0}, {"dram.bandwidth_log2_gbps": 2.0})
    3.1622776601683795
    """
    names = {n for n in (*a, *b) if not n.startswith(UNIT_PREFIX)}
    return math.sqrt(sum((a.get(n, 0.0) - b.get(n, 0.0)) ** 2 for n in sorted(names)))


def _precision(op: Op, table: CostTable | None) -> str:
    """The precision ``op`` is costed at (the table's), else its own float inputs' dtype."""
    p = table.precision_of(op.name) if table is not None else "model"
    if p != "model":
        return p
    dtypes = [t.dtype for t in (*op.inputs, *op.outputs) if t.dtype in _NUMPY_PRECISION]
    return _NUMPY_PRECISION[dtypes[0]] if dtypes else "fp32"


def _shape_features(op: Op) -> dict[str, float]:
    """Kernel window, channels, groups and the GEMM ``B, M, N, K`` the op lowers to."""
    gemm = gemm_of(op)
    out = dict.fromkeys(("kernel_log2", "channels_in_log2", "channels_out_log2", "groups_log2"), 0.0)
    out["depthwise"] = 0.0
    if op.category == "conv" and op.weights and len(op.weights[0].shape) >= 2:
        w = op.weights[0].shape
        group = conv_group(op)
        out["kernel_log2"] = log2p(math.prod(w[2:]))
        out["channels_in_log2"] = log2p(w[1] * group)
        out["channels_out_log2"] = log2p(w[0])
        out["groups_log2"] = log2p(group)
        out["depthwise"] = float(group > 1 and w[1] == 1)
    for name, value in zip(("batch", "m", "n", "k"), gemm or (0, 0, 0, 0), strict=True):
        out[f"gemm_{name}_log2"] = log2p(value)
    return out


def op_features(op: Op, table: CostTable | None = None) -> dict[str, float]:
    """One op's feature vector.

    ``cat.C`` one-hot of its category; ``macs_log2`` (MACs), ``bytes_log2``, ``weight_bytes_log2``
    (bytes read and written, weights alone, at its precision), ``intensity_log2`` (FLOP per
    byte); ``kernel_log2`` (kernel window positions), ``channels_in_log2``, ``channels_out_log2``,
    ``groups_log2``, ``depthwise`` (flag) for convs; ``gemm_{batch,m,n,k}_log2`` of the GEMM it
    lowers to (0 for other ops); ``dtype.D`` one-hot of its precision. With a cost ``table``
    also ``best_log2_ns`` (the fastest unit's latency, ns) and ``units_eligible`` (a count).

    >>> from graph_ir.ir import Tensor
    >>> x, w = Tensor("x", (1, 16, 32, 32), "float32"), Tensor("w", (64, 16, 3, 3), "float32", True)
    >>> f = op_features(Op("c", "Conv", "conv", (x, w), (Tensor("y", (1, 64, 32, 32), "float32"),)))
    >>> f["cat.conv"], f["kernel_log2"] == log2p(9), f["gemm_k_log2"] == log2p(144), f["dtype.fp32"]
    (1.0, True, True, 1.0)
    """
    precision = _precision(op, table)
    moved = op.input_bytes(precision) + op.weight_bytes(precision) + op.output_bytes(precision)
    out = {f"cat.{c}": float(op.category == c) for c in CATEGORIES}
    out["macs_log2"] = log2p(op.macs)
    out["bytes_log2"] = log2p(moved)
    out["weight_bytes_log2"] = log2p(op.weight_bytes(precision))
    out["intensity_log2"] = log2p(op.flops / moved if moved else 0.0)
    out |= _shape_features(op)
    out |= {f"dtype.{d}": float(d == precision) for d in DTYPES}
    if table is not None and op.name in table.costs:
        out["best_log2_ns"] = log2p(table.best(op.name).latency_ns)
        out["units_eligible"] = float(len(table.costs[op.name]))
    return out


def graph_features(graph: ModelGraph) -> dict[str, float]:
    """A model's feature vector: ``ops_log2`` (op count), ``macs_log2``, ``weight_bytes_log2``
    (in its own dtypes), ``depth_log2`` (ops on the longest path), ``inputs_log2_bytes``, and
    ``share.C``, the share of the MACs in each category ``C`` (0 to 1; all 0 without MACs)."""
    ops = graph.ops()
    macs = sum(o.macs for o in ops)
    out = {
        "ops_log2": log2p(len(ops)),
        "macs_log2": log2p(macs),
        "weight_bytes_log2": log2p(sum(o.weight_bytes() for o in ops)),
        "depth_log2": log2p(nx.dag_longest_path_length(graph.g) + 1 if len(graph) else 0),
        "inputs_log2_bytes": log2p(sum(t.nbytes for t in graph.inputs)),
    }
    for c in CATEGORIES:
        out[f"share.{c}"] = sum(o.macs for o in ops if o.category == c) / macs if macs else 0.0
    return out


def _signature(m: MappingLike | Mapping[str, object]) -> dict[str, object]:
    return dict(m) if isinstance(m, Mapping) else m.as_dict()


def mapping_features(
    m: MappingLike | Mapping[str, object], chip_feats: Mapping[str, float] | None = None
) -> dict[str, float]:
    """One-hot features of a mapping signature (an ``OpMapping`` or its ``as_dict()``).

    ``default`` is 1 for the all-default signature. A knob set to a name is ``KNOB.VALUE``
    (``dataflow.os``, ``layout.im2col``, ``tile.single``); a flag is ``KNOB.on`` or ``KNOB.off``;
    a number ``KNOB_log2`` and ``KNOB.set``. A pinned ``unit`` is ``unit.pinned`` plus, given the
    chip's :func:`chip_features`, that unit's kind one-hot, cores, bandwidth and peaks
    (``unit.kind.npu``, ``unit.peak_int8_log2_gflops`` ...): what carries to another chip.

    >>> mapping_features({"unit": "npu", "tile": "single", "fusion": False})
    {'unit.pinned': 1.0, 'tile.single': 1.0, 'fusion.off': 1.0}
    >>> mapping_features({})
    {'default': 1.0}
    """
    sig = _signature(m)
    if not sig:
        return {"default": 1.0}
    out: dict[str, float] = {}
    for knob, value in sorted(sig.items(), key=lambda kv: _KNOB_ORDER.get(kv[0], 99)):
        if knob == "unit":
            out["unit.pinned"] = 1.0
            out |= _pinned_unit(str(value), chip_feats or {})
        elif isinstance(value, bool):
            out[f"{knob}.{'on' if value else 'off'}"] = 1.0
        elif isinstance(value, (int, float)):
            out[f"{knob}.set"] = 1.0
            out[f"{knob}_log2"] = log2p(float(value))
        else:
            out[f"{knob}.{value}"] = 1.0
    return out


_KNOB_ORDER = {k: i for i, k in enumerate(("unit", "cores", "dataflow", "layout", "tile", "fusion"))}


def _pinned_unit(name: str, chip_feats: Mapping[str, float]) -> dict[str, float]:
    """The ``unit.NAME.…`` entries of ``chip_feats`` as ``unit.…`` (empty for an unknown name)."""
    p = f"{UNIT_PREFIX}{name}."
    return {f"{UNIT_PREFIX}{k[len(p):]}": v for k, v in chip_feats.items() if k.startswith(p)}


def union_names(vectors: Iterable[Mapping[str, float]]) -> list[str]:
    """The sorted union of the names of ``vectors`` (the columns a matrix of them needs)."""
    return sorted({n for v in vectors for n in v})
