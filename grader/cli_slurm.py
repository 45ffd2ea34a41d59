"""`grade --slurm`, `status` and `task`: the commands of the Slurm backend
(grader/cluster/slurm.py, docs/instructors.md "On a Slurm cluster")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import options as grading
from .cluster.slurm import (
    DEFAULT_CPUS,
    DEFAULT_GRES,
    DEFAULT_TASKS,
    DEFAULT_TIME,
    Plan,
    SlurmRequest,
    finish,
    follow,
    grade_part,
    run_status,
    status_lines,
    submit_class,
)
from .errors import GraderError
from .pipeline.collect import find_submissions
from .progress import make_progress
from .rubric import Kit


def add_slurm_options(parser: argparse.ArgumentParser) -> None:
    slurm = parser.add_argument_group(
        "on a Slurm cluster", "grade the class as a job array (docs/instructors.md, 'On a Slurm cluster')"
    )
    slurm.add_argument(
        "--slurm",
        action="store_true",
        help="build the harness into --out (on storage the nodes share), split the class into "
        "--tasks parts and submit them as one job array, then a job that writes the class files",
    )
    slurm.add_argument(
        "--tasks",
        type=int,
        metavar="N",
        help=f"array tasks, each a part of the class (default: {DEFAULT_TASKS})",
    )
    slurm.add_argument(
        "--partition", metavar="P", help="the partition (default: the job script's, or Slurm's)"
    )
    slurm.add_argument(
        "--gres",
        metavar="G",
        help=f"the GPUs of each task, as Slurm names them (default: {DEFAULT_GRES}; none: no GPU)",
    )
    slurm.add_argument("--time", metavar="T", help=f"each task's time limit (default: {DEFAULT_TIME})")
    slurm.add_argument(
        "--cpus-per-task",
        type=int,
        metavar="N",
        help=f"each task's CPUs, its --jobs (default: {DEFAULT_CPUS})",
    )
    slurm.add_argument(
        "--poll",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between looks at squeue while following the run (default: 10)",
    )
    slurm.add_argument(
        "--no-wait",
        action="store_true",
        help="submit and return; python -m grader status OUT says later where the run stands",
    )


# The grade command's options that a Slurm task grades with (OUT/.slurm/plan.json); the paths
# among them absolute, since a task runs elsewhere.
TASK_OPTIONS = (
    "labs", "timeout", "build_timeout", "jobs", "gpu_slots", "tests_per_process", "in_flight", "cuda_arch",
    "unconfined", "keep_work", "regrade", "gradebook", "roster_id", "missing",
)  # fmt: skip
TASK_PATHS = ("work_dir", "roster")


def grade_on_slurm(
    kit: Kit, args: argparse.Namespace, out_dir: Path, paths: list[Path], single: list[Path]
) -> int:
    """grade --slurm: the class submitted as a job array (grader/cluster/slurm.py), followed
    until its class files are written unless --no-wait."""
    if not paths and not single:
        raise GraderError(
            "--slurm grades a class: name its folder (or archives), e.g. make grade SLURM=1 "
            "SUBMISSIONS=class/"
        )
    if args.gpus:
        raise GraderError(
            "--slurm: the GPUs are those Slurm gives each task; ask for them with --gres, not --gpus"
        )
    if args.tasks is not None and args.tasks < 1:
        raise GraderError("--tasks must be at least 1")
    options = grading.grade_options(kit, args, for_nodes=True)
    gradebooks = grading.gradebook_request(args, options.labs)  # a bad roster stops it here
    notes: list[str] = []
    entries = find_submissions(paths, notes, single)
    for note in notes:
        print(f"note: {note}")
    task_options: dict[str, object] = {name: getattr(args, name) for name in TASK_OPTIONS}
    task_options |= {
        name: str(Path(getattr(args, name)).resolve()) if getattr(args, name) else None for name in TASK_PATHS
    }
    request = SlurmRequest(args.tasks, args.partition, args.gres, args.time, args.cpus_per_task)
    jobs = submit_class(kit, entries, notes, options, task_options, out_dir, request, gradebooks)
    if jobs is None or args.no_wait:
        if jobs is not None:
            print(f"follow it with: python -m grader status {out_dir}")
        return 0
    try:
        status = follow(out_dir, interval=args.poll)
    except KeyboardInterrupt:
        print(
            f"stopped following; the jobs go on: python -m grader status {out_dir} says where they "
            f"stand (scancel cancels them)",
            file=sys.stderr,
        )
        raise
    print("\n".join(status_lines(out_dir, status)))
    whole = status.graded == status.students and not status.count("failed")
    return 0 if whole and status.finish != "failed" else 1


def run_status_command(kit: Kit, args: argparse.Namespace) -> int:
    folder = Path(args.folder).resolve()
    status = run_status(folder)
    print("\n".join(status_lines(folder, status)))
    return 1 if status.count("failed") or status.finish == "failed" else 0


def run_task(kit: Kit, args: argparse.Namespace, grade_args: argparse.Namespace) -> int:
    """A Slurm job's step: part K of the class, or `finish`, with the options it was submitted
    with (plan.options over `grade_args`, the grade command's defaults)."""
    folder = Path(args.folder).resolve()
    plan = Plan.read(folder)
    for name, value in plan.options.items():
        setattr(grade_args, name, value)
    options = grading.grade_options(kit, grade_args, for_nodes=True)  # the harness is built: read only
    if args.step == "finish":
        scores = finish(folder, options.labs, grading.gradebook_request(grade_args, options.labs))
        print(
            f"{folder}: gradebook.csv and summary.txt written from {len(scores)} of "
            f"{len(plan.students)} students' reports"
        )
        return 0
    if not args.step.isdigit():
        raise GraderError(f"task {args.step!r}: give a part number (0, 1, ...) or finish")
    grade_part(kit, folder, int(args.step), options, make_progress())
    return 0
