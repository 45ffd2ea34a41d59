"""Where every process of a grading run gets its turn: CPU slots, and GPU lanes with shared and
exclusive holders.

- Every job takes one of `cpu_slots`, GPU jobs too: a test process spends most of its life
  creating a CUDA context, which is CPU work, so there are never more processes than slots
  (measured on an H100 with 16 cores: 16 compiles beside 8 GPU tests made each test process
  about four times slower than alone).
- A shared GPU job (a [gpu] test) also takes one of a GPU's `gpu_slots`; processes of
  different submissions share a GPU this way.
- An exclusive GPU job (a [performance] or [resources] test, whose measurement is device-wide)
  has its GPU to itself. Emptying a GPU costs the time of its longest running test, so
  exclusive jobs are batched: one waits while shared jobs are queued, and runs when the GPU
  falls idle; once one has waited `max_defer` seconds its lane drains (no new shared job starts
  there), and every exclusive job queued on the lane runs, one after the other, before shared
  jobs resume. So exclusive jobs cannot starve, and a whole class pays a few drains instead of
  one per timed test (measured on an H100: a drain per test kept the GPU half idle).
- Every GPU is a lane of its own; a job is given one GPU index, which the run stage passes to
  its process as CUDA_VISIBLE_DEVICES, so the same code uses every GPU of a node.

On a machine without a GPU, GPU jobs are CPU jobs (their tests report themselves skipped).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum


class Need(Enum):
    CPU = "cpu"
    GPU_SHARED = "gpu"
    GPU_EXCLUSIVE = "gpu-exclusive"


def need_for_tags(tags: tuple[str, ...] | list[str]) -> Need:
    """The kind of slot a test needs, from its Catch2 tags (docs/architecture.md)."""
    if "gpu" not in tags:
        return Need.CPU
    if "performance" in tags or "resources" in tags:
        return Need.GPU_EXCLUSIVE
    return Need.GPU_SHARED


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


@dataclass(frozen=True)
class Lease:
    need: Need
    gpu: str | None  # the CUDA_VISIBLE_DEVICES value for the process, None for a CPU slot


@dataclass
class _Lane:
    gpu: str
    shared: int = 0
    exclusive: bool = False
    exclusive_waiting: int = 0
    draining: bool = False  # an exclusive job waited long enough: no shared job starts here


@dataclass
class SchedulerStats:
    """What the benchmark reports: how many jobs of each kind ran, and the most at once."""

    started: dict[str, int] = field(default_factory=dict)
    most_at_once: dict[str, int] = field(default_factory=dict)


class Scheduler:
    def __init__(self, cpu_slots: int, gpus: list[str], gpu_slots: int, max_defer: float = 20.0) -> None:
        if cpu_slots < 1 or gpu_slots < 1:
            raise ValueError("cpu_slots and gpu_slots must be at least 1")
        self.cpu_slots = cpu_slots
        self.gpu_slots = gpu_slots
        self.max_defer = max_defer
        self._lanes = [_Lane(gpu) for gpu in gpus]
        self._cpu_used = 0
        self._shared_waiting = 0
        self._changed = threading.Condition()
        self.stats = SchedulerStats()

    @property
    def total_slots(self) -> int:
        """The most processes at once: every job holds a CPU slot."""
        return self.cpu_slots

    @contextmanager
    def hold(self, need: Need) -> Iterator[Lease]:
        lease = self._acquire(need)
        try:
            yield lease
        finally:
            self._release(lease)

    # -----------------------------------------------------------------------------------------

    def _acquire(self, need: Need) -> Lease:
        if need is not Need.CPU and not self._lanes:
            need = Need.CPU  # no GPU here: the test runs (and skips itself) on a CPU slot
        with self._changed:
            if need is Need.CPU:
                self._changed.wait_for(self._cpu_free_for_cpu_job)
                self._cpu_used += 1
                self._count(need, self._cpu_used)
                return Lease(need, None)
            if need is Need.GPU_SHARED:
                self._shared_waiting += 1
                lane = self._changed.wait_for(
                    lambda: self._free_shared_lane() if self._cpu_used < self.cpu_slots else None
                )
                self._shared_waiting -= 1
                assert lane is not None
                lane.shared += 1
                self._cpu_used += 1
                self._count(need, sum(lane.shared for lane in self._lanes))
                return Lease(need, lane.gpu)
            # Exclusive: queue on the lane with the least ahead of it; run when it is empty and
            # no shared job wants it, or drain it once max_defer has passed.
            lane = min(self._lanes, key=lambda lane: (lane.exclusive_waiting + lane.exclusive, lane.shared))
            lane.exclusive_waiting += 1
            deadline = time.monotonic() + self.max_defer
            while True:
                now = time.monotonic()
                if now >= deadline and not lane.draining:
                    lane.draining = True
                    self._changed.notify_all()
                idle = not lane.exclusive and lane.shared == 0
                if idle and (lane.draining or self._shared_waiting == 0) and self._cpu_used < self.cpu_slots:
                    break
                self._changed.wait(timeout=None if lane.draining else max(deadline - now, 0.01))
            lane.exclusive_waiting -= 1
            lane.exclusive = True
            self._cpu_used += 1
            self._count(need, sum(lane.exclusive for lane in self._lanes))
            return Lease(need, lane.gpu)

    def _cpu_free_for_cpu_job(self) -> bool:
        # A GPU test that could start now goes first: an idle GPU is what a class waits for.
        gpu_test_ready = self._shared_waiting > 0 and self._free_shared_lane() is not None
        return self._cpu_used < self.cpu_slots and not gpu_test_ready

    def _free_shared_lane(self) -> _Lane | None:
        open_lanes = [
            lane
            for lane in self._lanes
            if not lane.exclusive and not lane.draining and lane.shared < self.gpu_slots
        ]
        return min(open_lanes, key=lambda lane: lane.shared) if open_lanes else None

    def _release(self, lease: Lease) -> None:
        with self._changed:
            self._cpu_used -= 1
            if lease.need is not Need.CPU:
                lane = next(lane for lane in self._lanes if lane.gpu == lease.gpu)
                if lease.need is Need.GPU_SHARED:
                    lane.shared -= 1
                else:
                    lane.exclusive = False
                    if lane.exclusive_waiting == 0:
                        lane.draining = False  # the batch is done: shared jobs resume
            self._changed.notify_all()

    def _count(self, need: Need, now: int) -> None:
        key = need.value
        self.stats.started[key] = self.stats.started.get(key, 0) + 1
        self.stats.most_at_once[key] = max(self.stats.most_at_once.get(key, 0), now)
