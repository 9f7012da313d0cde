"""What a rewrite pass is, and the registry of them.

A pass is a plain function ``(model, options) -> PassResult`` over an ONNX ``ModelProto``: it
finds the sites its pattern matches, checks each for legality (a site that is not legal gets a
one-line reason), rewrites the legal ones and returns a *new* model (the input is never
modified), with the sites it applied and the sites it skipped. Weights are transformed when the
model carries them; a weightless model (initializers as absent external data, like
``examples/models``) gets the same structure with initializers of the new shapes, still
weightless. Shapes are inferred on the result.

Passes register themselves with :func:`register_pass`; :data:`PASSES` is the one list every
command and report reads. An unknown name is an error listing the registered ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import onnx

__all__ = [
    "PASSES",
    "Pass",
    "PassOptions",
    "PassResult",
    "Site",
    "UnknownPassError",
    "get_pass",
    "register_pass",
]


@dataclass(frozen=True, slots=True)
class Site:
    """One place a pass's pattern matched: the nodes involved (ONNX node names), whether the
    rewrite is legal there, and why not (one line) when it is not; on a legal site, a note on
    how it was rewritten where a user should know (empty for most)."""

    nodes: tuple[str, ...]
    legal: bool = True
    reason: str = ""


@dataclass(frozen=True, slots=True)
class PassOptions:
    """What a pass may need beyond the model.

    Attributes
    ----------
    channel_atom : pad channels to a multiple of this (``channel_align``; a unit's channel atom
        or array width), 0 = leave alone.
    max_unroll : ``unroll_loop`` unrolls a Loop with a static trip count up to this many times.
    """

    channel_atom: int = 0
    max_unroll: int = 64


@dataclass(frozen=True, slots=True)
class PassResult:
    """A pass's output: the new model, the sites rewritten and the sites skipped (with reasons)."""

    model: onnx.ModelProto
    applied: tuple[Site, ...] = ()
    skipped: tuple[Site, ...] = ()


@dataclass(frozen=True, slots=True)
class Pass:
    """A registered pass: its name (what ``--passes`` takes), one line on what it does, and the
    function."""

    name: str
    description: str
    run: Callable[[onnx.ModelProto, PassOptions], PassResult] = field(repr=False)

    def __call__(self, model: onnx.ModelProto, options: PassOptions | None = None) -> PassResult:
        return self.run(model, options if options is not None else PassOptions())


class UnknownPassError(ValueError):
    """No pass of that name is registered (the message lists the registered ones)."""


#: Every registered pass by name, in registration order (the order ``--passes auto`` tries them).
PASSES: dict[str, Pass] = {}


def register_pass(
    name: str, description: str
) -> Callable[[Callable[[onnx.ModelProto, PassOptions], PassResult]], Callable[[onnx.ModelProto, PassOptions], PassResult]]:
    """Decorator: register ``fn`` as the pass ``name`` (a plugin may add passes; names are unique)."""

    def deco(
        fn: Callable[[onnx.ModelProto, PassOptions], PassResult],
    ) -> Callable[[onnx.ModelProto, PassOptions], PassResult]:
        if name in PASSES:
            raise ValueError(f"pass {name!r} is registered already")
        PASSES[name] = Pass(name, description, fn)
        return fn

    return deco


def get_pass(name: str) -> Pass:
    """The registered pass ``name``.

    Raises
    ------
    UnknownPassError
        No such pass; the message lists the registered ones.
    """
    try:
        return PASSES[name]
    except KeyError:
        raise UnknownPassError(f"unknown pass {name!r}; registered: {', '.join(PASSES)}") from None
