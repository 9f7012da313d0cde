"""Where the search meets the pieces below it, each named once: the mapping knobs
(:mod:`cost_models.mapping`), the simulator with a mapping (:func:`hwsim.pipeline.run_graph`),
the experience database (:mod:`hwsim.studies.optimize.db`), the features, the learned prior and
transfer (:mod:`~hwsim.studies.optimize.features`, :mod:`~hwsim.studies.optimize.prior`,
:mod:`~hwsim.studies.optimize.transfer`). The search calls only these functions, so a test can
stand in for any one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chips.schema import Chip
    from cost_models.mapping import OpMapping
    from cost_models.table import CostTable
    from graph_ir.ir import ModelGraph, Op
    from hwsim.pipeline import RunResult
    from hwsim.studies.optimize.db import ExperienceDB, Trial
    from hwsim.studies.optimize.prior import Prior

__all__ = [
    "chip_features", "db_errors", "fit_prior", "graph_features", "knob_choices", "legality", "make_mapping",
    "make_trial", "mapping_of", "named_mappings", "nearest_chip_names", "op_features", "open_db", "rank",
    "simulate", "transferred_mappings",
]  # fmt: skip


# -- mapping and simulation ---------------------------------------------------------------------


def make_mapping(signature: Mapping[str, object]) -> OpMapping:
    from cost_models.mapping import OpMapping

    return OpMapping.from_dict(signature)


def mapping_of(signatures: Mapping[str, Mapping[str, object]]) -> dict[str, OpMapping]:
    """The :class:`cost_models.mapping.OpMapping` of each op's signature."""
    return {op: make_mapping(s) for op, s in signatures.items()}


def knob_choices(op: Op, chip: Chip, table: CostTable) -> dict[str, tuple[object, ...]]:
    from cost_models.mapping import choices

    return choices(op, chip, table)


def legality(op: Op, chip: Chip, table: CostTable, mapping: OpMapping) -> str | None:
    from cost_models import mapping as m

    return m.legality(op, chip, table, mapping)


def simulate(graph: ModelGraph, chip: Chip, precision: str, mapping: Mapping[str, OpMapping]) -> RunResult:
    """Run ``graph`` on ``chip`` with ``mapping`` (empty: a plain ``hwsim run``)."""
    from hwsim.pipeline import run_graph

    if not mapping:
        return run_graph(graph, chip, precision)
    return run_graph(graph, chip, precision, mapping=mapping)  # type: ignore[call-arg,unused-ignore]


# -- the experience database --------------------------------------------------------------------


def db_errors() -> tuple[type[BaseException], ...]:
    from hwsim.studies.optimize.db import DbError

    return (DbError,)


def open_db(url: str | None) -> ExperienceDB:
    """The database at ``url``, or the default one (``HWSIM_DB``, else the user's cache)."""
    from hwsim.studies.optimize.db import ExperienceDB, default_db_url

    return ExperienceDB.open(url if url is not None else default_db_url())


def make_trial(**fields: Any) -> Trial:
    from hwsim.studies.optimize.db import Trial

    return Trial(**fields)


# -- features, prior, transfer ------------------------------------------------------------------


def chip_features(chip: Chip) -> dict[str, float]:
    from hwsim.studies.optimize.features import chip_features as f

    return f(chip)


def graph_features(graph: ModelGraph) -> dict[str, float]:
    from hwsim.studies.optimize.features import graph_features as f

    return f(graph)


def op_features(op: Op, table: CostTable | None) -> dict[str, float]:
    from hwsim.studies.optimize.features import op_features as f

    return f(op, table)


def fit_prior(trials: Sequence[Trial]) -> Prior:
    from hwsim.studies.optimize.prior import Prior

    return Prior.fit(trials)


def rank(
    prior: Prior, op_feats: Mapping[str, float], chip_feats: Mapping[str, float], candidates: Sequence[OpMapping]
) -> list[OpMapping]:
    return prior.rank(op_feats, chip_feats, candidates)


def transferred_mappings(
    db: ExperienceDB, chip: Chip, graph: ModelGraph, table: CostTable, model_sha256: str
) -> list[dict[str, OpMapping]]:
    """The best signatures of the nearest chips in ``db``, re-legalized for ``chip``, best first."""
    from hwsim.studies.optimize.transfer import transferred

    return transferred(db, chip, graph, table, model_sha256)


def nearest_chip_names(db: ExperienceDB, chip: Chip) -> list[str]:
    from hwsim.studies.optimize.transfer import nearest_chips

    return [name for _, name, _ in nearest_chips(db, chip)]


def named_mappings(
    db: ExperienceDB, names: Sequence[str], chip: Chip, graph: ModelGraph, table: CostTable, model_sha256: str
) -> list[dict[str, OpMapping]]:
    """The signatures of the best trials of this model on the chips named ``names`` in ``db``,
    re-legalized for ``chip`` (``--transfer-from NAME...``), best first.

    Raises
    ------
    ValueError
        (the database's :class:`~hwsim.studies.optimize.db.DbError`) a name no chip of ``db`` has.
    """
    from cost_models.mapping import legalize
    from hwsim.studies.optimize.db import DbError

    known = {name: fp for fp, name, _, _ in db.chips()}
    for n in names:
        if n not in known:
            raise DbError(f"--transfer-from {n}: no chip of that name in the database (chips: {', '.join(sorted(known)) or 'none'})")
    trials = [t for n in names for t in db.trials(chip_fingerprint=known[n], model_sha256=model_sha256)]
    out: dict[str, dict[str, OpMapping]] = {}
    for t in sorted(trials, key=lambda t: (not t.feasible, t.objective, t.candidate_key)):
        mapping = {op: legalize(graph.op(op), chip, table, make_mapping(s))
                   for op, s in t.signatures.items() if op in graph.order}  # fmt: skip
        mapping = {op: m for op, m in mapping.items() if not m.is_default()}
        if mapping:
            out.setdefault(repr(sorted((op, m.as_dict()) for op, m in mapping.items())), mapping)
    return list(out.values())
