"""A split lab's tests, several to a judge process (grader/pipeline/run.py, run_test_group): each keeps
its own result and its own time limit, and whatever the shared process does not settle runs alone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.engine.schedule import Scheduler
from grader.pipeline.run import ListedTest, RunConfig, Status, _case_under_way, run_tests

from .conftest import write_fake_catch2, write_spec
from .test_schedule import assert_windows_alone, read_spans


def listed(tests: list[dict]) -> list[ListedTest]:
    return [ListedTest(t["name"], tuple(t["tags"].strip("[]").split("]["))) for t in tests]


def grade(
    tmp_path: Path,
    tests: list[dict],
    worker: bool = True,
    per_process: int = 3,
    timeout: float = 20,
    gpus: tuple[str, ...] = ("0",),
    catch2: str | None = None,
):
    exe = write_fake_catch2(tmp_path / "bin", "lab05_tests", tests)
    if catch2 is not None:  # the version whose exit codes the fake gives (fakes/fake_catch2.py)
        write_spec(exe, {"catch2": catch2, "tests": tests})
    fake_worker = tmp_path / "bin" / "lab05_worker"
    fake_worker.write_text("the student's worker\n")
    scheduler = Scheduler(cpu_slots=4, gpus=list(gpus), gpu_slots=4, max_defer=0.5)
    config = RunConfig(timeout=timeout, tests_per_process=per_process)
    with ThreadPoolExecutor(max_workers=8) as pool:
        return run_tests(
            exe, listed(tests), tmp_path, config, scheduler, pool, worker=fake_worker if worker else None
        )


def processes(log: Path) -> dict[str, list[str]]:
    """Which tests each process ran, by its process id, in order."""
    ran: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        pid, name = line.split(" ", 1)
        ran.setdefault(pid, []).append(name)
    return ran


def gpu_tests_and_one_for_the_host(count: int, log: Path) -> list[dict]:
    """`count` correctness tests on the GPU, "gpu 0" on, and one test that needs no GPU, "host
    only"; each logs its process id."""
    tests = [
        {"name": f"gpu {i}", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"}
        for i in range(count)
    ]
    return [*tests, {"name": "host only", "tags": "[lab05][concepts]", "behaviour": f"pid:{log}"}]


def test_tests_of_a_split_lab_not_alone_run_several_to_a_process_in_listing_order(tmp_path):
    log = tmp_path / "pids.txt"
    tests = gpu_tests_and_one_for_the_host(5, log)
    # A sanitizer's, a profiler's or a timed test asks for turns and windows: [alone], as before.
    tests.append({"name": "under a tool", "tags": "[lab05][safety][alone][gpu]", "behaviour": f"pid:{log}"})
    # Other tests of any kind share processes with the correctness tests.
    tests.append({"name": "guard bands", "tags": "[lab05][safety][gpu]", "behaviour": f"pid:{log}"})
    tests.append({"name": "answers", "tags": "[lab05][concepts]", "behaviour": f"pid:{log}"})
    outcomes = grade(tmp_path, tests)
    assert list(outcomes) == [test["name"] for test in tests]
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    assert [outcomes[f"gpu {i}"].needs_gpu for i in range(5)] == [True] * 5
    assert not outcomes["host only"].needs_gpu
    groups = sorted(processes(log).values())
    assert groups == [
        ["gpu 0", "gpu 1", "gpu 2"],
        ["gpu 3", "gpu 4", "host only"],
        ["guard bands", "answers"],
        ["under a tool"],
    ]


def test_by_default_every_shareable_test_of_a_lab_runs_in_one_process(tmp_path):
    log = tmp_path / "pids.txt"
    tests = gpu_tests_and_one_for_the_host(6, log)
    tests.append({"name": "timed", "tags": "[lab05][performance][alone][gpu]", "behaviour": f"pid:{log}"})
    outcomes = grade(tmp_path, tests, per_process=RunConfig().tests_per_process)
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    assert sorted(processes(log).values()) == [[*(f"gpu {i}" for i in range(6)), "host only"], ["timed"]]


def test_without_a_gpu_only_the_tests_that_need_none_share_a_process(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "host 1", "tags": "[lab05][concepts]", "behaviour": f"pid:{log}"},
        {"name": "gpu", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
        {"name": "host 2", "tags": "[lab05][safety]", "behaviour": f"pid:{log}"},
    ]
    outcomes = grade(tmp_path, tests, per_process=0, gpus=())
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    assert sorted(processes(log).values()) == [["gpu"], ["host 1", "host 2"]]


def test_without_a_worker_or_with_one_a_process_every_test_runs_alone(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": f"gpu {i}", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"} for i in range(4)
    ]
    grade(tmp_path / "a", tests, worker=False)
    assert all(len(names) == 1 for names in processes(log).values())
    log.unlink()
    grade(tmp_path / "b", tests, per_process=1)
    assert all(len(names) == 1 for names in processes(log).values())


