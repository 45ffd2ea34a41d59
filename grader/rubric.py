"""The kit and its labs: finds labs/NN_slug/rubric.toml, loads each with tomllib and validates it.

Every error names the rubric file, the key and the fix, because the person reading it is a TA
editing a rubric, not a Python programmer.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import GraderError

VISIBILITIES = ("visible", "hidden", "after_due_date")  # Gradescope's values
# Catch2 gives these characters meaning on its command line; the grader selects by exact name.
FORBIDDEN_NAME_CHARS = ',[]*~\\"'
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")

# What each key means, used in error messages so that the fix is in the message.
LAB_KEYS = {
    "title": 'a short title, e.g. title = "Naive matrix multiplication"',
    "student_files": 'the files a submission may contain, e.g. student_files = ["naive_matmul.cu"]; '
    "CMake reads this line too (cmake/KitLab.cmake): it is the one list of the lab's student files",
    "charts": "optional table [lab.charts] with target and script (docs/design/grading.md)",
}
# Said once, by the lab's folder name labs/NN_slug: its id (NN), its slug (the folder name) and
# its test executable (labNN_tests, as kit_add_lab names it).
DERIVED_KEYS = ("id", "slug", "executable")
LAB_FOLDER = re.compile(r"(?P<id>\d\d)_[a-z0-9_]+")
CHART_KEYS = {
    "target": 'the CMake target the script runs, e.g. target = "lab06_curves"',
    "script": 'a Python script in the lab folder, e.g. script = "plot_occupancy.py"',
}
TEST_KEYS = {
    "name": "the exact Catch2 test case name",
    "points": "a number >= 0",
    "visibility": "one of " + ", ".join(VISIBILITIES) + ' (default "visible")',
    "hint": "optional text shown to the student when the test loses points",
    "partial": "optional table [test.partial] with metric, full_at and zero_at",
}
PARTIAL_KEYS = {
    "metric": 'the name the test reports with KIT_METRIC, e.g. metric = "time_ratio"',
    "full_at": "metric value at or below which the test earns full points",
    "zero_at": "metric value at or above which the test earns nothing (greater than full_at)",
    "step": "optional: points are rounded to a multiple of this, e.g. step = 0.5",
}


@dataclass(frozen=True)
class PartialCredit:
    """Credit from a reported metric: full at or below full_at, none at or above zero_at."""

    metric: str
    full_at: float
    zero_at: float
    step: float | None = None  # points rounded to a multiple of it: a timing's noise within a
    # step leaves the score alone (docs/design/grading.md, "The rubric")

    def fraction(self, value: float) -> float:
        if value <= self.full_at:
            return 1.0
        if value >= self.zero_at:
            return 0.0
        return (self.zero_at - value) / (self.zero_at - self.full_at)


@dataclass(frozen=True)
class RubricTest:
    name: str
    points: float
    visibility: str = "visible"
    hint: str | None = None
    partial: PartialCredit | None = None


@dataclass(frozen=True)
class ChartSpec:
    """Charts drawn from the student's code for their feedback (grader/pipeline/charts.py)."""

    target: str
    script: str


@dataclass(frozen=True)
class Lab:
    id: str
    slug: str
    title: str
    executable: str
    student_files: tuple[str, ...]
    tests: tuple[RubricTest, ...]
    rubric_path: Path
    charts: ChartSpec | None = None

    @property
    def tag(self) -> str:
        return f"lab{self.id}"

    @property
    def max_points(self) -> float:
        return sum(test.points for test in self.tests)

    def test(self, name: str) -> RubricTest | None:
        return next((test for test in self.tests if test.name == name), None)


@dataclass(frozen=True)
class Kit:
    root: Path
    labs: tuple[Lab, ...]

    @property
    def has_solutions(self) -> bool:
        # A student kit is the repository without solutions/ (docs/tas.md).
        return (self.root / "solutions").is_dir()

    def lab_dir(self, lab: Lab) -> Path:
        return self.root / "labs" / lab.slug

    def solution_dir(self, lab: Lab) -> Path:
        return self.root / "solutions" / lab.slug

    def lab_headers(self, lab: Lab) -> set[str]:
        """The lab's own headers: the only quoted includes a student file may use besides kit/."""
        return {
            path.name
            for path in self.lab_dir(lab).iterdir()
            if path.suffix in HEADER_SUFFIXES and path.name not in lab.student_files
        }

    def select(self, keys: Iterable[str] | None) -> list[Lab]:
        """Labs named by --labs ("02", "2", "lab02" or the slug); all labs when keys is None."""
        if keys is None:
            return list(self.labs)
        chosen: list[Lab] = []
        for key in keys:
            lab = self._find(key.strip())
            if lab not in chosen:
                chosen.append(lab)
        return chosen

    def _find(self, key: str) -> Lab:
        normal = key.lower().removeprefix("lab")
        if normal.isdigit():
            normal = f"{int(normal):02d}"
        for lab in self.labs:
            if normal in (lab.id, lab.slug):
                return lab
        known = ", ".join(lab.id for lab in self.labs) or "none"
        raise GraderError(f"no lab {key!r} in {self.root / 'labs'}; the labs are: {known}")


