"""Tests for ``chips``: the bundled catalog, loading, the JSON Schema and the bad-input messages.

Bad chips are built from rk3588.yaml's data with one field changed, written under ``tmp_path``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from chips import (
    CATALOG_DIR,
    Chip,
    ChipError,
    NpuUnit,
    bundled_chips,
    chip_json_schema,
    load_chip,
)

RK3588_PATH = CATALOG_DIR / "rk3588.yaml"
_RK3588_DATA: dict[str, Any] = yaml.safe_load(RK3588_PATH.read_text(encoding="utf-8"))


@pytest.fixture
def rk3588_data() -> dict[str, Any]:
    """A fresh, freely modifiable copy of rk3588.yaml's data."""
    return copy.deepcopy(_RK3588_DATA)


def write_chip(tmp_path: Path, data: object, name: str = "chip.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_text(tmp_path: Path, text: str, name: str = "chip.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestBundledChips:
    def test_catalog_has_the_reference_chips(self) -> None:
        assert {"rk3588", "edge8", "jetson_orin_nano"} <= set(bundled_chips())

    def test_calibration_files_beside_a_chip_are_not_chips(self, monkeypatch, tmp_path) -> None:
        from chips import schema

        (tmp_path / "host.yaml").write_text("name: host\n")
        (tmp_path / "host_calibration.yaml").write_text("chip: host\nunits: {}\n")
        monkeypatch.setattr(schema, "CATALOG_DIR", tmp_path)
        assert list(schema.bundled_chips()) == ["host"]

    def test_paths_are_yaml_files_in_the_catalog(self) -> None:
        for name, path in bundled_chips().items():
            assert path.parent == CATALOG_DIR
            assert path.suffix == ".yaml"
            assert path.stem == name

    @pytest.mark.parametrize("name", sorted(bundled_chips()))
    def test_loads_with_distinct_unit_names(self, name: str) -> None:
        chip = load_chip(name)
        assert isinstance(chip, Chip)
        assert chip.name == name
        names = [u.name for u in chip.units]
        assert len(names) == len(set(names))
        assert all(u.domain in {d.name for d in chip.domains} for u in chip.units)

    @pytest.mark.parametrize("name", sorted(bundled_chips()))
    def test_every_unit_reaches_the_host(self, name: str) -> None:
        chip = load_chip(name)
        for u in chip.units:
            if u.domain != chip.host:
                assert chip.link_between(chip.host, u.domain) is not None
                assert chip.link_between(u.domain, chip.host) is not None


class TestCatalogValues:
    """Spot checks that the bundled figures add up to their datasheet totals."""

    def test_jetson_orin_nano_gpu_matches_20_dense_int8_tops(self) -> None:
        chip = load_chip("jetson_orin_nano")
        gpu = chip.unit("gpu")
        assert gpu.kind == "gpu"
        tops = gpu.compute_units * gpu.flops_per_cycle["int8"] * gpu.clock_mhz * 1e6 / 1e12
        assert tops == pytest.approx(20.0, rel=0.05)
        assert gpu.compute_units * gpu.vector_flops_per_cycle["fp32"] // 2 == 1024  # CUDA cores
        assert {u.kind for u in chip.units} == {"cpu", "gpu"}  # no NVDLA, no app DSP
        assert chip.preference("TopK") == ("cpu",)
        assert chip.preference("Conv")[0] == "gpu"

    def test_edge8_npu_is_8_tops_int8_and_rejects_float(self) -> None:
        chip = load_chip("edge8")
        npu = chip.unit("npu")
        assert npu.kind == "npu"
        tops = npu.cores * npu.mac_rows * npu.mac_cols * 2 * npu.clock_mhz * 1e6 / 1e12
        assert tops == pytest.approx(8.2, rel=0.01)
        assert npu.sram_kib <= 512
        assert npu.dtype_for("int4") == "int4"
        assert npu.dtype_for("fp16") is None
        assert npu.dtype_for("fp32") is None
        assert not any(u.kind == "gpu" for u in chip.units)

    def test_edge8_npu_is_cnn_only_and_signal_ops_prefer_the_dsp(self) -> None:
        chip = load_chip("edge8")
        npu = chip.unit("npu")
        assert npu.can_run("Conv")
        for op in ("LayerNormalization", "Softmax", "Erf", "Gather"):
            assert not npu.can_run(op)
        for op in ("DFT", "STFT", "MelWeightMatrix"):
            assert chip.preference(op) == ("dsp", "cpu")
            assert chip.unit("dsp").can_run(op)
        assert chip.preference("ArgMax") == ("cpu",)


class TestLoadChip:
    def test_by_name(self) -> None:
        assert load_chip("rk3588").name == "rk3588"

    def test_by_path_and_by_str_path(self) -> None:
        assert load_chip(RK3588_PATH) == load_chip(str(RK3588_PATH)) == load_chip("rk3588")

    def test_by_path_outside_the_catalog(self, tmp_path: Path, rk3588_data: dict[str, Any]) -> None:
        rk3588_data["name"] = "my_board"
        chip = load_chip(write_chip(tmp_path, rk3588_data, "my_board.yml"))
        assert chip.name == "my_board"
        assert [u.name for u in chip.units] == [u.name for u in load_chip("rk3588").units]

    def test_defaults_are_filled_in(self, tmp_path: Path, rk3588_data: dict[str, Any]) -> None:
        del rk3588_data["default_affinity"]
        del rk3588_data["dram"]["energy_pj_per_byte"]
        chip = load_chip(write_chip(tmp_path, rk3588_data))
        assert chip.default_affinity == ("npu", "gpu", "dsp", "cpu")
        assert chip.dram.energy_pj_per_byte == 20.0

    def test_chip_is_frozen(self) -> None:
        chip = load_chip("rk3588")
        with pytest.raises(ValidationError, match="frozen"):
            chip.name = "other"  # type: ignore[misc]


class TestChipJsonSchema:
    def test_has_every_unit_kind(self) -> None:
        schema: dict[str, Any] = chip_json_schema()
        mapping = schema["properties"]["units"]["items"]["discriminator"]["mapping"]
        assert set(mapping) == {"cpu", "gpu", "npu", "dsp"}
        defs = schema["$defs"]
        kinds = {d["properties"]["kind"]["const"] for n, d in defs.items() if n.endswith("Unit")}
        assert kinds == {"cpu", "gpu", "npu", "dsp"}

    def test_is_json_serialisable_and_forbids_extra_keys(self) -> None:
        schema: dict[str, Any] = chip_json_schema()
        assert json.loads(json.dumps(schema)) == schema
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) >= {"name", "dram", "domains", "units"}


