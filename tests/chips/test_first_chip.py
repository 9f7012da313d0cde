"""A user's first chip: what a file may leave out (derived domains and links), every problem of a
file in one error, typos named with the nearest field, and the defaults nobody chose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import ChipError, bundled_chips, chip_from_dict, load_chip, override
from chips.schema import Link


def cpu(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "cpu", "clock_mhz": 1000, "flops_per_cycle": {"fp32": 16}, **extra}


def npu(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "npu", "clock_mhz": 1000, "mac_rows": 8, "mac_cols": 8,
            "macs_per_pe_per_cycle": {"int8": 1.0}, "sram_kib": 64, **extra}  # fmt: skip


def chip(*units: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "mine", "dram": {"bandwidth_gbps": 20, "latency_ns": 100}, "units": list(units), **top}


def problems_of(data: dict[str, Any], tmp_path: Path) -> tuple[str, tuple[str, ...]]:
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ChipError) as info:
        load_chip(path)
    return str(info.value), info.value.problems


class TestDerived:
    def test_a_unit_without_a_domain_gets_its_own(self) -> None:
        c = chip_from_dict(chip(cpu("cpu"), npu("npu")))
        assert [(d.name, d.kind) for d in c.domains] == [("cpu", "dram"), ("npu", "dram")]
        assert [u.domain for u in c.units] == ["cpu", "npu"]
        assert c.host == "cpu"

    def test_a_unit_without_a_domain_joins_the_domain_of_its_name(self) -> None:
        c = chip_from_dict(chip(cpu("cpu"), npu("npu"), domains=[{"name": "npu", "kind": "sram",
                                                                   "bandwidth_gbps": 100}],
                                links=[{"src": "npu", "dst": "cpu", "bandwidth_gbps": 5, "latency_ns": 7}]))
        assert [(d.name, d.kind) for d in c.domains] == [("npu", "sram"), ("cpu", "dram")]
        assert c.unit("npu").domain == "npu" and len(c.links) == 1

    def test_two_dram_domains_copy_through_the_dram(self) -> None:
        c = chip_from_dict(chip(cpu("cpu"), npu("npu")))
        link = c.link_between("npu", "cpu")
        assert link == Link(src="cpu", dst="npu", bandwidth_gbps=20, latency_ns=100, derived=True)
        assert link.dma_channels == 1 and link.bidirectional

    def test_an_explicit_link_wins_and_a_missing_direction_is_derived_one_way(self) -> None:
        mine = {"src": "cpu", "dst": "npu", "bandwidth_gbps": 5, "latency_ns": 7, "bidirectional": False}
        c = chip_from_dict(chip(cpu("cpu"), npu("npu"), links=[mine]))
        there, back = c.link_between("cpu", "npu"), c.link_between("npu", "cpu")
        assert there is not None and (there.bandwidth_gbps, there.derived) == (5, False)
        assert back is not None and (back.bandwidth_gbps, back.bidirectional, back.derived) == (20, False, True)

    def test_only_the_domains_in_use_are_linked(self) -> None:
        c = chip_from_dict(chip(cpu("cpu"), domains=[{"name": "cpu"}, {"name": "spare"}]))
        assert c.links == ()

    def test_a_derived_link_follows_the_dram(self) -> None:
        c = override(chip_from_dict(chip(cpu("cpu"), npu("npu"))), ["dram.bandwidth_gbps=40"])
        assert [(k.bandwidth_gbps, k.derived) for k in c.links] == [(40, True)]

    def test_setting_a_derived_link_makes_it_explicit(self) -> None:
        c = chip_from_dict(chip(cpu("cpu"), npu("npu")))
        c = override(c, ["link.cpu<->npu.bandwidth_gbps=3"])
        c = override(c, ["dram.bandwidth_gbps=40"])
        assert [(k.bandwidth_gbps, k.derived) for k in c.links] == [(3, False)]

    def test_an_sram_domain_without_a_link_is_an_error(self, tmp_path: Path) -> None:
        data = chip(cpu("cpu"), npu("npu", domain="tcm"),
                    domains=[{"name": "cpu"}, {"name": "tcm", "kind": "sram", "bandwidth_gbps": 50}])  # fmt: skip
        message, _ = problems_of(data, tmp_path)
        assert message.endswith(
            "chip.yaml: links: no link between domains 'cpu' and 'tcm' ('tcm' is an sram domain: "
            "add a link; only two dram domains reach each other through the DRAM)"
        )

    def test_the_bundled_chips_link_every_pair_themselves(self) -> None:
        for name in bundled_chips():
            assert not any(k.derived for k in load_chip(name).links), name


class TestEveryProblemAtOnce:
    def test_field_and_layout_problems_in_one_error(self, tmp_path: Path) -> None:
        data = chip(
            cpu("cpu", l3_kb=512),
            npu("npu", domain="tcm"),
            npu("dsp", domain="tcm2"),
            domains=[{"name": "cpu"}, {"name": "tcm", "kind": "sram", "bandwidth_gbps": 50},
                     {"name": "tcm2", "kind": "sram", "bandwidth_gbps": 50}],
            affinity={"ArgMax": ["tpu"]},
        )  # fmt: skip
        data["units"][1]["clock_mzh"] = data["units"][1].pop("clock_mhz")
        message, problems = problems_of(data, tmp_path)
        first, *rest = message.split("\n")
        assert first == f"{tmp_path / 'chip.yaml'}: 6 problems:"
        assert rest == [f"  {p}" for p in problems]
        assert problems == (
            "units[cpu].l3_kb: unknown key (did you mean l3_kib?)",
            "units[npu].clock_mzh: unknown key (did you mean clock_mhz?)",
            "affinity.ArgMax: 'tpu' is neither a unit nor a unit kind",
            *(f"links: no link between domains {a!r} and {b!r} ({a if a != 'cpu' else b!r} is an sram "
              "domain: add a link; only two dram domains reach each other through the DRAM)"
              for a, b in (("cpu", "tcm"), ("cpu", "tcm2"), ("tcm", "tcm2"))),
        )

    def test_a_list_whose_items_all_fail_is_not_called_empty(self, tmp_path: Path) -> None:
        _, problems = problems_of(chip(cpu("cpu", l3_kb=1), domains=[{"name": "cpu", "kind": "sram"}]), tmp_path)
        assert problems == (
            "units[cpu].l3_kb: unknown key (did you mean l3_kib?)",
            "domains[cpu]: sram domain 'cpu' needs bandwidth_gbps",
        )

    def test_every_layout_problem_of_a_valid_file(self, tmp_path: Path) -> None:
        data = chip(cpu("cpu", domain="l3"), npu("npu", domain="l4"), default_affinity=["tpu"],
                    domains=[{"name": "cpu"}])  # fmt: skip
        _, problems = problems_of(data, tmp_path)
        assert problems == (
            "units[cpu].domain: unknown domain 'l3' (have cpu)",
            "units[npu].domain: unknown domain 'l4' (have cpu)",
            "default_affinity: 'tpu' is neither a unit nor a unit kind",
        )


class TestTypos:
    @pytest.mark.parametrize(
        ("unit", "key", "meant"),
        [("npu", "clock_mzh", "clock_mhz"), ("cpu", "l3_kb", "l3_kib"), ("npu", "sram_kb", "sram_kib")],
    )
    def test_the_unknown_key_comes_first_with_the_nearest_field(
        self, tmp_path: Path, unit: str, key: str, meant: str
    ) -> None:
        data = chip(cpu("cpu_main"), npu("npu_main"))
        held = data["units"][0 if unit == "cpu" else 1]
        held[key] = held.pop(meant, 1)
        message, problems = problems_of(data, tmp_path)
        assert problems == (f"units[{unit}_main].{key}: unknown key (did you mean {meant}?)",)
        assert message == f"{tmp_path / 'chip.yaml'}: {problems[0]}"

    def test_the_dram_and_links_are_named_too(self, tmp_path: Path) -> None:
        data = chip(cpu("cpu"), npu("npu"))
        data["dram"]["bandwith_gbps"] = data["dram"].pop("bandwidth_gbps")
        data["links"] = [{"src": "cpu", "dst": "npu", "bandwidth_gbps": 1, "latency_ns": 0, "dma_chanels": 2}]
        _, problems = problems_of(data, tmp_path)
        assert problems == (
            "dram.bandwith_gbps: unknown key (did you mean bandwidth_gbps?)",
            "links[cpu-npu].dma_chanels: unknown key (did you mean dma_channels?)",
        )

    def test_a_key_like_no_field_lists_them_all(self, tmp_path: Path) -> None:
        _, problems = problems_of(chip(cpu("cpu"), turbo=True), tmp_path)
        assert problems[0].startswith("turbo: unknown key (fields: name, description, dram, domains,")
        assert "derived" not in problems[0]

    def test_a_typo_in_set_names_the_nearest_and_every_field(self) -> None:
        with pytest.raises(ChipError) as info:
            override(load_chip("edge8"), ["dsp.sram_kb=64"])
        assert str(info.value) == (
            "--set dsp.sram_kb=64: no field 'sram_kb' (did you mean sram_kib? fields: active_w, "
            "clock_mhz, core_mode, cores, domain, efficiency, flops_per_cycle, fuses, idle_w, kind, "
            "mem_bandwidth_gbps, name, op_overhead_ns, split_cores, split_ops, split_overhead_ns, sram_kib, "
            "supported_ops, unsupported_ops)"
        )

    def test_what_if_says_what_if(self) -> None:
        with pytest.raises(ChipError, match=r"^--what-if dram\.bandwith_gbps=1: no field .* bandwidth_gbps\?"):
            override(load_chip("edge8"), ["dram.bandwith_gbps=1"], "--what-if")


class TestDefaultedFields:
    def test_a_minimal_chip_lists_what_it_left_to_defaults(self) -> None:
        c = chip_from_dict(chip(cpu("cpu"), npu("npu", split_ops=["Conv"])))
        assert c.defaulted_fields() == (
            "dram.energy_pj_per_byte",
            "units[cpu].cores", "units[cpu].op_overhead_ns", "units[cpu].active_w", "units[cpu].idle_w",
            "units[cpu].l1_kib", "units[cpu].l2_kib", "units[cpu].l3_kib", "units[cpu].l1_bandwidth_gbps",
            "units[cpu].l2_bandwidth_gbps", "units[cpu].l3_bandwidth_gbps",
            "units[npu].cores", "units[npu].op_overhead_ns", "units[npu].active_w", "units[npu].idle_w",
            "units[npu].split_overhead_ns", "units[npu].vector_ops_per_cycle", "units[npu].dataflow",
            "links[cpu<->npu].dma_channels",
        )  # fmt: skip

    def test_set_fields_and_structure_are_not_listed(self) -> None:
        c = chip_from_dict(chip(cpu("cpu", cores=2, active_w=0.5, op_overhead_ns=0)))
        listed = c.defaulted_fields()
        assert "units[cpu].cores" not in listed and "units[cpu].active_w" not in listed
        assert "units[cpu].op_overhead_ns" not in listed  # set to the default's value: still chosen
        assert "units[cpu].idle_w" in listed
        assert not any(f.endswith((".kind", ".domain", ".name", ".split_overhead_ns")) for f in listed)
        assert not any(f.endswith((".weight_stream_gbps", ".mem_bandwidth_gbps")) for f in listed)  # None

    def test_a_calibrated_overhead_counts_as_set(self, tmp_path: Path) -> None:
        (tmp_path / "cal.yaml").write_text("chip: mine\nunits: {cpu: {op_overhead_ns: 900}}\n")
        (tmp_path / "chip.yaml").write_text(yaml.safe_dump(chip(cpu("cpu"), calibration="cal.yaml")))
        assert "units[cpu].op_overhead_ns" not in load_chip(tmp_path / "chip.yaml").defaulted_fields()

    def test_what_the_bundled_chips_leave_to_defaults(self) -> None:
        """Pinned, so that a bundled chip that stops setting a number shows up here."""
        assert {name: load_chip(name).defaulted_fields() for name in bundled_chips()} == {
            "edge8": ("units[npu].dataflow",),
            "jetson_orin_nano": ("units[gpu].cores",),
            "rk3588": ("units[gpu].cores", "units[gpu].threads_per_cu", "units[gpu].max_ctas_per_cu",
                       "units[gpu].shared_mem_bytes_per_cycle", "units[npu].dataflow"),
        }  # fmt: skip


_JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(
    where=st.sampled_from(["top", "dram", "unit0", "unit1", "domain", "link"]),
    key=st.sampled_from(["name", "domain", "kind", "src", "dst", "units", "domains", "links", "dram",
                         "host_domain", "affinity", "default_affinity", "bandwidth_gbps", "clock_mhz",
                         "latency_ns", "bidirectional", "derived"]),
    value=_JUNK,
)  # fmt: skip
def test_any_broken_file_is_a_chip_error_naming_each_problem(where: str, key: str, value: object) -> None:
    """Derivation and the layout checks read raw data: whatever it holds, the answer is a
    ChipError (never a crash), one line per problem."""
    data = chip(cpu("cpu"), npu("npu", domain="tcm"),
                domains=[{"name": "tcm", "kind": "sram", "bandwidth_gbps": 50}],
                links=[{"src": "cpu", "dst": "tcm", "bandwidth_gbps": 5, "latency_ns": 0}])  # fmt: skip
    holder = {"top": data, "dram": data["dram"], "unit0": data["units"][0], "unit1": data["units"][1],
              "domain": data["domains"][0], "link": data["links"][0]}[where]  # fmt: skip
    holder[key] = value
    try:
        chip_from_dict(data, source="f.yaml")
    except ChipError as exc:
        message = str(exc)
        assert message.startswith("f.yaml: ") and exc.problems
        assert message.count("\n") == (len(exc.problems) if len(exc.problems) > 1 else 0)
