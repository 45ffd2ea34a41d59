"""Mutants (solutions/NN_slug/mutants.toml) and the sample students made from them.

A mutant is one of the common mistakes, written as exact edits of a reference file (its KIT
markers stripped) together with what it must cost (docs/design/grading.md, "Mutants"):

    [[mutant]]
    name = "grid_not_rounded_up"
    file = "naive_matmul.cu"          # which student file; optional when the lab has one
    expect_loss = 30                  # points it must lose at least, or "all"
    expect_hint = "round the number of blocks up"
    description = "computes the grid as width / block_size, ..."

    [[mutant.edit]]                   # one or more, applied in order
    find = "  int blocks = (width + block_size - 1) / block_size;\n"
    replace = "  int blocks = width / block_size;\n"

A `[[variant]]` is the opposite: a correct solution written differently (another block shape,
a padded tile, ternary guards, unrolled loops), with a name, a file, a description and its
edits, and no expected loss: it must keep every point the reference earns.

Each `find` must occur exactly once in the file as edited so far, so that a change to the
reference that a mutant's edit no longer fits is an error naming the mutant and the edit, not
a mutant that silently stopped testing anything. The sample students are the reference (every
lab's reference files) and one student per mutant (the reference with its file edited);
`validate` grades them and `grade` with no argument grades them as a class.

`validate` also grades each lab's bare skeleton (the files of labs/NN_slug/ as handed out):
it must fail every scored test, except those the lab's `[skeleton]` table lets it pass, each
with the reason a do-nothing solution may pass it:

    [skeleton]

    [[skeleton.may_pass]]
    test = "answers file is complete and well formed"
    reason = "..."
"""

from __future__ import annotations

import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GraderError
from ..pipeline.grade import GradeOptions, grade_class
from ..pipeline.gradebooks import GradebookRequest
from ..pipeline.score import SubmissionScore
from ..progress import Progress
from ..rubric import Kit, Lab
from .handout import MARKER

MUTANTS_FILE = "mutants.toml"
MUTANT_KEYS = {"name", "file", "expect_loss", "expect_hint", "description", "edit"}
VARIANT_KEYS = {"name", "file", "description", "edit"}
EDIT_KEYS = {"find", "replace"}
SKELETON_KEYS = {"may_pass"}
MAY_PASS_KEYS = {"test", "reason"}
REFERENCE_ID = "reference"


# Edit and Mutant are alike in shape only to ChartSpec and Lab in rubric.py: frozen records of
# their own fields.
@dataclass(frozen=True)
class Edit:
    find: str
    replace: str


@dataclass(frozen=True)
class Mutant:
    name: str
    lab: Lab
    kit_file: str  # the student file it replaces
    expect_loss: float | None  # points it must lose at least; None means "all" of the lab's points
    expect_hint: str | None
    description: str
    edits: tuple[Edit, ...]
    source: bytes  # the reference file with its markers stripped and the edits applied
    kind: str = "mutant"  # or "variant": a correct solution that must keep every point

    @property
    def student_id(self) -> str:
        return f"{self.lab.tag}-variant-{self.name}" if self.is_variant else f"{self.lab.tag}-{self.name}"

    @property
    def is_variant(self) -> bool:
        return self.kind == "variant"

    def expected_loss_points(self) -> float:
        if self.is_variant:
            return 0.0
        return self.lab.max_points if self.expect_loss is None else self.expect_loss


@dataclass(frozen=True)
class Skeleton:
    """A lab's skeleton as handed out, and the tests it may pass (test name -> why)."""

    lab: Lab
    may_pass: dict[str, str]

    @property
    def student_id(self) -> str:
        return f"{self.lab.tag}-skeleton"


def strip_markers(text: str) -> str:
    """The reference as a student would have written it: without the KIT marker lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not MARKER.match(line.rstrip("\n")))


def _declared(kit: Kit, lab: Lab) -> tuple[Path, dict]:
    """The lab's mutants.toml, parsed ({} without one), and its path."""
    path = kit.solution_dir(lab) / MUTANTS_FILE
    if not path.is_file():
        return path, {}
    try:
        declared = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise GraderError(f"{path}: not valid TOML ({error}); fix it and run make validate again") from None
    unknown = set(declared) - {"mutant", "variant", "skeleton"}
    if unknown:
        raise GraderError(
            f"{path}: unknown table {', '.join(sorted(unknown))}; only [skeleton], [[mutant]] and "
            "[[variant]] entries belong here"
        )
    return path, declared


