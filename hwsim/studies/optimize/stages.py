"""Candidate proposals of the two stages, deterministic for a given random generator.

Stage 1 (:func:`propose_graphs`) extends the graphs of the beam by one or two transforms of the
search file, applied where they apply; stage 2 (:func:`signature_queue`) orders mapping
signatures for one op from the legal values of its knobs, a share ``exploit`` taken from the
transferred signatures and the screen (:func:`screened`: the op's own cost with those knobs,
the learned prior averaged in), the rest at random.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cost_models.base import applicable_knobs, model_for
from cost_models.mapping import OpMapping, choices, legality
from hwsim.sim.blocks import shared_time_ns, stream_uses
from hwsim.sim.plan import memory_capacity, memory_of, splits
from hwsim.sim.splitting import shard_cost
from hwsim.studies.optimize.evaluate import Candidate, apply_transforms
from hwsim.studies.optimize.features import op_features

if TYPE_CHECKING:
    import onnx

    from chips.schema import Chip, Unit
    from cost_models.base import OpCost
    from cost_models.table import CostTable
    from graph_ir.ir import ModelGraph, Op
    from hwsim.studies.optimize.prior import Prior

__all__ = ["GraphProposal", "SignatureContext", "core_masks", "fusable_ops", "predicted_ns", "propose_graphs", "screened", "signature_pool", "signature_queue", "split_latency_ns", "top_ops"]

#: Legal signatures considered per op at most (sampled when the knobs allow more).
POOL_CAP = 256

#: Tries per wanted graph candidate before a round is left short (sequences that apply nowhere
#: or repeat a known graph are tried again).
TRIES_PER_GRAPH = 8


@dataclass(frozen=True, slots=True)
class GraphProposal:
    """A stage 1 candidate and the rewritten model's serialized bytes."""

    candidate: Candidate
    model_bytes: bytes


def propose_graphs(
    rng: random.Random,
    parents: Sequence[tuple[str, ...]],
    transforms: Sequence[str],
    count: int,
    seen: set[tuple[str, ...]],
    model: onnx.ModelProto,
    chip: Chip,
    cache: dict[tuple[str, ...], onnx.ModelProto],
) -> list[GraphProposal]:
    """Up to ``count`` new graphs: a parent's passes plus one or two more, where they apply.

    ``seen`` holds the applied sequences already proposed (it is updated), ``cache`` the
    rewritten models by applied sequence (:func:`~hwsim.studies.optimize.evaluate.apply_transforms`).
    """
    out: list[GraphProposal] = []
    for i in range(count * TRIES_PER_GRAPH):
        if len(out) >= count or not parents or not transforms:
            break
        parent = parents[i % len(parents)]
        free = [t for t in transforms if t not in parent]
        if not free:
            continue
        extra = rng.sample(free, rng.randint(1, min(2, len(free))))
        applied, rewritten = apply_transforms(model, chip, (*parent, *extra), cache)
        if applied in seen:
            continue
        seen.add(applied)
        out.append(GraphProposal(Candidate.of(applied, {}), rewritten.SerializeToString()))
    return out


def top_ops(op_time_ns: Mapping[str, float], k: int, critical: Sequence[str] = ()) -> list[str]:
    """The ``k`` ops to map first: those on the critical path by simulated time, most first,
    then the others by time (ties by name).

    >>> top_ops({"a": 1.0, "b": 3.0, "c": 3.0}, 2)
    ['b', 'c']
    >>> top_ops({"a": 1.0, "b": 3.0, "c": 3.0}, 2, critical=["a"])
    ['a', 'b']
    """
    on_path = set(critical)
    return [op for op, _ in sorted(op_time_ns.items(), key=lambda kv: (kv[0] not in on_path, -kv[1], kv[0]))[:k]]


@dataclass(frozen=True, slots=True)
class SignatureContext:
    """What stage 2 needs to propose signatures on one graph."""

    chip: Chip
    table: CostTable
    knobs: tuple[str, ...]
    exploit: float
    prior: Prior | None
    chip_features: Mapping[str, float]
    #: Ops that can end up in a fusion group (:func:`fusable_ops`); the ``fusion`` knob is offered
    #: on these only. None: on every op whose type a unit fuses.
    fusable: frozenset[str] | None = None


