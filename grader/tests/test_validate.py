"""validate.py: verdicts from (fake) grading results, and the table."""

from grader.mutants import Mutant
from grader.run import Status
from grader.score import LabScore
from grader.score import TestScore as Scored  # not named Test*, which pytest would collect
from grader.validate import FAIL, OK, format_table, judge_mutant, judge_reference

GPU_SKIP = "not run: no usable GPU: cudaGetDeviceCount failed"


def lab_score(*tests: Scored, problem=None) -> LabScore:
    return LabScore("02", "02_demo", "Demo", list(tests), problem=problem)


def passed(name, points=10):
    return Scored(name, points, points, Status.PASSED)


def failed(name, points=10):
    return Scored(name, 0, points, Status.FAILED, reasons=["failed"])


def skipped(name, points=10, needs_gpu=True):
    return Scored(name, 0, points, Status.SKIPPED, reasons=[GPU_SKIP], needs_gpu=needs_gpu)


def mutant(fake_kit, loss=20.0, hint="transposed") -> Mutant:
    return Mutant("transposed", fake_kit.kit.labs[0], "demo.cu", loss, hint, "", (), b"")


def test_reference_with_full_marks_is_ok():
    assert judge_reference(lab_score(passed("a"), passed("b"))).verdict == OK


def test_reference_losing_a_point_fails_naming_the_test():
    verdict = judge_reference(lab_score(passed("a"), failed("b")))
    assert verdict.verdict == FAIL and verdict.actual_loss == 10 and "b" in verdict.note


def test_reference_with_only_gpu_skips_is_not_run_rather_than_fail():
    assert judge_reference(lab_score(passed("cpu"), skipped("gpu"))).verdict == "not run (no GPU)"
    # Only a test tagged [gpu] is a GPU skip: another that skipped is just not run.
    not_gpu = skipped("cpu 2", needs_gpu=False)
    assert judge_reference(lab_score(passed("cpu"), not_gpu)).verdict == "not run (skipped)"


def test_reference_refused_by_the_screen_fails():
    verdict = judge_reference(lab_score(passed("a")), refused=["demo.cu: `exit` is not allowed"])
    assert verdict.verdict == FAIL and "screen" in verdict.note


def test_mutant_losing_enough_with_its_hint_is_ok(fake_kit):
    verdict = judge_mutant(
        mutant(fake_kit),
        lab_score(failed("a"), failed("b"), passed("c")),
        "FAIL a\n hint: the result looks TRANSPOSED",
    )
    assert (verdict.verdict, verdict.actual_loss, verdict.hint_shown, verdict.expected_loss) == (
        OK,
        20,
        "yes",
        "20",
    )


def test_mutant_losing_too_little_fails(fake_kit):
    verdict = judge_mutant(mutant(fake_kit), lab_score(failed("a"), passed("b")), "transposed")
    assert verdict.verdict == FAIL and "loses 10, expected at least 20" in verdict.note


def test_mutant_without_its_hint_fails(fake_kit):
    verdict = judge_mutant(mutant(fake_kit), lab_score(failed("a"), failed("b")), "no such word here")
    assert (
        verdict.verdict == FAIL
        and verdict.hint_shown == "no"
        and "feedback lacks 'transposed'" in verdict.note
    )


def test_mutant_needing_skipped_gpu_tests_is_not_run_not_fail(fake_kit):
    verdict = judge_mutant(mutant(fake_kit), lab_score(passed("cpu"), skipped("gpu1"), skipped("gpu2")), "")
    assert verdict.verdict == "not run (no GPU)"


def test_mutant_judged_by_a_build_failure_is_judged_even_without_gpu(fake_kit):
    broken = Mutant("broken", fake_kit.kit.labs[0], "demo.cu", None, "error", "", (), b"")
    tests = [
        Scored(name, 0, 10, Status.NOT_BUILT, reasons=["not run: lab02 did not compile"]) for name in "abcd"
    ]
    score = lab_score(*tests, problem="lab02 did not compile")
    assert judge_mutant(broken, score, "lab02 did not compile\n demo.cu(3): error: x").verdict == OK
    assert judge_mutant(broken, score, "lab02 did not compile").verdict == FAIL
    assert judge_mutant(broken, score, "").expected_loss == "all (40)"


def test_the_table_has_one_aligned_row_per_verdict(fake_kit):
    rows = [
        judge_reference(lab_score(passed("a"))),
        judge_mutant(mutant(fake_kit), lab_score(failed("a"), passed("b")), ""),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == [
        "mutant",
        "lab",
        "expected",
        "loss",
        "actual",
        "loss",
        "hint",
        "shown",
        "verdict",
    ]
    assert lines[2].split() == ["reference", "02", "none", "0", "-", "ok"]
    assert lines[3].split() == ["transposed", "02", "20", "10", "no", "FAIL"]
    assert lines[2].index("02") == lines[3].index("02") == lines[0].index("lab")


def test_mutant_is_not_ok_because_of_gpu_tests_that_were_skipped(fake_kit):
    # It loses 10 points in tests that ran and 20 in skipped ones: it must not pass on the skips.
    verdict = judge_mutant(
        mutant(fake_kit, loss=20.0),
        lab_score(failed("cpu"), passed("cpu 2"), skipped("gpu", points=20)),
        "hint: transposed",
    )
    assert verdict.actual_loss == 10
    assert verdict.verdict == "not run (no GPU)"
