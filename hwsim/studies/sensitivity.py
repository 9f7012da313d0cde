"""Which resource limits a run: vary one chip parameter at a time and watch the latency.

A parameter is named like ``--set`` names a field: ``UNIT.FIELD`` (else ``DOMAIN.FIELD``),
``dram.FIELD``, or ``link.NAME.FIELD`` for a DMA link, NAME its key (``cpu<->npu``) or another
of :attr:`chips.schema.Link.names` (``cpu-npu``). Each is scaled by every factor (the
others kept as they are), the chip re-validated and the model simulated again. The
*elasticity* of the latency to a parameter is ``d log(latency) / d log(parameter)`` at the
chip as it is, from the two nearest points either side of it: -1 means latency is inversely
proportional to the parameter (the run is bound by it), 0 that it does not matter. The
bottleneck is the parameter with the largest elasticity in magnitude.

>>> from chips.schema import load_chip
>>> default_parameters(load_chip("edge8"))[:3]
['cpu.clock_mhz', 'npu.clock_mhz', 'npu.mac_cols']
>>> scaled_chip(load_chip("rk3588"), "link.cpu-npu.bandwidth_gbps", 0.5).links[0].bandwidth_gbps
4.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chips.schema import Chip, ChipError, Link, chip_from_dict
from chips.variants import link_index, no_field, set_field
from cost_models.table import UnplaceableError
from graph_ir.ir import ModelGraph
from hwsim.pipeline import run_graph
from scheduler import DEFAULT_POLICY

__all__ = [
    "DEFAULT_FACTORS",
    "ParameterSweep",
    "Point",
    "Sensitivity",
    "SensitivityError",
    "bottleneck_words",
    "default_parameters",
    "format_table",
    "parse_factors",
    "scaled_chip",
    "sensitivity",
    "to_json",
]

#: 0.5x to 2x in half-octave steps.
DEFAULT_FACTORS: tuple[float, ...] = (0.5, 0.7071, 1.0, 1.4142, 2.0)
#: Below this elasticity magnitude no parameter is called a bottleneck.
_NEGLIGIBLE = 0.01


class SensitivityError(ValueError):
    """An unknown or unscalable parameter, or bad factors (bad input, exit code 2)."""


@dataclass(frozen=True, slots=True)
class Point:
    """One simulation: the parameter at ``factor`` x its base (``value`` after rounding)."""

    factor: float
    value: float | None  # None: factor x base is past the largest float
    latency_ms: float | None
    energy_mj: float | None
    error: str = ""  # why there is no latency: the varied chip is invalid or cannot run the model


@dataclass(frozen=True, slots=True)
class ParameterSweep:
    """A parameter, its base value, its points (by factor) and the latency's elasticity to it."""

    name: str
    base_value: float
    points: tuple[Point, ...]
    elasticity: float | None


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """A whole study: the base run's latency and one sweep per parameter."""

    chip: str
    model: str
    precision: str
    policy: str
    base_latency_ms: float
    base_energy_mj: float
    factors: tuple[float, ...]
    sweeps: tuple[ParameterSweep, ...]

    @property
    def bottleneck(self) -> ParameterSweep | None:
        """The sweep with the largest elasticity magnitude, if any is not negligible."""
        known = [
            s for s in self.sweeps if s.elasticity is not None and abs(s.elasticity) >= _NEGLIGIBLE
        ]
        return max(known, key=lambda s: (abs(s.elasticity or 0.0), s.name), default=None)


def default_parameters(chip: Chip) -> list[str]:
    """The main parameters of a chip: every unit's ``sweep_fields`` (its clock; the NPU array
    width and SRAM, the GPU's compute units, the DSP's SRAM), the DRAM, SRAM-domain and link
    bandwidths (a derived link's is the DRAM's)."""
    names: list[str] = []
    for u in chip.units:
        names += [f"{u.name}.{field}" for field in u.sweep_fields]
    names.append("dram.bandwidth_gbps")
    names += [f"{d.name}.bandwidth_gbps" for d in chip.domains if d.kind == "sram"]
    names += [f"link.{link.key}.bandwidth_gbps" for link in chip.links if not link.derived]
    return names


def _holder(data: dict[str, Any], name: str) -> tuple[dict[str, Any], str]:
    """The dict in a chip dump that holds parameter ``name``, and the field."""
    if name.startswith("link."):
        target, dot, field = name[len("link.") :].rpartition(".")
        links = [Link.model_validate(k) for k in data["links"]]
        i = link_index(links, target)
        if not dot or i is None:
            have = ", ".join(f"link.{k.key}" for k in links) or "none"
            raise SensitivityError(f"--param {name}: no link {target!r} (links: {have})")
        holder: dict[str, Any] = data["links"][i]
        return holder, field
    target, dot, field = name.partition(".")
    if not dot or not field:
        raise SensitivityError(f"--param {name!r}: expected TARGET.FIELD, e.g. npu.clock_mhz")
    if target == "dram":
        return data["dram"], field
    for group in ("units", "domains"):
        for item in data[group]:
            if item["name"] == target:
                return item, field
    names = [u["name"] for u in data["units"]] + [d["name"] for d in data["domains"]]
    raise SensitivityError(
        f"--param {name}: no unit or domain named {target!r}, nor 'dram' or 'link.' (have {', '.join(names)})"
    )


