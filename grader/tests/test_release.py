"""release.py and submit.py: the archive a TA hands out, and the zip a student hands back.

The archive is unpacked as a student would: it must hold no staff material (no solutions, no
hidden test's name, no solution region, no staff docs), build in student mode, run `check`, and
pack a lab with `submit`; that zip must grade exactly as the same files in a folder do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from grader.errors import GraderError
from grader.pipeline.build import BuildConfig
from grader.pipeline.collect import find_submissions
from grader.pipeline.grade import grade_class
from grader.progress import QuietProgress
from grader.rubric import find_kit_root, load_kit
from grader.staff.mutants import reference_files
from grader.staff.release import (
    ARCHIVE,
    KIT_FOLDER,
    check_rubrics,
    hidden_test_names,
    leaks,
    make_release,
    solution_regions,
)
from grader.submit import pack_lab, zip_name

KIT = load_kit(find_kit_root())
LAB02 = next(lab for lab in KIT.labs if lab.id == "02")
LAB06 = next(lab for lab in KIT.labs if lab.id == "06")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release")
    build = Path(os.environ.get("KIT_BUILD_DIR", "/nonexistent"))
    made = make_release(KIT, out / "build", pdf=False, build_dir=build if (build / "bin").is_dir() else None)
    assert made.archive.name == ARCHIVE and made.archive.is_file()
    with tarfile.open(made.archive) as tar:
        tar.extractall(out / "unpacked", filter="data")
    return out / "unpacked" / KIT_FOLDER


@pytest.fixture
def students_copy(unpacked: Path, tmp_path: Path) -> Path:
    """The unpacked kit copied for a test that writes a student's work into it: the module's copy
    stays as released, for the test that searches it for solutions (under pytest-xdist a process
    may run that test after one of these)."""
    copy = tmp_path / KIT_FOLDER
    shutil.copytree(unpacked, copy, symlinks=True)
    return copy


def test_the_student_kit_holds_no_staff_material(unpacked):
    staff_only = ("solutions", "bench", ".ci", "grader/tests", "docs/tas.md", "docs/instructors.md")
    for staff in (*staff_only, "docs/architecture.md", "docs/design"):
        assert not (unpacked / staff).exists(), staff
    names, regions = hidden_test_names(KIT), solution_regions(KIT)
    assert len(names) >= 6 and len(regions) >= 20  # the search below searches for something
    for path in unpacked.rglob("*"):
        if path.is_file() and path.suffix != ".pdf":
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not [name for name in names if name in text], path
    assert leaks(KIT, unpacked) == []
    # Its rubrics still count the hidden tests' points, under names that tell nothing.
    student_kit = load_kit(unpacked)
    for staff_lab, student_lab in zip(KIT.labs, student_kit.labs, strict=True):
        assert student_lab.max_points == staff_lab.max_points
        hidden = [test.name for test in student_lab.tests if test.visibility == "hidden"]
        assert all(name.startswith("hidden test ") for name in hidden)
    assert (unpacked / "pages" / "index.html").is_file() and (
        unpacked / "pages" / f"{LAB02.slug}.html"
    ).is_file()


def test_the_leak_search_finds_a_solution_file_and_a_hidden_tests_name(tmp_path):
    folder = tmp_path / "kit"
    shutil.copytree(KIT.lab_dir(LAB02), folder / "labs" / LAB02.slug)  # its rubric names hidden tests
    shutil.copy2(KIT.solution_dir(LAB06) / LAB06.student_files[0], folder / "copied.cu")
    found = leaks(KIT, folder)
    assert any("names the hidden test" in line for line in found)
    assert any(line.startswith("copied.cu holds a solution region") for line in found)


def test_a_file_the_grader_would_refuse_is_refused_by_submit_with_its_reason(tmp_path):
    kit_copy = tmp_path / "kit"
    shutil.copytree(KIT.root / "labs", kit_copy / "labs")
    (kit_copy / "grader").mkdir()  # load_kit needs only labs/
    student = load_kit(kit_copy)
    lab = next(lab for lab in student.labs if lab.id == "02")
    source = student.lab_dir(lab) / lab.student_files[0]
    source.write_text('#include "../../solutions/02_naive_matmul/naive_matmul.cu"\n' + source.read_text())
    with pytest.raises(GraderError, match="the grader would refuse") as refused:
        pack_lab(student, lab, tmp_path / "out", None, BuildConfig())
    assert "source screen" in str(refused.value)
    assert not (tmp_path / "out" / zip_name(lab)).exists()


def _grader(kit_root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=kit_root,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        env={**os.environ, "PYTHONPATH": str(kit_root)},
    )


def test_a_student_builds_checks_and_submits_lab_02_from_the_unpacked_kit(students_copy):
    unpacked = students_copy
    for name, data in reference_files(KIT, [LAB02]).items():  # the student's finished work
        (unpacked / name).write_bytes(data)
    checked = _grader(
        unpacked, "check", "--lab", "02", "--cuda-arch", os.environ.get("KIT_TEST_CUDA_ARCH", "75")
    )
    assert "Score:" in checked.stdout, checked.stdout + checked.stderr
    assert "did not compile" not in checked.stdout and "not built" not in checked.stdout
    submitted = _grader(unpacked, "submit", "--lab", "02")
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "WARNING" not in submitted.stdout  # it built
    with zipfile.ZipFile(unpacked / "build" / "submit" / zip_name(LAB02)) as archive:
        assert archive.namelist() == [f"labs/{LAB02.slug}/{name}" for name in LAB02.student_files]


def test_a_zip_from_submit_grades_exactly_as_the_same_files_in_a_folder(
    students_copy, tmp_path, real_harness
):
    unpacked = students_copy
    reference = reference_files(KIT, [LAB06])
    for name, data in reference.items():
        (unpacked / name).write_bytes(data)
    packed = pack_lab(load_kit(unpacked), LAB06, tmp_path / "class", None, BuildConfig())
    folder = tmp_path / "class" / "folder"
    for name, data in reference.items():
        (folder / Path(name).name).parent.mkdir(parents=True, exist_ok=True)
        (folder / Path(name).name).write_bytes(data)
    options = real_harness.options([LAB06], tmp_path / "work", test_limit=30)
    entries = find_submissions([tmp_path / "class"], [])
    with real_harness.gpu_turn():
        scores = {
            s.student_id: s for s in grade_class(KIT, entries, options, tmp_path / "out", QuietProgress())
        }
    zipped, plain = scores[packed.zip_path.stem], scores["folder"]
    assert zipped.error is None and plain.error is None
    by_test = [{t.name: (t.status, t.points) for t in score.labs[0].tests} for score in (zipped, plain)]
    assert by_test[0] == by_test[1]
    assert zipped.labs[0].points == plain.labs[0].points > 0


def test_a_rubric_that_names_a_test_the_lab_does_not_have_stops_the_release(tmp_path):
    build = Path(os.environ.get("KIT_BUILD_DIR", "/nonexistent"))
    if not (build / "bin" / LAB06.executable).is_file():
        pytest.skip("KIT_BUILD_DIR has no lab06_tests (make test builds it)")
    renamed = replace(LAB06, tests=(replace(LAB06.tests[0], name="a test nobody wrote"), *LAB06.tests[1:]))
    with pytest.raises(GraderError, match="a test nobody wrote"):
        check_rubrics(replace(KIT, labs=(renamed,)), build)


def test_submit_warns_when_the_lab_does_not_build_and_packs_it_anyway(tmp_path):
    fake_cmake = tmp_path / "cmake"
    fake_cmake.write_text("#!/bin/sh\necho \"naive_matmul.cu(12): error: expected a ';'\"\nexit 1\n")
    fake_cmake.chmod(0o755)
    build = tmp_path / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text("")  # configured: only the build step runs
    packed = pack_lab(KIT, LAB02, tmp_path / "out", build, BuildConfig(cmake=str(fake_cmake)))
    assert "expected a ';'" in packed.build_problem
    assert packed.zip_path.is_file() and packed.files == [f"labs/{LAB02.slug}/naive_matmul.cu"]
