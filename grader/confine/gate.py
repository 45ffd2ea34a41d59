"""A test process's GPU gate: how it asks the scheduler for its GPU to itself while it measures.

A measurement that the whole device sees (a kernel's time, the device's free memory) must not
share the GPU with other test processes; the rest of a test's life (creating its CUDA context,
making its problem, checking results) may. So every GPU test starts on a shared slot, and the
kit's measuring code (kit::ExclusiveGpu, common/include/kit/gpu_gate.hpp) asks through two
pipes whose descriptors the environment variable KIT_GPU_GATE names, "<request>,<grant>": it
writes 'A' on the request pipe and waits for 'G' on the grant pipe, and writes 'R' when done.
A count of Nsight Compute needs less than the GPU alone: only that no other process profiles the
GPU meanwhile ('P' instead of 'A': the scheduler's profiler turn, which drains nothing).
A judge that runs several test cases writes 'C' before each (kit::between_test_cases) and waits
for 'G': the scheduler holds it back there while its GPU is emptied for a window
(Scheduler.checkpoint), so that a window waits for the case under way, not for the whole process.

A thread here answers, holding the scheduler's window (or profiler turn) between 'A' (or 'P')
and 'R'. A process that ends, or closes its end, closes its window; one that asks again while
holding it is answered at once.
The time a process spends waiting for its window is kept (`uncounted`): the test's time limit does
not count it, up to a cap (grader/pipeline/run.py), since the wait is the class's doing, not the test's.
Nor does the limit count what came before the case under way (`uncounted`): a process of several
cases has one case's limit, counted from the case's 'C'.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack

from .proc import readable

ENV_NAME = "KIT_GPU_GATE"
ASK, PROFILE, GRANT, DONE, NEXT_CASE = b"A", b"P", b"G", b"R", b"C"

OpenWindow = Callable[[Callable[[], bool]], AbstractContextManager[bool]]
# Waits until the process may start its next case; False when `cancelled` turned true meanwhile.
Checkpoint = Callable[[Callable[[], bool]], bool]


class GpuGate:
    """One test process's gate. `open_window(cancelled)` is the scheduler's window for the
    process's lease; `cancelled` turns true once the process has ended."""

    def __init__(
        self,
        open_window: OpenWindow,
        open_profiler_turn: OpenWindow | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        """`checkpoint`: the scheduler's wait before a case, for a judge (kit code); without one, a
        'C' is answered at once and changes nothing, so that a process holding student code
        cannot move its time limit with it."""
        self._open_window = open_window
        self._open_profiler_turn = open_profiler_turn or open_window
        self._checkpoint = checkpoint
        self._request_read, self._request_write = os.pipe()
        self._grant_read, self._grant_write = os.pipe()
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._waited = 0.0
        self._waiting_since: float | None = None
        self._opened = time.monotonic()
        self._case_began: float | None = None  # when the case under way was let start ('C')
        self._waited_in_case = 0.0  # window waits since then
        self._between_cases = False  # waiting for the scheduler's word to start the next case
        self.cases_started = 0  # the 'C's answered: the case under way is the last of them

    def uncounted(self, cap: float) -> float:
        """Seconds of the process's life its time limit must not count: before its first 'C', the
        window waits (at most `cap`, since the process could keep asking); after one, everything up
        to the latest 'C' and the window waits of the case under way (at most `cap`)."""
        now = time.monotonic()
        if self._between_cases:
            return now - self._opened  # held back before its next case: none of it counts yet
        since = self._waiting_since
        waiting = now - since if since is not None else 0.0
        if self._case_began is None:
            return min(self._waited + waiting, cap)
        return self._case_began - self._opened + min(self._waited_in_case + waiting, cap)

    def env(self) -> dict[str, str]:
        return {ENV_NAME: f"{self._request_write},{self._grant_read}"}

    def child_fds(self) -> tuple[int, int]:
        """The child's ends, for Popen(pass_fds=...); the caller closes them once it has spawned."""
        return (self._request_write, self._grant_read)

    def __enter__(self) -> GpuGate:
        self._opened = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """After the process has ended: closes any window it left open and every descriptor."""
        self._ended.set()
        if self._thread.is_alive():
            self._thread.join()
        for fd in (self._request_read, self._grant_write):
            _close(fd)

    def _serve(self) -> None:
        with ExitStack() as window:
            holding = False
            while not self._ended.is_set():
                ready = readable(self._request_read, 0.1)
                if not ready:
                    continue
                try:
                    data = os.read(self._request_read, 64)
                except OSError:
                    return
                if not data:
                    return  # every copy of the request pipe's write end is closed
                for byte in data:
                    if byte in (ASK[0], PROFILE[0]):
                        if not holding:
                            self._waiting_since = time.monotonic()
                            opener = self._open_window if byte == ASK[0] else self._open_profiler_turn
                            try:
                                opened = window.enter_context(opener(self._ended.is_set))
                            finally:
                                self._end_wait()
                            if not opened:
                                return  # the process ended while it waited
                            holding = True
                        if not _send(self._grant_write, GRANT):
                            return
                    elif byte == NEXT_CASE[0]:
                        if not holding and self._checkpoint is not None:
                            self._between_cases = True
                            try:
                                go_on = self._checkpoint(self._ended.is_set)
                            finally:
                                self._case_began = time.monotonic()
                                self._between_cases = False
                            if not go_on:
                                return
                            self._waited_in_case = 0.0
                            self.cases_started += 1
                        if not _send(self._grant_write, GRANT):
                            return
                    elif byte == DONE[0] and holding:
                        window.close()
                        holding = False
                    # Any other byte is ignored: only the kit writes here on purpose.

    def _end_wait(self) -> None:
        """A wait for a window or a profiler turn is over."""
        assert self._waiting_since is not None
        waited = time.monotonic() - self._waiting_since
        self._waiting_since = None
        self._waited += waited
        self._waited_in_case += waited


def _send(fd: int, data: bytes) -> bool:
    try:
        os.write(fd, data)
        return True
    except OSError:  # BrokenPipeError: the process is gone
        return False


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
