"""The grade orchestrator: collect -> stage -> build -> run -> score -> report, top to bottom.

An Engine holds what a grading run shares: the harness (built once), the build cache, the
scheduler of CPU slots and GPU lanes, and the thread pool that starts the processes. Several
submissions are in flight at once; each goes through the stages in order, its labs side by
side, and its report is written the moment it is done. Also the student's own `check` (the same
run and score, in place, visible tests only).
"""

from __future__ import annotations

import contextvars
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ..confine.cgroups import Cgroups
from ..confine.cgroups import detect as detect_cgroups
from ..confine.proc import kill_started_groups
from ..confine.sandbox import Sandbox, detect, gpu_nodes, tool_folders
from ..engine.gpus import lane_slots
from ..engine.schedule import (
    MAX_DEFER_S,
    SUBMISSION,
    SUBMISSION_ORDER,
    Need,
    Scheduler,
    Stopped,
    result_of,
    visible_gpus,
)
from ..errors import GraderError
from ..progress import PlainProgress, Progress, QuietProgress
from ..rubric import Kit, Lab, check_rubric_against_listing
from .build import BuildCache, BuildConfig, build_labs, build_submission_lab, make_cache_root
from .charts import draw_charts, plot_charts
from .collect import Submission, collect_submission
from .gradebooks import GradebookRequest, write_gradebooks
from .harness import Harness, load_counter, prepare_harness
from .recipes import LabHarness
from .report import (
    finished_score,
    format_points,
    kept_score,
    summary_text,
    write_atomically,
    write_gradebook,
    write_submission_report,
)
from .report_pages import DASHBOARD_PAGE, FEEDBACK_PAGE, dashboard_html, feedback_html, pages_available
from .run import RunConfig, list_tests, run_tests
from .score import (
    NOT_SUBMITTED,
    CheckResult,
    LabScore,
    SubmissionScore,
    hide_grader_paths,
    score_lab,
    score_test,
    score_unbuilt_lab,
)
from .stage import make_work_dir, stage_submission

MANIFEST = "grading.json"  # what an --out folder was graded with, checked on resume


# A sanitizer test's modes in one process of the probe (kit::sanitizer::run_modes): how grading,
# and so make check, run them unless bench or validate is told --modes-apart.
MODES_TOGETHER = {"KIT_SANITIZER_MODES_TOGETHER": "1"}


@dataclass(frozen=True)
class GradeOptions:
    labs: list[Lab]
    build: BuildConfig = field(default_factory=BuildConfig)
    run: RunConfig = field(default_factory=RunConfig)
    work_root: Path | None = None  # where private work folders go; a system temp folder if None
    keep_work: bool = False  # keep each work folder (its build and test outputs) for debugging
    cpu_slots: int = field(default_factory=lambda: os.cpu_count() or 2)  # compiles, links, CPU tests
    gpus: tuple[str, ...] | None = None  # CUDA_VISIBLE_DEVICES values; None: every visible GPU
    # Test processes sharing one GPU (but for measuring windows); None: the engine's, from the
    # GPUs' memory (gpu_slots_for).
    gpu_slots: int | None = None
    in_flight: int | None = None  # submissions graded at once; None: enough to fill the slots
    harness_dir: Path | None = None  # the harness build; None: <kit>/build/harness
    harness_built: bool = False  # the harness was built by another process: only read it
    regrade: bool = False  # grade again submissions whose report is already in --out
    confine: bool = True  # run tests in the sandbox (grader/confine/sandbox.py); refuse where there is none
    output_dir: Path | None = None  # the class's --out, hidden from confined tests
    exclusive_windows: bool = True  # False only in the bench's experiment (Scheduler says what)
    quiet_windows: bool = False  # True only in the bench's experiment (Scheduler says what)
    turn_slots: int | None = None  # GPU jobs running beside a profiler turn; a bench experiment
    max_defer: float = MAX_DEFER_S  # how long a window asked for waits to drain its lane; a bench experiment
    load_counter: bool = True  # count global loads with the kit's load counter where built, else ncu
    # A sanitizer test's modes in one probe process: one CUDA start instead of one a mode
    # (kit::sanitizer::run_modes); off only for bench and validate --modes-apart.
    modes_together: bool = True


