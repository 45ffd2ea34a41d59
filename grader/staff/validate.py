"""`validate`: the reference and every correct variant must earn full marks; every mutant must
lose its points and get its hint first (the lab's "Fix first" line, score.fix_first); each lab's
bare skeleton must fail every test but those its
[skeleton] table lets it pass (any other it passes is a vacuous test).

Without a usable GPU the GPU tests are skipped, so only what could run is judged: a row that
needed a skipped test to pass its check is "not run (no GPU)", not FAIL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from ..errors import GraderError
from ..pipeline.collect import submission_from_files
from ..pipeline.grade import Engine, GradeOptions
from ..pipeline.harness import loads_counted_by
from ..pipeline.report import format_points, lab_feedback_lines, shown_to_students, text_table
from ..pipeline.run import Status
from ..pipeline.score import LabScore, SubmissionScore, fix_first
from ..progress import PlainProgress, Progress
from ..rubric import Kit, Lab
from .mutants import REFERENCE_ID, Mutant, SampleStudent, Skeleton, sample_students

OK = "ok"
FAIL = "FAIL"


@dataclass(frozen=True)
class Verdict:
    student: str  # "reference" or the mutant's name
    lab_id: str
    expected_loss: str  # "none", "all (60)" or "40"
    actual_loss: float
    hint_shown: str  # "first", "later" (shown, not first), "no", or "-" when none is expected
    verdict: str  # ok, FAIL, or "not run (...)"
    note: str = ""
    student_id: str = ""  # the sample student graded, to find its score


def not_run_verdict(lab: LabScore) -> str | None:
    """Why a lab's result is incomplete (skipped tests), or None when every test ran."""
    if not lab.skipped:
        return None
    return "not run (no GPU)" if any(test.gpu_skipped for test in lab.skipped) else "not run (skipped)"


def judge_reference(lab: LabScore, refused: Sequence[str] = (), student: str = REFERENCE_ID) -> Verdict:
    """The reference, or a correct variant (`student`, its name): every test that ran earns
    full marks."""
    loss = round(lab.max_points - lab.points, 2)
    # No loss is expected and no hint: the rows differ only in their verdict and note.
    row = partial(
        Verdict, student=student, lab_id=lab.lab_id, expected_loss="none", actual_loss=loss, hint_shown="-"
    )
    if refused:
        return row(verdict=FAIL, note="the source screen refused: " + "; ".join(refused))
    ran_fully = all(test.full_marks for test in lab.tests if test.status is not Status.SKIPPED)
    if ran_fully and not lab.skipped:
        return row(verdict=OK)
    if ran_fully:
        return row(verdict=not_run_verdict(lab) or FAIL, note=f"{len(lab.skipped)} tests skipped")
    lost = [test.name for test in lab.tests if test.status is not Status.SKIPPED and not test.full_marks]
    return row(verdict=FAIL, note=lab.problem or "loses points on: " + "; ".join(lost))


def judge_mutant(mutant: Mutant, lab: LabScore, feedback: str, refused: Sequence[str] = ()) -> Verdict:
    expected = mutant.expected_loss_points()
    shown_expected = (
        f"all ({format_points(expected)})" if mutant.expect_loss is None else format_points(expected)
    )
    # Only tests that ran count: a skipped GPU test earns nothing, but that is not the mutant
    # being caught, and counting it would call a mutant "ok" that no test that ran has caught.
    loss = round(
        sum(test.max_points - test.points for test in lab.tests if test.status is not Status.SKIPPED), 2
    )
    hint_shown = "-" if mutant.expect_hint is None else where_shown(mutant.expect_hint, lab, feedback)
    hint_ok = hint_shown in ("-", "first")
    row = partial(
        Verdict,
        student=mutant.name,
        lab_id=lab.lab_id,
        expected_loss=shown_expected,
        actual_loss=loss,
        hint_shown=hint_shown,
    )
    if refused:
        return row(verdict=FAIL, note="the source screen refused: " + "; ".join(refused))
    if loss >= expected - 1e-9 and hint_ok:
        return row(verdict=OK)
    # The points or hint may come from a test that could not run here: judge it where it can run.
    not_run = not_run_verdict(lab)
    if not_run:
        return row(verdict=not_run, note=f"{len(lab.skipped)} tests skipped")
    problems = []
    if loss < expected - 1e-9:
        problems.append(f"loses {format_points(loss)}, expected at least {format_points(expected)}")
    if hint_shown == "later":
        problems.append(f"{mutant.expect_hint!r} is not the first hint (Fix first: {first_read(lab)!r})")
    elif not hint_ok:
        problems.append(f"feedback lacks {mutant.expect_hint!r}")
    return row(verdict=FAIL, note="; ".join(problems))


