"""feedback.html and dashboard.html (grader/pipeline/report_pages.py): what they show, what they never
show, and, where Chromium is installed, how a browser renders them (screenshots kept under
KIT_PAGES_OUT when it is set)."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="Jinja2 is not installed (pip install jinja2)")

from grader.pipeline.collect import Refusal  # noqa: E402
from grader.pipeline.report_pages import dashboard_html, dashboard_view, feedback_html, heat_map  # noqa: E402
from grader.staff.pages import chromium_command, find_chromium  # noqa: E402
from grader.tests import page_samples as samples  # noqa: E402
from grader.tests.test_pages import _kept  # noqa: E402

TITLES = {"03": "Tiled matrix multiplication", "06": "Occupancy"}


def _text(page: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_a_student_page_shows_every_shown_test_with_its_hints_and_no_hidden_one():
    score = samples.student()
    page = feedback_html(score)
    text = _text(page)
    for lab in score.labs:
        for test in lab.tests:
            if test.visibility == "visible":
                assert test.name in text
            else:
                assert test.name not in text and "secret" not in text
    assert "Fix first: on inputs that say where each term came from" in text
    assert "[2 times, with other numbers]" in text  # the hints as feedback.txt groups them
    assert "Not shown here: 1 test worth 10 points" in text
    assert "21/42 on the tests shown" in text
    assert "notes.txt" in text and "not a file of any lab" in text
    assert page.count("data:image/png;base64,") == 1  # lab 06's chart, embedded
    assert "yours 1.92x" in text  # the speed test's own figure, drawn
    assert "<script" not in page  # a student's page runs nothing
    # The heat map of the failed comparison: 26 x 26 cells wrong, the rest never written.
    cell = 'width="7.50" height="7.50" fill="{}"'  # 240 pixels over 32 cells
    assert page.count(cell.format("#cf222e")) == 26 * 26
    assert page.count(cell.format("#57606a")) == 32 * 32 - 26 * 26
    assert "P is 40 x 40; each cell is a block of about 1.2 x 1.2 elements" in text


def test_a_mask_that_is_not_one_compare_writes_draws_nothing():
    assert heat_map("kit-mask 0x3 0x3 ") is None
    assert heat_map("kit-mask 4x4 2x2 .x.") is None  # three marks for four cells
    assert heat_map("kit-mask 4x4 2x2 .x.u") is not None


def test_a_student_page_shows_the_submissions_text_escaped_never_as_markup():
    score = samples.student()
    test = score.labs[0].tests[0]
    test.hints = ['<script>alert("x")</script>', "line\u202eend"] + test.hints
    test.failure_hints += 2
    score.refused[0] = Refusal("<img src=x onerror=alert(1)>", "not a file of any lab")
    page = feedback_html(score)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page and "&lt;img src=x" in page
    assert "\u202e" not in page and "\\u202e" in page  # escaped as feedback.txt escapes it


def test_a_lab_not_submitted_is_one_line_and_an_unbuilt_lab_shows_its_compiler_messages():
    page = feedback_html(samples.unbuilt("dave"))
    text = _text(page)
    assert "not submitted: no occupancy.cu" in text
    assert "registers are allocated per warp" not in text  # none of lab 06's tests listed
    assert "lab03 did not compile" in text and 'identifier "Mds" is undefined' in text


def test_the_dashboard_counts_scores_causes_and_passes_per_student():
    scores = samples.small_class()
    view = dashboard_view(scores, TITLES)
    assert view.submissions == 4
    assert view.total is not None and sum(view.total.counts) == 4
    lab03 = view.labs[0]
    assert lab03.histogram is not None and lab03.histogram.counts[-1] == 1  # bob's 38 of 38
    rates = {rate.name: (rate.passed, rate.graded) for rate in lab03.rates}
    assert rates["tiled result matches the host reference for every tile width"] == (1, 4)
    assert [student for student, _, _ in lab03.unbuilt] == ["dave"]
    assert 'identifier "Mds" is undefined' in lab03.unbuilt[0][2]
    # The half-tile cause hit alice and carol (twice each, at two tile widths: counted once).
    assert len(view.causes) == 1 and view.causes[0].students == ["alice", "carol"]
    lab06 = view.labs[1]
    assert {rate.graded for rate in lab06.rates} == {3}  # dave did not submit lab 06
    page = dashboard_html(scores, TITLES, ["one upload left out: an older one"])
    text = _text(page)
    assert 'href="alice/feedback.html"' in page and "one upload left out" in text
    # The instructor sees the hidden tests' pass rates, with the names.
    assert samples.HIDDEN_TEST in text


def test_the_dashboard_spreads_the_classs_speed_figures_in_bands():
    view = dashboard_view(samples.small_class(), TITLES)
    (spread,) = view.labs[0].speed  # lab 03's one speed test; dave's unbuilt lab measured nothing
    assert spread.test == "tiled kernel speed is close to the reference kernel"
    # alice and carol 1.92 (1.5 to 2), bob 1.04 (1 to 1.25).
    assert spread.counts == [0, 1, 0, 2, 0, 0, 0] and spread.median == "1.92"
    assert spread.labels[0] == "< 1" and spread.labels[-1] == ">= 5"
    assert "students per band of time ratio" in _text(dashboard_html(samples.small_class(), TITLES))
    assert view.labs[1].speed == []  # lab 06 has no speed test


def test_the_dashboard_of_an_empty_class_says_so():
    page = dashboard_html([], TITLES)
    assert "0 submissions" in _text(page) and "Nobody graded" in _text(page)


CHECKER = """
<script>
window.addEventListener("load", () => {
  const errors = window.__errors || [];
  const order = () => [...document.querySelectorAll("#students tbody tr td:first-child")].map(c => c.textContent.trim());
  const before = order();
  const total = [...document.querySelectorAll("#students th")].pop();
  if (total) { total.click(); }
  const report = document.createElement("pre");
  report.id = "kit-check";
  report.textContent = JSON.stringify({
    errors, before, after: total ? order() : [],
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
    broken: [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length,
  });
  document.body.appendChild(report);
});
</script>
"""
ERRORS = '<script>window.__errors = []; window.addEventListener("error", e => window.__errors.push(e.message));</script>'


def _render(browser: str, page: Path, width: int) -> dict:
    probe = page.with_name(f"check-{page.name}")
    text = page.read_text(encoding="utf-8").replace("<head>", "<head>" + ERRORS, 1)
    probe.write_text(text.replace("</body>", CHECKER + "</body>"), encoding="utf-8")
    command = chromium_command(
        browser, f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom"
    )
    done = subprocess.run(
        [*command, probe.as_uri()], capture_output=True, text=True, timeout=120, check=False
    )
    probe.unlink()
    start = done.stdout.find('<pre id="kit-check">')
    assert start >= 0, f"{page.name}: the page's check did not run in Chromium: {done.stderr[-500:]}"
    report = json.loads(html.unescape(done.stdout[start + 20 : done.stdout.index("</pre>", start)]))
    report["dom"] = done.stdout
    return report


@pytest.mark.parametrize("width", [390, 1280])  # a phone, a laptop
def test_the_pages_render_in_chromium_without_errors_and_the_students_sort(tmp_path, width):
    browser = find_chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    scores = samples.small_class()
    for score in scores:
        (tmp_path / score.student_id).mkdir()
        (tmp_path / score.student_id / "feedback.html").write_text(feedback_html(score), encoding="utf-8")
    (tmp_path / "dashboard.html").write_text(dashboard_html(scores, TITLES), encoding="utf-8")
    pages = [
        tmp_path / "alice" / "feedback.html",
        tmp_path / "bob" / "feedback.html",
        tmp_path / "dashboard.html",
    ]
    for page in pages:
        report = _render(browser, page, width)
        assert report["errors"] == [], f"{page}: script errors {report['errors']}"
        assert report["broken"] == 0, f"{page}: an image did not load"
        assert report["scroll"] <= report["client"], f"{page} is wider than a {width} px window"
        dom = _text(report["dom"])
        assert str(tmp_path) not in report["dom"]  # no path of the grading machine
        if page.name == "feedback.html":
            score = next(s for s in scores if s.student_id == page.parent.name)
            shown = [t.name for lab in score.labs for t in lab.tests if t.visibility == "visible"]
            assert all(name in dom for name in shown) and samples.HIDDEN_TEST not in dom
        else:
            assert report["before"] == ["alice", "bob", "carol", "dave"]
            # Sorted by the total, lowest first: dave 0, then alice and carol 21, then bob.
            assert report["after"][0] == "dave" and report["after"][-1] == "bob"
        kept = _kept(
            f"{page.parent.name if page.name == 'feedback.html' else 'class'}-{page.stem}-{width}.png"
        )
        if kept is not None:
            shot = chromium_command(
                browser, "--hide-scrollbars", f"--window-size={width},2400", f"--screenshot={kept}"
            )
            subprocess.run([*shot, page.as_uri()], capture_output=True, timeout=120, check=False)
            assert kept.is_file() and kept.stat().st_size > 10_000
