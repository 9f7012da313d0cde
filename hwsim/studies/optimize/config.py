"""The search file of ``hwsim optimize``: stages, objective, constraints, exploit share.

Keys and defaults are those of the issue's example::

    stage_graph:  {rounds: 3, candidates_per_round: 8, transforms: [fold_bn, concat_fold, channel_align, group_split, fuse_qkv], budget: 0.3}
    stage_kernel: {target_ops: top_k_latency, k: 20, trials_per_op: 24, signature: [unit, cores, dataflow, layout, tile, fusion], measure_repeats: 20, budget: 0.7}
    objective: latency_ms          # or energy_mj, or a weighted sum {latency_ms: 1, energy_mj: 0.5}
    constraints: {peak_dram_mib: "<= 512"}   # as in sweep files
    exploit: 0.5

An unknown key, a transform that is not a registered rewrite pass, an unknown objective or knob:
:class:`SearchConfigError`, one line naming the file and the key.

>>> cfg = SearchConfig()
>>> cfg.stage_graph.rounds, cfg.stage_kernel.k, cfg.objective_weights()
(3, 20, (('latency_ms', 1.0),))
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph_ir.files import field_path, read_yaml_mapping
from hwsim.studies.sweep import OBJECTIVES, Constraint, SweepError, parse_constraint

__all__ = ["GraphStage", "KernelStage", "SearchConfig", "SearchConfigError", "load_config"]

#: The mapping knobs a signature may name (:data:`cost_models.mapping.KNOBS`, spelled here so
#: that the config is checked without importing the cost models).
SIGNATURE_KNOBS = ("unit", "cores", "dataflow", "layout", "tile", "fusion")


class SearchConfigError(ValueError):
    """Bad search file: one line naming the file and the key (exit 2, nothing written)."""


class GraphStage(BaseModel):
    """Stage 1: ``rounds`` x ``candidates_per_round`` sequences of the ``transforms``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int = Field(3, ge=1)
    candidates_per_round: int = Field(8, ge=1)
    transforms: tuple[str, ...] = ("fold_bn", "concat_fold", "channel_align", "group_split", "fuse_qkv")
    budget: float = Field(0.3, ge=0.0, le=1.0)


class KernelStage(BaseModel):
    """Stage 2: up to ``trials_per_op`` signatures for each of the ``k`` ops with the most time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target_ops: Literal["top_k_latency"] = "top_k_latency"
    k: int = Field(20, ge=1)
    trials_per_op: int = Field(24, ge=1)
    signature: tuple[str, ...] = SIGNATURE_KNOBS
    measure_repeats: int = Field(20, ge=1)
    budget: float = Field(0.7, ge=0.0, le=1.0)


class SearchConfig(BaseModel):
    """The whole search file (every key optional; defaults as the issue's example)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage_graph: GraphStage = GraphStage()
    stage_kernel: KernelStage = KernelStage()
    objective: str | dict[str, float] = "latency_ms"
    constraints: dict[str, str | int | float] = Field(default_factory=dict)  # a bare number: parse_constraint says why not
    exploit: float = Field(0.5, ge=0.0, le=1.0)

    def objective_weights(self) -> tuple[tuple[str, float], ...]:
        """The objective as (name, weight) pairs: one name is weight 1."""
        if isinstance(self.objective, str):
            return ((self.objective, 1.0),)
        return tuple(sorted(self.objective.items()))

    def constraint_list(self) -> tuple[Constraint, ...]:
        return tuple(parse_constraint(k, v) for k, v in sorted(self.constraints.items()))


def check_config(cfg: SearchConfig) -> None:
    """What pydantic cannot check: registered transforms, known objectives and knobs.

    Raises
    ------
    SearchConfigError
        Naming the key (without the file: :func:`load_config` adds it).
    """
    from graph_ir.rewrites import PASSES

    for i, name in enumerate(cfg.stage_graph.transforms):
        if name not in PASSES:
            raise SearchConfigError(
                f"stage_graph.transforms[{i}]: {name!r} is not a rewrite pass (passes: {', '.join(PASSES)})"
            )
    for i, knob in enumerate(cfg.stage_kernel.signature):
        if knob not in SIGNATURE_KNOBS:
            raise SearchConfigError(f"stage_kernel.signature[{i}]: unknown knob {knob!r} (knobs: {', '.join(SIGNATURE_KNOBS)})")
    weights = cfg.objective_weights()
    if not weights:
        raise SearchConfigError("objective: no objective named")
    for name, _ in weights:
        if name not in OBJECTIVES:
            raise SearchConfigError(f"objective: unknown objective {name!r} (objectives: {', '.join(OBJECTIVES)})")
    for name in cfg.constraints:
        if name not in OBJECTIVES:
            raise SearchConfigError(f"constraints.{name}: unknown objective (objectives: {', '.join(OBJECTIVES)})")
    try:
        cfg.constraint_list()
    except SweepError as exc:
        raise SearchConfigError(str(exc)) from None


def load_config(path: str | Path | None) -> SearchConfig:
    """Read and check a search file; None gives the defaults.

    Raises
    ------
    SearchConfigError
        One line: the file, the key and what is wrong with it.
    """
    if path is None:
        cfg = SearchConfig()
        check_config(cfg)
        return cfg
    path = Path(path)
    data = read_yaml_mapping(path, SearchConfigError, "stage_graph, stage_kernel, objective, exploit")
    try:
        cfg = SearchConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise SearchConfigError(f"{path}: {field_path(err['loc'])}: {msg}") from None
    try:
        check_config(cfg)
    except SearchConfigError as exc:
        raise SearchConfigError(f"{path}: {exc}") from None
    return cfg
