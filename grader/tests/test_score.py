"""score.py: points, partial credit, and a reason for every point lost."""

from pathlib import Path

import pytest

from grader.pipeline.build import BuildResult
from grader.pipeline.run import LAUNCH_HINT, REGISTER_LIMIT_HINT, Outcome, Status
from grader.pipeline.score import (
    OBSERVATION_MARK,
    FixFirst,
    fix_first,
    names_a_cause,
    partial_points,
    score_lab,
    score_test,
)
from grader.pipeline.score import TestScore as Scored  # not named Test*, which pytest would collect
from grader.rubric import PartialCredit, RubricTest

SPEED = RubricTest("kernel speed", 10, partial=PartialCredit("time_ratio", full_at=1.25, zero_at=3.0))
PLAIN = RubricTest("result matches", 15, hint="README section 3.")


@pytest.mark.parametrize(
    "ratio, points",
    [(0.5, 10), (1.25, 10), (2.125, 5), (1.6, 8), (2.825, 1), (3.0, 0), (9.0, 0)],
)
def test_partial_credit_is_linear_between_full_at_and_zero_at(ratio, points):
    assert partial_points(10, SPEED, ratio) == pytest.approx(points)


STEPPED = RubricTest(
    "kernel speed", 10, partial=PartialCredit("time_ratio", full_at=1.25, zero_at=2.0, step=0.5)
)


@pytest.mark.parametrize(
    "ratio, points",
    # Unrounded: 1.51102 -> 6.52 and 1.50973 -> 6.54 (two gradings of one kernel on the H100).
    [(1.51102, 6.5), (1.50973, 6.5), (1.25, 10), (1.26, 10), (1.99, 0), (1.6, 5.5), (1.3, 9.5)],
)
def test_stepped_partial_credit_rounds_to_the_step_so_timing_noise_leaves_the_score(ratio, points):
    assert partial_points(10, STEPPED, ratio) == points


def test_a_passed_partial_test_earns_from_its_metric_and_says_why():
    score = score_test(SPEED, Outcome("kernel speed", Status.PASSED, metrics={"time_ratio": 2.125}))
    assert score.points == 5 and score.max_points == 10
    assert "time_ratio = 2.12" in score.reasons[0] or "time_ratio = 2.13" in score.reasons[0]
    assert not score.full_marks


def test_a_passed_partial_test_without_its_metric_earns_nothing():
    score = score_test(SPEED, Outcome("kernel speed", Status.PASSED, metrics={"time_ratio_vs_cublas": 1.0}))
    assert score.points == 0
    assert "no time_ratio reported" in score.reasons[0]


def test_a_failed_partial_test_earns_nothing_whatever_its_metric():
    assert score_test(SPEED, Outcome("kernel speed", Status.FAILED, metrics={"time_ratio": 1.0})).points == 0


def test_a_pass_earns_everything_with_no_reasons_or_hints():
    score = score_test(PLAIN, Outcome("result matches", Status.PASSED))
    assert (score.points, score.reasons, score.hints, score.full_marks) == (15, [], [], True)


def test_a_failure_gives_the_failures_hints_first_then_the_rubric_hint():
    outcome = Outcome(
        "result matches",
        Status.FAILED,
        messages=["mismatch\nhint: looks transposed"],
        hints=["looks transposed"],
    )
    score = score_test(PLAIN, outcome)
    assert score.points == 0 and score.reasons == ["failed"]
    assert score.hints == ["looks transposed", "README section 3."]
    assert score.failure_hints == 1  # the diagnosis; the rubric's hint is not one
    assert score.details == ["mismatch\nhint: looks transposed"]


def test_a_comparisons_mask_of_wrong_elements_is_kept_for_the_page_and_left_out_of_the_messages():
    mask = "kit-mask 2x3 2x3 .xu..n"
    outcome = Outcome(
        "result matches",
        Status.FAILED,
        messages=[f"differs at 3 of 6\n{mask}\nhint: x", "kit-mask 2x3 2x3 .x", "kit-mask 9x9 9x9 <b>"],
    )
    score = score_test(PLAIN, outcome)
    assert score.masks == [mask]  # a mask whose marks do not fill its cells is no mask
    assert score.details == ["differs at 3 of 6\nhint: x"]  # a message that was only a mask is gone


def test_a_skip_earns_nothing_and_says_it_was_not_run():
    outcome = Outcome(
        "result matches", Status.SKIPPED, skip_reason="no usable GPU: none found", needs_gpu=True
    )
    score = score_test(PLAIN, outcome)
    assert score.points == 0 and score.status is Status.SKIPPED
    assert score.gpu_skipped  # the [gpu] tag of its listing, carried by the outcome
    assert score.reasons == ["not run: no usable GPU: none found"]
    assert score.hints == []  # the student did nothing wrong


