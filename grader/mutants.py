"""Mutants (solutions/NN_slug/mutants/*.cu) and the sample students made from them.

A mutant is a whole variant of one student file whose first comment lines declare what it
must cost (docs/architecture.md, "Mutants"). The sample students are the reference (every lab's
reference files) and one student per mutant (the reference with one file swapped); `validate`
grades them and `grade` with no argument grades them as a class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GraderError
from .rubric import Kit, Lab

HEADER_LINE = re.compile(r"^//\s*kit-(?P<key>[a-z-]+)\s*:\s*(?P<value>.*?)\s*$")
HEADER_KEYS = ("mutant", "file", "expect-loss", "expect-hint", "description")
REFERENCE_ID = "reference"


@dataclass(frozen=True)
class Mutant:
    name: str
    lab: Lab
    path: Path
    kit_file: str  # the student file it replaces
    expect_loss: float | None  # points it must lose at least; None means "all" of the lab's points
    expect_hint: str | None
    description: str = ""

    @property
    def student_id(self) -> str:
        return f"{self.lab.tag}-{self.name}"

    def expected_loss_points(self) -> float:
        return self.lab.max_points if self.expect_loss is None else self.expect_loss


def parse_mutant(path: Path, lab: Lab) -> Mutant:
    """Reads the leading `// kit-KEY: value` lines; errors name the file and line."""
    values: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("//"):
            break  # the header is the comment block at the top
        match = HEADER_LINE.match(stripped)
        if match is None:
            continue  # an ordinary comment in the header block
        key = match.group("key")
        if key not in HEADER_KEYS:
            raise GraderError(
                f"{path}:{number}: unknown header key kit-{key}; the keys are "
                + ", ".join(f"kit-{name}" for name in HEADER_KEYS)
            )
        if key in values:
            raise GraderError(
                f"{path}:{number}: kit-{key} given twice (first at line {values[key][0]}); keep one"
            )
        values[key] = (number, match.group("value"))
    return _mutant_from_header(path, lab, values)


def _mutant_from_header(path: Path, lab: Lab, values: dict[str, tuple[int, str]]) -> Mutant:
    for key in ("mutant", "expect-loss"):
        if key not in values:
            raise GraderError(
                f"{path}:1: missing // kit-{key}: ... in the header comment at the top of the file"
            )
    line, name = values["mutant"]
    if name != path.stem:
        raise GraderError(
            f"{path}:{line}: kit-mutant is {name!r} but the file is {path.name}; make them equal"
        )
    kit_file = _kit_file(path, lab, values.get("file"))
    line, loss_text = values["expect-loss"]
    hint = values.get("expect-hint", (0, ""))[1]
    return Mutant(
        name=name,
        lab=lab,
        path=path,
        kit_file=kit_file,
        expect_loss=_expected_loss(path, line, loss_text),
        expect_hint=hint or None,
        description=values.get("description", (0, ""))[1],
    )


def _kit_file(path: Path, lab: Lab, entry: tuple[int, str] | None) -> str:
    if entry is None:
        if len(lab.student_files) == 1:
            return lab.student_files[0]
        raise GraderError(
            f"{path}:1: lab {lab.id} has several student files; add // kit-file: one of "
            + ", ".join(lab.student_files)
        )
    line, name = entry
    if name not in lab.student_files:
        raise GraderError(
            f"{path}:{line}: kit-file {name!r} is not a student file of lab {lab.id}; use one of "
            + ", ".join(lab.student_files)
        )
    return name


def _expected_loss(path: Path, line: int, text: str) -> float | None:
    if text.lower() == "all":
        return None
    try:
        value = float(text)
    except ValueError:
        raise GraderError(
            f"{path}:{line}: kit-expect-loss {text!r} is not a number; write points, or all"
        ) from None
    if value <= 0:
        raise GraderError(
            f"{path}:{line}: kit-expect-loss must be more than 0 (a mutant that costs nothing tests nothing)"
        )
    return value


def find_mutants(kit: Kit, labs: list[Lab]) -> list[Mutant]:
    return [
        parse_mutant(path, lab)
        for lab in labs
        for path in sorted((kit.solution_dir(lab) / "mutants").glob("*.cu"))
    ]


@dataclass
class SampleStudent:
    student_id: str
    files: dict[str, bytes]  # kit path ("labs/02_naive_matmul/naive_matmul.cu") -> contents
    mutant: Mutant | None = None
    labs: list[Lab] = field(default_factory=list)  # the labs this student is graded on


def reference_files(kit: Kit, labs: list[Lab]) -> dict[str, bytes]:
    files = {}
    for lab in labs:
        for name in lab.student_files:
            source = kit.solution_dir(lab) / name
            if not source.is_file():
                raise GraderError(f"{source} is missing; the reference of lab {lab.id} needs it")
            files[f"labs/{lab.slug}/{name}"] = source.read_bytes()
    return files


def sample_students(kit: Kit, labs: list[Lab], mutant_lab_only: bool) -> list[SampleStudent]:
    """The reference and one student per mutant; with mutant_lab_only, a mutant is graded on its lab only."""
    if not kit.has_solutions:
        raise GraderError(
            "the sample class is made from solutions/, which this kit does not have; "
            "name the submissions to grade"
        )
    reference = reference_files(kit, labs)
    students = [SampleStudent(REFERENCE_ID, reference, None, list(labs))]
    for mutant in find_mutants(kit, labs):
        graded = [mutant.lab] if mutant_lab_only else list(labs)
        files = {
            path: data
            for path, data in reference.items()
            if any(path.startswith(f"labs/{lab.slug}/") for lab in graded)
        }
        files[f"labs/{mutant.lab.slug}/{mutant.kit_file}"] = mutant.path.read_bytes()
        students.append(SampleStudent(mutant.student_id, files, mutant, graded))
    return students


def write_sample_class(students: list[SampleStudent], folder: Path) -> list[tuple[str, Path]]:
    """One submission folder per sample student, files at their kit paths, as a student would zip them."""
    entries = []
    for student in students:
        root = folder / student.student_id
        for relative, data in student.files.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        entries.append((student.student_id, root))
    return entries
