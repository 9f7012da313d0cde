"""hwsim.host.softmax_probe: what onnxruntime's Softmax pays for a row's partial vector, apart and
in place, recovered from the probe's times (a fake onnxruntime here) and the premise it rests on
(hwsim's replay of the arena plans the probe's Softmax in place exactly where it should)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml

from chips.schema import CpuUnit, chip_from_dict
from graph_ir.onnx_import import from_model_proto
from hwsim.host import softmax_probe as sp
from hwsim.host.measure import make_session
from hwsim.host.ort_arena import arena_plan, in_place

# the law the fake onnxruntime follows: 0.15 ns a float of whole vectors, 9 ns a row, a partial
# vector of r floats 3 + 0.4 r ns more, and 12 ns more again in place
LAW = {"softmax_tail_ns": 3.0, "softmax_tail_element_ns": 0.4, "softmax_in_place_tail_ns": 12.0}


def fake_softmax_ns(vector: int):
    def timed(rows: int, width: int, apart: bool, rounds: int) -> float:
        tail = width % vector
        row = 9.0 + 0.15 * width + (LAW["softmax_tail_ns"] + LAW["softmax_tail_element_ns"] * tail if tail else 0.0)
        return rows * (row + (0.0 if apart or not tail else LAW["softmax_in_place_tail_ns"]))

    return timed


@pytest.mark.parametrize("vector", [16, 8])
def test_the_fields_are_the_law_the_times_follow(monkeypatch: pytest.MonkeyPatch, vector: int) -> None:
    monkeypatch.setattr(sp, "nchwc_block", lambda: vector)
    monkeypatch.setattr(sp, "_softmax_ns", fake_softmax_ns(vector))
    got = sp.softmax_tail_rates(1)
    assert got == pytest.approx({"vector_floats": float(vector), **LAW})
    assert set(got) == set(sp.SOFTMAX_TAIL_FIELDS)


def test_nothing_without_a_vector_nor_a_figure_that_is_not_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sp, "nchwc_block", lambda: 0)
    assert sp.softmax_tail_rates(1) == {}
    monkeypatch.setattr(sp, "nchwc_block", lambda: 16)
    monkeypatch.setattr(sp, "_softmax_ns", lambda rows, width, apart, rounds: rows * 20.0)  # no tail, no place
    assert sp.softmax_tail_rates(1) == {"vector_floats": 16.0}


@pytest.mark.parametrize("apart", [False, True])
def test_hwsims_arena_plans_the_probes_softmax_in_place_only_where_its_input_is_not_an_output(apart: bool) -> None:
    graph = from_model_proto(sp.softmax_tail_model(64, 47, apart), "probe.onnx")
    plan = arena_plan(graph)
    assert in_place(plan, next(k for k in plan.kernels if k.op_type == "Softmax")) is not apart


def test_the_probe_models_run_under_onnxruntime() -> None:
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (64, 47)).astype(np.float32)
    for apart in (False, True):
        out = make_session(sp.softmax_tail_model(64, 47, apart), 1, "all").run(None, {"x": x})
        e = np.exp(x * 0.5 - (x * 0.5).max(axis=-1, keepdims=True))
        assert np.allclose(out[0], 0.5 * e / e.sum(axis=-1, keepdims=True), atol=1e-6)


def test_the_fingerprint_writes_the_vector_as_a_count_and_the_chip_reads_the_figures() -> None:
    from hwsim.host.fingerprint import chip_yaml
    from tests.hwsim.host.test_calibrate_host import fake_fingerprint

    fp = fake_fingerprint()
    text = chip_yaml(replace(fp, kernel_rates={**fp.kernel_rates, "vector_floats": 16.0, **LAW}))
    assert "vector_floats: 16\n" in text
    unit = chip_from_dict(yaml.safe_load(text)).units[0]
    assert isinstance(unit, CpuUnit) and unit.vector_floats == 16 and unit.softmax_in_place_tail_ns == 12.0


def test_the_benchmark_prices_the_in_place_rows_their_tail_and_more(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import host_chip, load_benchmarks

    with_law, without = tmp_path / "law.yaml", tmp_path / "plain.yaml"
    with_law.write_text(yaml.safe_dump(host_chip(vector_floats=16, **LAW)))
    without.write_text(yaml.safe_dump(host_chip()))
    bench = load_benchmarks("softmax_tails")

    def more(rows: int, width: int, apart: bool) -> float:
        return bench.priced(rows, width, apart, str(with_law)) - bench.priced(rows, width, apart, str(without))

    assert more(512, 42, True) == pytest.approx(512 * (3.0 + 0.4 * 10))
    assert more(512, 42, False) == pytest.approx(512 * (3.0 + 0.4 * 10 + 12.0))
    assert more(512, 48, False) == 0.0
    assert more(64, 250, False) == pytest.approx(64 * (3.0 + 0.4 * 10))  # 16 vectors: no more in place
    assert bench.main(["--chip", str(with_law), "--rounds", "1", "--cases", "64x42"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 64 x 42 |")]
    assert [r.split("|")[4].strip() for r in rows] == ["in place", "apart"]
