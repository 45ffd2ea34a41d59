"""stage.py: a clean kit copy with only the student's allowed files laid over it."""

from grader.collect import Submission
from grader.stage import stage_submission


def test_the_stage_holds_the_kit_without_builds_grades_or_git(fake_kit, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    stage = stage_submission(fake_kit.kit, Submission("alice"), list(fake_kit.kit.labs), work)
    assert (stage.root / "labs/02_demo/rubric.toml").is_file()
    assert (stage.root / "solutions/02_demo/demo.cu").is_file()  # hidden tests and reference build from here
    assert not (stage.root / "build").exists()
    assert not (stage.root / "grades").exists()
    assert not (stage.root / ".git").exists()
    assert stage.build_dir == stage.root / "build"


def test_the_students_files_replace_the_skeletons_and_nothing_else(fake_kit, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    submission = Submission("alice", files={"02_demo": {"demo.cu": b"student code\n"}})
    stage = stage_submission(fake_kit.kit, submission, list(fake_kit.kit.labs), work)
    assert (stage.root / "labs/02_demo/demo.cu").read_bytes() == b"student code\n"
    assert (stage.root / "labs/03_other/other.cu").read_text().startswith("// skeleton")
    assert (stage.root / "labs/02_demo/tests/test_demo.cpp").read_text() == "// public tests\n"
    # The kit itself is untouched.
    assert (fake_kit.root / "labs/02_demo/demo.cu").read_text().startswith("// skeleton")


def test_only_the_graded_labs_get_the_students_files(fake_kit, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    submission = Submission("a", files={"02_demo": {"demo.cu": b"x\n"}, "03_other": {"other.cu": b"y\n"}})
    stage = stage_submission(fake_kit.kit, submission, [fake_kit.kit.labs[1]], work)
    assert (stage.root / "labs/02_demo/demo.cu").read_text().startswith("// skeleton")
    assert (stage.root / "labs/03_other/other.cu").read_bytes() == b"y\n"


def test_a_class_inside_the_kit_is_not_copied(fake_kit, tmp_path):
    klass = fake_kit.root / "submissions"
    (klass / "alice").mkdir(parents=True)
    (klass / "alice" / "demo.cu").write_text("other students' code\n")
    work = tmp_path / "work"
    work.mkdir()
    stage = stage_submission(fake_kit.kit, Submission("bob"), [], work, exclude=[klass])
    assert not (stage.root / "submissions").exists()
    assert (stage.root / "labs").is_dir()
