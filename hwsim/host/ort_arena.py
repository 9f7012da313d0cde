"""Where onnxruntime's CPU arena puts each intermediate tensor, and how recently a kernel's
destination and inputs were last touched.

onnxruntime plans a sequential CPU run in two steps (``allocation_planner.cc``,
``mem_pattern_planner.h``):

1. **Reuse plan.** Walking the nodes in execution order, an output takes over the buffer of
   one of its node's inputs when the kernel may write in place (unary activations, a float
   Softmax) and that input has no other use left; a view (``Reshape``, ``Flatten``, ...) shares
   its input's buffer;
   otherwise it takes the most recently freed buffer of the same shape and element size; otherwise
   it gets a buffer of its own. A buffer is free once the last user of every tensor sharing it
   has run. Graph inputs, weights and graph outputs live outside the arena.
2. **Memory pattern.** The buffers of their own are laid out in one block, in the order they are
   allocated: each goes into the gap between live buffers (sorted by offset) that it fits with the
   least waste, else after the highest live one; sizes are rounded up to 64 bytes.

:func:`arena_plan` replays both over hwsim's graph (the kernels onnxruntime runs: nodes fused
into another kernel share its output) and :func:`destination_reuse` says, for a kernel, how many
bytes every op between the last touch of each part of its output region and the kernel itself
touched (a stack distance, counting each tensor once): a write into a region whose distance
fits the L2 finds its lines there; one beyond must fetch them for ownership first (about 3x
slower for a channel Concat, ``docs/fidelity_cpu.md``). A region not touched earlier in the run
was last touched in the previous run (onnxruntime reuses the arena block between runs).
:func:`source_reuse` says the same of a kernel's inputs when it starts, the kernel that last touched
them spreading its hits over its own traffic (a conv writes its output while it streams its
weights); :func:`cold_source_bytes` counts the bytes beyond the L2, ramped as :func:`cold_bytes` says.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

from graph_ir.ir import ModelGraph, Op, Tensor

__all__ = [
    "ARENA_ALIGN_BYTES",
    "FLOAT_INPLACE_OPS",
    "INPLACE_OPS",
    "VIEW_OPS",
    "ArenaPlan",
    "Kernel",
    "arena_plan",
    "code_reuse_bytes",
    "cold_bytes",
    "cold_destination_bytes",
    "cold_source_bytes",
    "destination_reuse",
    "in_place",
    "source_reuse",
]

#: onnxruntime's ``kAllocAlignment``: a buffer's size is rounded up to this.
ARENA_ALIGN_BYTES = 64
#: Ops whose output is a view of their first input (onnxruntime's ``Alias(0, 0)`` kernels).
VIEW_OPS = frozenset(("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"))
#: Ops whose kernel may write its output over its first input (``MayInplace(0, 0)``): activations,
#: and Softmax / LogSoftmax on floats (their double kernels may not: ``softmax.cc``).
INPLACE_OPS = frozenset(("Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Elu", "Selu", "Softplus",
                         "Softsign", "ThresholdedRelu", "Clip", "Softmax", "LogSoftmax"))  # fmt: skip
#: Those of :data:`INPLACE_OPS` that write in place on float32 tensors only.
FLOAT_INPLACE_OPS = frozenset(("Softmax", "LogSoftmax"))


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel of the run: the arena-or-not tensors it reads and writes."""

    name: str
    op_type: str
    reads: tuple[Tensor, ...]
    writes: tuple[Tensor, ...]


@dataclass(frozen=True, slots=True)
class ArenaPlan:
    """The kernels in execution order and each arena tensor's ``(offset, bytes)`` in the block.

    Tensors absent from ``offsets`` live outside the arena (graph inputs and outputs, weights).
    """

    kernels: tuple[Kernel, ...]
    offsets: dict[str, tuple[int, int]]
    peak_bytes: int


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ARENA_ALIGN_BYTES) * ARENA_ALIGN_BYTES


