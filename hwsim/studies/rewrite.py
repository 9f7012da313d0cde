"""A rewrite pass's predicted effect on a chip, and the ``--passes auto`` choice built on it.

The effect of a pass is simulated, not guessed: the model before and after the rewrite both run
through :func:`hwsim.pipeline.run_graph` on the chip, and the effect is their latency, energy
and DRAM bytes side by side. :func:`apply_passes` applies a list of passes in order, each on the
previous one's result; with ``auto`` a pass is kept only where its effect is a gain (latency
lower, or the same latency and fewer DRAM bytes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import onnx

from chips.schema import Chip
from graph_ir.onnx_import import from_model_proto
from graph_ir.rewrites import Pass, PassOptions, PassResult, get_pass
from hwsim.pipeline import run_graph
from scheduler import DEFAULT_POLICY

__all__ = ["Effect", "Metrics", "PassError", "PassOutcome", "apply_passes", "metrics", "predict", "run_pass"]


class PassError(ValueError):
    """A pass that cannot be applied to a model (its result fails ONNX's strict shape inference or
    checker): one line naming the model and the pass (bad input, exit 2)."""


@dataclass(frozen=True, slots=True)
class Metrics:
    """One simulated run's totals."""

    latency_ms: float
    energy_mj: float
    dram_bytes: int


@dataclass(frozen=True, slots=True)
class Effect:
    """A rewrite's predicted effect: the model's totals before and after it."""

    before: Metrics
    after: Metrics

    @property
    def latency_change_ms(self) -> float:
        return self.after.latency_ms - self.before.latency_ms

    @property
    def energy_change_mj(self) -> float:
        return self.after.energy_mj - self.before.energy_mj

    @property
    def dram_change_bytes(self) -> int:
        return self.after.dram_bytes - self.before.dram_bytes

    @property
    def gain(self) -> bool:
        """Latency lower, or latency the same (to a nanosecond) and fewer DRAM bytes."""
        if abs(self.latency_change_ms) < 1e-6:
            return self.dram_change_bytes < 0
        return self.latency_change_ms < 0


@dataclass(frozen=True, slots=True)
class PassOutcome:
    """What one pass of :func:`apply_passes` did: its result, its predicted effect, and whether
    the result was kept (``auto`` drops a pass that is no gain or applied nowhere)."""

    name: str
    result: PassResult
    effect: Effect | None
    kept: bool

    def skipped_reasons(self) -> list[tuple[str, int]]:
        """The reasons sites were skipped, with how many sites each, most frequent first."""
        return Counter(s.reason for s in self.result.skipped).most_common()


def metrics(
    model: onnx.ModelProto,
    chip: Chip,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    assume: Mapping[str, int] | None = None,
    source: str = "<model>",
) -> Metrics:
    """Simulate ``model`` on ``chip`` and return its latency, energy and DRAM bytes. ``assume``
    gives data-dependent dimensions and trip counts (``--assume``); ``source`` names the model in
    errors."""
    graph = from_model_proto(
        model, source=source, name=model.graph.name or "model", input_shapes=input_shapes, assume=assume
    )
    a = run_graph(graph, chip, precision, policy).analysis
    return Metrics(a.latency_ms, a.energy_mj, a.dram_bytes)


def predict(
    before: onnx.ModelProto,
    after: onnx.ModelProto,
    chip: Chip,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    assume: Mapping[str, int] | None = None,
) -> Effect:
    """The predicted effect on ``chip`` of rewriting ``before`` into ``after``."""
    return Effect(
        metrics(before, chip, precision, policy, input_shapes, assume),
        metrics(after, chip, precision, policy, input_shapes, assume),
    )


def run_pass(p: Pass, model: onnx.ModelProto, options: PassOptions | None = None, source: str = "<model>") -> PassResult:
    """``p`` applied to ``model``.

    Raises
    ------
    PassError
        When ONNX's strict shape inference or checker rejects the result (one line naming
        ``source`` and the pass), never an internal error.
    """
    try:
        return p(model, options)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
        lines = str(exc).strip().splitlines()
        raise PassError(f"{source}: pass {p.name} cannot be applied: {lines[0] if lines else type(exc).__name__}") from None


def pass_options(chip: Chip) -> PassOptions:
    """The pass options a chip implies: ``channel_atom`` is the largest channel atom of its units
    (an NPU that reduces over input channels in whole atoms, ``channel_atom`` of the unit), 0
    when no unit has one.

    >>> from chips import load_chip
    >>> pass_options(load_chip("rk3588")).channel_atom
    32
    """
    atoms = [a for u in chip.units if isinstance(a := getattr(u, "channel_atom", None), int)]
    return PassOptions(channel_atom=max(atoms, default=0))


def apply_passes(
    model: onnx.ModelProto,
    names: Sequence[str],
    chip: Chip,
    *,
    auto: bool = False,
    options: PassOptions | None = None,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    assume: Mapping[str, int] | None = None,
    source: str = "<model>",
) -> tuple[onnx.ModelProto, tuple[PassOutcome, ...]]:
    """Apply the passes ``names`` in order, each on the model the previous ones left.

    With ``auto``, a pass's result is kept only when its predicted effect is a gain
    (:attr:`Effect.gain`); otherwise every pass that applied somewhere is kept. ``options``
    default to what the chip implies (:func:`pass_options`: its channel atom). ``assume``
    (``--assume``) sizes data-dependent dimensions in the simulations; ``source`` names the
    model in errors.

    Returns
    -------
    The final model and one outcome per pass.

    Raises
    ------
    graph_ir.rewrites.UnknownPassError
        A name that is not registered (checked before any pass runs).
    PassError
        A pass whose result ONNX's strict shape inference rejects (:func:`run_pass`).
    graph_ir.ir.ModelError
        A model (the input, or a pass's result) that cannot be simulated.
    """
    passes = [get_pass(n) for n in names]
    options = options if options is not None else pass_options(chip)
    current = model
    base = metrics(current, chip, precision, policy, input_shapes, assume, source)
    outcomes: list[PassOutcome] = []
    for p in passes:
        result = run_pass(p, current, options, source)
        effect = None
        if result.applied:
            after = metrics(result.model, chip, precision, policy, input_shapes, assume, f"{source} after pass {p.name}")
            effect = Effect(base, after)
        kept = effect is not None and (effect.gain or not auto)
        outcomes.append(PassOutcome(p.name, result, effect, kept))
        if kept and effect is not None:
            current, base = result.model, effect.after
    return current, tuple(outcomes)
