"""run.py: one process per test, statuses from Catch2's XML, time and output limits."""

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from grader.confine.proc import ProcessResult, kill_started_groups, run_limited
from grader.errors import GraderError
from grader.pipeline.run import (
    RunConfig,
    list_tests,
    outcome_from,
    parse_listing,
    processes_started,
    run_test,
    scrubbed_env,
)
from grader.pipeline.score import names_a_cause

from .conftest import write_fake_catch2

HINTED = "mismatch at (0,1): got 3 expected 4\nhint: the result looks transposed\nhint: check the row index"


@pytest.fixture
def exe(tmp_path) -> Path:
    tests = [
        {"name": "passes", "tags": "[lab02][correctness][cpu]", "behaviour": "pass"},
        {"name": "fails with hints", "tags": "[lab02][correctness][gpu]", "behaviour": f"fail:{HINTED}"},
        {"name": "fails an expression", "tags": "[lab02][correctness][gpu]", "behaviour": "expr"},
        {"name": "skips", "tags": "[lab02][gpu]", "behaviour": "skip:no usable GPU: no CUDA-capable device"},
        {"name": "measures", "tags": "[lab02][performance][gpu]", "behaviour": "metric:time_ratio=1.75"},
        {"name": "crashes", "tags": "[lab02][safety][gpu]", "behaviour": "crash"},
        {"name": "hangs", "tags": "[lab02][gpu]", "behaviour": f"hang:{tmp_path / 'child.pid'}"},
        {"name": "writes no result", "tags": "[lab02]", "behaviour": "noxml"},
        {"name": "writes a garbled result", "tags": "[lab02]", "behaviour": "garbled"},
        {"name": "writes another test's result", "tags": "[lab02]", "behaviour": "wrongname"},
        {"name": "prints a megabyte", "tags": "[lab02]", "behaviour": "spam"},
        {"name": "shows its environment", "tags": "[lab02]", "behaviour": "env"},
        {"name": "shows its data limit", "tags": "[lab02]", "behaviour": "datalimit"},
        {"name": "forges a report file", "tags": "[lab02]", "behaviour": "forges"},
        {"name": "leaves a daemon", "tags": "[lab02]", "behaviour": "daemon"},
    ]
    return write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)


def run(exe: Path, name: str, **config):
    work = exe.parent.parent / "work"
    work.mkdir(exist_ok=True)
    return run_test(exe, name, work, RunConfig(**config))


def test_listing_gives_names_and_tags(exe, tmp_path):
    listed = list_tests(exe, tmp_path, RunConfig())
    assert listed[0].name == "passes" and listed[0].tags == ("lab02", "correctness", "cpu")
    assert len(listed) == 15


def test_listing_garbage_is_an_error_naming_the_executable():
    with pytest.raises(GraderError, match="lab09_tests --list-tests"):
        parse_listing("Segmentation fault", "lab09_tests")


def test_a_passing_test_passes(exe):
    outcome = run(exe, "passes")
    assert outcome.status == "passed" and outcome.messages == []


def test_a_failure_keeps_its_messages_once_and_its_hints_in_order(exe):
    outcome = run(exe, "fails with hints")
    assert outcome.status == "failed"
    assert outcome.hints == ["the result looks transposed", "check the row index"]
    assert outcome.messages == ["width := 17", HINTED]  # Catch2 repeats INFO before each failure


def test_a_failed_expression_shows_its_expansion(exe):
    outcome = run(exe, "fails an expression")
    assert outcome.status == "failed"
    assert outcome.messages == ["REQUIRE( got == expected ) with expansion: 3 == 4"]


def test_a_skip_is_skipped_with_its_reason_never_passed(exe):
    outcome = run(exe, "skips")
    assert outcome.status == "skipped"
    assert outcome.skip_reason == "no usable GPU: no CUDA-capable device"


def test_metrics_come_from_warnings(exe):
    outcome = run(exe, "measures")
    assert outcome.status == "passed" and outcome.metrics == {"time_ratio": 1.75}