class TestDtypeFor:
    @staticmethod
    def npu(macs: dict[str, float]) -> NpuUnit:
        return NpuUnit.model_validate(
            {
                "name": "n",
                "domain": "d",
                "clock_mhz": 1000,
                "mac_rows": 8,
                "mac_cols": 8,
                "macs_per_pe_per_cycle": macs,
                "sram_kib": 256,
            }
        )

    def test_native_dtype_is_kept(self) -> None:
        assert self.npu({"int8": 1.0, "fp16": 0.5}).dtype_for("int8") == "int8"

    def test_falls_back_to_next_wider(self) -> None:
        unit = self.npu({"int8": 1.0, "fp16": 0.5})
        assert unit.dtype_for("int4") == "int8"
        assert unit.dtype_for("bf16") is None  # fp16 is narrower than bf16: no fallback down
        assert self.npu({"int8": 1.0, "fp32": 0.1}).dtype_for("fp16") == "fp32"

    def test_none_when_nothing_wider(self) -> None:
        assert self.npu({"int4": 2.0, "int8": 1.0}).dtype_for("fp16") is None

    def test_dtypes_are_narrowest_first(self) -> None:
        assert self.npu({"fp16": 0.5, "int4": 2.0, "int8": 1.0}).dtypes() == (
            "int4",
            "int8",
            "fp16",
        )

    def test_bundled_units(self) -> None:
        rk = load_chip("rk3588")
        assert rk.unit("gpu").dtype_for("int8") == "fp16"  # Mali OpenCL path has no int8
        assert rk.unit("npu").dtype_for("fp32") is None
        assert rk.unit("cpu_big").dtype_for("bf16") == "fp32"


class TestLinkBetween:
    def test_bidirectional_link_works_both_ways(self) -> None:
        chip = load_chip("rk3588")
        there = chip.link_between("cpu", "npu")
        assert there is not None and there.bidirectional
        assert chip.link_between("npu", "cpu") is there

    def test_none_between_unlinked_domains(
        self, tmp_path: Path, rk3588_data: dict[str, Any]
    ) -> None:
        rk3588_data["domains"].append({"name": "spare", "kind": "dram"})  # used by no unit
        chip = load_chip(write_chip(tmp_path, rk3588_data))
        assert chip.link_between("cpu", "spare") is None
        assert chip.link_between("spare", "cpu") is None

    def test_one_way_links(self, tmp_path: Path, rk3588_data: dict[str, Any]) -> None:
        rk3588_data["links"] = [
            link for link in rk3588_data["links"] if {link["src"], link["dst"]} != {"cpu", "npu"}
        ] + [
            {
                "src": "cpu",
                "dst": "npu",
                "bandwidth_gbps": 8.0,
                "latency_ns": 100,
                "bidirectional": False,
            },
            {
                "src": "npu",
                "dst": "cpu",
                "bandwidth_gbps": 4.0,
                "latency_ns": 200,
                "bidirectional": False,
            },
        ]
        chip = load_chip(write_chip(tmp_path, rk3588_data))
        there, back = chip.link_between("cpu", "npu"), chip.link_between("npu", "cpu")
        assert there is not None and back is not None
        assert (there.bandwidth_gbps, back.bandwidth_gbps) == (8.0, 4.0)
        assert not there.bidirectional and not back.bidirectional

    def test_lone_one_way_link_is_judged_the_same_in_either_direction(
        self, tmp_path: Path, rk3588_data: dict[str, Any]
    ) -> None:
        def accepted(src: str, dst: str) -> bool:
            data = copy.deepcopy(rk3588_data)
            data["links"] = [
                link for link in data["links"] if {link["src"], link["dst"]} != {"cpu", "npu"}
            ] + [
                {
                    "src": src,
                    "dst": dst,
                    "bandwidth_gbps": 8.0,
                    "latency_ns": 0,
                    "bidirectional": False,
                }
            ]
            try:
                load_chip(write_chip(tmp_path, data))
            except ChipError:
                return False
            return True

        assert accepted("cpu", "npu") == accepted("npu", "cpu")


