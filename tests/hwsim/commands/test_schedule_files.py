"""Schedule files: export, replay, migration, refusal, ``hwsim diff``, provenance (issue 14.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.cli import main
from hwsim.report.schedule_file import (
    SCHEMA_VERSION,
    ScheduledOp,
    ScheduleFile,
    indented_json,
    load_schedule_file,
    schedule_file_chunks,
    schedule_file_json,
)

ROOT = Path(__file__).resolve().parents[3]
MLP = str(ROOT / "examples" / "models" / "mlp_mnist.onnx")
OTHER = str(ROOT / "examples" / "models" / "audio_kws.onnx")


def _run(tmp: Path, name: str, *extra: str, model: str = MLP) -> int:
    return main(["run", "rk3588", model, "--out", str(tmp / name), "--no-plots", *extra])


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sched")
    assert _run(tmp, "a", "--export-schedule", str(tmp / "a.json")) == 0
    return tmp


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def test_export_has_every_op_and_the_digests(exported: Path) -> None:
    sf = load_schedule_file(exported / "a.json")
    s = _summary(exported / "a")
    assert sf.schema_version == SCHEMA_VERSION
    assert len(sf.ops) == s["ops"]
    assert sf.chip_sha256 == s["provenance"]["chip_sha256"] and sf.model_sha256 == s["provenance"]["model_sha256"]
    assert all(o.finish_ns >= o.start_ns for o in sf.ops)
    assert abs(sf.latency_ns / 1e6 - s["latency_ms"]) < 1e-5
    # the report folder's schedule.json is the same file
    assert (exported / "a" / "schedule.json").read_bytes() == (exported / "a.json").read_bytes()


@pytest.mark.parametrize("ops_per_chunk", [1, 3, 2_000])
@pytest.mark.parametrize("n_ops", [0, 1, None])
def test_streamed_file_is_the_indented_dump(exported: Path, ops_per_chunk: int, n_ops: int | None) -> None:
    sf = load_schedule_file(exported / "a.json")
    sf = sf.model_copy(update={"ops": sf.ops[:n_ops]})
    dumped = (json.dumps(sf.model_dump(mode="json"), indent=1) + "\n").encode()
    assert b"".join(schedule_file_chunks(sf, ops_per_chunk)) == dumped == schedule_file_json(sf)
    assert ScheduleFile.model_validate_json(dumped) == sf


def test_replay_same_chip_gives_the_same_trace_and_summary(exported: Path) -> None:
    assert _run(exported, "b", "--schedule", str(exported / "a.json")) == 0
    for name in ("summary.json", "trace.json", "critical_path.txt", "traffic.csv"):
        assert (exported / "b" / name).read_bytes() == (exported / "a" / name).read_bytes(), name
    # the replay is recorded in the report folder's schedule file, not in summary.json
    b = load_schedule_file(exported / "b" / "schedule.json").original
    assert b is not None and b.replayed_from == str(exported / "a.json") and b.replayed_sha256 is not None
    a = load_schedule_file(exported / "a.json").original
    assert a is not None and a.replayed_from is None and a.requested_policy == _summary(exported / "a")["requested_policy"]


def test_a_replay_of_a_replay_gives_the_same_summary(exported: Path) -> None:
    assert _run(exported, "r1", "--schedule", str(exported / "a.json"), "--export-schedule", str(exported / "r1.json")) == 0
    assert _run(exported, "r2", "--schedule", str(exported / "r1.json")) == 0
    assert (exported / "r2" / "summary.json").read_bytes() == (exported / "a" / "summary.json").read_bytes()


def test_replay_of_an_energy_run_gives_the_same_summary(tmp_path: Path) -> None:
    energy = ("--objective", "energy", "--latency-budget-ms", "5", "--frames", "2")
    assert _run(tmp_path, "a", *energy, "--export-schedule", str(tmp_path / "e.json")) == 0
    assert _run(tmp_path, "b", "--frames", "2", "--schedule", str(tmp_path / "e.json")) == 0
    a = (tmp_path / "a" / "summary.json").read_bytes()
    assert b'"energy_mode"' in a and (tmp_path / "b" / "summary.json").read_bytes() == a


def test_a_file_without_the_original_run_says_replayed(exported: Path) -> None:
    data = json.loads((exported / "a.json").read_text(encoding="utf-8"))
    del data["original"]
    old = exported / "no_original.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    assert _run(exported, "o", "--schedule", str(old)) == 0
    s = _summary(exported / "o")
    assert s["requested_policy"] == f"replayed ({old})" and "policy_check" not in s
    assert s["provenance"]["options"]["schedule"] == str(old)
    assert (exported / "o" / "trace.json").read_bytes() == (exported / "a" / "trace.json").read_bytes()


def test_replay_on_a_changed_chip_keeps_placements_and_order(exported: Path) -> None:
    out = exported / "c.json"
    argv = ("--set", "npu.clock_mhz=300", "--schedule", str(exported / "a.json"), "--export-schedule", str(out))
    assert _run(exported, "c", *argv) == 0
    a, c = load_schedule_file(exported / "a.json"), load_schedule_file(out)
    assert [(o.op, o.unit, o.core, o.order) for o in a.ops] == [(o.op, o.unit, o.core, o.order) for o in c.ops]
    assert a.chip_sha256 != c.chip_sha256
    if any(o.unit == "npu" for o in a.ops):
        assert c.latency_ns > a.latency_ns


def test_a_schedule_for_another_model_is_refused(exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert _run(exported, "d", "--schedule", str(exported / "a.json"), model=OTHER) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "another model" in err
    assert not (exported / "d").exists()


def test_an_older_version_is_migrated(exported: Path) -> None:
    data = json.loads((exported / "a.json").read_text(encoding="utf-8"))
    del data["schema_version"]  # version 0, the pre-release format: no version, no cores
    for op in data["ops"]:
        del op["cores"]
    v0 = exported / "v0.json"
    v0.write_text(json.dumps(data), encoding="utf-8")
    assert load_schedule_file(v0).ops[0].cores == (load_schedule_file(exported / "a.json").ops[0].core,)
    assert _run(exported, "e", "--schedule", str(v0)) == 0
    assert (exported / "e" / "trace.json").read_bytes() == (exported / "a" / "trace.json").read_bytes()


def test_a_newer_version_is_refused(exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads((exported / "a.json").read_text(encoding="utf-8"))
    data["schema_version"] = SCHEMA_VERSION + 1
    (exported / "new.json").write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert _run(exported, "f", "--schedule", str(exported / "new.json")) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "newer" in err
    assert not (exported / "f").exists()


@pytest.mark.parametrize("content", ["not json", "[]", '{"schema_version": 1, "ops": [{"op": 1}]}'])
def test_bad_schedule_files_are_one_line_exit_2(
    exported: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = exported / "bad.json"
    bad.write_text(content, encoding="utf-8")
    capsys.readouterr()
    assert _run(exported, "g", "--schedule", str(bad)) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (exported / "g").exists()


def test_schedule_with_energy_objective_is_a_usage_error(exported: Path) -> None:
    argv = ("--schedule", str(exported / "a.json"), "--objective", "energy", "--latency-budget-ms", "5")
    assert _run(exported, "h", *argv) == 2
    assert not (exported / "h").exists()


def test_schema_is_the_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--schedule"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == ScheduleFile.model_json_schema()
    assert schema["additionalProperties"] is False and "ops" in schema["required"]


def test_provenance_is_deterministic(exported: Path) -> None:
    assert _run(exported, "p") == 0
    a, p = _summary(exported / "a")["provenance"], _summary(exported / "p")["provenance"]
    assert a["options"].pop("export_schedule", None) is None  # output-only options are left out
    assert a == p and "out" not in a["options"]
    assert a["options"]["model"] == MLP


def test_diff_sorts_by_latency_effect(exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("--set", "npu.clock_mhz=300", "--schedule", str(exported / "a.json"))
    assert _run(exported, "slow", *argv) == 0
    capsys.readouterr()
    assert main(["diff", str(exported / "a"), str(exported / "slow"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["totals"]) >= {"latency_ms", "energy_mj", "dram_bytes"}
    lat = d["totals"]["latency_ms"]
    assert lat["delta"] == pytest.approx(lat["b"] - lat["a"])
    keys = [(not c["on_critical_path"], -abs(c["finish_delta_ns"])) for c in d["changed_ops"]]
    assert keys == sorted(keys)
    assert d["unchanged_ops"] + len(d["changed_ops"]) == _summary(exported / "a")["ops"]


def test_diff_of_a_file_with_itself_changes_nothing(exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(exported / "a.json")
    capsys.readouterr()
    assert main(["diff", f, f, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["changed_ops"] == [] and all(t["delta"] == 0 for t in d["totals"].values())


def test_diff_of_a_missing_path_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(tmp_path / "nope.json"), str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_diff_bench_is_under_a_second() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_diff import main as bench

    assert bench(["--ops", "2000"]) == 0


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(deadline=None)  # the machine is shared: time says nothing here
@given(value=_json_values, level=st.integers(0, 4))
def test_indented_json_is_the_standard_librarys_text(value: object, level: int) -> None:
    assert indented_json(value, level) == json.dumps(value, indent=1).replace("\n", "\n" + " " * level)


def test_indented_json_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="set"):
        indented_json({"a": {1, 2}})


_names = st.text(max_size=8)
_ops = st.builds(
    ScheduledOp,
    op=_names, op_type=_names, unit=_names, core=st.integers(0, 7),
    cores=st.lists(st.integers(0, 7), min_size=1, max_size=3).map(tuple), order=st.integers(0, 10**6),
    split=st.none() | st.integers(1, 8), fusion_group=st.none() | _names, dtype=_names,
    start_ns=st.floats(), finish_ns=st.floats(), est_start_ns=st.floats(), est_finish_ns=st.floats(),
    dram_bytes=st.integers(0, 2**62), on_critical_path=st.booleans(), reason=st.text(max_size=12),
    mapping=st.dictionaries(_names, st.text(max_size=4) | st.integers() | st.booleans(), max_size=3),
)  # fmt: skip


@settings(deadline=None)
@given(ops=st.lists(_ops, max_size=5), chunk=st.integers(1, 3))
def test_schedule_file_chunks_write_each_op_as_its_dump(ops: list[ScheduledOp], chunk: int) -> None:
    """The ops are written from their fields, not dumped: the text is still the dump's."""
    sf = ScheduleFile(
        hwsim_version="0", chip="c", chip_sha256="", model="m", model_sha256="", precision="int8", policy="p",
        est_makespan_ns=1.0, latency_ns=2.0, ops=tuple(ops),
    )  # fmt: skip
    want = json.dumps(sf.model_dump(mode="json"), indent=1) + "\n"
    assert b"".join(schedule_file_chunks(sf, chunk)).decode("utf-8") == want
