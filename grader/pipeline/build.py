"""Stage 3, build: a submission's lab executables, and the student's own in-place build.

Grading (build_submission_lab): the harness (harness.py) was built once for the run; per
submission only the student's files compile, each on its own, and the lab's executables link
from the harness's objects and the submission's. Objects and executables are cached by
content for the run, so identical files (a lab left as the skeleton, the same upload twice)
compile and link once. The build log a student sees names only their own file.

`make check` (build_labs): CMake configures and builds the student's kit in place.

A lab that does not compile costs only that lab; its compiler output, trimmed to the errors,
goes into the student's feedback.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..confine.inspect import inspect_objects
from ..confine.proc import ProcessResult, run_limited
from ..confine.sandbox import Sandbox
from ..engine.schedule import Need, Scheduler
from ..rubric import Lab
from .recipes import CompileRecipe, LabHarness, LinkRecipe

if TYPE_CHECKING:
    from ..confine.cgroups import Cgroups

BUILD_OUTPUT_LIMIT = 256 * 1024
MAX_LOG_LINES = 40
TAIL_LINES_SHOWN = 30
ERROR_LINE = re.compile(r"\berror\b|\bError\b|undefined reference|fatal", re.IGNORECASE)


def default_generator() -> str | None:
    return "Ninja" if shutil.which("ninja") else None


@dataclass(frozen=True)
class BuildConfig:
    """How to call CMake; tests swap `cmake` for a fake and add defines."""

    cmake: str = "cmake"
    kernels: str = "student"  # -DKIT_KERNELS: whose kernels are compiled
    cuda_arch: str | None = None  # -DCMAKE_CUDA_ARCHITECTURES; None lets the kit choose
    generator: str | None = field(default_factory=default_generator)
    build_type: str | None = "Release"  # timings are only meaningful in an optimised build
    defines: dict[str, str] = field(default_factory=dict)
    jobs: int = field(default_factory=lambda: os.cpu_count() or 2)
    timeout: float = 900.0  # a CMake step of the kit's own (the harness)
    # One compile or link of a submission's files: the reference's take seconds, and a template
    # recursion written to stall the compiler must not hold a CPU slot for the kit's 900 s.
    student_timeout: float = 120.0


@dataclass(frozen=True)
class BuildResult:
    lab: str  # the lab id, "02"
    ok: bool
    log_tail: str  # the compiler output that explains a failure, paths shortened
    exe_path: Path | None
    problem: str | None = None  # one line: why the lab has no executable
    configured: bool = True  # False: CMake itself failed, which student code cannot cause
    executables: dict[str, Path] = field(default_factory=dict)  # every linked one, by name
    duration: float = 0.0  # seconds of compiling and linking this submission's files


# What grading builds on a machine without a GPU (grade, validate, bench, check and submit alike:
# the one place the policy is stated). No GPU test can run there, so the scores are incomplete anyway and
# nothing is timed:
# - one architecture when no --cuda-arch is given (the oldest of the kit's list, whose PTX any
#   newer GPU can run) instead of the kit's seven, which made every compile about seven times
#   slower (docs/instructors.md);
# - no probes (-DKIT_PROBES=OFF): only the sanitizer and profiler tests run them;
# - the kit's Untimed build type instead of Release: host code at -Og rather than -O3 (CMakeLists.txt
#   says why not -O0), about a fifth less CPU for the harness on two cores (bench/RESULTS.md).
NO_GPU_CUDA_ARCH = "75"
NO_GPU_BUILD_TYPE = "Untimed"


def build_for_this_machine(build: BuildConfig, gpus: list[str]) -> tuple[BuildConfig, str]:
    """The build settings for grading here, and a line saying what was changed (or "")."""
    if gpus:
        return build, ""
    untimed = replace(
        build,
        defines={**build.defines, "KIT_PROBES": "OFF"},
        build_type=NO_GPU_BUILD_TYPE if build.build_type == "Release" else build.build_type,
    )
    if build.cuda_arch:
        return (
            untimed,
            "no GPU here: the labs' probes (for GPU tests only) are left out, and the code unoptimised",
        )
    return replace(untimed, cuda_arch=NO_GPU_CUDA_ARCH), (
        f"no GPU here: building for one CUDA architecture (sm_{NO_GPU_CUDA_ARCH}) instead of the "
        "kit's list, without the labs' probes and unoptimised, since no GPU test can run or be "
        "timed; give --cuda-arch to choose other architectures"
    )


def configure_command(source: Path, build_dir: Path, config: BuildConfig) -> list[str]:
    command = [config.cmake, "-S", str(source), "-B", str(build_dir), f"-DKIT_KERNELS={config.kernels}"]
    # An existing build folder keeps its generator; asking for another one is an error in CMake.
    if config.generator and not (build_dir / "CMakeCache.txt").exists():
        command += ["-G", config.generator]
    if config.build_type:
        command.append(f"-DCMAKE_BUILD_TYPE={config.build_type}")
    if config.cuda_arch:
        command.append(f"-DCMAKE_CUDA_ARCHITECTURES={config.cuda_arch}")
    command += [f"-D{key}={value}" for key, value in sorted(config.defines.items())]
    return command


def build_command(build_dir: Path, target: str, config: BuildConfig) -> list[str]:
    return [config.cmake, "--build", str(build_dir), "--target", target, "-j", str(config.jobs)]


def build_labs(
    source: Path,
    build_dir: Path,
    labs: list[Lab],
    config: BuildConfig,
    progress: Callable[[str], None] = lambda message: None,
) -> dict[str, BuildResult]:
    """Configures once, then builds each lab; every lab gets a BuildResult."""
    progress("configuring")
    configured = run_limited(
        configure_command(source, build_dir, config),
        cwd=source,
        timeout=config.timeout,
        output_limit=BUILD_OUTPUT_LIMIT,
    )
    if configured.timed_out or configured.returncode != 0:
        why = (
            f"CMake configure timed out after {config.timeout:.0f} s"
            if configured.timed_out
            else "CMake configure failed"
        )
        log = trim_log(configured.output, source)
        return {lab.id: BuildResult(lab.id, False, log, None, why, configured=False) for lab in labs}
    return {lab.id: build_lab(source, build_dir, lab, config, progress) for lab in labs}


def build_lab(
    source: Path,
    build_dir: Path,
    lab: Lab,
    config: BuildConfig,
    progress: Callable[[str], None] = lambda message: None,
) -> BuildResult:
    progress(f"building {lab.tag}")
    built = run_limited(
        build_command(build_dir, lab.executable, config),
        cwd=source,
        timeout=config.timeout,
        output_limit=BUILD_OUTPUT_LIMIT,
    )
    exe_path = build_dir / "bin" / lab.executable
    if built.timed_out:
        problem = f"the build of {lab.executable} timed out after {config.timeout:.0f} s"
    elif built.returncode != 0:
        problem = f"{lab.tag} did not compile"
    elif not exe_path.is_file():
        problem = f"the build succeeded but {exe_path.relative_to(build_dir)} is missing (kit problem)"
    else:
        return BuildResult(lab.id, True, "", exe_path)
    return BuildResult(lab.id, False, trim_log(built.output, source), None, problem)


def trim_log(output: str, source: Path) -> str:
    """Each error line with the two lines after it (nvcc prints the source line and a caret there),
    from the first error on, as the first error is the one that explains; else the output's tail."""
    text = output.replace(str(source) + "/", "").replace(str(source), ".")
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    error_at = [index for index, line in enumerate(lines) if ERROR_LINE.search(line)]
    if not error_at:
        return "\n".join(lines[-TAIL_LINES_SHOWN:])
    shown: list[int] = []
    for index in error_at:
        shown += [i for i in range(index, min(index + 3, len(lines))) if i not in shown]
    cut = len(shown) - MAX_LOG_LINES
    return "\n".join(lines[i] for i in shown[:MAX_LOG_LINES]) + (
        f"\n[... {cut} more lines]" if cut > 0 else ""
    )