def _base_value(data: dict[str, Any], name: str) -> float:
    holder, field = _holder(data, name)
    if field not in holder:
        numeric = sorted(
            k for k, v in holder.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        )
        raise SensitivityError(no_field("--param", name, field, numeric, what="numeric fields"))
    value = holder[field]
    if value is None:
        raise SensitivityError(
            f"--param {name}: has no value to scale (it defaults to another field); set it first"
        )
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SensitivityError(f"--param {name}: {value!r} is not a positive number")
    return float(value)


def _scaled_value(base: float, integer: bool, factor: float) -> float | None:
    """``base`` x ``factor``, an integer field's rounded and at least 1; None past the largest float.

    >>> _scaled_value(3, True, 0.1), _scaled_value(2.5, False, 2.0), _scaled_value(2400, True, 1e308)
    (1, 5.0, None)
    """
    value = base * factor
    if not math.isfinite(value):
        return None
    return max(1, round(value)) if integer else value


def scaled_chip(chip: Chip, name: str, factor: float) -> Chip:
    """``chip`` with parameter ``name`` multiplied by ``factor`` (integer fields rounded, at least 1).

    Raises
    ------
    SensitivityError
        For an unknown parameter or one that is not a positive number.
    ChipError
        When the scaled chip is not valid, or the factor takes the parameter past the largest float.
    """
    data = chip.model_dump()
    base = _base_value(data, name)
    holder, field = _holder(data, name)
    source = f"{chip.name} with {name} x{factor:g}"
    value = _scaled_value(base, isinstance(holder[field], int), factor)
    if value is None:  # an invalid point, as a chip the schema refuses is
        raise ChipError(f"{source}: {name}: {base:g} x {factor:g} is not a finite number")
    set_field(holder, field, value)
    data["description"] = f"{data['description']} [{name} x{factor:g}]".strip()
    return chip_from_dict(data, source=source)


