"""pipeline/grade.py and cli.py end to end, on the fake kit with the fake cmake and Catch2."""

import csv
import io
import json
import re
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from grader import cli
from grader import options as grading
from grader.confine.proc import ProcessResult, run_limited
from grader.engine.schedule import Need, Scheduler, Stopped
from grader.errors import GraderError
from grader.pipeline import grade as pipeline
from grader.pipeline.collect import CLASS_FILES, LMS_GRADEBOOKS, collect_submission
from grader.pipeline.grade import check_lab, grade_class, grade_submission, stoppable_pool
from grader.pipeline.report import LOUD, check_lines
from grader.pipeline.report_pages import DASHBOARD_PAGE, FEEDBACK_PAGE, pages_available
from grader.pipeline.score import CheckResult
from grader.progress import PlainProgress, QuietProgress
from grader.staff.mutants import sample_students
from grader.staff.validate import run_validate, untested_tests
from grader.tests.conftest import LAB02_TESTS, LAB03_TESTS

GOOD_02 = b'#include "demo.h"\nint demo_host(int width) { return width; }\n'
GOOD_03 = b'#include "other.h"\nint other() { return 3; }\n'
TRANSPOSED = (
    b'#include "demo.h"\n// FAKE-OUTCOME: fail:mismatch\\nhint: looks transposed | '
    b"result matches the host reference for small widths\nint demo_host(int w) { return w; }\n"
)
SLOW = b"// FAKE-OUTCOME: metric:time_ratio=2.125 | kernel speed is close to the reference kernel\n"
BROKEN = b'#include "demo.h"\n// FAKE-COMPILE-ERROR\nint demo_host(int w) { return w }\n'


def folder(path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


def test_a_good_submission_earns_every_point(fake_kit, tmp_path):
    submission = collect_submission(
        folder(tmp_path / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03}), fake_kit.kit
    )
    score = grade_submission(fake_kit.kit, submission, fake_kit.options())
    assert score.error is None
    assert (score.points, score.max_points) == (60, 60)
    assert not list((tmp_path / "work").iterdir())  # the work folder is cleaned up


def test_failures_partial_credit_and_a_missing_lab(fake_kit, tmp_path):
    path = folder(tmp_path / "bob", {"demo.cu": TRANSPOSED + SLOW, "notes.txt": b"hi"})
    score = grade_submission(fake_kit.kit, collect_submission(path, fake_kit.kit), fake_kit.options())
    lab02, lab03 = score.labs
    assert lab02.points == 40 - 10 - 5
    assert lab02.tests[0].hints == ["looks transposed", "README section 3: row from y, col from x."]
    assert lab03.points == 0 and str(lab03.problem).startswith("not submitted: other.cu")
    assert score.refused[0].path == "notes.txt"


def test_a_submissions_labs_are_graded_side_by_side(fake_kit, tmp_path):
    # A test of lab 02 and one of lab 03 each wait for the other to start: one lab after another,
    # neither would see the other, and both would fail.
    spec = json.loads((fake_kit.root / "fake_kit.json").read_text())
    met = {"lab02_tests": ("02", "03"), "lab03_tests": ("03", "02")}
    for exe, (mine, theirs) in met.items():
        first = spec[exe]["tests"][0]
        first["behaviour"] = f"meet:{tmp_path / mine}:{tmp_path / theirs}"
    (fake_kit.root / "fake_kit.json").write_text(json.dumps(spec))
    submission = collect_submission(
        folder(tmp_path / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03}), fake_kit.kit
    )
    score = grade_submission(fake_kit.kit, submission, fake_kit.options())
    assert score.error is None
    assert [lab.lab_id for lab in score.labs] == ["02", "03"]  # in the labs' order, as ever
    assert (score.points, score.max_points) == (60, 60)


def test_a_grader_error_in_one_lab_keeps_the_others_graded(fake_kit, tmp_path, monkeypatch):
    # Side by side, lab 03 is graded whatever befalls lab 02: the submission's error names lab
    # 02's trouble, and lab 02 appears as not graded, as a lab the grader did not reach did before.
    grade_lab = pipeline.Engine._grade_lab

    def failing_lab02(self, harness, lab_harness, *rest):
        if lab_harness.lab.id == "02":
            raise GraderError("lab 02's build cache is unreadable")
        return grade_lab(self, harness, lab_harness, *rest)

    monkeypatch.setattr(pipeline.Engine, "_grade_lab", failing_lab02)
    submission = collect_submission(
        folder(tmp_path / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03}), fake_kit.kit
    )
    score = grade_submission(fake_kit.kit, submission, fake_kit.options())
    assert score.error == "lab 02's build cache is unreadable"
    lab02, lab03 = score.labs
    assert (lab02.lab_id, lab02.points) == ("02", 0) and "not graded" in str(lab02.problem)
    assert (lab03.lab_id, lab03.points, lab03.problem) == ("03", 20, None)


