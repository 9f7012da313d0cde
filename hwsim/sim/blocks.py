"""How an op's time is laid out: its fixed overhead, then one or more *blocks*.

A block lasts ``max(compute, memory)`` uncontended, its bytes streamed evenly over it; under
contention it waits for its bytes (:class:`hwsim.sim.resources.SharedBandwidth`). An op whose
working set fits (``OpCost.tiles == 1``) is one block:
``latency = overhead + max(compute, memory)``, exactly its cost-model latency. A tiled op
(``tiles = T > 1``) is double-buffered: tile ``i + 1`` loads while tile ``i`` computes and tile
``i - 1`` is stored, with the first load and the last store exposed. With ``c = compute / T``,
``L = read bytes / T`` and ``S = write bytes / T`` (in ns at the op's bandwidth)::

    latency = overhead + L + max(c, L) + (T - 2) * max(c, L + S) + max(c, S) + S     (T >= 2)

(the ``T - 2`` steady tiles are simulated as one block). Without double buffering
(:class:`hwsim.sim.options.EngineOptions`), every tile loads, computes and stores in turn:
``overhead + T * (L + c + S)``. :func:`op_time_ns` gives these uncontended times.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chips.units import PS_PER_NS
from cost_models.base import OpCost

__all__ = ["DRAM_MEMORY", "MAX_SERIAL_GROUPS", "Block", "op_blocks", "op_time_ns", "shared_time_ns", "stream_uses"]

#: The shared DRAM's name among the memories whose bandwidth streams share
#: (:func:`hwsim.sim.plan.memory_of`).
DRAM_MEMORY = "dram"

#: Tile-by-tile ops (no double buffering) run their tiles in at most this many groups.
MAX_SERIAL_GROUPS = 8


@dataclass(frozen=True, slots=True)
class Block:
    """A stretch of an op: ``dur_ns`` uncontended, ``bytes`` streamed evenly over it.

    ``compute_ns`` is its compute part; ``tiles`` names the tiles it covers (``"0"``,
    ``"1-6"``, ``"load 0"``; empty for an untiled op).
    """

    dur_ns: float
    bytes: int
    compute_ns: float
    tiles: str


def _part(total: int, parts: int, i: int) -> int:
    """Bytes of part ``i`` when ``total`` is cut in ``parts`` near-equal integer parts."""
    return total * (i + 1) // parts - total * i // parts


def op_blocks(cost: OpCost, double_buffer: bool = True, shards: int = 1) -> list[Block]:
    """The blocks an op runs as after its overhead (see the module docstring).

    ``shards`` identical shards run side by side: their bytes add up, their times do not.

    >>> c = OpCost("u", "int8", 400.0, 200.0, 100.0, 1000, 0, 0.0, tiles=4)
    >>> [(b.tiles, b.dur_ns) for b in op_blocks(c)]
    [('load 0', 50.0), ('0', 100.0), ('1-2', 200.0), ('3', 100.0)]
    """
    t = cost.tiles
    if t <= 1 or cost.dram_bytes <= 0:
        body = max(cost.compute_ns, cost.memory_ns)
        return [Block(body, cost.dram_bytes * shards, cost.compute_ns, "")]
    ns_per_byte = cost.memory_ns / cost.dram_bytes
    r, w = cost.dram_read_bytes, cost.dram_write_bytes
    c = cost.compute_ns / t
    blocks: list[Block] = []

    def add(compute_ns: float, nbytes: int, tiles: str) -> None:
        dur = max(compute_ns, nbytes * ns_per_byte)
        if dur > 0 or nbytes > 0:
            blocks.append(Block(dur, nbytes * shards, compute_ns, tiles))

    if not double_buffer:
        # Tile by tile: load, compute, store in turn. Consecutive tiles are run in at most
        # MAX_SERIAL_GROUPS groups (a group loads its tiles, computes them, stores them): the
        # same uncontended time, and a bounded number of blocks however fine the tiling.
        groups = min(t, MAX_SERIAL_GROUPS)
        for g in range(groups):
            lo, hi = t * g // groups, t * (g + 1) // groups
            name = f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}"
            add(0.0, r * hi // t - r * lo // t, f"load {name}")
            add(c * (hi - lo), 0, name)
            add(0.0, w * hi // t - w * lo // t, f"store {name}")
        return blocks
    add(0.0, _part(r, t, 0), "load 0")
    add(c, _part(r, t, 1), "0")
    if t > 2:
        # parts 2..t-1 of the reads and 0..t-3 of the writes, in closed form
        steady = (r - r * 2 // t) + w * (t - 2) // t
        add(c * (t - 2), steady, f"1-{t - 2}" if t > 3 else "1")
    add(c, _part(w, t, t - 2), f"{t - 1}")
    add(0.0, _part(w, t, t - 1), f"store {t - 1}")
    return blocks


def op_time_ns(cost: OpCost, double_buffer: bool = True) -> float:
    """Uncontended time of an op in the engine: overhead plus its blocks (ns).

    >>> c = OpCost("u", "int8", 400.0, 200.0, 100.0, 1000, 0, 0.0)
    >>> op_time_ns(c)  # untiled: max(compute, memory) + overhead
    500.0
    >>> op_time_ns(OpCost("u", "int8", 400.0, 200.0, 100.0, 1000, 0, 0.0, tiles=4))
    550.0
    """
    return cost.overhead_ns + sum(b.dur_ns for b in op_blocks(cost, double_buffer))


def shared_time_ns(
    cost: OpCost, shards: int, uses: Mapping[str, float], capacity_bytes_per_ps: Mapping[str, float],
    double_buffer: bool = True,
) -> float:
    """Time of an op run as ``shards`` shards of ``cost`` with nothing else running, in ns: its
    uncontended time (:func:`op_time_ns`), except that a block whose shards together stream more
    than a memory carries in the block's time takes as long as that memory needs for them
    (``uses``: :func:`stream_uses`; ``capacity_bytes_per_ps``: each memory's bandwidth, as
    :func:`hwsim.sim.plan.memory_capacity`). Every shard reads all the weights, so a weight-heavy
    op split many ways waits on the DRAM.

    >>> c = OpCost("u", "int8", 400.0, 200.0, 100.0, 1000, 0, 0.0)
    >>> dram = {"dram": 0.005}  # 5 bytes per ns
    >>> shared_time_ns(c, 1, {"dram": 1.0}, dram), shared_time_ns(c, 3, {"dram": 1.0}, dram)  # 3000 bytes: 600 ns
    (500.0, 700.0)
    """
    carried = {m: c for m, c in capacity_bytes_per_ps.items() if c > 0 and m in uses}
    t = cost.overhead_ns
    for b in op_blocks(cost, double_buffer, shards):
        need_ps = max((b.bytes * uses[m] / c for m, c in carried.items()), default=0.0)
        t += max(b.dur_ns, need_ps / PS_PER_NS)
    return t


def stream_uses(cost: OpCost, memory: str) -> dict[str, float]:
    """What each byte an op's blocks stream takes from each memory: all from ``memory`` (its
    domain's, :func:`hwsim.sim.plan.memory_of`), except the share that is SRAM spill traffic
    (``OpCost.spill_bytes``), which streams through the DRAM.

    >>> stream_uses(OpCost("u", "int8", 1.0, 1.0, 0.0, 300, 100, 0.0, spill_bytes=100), "sram0")
    {'sram0': 0.75, 'dram': 0.25}
    >>> stream_uses(OpCost("u", "int8", 1.0, 1.0, 0.0, 300, 100, 0.0), "sram0")
    {'sram0': 1.0}
    """
    total = cost.dram_bytes
    if memory == DRAM_MEMORY or cost.spill_bytes <= 0 or total <= 0:
        return {memory: 1.0}
    share = min(cost.spill_bytes / total, 1.0)
    return {memory: 1.0 - share, DRAM_MEMORY: share} if share < 1.0 else {DRAM_MEMORY: 1.0}