def parse_factors(text: str) -> tuple[float, ...]:
    """``"0.5,1,2"`` -> ``(0.5, 1.0, 2.0)``: sorted, unique, each > 0, 1 added if missing.

    >>> parse_factors("2, 0.5")
    (0.5, 1.0, 2.0)
    """
    try:
        values = {float(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise SensitivityError(
            f"--factors {text!r}: expected numbers separated by commas, e.g. 0.5,1,2"
        ) from None
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise SensitivityError(f"--factors {text!r}: every factor must be a number > 0")
    return tuple(sorted(values | {1.0}))


def _elasticity(base_value: float, base_latency: float, points: Sequence[Point]) -> float | None:
    """d log latency / d log value at the base, from the nearest valid points either side."""
    ok = [
        (p.value, p.latency_ms)
        for p in points
        if p.latency_ms is not None and p.latency_ms > 0 and p.value is not None and p.value != base_value
    ]
    lo = max((q for q in ok if q[0] < base_value), key=lambda q: q[0], default=(base_value, base_latency))
    hi = min((q for q in ok if q[0] > base_value), key=lambda q: q[0], default=(base_value, base_latency))
    if lo[0] == hi[0] or base_latency <= 0:
        return None
    return (math.log(hi[1]) - math.log(lo[1])) / (math.log(hi[0]) - math.log(lo[0]))


def sensitivity(
    graph: ModelGraph,
    chip: Chip,
    parameters: Sequence[str] | None = None,
    factors: Sequence[float] = DEFAULT_FACTORS,
    precision: str = "int8",
    policy: str = DEFAULT_POLICY,
) -> Sensitivity:
    """Simulate ``graph`` on ``chip`` with each parameter scaled by each factor.

    Parameters
    ----------
    graph, chip
        The model and the chip as they are (factor 1).
    parameters : sequence of str, optional
        Parameter names (see the module docstring); default :func:`default_parameters`.
    factors : sequence of float
        Multipliers of each parameter's base value; 1 is always included.

    Returns
    -------
    Sensitivity
        Latencies in milliseconds, energies in millijoules; a point whose chip is invalid or
        cannot run the model has ``latency_ms=None`` and says why in ``error``.

    Raises
    ------
    SensitivityError
        For an unknown parameter, before anything is simulated.
    """
    names = list(dict.fromkeys(parameters if parameters else default_parameters(chip)))
    data = chip.model_dump()
    bases = {n: _base_value(data, n) for n in names}  # every name checked before any run
    factors = tuple(sorted(set(factors) | {1.0}))
    base = run_graph(graph, chip, precision, policy).analysis
    sweeps = []
    for name in names:
        points = []
        for f in factors:
            if f == 1.0:
                points.append(Point(1.0, bases[name], base.latency_ms, base.energy_mj))
                continue
            try:
                varied = scaled_chip(chip, name, f)
                holder, field = _holder(varied.model_dump(), name)
                a = run_graph(graph, varied, precision, policy).analysis
                points.append(Point(f, float(holder[field]), a.latency_ms, a.energy_mj))
            except (ChipError, UnplaceableError) as exc:
                holder, field = _holder(data, name)
                value = _scaled_value(bases[name], isinstance(holder[field], int), f)
                points.append(Point(f, value, None, None, str(exc)))
        sweeps.append(
            ParameterSweep(
                name, bases[name], tuple(points), _elasticity(bases[name], base.latency_ms, points)
            )
        )
    return Sensitivity(
        chip.name,
        graph.name,
        precision,
        policy,
        base.latency_ms,
        base.energy_mj,
        factors,
        tuple(sweeps),
    )


def to_json(s: Sensitivity) -> dict[str, Any]:
    """The ``sensitivity.json`` content (plain JSON types)."""
    b = s.bottleneck
    return {
        "chip": s.chip,
        "model": s.model,
        "precision": s.precision,
        "policy": s.policy,
        "base_latency_ms": s.base_latency_ms,
        "base_energy_mj": s.base_energy_mj,
        "factors": list(s.factors),
        "bottleneck": None if b is None else {"parameter": b.name, "elasticity": b.elasticity},
        "parameters": [
            {
                "name": p.name,
                "base_value": p.base_value,
                "elasticity": p.elasticity,
                "points": [
                    {
                        "factor": q.factor,
                        "value": q.value,
                        "latency_ms": q.latency_ms,
                        "energy_mj": q.energy_mj,
                        **({"error": q.error} if q.error else {}),
                    }
                    for q in p.points
                ],
            }
            for p in s.sweeps
        ],
    }


def bottleneck_words(sweep: ParameterSweep, base_latency_ms: float) -> str:
    """What the table says of a parameter, in words that agree with its columns.

    The elasticity is the local slope between the factors nearest the base; the effect of a
    larger change is read from the table (the largest factor above 1 that ran), never
    extrapolated from the slope.

    >>> pts = (Point(0.5, 5.0, 14.0, None), Point(1.0, 10.0, 10.0, None), Point(2.0, 20.0, 9.0, None))
    >>> bottleneck_words(ParameterSweep("dram.bandwidth_gbps", 10.0, pts, -0.48), 10.0)
    'elasticity -0.480 at the base; in the table x2 gives latency x0.900 (9.000 ms)'
    """
    text = f"elasticity {sweep.elasticity:+.3f} at the base" if sweep.elasticity is not None else "no elasticity"
    ran = [q for q in sweep.points if q.factor > 1.0 and q.latency_ms is not None]
    if ran and base_latency_ms > 0:
        top = max(ran, key=lambda q: q.factor)
        assert top.latency_ms is not None
        text += (f"; in the table x{top.factor:.3g} gives latency x{top.latency_ms / base_latency_ms:.3f} "
                 f"({top.latency_ms:.3f} ms)")  # fmt: skip
    return text


def format_table(s: Sensitivity) -> str:
    """The study as a text table: latency (ms) per parameter and factor, and the elasticity."""
    w = max(9, *(len(p.name) for p in s.sweeps)) if s.sweeps else 9
    lines = [
        f"hwsim sensitivity: {s.model} on {s.chip} ({s.precision}, {s.policy}), latency {s.base_latency_ms:.3f} ms as is",
        f"  {'parameter':<{w}} {'base':>9}"
        + "".join(f" {f'x{f:.3g}':>9}" for f in s.factors)
        + "  elasticity",
    ]
    for p in s.sweeps:
        cells = "".join(
            f" {q.latency_ms:9.3f}" if q.latency_ms is not None else f" {'invalid':>9}"
            for q in p.points
        )
        e = f"{p.elasticity:+.3f}" if p.elasticity is not None else "-"
        lines.append(f"  {p.name:<{w}} {p.base_value:9.4g}{cells}  {e:>10}")
    b = s.bottleneck
    if b is None:
        lines.append("  bottleneck: none of these parameters moves the latency by 1% per 100%")
    else:
        lines.append(f"  bottleneck: {b.name} ({bottleneck_words(b, s.base_latency_ms)})")
    invalid = sum(q.latency_ms is None for p in s.sweeps for q in p.points)
    if invalid:
        lines.append(
            f"  {invalid} point(s) invalid (the varied chip is not valid or cannot run the model; see sensitivity.json)"
        )
    return "\n".join(lines)
