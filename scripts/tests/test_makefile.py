"""The Makefile's choices that tests can see without building: `make -n` prints the commands."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from grader.pipeline.build import NO_GPU_BUILD_TYPE

KIT = Path(__file__).resolve().parents[2]


def configure_command(tmp_path: Path, target: str, gpu: bool, *variables: str) -> str:
    """The cmake configure line `make -n <target>` prints, with a stand-in nvidia-smi that lists a
    GPU or finds none."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    smi = tools / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n" if gpu else "#!/bin/sh\nexit 9\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["make", "-n", target, f"BUILD={tmp_path / 'build'}", *variables],
        cwd=KIT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("cmake -S")]
    assert len(lines) == 1, done.stdout
    return lines[0]


@pytest.mark.parametrize("gpu", [False, True])
def test_make_test_builds_one_architecture_only_where_there_is_no_gpu(tmp_path: Path, gpu: bool) -> None:
    line = configure_command(tmp_path, "test", gpu)
    assert ("-DCMAKE_CUDA_ARCHITECTURES=75" in line) is not gpu
    assert ("-DKIT_PROBES=OFF" in line) is not gpu
    # Optimised where GPU tests run and are timed; where none is, as the grader builds there.
    assert f"-DCMAKE_BUILD_TYPE={'Release' if gpu else NO_GPU_BUILD_TYPE}" in line
    # make build keeps the kit's own choice: the GPU's, or the documented list without one, and
    # the probes.
    built = configure_command(tmp_path, "build", gpu)
    assert "CMAKE_CUDA_ARCHITECTURES" not in built and "KIT_PROBES" not in built
    assert "CMAKE_BUILD_TYPE" not in built


def test_an_architecture_given_to_make_test_is_the_only_one(tmp_path: Path) -> None:
    line = configure_command(tmp_path, "test", False, "CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=86")
    assert line.count("CMAKE_CUDA_ARCHITECTURES") == 1 and "=86" in line
    line = configure_command(tmp_path, "test", False, "CMAKE_ARGS=-DKIT_PROBES=ON")
    assert line.count("KIT_PROBES") == 1 and "-DKIT_PROBES=ON" in line
    line = configure_command(tmp_path, "test", False, "CMAKE_ARGS=-DCMAKE_BUILD_TYPE=Debug")
    assert line.count("CMAKE_BUILD_TYPE") == 1 and "=Debug" in line


def test_make_grade_slurm_passes_the_slurm_options_and_nothing_without_it(tmp_path: Path) -> None:
    def grade_line(*variables: str) -> list[str]:
        done = subprocess.run(
            ["make", "-n", "grade", f"BUILD={tmp_path / 'build'}", "SUBMISSIONS=class/", *variables],
            cwd=KIT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        (line,) = [line for line in done.stdout.splitlines() if "-m grader grade" in line]
        return line.split()

    words = grade_line("SLURM=1", "TASKS=3", "PARTITION=gpu", "GRES=gpu:h100:1", "TIME=01:00:00")
    for option, value in (
        ("--tasks", "3"),
        ("--partition", "gpu"),
        ("--gres", "gpu:h100:1"),
        ("--time", "01:00:00"),
    ):
        assert words[words.index(option) + 1] == value, words
    assert "--slurm" in words and words[-1] == "class/"
    plain = grade_line("TASKS=3")  # the Slurm options mean nothing without SLURM=1
    assert "--slurm" not in plain and "--tasks" not in plain
    built = grade_line("HARNESS=h", "HARNESS_BUILT=1")
    assert words_after(built, "--harness-dir") == "h" and "--harness-built" in built
    assert "--harness-built" not in grade_line("HARNESS=h", "HARNESS_BUILT=0")
    assert "--harness-built" not in grade_line("HARNESS=h")


def words_after(words: list[str], option: str) -> str:
    return words[words.index(option) + 1]
