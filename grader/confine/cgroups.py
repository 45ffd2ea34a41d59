"""Memory and process limits for each test process of student code, with a cgroup per test.

A confined test (grader/confine/sandbox.py) already cannot outlive its test, see the grader's files or
reach the network. What a PID namespace and rlimits cannot bound is how much memory the test
and its children take together (RLIMIT_AS breaks CUDA, which reserves far more address space
than it uses) and how many processes it starts (RLIMIT_NPROC does not bind root, and counts
every process of the user, not of the test). A cgroup bounds both for the test's whole tree:

- cgroup v2 (one hierarchy at /sys/fs/cgroup): a folder `kit-grader-<pid>` with the memory and
  pids controllers, and in it one folder per test process. The folder goes in the grader's own
  cgroup where that cgroup can hand both controllers to its children (a delegated systemd scope,
  a container's own cgroup); where it cannot (it lacks a controller, or it holds processes, which
  v2 forbids for a cgroup that hands controllers on), in the nearest cgroup above it that can: as
  root on the GPU image, the grader's cgroup has only the memory controller and the root has
  both;
- cgroup v1 (a hierarchy per controller): the same folders in the memory and pids hierarchies.

The test process joins its cgroup before it executes anything (run_limited's launcher,
grader/confine/launch.c), so every process it starts is counted. Where neither can be set up (no right
to write the hierarchy, the controllers not delegated), `detect` says why; the grader then says
so once and grades with the other limits (docs/design/confinement.md, "Confinement").
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")


@dataclass(frozen=True)
class Limits:
    # A GPU test's process holds a CUDA context (a few hundred MB of host memory) and its
    # matrices; compute-sanitizer or ncu around it add their own. 8 GiB leaves room for all of it
    # and still stops one test from taking the machine (16 at once on the GPU machine's 128 GB).
    memory_bytes: int = 8 << 30
    # Threads count as processes here: a CUDA process has a dozen, a sanitizer run a few dozen.
    max_processes: int = 512


@dataclass(frozen=True)
class Cgroups:
    """The grader's cgroup folders (one for v2, one per controller for v1), in which each test
    gets a folder of its own."""

    folders: tuple[Path, ...]
    version: int
    limits: Limits = field(default_factory=Limits)
    note: str = ""  # where they are, when that is not where the grader runs (said once)
    failures: list[str] = field(default_factory=list, compare=False)  # tests that ran without one

    @contextmanager
    def for_test(self, strict: bool = False) -> Iterator[TestCgroup]:
        """A fresh cgroup with the limits set, removed afterwards once every process in it has
        ended; its `procs` are the files the test process writes its pid into. `strict` (detect's
        trial): raising where it cannot be made, instead of giving the test none."""
        name = f"test-{uuid.uuid4().hex[:16]}"
        made: list[Path] = []
        try:
            try:
                for folder in self.folders:
                    if not folder.is_dir():
                        # Swept by another grader that took this one for dead (it cannot see
                        # a grader in another PID namespace): made again.
                        _make_grader_folder(folder, self.version)
                    path = folder / name
                    path.mkdir()
                    made.append(path)
                    _set_limits(path, self.limits)
            except OSError as error:
                for path in reversed(made):
                    _remove(path)
                made = []
                if strict:
                    raise
                # It worked when the run began (detect): one test without its cgroup is better
                # than a class run stopped by an exception. The test's other limits still hold;
                # the first such failure is said (the pipeline shows `failures`).
                self.failures.append(f"a test ran without its cgroup: {error}")
            yield TestCgroup(tuple(made), self.limits)
        finally:
            for path in reversed(made):
                _remove(path)

    def close(self) -> None:
        """Removes the grader's folders (each test's is gone already)."""
        for folder in self.folders:
            _remove(folder)


@dataclass(frozen=True)
class TestCgroup:
    folders: tuple[Path, ...]
    limits: Limits

    @property
    def procs(self) -> tuple[Path, ...]:
        return tuple(folder / "cgroup.procs" for folder in self.folders)

    def limits_hit(self) -> list[str]:
        """Which limits the test's processes ran into, in words for the student; read before the
        cgroup is removed."""
        hit = []
        if _event(self.folders, "memory.events", "oom_kill") or _event(
            self.folders, "memory.oom_control", "oom_kill"
        ):
            hit.append(
                f"the test's processes together used more than {self.limits.memory_bytes >> 20} MiB of "
                "memory, their limit, and were killed"
            )
        if _event(self.folders, "pids.events", "max"):
            hit.append(
                f"the test's processes tried to start more than {self.limits.max_processes} processes "
                "and threads, their limit, and were refused"
            )
        return hit


def _event(folders: tuple[Path, ...], file: str, key: str) -> int:
    """A counter from a cgroup's events file ("key N" lines), 0 where there is none."""
    for folder in folders:
        try:
            lines = (folder / file).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
                return int(parts[1])
    return 0