def _kernels(graph: ModelGraph, fused: Iterable[str], inserted: Iterable[Op] = ()) -> tuple[list[Kernel], dict[str, str]]:
    """The kernels in order, and the tensors that are another tensor's memory (views, fused
    nodes' outputs: the kernel they run in writes them) -> that tensor. An ``inserted`` kernel
    (a fusion onnxruntime makes of fused nodes) runs where the node that wrote its output was."""
    fused = set(fused)
    producer = graph.producer
    at = {producer[k.outputs[0].name]: k for k in inserted if k.outputs and k.outputs[0].name in producer}
    alias: dict[str, str] = {}
    kernels: list[Kernel] = []
    for node in graph.ops():
        op = at.get(node.name, node)  # a fusion's kernel reads what its members read from outside
        acts = op.activations
        if op is node and (op.name in fused or op.op_type in VIEW_OPS) and acts:
            src = alias.get(acts[0].name, acts[0].name)
            alias.update((t.name, src) for t in op.outputs[:1])
            continue
        reads = tuple(
            Tensor(alias.get(t.name, t.name), t.shape, t.dtype, t.is_weight) for t in op.inputs
        )
        kernels.append(Kernel(op.name, op.op_type, reads, op.outputs))
    return kernels, alias


def _may_inplace(k: Kernel, out: Tensor) -> bool:
    """Whether ``k``'s kernel may write ``out`` over its first input (:data:`INPLACE_OPS`)."""
    return k.op_type in INPLACE_OPS and (k.op_type not in FLOAT_INPLACE_OPS or out.dtype == "float32")


def in_place(plan: ArenaPlan, kernel: Kernel) -> bool:
    """Whether ``kernel`` writes its first output over its first input in ``plan`` (both in the
    arena, one buffer: a live input's buffer is never handed to another tensor)."""
    if not kernel.reads or not kernel.writes:
        return False
    src, dst = plan.offsets.get(kernel.reads[0].name), plan.offsets.get(kernel.writes[0].name)
    return src is not None and src == dst


def _reuse_plan(
    kernels: list[Kernel], external: set[str]
) -> tuple[dict[str, str], dict[int, list[str]]]:
    """onnxruntime's reuse plan: tensor -> the tensor whose buffer it uses, and kernel index ->
    the buffers free after it (once the last user of every tensor sharing one has run)."""
    uses: dict[str, int] = {}
    for k in kernels:
        for t in k.reads:
            uses[t.name] = uses.get(t.name, 0) + 1
    buffer: dict[str, str] = {}
    count: dict[str, int] = {}
    owners: dict[str, Tensor] = {}
    last: dict[str, int] = {}
    freelist: list[Tensor] = []  # most recently freed first
    for i, k in enumerate(kernels):
        for j, t in enumerate(k.writes):
            if t.name in external:
                continue
            src = k.reads[0] if k.reads else None
            if (j == 0 and src is not None and _may_inplace(k, t) and src.name in buffer
                    and count[buffer[src.name]] == 1 and src.nbytes == t.nbytes):  # fmt: skip
                owner = buffer[src.name]
            else:
                hit = next(
                    (f for f in freelist if f.shape == t.shape and f.nbytes == t.nbytes), None
                )
                owner = hit.name if hit is not None else t.name
                if hit is not None:
                    freelist.remove(hit)
                owners.setdefault(owner, t)
            buffer[t.name] = owner
            count[owner] = count.get(owner, 0) + max(uses.get(t.name, 0), 1)
        for t in (*k.reads, *(w for w in k.writes if not uses.get(w.name))):
            held = buffer.get(t.name)
            if held is None:
                continue
            count[held] -= 1
            if count[held] == 0:
                freelist.insert(0, owners[held])
                last[held] = i
    free_after: dict[int, list[str]] = {}
    for owner, i in last.items():
        free_after.setdefault(i, []).append(owner)
    return buffer, free_after


