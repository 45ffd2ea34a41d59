"""Fixtures: a small fake kit (two labs), a fake cmake and a fake Catch2 executable.

Nothing here needs CMake, a compiler or a GPU: the fakes answer as the real tools do, and the
student's file steers them with comment lines (see fakes/fake_cmake.py).
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.pipeline.build import BuildConfig
from grader.pipeline.grade import GradeOptions
from grader.pipeline.run import RunConfig
from grader.rubric import Kit, Lab, load_kit

FAKES = Path(__file__).parent / "fakes"

LAB02_TESTS = [
    ("result matches the host reference for small widths", "[lab02][correctness][gpu]", 10),
    ("result matches when the width is not a multiple of the block", "[lab02][correctness][gpu]", 10),
    ("host function rejects a width of zero", "[lab02][correctness][cpu]", 5),
    ("kernel speed is close to the reference kernel", "[lab02][performance][gpu]", 10),
    ("result matches on hidden widths", "[lab02][correctness][gpu]", 5),
]
LAB03_TESTS = [
    ("tiled result matches the host reference", "[lab03][correctness][gpu]", 20),
]

# The two fake labs' rubrics are alike in shape, as every rubric is: each is the file a lab ships.
LAB02_RUBRIC = """\
[lab]
title = "Demo matmul"
student_files = ["demo.cu"]

[[test]]
name = "result matches the host reference for small widths"
points = 10
hint = "README section 3: row from y, col from x."

[[test]]
name = "result matches when the width is not a multiple of the block"
points = 10
visibility = "visible"

[[test]]
name = "host function rejects a width of zero"
points = 5

[[test]]
name = "kernel speed is close to the reference kernel"
points = 10
[test.partial]
metric = "time_ratio"
full_at = 1.25
zero_at = 3.0

[[test]]
name = "result matches on hidden widths"
points = 5
visibility = "hidden"
"""

LAB03_RUBRIC = """\
[lab]
title = "Other lab"
student_files = ["other.cu"]

[[test]]
name = "tiled result matches the host reference"
points = 20
"""

REFERENCE_02 = """\
// Lab 02 reference.
#include <cuda_runtime.h>
#include "demo.h"
#include "kit/cuda_check.hpp"

__global__ void demo_kernel(float* P, int width) {
  // KIT:TODO(begin) Compute row and col, return outside the matrix,
  // KIT:TODO        then store the dot product.
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= width) return;
  P[row] = 1.0f;
  // KIT:TODO(end)
}

int demo_host(int width) {
  // KIT:TODO(begin) Return the width.
  // KIT:SKELETON return 0;
  return width;
  // KIT:TODO(end)
}
"""

REFERENCE_03 = """\
// Lab 03 reference.
#include "other.h"
int other() {
  // KIT:TODO(begin) Return 3.
  // KIT:SKELETON return 0;
  return 3;
  // KIT:TODO(end)
}
"""

MUTANTS_02 = """\
[[mutant]]
name = "transposed"
file = "demo.cu"
expect_loss = 20
expect_hint = "transposed"
description = "reads N transposed"

[[mutant.edit]]
find = "int demo_host(int width) {\\n"
replace = '''
// FAKE-OUTCOME: fail:mismatch at (0,1)\\nhint: the result looks transposed | result matches the host reference for small widths
// FAKE-OUTCOME: fail:mismatch | result matches when the width is not a multiple of the block
int demo_host(int width) {
'''

[[mutant]]
name = "broken"
expect_loss = "all"
expect_hint = "error"