@pytest.mark.parametrize(
    "outcome, reason",
    [
        (
            Outcome("t", Status.CRASHED, messages=["crashed: killed by signal SIGSEGV"]),
            "crashed: killed by signal SIGSEGV",
        ),
        (Outcome("t", Status.CRASHED, messages=["no result file: ..."]), "crashed: no result file: ..."),
        (Outcome("t", Status.TIMED_OUT, messages=["timed out after 5 s"]), "timed out after 5 s"),
        (Outcome("t", Status.MISSING), "does not contain this test"),
    ],
)
def test_other_statuses_earn_nothing_with_their_reason(outcome, reason):
    score = score_test(PLAIN, outcome)
    assert score.points == 0 and reason in score.reasons[0]


def test_a_build_failure_zeroes_the_lab_and_tells_the_log_once(fake_kit):
    lab = fake_kit.kit.labs[0]
    build = BuildResult("02", False, "demo.cu(3): error: expected a ;", None, "lab02 did not compile")
    lab_score = score_lab(lab, build, {})
    assert lab_score.points == 0 and lab_score.max_points == 40
    assert lab_score.problem == "lab02 did not compile" and "expected a ;" in lab_score.build_log
    assert all(test.status == "not_built" for test in lab_score.tests)
    assert all("expected a ;" not in " ".join(test.reasons) for test in lab_score.tests)


def test_a_lab_adds_up_its_tests(fake_kit):
    lab = fake_kit.kit.labs[0]
    outcomes = {test.name: Outcome(test.name, Status.PASSED) for test in lab.tests}
    outcomes["kernel speed is close to the reference kernel"].metrics["time_ratio"] = 2.125
    outcomes["result matches on hidden widths"] = Outcome("result matches on hidden widths", Status.FAILED)
    lab_score = score_lab(lab, BuildResult("02", True, "", None), outcomes)
    assert lab_score.points == 10 + 10 + 5 + 5 + 0
    assert lab_score.tests[4].visibility == "hidden"


def lost(name, lost_points, hints=(), failure_hints=None, status=Status.FAILED, max_points=10):
    return Scored(
        name,
        max_points - lost_points,
        max_points,
        status,
        hints=list(hints),
        failure_hints=len(hints) if failure_hints is None else failure_hints,
    )


def test_fix_first_is_the_hint_whose_tests_lost_the_most_points():
    tests = [
        lost("speed", 3),  # partial credit: no hint of its own, counts alone
        lost("small widths", 10, ["each element misses its last term at width 17", "README 3."], 1),
        lost("other shape", 15, ["a load read past the edge of M"]),
        lost("large widths", 10, ["each element misses its last term at width 1025"]),
        Scored("passes", 10, 10, Status.PASSED),
    ]
    first = fix_first(tests)
    # The same rule at another size is one cause: 20 points against 15.
    assert first == FixFirst(
        hint="each element misses its last term at width 17",
        tests=("small widths", "large widths"),
        points=20,
        lost=38,
    )


def test_fix_first_prefers_a_diagnosis_to_a_bare_test_that_lost_more():
    tests = [lost("speed", 10), lost("loads", 4, ["the tiles are loaded but M is read from global memory"])]
    assert fix_first(tests) == FixFirst(
        hint="the tiles are loaded but M is read from global memory", tests=("loads",), points=4, lost=14
    )


def test_fix_first_never_leads_with_what_was_only_observed():
    observed = "the kit cannot tell why from the values: 1024 element(s) are wrong"
    tests = [
        lost("large widths", 15, [observed]),
        lost("hidden widths", 15, [observed.replace("1024", "4096")]),
        lost(
            "small widths",
            10,
            [observed, "on inputs that say where each term came from, N is read transposed"],
        ),
    ]
    first = fix_first(tests)
    assert first is not None and first.hint is not None and first.hint.endswith("N is read transposed")
    assert first.tests == ("small widths",) and first.points == 10
    assert fix_first(tests[:2]) == FixFirst(hint=None, tests=("large widths",), points=15, lost=30)


def test_a_bare_pointer_into_the_write_up_is_no_cause():
    assert not names_a_cause("README section 3.")
    assert not names_a_cause("README sections 3 and 7")
    assert not names_a_cause("README section 4.1.")
    assert not names_a_cause("Lab 03's README, sections 5 and 10")
    assert names_a_cause("README section and then some")
    assert names_a_cause("README section 3: the third launch parameter is in bytes.")


def test_an_observation_is_known_whatever_its_case():
    assert not names_a_cause("only the first 7 elements hold results. The kit cannot tell whether ...")
    assert names_a_cause("N is read transposed")


def test_a_hint_that_sends_to_other_tests_is_no_cause_however_many_tests_say_it():
    defer = "make the correctness tests pass first; this test judges only a kernel that computes P."
    assert not names_a_cause(defer)
    assert not names_a_cause("the kernel or its launch failed; the correctness tests show how.")
    assert not names_a_cause("finish occupancy() (steps 1 to 4) first; this test then checks ...")
    tests = [
        lost("small widths", 10, ["every element misses exactly the last term of its dot product (k = 31)"]),
        lost("racecheck", 8, [defer]),
        lost("global loads", 8, [defer]),
        lost("speed", 10),
    ]
    first = fix_first(tests)
    assert first is not None and first.tests == ("small widths",)


