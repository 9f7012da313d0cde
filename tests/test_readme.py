"""The README's chip snippets (and those of docs/first_chip.md, its draft "Your first chip"
section) run as pasted: each ```yaml block with a ``name`` and ``units`` is loaded from a file of its own in an empty folder (so a relative ``calibration:`` could not
resolve: a snippet must not need one) and a bundled model runs on it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from chips import load_chip
from hwsim.cli import main
from tests.helpers import MODELS, ROOT

_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)


def chip_snippets(markdown: str) -> list[str]:
    """The ```yaml blocks of ``markdown`` whose top level has ``name`` and ``units``."""
    out = []
    for text in _BLOCK.findall(markdown):
        data = yaml.safe_load(text)
        if isinstance(data, dict) and {"name", "units"} <= data.keys():
            out.append(text)
    return out


def test_the_extraction_finds_chip_blocks_only() -> None:
    md = "```yaml\nname: a\nunits: []\n```\n\n```yaml\nfoo: 1\n```\n```bash\nname: b\n```\n"
    assert chip_snippets(md) == ["name: a\nunits: []\n"]


DOCS = ("README.md", "docs/first_chip.md")
SNIPPETS = [(doc, text) for doc in DOCS for text in chip_snippets((ROOT / doc).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("doc", DOCS)
def test_each_document_has_a_chip_snippet(doc: str) -> None:
    assert any(d == doc for d, _ in SNIPPETS)  # README: the rk3588 example of "Chip files"


@pytest.mark.parametrize(
    "text", [t for _, t in SNIPPETS], ids=[f"{d}:{yaml.safe_load(t)['name']}" for d, t in SNIPPETS]
)
def test_a_pasted_snippet_loads_and_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "pasted.yaml"
    path.write_text(text, encoding="utf-8")
    chip = load_chip(path)
    out = tmp_path / "run"
    assert main(["run", str(path), str(MODELS / "yolov8n.onnx"), "--out", str(out), "--no-plots", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["chip"] == chip.name and summary["latency_ms"] > 0