[[mutant.edit]]
find = "  return width;\\n"
replace = "  return width  // FAKE-COMPILE-ERROR\\n"
"""


@dataclass
class FakeKit:
    kit: Kit
    cmake: Path

    @property
    def root(self) -> Path:
        return self.kit.root

    def options(self, labs: list[str] | None = None, **run) -> GradeOptions:
        return GradeOptions(
            labs=self.kit.select(labs),
            build=BuildConfig(cmake=str(self.cmake), generator=None, jobs=1, timeout=30),
            run=RunConfig(timeout=run.get("timeout", 10)),
            work_root=self.root.parent / "work",
            harness_dir=self.root.parent / "harness",
            cpu_slots=2,
            gpus=tuple(run.get("gpus", ())),
            gpu_slots=run.get("gpu_slots", 2),
            # Unconfined: the fake tests write to files under tmp_path, which a sandbox hides;
            # grader/tests/test_sandbox.py grades the fake kit confined.
            confine=run.get("confine", False),
        )

    def reload(self) -> FakeKit:
        return FakeKit(load_kit(self.root), self.cmake)


# The fakes start thousands of times a run: through the system's Python, without site (they use
# only the standard library), not `/usr/bin/env python3`, which on a machine with pyenv runs its
# shell shim first (a start took 137 ms through it against 45 ms on the 2-core machine). The
# system's, as a confined test sees only the system's folders.
INTERPRETER_LINE = (
    f"#!{shutil.which('python3', path='/usr/bin:/bin') or os.path.realpath(sys.executable)} -S\n"
)


def copy_fake(source: Path, target: Path) -> Path:
    """A fake tool's script at `target`, executable, started by this interpreter."""
    first, _, rest = source.read_text().partition("\n")
    assert first.startswith("#!"), f"{source} has no #! line"
    target.write_text(INTERPRETER_LINE + rest)
    target.chmod(0o755)
    return target


