"""Stage 3, build: configure the staged kit once, then build each lab's test executable on its own.

A lab that does not compile costs only that lab; its compiler output, trimmed to the errors,
goes into the student's feedback.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .proc import run_limited
from .rubric import Lab

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
    timeout: float = 900.0


@dataclass(frozen=True)
class BuildResult:
    lab: str  # the lab id, "02"
    ok: bool
    log_tail: str  # the compiler output that explains a failure, paths shortened
    exe_path: Path | None
    problem: str | None = None  # one line: why the lab has no executable
    configured: bool = True  # False: CMake itself failed, which student code cannot cause


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
