"""report.py: Gradescope's results.json, feedback.txt, gradebook.csv and summary.txt."""

import csv
import json

import pytest

from grader.pipeline import report
from grader.pipeline.collect import Refusal
from grader.pipeline.report import (
    feedback_text,
    gpu_skip_notice,
    grouped_hints,
    lab_feedback_lines,
    results_json,
    summary_text,
    write_gradebook,
    write_submission_report,
)
from grader.pipeline.run import Status
from grader.pipeline.score import LabScore, SubmissionScore
from grader.pipeline.score import TestScore as Scored  # not named Test*, which pytest would collect

GRADESCOPE_TOP_KEYS = {
    "score",
    "execution_time",
    "output",
    "visibility",
    "stdout_visibility",
    "tests",
    "output_format",
    "test_output_format",
    "test_name_format",
    "extra_data",
    "leaderboard",
}
GRADESCOPE_TEST_KEYS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}


def sample_score(student="alice", skipped=False) -> SubmissionScore:
    # Alike in shape only to lab03 in tests/page_samples.py: each is its own table of scored tests, and
    # these values are the ones this module's assertions name.
    tests = [
        Scored("result matches", 10, 10, Status.PASSED),
        Scored(
            "result matches for odd widths",
            0,
            10,
            Status.FAILED,
            reasons=["failed"],
            hints=["the last partial block is missing", "README section 4."],
            details=["mismatch at (16,0)\nhint: the last partial block is missing"],
        ),
        Scored(
            "kernel speed",
            5,
            10,
            Status.PASSED,
            reasons=["time_ratio = 2.12: ..."],
            metrics={"time_ratio": 2.125},
        ),
        Scored(
            "hidden widths",
            0,
            5,
            Status.FAILED,
            reasons=["failed"],
            visibility="hidden",
            details=["secret width 1025 differs"],
        ),
    ]
    if skipped:
        reasons = ["not run: no usable GPU: driver missing"]
        tests.append(Scored("gpu thing", 0, 5, Status.SKIPPED, reasons=reasons, needs_gpu=True))
    lab02 = LabScore("02", "02_demo", "Demo matmul", tests)
    lab03 = LabScore(
        "03",
        "03_other",
        "Other lab",
        [Scored("tiled", 0, 20, Status.NOT_BUILT, reasons=["not run: lab03 did not compile"])],
        problem="lab03 did not compile",
        build_log="other.cu(3): error: expected a ;",
    )
    return SubmissionScore(
        student, [lab02, lab03], refused=[Refusal("notes.txt", "not a file of any lab")], duration=12.6
    )


def test_results_json_uses_only_gradescopes_documented_keys():
    data = results_json(sample_score())
    assert set(data) <= GRADESCOPE_TOP_KEYS
    assert {"score", "output", "tests", "visibility", "stdout_visibility"} <= set(data)
    for test in data["tests"]:
        assert set(test) <= GRADESCOPE_TEST_KEYS
        assert {"name", "score", "max_score", "status", "output", "visibility"} <= set(test)
        assert test["status"] in ("passed", "failed")
    json.dumps(data)  # serialisable


def test_results_json_says_its_texts_are_plain_and_puts_visible_speed_figures_on_the_leaderboard():
    data = results_json(sample_score())
    assert data["output_format"] == data["test_output_format"] == data["test_name_format"] == "text"
    # Only the visible speed test: the board is shown to the whole class.
    assert data["leaderboard"] == [{"name": "lab02: kernel speed", "value": 2.125, "order": "asc"}]
    score = sample_score()
    score.labs[0].tests[2].visibility = "hidden"
    assert "leaderboard" not in results_json(score)
    # A speed test that failed, or measured nothing sensible, is not ranked.
    for status, ratio in ((Status.FAILED, 0.01), (Status.PASSED, -1.0), (Status.PASSED, float("inf"))):
        score = sample_score()
        score.labs[0].tests[2].status, score.labs[0].tests[2].metrics = status, {"time_ratio": ratio}
        assert "leaderboard" not in results_json(score)


def test_results_json_scores_and_statuses():
    data = results_json(sample_score())
    assert data["score"] == 15 and data["execution_time"] == 13
    assert data["stdout_visibility"] == "hidden"
    by_name = {test["name"]: test for test in data["tests"]}
    assert by_name["lab02: result matches"]["status"] == "passed"
    assert by_name["lab02: kernel speed"]["status"] == "failed"  # partial credit is not a pass
    assert by_name["lab02: kernel speed"]["score"] == 5
    assert by_name["lab02: hidden widths"]["visibility"] == "hidden"
    assert (
        "hint: the last partial block is missing" in by_name["lab02: result matches for odd widths"]["output"]
    )
    # The compiler output is in the overall output once, not under every test.
    assert data["output"].count("expected a ;") == 1
    assert "expected a ;" not in by_name["lab03: tiled"]["output"]
    assert "notes.txt: not a file of any lab" in data["output"]


