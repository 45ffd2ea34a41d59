"""The write-ups as pages: every lab's README.md, docs/students.md and an index, rendered to
HTML (Python-Markdown with its table-of-contents, tables and fenced-code extensions, code
highlighted by Pygments) and, where Chromium is installed, to one PDF per lab printed by the
browser from the same HTML. `make release` writes them (grader/staff/release.py); the tests open them
in headless Chromium (grader/tests/test_pages.py).

Links between write-ups (`../02_naive_matmul/README.md#3-...`) become links between pages; a
link to any other file of the kit points at that file in the unpacked kit (the pages sit in its
`pages/` folder); images a write-up shows are copied beside the pages.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import GraderError
from ..rubric import Kit

PAGES_FOLDER = "pages"  # where the pages sit in a student kit, beside labs/ and docs/
PDF_TIMEOUT = 120.0  # seconds for Chromium to print one page


@dataclass(frozen=True)
class Page:
    source: Path  # the Markdown, relative to the kit's root
    name: str  # the HTML file's name
    title: str


@dataclass(frozen=True)
class Rendered:
    html: list[Path]
    pdf: list[Path]
    note: str = ""  # what was not made, and why


def kit_pages(kit: Kit) -> list[Page]:
    """The index's entries, in order: the students' guide, then every lab's write-up."""
    pages = [Page(Path("docs/students.md"), "students.html", "Students: doing a lab and checking it")]
    for lab in kit.labs:
        pages.append(
            Page(Path("labs") / lab.slug / "README.md", f"{lab.slug}.html", f"Lab {lab.id}: {lab.title}")
        )
    return pages


def render_pages(kit: Kit, out: Path, pdf: bool = True) -> Rendered:
    """Writes index.html, one HTML page per write-up and its stylesheet into `out`, and with
    `pdf` one PDF per lab (where Chromium is found; otherwise the note says so)."""
    try:
        import markdown
        from pygments.formatters import HtmlFormatter
    except ImportError:
        raise GraderError(
            "rendering the write-ups needs Python-Markdown and Pygments: run make setup-dev, or "
            "pip install markdown pygments"
        ) from None
    out.mkdir(parents=True, exist_ok=True)
    pages = kit_pages(kit)
    by_source = {page.source: page for page in pages}
    (out / "style.css").write_text(
        STYLE + HtmlFormatter(style="friendly").get_style_defs(".codehilite"), "utf-8"
    )
    written: list[Path] = []
    for page in pages:
        text = (kit.root / page.source).read_text(encoding="utf-8")
        converter = markdown.Markdown(
            extensions=["toc", "tables", "fenced_code", "codehilite"],
            extension_configs={
                "toc": {"toc_depth": "2-3"},
                "codehilite": {"guess_lang": False, "css_class": "codehilite"},
            },
        )
        body = converter.convert(text)
        body = _relink(body, page, by_source, kit.root, out)
        toc = getattr(converter, "toc", "")
        target = out / page.name
        target.write_text(_document(page.title, body, toc, pages), encoding="utf-8")
        written.append(target)
    # The index links a lab's PDF only where one is printed: without Chromium, HTML alone.
    browser = find_chromium() if pdf else None
    (out / "index.html").write_text(_index(kit, pages, with_pdfs=browser is not None), encoding="utf-8")
    written.insert(0, out / "index.html")
    if not pdf:
        return Rendered(written, [])
    if browser is None:
        return Rendered(written, [], "no PDFs: Chromium is not installed (apt-get install chromium)")
    pdfs = [
        print_pdf(browser, out / page.name, out / page.name.replace(".html", ".pdf")) for page in pages[1:]
    ]
    return Rendered(written, pdfs)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_command(browser: str, *flags: str) -> list[str]:
    """Headless Chromium as the kit runs it: no GPU, no sandbox of its own (root in CI cannot
    use it), no first-run work, a profile of its own each time."""
    return [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--allow-file-access-from-files",
        *flags,
    ]


