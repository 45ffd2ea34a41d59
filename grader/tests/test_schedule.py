"""schedule.py and gate.py, and the run stage's use of them: slots honoured, a window of the GPU
alone for a measurement, a GPU per process, a crash or hang costing one test, and a class run
that survives SIGKILL."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

import pytest

from grader.confine.sandbox import LaneGpu, Sandbox
from grader.engine import gpus
from grader.engine.gpus import gpu_slots_for, lane_slots
from grader.engine.schedule import (
    SUBMISSION,
    SUBMISSION_ORDER,
    Need,
    Scheduler,
    Stopped,
    need_for_tags,
    result_of,
)
from grader.pipeline.run import ListedTest, RunConfig, run_tests

from .conftest import write_fake_catch2

GRADER_ROOT = Path(__file__).resolve().parents[2]
WINDOW = "window"  # a GPU job that opens a window in the middle, as a timed test does


class FakeClock:
    """The scheduler's clock, moved by hand: the durations it learns and the drain times it
    sets are then exact, and no test sleeps to make time pass."""

    def __init__(self) -> None:
        self._now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


def wait_until(condition, timeout: float = 5.0) -> None:
    """Waits (in real time) for another thread to get somewhere; fails the test if it does not."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "a thread of the test did not get there in time"
        time.sleep(0.005)


def test_a_tests_tags_say_which_slot_it_needs():
    assert need_for_tags(("lab02", "safety")) is Need.CPU
    assert need_for_tags(("lab02", "correctness", "gpu")) is Need.GPU
    assert need_for_tags(("lab02", "performance", "gpu")) is Need.GPU  # it asks for a window


def run_jobs(
    scheduler: Scheduler, jobs: Sequence[Need | str], seconds: float = 0.05
) -> list[tuple[str, str | None, float, float]]:
    """Runs every job at once; returns (kind, gpu, start, end) for each span of work. A WINDOW
    job works, opens a window (a "window" span), and works again."""
    spans = []
    lock = threading.Lock()

    def work(kind: str, gpu: str | None, length: float) -> None:
        start = time.monotonic()
        time.sleep(length)
        with lock:
            spans.append((kind, gpu, start, time.monotonic()))

    def job(kind: Need | str) -> None:
        with scheduler.hold(kind if isinstance(kind, Need) else Need.GPU) as lease:  # WINDOW: a GPU job
            if kind != WINDOW:
                work(lease.need.value, lease.gpu, seconds)
                return
            work("gpu", lease.gpu, seconds / 4)
            with scheduler.window(lease) as granted:
                assert granted
                work("window", lease.gpu, seconds)
            work("gpu", lease.gpu, seconds / 4)

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        list(pool.map(job, jobs))
    return spans


def most_at_once(spans, keep) -> int:
    events = sorted(
        [(s, 1) for k, g, s, e in spans if keep(k, g)] + [(e, -1) for k, g, s, e in spans if keep(k, g)]
    )
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def assert_windows_alone(spans) -> None:
    for kind, gpu, start, end in spans:
        if kind == "window":
            others = [o for o in spans if o[1] == gpu and o[2:] != (start, end)]
            assert all(o_end <= start or o_start >= end for _, _, o_start, o_end in others), (gpu, start)


def test_cpu_and_gpu_slots_are_honoured_and_filled():
    scheduler = Scheduler(cpu_slots=3, gpus=["0"], gpu_slots=2)
    spans = run_jobs(scheduler, [Need.CPU] * 9 + [Need.GPU] * 8)
    assert most_at_once(spans, lambda kind, gpu: True) == 3  # every process holds a CPU slot
    assert most_at_once(spans, lambda kind, gpu: kind == "gpu") == 2
    assert most_at_once(spans, lambda kind, gpu: kind == "cpu") >= 1


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
        gpu_job = threading.Thread(target=job, args=(Need.GPU, "gpu test"))
        gpu_job.start()
        time.sleep(0.1)
    time.sleep(0.2)
    assert order == ["gpu test"]  # the slot went to the GPU test; the compile still waits
    release.set()
    for thread in (compile_job, gpu_job):
        thread.join(timeout=5)
    assert order == ["gpu test", "compile"]


def test_a_window_never_overlaps_other_work_on_its_gpu():
    scheduler = Scheduler(cpu_slots=8, gpus=["0", "1"], gpu_slots=3, max_defer=0.05)
    spans = run_jobs(scheduler, ([Need.GPU] * 5 + [WINDOW] + [Need.CPU]) * 6, seconds=0.03)
    assert len([span for span in spans if span[0] == "window"]) == 6
    assert_windows_alone(spans)
    assert {gpu for kind, gpu, *_ in spans if kind != "cpu"} == {"0", "1"}  # both lanes work
    assert scheduler.stats.started["window"] == 6


def test_windows_wait_for_the_queued_jobs_and_then_open_one_after_the_other():
    # The scheduler's clock never moves, so no drain time is ever reached: the GPU falling idle
    # opened the windows, not a deadline.
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=2, max_defer=30, clock=FakeClock())
    spans = run_jobs(scheduler, [Need.GPU] * 6 + [WINDOW] * 3 + [Need.GPU] * 6)
    windows = sorted(s for kind, _, s, _ in spans if kind == "window")
    plain_gpu_ends = [e for kind, _, s, e in spans if kind == "gpu" and e - s > 0.04]
    assert len(windows) == 3 and windows[0] >= max(plain_gpu_ends)  # one drain for the three
    assert_windows_alone(spans)


