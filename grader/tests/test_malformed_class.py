"""One bad upload never costs the class: a class of malformed uploads, built here at
run time, graded through `make grade` beside a correct submission (lab 06's reference, whose
tests run on the CPU). The correct one keeps its score, every upload costs only itself, the
class files are written, nothing from a submission reaches a report or the terminal raw, and
the run exits 0: only a problem of the kit fails it.

Runs wherever nvcc, cmake, make and the sandbox are (CI included).
"""

from __future__ import annotations

import csv
import gzip
import os
import subprocess
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from grader.pipeline.report import finished_score
from grader.pipeline.score import LabScore
from grader.rubric import find_kit_root, load_kit
from grader.staff.mutants import reference_files
from grader.tests.test_collect import deep_folder, remove_deep_folder, tar_header

from .conftest import skip_unless_the_real_kit_grades_here

KIT_ROOT = find_kit_root()
FUTURE = 4_000_000_000  # 2096: file times a student set, which must decide nothing
FORGED = ("x.cu\nScore: 100/100\n", "\x1b[2J\x1b[Hcleared.txt", "bidi\u202etxt.cu")

Files = dict[str, bytes]


def flat(files: Files) -> Files:
    return {Path(name).name: data for name, data in files.items()}


def write(folder: Path, files: Files, when: int | None = None) -> None:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if when is not None:
            os.utime(path, (when, when))


def zipped(path: Path, files: Files) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)