# ---------------------------------------------------------------------------------------------
# Grading: a submission's files against the harness


class BuildCache:
    """Objects and executables of one grading run, by content; one build per key, ever."""

    def __init__(
        self,
        root: Path,
        scheduler: Scheduler,
        config: BuildConfig,
        sandbox: Sandbox | None = None,
        cgroups: Cgroups | None = None,
    ) -> None:
        self.root = root
        self.scheduler = scheduler
        self.config = config
        # Compiles of the student's files run in the tests' sandbox where there is one: no
        # student code runs there, but the compiler reads whatever the source names, so the
        # solutions, the harness and other submissions are hidden from it too (the screen's
        # include list refuses such names first; this holds even if it missed one).
        self.sandbox = sandbox
        # Compiles run in a cgroup of their own too (memory and processes), as tests do: the
        # compiler reads the student's source, which can make it use any amount of memory.
        self.cgroups = cgroups
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._results: dict[str, tuple[Path | None, str]] = {}
        self.compiled = 0  # how many compiles and links really ran (the rest came from the cache)
        self.linked = 0

    @contextmanager
    def _only_one(self, key: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            yield

    def _run(self, command: list[str], cwd: Path) -> ProcessResult:
        with (
            self.scheduler.hold(Need.CPU),
            self.cgroups.for_test() if self.cgroups is not None else nullcontext() as cgroup,
        ):
            return run_limited(
                command,
                cwd=cwd,
                timeout=self.config.student_timeout,
                output_limit=BUILD_OUTPUT_LIMIT,
                cgroup=cgroup.procs if cgroup is not None else (),
            )

    def _run_compile(self, command: list[str], recipe: CompileRecipe, folder: Path) -> ProcessResult:
        if self.sandbox is None:
            return self._run(command, recipe.cwd)
        # The object's folder writable (the source was written there); the compiler's folder and
        # the kit's sources the command names (include folders, the lab's headers) readable; it
        # runs in `folder`.
        named = [Path(command[0]).parent]  # the compiler's own folder (nvcc's bin/)
        named += [Path(arg[2:]) for arg in command if arg.startswith("-I") and len(arg) > 2]
        named += [Path(arg.split("=", 1)[1]) for arg in command if arg.startswith("-isystem=")]
        readable = tuple(path for path in dict.fromkeys(named) if path.is_absolute() and path.is_dir())
        return self._run(self.sandbox.wrap(command, folder, readable), folder)

    def compile(self, fingerprint: str, recipe: CompileRecipe, data: bytes) -> tuple[Path | None, str]:
        """(object, "") or (None, the compiler's errors, naming only the student's file)."""
        key = _digest(fingerprint, recipe.name, *recipe.argv, data=data)
        with self._only_one(key):
            if key not in self._results:
                self._results[key] = self._compile(key, recipe, data)
            return self._results[key]

    def _compile(self, key: str, recipe: CompileRecipe, data: bytes) -> tuple[Path | None, str]:
        folder = self.root / "obj" / key
        folder.mkdir(parents=True, exist_ok=True)
        source = folder / recipe.name
        source.write_bytes(data)
        obj = folder / f"{recipe.name}.o"
        done = self._run_compile(recipe.command(source, obj), recipe, folder)
        self.compiled += 1
        if done.timed_out:
            return None, f"{recipe.name}: the compiler was stopped after {self.config.student_timeout:.0f} s"
        if done.returncode != 0 or not obj.is_file():
            return None, trim_log(done.output, folder)
        return obj, ""

    def link(self, fingerprint: str, recipe: LinkRecipe, objects: list[Path]) -> tuple[Path | None, str]:
        key = _digest(fingerprint, recipe.executable, *(str(path) for path in objects))
        with self._only_one(key):
            if key not in self._results:
                folder = self.root / "bin" / key
                folder.mkdir(parents=True, exist_ok=True)
                exe = folder / recipe.executable
                done = self._run(recipe.command(objects, exe), recipe.cwd)
                self.linked += 1
                if done.timed_out or done.returncode != 0 or not exe.is_file():
                    self._results[key] = (None, trim_log(done.output, folder))
                else:
                    self._results[key] = (exe, "")
            return self._results[key]


def _digest(*parts: str, data: bytes = b"") -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() + b"\0")
    hasher.update(data)
    return hasher.hexdigest()[:24]


