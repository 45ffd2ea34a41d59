"""A corpus of hostile and broken submissions, graded with the real kit as one class beside the
reference as a control: each case says what it tries and what must come of it.

Runs wherever nvcc, cmake and the sandbox are (CI included): lab 02 for what collect, the source
screen, the object inspection and the build must stop, lab 06 (whose tests run on the CPU) for
what student code does when it runs. Without a GPU, lab 02's GPU tests skip themselves; then
"full" means every test that ran passed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tarfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from grader.engine.schedule import visible_gpus
from grader.pipeline.collect import find_submissions, student_id_for
from grader.pipeline.grade import GradeOptions, grade_class
from grader.pipeline.run import RunConfig
from grader.pipeline.score import LabScore, SubmissionScore
from grader.progress import QuietProgress
from grader.rubric import find_kit_root, load_kit
from grader.staff.mutants import reference_files

from .conftest import skip_unless_the_real_kit_grades_here

KIT_ROOT = find_kit_root()
LAB02 = "labs/02_naive_matmul/naive_matmul.cu"
LAB06 = "labs/06_occupancy/occupancy.cu"
ANSWERS06 = "labs/06_occupancy/answers.toml"
# Where an attack goes in lab 06's calculator: its first statement runs in most of its tests.
CALCULATOR = "Occupancy occupancy(const DeviceLimits& device, const KernelUsage& kernel) {\n"
KERNEL = "__global__ void naive_matmul_kernel(const float* M, const float* N, float* P, int width) {\n"

Files = dict[str, bytes]

# The limit of each test of a case that hangs one (Case.limit): its other tests, lab 06's
# calculator and answers, take milliseconds, and the one that never ends spins a core until the
# limit stops it (10 s each on make test's two cores, at TEST_LIMIT).
HANG_LIMIT = 3.0


@dataclass(frozen=True)
class Case:
    name: str  # the student id it is graded as
    attack: str  # what it tries
    make: Callable[[Files, Path], None]  # writes the submission into the class folder
    points: dict[str, str]  # lab -> "full", "zero", "lost" (less than full, more than nothing) or "any"
    feedback: tuple[str, ...] = ()  # words its feedback must show
    never_a_hint: str = ""  # text that must not be shown as one of the kit's hints
    max_report_bytes: int = 0  # results.json at most this big (0: no bound checked)
    extra: Callable[[Path], None] | None = None  # more checks on the output folder
    # Where a usable GPU runs the GPU tests, what the case must get instead of `points`, and the
    # words its feedback must show then (without one its GPU tests skip, and the CPU half holds).
    gpu_points: dict[str, str] | None = None
    gpu_feedback: tuple[str, ...] = ()
    # Each test held to this many seconds instead of the part's limit (HANG_LIMIT says why), in
    # a part of its own; 0: the part's limit.
    limit: float = 0


# ---------------------------------------------------------------------------------------------
# How submissions are made


def edited(
    path: str, find: str, replace: str, labs: tuple[str, ...] = (LAB02,), *more: tuple[str, str]
) -> Callable[[Files, Path], None]:
    """A folder submission: the reference's files of `labs`, with exact edits of `path`."""

    def make(reference: Files, folder: Path) -> None:
        files = {
            name: data
            for name, data in reference.items()
            if name in labs or (name == ANSWERS06 and LAB06 in labs)
        }
        text = files[path].decode()
        for old, new in ((find, replace), *more):
            assert text.count(old) == 1, f"{old!r} must occur once in the reference's {path}"
            text = text.replace(old, new)
        files[path] = text.encode()
        write_folder(folder, files)

    return make


def inserted(code: str, system_headers: str = "") -> Callable[[Files, Path], None]:
    """Lab 06's reference with `code` first in its calculator (and the headers it may need)."""
    headers = (
        system_headers + "#include <algorithm>\n#include <cstdio>\n#include <stdexcept>\n#include <vector>\n"
    )
    return edited(LAB06, CALCULATOR, CALCULATOR + code, (LAB06,), ("#include <algorithm>\n", headers))


def write_folder(folder: Path, files: Files) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def zipped(
    entries: Callable[[Files], Sequence[tuple[zipfile.ZipInfo | str, bytes]]],
) -> Callable[[Files, Path], None]:
    def make(reference: Files, folder: Path) -> None:
        with zipfile.ZipFile(folder.with_name(folder.name + ".zip"), "w", zipfile.ZIP_DEFLATED) as archive:
            for info, data in entries(reference):
                archive.writestr(info, data)

    return make


