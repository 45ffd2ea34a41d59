"""Grading a class on a Slurm cluster: one job array, each task a part of the class.

The command that submits (`grade --slurm`, on a login node) opens the run folder as a local
run does, builds the harness into it once, splits the students not yet graded into parts, and
submits the job script (written into the run folder, for the instructor to read and edit) as
an array of that many tasks, then a last job that writes the class files once every task has
ended. Each task grades its part with the engine on its node's GPUs (grade_class with `part`),
writing each student's report into the same folder atomically, as a local run does; so the
same command again grades whoever is left (a failed or cancelled task's students), keeping the
rest. Slurm does the scheduling; what is here only says what to run and reads what Slurm
reports (squeue, and sacct where the cluster keeps accounting).

The run folder, beside the students' folders and the class files:
    grade-job.sh          the job script
    .slurm/plan.json      the class, its parts and the options each task grades with
    .slurm/jobs.json      the submitted array and finishing job
    .slurm/tasks/K.json   what task K says of itself: running, done, or failed and why
    .slurm/logs/          each task's output, task-<array>_<K>.log, and finish-<job>.log
    .slurm/harness/       the harness (unless --harness-dir names another folder)
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

from ..errors import GraderError
from ..pipeline.grade import GradeOptions, grade_class, open_out_dir, write_class_files
from ..pipeline.gradebooks import GradebookRequest
from ..pipeline.harness import prepare_harness
from ..pipeline.report import SCORE_FILE, finished_score, kept_score, write_atomically
from ..pipeline.score import SubmissionScore
from ..progress import Progress
from ..rubric import Kit, Lab

JOB_SCRIPT = "grade-job.sh"
STATE = ".slurm"
TEMPLATE = Path(__file__).with_name("grade-job.sh.in")
GRADER_HOME = Path(__file__).resolve().parents[2]  # the folder `python -m grader` runs in

# What a task asks of Slurm unless the command or the edited job script says otherwise.
DEFAULT_TASKS = 4
DEFAULT_GRES = "gpu:1"
DEFAULT_TIME = "02:00:00"
DEFAULT_CPUS = 8
FINISH_TIME = "00:15:00"  # writing the class files from the reports: seconds, on one CPU

# Slurm's job states, as squeue and sacct name them, in the four this run tells apart.
WAITING = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED"}
RUNNING = {"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"}
DONE = {"COMPLETED"}


@dataclass(frozen=True)
class SlurmRequest:
    """What `grade --slurm` asks of Slurm. None: the job script's own line, which is the
    default below when the command writes the script."""

    tasks: int | None = None
    partition: str | None = None
    gres: str | None = None  # "gpu:1"; "none" asks for no GPU
    time: str | None = None
    cpus_per_task: int | None = None

    def overrides(self) -> list[str]:
        """sbatch's options for what the command named (they win over the script's lines)."""
        given = {
            "--partition": self.partition,
            "--gres": self.gres,  # sbatch takes --gres=none for none, whatever the script asks
            "--time": self.time,
            "--cpus-per-task": None if self.cpus_per_task is None else str(self.cpus_per_task),
        }
        return [f"{option}={value}" for option, value in given.items() if value]


@dataclass
class Plan:
    """A submission of the class: read by every task, the finishing job and `status`."""

    labs: list[str]
    students: list[tuple[str, str]]  # (student id, path) of the whole class, in its order
    parts: list[list[str]]  # the student ids each task grades
    notes: list[str]  # what collecting the class said, for the summary
    options: dict[str, object]  # the grade command's options the tasks grade with (cli_slurm.py)
    harness_dir: str
    # With --regrade: when the regrade began (the first plan's mtime, the shared storage's clock).
    # A report older than that is an earlier run's, not yet regraded.
    regrade_since: float | None = None

    def graded(self, out_dir: Path, sid: str) -> bool:
        """Whether `sid` has a complete report of this run (with --regrade: a new one)."""
        path = out_dir / sid / SCORE_FILE
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return False
        return self.regrade_since is None or mtime >= self.regrade_since

    def kept(self, out_dir: Path, sid: str) -> bool:
        """Whether a resumed run keeps `sid`'s report: graded by this run, and not one the grader
        failed on (report.kept_score, as a resumed run on one machine decides)."""
        return self.graded(out_dir, sid) and kept_score(out_dir / sid) is not None

    @staticmethod
    def read_if_there(out_dir: Path) -> Plan | None:
        try:
            return Plan.read(out_dir)
        except GraderError:
            return None

    @staticmethod
    def read(out_dir: Path) -> Plan:
        path = out_dir / STATE / "plan.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data["students"] = [tuple(pair) for pair in data["students"]]
            return Plan(**data)
        except (OSError, ValueError, TypeError, KeyError):
            raise GraderError(
                f"{out_dir}: no readable {path.relative_to(out_dir)}, so no class was submitted to "
                "Slurm from this folder; grade it with `python -m grader grade --slurm --out "
                f"{out_dir} ...`"
            ) from None

    def write(self, out_dir: Path) -> None:
        write_atomically(out_dir / STATE / "plan.json", json.dumps(asdict(self), indent=1) + "\n")


@dataclass(frozen=True)
class Jobs:
    array: str
    finish: str | None
    tasks: int

    @staticmethod
    def read(out_dir: Path) -> Jobs | None:
        try:
            return Jobs(**json.loads((out_dir / STATE / "jobs.json").read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None


@dataclass(frozen=True)
class TaskStatus:
    task: int
    state: str  # waiting, running, done, failed, not started
    detail: str = ""  # Slurm's word for it, or what the task said
    log: Path | None = None
    error: str = ""  # the first error of a failed task


@dataclass
class RunStatus:
    tasks: list[TaskStatus]
    finish: str  # the finishing job: waiting, running, done, failed; or written, not written
    graded: int  # students with a complete report
    students: int

    def count(self, state: str) -> int:
        return sum(task.state == state for task in self.tasks)

    @property
    def ended(self) -> bool:
        return all(task.state in ("done", "failed", "not started") for task in self.tasks) and (
            self.finish not in ("waiting", "running")
        )

    def line(self) -> str:
        parts = [
            f"{self.count(state)} {state}"
            for state in ("waiting", "running", "done", "failed", "not started")
            if self.count(state)
        ]
        return (
            f"tasks: {', '.join(parts) or 'none'}; students graded: {self.graded}/{self.students}; "
            f"class files: {self.finish}"
        )


# ---------------------------------------------------------------------------------------------
# Submitting


def submit_class(
    kit: Kit,
    entries: list[tuple[str, Path]],
    notes: Sequence[str],
    options: GradeOptions,
    task_options: dict[str, object],
    out_dir: Path,
    request: SlurmRequest,
    gradebooks: GradebookRequest | None = None,
    log: Callable[[str], None] = print,
) -> Jobs | None:
    """Opens the run folder, builds the harness, splits whoever is not graded yet into parts and
    submits them; None when everyone was graded (the class files are then written here)."""
    out_dir = out_dir.resolve()
    _slurm_command("sbatch")  # before anything is built or written
    refuse_while_queued(out_dir)
    previous = Plan.read_if_there(out_dir)
    open_out_dir(out_dir, options)
    state = out_dir / STATE
    for folder in ("logs", "tasks"):
        (state / folder).mkdir(parents=True, exist_ok=True)
    # With --regrade, the same command resumes a regrade that did not finish (the students it
    # regraded are kept) and starts a new one once every student was regraded.
    since = None
    if options.regrade:
        unfinished = (
            previous is not None
            and previous.regrade_since is not None
            and not all(previous.kept(out_dir, sid) for sid, _ in entries)
        )
        since = previous.regrade_since if unfinished and previous else None
    harness_dir = (options.harness_dir or state / "harness").resolve()
    plan = Plan(
        labs=[lab.id for lab in options.labs],
        students=[(sid, str(path)) for sid, path in entries],
        parts=[],
        notes=list(notes),
        options=task_options,
        harness_dir=str(harness_dir),
    )
    for stale in (state / "tasks").glob("*.json"):
        stale.unlink()
    (state / "jobs.json").unlink(missing_ok=True)
    plan.write(out_dir)
    if options.regrade:
        plan.regrade_since = since if since is not None else (state / "plan.json").stat().st_mtime
    graded = {sid for sid, _ in entries if plan.kept(out_dir, sid)}
    todo = [sid for sid, _ in entries if sid not in graded]
    count = min(request.tasks or DEFAULT_TASKS, len(todo))
    plan.parts = [todo[index::count] for index in range(count)]  # by turns: each part a mix
    plan.write(out_dir)
    if not todo:
        log(f"every one of the {len(entries)} students has a report in {out_dir}: writing the class files")
        finish(out_dir, options.labs, gradebooks)
        return None
    if graded:
        log(f"{len(graded)} of {len(entries)} students graded already: kept")
    prepare_harness(kit, options.labs, harness_dir, options.build, options.run, log)
    script = write_job_script(out_dir, kit)
    array = sbatch([f"--array=0-{count - 1}", *request.overrides(), str(script)])
    # Written at once: a run whose tasks are queued is never submitted again (refuse_while_queued),
    # whatever happens to the finishing job's submission.
    jobs = Jobs(array=array, finish=None, tasks=count)
    write_atomically(state / "jobs.json", json.dumps(asdict(jobs)) + "\n")
    # The class files once every task has ended, however it ended: a failed task's students are
    # named in the summary, for the same command to grade. The job script's own lines (account,
    # partition, ...) hold for it too; it needs no GPU, one CPU and minutes.
    try:
        finish_job = sbatch(
            [
                f"--dependency=afterany:{array}",
                f"--job-name=finish-{out_dir.name}",
                f"--output={state / 'logs' / 'finish-%j.log'}",
                f"--time={FINISH_TIME}",
                "--cpus-per-task=1",
                "--gres=none",
                *([f"--partition={request.partition}"] if request.partition else []),
                str(script),
                "finish",
            ]
        )
    except GraderError as refused:
        raise GraderError(
            f"the {count} tasks are submitted (job array {array}), but {refused}; once they have "
            f"ended, write the class files with `python -m grader task {out_dir} finish`"
        ) from None
    jobs = Jobs(array=array, finish=finish_job, tasks=count)
    write_atomically(state / "jobs.json", json.dumps(asdict(jobs)) + "\n")
    log(
        f"submitted job array {array} ({count} tasks, {len(todo)} students) and job {finish_job} "
        f"(the class files, once every task has ended); job script: {script}"
    )
    return jobs


def refuse_while_queued(out_dir: Path) -> None:
    """A second submission while tasks of the first still wait or run would grade their
    students twice: refused, saying how to wait or cancel."""
    jobs = Jobs.read(out_dir)
    if jobs is None:
        return
    states = slurm_states(jobs)
    if states is None:
        raise GraderError(
            f"{out_dir}: Slurm cannot be asked whether job {jobs.array}'s tasks still run (squeue "
            "failed); try again once `squeue` answers"
        )
    # The tasks, and the finishing job, which would read the new plan.
    live = [job for job, word in states.items() if word in WAITING | RUNNING]
    if live:
        raise GraderError(
            f"{out_dir}: tasks of job {jobs.array} are still waiting or running ({', '.join(live)}); "
            f"follow them with `python -m grader status {out_dir}`, or cancel them (scancel "
            f"{jobs.array}) and run this command again"
        )


def write_job_script(out_dir: Path, kit: Kit) -> Path:
    """The job script, written from the template unless the run folder has one (the
    instructor's edits stand); returns its path."""
    script = out_dir / JOB_SCRIPT
    if script.exists():
        return script
    nvcc = shutil.which("nvcc")
    values = {
        "OUT": str(out_dir),
        "JOB_NAME": f"grade-{out_dir.name}",
        "LOGS": str(out_dir / STATE / "logs"),
        "TIME": DEFAULT_TIME,
        "CPUS": str(DEFAULT_CPUS),
        "GRES_LINE": f"#SBATCH --gres={DEFAULT_GRES}",
        "PARTITION_LINE": "# #SBATCH --partition=gpu     (the cluster's GPU partition)",
        "CUDA_BIN": str(Path(nvcc).parent) if nvcc else "/usr/local/cuda/bin",
        "PYTHON": sys.executable,
        "KIT": str(kit.root),
        "GRADER_HOME": str(GRADER_HOME),
    }
    # Shell lines get each value quoted for the shell; #SBATCH lines in double quotes, which
    # sbatch takes off (a path with a space is one value).
    values |= {
        f"{key}_Q": shlex.quote(values[key]) for key in ("CUDA_BIN", "PYTHON", "KIT", "OUT", "GRADER_HOME")
    }
    text = TEMPLATE.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    write_atomically(script, text)
    script.chmod(0o755)
    return script


def sbatch(arguments: list[str]) -> str:
    """Submits with sbatch; the job's id, or a GraderError with what sbatch said (after a time-out,
    the job may be queued all the same: squeue says)."""
    _slurm_command("sbatch")
    done = _ask(["sbatch", "--parsable", *arguments], timeout=120)
    if done.returncode != 0:
        raise GraderError(f"sbatch refused the job: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip().split(";")[0]


def _slurm_command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise GraderError(
            f"{name} not found: --slurm runs where Slurm's commands are (a cluster's login node); "
            "scripts/slurm-local.sh starts a one-node Slurm on this machine to try it"
        )
    return found


# ---------------------------------------------------------------------------------------------
# What runs in the jobs


def grade_part(
    kit: Kit, out_dir: Path, task: int, options: GradeOptions, progress: Progress | None = None
) -> list[SubmissionScore]:
    """Task `task`'s part of the class, graded into the run folder; what the task says of
    itself (.slurm/tasks/K.json) is written as it starts and as it ends, however it ends."""
    plan = Plan.read(out_dir)
    if not 0 <= task < len(plan.parts):
        raise GraderError(
            f"{out_dir}: no part {task}: the class was split into {len(plan.parts)} (0-{len(plan.parts) - 1})"
        )
    mine = set(plan.parts[task])
    entries = [(sid, Path(path)) for sid, path in plan.students if sid in mine]
    said = {
        "task": task,
        "host": socket.gethostname(),
        "job": os.environ.get("SLURM_JOB_ID", ""),
        "started": datetime.now().isoformat(timespec="seconds"),
    }
    _task_says(out_dir, task, {**said, "state": "running"})
    if progress is not None:
        progress.log(
            f"part {task} of {len(plan.parts)} on {said['host']}: {len(entries)} students "
            f"({', '.join(sid for sid, _ in entries)})"
        )
    options = replace(options, harness_dir=Path(plan.harness_dir), harness_built=True)
    try:
        scores = grade_class(kit, entries, options, out_dir, progress, part=True)
    except BaseException as error:  # a GraderError, or the stop of scancel or the time limit
        if isinstance(error, KeyboardInterrupt):  # cli.Terminated names the signal
            what = f"stopped by {error or 'SIGINT'} (scancel, or the time limit)"
        else:
            what = str(error) if isinstance(error, GraderError) else f"{type(error).__name__}: {error}"
        _task_says(out_dir, task, {**said, "state": "failed", "error": what or type(error).__name__})
        raise
    _task_says(out_dir, task, {**said, "state": "done", "graded": len(scores)})
    return scores


def _task_says(out_dir: Path, task: int, what: dict[str, object]) -> None:
    what["at"] = datetime.now().isoformat(timespec="seconds")
    write_atomically(out_dir / STATE / "tasks" / f"{task}.json", json.dumps(what) + "\n")


def finish(
    out_dir: Path, labs: list[Lab], gradebooks: GradebookRequest | None = None
) -> list[SubmissionScore]:
    """The class files, from every report the tasks wrote, in the class's order; a student
    without a complete report is named in the summary."""
    plan = Plan.read(out_dir)
    scores, missing, earlier = [], [], []
    for sid, _ in plan.students:
        score = finished_score(out_dir / sid)
        if score is None:
            missing.append(sid)
            continue
        scores.append(score)
        if not plan.graded(out_dir, sid):
            earlier.append(sid)  # a regrade's student whose task ended first: the old report
    notes = [
        *plan.notes,
        *(
            f"{sid}: not graded: its Slurm task ended before it did (python -m grader status "
            f"{out_dir} says why); the same grade command grades it"
            for sid in missing
        ),
        *(
            f"{sid}: not regraded: its Slurm task ended before it did; its earlier report is "
            "counted; the same grade command (with --regrade) regrades it"
            for sid in earlier
        ),
    ]
    write_class_files(out_dir, scores, labs, notes, gradebooks)
    return scores


# ---------------------------------------------------------------------------------------------
# Following a run


def slurm_states(jobs: Jobs) -> dict[str, str] | None:
    """Slurm's state of each task ("<array>_<K>") and of the finishing job, by what squeue
    still shows, else sacct (where the cluster keeps accounting). A job neither knows is
    missing; None where Slurm could not be asked at all (no squeue, its controller down)."""
    ids = ",".join(job for job in (jobs.array, jobs.finish) if job)
    states: dict[str, str] = {}
    done = _ask(
        ["sacct", "--noheader", "--parsable2", "--allocations", f"--jobs={ids}", "--format=JobID,State"]
    )
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        job, _, word = line.partition("|")
        if job and word:
            states[job] = word.split()[0]  # "CANCELLED by 0" is CANCELLED
    queued = _ask(["squeue", "--noheader", "--array", "--states=all", f"--jobs={ids}", "--format=%F|%K|%T"])
    if queued.returncode != 0 and "Invalid job id" not in queued.stderr:
        return None  # not a job squeue has forgotten: Slurm did not answer
    for line in queued.stdout.splitlines() if queued.returncode == 0 else []:
        array, index, word = (line.split("|") + ["", ""])[:3]
        job = f"{array}_{index}" if index not in ("", "N/A") else array
        states[job] = word.strip()
    return states


def _ask(command: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A Slurm command's answer; a refusal (exit 1) where it is missing or does not answer."""
    found = shutil.which(command[0])
    try:
        if found is not None:
            return subprocess.run(
                [found, *command[1:]], capture_output=True, text=True, timeout=timeout, check=False
            )
    except subprocess.TimeoutExpired:
        pass
    return subprocess.CompletedProcess(command, 1, "", f"{command[0]}: no answer within {timeout:g} s")


def run_status(out_dir: Path) -> RunStatus:
    """Where a submitted class stands: each task by Slurm's word and by its own."""
    plan = Plan.read(out_dir)
    jobs = Jobs.read(out_dir)
    slurm = slurm_states(jobs) if jobs else {}
    tasks = []
    for task in range(len(plan.parts)):
        own = _task_file(out_dir, task)
        log = out_dir / STATE / "logs" / f"task-{jobs.array}_{task}.log" if jobs else None
        word = (slurm or {}).get(f"{jobs.array}_{task}", "") if jobs else ""
        tasks.append(_task_status(task, word, own, log, asked=slurm is not None))
    finish_word = (slurm or {}).get(jobs.finish, "") if jobs and jobs.finish else ""
    if jobs and jobs.finish and slurm is None and shutil.which("squeue"):
        finish_word = "PENDING"  # Slurm did not answer: not known to have ended
    # Where Slurm is not installed at all (the job script run as a plain shell script), what the
    # tasks said of themselves and the class files' time tell the state.
    if finish_word:
        finish_state = _state(finish_word)
    else:  # not submitted, or forgotten by Slurm: the files tell whether it wrote them
        gradebook, plan_file = out_dir / "gradebook.csv", out_dir / STATE / "plan.json"
        newer = gradebook.exists() and gradebook.stat().st_mtime >= plan_file.stat().st_mtime
        finish_state = "written" if newer else "not written"
    graded = sum(plan.kept(out_dir, sid) for sid, _ in plan.students)
    return RunStatus(tasks, finish_state, graded, len(plan.students))


def _task_file(out_dir: Path, task: int) -> dict[str, object]:
    try:
        said = json.loads((out_dir / STATE / "tasks" / f"{task}.json").read_text(encoding="utf-8"))
        return said if isinstance(said, dict) else {}
    except (OSError, ValueError):
        return {}


def _state(word: str) -> str:
    if word in WAITING:
        return "waiting"
    if word in RUNNING:
        return "running"
    return "done" if word in DONE else "failed"


def _task_status(
    task: int, word: str, own: dict[str, object], log: Path | None, asked: bool = True
) -> TaskStatus:
    """A task's state from Slurm's `word` (empty: Slurm has forgotten it, or was not `asked`,
    as when its controller does not answer) and from what the task said of itself."""
    said = str(own.get("state", ""))
    if not asked and said in ("", "running"):
        state = "running" if said else "waiting"
        return TaskStatus(task, state, "as the task last said: Slurm did not answer", log)
    if word:
        state = _state(word)
        if state == "done" and said == "failed":  # a plain shell run, or Slurm's word is stale
            state = "failed"
    elif said in ("done", "failed"):
        state = said
    elif said == "running":
        # Slurm has forgotten it (or was never asked) and it never said it ended: it was killed
        # (a node lost, a time limit's SIGKILL) or is running as a plain script.
        state, word = "failed", "ended without a word (killed, or its node lost)"
    else:
        state = "not started"
    error = str(own.get("error", "")) if state == "failed" else ""
    if state == "failed" and not error and log is not None:
        error = _first_error(log)
    return TaskStatus(task, state, word or said, log, error)


def _first_error(log: Path) -> str:
    """The line of a task's log that says what went wrong, else its last line."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    for line in lines:
        if line.startswith(("grader:", "slurmstepd: error", "Traceback", "error:")):
            return line
    return lines[-1] if lines else ""


def failure_line(task: TaskStatus) -> str:
    """A failed task, its first error and its log."""
    log = f"; log: {task.log}" if task.log else ""
    return f"task {task.task} failed ({task.detail}): {task.error or 'no error in its log'}{log}"


def status_lines(out_dir: Path, status: RunStatus) -> list[str]:
    """`python -m grader status OUT`: the counts, then each failed task's first error and log."""
    lines = [f"{out_dir}: " + status.line()]
    lines += [f"  {failure_line(task)}" for task in status.tasks if task.state == "failed"]
    ended = status.ended
    if ended and status.finish == "failed":
        lines.append(
            f"  the job that writes the class files failed (its log: {out_dir / STATE / 'logs'}); "
            f"write them with `python -m grader task {out_dir} finish`"
        )
    if ended and (status.count("failed") or status.graded < status.students):
        lines.append(
            f"  {status.students - status.graded} student(s) not graded: run the same grade command "
            "(the same --out) to grade them; the others are kept"
        )
    elif ended and status.finish != "failed":
        lines.append(f"  every student graded; the class files are in {out_dir}")
    return lines


def follow(
    out_dir: Path, log: Callable[[str], None] = print, interval: float = 5.0, heartbeat: float = 30.0
) -> RunStatus:
    """Prints where the run stands whenever it changes (and every `heartbeat` seconds), and each
    failed task's first error once; returns when every task and the finishing job have ended."""
    said, last, told = "", 0.0, set()
    while True:
        status = run_status(out_dir)
        line = status.line()
        if line != said or time.monotonic() - last >= heartbeat:
            log(line)
            said, last = line, time.monotonic()
        for task in status.tasks:
            if task.state == "failed" and task.task not in told:
                told.add(task.task)
                log(failure_line(task))
        if status.ended:
            return status
        time.sleep(interval)
