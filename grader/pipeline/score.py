"""Stage 5, score: rubric + outcomes -> points per test, with a reason for every point lost."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..rubric import Lab, RubricTest
from .build import BuildResult
from .charts import Charts
from .collect import Refusal
from .run import REGISTER_LIMIT_HINT, Outcome, Status

MESSAGES_KEPT = 8  # failure messages shown per test; the hints come first anyway


@dataclass
class TestScore:
    name: str
    points: float
    max_points: float
    status: Status
    reasons: list[str] = field(default_factory=list)  # why points were lost (or why it was not run)
    visibility: str = "visible"
    hints: list[str] = field(default_factory=list)  # the failure's hint lines, then the rubric's hint
    failure_hints: int = 0  # how many of `hints` are the failure's (the kit's diagnosis), first
    details: list[str] = field(default_factory=list)  # the failure messages Catch2 reported
    metrics: dict[str, float] = field(default_factory=dict)
    masks: list[str] = field(default_factory=list)  # kit-mask lines: which elements of P were wrong
    duration: float = 0.0  # seconds its process ran (the grader's benchmark sums them)
    needs_gpu: bool = False  # tagged [gpu] in the kit's listing (known for the tests that ran)
    processes: dict[str, int] = field(default_factory=dict)  # CUDA processes started, by kind (bench)

    @property
    def full_marks(self) -> bool:
        return self.points >= self.max_points and self.status is Status.PASSED

    @property
    def gpu_skipped(self) -> bool:
        """A GPU test that did not run here: without a usable GPU, every [gpu] test skips."""
        return self.needs_gpu and self.status is Status.SKIPPED


@dataclass
class LabScore:
    lab_id: str
    slug: str
    title: str
    tests: list[TestScore]
    problem: str | None = None  # why the lab was not built or run, once for all its tests
    build_log: str = ""
    charts: Charts = field(default_factory=Charts)  # drawn from the student's code, if the lab has any

    @property
    def points(self) -> float:
        return round(sum(test.points for test in self.tests), 2)

    @property
    def max_points(self) -> float:
        return round(sum(test.max_points for test in self.tests), 2)

    @property
    def skipped(self) -> list[TestScore]:
        return [test for test in self.tests if test.status is Status.SKIPPED]


@dataclass
class SubmissionScore:
    student_id: str
    labs: list[LabScore] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    error: str | None = None  # the grader failed on this submission; the scores are incomplete
    duration: float = 0.0

    # Alike in shape only to LabScore's points and max_points: a submission sums its labs, a lab its tests.
    @property
    def points(self) -> float:
        return round(sum(lab.points for lab in self.labs), 2)

    @property
    def max_points(self) -> float:
        return round(sum(lab.max_points for lab in self.labs), 2)

    def lab(self, lab_id: str) -> LabScore | None:
        return next((lab for lab in self.labs if lab.lab_id == lab_id), None)


# How a lab's problem begins when the submission lacks one of its files (grade.py).
NOT_SUBMITTED = "not submitted"


def hide_grader_paths(score: SubmissionScore, folders: list[tuple[str, str]]) -> None:
    """Replaces each grader folder (a submission's work folder, the build cache, the kit) in every
    text of `score` a student sees with its stand-in: a sanitizer's command line or a test's
    message names them, and they mean nothing to the student (and say where the grader keeps
    its files). Longest first, so that a folder inside another keeps its own stand-in."""
    ordered = sorted(
        ((path, shown) for path, shown in folders if path.strip("/")), key=lambda pair: -len(pair[0])
    )

    def hidden(text: str) -> str:
        for path, shown in ordered:
            text = text.replace(path, shown)
        return text

    for lab in score.labs:
        lab.problem = hidden(lab.problem) if lab.problem is not None else None
        lab.build_log = hidden(lab.build_log)
        for test in lab.tests:
            test.reasons = [hidden(text) for text in test.reasons]
            test.hints = [hidden(text) for text in test.hints]
            test.details = [hidden(text) for text in test.details]
    if score.error is not None:
        score.error = hidden(score.error)


@dataclass
class CheckResult:
    """make check's result: the lab's visible tests, scored, or why the lab did not build."""

    lab: Lab
    tests: list[TestScore] = field(default_factory=list)  # the visible tests, in the rubric's order
    problem: str | None = None  # the lab did not build: no test ran
    build_log: str = ""
    charts: Charts | None = None  # the lab's charts of the student's code, drawn in charts_dir
    charts_dir: Path | None = None

    @property
    def max_points(self) -> float:
        return sum(test.points for test in self.lab.tests if test.visibility == "visible")

    @property
    def points(self) -> float:
        return sum(test.points for test in self.tests)

    @property
    def earned_all(self) -> bool:
        return self.problem is None and self.points >= self.max_points


def partial_points(points: float, test: RubricTest, value: float) -> float:
    assert test.partial is not None
    earned = points * test.partial.fraction(value)
    if test.partial.step:
        earned = min(points, round(earned / test.partial.step) * test.partial.step)
    return round(earned, 2)


# A comparison's mask of wrong elements (common/src/compare.cpp, mask_line): P's size, the mask's
# size in cells (at most 32 a side), then a mark per cell: . right, x wrong, n NaN, u never written.
MASK_LINE = re.compile(r"kit-mask (\d{1,7})x(\d{1,7}) (\d{1,2})x(\d{1,2}) ([.xnu]{1,1024})")
MASKS_KEPT = 4


def masks_in(messages: list[str]) -> list[str]:
    """The well-formed mask lines of a test's messages, the first MASKS_KEPT."""
    found: list[str] = []
    for message in messages:
        for line in message.split("\n"):
            match = MASK_LINE.fullmatch(line.strip())
            if match and int(match[3]) * int(match[4]) == len(match[5]) and len(found) < MASKS_KEPT:
                found.append(line.strip())
    return found


def without_masks(message: str) -> str:
    """A message as reports show it: the mask lines are for the page's heat map, not to read."""
    return "\n".join(line for line in message.split("\n") if not line.strip().startswith("kit-mask "))


def score_test(test: RubricTest, outcome: Outcome) -> TestScore:
    score = TestScore(
        name=test.name,
        points=0.0,
        max_points=test.points,
        status=outcome.status,
        visibility=test.visibility,
        metrics=dict(outcome.metrics),
        details=[
            kept for message in outcome.messages[:MESSAGES_KEPT] if (kept := without_masks(message)).strip()
        ],
        masks=masks_in(outcome.messages[:MESSAGES_KEPT]),
        duration=round(outcome.duration, 3),
        needs_gpu=outcome.needs_gpu,
        processes=dict(outcome.processes),
    )
    if outcome.status is Status.PASSED:
        score.points = test.points
        if test.partial is not None:
            _apply_partial(score, test)
    elif outcome.status is Status.SKIPPED:
        score.reasons.append(f"not run: {outcome.skip_reason or 'skipped'}")
    else:
        score.reasons.append(_status_reason(outcome))
    if score.points < score.max_points and outcome.status is not Status.SKIPPED:
        score.hints = list(outcome.hints) + ([test.hint] if test.hint else [])
        score.failure_hints = len(outcome.hints)
    return score


# What marks a kit hint that reports only what was observed, no cause, case aside (the C++
# side's kObservationMark, common/include/kit/compare.hpp): such a hint is never a cause to fix
# first.
OBSERVATION_MARK = "the kit cannot tell"


# What marks a kit hint that sends the student to other tests instead of naming a cause ("make
# the correctness tests pass first", "the correctness tests show how", a probe that failed): a
# test that judges only a working kernel says so, and several such tests must not outweigh the
# cause the correctness tests proved.
DEFERRAL_MARKS = ("pass first", ") first; this test", "tests show how", "test shows how", "the probe failed")


# A hint that is only a pointer into the write-up ("README section 3.") names no cause either.
_SECTION = r"\d+(?:\.\d+)*"
POINTER_ONLY = re.compile(
    rf"(?:lab \d+'s )?readme,? (?:sections? )?{_SECTION}(?:(?:, | and |, and ){_SECTION})*\.?"
)


def names_a_cause(hint: str) -> bool:
    lower = hint.lower().strip()
    return (
        OBSERVATION_MARK not in lower
        and not any(mark in lower for mark in DEFERRAL_MARKS)
        and not POINTER_ONLY.fullmatch(lower)
    )


# What names a test that looks for a hazard with a sanitizer: the test's name ends with its tool
# (docs/design/tests.md, "Tests", on "Fix first"). A kernel with such a hazard has undefined results, so no
# cause read off its values is proven while the hazard stands: the hazard's cause is fixed first,
# whatever the points. A barrier that not every thread reaches comes before a race, since such a
# barrier orders nothing and the races racecheck then sees may be its doing.
HAZARD_TESTS = ("under synccheck", "under racecheck")  # first fixed first


def hazard_rank(test: TestScore) -> int:
    """How early a failed test's cause is fixed for the hazard it proves: 0 for a test that
    judges no hazard, higher first."""
    for rank, ending in enumerate(HAZARD_TESTS):
        if test.name.endswith(ending):
            return len(HAZARD_TESTS) - rank
    return 0


@dataclass(frozen=True)
class FixFirst:
    """What a lab's feedback opens with when it lost points: the diagnosis that explains most of
    them (the cause the failed tests that share it found most often), else the test that lost the
    most, with its pointer into the write-up."""

    hint: str | None  # the kit's diagnosis, None when no failed test had one
    tests: tuple[str, ...]  # the tests it explains
    points: float  # the points those tests lost
    lost: float  # the points the lab's tests (those considered) lost in all
    pointer: str | None = None  # with no diagnosis: the first test's rubric hint, if it has one


def test_cause(test: TestScore) -> str | None:
    """The cause a failed test's hints name most often (numbers aside: the same rule broken at
    another size is the same cause), the first given on a tie; None when none names a cause. A
    test that runs several sizes may prove a loop one phase short at five of them and "no
    product at all" at the one size where that loop runs no phase: the five say it better."""
    counts: dict[str, tuple[int, str]] = {}
    for hint in test.hints[: test.failure_hints]:
        if names_a_cause(hint):
            key = same_rule(hint)
            count, first = counts.get(key, (0, hint))
            counts[key] = (count + 1, first)
    if not counts:
        return None
    # max keeps the first of equals: the order the hints came in. A launch refused for its
    # registers counts after any cause seen in what a launch computed (run.REGISTER_LIMIT_HINT).
    return max(counts.values(), key=lambda entry: (entry[1] != REGISTER_LIMIT_HINT, entry[0]))[1]


def fix_first(tests: list[TestScore]) -> FixFirst | None:
    """Among `tests` (a student's: the tests shown to them), the cause to fix first. Each test
    that lost points counts under its cause (test_cause), and the cause whose tests lost the most
    points wins, the earliest in the rubric's order on a tie; a hazard a sanitizer test proved
    wins before any (HAZARD_TESTS). A cause beats a bare test: only when no test that lost points
    has one (a crash, a speed test's partial credit, hints that say only what was observed) is it
    the test that lost the most, with its pointer into the write-up. A launch refused for its
    registers (run.REGISTER_LIMIT_HINT) is a cause, but any cause proven from computed values goes
    before it. None when nothing was lost or nothing ran."""
    losing = [
        test
        for test in tests
        if test.points < test.max_points and test.status not in (Status.SKIPPED, Status.NOT_BUILT)
    ]
    if not losing:
        return None
    groups: dict[str, tuple[str | None, list[TestScore]]] = {}
    for test in losing:
        cause = test_cause(test)
        key = same_rule(cause) if cause is not None else f"\0{test.name}"
        groups.setdefault(key, (cause, []))[1].append(test)

    def lost(group: list[TestScore]) -> float:
        return round(sum(test.max_points - test.points for test in group), 2)

    def rank(group: tuple[str | None, list[TestScore]]) -> tuple[int, bool, float]:
        # A hazard counts only where its test proved one: a sanitizer test that only defers to
        # the correctness tests ("make them pass first") is a bare test like any other. A launch
        # refused for its registers comes after a cause proven from computed values.
        hazard = max(hazard_rank(test) for test in group[1]) if group[0] is not None else 0
        return hazard, group[0] != REGISTER_LIMIT_HINT, lost(group[1])

    caused = [group for group in groups.values() if group[0] is not None]
    # max keeps the first of equals: the rubric's order
    cause, best = max(caused or list(groups.values()), key=rank)
    pointer = None
    if cause is None:
        pointer = next(iter(best[0].hints[best[0].failure_hints :]), None)
    return FixFirst(
        hint=cause,
        tests=tuple(test.name for test in best),
        points=lost(best),
        lost=lost(losing),
        pointer=pointer,
    )


def same_rule(hint: str) -> str:
    """A hint with its numbers blanked: the same diagnosis at another size or configuration."""
    return re.sub(r"\d+(?:\.\d+)?", "#", hint)


def _apply_partial(score: TestScore, test: RubricTest) -> None:
    partial = test.partial
    assert partial is not None
    value = score.metrics.get(partial.metric)
    if value is None:
        score.points = 0.0
        score.reasons.append(
            f"no {partial.metric} reported, so no credit (the test passed but did not measure)"
        )
        return
    score.points = partial_points(test.points, test, value)
    if score.points < test.points:
        score.reasons.append(
            f"{partial.metric} = {value:.3g}: full points at {partial.full_at:g} or less, none at "
            f"{partial.zero_at:g} or more"
        )


def _status_reason(outcome: Outcome) -> str:
    first = outcome.messages[0] if outcome.messages else ""
    if outcome.status is Status.FAILED:
        return "failed"
    if outcome.status is Status.CRASHED:
        return first if first.startswith("crashed") else f"crashed: {first or 'no result'}"
    if outcome.status is Status.TIMED_OUT:
        return first or "timed out"
    if outcome.status is Status.MISSING:
        return "the test executable does not contain this test (a kit problem: tell your instructor)"
    return first or outcome.status


def score_lab(lab: Lab, build: BuildResult, outcomes: dict[str, Outcome]) -> LabScore:
    if not build.ok:
        return score_unbuilt_lab(lab, build.problem or "not built", build.log_tail)
    tests = [
        score_test(test, outcomes.get(test.name) or Outcome(test.name, Status.MISSING)) for test in lab.tests
    ]
    return LabScore(lab.id, lab.slug, lab.title, tests)


def score_unbuilt_lab(lab: Lab, problem: str, build_log: str = "") -> LabScore:
    """Every test of the lab earns nothing; the problem (and compiler output) is told once, at the lab."""
    tests = [
        TestScore(
            name=test.name,
            points=0.0,
            max_points=test.points,
            status=Status.NOT_BUILT,
            reasons=[f"not run: {problem}"],
            visibility=test.visibility,
        )
        for test in lab.tests
    ]
    return LabScore(lab.id, lab.slug, lab.title, tests, problem=problem, build_log=build_log)


@dataclass(frozen=True)
class Statistics:
    mean: float
    median: float
    low: float
    high: float


def lab_statistics(points: list[float]) -> Statistics | None:
    if not points:
        return None
    return Statistics(
        round(statistics.fmean(points), 2), round(statistics.median(points), 2), min(points), max(points)
    )