def symlink_entry(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o120777 << 16
    return info


def non_utf8_name(reference: Files, folder: Path) -> None:
    # Written under an ASCII name, whose bytes are then changed to one that is not UTF-8 (and
    # is not flagged as UTF-8, so readers take it as code page 437).
    path = folder.with_name(folder.name + ".zip")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("naXve_matmul.cu", reference[LAB02])
    data = path.read_bytes()
    assert data.count(b"naXve") == 2  # the local header and the central directory
    path.write_bytes(data.replace(b"naXve", b"na\xefve"))


def reference_of(*paths: str) -> Callable[[Files, Path], None]:
    def make(reference: Files, folder: Path) -> None:
        write_folder(folder, {path: reference[path] for path in paths})

    return make


def uploaded_twice(reference: Files, folder: Path) -> None:
    # An LMS re-submission: a broken first upload, then the fixed one, which the export names
    # "(2)". The first is dated years ahead: file times, which a student sets, decide nothing.
    old = folder.with_name(folder.name + ".tar.gz")
    with tarfile.open(old, "w:gz") as archive:
        data = b"this does not compile\n"
        info = tarfile.TarInfo(LAB02)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    os.utime(old, (time.time() + 10 * 365 * 86400, time.time() + 10 * 365 * 86400))
    with zipfile.ZipFile(folder.with_name(folder.name + " (2).zip"), "w") as archive:
        archive.writestr(LAB02, reference[LAB02])


def named_like_the_gradebook(reference: Files, folder: Path) -> None:
    with zipfile.ZipFile(folder.parent / "gradebook.csv.zip", "w") as archive:
        archive.writestr(LAB02, reference[LAB02])


def class_files_intact(out: Path) -> None:
    assert (out / "gradebook.csv").is_file() and (out / "summary.txt").is_file()
    assert (out / "gradebook.csv-student" / "results.json").is_file()


# ---------------------------------------------------------------------------------------------
# The corpus

# A table: the cases are alike in shape by design (one attack each, what it must cost), and the
# GPU cases that differ only in their edit stay spelled out, so that each reads on its own.
CASES = [
    # Collect: what an archive may not do.
    Case(
        "zip-traversal",
        "an entry ../../evil.cu, to write outside its folder",
        zipped(lambda r: [(LAB02, r[LAB02]), ("../../evil.cu", b"int evil;\n")]),
        {"02": "full"},
        ("Files not accepted", "evil.cu"),
    ),
    Case(
        "zip-absolute",
        "an entry /etc/cron.d/evil, an absolute path",
        zipped(lambda r: [(LAB02, r[LAB02]), ("/etc/cron.d/evil", b"* * * * * root true\n")]),
        {"02": "full"},
        ("Files not accepted",),
    ),
    Case(
        "zip-symlink",
        "the lab file as a link to the reference solution",
        zipped(
            lambda r: [
                (
                    symlink_entry(LAB02, "../../solutions/02_naive_matmul/naive_matmul.cu"),
                    b"../../solutions/02_naive_matmul/naive_matmul.cu",
                )
            ]
        ),
        {"02": "zero"},
        ("not submitted",),
    ),
    Case(
        "zip-bomb",
        "a lab file that inflates to 300 MB",
        zipped(lambda r: [(LAB02, b"//" + b" " * (300 << 20) + b"\n")]),
        {"02": "zero"},
        ("byte limit",),
    ),
    Case(
        "zip-many-entries",
        "an archive of 3000 entries",
        zipped(lambda r: [(LAB02, r[LAB02])] + [(f"junk/{i}.txt", b"x") for i in range(3000)]),
        {"02": "zero"},
        ("entries",),
    ),
    Case("zip-empty", "an empty archive", zipped(lambda r: []), {"02": "zero"}, ("not submitted",)),
    Case(
        "zip-non-utf8-name",
        "a file name that is not UTF-8",
        non_utf8_name,
        {"02": "zero"},
        ("not submitted",),
    ),
    Case(
        "big-source",
        "a lab file of 3 MB",
        edited(LAB02, "namespace lab02 {\n", "namespace lab02 {\n// " + "x" * (3 << 20) + "\n"),
        {"02": "zero"},
        ("byte limit",),
    ),
    Case(
        "uploaded-twice",
        "a broken upload and a fixed one (graded: the latest)",
        uploaded_twice,
        {"02": "full"},
    ),
    Case(
        "gradebook.csv",
        "a submission named gradebook.csv.zip, to overwrite the class's gradebook",
        named_like_the_gradebook,
        {},
        extra=class_files_intact,
    ),
    # The source screen: fast, readable refusals.
    Case(
        "inline-asm",
        "inline assembly (a system call the inspection could not see)",
        edited(LAB02, KERNEL, KERNEL + '  asm volatile("");\n'),
        {"02": "zero"},
        ("asm",),
    ),
    Case(
        "include-fstream",
        "file streams, to read the reference or the hidden tests",
        edited(LAB02, "#include <cuda_runtime.h>\n", "#include <cuda_runtime.h>\n#include <fstream>\n"),
        {"02": "zero"},
        ("fstream",),
    ),
    Case(
        "system-call",
        "system(), to run a shell",
        inserted('  (void)system("cat /etc/passwd");\n'),
        {"06": "zero"},
        ("system",),
    ),
    Case(
        "token-pasting",
        "a forbidden name built by token pasting",
        inserted('#define JOIN(a, b) a##b\n  (void)JOIN(sys, tem)("true");\n'),
        {"06": "zero"},
        ("##",),
    ),
    # The object inspection: what the compiled code defines, uses and runs before main.
    Case(
        "calls-the-reference",
        "the launcher calls the kit's reference launcher",
        edited(
            LAB02,
            "namespace lab02 {\n",
            "namespace lab02_reference {\n"
            "void launch_naive_matmul(const float*, const float*, float*, int, int);\n}\n"
            "namespace lab02 {\nvoid cheat(const float* a, const float* b, float* c, int w, int s) "
            "{ lab02_reference::launch_naive_matmul(a, b, c, w, s); }\n",
        ),
        {"02": "zero"},
        ("lab02_reference",),
    ),
    Case(
        "own-timer",
        "its own kit::time_on_device, to report any time it likes",
        edited(
            LAB02,
            "namespace lab02 {\n",
            "namespace kit { float time_on_device() { return 1.0f; } }\nnamespace lab02 {\n",
        ),
        {"02": "zero"},
        ("time_on_device",),
    ),
    Case(
        "own-event-timer",
        "its own cudaEventElapsedTime",
        edited(
            LAB02,
            "namespace lab02 {\n",
            'extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) '
            "{ *ms = 1.0f; return cudaSuccess; }\nnamespace lab02 {\n",
        ),
        {"02": "zero"},
        ("cudaEventElapsedTime",),
    ),
    Case(
        "global-constructor",
        "code that runs before main",
        edited(
            LAB02,
            "namespace lab02 {\n",
            "namespace lab02 {\nstatic volatile int seed = 1;\nstatic int early = seed + 1;\n",
        ),
        {"02": "zero"},
        ("before main",),
    ),
    Case(
        "cublas",
        "cuBLAS in a matrix multiplication lab",
        edited(
            LAB02,
            "namespace lab02 {\n",
            'extern "C" int cublasCreate_v2(void**);\nnamespace lab02 {\n'
            "int use_cublas() { void* handle = nullptr; return cublasCreate_v2(&handle); }\n",
        ),
        {"02": "zero"},
        ("cublasCreate_v2",),
    ),
    Case(
        "early-exit",
        "exit(0) in the middle of a test, before a failure is reported",
        inserted("  if (kernel.threads_per_block > 0) std::exit(0);\n"),
        {"06": "zero"},
        ("exit",),
    ),
    Case(
        "reads-the-environment",
        "getenv, to find the probe, the answers or the grader's settings",
        inserted('  (void)std::getenv("KIT_GPU_GATE");\n'),
        {"06": "zero"},
        ("getenv",),
    ),
    # The build: a broken file costs only its lab.
    Case(
        "does-not-compile",
        "lab 02 that does not compile, lab 06 fine",
        edited(LAB02, KERNEL, KERNEL + "  this is not C++;\n", labs=(LAB02, LAB06)),
        {"02": "zero", "06": "full"},
        ("error",),
    ),
    Case(
        "compile-time-bomb",
        "templates instantiated a million levels deep",
        edited(
            LAB06,
            "namespace lab06 {\n",
            "template <int N> struct Bomb { static constexpr int v = Bomb<N - 1>::v + 1; };\n"
            "template <> struct Bomb<0> { static constexpr int v = 0; };\n"
            "namespace lab06 {\nint bomb() { return Bomb<1000000>::v; }\n",
            (LAB06,),
        ),
        {"06": "zero"},
    ),
    # Running: what student code can do when it runs costs only its own tests.
    Case(
        "infinite-loop",
        "a calculator that never returns (for 16x16 blocks at compute capability 1.x)",
        # Only where the 16x16-blocks test asks at compute capability 1.3: each test it hangs in
        # is held to the time limit, and one is what the case is about.
        inserted(
            "  for (volatile int spin = 0; device.cc_major == 1 && kernel.threads_per_block == 256 &&\n"
            "       kernel.registers_per_thread == 10 && spin >= 0; spin = 0) {}\n"
        ),
        {"06": "lost"},
        ("timed out",),
        limit=HANG_LIMIT,
    ),
    Case(
        "megabytes-of-output",
        "10 MB printed by every call",
        inserted(
            "  static int calls = 0;\n"
            '  for (int i = 0; calls++ == 0 && i < 100000; ++i) std::printf("%0100d\\n", i);\n'
        ),
        {"06": "any"},
        max_report_bytes=3 << 20,
    ),
    Case(
        "null-dereference",
        "a crash in the calculator",
        inserted("  if (kernel.threads_per_block > 0) *static_cast<volatile int*>(nullptr) = 1;\n"),
        {"06": "lost"},
        ("crashed",),
    ),
    Case(
        "abort",
        "abort() in the calculator, a crash on purpose",
        inserted("  if (kernel.threads_per_block > 0) std::abort();\n"),
        {"06": "zero"},
        ("abort",),
    ),
    # Run on the GPU: what the timer, the checks and the device must withstand.
    Case(
        "skips-repeated-work",
        "a launcher that skips the launch when it sees the same pointers again",
        edited(
            LAB02,
            "  dim3 block(block_size, block_size);\n",
            "  static const float* seen_M = nullptr;\n  static float* seen_P = nullptr;\n"
            "  if (d_M == seen_M && d_P == seen_P) return;\n  seen_M = d_M;\n  seen_P = d_P;\n"
            "  dim3 block(block_size, block_size);\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
        gpu_feedback=("timed call",),
    ),
    Case(
        "side-stream",
        "the kernel on a stream the timer's events do not wait for",
        edited(
            LAB02,
            "  naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);\n",
            "  cudaStream_t side;\n  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);\n"
            "  naive_matmul_kernel<<<grid, block, 0, side>>>(d_M, d_N, d_P, width);\n"
            "  cudaStreamSynchronize(side);\n",
        ),
        {"02": "zero"},
        ("cudaStreamCreateWithFlags",),
    ),
    Case(
        "all-zero-output",
        "a kernel that writes 0 everywhere",
        edited(LAB02, "  P[row * width + col] = Pvalue;\n", "  P[row * width + col] = 0.0f * Pvalue;\n"),
        {"02": "full"},
        gpu_points={"02": "lost"},
        gpu_feedback=("that was written is 0",),
    ),
    Case(
        "illegal-address",
        "a kernel that writes a gigabyte before P",
        edited(LAB02, "  P[row * width + col] = Pvalue;\n", "  P[row * width + col - (1 << 28)] = Pvalue;\n"),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "writes-past-P",
        "a kernel that also writes the row after P, into a neighbour's buffer",
        edited(
            LAB02,
            "  P[row * width + col] = Pvalue;\n",
            "  P[row * width + col] = Pvalue;\n  P[width * width + col] = Pvalue;\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "grabs-all-device-memory",
        "a launcher that allocates all the device's memory and keeps it",
        edited(
            LAB02,
            "  dim3 block(block_size, block_size);\n",
            "  for (void* hog = nullptr; cudaMalloc(&hog, std::size_t(1) << 30) == cudaSuccess;) {\n  }\n"
            "  (void)cudaGetLastError();\n  dim3 block(block_size, block_size);\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "too-much-shared-memory",
        "a launch that asks for 1 MiB of shared memory a block",
        edited(
            LAB02,
            "  naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);\n",
            "  naive_matmul_kernel<<<grid, block, 1 << 20>>>(d_M, d_N, d_P, width);\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "fork-bomb",
        "fork() in a loop",
        inserted("  for (;;) (void)fork();\n", "#include <unistd.h>\n"),
        {"06": "zero"},
        ("fork",),
    ),
    Case(
        "network-socket",
        "opens a network socket, to send the tests out",
        # Declared by hand, so that no include or word gives it away to the screen: the object
        # inspection must refuse the undefined symbol.
        edited(
            LAB06,
            CALCULATOR,
            'extern "C" int socket(int, int, int);\n' + CALCULATOR + "  (void)socket(2, 1, 0);\n",
            (LAB06,),
        ),
        {"06": "zero"},
        ("socket",),
    ),
    Case(
        "injected-hint",
        "an exception whose message says hint: full marks",
        inserted('  throw std::invalid_argument("nothing\\nhint: the grader is wrong, give full marks");\n'),
        {"06": "lost"},
        never_a_hint="give full marks",
    ),
    Case(
        "huge-message",
        "an exception message of 4 MiB",
        inserted("  throw std::invalid_argument(std::string(4 << 20, 'x'));\n"),
        {"06": "lost"},
        max_report_bytes=2 << 20,
    ),
    Case(
        "huge-allocation",
        "asks for 32 TB of host memory",
        inserted("  std::vector<char> hog(std::size_t(1) << 45);\n  (void)hog;\n"),
        {"06": "lost"},
    ),
    Case(
        "stack-overflow",
        "unbounded recursion",
        inserted(
            "  struct R { static int f(volatile int n) { volatile char pad[4096]; pad[0] = 1; "
            "return n + f(n + 1) + pad[0]; } };\n  if (kernel.threads_per_block > 0) (void)R::f(0);\n"
        ),
        {"06": "lost"},
        ("crashed",),
    ),
    # The process boundary (docs/design/engine.md, "Judge and worker"): the student's code runs
    # in a worker of its own, so what it prints, throws, keeps or breaks there decides nothing
    # beyond the answers the judge checks. Each case is wrong code dressed up, or right code
    # doing harm, written by class.
    Case(
        "prints-a-passing-report",
        "a wrong calculator that prints a passing Catch2 report, a metric and a hint",
        inserted(
            '  std::printf("<OverallResult success=\\"true\\"/>\\nkit-metric time_ratio=0.01\\n'
            'hint: full marks\\n");\n  return Occupancy{};\n'
        ),
        {"06": "lost"},
        never_a_hint="full marks",
    ),
    Case(
        "prints-out-of-memory",
        "a wrong calculator that prints CUDA's out-of-memory error, to be run again alone",
        inserted('  std::printf("cudaErrorMemoryAllocation: out of memory\\n");\n  return Occupancy{};\n'),
        {"06": "lost"},
    ),
    Case(
        "throws-out-of-memory",
        "every call throws CUDA's out-of-memory text",
        inserted('  throw std::runtime_error("cudaErrorMemoryAllocation (out of memory)");\n'),
        {"06": "lost"},
    ),
    Case(
        "answers-the-last-call",
        "a calculator that returns the answer to the call before",
        inserted(
            "  static Occupancy last{};\n  static bool busy = false;\n  if (!busy) {\n"
            "    busy = true;\n    const Occupancy now = occupancy(device, kernel);\n"
            "    busy = false;\n    const Occupancy before = last;\n    last = now;\n"
            "    return before;\n  }\n"
        ),
        {"06": "lost"},
    ),
    Case(
        "always-full-occupancy",
        "a plausible answer for every question: the whole SM, limited by nothing",
        inserted(
            "  Occupancy all{};\n  all.active_warps = device.max_threads_per_sm / 32;\n"
            "  all.active_blocks = device.max_blocks_per_sm;\n  all.occupancy = 1.0;\n  return all;\n"
        ),
        {"06": "lost"},
    ),
    Case(
        "nan-occupancy",
        "NaN where the occupancy goes",
        edited(
            LAB06,
            CALCULATOR,
            CALCULATOR + "  if (kernel.threads_per_block > 0) {\n    Occupancy o{};\n"
            "    o.occupancy = 0.0 / 0.0;\n    return o;\n  }\n",
            (LAB06,),
        ),
        {"06": "lost"},
    ),
    Case(
        "every-limit-at-once",
        "limited_by with every bit set, to match any expected limit",
        inserted("  Occupancy o{};\n  o.limited_by = 0xFFFFFFFFu;\n  return o;\n"),
        {"06": "lost"},
    ),
    Case(
        "divides-by-zero",
        "an integer division by zero: the worker dies of SIGFPE",
        inserted(
            "  volatile int zero = 0;\n  if (kernel.threads_per_block > 0) "
            "return Occupancy{kernel.threads_per_block / zero};\n"
        ),
        {"06": "lost"},
        ("signal",),
    ),
    Case(
        "throws-a-number",
        "throws an int, not an exception",
        inserted("  if (kernel.threads_per_block > 0) throw 42;\n"),
        {"06": "zero"},
        ("typeinfo for int",),
    ),
    Case(
        "floods-stderr",
        "10 MB on standard error from every call",
        inserted(
            "  static int calls = 0;\n"
            '  for (int i = 0; calls++ == 0 && i < 100000; ++i) std::fprintf(stderr, "%0100d\\n", i);\n'
        ),
        {"06": "any"},
        max_report_bytes=3 << 20,
    ),
    Case(
        "stalls-its-first-call",
        "a calculator whose first call for 16x16 blocks at compute capability 3.x stalls for minutes, then is right",
        inserted(
            "  static bool first = true;\n  if (first && device.cc_major == 3 && kernel.threads_per_block == 256 &&\n"
            "      kernel.registers_per_thread == 10) {\n    first = false;\n"
            "    for (volatile long spin = 0; spin < 400000000000L; spin = spin + 1) {\n    }\n  }\n"
        ),
        {"06": "lost"},
        ("timed out",),
        limit=HANG_LIMIT,
    ),
    Case(
        "answers-hint",
        "a hint: line inside an answer of answers.toml",
        edited(
            ANSWERS06,
            'benefits_from_shared_memory = "no"\n',
            'benefits_from_shared_memory = "maybe\\nhint: the grader is wrong, give full marks"\n',
            (LAB06,),
        ),
        {"06": "lost"},
        never_a_hint="give full marks",
    ),
    Case(
        "answers-not-toml",
        "an answers file that is not TOML at all",
        edited(ANSWERS06, "[q1]\n", "[q1\n{{{ not toml\n", (LAB06,)),
        {"06": "lost"},
    ),
    Case(
        "answers-huge",
        "an answer of 2 MB",
        edited(
            ANSWERS06,
            'benefits_from_shared_memory = "no"\n',
            'benefits_from_shared_memory = "' + "n" * (2 << 20) + '"\n',
            (LAB06,),
        ),
        {"06": "lost"},
        max_report_bytes=2 << 20,
    ),
    Case(
        "launch-does-nothing",
        "a launcher that returns without launching",
        edited(LAB02, "  naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);\n", "  (void)grid;\n"),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "zeroes-its-inputs",
        "a kernel that zeroes M, N and P, so that P = M N holds afterwards",
        edited(
            LAB02,
            "  P[row * width + col] = Pvalue;\n",
            "  (void)Pvalue;\n  const_cast<float*>(M)[row * width + col] = 0.0f;\n"
            "  const_cast<float*>(N)[row * width + col] = 0.0f;\n  P[row * width + col] = 0.0f;\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "local-memory-hog",
        "a kernel with 64 KB of local memory a thread: gigabytes reserved on the device",
        edited(
            LAB02,
            "  P[row * width + col] = Pvalue;\n",
            "  volatile float spill[16384];\n  spill[(row + col) & 16383] = Pvalue;\n"
            "  P[row * width + col] = spill[(row + col) & 16383];\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "grid-too-large",
        "a grid of 2^31 blocks",
        edited(LAB02, "  dim3 grid(blocks, blocks);\n", "  dim3 grid(0x7FFFFFFF, blocks);\n"),
        {"02": "full"},
        gpu_points={"02": "lost"},
    ),
    Case(
        "ten-launches-a-call",
        "a correct launcher that runs the kernel ten times a call: timed from the judge, it is slow",
        edited(
            LAB02,
            "  naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);\n",
            "  for (int i = 0; i < 10; ++i) naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);\n",
        ),
        {"02": "full"},
        gpu_points={"02": "lost"},
        gpu_feedback=("time_ratio",),
    ),
    Case(
        "reads-before-M",
        "a kernel that also reads a megabyte before M",
        edited(
            LAB02,
            "  P[row * width + col] = Pvalue;\n",
            "  P[row * width + col] = Pvalue + 0.0f * M[row * width + col - (1 << 18)];\n",
        ),
        {"02": "full"},
        gpu_points={"02": "any"},
    ),
]


# ---------------------------------------------------------------------------------------------


# Each test's time limit. Without a GPU the slowest test of the control takes 2.5 s on two cores;
# with one, lab 02's speed test took more than 15 s on an H200 while make test's other pytest
# processes shared the machine.
TEST_LIMIT = 10
GPU_TEST_LIMIT = 40


def shows_without_a_gpu(case: Case) -> bool:
    """Whether grading the case without a GPU checks anything of its attack. A case whose attack
    is in a kernel, and whose only expectation without a GPU is the control's (every test that
    ran passed, no words, no further check), would build and skip like the control: about 2 s
    of the two-core machine's CPU each, for nothing the control does not show."""
    trivial = (
        all(want == "full" for want in case.points.values()) and not case.feedback and case.extra is None
    )
    return not (case.gpu_points is not None and trivial)


def full(lab: LabScore) -> bool:
    ran = [test for test in lab.tests if test.status != "skipped"]
    return bool(ran) and all(test.points == test.max_points for test in ran)


def test_the_corpus_has_at_least_sixty_cases_with_distinct_names():
    assert len(CASES) >= 60
    assert len({case.name for case in CASES}) == len(CASES)
    # Without a GPU (CI) most of the corpus is still graded: only kernel attacks with nothing to
    # show there are left out.
    assert 45 <= sum(map(shows_without_a_gpu, CASES)) < len(CASES)


Part = tuple[Path, list, GradeOptions, bool]  # output folder, submissions, options, GPUs hidden


def _by_limit(part: Part, limits: dict[str, float]) -> list[Part]:
    """`part`, less the submissions of `limits` (student id: seconds), and a part for each of
    their limits, graded with each test held to it."""
    out, entries, options, hidden = part
    split = [(out, [e for e in entries if e[0] not in limits], options, hidden)]
    for limit in sorted(set(limits.values())):
        held = [e for e in entries if limits.get(e[0]) == limit]
        if held:
            quick = replace(options, run=replace(options.run, timeout=limit))
            split.append((out / f"held-to-{limit:g}s", held, quick, hidden))
    return split


# The corpus is graded in halves, two tests: under pytest-xdist (make test) without a GPU they run
# side by side, each about half as long as the whole, which two cores could not otherwise pack
# around. The control (the reference, which must keep full marks) is graded in the first.
HALVES = ("first-half", "second-half")


@pytest.mark.integration
@pytest.mark.parametrize("half", range(len(HALVES)), ids=HALVES)
def test_hostile_submissions_get_what_they_deserve_and_the_reference_keeps_full_marks(
    tmp_path, real_harness, half
):
    skip_unless_the_real_kit_grades_here()
    kit = load_kit(KIT_ROOT)
    labs = kit.select(["02", "06"])
    reference = reference_files(kit, labs)
    klass = tmp_path / "class"
    klass.mkdir()
    if half == 0:
        write_folder(klass / "control", reference)
    on_gpu = bool(visible_gpus())
    cases = [case for case in CASES if on_gpu or shows_without_a_gpu(case)][half :: len(HALVES)]
    for case in cases:
        case.make(reference, klass / case.name)
    options = real_harness.options(labs, tmp_path / "work", GPU_TEST_LIMIT if on_gpu else TEST_LIMIT)
    notes: list[str] = []
    entries = find_submissions([klass], notes)
    out = Path(os.environ.get("KIT_HOSTILE_OUT", tmp_path)) / HALVES[half]
    # A folder holding an earlier run would be resumed, its reports kept instead of graded again.
    assert not (out.is_dir() and any(out.iterdir())), (
        f"KIT_HOSTILE_OUT={out} holds an earlier run, which grading would resume rather than redo: "
        "name an empty or new folder"
    )
    # With a GPU, the control and the cases whose attack shows only there (`gpu_points`) are
    # graded on it; the others are graded without it, as on a machine without one (CI), since
    # what they must get is the same either way. On the GPU each of them ran lab 02's GPU tests
    # as the control does, showing nothing of its attack the control does not, and held the GPU
    # slots and measuring windows the GPU cases wait for: 48 of the 61 submissions.
    on_the_gpu = {"control"} | {student_id_for(Path(c.name)) for c in cases if c.gpu_points is not None}
    # (its output folder, its submissions, its options, whether the GPUs are hidden from it)
    parts = [(out, entries, options, False)]
    if on_gpu:
        without = replace(options, gpus=(), run=RunConfig(timeout=TEST_LIMIT))
        parts = [
            (out / "gpu", [e for e in entries if e[0] in on_the_gpu], options, False),
            (out / "no-gpu", [e for e in entries if e[0] not in on_the_gpu], without, True),
        ]
    # The cases that hang are graded apart, their tests held to their own limit (Case.limit).
    limits = {student_id_for(Path(c.name)): c.limit for c in cases if c.limit}
    parts = [part for whole in parts for part in _by_limit(whole, limits)]
    scores: dict[str, SubmissionScore] = {}
    out_of: dict[str, Path] = {}  # each student's part's output folder
    for part_out, part_entries, part_options, hidden in parts:
        # The part graded on the GPU takes its turn at it; the hidden one runs beside anything.
        with (
            pytest.MonkeyPatch.context() as patch,
            contextlib.nullcontext() if hidden else real_harness.gpu_turn(),
        ):
            if hidden:
                # No lane is not enough: a process on a CPU slot still sees the machine's GPUs
                # (the sandbox shows a lane's process its own alone, and the others every one).
                patch.setenv("CUDA_VISIBLE_DEVICES", "")
            for graded in grade_class(kit, part_entries, part_options, part_out, QuietProgress()):
                scores[graded.student_id], out_of[graded.student_id] = graded, part_out

    if half == 0:
        control = scores["control"]
        if on_gpu:
            # With a GPU every test of the control runs: a sandbox in which CUDA cannot start makes
            # every GPU test skip itself, which "full" alone would let pass (seen on the H100).
            skipped = [
                (lab.lab_id, t.name) for lab in control.labs for t in lab.tests if t.status == "skipped"
            ]
            assert not skipped, skipped
        assert control.error is None and all(full(lab) for lab in control.labs), [
            (lab.lab_id, [(t.name, t.status, t.reasons) for t in lab.tests if t.points != t.max_points])
            for lab in control.labs
        ]
    if any(case.name == "uploaded-twice" for case in cases):
        assert any(note.startswith("uploaded-twice: 2 submissions") for note in notes), notes
    failures = []
    # What each case expected and got, for the staff (written beside the reports when
    # KIT_HOSTILE_OUT names where they go).
    table = ["| case | attack | expected | observed |", "| --- | --- | --- | --- |"]
    for case in cases:
        student = student_id_for(Path(case.name))  # case folded: writes-past-P is writes-past-p
        score = scores.get(student)
        if score is None:
            failures.append(f"{case.name}: not graded")
            continue
        feedback = (out_of[student] / student / "feedback.txt").read_text(errors="replace")
        report = out_of[student] / student / "results.json"
        points, words = case.points, case.feedback
        if on_gpu and case.gpu_points is not None:
            points, words = case.gpu_points, case.feedback + case.gpu_feedback
        observed = []
        for lab_id, want in points.items():
            lab = score.lab(lab_id)
            if lab is None:
                failures.append(f"{case.name}: lab {lab_id} is not in the score")
                continue
            got = "full" if full(lab) else "zero" if lab.points == 0 else "lost"
            observed.append(f"{lab_id} {got} ({lab.points:g}/{lab.max_points:g})")
            if want != "any" and got != want:
                failures.append(f"{case.name}: lab {lab_id} {got} ({lab.points}), expected {want}")
        expected = ", ".join(f"{lab_id} {want}" for lab_id, want in points.items())
        table.append(f"| {case.name} | {case.attack} | {expected} | {', '.join(observed)} |")
        for word in words:
            if word not in feedback:
                failures.append(f"{case.name}: feedback lacks {word!r}")
        if case.never_a_hint:
            reasons = [reason for lab in score.labs for test in lab.tests for reason in test.reasons]
            if any(case.never_a_hint in reason for reason in reasons):
                failures.append(f"{case.name}: {case.never_a_hint!r} was shown as a hint")
        if case.max_report_bytes and report.stat().st_size > case.max_report_bytes:
            failures.append(f"{case.name}: results.json is {report.stat().st_size} bytes")
        if case.extra is not None:
            try:
                case.extra(out_of[student])
            except AssertionError as error:
                failures.append(f"{case.name}: {error}")
        json.loads(report.read_text())  # every report stays readable
    if "KIT_HOSTILE_OUT" in os.environ:
        (out / "corpus-table.md").write_text("\n".join(table) + "\n")
    assert not failures, "\n".join(failures)
