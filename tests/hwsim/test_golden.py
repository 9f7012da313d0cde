"""Every simulated number is kept: the golden cases of ``benchmarks/golden.py`` run identical.

The cases (each bundled model on each bundled chip, plus frames, engine options, policies and
objectives) were recorded before the issue-10 restructuring; ``golden.normalize`` holds the only
decided format changes.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("golden", ROOT / "benchmarks" / "golden.py")
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

RECORDED = json.loads(golden.GOLDEN.read_text(encoding="utf-8"))
CASES = golden.cases()


def test_every_case_is_recorded():
    assert sorted(RECORDED) == sorted(name for name, _ in CASES)


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[n for n, _ in CASES])
def test_case_identical(name, argv):
    assert golden.differences(name, RECORDED[name], golden.run_case(argv)) == []
