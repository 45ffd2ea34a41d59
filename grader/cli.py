"""`python -m grader {check,grade,validate,handout}`: argument parsing and what each command prints."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from . import options as grading  # grading.configs etc., patched as one by the tests
from .cli_slurm import add_slurm_options, grade_on_slurm, run_status_command, run_task
from .confine.sandbox import detect
from .engine.gpus import GIB_A_GPU_SLOT, GIB_KEPT_BACK, GPU_SLOTS
from .errors import GraderError
from .pipeline.build import BuildConfig
from .pipeline.collect import find_submissions
from .pipeline.grade import (
    GradeOptions,
    check_lab,
    grade_class,
    graded_labs,
    rewrite_class_files,
)
from .pipeline.gradebooks import KNOWN_IDS, MISSING_CHOICES
from .pipeline.report import (
    FILES_HEADING,
    FOLDER_HEADING,
    LOUD,
    check_lines,
    gpu_skip_notice,
    lab_feedback_lines,
    summary_section,
)
from .pipeline.report_pages import pages_available
from .pipeline.run import TESTS_PER_JUDGE, RunConfig
from .progress import make_progress
from .rubric import Kit, find_kit_root, load_kit
from .staff.bench import run_bench
from .staff.handout import generate, make_student_kit
from .staff.mutants import grade_sample_class
from .staff.pages import PAGES_FOLDER
from .staff.release import make_release
from .staff.validate import format_table, run_validate, untested_tests
from .submit import pack_lab


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with stop_on_signals():
            kit = load_kit(Path(args.kit))
            return args.command(kit, args)
    except GraderError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        signum = interrupt.signum if isinstance(interrupt, Terminated) else signal.SIGINT
        print(f"grader: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        return 128 + signum  # the shell's status for a process ended by that signal


# What a job scheduler's time limit, `timeout` or a closed terminal sends: a run stops on them
# as on Ctrl-C.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as SIGINT raises KeyboardInterrupt, so that
    the one stop path of Ctrl-C (pipeline.stop_run, by way of stoppable_pool, Engine and
    grade_class) kills every process the run started and keeps the reports already written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP stop the command as Ctrl-C does while it runs. Only the main thread
    may set a handler (and only it receives signals): elsewhere this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        for other in STOP_SIGNALS:  # once: a second signal must not break the stop under way
            signal.signal(other, signal.SIG_IGN)
        raise Terminated(signum)

    previous = {signum: signal.signal(signum, interrupt) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def build_parser() -> argparse.ArgumentParser:
    kit_option = argparse.ArgumentParser(add_help=False)
    kit_option.add_argument(
        "--kit",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="the kit's root folder (default: the one this grader is in)",
    )
    parser = argparse.ArgumentParser(
        prog="python -m grader",
        parents=[kit_option],
        description="The CUDA lab kit's autograder: check your own lab, grade submissions, "
        "validate the tests against the mutants, and generate the handouts.",
    )
    parser.set_defaults(kit=str(find_kit_root()))
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    # The commands' declarations below (check, grade, report, validate, bench, ...) are alike in shape
    # only: each states its own flags and help, and the options they share are the _add_* helpers.
    check = commands.add_parser(
        "check",
        parents=[kit_option],
        help="run a lab's visible tests on your code",
        description="Builds your kit in place (-DKIT_KERNELS=student), runs the lab's "
        "visible tests and prints each with its points and Score: x/y. "
        "Exits non-zero unless every visible point was earned.",
    )
    check.add_argument("--lab", required=True, metavar="NN", help="the lab to check, e.g. 02")
    _add_student_build_dir(check)
    _add_limits(check)
    check.set_defaults(command=run_check)

    grade = commands.add_parser(
        "grade",
        parents=[kit_option],
        help="grade submissions or a class",
        description="Grades each class (a folder of submissions: one folder, .zip, .tar, .tar.gz "
        "or .tgz per student) and each submission archive named, and each --submission. With "
        "none, grades the sample class: the reference and one student per mutant.",
    )
    grade.add_argument("submissions", nargs="*", metavar="CLASS_OR_ARCHIVE")
    grade.add_argument(
        "--submission",
        action="append",
        default=[],
        metavar="PATH",
        help="one submission (a folder or an archive), graded on its own; may be given again",
    )
    grade.add_argument(
        "--labs", metavar="LIST", help="comma-separated labs to grade, e.g. 02,03 (default: all)"
    )
    grade.add_argument(
        "--out",
        metavar="DIR",
        help="the folder for the results (default: grades/<timestamp>/); a folder of an earlier, "
        "interrupted run of the same labs is resumed: finished submissions are kept",
    )
    _add_gradebook_options(grade)
    grade.add_argument(
        "--regrade", action="store_true", help="with an existing --out, grade every submission again"
    )
    grade.add_argument("--keep-work", action="store_true", help="keep each submission's work folder")
    _add_unconfined(grade)
    grade.add_argument(
        "--work-dir", metavar="DIR", help="where work folders go (default: the system temp folder)"
    )
    grade.add_argument(
        "--harness-dir",
        metavar="DIR",
        help="the build folder of the kit, built once for the run and kept for the next "
        "(default: build/harness in the kit)",
    )
    grade.add_argument(
        "--harness-built",
        action="store_true",
        help="with --harness-dir: the harness there is built already (by an earlier run), and "
        "this run only reads it, configuring and building nothing, so that several runs can grade "
        "beside each other against one harness",
    )
    _add_limits(grade)
    _add_grouping(grade)
    add_slurm_options(grade)
    grade.set_defaults(command=run_grade)

    status = commands.add_parser(
        "status",
        parents=[kit_option],
        help="where a class submitted to Slurm stands",
        description="For a folder graded with grade --slurm: its tasks waiting, running, done and "
        "failed (from squeue, and sacct where the cluster keeps accounting), the students graded "
        "so far, and each failed task's first error with its log. Exits 1 if a task failed.",
    )
    status.add_argument("folder", metavar="OUT", help="the --out folder of grade --slurm")
    status.set_defaults(command=run_status_command)

    task = commands.add_parser(
        "task",
        parents=[kit_option],
        help="what a Slurm job of grade --slurm runs: one part of the class, or the class files",
        description="Grades part K of a class that grade --slurm split (its job script runs this "
        "on a node, in SLURM_ARRAY_TASK_ID's part), or, with `finish`, writes the class files "
        "from every report once the parts have ended. The options are those the class was "
        "submitted with (OUT/.slurm/plan.json).",
    )
    task.add_argument("folder", metavar="OUT", help="the --out folder of grade --slurm")
    task.add_argument("step", metavar="K|finish", help="the part to grade (0, 1, ...), or finish")
    task.set_defaults(command=lambda kit, args: run_task(kit, args, build_parser().parse_args(["grade"])))

    report = commands.add_parser(
        "report",
        parents=[kit_option],
        help="write a graded folder's class files again from its reports",
        description="Writes gradebook.csv, summary.txt and dashboard.html (and, with --gradebook, "
        "the LMS's import files) of a graded --out folder again from every complete report in it: "
        "also for a folder whose students were graded by several runs or machines and copied "
        "together. Grades nothing.",
    )
    report.add_argument("folder", metavar="OUT", help="a folder make grade wrote (it has grading.json)")
    _add_gradebook_options(report)
    report.set_defaults(command=run_report)

    validate = commands.add_parser(
        "validate",
        parents=[kit_option],
        help="grade the reference and the mutants",
        description="The reference must earn full marks; every mutant must lose "
        "at least its expect_loss and show its expect_hint first, in its lab's Fix first line "
        "(solutions/NN_slug/mutants.toml). "
        "Prints one table; exits non-zero if a row FAILs.",
    )
    validate.add_argument("--labs", metavar="LIST", help="comma-separated labs, e.g. 02,03 (default: all)")
    validate.add_argument(
        "--only",
        metavar="NAMES",
        help="comma-separated mutants or variants to grade, each lab's reference beside them "
        "(default: all; a quick look at one mutant after changing its lab)",
    )
    validate.add_argument("--keep-work", action="store_true", help="keep each student's work folder")
    validate.add_argument(
        "--work-dir", metavar="DIR", help="where work folders go (default: the system temp folder)"
    )
    _add_limits(validate)
    _add_grouping(validate)
    _add_process_experiments(validate)
    validate.set_defaults(command=run_validate_command)

    bench = commands.add_parser(
        "bench",
        parents=[kit_option],
        help="the grader's own speed on a synthetic class",
        description="Grades N copies of the sample students serially and with the engine, in "
        "the same run, and prints student-labs per minute, where the time went and whether "
        "every score matched (grader/staff/bench.py).",
    )
    bench.add_argument("--labs", metavar="LIST", help="comma-separated labs (default: all)")
    bench.add_argument(
        "--copies", type=int, default=1, metavar="N", help="copies of the sample students (default: 1)"
    )
    bench.add_argument(
        "--whole-students",
        type=int,
        metavar="N",
        help="instead of the sample class, N students who each hand in every lab: the reference for "
        "every second one, the lab's mutants in turn for the others (a course's class; 200 on six "
        "labs are 1,200 student-labs)",
    )
    bench.add_argument("--no-serial", action="store_true", help="skip the serial pass")
    bench.add_argument(
        "--each-alone",
        action="store_true",
        help="with --no-serial: compare the scores with a pass that runs each test in its own process "
        "with the engine's slots (what the serial pass checks, sooner)",
    )
    bench.add_argument(
        "--also-gpus",
        metavar="LIST",
        help="after the engine's pass, one more on these GPUs alone (e.g. 0), compared with it: "
        "the rate on every GPU over the rate on these",
    )
    bench.add_argument(
        "--repeat",
        type=int,
        default=0,
        metavar="K",
        help="grade K more times with the engine and compare the scores",
    )
    bench.add_argument(
        "--only", metavar="IDS", help="comma-separated sample students, e.g. reference,lab03-no_shared_memory"
    )
    bench.add_argument(
        "--shared-windows",
        action="store_true",
        help="an experiment: a timed test measures beside the other processes on its GPU instead "
        "of waiting for it alone (what the drains cost the rate; compare the speed credits)",
    )
    bench.add_argument(
        "--quiet-windows",
        action="store_true",
        help="an experiment: while a window is open on any GPU, start no test process on any GPU "
        "(on a node of several, a window's timed calls waited on the driver while the other GPUs "
        "started processes; compare the windows' seconds, the rate and the speed credits)",
    )
    bench.add_argument(
        "--turn-slots",
        type=int,
        metavar="K",
        help="an experiment: while a GPU's profiler turn is held or waited for, start no test process "
        "there while K or more run (compare the profiler turns' seconds with a pass without it)",
    )
    bench.add_argument(
        "--max-defer",
        type=float,
        metavar="S",
        help="an experiment: a speed test's window drains its GPU at most S seconds after it is asked "
        "for (the engine's own: 20), where only jobs expected to end by then start (compare the rates "
        "and the speed credits with a pass without it)",
    )
    _add_process_experiments(bench)
    bench.add_argument("--out", metavar="DIR", type=Path, help="write bench.json there")
    bench.add_argument("--work-dir", metavar="DIR", help=argparse.SUPPRESS)
    bench.add_argument("--keep-work", action="store_true", help=argparse.SUPPRESS)
    _add_unconfined(bench)
    _add_limits(bench)
    _add_grouping(bench)
    bench.set_defaults(command=run_bench_command)

    handout = commands.add_parser(
        "handout",
        parents=[kit_option],
        help="generate the skeletons from solutions/",
        description="Rewrites labs/NN_slug/<file> from solutions/NN_slug/<file> for "
        "every student file, replacing each KIT:TODO region by its TODO "
        "text and KIT:SKELETON lines.",
    )
    handout.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 listing the skeletons that differ from the generated ones",
    )
    handout.add_argument(
        "--student-kit",
        metavar="DIR",
        type=Path,
        help="instead, write a student kit (the kit without solutions/ and bench/) into the new folder DIR",
    )
    handout.set_defaults(command=run_handout)

    submit = commands.add_parser(
        "submit",
        parents=[kit_option],
        help="pack a lab's files into the zip you hand in",
        description="Checks each of the lab's files as the grader will (a file it would refuse "
        "is refused here, with its reason), builds the lab's public tests (a failed build is "
        "reported, not refused), then writes labNN_slug.zip with exactly the lab's files at "
        "their kit paths and lists them.",
    )
    submit.add_argument("--lab", required=True, metavar="NN", help="the lab to pack, e.g. 02")
    _add_student_build_dir(submit)
    submit.add_argument(
        "--out", default="build/submit", metavar="DIR", help="where the zip goes (default: build/submit)"
    )
    submit.add_argument("--no-build", action="store_true", help="pack without building first")
    submit.set_defaults(command=run_submit)

    release = commands.add_parser(
        "release",
        parents=[kit_option],
        help="staff: the student kit archive and the write-ups as pages",
        description="Checks the skeletons and rubrics, then writes student-kit.tar.gz (the kit "
        "without staff material, hidden tests' names reduced to their points, the write-ups "
        "rendered) and pages/ (HTML, and a PDF per lab where Chromium is installed) into --out.",
    )
    release.add_argument(
        "--out", default="build/release", metavar="DIR", help="folder to (re)write (default: build/release)"
    )
    release.add_argument("--no-pdf", action="store_true", help="HTML pages only")
    release.add_argument(
        "--build-dir",
        metavar="DIR",
        help="the kit's build, to check each rubric against its tests' listing (make release: build/)",
    )
    release.set_defaults(command=run_release)
    return parser


def _add_student_build_dir(parser: argparse.ArgumentParser) -> None:
    """The build folder of the student's own code, which check and submit share."""
    parser.add_argument(
        "--build-dir",
        default="build/student",
        metavar="DIR",
        help="build folder, relative to the kit (default: build/student)",
    )


