"""Stage 6, report, for a course's LMS: the grade-import CSV files of Canvas, Moodle and
Blackboard Learn, one column per graded lab, written from the instructor's roster (the LMS's own
export of its students) so that every row is one the LMS knows.

Each format follows its LMS's documentation (docs/instructors.md, "Gradebooks for an LMS", cites
the sections). A submission is matched to a roster row by the roster's identifier column (the
instructor names it, or the first of KNOWN_IDS the roster has): the row's value, or an email's
part before the @, read as a submission's name is read into a student id (collect.id_of_name).
Roster students with no submission get a blank (no grade) or 0, as the instructor chooses;
submissions that match no row are listed loudly (summary.txt, the terminal), never dropped in
silence. Gradescope has no score-import CSV in its documentation: it takes each submission's
results.json, which the grader writes anyway, so `--gradebook gradescope` is refused with that.
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GraderError
from ..rubric import Lab
from .collect import id_of_name
from .report import format_points
from .score import SubmissionScore

FORMATS = ("canvas", "moodle", "blackboard")
REFUSED_FORMATS = {
    "gradescope": "Gradescope takes the scores from each submission's results.json (the autograder "
    "format the grader writes beside feedback.txt); its documentation has no CSV import of scores, "
    "only of the roster. Upload the submissions to a Gradescope programming assignment that runs "
    "the grader, or use --gradebook canvas, moodle or blackboard",
}
# Identifier columns, most specific first: each LMS's export names its own.
KNOWN_IDS = (
    "SIS Login ID",
    "Username",
    "Email address",
    "Email",
    "ID number",
    "SIS User ID",
    "Student ID",
    "SID",
)
ROSTER_LIMIT = 20 << 20  # bytes: a roster of thousands is far smaller
MISSING_CHOICES = ("blank", "zero")


@dataclass(frozen=True)
class Roster:
    path: Path
    header: list[str]
    rows: list[list[str]]  # each as long as the header
    id_column: int

    def column(self, name: str) -> int | None:
        wanted = name.strip().casefold()
        return next((i for i, head in enumerate(self.header) if head.strip().casefold() == wanted), None)


@dataclass
class Matching:
    by_row: dict[int, SubmissionScore] = field(default_factory=dict)  # roster row -> its submission
    unmatched: list[str] = field(default_factory=list)  # submissions that match no roster row
    ambiguous: list[str] = field(default_factory=list)  # submissions that match several rows
    contested: dict[int, list[str]] = field(default_factory=dict)  # rows several submissions match
    # Rows left blank whatever --missing says: a submission may be theirs, but which is not known.
    undecided: set[int] = field(default_factory=set)


def _decode(data: bytes, path: Path) -> str:
    # Blackboard downloads UTF-16 (with its BOM); Excel saves UTF-8 with a BOM; older exports
    # Windows-1252.
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def read_roster(path: Path, id_name: str | None) -> Roster:
    """The roster at `path` (CSV or tab-separated, as the LMS exported it), or a GraderError that
    says what to do: raised before any grading, so that a bad roster costs no time."""
    try:
        if path.stat().st_size > ROSTER_LIMIT:
            raise GraderError(
                f"--roster {path}: larger than {ROSTER_LIMIT >> 20} MiB; is it the LMS's roster export?"
            )
        text = _decode(path.read_bytes(), path)
    except OSError as error:
        raise GraderError(
            f"--roster {path}: cannot be read ({error.strerror}); give the LMS's roster export"
        ) from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise GraderError(f"--roster {path}: empty; export the roster (or the gradebook) from the LMS as CSV")
    try:  # the header's separator, quotes understood ("Last, First";Username is one of two)
        delimiter = csv.Sniffer().sniff(lines[0], delimiters=",;\t").delimiter
    except csv.Error:
        delimiter = max(",;\t", key=lines[0].count)
    table = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    header = [cell.strip() for cell in table[0]] if table else []
    if not header or any(not cell for cell in header):
        raise GraderError(
            f"--roster {path}: its first line is not a header of column names (a blank name in "
            f"{header!r}); give the LMS's export as it came, its header first"
        )
    table = [row for row in table if any(cell.strip() for cell in row)]
    rows = [(row + [""] * len(header))[: len(header)] for row in table[1:]]
    roster = Roster(path, header, rows, 0)
    if id_name:
        found = roster.column(id_name)
        if found is None:
            raise GraderError(
                f"--roster {path}: no column {id_name!r} (its columns: {', '.join(header)}); "
                "name one of them with --roster-id"
            )
    else:
        found = next((i for name in KNOWN_IDS if (i := roster.column(name)) is not None), None)
        if found is None:
            raise GraderError(
                f"--roster {path}: none of the identifier columns the grader knows ({', '.join(KNOWN_IDS)}); "
                f"name the column that holds each student's login or email with --roster-id (its columns: "
                f"{', '.join(header)})"
            )
    return Roster(path, header, rows, found)


def _keys(value: str) -> set[str]:
    value = value.strip()
    if not value:
        return set()
    keys = {id_of_name(value)}
    if "@" in value:
        keys.add(id_of_name(value.split("@", 1)[0]))
    return keys


def match(roster: Roster, scores: list[SubmissionScore]) -> Matching:
    keys: dict[str, list[int]] = {}
    for index, row in enumerate(roster.rows):
        for key in _keys(row[roster.id_column]):
            keys.setdefault(key, []).append(index)
    matching = Matching()
    claims: dict[int, list[SubmissionScore]] = {}
    for score in scores:
        rows = sorted(set(keys.get(score.student_id.casefold(), [])))
        if not rows:
            matching.unmatched.append(score.student_id)
        elif len(rows) > 1:
            matching.ambiguous.append(score.student_id)
            matching.undecided.update(rows)
        else:
            claims.setdefault(rows[0], []).append(score)
    for index, claimed in claims.items():
        if len(claimed) == 1:
            matching.by_row[index] = claimed[0]
        else:  # two uploads for one student (alice.zip and alice@uni.edu.zip): neither wins
            matching.contested[index] = [score.student_id for score in claimed]
            matching.undecided.add(index)
    for index in matching.undecided:
        matching.by_row.pop(index, None)
    return matching


def _grade(matching: Matching, row: int, lab: Lab, missing: str) -> str:
    if row in matching.undecided:
        return ""
    score = matching.by_row.get(row)
    if score is None:
        return "0" if missing == "zero" else ""
    graded = score.lab(lab.id)
    return "" if graded is None else format_points(graded.points)


# What an LMS appends to a column's name in its export: Canvas `Name (12345)`, Blackboard
# `Name [Total Pts: 100 Score] |123456`. The name before it is the assignment's.
LMS_COLUMN_ID = re.compile(r"\s*(\(\d+\)|\[[^\]]*\]\s*\|\s*\d+|\|\s*\d+)\s*$")


def _lab_header(roster: Roster, lab: Lab) -> str:
    """The roster's own header of this lab's column where it has one (the LMS then fills that
    assignment), else a new column's name: `labNN`, as gradebook.csv names it."""
    number = lab.id.lstrip("0") or "0"
    names = {f"lab{lab.id}", f"lab {lab.id}", f"lab{number}", f"lab {number}", lab.title.casefold()}
    names |= {f"lab {lab.id}: {lab.title}".casefold(), f"lab {number}: {lab.title}".casefold()}
    for head in roster.header:
        if LMS_COLUMN_ID.sub("", head).strip().casefold() in names:
            return head
    return f"lab{lab.id}"