def test_a_parked_process_lends_its_slots_until_its_window_opens():
    # One CPU slot and one GPU slot: had the parked process kept them, the second job could
    # never start, and the window (waiting for queued jobs) would open only at the deadline.
    scheduler = Scheduler(cpu_slots=1, gpus=["0"], gpu_slots=1, max_defer=30)
    events = []

    def plain() -> None:
        with scheduler.hold(Need.GPU):
            events.append("plain start")
            time.sleep(0.2)
            events.append("plain end")

    with scheduler.hold(Need.GPU) as lease:
        later = threading.Thread(target=plain)
        later.start()  # queued behind the timed test's slots
        time.sleep(0.05)
        with scheduler.window(lease):
            events.append("window")
    later.join(timeout=5)
    assert events == ["plain start", "plain end", "window"]


def test_without_exclusive_windows_a_window_opens_at_once_beside_the_other_jobs():
    # The bench's --shared-windows experiment: the same two jobs, but the timed one does not wait.
    scheduler = Scheduler(cpu_slots=2, gpus=["0"], gpu_slots=2, max_defer=30, exclusive_windows=False)
    events = []
    started = threading.Event()

    def plain() -> None:
        with scheduler.hold(Need.GPU):
            events.append("plain start")
            started.set()
            time.sleep(0.3)
            events.append("plain end")

    with scheduler.hold(Need.GPU) as lease:
        other = threading.Thread(target=plain)
        other.start()
        assert started.wait(5)
        with scheduler.window(lease) as granted:
            events.append("window")
    other.join(timeout=5)
    assert granted and events == ["plain start", "window", "plain end"]


def test_with_quiet_windows_no_gpu_job_starts_on_any_gpu_while_a_window_is_open():
    # The bench's --quiet-windows experiment: a job for another GPU waits for the window on GPU 0
    # to close; without it, that job starts on GPU 1 at once.
    for quiet in (True, False):
        scheduler = Scheduler(cpu_slots=4, gpus=["0", "1"], gpu_slots=2, max_defer=30, quiet_windows=quiet)
        events: list[str] = []
        started = threading.Event()

        def other_job(events=events, started=started, scheduler=scheduler) -> None:
            with scheduler.hold(Need.GPU) as lease:
                events.append(f"job on GPU {lease.gpu}")
                started.set()

        with scheduler.hold(Need.GPU) as lease:
            assert lease.gpu == "0"
            with scheduler.window(lease) as granted:
                assert granted
                job = threading.Thread(target=other_job)
                job.start()
                # Quiet: the job is still waiting after a while; otherwise it has started.
                assert started.wait(0.5) is not quiet
                events.append("window closes")
            job.join(timeout=5)
        expected = ["window closes", "job on GPU 1"] if quiet else ["job on GPU 1", "window closes"]
        assert events == expected, (quiet, events)


def test_windows_are_not_starved_by_a_stream_of_jobs():
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=2, max_defer=0.2, clock=clock)
    stop = threading.Event()
    granted_at: list[float] = []

    def stream() -> None:
        while not stop.is_set():
            with scheduler.hold(Need.GPU):
                time.sleep(0.02)

    def timed(lease) -> None:
        with scheduler.window(lease):
            granted_at.append(clock())

    # Twice as many feeders as slots: a job always waits to start, so the lane falls idle only
    # by draining.
    feeders = [threading.Thread(target=stream, daemon=True) for _ in range(8)]
    try:
        with scheduler.hold(Need.GPU) as lease:
            for feeder in feeders:
                feeder.start()
            time.sleep(0.1)
            asked = clock()
            window = threading.Thread(target=timed, args=(lease,), daemon=True)
            window.start()
            time.sleep(0.4)
            assert granted_at == []  # the stream keeps the GPU busy before the drain time
            clock.advance(0.2)  # the drain time: no job starts, and the window opens
            window.join(timeout=3)
    finally:
        stop.set()
        for feeder in feeders:
            feeder.join(timeout=5)
    assert granted_at == [asked + 0.2]


def hold_gpu_until(scheduler: Scheduler, release: threading.Event) -> threading.Thread:
    """A thread that holds a GPU slot until `release` is set; returned once it holds it."""
    holding = threading.Event()

    def job() -> None:
        with scheduler.hold(Need.GPU, key="holder"):
            holding.set()
            release.wait(5)

    thread = threading.Thread(target=job)
    thread.start()
    holding.wait(5)
    return thread


def test_a_cancelled_window_request_gives_nothing_and_leaves_the_lane_open():
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=2, max_defer=0.05, clock=clock)
    cancel, release, started = threading.Event(), threading.Event(), threading.Event()
    results = []
    holder = hold_gpu_until(scheduler, release)

    def drained_then_cancelled() -> None:  # the process ends while its lane drains
        wait_until(lambda: windows_asked(scheduler) == 1)
        clock.advance(0.1)  # past the drain time
        wait_until(lambda: scheduler._lane("0").draining)
        cancel.set()

    def later_job() -> None:
        with scheduler.hold(Need.GPU):
            started.set()

    try:
        with scheduler.hold(Need.GPU) as lease:
            threading.Thread(target=drained_then_cancelled, daemon=True).start()
            with scheduler.window(lease, cancel.is_set) as granted:
                results.append(granted)
        assert results == [False]
        # The lane drained for the request; with the request gone it must be open again.
        threading.Thread(target=later_job, daemon=True).start()
        assert started.wait(0.5)
    finally:
        release.set()
        holder.join(timeout=5)