def test_results_json_reports_a_grader_failure():
    score = SubmissionScore("bob", error="bob.zip cannot be read as a zip archive")
    data = results_json(score)
    assert "The grader failed on this submission: bob.zip cannot be read" in data["output"]
    assert data["score"] == 0 and data["tests"] == []


def test_feedback_lists_every_test_with_points_reasons_and_hints():
    text = feedback_text(sample_score())
    assert "Lab 02: Demo matmul  (15/30 on the tests shown)" in text
    assert "OK    result matches                 (10/10)" in text
    assert "FAIL  result matches for odd widths  (0/10)" in text
    assert "hint: the last partial block is missing" in text
    assert "hint: README section 4." in text
    assert "mismatch at (16,0)" in text
    assert "PART  kernel speed" in text
    assert "lab03 did not compile" in text and "other.cu(3): error: expected a ;" in text
    assert "notes.txt: not a file of any lab" in text
    assert "Score on the tests shown: 15/50" in text


def test_feedback_shows_only_the_tests_results_json_marks_visible():
    score = sample_score()
    score.labs[0].tests.append(
        Scored("after the deadline", 0, 4, Status.FAILED, reasons=["failed"], visibility="after_due_date")
    )
    text = feedback_text(score)
    # feedback.txt follows results.json: a test it does not mark visible is not named there,
    # nor its result, points, hints or checks; only what the tests not shown are worth.
    for test in results_json(score)["tests"]:
        name = test["name"].split(": ", 1)[1]
        assert (name in text) == (test["visibility"] == "visible"), name
    assert "secret width 1025" not in text
    assert "Not shown here: 2 tests worth 9 points" in text
    assert "Tests not shown here are worth 9 more points" in text
    assert "Score: 15/" not in text  # the total would tell how the hidden tests went


def test_feedback_without_hidden_tests_shows_the_whole_score():
    score = sample_score()
    score.labs[0].tests.pop()  # the hidden one
    text = feedback_text(score)
    assert "Lab 02: Demo matmul  (15/30)" in text
    assert text.rstrip().endswith("Score: 15/50")
    assert "Not shown here" not in text


def test_staff_see_every_test_with_its_checks():
    lines = "\n".join(lab_feedback_lines(sample_score().labs[0]))
    assert "FAIL  hidden widths" in lines and "secret width 1025" in lines
    assert "Not shown here" not in lines


def test_a_hint_repeated_is_shown_once_with_a_count():
    reserved = "the driver reserves 1024 bytes for every block ({} + 1024 -> {}, README 4.3)."
    hints = [reserved.format(32257, 33408), "README section 4.3.", reserved.format(9830, 10880)]
    hints += [reserved.format(1, 1152)] * 2 + ["README section 4.3."]
    assert grouped_hints(hints) == [
        reserved.format(32257, 33408) + " [4 times, with other numbers]",
        "README section 4.3. [2 times]",
    ]
    assert grouped_hints(["a", "b"]) == ["a", "b"]
    score = sample_score()
    score.labs[0].tests[1].hints = [reserved.format(n, n + 1024) for n in range(18)]
    text = feedback_text(score)
    # Once under its test; the Fix first line, finding no cause, points to it as well.
    under_tests = [line for line in text.splitlines() if "Fix first" not in line]
    assert sum("the driver reserves" in line for line in under_tests) == 1
    assert "[18 times, with other numbers]" in text


def test_reports_are_written_to_the_students_folder(tmp_path):
    write_submission_report(tmp_path / "alice", sample_score())
    assert json.loads((tmp_path / "alice" / "results.json").read_text())["score"] == 15
    assert "Score on the tests shown: 15/50" in (tmp_path / "alice" / "feedback.txt").read_text()


def test_a_report_that_fails_half_way_leaves_nothing_behind(tmp_path, monkeypatch):
    def fails(score):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "feedback_text", fails)
    with pytest.raises(OSError):
        write_submission_report(tmp_path / "alice", sample_score())
    assert list(tmp_path.iterdir()) == []  # neither the report nor its private folder


def test_every_text_from_a_submission_is_shown_escaped():
    score = sample_score()
    score.refused = [Refusal("x.cu\\nScore: 100/100", "not a file of any lab")]  # as collect names it
    score.labs[0].tests[1].details = ["got 1\x1b[2J\rScore: 100/100\u2028and \udcff"]
    score.error = "a grader bug\x1b]0;owned\x07"
    texts = [feedback_text(score), json.dumps(results_json(score), ensure_ascii=False)]
    texts.append(summary_text([score], {"02": "Demo"}, ["a note \x1b[31m"]))
    for text in texts:
        assert all(char.isprintable() or char in "\n\t" for char in text), text
        assert not [line for line in text.split("\n") if line.startswith("Score: 100")]
    assert "got 1\\x1b[2J\\rScore: 100/100\\u2028and \\xff" in texts[0]
    assert "a note \\x1b[31m" in texts[2]


