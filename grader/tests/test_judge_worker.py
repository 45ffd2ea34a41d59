"""The judge and the worker (docs/design/engine.md, "Judge and worker"): a lab's real tests against
a worker that is not the kit's server at all but a program of the attacker's own, confined as the
grader confines a student's worker. Whatever it answers, writes or forges, it earns only what its
answers prove: no test that calls the lab's code passes on an answer that is not one, and nothing
it writes reaches the report.

Needs the kit's build (KIT_BUILD_DIR, as make test sets it) and a sandbox; lab 06's tests run on
the CPU, so this runs in CI too.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from grader.confine.sandbox import detect, tool_folders
from grader.pipeline.run import RunConfig, Status, list_tests, run_test

BUILD = Path(os.environ.get("KIT_BUILD_DIR", "/nonexistent"))
KIT_ROOT = Path(__file__).resolve().parents[2]
JUDGE = BUILD / "bin" / "lab06_tests"

# A worker that speaks the wire format of common/src/remote_wire.hpp (an 8-byte length, then the
# payload) and answers every request as its mode says.
EVIL_WORKER = r"""
import os, random, struct, sys

mode = sys.argv[1]
FD = 3

def read_exactly(n):
    data = b""
    while len(data) < n:
        chunk = os.read(FD, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data

def text(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b

if mode == "forge":
    # A passing Catch2 report, on every descriptor the worker might share with the judge.
    fake = (b'<?xml version="1.0"?><Catch2TestRun><TestCase name="x"><OverallResult success="true"/>'
            b'</TestCase><OverallResults successes="1" failures="0"/></Catch2TestRun>\n'
            b"kit-metric time_ratio=0.01\n")
    for fd in range(0, 1024):
        if fd != FD:
            try:
                os.write(fd, fake)
            except OSError:
                pass
while True:
    size = struct.unpack("<Q", read_exactly(8))[0]
    read_exactly(size)
    if mode == "throws":
        # What every refusal test looks for, thrown from every call.
        words = "width at least 1 block_size tile_width h_M h_N h_P threads registers shared"
        reply = b"\x01" + text("invalid_argument") + text(words) + struct.pack("<i", 0)
    elif mode == "ok":
        reply = b"\x00"  # done, with nothing to show for it
    else:  # garbage, forge
        reply = bytes(random.randrange(256) for _ in range(random.randrange(1, 64)))
    os.write(FD, struct.pack("<Q", len(reply)) + reply)
"""


def worker_free(name: str) -> bool:
    """Lab 06's tests of the answers file: they never call the calculator."""
    return name.startswith("answers.toml") or name.startswith("written answer")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory):
    if not JUDGE.is_file():
        pytest.skip("KIT_BUILD_DIR has no lab06_tests (make test builds it)")
    root = tmp_path_factory.mktemp("judge")
    work = root / "work"
    work.mkdir()
    check = detect((work, JUDGE.parent))
    if check.sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
    config = RunConfig(timeout=30, sandbox=check.sandbox)
    tests = list_tests(JUDGE, work, RunConfig(timeout=30))
    assert len(tests) > 20

    def run(mode: str) -> dict[str, str]:
        folder = root / mode
        folder.mkdir()
        worker = folder / "lab06_worker"
        worker.write_text(f"#!/bin/sh\nexec {sys.executable} {folder / 'evil.py'} {mode}\n")
        (folder / "evil.py").write_text(EVIL_WORKER)
        worker.chmod(0o755)
        return {
            test.name: run_test(JUDGE, test.name, work, config, worker=worker).status
            for test in tests
            if not test.needs_gpu
        }

    return run


@pytest.mark.parametrize("mode", ["garbage", "forge", "ok"])
def test_a_worker_that_answers_anything_earns_no_test_that_calls_it(judged, mode):
    outcomes = judged(mode)
    passed = sorted(name for name, status in outcomes.items() if status == "passed")
    assert passed and all(worker_free(name) for name in passed), passed
    assert any(status == "failed" for status in outcomes.values())


def test_a_worker_that_refuses_every_call_earns_only_the_refusal_tests(judged):
    outcomes = judged("throws")
    passed = [name for name, status in outcomes.items() if status == "passed"]
    assert all(worker_free(name) or "rejects" in name for name in passed), passed
    assert any(status == "failed" for status in outcomes.values())


def test_a_confined_judge_reads_the_kernels_of_a_students_worker_and_of_the_kits_reference(tmp_path):
    """A machine-code test lists the student's worker's kernels beside the reference worker's:
    the student's inside the worker's sandbox, the reference's (the kit's own build, which that
    sandbox does not show) as the judge runs. Lab 01's machine-code tests need no GPU."""
    judge = BUILD / "bin" / "lab01_tests"
    if not judge.is_file():
        pytest.skip("KIT_BUILD_DIR has no lab01_tests (make test builds it)")
    student = tmp_path / "student"  # as in a grading run: the worker is not beside the reference's
    student.mkdir()
    worker = student / "lab01_worker"
    shutil.copy2(BUILD / "bin" / "lab01_worker", worker)
    work = tmp_path / "work"
    work.mkdir()
    check = detect((work, judge.parent), tool_folders(KIT_ROOT))
    if check.sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
    config = RunConfig(timeout=60, sandbox=check.sandbox)
    outcome = run_test(
        judge, "polynomial kernel machine code reads only x from global memory", work, config, worker=worker
    )
    if outcome.status is Status.SKIPPED and "cuobjdump was found neither" in "\n".join(outcome.messages):
        pytest.skip("no cuobjdump on this machine")
    assert outcome.status is Status.PASSED, outcome.messages
