"""grade --slurm against a real Slurm: a one-node Slurm started on this machine
(scripts/slurm-local.sh), the fake kit graded through a job array and compared with a local run
of the same class; then a task cancelled mid-run, and the same command grading whoever is left.

Skipped where Slurm's daemons are not installed (scripts/setup.sh --slurm installs them; CI does)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.cluster.slurm import JOB_SCRIPT, STATE, Jobs, Plan, _task_status, run_status
from grader.pipeline.report import score_to_json
from grader.pipeline.score import SubmissionScore

from .test_schedule import write_class

GRADER_ROOT = Path(__file__).resolve().parents[2]
START = GRADER_ROOT / "scripts" / "slurm-local.sh"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    missing = [
        tool for tool in ("munged", "slurmctld", "slurmd", "sbatch", "squeue") if not shutil.which(tool)
    ]
    if missing:
        pytest.skip(f"Slurm is not installed here (missing {', '.join(missing)}): scripts/setup.sh --slurm")
    if os.geteuid() != 0:
        pytest.skip("a one-node Slurm needs root (slurmd starts jobs as their user)")
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run(
        ["bash", str(START), "start", str(folder)], capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield {"SLURM_CONF": str(folder / "slurm.conf")}
    finally:
        subprocess.run(["bash", str(START), "stop", str(folder)], capture_output=True, timeout=60)


def environment(fake_kit, slurm: dict[str, str]) -> dict[str, str]:
    """The fake cmake as `cmake`, for the grader here and in the jobs (sbatch passes the
    environment on), and the grader importable from anywhere."""
    bin_dir = fake_kit.cmake.parent.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "cmake").exists():
        (bin_dir / "cmake").symlink_to(fake_kit.cmake)
    return dict(os.environ, **slurm, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(GRADER_ROOT))


def grade(
    fake_kit, env: dict[str, str], klass: Path, out: Path, *more: str
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "grader", "grade", "--kit", str(fake_kit.root), "--out", str(out)]
    command += ["--work-dir", str(out.parent / "work"), "--timeout", "30", *more, str(klass)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=GRADER_ROOT)


def on_slurm(fake_kit, env, klass: Path, out: Path, *more: str) -> subprocess.CompletedProcess[str]:
    # Each task on one of the node's CPUs, no GPU asked for (the node has none).
    return grade(
        fake_kit, env, klass, out, "--slurm", "--gres", "none", "--cpus-per-task", "1", "--poll", "0.5", *more
    )


def scores(out: Path) -> dict[str, list[tuple[str, str, float]]]:
    """Every student's tests: (name, status, points), from their score.json."""
    found = {}
    for path in sorted(out.glob("*/score.json")):
        data = json.loads(path.read_text())
        found[path.parent.name] = [
            (test["name"], test["status"], test["points"]) for lab in data["labs"] for test in lab["tests"]
        ]
    return found