def test_the_kit_says_cannot_tell_in_the_words_the_grader_looks_for():
    header = Path(__file__).resolve().parents[2] / "common/include/kit/compare.hpp"
    assert f'kObservationMark = "{OBSERVATION_MARK}";' in header.read_text(encoding="utf-8")


def test_fix_first_without_hints_names_the_test_that_lost_the_most():
    # A rubric hint is not the failure's diagnosis: it does not make a cause.
    tests = [lost("crashes", 5, ["README 3."], 0), lost("times out", 12, status=Status.TIMED_OUT)]
    assert fix_first(tests) == FixFirst(hint=None, tests=("times out",), points=12, lost=17)


def test_fix_first_without_a_cause_points_into_the_write_up():
    tests = [lost("crashes", 5, ["README 3."], 0), lost("wrong", 12, ["README 5: Nds after Mds."], 0)]
    assert fix_first(tests) == FixFirst(
        hint=None, tests=("wrong",), points=12, lost=17, pointer="README 5: Nds after Mds."
    )


def test_a_tests_cause_is_the_one_its_sizes_found_most_often():
    one_size = "no element of P took any product: the phase loop ran no iteration"
    phase = "every element misses the terms of the last phase (k = {}): the phase loop stops one phase short"
    hints = [one_size] + [phase.format(n) for n in (16, 32, 48)] + ["other cause at 7", "README 5."]
    first = fix_first([lost("small widths", 10, hints, len(hints) - 1)])
    assert first is not None and first.hint == phase.format(16)


def test_a_hazard_a_sanitizer_proved_is_fixed_before_causes_that_lost_more():
    tests = [
        lost("block sums match", 10, ["each block's sum took only its first 128 elements"]),
        lost("block sum has no race under racecheck", 8, ["no __syncthreads() between store and read"]),
        lost("block sum waits on a barrier", 2, ["make the correctness tests pass first."]),
    ]
    first = fix_first(tests)
    assert first is not None and first.hint == "no __syncthreads() between store and read"
    # A barrier some threads skip orders nothing: it is fixed before the races it may cause.
    skipped = lost("block sum reaches each barrier under synccheck", 3, ["a barrier not reached by all"])
    first = fix_first([*tests, skipped])
    assert first is not None and first.hint == "a barrier not reached by all"
    # A sanitizer test that found no hazard, only a deferral, proves nothing.
    tests[1] = lost("block sum has no race under racecheck", 8, ["make the correctness tests pass first."])
    first = fix_first(tests)
    assert first is not None and first.hint == "each block's sum took only its first 128 elements"
    # Nor does it lead when nothing is proven: the test that lost the most does.
    observed = lost("block sums match", 10, ["the kit cannot tell why from the values: 3 wrong"])
    deferring = lost(
        "block sum reaches each barrier under synccheck", 3, ["make the correctness tests pass first."]
    )
    first = fix_first([observed, deferring])
    assert first is not None and first.hint is None and first.tests == ("block sums match",)


def test_a_cause_seen_in_computed_values_is_fixed_before_a_launch_refused_for_its_registers():
    # Lab 04's sum reset in every phase, as graded on an H200: the 32-wide kernel needs too many
    # registers to launch, and every test fails at tile 32 for that; the reset is seen where the
    # 16-wide kernel ran. Fixing the reset also brings the registers back.
    registers = REGISTER_LIMIT_HINT
    reset = "every element of P keeps only the products of its last phase: the running sum is reset"
    tests = [
        lost("small widths", 15, [registers, reset, "the kit cannot tell why from the values"]),
        lost("large widths", 15, [registers, "the kit cannot tell why from the values"]),
        lost("multiples of the tile", 3, [reset, registers]),
        lost("reads nothing outside", 9, [registers]),
        lost("writes nothing outside", 10, [registers]),
    ]
    first = fix_first(tests)
    assert first is not None and first.hint == reset
    assert first.tests == ("small widths", "multiples of the tile") and first.points == 18
    # Alone, the refusal is the cause to fix.
    first = fix_first(tests[3:])
    assert first is not None and first.hint == registers and first.points == 19
    # An invalid configuration is the launcher's, a cause like any other: lab 05's static tiles
    # beside the dynamic buffer ask for more shared memory than a block may have.
    tests = [lost("deeper strips", 12, [LAUNCH_HINT]), lost("launch count", 4, ["launched twice per call"])]
    first = fix_first(tests)
    assert first is not None and first.hint == LAUNCH_HINT


def test_fix_first_keeps_the_rubric_order_on_a_tie_and_ignores_what_did_not_run():
    tests = [
        lost("skipped", 10, ["no GPU"], status=Status.SKIPPED),
        lost("first", 5, ["cause a"]),
        lost("second", 5, ["cause b"]),
    ]
    first = fix_first(tests)
    assert first is not None and first.tests == ("first",)
    assert fix_first(tests[:1]) is None
    assert fix_first([Scored("passes", 10, 10, Status.PASSED)]) is None
