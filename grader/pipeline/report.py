"""Stage 6, report: results.json (Gradescope) and feedback.txt per submission; gradebook.csv and
summary.txt per class. Reports are written even when grading failed, with the failure in them.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from ..escape import escaped
from .charts import Charts
from .collect import Refusal
from .run import Status
from .score import (
    NOT_SUBMITTED,
    CheckResult,
    FixFirst,
    LabScore,
    SubmissionScore,
    TestScore,
    fix_first,
    lab_statistics,
    names_a_cause,
    same_rule,
    test_cause,
)

SCORE_FILE = "score.json"  # the grader's own record of a finished submission, read on resume

DETAILS_SHOWN_LINES = 12
LOUD = "!" * 78  # the rule above and below what must not be missed


def format_points(value: float) -> str:
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def text_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Left-aligned columns under a header and a rule: the tables validate and bench print."""
    rows = [header, *rows]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def outcome_kind(test: TestScore) -> str:
    """passed, partial (passed with partial credit), skipped or failed: how the reports group a
    test's result (the text's OK, PART, SKIP, FAIL; the page's badges)."""
    if test.status is Status.PASSED:
        return "passed" if test.full_marks else "partial"
    return "skipped" if test.status is Status.SKIPPED else "failed"


STATUS_WORDS = {"passed": "OK", "partial": "PART", "skipped": "SKIP", "failed": "FAIL"}


def not_shown_line(hidden: Sequence[TestScore]) -> str:
    """What a lab's feedback says of the tests it does not show: how many, and their worth."""
    worth = format_points(sum(test.max_points for test in hidden))
    tests = "1 test" if len(hidden) == 1 else f"{len(hidden)} tests"
    return (
        f"Not shown here: {tests} worth {worth} points, which the rubric makes hidden or shown "
        "after the due date."
    )


def status_line(test: TestScore, width: int) -> str:
    """gradelib's line: OK, PART (partial credit), SKIP or FAIL, the name, and the points."""
    word = STATUS_WORDS[outcome_kind(test)]
    return f"{word:<4}  {test.name:<{width}}  ({format_points(test.points)}/{format_points(test.max_points)})"


def measured_ratio(test: TestScore) -> float | None:
    """A speed test's time ratio (the student's kernel over the reference kernel, as the test
    measured it), where the test ran to its end and measured a positive, finite one."""
    ratio = test.metrics.get("time_ratio", math.nan)
    return ratio if test.status is Status.PASSED and math.isfinite(ratio) and ratio > 0 else None


def detail_lines(test: TestScore) -> list[str]:
    """What a test that did not pass reported, line by line, its hint lines left out (the hints
    are shown ranked on their own). Lines end at "\n" only: a \r or \u2028 from the student's
    output is shown escaped, never made a line of its own."""
    if test.status in (Status.PASSED, Status.SKIPPED):
        return []
    return [
        line
        for detail in test.details
        for line in detail.split("\n")
        if not line.strip().lower().startswith("hint:")
    ]


# ---------------------------------------------------------------------------------------------
# One submission


