"""Fixtures of the optimize tests: a trial builder, an experience database and the mapping layer.

STAND-INS (helper "prior", issue 16): ``cost_models.mapping`` and ``hwsim.studies.optimize.db``
were being built in parallel. Each fixture uses the real module when it imports, else a minimal
stand-in with the interface of the design (spec16.md sections 1 and 2). Once both modules are
merged, the stand-ins below can go: the fixtures then only build the real objects.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pytest

from chips import Chip
from cost_models.table import CostTable
from graph_ir.ir import Op
from hwsim.report.provenance import chip_sha256
from hwsim.studies.optimize.features import chip_features

KNOBS = ("unit", "cores", "dataflow", "layout", "tile", "fusion")


ROOT = Path(__file__).resolve().parents[4]


def _real(module: str) -> types.ModuleType | None:
    """``module`` when this checkout has it (not another checkout's copy on ``sys.path``)."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(ROOT):
        return None
    return importlib.import_module(module)


# --- stand-in of cost_models.mapping (only what transfer uses) ---------------------------------
@dataclass(frozen=True, slots=True)
class _OpMapping:
    unit: str | None = None
    cores: int | None = None
    dataflow: str | None = None
    layout: str | None = None
    tile: str | None = None
    fusion: bool | None = None

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> _OpMapping:
        bad = [k for k in d if k not in KNOBS]
        if bad:
            raise ValueError(f"unknown knob {bad[0]!r}")
        return cls(**d)  # type: ignore[arg-type]

    def is_default(self) -> bool:
        return not self.as_dict()


def _legalize(op: Op, chip: Chip, table: CostTable, m: _OpMapping) -> _OpMapping:
    """Drop a unit that cannot run the op, clip cores to the unit's, drop NPU-only knobs elsewhere."""
    if m.unit is not None and m.unit not in table.costs[op.name]:
        m = replace(m, unit=None, cores=None)
    unit = chip.unit(m.unit) if m.unit is not None else None
    if m.cores is not None:
        m = replace(m, cores=min(m.cores, unit.cores) if unit is not None else None)
    if unit is None or unit.kind != "npu":
        m = replace(m, dataflow=None, layout=None)
    return m


@pytest.fixture
def mapping_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """``cost_models.mapping``: the real one, else the stand-in put in ``sys.modules``."""
    real = _real("cost_models.mapping")
    if real is not None:
        return real
    fake = types.ModuleType("cost_models.mapping")
    fake.OpMapping = _OpMapping  # type: ignore[attr-defined]
    fake.legalize = _legalize  # type: ignore[attr-defined]
    fake.KNOBS = KNOBS  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cost_models.mapping", fake)
    return fake


# --- stand-in of hwsim.studies.optimize.db ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Trial:
    chip_fingerprint: str
    chip_name: str
    chip_features: dict[str, float]
    model_sha256: str
    model_name: str
    graph_features: dict[str, float]
    search_id: str
    stage: str
    candidate_key: str
    transforms: tuple[str, ...]
    signatures: dict[str, dict[str, object]]
    op_features: dict[str, dict[str, float]]
    objective: float
    latency_ms: float
    energy_mj: float
    peak_memory_bytes: int
    parent_latency_ms: float
    feasible: bool
    error: str | None = None
    measured_latency_ms: float | None = None
    accuracy: float | None = None
    hwsim_version: str = ""
    created_at: str = ""
    id: int | None = None


@dataclass
class _MemoryDB:
    rows: list[Any] = field(default_factory=list)

    def add(self, trial: Any) -> int:
        self.rows.append(trial)
        return len(self.rows)

    def trials(self, *, chip_fingerprint: str | None = None, model_sha256: str | None = None,
               stage: str | None = None, search_id: str | None = None) -> list[Any]:  # fmt: skip
        want = {"chip_fingerprint": chip_fingerprint, "model_sha256": model_sha256, "stage": stage,
                "search_id": search_id}  # fmt: skip
        return [t for t in self.rows if all(v is None or getattr(t, k) == v for k, v in want.items())]

    def chips(self) -> list[tuple[str, str, dict[str, float], int]]:
        out: dict[str, tuple[str, str, dict[str, float], int]] = {}
        for t in self.rows:
            n = out[t.chip_fingerprint][3] + 1 if t.chip_fingerprint in out else 1
            out[t.chip_fingerprint] = (t.chip_fingerprint, t.chip_name, t.chip_features, n)
        return list(out.values())

    def close(self) -> None:
        pass


TrialFactory = Callable[..., Any]


@pytest.fixture
def make_trial() -> TrialFactory:
    """Build a trial of ``chip``: ``make_trial(chip, signatures, latency_ms=..., ...)``."""
    db = _real("hwsim.studies.optimize.db")
    cls = db.Trial if db is not None else _Trial
    names = {f.name for f in fields(cls)}

    def build(chip: Chip, signatures: dict[str, dict[str, object]], **kw: Any) -> Any:
        base: dict[str, Any] = {
            "chip_fingerprint": chip_sha256(chip), "chip_name": chip.name, "chip_features": chip_features(chip),
            "model_sha256": "m" * 64, "model_name": "model", "graph_features": {}, "search_id": "s",
            "stage": "kernel", "candidate_key": repr(sorted(signatures.items())) + repr(sorted(kw.items())),
            "transforms": (), "signatures": signatures, "op_features": {}, "objective": 1.0,
            "latency_ms": 1.0, "energy_mj": 1.0, "peak_memory_bytes": 0, "parent_latency_ms": 1.0,
            "feasible": True,
        }  # fmt: skip
        base |= kw
        base.setdefault("objective", base["latency_ms"])
        if "objective" not in kw:
            base["objective"] = base["latency_ms"]
        return cls(**{k: v for k, v in base.items() if k in names})

    return build


@pytest.fixture
def experience_db(tmp_path: Path) -> Iterator[Any]:
    """An empty experience database: the real SQLite one, else an in-memory stand-in."""
    real = _real("hwsim.studies.optimize.db")
    db = real.ExperienceDB.open(tmp_path / "experience.sqlite") if real is not None else _MemoryDB()
    yield db
    db.close()
