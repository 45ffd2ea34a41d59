"""The grade orchestrator: collect -> stage -> build -> run -> score -> report, top to bottom.

Also the student's own `check` (the same build, run and score, in place, visible tests only).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .build import BuildConfig, BuildResult, build_labs
from .charts import draw_charts
from .collect import Submission, collect_submission
from .errors import GraderError
from .mutants import sample_students, write_sample_class
from .report import format_points, status_line, summary_text, write_gradebook, write_submission_report
from .rubric import Kit, Lab, check_rubric_against_listing
from .run import RunConfig, list_tests, run_tests
from .score import LabScore, SubmissionScore, TestScore, score_lab, score_test, score_unbuilt_lab
from .stage import make_work_dir, stage_submission

Progress = Callable[[str], None]


def quiet(message: str) -> None:
    pass


@dataclass(frozen=True)
class GradeOptions:
    labs: list[Lab]
    build: BuildConfig = field(default_factory=BuildConfig)
    run: RunConfig = field(default_factory=RunConfig)
    work_root: Path | None = None  # where private work folders go; a system temp folder if None
    keep_work: bool = False  # keep each work folder (its build and test outputs) for debugging
    exclude: tuple[Path, ...] = ()  # never copied into a stage: the class being graded


# ---------------------------------------------------------------------------------------------
# One submission


def grade_submission(
    kit: Kit,
    submission: Submission,
    options: GradeOptions,
    labs: list[Lab] | None = None,
    progress: Progress = quiet,
) -> SubmissionScore:
    """stage -> build -> run -> score. Never raises for a grading problem: it lands in `error`."""
    labs = labs if labs is not None else options.labs
    score = SubmissionScore(submission.student_id, refused=list(submission.refused))
    start = time.monotonic()
    work_dir = make_work_dir(options.work_root, submission.student_id)
    try:
        progress("staging")
        stage = stage_submission(kit, submission, labs, work_dir, list(options.exclude))
        complete = [lab for lab in labs if not submission.missing_files(lab)]
        builds = (
            build_labs(stage.root, stage.build_dir, complete, options.build, progress) if complete else {}
        )
        if any(not build.configured for build in builds.values()):
            # Student files are only compiled, never read by CMake: this is the kit or the machine.
            score.error = "CMake could not configure the kit (not the student's fault): see the lab messages"
        for lab in labs:
            if lab.id not in builds:
                score.labs.append(score_unbuilt_lab(lab, _not_submitted(lab, submission)))
            else:
                lab_score = _run_lab(kit, lab, builds[lab.id], work_dir, options.run, score, progress)
                if builds[lab.id].ok and lab.charts is not None:
                    progress(f"drawing the charts of {lab.tag}")
                    lab_score.charts = draw_charts(
                        lab, stage.root, stage.build_dir, work_dir / "charts" / lab.tag, options.build
                    )
                score.labs.append(lab_score)
    except GraderError as error:
        score.error = str(error)
    except Exception as error:  # a grader bug must not lose the other students' grades
        score.error = f"internal grader error: {type(error).__name__}: {error}\n{traceback.format_exc()}"
    finally:
        score.duration = time.monotonic() - start
        if options.keep_work:
            progress(f"work folder kept: {work_dir}")
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
    _fill_ungraded_labs(score, labs)
    return score


def _not_submitted(lab: Lab, submission: Submission) -> str:
    missing = ", ".join(submission.missing_files(lab))
    refused = [item.path for item in submission.refused]
    return f"not submitted: {missing}" + (" (files were refused: see above)" if refused else "")


def _run_lab(
    kit: Kit,
    lab: Lab,
    build: BuildResult,
    work_dir: Path,
    config: RunConfig,
    score: SubmissionScore,
    progress: Progress,
) -> LabScore:
    if not build.ok or build.exe_path is None:
        return score_lab(lab, build, {})
    try:
        listed = {test.name for test in list_tests(build.exe_path, work_dir, config)}
        check_rubric_against_listing(lab, listed, has_hidden_tests=kit.has_solutions)
    except GraderError as error:
        # A kit problem, not the student's: graded as nothing, and reported as a grader failure.
        score.error = (score.error + "\n" if score.error else "") + f"{lab.tag}: {error}"
        return score_unbuilt_lab(lab, f"kit problem, not yours: {error}")
    progress(f"running the {len(lab.tests)} tests of {lab.tag}")
    outcomes = run_tests(build.exe_path, [test.name for test in lab.tests], work_dir, config, listed)
    return score_lab(lab, build, outcomes)


def _fill_ungraded_labs(score: SubmissionScore, labs: list[Lab]) -> None:
    """After a failure, the labs not reached still appear (with their maximum) in the gradebook."""
    for lab in labs:
        if score.lab(lab.id) is None:
            score.labs.append(score_unbuilt_lab(lab, "not graded: the grader failed on this submission"))
    score.labs.sort(key=lambda lab: lab.lab_id)


# ---------------------------------------------------------------------------------------------
# A class


def grade_class(
    kit: Kit, entries: list[tuple[str, Path]], options: GradeOptions, out_dir: Path, log: Progress = print
) -> list[SubmissionScore]:
    """Grades every (student id, path) and writes every report; returns the scores."""
    try:
        out_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise GraderError(
            f"{out_dir} already exists; the grader never overwrites earlier results, "
            "so name a new folder with --out"
        ) from None
    scores = []
    for number, (student_id, path) in enumerate(entries, start=1):

        def progress(message: str, prefix: str = f"[{number}/{len(entries)}] {student_id}") -> None:
            log(f"{prefix}: {message} ...")

        score = SubmissionScore(student_id)
        try:
            progress("collecting")
            submission = collect_submission(path, kit, student_id)
            score = grade_submission(kit, submission, options, progress=progress)
        except GraderError as error:
            score.error = str(error)
        except Exception as error:
            score.error = f"internal grader error: {type(error).__name__}: {error}\n{traceback.format_exc()}"
        finally:
            # Otter-style: the results file is written whatever happened above.
            _fill_ungraded_labs(score, options.labs)
            write_submission_report(out_dir / student_id, score)
        log(
            f"[{number}/{len(entries)}] {student_id}: {format_points(score.points)}/"
            f"{format_points(score.max_points)}"
            + ("  (the grader failed: see summary.txt)" if score.error else "")
        )
        scores.append(score)
    write_gradebook(out_dir / "gradebook.csv", scores, [lab.id for lab in options.labs])
    (out_dir / "summary.txt").write_text(
        summary_text(scores, {lab.id: lab.title for lab in options.labs}), encoding="utf-8"
    )
    return scores


def grade_sample_class(
    kit: Kit, options: GradeOptions, out_dir: Path, log: Progress = print
) -> list[SubmissionScore]:
    """The reference and one student per mutant, written as submission folders, graded as a class."""
    with tempfile.TemporaryDirectory(prefix="grader-sample-class-") as folder:
        students = sample_students(kit, options.labs, mutant_lab_only=False)
        entries = write_sample_class(students, Path(folder))
        log(f"grading the sample class: {len(entries)} students (the reference and one per mutant)")
        return grade_class(kit, entries, options, out_dir, log)


# ---------------------------------------------------------------------------------------------
# The student's own check


@dataclass
class CheckResult:
    lines: list[str]
    earned_all: bool


def check_lab(
    kit: Kit, lab: Lab, build_dir: Path, build: BuildConfig, run: RunConfig, log: Progress = print
) -> CheckResult:
    """Builds the student's kit in place and runs the lab's visible tests, gradelib style."""
    log(f"building {lab.executable} in {build_dir} (your kernels: -DKIT_KERNELS={build.kernels}) ...")
    result = build_labs(kit.root, build_dir, [lab], build, quiet)[lab.id]
    if not result.ok or result.exe_path is None:
        lines = [
            f"{lab.tag}: {result.problem}",
            result.log_tail,
            "Score: 0/" + format_points(_visible_max(lab)),
        ]
        return CheckResult(lines, earned_all=False)
    run_dir = Path(tempfile.mkdtemp(prefix="check-", dir=build_dir))
    try:
        listed = {test.name for test in list_tests(result.exe_path, run_dir, run)}
        check_rubric_against_listing(lab, listed, has_hidden_tests=kit.has_solutions)
        visible = [test for test in lab.tests if test.visibility == "visible"]
        log(f"running {len(visible)} visible tests of lab {lab.id} ...")
        outcomes = run_tests(result.exe_path, [test.name for test in visible], run_dir, run, listed)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    lines: list[str] = []
    earned = 0.0
    width = max((len(test.name) for test in visible), default=0)
    for test in visible:
        scored = score_test(test, outcomes[test.name])
        earned += scored.points
        lines += _check_lines(test.partial.metric if test.partial else None, scored, width)
    if lab.charts is not None:
        charts_dir = build_dir / "plots" / lab.tag
        drawn = draw_charts(lab, kit.root, build_dir, charts_dir, build)
        lines.append(drawn.note or f"charts of your code: {', '.join(str(charts_dir / name) for name in drawn.files)}")
    total = _visible_max(lab)
    lines.append(f"Score: {format_points(round(earned, 2))}/{format_points(total)}")
    hidden = sum(test.points for test in lab.tests if test.visibility != "visible")
    if hidden:
        lines.append(f"(the grader also runs hidden tests worth {format_points(hidden)} more points)")
    return CheckResult(lines, earned_all=earned >= total)


def _visible_max(lab: Lab) -> float:
    return sum(test.points for test in lab.tests if test.visibility == "visible")


def _check_lines(metric: str | None, scored: TestScore, width: int) -> list[str]:
    cublas = scored.metrics.get(f"{metric}_vs_cublas") if metric else None
    if metric and metric not in scored.metrics and cublas is not None and scored.status == "passed":
        # A student kit has no reference kernel to time against: say so instead of a bare 0.
        return [
            f"PERF  {scored.name:<{width}}  (0/{format_points(scored.max_points)} here)",
            f"      {metric}_vs_cublas = {cublas:.3g}: your kernel's time over cuBLAS's on this GPU.",
            f"      Grading compares against the reference kernel ({metric}), so these points are",
            "      awarded only by the grader, not by check.",
        ]
    lines = [status_line(scored, width)]
    lines += [f"      {reason}" for reason in scored.reasons]
    lines += [f"      hint: {hint}" for hint in scored.hints]
    if scored.status in ("failed", "crashed"):
        lines += [
            f"      {line}"
            for detail in scored.details[:4]
            for line in detail.splitlines()[:6]
            if not line.lower().startswith("hint:")
        ]
    return lines