def with_answers_in_lab03(fake_kit):
    """The fake kit's lab 03 with an answers.toml that one more test reads, as lab 03's does."""
    rubric = fake_kit.root / "labs/03_other/rubric.toml"
    rubric.write_text(
        rubric.read_text().replace('["other.cu"]', '["other.cu", "answers.toml"]')
        + '\n[[test]]\nname = "answers file is complete"\npoints = 5\n'
    )
    spec_path = fake_kit.root / "fake_kit.json"
    spec = json.loads(spec_path.read_text())
    spec["lab03_tests"]["data_files"] = {"KIT_ANSWERS_PATH": "answers.toml"}
    spec["lab03_tests"]["tests"].append(
        {
            "name": "answers file is complete",
            "tags": "[lab03][concepts]",
            "behaviour": "reads:KIT_ANSWERS_PATH",
        }
    )
    spec_path.write_text(json.dumps(spec))
    return fake_kit.reload()


def test_code_without_its_answers_file_is_still_graded(fake_kit, tmp_path):
    kit = with_answers_in_lab03(fake_kit)
    answered = grade_submission(
        kit.kit,
        collect_submission(
            folder(tmp_path / "a", {"other.cu": GOOD_03, "answers.toml": b"x = 1\n"}), kit.kit
        ),
        kit.options(labs=["03"]),
    )
    assert answered.labs[0].points == 25
    # answers.toml is a data file: without it, the code still earns its points; the test that
    # reads the file fails, saying it is missing.
    unanswered = grade_submission(
        kit.kit,
        collect_submission(folder(tmp_path / "b", {"other.cu": GOOD_03}), kit.kit),
        kit.options(labs=["03"]),
    )
    (lab03,) = unanswered.labs
    assert lab03.problem is None and lab03.points == 20
    (lost,) = [test for test in lab03.tests if test.points < test.max_points]
    assert lost.name == "answers file is complete" and "missing" in " ".join(lost.details + lost.reasons)
    # Without the code, nothing of the lab can run.
    no_code = grade_submission(
        kit.kit,
        collect_submission(folder(tmp_path / "c", {"answers.toml": b"x = 1\n"}), kit.kit),
        kit.options(labs=["03"]),
    )
    assert str(no_code.labs[0].problem).startswith("not submitted: other.cu")


def test_a_compile_error_costs_only_its_lab(fake_kit, tmp_path):
    path = folder(tmp_path / "carol", {"demo.cu": BROKEN, "other.cu": GOOD_03})
    score = grade_submission(fake_kit.kit, collect_submission(path, fake_kit.kit), fake_kit.options())
    lab02, lab03 = score.labs
    assert lab02.points == 0 and "error: expected" in lab02.build_log
    assert lab03.points == 20


