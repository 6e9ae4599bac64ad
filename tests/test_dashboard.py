"""`matrix --format html`: the dashboard, rendered in a real headless browser.

The page is opened by Debian's `chromium` (`--dump-dom` gives the document
after rendering, `--screenshot` a picture of it) and what is on it is read
back: totals, a cell's state, a link built from `--link-template`, and that
text from the tree arrives as text, never as markup.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from kernel_ports.cli import main
from kernel_ports.commands.coverage import Item, KernelRow
from kernel_ports.commands.dashboard import render_dashboard
from kernel_ports.findings import Finding
from tests.mutate import Mutation, engine_copy

CHROMIUM = next((c for c in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
                 if c and shutil.os.path.exists(c)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed "
                                                             "(apt-get install chromium)")
TEMPLATE = "https://github.com/example/engine/blob/main/{path}#L{line}"


class Dom(HTMLParser):
    """Elements as (tag, attrs, text inside), from a rendered document."""

    def __init__(self):
        super().__init__()
        self.elements, self.stack = [], []

    def handle_starttag(self, tag, attrs):
        el = [tag, dict(attrs), ""]
        self.elements.append(el)
        if tag not in ("meta", "br", "link", "img", "input"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el[2] += data

    def find(self, tag=None, **attrs):
        return [e for e in self.elements if (tag is None or e[0] == tag)
                and all(e[1].get(k.replace("_", "-")) == v for k, v in attrs.items())]


def rendered(path) -> Dom:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.resolve().as_uri()]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    dom = Dom()
    dom.feed(result.stdout)
    return dom


@pytest.fixture(scope="module")
def page(tmp_path_factory, cli_cache_home):
    """The dashboard of a sample-engine copy whose registry disagrees about gumbel's CUDA port."""
    tmp = tmp_path_factory.mktemp("dashboard")
    copy = engine_copy(tmp, Mutation("registry.yaml", "      cuda: get_gumbel_kernel_cuda\n", "      cuda: null\n"))
    out = tmp / "coverage.html"
    code = main(["matrix", "--format", "html", "--link-template", TEMPLATE, "--output", str(out),
                 "--registry", str(copy.registry_path), "--root", str(copy.root)])
    assert code == 0
    return out


def test_page_is_self_contained(page):
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "http://" not in text
    assert "https://" not in text.replace("https://github.com/example/engine/blob/main/", "")  # only the template's links
    assert "<style>" in text and ".state-differs { background: var(--differs-bg)" in text


@needs_chromium
def test_browser_shows_totals_states_and_links(page):
    dom = rendered(page)
    totals = {e[1]["data-backend"]: " ".join(e[2].split()) for e in dom.find("div", **{"class": "total"})}
    assert totals["rocm"].startswith("ROCm 4 of 8") and "any-wave: 2 of 4" in totals["rocm"]
    assert totals["cuda"].startswith("CUDA 7 of 8") and "registry differs: 1" in totals["cuda"]
    row = next(e for e in dom.elements if e[1].get("id") == "row-gumbel")
    at = dom.elements.index(row)
    cells = [e for e in dom.elements[at:at + 20] if e[0] == "td" and "data-backend" in e[1]][:3]
    assert [(c[1]["data-backend"], c[1]["data-state"]) for c in cells] == [("metal", "port"), ("cuda", "differs"), ("rocm", "none")]
    assert "state-differs" in cells[1][1]["class"].split() and "registry differs" in cells[1][2]
    hrefs = {e[1].get("href") for e in dom.find("a")}
    sampling = next(e for e in dom.find("a") if " ".join(e[2].split()).startswith("src/lib/mlx-cpp/turbo/sampling.cpp:"))
    line = sampling[2].strip().rsplit(":", 1)[1]
    assert f"https://github.com/example/engine/blob/main/src/lib/mlx-cpp/turbo/sampling.cpp#L{line}" in hrefs
    section = next(e for e in dom.elements if e[1].get("id") == "k-gumbel")
    assert "table slot .rocm" in section[2] and "next: src/lib/mlx-cpp/turbo/sampling.cpp:" in section[2]
    assert "[KP303]" in section[2]  # the finding the registry disagreement raises


@needs_chromium
def test_browser_screenshot(page, tmp_path):
    shot = tmp_path / "page.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
           f"--screenshot={shot}", page.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 1280 and int.from_bytes(data[20:24], "big") == 900
    assert len(data) > 20_000  # a rendered page, not a blank one


@needs_chromium
def test_text_from_the_tree_is_escaped(tmp_path):
    evil = '<img src=x onerror="alert(1)">'
    row = KernelRow(kernel=evil, table="t_ports", file='src/a"b.cpp', ports={"metal": evil, "cuda": None, "rocm": None},
                    registry_ports={"metal": evil, "cuda": None, "rocm": None}, rocm_any_wave_size=False,
                    predicates=(evil,), dispatch_sites=(f"src/x.cpp:3 {evil} -> y",), in_code=True, in_registry=True,
                    line=7, slot_lines={"metal": 9})
    items = [Item("table slot .rocm", False, evil, "src/x.cpp:4", evil)]
    finding = Finding("KP101", 'src/a"b.cpp', 5, 1, evil, kernel=evil, severity="error")
    page = tmp_path / "evil.html"
    page.write_text(render_dashboard([row], {evil: items}, [finding], {"root_uri": "file:///r/"}, TEMPLATE), encoding="utf-8")
    dom = rendered(page)
    assert not dom.find("img")
    assert evil in " ".join(e[2] for e in dom.find("section"))
    assert "https://github.com/example/engine/blob/main/src/a%22b.cpp#L7" in {e[1].get("href") for e in dom.find("a")}


def test_link_template_needs_html_and_a_path(capsys):
    assert main(["matrix", "--format", "json", "--link-template", TEMPLATE]) == 2
    assert main(["matrix", "--format", "html", "--link-template", "https://example.com/"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "--link-template needs --format html" in err
