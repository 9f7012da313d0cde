"""The Schedule type: which unit and core runs each op, in which order, and the transfers
that placement implies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph, Tensor, deployed_bytes

__all__ = [
    "Placement",
    "Schedule",
    "ScheduleError",
    "Transfer",
    "implied_transfers",
    "tensor_bytes",
    "transfer_ns",
]


class ScheduleError(ValueError):
    """A schedule is inconsistent with its graph or chip (a bug in a policy, or bad input)."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where and (as the policy estimated) when one op runs; times in ns."""

    op: str
    unit: str
    core: int
    est_start_ns: float
    est_finish_ns: float
    reason: str = ""
    #: Cores of ``unit`` the op runs on, split (``core`` first). None: the engine decides (it
    #: splits an op whose type the unit lists in ``split_ops`` over cores that are idle).
    cores: int | None = None


@dataclass(frozen=True, slots=True)
class Transfer:
    """One DMA transfer of a tensor from its producer's domain to a consumer's domain.

    ``producer`` is the op that writes the tensor ("" for a graph input); ``consumers`` are
    the ops in ``dst_domain`` that wait for it ("" stands for the graph output's return).
    """

    tensor: str
    src_domain: str
    dst_domain: str
    bytes: int
    producer: str
    consumers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Schedule:
    """A placement of every op plus the per-core order and the implied transfers."""

    policy: str
    placements: Mapping[str, Placement]
    core_order: Mapping[tuple[str, int], tuple[str, ...]]
    transfers: tuple[Transfer, ...]
    est_makespan_ns: float

    def unit_of(self, op: str) -> str:
        return self.placements[op].unit


def tensor_bytes(tensor: Tensor, dtype: str | None) -> int:
    """Bytes of ``tensor`` with floats stored as ``dtype`` (None: the model's own dtype)."""
    return deployed_bytes(tensor, dtype)


def transfer_ns(chip: Chip, src: str, dst: str, nbytes: int) -> float:
    """Uncontended time to move ``nbytes`` from domain ``src`` to ``dst`` (0 within a domain)."""
    if src == dst:
        return 0.0
    link = chip.link_between(src, dst)
    if link is None:
        raise ScheduleError(f"no link between domains {src!r} and {dst!r}")
    return link.transfer_ns(nbytes)


def _dtype(table: CostTable, op: str, unit: str) -> str | None:
    return table.costs[op][unit].dtype


def implied_transfers(
    graph: ModelGraph, chip: Chip, table: CostTable, unit_of: Mapping[str, str]
) -> tuple[Transfer, ...]:
    """Transfers a placement implies: one per (tensor, destination domain).

    Graph inputs start in the chip's host domain; graph outputs return to it. A tensor is
    stored in the dtype its producer ran in (graph inputs in the table's precision).
    """
    unit_domain = {u.name: u.domain for u in chip.units}
    domain_of = {op: unit_domain[u] for op, u in unit_of.items()}
    host = chip.host
    default_dtype = None if table.precision == "model" else table.precision
    wanted: dict[tuple[str, str], list[str]] = {}
    origin: dict[str, tuple[str, str, Tensor, str | None]] = {}

    for t in graph.inputs:
        origin[t.name] = ("", host, t, default_dtype)
    ops = graph.ops()
    for op in ops:
        name = op.name
        dt = _dtype(table, name, unit_of[name])
        for t in op.outputs:
            origin[t.name] = (name, domain_of[name], t, dt)
    for op in ops:
        name = op.name
        dst = domain_of[name]
        seen: set[str] = set()
        for t in op.inputs:
            if t.is_weight or t.name in seen:
                continue
            came = origin.get(t.name)
            if came is None:
                continue
            seen.add(t.name)
            if came[1] != dst:
                wanted.setdefault((t.name, dst), []).append(name)
    for t in graph.outputs:
        if t.name in origin and origin[t.name][1] != host:
            wanted.setdefault((t.name, host), []).append("")

    transfers = []
    for (tensor, dst), consumers in wanted.items():
        producer, src, t, dt = origin[tensor]
        transfers.append(Transfer(tensor, src, dst, tensor_bytes(t, dt), producer, tuple(consumers)))
    return tuple(transfers)
