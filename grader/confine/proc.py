"""Running one untrusted or long command: own process group, time limit, bounded output.

Shared by build (the compiler) and run (the student's tests). On timeout the whole process
group is killed, because a hung kernel or a forked child would otherwise outlive the grader.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
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
LAUNCH_SOURCE = Path(__file__).resolve().parent / "launch.c"

Limit = tuple[str, int, int, int]  # (the launcher's name for it, the resource, soft, hard)


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
    data_bytes: int | None = None,
) -> ProcessResult:
    """Runs command to its end or its time limit. `pass_fds` are handed to the child: closed
    here once it has them, so that only the child holds them. `not_counted`, when given, says
    how many seconds of the run so far the limit must not count (time the process spent waiting
    for the grader); the caller caps it. `cgroup`: the `cgroup.procs` files of the cgroup the
    child joins before it executes the command (grader/confine/cgroups.py). `data_bytes`: the
    most data memory one process may map (RLIMIT_DATA), for a process not given a GPU lane.

    The limits and the cgroup are applied by the compiled launcher (grader/confine/launch.c), which
    then executes the command, so that Python starts the process with vfork; only where the
    launcher cannot be compiled does a preexec_fn do it, at the cost of a fork of the grader."""
    start = time.monotonic()
    limits = _limits(timeout, data_bytes)
    launch = launcher()
    try:
        process = subprocess.Popen(
            launch_command(launch, limits, cgroup, command) if launch else command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so killpg reaches every child
            preexec_fn=None if launch else partial(_limit_resources, limits, cgroup),
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
        # What the process wrote is drained in milliseconds; the reader outlives that only where
        # a process that left the group still holds the pipe, and what that one writes later is
        # not the test's. One second, not five: stopping a run (Ctrl-C, SIGTERM) waits for
        # these joins, and a stop was seen to take 5.2 s in CI, where 2 s is the test's bound.
        reader.join(timeout=1)
        # Closing the pipe under a reader still blocked on it would block, so an unfinished
        # reader is abandoned (it is a daemon thread).
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


def _limits(timeout: float, data_bytes: int | None = None) -> list[Limit]:
    """The limits of a process run_limited starts."""
    limits: list[Limit] = [
        ("core", resource.RLIMIT_CORE, 0, 0),  # a crash should not leave a core file
        ("fsize", resource.RLIMIT_FSIZE, *_lowered(resource.RLIMIT_FSIZE, MAX_FILE_WRITE_BYTES)),
    ]
    # CPU time, per process: twice the wall-clock limit, which an honest single-threaded process
    # cannot reach (the wall limit ends it first); a process spinning many threads is stopped by
    # SIGXCPU, and SIGKILL a few seconds later.
    # A limit of a day or more (--timeout inf included) leaves CPU time unbounded.
    if math.isfinite(timeout) and timeout < 43200:
        cpu = int(2 * timeout) + 10
        limits.append(("cpu", resource.RLIMIT_CPU, *_lowered(resource.RLIMIT_CPU, cpu + 5, soft=cpu)))
    limits.append(("nofile", resource.RLIMIT_NOFILE, *_lowered(resource.RLIMIT_NOFILE, MAX_OPEN_FILES)))
    # Data memory, per process: an allocation larger than the test's memory limit fails at once
    # (std::bad_alloc), as it does where the kernel refuses to overcommit, instead of filling
    # pages up to the cgroup's limit first where it overcommits (seconds a test, and memory the
    # other tests need). Only for a process not meant to run CUDA (run.py says which): the driver
    # maps address space by the gigabyte, and the kit does not rely on how much of it counts.
    if data_bytes is not None:
        limits.append(("data", resource.RLIMIT_DATA, *_lowered(resource.RLIMIT_DATA, data_bytes)))
    return limits


def _lowered(which: int, most: int, soft: int | None = None) -> tuple[int, int]:
    """A limit lowered to at most `most` (its soft limit to `soft`, when given), never raising
    one the grader itself runs under (and so its children): raising a hard limit needs a
    privilege, and a failure would fail the process's start."""
    current_soft, hard = resource.getrlimit(which)
    cap = most if hard == resource.RLIM_INFINITY else min(most, hard)
    wanted = cap if soft is None else min(soft, cap)
    if current_soft != resource.RLIM_INFINITY:
        wanted = min(wanted, current_soft)
    return wanted, cap


def _limit_resources(limits: list[Limit], cgroup: tuple[Path, ...]) -> None:
    """In the child, before it executes the command: what the launcher does, where there is none."""
    for _, which, soft, hard in limits:
        resource.setrlimit(which, (soft, hard))
    if cgroup:
        join_cgroup(cgroup)


def launch_command(
    launch: Path, limits: list[Limit], cgroup: tuple[Path, ...], command: list[str]
) -> list[str]:
    """`command` started by the launcher under `limits`, in `cgroup` (grader/confine/launch.c)."""

    def value(limit: int) -> str:
        return "inf" if limit == resource.RLIM_INFINITY else str(limit)

    return [
        str(launch),
        *(f"{name}={value(soft)}:{value(hard)}" for name, _, soft, hard in limits),
        *(f"cgroup={procs}" for procs in cgroup),
        "--",
        *command,
    ]


@functools.cache
def launcher() -> Path | None:
    """grader/confine/launch.c compiled, or None where it cannot be (no C compiler): once per process."""
    return compile_helper(LAUNCH_SOURCE)[0]


def compile_helper(source: Path) -> tuple[Path | None, str]:
    """A C helper of the grader (grader/confine/*.c) compiled, or None and why, once per version of
    the source: kept beside it in __pycache__ under its hash, or, where the grader's folder is
    read-only, in a private folder of this run. Compiled to a temporary name and renamed, so
    two graders starting at once never run a half-written file."""
    data = source.read_bytes()
    name = f"kit_{source.stem}-{hashlib.sha256(data).hexdigest()[:16]}"
    cached = source.parent / "__pycache__" / name
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached, ""
    shown = f"grader/{source.parent.name}/{source.name}"  # as the grader's folder names it
    compiler = next((found for cc in ("cc", "gcc", "clang") if (found := shutil.which(cc))), None)
    if compiler is None:
        return None, f"no C compiler (cc, gcc or clang) to build {shown}"
    try:
        cached.parent.mkdir(exist_ok=True)
        folder = cached.parent if os.access(cached.parent, os.W_OK) else None
    except OSError:
        folder = None
    folder = folder or Path(tempfile.mkdtemp(prefix="kit-helper-"))
    partial_file = folder / f".{name}.{os.getpid()}"
    command = [compiler, "-O2", "-std=c11", "-o", str(partial_file), str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"could not compile {shown}: {error}"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return None, f"could not compile {shown} ({said[-1] if said else done.returncode})"
    target = folder / name
    os.replace(partial_file, target)
    return target, ""


def kill_started_groups() -> int:
    """Kills the process group of every child of this process that leads one (each process
    run_limited started, with whatever it started in turn), and returns how many it signalled:
    what stopping a run (Ctrl-C) needs, since those groups do not get the terminal's SIGINT.
    The inspection tools lead groups of their own too; other children (a setup check run with
    subprocess.run) share the grader's group and got it."""
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
