"""What a caller sets for the engine (:class:`EngineOptions`, :data:`FRAME_ORDERS`) and the error it raises."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FRAME_ORDERS", "EngineOptions", "SimulationError"]

#: How a core orders the ops of several frames (:class:`EngineOptions`), the default first.
FRAME_ORDERS = ("interleaved", "frame-major")


class SimulationError(RuntimeError):
    """The simulation could not finish (a schedule whose order deadlocks: an internal failure)."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """What the engine models beyond the schedule.

    ``double_buffer``: tiled ops overlap tile loads with compute (else load, compute, store
    per tile in turn). ``split``: ops the unit can split run over its idle cores when their
    placement does not fix the number of cores (``Placement.cores is None``). ``frame_order``
    (one of :data:`FRAME_ORDERS`): how a core mixes the ops of several frames
    (:mod:`hwsim.sim.frames`). ``max_power_w``: a cap on the chip's instantaneous power; work
    waits until its power fits (:mod:`hwsim.sim.power`; None: no cap).
    """

    double_buffer: bool = True
    split: bool = True
    frame_order: str = "interleaved"
    max_power_w: float | None = None
