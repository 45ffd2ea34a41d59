"""Stage 4, run: a lab's tests in one judge process where they may share one, the others each in
its own, every result read from Catch2's XML reporter.

A CUDA fault is sticky for the rest of its process (docs/architecture.md), but a split lab's faults
happen in the worker, so its tests not tagged [alone] share a judge process (run_test_group), a case
keeping the workers of the case before it unless that case ended them or changed them; whatever
that process does not settle runs alone.
The result comes only from the XML report Catch2 writes for the exact test requested, through
a pipe the grader opened for that process alone (no file the student's code could find, open
or leave behind: the object inspection refuses the calls that could reach the pipe); an exit
code of 0 without that report is a crash, never a pass.
"""

from __future__ import annotations

import contextvars
import os
import re
import signal
import stat
import tempfile
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import nullcontext
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from ..confine.cgroups import Cgroups, Limits
from ..confine.gate import GpuGate
from ..confine.proc import ProcessResult, readable, run_limited
from ..confine.sandbox import Sandbox
from ..engine.schedule import Lease, Need, Scheduler, need_for_tags, result_of
from ..errors import GraderError


class Status(StrEnum):
    """How a test ended. A str, so the reports and score.json write the bare word."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"  # it skipped itself (a [gpu] test without a usable GPU, say)
    CRASHED = "crashed"  # no result: killed, or no report for this test
    TIMED_OUT = "timed_out"
    MISSING = "missing"  # the test executable does not contain it
    NOT_BUILT = "not_built"  # its lab was not built (or not graded), so it did not run


EXIT_ALL_SKIPPED = 4  # Catch2's exit code when every selected test was skipped
# Catch2's exit codes when a selected test failed: 42 from 3.5 on (checked with 3.7); 3.4, on the
# GPU image, exits with the count of failed assertions, at most 255.
EXIT_FAILED = range(1, 256)
METRIC_LINE = re.compile(r"^kit-metric\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")
ENV_KEPT_PREFIXES = ("NVIDIA_",)
# Set for every test process. One hardware work queue per CUDA context instead of eight: eight
# contexts at once were created at 5.9 a second with eight queues each and at 12.4 a second with
# one (context 0.89 s against 0.28 s; bench/context_probe on the H100), and the cost of starting
# CUDA processes is what bounds a GPU's test throughput. The kit's tests and timer use one
# stream, where the count changes nothing; work a launcher put on another stream is queued in
# order with the timer's events, so it is timed (CTest, without this, checks the timer's own
# host-clock fallback for that case).
# And CUDA numbers the GPUs as nvidia-smi does, by PCI address (its default puts the fastest
# first): a lane is an nvidia-smi index, which places its node and its PCI address for the judge
# (grader/confine/sandbox.py), so the judge's context must be on that GPU too where a node's GPUs
# differ.
TEST_ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
# A split lab's tests, but for those tagged [alone], run in one judge process for each lab of a
# submission (run_test_group; --tests-per-process N: N to a process, 1 each alone): the judge's
# process and CUDA context, and its workers' while their cases pass cleanly, are made once for
# the lab, not once a test, and making them is what bounds a GPU's rate of tests. The judge stops
# before each case while its GPU is emptied for another process's measurement
# (Scheduler.checkpoint), so a window waits for a case, not for the whole process. A test that
# runs a sanitizer over the student's code, asks for a measuring window, or counts what the
# student's worker holds keeps a process of its own, so that none counts what an earlier case
# left (the kit's tag rule, grader/tests/test_kit_rubrics.py). A count of Nsight Compute asks
# for its profiling turn mid-case and may share. Without the stops,
# eight to a process graded slower than each test alone (bench/RESULTS.md, "Tests per process").
TESTS_PER_JUDGE = 0  # 0: every shareable test of the lab in one process
ALONE_TAG = "alone"
# Elements whose text explains a failure, in the order Catch2 writes them.
MESSAGE_TAGS = ("Info", "Failure", "Exception", "FatalErrorCondition")
# Elements whose text the student's code may have written (an exception it threw, a signal):
# their "hint:" lines are not the kit's, so they are never taken as hints.
FOREIGN_TAGS = ("Exception", "FatalErrorCondition")
# The kit's hints for CUDA errors that kit::check_cuda reports in an exception, by the error's
# name in its text ("<call> failed: <name> (...)"); the C++ side gives the name only.
LAUNCH_HINT = (
    "the launch configuration is invalid: every grid and block dimension must be at least 1 "
    "(round the block count up: (width + block - 1) / block), a block may hold at most 1024 threads, "
    "and its shared memory, static and dynamic together, must fit the device's limit per block."
)
CUDA_ERROR_HINTS = {
    "kernel launch failed: cudaErrorInvalidConfiguration": LAUNCH_HINT,
    "kernel launch failed: cudaErrorInvalidValue": LAUNCH_HINT,
    # At launch this error means the block asks for more registers than one block may hold
    # (seen on an H200: a lab 03 kernel that ptxas gave 78 registers, launched with 1024 threads).
    "kernel launch failed: cudaErrorLaunchOutOfResources": "the block asks for more registers than "
    "one block may use: threads per block times the kernel's registers per thread must fit 65,536 "
    "(64 each at 1024 threads). nvcc -Xptxas -v prints the kernel's count; keep fewer values live, or "
    "put __launch_bounds__(threads per block) on the kernel so the compiler fits it "
    "(lab 06's README section 4.2).",
    # An observation (score.OBSERVATION_MARK): the fault proves an access outside the memory the
    # kernel was given, not which one, nor that a guard rather than an index or a size is wrong.
    "failed: cudaErrorIllegalAddress": "a kernel read or wrote outside the memory it was given; the kit "
    "cannot tell which access from the fault alone (compute-sanitizer --tool memcheck shows the "
    "faulting line, and the other tests' hints may name the cause).",
}
# The hint of a launch that asked for more registers than a block may hold: nothing ran at that
# configuration. A cause proven from what the kernel computed at the others is fixed first
# (score.fix_first), since fixing the arithmetic changes what the kernel needs. Lab 04's mutant
# that resets Pvalue in every phase is one: ptxas gave its 32-wide square kernel 79 registers
# for sm_90 where the reference's has 32, so that 1024-thread block cannot launch, and the reset
# is what to fix. (An invalid configuration, LAUNCH_HINT, is the launcher's and stays a cause
# like any other: lab 05's static tiles beside the dynamic buffer fail that way.)
REGISTER_LIMIT_HINT = CUDA_ERROR_HINTS["kernel launch failed: cudaErrorLaunchOutOfResources"]
NO_GPU_PREFIX = "no usable GPU"  # how KIT_REQUIRE_GPU's skip begins (common/include/kit/testing.hpp)
REPORT_LIMIT = 4 << 20  # bytes of XML report kept; a longer one is cut, so it fails to parse
MESSAGE_LIMIT = 4000  # characters of one failure message kept for the reports
MESSAGES_PER_TEST = 20  # messages kept per test; the rest are counted


@dataclass(frozen=True)
class RunConfig:
    timeout: float = 120.0  # seconds per test
    output_limit: int = 64 * 1024  # bytes of console output kept per test
    sandbox: Sandbox | None = None  # how test processes are confined; None: not at all (make check)
    cgroups: Cgroups | None = None  # a cgroup per test process, with memory and process limits
    # A split lab's shareable tests run this many to a judge process (run_test_group); 1: each
    # alone; 0: all of them in one.
    tests_per_process: int = TESTS_PER_JUDGE


# Alike in shape only to Kit in rubric.py: a frozen record with a property derived from its fields.
@dataclass(frozen=True)
class ListedTest:
    name: str
    tags: tuple[str, ...]

    @property
    def needs_gpu(self) -> bool:
        """Tagged [gpu]: it runs on a GPU lane, and skips itself where there is no usable GPU."""
        return need_for_tags(self.tags) is Need.GPU


@dataclass
class Outcome:
    name: str
    status: Status
    messages: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    skip_reason: str | None = None
    duration: float = 0.0
    output: str = ""  # the console output, bounded
    needs_gpu: bool = False  # its listing tags it [gpu] (False for a test that was not listed)
    # The processes starting CUDA it had its judge start, by kind (kit/process_log.hpp: "worker",
    # "reference worker", "tool", "judge"): what the node's CUDA starts go to (grader bench).
    processes: dict[str, int] = field(default_factory=dict)


def scrubbed_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Only what a CUDA program needs: no tokens, no grader settings, a private HOME and TMPDIR;
    `extra` (the GPU the scheduler chose, the submission's data files) is set last."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key in ENV_KEPT or key.startswith(ENV_KEPT_PREFIXES)
    }
    env.setdefault("PATH", "/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = str(home)
    env["TMPDIR"] = str(home)
    env.update(TEST_ENV)
    env.update(extra or {})
    return env


def list_tests(exe: Path, work_dir: Path, config: RunConfig) -> list[ListedTest]:
    result = run_limited(
        [str(exe), "--list-tests", "--reporter", "xml"],
        cwd=work_dir,
        timeout=config.timeout,
        output_limit=8 << 20,
        env=scrubbed_env(work_dir),
    )
    if result.returncode != 0:
        why = "timed out" if result.timed_out else f"exited with {_describe_exit(result.returncode)}"
        raise GraderError(
            f"{exe.name} --list-tests {why}; rebuild it and run it by hand to see why:\n"
            + result.output[-2000:]
        )
    return parse_listing(result.output, exe.name)


def parse_listing(xml_text: str, exe_name: str = "the test executable") -> list[ListedTest]:
    start = xml_text.find("<?xml")
    start = xml_text.find("<MatchingTests") if start < 0 else start
    try:
        root = ET.fromstring(xml_text[max(start, 0) :])
    except ET.ParseError as error:
        raise GraderError(
            f"{exe_name} --list-tests --reporter xml printed no readable XML ({error})"
        ) from None
    tests = []
    for case in root.iter("TestCase"):
        name = (case.findtext("Name") or "").strip()
        tags = re.findall(r"\[([^\]]*)\]", case.findtext("Tags") or "")
        tests.append(ListedTest(name, tuple(tags)))
    return tests


def run_tests(
    exe: Path,
    tests: list[ListedTest],
    work_dir: Path,
    config: RunConfig,
    scheduler: Scheduler,
    pool: Executor,
    env: dict[str, str] | None = None,
    progress: Callable[[str], None] = lambda message: None,
    worker: Path | None = None,
) -> dict[str, Outcome]:
    """Runs every test in its own process, as the scheduler allows: [gpu] tests on a GPU lane,
    sharing it but for the windows their gate asks for, the others on CPU slots. With a worker
    (a split lab), `exe` is the kit's judge and `worker` the submission's code (run_test)."""

    reruns = RerunBudget()

    def gate_for(lease: Lease) -> tuple[GpuGate, dict[str, str]]:
        """A test process's gate (its windows and profiler turns on the lease's GPU, and, for a
        judge, the scheduler's word before each case) and its environment."""
        judge = worker is not None
        checkpoint = (lambda cancelled: scheduler.checkpoint(lease, cancelled)) if judge else None
        gate = GpuGate(
            lambda cancelled: scheduler.window(lease, cancelled),
            lambda cancelled: scheduler.profiler_turn(lease, cancelled),
            checkpoint,
        )
        gpu_env = (
            {
                "CUDA_VISIBLE_DEVICES": lease.gpu,
                **(config.sandbox.lane_env(lease.gpu) if config.sandbox else {}),
            }
            if lease.gpu is not None
            else {}
        )
        return gate, {**(env or {}), **gpu_env}

    def one(test: ListedTest) -> Outcome:
        if test.needs_gpu and not scheduler.has_gpus and scheduler.no_gpu_reason is not None:
            # Another [gpu] test of this run already found no usable GPU here: thousands of
            # processes would only say so again (on 2 cores, most of a sample class's time).
            return Outcome(test.name, Status.SKIPPED, skip_reason=scheduler.no_gpu_reason, needs_gpu=True)
        with scheduler.hold(need_for_tags(test.tags), key=f"{exe.name}/{test.name}") as lease:
            progress(f"running {test.name}")
            if lease.gpu is None:
                outcome = run_test(exe, test.name, work_dir, config, env, worker=worker)
            else:
                gate, gpu_env = gate_for(lease)
                outcome = run_test(exe, test.name, work_dir, config, gpu_env, gate, worker)
                if ran_out_of_device_memory(outcome) and reruns.take():
                    # Another submission's test on this GPU may have held the memory: once more,
                    # with the GPU to itself for the whole process, before the failure counts.
                    progress(f"running {test.name} again, alone on the GPU")
                    with scheduler.window(lease):
                        outcome = run_test(exe, test.name, work_dir, config, gpu_env, worker=worker)
        outcome.needs_gpu = test.needs_gpu
        if (
            test.needs_gpu
            and not scheduler.has_gpus
            and outcome.status is Status.SKIPPED
            and (outcome.skip_reason or "").startswith(NO_GPU_PREFIX)
        ):
            # The grader's own words, not the test's: a student's test could skip with any text,
            # and this reason goes into every later student's feedback.
            scheduler.no_gpu_reason = f"{NO_GPU_PREFIX}: an earlier [gpu] test of this run found none here"
        return outcome

    def together(batch: list[ListedTest]) -> dict[str, Outcome]:
        """Tests of a split lab, none [alone], in one judge process (run_test_group) on one lease,
        a GPU's where any of them needs one; each test the group did not settle runs alone
        afterwards, as `one` runs it."""
        assert worker is not None  # only a split lab's tests are grouped
        need = Need.GPU if scheduler.has_gpus and any(test.needs_gpu for test in batch) else Need.CPU
        key = f"{exe.name}/{len(batch)} tests from {batch[0].name}"
        with scheduler.hold(need, key=key, yields=True) as lease:
            progress(f"running {len(batch)} tests in one process")
            gate, group_env = gate_for(lease)
            names = [test.name for test in batch]
            settled = run_test_group(exe, names, work_dir, config, group_env, gate, worker)
        outcomes = {}
        for test in batch:
            outcome = settled.get(test.name)
            if outcome is None or ran_out_of_device_memory(outcome):
                outcome = one(test)  # what the group did not settle, alone as ever
            outcome.needs_gpu = test.needs_gpu
            outcomes[test.name] = outcome
        return outcomes

    size = config.tests_per_process if worker is not None else 1
    grouped = [test for test in tests if _shareable(test, scheduler.has_gpus)] if size != 1 else []
    grouped = grouped if len(grouped) > 1 else []
    per_group = size or max(len(grouped), 1)  # 0: all of them in one
    # Each in a copy of this thread's context: the tests run for the submission this thread does
    # (SUBMISSION_ORDER, engine/schedule.py).
    singles = {
        test.name: pool.submit(contextvars.copy_context().run, one, test)
        for test in tests
        if test not in grouped
    }
    groups = [
        pool.submit(contextvars.copy_context().run, together, grouped[start : start + per_group])
        for start in range(0, len(grouped), per_group)
    ]
    results = {name: result_of(future) for name, future in singles.items()}
    for future in groups:
        settled: dict[str, Outcome] = result_of(future)
        results.update(settled)
    return {test.name: results[test.name] for test in tests}


