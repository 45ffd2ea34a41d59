"""stage.py: a private work folder holding only the student's accepted files."""

import pytest

from grader.errors import GraderError
from grader.pipeline.collect import Submission
from grader.pipeline.stage import stage_submission


def test_the_students_files_of_the_graded_labs_are_written_and_nothing_else(fake_kit, tmp_path):
    labs = list(fake_kit.kit.labs)
    submission = Submission("a", files={"02_demo": {"demo.cu": b"x\n"}, "03_other": {"other.cu": b"y\n"}})
    stage = stage_submission(submission, [labs[1]], tmp_path / "work")
    assert stage.lab_file(labs[1], "other.cu").read_bytes() == b"y\n"
    assert not stage.lab_file(labs[0], "demo.cu").exists()
    assert sorted(p.name for p in (tmp_path / "work").rglob("*") if p.is_file()) == ["other.cu"]


def test_a_file_that_is_not_a_student_file_is_refused(fake_kit, tmp_path):
    submission = Submission("a", files={"02_demo": {"tests/test_demo.cpp": b"cheat\n"}})
    with pytest.raises(GraderError, match="not one of the lab's student files"):
        stage_submission(submission, list(fake_kit.kit.labs), tmp_path)
