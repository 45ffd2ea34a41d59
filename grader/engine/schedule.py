"""Where every process of a grading run gets its turn: CPU slots, GPU lanes shared by test
processes, and windows in which one test process has its GPU to itself.

- Every job takes one of `cpu_slots`, GPU jobs too: a test process spends most of its life
  creating a CUDA context, which is CPU work, so there are never more processes than slots
  (measured on an H100 with 16 cores: 16 compiles beside 8 GPU tests made each test process
  about four times slower than alone).
- A GPU job (a [gpu] test) also takes one of a GPU's `gpu_slots`; processes of different
  submissions share a GPU this way.
- A measurement that the whole device sees (a kernel's time, the device's free memory) needs
  the GPU to itself, but only while it measures: the process asks for a window through its
  GPU gate (grader/confine/gate.py) and waits, parked, holding neither slot. Emptying a GPU costs the
  time of its longest running test, so windows are batched: a request waits while GPU jobs are
  queued, and is granted when the GPU falls idle; at its drain time its lane drains (no new job
  starts there), and every window asked for on the lane is granted, one after the other, before
  the queued jobs start. So windows cannot starve, and a class pays a few drains instead of one
  per timed test (measured on an H100: a drain per test kept the GPU half idle). While a window
  is open, every other process on its GPU is parked: no other work runs there.
- A drain waits for the longest test running on its lane (a sanitizer run takes seconds), so
  jobs say what they are (`key`, e.g. the test's name) and the scheduler learns how long each
  kind may run (the longest of its last runs). A request's drain time is `max_defer` seconds
  after it was asked, or later if a job running on the lane is expected to end later (at most
  three times `max_defer`): draining before then would leave the GPU to that one job (measured
  on an H100: 15 s with one process running and twelve parked). While a window is asked for,
  a job starts on the lane only if it is expected to end before the drain time (backfilling);
  a kind of job never seen before is expected to run as long as the longest kind seen so far.
  The drain then finds only jobs about to end.
- A judge that runs several test cases (`hold(..., yields=True)`) stops before each case while
  its lane drains or a window is open (`checkpoint`, asked through its gate), parked like a
  window's asker. A drain then waits only for the case under way, so such a job is neither
  expected to end by a drain time nor kept from starting by one.
- Every GPU is a lane of its own; a job is given one GPU index, which the run stage passes to
  its process as CUDA_VISIBLE_DEVICES, so the same code uses every GPU of a node.

On a machine without a GPU, GPU jobs are CPU jobs (their tests report themselves skipped).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar


class Stopped(Exception):
    """The run was stopped (Ctrl-C, grader/pipeline/grade.py's stop_run): no new process starts.
    Not a GraderError: nothing graded after it is reported."""


class Need(Enum):
    CPU = "cpu"
    GPU = "gpu"


def need_for_tags(tags: tuple[str, ...] | list[str]) -> Need:
    """The kind of slot a test needs, from its Catch2 tags (docs/architecture.md)."""
    return Need.GPU if "gpu" in tags else Need.CPU


def visible_gpus() -> list[str]:
    """The GPUs this run may use: CUDA_VISIBLE_DEVICES when set, else what nvidia-smi lists."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [entry.strip() for entry in given.split(",") if entry.strip() and entry.strip() != "-1"]
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if listed.returncode != 0:
        return []
    return [str(index) for index, line in enumerate(listed.stdout.splitlines()) if line.startswith("GPU ")]


@dataclass
class Lease:
    need: Need
    gpu: str | None  # the CUDA_VISIBLE_DEVICES value for the process, None for a CPU slot
    key: str | None = None  # what kind of job it is, to learn how long such jobs run
    started: float = 0.0
    parked: float = 0.0  # seconds spent waiting for windows, not running
    yields: bool = False  # stops between its cases while its lane drains (Scheduler.checkpoint)
    who: str | None = None  # the submission it serves (SUBMISSION), for the timeline


@dataclass
class _Lane:
    gpu: str
    active: dict[int, Lease] = field(default_factory=dict)  # GPU jobs running here, not parked
    window_open: bool = False
    profiling: bool = False  # a process here holds the profiler turn (Scheduler.profiler_turn)
    turns_waiting: int = 0  # processes here parked until they get it
    deadlines: list[float] = field(default_factory=list)  # one per parked job waiting for a window
    draining: bool = False  # a window waited long enough: no job starts here

    @property
    def running(self) -> int:
        return len(self.active)

    @property
    def windows_asked(self) -> int:
        return len(self.deadlines)


@dataclass(frozen=True)
class Span:
    """One stretch of a run's timeline, in the scheduler's clock's seconds: a job holding its slot
    ("cpu", "gpu"), a process parked waiting for its window or profiler turn ("parked"), a
    window ("window") or a profiler turn ("profiler")."""

    kind: str
    start: float
    end: float
    gpu: str | None = None
    key: str | None = None
    who: str | None = None  # the submission whose job it is, where the engine said (SUBMISSION)


@dataclass
class SchedulerStats:
    """What the benchmark reports: how many jobs and windows there were, the most at once, and
    the timeline (grader/staff/bench.py draws it)."""

    started: dict[str, int] = field(default_factory=dict)
    most_at_once: dict[str, int] = field(default_factory=dict)
    parked_seconds: float = 0.0  # summed over processes waiting for their window
    window_seconds: float = 0.0  # summed over open windows: time a GPU had one process alone
    spans: list[Span] = field(default_factory=list)


def _never() -> bool:
    return False


# Which submission a job is for, in the order the run took them up (0 first). Where a slot
# frees, the job of the earliest submission that can use it goes first, so that a class's
# reports come out one after another from the first minutes instead of all at the end; later
# submissions fill what the earlier ones leave idle. The engine sets it in each submission's
# thread, and the threads that run its tests inherit it (contextvars.copy_context).
SUBMISSION_ORDER: ContextVar[int] = ContextVar("submission_order", default=0)
# And which submission that is (its student id), set and inherited the same way: it names the
# submission in each span of the timeline, so that a bench can say whose process ran long.
SUBMISSION: ContextVar[str | None] = ContextVar("submission", default=None)

# How long a window asked for waits, at most, before its lane drains (the module's docstring).
MAX_DEFER_S = 20.0


class Scheduler:
    def __init__(
        self,
        cpu_slots: int,
        gpus: list[str],
        gpu_slots: int,
        max_defer: float = MAX_DEFER_S,
        clock: Callable[[], float] = time.monotonic,
        exclusive_windows: bool = True,
        turn_slots: int | None = None,
        quiet_windows: bool = False,
    ) -> None:
        """`clock` gives the time in seconds that spans, learned durations and drain times are
        read in: the monotonic clock, or a test's own (grader/tests/test_schedule.py moves one
        by hand, so that what the scheduler learns and when it drains are exact). A window's
        wait polls every 0.1 s, so a drain time passed on such a clock is noticed; the other
        waits end on a change of the scheduler's own state.

        `exclusive_windows` off (a staff experiment, `grader bench --shared-windows`): a window
        is granted at once, with the other processes still on the GPU, to measure what the
        drains cost the rate and what sharing does to the timed tests' scores.

        `quiet_windows` (a staff experiment, `grader bench --quiet-windows`): while a window is
        open on any lane, no GPU job starts on any lane. On a node of four H200s a window lasted
        3.9 s on average against 0.16 s on one GPU alone: its timed calls wait on the driver while
        the other GPUs start processes (bench/RESULTS.md, "Workers kept after a failing case").

        `turn_slots` (a staff experiment, `grader bench --turn-slots K`; None: off): while a lane's
        profiler turn is held or waited for, no GPU job starts there while K or more run, so that
        none starts just before a waiting turn is granted either. On an H200 a turn took
        about 1.15 s with four test processes running beside it and no new one starting, and about
        2 s with eight and new ones starting (bench/RESULTS.md, "Profiler turns beside starting
        processes"); the turns are most of a profiled lab's pass, one at a time."""
        if cpu_slots < 1 or gpu_slots < 1:
            raise ValueError("cpu_slots and gpu_slots must be at least 1")
        if turn_slots is not None and turn_slots < 1:
            raise ValueError("turn_slots must be at least 1 (or None: no cap during a turn)")
        self._clock = clock
        self.cpu_slots = cpu_slots
        self.gpu_slots = gpu_slots
        self.max_defer = max_defer
        self.exclusive_windows = exclusive_windows
        self.quiet_windows = quiet_windows
        self.turn_slots = turn_slots
        self._lanes = [_Lane(gpu) for gpu in gpus]
        self._cpu_used = 0
        self._held = 0  # leases not yet released, parked ones included
        self.stopped = False
        # Each waiting job's submission (SUBMISSION_ORDER) and, for a GPU job, its expected
        # seconds (None: unknown).
        self._cpu_jobs_waiting: list[int] = []
        self._gpu_jobs_waiting: list[tuple[int, float | None]] = []
        self._durations: dict[str, list[float]] = {}
        self._changed = threading.Condition()
        self.stats = SchedulerStats()
        # Without a GPU lane, once a [gpu] test has skipped itself for want of a GPU: why later
        # ones are reported skipped without starting a process (grader/pipeline/run.py).
        self.no_gpu_reason: str | None = None

    @property
    def has_gpus(self) -> bool:
        return bool(self._lanes)

    @property
    def gpus(self) -> list[str]:
        """The lanes' GPUs, as CUDA_VISIBLE_DEVICES values."""
        return [lane.gpu for lane in self._lanes]

    @property
    def total_slots(self) -> int:
        """The most processes at once: every job holds a CPU slot."""
        return self.cpu_slots

    @contextmanager
    def hold(self, need: Need, key: str | None = None, yields: bool = False) -> Iterator[Lease]:
        """A slot for one process; `key` names the kind of job (the same test of another
        submission has the same key), so that the scheduler learns how long such jobs run.
        `yields`: the process asks for a `checkpoint` before each of its cases."""
        lease = self._acquire(need, key, yields)
        try:
            yield lease
        finally:
            self._release(lease)

    def stop(self) -> None:
        """No lease is granted from now on: every wait for one, and every later ask, raises
        Stopped. Leases already held run on until released (stop_run kills their processes)."""
        with self._changed:
            self.stopped = True
            self._changed.notify_all()

    def wait_until_idle(self, timeout: float) -> bool:
        """Whether every lease has been released, waiting up to `timeout` seconds for it."""
        with self._changed:
            return self._changed.wait_for(lambda: self._held == 0, timeout=timeout)

    def expected_seconds(self, key: str | None) -> float | None:
        """How long a job of this kind may run, the longest of its last few runs here; None if
        unknown. The longest, not the median: a sanitizer run on a racy kernel takes 25 s where
        a clean one takes 9 s (H100), and a drain timed by the median waited for it alone."""
        seen = self._durations.get(key) if key is not None else None
        return max(seen) if seen else None

    def _expected_or_longest(self, key: str | None) -> float | None:
        expected = self.expected_seconds(key)
        if expected is not None or key is None:
            return expected
        known = [max(seen) for seen in self._durations.values() if seen]
        return max(known) if known else None

    @contextmanager
    def window(self, lease: Lease, cancelled: Callable[[], bool] = _never) -> Iterator[bool]:
        """The lease's GPU to itself, for as long as the block runs. Yields False instead when
        `cancelled` turned true while waiting (its process ended): then nothing was granted."""
        if lease.gpu is None or not self.exclusive_windows:
            yield True  # a CPU slot: there is no GPU to share (or, in the experiment, it is shared)
            return
        lane = self._lane(lease.gpu)
        asked = self._clock()
        granted = self._open_window(lane, lease, cancelled)
        opened = self._clock()
        try:
            yield granted
        finally:
            self._close_window(lane, lease, granted)
            closed = self._clock()
            with self._changed:
                self._parked(lease, asked, opened)
                if granted:
                    self.stats.window_seconds += closed - opened
                    self._span("window", opened, closed, lease)

    @contextmanager
    def profiler_turn(self, lease: Lease, cancelled: Callable[[], bool] = _never) -> Iterator[bool]:
        """The lease's GPU's one profiling process, for as long as the block runs: Nsight
        Compute's count of a kernel does not depend on what other processes run (on the H100 the
        locality probe's counts were the same to the instruction beside eight busy test
        processes), but two processes profiling one GPU at once collide. So other jobs go on,
        and no drain is needed. A process that must wait for its turn is parked meanwhile, and
        resumes only when no window is open or draining on its lane (it would break one). Yields
        False when `cancelled` turned true while waiting."""
        if lease.gpu is None:
            yield True
            return
        lane = self._lane(lease.gpu)
        asked = self._clock()
        with self._changed:
            parked = lane.profiling
            if parked:
                self._park(lane, lease)
                lane.turns_waiting += 1
                try:
                    while not cancelled() and (lane.profiling or lane.window_open or lane.draining):
                        self._changed.wait(timeout=0.1)
                finally:
                    lane.turns_waiting -= 1  # a count left behind would cap the lane for good
                self._unpark(lane, lease)
            granted = not cancelled() and not lane.profiling
            if granted:
                lane.profiling = True
                self._count("profiler", 1)
        opened = self._clock()
        try:
            yield granted
        finally:
            with self._changed:
                if granted:
                    lane.profiling = False
                    self._span("profiler", opened, self._clock(), lease)
                if parked:
                    self._parked(lease, asked, opened)
                self._changed.notify_all()

    def checkpoint(self, lease: Lease, cancelled: Callable[[], bool] = _never) -> bool:
        """Returns when the lease's process may start its next case: at once, unless its lane is
        draining for a window or has one open; then it is parked (its slots lent) until the
        lane's windows are done. False when `cancelled` turned true while waiting."""
        if lease.gpu is None:
            return True
        lane = self._lane(lease.gpu)
        with self._changed:
            if not (lane.window_open or lane.draining):
                return True
            asked = self._clock()
            self._park(lane, lease)
            while not cancelled() and (lane.window_open or lane.draining):
                self._changed.wait(timeout=0.1)
            self._unpark(lane, lease)
            resumed = self._clock()
            self._parked(lease, asked, resumed)
            self._changed.notify_all()
        return not cancelled()

    # -----------------------------------------------------------------------------------------

    def _acquire(self, need: Need, key: str | None, yields: bool = False) -> Lease:
        if need is Need.GPU and not self._lanes:
            need = Need.CPU  # no GPU here: the test runs (and skips itself) on a CPU slot
        order = SUBMISSION_ORDER.get()
        with self._changed:
            if need is Need.CPU:
                self._cpu_jobs_waiting.append(order)
                try:
                    self._changed.wait_for(
                        lambda: (
                            self.stopped
                            or (self._cpu_free_for_cpu_job() and order <= min(self._cpu_jobs_waiting))
                        )
                    )
                finally:
                    self._cpu_jobs_waiting.remove(order)
                    # The next in line may now go, if a slot is left: it looked while this one waited.
                    self._changed.notify_all()
                self._raise_if_stopped()
                self._cpu_used += 1
                self._held += 1
                self._count(need.value, self._cpu_used)
                return Lease(need, None, key, self._clock(), yields=yields, who=SUBMISSION.get())
            # A job that yields stops at its next case for a drain: it fits whatever the drain time.
            expected = None if yields else self._expected_or_longest(key)
            waiting = (order, expected)
            self._gpu_jobs_waiting.append(waiting)
            try:
                lane = self._changed.wait_for(
                    lambda: (
                        self.stopped
                        or (
                            self._lane_for(expected)
                            if self._cpu_used < self.cpu_slots and not self._earlier_gpu_job_fits(order)
                            else None
                        )
                    )
                )
            finally:
                self._gpu_jobs_waiting.remove(waiting)
                self._changed.notify_all()
            self._raise_if_stopped()
            assert isinstance(lane, _Lane)
            lease = Lease(need, lane.gpu, key, self._clock(), yields=yields, who=SUBMISSION.get())
            lane.active[id(lease)] = lease
            self._cpu_used += 1
            self._held += 1
            self._count(need.value, sum(lane.running for lane in self._lanes))
            return lease

    def _earlier_gpu_job_fits(self, order: int) -> bool:
        """Whether a waiting GPU job of an earlier submission could start now: it goes first."""
        return any(
            earlier < order and self._lane_for(expected) for earlier, expected in self._gpu_jobs_waiting
        )

    def _raise_if_stopped(self) -> None:
        if self.stopped:
            raise Stopped("the grading run was stopped")

    def _cpu_free_for_cpu_job(self) -> bool:
        # A GPU test that could start now goes first: an idle GPU is what a class waits for.
        gpu_test_ready = any(self._lane_for(expected) for _, expected in self._gpu_jobs_waiting)
        return self._cpu_used < self.cpu_slots and not gpu_test_ready

    def _lane_for(self, expected: float | None) -> _Lane | None:
        lanes = [lane for lane in self._lanes if self._fits(lane, expected)]
        return min(lanes, key=lambda lane: lane.running) if lanes else None

    def _fits(self, lane: _Lane, expected: float | None) -> bool:
        if lane.window_open or lane.draining or lane.running >= self.gpu_slots:
            return False
        if self.quiet_windows and any(other.window_open for other in self._lanes):
            return False
        turns = lane.profiling or lane.turns_waiting > 0
        if turns and self.turn_slots is not None and lane.running >= self.turn_slots:
            return False
        # Backfilling: with a window asked for, only a job expected to end before its drain.
        return not lane.deadlines or expected is None or self._clock() + expected <= min(lane.deadlines)

    def _drain_time(self, lane: _Lane, asked: float) -> float:
        """When a window asked for now drains its lane: `max_defer` from now, or when the job
        running there that is expected to end last ends, whichever is later, but no later than
        three times `max_defer` (a job that once ran into its time limit must not hold windows
        back that long every time)."""
        ends = [asked + self.max_defer]
        for lease in lane.active.values():
            expected = None if lease.yields else self.expected_seconds(lease.key)
            if expected is not None:
                ends.append(lease.started + lease.parked + expected)
        return min(max(ends), asked + 3 * self.max_defer)

    def _span(self, kind: str, start: float, end: float, lease: Lease) -> None:
        self.stats.spans.append(Span(kind, start, end, lease.gpu, lease.key, lease.who))

    def _parked(self, lease: Lease, asked: float, resumed: float) -> None:
        """`lease`'s process waited from `asked` to `resumed`, lending its slots."""
        lease.parked += resumed - asked
        self.stats.parked_seconds += resumed - asked
        self._span("parked", asked, resumed, lease)

    def _lane(self, gpu: str) -> _Lane:
        return next(lane for lane in self._lanes if lane.gpu == gpu)

    def _release(self, lease: Lease) -> None:
        with self._changed:
            ended = self._clock()
            self._span(lease.need.value, lease.started, ended, lease)
            if lease.key is not None:
                seen = self._durations.setdefault(lease.key, [])
                seen.append(ended - lease.started - lease.parked)
                del seen[:-5]
            self._cpu_used -= 1
            self._held -= 1
            if lease.gpu is not None:  # a GPU job (a GPU test on a machine without one is a CPU job)
                self._lane(lease.gpu).active.pop(id(lease), None)
            self._changed.notify_all()

    def _open_window(self, lane: _Lane, lease: Lease, cancelled: Callable[[], bool]) -> bool:
        with self._changed:
            self._park(lane, lease)
            deadline = self._drain_time(lane, self._clock())
            lane.deadlines.append(deadline)
            self._changed.notify_all()
            granted = False
            while not cancelled():
                now = self._clock()
                if now >= deadline and not lane.draining:
                    lane.draining = True
                    self._changed.notify_all()
                idle = not lane.window_open and lane.running == 0
                job_could_start = self._cpu_used < self.cpu_slots and any(
                    self._fits(lane, expected) for _, expected in self._gpu_jobs_waiting
                )
                if idle and (lane.draining or not job_could_start):
                    granted = True
                    break
                # Short waits, so that a cancelled request is noticed soon.
                self._changed.wait(timeout=0.1 if lane.draining else min(max(deadline - now, 0.01), 0.1))
            lane.deadlines.remove(deadline)
            if granted:
                lane.window_open = True
                self._count("window", 1)
            else:
                self._unpark(lane, lease)
                if lane.windows_asked == 0 and not lane.window_open:
                    lane.draining = False
            self._changed.notify_all()
            return granted

    def _close_window(self, lane: _Lane, lease: Lease, granted: bool) -> None:
        if not granted:
            return
        with self._changed:
            lane.window_open = False
            if lane.windows_asked == 0:
                lane.draining = False  # the batch is done: queued jobs start again
            self._unpark(lane, lease)
            self._changed.notify_all()

    def _park(self, lane: _Lane, lease: Lease) -> None:
        """Parked: the process waits on its gate, doing no CPU or GPU work, so its slots are lent
        to others until it resumes (under self._changed)."""
        lane.active.pop(id(lease), None)
        self._cpu_used -= 1
        self._changed.notify_all()

    def _unpark(self, lane: _Lane, lease: Lease) -> None:
        """Back to running on its slots, which may briefly exceed them: the process is about to
        end or measure, and making it wait for a slot would hold up the next window."""
        lane.active[id(lease)] = lease
        self._cpu_used += 1

    def _count(self, key: str, now: int) -> None:
        self.stats.started[key] = self.stats.started.get(key, 0) + 1
        self.stats.most_at_once[key] = max(self.stats.most_at_once.get(key, 0), now)


T = TypeVar("T")
# How long a wait for a thread's result may block before the waiting thread looks at its
# signals again.
RESULT_POLL = 0.2


def result_of(future: Future[T]) -> T:
    """The future's result, waited for in steps of RESULT_POLL seconds. A wait without a time
    limit blocks in a lock that a signal does not interrupt when the kernel delivers it to
    another thread of the process, as it may: the main thread then handles Ctrl-C or SIGTERM
    only once that result arrives (a stop was seen to take 5.3 s instead of a fraction of one)."""
    while True:
        try:
            return future.result(timeout=RESULT_POLL)
        except TimeoutError:
            if future.done() and isinstance(future.exception(), TimeoutError):
                raise  # the work itself raised it