def test_the_scheduler_learns_how_long_a_kind_of_job_runs_not_counting_its_wait_for_a_window():
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=4, max_defer=30, clock=clock)
    assert scheduler.expected_seconds("lab02_tests/timed") is None
    release = threading.Event()
    holder = hold_gpu_until(scheduler, release)
    with scheduler.hold(Need.GPU, key="lab02_tests/timed") as lease:
        clock.advance(0.1)

        def other_job_ends() -> None:  # while the window waits for it: 0.3 s parked
            clock.advance(0.3)
            release.set()

        threading.Timer(0.05, other_job_ends).start()
        with scheduler.window(lease):
            clock.advance(0.1)
    holder.join()
    assert lease.parked == pytest.approx(0.3)
    assert scheduler.expected_seconds("lab02_tests/timed") == pytest.approx(0.2)  # 0.1 + 0.1


def test_while_a_window_is_asked_for_only_jobs_that_end_before_its_drain_start():
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=4, max_defer=0.8, clock=clock)
    learn(scheduler, clock, long=1.0, short=0.05)
    order: list[str] = []
    running_may_end = threading.Event()

    def job(key: str, until: threading.Event | None = None) -> None:
        with scheduler.hold(Need.GPU, key=key):
            order.append(f"{key} started")
            if until is not None:
                until.wait(5)

    def timed() -> None:
        with scheduler.hold(Need.GPU) as lease, scheduler.window(lease):
            order.append("window")

    threads = [threading.Thread(target=job, args=("running", running_may_end), daemon=True)]
    try:
        threads[0].start()
        wait_until(lambda: "running started" in order)
        threads.append(threading.Thread(target=timed, daemon=True))
        threads[1].start()
        wait_until(lambda: windows_asked(scheduler) == 1)  # its drain is 0.8 s away on the clock
        threads += [threading.Thread(target=job, args=(key,), daemon=True) for key in ("long", "short")]
        for thread in threads[2:]:
            thread.start()
        wait_until(lambda: "short started" in order)  # 0.05 s fits before the drain: it backfilled
        time.sleep(0.2)
        assert "long started" not in order and "window" not in order  # 1.0 s would hold the drain up
    finally:
        running_may_end.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(timeout=10)
    # The window opened once the lane fell idle, before the drain time (the clock never got
    # there), and the long job waited for it to close.
    assert order.index("short started") < order.index("window") < order.index("long started")


def learn(scheduler: Scheduler, clock: FakeClock, **seconds: float) -> None:
    """Teaches the scheduler how long each kind of job runs, on its fake clock."""
    for key, duration in seconds.items():
        with scheduler.hold(Need.GPU, key=key):
            clock.advance(duration)


def windows_asked(scheduler: Scheduler, gpu: str = "0") -> int:
    return scheduler._lane(gpu).windows_asked  # the test waits for a request to be made


def test_a_judge_between_cases_goes_on_at_once_but_stops_parked_while_its_lane_drains():
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=4, max_defer=0.5, clock=clock)
    events: list[str] = []
    with scheduler.hold(Need.GPU, key="lab05_tests/group", yields=True) as group:
        assert scheduler.checkpoint(group)  # nothing asked for: on at once, not parked
        assert group.parked == 0

        def measure() -> None:
            with scheduler.hold(Need.GPU, key="timed") as lease:
                with scheduler.window(lease) as granted:
                    assert granted
                    events.append("window")
                    clock.advance(0.2)

        timed = threading.Thread(target=measure)
        timed.start()
        wait_until(lambda: windows_asked(scheduler) == 1)
        # A judge that yields is expected to stop at its next case, so the drain time does not
        # wait for it: it is max_defer after the request.
        clock.advance(0.6)
        wait_until(lambda: scheduler._lane("0").draining)
        assert scheduler.checkpoint(group)  # parked until the window has closed
        events.append("next case")
        timed.join(5)
    assert events == ["window", "next case"]
    assert group.parked == pytest.approx(0.2)
    assert [span.kind for span in scheduler.stats.spans if span.key == "lab05_tests/group"][0] == "parked"


def test_a_drain_waits_for_a_long_running_job_and_short_jobs_fill_the_gpu_until_it_ends():
    # Draining at max_defer would leave the GPU to the long job alone for most of its run.
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=4, max_defer=0.2, clock=clock)
    learn(scheduler, clock, long=0.8, short=0.05)
    times: dict[str, float] = {}
    short_starts: list[float] = []
    long_may_end, stop = threading.Event(), threading.Event()

    def long_job() -> None:
        with scheduler.hold(Need.GPU, key="long"):
            times["long started"] = clock()
            long_may_end.wait(10)
            times["long ended"] = clock()

    def timed() -> None:
        with scheduler.hold(Need.GPU, key="timed") as lease:
            times["asked"] = clock()
            with scheduler.window(lease):
                times["window"] = clock()

    def shorts() -> None:
        while not stop.is_set():
            with scheduler.hold(Need.GPU, key="short"):
                short_starts.append(clock())
            time.sleep(0.005)

    threads = [threading.Thread(target=f, daemon=True) for f in (long_job, timed, shorts)]
    try:
        threads[0].start()
        wait_until(lambda: "long started" in times)
        clock.advance(0.05)
        threads[1].start()
        wait_until(lambda: windows_asked(scheduler) == 1)
        threads[2].start()
        # Past max_defer after the request, short jobs still start: the drain is set by the long
        # job's expected end (0.8 s after it started; at most 3 x max_defer after the request).
        clock.advance(0.4)
        started = len(short_starts)
        wait_until(lambda: len(short_starts) > started)
        assert short_starts[-1] >= times["asked"] + 0.3
        # Past that drain time the lane drains: no job starts, and the window waits for the long one.
        clock.advance(0.4)
        time.sleep(0.3)  # the window's wait polls every 0.1 s
        started = len(short_starts)
        time.sleep(0.2)
        assert len(short_starts) == started and "window" not in times
        long_may_end.set()
        threads[1].join(timeout=5)
        assert times["window"] >= times["long ended"]
    finally:
        long_may_end.set()
        stop.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(timeout=5)