def canvas_rows(roster: Roster, labs: list[Lab], matching: Matching, missing: str) -> list[list[str]]:
    needed = ["Student", "ID", "SIS Login ID", "Section"]
    missing_columns = [name for name in needed if roster.column(name) is None]
    if missing_columns:
        raise GraderError(
            f"--gradebook canvas: the roster {roster.path} lacks Canvas's columns "
            f"{', '.join(missing_columns)}; give Canvas's own gradebook export "
            "(Grades > Export > Export Entire Gradebook) as --roster"
        )
    identity = ["Student", "ID"] + (["SIS User ID"] if roster.column("SIS User ID") is not None else [])
    identity += ["SIS Login ID", "Section"]
    columns = [roster.column(name) for name in identity]
    header = identity + [_lab_header(roster, lab) for lab in labs]
    rows = [
        header,
        ["Points Possible"] + [""] * (len(identity) - 1) + [format_points(lab.max_points) for lab in labs],
    ]
    for index, row in enumerate(roster.rows):
        if row[0].strip().casefold() in ("points possible", "test student", "student, test"):
            continue  # the export's own Points Possible row, and Canvas's Test Student
        rows.append(
            [row[c] for c in columns if c is not None]
            + [_grade(matching, index, lab, missing) for lab in labs]
        )
    return rows


def moodle_rows(roster: Roster, labs: list[Lab], matching: Matching, missing: str) -> list[list[str]]:
    header = [roster.header[roster.id_column]] + [_lab_header(roster, lab) for lab in labs]
    rows = [header]
    for index, row in enumerate(roster.rows):
        rows.append([row[roster.id_column]] + [_grade(matching, index, lab, missing) for lab in labs])
    return rows


