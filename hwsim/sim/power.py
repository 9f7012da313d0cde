"""Power as the engine sees it while it runs: the cap an op or a transfer must fit under.

The chip's power at an instant is the one formula of :func:`cost_models.energy.power_w`: each
unit ``active_w`` per busy core (``idle_w`` when none is), plus the DRAM's energy per byte times
the bytes per picosecond streaming through it. Under a cap (``EngineOptions.max_power_w``) the
engine keeps that sum at or below the cap at every instant of the trace with a
:class:`~hwsim.sim.resources.PowerBudget`:

- the budget starts with every unit idle (the sum of ``idle_w``);
- an op that starts takes the power its unit's cores add (``unit_power_w`` with its cores busy
  less without them) plus the DRAM power of its fastest stream (its blocks' uncontended rate in
  a DRAM domain, the spill share of it in an SRAM one; contention only slows a stream, so it
  never draws more), and gives it back
  when it ends;
- a transfer takes the DRAM power of its stream at the link's rate (twice for a DRAM-to-DRAM
  copy), from the grant of its channel to its last byte;
- the DRAM power all running work took counts at most the DRAM's power at its bandwidth: the
  streams share it, so together they never draw more (before, four cores each reserving a stream
  near the DRAM's rate were held to run one by one under a cap their run never reached).

The reservation is at the nominal clock: an op that starts throttled (:mod:`hwsim.sim.thermal`)
draws less than it holds, so the cap stays met, conservatively.

An op or transfer whose power does not fit waits (its core or link stays idle) until something
ends; other cores and links may start smaller work meanwhile (power-capped list scheduling). A cap
below the chip's power while a single op or transfer runs alone could never be met:
:func:`check_cap` refuses it with :class:`PowerCapError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from chips.schema import Chip, Unit
from chips.units import PS_PER_NS
from cost_models.base import OpCost
from cost_models.energy import dram_power_w, power_w, unit_power_w
from hwsim.sim.blocks import DRAM_MEMORY, Block, op_blocks, stream_uses
from hwsim.sim.frames import Core
from hwsim.sim.plan import Plan
from hwsim.sim.resources import PowerBudget

__all__ = [
    "PowerCapError",
    "PowerGate",
    "blocks_dram_w",
    "check_cap",
    "chip_power_now",
    "largest_solo_power_w",
    "transfer_dram_w",
]


class PowerCapError(ValueError):
    """A power cap below what one op or transfer draws alone: it could never run (bad input)."""


def blocks_dram_w(chip: Chip, uses: Mapping[str, float], blocks: Sequence[Block], dram_capacity: float) -> float:
    """DRAM power of an op's fastest stream: its blocks' uncontended rate times the DRAM's share
    of each byte (``uses``, :func:`hwsim.sim.blocks.stream_uses`: 1 in a DRAM domain, the spill
    share in an SRAM one), at most the DRAM's bandwidth. Watts."""
    share = uses.get(DRAM_MEMORY, 0.0)
    if share <= 0.0:
        return 0.0
    rate = max((b.bytes / (b.dur_ns * PS_PER_NS) for b in blocks if b.bytes > 0 and b.dur_ns > 0), default=0.0)
    return dram_power_w(chip.dram, min(rate * share, dram_capacity))


def transfer_dram_w(chip: Chip, run_plan: Plan, j: int) -> float:
    """DRAM power of transfer ``j``'s stream at its link's rate (0 W without bytes or a DRAM end)."""
    xp = run_plan.transfers
    if xp.transfers[j].bytes <= 0:
        return 0.0
    rate = xp.rate_bytes_per_ps[j] * xp.uses[j].get("dram", 0.0)
    return dram_power_w(chip.dram, min(rate, run_plan.capacity_bytes_per_ps["dram"]))


def chip_power_now(chip: Chip, busy_cores: Mapping[str, Mapping[float, int]], dram_bytes_per_ps: float) -> float:
    """The chip's power with ``busy_cores[unit][f]`` cores of each unit busy at clock factor
    ``f`` and the DRAM streaming ``dram_bytes_per_ps``: :func:`cost_models.energy.power_w`. Watts."""
    units = ((u, busy_cores.get(u.name, {})) for u in chip.units)
    return power_w(units, chip.dram, dram_bytes_per_ps)