def _shareable(test: ListedTest, has_gpus: bool) -> bool:
    """Whether a split lab's test may run in a judge process with others: not [alone], a name that
    Catch2's --input-file reads as written, and, where there is no GPU, not [gpu] (such tests
    skip; `one` reports all but the first without a process)."""
    return ALONE_TAG not in test.tags and _plain_name(test.name) and (has_gpus or not test.needs_gpu)


# What the kit prints (once, on stderr) when a test process asks for more device memory than
# one test may hold (common/src/device_memory.cpp).
DEVICE_MEMORY_REFUSED = "kit: a cudaMalloc of "


# Runs again alone on the GPU, for one lab of one submission: a student's code can always make a
# test fail as if out of memory (it can throw CUDA's error itself), and each such run holds the
# GPU from every classmate, so a submission gets few.
RERUNS_PER_LAB = 2


class RerunBudget:
    """The alone-on-the-GPU runs left to one lab of one submission (RERUNS_PER_LAB)."""

    def __init__(self, runs: int = RERUNS_PER_LAB) -> None:
        self._left = runs
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


def ran_out_of_device_memory(outcome: Outcome) -> bool:
    """A GPU test that failed with CUDA's out-of-memory error, as its report says. Not what the
    process printed: the student's code prints there too."""
    if outcome.status not in (Status.FAILED, Status.CRASHED):
        return False
    text = "\n".join(outcome.messages)
    if DEVICE_MEMORY_REFUSED in outcome.output:
        return False  # over its own limit (kit/device_memory.hpp): the test's doing, not a classmate's
    return "cudaErrorMemoryAllocation" in text or "out of memory" in text


