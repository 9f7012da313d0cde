"""Tests for ``hwsim.report.html`` and the report.html that ``hwsim run`` writes.

The hostile run names a node, an op type, tensors, the model, the chip, its description, a
unit and a domain with HTML; the page is parsed with :mod:`html.parser` to prove no injected
element exists and the names appear as text.
"""

from __future__ import annotations

import base64
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from chips import load_chip
from chips.schema import chip_from_dict
from graph_ir import from_model_proto
from graph_ir.synthetic import random_dag
from hwsim.cli import main
from hwsim.pipeline import RunResult, run_graph
from hwsim.report.files import FIGURES, REPORTS
from hwsim.report.html import SECTIONS, SHOWN_SUMMARY_KEYS, TOP_N, Figure, html_report
from hwsim.report.summary import DeadlineSummary, build_summary
from tests.helpers import ROOT

RESNET = ROOT / "examples" / "models" / "resnet18.onnx"

EVIL_NODE = "<script>alert(1)</script>"
EVIL_OP = "<i>Evil</i>"
EVIL_TENSOR = "<img src=x onerror=alert(2)>"
EVIL_CHIP = "<iframe src=//evil.example>"
EVIL_UNIT = "cpu<script>"
EVIL_DOMAIN = "npu<b onclick=alert(4)>"
EVIL_MODEL = "m</title><style>"
#: Every element the page may contain; anything else was injected.
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "br", "code",
    "table", "tr", "th", "td", "div", "span", "figure", "img", "figcaption", "ul", "li",
}  # fmt: skip


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    p.close()
    return p


def _rename_domain(data: dict, old: str, new: str) -> None:
    for d in data["domains"]:
        if d["name"] == old:
            d["name"] = new
    for u in data["units"]:
        if u["domain"] == old:
            u["domain"] = new
    for link in data["links"]:
        link["src"] = new if link["src"] == old else link["src"]
        link["dst"] = new if link["dst"] == old else link["dst"]
    if data.get("host_domain") == old:
        data["host_domain"] = new