class PowerGate:
    """The engine's power cap: what each running op and transfer took from the budget."""

    __slots__ = ("_held", "_units", "blocked_cores", "budget", "dram_capacity", "links_blocked")

    def __init__(self, chip: Chip, run_plan: Plan, cap_w: float) -> None:
        self._units: dict[str, Unit] = {u.name: u for u in chip.units}
        base = sum(unit_power_w(u, 0) for u in chip.units)
        self.dram_capacity = run_plan.capacity_bytes_per_ps["dram"]
        # the streams' DRAM power is pooled: together they never draw more than the DRAM at its
        # bandwidth, however many each reserved at its own uncontended rate
        self.budget = PowerBudget(cap_w, base, dram_power_w(chip.dram, self.dram_capacity))
        #: DRAM watts each running op instance (``("op", inst)``) or transfer took.
        self._held: dict[tuple[str, int], float] = {}
        #: Cores whose ready op did not fit: looked at again when power is given back.
        self.blocked_cores: set[Core] = set()
        self.links_blocked = False

    def unit_delta_w(self, unit: str, busy_before: int, cores: int) -> float:
        """Power ``cores`` more busy cores add to ``unit`` with ``busy_before`` busy."""
        u = self._units[unit]
        return unit_power_w(u, busy_before + cores) - unit_power_w(u, busy_before)

    def take_op(self, inst: int, unit: str, busy_before: int, cores: int, dram_w: float) -> bool:
        """Op instance ``inst`` starts on ``cores`` cores of ``unit``, if its power fits."""
        if not self.budget.request(self.unit_delta_w(unit, busy_before, cores), dram_w):
            return False
        self._held[("op", inst)] = dram_w
        return True

    def release_op(self, inst: int, unit: str, busy_after: int, cores: int) -> None:
        """Op instance ``inst`` ended: its cores of ``unit`` are idle again."""
        self.budget.release(self.unit_delta_w(unit, busy_after, cores), self._held.pop(("op", inst)))

    def take_transfer(self, xi: int, dram_w: float) -> bool:
        """Transfer instance ``xi`` gets its channel, if its DRAM power fits."""
        if not self.budget.request(0.0, dram_w):
            self.links_blocked = True
            return False
        self._held[("x", xi)] = dram_w
        return True

    def release_transfer(self, xi: int) -> None:
        """Transfer instance ``xi`` ended."""
        self.budget.release(0.0, self._held.pop(("x", xi)))


def largest_solo_power_w(
    chip: Chip, run_plan: Plan, op_cost: Callable[[int, int], OpCost], double_buffer: bool
) -> tuple[float, str]:
    """The chip's highest power while a single op or transfer runs alone (the rest idle), and
    what runs: the least cap under which every op and transfer can run.

    ``op_cost(i, shards)`` is op ``i``'s cost on its unit as ``shards`` shards; an op runs on
    the cores its placement fixes, else on one. Watts.
    """
    base = sum(unit_power_w(u, 0) for u in chip.units)
    dram_cap = run_plan.capacity_bytes_per_ps["dram"]
    worst, what = base, "nothing (the idle chip)"
    for i, name in enumerate(run_plan.names):
        k = run_plan.fixed_cores[i] or 1
        u = chip.unit(run_plan.unit[i])
        cost = op_cost(i, k)
        uses = stream_uses(cost, run_plan.memory[i])
        blocks = op_blocks(cost, double_buffer, k)
        w = base + unit_power_w(u, k) - unit_power_w(u, 0) + blocks_dram_w(chip, uses, blocks, dram_cap)
        if w > worst:
            worst, what = w, f"op {name!r} on {u.name}"
    for j, tr in enumerate(run_plan.transfers.transfers):
        w = base + transfer_dram_w(chip, run_plan, j)
        if w > worst:
            worst, what = w, f"transfer of {tr.tensor!r} ({tr.src_domain}->{tr.dst_domain})"
    return worst, what


def check_cap(
    chip: Chip, run_plan: Plan, cap_w: float, op_cost: Callable[[int, int], OpCost], double_buffer: bool
) -> None:
    """Refuse a cap below :func:`largest_solo_power_w`: something could never run.

    Raises
    ------
    PowerCapError
        Naming the op or transfer, the power it draws alone and the cap.
    """
    worst, what = largest_solo_power_w(chip, run_plan, op_cost, double_buffer)
    if worst > cap_w * (1 + PowerBudget.EPS):
        raise PowerCapError(
            f"--max-power-w {cap_w:g} W is below the chip's power while {what} runs alone "
            f"({worst:.6g} W, idle units included); it could never run"
        )
