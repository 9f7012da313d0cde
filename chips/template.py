"""A chip file a user starts from: every field written with a comment that says what it means
and its unit (the field's description in ``chips.schema``), what ``hwsim chips new`` writes.

>>> text = new_chip_text("mychip")
>>> chip_from_dict(yaml.safe_load(text)).name
'mychip'
>>> "# Clock in MHz." in text
True
"""

from __future__ import annotations

import textwrap
from typing import Any

import yaml
from pydantic import BaseModel

from chips.schema import (
    Chip,
    Domain,
    Dram,
    Link,
    chip_from_dict,
    load_chip,
    spec_fields,
    unit_class,
    unit_kinds,
)

__all__ = ["STARTER", "chip_file_text", "new_chip_text"]

#: The chip ``hwsim chips new`` starts from without ``--like``: a CPU cluster and an NPU sharing
#: one LPDDR4x, values of a generic mid-range edge SoC for the user to replace.
STARTER: dict[str, Any] = {
    "name": "starter",
    "description": "A generic edge SoC: 4 CPU cores and a 32x32 int8 NPU on 32-bit LPDDR4x",
    "dram": {"bandwidth_gbps": 17.0, "latency_ns": 120, "energy_pj_per_byte": 20},
    "domains": [{"name": "cpu", "kind": "dram"}, {"name": "npu", "kind": "dram"}],
    "host_domain": "cpu",
    "links": [{"src": "cpu", "dst": "npu", "bandwidth_gbps": 8.0, "latency_ns": 20000, "dma_channels": 1}],
    "units": [
        {"name": "cpu", "kind": "cpu", "domain": "cpu", "cores": 4, "clock_mhz": 2000,
         "flops_per_cycle": {"int8": 32, "fp16": 16, "fp32": 8}, "l1_kib": 32, "l2_kib": 128,
         "l3_kib": 1024, "l1_bandwidth_gbps": 32, "l2_bandwidth_gbps": 16, "l3_bandwidth_gbps": 12,
         "op_overhead_ns": 2000, "active_w": 0.3, "idle_w": 0.03},
        {"name": "npu", "kind": "npu", "domain": "npu", "cores": 1, "clock_mhz": 1000,
         "mac_rows": 32, "mac_cols": 32, "macs_per_pe_per_cycle": {"int8": 1.0, "fp16": 0.25},
         "vector_ops_per_cycle": 64, "sram_kib": 512, "dataflow": "ws", "op_overhead_ns": 10000,
         "active_w": 1.0, "idle_w": 0.05,
         "supported_ops": ["Conv", "ConvTranspose", "Gemm", "MatMul", "Relu", "Clip", "LeakyRelu",
                           "Sigmoid", "HardSwish", "Add", "Sub", "Mul", "Concat", "Split", "Slice",
                           "MaxPool", "AveragePool", "GlobalAveragePool", "Resize", "Reshape",
                           "Transpose", "Flatten", "Squeeze", "Unsqueeze", "BatchNormalization",
                           "Pad", "Softmax", "Identity"]},
    ],
    "affinity": {"ArgMax": ["cpu"], "TopK": ["cpu"], "NonMaxSuppression": ["cpu"]},
    "default_affinity": ["npu", "cpu"],
}  # fmt: skip

_WIDTH = 96
#: Chip fields written without a comment of their own (the sections explain them).
_KIND_NOTE = "The unit kind: {kinds}. It decides which fields below the unit has."


def new_chip_text(name: str, like: str | None = None) -> str:
    """The text of a new chip file called ``name``: :data:`STARTER`'s values, or those of chip
    ``like`` (a bundled name or a file; its calibration already merged in), every field commented.

    Raises
    ------
    ChipError
        When ``like`` names no chip or an invalid one.
    """
    if like is None:
        chip = chip_from_dict({**STARTER, "name": name})
        origin = "`hwsim chips new` (a generic edge SoC: replace its values with your chip's)"
    else:
        base = load_chip(like)
        chip = base.model_copy(update={"name": name, "calibration": None})
        origin = f"`hwsim chips new --like {like}` (the values of {base.name}, calibration included)"
    text = chip_file_text(chip, origin)
    chip_from_dict(yaml.safe_load(text), source=f"new chip {name}")  # what it writes must load
    return text