def make_executable(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return copy_fake(source, folder / source.name)


def write_spec(exe: Path, spec: dict) -> None:
    """The spec a fake test executable answers from (fakes/fake_catch2.py): a marshal, which the
    fake reads without importing json, as it does hundreds of times a test run."""
    exe.with_name(exe.name + ".spec").write_bytes(marshal.dumps(spec, 4))


def read_spec(exe: Path) -> dict:
    return marshal.loads(exe.with_name(exe.name + ".spec").read_bytes())


def write_fake_catch2(folder: Path, name: str, tests: list[dict]) -> Path:
    """A fake test executable named `name` in folder, answering for the given tests."""
    exe = folder / name
    folder.mkdir(parents=True, exist_ok=True)
    copy_fake(FAKES / "fake_catch2.py", exe)
    write_spec(exe, {"tests": tests})
    return exe


@pytest.fixture
def fake_tools(tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    for helper in ("fake_catch2.py", "fake_cc.py", "fake_ld.py", "fake_binutils.py"):
        make_executable(FAKES / helper, tools)
    return make_executable(FAKES / "fake_cmake.py", tools)


@pytest.fixture
def fake_kit(tmp_path: Path, fake_tools: Path) -> FakeKit:
    root = tmp_path / "kit"
    files = {
        "labs/02_demo/rubric.toml": LAB02_RUBRIC,
        "labs/02_demo/demo.h": "#pragma once\nint demo_host(int width);\n",
        "labs/02_demo/demo.cu": '// skeleton\n#include "demo.h"\nint demo_host(int width) { return 0; }\n',
        "labs/02_demo/tests/test_demo.cpp": "// public tests\n",
        "labs/03_other/rubric.toml": LAB03_RUBRIC,
        "labs/03_other/other.h": "#pragma once\nint other();\n",
        "labs/03_other/other.cu": "// skeleton\nint other() { return 0; }\n",
        "solutions/02_demo/demo.cu": REFERENCE_02,
        "solutions/02_demo/mutants.toml": MUTANTS_02,
        "solutions/03_other/other.cu": REFERENCE_03,
        "CMakeLists.txt": "# fake\n",
        "build/old_build_output.txt": "must not be copied into a stage\n",
        "grades/20250101-000000/summary.txt": "must not be copied\n",
        ".git/HEAD": "ref: refs/heads/main\n",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    spec = {
        "lab02_tests": {
            "slug": "02_demo",
            "tests": [
                {
                    "name": name,
                    "tags": tags,
                    "behaviour": "metric:time_ratio=1.0" if "speed" in name else "pass",
                }
                for name, tags, _ in LAB02_TESTS
            ],
        },
        "lab03_tests": {
            "slug": "03_other",
            "tests": [{"name": name, "tags": tags, "behaviour": "pass"} for name, tags, _ in LAB03_TESTS],
        },
    }
    (root / "fake_kit.json").write_text(json.dumps(spec))
    return FakeKit(load_kit(root), fake_tools)


def dedent(text: str) -> str:
    return textwrap.dedent(text)


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Holds `lock_path`'s lock, which every pytest-xdist process of the session shares."""
    import fcntl

    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@dataclass(frozen=True)
class RealHarness:
    """Where the tests that grade with the real kit find its harness, which they only read
    (GradeOptions.harness_built): make test's own build of the kit (KIT_BUILD_DIR) where it was
    configured as the grader configures a harness here (see `kit_build_as_harness`), else one
    temporary folder for the whole session, built once for REAL_HARNESS_LABS by the first test
    that asks (never the checkout's build/harness). `cuda_arch` is the one it is built for;
    `locks` is the session's folder, shared by every pytest-xdist process, that holds the locks."""

    folder: Path
    cuda_arch: str | None
    locks: Path
    prebuilt: bool = False

    def build(self, timeout: float) -> BuildConfig:
        """The build settings of every test that grades with the shared harness: the grader's
        own for this machine (grader/pipeline/build.py, build_for_this_machine), as `grade` and
        `validate` use them, and the same for each test, or one would rebuild it for another."""
        from grader.engine.schedule import visible_gpus
        from grader.pipeline.build import build_for_this_machine

        settings = BuildConfig(cuda_arch=self.cuda_arch, timeout=timeout)
        return build_for_this_machine(settings, visible_gpus())[0]

    def options(self, labs: list[Lab], work_root: Path, test_limit: float) -> GradeOptions:
        """A grading run that reads this harness and never builds it (the other tests read it
        meanwhile), each test held to `test_limit` seconds."""
        return GradeOptions(
            labs=labs,
            build=self.build(timeout=240),
            run=RunConfig(timeout=test_limit),
            work_root=work_root,
            harness_dir=self.folder,
            harness_built=True,
        )

    @contextmanager
    def gpu_turn(self) -> Iterator[None]:
        """Where there is a GPU, one test at a time grades on it inside this, whichever
        pytest-xdist process runs it: graders side by side would share the GPU, and a speed
        test's measuring window would not be its own. Without a GPU it waits for nothing."""
        from grader.engine.schedule import visible_gpus

        if not visible_gpus():
            yield
            return
        with exclusive(self.locks / "real-harness-gpu.lock"):
            yield


# The labs the tests that grade with the real kit use: the shared harness is built for these.
REAL_HARNESS_LABS = ("02", "06")


def kit_build_as_harness(build: Path, harness: RealHarness) -> bool:
    """Whether make test's build of the kit (`build`) grades exactly as a harness the grader would
    build here for `harness.cuda_arch`, so that the tests may read it instead of compiling the
    kit a second time (about 70 s of CPU on two cores). It must be the
    build of this kit, hold the manifests of REAL_HARNESS_LABS, and carry every setting the
    grader passes to CMake (build type, architectures, probes) with the same value. The one
    setting that differs, KIT_KERNELS (make test builds the reference kernels, a harness the
    skeletons), changes only the kernels library that each submission's own objects replace
    at link, and the answers sheet's default path, which the grader overrides for each run."""
    from grader.pipeline.harness import MANIFESTS, harness_config
    from grader.rubric import find_kit_root

    cache = build / "CMakeCache.txt"
    if harness.cuda_arch is None or not cache.is_file():
        return False  # without a given architecture the kit picks one when it configures
    if not all((build / MANIFESTS / f"lab{lab}.json").is_file() for lab in REAL_HARNESS_LABS):
        return False
    values = {}
    for line in cache.read_text(errors="replace").splitlines():
        name, typed, value = line.partition("=")
        if typed and not name.startswith(("#", "//")):
            values[name.partition(":")[0]] = value
    config = harness_config(harness.build(timeout=1), [])
    wanted = {
        "CMAKE_HOME_DIRECTORY": str(find_kit_root().resolve()),
        "CMAKE_BUILD_TYPE": config.build_type or "",
        "CMAKE_CUDA_ARCHITECTURES": config.cuda_arch,
        **{key: value for key, value in config.defines.items() if key != "KIT_HARNESS_TARGETS"},
    }
    return all(values.get(key) == value for key, value in wanted.items())


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's temporary folder, which every pytest-xdist process of it shares (each
    process's own basetemp is a folder below it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The session's folder `name`, filled by `make` once for the whole session: by whichever
    pytest-xdist process asks first, while the others wait, instead of once per process as a
    module's fixture would be (a compile each process repeated cost seconds of CPU apiece)."""
    root = session_folder(tmp_path_factory)
    folder, done = root / name, root / f"{name}.done"
    with exclusive(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a process that failed making it
            folder.mkdir()
            make(folder)
            done.write_text("")
    return folder


@pytest.fixture(scope="session")
def _real_harness_setup(tmp_path_factory: pytest.TempPathFactory) -> RealHarness:
    from grader.engine.schedule import visible_gpus

    root = session_folder(tmp_path_factory)
    folder = root / "real-harness"  # made by `real_harness`, through made_once
    # The GPU's own architecture where there is one (the kit's choice); else 75 alone, to be quick.
    arch = os.environ.get("KIT_TEST_CUDA_ARCH") or (None if visible_gpus() else "75")
    harness = RealHarness(folder, arch, root)
    kit_build = os.environ.get("KIT_BUILD_DIR")
    if kit_build and kit_build_as_harness(Path(kit_build), harness):
        return RealHarness(Path(kit_build), arch, root, prebuilt=True)
    return harness


@pytest.fixture
def real_harness(_real_harness_setup: RealHarness, tmp_path_factory: pytest.TempPathFactory) -> RealHarness:
    """The shared harness: make test's build where it serves (`kit_build_as_harness`), else built
    for REAL_HARNESS_LABS by the first test that asks, whichever pytest-xdist process runs it,
    while the others wait; after that the tests only read it. A test grades on the GPU inside
    `gpu_turn()`."""
    from grader.pipeline.harness import prepare_harness
    from grader.rubric import find_kit_root

    skip_unless_the_real_kit_grades_here()
    setup = _real_harness_setup
    if setup.prebuilt:
        return setup

    def build(folder: Path) -> None:
        kit = load_kit(find_kit_root())
        prepare_harness(
            kit, kit.select(list(REAL_HARNESS_LABS)), folder, setup.build(timeout=1200), RunConfig()
        )

    made_once(tmp_path_factory, setup.folder.name, build)
    return setup


# The tests that take longest apart from the hostile corpus, in the order they should start: the
# two that build a kit of their own (most of a minute of CPU each), then those that mostly wait
# (Slurm's daemons, Chromium), so that their waiting overlaps the building instead of ending the
# run. Matched by the start of their node id.
LONG_FIRST = (
    "grader/tests/test_new_lab.py::test_a_lab_added_by_the_steps_alone",
    "grader/tests/test_release.py::test_a_student_builds_checks_and_submits",
    "grader/tests/test_slurm.py::",
    "grader/tests/test_pages.py::",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (make test), the long tests start first, one in each process: the
    Makefile has pytest-xdist send each process two tests to start with and one at a time after
    that (--maxschedchunk 1), so each of the first long tests is followed by a short one. Those
    are the hostile corpus's halves, the longest, then the LONG_FIRST tests in order; the rest
    of LONG_FIRST follow, each to the first process that comes free, never queued behind
    another long test in a busy process (the two kit builds one after the other in one process
    were the longest path of the run). The other tests of the shared harness come last (with a
    GPU, its turns are likely free by then). In one process the order changes nothing that
    matters."""

    def turn(item: pytest.Item) -> float:
        if "real_harness" in getattr(item, "fixturenames", ()):
            return 0 if item.nodeid.startswith("grader/tests/test_hostile.py") else 3
        for rank, prefix in enumerate(LONG_FIRST):
            if item.nodeid.startswith(prefix):
                return 1 + rank / len(LONG_FIRST)
        return 2

    items.sort(key=turn)
    # Every process computes the same order (pytest-xdist requires it) from the same count.
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    long = [item for item in items if turn(item) < 2]
    short = [item for item in items if turn(item) == 2]
    ordered: list[pytest.Item] = []
    for item in long[:processes]:
        ordered += [item, *short[:1]]
        short = short[1:]
    taken = set(map(id, ordered))
    items[:] = ordered + [item for item in items if id(item) not in taken]


def skip_unless_the_real_kit_grades_here(*tools: str, sandbox: bool = True) -> None:
    """Skips the calling test where the real kit cannot be built and graded: nvcc, cmake (and
    `tools`) not on PATH, no solutions/ in this checkout, or, with `sandbox`, no sandbox."""
    from grader.confine.sandbox import detect
    from grader.rubric import find_kit_root

    missing = [tool for tool in ("nvcc", "cmake", *tools) if not shutil.which(tool)]
    if not (find_kit_root() / "solutions").is_dir():
        missing.append("solutions/")
    if missing:
        pytest.skip(
            f"needs nvcc, cmake, {', '.join(tools) + ', ' if tools else ''}solutions/ (missing: {', '.join(missing)})"
        )
    if sandbox and (check := detect()).sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