def test_a_crash_is_a_crash_with_the_signal(exe):
    outcome = run(exe, "crashes")
    assert outcome.status == "crashed"
    assert outcome.messages[0] == "crashed: killed by signal SIGSEGV"


def test_a_hang_is_killed_with_its_whole_process_group(exe, tmp_path):
    start = time.monotonic()
    outcome = run(exe, "hangs", timeout=1.0)
    assert outcome.status == "timed_out"
    assert time.monotonic() - start < 10
    child = int((tmp_path / "child.pid").read_text())
    # The test's own child (sleep 60) must be gone too, not left holding the GPU.
    assert not alive(child)


def test_stopping_a_run_kills_every_process_group_it_started(tmp_path):
    """Ctrl-C reaches the grader but not its tests (each leads a session of its own), so
    kill_started_groups must: the test and what it started, and nothing else."""
    child_pid = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {child_pid}; wait"
    results: list[ProcessResult] = []
    runner = threading.Thread(
        target=lambda: results.append(
            run_limited(["sh", "-c", script], cwd=tmp_path, timeout=120, output_limit=1000)
        )
    )
    runner.start()
    for _ in range(100):
        if child_pid.is_file() and child_pid.read_text().strip():
            break
        time.sleep(0.05)
    bystander = subprocess.Popen(["sleep", "60"])  # in the grader's own group: not this call's to kill
    try:
        start = time.monotonic()
        assert kill_started_groups() == 1
        runner.join(timeout=5)
        assert not runner.is_alive() and time.monotonic() - start < 5
        assert results[0].returncode == -9 and not results[0].timed_out
        assert not alive(int(child_pid.read_text()))
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a parent that may never reap it."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state == "Z":
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize(
    "name",
    ["writes no result", "writes a garbled result", "writes another test's result", "forges a report file"],
)
def test_exit_code_zero_without_a_proper_result_is_not_a_pass(exe, name):
    outcome = run(exe, name)
    assert outcome.status == "crashed"
    assert "no result" in outcome.messages[0] and "exit code 0" in outcome.messages[0]


def test_a_daemon_holding_the_report_pipe_does_not_hold_the_test_up(exe):
    start = time.monotonic()
    outcome = run(exe, "leaves a daemon")
    assert outcome.status == "passed"
    assert time.monotonic() - start < 10


def test_a_report_that_ends_before_its_test_did_is_not_a_result():
    cut = '<Catch2TestRun><TestCase name="t"><Section name="s"/></TestCase></Catch2TestRun>'
    outcome = outcome_from("t", ProcessResult(0, "", False, 0.1), cut, RunConfig())
    assert outcome.status == "crashed" and "ends before the test did" in outcome.messages[0]


def test_console_output_is_capped(exe):
    outcome = run(exe, "prints a megabyte", output_limit=4096)
    assert outcome.status == "passed"
    assert len(outcome.output) < 5000 and "bytes of output cut" in outcome.output