def first_read(lab: LabScore) -> str:
    """What a lab's feedback tells first about why it lost points: its problem when it did not
    build or run, else its Fix first line's hint, or the reasons of the test that line names
    when no test had a hint of its own (a speed test's partial credit, a crash)."""
    if lab.problem:
        return lab.problem
    # What the student reads first: the line made from the tests shown to them, where those lost
    # points; a mistake only hidden tests catch is judged by the line staff see.
    first = fix_first([test for test in lab.tests if shown_to_students(test)]) or fix_first(lab.tests)
    if first is None:
        return ""
    if first.hint is not None:
        return first.hint
    # No cause proven: the line names the test and its pointer into the write-up, and a mutant
    # the kit cannot diagnose is judged by that pointer (its expect_hint quotes the rubric hint).
    named = next(test for test in lab.tests if test.name == first.tests[0])
    return " ".join(named.reasons + ([first.pointer] if first.pointer else []))


def where_shown(expected: str, lab: LabScore, feedback: str) -> str:
    """ "first" when `expected` is in what the lab's feedback tells first (for a lab that did not
    build, its whole problem and compiler output), "later" when only elsewhere in it, else "no"."""
    wanted = expected.lower()
    first = feedback if lab.problem else first_read(lab)
    if wanted in first.lower():
        return "first"
    return "later" if wanted in feedback.lower() else "no"


def judge_skeleton(skeleton: Skeleton, lab: LabScore, refused: Sequence[str] = ()) -> Verdict:
    """The bare skeleton: every scored test that ran must earn nothing, except those the lab
    declares it may pass. A skipped test counts neither way, and the verdict says how many."""
    declared = len([test for test in lab.tests if test.name in skeleton.may_pass])
    ran = [test for test in lab.tests if test.status is not Status.SKIPPED]
    row = partial(
        Verdict,
        student="skeleton",
        lab_id=lab.lab_id,
        expected_loss=f"all but {declared} declared" if declared else "all",
        actual_loss=round(sum(test.max_points - test.points for test in ran), 2),
        hint_shown="-",
    )
    if refused:
        return row(verdict=FAIL, note="the skeleton as handed out was refused: " + "; ".join(refused))
    if lab.problem:
        return row(
            verdict=FAIL,
            note=f"the skeleton as handed out must build, and did not ({lab.problem}): no test "
            "was judged; run make handout and make check",
        )
    # Earning any point is passing: a do-nothing solution must earn none.
    vacuous = [test.name for test in ran if test.points > 0 and test.name not in skeleton.may_pass]
    not_run = not_run_verdict(lab)
    skips = f"{len(lab.skipped)} of {len(lab.tests)} tests {not_run}, counted neither way" if not_run else ""
    if vacuous:
        note = (
            "passes what a do-nothing solution must fail (a vacuous test; or, if a skeleton may "
            "pass it, declare it in [skeleton] may_pass with the reason): " + "; ".join(vacuous)
        )
        return row(verdict=FAIL, note=note + (f"; {skips}" if skips else ""))
    if not_run:
        # The tests that ran failed as they should; the skipped ones are judged where they run.
        return row(verdict=f"{not_run[:-1]}: {len(lab.skipped)} of {len(lab.tests)} tests)", note=skips)
    return row(verdict=OK)


def judge_student(student: SampleStudent, score: SubmissionScore) -> list[Verdict]:
    refused = [f"{item.path}: {item.reason}" for item in score.refused]
    if score.error:
        refused.append(f"grader error: {score.error.splitlines()[0]}")
    if student.skeleton is not None:
        lab = score.lab(student.skeleton.lab.id)
        assert lab is not None
        verdicts = [judge_skeleton(student.skeleton, lab, refused)]
    elif student.mutant is None:
        verdicts = [judge_reference(lab, refused) for lab in score.labs]
    elif student.mutant.is_variant:
        lab = score.lab(student.mutant.lab.id)
        assert lab is not None
        verdicts = [judge_reference(lab, refused, f"variant {student.mutant.name}")]
    else:
        lab = score.lab(student.mutant.lab.id)
        assert lab is not None
        verdicts = [judge_mutant(student.mutant, lab, "\n".join(lab_feedback_lines(lab)), refused)]
    return [replace(verdict, student_id=student.student_id) for verdict in verdicts]