def load_skeleton(kit: Kit, lab: Lab) -> Skeleton:
    """The lab's [skeleton] table: the tests its skeleton may pass, each with its reason."""
    path, declared = _declared(kit, lab)
    table = declared.get("skeleton", {})
    where = f"{path}: [skeleton]"
    if not isinstance(table, dict) or set(table) - SKELETON_KEYS:
        raise GraderError(f"{where}: its only key is may_pass, a [[skeleton.may_pass]] per test")
    entries = table.get("may_pass", [])
    if not isinstance(entries, list):
        raise GraderError(f"{where}: may_pass is a [[skeleton.may_pass]] per test, with test and reason")
    may_pass: dict[str, str] = {}
    for number, entry in enumerate(entries, 1):
        if (
            not isinstance(entry, dict)
            or set(entry) != MAY_PASS_KEYS
            or not all(isinstance(entry[key], str) and entry[key].strip() for key in MAY_PASS_KEYS)
        ):
            raise GraderError(
                f'{where}, may_pass {number}: write test = "<test name>" and reason = "<why a '
                'skeleton may pass it>", both non-empty, and nothing else'
            )
        if lab.test(entry["test"]) is None:
            raise GraderError(
                f"{where}, may_pass {number}: lab {lab.id}'s rubric scores no test named "
                f"{entry['test']!r}; copy the name from labs/{lab.slug}/rubric.toml"
            )
        if entry["test"] in may_pass:
            raise GraderError(f"{where}: {entry['test']!r} is listed twice; list each test once")
        may_pass[entry["test"]] = entry["reason"].strip()
    return Skeleton(lab, may_pass)


def load_mutants(kit: Kit, lab: Lab) -> list[Mutant]:
    """The mutants a lab declares, by name, then its variants; none without a mutants.toml."""
    path, declared = _declared(kit, lab)
    found = []
    for kind in ("mutant", "variant"):
        entries = [
            _mutant(path, lab, number, entry, kind) for number, entry in enumerate(declared.get(kind, []), 1)
        ]
        names = [entry.name for entry in entries]
        for name in names:
            if names.count(name) > 1:
                raise GraderError(f"{path}: two {kind}s are named {name!r}; rename one")
        found += sorted(entries, key=lambda entry: entry.name)
    return found


def _mutant(path: Path, lab: Lab, number: int, entry: dict, kind: str = "mutant") -> Mutant:
    where = f"{path}: {kind} {entry.get('name', f'number {number}')!r}"
    keys = MUTANT_KEYS if kind == "mutant" else VARIANT_KEYS
    unknown = set(entry) - keys
    if unknown:
        raise GraderError(
            f"{where}: unknown key {', '.join(sorted(unknown))}; the keys are {', '.join(sorted(keys))}"
            + ("" if kind == "mutant" else " (a variant keeps every point: it has no expected loss)")
        )
    name = entry.get("name")
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise GraderError(
            f'{where}: name must be letters, digits and underscores, e.g. name = "no_bounds_check"'
        )
    kit_file = _kit_file(where, lab, entry.get("file"))
    reference_path = path.parent / kit_file
    if not reference_path.is_file():
        raise GraderError(f"{where}: the reference {reference_path} is missing")
    reference = strip_markers(reference_path.read_text(encoding="utf-8"))
    text = reference
    edits = _edits(where, entry.get("edit"))
    for index, edit in enumerate(edits, 1):
        found = text.count(edit.find)
        if found != 1:
            raise GraderError(
                f"{where}, edit {index}: its find text occurs {found} times in {kit_file} (KIT markers "
                f"stripped, earlier edits applied), not once; copy a unique passage from the reference:\n"
                + edit.find
            )
        text = text.replace(edit.find, edit.replace)
    if text == reference:
        raise GraderError(f"{where}: its edits leave the reference as it was; it would test nothing")
    return Mutant(
        name=name,
        lab=lab,
        kit_file=kit_file,
        expect_loss=_expected_loss(where, entry.get("expect_loss")) if kind == "mutant" else 0.0,
        expect_hint=_optional_text(where, entry, "expect_hint"),
        description=_optional_text(where, entry, "description") or "",
        edits=edits,
        source=text.encode(),
        kind=kind,
    )


def _kit_file(where: str, lab: Lab, name: object) -> str:
    if name is None:
        if len(lab.student_files) == 1:
            return lab.student_files[0]
        raise GraderError(
            f"{where}: lab {lab.id} has several student files; add file = one of "
            + ", ".join(lab.student_files)
        )
    if name not in lab.student_files:
        raise GraderError(
            f"{where}: file {name!r} is not a student file of lab {lab.id}; use one of "
            + ", ".join(lab.student_files)
        )
    return str(name)