@dataclass(frozen=True)
class CgroupCheck:
    cgroups: Cgroups | None
    reason: str = ""  # why there are none


def detect(
    limits: Limits | None = None, root: Path = ROOT, own: Path = Path("/proc/self/cgroup")
) -> CgroupCheck:
    """Cgroups for this grading run, tried once with a test folder, or why there are none."""
    limits = limits or Limits()
    try:
        membership = own.read_text()
    except OSError as error:
        return CgroupCheck(None, f"cannot read {own}: {error.strerror}")
    if not (root / "cgroup.controllers").is_file():
        try:
            return _tried(_v1(root, membership, limits))
        except _Unusable as why:
            return CgroupCheck(None, str(why))
        except OSError as error:
            return CgroupCheck(None, f"cannot set up cgroups under {root}: {error.strerror or error}")
    first_reason = last_reason = ""
    for base in _v2_candidates(root, membership):
        try:
            # Only the grader's own cgroup is changed to hand controllers on; one above it is used
            # only where it already does (a cgroup of someone else's is not reconfigured).
            check = _tried(_v2(base, limits, may_enable=not first_reason))
        except _Unusable as why:
            check = CgroupCheck(None, str(why))
        except OSError as error:
            check = CgroupCheck(None, f"cannot set up cgroups under {base}: {error.strerror or error}")
        last_reason = check.reason
        if check.cgroups is not None:
            if first_reason:
                note = f"the test cgroups are in {base}, not in the grader's own cgroup ({first_reason})"
                check = CgroupCheck(replace(check.cgroups, note=note))
            return check
        first_reason = first_reason or check.reason
    if not first_reason:
        return CgroupCheck(None, "cgroup v2 is mounted, but this process's cgroup is not listed")
    if last_reason != first_reason:  # a cgroup above was tried too: why that failed as well
        return CgroupCheck(None, f"{first_reason}; nor above it: {last_reason}")
    return CgroupCheck(None, first_reason)


def _tried(cgroups: Cgroups) -> CgroupCheck:
    """The whole path once: a test's cgroup made, a process moved into it before it executes
    (as run_limited's child does), the cgroup removed."""
    try:
        with cgroups.for_test(strict=True) as cgroup:
            done = subprocess.run(["/bin/true"], preexec_fn=partial(join, cgroup.procs, True), check=False)
        if done.returncode != 0:
            raise OSError(f"/bin/true in a test's cgroup exited with {done.returncode}")
    except (OSError, subprocess.SubprocessError) as error:
        cgroups.close()
        cause = error.strerror if isinstance(error, OSError) and error.strerror else error
        return CgroupCheck(
            None, f"cannot run a process in a test's cgroup under {cgroups.folders[0]}: {cause}"
        )
    return CgroupCheck(cgroups)


def join(procs_files: tuple[Path, ...], strict: bool = False) -> None:
    """In the test process, before it executes the test: moves it into its cgroup (`strict`:
    raising where that fails, as detect's trial must)."""
    pid = str(os.getpid()).encode()
    for procs in procs_files:
        # As in for_test: a failure here would fail the test's start; the run's first process
        # proved the path works (detect), so one that fails now runs without its cgroup.
        try:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        except OSError:
            if strict:
                raise


class _Unusable(Exception):
    pass


def _v2_candidates(root: Path, membership: str) -> list[Path]:
    """Where the grader's v2 folder may go: its own cgroup, then each one above it, the root last."""
    own = next((line[3:] for line in membership.splitlines() if line.startswith("0::")), None)
    if own is None:
        return []
    base = root / own.strip().lstrip("/")
    return [base, *(parent for parent in base.parents if parent.is_relative_to(root))]


