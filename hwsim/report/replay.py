"""What a replay cannot recompute: how the original run chose its schedule.

A replayed schedule (``hwsim run --schedule FILE.json``) is simulated as it is, with no policy and
no engine check, so the facts ``summary.json`` gives about how the schedule was *chosen* (the
policy asked for, the candidates the engine check simulated, energy mode's figures, the options
that picked it) are not there to recompute. A schedule file therefore carries them
(:class:`OriginalRun`, taken from the summary of the run that wrote it) and the replay writes them
back (:func:`restore`): the same model on the same chip with the same options gives a
byte-identical ``summary.json``.

That the run was a replay is recorded outside the compared content: in the report folder's
``schedule.json`` (``original.replayed_from`` and ``original.replayed_sha256``: the file
replayed and its digest) and in an INFO line on stderr.

>>> o = OriginalRun(requested_policy="heft", options={"policy": "heft", "frames": 1, "schedule": None})
>>> replay_options({"policy": "affinity-locality", "frames": 2, "schedule": "s.json"}, o)
{'policy': 'heft', 'frames': 2, 'schedule': None}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from hwsim.report.provenance import plain_options
from hwsim.report.summary import EnergyMode, ScheduleFigures, Summary

__all__ = ["SCHEDULE_OPTIONS", "Figures", "OriginalEnergyMode", "OriginalRun", "original_run", "replay_options", "restore"]

#: ``run`` options that choose the schedule: a replay reports the original run's values for them
#: (``schedule``: the original was scheduled, not replayed, unless it was a replay too).
SCHEDULE_OPTIONS = ("policy", "objective", "latency_budget_ms", "schedule")


class Figures(BaseModel, frozen=True, extra="forbid"):
    """One schedule tried in energy mode: latency (ms) and energy (mJ)."""

    schedule: str
    latency_ms: float
    energy_mj: float


class OriginalEnergyMode(BaseModel, frozen=True, extra="forbid"):
    """Energy mode's figures of the original run (``summary.json``'s ``energy_mode``)."""

    latency_budget_ms: float
    chosen: Figures
    latency_optimal: Figures
    tried: tuple[Figures, ...]


class OriginalRun(BaseModel, frozen=True, extra="forbid"):
    """How the run that wrote a schedule file chose its schedule (see the module docstring)."""

    requested_policy: str
    #: Simulated latency (ms) of each candidate the engine check simulated, in its order.
    policy_check: dict[str, float] = {}
    policy_check_winner: str | None = None
    energy_mode: OriginalEnergyMode | None = None
    #: The original run's options as its ``summary.json`` provenance gives them.
    options: dict[str, Any] = {}
    #: The schedule file this run replayed and its sha256 (None: it was scheduled, not replayed).
    replayed_from: str | None = None
    replayed_sha256: str | None = None


def _figures(f: ScheduleFigures) -> Figures:
    return Figures(schedule=f.schedule, latency_ms=f.latency_ms, energy_mj=f.energy_mj)


def _schedule_figures(f: Figures) -> ScheduleFigures:
    return ScheduleFigures(f.schedule, f.latency_ms, f.energy_mj)


def original_run(summary: Summary, replayed_from: str | None = None, replayed_sha256: str | None = None) -> OriginalRun:
    """The :class:`OriginalRun` of a run from its summary (after :func:`restore` on a replay)."""
    e = summary.energy_mode
    energy = None
    if e is not None:
        energy = OriginalEnergyMode(
            latency_budget_ms=e.latency_budget_ms, chosen=_figures(e.chosen),
            latency_optimal=_figures(e.latency_optimal), tried=tuple(_figures(f) for f in e.tried),
        )  # fmt: skip
    options = plain_options(summary.provenance.options) if summary.provenance is not None else {}
    return OriginalRun(
        requested_policy=summary.requested_policy, policy_check=dict(summary.policy_check),
        policy_check_winner=summary.policy_check_winner, energy_mode=energy, options=options,
        replayed_from=replayed_from, replayed_sha256=replayed_sha256,
    )  # fmt: skip


def replay_options(options: Mapping[str, Any], original: OriginalRun) -> dict[str, Any]:
    """A replay's provenance options: its own, except those that chose the schedule
    (:data:`SCHEDULE_OPTIONS`), which are the original run's where it recorded them."""
    return {**options, **{k: original.options[k] for k in SCHEDULE_OPTIONS if k in original.options}}


def restore(summary: Summary, original: OriginalRun) -> Summary:
    """``summary`` of a replay with the original run's choice written back: requested policy,
    policy check, energy mode and the schedule-choosing options of its provenance."""
    e = original.energy_mode
    energy = None
    if e is not None:
        energy = EnergyMode(
            e.latency_budget_ms, _schedule_figures(e.chosen), _schedule_figures(e.latency_optimal),
            tuple(_schedule_figures(f) for f in e.tried),
        )  # fmt: skip
    prov = summary.provenance
    if prov is not None:
        prov = replace(prov, options=replay_options(prov.options, original))
    return replace(
        summary, requested_policy=original.requested_policy, policy_check=tuple(original.policy_check.items()),
        policy_check_winner=original.policy_check_winner, energy_mode=energy, provenance=prov,
    )  # fmt: skip