# ---------------------------------------------------------------------------------------------
# Stopping a run (Ctrl-C)


def stop_run(scheduler: Scheduler) -> None:
    """No process starts from now on, and every running one is killed: each test or compile
    leads a process group of its own, which the terminal's SIGINT does not reach. Returns once
    every slot is given back, so no process of the run is left."""
    scheduler.stop()
    # Again until every slot is back: a thread that held its slot may start one more process.
    while True:
        kill_started_groups()
        if scheduler.wait_until_idle(timeout=0.05):
            return


@contextmanager
def stoppable_pool(scheduler: Scheduler, workers: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool for work that starts its processes through `scheduler`. On Ctrl-C the run
    is stopped before the pool shuts down, which would otherwise wait for all of that work."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        yield pool
    except KeyboardInterrupt:
        stop_run(scheduler)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# The engine: what one grading run shares


class Engine:
    def __init__(self, kit: Kit, options: GradeOptions, progress: Progress | None = None) -> None:
        self.kit = kit
        self.options = options
        self.progress = progress or QuietProgress()
        gpus = list(options.gpus) if options.gpus is not None else visible_gpus()
        self.scheduler = Scheduler(
            options.cpu_slots,
            gpus,
            lane_slots(options.gpu_slots, gpus),
            exclusive_windows=options.exclusive_windows,
            quiet_windows=options.quiet_windows,
            turn_slots=options.turn_slots,
            max_defer=options.max_defer,
        )
        # Threads for the tests of every submission in flight, each with its lab's tests handed to
        # the scheduler together (a lab has up to about twenty): a pool sized by the slots alone
        # held back the jobs of a larger --in-flight in its own queue, unordered by submission.
        # A submission's labs run side by side, so its jobs (a lab's tests tagged [alone] and its
        # judge, up to seven a lab, 23 for all six) come at once: 24 threads for each submission
        # in flight.
        self.pool = ThreadPoolExecutor(
            max_workers=max(16, 4 * self.scheduler.total_slots, 24 * self.in_flight)
        )
        self.cache_root = make_cache_root(options.work_root)
        self.run_config = (
            replace(options.run, sandbox=self._sandbox(), cgroups=self._cgroups())
            if options.confine
            else options.run
        )
        self.cache = BuildCache(
            self.cache_root, self.scheduler, options.build, self.run_config.sandbox, self.run_config.cgroups
        )
        self._harness: Harness | None = None
        # Seconds, summed over submissions (several run at once, so sums can exceed the wall time).
        self.timings = {"harness": 0.0, "build": 0.0, "test_processes": 0.0}
        self._timings_lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        # As many as the CPU slots, at most 16 a GPU: on an H200 with 16 CPUs, 16 in flight with
        # 12 GPU slots graded the sample class 7 % faster than 8 with 8 slots (one pass each),
        # where the slots were short of tests while the submissions' last ones waited for a window
        # or a profiler turn (bench/RESULTS.md, "More submissions in flight"). Few enough that
        # submissions finish, and are reported, one after another: with the whole class in flight
        # at once no report came before the end, and more than 16 a GPU were never measured.
        if self.options.in_flight:
            return self.options.in_flight
        gpus = len(self.scheduler.gpus)
        return max(2, min(self.scheduler.total_slots, 16 * gpus) if gpus else self.scheduler.total_slots)

    def _sandbox(self) -> Sandbox:
        """The sandbox the tests of student code run in (grader/confine/sandbox.py), or a refusal."""
        # The sandbox's view is an allowlist (the system's folders and what a test names); these
        # are covered as well, should one lie inside a system folder (a kit kept under /opt).
        hidden = [
            self.kit.root,
            self.kit.root / "solutions",
            self.kit.root / "build",
            self.options.harness_dir,
            self.options.work_root,
            self.cache_root.parent,
            self.options.output_dir,
        ]
        check = detect(
            tuple(dict.fromkeys(path for path in hidden if path is not None)), tool_folders(self.kit.root)
        )
        if check.sandbox is None:
            raise GraderError(
                f"cannot confine student code on this machine: {check.reason}. Tests of student code "
                "run in their own PID, network and mount namespaces (docs/design/confinement.md, "
                "'Confinement'); run the grader as root, or where unprivileged user namespaces are "
                "allowed, or pass --unconfined to grade code you trust without confinement"
            )
        # Each GPU lane's processes see that GPU's device node alone (sandbox_init.c).
        return replace(check.sandbox, gpu_nodes=gpu_nodes(self.scheduler.gpus))

    def _cgroups(self) -> Cgroups | None:
        """A cgroup per test process, bounding its memory and processes (grader/confine/cgroups.py);
        where there can be none, said once, and the other limits still hold."""
        check = detect_cgroups()
        if check.cgroups is None:
            self.progress.log(
                f"note: no memory or process limits per test on this machine: {check.reason}. "
                "The time, CPU, output, file-size and open-file limits and the sandbox still hold "
                "(docs/design/confinement.md, 'Confinement')"
            )
        elif check.cgroups.note:
            self.progress.log(f"note: {check.cgroups.note}")
        return check.cgroups

    def _harness_dir(self) -> Path:
        return self.options.harness_dir or self.kit.root / "build" / "harness"

    def harness(self) -> Harness:
        if self._harness is None:
            build_dir = self._harness_dir()
            self._harness = prepare_harness(
                self.kit,
                self.options.labs,
                build_dir,
                self.options.build,
                self.options.run,
                self.progress.log,
                built=self.options.harness_built,
            )
            self.timings["harness"] = self._harness.duration
        return self._harness

    def _add_time(self, key: str, seconds: float) -> None:
        with self._timings_lock:
            self.timings[key] += seconds

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.cache_root, ignore_errors=True)
        if self.run_config.cgroups is not None:
            failures = self.run_config.cgroups.failures
            if failures:
                self.progress.log(
                    f"note: {len(failures)} test(s) ran without their memory and process limits; "
                    f"the first: {failures[0]}"
                )
            self.run_config.cgroups.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            stop_run(self.scheduler)
        self.close()

    # -----------------------------------------------------------------------------------------

    def grade(self, submission: Submission, labs: list[Lab] | None = None) -> SubmissionScore:
        """stage -> build -> run -> score. Never raises for a grading problem: it lands in `error`."""
        labs = labs if labs is not None else self.options.labs
        student = submission.student_id
        score = SubmissionScore(student, refused=list(submission.refused))
        start = time.monotonic()
        work_dir = make_work_dir(self.options.work_root, student)
        try:
            harness = self.harness()
            self.progress.stage(student, "staging")
            stage = stage_submission(submission, labs, work_dir)
            graded, error = self._grade_labs(harness, submission, stage.work_dir, score, labs)
            score.labs.extend(graded)
            if error is not None:
                raise error
        except GraderError as error:
            score.error = str(error)
        except Stopped:
            raise
        except Exception as error:  # a grader bug must not lose the other students' grades
            score.error = f"internal grader error: {type(error).__name__}: {error}\n{traceback.format_exc()}"
        finally:
            score.duration = time.monotonic() - start
            # A file of the student's own is named as they know it; the grader's folders by a stand-in.
            own = [(f"{work_dir}/labs/{lab.slug}/", "") for lab in labs]
            grader = [
                (work_dir, "<work folder>"),
                (self.cache_root, "<build cache>"),
                (self._harness_dir(), "<kit build>"),
                (self.kit.root, "<kit>"),
            ]
            hide_grader_paths(score, [*own, *((str(path), shown) for path, shown in grader)])
            if self.options.keep_work:
                self.progress.log(f"{student}: work folder kept: {work_dir}")
            else:
                shutil.rmtree(work_dir, ignore_errors=True)
        _fill_ungraded_labs(score, labs)
        return score

    def _grade_labs(
        self,
        harness: Harness,
        submission: Submission,
        work_dir: Path,
        score: SubmissionScore,
        labs: list[Lab],
    ) -> tuple[list[LabScore], Exception | None]:
        """A submission's labs side by side, each through build, run and score in its own thread:
        its report then waits for its longest lab, not for the sum of them. One lab after another, a
        student's six labs took about 100 s on an H200 (about 20 s a lab), so the first report of a
        class of full submissions came well after a minute (bench/RESULTS.md, "A submission's labs
        side by side"). The labs' jobs reach the scheduler as the submission's, so the earliest
        submission still goes first. Returns the labs graded, in the labs' order, and the first
        error a lab raised, if any (the caller reports it; the labs it spared are kept). A stop
        (Stopped) is raised at once."""
        # A lab the kit could not build is named in the report's error, in the labs' order.
        for lab in labs:
            if problem := harness.labs[lab.id].problem:
                score.error = (score.error + "\n" if score.error else "") + f"{lab.tag}: {problem}"
        graded: list[LabScore] = []
        first_error: Exception | None = None
        # On Ctrl-C (grade_submission on the main thread) the run stops before the labs are waited
        # for, as for every pool of work that starts processes.
        with stoppable_pool(self.scheduler, len(labs)) as side_by_side:
            futures = [
                side_by_side.submit(
                    contextvars.copy_context().run,  # SUBMISSION_ORDER and SUBMISSION go along
                    self._grade_lab_and_say,
                    harness,
                    harness.labs[lab.id],
                    submission,
                    work_dir,
                )
                for lab in labs
            ]
            for future in futures:
                try:
                    graded.append(result_of(future))
                except Stopped:
                    raise
                except Exception as error:
                    if first_error is None:
                        first_error = error
        return graded, first_error

    def _grade_lab_and_say(
        self, harness: Harness, lab_harness: LabHarness, submission: Submission, work_dir: Path
    ) -> LabScore:
        """A lab's grading, then its stage "scored": the progress shows a submission's labs side by
        side (grader/progress.py), each lab's last stage until the submission's report."""
        lab_score = self._grade_lab(harness, lab_harness, submission, work_dir)
        tag = lab_harness.lab.tag
        self.progress.stage(
            submission.student_id, f"{tag} scored: {lab_score.points:g}/{lab_score.max_points:g}", tag
        )
        return lab_score

    def _grade_lab(
        self,
        harness: Harness,
        lab_harness: LabHarness,
        submission: Submission,
        work_dir: Path,
    ) -> LabScore:
        lab = lab_harness.lab
        if lab_harness.problem:
            # A kit problem, not the student's: graded as nothing, and reported as a grader failure
            # (in the submission's error: _grade_labs).
            return score_unbuilt_lab(lab, lab_harness.problem)
        # Without a file the tests only read (answers.toml), the code is still built and graded:
        # the tests that read it fail, saying it is missing; without code, nothing can run.
        data = {name for _, name in lab_harness.data_files}
        if any(name not in data for name in submission.missing_files(lab)):
            return score_unbuilt_lab(lab, _not_submitted(lab, submission))
        self.progress.stage(submission.student_id, f"building {lab.tag}", lab.tag)
        files = submission.files[lab.slug]
        build = build_submission_lab(lab_harness, harness.fingerprint, files, self.cache)
        self._add_time("build", build.duration)
        if not build.ok or build.exe_path is None:
            return score_lab(lab, build, {})
        env = {
            variable: str(work_dir / "labs" / lab.slug / name) for variable, name in lab_harness.data_files
        }
        if lab_harness.probe and lab_harness.probe in build.executables:
            env["KIT_PROBE_PATH"] = str(build.executables[lab_harness.probe])
            # Built (and not turned off with --ncu-loads), the judge counts global loads with the load
            # counter over the lesson's kernel launched by the kit alone (kit/load_counter.hpp,
            # count_kernel_alone); otherwise, set empty, every count is Nsight Compute's over the probe
            # (docs/design/tests.md, "The load counter").
            counter = load_counter(harness) if self.options.load_counter else None
            env["KIT_LOAD_COUNTER_PATH"] = str(counter) if counter is not None else ""
        if self.options.modes_together:
            env |= MODES_TOGETHER
        tests = [test for test in lab_harness.tests if lab.test(test.name) is not None]
        outcomes = run_tests(
            build.exe_path,
            tests,
            work_dir,
            self.run_config,
            self.scheduler,
            self.pool,
            env,
            lambda what: self.progress.stage(submission.student_id, f"{lab.tag}: {what}", lab.tag),
            build.executables.get(lab_harness.worker) if lab_harness.worker else None,
        )
        self._add_time("test_processes", sum(outcome.duration for outcome in outcomes.values()))
        lab_score = score_lab(lab, build, outcomes)
        if lab.charts is not None and lab.charts.target in build.executables:
            self.progress.stage(submission.student_id, f"drawing the charts of {lab.tag}", lab.tag)
            with self.scheduler.hold(Need.CPU):  # a process like the others: a slot, none after a stop
                lab_score.charts = plot_charts(
                    lab,
                    self.kit.root,
                    build.executables[lab.charts.target],
                    work_dir / "charts" / lab.tag,
                    self.run_config.sandbox,
                    self.run_config.cgroups,
                )
        return lab_score

    def grade_all(
        self,
        jobs: Sequence[tuple[str, Callable[[], Submission]]],
        labs_for: Callable[[str], list[Lab]] | None = None,
        done: Callable[[SubmissionScore], None] | None = None,
    ) -> dict[str, SubmissionScore]:
        """Grades (student id, how to collect it) jobs, `in_flight` at a time; `done` is called
        from the grading thread as each finishes (reports are written there), but not once the
        run is stopped (a Ctrl-C here, stop_run): what they graded meanwhile may hold killed tests."""

        def one(order: int, student_id: str, collect: Callable[[], Submission]) -> SubmissionScore:
            SUBMISSION_ORDER.set(order)  # the earliest submission's jobs go first (engine/schedule.py)
            SUBMISSION.set(student_id)  # and the timeline names it
            score = SubmissionScore(student_id)
            try:
                self.progress.stage(student_id, "collecting")
                submission = collect()
                score = self.grade(submission, labs_for(student_id) if labs_for else None)
            except Stopped:
                return score
            except GraderError as error:
                score.error = str(error)
            except Exception as error:
                score.error = (
                    f"internal grader error: {type(error).__name__}: {error}\n{traceback.format_exc()}"
                )
            _fill_ungraded_labs(score, labs_for(student_id) if labs_for else self.options.labs)
            # Stopped after its last test ran: some of its tests may have been killed.
            if done is not None and not self.scheduler.stopped:
                try:
                    done(score)
                except Exception as error:  # its report, too, costs this submission alone
                    score.error = (score.error + "\n" if score.error else "") + (
                        f"its report could not be written: {type(error).__name__}: {error}"
                    )
            return score

        self.harness()  # once, before anything runs: a kit that does not build stops the run here
        with stoppable_pool(self.scheduler, self.in_flight) as submissions:
            futures = {
                student_id: submissions.submit(one, order, student_id, collect)
                for order, (student_id, collect) in enumerate(jobs)
            }
            return {student_id: result_of(future) for student_id, future in futures.items()}


