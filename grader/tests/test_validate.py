"""validate.py: verdicts from (fake) grading results, and the table."""

import pytest

from grader.pipeline.run import Status
from grader.pipeline.score import LabScore
from grader.pipeline.score import TestScore as Scored  # not named Test*, which pytest would collect
from grader.staff.mutants import Mutant, Skeleton
from grader.staff.validate import FAIL, OK, format_table, judge_mutant, judge_reference, judge_skeleton

GPU_SKIP = "not run: no usable GPU: cudaGetDeviceCount failed"


def lab_score(*tests: Scored, problem=None) -> LabScore:
    return LabScore("02", "02_demo", "Demo", list(tests), problem=problem)


def passed(name, points=10):
    return Scored(name, points, points, Status.PASSED)


def failed(name, points=10, hints=()):
    return Scored(
        name, 0, points, Status.FAILED, reasons=["failed"], hints=list(hints), failure_hints=len(hints)
    )


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


def test_mutant_losing_enough_with_its_hint_first_is_ok(fake_kit):
    verdict = judge_mutant(
        mutant(fake_kit),
        lab_score(failed("a", hints=["the result looks TRANSPOSED"]), failed("b"), passed("c")),
        "FAIL a\n hint: the result looks TRANSPOSED",
    )
    assert (verdict.verdict, verdict.actual_loss, verdict.hint_shown, verdict.expected_loss) == (
        OK,
        20,
        "first",
        "20",
    )


def test_mutant_whose_hint_is_not_the_first_one_fails(fake_kit):
    # The lab's Fix first line names another cause, which lost more points: the student reads
    # that first, so the mutant's own diagnosis is not what the kit leads with.
    lab = lab_score(
        failed("a", 5, hints=["the result looks transposed"]), failed("b", 15, hints=["rows missing"])
    )
    verdict = judge_mutant(mutant(fake_kit), lab, "hint: rows missing\nhint: the result looks transposed")
    assert (verdict.verdict, verdict.hint_shown) == (FAIL, "later")
    assert "'transposed' is not the first hint (Fix first: 'rows missing')" in verdict.note


def test_a_speed_mutant_is_told_first_by_its_speed_tests_reason(fake_kit):
    # No test has a hint of its own: Fix first names the test, and its reason is read first.
    slow = Scored("speed", 4, 10, Status.PASSED, reasons=["time_ratio = 2.4: full points at 1.25"])
    verdict = judge_mutant(mutant(fake_kit, loss=6, hint="time_ratio"), lab_score(slow), "")
    assert (verdict.verdict, verdict.hint_shown) == (OK, "first")


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


def skeleton(fake_kit, **may_pass: str) -> Skeleton:
    return Skeleton(fake_kit.kit.labs[0], {name: reason for name, reason in may_pass.items()})


def test_a_skeleton_failing_every_test_is_ok(fake_kit):
    verdict = judge_skeleton(skeleton(fake_kit), lab_score(failed("a"), failed("b")))
    assert (verdict.student, verdict.expected_loss, verdict.actual_loss, verdict.verdict) == (
        "skeleton",
        "all",
        20,
        OK,
    )


def test_a_skeleton_passing_a_test_it_may_not_pass_fails_naming_the_vacuous_test(fake_kit):
    verdict = judge_skeleton(skeleton(fake_kit), lab_score(failed("a"), passed("b")))
    assert verdict.verdict == FAIL and "vacuous" in verdict.note and verdict.note.endswith(": b")
    # Partial credit is passing too: a do-nothing solution must earn nothing.
    partly = Scored("c", 2.5, 10, Status.PASSED)
    assert judge_skeleton(skeleton(fake_kit), lab_score(failed("a"), partly)).verdict == FAIL


def test_a_skeleton_may_pass_what_its_lab_declares(fake_kit):
    declared = skeleton(fake_kit, b="the answers sheet is checked for form only")
    verdict = judge_skeleton(declared, lab_score(failed("a"), passed("b")))
    assert verdict.verdict == OK and verdict.expected_loss == "all but 1 declared"
    # May, not must: failing a declared test is fine too.
    assert judge_skeleton(declared, lab_score(failed("a"), failed("b"))).verdict == OK


def test_gpu_tests_a_skeleton_skipped_count_neither_way_and_the_row_says_so(fake_kit):
    verdict = judge_skeleton(skeleton(fake_kit), lab_score(failed("cpu"), skipped("gpu 1"), skipped("gpu 2")))
    assert verdict.verdict == "not run (no GPU: 2 of 3 tests)" and verdict.actual_loss == 10
    assert "counted neither way" in verdict.note
    # A vacuous test that ran still fails the row, skips or not.
    vacuous = judge_skeleton(skeleton(fake_kit), lab_score(passed("cpu"), skipped("gpu")))
    assert vacuous.verdict == FAIL and "1 of 2 tests not run (no GPU)" in vacuous.note


def test_a_skeleton_that_does_not_build_or_is_refused_fails(fake_kit):
    unbuilt = lab_score(
        Scored("a", 0, 10, Status.NOT_BUILT, reasons=["not run"]), problem="lab02 did not compile"
    )
    verdict = judge_skeleton(skeleton(fake_kit), unbuilt)
    assert verdict.verdict == FAIL and "must build" in verdict.note
    refused = judge_skeleton(skeleton(fake_kit), lab_score(failed("a")), ["demo.cu: `exit`"])
    assert refused.verdict == FAIL and "refused" in refused.note


def test_the_first_hint_is_the_one_students_see(fake_kit):
    # A hidden test loses more with another cause, but students see the visible test's line.
    hidden = failed("hidden", 30, hints=["secret cause"])
    hidden.visibility = "hidden"
    lab = lab_score(failed("a", 10, hints=["the result looks transposed"]), hidden)
    verdict = judge_mutant(mutant(fake_kit, loss=10), lab, "hint: the result looks transposed")
    assert (verdict.verdict, verdict.hint_shown) == (OK, "first")


def test_validate_and_bench_take_the_same_process_experiments_and_grading_takes_none():
    # validate must check the mutants under an experiment before bench's rate can be trusted,
    # and grade offers no experiment: a class is graded the way validate checked by default.
    from grader import cli

    parser = cli.build_parser()
    for command in ("validate", "bench"):
        args = parser.parse_args([command, "--modes-apart", "--ncu-loads"])
        assert args.modes_apart and args.ncu_loads
        plain = parser.parse_args([command])
        assert not plain.modes_apart and not plain.ncu_loads
    with pytest.raises(SystemExit):
        parser.parse_args(["grade", "--modes-apart"])