def _edits(where: str, entries: object) -> tuple[Edit, ...]:
    if not isinstance(entries, list) or not entries:
        raise GraderError(f"{where}: no [[mutant.edit]]; a mutant is at least one edit of the reference")
    edits = []
    for index, entry in enumerate(entries, 1):
        unknown = set(entry) - EDIT_KEYS
        if unknown or not isinstance(entry.get("find"), str) or not isinstance(entry.get("replace"), str):
            raise GraderError(
                f'{where}, edit {index}: an edit is find = "..." and replace = "...", nothing else'
            )
        if not entry["find"]:
            raise GraderError(f"{where}, edit {index}: find is empty; name the passage to change")
        edits.append(Edit(entry["find"], entry["replace"]))
    return tuple(edits)


def _expected_loss(where: str, value: object) -> float | None:
    if value == "all":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GraderError(f'{where}: expect_loss must be a number of points or "all", not {value!r}')
    if value <= 0:
        raise GraderError(
            f"{where}: expect_loss must be more than 0 (a mutant that costs nothing tests nothing)"
        )
    return float(value)


def _optional_text(where: str, entry: dict, key: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise GraderError(f"{where}: {key} must be text")
    return value or None


def find_mutants(kit: Kit, labs: list[Lab]) -> list[Mutant]:
    return [mutant for lab in labs for mutant in load_mutants(kit, lab)]


@dataclass
class SampleStudent:
    student_id: str
    files: dict[str, bytes]  # kit path ("labs/02_naive_matmul/naive_matmul.cu") -> contents
    mutant: Mutant | None = None
    labs: list[Lab] = field(default_factory=list)  # the labs this student is graded on
    skeleton: Skeleton | None = None  # a lab's skeleton as handed out (mutant is then None)


def _student_files_in(folder: Path, lab: Lab, what_to_do: str) -> dict[str, bytes]:
    """The lab's student files as `folder` holds them, at their kit paths (labs/NN_slug/...)."""
    files = {}
    for name in lab.student_files:
        source = folder / name
        if not source.is_file():
            raise GraderError(f"{source} is missing; {what_to_do}")
        files[f"labs/{lab.slug}/{name}"] = source.read_bytes()
    return files


def reference_files(kit: Kit, labs: list[Lab]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for lab in labs:
        files |= _student_files_in(kit.solution_dir(lab), lab, f"the reference of lab {lab.id} needs it")
    return files


def skeleton_files(kit: Kit, lab: Lab) -> dict[str, bytes]:
    """The lab's student files as handed out (labs/NN_slug/), at their kit paths."""
    return _student_files_in(kit.lab_dir(lab), lab, f"run make handout to generate lab {lab.id}'s skeleton")


def sample_students(
    kit: Kit, labs: list[Lab], mutant_lab_only: bool, variants: bool = False, skeletons: bool = False
) -> list[SampleStudent]:
    """The reference and one student per mutant (and per variant, with `variants`); with
    mutant_lab_only, a mutant or variant is graded on its lab only. With `skeletons`, one more
    student per lab: its skeleton as handed out, graded on that lab."""
    if not kit.has_solutions:
        raise GraderError(
            "the sample class is made from solutions/, which this kit does not have; "
            "name the submissions to grade"
        )
    reference = reference_files(kit, labs)
    students = [SampleStudent(REFERENCE_ID, reference, None, list(labs))]
    for mutant in find_mutants(kit, labs):
        if mutant.is_variant and not variants:
            continue
        graded = [mutant.lab] if mutant_lab_only else list(labs)
        files = {
            path: data
            for path, data in reference.items()
            if any(path.startswith(f"labs/{lab.slug}/") for lab in graded)
        }
        files[f"labs/{mutant.lab.slug}/{mutant.kit_file}"] = mutant.source
        students.append(SampleStudent(mutant.student_id, files, mutant, graded))
    if skeletons:
        for lab in labs:
            skeleton = load_skeleton(kit, lab)
            students.append(
                SampleStudent(skeleton.student_id, skeleton_files(kit, lab), None, [lab], skeleton)
            )
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


def grade_sample_class(
    kit: Kit,
    options: GradeOptions,
    out_dir: Path,
    progress: Progress | None = None,
    gradebooks: GradebookRequest | None = None,
) -> list[SubmissionScore]:
    """The reference and one student per mutant, written as submission folders, graded as a class."""
    with tempfile.TemporaryDirectory(prefix="grader-sample-class-") as folder:
        students = sample_students(kit, options.labs, mutant_lab_only=False)
        entries = write_sample_class(students, Path(folder))
        print(f"grading the sample class: {len(entries)} students (the reference and one per mutant)")
        return grade_class(kit, entries, options, out_dir, progress, gradebooks=gradebooks)