def fusable_ops(graph: ModelGraph, chip: Chip, table: CostTable) -> frozenset[str]:
    """The ops of ``graph`` that are in a fusion group of more than one op on some unit of
    ``chip`` when every op that unit may run is placed there (:func:`cost_models.fusion.fuse`,
    mode ``on``): the only ops on which the ``fusion`` knob can change anything. A conv whose
    output feeds two convs, say, heads no group on any unit (its output must reach DRAM).
    """
    from cost_models.fusion import fuse

    out: set[str] = set()
    for unit in chip.units:
        placement = {op: unit.name for op in graph.order if unit.name in table.eligible(op)}
        for pair in fuse(graph, chip, table, placement, mode="on").pairs:
            out.update((pair.producer, pair.consumer))
    return frozenset(out)


def split_latency_ns(shard: OpCost, unit: Unit, chip: Chip, cores: int) -> float:
    """Latency in ns of an op run as ``cores`` identical shards of cost ``shard`` at once on
    ``unit``, its shards sharing the bandwidth of the memories they stream through, as the
    engine chooses a split (:func:`hwsim.sim.blocks.shared_time_ns`).

    A weight-bound layer split three ways reads its weights three times through one DRAM: its
    shards' own latency hides that, this does not.
    """
    uses = stream_uses(shard, memory_of(chip, unit.domain))
    return shared_time_ns(shard, cores, uses, memory_capacity(chip))


def core_masks(graph: ModelGraph, chip: Chip, table: CostTable, placement: Mapping[str, str],
               signatures: Mapping[str, Mapping[str, object]]) -> list[dict[str, dict[str, object]]]:  # fmt: skip
    """The whole-unit core counts to try: for each unit that splits ops over several cores, and
    each count ``k`` it would not take by itself (below its cores; its cores too where it chooses
    per layer, ``split_cores: fastest``), ``signatures`` with every op ``placement`` puts on it
    that splits there run on ``k`` cores (pinned to the unit where ``k > 1``; other knobs kept;
    ops that cannot split so left as they are). What a deployment chooses once for a model,
    RKNN's core mask: a per-op round cannot reach it where moving one layer alone ends a job on
    each side of it."""
    out: list[dict[str, dict[str, object]]] = []
    for unit in chip.units:
        ops = [op for op, u in placement.items() if u == unit.name and splits(graph.op(op).op_type, unit)]
        counts = range(1, unit.cores + (unit.split_cores == "fastest"))
        for k in counts if ops else ():
            sigs = {op: dict(v) for op, v in signatures.items()}
            for op in ops:
                pin = {"unit": unit.name} if k > 1 else {}  # a split needs the unit pinned (legality)
                m = OpMapping.from_dict({**sigs.get(op, {}), "cores": k, **pin})
                if legality(graph.op(op), chip, table, m) is None:
                    sigs[op] = m.as_dict()
            if sigs != signatures:
                out.append(sigs)
    return out


def predicted_ns(op: Op, chip: Chip, table: CostTable, mapping: OpMapping) -> float:
    """The screen: ``op``'s own latency under ``mapping`` as its cost model predicts it alone, in
    ns: the fastest unit it may run on (its pin), with the kernel knobs that unit offers, split
    over ``cores`` shards (:func:`hwsim.sim.splitting.shard_cost`, the shards sharing their
    memory's bandwidth: :func:`split_latency_ns`) where set; fusion is not predicted (neutral).
    inf where no unit runs it so.
    """
    p = table.precision_of(op.name)
    best = math.inf
    for unit in chip.units:
        if unit.name not in table.eligible(op.name) or mapping.unit not in (None, unit.name):
            continue
        if mapping.cores is not None and mapping.cores > 1:
            shard = shard_cost(op, unit, chip, p, mapping.cores, mapping.kernel())
            if shard is not None:
                best = min(best, split_latency_ns(shard, unit, chip, mapping.cores))
            continue
        model = model_for(unit.kind)
        cost = model.estimate(op, unit, chip, p, applicable_knobs(model, op, unit, chip, p, mapping.kernel()))
        if cost is not None:
            best = min(best, cost.latency_ns)
    return best


