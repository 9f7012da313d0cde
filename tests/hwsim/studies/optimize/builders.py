"""Builders for the experience database's tests (the fixtures are in conftest.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, text

from hwsim.studies.optimize.db import Trial

#: Set by .ci/run after it starts a PostgreSQL server; the PostgreSQL tests skip without it.
POSTGRES_ENV = "HWSIM_TEST_POSTGRES_URL"

POSTGRES_SKIP = f"{POSTGRES_ENV} is not set (.ci/run sets it after starting a PostgreSQL server)"


def make_trial(**changes: Any) -> Trial:
    """A plausible trial; ``changes`` replace its fields."""
    values: dict[str, Any] = {
        "chip_fingerprint": "c" * 64, "chip_name": "rk3588", "chip_features": {"npu_int8_log2_tops": 2.58, "dram_gbps": 34.0},
        "model_sha256": "m" * 64, "model_name": "resnet18", "graph_features": {"log_macs": 30.7},
        "search_id": "s" * 64, "stage": "kernel", "candidate_key": "k0", "transforms": ("fold_bn", "channel_align"),
        "signatures": {"conv1": {"unit": "npu", "cores": 2, "fusion": False}}, "op_features": {"conv1": {"log_macs": 23.1}},
        "objective": 3.5, "latency_ms": 3.5, "energy_mj": 7.25, "peak_memory_bytes": 12_345_678, "parent_latency_ms": 4.0,
        "feasible": True,
    }  # fmt: skip
    values.update(changes)
    return Trial(**values)


def drop_tables(url: str) -> None:
    """Empty a PostgreSQL test database of the experience tables."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS trials, meta"))
    engine.dispose()