def _best_fit(live: list[tuple[int, int]], size: int) -> int:
    """onnxruntime's ``MemPatternPlanner::TraceAllocation``: the offset for ``size`` bytes among
    the live ``(offset, size)`` blocks, sorted by offset.

    >>> _best_fit([(0, 64), (192, 64), (512, 64)], 128)  # the 128-byte gap at 64 fits exactly
    64
    >>> _best_fit([(0, 64), (192, 64)], 256)  # no gap fits: after the highest block
    256
    """
    best = live[-1][0] + live[-1][1] if live else 0
    current, waste = 0, None
    for off, n in live:
        if (
            off >= current
            and off - current >= size
            and (waste is None or off - current - size < waste)
        ):
            best, waste = current, off - current - size
        current = off + n
    return best


def arena_plan(graph: ModelGraph, fused: Iterable[str] = (), inserted: Iterable[Op] = ()) -> ArenaPlan:
    """Replay onnxruntime's reuse plan and memory pattern over ``graph`` (see the module
    docstring); ``fused`` are the nodes that run inside another kernel, ``inserted`` the kernels
    onnxruntime makes of some of them (:mod:`hwsim.host.ort_fusions`), each where its output's
    node was."""
    kernels, alias = _kernels(graph, fused, inserted)
    external = {t.name for t in graph.outputs} | {alias.get(t.name, t.name) for t in graph.outputs}
    buffer, free_after = _reuse_plan(kernels, external)
    live: list[tuple[int, int]] = []
    where: dict[str, tuple[int, int]] = {}
    peak = 0
    for i, k in enumerate(kernels):
        for t in k.writes:
            if buffer.get(t.name) == t.name:
                size = _aligned(t.nbytes)
                off = _best_fit(live, size)
                bisect.insort(live, (off, size))
                where[t.name] = (off, size)
                peak = max(peak, off + size)
        for owner in free_after.get(i, ()):
            live.remove(where[owner])
    sizes = {t.name: t.nbytes for k in kernels for t in k.writes}
    offsets = {t: (where[b][0], sizes[t]) for t, b in buffer.items()}
    offsets.update((a, offsets[s]) for a, s in alias.items() if s in offsets)
    return ArenaPlan(tuple(kernels), offsets, peak)


def _cover(intervals: list[tuple[int, int]], a: int, b: int) -> tuple[list[tuple[int, int]], int]:
    """``intervals`` (disjoint, sorted) with ``[a, b)`` added, and how many new bytes that covered."""
    merged: list[tuple[int, int]] = []
    added = b - a
    for x, y in intervals:
        if y < a or x > b:
            merged.append((x, y))
        else:
            added -= max(0, min(y, b) - max(x, a))
            a, b = min(a, x), max(b, y)
    bisect.insort(merged, (a, b))
    return merged, added


def _split(open_: list[tuple[int, int]], a: int, b: int) -> tuple[list[tuple[int, int]], int]:
    """``open_`` less ``[a, b)``, and how many of its bytes that took."""
    rest: list[tuple[int, int]] = []
    hit = 0
    for x, y in open_:
        if b <= x or a >= y:
            rest.append((x, y))
            continue
        hit += min(y, b) - max(x, a)
        rest += [(x, a)] if a > x else []
        rest += [(b, y)] if b < y else []
    return rest, hit


def destination_reuse(
    plan: ArenaPlan,
    kernel: str,
    output: int = 0,
    run_bytes: float = 0.0,
    horizon_bytes: float = math.inf,
) -> list[tuple[int, float]]:
    """How long ago each part of ``kernel``'s output region was last touched.

    Returns ``(bytes, distance_bytes)`` pieces covering the region: the distinct bytes (arena
    bytes by address, other tensors by name) that the kernels since its last touch touched,
    plus ``run_bytes`` when that touch was in the previous run. An output outside the arena is
    one piece at infinite distance; so is a part no kernel touches, and a part not found before
    the distance passes ``horizon_bytes``.
    """
    index = _index(plan, kernel)
    return _region_reuse(plan, index, plan.kernels[index].writes[output], run_bytes, horizon_bytes)