def grade_submission(
    kit: Kit, submission: Submission, options: GradeOptions, labs: list[Lab] | None = None
) -> SubmissionScore:
    """One submission with an engine of its own (tests, tools); a class shares one engine."""
    with Engine(kit, options) as engine:
        return engine.grade(submission, labs)


def _not_submitted(lab: Lab, submission: Submission) -> str:
    missing = ", ".join(submission.missing_files(lab))
    refused = [item.path for item in submission.refused]
    return f"{NOT_SUBMITTED}: {missing}" + (" (files were refused: see above)" if refused else "")


def _fill_ungraded_labs(score: SubmissionScore, labs: list[Lab]) -> None:
    """After a failure, the labs not reached still appear (with their maximum) in the gradebook."""
    for lab in labs:
        if score.lab(lab.id) is None:
            score.labs.append(score_unbuilt_lab(lab, "not graded: the grader failed on this submission"))
    score.labs.sort(key=lambda lab: lab.lab_id)


# ---------------------------------------------------------------------------------------------
# A class


def grade_class(
    kit: Kit,
    entries: list[tuple[str, Path]],
    options: GradeOptions,
    out_dir: Path,
    progress: Progress | None = None,
    notes: Sequence[str] = (),
    gradebooks: GradebookRequest | None = None,
    part: bool = False,
) -> list[SubmissionScore]:
    """Grades every (student id, path), writing each report as it finishes; returns the scores.
    `notes` (what collect.find_submissions said about the class folder) go into the summary;
    `gradebooks`, the LMS import files to write from the instructor's roster (gradebooks.py).

    An --out folder that holds an earlier run of the same labs is resumed: submissions with a
    complete report are kept (unless options.regrade), the rest are graded, and the class files
    are written from all of them.

    With `part`, the entries are one part of a class that other processes grade into the same
    folder at once (a Slurm task, grader/cluster/slurm.py): the folder was opened by the command
    that split the class, so nothing in it is cleaned up here (another part's half-written
    report is not a leftover), and the class files are written once every part has ended."""
    progress = progress or PlainProgress()
    if part:
        check_out_dir(out_dir, options)
    else:
        open_out_dir(out_dir, options)
    options = replace(options, output_dir=out_dir)
    kept: dict[str, SubmissionScore] = {}
    if not options.regrade:
        for student_id, _ in entries:
            previous = kept_score(out_dir / student_id)  # one the grader failed on: again
            if previous is not None:
                kept[student_id] = previous
    todo = [(student_id, path) for student_id, path in entries if student_id not in kept]
    progress.start(len(entries), len(kept))
    reported = [len(kept)]  # a list: done() counts from the grading threads

    def done(score: SubmissionScore) -> None:
        # Otter-style: the results file is written whatever happened in grading.
        write_submission_report(out_dir / score.student_id, score, submission_pages(score))
        reported[0] += 1
        line = f"{format_points(score.points)}/{format_points(score.max_points)}"
        progress.finished(
            score.student_id, line + ("  (the grader failed: see summary.txt)" if score.error else "")
        )

    jobs = [(student_id, partial(collect_submission, path, kit, student_id)) for student_id, path in todo]
    try:
        with Engine(kit, options, progress) as engine:
            graded = engine.grade_all(jobs, done=done) if jobs else {}
    except KeyboardInterrupt:
        progress.close()
        print(
            f"stopped: {reported[0]} of {len(entries)} submissions graded and kept in {out_dir}; "
            "the same command (the same --out) grades the rest and writes the class files",
            file=sys.stderr,
        )
        raise
    finally:
        progress.close()
    by_id = {**kept, **graded}
    scores = [by_id[student_id] for student_id, _ in entries]
    if not part:
        write_class_files(out_dir, scores, options.labs, notes, gradebooks)
    return scores