def test_a_class_graded_through_a_slurm_job_array_scores_as_a_local_run(fake_kit, slurm, tmp_path):
    env = environment(fake_kit, slurm)
    klass = write_class(tmp_path / "class", 7)
    # The LMS's import file too: the finishing job reads the roster the command was given.
    roster = tmp_path / "roster.csv"
    roster.write_text("Email address,First name\n" + "".join(f"s{i:02d}@uni.edu,S{i}\n" for i in range(7)))
    lms = ("--gradebook", "moodle", "--roster", str(roster))
    local = grade(fake_kit, env, klass, tmp_path / "local", *lms)
    assert local.returncode == 0, local.stdout + local.stderr

    out = tmp_path / "slurm-run"
    done = on_slurm(fake_kit, env, klass, out, "--tasks", "3", *lms)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "submitted job array" in said and "(3 tasks, 7 students)" in said
    assert "every student graded" in said

    plan = Plan.read(out)
    assert sorted(sid for part in plan.parts for sid in part) == [f"s{i:02d}" for i in range(7)]
    assert [len(part) for part in plan.parts] == [3, 2, 2]
    # Each task graded its part on the node, and said so.
    jobs = Jobs.read(out)
    assert jobs is not None and jobs.tasks == 3
    for task in range(3):
        own = json.loads((out / STATE / "tasks" / f"{task}.json").read_text())
        assert own["state"] == "done" and own["graded"] == len(plan.parts[task]), own
        log = (out / STATE / "logs" / f"task-{jobs.array}_{task}.log").read_text()
        assert all(f"{sid}:" in log for sid in plan.parts[task]), log

    # The same scores and the same class files as the local run; the harness built once, in
    # the run folder.
    assert scores(out) == scores(tmp_path / "local") and len(scores(out)) == 7
    for name in ("gradebook.csv", "summary.txt", "gradebook-moodle.csv"):
        assert (out / name).read_text() == (tmp_path / "local" / name).read_text(), name
    assert len((out / "gradebook-moodle.csv").read_text().splitlines()) == 8  # a row each
    assert (out / STATE / "harness" / "CMakeCache.txt").is_file()
    script = (out / JOB_SCRIPT).read_text()
    assert "#SBATCH --gres=gpu:1" in script and "module load cuda" in script  # the template's lines

    status = subprocess.run(
        [sys.executable, "-m", "grader", "status", "--kit", str(fake_kit.root), str(out)],
        env=env, capture_output=True, text=True, timeout=60, cwd=GRADER_ROOT,
    )  # fmt: skip
    assert status.returncode == 0, status.stdout + status.stderr
    assert "3 done" in status.stdout and "students graded: 7/7" in status.stdout

    # --regrade through Slurm: every student graded again, the class files written again.
    before = {path.parent.name: path.stat().st_mtime_ns for path in out.glob("*/score.json")}
    again = on_slurm(fake_kit, env, klass, out, "--tasks", "2", "--regrade", *lms)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "(2 tasks, 7 students)" in again.stdout and "every student graded" in again.stdout
    after = {path.parent.name: path.stat().st_mtime_ns for path in out.glob("*/score.json")}
    assert after.keys() == before.keys() and all(after[sid] > before[sid] for sid in before)
    assert scores(out) == scores(tmp_path / "local")


def test_a_cancelled_task_is_graded_again_by_the_same_command_and_no_one_twice(fake_kit, slurm, tmp_path):
    env = environment(fake_kit, slurm)
    spec = fake_kit.root / "fake_kit.json"
    spec.write_text(spec.read_text().replace('"behaviour": "pass"', '"behaviour": "sleep:0.6"'))
    klass = write_class(tmp_path / "class", 6)
    out = tmp_path / "slurm run"  # a space in the path: the job script's lines quote it
    first = on_slurm(fake_kit, env, klass, out, "--tasks", "2", "--no-wait")
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"grader status {out}" in first.stdout
    # A second submission while the first's tasks run would grade their students twice.
    second = on_slurm(fake_kit, env, klass, out, "--tasks", "2", "--no-wait")
    assert second.returncode == 2
    assert "are still waiting or running" in second.stderr and "scancel" in second.stderr
    jobs = Jobs.read(out)
    assert jobs is not None
    plan = Plan.read(out)

    # Task 1 is cancelled once it has graded one of its three students.
    deadline = time.monotonic() + 120
    while not any((out / sid / "score.json").exists() for sid in plan.parts[1]):
        assert time.monotonic() < deadline, "task 1 graded no one within 120 s"
        time.sleep(0.2)
    subprocess.run(["scancel", f"{jobs.array}_1"], env=env, check=True, timeout=30)
    while True:
        status = subprocess.run(
            [sys.executable, "-m", "grader", "status", str(out)],
            env=env, capture_output=True, text=True, timeout=60, cwd=GRADER_ROOT,
        )  # fmt: skip
        if "waiting" not in status.stdout and "running" not in status.stdout:
            break
        assert time.monotonic() < deadline, status.stdout
        time.sleep(0.5)
    assert status.returncode == 1, status.stdout  # a task failed
    assert "task 1 failed (CANCELLED): stopped by SIGTERM" in status.stdout, status.stdout
    assert f"task-{jobs.array}_1.log" in status.stdout
    assert "not graded: run the same grade command" in status.stdout
    graded = {path.parent.name: path.stat().st_mtime_ns for path in out.glob("*/score.json")}
    assert set(plan.parts[0]) <= set(graded) and 1 <= len(set(plan.parts[1]) & set(graded)) < 3
    summary = (out / "summary.txt").read_text()  # the finishing job ran all the same
    left = sorted(set(plan.parts[1]) - set(graded))
    assert all(f"{sid}: not graded" in summary for sid in left), summary

    # A report the grader failed on is not kept (report.kept_score): it is submitted again.
    failed_on = sorted(graded)[0]
    record = out / failed_on / "score.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "error": "kit problem: killed"}))
    graded = {sid: mtime for sid, mtime in graded.items() if sid != failed_on}

    # The same command: only the students left are submitted, and the others are not touched.
    again = on_slurm(fake_kit, env, klass, out, "--tasks", "2")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert f"{len(graded)} of 6 students graded already: kept" in said
    assert sorted(sid for part in Plan.read(out).parts for sid in part) == sorted([*left, failed_on])
    assert {sid: (out / sid / "score.json").stat().st_mtime_ns for sid in graded} == graded
    assert not json.loads(record.read_text())["error"]
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert [row[0] for row in rows[1:]] == [f"s{i:02d}" for i in range(6)]
    assert all(row[-2:] == ["60", "60"] for row in rows[1:]), rows
    assert "not graded" not in (out / "summary.txt").read_text()


