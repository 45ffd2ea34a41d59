"""pages.py: the write-ups rendered to HTML and PDF, opened in headless Chromium.

Every page is loaded in a frame of the window's width by one page of the test's (one Chromium
for all), whose script reports, once each has loaded, which images did not load and whether
anything is wider than the frame; the DOM Chromium dumps carries the report. Links are checked
against the files themselves. Each PDF's pages become PNGs (pdftoppm), and its text (pdftotext)
must hold the lab's title and its code.
Screenshots and page images are kept under KIT_PAGES_OUT when it is set (CI keeps them).
Skipped, with the reason, where Chromium or poppler-utils is not installed.
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from grader.errors import GraderError
from grader.rubric import find_kit_root, load_kit
from grader.staff.pages import chromium_command, find_chromium, kit_pages, render_pages

pytest.importorskip("markdown", reason="Python-Markdown is not installed (make setup-dev installs it)")

KIT = load_kit(find_kit_root())
WIDTHS = (1280, 700)  # a laptop's window and a narrow one: nothing may be wider than either

# One Chromium for every page at one width: each page in a frame of that width (a frame is a
# window of its own: its media queries and its width are the frame's), and once each has loaded,
# which images did not load and whether anything is wider than the frame. A Chromium start a
# page cost the two-core machine's make test about 20 s more.
CHECKER = """
<pre id="kit-check"></pre>
<script>
const pages = PAGES, width = WIDTH, reports = {};
let left = pages.length;
for (const name of pages) {
  const frame = document.createElement("iframe");
  frame.style = `width:${width}px;height:900px;border:0;display:block`;
  frame.onload = () => {
    const d = frame.contentDocument, client = d.documentElement.clientWidth;
    const broken = [...d.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src);
    const wide = [...d.querySelectorAll("main *")]
      .filter(e => e.getBoundingClientRect().right > client + 1)
      .map(e => e.tagName + ": " + (e.textContent || "").slice(0, 60));
    reports[name] = {broken, wide: wide.slice(0, 5), scroll: d.documentElement.scrollWidth, client,
                     images: d.images.length};
    if (--left === 0) document.getElementById("kit-check").textContent = JSON.stringify(reports);
  };
  frame.src = name;
  document.body.appendChild(frame);
}
</script>
"""


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("href", "src") and value:
                self.links.append(value)
            if key == "id" and value:
                self.ids.add(value)


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory):
    """The pages without their PDFs: the tests that read only the HTML do not wait for
    Chromium to print six PDFs, which each pytest-xdist process that runs one of them would
    do again (a module's fixture is made once per process)."""
    out = tmp_path_factory.mktemp("kit") / "pages"  # pages/ in a kit-shaped folder
    return out, render_pages(KIT, out, pdf=False)


def _kept(name: str) -> Path | None:
    folder = os.environ.get("KIT_PAGES_OUT")
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) / name


def test_every_write_up_has_a_page_and_every_link_between_pages_resolves(rendered):
    out, result = rendered
    names = {path.name for path in result.html}
    assert names == {"index.html"} | {page.name for page in kit_pages(KIT)}
    parsed = {path.name: _parse(path) for path in result.html}
    for name, page in parsed.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = name if not parts.path else parts.path
            if target.startswith("../"):  # a file of the kit, from the kit's pages/ folder
                assert (KIT.root / target[3:]).exists(), f"{name}: {link} names no file of the kit"
                continue
            assert (out / target).exists(), f"{name}: {link} names no page"
            if parts.fragment and target.endswith(".html"):
                assert parts.fragment in parsed[target].ids, f"{name}: {link} names no heading"
    # Each lab's page has its table of contents and highlighted code.
    lab_page = (out / f"{KIT.labs[1].slug}.html").read_text(encoding="utf-8")
    assert 'class="toc"' in lab_page and 'class="codehilite"' in lab_page


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_loads_its_images_and_fits_the_window_in_chromium(rendered, width, tmp_path):
    browser = find_chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    out, result = rendered
    names = [page.name for page in result.html]
    checker = out / f"check-{width}.html"
    script = CHECKER.replace("PAGES", json.dumps(names)).replace("WIDTH", str(width))
    checker.write_text(f"<!doctype html><html><body>{script}</body></html>", "utf-8")
    command = chromium_command(
        browser, f"--window-size={width + 100},1000", "--virtual-time-budget=10000", "--dump-dom"
    )
    dumped = subprocess.run(
        [*command, checker.as_uri()], capture_output=True, text=True, timeout=180, check=False
    ).stdout
    checker.unlink()
    start = dumped.find('<pre id="kit-check">')
    assert start >= 0, "the pages' check did not run in Chromium"
    reports = json.loads(html.unescape(dumped[start + 20 : dumped.index("</pre>", start)]) or "{}")
    assert sorted(reports) == sorted(names), f"pages that did not load: {sorted(set(names) - set(reports))}"
    for name, report in reports.items():
        assert report["broken"] == [], f"{name}: images that did not load: {report['broken']}"
        assert report["scroll"] <= report["client"], f"{name} at {width} px is wider: {report['wide']}"
    assert sum(report["images"] for report in reports.values()) >= 1, (
        "no page showed an image, so none was checked (lab 02 has its roofline)"
    )
    for page in result.html:  # screenshots for the staff, where they are kept
        kept = _kept(f"{page.stem}-{width}.png")
        if kept is not None:
            shot = chromium_command(browser, f"--window-size={width},1400", f"--screenshot={kept}")
            subprocess.run([*shot, page.as_uri()], capture_output=True, timeout=120, check=False)
            assert kept.is_file() and kept.stat().st_size > 10_000