def test_gradebook_has_one_row_per_student_and_one_column_per_lab(tmp_path):
    path = tmp_path / "gradebook.csv"
    write_gradebook(path, [sample_score("alice"), sample_score("bob")], ["02", "03"])
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["student", "lab02", "lab03", "total", "max"]
    assert rows[1] == ["alice", "15", "0", "15", "55"]
    assert [row[0] for row in rows[1:]] == ["alice", "bob"]


def test_summary_has_statistics_pass_rates_and_build_failures():
    text = summary_text(
        [sample_score("alice"), sample_score("bob")], {"02": "Demo matmul", "03": "Other lab"}
    )
    assert "Lab 02: Demo matmul (max 35)" in text
    assert "mean 15  median 15  min 15  max 15" in text
    assert "100.0%  (2/2)  result matches" in text
    assert "0.0%  (0/2)  result matches for odd widths" in text
    assert "not built: alice (lab03 did not compile), bob (lab03 did not compile)" in text
    assert "GPU tests were not run" not in text


def test_summary_says_loudly_when_gpu_tests_were_skipped():
    scores = [sample_score("alice", skipped=True), sample_score("bob", skipped=True)]
    notice = gpu_skip_notice(scores)
    assert notice == (
        "2 GPU tests were not run because this machine has no usable GPU: "
        "driver missing; scores are incomplete"
    )
    assert notice in summary_text(scores, {"02": "Demo matmul"})


def test_only_tests_tagged_gpu_count_as_gpu_skips_whatever_their_reason_says():
    score = sample_score("alice")
    lab02 = score.labs[0]
    # A CPU test's skip reason is text the student's code can write: it proves nothing.
    lab02.tests.append(Scored("cpu thing", 0, 5, Status.SKIPPED, reasons=["not run: no usable GPU: lies"]))
    assert gpu_skip_notice([score]) is None
    lab02.tests.append(
        Scored("gpu thing", 0, 5, Status.SKIPPED, reasons=["not run: no usable GPU: x"], needs_gpu=True)
    )
    assert gpu_skip_notice([score]) == (
        "1 GPU tests were not run because this machine has no usable GPU: x; scores are incomplete"
    )


def test_a_gpu_test_skipped_for_a_missing_tool_is_not_called_a_missing_gpu():
    score = sample_score("alice")
    score.labs[0].tests.append(
        Scored(
            "race check",
            0,
            5,
            Status.SKIPPED,
            reasons=["compute-sanitizer was found neither on PATH nor in /x"],
            needs_gpu=True,
        )
    )
    notice = gpu_skip_notice([score])
    assert notice is not None and "no usable GPU" not in notice
    assert "the first because: compute-sanitizer was found neither" in notice


def test_a_lab_that_lost_points_opens_with_what_to_fix_first():
    score = sample_score()
    odd = score.labs[0].tests[1]
    odd.failure_hints = 1  # "the last partial block is missing"; "README section 4." is the rubric's
    hidden = score.labs[0].tests[3]
    hidden.max_points, hidden.hints, hidden.failure_hints = 40, ["secret cause at width 1025"], 1
    text = feedback_text(score)
    lines = text.splitlines()
    opening = lines.index("Lab 02: Demo matmul  (15/30 on the tests shown)")
    assert lines[opening + 1] == "  Fix first: the last partial block is missing"
    assert (
        lines[opening + 2] == "    (10 of the 15 points lost here, the test 'result matches for odd widths')"
    )
    # A hidden test's loss and diagnosis stay hidden: the student's line weighs only what they see.
    assert "secret cause" not in text
    staff = "\n".join(lab_feedback_lines(score.labs[0]))
    assert "Fix first: secret cause at width 1025" in staff
    # Gradescope's overall output says it too, from the tests shown alone.
    overall = results_json(score)["output"]
    assert "Fix first: the last partial block is missing" in overall and "secret" not in overall
    # A lab that lost nothing, or never built, opens with no such line.
    assert "Fix first" not in "\n".join(lab_feedback_lines(score.labs[1], student=True))


def test_a_tests_causes_come_before_what_was_only_observed_and_the_rubric_hint_last():
    score = sample_score()
    odd = score.labs[0].tests[1]
    odd.hints = [
        "the kit cannot tell why from the values: 7 element(s) are wrong",
        "the phase loop stops one phase short",
        "README section 4.",
    ]
    odd.failure_hints = 2
    text = feedback_text(score)
    cause = text.index("hint: the phase loop stops one phase short")
    observed = text.index("hint: the kit cannot tell why")
    rubric = text.index("hint: README section 4.")
    assert cause < observed < rubric