def blackboard_rows(roster: Roster, labs: list[Lab], matching: Matching, missing: str) -> list[list[str]]:
    username = roster.column("Username")
    if username is None:
        raise GraderError(
            f"--gradebook blackboard: the roster {roster.path} has no Username column, Blackboard's "
            "identifier of a student; give the Grade Center's download (Work Offline > Download) as --roster"
        )
    identity = [name for name in ("Last Name", "First Name", "Username") if roster.column(name) is not None]
    columns = [roster.column(name) for name in identity]
    header = identity + [_lab_header(roster, lab) for lab in labs]
    rows = [header]
    for index, row in enumerate(roster.rows):
        rows.append(
            [row[c] for c in columns if c is not None]
            + [_grade(matching, index, lab, missing) for lab in labs]
        )
    return rows


def _points_differ(roster: Roster, labs: list[Lab]) -> list[str]:
    """Canvas columns reused from the export whose Points Possible is not the lab's maximum: the
    points would land on another scale there."""
    points = next((row for row in roster.rows if row[0].strip().casefold() == "points possible"), None)
    notes = []
    for lab in labs:
        head = _lab_header(roster, lab)
        column = roster.header.index(head) if head in roster.header else None
        if points is None or column is None:
            continue
        try:
            there = float(points[column])
        except ValueError:
            continue
        if abs(there - lab.max_points) > 1e-9:
            notes.append(
                f"gradebook-canvas.csv: Canvas's {head!r} is worth {format_points(there)} points there and "
                f"lab {lab.id} {format_points(lab.max_points)} here: set the assignment's points to "
                f"{format_points(lab.max_points)} in Canvas, or the scores read as a share of another total"
            )
    return notes


WRITERS = {"canvas": canvas_rows, "moodle": moodle_rows, "blackboard": blackboard_rows}


def check_formats(formats: list[str]) -> list[str]:
    """The --gradebook values, each known; a GraderError for one that is not, or that is refused."""
    chosen = []
    for name in formats:
        for part in (piece.strip().lower() for piece in name.split(",")):
            if part in REFUSED_FORMATS:
                raise GraderError(f"--gradebook {part}: {REFUSED_FORMATS[part]}")
            if part not in FORMATS:
                raise GraderError(
                    f"--gradebook {part}: not a format the grader writes; choose from {', '.join(FORMATS)}"
                )
            if part not in chosen:
                chosen.append(part)
    return chosen


@dataclass(frozen=True)
class GradebookRequest:
    formats: list[str]
    roster: Roster
    missing: str = "blank"  # or "zero": what a roster student with no submission gets

    def check(self, labs: list[Lab]) -> None:
        """Each format's needs of the roster, checked before any grading (a GraderError)."""
        for name in self.formats:
            WRITERS[name](self.roster, labs, Matching(), self.missing)


def write_gradebooks(
    out_dir: Path, scores: list[SubmissionScore], labs: list[Lab], request: GradebookRequest
) -> list[str]:
    """Writes gradebook-<lms>.csv for each format; returns the notes for summary.txt (the files,
    and every submission that matched no roster row or several)."""
    matching = match(request.roster, scores)
    notes = []
    for name in request.formats:
        rows = WRITERS[name](request.roster, labs, matching, request.missing)
        target = out_dir / f"gradebook-{name}.csv"
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with open(temporary, "w", newline="", encoding="utf-8") as handle:
            # Blackboard wants every value quoted; Canvas and Moodle read either.
            writer = csv.writer(handle, quoting=csv.QUOTE_ALL) if name == "blackboard" else csv.writer(handle)
            writer.writerows(rows)
        os.replace(temporary, target)
        notes.append(
            f"{target.name}: {len(rows) - (2 if name == 'canvas' else 1)} roster students, for {name}"
        )
    if matching.unmatched:
        notes.append(
            f"NOT IN ANY GRADEBOOK FILE: {len(matching.unmatched)} submission(s) match no row of the "
            f"roster's {request.roster.header[request.roster.id_column]!r} column: "
            f"{', '.join(matching.unmatched)}; "
            "rename the uploads to the students' logins, or add them to the roster"
        )
    for row, students in matching.contested.items():
        value = request.roster.rows[row][request.roster.id_column]
        notes.append(
            f"NOT IN ANY GRADEBOOK FILE: {', '.join(students)} all match the roster row {value!r}, which "
            "is left blank: keep one upload per student (or grade the one you mean with --submission)"
        )
    notes += _points_differ(request.roster, labs) if "canvas" in request.formats else []
    if matching.ambiguous:
        notes.append(
            f"NOT IN ANY GRADEBOOK FILE: {len(matching.ambiguous)} submission(s) match several roster rows: "
            f"{', '.join(matching.ambiguous)}; name a column that tells them apart with --roster-id"
        )
    return notes