def find_kit_root() -> Path:
    """The kit this grader ships in: the package lives in <kit>/grader/."""
    return Path(__file__).resolve().parent.parent


def load_kit(root: Path) -> Kit:
    root = Path(root).resolve()
    if not (root / "labs").is_dir():
        raise GraderError(f"{root} has no labs/ folder; pass --kit with the kit's root folder")
    rubric_paths = sorted(root.glob("labs/[0-9][0-9]_*/rubric.toml"))
    if not rubric_paths:
        raise GraderError(f"no lab in {root / 'labs'}: expected labs/NN_slug/rubric.toml files")
    labs = tuple(load_rubric(path) for path in rubric_paths)
    return Kit(root=root, labs=labs)


def load_rubric(path: Path) -> Lab:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise GraderError(f"{path}: not valid TOML ({error}); fix the syntax there") from None
    except OSError as error:
        raise GraderError(f"{path}: cannot be read ({error.strerror})") from None
    _refuse_unknown_keys(path, "the top level", data, {"lab": "", "test": ""})
    lab_table = data.get("lab")
    if not isinstance(lab_table, dict):
        raise GraderError(f"{path}: missing [lab] table; add one with the keys {', '.join(LAB_KEYS)}")
    lab = _parse_lab_table(path, lab_table)
    tests = _parse_tests(path, data.get("test"))
    return Lab(tests=tests, rubric_path=path, **lab)