Mutation = Callable[[dict[str, Any]], None]


def _drop_cpu_gpu_links(d: dict[str, Any]) -> None:
    d["links"] = [link for link in d["links"] if {link["src"], link["dst"]} != {"cpu", "gpu"}]


def _gpu_in_sram(d: dict[str, Any]) -> None:
    """The GPU's domain made an on-chip SRAM, its link to the CPU removed (gpu<->npu stays)."""
    _drop_cpu_gpu_links(d)
    d["domains"][1] = {"name": "gpu", "kind": "sram", "bandwidth_gbps": 100}


BAD_CHIPS: list[tuple[str, Mutation, tuple[str, ...]]] = [
    ("unknown_key", lambda d: d["units"][0].update(foo=1), ("units[cpu_big].foo: unknown key (fields: name, domain,",)),
    ("unknown_top_level_key", lambda d: d.update(colour="red"), ("colour", "unknown key")),
    (
        "missing_field",
        lambda d: d["dram"].pop("bandwidth_gbps"),
        ("dram.bandwidth_gbps", "required"),
    ),
    (
        "missing_unit_field",
        lambda d: d["units"][2].pop("compute_units"),
        ("units[gpu].compute_units: Field required",),
    ),
    (
        "negative_bandwidth",
        lambda d: d["dram"].update(bandwidth_gbps=-1),
        ("dram.bandwidth_gbps", "greater than 0"),
    ),
    (
        "efficiency_above_one",
        lambda d: d["units"][0].update(efficiency={"Conv": 1.5}),
        ("units[cpu_big].efficiency.Conv:", "less than or equal to 1"),
    ),
    ("unknown_unit_kind", lambda d: d["units"][0].update(kind="tpu"), ("units[cpu_big]:", "'tpu'")),
    (
        "unit_in_unknown_domain",
        lambda d: d["units"][1].update(domain="l3"),
        ("units[cpu_little].domain: unknown domain 'l3' (have cpu, gpu, npu)",),
    ),
    (
        "link_to_unknown_domain",
        lambda d: d["links"][0].update(dst="tcm"),
        ("links[cpu-tcm].dst: unknown domain 'tcm'",),
    ),
    ("unknown_host_domain", lambda d: d.update(host_domain="tcm"), ("host_domain", "'tcm'")),
    (
        "affinity_unknown_unit",
        lambda d: d["affinity"].update(ArgMax=["cpu", "tpu"]),
        ("affinity.ArgMax", "'tpu'", "neither a unit nor a unit kind"),
    ),
    (
        "default_affinity_unknown_unit",
        lambda d: d.update(default_affinity=["tpu"]),
        ("default_affinity", "'tpu'"),
    ),
    (
        "duplicate_unit_names",
        lambda d: d["units"][1].update(name="cpu_big"),
        ("units", "duplicate name 'cpu_big'"),
    ),
    (
        "duplicate_domain_names",
        lambda d: d["domains"].append({"name": "npu"}),
        ("domains", "duplicate name 'npu'"),
    ),
    (
        "sram_domain_without_bandwidth",
        lambda d: d["domains"].append({"name": "tcm", "kind": "sram"}),
        ("domains[tcm]: sram domain 'tcm' needs bandwidth_gbps",),
    ),
    (
        "sram_domain_without_link",
        _gpu_in_sram,
        ("links: no link between domains 'cpu' and 'gpu' ('gpu' is an sram domain: add a link",),
    ),
    (
        "sram_domain_with_a_one_way_link",
        lambda d: (_gpu_in_sram(d), d["links"].append({"src": "cpu", "dst": "gpu", "bandwidth_gbps": 1,
                                                       "latency_ns": 0, "bidirectional": False})),
        ("links: no link from domain 'gpu' to 'cpu'",),
    ),
    ("no_units", lambda d: d.update(units=[]), ("units", "at least 1")),
]