def test_a_kind_of_job_never_seen_is_expected_to_run_as_long_as_the_longest_seen():
    clock = FakeClock()
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=4, max_defer=0.3, clock=clock)
    learn(scheduler, clock, long=0.6)
    order: list[str] = []
    release = threading.Event()
    holder = hold_gpu_until(scheduler, release)  # so that the window cannot open at once

    def new_kind() -> None:
        with scheduler.hold(Need.GPU, key="never seen"):
            order.append("new started")

    def timed() -> None:
        with scheduler.hold(Need.GPU, key="timed") as lease, scheduler.window(lease):
            order.append("window")

    threads = [threading.Thread(target=timed, daemon=True), threading.Thread(target=new_kind, daemon=True)]
    try:
        threads[0].start()
        wait_until(lambda: windows_asked(scheduler) == 1)
        threads[1].start()
        time.sleep(0.2)
        assert order == []  # expected to run 0.6 s, the longest seen: past the drain, 0.3 s away
    finally:
        release.set()
        for thread in [*threads, holder]:
            if thread.is_alive():
                thread.join(timeout=5)
    assert order == ["window", "new started"]


def test_without_a_gpu_gpu_jobs_take_cpu_slots_and_windows_open_at_once():
    scheduler = Scheduler(cpu_slots=2, gpus=[], gpu_slots=4)
    spans = run_jobs(scheduler, [Need.GPU, Need.CPU, Need.GPU])
    assert {kind for kind, *_ in spans} == {"cpu"} and {gpu for _, gpu, *_ in spans} == {None}
    assert most_at_once(spans, lambda kind, gpu: True) == 2
    with scheduler.hold(Need.GPU) as lease, scheduler.window(lease) as granted:
        assert granted and lease.gpu is None


def read_spans(log: Path) -> list[tuple[str, str, float, float]]:
    """The fake tests' spans as (kind, gpu, start, end), kind "window" or the test's name."""
    spans = []
    for line in log.read_text().splitlines():
        start, end, gpu, name = line.split(" ", 3)
        kind = (
            "window" if name.endswith(" (window)") else "profiler" if name.endswith(" (profiler)") else name
        )
        spans.append((kind, gpu, float(start), float(end)))
    return spans


def listed_tests(tests: list[dict]) -> list[ListedTest]:
    return [ListedTest(t["name"], tuple(t["tags"].strip("[]").split("]["))) for t in tests]


