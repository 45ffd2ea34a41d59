"""Stage 6, report, as pages: feedback.html per submission (beside feedback.txt, from the same
data and with the same visibility) and dashboard.html per class (beside summary.txt). Each page is
one self-contained file: inline CSS, charts drawn as inline SVG or embedded PNG, no script but the
dashboard's table sort, so that it opens from a file, an LMS attachment or a phone.

Templates: grader/pipeline/templates/*.html.j2, rendered by Jinja2 with autoescaping on; every text from a
submission also goes through grader/escape.py first, as it does for feedback.txt. Where Jinja2 is
not installed (`pip install jinja2`; the GPU image has it), no page is written and the class
summary says so: the text reports stand alone (docs/instructors.md, "Pages").
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..escape import escaped
from .report import (
    detail_lines,
    fix_first_lines,
    format_points,
    measured_ratio,
    not_shown_line,
    outcome_kind,
    ranked_hints,
    shown_points,
    shown_to_students,
)
from .run import Status
from .score import (
    MASK_LINE,
    NOT_SUBMITTED,
    LabScore,
    SubmissionScore,
    TestScore,
    fix_first,
    lab_statistics,
    same_rule,
    test_cause,
)

if TYPE_CHECKING:
    import jinja2

FEEDBACK_PAGE = "feedback.html"
DASHBOARD_PAGE = "dashboard.html"
TEMPLATES = Path(__file__).with_name("templates")
DETAILS_PAGE_LINES = 60  # a failed test's messages on the page (folded away); feedback.txt shows 12
BUILD_LOG_PAGE_LINES = 80
HISTOGRAM_BINS = 10
COMMON_CAUSES_SHOWN = 12


def pages_available() -> str | None:
    """None when the pages can be written here, else why not (said once, in the summary)."""
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return (
            "feedback.html and dashboard.html were not written: Jinja2 is not installed (pip install jinja2)"
        )
    return None


@functools.cache  # one environment, its templates compiled once, for every page of a run
def _environment() -> jinja2.Environment:
    import jinja2  # here, not at the top: the grader runs without it (pages_available)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["shown"] = lambda text: escaped(str(text), newlines=True)
    return env


# ---------------------------------------------------------------------------------------------
# One submission


MASK_COLORS = {".": "#dafbe1", "x": "#cf222e", "n": "#8250df", "u": "#57606a"}
MASK_WORDS = {"x": "wrong", "n": "NaN or infinite", "u": "never written", ".": "right"}
MASK_PIXELS = 240  # the heat map's side, whatever P's size


@dataclass
class HeatMap:
    """Which elements of P were wrong, as a grid of cells (compare.cpp's kit-mask line)."""

    caption: str
    cell: float  # a cell's side in pixels
    width: float
    height: float
    cells: list[tuple[float, float, str]]  # x, y, color: only the cells that are not right
    legend: list[tuple[str, str]]  # color, word: the kinds present


def heat_map(mask: str) -> HeatMap | None:
    match = MASK_LINE.fullmatch(mask)
    if match is None:
        return None
    rows, cols, mask_rows, mask_cols = (int(match[i]) for i in range(1, 5))
    marks = match[5]
    if min(rows, cols, mask_rows, mask_cols) == 0 or len(marks) != mask_rows * mask_cols:
        return None  # not a mask compare.cpp writes (a score.json edited by hand, say)
    cell = MASK_PIXELS / max(mask_rows, mask_cols)
    cells = [
        ((index % mask_cols) * cell, (index // mask_cols) * cell, MASK_COLORS[mark])
        for index, mark in enumerate(marks)
        if mark != "."
    ]
    block = (
        ""
        if (rows, cols) == (mask_rows, mask_cols)
        else f"; each cell is a block of about {rows / mask_rows:.2g} x {cols / mask_cols:.2g} elements, "
        "marked by its worst"
    )
    legend = [(MASK_COLORS[mark], MASK_WORDS[mark]) for mark in "xnu." if mark in marks]
    return HeatMap(f"P is {rows} x {cols}{block}.", cell, mask_cols * cell, mask_rows * cell, cells, legend)


@dataclass
class TestView:
    name: str
    status: str  # passed, partial, failed, skipped: the CSS class and the word shown
    points: str
    reasons: list[str]
    hints: list[str]
    details: list[str]
    more_details: int  # lines of messages beyond DETAILS_PAGE_LINES
    heat_map: HeatMap | None = None  # the first failed comparison's


@dataclass
class SpeedBar:
    test: str
    ratio: float  # the student's kernel time over the reference kernel's, measured by the test


@dataclass
class LabView:
    lab_id: str
    title: str
    points: str
    fraction: float  # of the points shown, for the score bar
    not_submitted: str | None
    problem: str | None
    build_log: list[str]
    fix_first: list[str]
    tests: list[TestView]
    hidden_line: str | None
    speed: list[SpeedBar]
    charts: list[tuple[str, str]]  # (name, data URI)
    charts_note: str


@dataclass
class FeedbackView:
    student: str
    score_line: str
    hidden_note: str | None
    error: str | None
    refused: list[tuple[str, str]]
    labs: list[LabView] = field(default_factory=list)


def _test_view(lab: LabScore, test: TestScore) -> TestView:
    if lab.problem and test.status is Status.NOT_BUILT:
        return TestView(test.name, "failed", _score(test), ["not run: the lab was not built"], [], [], 0)
    details = detail_lines(test)
    return TestView(
        name=test.name,
        status=outcome_kind(test),
        points=_score(test),
        reasons=[reason for reason in test.reasons if reason != "failed"],  # the badge says so
        hints=ranked_hints(test),
        details=details[:DETAILS_PAGE_LINES],
        more_details=max(0, len(details) - DETAILS_PAGE_LINES),
        heat_map=heat_map(test.masks[0]) if test.masks and test.status is not Status.PASSED else None,
    )


def _score(test: TestScore) -> str:
    return f"{format_points(test.points)}/{format_points(test.max_points)}"


def _data_uri(name: str, data: bytes) -> str:
    kind = "image/svg+xml" if name.endswith(".svg") else "image/png"
    return f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"


def _lab_view(lab: LabScore) -> LabView:
    shown = [test for test in lab.tests if shown_to_students(test)]
    hidden = [test for test in lab.tests if not shown_to_students(test)]
    earned = sum(test.points for test in shown)
    possible = sum(test.max_points for test in shown)
    points = f"{format_points(earned)}/{format_points(possible)}" + (" on the tests shown" if hidden else "")
    not_submitted = lab.problem if lab.problem is not None and lab.problem.startswith(NOT_SUBMITTED) else None
    hidden_line = not_shown_line(hidden) if hidden else None
    speed = [SpeedBar(test.name, ratio) for test in shown if (ratio := measured_ratio(test)) is not None]
    log = lab.build_log.rstrip("\n").split("\n") if lab.build_log.strip() else []
    return LabView(
        lab_id=lab.lab_id,
        title=lab.title,
        points=points,
        fraction=earned / possible if possible else 0.0,
        not_submitted=not_submitted,
        problem=None if not_submitted else lab.problem,
        build_log=log[:BUILD_LOG_PAGE_LINES],
        fix_first=fix_first_lines(fix_first(shown)),
        tests=[] if not_submitted else [_test_view(lab, test) for test in shown],
        hidden_line=None if not_submitted else hidden_line,
        speed=speed,
        charts=[(name, _data_uri(name, data)) for name, data in sorted(lab.charts.files.items()) if data],
        charts_note=lab.charts.note,
    )


def feedback_view(score: SubmissionScore) -> FeedbackView:
    earned, possible, not_shown = shown_points([test for lab in score.labs for test in lab.tests])
    if not_shown:
        score_line = f"{format_points(earned)}/{format_points(possible)} on the tests shown"
        hidden_note = (
            f"Tests not shown here are worth {format_points(not_shown)} more points; your instructor "
            "releases the total."
        )
    else:
        score_line, hidden_note = f"{format_points(score.points)}/{format_points(score.max_points)}", None
    error = score.error.strip().splitlines()[0] if score.error and score.error.strip() else None
    return FeedbackView(
        student=score.student_id,
        score_line=score_line,
        hidden_note=hidden_note,
        error=error or ("unknown error" if score.error is not None else None),
        refused=[(item.path, item.reason) for item in score.refused],
        labs=[_lab_view(lab) for lab in score.labs],
    )


def feedback_html(score: SubmissionScore) -> str:
    return _environment().get_template("feedback.html.j2").render(page=feedback_view(score))


# ---------------------------------------------------------------------------------------------
# A class


@dataclass
class Histogram:
    title: str
    max_points: float
    counts: list[int]  # students per bin of max_points / HISTOGRAM_BINS, the last bin closed
    mean: str
    median: str


@dataclass
class TestRate:
    name: str
    passed: int
    graded: int


# The class's speed: students per band of time ratio (their kernel over the reference kernel, as
# each speed test measured it), the last band open.
SPEED_BANDS = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0)


@dataclass
class SpeedSpread:
    test: str
    counts: list[int]  # students per band: below 1, 1 to 1.25, ..., 5 and above
    labels: list[str]
    median: str


@dataclass
class LabClassView:
    lab_id: str
    title: str
    histogram: Histogram | None
    rates: list[TestRate]
    unbuilt: list[tuple[str, str, str]]  # student, problem, the build log's first error line
    speed: list[SpeedSpread] = field(default_factory=list)


def speed_spreads(labs: list[LabScore]) -> list[SpeedSpread]:
    """Per speed test of a lab, how the class's time ratios spread (tests that ran to their end
    and measured a positive, finite ratio)."""
    ratios: dict[str, list[float]] = {}
    for lab in labs:
        for test in lab.tests:
            ratio = measured_ratio(test)
            if ratio is not None:
                ratios.setdefault(test.name, []).append(ratio)
    labels = [f"< {SPEED_BANDS[0]:g}"]
    labels += [f"{low:g}-{high:g}" for low, high in zip(SPEED_BANDS, SPEED_BANDS[1:], strict=False)]
    labels += [f">= {SPEED_BANDS[-1]:g}"]
    spreads = []
    for name, values in ratios.items():
        counts = [0] * (len(SPEED_BANDS) + 1)
        for value in values:
            counts[sum(1 for edge in SPEED_BANDS if value >= edge)] += 1
        stats = lab_statistics(values)
        assert stats is not None
        spreads.append(SpeedSpread(name, counts, labels, f"{stats.median:.2f}"))
    return spreads


@dataclass
class CauseView:
    lab_id: str
    cause: str  # the first wording seen; others differ only in their numbers
    students: list[str]


@dataclass
class StudentRow:
    student: str
    link: str
    labs: list[str]  # points per lab, "" where not graded
    total: float
    max_points: float
    error: bool


@dataclass
class DashboardView:
    submissions: int
    lab_ids: list[str]
    total: Histogram | None
    labs: list[LabClassView]
    causes: list[CauseView]
    students: list[StudentRow]
    notes: list[str]  # about the class folder
    files: list[str]  # about the LMS's import files
    files_loud: bool  # some submission is in none of them


def _histogram(title: str, points: Sequence[float], max_points: float) -> Histogram | None:
    stats = lab_statistics(list(points))
    if stats is None:
        return None
    counts = [0] * HISTOGRAM_BINS
    for value in points:
        share = value / max_points if max_points else 0.0
        counts[min(HISTOGRAM_BINS - 1, max(0, int(share * HISTOGRAM_BINS)))] += 1
    return Histogram(title, max_points, counts, format_points(stats.mean), format_points(stats.median))


def _first_error(log: str) -> str:
    for line in log.split("\n"):
        if "error" in line.lower():
            return line.strip()
    return next((line.strip() for line in log.split("\n") if line.strip()), "")


# Takes what report.summary_text takes, and dashboard_html passes it on: the scores, titles, notes
# and files are what every class-wide view is made from, so the three signatures stay alike.
def dashboard_view(
    scores: list[SubmissionScore],
    lab_titles: dict[str, str],
    notes: Sequence[str] = (),
    files: Sequence[str] = (),
) -> DashboardView:
    labs = []
    causes: dict[tuple[str, str], CauseView] = {}
    for lab_id, title in lab_titles.items():
        graded = [(score.student_id, lab) for score in scores if (lab := score.lab(lab_id)) is not None]
        submitted = [
            (student, lab) for student, lab in graded if not (lab.problem or "").startswith(NOT_SUBMITTED)
        ]
        histogram = None
        rates: list[TestRate] = []
        if graded:
            histogram = _histogram(
                f"Lab {lab_id}", [lab.points for _, lab in graded], graded[0][1].max_points
            )
            for test in graded[0][1].tests:  # by name: a report of an older rubric may differ
                passed = sum(
                    1
                    for _, lab in submitted
                    if any(other.name == test.name and other.status is Status.PASSED for other in lab.tests)
                )
                rates.append(TestRate(test.name, passed, len(submitted)))
        unbuilt = [
            (student, lab.problem or "", _first_error(lab.build_log))
            for student, lab in submitted
            if lab.problem
        ]
        speed = speed_spreads([lab for _, lab in submitted])
        labs.append(LabClassView(lab_id, title, histogram, rates, unbuilt, speed))
        # The class's common causes: each student's cause per test (as Fix first counts them),
        # counted once per student and lab.
        for student, lab in submitted:
            seen: set[str] = set()
            for test in lab.tests:
                lost = test.points < test.max_points and test.status is not Status.NOT_BUILT
                cause = test_cause(test) if lost else None
                if cause is None or same_rule(cause) in seen:
                    continue
                seen.add(same_rule(cause))
                view = causes.setdefault((lab_id, same_rule(cause)), CauseView(lab_id, cause, []))
                view.students.append(student)
    ranked = sorted(causes.values(), key=lambda view: (-len(view.students), view.lab_id))
    lab_ids = list(lab_titles)
    students = [
        StudentRow(
            student=score.student_id,
            link=f"{score.student_id}/{FEEDBACK_PAGE}",
            labs=[
                "" if (lab := score.lab(lab_id)) is None else format_points(lab.points) for lab_id in lab_ids
            ],
            total=score.points,
            max_points=score.max_points,
            error=score.error is not None,
        )
        for score in scores
    ]
    max_total = max((score.max_points for score in scores), default=0.0)
    return DashboardView(
        submissions=len(scores),
        lab_ids=lab_ids,
        total=_histogram("Total", [score.points for score in scores], max_total),
        labs=labs,
        causes=ranked[:COMMON_CAUSES_SHOWN],
        students=students,
        notes=list(notes),
        files=list(files),
        files_loud=any(line.startswith("NOT IN ANY") for line in files),
    )


def dashboard_html(
    scores: list[SubmissionScore],
    lab_titles: dict[str, str],
    notes: Sequence[str] = (),
    files: Sequence[str] = (),
) -> str:
    view = dashboard_view(scores, lab_titles, notes, files)
    return _environment().get_template("dashboard.html.j2").render(page=view, points=format_points)