def _add_unconfined(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unconfined",
        action="store_true",
        help="run the tests of student code without the sandbox (own PID, network and mount "
        "namespaces); only for code you trust, where the sandbox cannot be set up",
    )


def _add_gradebook_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gradebook",
        action="append",
        default=[],
        metavar="LMS",
        help="also write gradebook-LMS.csv, the grade import of canvas, moodle or blackboard, from "
        "--roster; may be given again, or as a list (canvas,moodle)",
    )
    parser.add_argument(
        "--roster",
        metavar="FILE",
        help="with --gradebook: the LMS's own export of its students (Canvas: the gradebook export; "
        "Moodle: any export with the identifier; Blackboard: the Grade Center download)",
    )
    parser.add_argument(
        "--roster-id",
        metavar="COLUMN",
        help="the roster's column that matches a submission's name: a login, an email or a student "
        "number (default: the first of " + ", ".join(KNOWN_IDS) + " the roster has)",
    )
    parser.add_argument(
        "--missing",
        choices=MISSING_CHOICES,
        help="what a roster student with no submission gets in the gradebook files (default: blank, "
        "no grade)",
    )


def _add_process_experiments(parser: argparse.ArgumentParser) -> None:
    """Experiments that change how a test runs, not what it checks: bench measures them, validate
    checks that every mutant and variant still scores as expected under them."""
    parser.add_argument(
        "--modes-apart",
        action="store_true",
        help="an experiment: a sanitizer test runs each of its probe's modes in a process of its own, "
        "as before the default became one process for them all (compare the rates and the scores)",
    )
    parser.add_argument(
        "--ncu-loads",
        action="store_true",
        help="count global loads with Nsight Compute over the probe, as before the kit's load counter "
        "became the default where it is built (compare the rates, the profiler turns and the scores)",
    )