def test_the_test_sees_a_scrubbed_environment(exe, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    names = run(exe, "shows its environment").messages[0].split()
    assert "GRADER_SECRET_TOKEN" not in names
    assert {"PATH", "HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS"} <= set(names)


def test_only_a_test_on_a_cpu_slot_is_held_to_its_memory_limit_in_data_memory(exe):
    # On a CPU slot (no CUDA_VISIBLE_DEVICES from a lane) an allocation past the test's memory
    # limit must fail at once; a process on a GPU lane runs CUDA, whose driver maps far more.
    import resource

    from grader.confine.cgroups import Limits

    on_cpu = run_test(exe, "shows its data limit", exe.parent.parent, RunConfig())
    on_gpu = run_test(
        exe, "shows its data limit", exe.parent.parent, RunConfig(), env={"CUDA_VISIBLE_DEVICES": "0"}
    )
    assert on_cpu.messages[0].strip() == str(Limits().memory_bytes)
    assert on_gpu.messages[0].strip() == str(resource.getrlimit(resource.RLIMIT_DATA)[0])


def test_scrubbed_env_points_home_at_the_work_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("NVIDIA_DRIVER_CAPABILITIES", "compute")
    env = scrubbed_env(tmp_path)
    assert env["HOME"] == str(tmp_path) and env["NVIDIA_DRIVER_CAPABILITIES"] == "compute"
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"  # one work queue a context: faster to create
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # CUDA's GPU numbers are nvidia-smi's, as lanes are


def test_passed_xml_with_a_failing_exit_code_is_not_a_pass():
    xml = (
        '<Catch2TestRun><TestCase name="t"><OverallResult success="true" skips="0"/></TestCase>'
        "</Catch2TestRun>"
    )
    outcome = outcome_from("t", ProcessResult(1, "", False, 0.1), xml, RunConfig())
    assert outcome.status == "crashed" and "exit code 1" in outcome.messages[-1]
    assert outcome_from("t", ProcessResult(0, "", False, 0.1), xml, RunConfig()).status == "passed"


def test_failure_messages_are_capped_in_length_and_number_before_any_report():
    huge = "x" * (4 << 20)
    failures = "".join(f'<Failure filename="t.cpp" line="1">message {i}</Failure>' for i in range(50))
    xml = (
        f'<Catch2TestRun><TestCase name="t"><Failure filename="t.cpp" line="1">{huge}</Failure>'
        f'{failures}<OverallResult success="false" skips="0"/></TestCase></Catch2TestRun>'
    )
    outcome = outcome_from("t", ProcessResult(42, "", False, 0.1), xml, RunConfig())
    assert outcome.status == "failed"
    assert sum(len(message) for message in outcome.messages) < 10_000
    assert outcome.messages[-1] == "[... more messages cut ...]" and "characters cut" in outcome.messages[0]


def _outcome_of(body: str):
    xml = (
        f'<Catch2TestRun><TestCase name="t">{body}<OverallResult success="false" skips="0"/>'
        "</TestCase></Catch2TestRun>"
    )
    return outcome_from("t", ProcessResult(42, "", False, 0.1), xml, RunConfig())


def test_only_the_kits_own_lines_are_hints():
    outcome = _outcome_of(
        '<Exception filename="t.cpp" line="3">bad width\nhint: full marks, the grader is wrong</Exception>'
        '<Failure filename="t.cpp" line="4">probe failed:\n| hint: printed by the kernel\n'
        "hint: the kit's own advice</Failure>"
    )
    assert outcome.hints == ["the kit's own advice"]
    assert any("full marks" in message for message in outcome.messages)  # shown, not as a hint


def test_a_cuda_error_in_an_exception_gets_the_kits_hint_for_it():
    outcome = _outcome_of(
        '<Exception filename="t.cpp" line="3">lab.cu:9: kernel launch failed: cudaErrorInvalidConfiguration '
        "(invalid configuration argument)</Exception>"
    )
    assert len(outcome.hints) == 1 and "round the block count up" in outcome.hints[0]
    outcome = _outcome_of(
        '<Exception filename="t.cpp" line="3">t.cpp:5: cudaDeviceSynchronize() failed: '
        "cudaErrorIllegalAddress (an illegal memory access was encountered)</Exception>"
    )
    assert len(outcome.hints) == 1 and "outside the memory it was given" in outcome.hints[0]
    assert not names_a_cause(outcome.hints[0])  # a fault proves no one access wrong
    outcome = _outcome_of(
        '<Exception filename="t.cpp" line="3">lab.cu:74: kernel launch failed: cudaErrorLaunchOutOfResources '
        "(too many resources requested for launch)</Exception>"
    )
    assert len(outcome.hints) == 1 and "__launch_bounds__" in outcome.hints[0]
    assert names_a_cause(outcome.hints[0])  # the error at launch proves the block's registers


def test_a_limit_without_end_starts_the_process_with_cpu_time_unbounded(tmp_path):
    # --timeout inf: the CPU-time limit (twice the wall limit) would overflow; it is left unset.
    import resource

    from grader.confine.proc import run_limited

    own = resource.getrlimit(resource.RLIMIT_CPU)[0]
    done = run_limited(["/bin/sh", "-c", "ulimit -t"], cwd=tmp_path, timeout=float("inf"), output_limit=1024)
    assert done.returncode == 0
    assert done.output.strip() == ("unlimited" if own == resource.RLIM_INFINITY else str(own))


def test_only_a_test_that_ran_out_of_memory_through_others_runs_again():
    from grader.pipeline.run import Outcome, Status, ran_out_of_device_memory

    failed = Outcome("t", Status.FAILED, messages=["cudaMalloc failed: out of memory"], needs_gpu=True)
    assert ran_out_of_device_memory(failed)
    # Refused by the kit for going over the test's own limit: running it alone would not help.
    own = Outcome(
        "t",
        Status.FAILED,
        messages=["cudaMalloc failed: out of memory"],
        output="kit: a cudaMalloc of 4096 MiB was refused: this test process holds 12 MiB ...\n",
    )
    assert not ran_out_of_device_memory(own)
    assert not ran_out_of_device_memory(Outcome("t", Status.FAILED, messages=["wrong values"]))
    # What the process printed is the student's code's as much as the kit's: it asks for nothing.
    printed = Outcome("t", Status.FAILED, messages=["wrong values"], output="CUDA: out of memory\n")
    assert not ran_out_of_device_memory(printed)


def test_a_labs_runs_alone_on_the_gpu_are_few():
    from grader.pipeline.run import RERUNS_PER_LAB, RerunBudget

    budget = RerunBudget()
    assert [budget.take() for _ in range(RERUNS_PER_LAB + 3)] == [True] * RERUNS_PER_LAB + [False] * 3


def test_a_judges_process_log_is_read_by_test_and_kind_and_a_missing_one_is_none(tmp_path):
    log = tmp_path / "processes.log"
    log.write_text("worker\tfirst\ntool\tfirst\ntool\tfirst\nreference worker\tsecond\n\nworker\t\n")
    assert processes_started(log) == {
        "first": {"worker": 1, "tool": 2},
        "second": {"reference worker": 1},
        "": {"worker": 1},  # a start before any test case began
    }
    assert processes_started(tmp_path / "absent.log") == {}


def test_a_process_log_that_is_not_a_plain_file_is_not_read(tmp_path):
    # A pipe would hold the grader up, a link could point anywhere: neither is read.
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert processes_started(fifo) == {}
    (tmp_path / "real.log").write_text("worker\tfirst\n")
    (tmp_path / "link.log").symlink_to(tmp_path / "real.log")
    assert processes_started(tmp_path / "link.log") == {}
    (tmp_path / "odd.log").write_text("worker\tname with \x1c a separator\n")
    assert processes_started(tmp_path / "odd.log") == {"name with \x1c a separator": {"worker": 1}}


LAB03_JUDGE = Path(os.environ.get("KIT_BUILD_DIR", "/nonexistent")) / "bin" / "lab03_tests"


@pytest.mark.skipif(
    not LAB03_JUDGE.is_file(), reason="KIT_BUILD_DIR has no lab03_tests (make test builds it)"
)
def test_the_kits_judge_logs_each_worker_it_starts_against_its_test(tmp_path):
    # The real listener and judge (kit/process_log.hpp) on host-only cases: a start is logged under
    # the case that made it, not the one before. The first case calls no worker; the second starts
    # one; the third may keep it (a GPU, whose driver counts the worker's memory) or start its own.
    quiet = "answers file is complete and well formed"
    calls = [
        "host function rejects widths that are not positive multiples of the tile",
        "host function rejects null matrices and tile widths other than 16 and 32",
    ]
    names = [quiet, *calls]
    log = tmp_path / "processes.log"
    listed = tmp_path / "tests.txt"
    listed.write_text("".join(f"{name}\n" for name in names))
    done = subprocess.run(
        [str(LAB03_JUDGE), "--input-file", str(listed)],
        env={**os.environ, "KIT_PROCESS_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    started = processes_started(log)
    assert started.get(calls[0], {}).get("worker", 0) >= 1, done.stdout + done.stderr
    assert set(started) <= set(calls), started
    assert all(kinds.get("worker", 0) >= 1 for kinds in started.values())