def print_pdf(browser: str, page: Path, target: Path) -> Path:
    command = chromium_command(
        browser, "--no-pdf-header-footer", f"--print-to-pdf={target}", page.resolve().as_uri()
    )
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PDF_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise GraderError(f"Chromium did not print {page.name} to PDF within {PDF_TIMEOUT:.0f} s") from None
    if done.returncode != 0 or not target.is_file():
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise GraderError(f"Chromium could not print {page.name} to PDF: {last[0]}")
    return target


LINK = re.compile(r'(?P<attr>href|src)="(?P<target>[^"#:]*)(?P<fragment>#[^"]*)?"')


def _relink(body: str, page: Page, by_source: dict[Path, Page], root: Path, out: Path) -> str:
    """Links to write-ups become links to their pages; other kit files are reached from the
    pages' folder in the unpacked kit; images are copied beside the pages."""
    base = (root / page.source).parent

    def replace(match: re.Match[str]) -> str:
        target, fragment = match["target"], match["fragment"] or ""
        if not target:  # a link inside the page
            return match[0]
        resolved = (base / html.unescape(target)).resolve()
        try:
            relative = resolved.relative_to(root.resolve())
        except ValueError:
            raise GraderError(f"{page.source}: the link {target} points outside the kit") from None
        if relative in by_source:
            return f'{match["attr"]}="{by_source[relative].name}{fragment}"'
        if not resolved.exists():
            raise GraderError(f"{page.source}: the link {target} names {relative}, which does not exist")
        if match["attr"] == "src":  # an image: beside the pages, under its kit path
            copy = out / "files" / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(resolved, copy)
            return f'src="files/{relative.as_posix()}"'
        return f'{match["attr"]}="../{relative.as_posix()}{fragment}"'

    return LINK.sub(replace, body)


def _nav(pages: list[Page]) -> str:
    items = "".join(f'<li><a href="{page.name}">{html.escape(page.title)}</a></li>' for page in pages)
    return f'<nav class="pages"><a href="index.html">Contents</a><ul>{items}</ul></nav>'


def _document(title: str, body: str, toc: str, pages: list[Page]) -> str:
    contents = f'<details class="toc" open><summary>On this page</summary>{toc}</details>' if toc else ""
    # The contents follow the title, so a page (and its PDF) opens with what it is.
    head, found, rest = body.partition("</h1>")
    body = head + found + contents + rest if found else contents + body
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="style.css"></head>\n'
        f"<body>{_nav(pages)}<main>{body}</main></body></html>\n"
    )


def _index(kit: Kit, pages: list[Page], with_pdfs: bool) -> str:
    rows = "".join(
        f'<li><a href="{page.name}">{html.escape(page.title)}</a>'
        + (
            f' (<a href="{page.name.replace(".html", ".pdf")}">PDF</a>)'
            if with_pdfs and page.source.name == "README.md"
            else ""
        )
        + "</li>"
        for page in pages
    )
    body = (
        "<h1>Memory architecture and data locality: the labs</h1>"
        "<p>Labs on CUDA's memory types, tiling, boundary checks, dynamic shared memory and "
        "occupancy. Start with the students' guide; each lab's page is its write-up.</p>"
        f"<ul>{rows}</ul>"
    )
    return _document("The labs", body, "", pages)


STYLE = """
body { margin: 0; font: 16px/1.55 system-ui, sans-serif; color: #1d1d1f; }
nav.pages { background: #f2f4f7; padding: 0.5em 1.5em; font-size: 0.9em; }
nav.pages ul { display: inline; padding: 0; margin: 0 0 0 1em; }
nav.pages li { display: inline; margin-right: 1em; }
main { max-width: 50em; margin: 0 auto; padding: 1em 1.5em 4em; }
pre, code { font: 0.9em/1.4 ui-monospace, monospace; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; white-space: pre-wrap;
      overflow-wrap: anywhere; border-radius: 4px; }
p code, li code { overflow-wrap: break-word; }
td code { white-space: nowrap; }
table { border-collapse: collapse; margin: 1em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d7de; padding: 0.3em 0.6em; vertical-align: top; }
img { max-width: 100%; }
details.toc { background: #f6f8fa; padding: 0.5em 1em; border-radius: 4px; }
@media print { nav.pages, details.toc summary { display: none; } pre { break-inside: avoid; } }
"""