def source_reuse(
    plan: ArenaPlan,
    kernel: str,
    source: int = 0,
    run_bytes: float = 0.0,
    horizon_bytes: float = math.inf,
) -> list[tuple[int, float]]:
    """How long ago each part of ``kernel``'s input ``source`` was last touched when the kernel
    starts: :func:`destination_reuse`'s pieces for an input, except that the kernel that last
    touched a part spreads it over its own traffic (:func:`_spread`): a conv writes its output
    while it streams its weights, so the first lines it wrote are as far from its end as the
    weights read after them. A graph input (outside the arena) is one piece at infinite distance.
    """
    index = _index(plan, kernel)
    tensor = plan.kernels[index].reads[source]
    return _region_reuse(plan, index, tensor, run_bytes, horizon_bytes, spread=True)


def code_reuse_bytes(plan: ArenaPlan, kernel: str, run_bytes: float = 0.0) -> float:
    """The bytes the run streams between the previous kernel of ``kernel``'s op type and
    ``kernel`` (the run wrapping around, plus ``run_bytes`` between runs): each tensor once,
    weights included; for the only kernel of its type, the whole run's. What pushes its code out of
    the caches (``cost_models.cpu.code_refetch_ns``).

    >>> from graph_ir.ir import Tensor
    >>> t = lambda n, b, w=False: Tensor(n, (b // 4,), "float32", is_weight=w)
    >>> ks = (Kernel("g1", "GlobalAveragePool", (t("a", 400),), (t("b", 4),)),
    ...       Kernel("c", "Conv", (t("b", 4), t("w", 4000, True)), (t("d", 400),)),
    ...       Kernel("g2", "GlobalAveragePool", (t("d", 400),), (t("e", 4),)))
    >>> plan = ArenaPlan(ks, {}, 0)
    >>> code_reuse_bytes(plan, "g2"), code_reuse_bytes(plan, "g1", run_bytes=100.0)
    (4404.0, 100.0)
    """
    index = _index(plan, kernel)
    op_type, n = plan.kernels[index].op_type, len(plan.kernels)
    seen: dict[str, int] = {}
    wrapped = 0.0
    for j in range(index - 1, index - n, -1):
        k = plan.kernels[j % n]
        wrapped = run_bytes if j < 0 else wrapped
        if k.op_type == op_type:
            break
        seen.update((t.name, t.nbytes) for t in (*k.reads, *k.writes))
    else:
        wrapped = run_bytes
    return float(sum(seen.values())) + wrapped


def _index(plan: ArenaPlan, kernel: str) -> int:
    return next(i for i, k in enumerate(plan.kernels) if k.name == kernel)


