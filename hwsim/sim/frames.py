"""Several frames through one schedule: which frames are admitted, and which op a free core runs.

``frames = N`` streams ``N`` copies of the graph through the same schedule; an op instance of
frame ``f`` is ``f * n_ops + op`` (``op`` its place in the graph's order). Every core runs each
frame's ops in the schedule's order for it; how it mixes frames is a :class:`Dispatch`:

- :class:`Interleaved` (``"interleaved"``, the default): each time a core is free it runs,
  among the frames admitted and not yet done on it, the next op of the *oldest* frame whose
  next op is ready; so frame ``i + 1``'s op runs before frame ``i``'s later ops while those
  wait for inputs from other cores (a chain alternating between cores pipelines);
- :class:`FrameMajor` (``"frame-major"``, and any one-frame run): the core runs all of frame
  ``i``'s ops before any of frame ``i + 1``'s, waiting when the next one is not ready.

:class:`Admission` says when each frame's inputs arrive: all at time 0, or, with
``in_flight = K``, frame ``i`` when frame ``i - K`` completes (all its ops and transfers).
An interleaved core never runs an op of a frame not yet admitted.

A workload (:mod:`hwsim.workload`) runs one frame of a merged graph whose ops form groups (one
per model instance), each :class:`Release` with its own release time; :class:`Prioritized`
serves them: a free core runs the next op (in its group's order on the core) of the first
released group, in the order the groups are given, whose next op is ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from hwsim.sim.options import FRAME_ORDERS

__all__ = [
    "Admission",
    "Core",
    "Dispatch",
    "FrameMajor",
    "Interleaved",
    "Prioritized",
    "Release",
    "dispatch_for",
]

#: A core: its unit's name and its number in the unit.
Core = tuple[str, int]


class Admission:
    """When each frame's inputs arrive, ``in_flight`` frames at most in the system.

    ``items`` is how many ops and transfers a frame has to finish before it completes.

    >>> adm = Admission(frames=3, in_flight=1, items=2)
    >>> list(adm.initial())
    [0]
    >>> adm.admit(0, 0); adm.finished(0), adm.finished(0)  # frame 0 completes: admit frame 1
    (None, 1)
    """

    __slots__ = ("_left", "admitted_ps", "frames", "in_flight", "items", "last")

    def __init__(self, frames: int, in_flight: int | None, items: int) -> None:
        self.frames = frames
        self.in_flight = in_flight
        self.items = items
        #: Admission time of each frame (-1: not yet).
        self.admitted_ps = [-1] * frames
        #: The newest frame admitted (-1: none yet).
        self.last = -1
        self._left = [items] * frames

    def initial(self) -> range:
        """The frames admitted at time 0 (all of them without ``in_flight`` or with nothing to run)."""
        if self.in_flight is None or self.items == 0:
            return range(self.frames)
        return range(min(self.in_flight, self.frames))

    def admit(self, frame: int, now_ps: int) -> None:
        """Note that ``frame``'s inputs arrive at ``now_ps``."""
        self.admitted_ps[frame] = now_ps
        self.last = max(self.last, frame)

    def finished(self, frame: int) -> int | None:
        """One op or transfer of ``frame`` finished: the frame to admit now, if any."""
        self._left[frame] -= 1
        if self._left[frame] == 0 and self.in_flight is not None:
            nxt = frame + self.in_flight
            if nxt < self.frames:
                return nxt
        return None

    def admissions(self) -> tuple[int, ...]:
        """Admission times for the trace (empty when every frame is there at time 0)."""
        return tuple(self.admitted_ps) if self.in_flight is not None else ()


class Dispatch(Protocol):
    """Which op instance a free core runs next."""

    def ready(self, core: Core) -> int:
        """The core's next op instance if its inputs are there, else -1."""
        ...

    def took(self, core: Core, inst: int) -> None:
        """The core started ``inst`` (the one :meth:`ready` gave)."""
        ...