def signature_pool(rng: random.Random, op: Op, ctx: SignatureContext, current: Mapping[str, object]) -> list[OpMapping]:
    """The legal signatures of ``op`` other than ``current`` (sampled to :data:`POOL_CAP` when
    there are more), in a fixed order. The default is among them only when ``current`` is not
    the default (stage 2 may then revert an op, such as a transferred signature that does not
    pay on this chip)."""
    legal = choices(op, ctx.chip, ctx.table)
    knobs = [k for k in ctx.knobs if k in legal and (k != "fusion" or ctx.fusable is None or op.name in ctx.fusable)]
    values = [tuple(dict.fromkeys((None, *legal[k]))) for k in knobs]
    combos = list(itertools.product(*values))
    if len(combos) > POOL_CAP:
        combos = rng.sample(combos, POOL_CAP)
    pool: list[OpMapping] = []
    for combo in combos:
        sig = {k: v for k, v in zip(knobs, combo, strict=True) if v is not None}
        if sig == dict(current) or (not sig and not current):
            continue
        m = OpMapping.from_dict(sig)
        if legality(op, ctx.chip, ctx.table, m) is None:
            pool.append(m)
    return pool


def screened(op: Op, ctx: SignatureContext, pool: Sequence[OpMapping], current: OpMapping, parent_ns: float) -> list[OpMapping]:
    """The signatures of ``pool`` predicted no slower than ``current``, most promising first.

    A signature's predicted gain is the whole run's, ``parent / (parent - saved)``, with the op's
    time saved by the screen (:func:`predicted_ns`); where the learned prior has samples, its
    predicted gain is averaged in (in log). Ties: fewer knobs first, then the pool's order.
    """
    now = predicted_ns(op, ctx.chip, ctx.table, current)
    saved = [now - predicted_ns(op, ctx.chip, ctx.table, m) for m in pool]
    log_gain = [_log_gain(parent_ns, x) for x in saved]
    if ctx.prior is not None and ctx.prior.samples > 0:
        prior = ctx.prior.log_gains(op_features(op, ctx.table), ctx.chip_features, pool)
        log_gain = [(g + float(q)) / 2 for g, q in zip(log_gain, prior, strict=True)]
    keep = [i for i, x in enumerate(saved) if x >= 0]
    keep.sort(key=lambda i: (-log_gain[i], len(pool[i].as_dict()), i))
    return [pool[i] for i in keep]


def _log_gain(parent_ns: float, saved_ns: float) -> float:
    """``log(parent / (parent - saved))``, the whole run's predicted gain from saving
    ``saved_ns`` of it (at most a 1000x gain); a run that takes no time (every op free, such as
    an Identity-only model) has nothing to gain: 0.

    >>> round(_log_gain(100.0, 50.0), 3), _log_gain(0.0, 0.0), _log_gain(100.0, -math.inf)
    (0.693, 0.0, -inf)
    """
    if saved_ns == -math.inf:
        return -math.inf
    if parent_ns <= 0:
        return 0.0
    return math.log(parent_ns / max(parent_ns - saved_ns, 1e-3 * parent_ns))


def _key(m: OpMapping) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(m.as_dict().items()))


def signature_queue(
    rng: random.Random,
    op: Op,
    ctx: SignatureContext,
    current: Mapping[str, object],
    count: int,
    parent_ns: float,
    transferred: Sequence[OpMapping] = (),
) -> tuple[list[OpMapping], set[tuple[tuple[str, object], ...]]]:
    """Up to ``count`` new signatures for ``op``, in the order to try them.

    Exploit and explore alternate in the share ``ctx.exploit`` (the first is exploited when the
    share is above 0): exploited ones come from ``transferred`` (legal ones, in order), then
    from the screen (:func:`screened`, the prior averaged in); explored ones are drawn at random
    from the legal signatures left. Returns the queue and the keys of the transferred ones.
    """
    pool = signature_pool(rng, op, ctx, current)
    if not pool or count < 1:
        return [], set()
    known = {_key(m) for m in pool}
    hints = list(dict.fromkeys(_key(m) for m in transferred if _key(m) in known))
    by_key = {_key(m): m for m in pool}
    cur = OpMapping.from_dict(current)
    exploit = deque([*hints, *(k for k in map(_key, screened(op, ctx, pool, cur, parent_ns)) if k not in hints)])
    rest = deque(k for k in by_key if k not in set(exploit))
    rng.shuffle(rest)
    queue = []
    for i in range(min(count, len(pool))):
        explore = math.ceil((i + 1) * ctx.exploit) == math.ceil(i * ctx.exploit)
        first, second = (rest, exploit) if explore else (exploit, rest)
        queue.append((first or second).popleft())
    return [by_key[k] for k in queue], {k for k in queue if k in hints}