def run_test(
    exe: Path,
    name: str,
    work_dir: Path,
    config: RunConfig,
    env: dict[str, str] | None = None,
    gate: GpuGate | None = None,
    worker: Path | None = None,
) -> Outcome:
    """One test case in its own process: the one place where the engine starts a test alone.
    With a gate, the process may ask for its GPU to itself while it measures (grader/confine/gate.py).

    With a worker (a split lab, docs/design/engine.md, "Judge and worker") the test process is the
    kit's judge, which loads no student code and runs as it is; the student's code runs only in
    the worker it starts, and in the probes it runs, each confined by the command the judge is
    given (KIT_WORKER_COMMAND). Without one, the test process itself holds the student's code
    and is confined."""
    result, report, limits_hit, started = _run_judge(exe, [name], work_dir, config, env, gate, worker)
    outcome = outcome_from(name, result, report, config)
    outcome.processes = _all_kinds(started)  # one test: every start is its own
    if outcome.status is not Status.PASSED:
        outcome.messages.extend(limits_hit)
    return outcome


def run_test_group(
    exe: Path,
    names: list[str],
    work_dir: Path,
    config: RunConfig,
    env: dict[str, str],
    gate: GpuGate,
    worker: Path,
) -> dict[str, Outcome]:
    """Several test cases of a split lab in one judge process, in the listing's order: what a GPU
    test costs is mostly making processes and CUDA contexts, which the driver makes one at a
    time, and a split lab's test makes up to two (the judge's and its worker's); they are made
    once here. A case meets new workers where the case before it ended the student's worker (a
    crash, a hang, a sticky error), left a call mid-way or a kernel running, gained device memory
    or set what outlives a call (common/src/fresh_workers.cpp), so no case's trouble reaches the next; what
    the student's code keeps for itself carries over (fresh_workers.cpp says what, and what shows
    it changes no sample student's score).
    Each case has one test's time limit, counted from its start (the judge says 'C' on its gate
    before each: GpuGate.uncounted).

    Returns the outcomes the report settles; the caller runs the others alone. After a time-out
    of the judge, the cases its report finished are settled, and the case under way is timed out
    (it had one test's whole limit from its start, as alone); after a crash, those but the last
    (a crash's case may be written as a failure where alone it is a crash); after an exit code
    that disagrees with the report, none. A case the report lacks, or that ran past one test's
    limit, is not settled either."""
    result, report, limits_hit, started = _run_judge(exe, names, work_dir, config, env, gate, worker)
    killed = result.timed_out or result.returncode is None or result.returncode < 0
    root = _parse_report(report, cut_short=killed)
    if root is None and not result.timed_out:
        return {}
    cases = {case.get("name"): case for case in root.iter("TestCase")} if root is not None else {}
    if killed and not result.timed_out and cases:
        cases.pop(list(cases)[-1])
    settled = {}
    for name in names:
        case = cases.get(name)
        overall = case.find("OverallResult") if case is not None else None
        if case is None or overall is None:
            continue
        seconds = float(overall.get("durationInSeconds") or result.duration / len(names))
        if seconds > config.timeout:
            continue  # over one test's time limit: alone it would have timed out, so it runs alone
        outcome = Outcome(name, Status.FAILED, duration=seconds, output=result.output)
        outcome.processes = dict(started.get(name, {}))
        _fill_from_xml(outcome, case)
        if overall.get("success") == "true":
            skipped = overall.get("skips", "0") not in ("", "0")
            outcome.status = Status.SKIPPED if skipped else Status.PASSED
        else:
            outcome.messages.extend(limits_hit)
        settled[name] = outcome
    if result.timed_out:
        under_way = _case_under_way(names, list(cases), gate.cases_started)
        if under_way is not None:
            settled[under_way] = _timed_out(under_way, result, config, config.timeout)
    if killed:
        return settled
    # Catch2 exits with 42 (3.4: 1 to 255) when a case failed, 4 when every case skipped, else 0:
    # another code means the process ended some other way than its report says, and alone that
    # is never a pass. (Taking only 42 here sent every group with a failing case on the GPU
    # image's 3.4 to run its tests again alone.)
    failed = any(not _passed(case) for case in cases.values())
    if result.returncode not in (EXIT_FAILED if failed else (0, EXIT_ALL_SKIPPED)):
        return {}
    return settled