def write_class_files(
    out_dir: Path,
    scores: list[SubmissionScore],
    labs: list[Lab],
    notes: Sequence[str] = (),
    gradebooks: GradebookRequest | None = None,
) -> None:
    write_gradebook(out_dir / "gradebook.csv", scores, [lab.id for lab in labs])
    # What was said of the class's other files: the LMS's import files, the pages.
    files: list[str] = []
    if gradebooks is not None:
        files += write_gradebooks(out_dir, scores, labs, gradebooks)
    titles = {lab.id: lab.title for lab in labs}
    missing = pages_available()
    if missing is None:
        write_atomically(out_dir / DASHBOARD_PAGE, dashboard_html(scores, titles, notes, files))
    else:
        files.append(missing)
    write_atomically(out_dir / "summary.txt", summary_text(scores, titles, notes, files))


def graded_labs(out_dir: Path) -> list[str]:
    """The labs a graded folder was graded for (its MANIFEST), or a GraderError saying what it is."""
    try:
        labs = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))["labs"]
    except (OSError, ValueError, KeyError, TypeError):
        raise GraderError(
            f"{out_dir}: no readable {MANIFEST}, so it is not a folder make grade wrote; name the --out "
            "folder of a grading run"
        ) from None
    if not isinstance(labs, list) or not all(isinstance(lab, str) for lab in labs):
        raise GraderError(f"{out_dir / MANIFEST}: its labs are not a list of lab ids; was it edited?")
    return labs