def test_a_kit_that_cannot_configure_is_a_grader_failure_not_the_students(fake_kit, tmp_path):
    (fake_kit.root / "FAKE_CONFIGURE_FAIL").write_text("")
    path = folder(tmp_path / "ann", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    score = grade_submission(fake_kit.kit, collect_submission(path, fake_kit.kit), fake_kit.options())
    assert "kit problem: CMake could not configure the kit" in str(score.error)
    assert score.labs[0].problem == "not graded: the grader failed on this submission"


def test_a_rubric_the_executable_disagrees_with_is_a_kit_error(fake_kit, tmp_path):
    spec = json.loads((fake_kit.root / "fake_kit.json").read_text())
    spec["lab03_tests"]["tests"][0]["name"] = "renamed in the tests but not in the rubric"
    (fake_kit.root / "fake_kit.json").write_text(json.dumps(spec))
    path = folder(tmp_path / "dan", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    score = grade_submission(fake_kit.kit, collect_submission(path, fake_kit.kit), fake_kit.options())
    lab02, lab03 = score.labs
    assert lab02.points == 40
    assert "kit problem" in str(lab03.problem) and "lab03" in str(score.error)


def test_grade_class_writes_every_report_even_when_grading_raises(fake_kit, tmp_path, monkeypatch):
    klass = tmp_path / "class"
    folder(klass / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    with zipfile.ZipFile(klass / "bob.zip", "w") as archive:
        archive.writestr("bob/demo.cu", TRANSPOSED)
    (klass / "corrupt.zip").write_bytes(b"not a zip")
    entries = cli.find_submissions([klass])
    out = tmp_path / "grades"
    shown = io.StringIO()
    scores = grade_class(fake_kit.kit, entries, fake_kit.options(), out, PlainProgress(shown))
    assert [s.student_id for s in scores] == ["alice", "bob", "corrupt"]
    lines = shown.getvalue().splitlines()
    assert "  bob: building lab02" in lines
    assert "  bob: lab02: running kernel speed is close to the reference kernel" in lines
    assert any(re.fullmatch(r"\[\d/3\] bob: 30/60  \(time left: .*\)", line) for line in lines)
    for student in ("alice", "bob", "corrupt"):
        assert (out / student / "results.json").is_file() and (out / student / "feedback.txt").is_file()
    corrupt = json.loads((out / "corrupt" / "results.json").read_text())
    assert "corrupt.zip: cannot be read as a zip archive" in corrupt["output"]
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert rows[1:] == [
        ["alice", "40", "20", "60", "60"],
        ["bob", "30", "0", "30", "60"],
        ["corrupt", "0", "0", "0", "60"],
    ]
    # A damaged upload is the student's to send again, not a failure of the grader.
    summary = (out / "summary.txt").read_text()
    assert "The grader failed" not in summary and all(score.error is None for score in scores)
    assert "Submissions not read in full" in summary and "  corrupt: corrupt.zip: cannot be read" in summary
    # The class's own files are exactly those no student id may take (collect.CLASS_FILES).
    written = {path.name for path in out.iterdir() if path.is_file()}
    assert written == CLASS_FILES - LMS_GRADEBOOKS - ({DASHBOARD_PAGE} if pages_available() else set())
    if pages_available() is None:  # the pages, from the same scores
        for student in ("alice", "bob", "corrupt"):
            # Every student page of the class: never a hidden test's name (the dashboard has it).
            assert "on hidden widths" not in (out / student / FEEDBACK_PAGE).read_text()
        dashboard = (out / DASHBOARD_PAGE).read_text()
        assert 'href="alice/feedback.html"' in dashboard and "3 submissions" in dashboard
        assert "result matches on hidden widths" in dashboard
    else:
        assert pages_available() in summary


def test_no_grader_folder_appears_in_any_file_a_student_gets(fake_kit, tmp_path):
    where = (
        b'#include "demo.h"\n// FAKE-OUTCOME: where | result matches the host reference for small widths\n'
        b"int demo_host(int w) { return w; }\n"
    )
    klass = tmp_path / "class"
    folder(klass / "carol", {"demo.cu": where})
    out = tmp_path / "grades"
    options = fake_kit.options()
    scores = grade_class(fake_kit.kit, cli.find_submissions([klass]), options, out, QuietProgress())
    failed = scores[0].labs[0].tests[0]
    assert failed.status == "failed"
    message = "\n".join(failed.details + failed.reasons)
    assert "cannot read <work folder>/" in message and "answers.toml; ran <" in message  # still says what
    folders = [
        str(options.work_root),
        str(fake_kit.root),
        str(options.harness_dir),
        "grader-cache-",
        "grade-carol-",
    ]
    files = [path for path in (out / "carol").rglob("*") if path.is_file()]
    assert {path.name for path in files} >= {"feedback.txt", "results.json"}
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert [folder for folder in folders if folder in text] == [], path.name


def test_a_lab_not_submitted_is_one_line_of_feedback(fake_kit, tmp_path):
    klass = tmp_path / "class"
    folder(klass / "dave", {"demo.cu": GOOD_02})
    out = tmp_path / "grades"
    grade_class(fake_kit.kit, cli.find_submissions([klass]), fake_kit.options(), out, QuietProgress())
    feedback = (out / "dave" / "feedback.txt").read_text()
    lab03 = [line for line in feedback.splitlines() if "Lab 03" in line or "not run" in line]
    assert lab03 == ["Lab 03: Other lab  (0/20): not submitted: other.cu"], feedback


def test_an_unexpected_exception_still_writes_results(fake_kit, tmp_path, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(pipeline, "build_submission_lab", explode)
    folder(tmp_path / "class" / "alice", {"demo.cu": GOOD_02})
    scores = grade_class(
        fake_kit.kit,
        [("alice", tmp_path / "class" / "alice")],
        fake_kit.options(),
        tmp_path / "out",
        QuietProgress(),
    )
    assert "internal grader error: RuntimeError: disk on fire" in str(scores[0].error)
    results = json.loads((tmp_path / "out" / "alice" / "results.json").read_text())
    assert "disk on fire" in results["output"] and len(results["tests"]) == 6


def test_grade_class_refuses_a_folder_that_is_not_an_earlier_run(fake_kit, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine\n")
    with pytest.raises(GraderError, match="never overwrites"):
        grade_class(fake_kit.kit, [], fake_kit.options(), tmp_path / "out", QuietProgress())
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine\n"


def skeletons_fail(fake_kit, only: Callable[[str], bool] = lambda name: True) -> None:
    """The fake skeletons fail their tests (those `only` picks), as the kit's skeletons do."""
    for slug, name, tests in (("02_demo", "demo.cu", LAB02_TESTS), ("03_other", "other.cu", LAB03_TESTS)):
        path = fake_kit.root / "labs" / slug / name
        fails = "".join(
            f"// FAKE-OUTCOME: fail:not written yet | {test}\n" for test, _, _ in tests if only(test)
        )
        path.write_text(fails + path.read_text())


def test_validate_judges_the_reference_and_the_mutants(fake_kit):
    skeletons_fail(fake_kit)
    report = run_validate(fake_kit.kit, fake_kit.options(), QuietProgress())  # both labs, once
    assert report.loads_counted_by == "Nsight Compute"  # the fake kit's harness has no counter
    rows = {(v.student, v.lab_id): v for v in report.verdicts}
    assert set(rows) == {
        ("reference", "02"),
        ("reference", "03"),
        ("broken", "02"),
        ("transposed", "02"),
        ("skeleton", "02"),
        ("skeleton", "03"),
    }
    assert all(v.verdict == "ok" for v in report.verdicts), report.verdicts
    assert rows["broken", "02"].actual_loss == 40 and rows["transposed", "02"].hint_shown == "first"
    assert rows["skeleton", "02"].expected_loss == "all" and rows["skeleton", "02"].actual_loss == 40
    # "transposed" fails the first two tests; "broken" does not build, so it tells nothing, and
    # the skeletons, which fail everything, do not count as catching anything.
    untested = untested_tests(report, list(fake_kit.kit.labs))
    assert untested == {"02": [test.name for test in fake_kit.kit.labs[0].tests[2:]]}


def test_validate_only_grades_the_named_mutants_beside_the_references(fake_kit):
    report = run_validate(fake_kit.kit, fake_kit.options(), QuietProgress(), frozenset({"transposed"}))
    assert {(v.student, v.lab_id) for v in report.verdicts} == {
        ("reference", "02"),
        ("reference", "03"),
        ("transposed", "02"),
    }
    with pytest.raises(GraderError, match="no mutant or variant named nosuch"):
        run_validate(fake_kit.kit, fake_kit.options(), QuietProgress(), frozenset({"nosuch"}))


def test_validate_fails_a_skeleton_that_passes_a_test_unless_the_lab_declares_it(fake_kit):
    skeletons_fail(fake_kit, lambda name: "zero" not in name)  # it passes the width-zero test
    report = run_validate(fake_kit.kit, fake_kit.options(["02"]), QuietProgress())
    (row,) = [v for v in report.verdicts if v.student == "skeleton"]
    assert row.verdict == "FAIL" and row.note.endswith(
        "vacuous test; or, if a skeleton may pass it, "
        "declare it in [skeleton] may_pass with the reason): host function rejects a width of zero"
    )
    mutants = fake_kit.root / "solutions/02_demo/mutants.toml"
    mutants.write_text(
        '[[skeleton.may_pass]]\ntest = "host function rejects a width of zero"\n'
        'reason = "the skeleton checks its arguments already"\n\n' + mutants.read_text()
    )
    report = run_validate(fake_kit.reload().kit, fake_kit.options(["02"]), QuietProgress())
    (row,) = [v for v in report.verdicts if v.student == "skeleton"]
    assert (row.verdict, row.expected_loss, row.actual_loss) == ("ok", "all but 1 declared", 35)


VARIANTS = """
[[variant]]
name = "plus_zero"
description = "returns width + 0: written differently, as correct"
[[variant.edit]]
find = "  return width;\\n"
replace = "  return width + 0;\\n"

[[variant]]
name = "wrong_after_all"
[[variant.edit]]
find = "  return width;\\n"
replace = "  // FAKE-OUTCOME: fail:mismatch | host function rejects a width of zero\\n  return width;\\n"
"""


def test_validate_grades_correct_variants_beside_the_mutants_and_fails_one_that_loses_a_point(fake_kit):
    path = fake_kit.root / "solutions/02_demo/mutants.toml"
    path.write_text(path.read_text() + VARIANTS)
    kit = fake_kit.reload().kit
    report = run_validate(kit, fake_kit.options(["02"]), QuietProgress())
    rows = {v.student: v for v in report.verdicts}
    assert rows["variant plus_zero"].verdict == "ok"
    assert rows["variant wrong_after_all"].verdict == "FAIL"
    assert "host function rejects a width of zero" in rows["variant wrong_after_all"].note
    # A test a variant fails is not one a mutant catches: it still counts as untested.
    assert "host function rejects a width of zero" in untested_tests(report, list(kit.labs))["02"]
    # Variants are graded by validate only: the sample class stays the reference and the mutants.
    assert [s.student_id for s in sample_students(kit, list(kit.labs), mutant_lab_only=True)] == [
        "reference",
        "lab02-broken",
        "lab02-transposed",
    ]


def test_validate_fails_a_mutant_that_loses_too_little(fake_kit):
    skeletons_fail(fake_kit)
    path = fake_kit.root / "solutions/02_demo/mutants.toml"
    path.write_text(path.read_text().replace("expect_loss = 20", "expect_loss = 30"))
    report = run_validate(fake_kit.kit, fake_kit.options(["02"]), QuietProgress())
    assert [(v.student, v.verdict) for v in report.failed] == [("transposed", "FAIL")]


NO_GPU = "skip:no usable GPU: no CUDA-capable device is detected"


def lab02_tests_behave(fake_kit, behaviour: str, chosen: Callable[[dict], bool]) -> None:
    """The fake lab 02 tests that `chosen` picks behave as `behaviour` says (fakes/fake_catch2.py)."""
    spec = json.loads((fake_kit.root / "fake_kit.json").read_text())
    for test in spec["lab02_tests"]["tests"]:
        if chosen(test):
            test["behaviour"] = behaviour
    (fake_kit.root / "fake_kit.json").write_text(json.dumps(spec))


def check_lab02(fake_kit, source: bytes) -> CheckResult:
    """make check of lab 02, with `source` as the student's demo.cu."""
    (fake_kit.root / "labs/02_demo/demo.cu").write_bytes(source)
    options = fake_kit.options()
    build_dir = fake_kit.root / "build/student"
    return check_lab(
        fake_kit.kit, fake_kit.kit.labs[0], build_dir, options.build, options.run, lambda line: None
    )


def test_validate_without_a_gpu_says_not_run_instead_of_fail(fake_kit):
    lab02_tests_behave(fake_kit, NO_GPU, lambda test: "[gpu]" in test["tags"])
    # A skip overrides the mutant's own FAKE-OUTCOME lines only where the real test would skip.
    mutants = fake_kit.root / "solutions/02_demo/mutants.toml"
    mutants.write_text(mutants.read_text().replace("// FAKE-OUTCOME:", "// (on a GPU it fails)"))
    skeletons_fail(fake_kit, lambda name: "zero" in name)  # its GPU tests skip, its CPU test fails
    report = run_validate(fake_kit.kit, fake_kit.options(["02"]), QuietProgress())
    verdicts = {v.student: v.verdict for v in report.verdicts}
    assert verdicts == {
        "reference": "not run (no GPU)",
        "transposed": "not run (no GPU)",
        "broken": "ok",
        "skeleton": "not run (no GPU: 4 of 5 tests)",
    }


def test_check_runs_a_sanitizers_modes_as_grading_does(fake_kit, monkeypatch):
    # A student's make check shows the messages grading gives: the modes in one probe process.
    seen: list[dict[str, str] | None] = []
    real = pipeline.run_tests

    def spy(*args, **kwargs):
        seen.append(args[6] if len(args) > 6 else kwargs.get("env"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_tests", spy)
    check_lab02(fake_kit, TRANSPOSED)
    assert seen and all(env == {"KIT_SANITIZER_MODES_TOGETHER": "1"} for env in seen)


def test_check_runs_only_visible_tests_and_explains_performance(fake_kit, tmp_path):
    lab02_tests_behave(fake_kit, "metric:time_ratio_vs_cublas=1.8", lambda test: "speed" in test["name"])
    result = check_lab02(fake_kit, TRANSPOSED)
    text = "\n".join(check_lines(result))
    assert "FAIL  result matches the host reference for small widths" in text
    assert "hint: looks transposed" in text
    assert "OK    host function rejects a width of zero" in text
    assert (
        "PERF  kernel speed is close to the reference kernel" in text and "time_ratio_vs_cublas = 1.8" in text
    )
    assert "result matches on hidden widths" not in text  # hidden tests are not run by check
    assert "Score: 15/35" in text and not result.earned_all


def test_check_says_loudly_how_many_gpu_tests_could_not_run(fake_kit):
    lab02_tests_behave(fake_kit, NO_GPU, lambda test: "[gpu]" in test["tags"])
    result = check_lab02(fake_kit, GOOD_02)
    lines = check_lines(result)
    assert "Score: 5/35" in lines and not result.earned_all
    notice = (
        "3 GPU tests were not run because this machine has no usable GPU: no CUDA-capable device is detected"
    )
    assert lines[-4:] == ["", LOUD, notice, LOUD]  # the three visible [gpu] tests; the CPU one passed


def test_cli_grade_validate_and_handout_on_the_fake_kit(fake_kit, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grading, "configs", lambda args: (fake_kit.options().build, fake_kit.options().run))
    kit = ["--kit", str(fake_kit.root)]
    assert cli.main(["handout", *kit]) == 0
    assert cli.main(["handout", "--check", *kit]) == 0
    (fake_kit.root / "labs/02_demo/demo.cu").write_text("stale\n")
    assert cli.main(["handout", "--check", *kit]) == 1
    assert "run make handout" in capsys.readouterr().err

    out = tmp_path / "sample"
    assert cli.main(["grade", *kit, "--labs", "02", "--out", str(out)]) == 0
    pages = ["dashboard.html"] if pages_available() is None else []
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "gradebook.csv",
            "grading.json",
            "lab02-broken",
            "lab02-transposed",
            "reference",
            "summary.txt",
            *pages,
        ]
    )
    capsys.readouterr()
    assert cli.main(["grade", *kit, "--labs", "02", "--out", str(out)]) == 0  # resumed: nothing left
    assert "3 already graded: kept" in capsys.readouterr().out
    # A report the grader failed on is not kept: the next run grades that submission again.
    record = out / "lab02-broken" / "score.json"
    failed = json.loads(record.read_text())
    record.write_text(json.dumps({**failed, "error": "kit problem: a tool was killed"}))
    assert cli.main(["grade", *kit, "--labs", "02", "--out", str(out)]) == 0
    assert "2 already graded: kept" in capsys.readouterr().out
    assert json.loads(record.read_text())["error"] == failed["error"]
    assert cli.main(["grade", *kit, "--labs", "03", "--out", str(out)]) == 2  # other labs: refused
    assert "resume it with --labs 02" in capsys.readouterr().err

    assert cli.main(["handout", *kit]) == 0
    skeletons_fail(fake_kit)
    assert cli.main(["validate", *kit, "--labs", "02"]) == 0
    table = capsys.readouterr().out
    assert "transposed  02" in table and "skeleton    02" in table and "FAIL" not in table


@pytest.mark.parametrize("command", [[], ["check"], ["grade"], ["validate"], ["handout"], ["bench"]])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(command + ["--help"])
    assert exited.value.code == 0
    assert "usage: python -m grader" in capsys.readouterr().out


def test_grading_without_a_gpu_builds_for_one_architecture_unless_told_otherwise():
    from grader.pipeline.build import NO_GPU_BUILD_TYPE, NO_GPU_CUDA_ARCH, BuildConfig, build_for_this_machine

    build, note = build_for_this_machine(BuildConfig(), [])
    assert build.cuda_arch == NO_GPU_CUDA_ARCH and "no GPU here" in note
    assert build.defines["KIT_PROBES"] == "OFF"  # only GPU tests run them
    assert build.build_type == NO_GPU_BUILD_TYPE  # nothing is timed
    assert build_for_this_machine(BuildConfig(build_type="Debug"), [])[0].build_type == "Debug"  # asked for
    assert build_for_this_machine(BuildConfig(), ["0"]) == (BuildConfig(), "")  # the GPU's own
    given = BuildConfig(cuda_arch="90")
    build, note = build_for_this_machine(given, [])
    assert build.cuda_arch == "90" and build.defines["KIT_PROBES"] == "OFF"  # --cuda-arch wins
    assert "probes" in note


@pytest.mark.parametrize("command", [["grade"], ["validate"], ["bench"]])
def test_grade_validate_and_bench_build_alike_without_a_gpu(command, fake_kit, monkeypatch, capsys):
    from grader.pipeline.build import NO_GPU_BUILD_TYPE, NO_GPU_CUDA_ARCH

    monkeypatch.setattr(grading, "visible_gpus", lambda: [])
    kit = fake_kit.kit
    options = grading.grade_options(kit, cli.build_parser().parse_args(command))
    assert options.build.cuda_arch == NO_GPU_CUDA_ARCH and options.build.defines["KIT_PROBES"] == "OFF"
    assert options.build.build_type == NO_GPU_BUILD_TYPE
    assert "no GPU here" in capsys.readouterr().out
    monkeypatch.setattr(grading, "visible_gpus", lambda: ["0"])
    options = grading.grade_options(kit, cli.build_parser().parse_args(command))
    assert options.build.cuda_arch is None and "KIT_PROBES" not in options.build.defines
    assert options.build.build_type == "Release"


def test_the_engine_sizes_its_gpu_slots_from_the_gpus_memory_unless_told(fake_kit, monkeypatch):
    from grader.engine import gpus

    monkeypatch.setattr(gpus, "gpu_memory_mib", lambda lanes: [24576])
    parse = cli.build_parser().parse_args
    assert parse(["grade"]).gpu_slots is None  # the engine's choice
    for given, slots in ((None, 5), (3, 3)):
        options = replace(fake_kit.options(), gpus=("0",), gpu_slots=given)
        with pipeline.Engine(fake_kit.kit, options) as engine:
            assert engine.scheduler.gpu_slots == slots
    with pytest.raises(GraderError, match="--gpu-slots must be at least 1"):
        grading.grade_options(fake_kit.kit, parse(["grade", "--gpu-slots", "0"]))


def test_the_engine_keeps_as_many_submissions_in_flight_as_cpu_slots_at_most_16_a_gpu(fake_kit):
    def in_flight(cpu_slots: int, gpus: tuple[str, ...], asked: int | None = None) -> int:
        options = replace(fake_kit.options(), cpu_slots=cpu_slots, gpus=gpus, in_flight=asked)
        with pipeline.Engine(fake_kit.kit, options) as engine:
            return engine.in_flight

    assert in_flight(16, ("0",)) == 16  # one H200 node: measured best (bench/RESULTS.md)
    assert in_flight(128, ("0",)) == 16  # many CPUs, one GPU: more would only wait for it
    assert in_flight(64, ("0", "1", "2", "3")) == 64
    assert in_flight(2, ()) == 2  # no GPU: the CPU slots
    assert in_flight(1, ()) == 2  # at least two
    assert in_flight(128, ("0",), asked=40) == 40  # --in-flight wins


@pytest.mark.parametrize("command", [["grade"], ["validate"], ["bench"]])
def test_in_flight_sets_the_submissions_graded_at_once_and_refuses_zero(command, fake_kit, monkeypatch):
    monkeypatch.setattr(grading, "visible_gpus", lambda: [])
    kit = fake_kit.kit
    parse = cli.build_parser().parse_args
    assert grading.grade_options(kit, parse([*command, "--in-flight", "3"])).in_flight == 3
    assert grading.grade_options(kit, parse(command)).in_flight is None  # the engine's own choice
    with pytest.raises(GraderError, match="--in-flight must be at least 1"):
        grading.grade_options(kit, parse([*command, "--in-flight", "0"]))


@pytest.mark.parametrize("gpus", [[], ["0"]])
def test_check_and_submit_build_as_grading_does_here_in_the_folder_they_share(fake_kit, monkeypatch, gpus):
    """A student's check and submit share build/student: built alike, neither rebuilds the other's,
    and without a GPU both take the grader's policy (one architecture, no probes, Untimed)."""
    from grader.pipeline.build import BuildConfig, build_for_this_machine

    monkeypatch.setattr(grading, "visible_gpus", lambda: gpus)
    seen: dict[str, BuildConfig] = {}

    def fake_check(kit, lab, build_dir, build, run, slots):
        seen["check"] = build
        raise SystemExit(0)

    def fake_pack(kit, lab, out, build_dir, build):
        seen["submit"] = build
        raise SystemExit(0)

    monkeypatch.setattr(cli, "check_lab", fake_check)
    monkeypatch.setattr(cli, "pack_lab", fake_pack)
    for command in ("check", "submit"):
        with pytest.raises(SystemExit):
            cli.main([command, "--lab", "02", "--kit", str(fake_kit.root)])
    expected = build_for_this_machine(BuildConfig(), gpus)[0]
    assert seen["check"] == seen["submit"] == expected
    assert (expected.build_type == "Release") is bool(gpus)


def test_ctrl_c_in_a_stoppable_pool_kills_its_processes_and_skips_its_queued_work(tmp_path):
    """make check and grade_all run their tests in a stoppable pool: Ctrl-C must not wait for
    the running tests to end, nor start the queued ones."""
    scheduler = Scheduler(cpu_slots=1, gpus=[], gpu_slots=1)
    started: list[str] = []

    def sleeper(name: str) -> ProcessResult:
        with scheduler.hold(Need.CPU):
            started.append(name)
            return run_limited(["sleep", "30"], cwd=tmp_path, timeout=60, output_limit=100)

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with stoppable_pool(scheduler, 4) as pool:
            running = pool.submit(sleeper, "first")
            queued = [pool.submit(sleeper, f"queued {i}") for i in range(3)]
            while not started:
                time.sleep(0.01)
            raise KeyboardInterrupt
    assert time.monotonic() - start < 5
    assert running.result().returncode == -9  # killed, not run to its end
    assert started == ["first"]  # the others found the run stopped, or never ran
    for future in queued:
        assert future.cancelled() or isinstance(future.exception(), Stopped)
    assert scheduler.wait_until_idle(timeout=0)


def test_a_report_that_cannot_be_written_costs_only_its_submission(fake_kit, tmp_path, monkeypatch):
    klass = tmp_path / "class"
    folder(klass / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    folder(klass / "bob", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    written = pipeline.write_submission_report

    def fails_for_bob(where: Path, score, pages=None) -> None:
        if score.student_id == "bob":
            raise OSError(36, "File name too long")
        written(where, score, pages)

    monkeypatch.setattr(pipeline, "write_submission_report", fails_for_bob)
    out = tmp_path / "out"
    scores = grade_class(
        fake_kit.kit, cli.find_submissions([klass]), fake_kit.options(), out, QuietProgress()
    )
    alice, bob = scores
    assert alice.error is None and (out / "alice" / "results.json").is_file()
    assert "its report could not be written: OSError" in str(bob.error)
    summary = (out / "summary.txt").read_text()
    assert (
        "The grader failed on these submissions" in summary
        and "  bob: its report could not be written" in summary
    )
    assert (out / "gradebook.csv").is_file()


def test_make_grade_exits_non_zero_only_for_a_problem_of_the_grader(fake_kit, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grading, "configs", lambda args: (fake_kit.options().build, fake_kit.options().run))
    klass = tmp_path / "class"
    folder(klass / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    folder(klass / "labs", {"demo.cu": GOOD_02})  # a student called labs
    (klass / "corrupt.zip").write_bytes(b"not a zip")
    (klass / "demo.cu").write_bytes(GOOD_02)  # a stray file at the top
    single = folder(tmp_path / "zed", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    grade = ["grade", "--kit", str(fake_kit.root), "--unconfined"]
    out = tmp_path / "out"
    assert cli.main([*grade, "--out", str(out), "--submission", str(single), str(klass)]) == 0
    said = capsys.readouterr().out
    assert "note: demo.cu: a file at the top of the class folder" in said
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert [row[0] for row in rows[1:]] == ["alice", "corrupt", "labs", "zed"]
    assert [row[-2] for row in rows[1:]] == ["60", "0", "40", "60"]
    # A failure of the grader itself (here, a bug in the build stage) is what fails the run.
    monkeypatch.setattr(pipeline, "build_submission_lab", lambda *args: 1 / 0)
    assert cli.main([*grade, "--out", str(tmp_path / "out2"), str(klass)]) == 1
    assert "the grader failed on 2 submission(s): alice, labs;" in capsys.readouterr().err


def test_a_class_graded_in_two_parts_gets_one_dashboard_and_gradebook_from_its_reports(fake_kit, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    folder(first / "alice", {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    folder(second / "bob", {"demo.cu": TRANSPOSED})
    out, out2 = tmp_path / "out", tmp_path / "out2"
    grade_class(fake_kit.kit, cli.find_submissions([first]), fake_kit.options(), out, QuietProgress())
    grade_class(fake_kit.kit, cli.find_submissions([second]), fake_kit.options(), out2, QuietProgress())
    shutil.copytree(out2 / "bob", out / "bob")  # the second machine's reports, copied in
    (out / "carol").mkdir()  # a student whose grading was cut short: no score.json
    scores = pipeline.rewrite_class_files(out, fake_kit.options().labs)
    assert [score.student_id for score in scores] == ["alice", "bob"]
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert [row[0] for row in rows[1:]] == ["alice", "bob"]
    summary = (out / "summary.txt").read_text()
    assert "carol: no complete report" in summary
    if pages_available() is None:
        assert 'href="bob/feedback.html"' in (out / DASHBOARD_PAGE).read_text()
    with pytest.raises(GraderError, match="not a folder make grade wrote"):
        pipeline.graded_labs(first)


def test_a_plain_log_says_what_is_running_every_heartbeat_while_nothing_finishes(fake_kit, tmp_path):
    """In a log (no terminal) a long run shows where it stands, not only when a student finishes."""
    spec = fake_kit.root / "fake_kit.json"
    spec.write_text(spec.read_text().replace('"behaviour": "pass"', '"behaviour": "sleep:0.6"'))
    klass = tmp_path / "class"
    for student in ("alice", "bob"):
        folder(klass / student, {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    shown = io.StringIO()
    progress = PlainProgress(shown, stages=False, heartbeat=0.2)
    grade_class(fake_kit.kit, cli.find_submissions([klass]), fake_kit.options(), tmp_path / "out", progress)
    lines = shown.getvalue().splitlines()
    beats = [line for line in lines if re.match(r"\[\d/2\] grading [12]: ", line)]
    assert beats, lines
    assert any(re.search(r"(alice|bob): [^;]*lab0[23]: running ", line) for line in beats), beats
    # Each student's two labs are graded side by side, and the line names both.
    assert any(re.search(r"(alice|bob): [^;]*lab02[^;]*, [^;]*lab03", line) for line in beats), beats
    assert not any("  alice: " in line for line in lines)  # stages=False: no line per stage
    count = len(lines)
    time.sleep(0.5)
    assert len(shown.getvalue().splitlines()) == count, "the heartbeat went on after the run"


def test_what_is_running_shows_each_lab_of_a_submission_graded_side_by_side():
    """A submission's labs report their stages from threads of their own: the line shown for it
    names every lab's, in lab order, not whichever lab spoke last."""
    shown = io.StringIO()
    progress = PlainProgress(shown, stages=False, heartbeat=0)
    progress.start(2, 0)
    progress.stage("alice", "staging")
    progress.stage("alice", "lab03: running 4 tests in one process", "lab03")
    progress.stage("alice", "building lab02", "lab02")
    progress.stage("bob", "staging")
    progress.stage("alice", "lab02 scored: 40/60", "lab02")
    assert progress.running.shown() == [
        ("alice", "lab02 scored: 40/60, lab03: running 4 tests in one process"),
        ("bob", "staging"),
    ]
    progress.finished("alice", "40/60")
    assert progress.running.shown() == [("bob", "staging")]


def test_reports_come_out_in_the_order_the_submissions_were_taken_up(fake_kit, tmp_path):
    """Four submissions in flight on two slots: the earliest one's tests go first wherever it can
    use a slot, so reports stream out one after another rather than all at the end."""
    spec = fake_kit.root / "fake_kit.json"
    spec.write_text(spec.read_text().replace('"behaviour": "pass"', '"behaviour": "sleep:0.15"'))
    klass = tmp_path / "class"
    students = ["s0", "s1", "s2", "s3"]
    for student in students:
        folder(klass / student, {"demo.cu": GOOD_02, "other.cu": GOOD_03})
    shown = io.StringIO()
    options = replace(fake_kit.options(), in_flight=4)
    grade_class(fake_kit.kit, cli.find_submissions([klass]), options, tmp_path / "out", PlainProgress(shown))
    finished = [m.group(1) for m in re.finditer(r"^\[\d/4\] (s\d): ", shown.getvalue(), re.MULTILINE)]
    # As taken up on an idle machine; a busy one may let a build of the next submission end first.
    assert sorted(finished) == students and finished[0] in ("s0", "s1") and finished[-1] in ("s2", "s3"), (
        finished
    )


def test_a_run_told_the_harness_is_built_only_reads_it(fake_kit, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grading, "configs", lambda args: (fake_kit.options().build, fake_kit.options().run))
    kit = ["--kit", str(fake_kit.root), "--labs", "02"]
    harness = tmp_path / "harness"
    assert cli.main(["grade", *kit, "--harness-built", "--out", str(tmp_path / "a")]) == 2
    assert "give --harness-dir DIR too" in capsys.readouterr().err
    assert (
        cli.main(
            ["grade", *kit, "--harness-dir", str(harness), "--harness-built", "--out", str(tmp_path / "a")]
        )
        == 2
    )
    assert "holds no built harness" in capsys.readouterr().err
    assert cli.main(["grade", *kit, "--slurm", "--harness-built", "--out", str(tmp_path / "a")]) == 2
    assert "grade --slurm builds the harness" in capsys.readouterr().err

    assert cli.main(["grade", *kit, "--harness-dir", str(harness), "--out", str(tmp_path / "a")]) == 0
    before = {path: path.stat().st_mtime_ns for path in harness.rglob("*")}
    assert (
        cli.main(
            ["grade", *kit, "--harness-dir", str(harness), "--harness-built", "--out", str(tmp_path / "b")]
        )
        == 0
    )
    assert {path: path.stat().st_mtime_ns for path in harness.rglob("*")} == before  # nothing rebuilt
    first, second = (
        (tmp_path / "a" / "gradebook.csv").read_text(),
        (tmp_path / "b" / "gradebook.csv").read_text(),
    )
    assert first == second and "reference" in second