def _case_under_way(names: list[str], finished: list[str | None], started: int) -> str | None:
    """The case a judge was running when it was stopped: the one after those its report
    finished (Catch2 writes and flushes each case's element as it ends), where they are the first
    of `names` in order and the judge had started exactly one more ('C' on its gate)."""
    done = len(finished)
    if done >= len(names) or started != done + 1 or finished != names[:done]:
        return None
    return names[done]


def _timed_out(name: str, result: ProcessResult, config: RunConfig, seconds: float | None = None) -> Outcome:
    seconds = result.duration if seconds is None else seconds
    outcome = Outcome(name, Status.TIMED_OUT, duration=seconds, output=result.output)
    outcome.messages.append(
        f"timed out after {config.timeout:g} s; the test's processes were killed "
        "(look for a kernel or loop that never ends)"
    )
    return outcome


def _parse_report(report: str, cut_short: bool) -> ET.Element | None:
    """A group's XML report; for a process `cut_short` (killed), the cases it finished: Catch2
    writes each case's element when the case ends, so the text up to the last one is closed."""
    try:
        return ET.fromstring(report) if report.strip() else None
    except ET.ParseError:
        pass
    end = report.rfind("</TestCase>")
    if not cut_short or end < 0:
        return None
    try:
        return ET.fromstring(report[: end + len("</TestCase>")] + "\n</Catch2TestRun>\n")
    except ET.ParseError:
        return None