def rewrite_class_files(
    out_dir: Path, labs: list[Lab], gradebooks: GradebookRequest | None = None
) -> list[SubmissionScore]:
    """The class files of a graded folder written again from every complete report in it
    (`<student>/score.json`), whichever run or machine wrote it: a class graded in parts and
    copied into one folder gets one gradebook, summary and dashboard. A student folder without a
    complete report is named in the summary, to be graded again; nothing is graded here."""
    scores, unfinished = [], []
    for folder in sorted(
        path for path in out_dir.iterdir() if path.is_dir() and not path.name.startswith(".")
    ):
        score = finished_score(folder)
        if score is None:
            unfinished.append(folder.name)
        else:
            scores.append(score)
    if not scores:
        raise GraderError(f"{out_dir}: no complete report in it; grade the class into it first")
    notes = [
        f"{name}: no complete report (a run stopped while grading it, or an older grader's): grade "
        f"it again with the same --out"
        for name in unfinished
    ]
    write_class_files(out_dir, scores, labs, notes, gradebooks)
    return scores


def submission_pages(score: SubmissionScore) -> dict[str, str]:
    """A submission's pages (feedback.html), none where Jinja2 is missing (the summary says so)."""
    return {FEEDBACK_PAGE: feedback_html(score)} if pages_available() is None else {}


