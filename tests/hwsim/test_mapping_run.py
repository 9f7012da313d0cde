"""run_graph with per-op mapping signatures: pins, splits and forced fusion honoured; a mapped
run's schedule file replays to the same latency and per-op times."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips.schema import load_chip
from cost_models.mapping import OpMapping, choices, legalize
from cost_models.table import cost_table
from graph_ir.onnx_import import load_onnx
from hwsim.cli import main
from hwsim.pipeline import run_graph
from hwsim.report.provenance import chip_sha256, file_sha256
from hwsim.report.schedule_file import (
    MIGRATIONS,
    load_schedule_file,
    mapping_of,
    schedule_file,
    schedule_file_json,
)  # fmt: skip

ROOT = Path(__file__).resolve().parents[2]
RESNET = ROOT / "examples" / "models" / "resnet18.onnx"
SMALL = ROOT / "examples" / "models" / "mlp_mnist.onnx"
RK = load_chip("rk3588")


def test_no_mapping_and_default_mapping_are_the_plain_run() -> None:
    g = load_onnx(SMALL)
    plain = run_graph(g, RK)
    default = run_graph(g, RK, mapping={n: OpMapping() for n in g.order})
    assert default.trace == plain.trace and default.mapping is None


@pytest.fixture(scope="module")
def resnet_mapped() -> tuple:
    g = load_onnx(RESNET)
    convs = [o.name for o in g.ops() if o.op_type == "Conv"]
    mp = {
        convs[0]: OpMapping(layout="im2col", dataflow="os"),
        convs[3]: OpMapping(unit="npu", cores=2, dataflow="is"),
        convs[5]: OpMapping(fusion=False),
        convs[7]: OpMapping(unit="cpu_big"),
    }
    return g, mp, run_graph(g, RK, mapping=mp)


def test_mapped_resnet18_honours_every_knob(resnet_mapped: tuple) -> None:
    g, mp, r = resnet_mapped
    convs = [o.name for o in g.ops() if o.op_type == "Conv"]
    rec = {o.op: o for o in r.trace.ops}
    assert r.schedule.placements[convs[7]].unit == "cpu_big"
    assert r.schedule.placements[convs[3]].cores == 2 and len(rec[convs[3]].cores) == 2
    assert not any(convs[5] in (p.producer, p.consumer) for p in r.fused)
    assert "im2col" in r.table.costs[convs[0]]["npu"].note
    assert r.mapping == mp
    assert r.analysis.latency_ms != run_graph(g, RK).analysis.latency_ms


def test_mapped_schedule_replays_to_the_same_latency(resnet_mapped: tuple, tmp_path: Path) -> None:
    _, mp, r = resnet_mapped
    sf = schedule_file(r, chip_sha256(RK), file_sha256(RESNET))
    (tmp_path / "m.json").write_bytes(schedule_file_json(sf))
    assert mapping_of(load_schedule_file(tmp_path / "m.json")) == mp
    argv = ["run", "rk3588", str(RESNET), "--schedule", str(tmp_path / "m.json"), "--out", str(tmp_path / "r"),
            "--no-plots", "--export-schedule", str(tmp_path / "again.json")]
    assert main(argv) == 0
    again = load_schedule_file(tmp_path / "again.json")
    assert again.latency_ns == sf.latency_ns
    assert [(o.op, o.start_ns, o.finish_ns, o.cores, o.mapping) for o in again.ops] == [
        (o.op, o.start_ns, o.finish_ns, o.cores, o.mapping) for o in sf.ops
    ]


def test_v1_file_migrates_to_no_mapping() -> None:
    v1 = {"schema_version": 1, "ops": [{"op": "a", "cores": [0]}]}
    assert MIGRATIONS[1](v1) == {"schema_version": 2, "ops": [{"op": "a", "cores": [0], "mapping": {}}]}


_G = load_onnx(ROOT / "examples" / "models" / "audio_kws.onnx")
_T = cost_table(_G, RK)
_CHOICES = {op.name: choices(op, RK, _T) for op in _G.ops()}


@st.composite
def _mappings(draw: st.DrawFn) -> dict[str, OpMapping]:
    out = {}
    for name in draw(st.lists(st.sampled_from(_G.order), unique=True, max_size=6)):
        knobs = {k: draw(st.sampled_from(v)) for k, v in _CHOICES[name].items()}
        out[name] = legalize(_G.op(name), RK, _T, OpMapping(**knobs))  # type: ignore[arg-type]
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mappings())
def test_random_legal_mappings_run_and_are_honoured(mp: dict[str, OpMapping]) -> None:
    r = run_graph(_G, RK, mapping=mp)
    rec = {o.op: o for o in r.trace.ops if o.frame == 0}
    for name, m in mp.items():
        if m.unit is not None:
            assert r.schedule.placements[name].unit == m.unit
        if m.cores is not None:
            assert len(rec[name].cores or (rec[name].core,)) == m.cores