def _add_grouping(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tests-per-process",
        type=int,
        default=TESTS_PER_JUDGE,
        metavar="N",
        help="tests of a lab with a worker, but for those tagged [alone], run this many to a judge "
        "process, a test keeping the workers of the one before unless it ended or changed them; "
        f"1 runs each alone, 0 all of a lab's in one (default: {TESTS_PER_JUDGE})",
    )
    parser.add_argument(
        "--in-flight",
        type=int,
        metavar="N",
        help="submissions graded at once, each with its tests queued together (default: the CPU "
        "slots, at most 16 a GPU, at least 2: enough to keep the slots busy, few enough that "
        "reports come out one after another)",
    )


def _add_limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=RunConfig.timeout,
        metavar="S",
        help=f"seconds per test before its processes are killed (default: {RunConfig.timeout:g})",
    )
    parser.add_argument(
        "--build-timeout",
        type=float,
        default=BuildConfig.timeout,
        metavar="S",
        help=f"seconds per CMake step (default: {BuildConfig.timeout:g})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="CPU slots: processes at once, compiles, links and tests (a GPU test also takes a GPU "
        "slot) (default: the CPUs this process may run on; in a Slurm task, its --cpus-per-task)",
    )
    parser.add_argument(
        "--gpus",
        metavar="LIST",
        help="GPUs to grade on, as CUDA_VISIBLE_DEVICES values, e.g. 0,1 (default: every visible GPU); "
        "one worker lane per GPU",
    )
    parser.add_argument(
        "--gpu-slots",
        type=int,
        metavar="N",
        help=f"test processes sharing one GPU; a test still has it alone while it measures "
        f"(default: {GPU_SLOTS}, fewer on a GPU of less than "
        f"{GPU_SLOTS * GIB_A_GPU_SLOT + GIB_KEPT_BACK} GiB: one for each {GIB_A_GPU_SLOT} GiB past the "
        f"first {GIB_KEPT_BACK})",
    )
    parser.add_argument(
        "--cuda-arch",
        metavar="A",
        help="CMAKE_CUDA_ARCHITECTURES, e.g. 90 (default: the kit's choice: the GPU's, "
        "else its documented list)",
    )


# ---------------------------------------------------------------------------------------------


def run_check(kit: Kit, args: argparse.Namespace) -> int:
    lab = kit.select([args.lab])[0]
    build, run = grading.configs(args)
    build_dir = _in_kit(kit, args.build_dir)
    gpus = [gpu.strip() for gpu in args.gpus.split(",") if gpu.strip()] if args.gpus else None
    build, note = grading.build_for_this_machine(build, gpus if gpus is not None else grading.visible_gpus())
    if note:
        print(f"note: {note}")
    result = check_lab(kit, lab, build_dir, build, run, slots=(grading.cpu_slots(args), gpus, args.gpu_slots))
    print("\n".join(check_lines(result)))
    return 0 if result.earned_all else 1


def run_grade(kit: Kit, args: argparse.Namespace) -> int:
    out_dir = Path(args.out) if args.out else kit.root / "grades" / datetime.now().strftime("%Y%m%d-%H%M%S")
    paths = [Path(path).resolve() for path in args.submissions]
    single = [Path(path).resolve() for path in args.submission]
    if args.slurm:
        if args.harness_built:
            raise GraderError(
                "--harness-built is for a run on this machine: grade --slurm builds the harness its "
                "tasks read itself; drop --harness-built"
            )
        return grade_on_slurm(kit, args, out_dir.resolve(), paths, single)
    options = grading.grade_options(kit, args)
    if not options.confine:
        print(f"{LOUD}\n--unconfined: student code runs without the sandbox; grade only code you trust")
        print(LOUD)
    elif not paths and not single and (check := detect()).sandbox is None:
        # The sample class is the kit's own code: graded anyway, but the reason is shown.
        print(
            f"{LOUD}\nno sandbox on this machine ({check.reason}): the sample class is graded "
            f"unconfined; a real class would be refused\n{LOUD}"
        )
        options = replace(options, confine=False)
    # A bad roster stops the run before any grading.
    gradebooks = grading.gradebook_request(args, options.labs)
    if paths or single:
        notes: list[str] = []
        entries = find_submissions(paths, notes, single)
        for note in notes:
            print(f"note: {note}")
        scores = grade_class(kit, entries, options, out_dir, make_progress(), notes, gradebooks)
    else:
        scores = grade_sample_class(kit, options, out_dir, make_progress(), gradebooks)
    pages = pages_available() is None
    print(
        f"\nresults in {out_dir}: gradebook.csv, summary.txt{', dashboard.html' if pages else ''}, and "
        f"<student>/results.json + feedback.txt{' + feedback.html' if pages else ''}"
    )
    if gradebooks is not None:
        _print_section(out_dir, FILES_HEADING)
    notice = gpu_skip_notice(scores)
    if notice:
        print(f"\n{LOUD}\n{notice}\n{LOUD}")
    failed = [score.student_id for score in scores if score.error]
    if failed:
        print(
            f"\nthe grader failed on {len(failed)} submission(s): {', '.join(failed)}; see summary.txt",
            file=sys.stderr,
        )
        return 1
    return 0


def run_report(kit: Kit, args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    labs = kit.select(graded_labs(folder))
    scores = rewrite_class_files(folder, labs, grading.gradebook_request(args, labs))
    print(f"{folder}: gradebook.csv, summary.txt and dashboard.html written again from {len(scores)} reports")
    for heading in (FOLDER_HEADING, FILES_HEADING):
        _print_section(folder, heading)
    return 0


def _print_section(out_dir: Path, heading: str) -> None:
    """A section of the summary just written, repeated on the terminal (the LMS files' notes)."""
    for line in summary_section((out_dir / "summary.txt").read_text(encoding="utf-8"), heading):
        print(line)


def run_validate_command(kit: Kit, args: argparse.Namespace) -> int:
    # The kit's own solutions and mutants: trusted code, graded without the sandbox.
    options = replace(
        grading.grade_options(kit, args),
        confine=False,
        load_counter=not args.ncu_loads,
        modes_together=not args.modes_apart,
    )
    only = frozenset(name.strip() for name in args.only.split(",") if name.strip()) if args.only else None
    if args.only is not None and not only:
        raise GraderError("validate --only: give the names of mutants or variants, e.g. --only early_return")
    report = run_validate(kit, options, make_progress(), only)
    print()
    print(format_table(report.verdicts))
    print(f"global loads of labs 03-05 counted by {report.loads_counted_by}")
    for verdict in report.failed:
        score = report.scores.get(verdict.student_id)
        print(f"\nFAIL {verdict.student} (lab {verdict.lab_id}): {verdict.note}")
        lab = score.lab(verdict.lab_id) if score else None
        if lab is not None:
            print("\n".join("  " + line for line in lab_feedback_lines(lab)))
    notice = gpu_skip_notice(list(report.scores.values()))
    if notice:
        print(
            f"\n{LOUD}\n{notice}\nvalidate judged only what ran here: {len(report.not_run)} rows say "
            f"'not run'; run validate on a GPU machine to judge them.\n{LOUD}"
        )
    elif only is None:  # with --only, most mutants did not run: no test is suspect for that
        for lab_id, names in untested_tests(report, options.labs).items():
            for name in names:
                print(
                    f"note: no mutant of lab {lab_id} loses points on {name!r} "
                    "(a missing mutant, or a suspect test)"
                )
    if report.failed:
        print(f"\nvalidate: {len(report.failed)} row(s) FAIL", file=sys.stderr)
        return 1
    return 0


def run_bench_command(kit: Kit, args: argparse.Namespace) -> int:
    if args.whole_students is not None:
        if args.whole_students < 1:
            raise GraderError("--whole-students must be at least 1")
        if args.only or args.copies != 1:
            raise GraderError(
                "--whole-students makes a class of its own: give it without --only and --copies"
            )
    if args.turn_slots is not None and args.turn_slots < 1:
        raise GraderError("--turn-slots must be at least 1")
    if args.max_defer is not None and not (math.isfinite(args.max_defer) and args.max_defer >= 0):
        raise GraderError("--max-defer must be a number of seconds, 0 or more")
    options = replace(
        grading.grade_options(kit, args),
        exclusive_windows=not args.shared_windows,
        quiet_windows=args.quiet_windows,
        turn_slots=args.turn_slots,
        max_defer=args.max_defer if args.max_defer is not None else GradeOptions.max_defer,
        load_counter=not args.ncu_loads,
        modes_together=not args.modes_apart,
    )
    only = [name.strip() for name in args.only.split(",")] if args.only else None
    if args.copies < 1 or args.repeat < 0:
        raise GraderError("--copies must be at least 1 and --repeat at least 0")
    each_alone = args.each_alone and args.no_serial
    also = tuple(gpu.strip() for gpu in args.also_gpus.split(",") if gpu.strip()) if args.also_gpus else None
    return run_bench(
        kit,
        options,
        args.copies,
        not args.no_serial,
        args.repeat,
        only,
        args.out,
        each_alone,
        also,
        whole_students=args.whole_students or 0,
    )


def run_handout(kit: Kit, args: argparse.Namespace) -> int:
    if args.student_kit is not None:
        files = make_student_kit(kit, args.student_kit)
        print(
            f"student kit in {args.student_kit}: {len(files)} files, without solutions/ and bench/; "
            "it builds the students' kernels by default"
        )
        return 0
    stale = generate(kit, check=args.check)
    relative = [str(path.relative_to(kit.root)) for path in stale]
    if args.check:
        if stale:
            print(
                f"{len(stale)} skeleton(s) differ from their solution: {', '.join(relative)}; "
                "run make handout (python -m grader handout) and commit the result",
                file=sys.stderr,
            )
            return 1
        print("handouts are in sync with solutions/")
        return 0
    print(
        f"rewrote {len(stale)} skeleton(s)" + (f": {', '.join(relative)}" if stale else " (all were in sync)")
    )
    return 0


def _in_kit(kit: Kit, folder: str) -> Path:
    path = Path(folder)
    return path if path.is_absolute() else kit.root / path


def run_submit(kit: Kit, args: argparse.Namespace) -> int:
    lab = kit.select([args.lab])[0]
    build_dir = None if args.no_build else _in_kit(kit, args.build_dir)
    if build_dir is not None:
        print(f"building lab {lab.id}'s public tests ...", flush=True)
    # Built as check builds it here, in the folder they share, so that neither rebuilds the other's.
    build = (
        grading.build_for_this_machine(BuildConfig(), grading.visible_gpus())[0]
        if build_dir
        else BuildConfig()
    )
    packed = pack_lab(kit, lab, _in_kit(kit, args.out), build_dir, build)
    if packed.build_problem:
        print(
            f"{LOUD}\nWARNING: lab {lab.id} does not build; the zip was written anyway, but code "
            f"that does not compile earns no test's points:\n{packed.build_problem}\n{LOUD}"
        )
    print(f"{packed.zip_path}:")
    for name in packed.files:
        print(f"  {name}")
    print(f"hand in this file; it holds {len(packed.files)} file(s), the lab's only")
    return 0


def run_release(kit: Kit, args: argparse.Namespace) -> int:
    out = _in_kit(kit, args.out)
    made = make_release(
        kit, out, pdf=not args.no_pdf, build_dir=_in_kit(kit, args.build_dir) if args.build_dir else None
    )
    print(f"{made.archive}: the student kit, {made.files} files")
    print(f"{out / PAGES_FOLDER}: {len(made.pages.html)} HTML pages, {len(made.pages.pdf)} PDFs")
    if made.pages.note:
        print(made.pages.note)
    return 0
