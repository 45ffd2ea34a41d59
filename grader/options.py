"""What the commands' options mean for grading: the build and run settings, the CPU slots, the
grading options of check, grade, validate and bench, and the LMS files asked for. Shared by the
commands (cli.py) and the Slurm backend's (cli_slurm.py), whose tasks grade with the options
their class was submitted with."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .engine.schedule import visible_gpus
from .errors import GraderError
from .pipeline.build import BuildConfig, build_for_this_machine
from .pipeline.grade import GradeOptions
from .pipeline.gradebooks import GradebookRequest, check_formats, read_roster
from .pipeline.run import TESTS_PER_JUDGE, RunConfig
from .rubric import Kit, Lab


def configs(args: argparse.Namespace) -> tuple[BuildConfig, RunConfig]:
    return (
        BuildConfig(cuda_arch=args.cuda_arch, timeout=args.build_timeout),
        RunConfig(
            timeout=args.timeout, tests_per_process=getattr(args, "tests_per_process", TESTS_PER_JUDGE)
        ),
    )


def cpu_slots(args: argparse.Namespace) -> int:
    """--jobs, else the CPUs this process may run on: a Slurm task's allocation, a taskset's."""
    if args.jobs is not None:
        return int(args.jobs)
    given = os.environ.get("SLURM_CPUS_PER_TASK", "")
    return int(given) if given.isdigit() and int(given) > 0 else len(os.sched_getaffinity(0)) or 2


def grade_options(kit: Kit, args: argparse.Namespace, for_nodes: bool = False) -> GradeOptions:
    """The grading options of check, grade, validate and bench. `for_nodes`: the harness is
    built here for other machines (a Slurm cluster's nodes), so this one's GPUs say nothing."""
    build, run = configs(args)
    labs = kit.select(args.labs.split(",") if args.labs else None)
    work_root = Path(args.work_dir).resolve() if args.work_dir else None
    jobs = cpu_slots(args)
    if jobs < 1 or (args.gpu_slots is not None and args.gpu_slots < 1):
        raise GraderError("--jobs and --gpu-slots must be at least 1")
    in_flight = getattr(args, "in_flight", None)
    if in_flight is not None and in_flight < 1:
        raise GraderError("--in-flight must be at least 1 (submissions graded at once)")
    if run.tests_per_process < 0:
        raise GraderError(
            "--tests-per-process must be 0 (a lab's shareable tests in one process) or more "
            "(1 runs each test alone)"
        )
    gpus = tuple(gpu.strip() for gpu in args.gpus.split(",") if gpu.strip()) if args.gpus else None
    build, note = (build, "") if for_nodes else build_for_this_machine(build, list(gpus or visible_gpus()))
    if note:
        print(f"note: {note}")
    return GradeOptions(
        labs=labs,
        build=build,
        run=run,
        work_root=work_root,
        keep_work=args.keep_work,
        cpu_slots=jobs,
        gpus=gpus,
        gpu_slots=args.gpu_slots,
        in_flight=in_flight,
        regrade=getattr(args, "regrade", False),
        harness_dir=Path(args.harness_dir).resolve() if getattr(args, "harness_dir", None) else None,
        harness_built=harness_built(args),
        confine=not getattr(args, "unconfined", False),
    )


def harness_built(args: argparse.Namespace) -> bool:
    """Whether `--harness-built` says the harness in `--harness-dir` is built already; an error
    when that folder holds no configured build, which only a run without the flag makes."""
    if not getattr(args, "harness_built", False):
        return False
    if not getattr(args, "harness_dir", None):
        raise GraderError(
            "--harness-built says the harness in --harness-dir is built: give --harness-dir DIR too"
        )
    folder = Path(args.harness_dir)
    if not (folder / "CMakeCache.txt").is_file():
        raise GraderError(
            f"--harness-built: {folder} holds no built harness (no CMakeCache.txt); grade once "
            "without --harness-built to build it there, or drop the flag"
        )
    return True


def gradebook_request(args: argparse.Namespace, labs: list[Lab]) -> GradebookRequest | None:
    formats = check_formats(args.gradebook)
    if not formats:
        given = [
            name
            for name, value in (
                ("--roster", args.roster),
                ("--roster-id", args.roster_id),
                ("--missing", args.missing),
            )
            if value
        ]
        if given:
            raise GraderError(
                f"{', '.join(given)}: read only with --gradebook (canvas, moodle or blackboard)"
            )
        return None
    if not args.roster:
        raise GraderError(
            "--gradebook needs --roster FILE: the LMS's own export of its students, whose rows the "
            "import file fills"
        )
    request = GradebookRequest(
        formats, read_roster(Path(args.roster), args.roster_id), args.missing or "blank"
    )
    request.check(labs)
    return request
