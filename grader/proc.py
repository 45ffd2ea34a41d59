"""Running one untrusted or long command: own process group, time limit, bounded output.

Shared by build (the compiler) and run (the student's tests). On timeout the whole process
group is killed, because a hung kernel or a forked child would otherwise outlive the grader.
"""

from __future__ import annotations

import math
import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

from .cgroups import join as join_cgroup

MAX_FILE_WRITE_BYTES = 256 << 20  # a runaway writer gets SIGXFSZ instead of filling the disk
MAX_OPEN_FILES = 4096  # a CUDA process opens a few dozen; a descriptor leak stops here


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None when it was killed for running too long; negative = signal
    output: str  # stdout and stderr together, cut in the middle when over the limit
    timed_out: bool
    duration: float


def run_limited(
    command: list[str],
    *,
    cwd: Path,
    timeout: float,
    output_limit: int,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    not_counted: Callable[[], float] | None = None,
    cgroup: tuple[Path, ...] = (),
) -> ProcessResult:
    """Runs command to its end or its time limit. `pass_fds` are handed to the child: closed
    here once it has them, so that only the child holds them. `not_counted`, when given, says
    how many seconds of the run so far the limit must not count (time the process spent waiting
    for the grader); the caller caps it. `cgroup`: the `cgroup.procs` files of the cgroup the
    child joins before it executes the command (grader/cgroups.py)."""
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so killpg reaches every child
            preexec_fn=partial(_limit_resources, timeout, cgroup),
            pass_fds=pass_fds,
        )
    finally:
        for fd in pass_fds:
            os.close(fd)
    capture = _BoundedCapture(output_limit)
    reader = threading.Thread(target=capture.drain, args=(process.stdout,), daemon=True)
    reader.start()
    timed_out = False
    try:
        _wait_within(process, start, timeout, not_counted)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Also after a normal exit: children left running in the group must not outlive it.
        _kill_group(process.pid)
        process.wait()
        reader.join(timeout=5)
        # A process that left the group could still hold the pipe; closing it under the reader
        # would block, so an unfinished reader is abandoned (it is a daemon thread).
        if process.stdout and not reader.is_alive():
            process.stdout.close()
    duration = time.monotonic() - start
    return ProcessResult(None if timed_out else process.returncode, capture.text(), timed_out, duration)


def _wait_within(
    process: subprocess.Popen[bytes], start: float, timeout: float, not_counted: Callable[[], float] | None
) -> None:
    """Waits for the process; raises TimeoutExpired once it has used `timeout` seconds that count.

    Wakes the moment the process ends, through a pidfd where the kernel has them (Linux 5.3):
    Popen.wait(timeout) polls, sleeping up to 50 ms between looks, and a test process lasts
    10 to 100 ms on a machine without a GPU, so the polling cost about a third of each test's
    time there (measured on the 2-core machine: 32 ms for a 15 ms process, 20 ms without)."""
    ended = _pidfd(process.pid)
    try:
        while True:
            left = timeout + (not_counted() if not_counted else 0.0) - (time.monotonic() - start)
            if left <= 0:
                if process.poll() is not None:
                    return
                raise subprocess.TimeoutExpired(process.args, timeout)
            # The uncounted time may grow meanwhile: look again at least every half second.
            step = min(left, 0.5) if not_counted else left
            if ended is None:
                try:
                    process.wait(timeout=step)
                    return
                except subprocess.TimeoutExpired:
                    continue
            if readable(ended, step):
                process.wait()
                return
    finally:
        if ended is not None:
            os.close(ended)


def readable(fd: int, seconds: float) -> bool:
    """Whether `fd` turns readable (or its other end closes) within `seconds` (inf: no limit).
    poll, not select: select cannot watch a descriptor numbered 1024 or above, and a grader with
    many tests in flight holds that many."""
    watch = select.poll()
    watch.register(fd, select.POLLIN)
    return bool(watch.poll(None if math.isinf(seconds) else max(seconds, 0.0) * 1000))


def _pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when the process ends; None where there is none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _limit_resources(timeout: float, cgroup: tuple[Path, ...]) -> None:
    """In the child, before it executes the command."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash should not leave a core file
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_WRITE_BYTES, MAX_FILE_WRITE_BYTES))
    # CPU time, per process: twice the wall-clock limit, which an honest single-threaded process
    # cannot reach (the wall limit ends it first); a process spinning many threads is stopped by
    # SIGXCPU, and SIGKILL a few seconds later.
    # A limit of a day or more (--timeout inf included) leaves CPU time unbounded.
    if math.isfinite(timeout) and timeout < 43200:
        cpu = int(2 * timeout) + 10
        _lower_limit(resource.RLIMIT_CPU, cpu + 5, soft=cpu)
    _lower_limit(resource.RLIMIT_NOFILE, MAX_OPEN_FILES)
    if cgroup:
        join_cgroup(cgroup)


def _lower_limit(which: int, most: int, soft: int | None = None) -> None:
    """Lowers a limit to at most `most` (its soft limit to `soft`, when given), never raising
    one the grader itself runs under: raising a hard limit needs a privilege, and a failure here
    would fail the process's start."""
    current_soft, hard = resource.getrlimit(which)
    cap = most if hard == resource.RLIM_INFINITY else min(most, hard)
    wanted = cap if soft is None else min(soft, cap)
    if current_soft != resource.RLIM_INFINITY:
        wanted = min(wanted, current_soft)
    resource.setrlimit(which, (wanted, cap))


def kill_started_groups() -> int:
    """Kills the process group of every child of this process that leads one (each process
    run_limited started, with whatever it started in turn), and returns how many it signalled:
    what stopping a run (Ctrl-C) needs, since those groups do not get the terminal's SIGINT.
    Other children (a tool run with subprocess.run) share the grader's group and got it."""
    me = os.getpid()
    signalled = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended meanwhile
        pid, parent, group = int(entry.name), int(fields[1]), int(fields[2])
        if parent == me and group == pid:
            _kill_group(pid)
            signalled += 1
    return signalled


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _BoundedCapture:
    """Keeps the first and last output_limit/2 bytes, and keeps draining so the child never blocks."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def drain(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
                self.total += len(chunk)
                room = self.half - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    del self.tail[: max(len(self.tail) - self.half, 0)]
        except (OSError, ValueError):
            pass  # the pipe was closed under us after a kill

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {cut} bytes of output cut ...]\n" if cut > 0 else ""
        return (
            bytes(self.head).decode("utf-8", "replace") + middle + bytes(self.tail).decode("utf-8", "replace")
        )