# What needs no Slurm: how a task's state is read, and the refusal where there is no sbatch.


def test_a_task_is_judged_by_slurms_word_first_then_by_what_it_said_of_itself(tmp_path):
    log = tmp_path / "task-7_1.log"
    log.write_text("grading 3 submissions\n[1/3] s01: 60/60\ngrader: interrupted (SIGTERM)\n")
    cancelled = _task_status(1, "CANCELLED", {"state": "running"}, log)
    assert (cancelled.state, cancelled.error) == ("failed", "grader: interrupted (SIGTERM)")
    assert _task_status(1, "RUNNING", {"state": "running"}, log).state == "running"
    assert _task_status(1, "PENDING", {}, log).state == "waiting"
    assert _task_status(1, "COMPLETED", {"state": "done"}, log).state == "done"
    said = _task_status(1, "", {"state": "failed", "error": "no harness in /x"}, log)
    assert (said.state, said.error) == ("failed", "no harness in /x")
    # Slurm has forgotten it and it never said it ended: killed (a node lost, SIGKILL).
    assert _task_status(1, "", {"state": "running"}, log).state == "failed"
    # Slurm did not answer at all: as the task last said, never a failure.
    assert _task_status(1, "", {"state": "running"}, log, asked=False).state == "running"
    assert _task_status(1, "", {}, log, asked=False).state == "waiting"
    assert _task_status(1, "", {}, None).state == "not started"


def test_grade_slurm_where_slurm_is_not_installed_says_so_and_writes_nothing(fake_kit, tmp_path):
    klass = write_class(tmp_path / "class", 2)
    (tmp_path / "bin").mkdir()  # a PATH without Slurm's commands (the grader's Python is named in full)
    env = dict(os.environ, PATH=str(tmp_path / "bin"), PYTHONPATH=str(GRADER_ROOT))
    done = grade(fake_kit, env, klass, tmp_path / "out", "--slurm")
    assert done.returncode == 2 and "sbatch not found" in done.stderr and "slurm-local.sh" in done.stderr
    assert not (tmp_path / "out").exists()


def test_where_slurm_is_not_installed_status_reads_the_tasks_and_the_class_files(tmp_path, monkeypatch):
    # The job script run as a plain shell script on a machine without Slurm: part 0 graded,
    # then `grade-job.sh finish`.
    out = tmp_path / "out"
    (out / STATE / "tasks").mkdir(parents=True)
    Plan(["02"], [("s00", "/class/s00")], [["s00"]], [], {}, str(out / STATE / "harness")).write(out)
    (out / STATE / "jobs.json").write_text(json.dumps({"array": "7", "finish": "8", "tasks": 1}))
    (out / STATE / "tasks" / "0.json").write_text(json.dumps({"state": "done", "graded": 1}))
    (out / "s00").mkdir()
    (out / "s00" / "score.json").write_text(json.dumps(score_to_json(SubmissionScore("s00"))))
    (out / "gradebook.csv").write_text("student\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no squeue, no sacct
    status = run_status(out)
    assert [task.state for task in status.tasks] == ["done"]
    assert (status.finish, status.graded, status.ended) == ("written", 1, True)
    # A report the grader failed on is not counted graded: the same command submits it again.
    failed = score_to_json(SubmissionScore("s00", error="internal grader error: ..."))
    (out / "s00" / "score.json").write_text(json.dumps(failed))
    assert run_status(out).graded == 0