def _v2(base: Path, limits: Limits, may_enable: bool) -> Cgroups:
    available = (base / "cgroup.controllers").read_text().split()
    missing = [name for name in CONTROLLERS if name not in available]
    if missing:
        raise _Unusable(f"the {' and '.join(missing)} controller is not delegated to {base}")
    enabled = (base / "cgroup.subtree_control").read_text().split()
    wanted = " ".join(f"+{name}" for name in CONTROLLERS if name not in enabled)
    if wanted and not may_enable:
        raise _Unusable(f"{base} does not hand {wanted} to its children")
    if wanted:
        try:
            (base / "cgroup.subtree_control").write_text(wanted)
        except OSError as error:
            raise _Unusable(
                f"cannot enable {wanted} in {base}/cgroup.subtree_control ({error.strerror}; "
                "a cgroup that holds processes cannot hand controllers to its children unless "
                "it is the root: run the grader in a cgroup of its own, e.g. with systemd-run "
                "--scope, or in a container started with its own cgroup)"
            ) from error
    _sweep_stale(base)
    kit = base / f"kit-grader-{os.getpid()}"
    _make_grader_folder(kit, 2)
    return Cgroups((kit,), 2, limits)


def _make_grader_folder(kit: Path, version: int) -> None:
    kit.mkdir()
    if version == 2:
        try:
            (kit / "cgroup.subtree_control").write_text(" ".join(f"+{name}" for name in CONTROLLERS))
        except OSError:
            _remove(kit)
            raise


def _v1(root: Path, membership: str, limits: Limits) -> Cgroups:
    folders: list[Path] = []
    for name in CONTROLLERS:
        path = None
        for line in membership.splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3 and name in parts[1].split(","):
                path = parts[2]
        mount = root / name
        if path is None or not mount.is_dir():
            raise _Unusable(f"no cgroup v1 {name} hierarchy at {mount}")
        parent = mount / path.strip().lstrip("/")
        _sweep_stale(parent)
        kit = parent / f"kit-grader-{os.getpid()}"
        try:
            _make_grader_folder(kit, 1)
        except OSError:
            for made in folders:
                _remove(made)
            raise
        folders.append(kit)
    return Cgroups(tuple(folders), 1, limits)


def _sweep_stale(parent: Path) -> None:
    """Removes the folders of earlier grading runs whose grader is gone (killed before it could
    remove them): empty cgroups, but they would pile up on a grading machine. Only folders with
    no process left are removed, and nothing is killed: a grader in another PID namespace looks
    dead from here (its pid means nothing), and its tests must go on; if its folder goes, it
    makes it again (Cgroups.for_test)."""
    for folder in parent.glob("kit-grader-*"):
        pid = folder.name.removeprefix("kit-grader-")
        if not pid.isdigit() or _alive(int(pid)):
            continue
        for test in folder.glob("test-*"):
            _rmdir(test)
        _rmdir(folder)


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()  # refused while a process is in it or a folder below it
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _set_limits(path: Path, limits: Limits) -> None:
    writes = {
        "memory.max": str(limits.memory_bytes),  # v2
        "memory.swap.max": "0",  # v2: the limit is not to be dodged by swapping
        "memory.oom.group": "1",  # v2: out of memory kills the test's whole tree, not one process
        "memory.limit_in_bytes": str(limits.memory_bytes),  # v1
        # v1 with swap accounting: memory and swap together, set after the memory limit (it may
        # not be below it), so the limit is not dodged by swapping there either.
        "memory.memsw.limit_in_bytes": str(limits.memory_bytes),
        "pids.max": str(limits.max_processes),  # both
    }
    for name, value in writes.items():
        if (path / name).exists():
            (path / name).write_text(value)


def _remove(path: Path) -> None:
    """rmdir, once the processes in it are gone: they may still be exiting after their test's
    PID namespace ended; any left after a second are killed."""
    for attempt in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == 50:
                _kill_members(path)
            time.sleep(0.02)


def _kill_members(path: Path) -> None:
    if (path / "cgroup.kill").exists():  # v2 (Linux 5.14): every process in it, at once
        try:
            (path / "cgroup.kill").write_text("1")
            return
        except OSError:
            pass
    try:
        pids = (path / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, ValueError):
            pass