class TestLoadChipErrors:
    @pytest.mark.parametrize(
        ("mutate", "expected"),
        [pytest.param(m, e, id=i) for i, m, e in BAD_CHIPS],
    )
    def test_bad_field_names_file_and_field(
        self,
        tmp_path: Path,
        rk3588_data: dict[str, Any],
        mutate: Mutation,
        expected: tuple[str, ...],
    ) -> None:
        mutate(rk3588_data)
        path = write_chip(tmp_path, rk3588_data, "bad.yaml")
        with pytest.raises(ChipError) as info:
            load_chip(path)
        message = str(info.value)
        assert message.startswith(f"{path}:")
        assert "\n" not in message
        for part in expected:
            assert part in message

    def test_yaml_syntax_error_gives_the_line(self, tmp_path: Path) -> None:
        path = write_text(tmp_path, "name: bad\ndram:\n  bandwidth_gbps: 1: 2\n")
        with pytest.raises(ChipError, match="YAML syntax error") as info:
            load_chip(path)
        assert str(info.value).startswith(f"{path}: line 3,")

    @pytest.mark.parametrize(
        ("text", "got"), [("- a\n- b\n", "list"), ("just a string\n", "str"), ("", "NoneType")]
    )
    def test_non_mapping_top_level(self, tmp_path: Path, text: str, got: str) -> None:
        path = write_text(tmp_path, text)
        with pytest.raises(
            ChipError, match=f"expected a mapping at the top level, got {got}"
        ) as info:
            load_chip(path)
        assert str(info.value).startswith(f"{path}:")

    def test_missing_file(self, tmp_path: Path) -> None:
        path = tmp_path / "absent.yaml"
        with pytest.raises(ChipError) as info:
            load_chip(path)
        assert str(info.value) == f"{path}: file not found"

    def test_unknown_bundled_name_suggests_a_close_match(self) -> None:
        with pytest.raises(ChipError, match="rk358: no such chip file or bundled chip") as info:
            load_chip("rk358")
        assert "did you mean 'rk3588'?" in str(info.value)

    def test_unknown_bundled_name_lists_the_catalog(self) -> None:
        with pytest.raises(ChipError) as info:
            load_chip("zzzz_no_such_chip")
        message = str(info.value)
        assert message.startswith("zzzz_no_such_chip:")
        assert all(name in message for name in bundled_chips())


class TestVariants:
    def test_restrict_keeps_named_units_and_cores(self):
        from chips import restrict

        chip = restrict(load_chip("rk3588"), "npu:1, cpu_big")
        assert [(u.name, u.cores) for u in chip.units] == [("npu", 1), ("cpu_big", 4)]
        assert "--units" in chip.description
        assert all(p in ("npu", "cpu") for prefs in chip.affinity.values() for p in prefs)

    @pytest.mark.parametrize(
        ("spec", "expect"),
        [("tpu", "no unit 'tpu'"), ("npu:4", "has 3 cores"), ("npu:x", "has 3 cores"), (",", "names no unit")],
    )
    def test_restrict_errors(self, spec, expect):
        from chips import restrict

        with pytest.raises(ChipError, match=expect):
            restrict(load_chip("rk3588"), spec)

    def test_override_changes_and_validates(self):
        from chips import override

        chip = override(load_chip("rk3588"), ["npu.clock_mhz=600", "dram.bandwidth_gbps=20"])
        assert chip.unit("npu").clock_mhz == 600 and chip.dram.bandwidth_gbps == 20
        with pytest.raises(ChipError, match="dram.bandwidth_gbps"):
            override(load_chip("rk3588"), ["dram.bandwidth_gbps=-1"])
        with pytest.raises(ChipError, match=r"no field 'clok_mhz' \(did you mean clock_mhz\? fields: active_w,"):
            override(load_chip("rk3588"), ["npu.clok_mhz=600"])
        with pytest.raises(ChipError, match=r"no unit or domain named 'tpu' on chip 'rk3588'.*\(units: cpu_big, "):
            override(load_chip("rk3588"), ["tpu.clock_mhz=1"])
        with pytest.raises(ChipError, match="TARGET.FIELD=VALUE"):
            override(load_chip("rk3588"), ["clock_mhz"])


@given(cores=st.integers(1, 16), mode=st.sampled_from(["independent", "lockstep"]))
def test_a_lockstep_unit_runs_one_op_at_a_time(cores: int, mode: str) -> None:
    data = next(u for u in _RK3588_DATA["units"] if u["kind"] == "npu") | {"cores": cores, "core_mode": mode}
    unit = NpuUnit.model_validate(data)
    assert unit.ops_at_once == (1 if mode == "lockstep" else cores)
