"""``hwsim chips new``: the file it writes loads, runs a bundled model, and explains every field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from chips import bundled_chips, chip_from_dict, load_chip
from chips.schema import CpuUnit, Domain, Dram, DspUnit, GpuUnit, Link, NpuUnit, spec_fields
from hwsim.cli import main
from tests.helpers import MODELS


@pytest.mark.parametrize("like", [None, *bundled_chips()])
def test_the_new_file_loads_and_runs_a_bundled_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], like: str | None
) -> None:
    path = tmp_path / "mine.yaml"
    assert main(["chips", "new", "mine", "-o", str(path), *(["--like", like] if like else [])]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    chip = load_chip(path)
    assert chip.name == "mine" and chip.defaulted_fields() == ()  # every number is in the file
    if like is not None:  # the same values as the bundled chip
        assert chip.model_dump(exclude={"name"}) == load_chip(like).model_dump(exclude={"name"})
    out = tmp_path / "run"
    args = ["run", str(path), str(MODELS / "mobilenetv2.onnx"), "--out", str(out), "--no-plots", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["chip"] == "mine"


def test_the_name_alone_writes_name_yaml_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["chips", "new", "soc1"]) == 0
    assert load_chip(tmp_path / "soc1.yaml").name == "soc1"


def test_an_existing_file_is_never_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("my own work\n")
    assert main(["chips", "new", "mine", "-o", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"hwsim: error: {path}: exists; `hwsim chips new` never overwrites a file (pass -o FILE)\n"
    )
    assert path.read_text() == "my own work\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--like", "rk358"], "rk358: no such chip file or bundled chip; did you mean 'rk3588'?"),
        (["-o", "no/such/folder/x.yaml"], "cannot write"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], message: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(["chips", "new", "x", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_every_field_is_explained_once(tmp_path: Path) -> None:
    """Each field a chip file may set has a description, and the file carries it as a comment."""
    path = tmp_path / "mine.yaml"
    assert main(["chips", "new", "mine", "-o", str(path)]) == 0
    text = path.read_text()
    for model in (Dram, Domain, Link, CpuUnit, GpuUnit, NpuUnit, DspUnit):
        for field in spec_fields(model):
            if field != "kind":
                assert model.model_fields[field].description, f"{model.__name__}.{field}"
    for field in ("clock_mhz", "op_overhead_ns", "active_w", "idle_w", "mac_rows", "sram_kib"):
        description = NpuUnit.model_fields[field].description or ""
        assert f"# {description.split()[0]}" in text and f"    {field}: " in text
    assert "# optional channel_atom: Input channels" in text
    assert all(len(line) <= 100 for line in text.splitlines())


def test_the_list_still_lists(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chips"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name} " in out for name in bundled_chips())


def test_a_derived_link_is_not_written(tmp_path: Path) -> None:
    from chips.template import STARTER, chip_file_text

    chip = chip_from_dict({**STARTER, "links": []})
    assert [k.derived for k in chip.links] == [True]
    text = chip_file_text(chip, "a test")
    assert "links:\n  []" in text
    assert chip_from_dict(yaml.safe_load(text)).links == chip.links