def tar_bytes(files: Files) -> bytes:
    """The members of a tar, without its end: more members may follow."""
    members = []
    for name, data in files.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        header = info.tobuf(format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape")
        members.append(header + data + bytes(-len(data) % tarfile.BLOCKSIZE))
    return b"".join(members)


def make_class(klass: Path, reference: Files, skeleton: Files) -> dict[str, str]:
    """The class folder; returns student id -> what lab 06 must get: "full", "zero", "less" (than
    full: the skeleton passes its argument checks), or "any"."""
    write(klass / "control", reference)
    write(klass / "labs", flat(reference))  # a student whose folder is called labs
    (klass / "stray.cu").write_bytes(reference["labs/06_occupancy/occupancy.cu"])  # at the top
    (klass / "roster.csv").write_text("name,email\n")
    # A member name that is not UTF-8 (UnicodeEncodeError when its report was written).
    (klass / "latin1.tar").write_bytes(tar_bytes({**reference, "na\udcefve.cu": b"//\n"}) + bytes(1024))
    zipped(klass / ("l" * 246 + ".zip"), reference)  # 250 characters: File name too long
    deep_folder(klass / "deep", 1100)  # RecursionError
    write(klass / "deep", flat(reference))
    many = klass / "many"  # 13 s and 400 MB, a 48 MB feedback.txt
    write(many, flat(reference))
    (many / "build").mkdir()
    for index in range(2500):
        (many / "build" / f"o{index}.o").touch()
    # Gzip inside a .tar, a member claiming 40 GiB after the lab files (116 s decompressing).
    claim = tar_bytes(reference) + tar_header("core.dump", 40 << 30) + bytes(8192)
    (klass / "bomb.tar").write_bytes(gzip.compress(claim))
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 16 MiB of zeros first, then the lab files
    parts = [packer.compress(tar_header("zeros.bin", 16 << 20))]
    parts += [packer.compress(bytes(1 << 20)) for _ in range(16)]
    parts += [packer.compress(tar_bytes(reference) + bytes(1024)), packer.flush()]
    (klass / "ratio.tgz").write_bytes(b"".join(parts))
    zipped(klass / "forger.zip", {**reference, **{name: b"x\n" for name in FORGED}})
    (klass / "corrupt.zip").write_bytes(b"PK\x03\x04 not a zip at all")
    # Look-alikes of classmates' names, their files dated years ahead: never their resubmissions.
    write(klass / "\uff43ontrol", skeleton, FUTURE)  # a fullwidth c
    write(klass / "o'brien", reference)
    write(klass / "o brien", skeleton, FUTURE)
    # A real resubmission: the LMS's "(2)" says which is the latest, not the file times.
    zipped(klass / "dana.zip", skeleton)
    os.utime(klass / "dana.zip", (FUTURE, FUTURE))
    zipped(klass / "dana (2).zip", reference)
    long_id = "l" * 55 + "-"  # cut to 64 bytes with a digest: checked by its prefix
    return {
        "control": "full",
        "labs": "full",
        "latin1": "full",
        long_id: "full",
        "deep": "full",
        "many": "full",
        "bomb": "full",
        "ratio": "zero",
        "forger": "full",
        "corrupt": "zero",
        "control-": "less",
        "o_brien-": "any",  # two ids, each with its digest: checked below
        "dana": "full",
    }


def full(lab: LabScore) -> bool:
    ran = [test for test in lab.tests if test.status != "skipped"]
    return bool(ran) and all(test.points == test.max_points for test in ran)


@pytest.mark.integration
def test_a_class_of_malformed_uploads_costs_only_themselves_through_make_grade(tmp_path, real_harness):
    skip_unless_the_real_kit_grades_here("make")
    kit = load_kit(KIT_ROOT)
    (lab,) = kit.select(["06"])
    reference = reference_files(kit, [lab])
    skeleton = {name: (KIT_ROOT / name).read_bytes() for name in reference}
    klass, out = tmp_path / "class", tmp_path / "out"
    expected = make_class(klass, reference, skeleton)
    try:
        with real_harness.gpu_turn():  # lab 06 has GPU tests
            done = subprocess.run(
                [
                    "make",
                    "--no-print-directory",
                    "grade",
                    f"SUBMISSIONS={klass}",
                    f"OUT={out}",
                    "LABS=06",
                    f"HARNESS={real_harness.folder}",
                    "HARNESS_BUILT=1",  # the other tests read it meanwhile: never reconfigure it
                ],
                cwd=KIT_ROOT,
                capture_output=True,
                text=True,
                errors="surrogateescape",
                timeout=600,
            )
    finally:
        remove_deep_folder(klass / "deep")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "\x1b" not in said and "Score: 100/100" not in said  # the terminal got nothing raw

    rows = {row[0]: row for row in list(csv.reader((out / "gradebook.csv").open()))[1:]}
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    failures = []
    for prefix, want in expected.items():
        ids = [
            student
            for student in rows
            if student == prefix or (prefix.endswith("-") and student.startswith(prefix))
        ]
        if len(ids) != (2 if prefix == "o_brien-" else 1):
            failures.append(f"{prefix}: graded as {ids}")
            continue
        for student in ids:
            score = finished_score(out / student)
            assert score is not None, student
            assert score.error is None, (student, score.error)  # none is a failure of the grader
            got = "full" if full(score.labs[0]) else "zero" if score.labs[0].points == 0 else "lost"
            if want not in ("any", got) and not (want == "less" and got != "full"):
                failures.append(f"{student}: lab 06 {got}, expected {want}")
    assert not failures, "\n".join(failures) + "\n" + summary
    assert len(rows) == 14  # no one else: the stray files are not students

    # Every name from a submission is shown escaped: no escape sequence, no forged line.
    texts = [summary] + [path.read_text(encoding="utf-8") for path in out.glob("*/*.txt")]
    texts += [path.read_text(encoding="utf-8") for path in out.glob("*/results.json")]
    assert not any("\x1b" in text or "\u202e" in text for text in texts)
    assert not [line for line in summary.splitlines() if line.startswith("Score")]
    forger = (out / "forger" / "feedback.txt").read_text()
    assert "x.cu\\nScore: 100/100\\n" in forger and "\\x1b[2J\\x1b[Hcleared.txt" in forger
    assert not [line for line in forger.splitlines() if line.startswith("Score: 100")]
    assert "na\\xefve.cu: the name is not UTF-8" in (out / "latin1" / "feedback.txt").read_text()
    assert "more than 16 levels deep" in (out / "deep" / "feedback.txt").read_text()

    # Each refusal of a whole upload, and each note on the class folder, is a line of the summary.
    for words in (
        "stray.cu: a file at the top of the class folder",
        "roster.csv: a file at the top of the class folder",
        "  deep: " + "d/" * 15 + "d\n",
        "many: many: the folder build/ holds more than 2000 entries",
        "bomb: bomb.tar: core.dump is 40 GiB",
        "ratio: ratio.tgz: compressed more than 100 to 1",
        "corrupt: corrupt.zip: cannot be read as a zip archive",
        "dana: 2 submissions of one student; grading dana (2).zip",
        "control: 2 different names make this id; they are different students: control as control; "
        "\\uff43ontrol as control-",
        "o_brien: 2 different names make this id",
    ):
        if words not in summary:
            failures.append(f"the summary lacks {words!r}")
    assert not failures, "\n".join(failures) + "\n" + summary