def chip_file_text(chip: Chip, origin: str) -> str:
    """``chip`` as a chip file: a header, then every field with its description as a comment;
    fields without a value are written as comments (``# optional FIELD: ...``) for the user to
    add. Derived links are left out (validation derives them again)."""
    data = chip.model_dump(mode="json")
    lines = [
        *_comment(f"Chip {chip.name} for hwsim, written by {origin}.", ""),
        "# Every field says what it means and its unit above it; `# optional` lines are fields you",
        "# may add. Two domains of kind dram need no link (they copy through the DRAM), and a unit",
        "# without a domain gets one of its own. Try it:",
        f"#   hwsim run {chip.name}.yaml examples/models/resnet18.onnx",
        "",
    ]
    for field in ("name", "description"):
        lines += _field_lines(Chip, field, data[field], "")
    lines += _section(Chip, "dram") + _mapping(Dram, data["dram"], "  ")
    lines += _section(Chip, "domains") + _items(Domain, data["domains"])
    lines += _field_lines(Chip, "host_domain", data["host_domain"], "")
    links = [k for k in data["links"] if not k["derived"]]
    lines += _section(Chip, "links") + (_items(Link, links) if links else ["  []"])
    lines += _section(Chip, "units")
    seen: set[str] = set()
    for unit in data["units"]:
        first = {"name": unit["name"], "kind": unit["kind"], "domain": unit["domain"]}
        lines += _item(unit_class(unit["kind"]), {**first, **unit}, unit["kind"] not in seen)
        seen.add(unit["kind"])
    lines += _field_lines(Chip, "affinity", data["affinity"], "")
    lines += _field_lines(Chip, "default_affinity", data["default_affinity"], "")
    return "\n".join(lines) + "\n"


def _comment(text: str, indent: str) -> list[str]:
    prefix = f"{indent}# "
    return textwrap.wrap(text, _WIDTH, initial_indent=prefix, subsequent_indent=prefix, break_on_hyphens=False)


def _description(model: type[BaseModel], field: str) -> str:
    if field == "kind" and model is not Domain:
        return _KIND_NOTE.format(kinds=", ".join(unit_kinds()))
    return (model.model_fields[field].description or "").replace("``", "`")


def _section(model: type[BaseModel], field: str) -> list[str]:
    return ["", *_comment(_description(model, field), ""), f"{field}:"]


def _items(model: type[BaseModel], items: list[dict[str, Any]]) -> list[str]:
    """List items, the first with comments (the others are of the same kind)."""
    out: list[str] = []
    for i, item in enumerate(items):
        out += _item(model, item, commented=i == 0)
    return out


def _item(model: type[BaseModel], item: dict[str, Any], commented: bool) -> list[str]:
    """One list item: its first field after ``- ``, the others below it."""
    body = ["", *_mapping(model, item, "    ", commented)]
    first = next(i for i, line in enumerate(body) if line and not line.lstrip().startswith("#"))
    body[first] = "  - " + body[first][4:]
    return body


def _mapping(
    model: type[BaseModel], values: dict[str, Any], indent: str, commented: bool = True
) -> list[str]:
    out: list[str] = []
    for field, value in values.items():
        if field in spec_fields(model):
            out += _field_lines(model, field, value, indent, commented)
    return out


def _field_lines(
    model: type[BaseModel], field: str, value: Any, indent: str, commented: bool = True
) -> list[str]:
    """A field's comment and ``field: value`` line, or one ``# optional`` comment when unset
    (without ``commented``: the line alone, nothing when unset)."""
    about = _description(model, field) if commented else ""
    if value is None or (value in ({}, []) and not model.model_fields[field].is_required()):
        return _comment(f"optional {field}: {about}", indent) if commented else []
    return [*_comment(about, indent), *_value_lines(f"{indent}{field}: ", value, indent)]


def _value_lines(head: str, value: Any, indent: str) -> list[str]:
    """``head`` and ``value`` in YAML flow style, a long list wrapped under the key."""
    if isinstance(value, list) and len(head) + len(_flow(value)) > _WIDTH:
        lines, line = [], head + "["
        for i, item in enumerate(value):
            word = _flow(item) + ("]" if i == len(value) - 1 else ",")
            if len(line) + len(word) + 1 > _WIDTH and not line.endswith("["):
                lines.append(line)
                line = indent + "    " + word
            else:
                line += ("" if line.endswith("[") else " ") + word
        return [*lines, line]
    return [head + _flow(value)]


def _flow(value: Any) -> str:
    """``value`` as one line of YAML; a float without a fraction written as an integer."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip()
    return text.removesuffix("...").strip()
