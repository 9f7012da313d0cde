"""Candidate proposals of the two stages, deterministic for a given random generator.

Stage 1 (:func:`propose_graphs`) extends the graphs of the beam by one or two transforms of the
search file, applied where they apply; stage 2 (:func:`propose_signatures`) draws mapping
signatures for one op from the legal values of its knobs, a share ``exploit`` taken from the
transferred signatures and the learned prior's ranking, the rest at random.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cost_models.mapping import OpMapping, choices, legality
from hwsim.studies.optimize.evaluate import Candidate, apply_transforms
from hwsim.studies.optimize.features import op_features

if TYPE_CHECKING:
    import onnx

    from chips.schema import Chip
    from cost_models.table import CostTable
    from graph_ir.ir import Op
    from hwsim.studies.optimize.prior import Prior

__all__ = ["GraphProposal", "SignatureContext", "propose_graphs", "propose_signatures", "top_ops"]

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


def top_ops(op_time_ns: Mapping[str, float], k: int) -> list[str]:
    """The ``k`` ops with the most simulated time, most first (ties by name).

    >>> top_ops({"a": 1.0, "b": 3.0, "c": 3.0}, 2)
    ['b', 'c']
    """
    return [op for op, _ in sorted(op_time_ns.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


@dataclass(frozen=True, slots=True)
class SignatureContext:
    """What stage 2 needs to propose signatures on one graph."""

    chip: Chip
    table: CostTable
    knobs: tuple[str, ...]
    exploit: float
    prior: Prior | None
    chip_features: Mapping[str, float]


def _pool(rng: random.Random, op: Op, ctx: SignatureContext, current: Mapping[str, object]) -> list[OpMapping]:
    """The legal non-default signatures of ``op`` other than ``current`` (sampled to
    :data:`POOL_CAP` when there are more), in a fixed order."""
    legal = choices(op, ctx.chip, ctx.table)
    knobs = [k for k in ctx.knobs if k in legal]
    values = [tuple(dict.fromkeys((None, *legal[k]))) for k in knobs]
    combos = list(itertools.product(*values))
    if len(combos) > POOL_CAP:
        combos = rng.sample(combos, POOL_CAP)
    pool: list[OpMapping] = []
    for combo in combos:
        sig = {k: v for k, v in zip(knobs, combo, strict=True) if v is not None}
        if not sig or sig == dict(current):
            continue
        m = OpMapping.from_dict(sig)
        if legality(op, ctx.chip, ctx.table, m) is None:
            pool.append(m)
    return pool


def propose_signatures(
    rng: random.Random,
    op: Op,
    ctx: SignatureContext,
    incumbent: Candidate,
    count: int,
    transferred: Sequence[OpMapping] = (),
) -> tuple[list[Candidate], set[str]]:
    """Up to ``count`` candidates: ``incumbent`` with one new signature for ``op``.

    A share ``ctx.exploit`` comes first from ``transferred`` (legal ones, in order), then from
    the prior's ranking; the rest is drawn at random from the legal signatures left. Returns the
    candidates and the keys of those that came from transfer.
    """
    current = incumbent.signature_dict().get(op.name, {})
    pool = _pool(rng, op, ctx, current)
    if not pool or count < 1:
        return [], set()
    known = {tuple(sorted(m.as_dict().items())) for m in pool}
    wanted = min(count, len(pool))
    exploit_n = round(ctx.exploit * wanted)
    sources: list[OpMapping] = [m for m in transferred if tuple(sorted(m.as_dict().items())) in known]
    n_transfer = len(dict.fromkeys(tuple(sorted(m.as_dict().items())) for m in sources))
    if ctx.prior is not None and exploit_n > 0:
        sources += ctx.prior.rank(op_features(op, ctx.table), ctx.chip_features, pool)
    chosen: dict[tuple[tuple[str, object], ...], OpMapping] = {}
    for m in sources:
        if len(chosen) >= max(exploit_n, min(n_transfer, wanted)):
            break
        chosen.setdefault(tuple(sorted(m.as_dict().items())), m)
    from_transfer = set(list(chosen)[: min(n_transfer, len(chosen))])
    rest = [m for m in pool if tuple(sorted(m.as_dict().items())) not in chosen]
    for m in rng.sample(rest, min(wanted - len(chosen), len(rest))):
        chosen[tuple(sorted(m.as_dict().items()))] = m
    cands = [incumbent.with_op(op.name, dict(sig)) for sig in chosen]
    keys = {incumbent.with_op(op.name, dict(sig)).key for sig in from_transfer}
    return cands, keys