def test_test_processes_get_their_lanes_gpu_and_measure_in_windows_alone(tmp_path):
    log = tmp_path / "spans.txt"
    tests = [
        {"name": f"shared {i}", "tags": "[lab02][correctness][gpu]", "behaviour": f"record:{log}"}
        for i in range(8)
    ] + [
        {"name": f"timed {i}", "tags": "[lab02][performance][gpu]", "behaviour": f"window:{log}"}
        for i in range(3)
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    scheduler = Scheduler(cpu_slots=8, gpus=["0", "1"], gpu_slots=3, max_defer=0.5)
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = run_tests(exe, listed_tests(tests), tmp_path, RunConfig(timeout=20), scheduler, pool)
    assert {outcome.status for outcome in outcomes.values()} == {"passed"}
    assert all(outcome.needs_gpu for outcome in outcomes.values())  # from the listing's [gpu] tag
    spans = read_spans(log)
    assert {gpu for _, gpu, _, _ in spans} == {"0", "1"}  # every process saw one GPU, of its lane
    assert len([span for span in spans if span[0] == "window"]) == 3
    assert_windows_alone(spans)
    assert scheduler.stats.started["window"] == 3
    assert scheduler.stats.most_at_once["gpu"] >= 4  # processes really shared the GPUs


def test_a_judge_on_a_placed_lane_is_told_its_gpus_pci_address_and_on_others_not(tmp_path):
    # The judge runs unconfined; told its GPU's address, it asks NVML about that GPU alone and
    # starts no CUDA (common/src/gpu.cu). Lane 1 is not placed, so its worker may see every GPU.
    tests = [
        {"name": f"judged {i}", "tags": "[lab02][correctness][gpu]", "behaviour": "lane"} for i in range(4)
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    sandbox = Sandbox(tmp_path / "init", gpu_nodes=(LaneGpu("0", "nvidia3", "00000000:00:06.0"),))
    scheduler = Scheduler(cpu_slots=8, gpus=["0", "1"], gpu_slots=1)
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = run_tests(
            exe,
            listed_tests(tests),
            tmp_path,
            RunConfig(timeout=20, sandbox=sandbox, tests_per_process=1),
            scheduler,
            pool,
            worker=exe,  # a split lab's judge: it runs as it is, and only its worker is confined
        )
    told = {outcome.messages[0] for outcome in outcomes.values()}
    assert told == {"0 00000000:00:06.0", "1 -"}


def test_profiler_turns_never_overlap_on_a_gpu_but_other_tests_run_beside_them(tmp_path):
    log = tmp_path / "spans.txt"
    tests = (
        [
            {"name": f"counts {i}", "tags": "[lab03][performance][gpu]", "behaviour": f"profile:{log}"}
            for i in range(4)
        ]
        + [
            {"name": f"shared {i}", "tags": "[lab03][correctness][gpu]", "behaviour": f"record:{log}"}
            for i in range(6)
        ]
        + [{"name": "timed", "tags": "[lab03][performance][gpu]", "behaviour": f"window:{log}"}]
    )
    exe = write_fake_catch2(tmp_path / "bin", "lab03_tests", tests)
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=6, max_defer=0.5)
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = run_tests(exe, listed_tests(tests), tmp_path, RunConfig(timeout=20), scheduler, pool)
    assert {outcome.status for outcome in outcomes.values()} == {"passed"}
    spans = read_spans(log)
    turns = sorted((start, end) for kind, _, start, end in spans if kind == "profiler")
    assert len(turns) == 4
    assert all(earlier[1] <= later[0] for earlier, later in pairwise(turns))  # one at a time
    assert_windows_alone(spans)  # a window overlaps no profiler turn either
    shared = [(start, end) for kind, _, start, end in spans if kind.startswith("shared")]
    # No drain: plain tests ran during profiler turns.
    assert any(s < t_end and e > t_start for s, e in shared for t_start, t_end in turns)
    assert scheduler.stats.started["profiler"] == 4 and scheduler.stats.started["window"] == 1


def test_a_process_that_ends_inside_its_window_or_waiting_for_it_frees_the_gpu(tmp_path):
    log = tmp_path / "spans.txt"
    tests = [
        {"name": "dies in its window", "tags": "[lab02][performance][gpu]", "behaviour": "window-then-die"},
        {"name": "hangs", "tags": "[lab02][correctness][gpu]", "behaviour": "hang"},
        {"name": "asks and is killed", "tags": "[lab02][performance][gpu]", "behaviour": f"window:{log}"},
        {"name": "asks later", "tags": "[lab02][performance][gpu]", "behaviour": f"window:{log}"},
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=4, max_defer=30)
    listed = listed_tests(tests)
    with ThreadPoolExecutor(max_workers=8) as pool:
        died = run_tests(exe, listed[:1], tmp_path, RunConfig(timeout=10), scheduler, pool)
        # The hang keeps the lane busy for 3.5 s, so "asks and is killed" waits for its window
        # past its own limit: 1 s, and at most as long again not counted while it waits.
        hang = pool.submit(run_tests, exe, listed[1:2], tmp_path, RunConfig(timeout=3.5), scheduler, pool)
        time.sleep(0.3)
        start = time.monotonic()
        first = run_tests(exe, listed[2:3], tmp_path, RunConfig(timeout=1), scheduler, pool)
        killed_after = time.monotonic() - start
        assert hang.result()["hangs"].status == "timed_out"
        start = time.monotonic()
        later = run_tests(exe, listed[3:], tmp_path, RunConfig(timeout=10), scheduler, pool)
    assert died["dies in its window"].status == "crashed"  # no result file: not a pass
    assert first["asks and is killed"].status == "timed_out"
    assert 1.8 < killed_after < 3.0  # its 1 s, plus 1 s of waiting not counted
    assert later["asks later"].status == "passed" and time.monotonic() - start < 3
    assert [kind for kind, *_ in read_spans(log)] == ["asks later", "window", "asks later"]


def test_time_spent_waiting_for_a_window_does_not_count_against_the_tests_limit(tmp_path):
    log = tmp_path / "spans.txt"
    tests = [
        {"name": "hangs", "tags": "[lab02][correctness][gpu]", "behaviour": "hang"},
        {"name": "asks", "tags": "[lab02][performance][gpu]", "behaviour": f"window:{log}"},
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=4, max_defer=30)
    listed = listed_tests(tests)
    with ThreadPoolExecutor(max_workers=8) as pool:
        hang = pool.submit(run_tests, exe, listed[:1], tmp_path, RunConfig(timeout=2.5), scheduler, pool)
        time.sleep(0.3)
        # Waits about 2.2 s for the hang to be killed, longer than its own limit, then measures.
        asked = run_tests(exe, listed[1:], tmp_path, RunConfig(timeout=1.5), scheduler, pool)
        assert hang.result()["hangs"].status == "timed_out"
    assert asked["asks"].status == "passed"


def test_a_test_that_ran_out_of_device_memory_runs_again_alone_before_it_counts(tmp_path):
    log = tmp_path / "runs.txt"
    tests = [
        {"name": "out of memory once", "tags": "[lab02][correctness][gpu]", "behaviour": f"oom-once:{log}"},
        {"name": "fails otherwise", "tags": "[lab02][correctness][gpu]", "behaviour": "fail:wrong values"},
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    scheduler = Scheduler(cpu_slots=4, gpus=["0"], gpu_slots=4, max_defer=0.5)
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = run_tests(exe, listed_tests(tests), tmp_path, RunConfig(timeout=10), scheduler, pool)
    assert outcomes["out of memory once"].status == "passed"
    assert outcomes["fails otherwise"].status == "failed"  # any other failure counts at once
    runs = log.read_text().splitlines()
    # The second run had the GPU to itself for its whole life: a window, and no gate to ask.
    assert len(runs) == 2 and runs[0].split()[0] != "-" and runs[1].split()[0] == "-"
    assert scheduler.stats.started["window"] == 1


def test_a_crash_or_a_hang_costs_only_its_own_test(tmp_path):
    tests = [
        {"name": "crashes", "tags": "[lab02][gpu]", "behaviour": "crash"},
        {"name": "hangs", "tags": "[lab02][gpu]", "behaviour": "hang"},
        {"name": "passes", "tags": "[lab02][gpu]", "behaviour": "pass"},
        {"name": "passes too", "tags": "[lab02]", "behaviour": "pass"},
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = run_tests(
            exe, listed_tests(tests), tmp_path, RunConfig(timeout=1.5), Scheduler(4, ["0"], 2), pool
        )
    assert [outcomes[t["name"]].status for t in tests] == ["crashed", "timed_out", "passed", "passed"]


@pytest.mark.parametrize("need", [Need.CPU, Need.GPU])
def test_a_stopped_scheduler_grants_no_slot_and_says_when_the_last_is_given_back(need):
    scheduler = Scheduler(cpu_slots=1, gpus=["0"], gpu_slots=1)
    raised: list[BaseException] = []

    def waiter() -> None:
        try:
            with scheduler.hold(need):
                pass
        except Stopped as error:
            raised.append(error)

    with scheduler.hold(need):
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.2)
        assert thread.is_alive()  # waiting for the only slot
        scheduler.stop()
        thread.join(timeout=2)
        assert not thread.is_alive() and len(raised) == 1  # the wait ended, with Stopped
        assert not scheduler.wait_until_idle(timeout=0.1)  # the held slot is still out
    assert scheduler.wait_until_idle(timeout=0.1)
    with pytest.raises(Stopped):
        with scheduler.hold(Need.CPU):
            pass


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


def processes_naming(folder: Path) -> list[str]:
    """The command lines of the processes (but this one) whose command line names `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in command:
            found.append(command)
    return found


def grade_command(fake_kit, klass: Path, out: Path) -> list[str]:
    # The first line says how the run will take Ctrl-C: SIG_IGN where it started with SIGINT
    # ignored (start_class_run makes sure it does not).
    code = (
        "import signal, sys; from grader import cli, options;"
        "print('SIGINT:', signal.getsignal(signal.SIGINT), flush=True);"
        "from grader.pipeline.build import BuildConfig; from grader.pipeline.run import RunConfig;"
        f"options.configs = lambda args: (BuildConfig(cmake={str(fake_kit.cmake)!r}, generator=None,"
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


def start_class_run(fake_kit, tmp_path: Path, behaviour: str) -> tuple[Path, Path, dict, subprocess.Popen]:
    """A class of six graded in a process of its own (its own session, as a terminal's
    foreground job), every passing test of the fake kit given `behaviour`."""
    spec_path = fake_kit.root / "fake_kit.json"
    spec_path.write_text(spec_path.read_text().replace('"behaviour": "pass"', f'"behaviour": "{behaviour}"'))
    klass = write_class(tmp_path / "class", 6)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(GRADER_ROOT))
    first = subprocess.Popen(
        grade_command(fake_kit, klass, out),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # With SIGINT at its default, as a terminal starts a foreground job. A process inherits
        # an ignored SIGINT (a test run started in the background, as CI may be, ignores it),
        # and Python then keeps ignoring it, as every program should: that run finished as if
        # Ctrl-C never came (its first line said "SIGINT: 1", SIG_IGN).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return klass, out, env, first


def resume_and_check(fake_kit, klass: Path, out: Path, env: dict, kept: int) -> None:
    """The same command again: the `kept` reports are kept, the rest graded, the class whole.
    The tests of the second run pass at once: what is checked is which reports it keeps and
    writes, not how long its tests take."""
    spec_path = fake_kit.root / "fake_kit.json"
    spec_path.write_text(
        re.sub(r'"behaviour": "(sleep|record):[^"]*"', '"behaviour": "pass"', spec_path.read_text())
    )
    second = subprocess.run(
        grade_command(fake_kit, klass, out), env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stdout + second.stderr
    if kept:
        assert f"({kept} already graded: kept)" in second.stdout
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert [row[0] for row in rows[1:]] == [f"s{i:02d}" for i in range(6)]
    assert all(row[-2:] == ["60", "60"] for row in rows[1:]), rows
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no half-written report left


@pytest.mark.parametrize("kill_after", [0.5, 2.5, 4.5])
def test_a_run_killed_at_any_point_resumes_without_losing_or_repeating_anyone(fake_kit, tmp_path, kill_after):
    klass, out, env, first = start_class_run(fake_kit, tmp_path, f"record:{tmp_path / 'spans.txt'}")
    time.sleep(kill_after)
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
    done_before = list(out.glob("*/score.json")) if out.exists() else []
    resume_and_check(fake_kit, klass, out, env, len(done_before))


@pytest.mark.parametrize(
    ("signum", "to_the_group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False), (signal.SIGHUP, False)],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_ctrl_c_sigterm_and_sighup_stop_a_run_at_once_kill_its_tests_and_keep_only_finished_reports(
    fake_kit, tmp_path, signum, to_the_group
):
    """Ctrl-C (SIGINT to the grader's process group, as a terminal sends it) must not wait for
    the submissions in flight: their tests are killed, their reports are not written (they
    would hold killed tests), and the same command resumes the class. SIGTERM (a job
    scheduler's time limit, `timeout`) and SIGHUP (a closed terminal) stop it the same way,
    sent to the grader alone: it must kill the processes it started itself."""
    klass, out, env, first = start_class_run(fake_kit, tmp_path, "sleep:0.8")
    deadline = time.monotonic() + 60
    while not list(out.glob("*/score.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(out.glob("*/score.json")), "no submission finished within 60 s"
    if to_the_group:
        os.killpg(first.pid, signum)
    else:
        os.kill(first.pid, signum)
    interrupted = time.monotonic()
    output, _ = first.communicate(timeout=30)
    stopped_after = time.monotonic() - interrupted
    assert first.returncode == 128 + signum, output
    assert f"grader: interrupted ({signal.Signals(signum).name})" in output, output
    # Two submissions in flight, each with seven tests of 0.8 s on two slots: letting them
    # finish would take seconds more.
    assert stopped_after < 2.0, (stopped_after, output)
    finished = sorted(path.parent.name for path in out.glob("*/score.json"))
    assert 0 < len(finished) < 6
    # The stop failed no submission: a tool it killed is not a failure of the one it served.
    errors = {path.parent.name: json.loads(path.read_text())["error"] for path in out.glob("*/score.json")}
    assert not any(errors.values()), errors
    assert f"{len(finished)} of 6 submissions graded and kept in {out}" in output, output
    # Every process the run started names this test's folder (the confined ones too, seen here
    # from outside their PID namespace); an exiting one may linger for a moment.
    deadline = time.monotonic() + 1.0
    while processes_naming(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_naming(tmp_path), "a process of the run outlived the interrupted grader"
    assert not (out / "gradebook.csv").exists()  # the class files wait for the whole class
    resume_and_check(fake_kit, klass, out, env, len(finished))


def test_without_a_gpu_only_the_first_gpu_test_starts_a_process_to_find_that_out(tmp_path):
    tests = [
        {
            "name": f"gpu {i}",
            "tags": "[lab02][correctness][gpu]",
            "behaviour": "skip:no usable GPU: no driver",
        }
        for i in range(5)
    ] + [
        {
            "name": "sanitizer",
            "tags": "[lab02][safety][gpu]",
            "behaviour": "skip:compute-sanitizer not found",
        },
        {"name": "cpu", "tags": "[lab02][correctness]", "behaviour": "pass"},
    ]
    exe = write_fake_catch2(tmp_path / "bin", "lab02_tests", tests)
    scheduler = Scheduler(cpu_slots=1, gpus=[], gpu_slots=1)
    with ThreadPoolExecutor(max_workers=1) as pool:  # one at a time, in order
        outcomes = run_tests(exe, listed_tests(tests[:1]), tmp_path, RunConfig(timeout=10), scheduler, pool)
        outcomes |= run_tests(exe, listed_tests(tests[1:]), tmp_path, RunConfig(timeout=10), scheduler, pool)
    assert outcomes["gpu 0"].skip_reason == "no usable GPU: no driver"  # the test's own words
    for i in range(1, 5):
        assert outcomes[f"gpu {i}"].status == "skipped" and outcomes[f"gpu {i}"].needs_gpu
        assert (outcomes[f"gpu {i}"].skip_reason or "").startswith("no usable GPU: an earlier [gpu] test")
    assert outcomes["cpu"].status == "passed"
    # Processes started: the first GPU test and the CPU test. The sanitizer test was skipped
    # without one too, since it is a [gpu] test and there is no GPU.
    assert sum(scheduler.stats.started.values()) == 2


def test_a_signal_another_thread_receives_is_handled_while_the_main_thread_waits_for_a_result():
    """The kernel may deliver a process's signal to any of its threads; a main thread blocked in
    a wait without a time limit then runs its handler only once the result arrives."""

    def busy() -> str:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})  # this thread receives it
        time.sleep(0.3)  # the main thread is waiting by now
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(2)
        return "late"

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, handler)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            result_of(pool.submit(busy))
        assert time.monotonic() - started < 1.5
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        signal.signal(signal.SIGUSR1, previous)
        pool.shutdown(wait=True)


@pytest.mark.parametrize("need", [Need.CPU, Need.GPU])
def test_a_freed_slot_goes_to_the_waiting_job_of_the_earliest_submission(need):
    """So that reports come out one after another: a later submission's job waits while an
    earlier one's could use the slot, whichever asked first."""
    scheduler = Scheduler(
        cpu_slots=4 if need is Need.GPU else 1, gpus=["0"] if need is Need.GPU else [], gpu_slots=1
    )
    granted: list[int] = []

    def job(order: int) -> None:
        SUBMISSION_ORDER.set(order)
        with scheduler.hold(need):
            granted.append(order)
            time.sleep(0.02)

    holding = scheduler.hold(need)
    holding.__enter__()
    threads = []
    for order in (3, 1, 2):  # asked in this order, each once the one before is waiting
        threads.append(threading.Thread(target=job, args=(order,)))
        threads[-1].start()
        deadline = time.monotonic() + 5
        waiting = lambda: len(scheduler._cpu_jobs_waiting) + len(scheduler._gpu_jobs_waiting)  # noqa: E731
        while waiting() < len(threads) and time.monotonic() < deadline:
            time.sleep(0.01)
    holding.__exit__(None, None, None)
    for thread in threads:
        thread.join(timeout=5)
    assert granted == [1, 2, 3]


def test_each_span_names_the_submission_its_job_serves():
    """The timeline's spans say whose process ran (SUBMISSION, set in each submission's thread),
    so that a bench can name the submission whose test ran long."""
    scheduler = Scheduler(cpu_slots=2, gpus=[], gpu_slots=1)

    def job(student_id: str) -> None:
        SUBMISSION.set(student_id)
        with scheduler.hold(Need.CPU, key="lab02_tests/speed"):
            pass

    for student_id in ("ann", "bob"):
        thread = threading.Thread(target=job, args=(student_id,))
        thread.start()
        thread.join(timeout=5)
    with scheduler.hold(Need.CPU, key="build"):  # the main thread: no submission set
        pass
    assert [(span.key, span.who) for span in scheduler.stats.spans] == [
        ("lab02_tests/speed", "ann"),
        ("lab02_tests/speed", "bob"),
        ("build", None),
    ]


def test_with_turn_slots_no_gpu_job_starts_beside_a_profiler_turn_past_the_cap():
    # The bench's experiment (--turn-slots): a turn ran about 1.15 s with few processes beside it
    # and none starting, and about 2 s with eight and new ones starting (an H200).
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=8, turn_slots=2)
    started = threading.Event()

    def third() -> None:
        with scheduler.hold(Need.GPU):
            started.set()

    with scheduler.hold(Need.GPU) as counting, scheduler.hold(Need.GPU):
        with scheduler.profiler_turn(counting) as granted:
            assert granted
            later = threading.Thread(target=third)
            later.start()
            time.sleep(0.3)
            assert not started.is_set()  # two run on the lane during the turn: the cap
        wait_until(started.is_set)  # the turn is over: it starts beside the two
        later.join()
        # Without a turn the cap does not hold: the lane's own slots do.
        with scheduler.hold(Need.GPU), scheduler.hold(Need.GPU):
            pass
    with pytest.raises(ValueError, match="turn_slots"):
        Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=8, turn_slots=0)


def test_with_turn_slots_the_cap_holds_while_a_turn_is_waited_for_too():
    # When one turn ends and a parked process is about to take the next, jobs queued behind the
    # first must not all start in between: they would start beside the next turn's first launch.
    scheduler = Scheduler(cpu_slots=8, gpus=["0"], gpu_slots=8, turn_slots=1)
    lane = scheduler._lane("0")  # the rule itself, without the threads that reach this state
    with scheduler.hold(Need.GPU):
        lane.turns_waiting = 1
        assert not scheduler._fits(lane, None)
        lane.turns_waiting = 0
        assert scheduler._fits(lane, None)  # no turn held or waited for: the lane's own slots


def test_a_lane_gets_12_gpu_slots_where_its_gpus_have_4_gib_a_slot_and_fewer_where_they_do_not():
    assert gpu_slots_for([143771]) == 12  # an H200
    assert gpu_slots_for([81559, 81559]) == 12  # H100s
    assert gpu_slots_for([53248]) == 12  # 52 GiB: 4 kept back, 4 a slot
    assert gpu_slots_for([40960]) == 9  # a 40 GB A100
    assert gpu_slots_for([81920, 24576]) == 5  # the smallest GPU counts
    assert gpu_slots_for([4096]) == 2  # at least two
    assert gpu_slots_for([]) == 12  # not known: the engine's own
    assert lane_slots(5, ["0"]) == 5  # --gpu-slots wins
    assert lane_slots(None, []) == 1  # no GPU: nothing takes a GPU slot


def test_the_gpus_memory_is_read_from_nvidia_smi_and_nothing_unreadable_is_guessed(monkeypatch):
    answers: dict[str, str] = {"out": "143771\n143771\n", "code": "0"}
    asked: list[list[str]] = []

    def run(command, **_):
        assert command[0] == "nvidia-smi" and "--query-gpu=memory.total" in command
        asked.append(command)
        return subprocess.CompletedProcess(command, int(answers["code"]), answers["out"], "")

    monkeypatch.setattr(gpus.subprocess, "run", run)
    assert gpus.gpu_memory_mib(["0", "1"]) == [143771, 143771]
    assert "--id=0,1" in asked[-1]  # the run's GPUs, not every GPU of the machine
    assert lane_slots(None, ["0", "1"]) == 12
    answers["out"] = "24576\n"
    assert lane_slots(None, ["GPU-8c1b"]) == 5
    assert "--id=GPU-8c1b" in asked[-1]
    answers["out"] = "[N/A]\n"
    assert gpus.gpu_memory_mib(["0"]) == []
    answers["code"] = "9"
    assert gpus.gpu_memory_mib(["0"]) == []
    count = len(asked)
    assert gpus.gpu_memory_mib(["MIG-4f2a"]) == [] and len(asked) == count  # not asked
