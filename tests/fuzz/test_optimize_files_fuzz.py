"""Fuzz the readers of ``hwsim optimize``'s own files through ``hwsim.cli.main``: the search file
(``optimize --config``) and a JSON-lines file of trials (``hwsim db import``). Each: a valid
file with any value at any key path, keys deleted or added, any YAML/JSON value, garbage bytes.
A refused import must leave the database as it was."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.harness import VALUES, check_refusal_or_run, fuzz_settings, mutated, run_cli
from tests.helpers import MODELS

MLP = MODELS / "mlp_mnist.onnx"

SEARCH: dict[str, Any] = {
    "stage_graph": {"rounds": 1, "candidates_per_round": 2, "transforms": ["fold_bn", "concat_fold"], "budget": 0.3},
    "stage_kernel": {
        "target_ops": "top_k_latency", "k": 2, "trials_per_op": 2,
        "signature": ["unit", "cores", "dataflow"], "measure_repeats": 3, "budget": 0.7,
    },
    "objective": {"latency_ms": 1, "energy_mj": 0.5},
    "constraints": {"peak_dram_mib": "<= 512"},
    "exploit": 0.5,
}  # fmt: skip

GARBAGE = st.one_of(
    st.binary(max_size=64),
    st.text(alphabet=":-[]{}!&*#|>'\"\n\t ab1.", max_size=40).map(str.encode),
)


@fuzz_settings(12)
@given(st.one_of(mutated(SEARCH), VALUES).map(lambda d: yaml.safe_dump(d).encode()) | GARBAGE)
def test_search_yaml(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        f, out = Path(d) / "search.yaml", Path(d) / "out"
        f.write_bytes(content)
        argv = ["optimize", "rk3588", str(MLP), "--config", str(f), "--budget", "3", "--db", f"{d}/db.sqlite",
                "-o", str(out), "--workers", "1", "--quiet"]  # fmt: skip
        check_refusal_or_run("search-yaml", argv, f, out)


_TRIALS: list[dict[str, Any]] = []


def _valid_trials() -> list[dict[str, Any]]:
    """The trials of a 3-trial search of the MLP on the RK3588, exported once per process."""
    if not _TRIALS:
        with tempfile.TemporaryDirectory() as d:
            db, out, f = f"{d}/db.sqlite", f"{d}/out", Path(d) / "t.jsonl"
            res = run_cli(["optimize", "rk3588", str(MLP), "--budget", "3", "--db", db, "-o", out, "--workers", "1",
                           "--quiet"])  # fmt: skip
            assert res.code == 0, res.stderr
            assert run_cli(["db", "export", str(f), "--db", db]).code == 0
            _TRIALS.extend(json.loads(line) for line in f.read_text(encoding="utf-8").splitlines())
    return _TRIALS


@st.composite
def _jsonl_inputs(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["mutated", "value", "garbage"]))
    if kind == "garbage":
        return draw(GARBAGE)
    trials = _valid_trials()
    if kind == "value":
        lines = [json.dumps(draw(VALUES))]
    else:
        i = draw(st.integers(0, len(trials) - 1))
        lines = [json.dumps(t) for t in trials]
        lines[i] = json.dumps(draw(mutated(trials[i])))
    return ("\n".join(lines) + "\n").encode()


def _trial_count(db: str) -> int:
    res = run_cli(["db", "stats", "--db", db, "--json"])
    assert res.code == 0, res.stderr
    return int(json.loads(res.stdout)["trials"])


@fuzz_settings(40)
@given(_jsonl_inputs())
def test_db_import_jsonl(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        f, db = Path(d) / "trials.jsonl", f"sqlite:///{d}/db.sqlite"
        f.write_bytes(content)
        res = check_refusal_or_run("db-import-jsonl", ["db", "import", str(f), "--db", db], f)
        if res.code == 2:
            assert _trial_count(db) == 0, "a refused import added trials"
