"""Stage 2, stage: a private work directory per submission, a clean kit copy plus the student's files.

The trusted files (tests, headers, rubric, CMake, solutions/ for the hidden tests) always come
from the kit; only the lab files that collect accepted are laid over the skeletons.
"""

from __future__ import annotations

import fnmatch
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .collect import Submission
from .errors import GraderError
from .rubric import Kit, Lab

# Never copied: version control, earlier builds and grades, environments and caches.
SKIPPED_AT_TOP = ("build*", "grades", ".venv", "venv", ".git")
SKIPPED_ANYWHERE = ("__pycache__", ".pytest_cache", ".git", ".mypy_cache")


@dataclass(frozen=True)
class Stage:
    student_id: str
    root: Path  # the kit copy: cmake -S root
    build_dir: Path  # cmake -B build_dir
    work_dir: Path  # the private folder holding root, and HOME/TMPDIR for the test processes


def make_work_dir(work_root: Path | None, student_id: str) -> Path:
    if work_root is not None:
        work_root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"grade-{student_id}-", dir=work_root))


def stage_submission(
    kit: Kit, submission: Submission, labs: list[Lab], work_dir: Path, exclude: list[Path] = ()
) -> Stage:
    """Copies the kit into work_dir/kit and writes the submission's files for the given labs."""
    root = work_dir / "kit"
    skipped = [path.resolve() for path in exclude] + [work_dir.resolve()]
    shutil.copytree(kit.root, root, ignore=_ignore(kit.root, skipped), symlinks=True)
    for lab in labs:
        for name, data in submission.files.get(lab.slug, {}).items():
            _write_student_file(root, lab, name, data)
    return Stage(student_id=submission.student_id, root=root, build_dir=root / "build", work_dir=work_dir)


def _ignore(kit_root: Path, skipped: list[Path]):
    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve()
        ignored = {name for name in names if any(fnmatch.fnmatch(name, p) for p in SKIPPED_ANYWHERE)}
        if here == kit_root.resolve():
            ignored |= {name for name in names if any(fnmatch.fnmatch(name, p) for p in SKIPPED_AT_TOP)}
        ignored |= {name for name in names if (here / name).resolve() in skipped}
        return ignored

    return ignore


def _write_student_file(root: Path, lab: Lab, name: str, data: bytes) -> None:
    if name not in lab.student_files:  # collect guarantees this; a second lock on the door
        raise GraderError(f"{lab.slug}: {name} is not one of the lab's student files")
    target = root / "labs" / lab.slug / name
    if target.is_symlink() or not target.parent.is_dir():
        raise GraderError(f"kit problem: {target.parent} is missing or {name} is a link; restore the kit")
    target.write_bytes(data)