def results_json(score: SubmissionScore) -> dict:
    """Gradescope's results.json: only its documented keys.

    The top-level visibility is "visible" (each test carries its own); the grader's stdout is
    hidden from students because it can name paths of the grading machine.
    """
    tests = [_gradescope_test(lab, test) for lab in score.labs for test in lab.tests]
    data = {
        "score": score.points,
        "execution_time": round(score.duration),
        "output": escaped(_overall_output(score), newlines=True),
        # What the texts are: plain text, shown as written (not Markdown, whose * and _ a hint's
        # M[row * width + k] would turn into emphasis).
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    board = leaderboard(score)
    if board:
        data["leaderboard"] = board
    return data


def leaderboard(score: SubmissionScore) -> list[dict]:
    """Gradescope's leaderboard: each visible speed test's time ratio (the student's kernel over
    the reference kernel, as the test measured it), lower first; only a test that ran to its end
    and measured a time. Only visible tests: the board is shown to the whole class. Each row is
    named by its lab and test, the same for every student whatever their tests measured."""
    return [
        {"name": escaped(f"lab{lab.lab_id}: {test.name}"), "value": round(ratio, 3), "order": "asc"}
        for lab in score.labs
        for test in lab.tests
        if shown_to_students(test) and (ratio := measured_ratio(test)) is not None
    ]


def _gradescope_test(lab: LabScore, test: TestScore) -> dict:
    return {
        "name": f"lab{lab.lab_id}: {test.name}",
        "score": test.points,
        "max_score": test.max_points,
        "status": "passed" if test.full_marks else "failed",  # Gradescope's two words, not a Status
        "output": escaped("\n".join(_test_lines(lab, test, show_details=True)), newlines=True),
        "visibility": test.visibility,
    }


def _grader_failed_lines(score: SubmissionScore, incomplete: str) -> list[str]:
    """What a report says when the grader, not the submission, failed: `incomplete` names what is
    incomplete ("Your score is", "The scores below are")."""
    if not score.error:
        return []
    return [
        "",
        f"The grader failed on this submission: {_first_line(score.error)}",
        f"{incomplete} incomplete; tell your instructor.",
    ]


def _overall_output(score: SubmissionScore) -> str:
    lines = [f"Score: {format_points(score.points)}/{format_points(score.max_points)}"]
    lines += _grader_failed_lines(score, "Your score is")
    lines += _refusal_lines(score)
    for lab in score.labs:
        if lab.problem:
            lines += ["", f"lab{lab.lab_id}: {lab.problem}"] + _indented(lab.build_log, "  ")
        first = fix_first([test for test in lab.tests if shown_to_students(test)])
        if first is not None:
            lines += ["", f"lab{lab.lab_id}:"] + ["  " + line for line in fix_first_lines(first)]
    return "\n".join(lines)


def shown_to_students(test: TestScore) -> bool:
    """Whether feedback.txt shows a test: only what results.json marks "visible", the one
    visibility Gradescope shows at once. feedback.txt is written when grading, before or after
    the due date, so a "hidden" or "after_due_date" test shows neither its name nor its result
    there (docs/instructors.md, "What students see")."""
    return test.visibility == "visible"


def shown_points(tests: Sequence[TestScore]) -> tuple[float, float, float]:
    """Points earned and possible on the tests a student is shown, and what the others are worth:
    the score a student's feedback gives when some tests are not shown (feedback.txt and .html)."""
    shown = [test for test in tests if shown_to_students(test)]
    not_shown = sum(test.max_points for test in tests if not shown_to_students(test))
    return sum(test.points for test in shown), sum(test.max_points for test in shown), not_shown


def feedback_text(score: SubmissionScore) -> str:
    """What the student reads: every lab, every test the rubric lets them see with its points,
    reasons and hints, and how many points the tests not shown are worth."""
    lines = [f"Feedback for {score.student_id}"]
    lines += _grader_failed_lines(score, "The scores below are")
    lines += _refusal_lines(score)
    for lab in score.labs:
        lines += [""] + lab_feedback_lines(lab, student=True)
    earned, possible, not_shown = shown_points([test for lab in score.labs for test in lab.tests])
    if not_shown:
        lines += [
            "",
            f"Score on the tests shown: {format_points(earned)}/{format_points(possible)}",
            f"Tests not shown here are worth {format_points(not_shown)} more points; your "
            "instructor releases the total.",
        ]
    else:
        lines += ["", f"Score: {format_points(score.points)}/{format_points(score.max_points)}"]
    # Names and messages from the submission are shown, never obeyed (grader/escape.py).
    return escaped("\n".join(lines), newlines=True) + "\n"


def lab_feedback_lines(lab: LabScore, student: bool = False) -> list[str]:
    """One lab's tests with their points, reasons and hints. For the student (feedback.txt) only
    the tests results.json marks visible, and one line for the rest; for staff (validate) all."""
    if lab.problem is not None and lab.problem.startswith(NOT_SUBMITTED):
        # Nothing ran: one line, not a "not run" line for each of its tests.
        return [f"Lab {lab.lab_id}: {lab.title}  (0/{format_points(lab.max_points)}): {lab.problem}"]
    tests = [test for test in lab.tests if not student or shown_to_students(test)]
    hidden = [test for test in lab.tests if test not in tests]
    if hidden:
        earned = sum(test.points for test in tests)
        possible = sum(test.max_points for test in tests)
        points = f"{format_points(earned)}/{format_points(possible)} on the tests shown"
    else:
        points = f"{format_points(lab.points)}/{format_points(lab.max_points)}"
    lines = [f"Lab {lab.lab_id}: {lab.title}  ({points})"]
    if lab.problem:
        lines.append(f"  {lab.problem}")
        lines += _indented(lab.build_log, "    ")
    lines += ["  " + line for line in fix_first_lines(fix_first(tests))]
    width = max((len(test.name) for test in tests), default=0)
    for test in tests:
        lines.append(f"  {status_line(test, width)}")
        lines += ["        " + line for line in _test_lines(lab, test, show_details=True)]
    if hidden:
        lines.append(f"  {not_shown_line(hidden)}")
    if lab.charts.files:
        names = ", ".join(f"lab{lab.lab_id}/{name}" for name in lab.charts.files)
        lines.append(f"  Charts drawn from your code: {names}")
    elif lab.charts.note:
        lines.append(f"  {lab.charts.note}")
    return lines


def _test_lines(lab: LabScore, test: TestScore, show_details: bool) -> list[str]:
    if lab.problem and test.status is Status.NOT_BUILT:
        # The compiler output is told once, at the lab, not under every test.
        return [f"not run: {lab.problem} (see the lab's messages)"]
    lines = list(test.reasons) + [f"hint: {hint}" for hint in ranked_hints(test)]
    if show_details:
        shown = detail_lines(test)
        lines += shown[:DETAILS_SHOWN_LINES]
        if len(shown) > DETAILS_SHOWN_LINES:
            lines.append(f"[... {len(shown) - DETAILS_SHOWN_LINES} more lines]")
    return lines


def fix_first_lines(first: FixFirst | None) -> list[str]:
    """The line a lab's feedback opens with when it lost points (score.fix_first)."""
    if first is None:
        return []
    share = f"{format_points(first.points)} of the {format_points(first.lost)} points lost here"
    if first.hint is None:
        # No test proved a cause: the test that lost the most, and where the write-up explains it.
        pointer = ""
        if first.pointer:
            lead = "Start from" if first.pointer.lower().startswith(("readme", "lab ")) else "Its note:"
            pointer = f" {lead} {first.pointer}"
        return [
            f"Fix first: the test {first.tests[0]!r} ({share}); its messages below say what went "
            f"wrong.{pointer}"
        ]
    named = ", ".join(repr(name) for name in first.tests)
    tests = "the test" if len(first.tests) == 1 else f"{len(first.tests)} tests:"
    return [f"Fix first: {first.hint}", f"  ({share}, {tests} {named})"]


def ranked_hints(test: TestScore) -> list[str]:
    """A test's hints as shown: the failure's causes first, in the order they came, then what the
    kit only observed, then the rubric's pointer into the write-up; each once (grouped_hints)."""
    failure = test.hints[: test.failure_hints]
    causes = [hint for hint in failure if names_a_cause(hint)]
    # The cause Fix first names for this test (score.test_cause) leads, then the others in order.
    first = test_cause(test)
    if first is not None:
        causes = [hint for hint in causes if same_rule(hint) == same_rule(first)] + [
            hint for hint in causes if same_rule(hint) != same_rule(first)
        ]
    observed = [hint for hint in failure if not names_a_cause(hint)]
    return grouped_hints(causes + observed + test.hints[test.failure_hints :])


def grouped_hints(hints: Sequence[str]) -> list[str]:
    """Each hint once, in the order first given: a hint repeated word for word, or with only its
    numbers changed (the same rule broken in several configurations), is shown once with how
    many times it came."""
    groups: dict[str, list[str]] = {}
    for hint in hints:
        groups.setdefault(same_rule(hint), []).append(hint)
    shown = []
    for same in groups.values():
        if len(same) == 1:
            shown.append(same[0])
        elif all(hint == same[0] for hint in same):
            shown.append(f"{same[0]} [{len(same)} times]")
        else:
            shown.append(f"{same[0]} [{len(same)} times, with other numbers]")
    return shown


def _first_line(error: str) -> str:
    """Students see what failed; the details (a traceback, say) are in the instructor's summary."""
    return error.strip().splitlines()[0] if error.strip() else "unknown error"


def _refusal_lines(score: SubmissionScore) -> list[str]:
    if not score.refused:
        return []
    return ["", "Files not accepted:"] + [f"  {item.path}: {item.reason}" for item in score.refused]


def _indented(text: str, prefix: str) -> list[str]:
    return [prefix + line for line in text.rstrip("\n").split("\n")] if text.strip() else []


def write_submission_report(
    folder: Path, score: SubmissionScore, pages: dict[str, str] | None = None
) -> None:
    """Writes results.json, feedback.txt, the charts, `pages` (name -> HTML: feedback.html, from
    grader/pipeline/report_pages.py) and score.json into `folder` at once: they are written in a private
    folder beside it, which is then renamed into place, so that a run killed at any moment leaves
    either the whole report or none (and resume grades it again)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".partial-{folder.name}-", dir=folder.parent))
    try:
        for lab in score.labs:
            for name, data in lab.charts.files.items():
                (staging / f"lab{lab.lab_id}").mkdir(exist_ok=True)
                (staging / f"lab{lab.lab_id}" / name).write_bytes(data)
        (staging / "results.json").write_text(
            json.dumps(results_json(score), indent=2) + "\n", encoding="utf-8"
        )
        (staging / "feedback.txt").write_text(feedback_text(score), encoding="utf-8")
        for name, text in (pages or {}).items():
            (staging / name).write_text(text, encoding="utf-8")
        (staging / SCORE_FILE).write_text(json.dumps(score_to_json(score), indent=1) + "\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # no half-written report is left behind
        raise
    if folder.exists():  # a regrade: the old report goes only once the new one is complete
        old = folder.parent / f".old-{folder.name}-{os.getpid()}"
        os.rename(folder, old)
        os.rename(staging, folder)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, folder)


def finished_score(folder: Path) -> SubmissionScore | None:
    """The score of a submission whose report is complete, or None (never graded, or a report
    of an older grader that this one cannot read)."""
    try:
        return score_from_json(json.loads((folder / SCORE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def kept_score(folder: Path) -> SubmissionScore | None:
    """The score a resumed run keeps: a complete report's, unless the grader failed on that
    submission. Its failure may have been the machine's or the interrupted run's (a tool killed by
    the Ctrl-C that stopped it), and one the upload caused costs the same few seconds and gives
    the same report again."""
    score = finished_score(folder)
    return score if score is not None and not score.error else None


def score_to_json(score: SubmissionScore) -> dict:
    data = asdict(score)
    for lab, lab_data in zip(score.labs, data["labs"], strict=True):
        lab_data["charts"] = {"files": sorted(lab.charts.files), "note": lab.charts.note}
    return data


def score_from_json(data: dict) -> SubmissionScore:
    labs = []
    for lab in data["labs"]:
        tests = [TestScore(**{**test, "status": Status(test["status"])}) for test in lab["tests"]]
        charts = Charts(files={name: b"" for name in lab["charts"]["files"]}, note=lab["charts"]["note"])
        fields = {key: value for key, value in lab.items() if key not in ("tests", "charts")}
        labs.append(LabScore(tests=tests, charts=charts, **fields))
    refused = [Refusal(**item) for item in data["refused"]]
    fields = {key: value for key, value in data.items() if key not in ("labs", "refused")}
    return SubmissionScore(labs=labs, refused=refused, **fields)


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


# ---------------------------------------------------------------------------------------------
# A class


def write_gradebook(path: Path, scores: list[SubmissionScore], lab_ids: list[str]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student"] + [f"lab{lab_id}" for lab_id in lab_ids] + ["total", "max"])
        for score in scores:
            cells = []
            for lab_id in lab_ids:
                lab = score.lab(lab_id)
                cells.append("" if lab is None else format_points(lab.points))
            writer.writerow(
                [score.student_id] + cells + [format_points(score.points), format_points(score.max_points)]
            )
    os.replace(temporary, path)


def gpu_skip_notice(scores: list[SubmissionScore]) -> str | None:
    """The loud line when GPU tests were skipped: those scores are not the students' scores."""
    notice = gpu_skip_line(test for score in scores for lab in score.labs for test in lab.tests)
    return f"{notice}; scores are incomplete" if notice else None


def gpu_skip_line(tests: Iterable[TestScore]) -> str | None:
    """How many [gpu] tests skipped themselves, and the first one's reason; None if none did."""
    skipped = [test for test in tests if test.gpu_skipped and test.reasons]
    if not skipped:
        return None
    # Usually the GPU is missing ("no usable GPU: ..."), but a GPU test also skips itself where
    # a tool it needs is (compute-sanitizer): then say the reason, not "no usable GPU".
    reason = skipped[0].reasons[0].removeprefix("not run: ")
    if reason.startswith("no usable GPU:"):
        cause = reason.removeprefix("no usable GPU:").strip()
        return f"{len(skipped)} GPU tests were not run because this machine has no usable GPU: {cause}"
    return f"{len(skipped)} GPU tests were not run on this machine, the first because: {reason}"


SUMMARY_PATHS_SHOWN = 5  # refused files named per submission in the summary; feedback.txt has all


# The summary's sections that the terminal repeats after a run (summary_section).
FOLDER_HEADING = "About the class folder (not graded, or graded as said):"
FILES_HEADING = "Files for the LMS and pages:"


def summary_section(summary: str, heading: str) -> list[str]:
    """The lines of one section of a summary_text, under its heading, to its blank line."""
    lines = summary.splitlines()
    if heading not in lines:
        return []
    section = lines[lines.index(heading) + 1 :]
    return [line.strip() for line in section[: section.index("") if "" in section else len(section)]]


def summary_text(
    scores: list[SubmissionScore],
    lab_titles: dict[str, str],
    notes: Sequence[str] = (),
    files: Sequence[str] = (),
) -> str:
    """The class summary; `notes`: what was said about the class folder itself (a stray file,
    an upload left out as an older one, ids told apart), for the instructor to act on; `files`:
    what was said of the class files beyond this one (the LMS's import files, the pages)."""
    lines = [f"Class summary: {len(scores)} submissions"]
    notice = gpu_skip_notice(scores)
    if notice:
        lines += ["", LOUD, notice, LOUD]
    if notes:
        lines += ["", FOLDER_HEADING] + [f"  {note}" for note in notes]
    if files:
        lines += ["", FILES_HEADING] + [f"  {line}" for line in files]
    for lab_id, title in lab_titles.items():
        lines += [""] + _lab_summary(lab_id, title, scores)
    totals = [score.points for score in scores]
    overall = lab_statistics(totals)
    if overall:
        lines += [
            "",
            f"Total: mean {format_points(overall.mean)}  median {format_points(overall.median)}  "
            f"min {format_points(overall.low)}  max {format_points(overall.high)}",
        ]
    errors = [score for score in scores if score.error]
    if errors:
        lines += ["", "The grader failed on these submissions (their scores are incomplete):"]
        lines += [f"  {score.student_id}: {score.error}" for score in errors]
    unread = [(score.student_id, item) for score in scores for item in score.refused if item.whole]
    if unread:
        lines += ["", "Submissions not read in full (graded on what could be read):"]
        lines += [f"  {student}: {item.path}: {item.reason}" for student, item in unread]
    refused = [score for score in scores if any(not item.whole for item in score.refused)]
    if refused:
        lines += ["", "Submissions with files not accepted (read the reasons in their feedback.txt):"]
        lines += [f"  {score.student_id}: {_some_paths(score.refused)}" for score in refused]
    return escaped("\n".join(lines), newlines=True) + "\n"


def _some_paths(refused: list[Refusal]) -> str:
    paths = [item.path for item in refused if not item.whole]
    more = len(paths) - SUMMARY_PATHS_SHOWN
    return ", ".join(paths[:SUMMARY_PATHS_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _lab_summary(lab_id: str, title: str, scores: list[SubmissionScore]) -> list[str]:
    labs = [(score.student_id, lab) for score in scores if (lab := score.lab(lab_id)) is not None]
    if not labs:
        return [f"Lab {lab_id}: {title}: nobody graded"]
    stats = lab_statistics([lab.points for _, lab in labs])
    assert stats is not None
    lines = [
        f"Lab {lab_id}: {title} (max {format_points(labs[0][1].max_points)})",
        f"  mean {format_points(stats.mean)}  median {format_points(stats.median)}  "
        f"min {format_points(stats.low)}  max {format_points(stats.high)}",
        "  passed by:",
    ]
    for index, test in enumerate(labs[0][1].tests):
        passed = sum(1 for _, lab in labs if lab.tests[index].status is Status.PASSED)
        lines.append(f"    {100 * passed / len(labs):5.1f}%  ({passed}/{len(labs)})  {test.name}")
    unbuilt = [(student, lab.problem) for student, lab in labs if lab.problem]
    if unbuilt:
        lines.append("  not built: " + ", ".join(f"{student} ({problem})" for student, problem in unbuilt))
    return lines


# ---------------------------------------------------------------------------------------------
# A student's own check


def check_lines(result: CheckResult) -> list[str]:
    """make check's report: each visible test gradelib style, the charts, the score, and the
    loud line when GPU tests could not run."""
    lab = result.lab
    if result.problem is not None:
        return [
            f"{lab.tag}: {result.problem}",
            result.build_log,
            f"Score: 0/{format_points(result.max_points)}",
        ]
    lines: list[str] = fix_first_lines(fix_first(result.tests))
    width = max((len(test.name) for test in result.tests), default=0)
    for test in result.tests:
        rubric = lab.test(test.name)
        lines += _check_test_lines(rubric.partial.metric if rubric and rubric.partial else None, test, width)
    if result.charts is not None and result.charts_dir is not None:
        drawn = ", ".join(str(result.charts_dir / name) for name in result.charts.files)
        lines.append(result.charts.note or f"charts of your code: {drawn}")
    lines.append(f"Score: {format_points(round(result.points, 2))}/{format_points(result.max_points)}")
    hidden = sum(test.points for test in lab.tests if test.visibility != "visible")
    if hidden:
        lines.append(f"(the grader also runs hidden tests worth {format_points(hidden)} more points)")
    notice = gpu_skip_line(result.tests)
    if notice:
        lines += ["", LOUD, notice, LOUD]
    return lines


def _check_test_lines(metric: str | None, scored: TestScore, width: int) -> list[str]:
    cublas = scored.metrics.get(f"{metric}_vs_cublas") if metric else None
    if metric and metric not in scored.metrics and cublas is not None and scored.status is Status.PASSED:
        # A student kit has no reference kernel to time against: say so instead of a bare 0.
        return [
            f"PERF  {scored.name:<{width}}  (0/{format_points(scored.max_points)} here)",
            f"      {metric}_vs_cublas = {cublas:.3g}: your kernel's time over cuBLAS's on this GPU.",
            f"      Grading compares against the reference kernel ({metric}), so these points are",
            "      awarded only by the grader, not by check.",
        ]
    lines = [status_line(scored, width)]
    lines += [f"      {reason}" for reason in scored.reasons]
    lines += [f"      hint: {hint}" for hint in ranked_hints(scored)]
    if scored.status in (Status.FAILED, Status.CRASHED):
        lines += [
            f"      {line}"
            for detail in scored.details[:4]
            for line in detail.splitlines()[:6]
            if not line.lower().startswith("hint:")
        ]
    return lines
