"""schedule.py and the run stage's use of it: slots honoured, exclusive tests alone on their GPU,
a GPU per process, a crash or hang costing one test, and a class run that survives SIGKILL."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.run import ListedTest, RunConfig, run_tests
from grader.schedule import Need, Scheduler, need_for_tags

from .conftest import write_fake_catch2

GRADER_ROOT = Path(__file__).resolve().parents[2]


def test_a_tests_tags_say_which_slot_it_needs():
    assert need_for_tags(("lab02", "safety")) is Need.CPU
    assert need_for_tags(("lab02", "correctness", "gpu")) is Need.GPU_SHARED
    assert need_for_tags(("lab02", "performance", "gpu")) is Need.GPU_EXCLUSIVE
    assert need_for_tags(("lab02", "resources", "gpu")) is Need.GPU_EXCLUSIVE


def run_jobs(
    scheduler: Scheduler, needs: list[Need], seconds: float = 0.05
) -> list[tuple[Need, str | None, float, float]]:
    """Runs one job per need at once; returns (need, gpu, start, end) for each."""
    spans = []
    lock = threading.Lock()

    def job(need: Need) -> None:
        with scheduler.hold(need) as lease:
            start = time.monotonic()
            time.sleep(seconds)
            with lock:
                spans.append((lease.need, lease.gpu, start, time.monotonic()))

    with ThreadPoolExecutor(max_workers=len(needs)) as pool:
        list(pool.map(job, needs))
    return spans


def most_at_once(spans, keep) -> int:
    events = sorted(
        [(s, 1) for n, g, s, e in spans if keep(n, g)] + [(e, -1) for n, g, s, e in spans if keep(n, g)]
    )
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def test_cpu_and_shared_gpu_slots_are_honoured_and_filled():
    scheduler = Scheduler(cpu_slots=3, gpus=["0"], gpu_slots=2)
    spans = run_jobs(scheduler, [Need.CPU] * 9 + [Need.GPU_SHARED] * 8)
    assert most_at_once(spans, lambda need, gpu: True) == 3  # every process holds a CPU slot
    assert most_at_once(spans, lambda need, gpu: need is Need.GPU_SHARED) == 2
    assert most_at_once(spans, lambda need, gpu: need is Need.CPU) >= 1


def test_a_gpu_test_that_can_start_goes_before_a_waiting_compile():
    scheduler = Scheduler(cpu_slots=1, gpus=["0"], gpu_slots=1)
    order = []
    release = threading.Event()

    def job(need: Need, name: str) -> None:
        with scheduler.hold(need):
            order.append(name)
            release.wait(5)

    with scheduler.hold(Need.CPU):  # the only slot is busy; a compile, then a GPU test queue up
        compile_job = threading.Thread(target=job, args=(Need.CPU, "compile"))
        compile_job.start()
        time.sleep(0.1)
        gpu_job = threading.Thread(target=job, args=(Need.GPU_SHARED, "gpu test"))
        gpu_job.start()
        time.sleep(0.1)
    time.sleep(0.2)
    assert order == ["gpu test"]  # the slot went to the GPU test; the compile still waits
    release.set()
    for thread in (compile_job, gpu_job):
        thread.join(timeout=5)
    assert order == ["gpu test", "compile"]


def test_an_exclusive_job_never_overlaps_anything_on_its_gpu():
    scheduler = Scheduler(cpu_slots=8, gpus=["0", "1"], gpu_slots=3, max_defer=0.05)
    needs = ([Need.GPU_SHARED] * 5 + [Need.GPU_EXCLUSIVE] + [Need.CPU]) * 6
    spans = run_jobs(scheduler, needs, seconds=0.03)
    for need, gpu, start, end in spans:
        if need is not Need.GPU_EXCLUSIVE:
            continue
        others = [o for o in spans if o[1] == gpu and o[2:] != (start, end)]
        assert all(o_end <= start or o_start >= end for _, _, o_start, o_end in others), (gpu, start, end)
    assert {gpu for need, gpu, *_ in spans if need is not Need.CPU} == {"0", "1"}  # both lanes work


def test_exclusive_jobs_wait_for_the_queued_shared_ones_and_then_run_as_one_batch():
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=2, max_defer=30)
    start = time.monotonic()
    spans = run_jobs(scheduler, [Need.GPU_SHARED] * 6 + [Need.GPU_EXCLUSIVE] * 3 + [Need.GPU_SHARED] * 6)
    last_shared_end = max(end for need, _, _, end in spans if need is Need.GPU_SHARED)
    exclusive_starts = [s for need, _, s, _ in spans if need is Need.GPU_EXCLUSIVE]
    assert min(exclusive_starts) >= last_shared_end  # one drain for the three of them
    assert time.monotonic() - start < 5  # the GPU falling idle let them run, not the deadline


def test_exclusive_jobs_are_not_starved_by_a_stream_of_shared_ones():
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=2, max_defer=0.2)
    stop = threading.Event()

    def stream() -> None:
        while not stop.is_set():
            with scheduler.hold(Need.GPU_SHARED):
                time.sleep(0.02)

    feeders = [threading.Thread(target=stream) for _ in range(4)]
    for feeder in feeders:
        feeder.start()
    try:
        time.sleep(0.1)
        start = time.monotonic()
        with scheduler.hold(Need.GPU_EXCLUSIVE):
            waited = time.monotonic() - start
    finally:
        stop.set()
        for feeder in feeders:
            feeder.join()
    assert waited < 1.0


def test_without_a_gpu_gpu_jobs_take_cpu_slots():
    scheduler = Scheduler(cpu_slots=2, gpus=[], gpu_slots=4)
    spans = run_jobs(scheduler, [Need.GPU_SHARED, Need.GPU_EXCLUSIVE, Need.CPU, Need.GPU_SHARED])
    assert {need for need, *_ in spans} == {Need.CPU} and {gpu for _, gpu, *_ in spans} == {None}
    assert most_at_once(spans, lambda need, gpu: True) == 2


def test_test_processes_get_their_lanes_gpu_and_exclusive_ones_run_alone(tmp_path):
    log = tmp_path / "spans.txt"
    tests = [
        {"name": f"shared {i}", "tags": "[lab02][correctness][gpu]", "behaviour": f"record:{log}"}
        for i in range(8)
    ] + [
        {"name": f"timed {i}", "tags": "[lab02][performance][gpu]", "behaviour": f"record:{log}"}
        for i in range(2)
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    listed = [ListedTest(t["name"], tuple(t["tags"].strip("[]").split("]["))) for t in tests]
    scheduler = Scheduler(cpu_slots=8, gpus=["0", "1"], gpu_slots=3)
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = run_tests(exe, listed, tmp_path, RunConfig(timeout=20), scheduler, pool)
    assert {outcome.status for outcome in outcomes.values()} == {"passed"}
    spans = [line.split(" ", 3) for line in log.read_text().splitlines()]
    assert {gpu for _, _, gpu, _ in spans} == {"0", "1"}  # every process saw one GPU, of its lane
    for start, end, gpu, name in spans:
        if name.startswith("timed"):
            others = [(float(s), float(e)) for s, e, g, n in spans if g == gpu and n != name]
            assert all(e <= float(start) or s >= float(end) for s, e in others), name
    assert scheduler.stats.most_at_once["gpu"] >= 4  # processes really shared the GPUs


def test_a_crash_or_a_hang_costs_only_its_own_test(tmp_path):
    tests = [
        {"name": "crashes", "tags": "[lab02][gpu]", "behaviour": "crash"},
        {"name": "hangs", "tags": "[lab02][gpu]", "behaviour": "hang"},
        {"name": "passes", "tags": "[lab02][gpu]", "behaviour": "pass"},
        {"name": "passes too", "tags": "[lab02]", "behaviour": "pass"},
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    listed = [ListedTest(t["name"], tuple(t["tags"].strip("[]").split("]["))) for t in tests]
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = run_tests(exe, listed, tmp_path, RunConfig(timeout=1.5), Scheduler(4, ["0"], 2), pool)
    assert [outcomes[t["name"]].status for t in tests] == ["crashed", "timed_out", "passed", "passed"]


# ---------------------------------------------------------------------------------------------
# A class run killed with SIGKILL and started again


def write_class(root: Path, count: int) -> Path:
    good = b'#include "demo.h"\nint demo_host(int width) { return width; }\n'
    for i in range(count):
        student = root / f"s{i:02d}"
        student.mkdir(parents=True)
        (student / "demo.cu").write_bytes(good + f"// student {i}\n".encode())
        (student / "other.cu").write_bytes(b'#include "other.h"\nint other() { return 3; }\n')
    return root


def grade_command(fake_kit, klass: Path, out: Path) -> list[str]:
    code = (
        "import sys; from grader import cli;"
        "from grader.build import BuildConfig; from grader.run import RunConfig;"
        f"cli._configs = lambda args: (BuildConfig(cmake={str(fake_kit.cmake)!r}, generator=None,"
        " jobs=1, timeout=30),"
        " RunConfig(timeout=10));"
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    return [
        sys.executable,
        "-c",
        code,
        "grade",
        "--kit",
        str(fake_kit.root),
        "--out",
        str(out),
        "--jobs",
        "2",
        "--gpus",
        "0",
        "--gpu-slots",
        "2",
        "--work-dir",
        str(klass.parent / "work"),
        str(klass),
    ]


@pytest.mark.parametrize("kill_after", [0.5, 2.5, 4.5])
def test_a_run_killed_at_any_point_resumes_without_losing_or_repeating_anyone(fake_kit, tmp_path, kill_after):
    spec_path = fake_kit.root / "fake_kit.json"
    spec = spec_path.read_text().replace(
        '"behaviour": "pass"', f'"behaviour": "record:{tmp_path / "spans.txt"}"'
    )
    spec_path.write_text(spec)
    klass = write_class(tmp_path / "class", 6)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(GRADER_ROOT))
    first = subprocess.Popen(
        grade_command(fake_kit, klass, out),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    time.sleep(kill_after)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    done_before = (
        sorted(p.name for p in out.iterdir() if (p / "score.json").is_file()) if out.exists() else []
    )
    second = subprocess.run(
        grade_command(fake_kit, klass, out), env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stdout + second.stderr
    if done_before:
        assert f"({len(done_before)} already graded: kept)" in second.stdout
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert [row[0] for row in rows[1:]] == [f"s{i:02d}" for i in range(6)]
    assert all(row[-2:] == ["60", "60"] for row in rows[1:]), rows
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no half-written report left
