"""The LMS import files (grader/pipeline/gradebooks.py), each checked against a roster laid out as its
LMS's documentation lays out its export (docs/instructors.md, "Gradebooks for an LMS", cites
each): which rows, which columns, what a student with no submission gets, and what is said of a
submission no roster row names."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from grader import cli
from grader.errors import GraderError
from grader.pipeline.collect import LMS_GRADEBOOKS
from grader.pipeline.gradebooks import (
    FORMATS,
    GradebookRequest,
    check_formats,
    match,
    read_roster,
    write_gradebooks,
)
from grader.pipeline.report import FILES_HEADING, summary_section
from grader.pipeline.run import Status
from grader.pipeline.score import LabScore, SubmissionScore
from grader.pipeline.score import TestScore as Scored
from grader.rubric import Lab, RubricTest

LABS = [
    Lab(
        "03",
        "03_tiled_matmul",
        "Tiled",
        "lab03_tests",
        ("t.cu",),
        (RubricTest("t", 30), RubricTest("u", 8)),
        Path(),
    ),
    Lab("06", "06_occupancy", "Occupancy", "lab06_tests", ("o.cu",), (RubricTest("v", 14),), Path()),
]


def scores() -> list[SubmissionScore]:
    def student(name: str, lab03: float | None, lab06: float | None) -> SubmissionScore:
        labs = []
        if lab03 is not None:
            labs.append(LabScore("03", "03_tiled_matmul", "Tiled", [Scored("t", lab03, 38, Status.PASSED)]))
        if lab06 is not None:
            labs.append(LabScore("06", "06_occupancy", "Occupancy", [Scored("v", lab06, 14, Status.PASSED)]))
        return SubmissionScore(name, labs)

    # alice by her login, bob by his email's local part, zed on no roster.
    return [student("alice", 38, 14), student("bob", 21.5, None), student("zed", 10, 10)]


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(path.open(encoding="utf-8", newline="")))


# Canvas: Grades > Export, as its importer reads it: Student, ID, SIS User ID, SIS Login ID,
# Section, then assignments named "Name (id)"; a Points Possible row under the header.
CANVAS_EXPORT = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Lab 03 (1234),Quiz 1 (99)\n"
    "    Points Possible,,,,,38.00,10.00\n"
    '"Smith, Alice",101,S1,alice,CS 101,,9\n'
    '"Jones, Bob",102,S2,bob@uni.edu,CS 101,,8\n'
    '"Wu, Carol",103,S3,carol,CS 101,,7\n'
    '"Student, Test",104,,,CS 101,,\n'
)


def test_canvas_fills_the_exported_assignment_adds_new_ones_and_keeps_every_roster_student(tmp_path):
    roster_file = tmp_path / "canvas.csv"
    roster_file.write_text(CANVAS_EXPORT, encoding="utf-8-sig")  # as Excel saves it
    request = GradebookRequest(["canvas"], read_roster(roster_file, None), "zero")
    assert request.roster.header[request.roster.id_column] == "SIS Login ID"
    notes = write_gradebooks(tmp_path, scores(), LABS, request)
    rows = _rows(tmp_path / "gradebook-canvas.csv")
    # The lab 03 column is the export's own (its id), lab 06 a new assignment.
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 03 (1234)", "lab06"]
    assert rows[1] == ["Points Possible", "", "", "", "", "38", "14"]
    assert rows[2:] == [
        ["Smith, Alice", "101", "S1", "alice", "CS 101", "38", "14"],
        ["Jones, Bob", "102", "S2", "bob@uni.edu", "CS 101", "21.50", ""],  # submitted no lab 06
        ["Wu, Carol", "103", "S3", "carol", "CS 101", "0", "0"],  # no submission: --missing zero
    ]  # the export's Points Possible row and Canvas's Test Student are not students
    assert any("zed" in note and note.startswith("NOT IN ANY GRADEBOOK FILE") for note in notes)


def test_canvas_needs_canvass_own_export(tmp_path):
    roster_file = tmp_path / "moodle.csv"
    roster_file.write_text("Email address,First name\na@uni.edu,A\n", encoding="utf-8")
    request = GradebookRequest(["canvas"], read_roster(roster_file, None))
    with pytest.raises(GraderError, match="lacks Canvas's columns Student, ID, SIS Login ID, Section"):
        request.check(LABS)


# Moodle: an export with its user fields; the import maps an identifier (email address, username,
# ID number) and each grade column by hand, a blank cell being "no grade".
MOODLE_EXPORT = (
    "First name,Surname,ID number,Institution,Department,Email address,Last downloaded from this course\n"
    "Alice,Smith,1001,Uni,CS,alice@uni.edu,1700000000\n"
    "Bob,Jones,1002,Uni,CS,bob@uni.edu,1700000000\n"
    "Carol,Wu,1003,Uni,CS,carol@uni.edu,1700000000\n"
)


def test_moodle_gets_the_identifier_column_and_a_column_per_lab(tmp_path):
    roster_file = tmp_path / "moodle.csv"
    roster_file.write_text(MOODLE_EXPORT, encoding="utf-8")
    request = GradebookRequest(["moodle"], read_roster(roster_file, None))  # --missing blank
    write_gradebooks(tmp_path, scores(), LABS, request)
    assert _rows(tmp_path / "gradebook-moodle.csv") == [
        ["Email address", "lab03", "lab06"],
        ["alice@uni.edu", "38", "14"],
        ["bob@uni.edu", "21.50", ""],
        ["carol@uni.edu", "", ""],
    ]


# Blackboard Learn: the Grade Center's download (Work Offline), tab-delimited UTF-16; the
# Username identifies a student and a column's id its "|id"; a column without one is new.
BLACKBOARD_DOWNLOAD = (
    '"Last Name"\t"First Name"\t"Username"\t"Student ID"\t"Last Access"\t"Availability"\t'
    '"Lab 06 [Total Pts: 14 Score] |123456"\n'
    '"Smith"\t"Alice"\t"alice"\t"1001"\t"2026-11-20"\t"Available"\t""\n'
    '"Jones"\t"Bob"\t"bob"\t"1002"\t"2026-11-20"\t"Available"\t""\n'
)


def test_blackboard_quotes_every_value_and_fills_the_downloaded_column(tmp_path):
    roster_file = tmp_path / "bb.xls"
    roster_file.write_bytes(BLACKBOARD_DOWNLOAD.encode("utf-16"))
    request = GradebookRequest(["blackboard"], read_roster(roster_file, None))
    assert request.roster.header[request.roster.id_column] == "Username"
    write_gradebooks(tmp_path, scores(), LABS, request)
    text = (tmp_path / "gradebook-blackboard.csv").read_text(encoding="utf-8")
    assert (
        text.splitlines()[0]
        == '"Last Name","First Name","Username","lab03","Lab 06 [Total Pts: 14 Score] |123456"'
    )
    assert text.splitlines()[1:] == ['"Smith","Alice","alice","38","14"', '"Jones","Bob","bob","21.50",""']


def test_a_roster_without_a_known_identifier_or_the_named_one_is_refused_with_its_columns(tmp_path):
    roster_file = tmp_path / "r.csv"
    roster_file.write_text("Name,Login\nAlice,alice\n", encoding="utf-8")
    with pytest.raises(GraderError, match="--roster-id .*its columns: Name, Login"):
        read_roster(roster_file, None)
    with pytest.raises(GraderError, match="no column 'Email'"):
        read_roster(roster_file, "Email")
    roster = read_roster(roster_file, "login")  # the instructor's name, in any case
    assert match(roster, scores()).unmatched == ["bob", "zed"]
    with pytest.raises(GraderError, match="cannot be read"):
        read_roster(tmp_path / "missing.csv", None)
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    with pytest.raises(GraderError, match="empty"):
        read_roster(tmp_path / "empty.csv", None)


def test_two_roster_rows_that_both_name_a_submission_leave_it_out_loudly(tmp_path):
    roster_file = tmp_path / "r.csv"
    roster_file.write_text("Email\nalice@uni.edu\nalice@other.edu\n", encoding="utf-8")
    request = GradebookRequest(["moodle"], read_roster(roster_file, None))
    notes = write_gradebooks(tmp_path, scores()[:1], LABS, request)
    assert any("match several roster rows: alice" in note for note in notes)
    assert _rows(tmp_path / "gradebook-moodle.csv")[1:] == [
        ["alice@uni.edu", "", ""],
        ["alice@other.edu", "", ""],
    ]


def test_formats_are_checked_and_gradescope_is_refused_with_what_to_do_instead():
    assert check_formats(["canvas,moodle", "canvas"]) == ["canvas", "moodle"]
    with pytest.raises(GraderError, match="results.json"):
        check_formats(["gradescope"])
    with pytest.raises(GraderError, match="choose from canvas, moodle, blackboard"):
        check_formats(["sakai"])
    assert {f"gradebook-{name}.csv" for name in FORMATS} == LMS_GRADEBOOKS  # no student id takes one


def test_the_cli_refuses_a_gradebook_without_a_roster_before_grading(tmp_path, capsys):
    assert cli.main(["grade", "--gradebook", "canvas", "--out", str(tmp_path / "o")]) == 2
    assert "--gradebook needs --roster FILE" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing graded, nothing written


def test_the_summary_names_the_files_and_the_submissions_left_out(tmp_path):
    roster_file = tmp_path / "moodle.csv"
    roster_file.write_text(MOODLE_EXPORT, encoding="utf-8")
    from grader.pipeline.grade import write_class_files

    request = GradebookRequest(["moodle"], read_roster(roster_file, None))
    write_class_files(tmp_path, scores(), LABS, (), request)
    summary = (tmp_path / "summary.txt").read_text(encoding="utf-8")
    assert "gradebook-moodle.csv: 3 roster students, for moodle" in summary
    assert "NOT IN ANY GRADEBOOK FILE: 1 submission(s)" in summary and "zed" in summary
    assert "About the class folder" not in summary  # the class folder had nothing said of it
    files = summary_section(summary, FILES_HEADING)  # what the terminal repeats
    assert files[0] == "gradebook-moodle.csv: 3 roster students, for moodle" and len(files) == 2
    if (tmp_path / "dashboard.html").exists():  # where Jinja2 is installed
        dashboard = (tmp_path / "dashboard.html").read_text(encoding="utf-8")
        assert "Files for the LMS" in dashboard and "NOT IN ANY GRADEBOOK FILE" in dashboard


def test_two_uploads_for_one_student_leave_the_row_blank_even_with_missing_zero(tmp_path):
    roster_file = tmp_path / "moodle.csv"
    roster_file.write_text(MOODLE_EXPORT, encoding="utf-8")
    request = GradebookRequest(["moodle"], read_roster(roster_file, None), "zero")
    two = [*scores(), SubmissionScore("alice@uni.edu", [])]  # alice.zip and alice@uni.edu.zip
    notes = write_gradebooks(tmp_path, two, LABS, request)
    rows = _rows(tmp_path / "gradebook-moodle.csv")
    assert rows[1] == ["alice@uni.edu", "", ""]  # neither upload's grade, and not a 0
    assert rows[3] == ["carol@uni.edu", "0", "0"]  # no submission at all: --missing zero
    assert any("alice, alice@uni.edu all match the roster row 'alice@uni.edu'" in note for note in notes)


def test_a_submission_two_rows_match_leaves_both_blank_even_with_missing_zero(tmp_path):
    roster_file = tmp_path / "r.csv"
    roster_file.write_text("Email\nalice@uni.edu\nalice@other.edu\ncarol@uni.edu\n", encoding="utf-8")
    request = GradebookRequest(["moodle"], read_roster(roster_file, None), "zero")
    write_gradebooks(tmp_path, scores()[:1], LABS, request)
    assert _rows(tmp_path / "gradebook-moodle.csv")[1:] == [
        ["alice@uni.edu", "", ""],
        ["alice@other.edu", "", ""],
        ["carol@uni.edu", "0", "0"],
    ]


def test_a_semicolon_roster_with_a_quoted_comma_and_a_roster_without_a_header(tmp_path):
    roster_file = tmp_path / "r.csv"
    roster_file.write_text('"Last, First";Username\n"Smith, Alice";alice\n', encoding="utf-8")
    roster = read_roster(roster_file, None)
    assert roster.header == ["Last, First", "Username"] and roster.rows == [["Smith, Alice", "alice"]]
    roster_file.write_text(",,,\nalice,1,2,3\n", encoding="utf-8")
    with pytest.raises(GraderError, match="not a header of column names"):
        read_roster(roster_file, None)


def test_canvas_says_when_a_reused_assignment_is_worth_other_points_and_finds_lab_3(tmp_path):
    roster_file = tmp_path / "canvas.csv"
    roster_file.write_text(
        "Student,ID,SIS Login ID,Section,Lab 3 (55),Occupancy (56)\n"
        "    Points Possible,,,,100,14\n"
        '"Smith, Alice",101,alice,A,,\n',
        encoding="utf-8",
    )
    notes = write_gradebooks(
        tmp_path, scores(), LABS, GradebookRequest(["canvas"], read_roster(roster_file, None))
    )
    assert _rows(tmp_path / "gradebook-canvas.csv")[0][-2:] == ["Lab 3 (55)", "Occupancy (56)"]
    assert any("'Lab 3 (55)' is worth 100 points there and lab 03 38 here" in note for note in notes)
    assert not any("Occupancy (56)" in note for note in notes)  # 14 and 14


def test_roster_options_without_a_gradebook_are_refused(capsys):
    assert cli.main(["grade", "--roster-id", "Email"]) == 2
    assert "--roster-id: read only with --gradebook" in capsys.readouterr().err
