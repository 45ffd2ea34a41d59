"""`make release`: what a TA hands out, made from the staff repository in one command.

1. Checks that need no GPU: every rubric loads, the skeletons are in sync with the solutions,
   and, with the kit built (make release builds it first), every rubric names exactly the
   tests its lab's executable lists (the check `grade` makes before grading a class).
2. The student kit (grader/staff/handout.py's copy of the tracked files without solutions/ and
   bench/), less what only staff read or run (STAFF_FILES), with every hidden test's entry in
   the rubrics reduced to its points (a name would tell what the hidden test checks), and the
   rendered write-ups in its pages/ folder.
3. build/release/student-kit.tar.gz of that folder, and the pages beside it.

Then checked: no file of the kit names a hidden test or holds a solution region
(`leaks`, which grader/tests/test_release.py runs too).
"""

from __future__ import annotations

import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import GraderError
from ..pipeline.run import RunConfig, list_tests
from ..rubric import Kit, check_rubric_against_listing, load_kit
from .handout import MARKER, make_student_kit
from .pages import PAGES_FOLDER, Rendered, render_pages

# What only staff read or run, besides solutions/ and bench/ (grader/staff/handout.py's STAFF_ONLY):
# CI, the grader's own tests, the docs of the grader's design, grading and releasing.
STAFF_FILES = (
    ".ci",
    "grader/tests",
    "scripts/tests",
    "docs/architecture.md",
    "docs/design",
    "docs/instructors.md",
    "docs/tas.md",
)
ARCHIVE = "student-kit.tar.gz"
KIT_FOLDER = "student-kit"  # the archive's top folder


@dataclass(frozen=True)
class Release:
    archive: Path
    pages: Rendered
    files: int


def make_release(kit: Kit, out: Path, pdf: bool = True, build_dir: Path | None = None) -> Release:
    """Writes `out`/student-kit.tar.gz and `out`/pages/; refuses (GraderError) if a check fails.
    With `build_dir` (the kit's build), each rubric is checked against its tests' listing."""
    if build_dir is not None:
        check_rubrics(kit, build_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="kit-release-") as scratch:
        folder = Path(scratch) / KIT_FOLDER
        make_student_kit(kit, folder)  # refuses stale skeletons
        for relative in STAFF_FILES:
            path = folder / relative
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        for lab in kit.labs:
            rubric = folder / "labs" / lab.slug / "rubric.toml"
            rubric.write_text(
                without_hidden_names(rubric.read_text(encoding="utf-8"), lab.id), encoding="utf-8"
            )
        student_kit = load_kit(folder)  # the stripped rubrics still load
        rendered = render_pages(student_kit, folder / PAGES_FOLDER, pdf=pdf)
        found = leaks(kit, folder)
        if found:
            raise GraderError("the student kit would give away staff material:\n  " + "\n  ".join(found[:20]))
        archive = out / ARCHIVE
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(folder, arcname=KIT_FOLDER)
        files = sum(1 for path in folder.rglob("*") if path.is_file())
        shutil.copytree(folder / PAGES_FOLDER, out / PAGES_FOLDER)
    pages = Rendered(
        [out / PAGES_FOLDER / path.name for path in rendered.html],
        [out / PAGES_FOLDER / path.name for path in rendered.pdf],
        rendered.note,
    )
    return Release(archive, pages, files)


def check_rubrics(kit: Kit, build_dir: Path) -> None:
    """Every rubric names exactly the tests its lab's executable lists (visible entries at
    least: the kit's build may not hold the hidden tests)."""
    for lab in kit.labs:
        exe = build_dir / "bin" / lab.executable
        if not exe.is_file():
            raise GraderError(f"{exe} is missing: build the kit first (make build), then release")
        with tempfile.TemporaryDirectory(prefix="kit-listing-") as scratch:
            listed = list_tests(exe, Path(scratch), RunConfig(timeout=60))
        check_rubric_against_listing(lab, [test.name for test in listed], has_hidden_tests=False)


TEST_BLOCK = re.compile(r"^\[\[test\]\]\n(?:(?!\[\[).*\n?)*", re.MULTILINE)


def without_hidden_names(text: str, lab_id: str) -> str:
    """The rubric with each hidden test's entry reduced to a placeholder name, its points and
    its visibility: `make check` still tells how many points the hidden tests are worth."""
    count = 0

    def reduce(match: re.Match[str]) -> str:
        nonlocal count
        block = match[0]
        if not re.search(r'^visibility\s*=\s*"hidden"', block, re.MULTILINE):
            return block
        count += 1
        points = re.search(r"^points\s*=\s*(\S+)", block, re.MULTILINE)
        if points is None:
            raise GraderError(f"lab {lab_id}'s rubric: a hidden test without points")
        return (
            f'[[test]]\nname = "hidden test {count} of lab {lab_id}"\npoints = {points[1]}\n'
            'visibility = "hidden"\n\n'
        )

    return TEST_BLOCK.sub(reduce, text)


def hidden_test_names(kit: Kit) -> list[str]:
    """Every hidden test's name: the rubrics' hidden entries and the hidden test sources'."""
    names = [test.name for lab in kit.labs for test in lab.tests if test.visibility == "hidden"]
    for source in sorted((kit.root / "solutions").glob("*/hidden_tests/*")):
        if source.is_file():
            names += re.findall(
                r'TEST_CASE\(\s*"([^"]+)"', source.read_text(encoding="utf-8", errors="replace")
            )
    return sorted(set(names))


def solution_regions(kit: Kit) -> list[str]:
    """The text of every solution region (between KIT:TODO(begin) and (end) markers) of every
    solution file, its lines stripped and joined: what the skeletons leave out."""
    regions: list[str] = []
    for lab in kit.labs:
        for name in lab.student_files:
            source = kit.solution_dir(lab) / name
            if not source.is_file():
                continue
            inside: list[str] | None = None
            for line in source.read_text(encoding="utf-8").splitlines():
                marker = MARKER.match(line)
                if marker and marker["kind"] == "TODO" and "(begin)" in marker["rest"]:
                    inside = []
                elif marker and marker["kind"] == "TODO" and "(end)" in marker["rest"] and inside is not None:
                    code = [part.strip() for part in inside if part.strip() and not MARKER.match(part)]
                    if len(code) >= 2:  # one line ("return 0;") is no giveaway
                        regions.append("\n".join(code))
                    inside = None
                elif inside is not None:
                    inside.append(line)
    return regions


def leaks(kit: Kit, folder: Path) -> list[str]:
    """Where a file under `folder` names a hidden test or holds a whole solution region."""
    names = hidden_test_names(kit)
    regions = solution_regions(kit)
    found: list[str] = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix == ".pdf":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        stripped = "\n".join(line.strip() for line in text.splitlines() if line.strip())
        relative = path.relative_to(folder)
        found += [f"{relative} names the hidden test {name!r}" for name in names if name in text]
        found += [
            f"{relative} holds a solution region: {region.splitlines()[0]}"
            for region in regions
            if region in stripped
        ]
    for staff in ("solutions", "bench", *STAFF_FILES):
        if (folder / staff).exists():
            found.append(f"{staff} is staff material")
    return found