def _spread(hit: int, distance: float, traffic: float) -> list[tuple[int, float]]:
    """``hit`` bytes a kernel touched while it moved ``traffic`` other bytes, ``distance`` bytes
    before now: four equal parts at the distances of their midpoints in that stream.

    >>> _spread(400, 100.0, 800.0)
    [(100, 800.0), (100, 600.0), (100, 400.0), (100, 200.0)]
    """
    if traffic <= 0 or hit < 4:
        return [(hit, distance)]
    parts = [hit // 4 + (1 if i < hit % 4 else 0) for i in range(4)]
    return [(n, distance + traffic * (7 - 2 * i) / 8) for i, n in enumerate(parts)]


def _region_reuse(
    plan: ArenaPlan,
    index: int,
    tensor: Tensor,
    run_bytes: float,
    horizon_bytes: float,
    spread: bool = False,
) -> list[tuple[int, float]]:
    """The reuse pieces of ``tensor``'s region seen from kernel ``index`` (:func:`destination_reuse`),
    the last toucher's hits spread over its own traffic with ``spread`` (:func:`source_reuse`)."""
    region = plan.offsets.get(tensor.name)
    if region is None:
        return [(tensor.nbytes, math.inf)]
    open_ = [(region[0], region[0] + tensor.nbytes)]
    pieces: list[tuple[int, float]] = []
    seen: set[str] = set()
    arena: list[tuple[int, int]] = []
    distance = 0.0
    n = len(plan.kernels)
    for j in range(index - 1, index - n - 1, -1):
        k = plan.kernels[j % n]
        distance += run_bytes if j == -1 else 0.0
        if not open_ or distance > horizon_bytes:
            break
        tensors = (*k.reads, *k.writes)
        touched = [
            (plan.offsets[t.name][0], plan.offsets[t.name][0] + t.nbytes)
            for t in tensors
            if t.name in plan.offsets
        ]
        traffic = _traffic(tensors, tensor.name) if spread else 0.0
        for a, b in touched:
            open_, hit = _split(open_, a, b)
            pieces += _spread(hit, distance, traffic) if hit else []
        for a, b in touched:
            arena, added = _cover(arena, a, b)
            distance += added
        for t in tensors:
            if t.name not in plan.offsets and t.name not in seen:
                seen.add(t.name)
                distance += t.nbytes
    return pieces + [(y - x, math.inf) for x, y in open_ if y > x]


def _traffic(tensors: tuple[Tensor, ...], region: str) -> float:
    """Distinct bytes a kernel touching ``tensors`` moves beside the tensor ``region``."""
    return float(sum({t.name: t.nbytes for t in tensors if t.name != region}.values()))


def cold_destination_bytes(
    plan: ArenaPlan, kernel: str, cache_bytes: float, run_bytes: float = 0.0, ramp: bool = False
) -> int:
    """Bytes of ``kernel``'s first output whose region was last touched more than
    ``cache_bytes`` ago (:func:`destination_reuse`): the lines a write into it must fetch first.
    With ``ramp``, as :func:`cold_bytes` ramps them."""
    horizon = cache_bytes * (2 if ramp else 1)
    return cold_bytes(destination_reuse(plan, kernel, 0, run_bytes, horizon_bytes=horizon), cache_bytes, ramp)


def cold_source_bytes(plan: ArenaPlan, kernel: str, cache_bytes: float, run_bytes: float = 0.0) -> int:
    """Bytes of ``kernel``'s inputs (weights aside, each tensor once) no longer in a cache of
    ``cache_bytes`` when it starts (:func:`source_reuse`, ramped as :func:`cold_bytes` says): the
    reads that come from beyond it. A graph input counts as cold."""
    index = _index(plan, kernel)
    reads = plan.kernels[index].reads
    firsts = {t.name: i for i, t in reversed(list(enumerate(reads))) if not t.is_weight}
    return sum(cold_bytes(source_reuse(plan, kernel, i, run_bytes, horizon_bytes=2 * cache_bytes), cache_bytes, True)
               for i in sorted(firsts.values()))  # fmt: skip


def cold_bytes(pieces: Iterable[tuple[int, float]], cache_bytes: float, ramp: bool = False) -> int:
    """The bytes of reuse ``pieces`` (``(bytes, distance_bytes)``) a cache of ``cache_bytes`` no
    longer holds: those beyond it; with ``ramp`` a piece at distance ``d`` counts with the share
    ``(d - C) / C`` between ``C`` and ``2 C``. The L2 is no exact LRU: the fingerprint's sweep read
    161 GB/s at 1 MiB, 138 at 1.5, 99 at 2 and 47 at 3 MiB (L3: 37.5), and its cyclic stream
    kept 1853 KiB of the 2048.

    >>> cold_bytes([(100, 0.0), (100, 1500.0), (100, 3000.0)], 1000.0), cold_bytes([(100, 1500.0)], 1000.0, ramp=True)
    (200, 50)
    """
    if not ramp:
        return sum(n for n, d in pieces if d > cache_bytes)
    if cache_bytes <= 0:
        return sum(n for n, d in pieces if d > 0)
    return round(sum(n * min(1.0, max(0.0, (d - cache_bytes) / cache_bytes)) for n, d in pieces))