def _passed(case: ET.Element) -> bool:
    overall = case.find("OverallResult")
    return overall is not None and overall.get("success") == "true"


def _plain_name(name: str) -> bool:
    """A name Catch2's --input-file takes as written: it reads a leading # as a comment, "exclude:"
    and ~ as exclusions, \\ as an escape, * as a wildcard, a comma as two names, and [ as a tag."""
    return (
        not re.search(r"[,\\*\[\]]", name)
        and not name.startswith(("#", "~", "exclude:"))
        and name.strip() == name
    )


def _run_judge(
    exe: Path,
    names: list[str],
    work_dir: Path,
    config: RunConfig,
    env: dict[str, str] | None,
    gate: GpuGate | None,
    worker: Path | None,
) -> tuple[ProcessResult, str, list[str], dict[str, dict[str, int]]]:
    """Runs `names` (one test case, or a group) in one process: its result, its XML report, the
    cgroup limits it ran into, and the processes starting CUDA it started, by test and kind."""
    run_dir = Path(tempfile.mkdtemp(prefix="test-", dir=work_dir))
    if len(names) == 1:
        selection = [names[0]]
    else:  # one name a line, each taken whole (Catch2 quotes them)
        listed = run_dir / "tests.txt"
        listed.write_text("".join(f"{name}\n" for name in names), encoding="utf-8")
        selection = ["--input-file", str(listed), "--order", "decl", "--durations", "yes"]
    lane = (env or {}).get("CUDA_VISIBLE_DEVICES")  # the GPU lane's, None on a CPU slot
    with ReportPipe() as report, gate or nullcontext():
        command = [
            str(exe),
            *selection,
            "--reporter",
            f"xml::out=/dev/fd/{report.child_fd}",
            "--reporter",
            "console::colour-mode=none",
        ]
        environment = scrubbed_env(run_dir, {**(env or {}), **(gate.env() if gate else {})})
        if worker is not None:
            # Only a judge logs (never a process holding the student's code: it could make the file
            # a pipe the grader would wait on); the log is read as a plain file, bounded.
            environment["KIT_PROCESS_LOG"] = str(run_dir / PROCESS_LOG)
            environment.update(worker_env(worker, exe, run_dir, config, env or {}))
        elif config.sandbox is not None:
            command = config.sandbox.wrap(
                command,
                run_dir,
                _readable(exe, work_dir, env or {}),
                gpu=lane,
            )
        limits_hit: list[str] = []
        # A process on a CPU slot (not given a lane's GPU) is held to the test's memory limit in
        # data memory as well, so that an allocation past it fails at once (grader/confine/proc.py,
        # _limits). A process on a GPU lane is not: CUDA's driver maps address space by the
        # gigabyte. (A CPU-slot process that starts CUDA anyway still can: lab 02's GPU tests
        # passed under this limit on an H200.)
        memory = (config.cgroups.limits if config.cgroups is not None else Limits()).memory_bytes
        data_bytes = memory if lane is None else None
        with config.cgroups.for_test() if config.cgroups is not None else nullcontext() as cgroup:
            result = run_limited(
                command,
                cwd=run_dir,
                timeout=config.timeout,
                output_limit=config.output_limit,
                env=environment,
                pass_fds=report.hand_over() + (gate.child_fds() if gate else ()),
                # Waiting for a measuring window is the class's queue, not the test's time, nor
                # are a group's cases before the one under way; capped, since a process that holds
                # student code holds the gate's pipes too and could keep asking.
                not_counted=(lambda: min(gate.uncounted(config.timeout), config.timeout * len(names)))
                if gate
                else None,
                cgroup=cgroup.procs if cgroup is not None else (),
                data_bytes=data_bytes,
            )
            if cgroup is not None:
                limits_hit = cgroup.limits_hit()
    return result, report.text, limits_hit, processes_started(run_dir / PROCESS_LOG)


