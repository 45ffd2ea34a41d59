"""`make submit LAB=NN`: packs what a student hands in for one lab.

The zip holds exactly the lab's student files (the rubric's `student_files`) at their kit paths
(`labs/02_naive_matmul/naive_matmul.cu`), so it grades as the same files in a folder do. Each
file goes through the grader's own collect code (grader/pipeline/collect.py: size, text, the source
screen) first: a file the grader would refuse is refused here, with the grader's message, and
no zip is written. Before that, the lab's public build runs; a build that fails is reported
loudly but does not stop the zip (a student may hand in unfinished work on purpose).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .confine.proc import run_limited
from .errors import GraderError
from .pipeline.build import BuildConfig, build_command, configure_command
from .pipeline.collect import submission_from_files
from .rubric import Kit, Lab

BUILD_OUTPUT_SHOWN = 20  # lines of the compiler's output shown when the build fails


@dataclass
class Packed:
    zip_path: Path
    files: list[str]  # kit paths, as they are in the zip
    build_problem: str = ""  # the failed build's last lines; empty when it built
    notes: list[str] = field(default_factory=list)


def zip_name(lab: Lab) -> str:
    return f"lab{lab.id}_{lab.slug[3:]}.zip"


def pack_lab(kit: Kit, lab: Lab, out_dir: Path, build_dir: Path | None, config: BuildConfig) -> Packed:
    """Writes out_dir/labNN_slug.zip with the lab's files; raises GraderError (and writes
    nothing) when a file is missing or would be refused."""
    files: dict[str, bytes] = {}
    for name in lab.student_files:
        path = kit.lab_dir(lab) / name
        if not path.is_file():
            raise GraderError(f"lab {lab.id}: {path} is missing; it is one of the files you hand in")
        files[f"labs/{lab.slug}/{name}"] = path.read_bytes()
    checked = submission_from_files("you", files, kit)
    if checked.refused:
        reasons = "\n  ".join(f"{refusal.path}: {refusal.reason}" for refusal in checked.refused)
        raise GraderError(
            f"lab {lab.id}: the grader would refuse:\n  {reasons}\n"
            "nothing was packed; fix the file and run make submit again"
        )
    build_problem = _public_build(kit, lab, build_dir, config) if build_dir is not None else ""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / zip_name(lab)
    partial = target.with_suffix(".zip.part")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    partial.replace(target)  # a zip is whole or not there
    return Packed(target, list(files), build_problem)


def _public_build(kit: Kit, lab: Lab, build_dir: Path, config: BuildConfig) -> str:
    """The lab's tests built as make check builds them: "" when they build, else the last lines."""
    steps = []
    if not (build_dir / "CMakeCache.txt").is_file():
        steps.append(configure_command(kit.root, build_dir, config))
    steps.append(build_command(build_dir, lab.executable, config))
    for command in steps:
        done = run_limited(command, cwd=kit.root, timeout=config.timeout, output_limit=256 * 1024)
        if done.timed_out or done.returncode != 0:
            lines = done.output.strip().splitlines()[-BUILD_OUTPUT_SHOWN:]
            return "\n".join(lines) or f"{command[0]} exited with {done.returncode}"
    return ""