def open_out_dir(out_dir: Path, options: GradeOptions) -> None:
    """Creates --out, or accepts it for resuming when it was graded with the same labs."""
    manifest = {"labs": [lab.id for lab in options.labs]}
    path = out_dir / MANIFEST
    if out_dir.exists() and any(out_dir.iterdir()):
        check_out_dir(out_dir, options)
        # A run killed while writing a report leaves its private folder behind: that submission
        # has no report, so it is graded again; the leftovers go.
        for leftover in out_dir.glob(".partial-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        for leftover in out_dir.glob(".old-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(manifest) + "\n")


def check_out_dir(out_dir: Path, options: GradeOptions) -> None:
    """An --out folder that holds files is a grading run of the same labs, or a GraderError."""
    try:
        earlier = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise GraderError(
            f"{out_dir} already holds files but no {MANIFEST}, so it is not a grading run to "
            "resume; the grader never overwrites other files: name a new folder with --out"
        ) from None
    labs = [lab.id for lab in options.labs]
    if earlier.get("labs") != labs:
        raise GraderError(
            f"{out_dir} was graded for labs {', '.join(earlier.get('labs', []))}, not "
            f"{', '.join(labs)}; resume it with --labs {','.join(earlier.get('labs', []))}, "
            "or name a new folder with --out"
        )