def build_submission_lab(
    harness: LabHarness, fingerprint: str, files: dict[str, bytes], cache: BuildCache
) -> BuildResult:
    """Compiles the submission's files of one lab and links its executables."""
    lab = harness.lab
    start = time.monotonic()
    objects: dict[str, Path] = {}
    errors: list[str] = []
    for recipe in harness.compiles:
        obj, log = cache.compile(fingerprint, recipe, files[recipe.name])
        if obj is None:
            errors.append(log)
        else:
            objects[recipe.name] = obj
    if errors:
        return BuildResult(
            lab.id,
            False,
            "\n".join(errors),
            None,
            f"{lab.tag} did not compile",
            duration=time.monotonic() - start,
        )
    # Before anything links them: what the objects define, use and run before main.
    refused = inspect_objects(harness.tools, lab.tag, objects)
    if refused:
        return BuildResult(
            lab.id,
            False,
            "\n".join(refused),
            None,
            f"{lab.tag} compiled, but its code defines or uses what a lab may not (each line below "
            "names the symbol and the rule; docs/students.md, 'What your code may use')",
            duration=time.monotonic() - start,
        )
    executables: dict[str, Path] = {}
    for link in harness.links:
        exe, log = cache.link(fingerprint, link, list(objects.values()))
        if exe is None:
            # The student's objects link against the kit's: a missing or doubly defined symbol
            # is theirs (a kernel renamed, a function left out).
            return BuildResult(
                lab.id,
                False,
                log,
                None,
                f"{lab.tag} compiled but did not link ({link.executable})",
                duration=time.monotonic() - start,
            )
        executables[link.executable] = exe
    # A split lab's tests are the harness's own (the judge); the submission's code is its worker.
    exe = harness.judge if harness.judge is not None else executables[lab.executable]
    return BuildResult(
        lab.id,
        True,
        "",
        exe,
        executables=executables,
        duration=time.monotonic() - start,
    )


def make_cache_root(work_root: Path | None) -> Path:
    if work_root is not None:
        work_root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="grader-cache-", dir=work_root))