def test_every_lab_has_a_pdf_whose_pages_show_its_title_and_its_code(tmp_path_factory, tmp_path):
    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    if shutil.which("pdftoppm") is None or shutil.which("pdftotext") is None:
        pytest.skip("poppler-utils is not installed (apt-get install poppler-utils)")
    out = tmp_path_factory.mktemp("kit") / "pages"
    result = render_pages(KIT, out, pdf=True)
    assert len(result.pdf) == len(KIT.labs)
    index = _parse(out / "index.html")
    pdf_links = [link for link in index.links if link.endswith(".pdf")]
    assert sorted(pdf_links) == sorted(pdf.name for pdf in result.pdf), "the index links each lab's PDF"
    for lab, pdf in zip(KIT.labs, sorted(result.pdf), strict=True):
        images = tmp_path / lab.slug
        images.mkdir()
        subprocess.run(
            ["pdftoppm", "-png", "-r", "40", str(pdf), str(images / "page")], check=True, timeout=120
        )
        pngs = sorted(images.glob("page-*.png"))
        assert len(pngs) >= 2, f"{pdf.name}: {len(pngs)} page(s)"
        assert all(png.stat().st_size > 2_000 for png in pngs), f"{pdf.name}: a blank page"
        text = subprocess.run(
            ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
        ).stdout
        assert f"Lab {lab.id}" in text.split("\n\n")[0] + text[:400], (
            f"{pdf.name} does not open with its title"
        )
        assert lab.title.split(":")[0] in text, f"{pdf.name} lacks its title {lab.title!r}"
        assert "__global__" in text or "cudaMalloc" in text or "occupancy" in text, (
            f"{pdf.name} shows no code"
        )
        kept = _kept(f"{lab.slug}-pdf-page-1.png")
        if kept is not None:
            shutil.copy2(pngs[0], kept)


def test_a_write_ups_images_are_copied_and_its_links_lead_to_pages_or_kit_files(tmp_path):
    # The kit's write-ups have no figures yet: this one shows how one is carried to the pages.
    import markdown

    from grader.staff.pages import Page, _relink

    root = tmp_path / "kit"
    lab = root / "labs" / "01_a"
    lab.mkdir(parents=True)
    (lab / "tiles.png").write_bytes(b"\x89PNG not really")
    (lab / "a.cu").write_text("// the skeleton")
    other = Page(Path("labs/02_b/README.md"), "02_b.html", "Lab 02")
    page = Page(Path("labs/01_a/README.md"), "01_a.html", "Lab 01")
    body = markdown.markdown(
        "![tiles](tiles.png) [next](../02_b/README.md#1-goals) [skeleton](a.cu) [up](#top)"
    )
    out = tmp_path / "pages"
    relinked = _relink(body, page, {page.source: page, other.source: other}, root, out)
    assert 'src="files/labs/01_a/tiles.png"' in relinked and (out / "files/labs/01_a/tiles.png").is_file()
    assert 'href="02_b.html#1-goals"' in relinked
    assert 'href="../labs/01_a/a.cu"' in relinked and 'href="#top"' in relinked
    with pytest.raises(GraderError, match="does not exist"):
        _relink(markdown.markdown("[gone](missing.md)"), page, {}, root, out)


def test_pages_rendered_without_pdfs_link_to_none(tmp_path):
    """Where no PDF is printed (no Chromium, or pdf=False), the index links none."""
    out = tmp_path / "kit" / "pages"
    result = render_pages(KIT, out, pdf=False)
    assert result.pdf == []
    index = (out / "index.html").read_text(encoding="utf-8")
    assert ".pdf" not in index
    assert all(page.name in index for page in kit_pages(KIT)[1:])