def test_each_test_of_a_group_keeps_its_own_status_messages_and_figures(tmp_path):
    tests = [
        {"name": "passes", "tags": "[lab05][correctness][gpu]", "behaviour": "pass"},
        {
            "name": "fails",
            "tags": "[lab05][correctness][gpu]",
            "behaviour": "fail:got 3 expected 4\nhint: look at the row",
        },
        {"name": "skips", "tags": "[lab05][correctness][gpu]", "behaviour": "skip:no usable GPU: none here"},
        {"name": "measures", "tags": "[lab05][correctness][gpu]", "behaviour": "metric:time_ratio=1.5"},
    ]
    outcomes = grade(tmp_path, tests, per_process=4)
    assert outcomes["passes"].status is Status.PASSED and not outcomes["passes"].messages
    assert outcomes["fails"].status is Status.FAILED
    assert any("got 3 expected 4" in message for message in outcomes["fails"].messages)
    assert outcomes["fails"].hints == ["look at the row"]
    assert outcomes["skips"].status is Status.SKIPPED
    assert outcomes["skips"].skip_reason == "no usable GPU: none here"
    assert outcomes["measures"].status is Status.PASSED
    assert outcomes["measures"].metrics == {"time_ratio": 1.5}


def test_when_the_shared_process_crashes_its_tests_run_again_alone(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "before", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
        {"name": "crashes", "tags": "[lab05][correctness][gpu]", "behaviour": "crash"},
        {"name": "after", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
    ]
    outcomes = grade(tmp_path, tests)
    assert outcomes["crashes"].status is Status.CRASHED  # its own run's verdict, alone
    assert outcomes["before"].status is Status.PASSED
    assert outcomes["after"].status is Status.PASSED
    ran = processes(log)
    assert sorted(ran.values()) == [["after"], ["before"], ["before"]]  # the group's, then alone


def test_when_the_shared_process_times_out_the_cases_it_finished_keep_their_results(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "quick", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
        {"name": "slow", "tags": "[lab05][correctness][gpu]", "behaviour": "sleep:3"},
        {"name": "never reached", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
    ]
    outcomes = grade(tmp_path, tests, per_process=3, timeout=1)
    assert outcomes["quick"].status is Status.PASSED
    # It had one test's whole limit from its start, as alone: it is not run again to time out twice.
    assert outcomes["slow"].status is Status.TIMED_OUT
    assert any("timed out after 1 s" in message for message in outcomes["slow"].messages)
    assert outcomes["never reached"].status is Status.PASSED
    assert sorted(processes(log).values()) == [["never reached"], ["quick"]]


def test_a_first_case_that_hangs_is_timed_out_without_running_again(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "slow", "tags": "[lab05][correctness][gpu]", "behaviour": f"sleep:3:{log}"},
        {"name": "after", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
    ]
    outcomes = grade(tmp_path, tests, per_process=0, timeout=1)
    assert outcomes["slow"].status is Status.TIMED_OUT
    assert outcomes["after"].status is Status.PASSED
    assert sorted(processes(log).values()) == [["after"]]  # "slow" never finished, in the group or alone


def test_each_case_of_a_shared_process_has_one_tests_time_limit_from_its_start(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": f"takes 0.6 s {i}", "tags": "[lab05][correctness][gpu]", "behaviour": f"sleep:0.6:{log}"}
        for i in range(4)
    ]
    outcomes = grade(tmp_path, tests, per_process=0, timeout=1.5)  # 2.4 s in all, 0.6 s a case
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    assert list(processes(log).values()) == [[test["name"] for test in tests]]  # none ran again alone


def test_a_test_of_a_group_out_of_device_memory_runs_again_alone(tmp_path):
    log = tmp_path / "runs.txt"
    tests = [
        {"name": "plain", "tags": "[lab05][correctness][gpu]", "behaviour": "pass"},
        {"name": "short of memory once", "tags": "[lab05][correctness][gpu]", "behaviour": f"oom-once:{log}"},
    ]
    outcomes = grade(tmp_path, tests)
    assert outcomes["short of memory once"].status is Status.PASSED  # its run alone, with the GPU
    assert len(log.read_text().splitlines()) == 2


def test_a_failing_case_settles_whether_catch2_exits_with_42_or_3_4s_count_of_failures(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "fails", "tags": "[lab05][correctness][gpu]", "behaviour": "fail:got 3 expected 4"},
        {"name": "passes", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
        {"name": "fails too", "tags": "[lab05][correctness][gpu]", "behaviour": "fail:got 5 expected 6"},
    ]
    for version in ("3.7", "3.4"):
        outcomes = grade(tmp_path / version, tests, per_process=0, catch2=version)
        assert [outcomes[name].status for name in ("fails", "passes", "fails too")] == [
            Status.FAILED,
            Status.PASSED,
            Status.FAILED,
        ]
        assert len(processes(log)) == 1, version  # settled by the group: nothing ran again alone
        log.unlink()


def test_a_shared_process_whose_exit_code_disagrees_with_its_report_settles_nothing(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "plain", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
        {"name": "passes then exits 3", "tags": "[lab05][correctness][gpu]", "behaviour": "badexit"},
    ]
    outcomes = grade(tmp_path, tests)
    assert outcomes["passes then exits 3"].status is Status.CRASHED  # as alone: never a pass
    assert outcomes["plain"].status is Status.PASSED
    assert sorted(processes(log).values()) == [["plain"], ["plain"]]


def test_a_name_catch2_would_read_otherwise_in_a_file_runs_alone(tmp_path):
    log = tmp_path / "pids.txt"
    names = ["plain one", "with, a comma", "#starts like a comment", "plain two"]
    tests = [{"name": name, "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"} for name in names]
    outcomes = grade(tmp_path, tests, per_process=4)
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    assert sorted(processes(log).values()) == [
        ["#starts like a comment"],
        ["plain one", "plain two"],
        ["with, a comma"],
    ]


def test_a_window_waits_for_the_case_under_way_not_for_the_whole_shared_process(tmp_path):
    log = tmp_path / "spans.txt"
    tests = [
        {"name": f"case {i}", "tags": "[lab05][correctness][gpu]", "behaviour": f"record:{log}"}
        for i in range(8)
    ]  # 0.3 s each: 2.4 s in one process
    tests.append({"name": "timed", "tags": "[lab05][performance][alone][gpu]", "behaviour": f"window:{log}"})
    outcomes = grade(tmp_path, tests, per_process=0)
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    spans = read_spans(log)
    assert_windows_alone(spans)
    window_start = next(start for kind, _, start, _ in spans if kind == "window")
    cases = sorted(start for kind, _, start, _ in spans if kind.startswith("case"))
    # Asked for at about 0.1 s and drained at 0.6 s (max_defer): it opened between two cases.
    assert cases[0] < window_start < cases[-1]


def test_the_case_under_way_is_named_only_where_the_report_and_the_gate_agree():
    names = ["a", "b", "c"]
    assert _case_under_way(names, ["a"], started=2) == "b"
    assert _case_under_way(names, [], started=1) == "a"
    assert _case_under_way(names, ["a"], started=3) is None  # a case started and left no element
    assert _case_under_way(names, ["b"], started=2) is None  # not the listing's order
    assert _case_under_way(names, ["a", "b", "c"], started=3) is None  # every case finished


def test_a_lab_with_one_shareable_test_runs_it_alone_as_before(tmp_path):
    log = tmp_path / "pids.txt"
    tests = [
        {"name": "only one", "tags": "[lab05][correctness][gpu]", "behaviour": f"pid:{log}"},
        {"name": "timed", "tags": "[lab05][performance][alone][gpu]", "behaviour": f"pid:{log}"},
    ]
    outcomes = grade(tmp_path, tests, per_process=0)
    assert {outcome.status for outcome in outcomes.values()} == {Status.PASSED}
    assert sorted(processes(log).values()) == [["only one"], ["timed"]]


def test_each_test_is_told_the_cuda_processes_its_judge_started_for_it(tmp_path):
    # Two tests that share a judge and one alone, each logging what the kit's judge would
    # (kit/process_log.hpp): the counts follow the test named in the log, not the process.
    tests = [
        {"name": "shared a", "tags": "[lab05][correctness][gpu]", "behaviour": "starts:worker"},
        {"name": "shared b", "tags": "[lab05][correctness][gpu]", "behaviour": "starts:worker,judge"},
        {"name": "alone", "tags": "[lab05][safety][alone][gpu]", "behaviour": "starts:tool,tool,worker"},
        {"name": "starts none", "tags": "[lab05][concepts]", "behaviour": "pass"},
    ]
    outcomes = grade(tmp_path, tests)
    assert outcomes["shared a"].processes == {"worker": 1}
    assert outcomes["shared b"].processes == {"worker": 1, "judge": 1}
    assert outcomes["alone"].processes == {"tool": 2, "worker": 1}
    assert outcomes["starts none"].processes == {}
    assert all(outcome.status is Status.PASSED for outcome in outcomes.values())