# Where a judge logs the processes starting CUDA it starts (kit/process_log.hpp), in its folder.
PROCESS_LOG = "processes.log"


PROCESS_LOG_LIMIT = 1 << 20


def processes_started(log: Path) -> dict[str, dict[str, int]]:
    """A judge's process log read: for each test named in it, how many of each kind it started.
    Missing, unreadable or not a plain file (never followed through a link, never waited on):
    none, since a count is lost, never a test. Its first PROCESS_LOG_LIMIT bytes."""
    started: dict[str, dict[str, int]] = {}
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return started
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return started
        text = os.read(fd, PROCESS_LOG_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return started
    finally:
        os.close(fd)
    for line in text.split("\n"):  # not splitlines(): a test's name may hold other separators
        kind, _, test = line.partition("\t")
        if kind:
            kinds = started.setdefault(test, {})
            kinds[kind] = kinds.get(kind, 0) + 1
    return started


def _all_kinds(started: dict[str, dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for kinds in started.values():
        for kind, count in kinds.items():
            total[kind] = total.get(kind, 0) + count
    return total


# What a student's worker may write, in all: a file system of its own of this size (its pages
# count in the test's memory limit), so no test fills the grading machine's disk.
WORKER_SCRATCH_BYTES = 64 << 20


def worker_env(
    worker: Path, judge: Path, run_dir: Path, config: RunConfig, env: dict[str, str]
) -> dict[str, str]:
    """What a judge needs to start its workers: the submission's worker executable and, when
    confined, the command that confines it (one argument a line, ending in "--"). The worker
    writes only its own folder (beside the judge's, not in it; a file system of
    WORKER_SCRATCH_BYTES in its view) and reads only its executable's folder, the probe's and the
    load counter's: nothing of the judge, the other tests or the class.

    The reference's worker (the kit's own code, beside the judge in the harness's build) is
    started confined too, in a folder of its own: not to hold it in, but so that on a GPU lane it
    sees its lane's GPU alone, whose CUDA start then initializes that GPU only, not every GPU of
    the node (bench/RESULTS.md, "Every GPU of a node"); and the two workers a speed test times
    start alike."""
    variables = {"KIT_WORKER": str(worker)}
    if config.sandbox is not None:
        gpu = env.get("CUDA_VISIBLE_DEVICES")
        # The probe the judge runs, and the load counter it preloads into it (kit/load_counter.hpp).
        probes = [
            Path(value).parent
            for key, value in env.items()
            if key in ("KIT_PROBE_PATH", "KIT_LOAD_COUNTER_PATH") and value
        ]
        for prefix, readable in (
            ("KIT_WORKER", (worker.parent, *probes)),
            ("KIT_REFERENCE_WORKER", (judge.parent,)),
        ):
            folder = run_dir.with_name(run_dir.name + ("-worker" if prefix == "KIT_WORKER" else "-reference"))
            folder.mkdir()
            command = config.sandbox.wrap(
                [], folder, tuple(dict.fromkeys(readable)), scratch_bytes=WORKER_SCRATCH_BYTES, gpu=gpu
            )
            variables[f"{prefix}_COMMAND"] = "\n".join(command)
            variables[f"{prefix}_HOME"] = str(folder)
    return variables


def _readable(exe: Path, work_dir: Path, env: dict[str, str]) -> tuple[Path, ...]:
    """What a confined test may read besides its own folder: its executable's folder, the
    submission's work folder (its data files), and the folders of the files its environment
    names (the probe a sanitizer test runs)."""
    named = [Path(value).parent for value in env.values() if value.startswith("/") and Path(value).exists()]
    return tuple(dict.fromkeys([exe.parent, work_dir, *named]))


class ReportPipe:
    """The pipe a test process writes its Catch2 XML report into: the child gets the write end
    (run_limited closes it here once the child has it), a thread here reads until every copy of
    that end is closed, or until the block ends (a daemon that kept a copy cannot hold the test
    up). Keeps the first REPORT_LIMIT bytes."""

    def __init__(self) -> None:
        self._read, self.child_fd = os.pipe()
        self._handed = False
        self._chunks: list[bytes] = []
        self._size = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self.text = ""

    def hand_over(self) -> tuple[int]:
        """The child's end, for run_limited(pass_fds=...), which closes it after spawning."""
        self._handed = True
        return (self.child_fd,)

    def __enter__(self) -> ReportPipe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._handed:
            os.close(self.child_fd)
        self._done.set()
        self._thread.join()
        os.close(self._read)
        self.text = b"".join(self._chunks).decode("utf-8", "replace")

    def _drain(self) -> None:
        while True:
            ready = readable(self._read, 0.1)
            if not ready:
                if self._done.is_set():
                    return
                continue
            chunk = os.read(self._read, 65536)
            if not chunk:
                return
            room = REPORT_LIMIT - self._size
            if room > 0:
                self._chunks.append(chunk[:room])
                self._size += min(len(chunk), room)


def outcome_from(name: str, result: ProcessResult, report: str, config: RunConfig) -> Outcome:
    """Decides one test's status from its exit and its XML; the XML must be for this test."""
    if result.timed_out:
        return _timed_out(name, result, config)
    outcome = Outcome(name, Status.CRASHED, duration=result.duration, output=result.output)
    parsed = _read_result(report, name)
    if isinstance(parsed, str):
        outcome.messages.append(f"{parsed} ({_describe_exit(result.returncode)})")
        return outcome
    _fill_from_xml(outcome, parsed)
    success = parsed.find("OverallResult")
    passed = success is not None and success.get("success") == "true"
    skipped = success is not None and success.get("skips", "0") not in ("", "0")
    if result.returncode is not None and result.returncode < 0:
        outcome.messages.insert(0, f"crashed: {_describe_exit(result.returncode)}")
    elif not passed:
        outcome.status = Status.FAILED
    elif skipped and result.returncode in (0, EXIT_ALL_SKIPPED):
        outcome.status = Status.SKIPPED
    elif result.returncode == 0:
        outcome.status = Status.PASSED
    else:
        outcome.messages.append(
            f"the result file says passed but the process {_describe_exit(result.returncode)}"
        )
    return outcome


def _read_result(report: str, name: str) -> ET.Element | str:
    """The TestCase element for `name`, or why there is none."""
    if not report.strip():
        return "no result: the test process ended before Catch2 wrote its report"
    try:
        root = ET.fromstring(report)
    except ET.ParseError:
        return "no result: the report Catch2 wrote is incomplete or garbled"
    cases = list(root.iter("TestCase"))
    if len(cases) != 1 or cases[0].get("name") != name:
        found = ", ".join(repr(case.get("name")) for case in cases) or "none"
        return f"no result for this test: the report holds {found}"
    if cases[0].find("OverallResult") is None:
        return "no result: the report ends before the test did"
    return cases[0]


def _fill_from_xml(outcome: Outcome, case: ET.Element) -> None:
    for element in case.iter():
        text = _element_text(element)
        if element.tag == "Skip":
            outcome.skip_reason = outcome.skip_reason or text or "skipped"
        elif element.tag == "Warning":
            _read_warning(outcome, text)
        elif element.tag == "Expression" and element.get("success") == "false":
            original = _element_text(element.find("Original"))
            expanded = _element_text(element.find("Expanded"))
            kind = element.get("type", "CHECK")
            _add_message(
                outcome,
                f"{kind}( {original} ) with expansion: {expanded}"
                if expanded != original
                else f"{kind}( {original} )",
            )
        elif element.tag in FOREIGN_TAGS and text:
            _add_message(outcome, text, hints=False)
            for signature, hint in CUDA_ERROR_HINTS.items():
                if signature in text and hint not in outcome.hints:
                    outcome.hints.append(hint)
        elif element.tag in MESSAGE_TAGS and text:
            _add_message(outcome, text)


def _read_warning(outcome: Outcome, text: str) -> None:
    for line in text.splitlines():
        match = METRIC_LINE.match(line.strip())
        if match:
            try:
                value = float(match.group(2))
            except ValueError:
                continue
            if value == value and abs(value) != float("inf"):  # NaN or infinity is no measurement
                outcome.metrics[match.group(1)] = value
        elif line.strip():
            _add_message(outcome, line.strip())


def _add_message(outcome: Outcome, text: str, hints: bool = True) -> None:
    """Adds a message once (Catch2 repeats INFO/CAPTURE messages before every failure they
    accompany), capped in length and number before it reaches any report; with `hints`, its
    lines that start with "hint:" are the kit's hints (quoted output starts with "| ")."""
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + f"\n[... {len(text) - MESSAGE_LIMIT} characters cut ...]"
    if text in outcome.messages:
        return
    if len(outcome.messages) < MESSAGES_PER_TEST:
        outcome.messages.append(text)
    else:
        if len(outcome.messages) == MESSAGES_PER_TEST:
            outcome.messages.append("[... more messages cut ...]")
        return
    for line in text.splitlines() if hints else ():
        stripped = line.strip()
        if stripped.lower().startswith("hint:"):
            hint = stripped[len("hint:") :].strip()
            if hint and hint not in outcome.hints:
                outcome.hints.append(hint)


def _element_text(element: ET.Element | None) -> str:
    if element is None or element.text is None:
        return ""
    return "\n".join(line.strip() for line in element.text.strip().splitlines())


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "was killed"
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
