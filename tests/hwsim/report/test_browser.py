"""report.html in a real browser: headless Chromium (Debian's ``chromium`` package).

The page has no script, so the check runs from a wrapper page in ``tmp_path`` that loads the
untouched report in an iframe and writes what it finds (every image's natural size, the section
headings) into its own DOM as JSON; ``chromium --dump-dom`` prints that DOM. A screenshot of the
report proves the browser paints it (not a blank page).

Skipped when ``chromium`` is not installed; ``.ci/run`` installs it, so CI runs it.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hwsim.cli import main
from hwsim.report.files import REPORTS
from hwsim.report.html import SECTIONS
from tests.helpers import ROOT

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian package 'chromium'; .ci/run installs it)"
)

#: Loads ``report.html`` in an iframe and writes what the browser made of it into ``#result``.
WRAPPER = """<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body>
<pre id="result">pending</pre>
<iframe id="report" src="REPORT" style="width:1400px;height:3000px"></iframe>
<script>
document.getElementById("report").addEventListener("load", function () {
  var out;
  try {
    var d = this.contentDocument;
    out = {
      title: d.title,
      images: Array.prototype.map.call(d.images, function (i) {
        return {alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight};
      }),
      headings: Array.prototype.map.call(d.querySelectorAll("h1, h2"), function (h) {
        return h.tagName + ":" + h.textContent;
      }),
      tables: d.querySelectorAll("table").length
    };
  } catch (e) {
    out = {error: String(e)};
  }
  document.getElementById("result").textContent = JSON.stringify(out);
});
</script>
</body></html>
"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _browser_view(tmp_path: Path, report: Path) -> dict[str, Any]:
    """What the browser made of ``report``, read back from the wrapper page's DOM."""
    wrapper = tmp_path / "wrapper.html"
    wrapper.write_text(WRAPPER.replace("REPORT", report.relative_to(tmp_path).as_posix()), encoding="utf-8")
    done = _chromium(tmp_path, "--allow-file-access-from-files", "--dump-dom", wrapper.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, flags=re.DOTALL)
    assert found is not None, done.stdout[-2000:]
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    view: dict[str, Any] = json.loads(text)
    assert "error" not in view, view
    return view


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "r"
    assert main(["run", "rk3588", str(ROOT / "examples" / "models" / "resnet18.onnx"), "--out", str(out)]) == 0
    return out / "report.html"


def test_every_figure_loads_and_every_section_shows(report: Path) -> None:
    view = _browser_view(report.parent.parent, report)
    assert view["title"] == "hwsim: resnet18 on rk3588"
    figures = [f for f in REPORTS if f.figure]
    assert [i["alt"] for i in view["images"]] == [f.caption for f in figures]
    for image, f in zip(view["images"], figures):
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, (f.name, image)
        with (report.parent / f.name).open("rb") as png:  # the size the browser decoded is the file's
            assert (image["width"], image["height"]) == struct.unpack(">II", png.read(24)[16:24])
    headings = view["headings"]
    assert headings[0] == "H1:hwsim: resnet18 on rk3588"
    assert headings[1:] == [f"H2:{s.title}" for s in SECTIONS if s.title]
    assert view["tables"] >= 8


def test_page_paints(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = _chromium(tmp_path, "--window-size=1400,2400", f"--screenshot={shot}", report.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(str(shot))
    assert pixels.shape[:2] == (2400, 1400)
    rgb = pixels[..., :3]
    dark = (rgb.sum(axis=2) < 1.5).mean()  # text, bars, figures
    assert 0.01 < dark < 0.9, dark
    assert (rgb.std(axis=(0, 1)) > 0.01).all()  # colours, not a flat page