@pytest.fixture(scope="module")
def evil() -> RunResult:
    x = helper.make_tensor_value_info(f"x{EVIL_NODE}", TensorProto.FLOAT, [1, 8, 16, 16])
    y = helper.make_tensor_value_info(EVIL_TENSOR, TensorProto.FLOAT, [1, 8, 16, 16])
    nodes = [
        helper.make_node("Relu", [f"x{EVIL_NODE}"], ["r<b>"], name=EVIL_NODE),
        helper.make_node(EVIL_OP, ["r<b>"], [EVIL_TENSOR], name="n<a href=http://x>"),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, EVIL_MODEL, [x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    data = load_chip("rk3588").model_dump()
    data["name"], data["description"] = EVIL_CHIP, "<svg onload=alert(3)>"
    for u in data["units"]:
        if u["name"] == "cpu_big":
            u["name"] = EVIL_UNIT
    _rename_domain(data, "npu", EVIL_DOMAIN)
    return run_graph(from_model_proto(model, name=EVIL_MODEL), chip_from_dict(data))


def test_hostile_names_appear_as_text_only(evil: RunResult) -> None:
    assert evil.graph.unknown_ops == (EVIL_OP,)
    assert {r.unit for r in evil.trace.ops} == {EVIL_UNIT}
    page = html_report(evil, build_summary(evil))
    parsed = _parse(page)
    tags = [t for t, _ in parsed.tags]
    assert set(tags) <= ALLOWED_TAGS, set(tags) - ALLOWED_TAGS
    assert tags.count("style") == 1 and tags.count("title") == 1
    for _, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on") or a in ("href", "srcdoc")], attrs
    text = "".join(parsed.text)
    for name in (
        EVIL_NODE,
        EVIL_OP,
        EVIL_TENSOR,
        EVIL_CHIP,
        EVIL_UNIT,
        EVIL_DOMAIN,
        EVIL_MODEL,
        "<svg onload",
    ):
        assert name in text, name
    assert "<script" not in page.lower()  # not even escaped-looking raw tags slip through


def test_page_is_self_contained_and_embeds_the_pngs(evil: RunResult, tmp_path: Path) -> None:
    from hwsim.report import plots

    images = {"heatmap.png": plots.heatmap_png(evil), "gantt.png": plots.gantt_png(evil)}
    figures = [Figure(f.name, f.caption, f.section, images.get(f.name)) for f in REPORTS if f.figure]
    page = html_report(evil, build_summary(evil), figures)
    imgs = [a for t, a in _parse(page).tags if t == "img"]
    assert len(imgs) == 2
    got = sorted(
        base64.b64decode(str(a["src"]).removeprefix("data:image/png;base64,")) for a in imgs
    )
    assert got == sorted(images.values())
    assert [a["alt"] for a in imgs] == [f.caption for f in REPORTS if f.name in images]
    for _, attrs in _parse(page).tags:  # nothing is fetched from elsewhere
        assert "href" not in attrs and str(attrs.get("src", "data:image/png;base64,")).startswith(
            "data:image/png;base64,"
        )
    assert "bandwidth.png was not drawn" in page  # the missing figures say so
    with pytest.raises(ValueError, match="not a PNG"):
        html_report(evil, build_summary(evil), [Figure("heatmap.png", "", "units", b"GIF89a")])


def test_sections_show_the_run(evil: RunResult) -> None:
    text = "".join(_parse(html_report(evil, build_summary(evil))).text)
    for heading in ("Summary", "Warnings", "Units", "Schedule and critical path",
                    "Traffic between memory domains", "Top ops", "Scheduler decisions"):  # fmt: skip
        assert heading in text
    assert f"{evil.analysis.latency_ms:.3f} ms" in text
    assert "without a cost formula" in text
    for p in evil.schedule.placements.values():
        assert p.reason and p.reason in text


def _more_fields(page: str) -> list[str]:
    """The field names in the page's "more" table."""
    if "More (other summary.json fields)" not in page:
        return []
    table = page[page.index("More (other summary.json fields)") :]
    return re.findall(r"<tr><td>([^<]*)</td>", table)


def test_summary_fields_no_section_shows_go_to_the_more_table(evil: RunResult) -> None:
    late = DeadlineSummary("<u>out</u>", "n", 0.5, 0.75, -0.25, False)
    s = replace(build_summary(evil), deadlines=(late,))
    page = html_report(evil, s)
    more = _more_fields(page)
    assert more == sorted(k for k in s.to_json() if k not in SHOWN_SUMMARY_KEYS)
    assert {"deadlines", "deadline_missed", "policy_check", "fused_ops", "contention"} <= set(more)
    text = "".join(_parse(page).text)
    assert '"<u>out</u>"' in text and "-0.25" in text  # escaped, as text
    bare = replace(s, stream=None, policy_check=(), policy_check_winner=None, deadlines=())
    # contention is in the summary table too; "more" keeps its full object (the most stretched ops)
    assert _more_fields(html_report(evil, bare)) == ["contention", "fused_ops", "split_ops", "tiled_ops"]


def test_every_shown_key_is_a_summary_key_and_sections_are_unique(evil: RunResult) -> None:
    keys = set(build_summary(evil).to_json())
    assert SHOWN_SUMMARY_KEYS <= keys, SHOWN_SUMMARY_KEYS - keys
    assert len({s.key for s in SECTIONS}) == len(SECTIONS)
    assert {f.section for f in REPORTS if f.figure} <= {s.key for s in SECTIONS}


def test_a_figure_of_an_unknown_section_gets_its_own(evil: RunResult) -> None:
    from hwsim.report import plots

    png = plots.traffic_png(evil)
    page = html_report(evil, build_summary(evil), [Figure("extra.png", "An extra figure", "elsewhere", png)])
    text = "".join(_parse(page).text)
    assert text.index("extra.png") > text.index("Scheduler decisions")
    assert "An extra figure" in text


def test_tables_are_capped_so_big_graphs_stay_small() -> None:
    chip = load_chip("rk3588")
    small = run_graph(random_dag(120, seed=3), chip)
    big = run_graph(random_dag(2400, seed=3), chip)
    pages = {n: html_report(r, build_summary(r)) for n, r in (("small", small), ("big", big))}
    for page in pages.values():
        for table in re.findall(r"<table>.*?</table>", page, flags=re.DOTALL):
            assert table.count("<tr>") <= TOP_N + 1
    assert f"Showing the first {TOP_N} of 2400 ops" in pages["big"]
    assert len(pages["big"]) < 1.5 * len(pages["small"]) < 300_000


def test_run_writes_report_html_with_every_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    assert main(["run", "rk3588", str(RESNET), "--out", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    imgs = [a for t, a in _parse(page).tags if t == "img"]
    assert len(imgs) == len(FIGURES)
    for name, a in zip(FIGURES, imgs):
        assert base64.b64decode(str(a["src"]).split(",", 1)[1]) == (out / name).read_bytes()
    # --no-plots still writes the page, without figures; the folder may be reused
    assert main(["run", "rk3588", str(RESNET), "--out", str(out), "--no-plots"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<img" not in page and "was not drawn" in page and "resnet18" in page
