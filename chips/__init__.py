"""Chip descriptions: pydantic models (``chips.schema``) beside the bundled YAML catalog."""

from chips.schema import (
    CATALOG_DIR,
    DTYPES,
    Chip,
    ChipError,
    CpuUnit,
    Domain,
    Dram,
    DspUnit,
    GpuUnit,
    Link,
    NpuUnit,
    Unit,
    bundled_chips,
    chip_from_dict,
    chip_json_schema,
    load_chip,
)
from chips.variants import override, restrict

__all__ = [
    "CATALOG_DIR",
    "DTYPES",
    "Chip",
    "ChipError",
    "CpuUnit",
    "Domain",
    "Dram",
    "DspUnit",
    "GpuUnit",
    "Link",
    "NpuUnit",
    "Unit",
    "bundled_chips",
    "chip_from_dict",
    "chip_json_schema",
    "load_chip",
    "override",
    "restrict",
]