def format_table(verdicts: list[Verdict]) -> str:
    header = ("mutant", "lab", "expected loss", "actual loss", "hint shown", "verdict")
    return text_table(
        header,
        [
            (v.student, v.lab_id, v.expected_loss, format_points(v.actual_loss), v.hint_shown, v.verdict)
            for v in verdicts
        ],
    )


@dataclass
class ValidateReport:
    verdicts: list[Verdict]
    scores: dict[str, SubmissionScore]
    correct_ids: frozenset[str] = frozenset({REFERENCE_ID})  # the reference and the variants
    skeleton_ids: frozenset[str] = frozenset()  # the bare skeletons, which lose every point
    loads_counted_by: str = "Nsight Compute"  # the locality tests' counter (harness.loads_counted_by)

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.verdict == FAIL]

    @property
    def not_run(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.verdict.startswith("not run")]


def run_validate(
    kit: Kit,
    options: GradeOptions,
    progress: Progress | None = None,
    only: frozenset[str] | None = None,
) -> ValidateReport:
    """Grades the sample students (a mutant on its own lab only) with one engine, concurrently;
    with `only`, just the mutants and variants of those names, beside each lab's reference."""
    students = {
        student.student_id: student
        for student in sample_students(kit, options.labs, mutant_lab_only=True, variants=True, skeletons=True)
    }
    if only is not None:
        known = {student.mutant.name for student in students.values() if student.mutant is not None}
        unknown = sorted(only - known)
        if unknown:
            raise GraderError(
                f"validate --only: no mutant or variant named {', '.join(unknown)} in the labs asked for; "
                "the names are those of solutions/NN_slug/mutants.toml"
            )
        students = {
            student_id: student
            for student_id, student in students.items()
            if (student.mutant is None and student.skeleton is None)
            or (student.mutant is not None and student.mutant.name in only)
        }
    progress = progress or PlainProgress()
    progress.start(len(students), 0)

    def done(score: SubmissionScore) -> None:
        progress.finished(
            score.student_id, f"{format_points(score.points)}/{format_points(score.max_points)}"
        )

    jobs = [
        (student_id, partial(submission_from_files, student.student_id, student.files, kit))
        for student_id, student in students.items()
    ]
    try:
        with Engine(kit, options, progress) as engine:
            scores = engine.grade_all(jobs, labs_for=lambda student_id: students[student_id].labs, done=done)
            counted_by = loads_counted_by(engine.harness().build_dir, options.load_counter)
    finally:
        progress.close()
    verdicts: list[Verdict] = []
    for student_id, student in students.items():
        verdicts += judge_student(student, scores[student_id])
    correct = frozenset(
        student_id
        for student_id, student in students.items()
        if student.skeleton is None and (student.mutant is None or student.mutant.is_variant)
    )
    skeletons = frozenset(student_id for student_id, student in students.items() if student.skeleton)
    return ValidateReport(verdicts, scores, correct, skeletons, counted_by)


def untested_tests(report: ValidateReport, labs: list[Lab]) -> dict[str, list[str]]:
    """Per lab, tests that no mutant made lose points: suspect tests, or a missing mutant."""
    result = {}
    for lab in labs:
        lost: set[str] = set()
        ran = False
        for student_id, score in report.scores.items():
            lab_score = score.lab(lab.id)
            # A lab that was not built tells nothing about single tests, nor does a skeleton,
            # which loses them all.
            if (
                student_id in report.correct_ids | report.skeleton_ids
                or lab_score is None
                or lab_score.problem
            ):
                continue
            ran = True
            lost |= {
                test.name
                for test in lab_score.tests
                if test.points < test.max_points and test.status not in (Status.SKIPPED, Status.NOT_BUILT)
            }
        if ran:
            result[lab.id] = [test.name for test in lab.tests if test.name not in lost]
    return result