def _parse_lab_table(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    folder = path.parent.name
    for key in DERIVED_KEYS:
        if key in table:
            raise GraderError(
                f"{path}: [lab] {key} comes from the folder name {folder!r} (id {folder[:2]}, slug "
                f"{folder}, executable lab{folder[:2]}_tests) and is not restated; "
                f"remove the line {key} = ..."
            )
    _refuse_unknown_keys(path, "[lab]", table, LAB_KEYS)
    match = LAB_FOLDER.fullmatch(folder)
    if match is None:
        raise GraderError(
            f"{path}: the lab folder {folder!r} is not named NN_slug (two digits, an underscore, then "
            "lower-case letters, digits and underscores), e.g. labs/02_naive_matmul"
        )
    fields = {
        "id": match.group("id"),
        "slug": folder,
        "title": _required_string(path, "[lab]", table, "title"),
        "executable": f"lab{match.group('id')}_tests",
    }
    fields["student_files"] = _parse_student_files(path, table.get("student_files"))
    fields["charts"] = _parse_charts(path, table.get("charts"))
    return fields


def _parse_charts(path: Path, table: Any) -> ChartSpec | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise GraderError(f"{path}: [lab] charts must be a table [lab.charts] with target and script")
    _refuse_unknown_keys(path, "[lab.charts]", table, CHART_KEYS)
    spec = ChartSpec(**{key: _required_string(path, "[lab.charts]", table, key) for key in CHART_KEYS})
    if not re.fullmatch(r"[A-Za-z0-9_]+", spec.target):
        raise GraderError(f"{path}: [lab.charts] target = {spec.target!r} is not a plain target name")
    if not (path.parent / spec.script).is_file():
        raise GraderError(
            f"{path}: [lab.charts] script = {spec.script!r} is not a file in {path.parent}; "
            "name a script in the lab folder"
        )
    return spec


def _parse_student_files(path: Path, value: Any) -> tuple[str, ...]:
    fix = f"use {LAB_KEYS['student_files']}"
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise GraderError(f"{path}: [lab] student_files must be a non-empty list of file names; {fix}")
    for name in value:
        if "/" in name or "\\" in name or name.startswith(".") or not name.strip():
            raise GraderError(
                f"{path}: [lab] student_files entry {name!r} is not a plain file name "
                f"in the lab folder; {fix}"
            )
    if len(set(value)) != len(value):
        raise GraderError(f"{path}: [lab] student_files lists a file twice; list each file once")
    return tuple(value)


def _parse_tests(path: Path, value: Any) -> tuple[RubricTest, ...]:
    if not isinstance(value, list) or not value:
        raise GraderError(f"{path}: no [[test]] entries; add one per Catch2 test case that earns points")
    tests: list[RubricTest] = []
    for number, table in enumerate(value, start=1):
        test = _parse_test(path, number, table)
        if any(other.name == test.name for other in tests):
            raise GraderError(
                f"{path}: [[test]] #{number} repeats the name {test.name!r}; each test may be scored once"
            )
        tests.append(test)
    return tuple(tests)


def _parse_test(path: Path, number: int, table: dict[str, Any]) -> RubricTest:
    where = f"[[test]] #{number}"
    _refuse_unknown_keys(path, where, table, TEST_KEYS)
    name = _required_string(path, where, table, "name")
    where = f"[[test]] #{number} ({name!r})"
    _check_test_name(path, where, name)
    points = _number(path, where, "points", table.get("points"), TEST_KEYS["points"])
    if points < 0:
        raise GraderError(f"{path}: {where} points = {points} is negative; use {TEST_KEYS['points']}")
    visibility = table.get("visibility", "visible")
    if visibility not in VISIBILITIES:
        raise GraderError(f"{path}: {where} visibility = {visibility!r}; use {TEST_KEYS['visibility']}")
    hint = table.get("hint")
    if hint is not None and not isinstance(hint, str):
        raise GraderError(f'{path}: {where} hint must be a string; use hint = "..."')
    partial = _parse_partial(path, where, table["partial"]) if "partial" in table else None
    return RubricTest(name=name, points=points, visibility=visibility, hint=hint, partial=partial)


def _check_test_name(path: Path, where: str, name: str) -> None:
    bad = sorted({char for char in name if char in FORBIDDEN_NAME_CHARS})
    if bad:
        raise GraderError(
            f"{path}: {where} name contains {' '.join(bad)}, which Catch2 reads as test-spec syntax; "
            f"rename the TEST_CASE and the rubric entry without any of {FORBIDDEN_NAME_CHARS}"
        )
    if name != name.strip() or name.startswith("-"):
        raise GraderError(
            f"{path}: {where} name must not start with '-' or begin or end with spaces; "
            "use the exact TEST_CASE name"
        )


def _parse_partial(path: Path, where: str, table: Any) -> PartialCredit:
    where = f"{where} [test.partial]"
    if not isinstance(table, dict):
        raise GraderError(f"{path}: {where} must be a table with {', '.join(PARTIAL_KEYS)}")
    _refuse_unknown_keys(path, where, table, PARTIAL_KEYS)
    metric = _required_string(path, where, table, "metric")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", metric):
        raise GraderError(
            f"{path}: {where} metric = {metric!r} is not an identifier; use {PARTIAL_KEYS['metric']}"
        )
    full_at = _number(path, where, "full_at", table.get("full_at"), PARTIAL_KEYS["full_at"])
    zero_at = _number(path, where, "zero_at", table.get("zero_at"), PARTIAL_KEYS["zero_at"])
    if not full_at < zero_at:
        raise GraderError(
            f"{path}: {where} full_at = {full_at} must be less than zero_at = {zero_at} "
            "(a lower metric is better)"
        )
    step = None
    if "step" in table:
        step = _number(path, where, "step", table["step"], PARTIAL_KEYS["step"])
        if step <= 0:
            raise GraderError(f"{path}: {where} step = {step} must be greater than 0; {PARTIAL_KEYS['step']}")
    return PartialCredit(metric=metric, full_at=full_at, zero_at=zero_at, step=step)


def _refuse_unknown_keys(path: Path, where: str, table: dict[str, Any], known: dict[str, str]) -> None:
    for key in table:
        if key not in known:
            raise GraderError(f"{path}: unknown key {key!r} in {where}; the keys are: {', '.join(known)}")


def _required_string(path: Path, where: str, table: dict[str, Any], key: str) -> str:
    help_text = {**LAB_KEYS, **TEST_KEYS, **PARTIAL_KEYS, **CHART_KEYS}[key]
    if key not in table:
        raise GraderError(f"{path}: {where} is missing the key {key!r}; add it: {help_text}")
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise GraderError(f"{path}: {where} {key} must be a non-empty string; {help_text}")
    return value


def _number(path: Path, where: str, key: str, value: Any, help_text: str) -> float:
    if value is None:
        raise GraderError(f"{path}: {where} is missing the key {key!r}; add it: {help_text}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GraderError(f"{path}: {where} {key} = {value!r} is not a number; use {help_text}")
    return float(value)


def check_rubric_against_listing(lab: Lab, listed: Iterable[str], has_hidden_tests: bool) -> None:
    """Refuse a rubric entry the executable does not list, and a listed test no entry scores.

    Without hidden tests (a student kit), hidden and after-due-date entries cannot be listed,
    so only visible entries are checked against the executable.
    """
    listed_names = set(listed)
    problems = []
    for test in lab.tests:
        if test.name not in listed_names and (has_hidden_tests or test.visibility == "visible"):
            problems.append(f"the rubric scores {test.name!r}, which {lab.executable} does not contain")
    scored = {test.name for test in lab.tests}
    for name in sorted(listed_names - scored):
        problems.append(f"{lab.executable} contains {name!r}, which no [[test]] entry scores")
    if problems:
        raise GraderError(
            f"{lab.rubric_path}: the rubric and the lab's tests disagree:\n  - "
            + "\n  - ".join(problems)
            + "\nfix the rubric's names (exact TEST_CASE names) or the tests, then rebuild"
        )
