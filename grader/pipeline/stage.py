"""Stage 2, stage: a private work directory per submission, holding the student's files.

The trusted parts (tests, headers, references, CMake) are the harness's, built once from the
kit (harness.py); a submission contributes only the lab files that collect accepted. They are
written here, under labs/<slug>/, for the files the tests read at run time (an answers sheet);
the compiled ones go to the build cache by content.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import GraderError
from ..rubric import Lab
from .collect import Submission


@dataclass(frozen=True)
class Stage:
    student_id: str
    work_dir: Path  # the private folder: the student's files, and each test's run folder

    def lab_file(self, lab: Lab, name: str) -> Path:
        return self.work_dir / "labs" / lab.slug / name


def make_work_dir(work_root: Path | None, student_id: str) -> Path:
    if work_root is not None:
        work_root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"grade-{student_id}-", dir=work_root))


def stage_submission(submission: Submission, labs: list[Lab], work_dir: Path) -> Stage:
    """Writes the submission's files of the given labs into work_dir/labs/<slug>/."""
    stage = Stage(submission.student_id, work_dir)
    for lab in labs:
        for name, data in submission.files.get(lab.slug, {}).items():
            if name not in lab.student_files:  # collect guarantees this; a second lock on the door
                raise GraderError(f"{lab.slug}: {name} is not one of the lab's student files")
            target = stage.lab_file(lab, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return stage