# ---------------------------------------------------------------------------------------------
# The student's own check


def check_lab(
    kit: Kit,
    lab: Lab,
    build_dir: Path,
    build: BuildConfig,
    run: RunConfig,
    log: Callable[[str], None] = print,
    slots: tuple[int, list[str] | None, int | None] = (os.cpu_count() or 2, None, None),
) -> CheckResult:
    """Builds the student's kit in place and runs the lab's visible tests; report.check_lines
    shows the result, gradelib style."""
    log(f"building {lab.executable} in {build_dir} (your kernels: -DKIT_KERNELS={build.kernels}) ...")
    result = build_labs(kit.root, build_dir, [lab], build, lambda message: None)[lab.id]
    if not result.ok or result.exe_path is None:
        return CheckResult(lab, problem=result.problem or "not built", build_log=result.log_tail)
    run_dir = Path(tempfile.mkdtemp(prefix="check-", dir=build_dir))
    cpu_slots, gpus, gpu_slots = slots  # as --jobs, --gpus and --gpu-slots say
    lanes = visible_gpus() if gpus is None else gpus
    scheduler = Scheduler(cpu_slots, lanes, lane_slots(gpu_slots, lanes))
    try:
        listed = {test.name: test for test in list_tests(result.exe_path, run_dir, run)}
        check_rubric_against_listing(lab, set(listed), has_hidden_tests=kit.has_solutions)
        visible = [test for test in lab.tests if test.visibility == "visible"]
        log(f"running {len(visible)} visible tests of lab {lab.id} ...")
        with stoppable_pool(scheduler, max(8, 2 * scheduler.total_slots)) as pool:
            # A sanitizer's modes run as grading runs them, so that a student sees its messages.
            outcomes = run_tests(
                result.exe_path,
                [listed[test.name] for test in visible],
                run_dir,
                run,
                scheduler,
                pool,
                dict(MODES_TOGETHER),
            )
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    checked = CheckResult(lab, [score_test(test, outcomes[test.name]) for test in visible])
    if lab.charts is not None:
        checked.charts_dir = build_dir / "plots" / lab.tag
        checked.charts = draw_charts(lab, kit.root, build_dir, checked.charts_dir, build)
    return checked
