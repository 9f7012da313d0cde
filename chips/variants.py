"""Chip variants without editing YAML: keep only some units (``--units``) and override fields
(``--set``). Every variant is validated like a chip file.

>>> from chips.schema import load_chip
>>> chip = restrict(load_chip("rk3588"), "npu:1")
>>> [(u.name, u.cores) for u in chip.units]
[('npu', 1)]
>>> override(load_chip("rk3588"), ["npu.clock_mhz=600"]).unit("npu").clock_mhz
600.0
>>> override(load_chip("rk3588"), ["link.cpu<->npu.bandwidth_gbps=4"]).links[0].bandwidth_gbps
4.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from chips.schema import Chip, ChipError, Link, chip_from_dict, nearest

__all__ = ["link_index", "no_field", "override", "restrict", "set_field"]


def set_field(holder: dict[str, Any], field: str, value: object) -> None:
    """Set ``field`` of ``holder`` (a part of a chip's dump) as a variant does: a derived link that
    is changed becomes an explicit one (else validation would derive it again, undoing it)."""
    holder[field] = value
    if holder.get("derived"):
        holder["derived"] = False


def no_field(option: str, name: str, field: str, fields: Sequence[str], what: str = "fields") -> str:
    """The one message for a chip field an option names that its target lacks: the nearest
    field first, then every valid one (``--set``, ``--what-if`` and ``sensitivity --param``).

    >>> no_field("--set", "npu.clock_mzh=600", "clock_mzh", ["cores", "clock_mhz"])
    "--set npu.clock_mzh=600: no field 'clock_mzh' (did you mean clock_mhz? fields: clock_mhz, cores)"
    """
    close = nearest(field, fields)
    hint = f"did you mean {close}? " if close else ""
    return f"{option} {name}: no field {field!r} ({hint}{what}: {', '.join(sorted(fields))})"


def restrict(chip: Chip, spec: str) -> Chip:
    """Keep only the units named in ``spec`` (``"npu:1,cpu_big"``; ``:N`` keeps N cores).

    Raises
    ------
    ChipError
        For an unknown unit, a bad core count, or a result that is no longer a valid chip.
    """
    data = chip.model_dump()
    by_name = {u["name"]: u for u in data["units"]}
    kept = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name, _, cores = item.partition(":")
        if name not in by_name:
            raise ChipError(f"--units {spec}: chip {chip.name!r} has no unit {name!r} (units: {', '.join(by_name)})")
        unit = dict(by_name[name])
        if cores:
            if not cores.isdigit() or not 1 <= int(cores) <= unit["cores"]:
                raise ChipError(f"--units {spec}: {name} has {unit['cores']} cores; asked for {cores!r}")
            unit["cores"] = int(cores)
        kept.append(unit)
    if not kept:
        raise ChipError(f"--units {spec!r}: names no unit")
    data["units"] = kept
    data["description"] = f"{data['description']} [--units {spec}]".strip()
    names = {u["name"] for u in kept}
    data["affinity"] = {
        op: [p for p in prefs if p in names or p in {u["kind"] for u in kept}]
        for op, prefs in data["affinity"].items()
    }
    data["default_affinity"] = [p for p in data["default_affinity"] if p in names or p in {u["kind"] for u in kept}]
    return chip_from_dict(data, source=f"{chip.name} with --units {spec}")


def link_index(links: Sequence[Link], name: str) -> int | None:
    """Position in ``links`` of the link called ``name`` (one of its :attr:`Link.names`), or None.

    >>> from chips.schema import load_chip
    >>> links = load_chip("rk3588").links
    >>> link_index(links, "cpu<->npu"), link_index(links, "npu-cpu"), link_index(links, "cpu<->dsp")
    (0, 0, None)
    """
    return next((i for i, link in enumerate(links) if name in link.names), None)


def override(chip: Chip, assignments: Sequence[str], option: str = "--set") -> Chip:
    """Apply ``TARGET.FIELD=VALUE`` assignments; TARGET is a unit, else a domain, ``dram``, or
    ``link.NAME`` with NAME a link's key (``cpu<->npu``) or another of its :attr:`Link.names`.

    VALUE is read as YAML (``600``, ``[int8, fp16]``, ``{int8: 2}``). Setting a field of a derived
    link makes it an explicit one. ``option`` is what errors call the assignments (``--set``,
    ``--what-if``).

    Raises
    ------
    ChipError
        For a malformed assignment, an unknown target or field (with the nearest field and the
        valid ones), or a result that is not a valid chip.
    """
    data = chip.model_dump()
    for a in assignments:
        key, sep, raw = a.partition("=")
        target, dot, field = key.rpartition(".") if key.startswith("link.") else key.partition(".")
        if not sep or not dot or not field or not target:
            raise ChipError(f"{option} {a!r}: expected TARGET.FIELD=VALUE, e.g. npu.clock_mhz=600")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ChipError(f"{option} {a!r}: the value is not valid YAML") from None
        holder = _holder(chip, data, target, f"{option} {a!r}")
        fields = [f for f in holder if f != "derived"]
        if field not in fields:
            raise ChipError(no_field(option, a, field, fields))
        set_field(holder, field, value)
    data["description"] = f"{data['description']} [{option} {' '.join(assignments)}]".strip()
    return chip_from_dict(data, source=f"{chip.name} with {option} {' '.join(assignments)}")


def _holder(chip: Chip, data: dict[str, Any], target: str, assignment: str) -> dict[str, Any]:
    """The dict in ``data`` (a dump of ``chip``) that ``--set`` target ``target`` names."""
    if target == "dram":
        holder: dict[str, Any] = data["dram"]
        return holder
    if target.startswith("link."):
        i = link_index(chip.links, target[len("link.") :])
        if i is None:
            have = ", ".join(f"link.{link.key}" for link in chip.links) or "none"
            raise ChipError(f"{assignment}: no link {target[len('link.') :]!r} (links: {have})")
        holder = data["links"][i]
        return holder
    # a unit first: domains often share their unit's name
    matches = [i for group in ("units", "domains") for i in data[group] if i["name"] == target]
    if not matches:
        units = ", ".join(u["name"] for u in data["units"])
        domains = ", ".join(d["name"] for d in data["domains"])
        raise ChipError(
            f"{assignment}: no unit or domain named {target!r} on chip {chip.name!r}, nor 'dram' or "
            f"'link.NAME' (units: {units}; domains: {domains})"
        )
    holder = matches[0]
    return holder