class FrameMajor:
    """Each core runs frame ``i``'s ops (in its order) before any of frame ``i + 1``'s.

    ``order`` is each core's op indices; ``pending[inst]`` counts the inputs the instance still
    waits for (the engine updates it; this only reads it).

    >>> d = FrameMajor({("cpu", 0): [0, 1]}, n_ops=2, frames=2, pending=[0, 1, 0, 0])
    >>> d.ready(("cpu", 0))
    0
    >>> d.took(("cpu", 0), 0); d.ready(("cpu", 0))  # op 1 of frame 0 waits: the core waits
    -1
    """

    __slots__ = ("_head", "_order", "frames", "n_ops", "pending")

    def __init__(
        self, order: Mapping[Core, Sequence[int]], n_ops: int, frames: int, pending: Sequence[int]
    ) -> None:
        self._order = order
        self.n_ops = n_ops
        self.frames = frames
        self.pending = pending
        self._head = {k: 0 for k in order}

    def ready(self, core: Core) -> int:
        q = self._order[core]
        h = self._head[core]
        if not q or h >= len(q) * self.frames:
            return -1
        inst = (h // len(q)) * self.n_ops + q[h % len(q)]
        return inst if self.pending[inst] == 0 else -1

    def took(self, core: Core, inst: int) -> None:
        self._head[core] += 1


class Interleaved:
    """Each core runs the next op of the oldest admitted frame whose next op is ready.

    >>> adm = Admission(frames=2, in_flight=None, items=2)
    >>> adm.admit(0, 0); adm.admit(1, 0)
    >>> d = Interleaved({("cpu", 0): [0, 1]}, 2, 2, pending=[0, 1, 0, 0], admission=adm)
    >>> d.took(("cpu", 0), 0); d.ready(("cpu", 0))  # frame 0's op 1 waits: frame 1's op 0 runs
    2
    """

    __slots__ = ("_oldest", "_order", "_pos", "admission", "frames", "n_ops", "pending")

    def __init__(
        self, order: Mapping[Core, Sequence[int]], n_ops: int, frames: int,
        pending: Sequence[int], admission: Admission,
    ) -> None:  # fmt: skip
        self._order = order
        self.n_ops = n_ops
        self.frames = frames
        self.pending = pending
        self.admission = admission
        # per core: the position of each frame's next op in the core's order, and the oldest
        # frame not yet done on the core (frames below it are never looked at again)
        self._pos = {k: [0] * frames for k in order}
        self._oldest = {k: 0 for k in order}

    def ready(self, core: Core) -> int:
        q = self._order[core]
        n = len(q)
        pos = self._pos[core]
        f = self._oldest[core]
        frames = self.frames
        while f < frames and pos[f] >= n:
            f += 1
        self._oldest[core] = f
        admitted = self.admission.admitted_ps
        pending = self.pending
        n_ops = self.n_ops
        for g in range(f, self.admission.last + 1):
            p = pos[g]
            if p < n and admitted[g] >= 0:
                inst = g * n_ops + q[p]
                if pending[inst] == 0:
                    return inst
        return -1

    def took(self, core: Core, inst: int) -> None:
        self._pos[core][inst // self.n_ops] += 1


@dataclass(frozen=True, slots=True)
class Release:
    """A group of ops (one model instance of a workload) whose graph inputs arrive at ``release_ps``.

    ``ops`` are op names of the merged graph, ``inputs`` its graph-input tensor names that
    belong to the group; ops of no group are never run.
    """

    ops: tuple[str, ...]
    inputs: tuple[str, ...]
    release_ps: int


class Prioritized:
    """Each core runs the next op of the first released group (in service order) whose next op is ready.

    ``group_of[op]`` is each op's group (its index in service order); ``released[g]`` says
    whether group ``g``'s inputs have arrived (the engine sets it; this only reads it).

    >>> released = [True, True]
    >>> d = Prioritized({("npu", 0): [0, 1, 2]}, group_of=[1, 0, 0], pending=[0, 0, 1], released=released)
    >>> d.ready(("npu", 0))  # group 0 first
    1
    >>> d.took(("npu", 0), 1); d.ready(("npu", 0))  # group 0's op 2 waits: group 1's op 0 runs
    0
    """

    __slots__ = ("_active", "group_of", "pending", "released")

    def __init__(
        self, order: Mapping[Core, Sequence[int]], group_of: Sequence[int],
        pending: Sequence[int], released: Sequence[bool],
    ) -> None:  # fmt: skip
        self.group_of = group_of
        self.pending = pending
        self.released = released
        # per core: [group, its ops on the core in order, position of the next], by group
        self._active: dict[Core, list[tuple[int, list[int], list[int]]]] = {}
        for core, ops in order.items():
            queues: dict[int, list[int]] = {}
            for i in ops:
                queues.setdefault(group_of[i], []).append(i)
            self._active[core] = [(g, queues[g], [0]) for g in sorted(queues)]

    def ready(self, core: Core) -> int:
        released, pending = self.released, self.pending
        for g, queue, pos in self._active[core]:
            if released[g]:
                i = queue[pos[0]]
                if pending[i] == 0:
                    return i
        return -1

    def took(self, core: Core, inst: int) -> None:
        active = self._active[core]
        g = self.group_of[inst]
        for k, (h, queue, pos) in enumerate(active):
            if h == g:
                pos[0] += 1
                if pos[0] >= len(queue):
                    del active[k]
                return


def dispatch_for(
    frame_order: str, order: Mapping[Core, Sequence[int]], n_ops: int, frames: int,
    pending: Sequence[int], admission: Admission,
) -> Dispatch:  # fmt: skip
    """The dispatch ``frame_order`` names (one of :data:`FRAME_ORDERS`); one frame is frame-major."""
    if frame_order not in FRAME_ORDERS:
        raise ValueError(
            f"frame_order must be one of {', '.join(FRAME_ORDERS)}, got {frame_order!r}"
        )
    if frames > 1 and frame_order == "interleaved":
        return Interleaved(order, n_ops, frames, pending, admission)
    return FrameMajor(order, n_ops, frames, pending)
