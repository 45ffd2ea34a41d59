"""scripts/setup.sh: missing prerequisites get one clear message; a second run does nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]
SETUP = KIT / "scripts" / "setup.sh"


def run_setup(build: Path, path: str, *options: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": str(build), "KIT_BUILD_DIR": str(build)}
    return subprocess.run(
        ["bash", str(SETUP), *options], env=env, capture_output=True, text=True, timeout=600
    )


def fake_tool(folder: Path, name: str, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text("#!/bin/sh\n" + script + "\n")
    tool.chmod(0o755)


@pytest.mark.skipif(
    Path("/usr/bin/nvcc").exists() or Path("/bin/nvcc").exists(),
    reason="nvcc is installed in /usr/bin, so it cannot be hidden from PATH",
)
def test_setup_names_the_fix_when_nvcc_is_missing(tmp_path: Path) -> None:
    result = run_setup(tmp_path / "build", "/usr/bin:/bin")
    assert result.returncode != 0
    assert "nvcc" in result.stderr
    assert "PATH" in result.stderr
    assert not (tmp_path / "build" / ".kit-setup").exists()


def test_setup_refuses_a_cmake_that_is_too_old(tmp_path: Path) -> None:
    fakes = tmp_path / "fakes"
    fake_tool(fakes, "nvcc", "echo fake nvcc")
    fake_tool(fakes, "cmake", 'echo "cmake version 3.18.4"')
    result = run_setup(tmp_path / "build", f"{fakes}:/usr/bin:/bin")
    assert result.returncode != 0
    assert "CMake 3.18.4 is too old" in result.stderr
    assert "3.24" in result.stderr


needs_cuda = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
    reason="needs the CUDA toolkit",
)
WITH_CUDA = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/local/cuda/bin"  # PATH for those tests


@needs_cuda
def test_setup_succeeds_once_and_then_does_nothing(tmp_path: Path) -> None:
    build = tmp_path / "build"
    first = run_setup(build, WITH_CUDA)
    assert first.returncode == 0, first.stderr
    python = (build / ".kit-python").read_text().strip()
    assert python
    second = run_setup(build, WITH_CUDA)
    assert second.returncode == 0
    assert second.stdout == "" and second.stderr == ""


@needs_cuda
def test_setup_for_grading_leaves_the_developers_tools_to_setup_dev(tmp_path: Path) -> None:
    build = tmp_path / "build"
    grading = run_setup(build, WITH_CUDA)
    assert grading.returncode == 0, grading.stderr
    said = grading.stdout.replace(str(tmp_path), "<tmp>")  # pytest's folder names say "pytest"
    for tool in ("pytest", "ruff", "mypy", "clang-format", "for make lint"):
        assert tool not in said  # neither installed nor checked for
    assert (build / ".kit-setup").is_file() and not (build / ".kit-setup-dev").exists()
    dev = run_setup(build, WITH_CUDA, "--dev")  # the base stamp is not enough for make test
    assert dev.returncode == 0, dev.stderr
    assert "later runs skip" in dev.stdout and (build / ".kit-setup-dev").is_file()
    python = (build / ".kit-python").read_text().strip()
    assert subprocess.run([python, "-c", "import pytest"], check=False).returncode == 0
    again = run_setup(build, WITH_CUDA)  # what --dev did covers the prerequisites too
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""


def test_setup_refuses_an_unknown_option_and_names_the_one_it_has(tmp_path: Path) -> None:
    result = run_setup(tmp_path / "build", "/usr/bin:/bin", "--devel")
    assert result.returncode == 2
    assert "unknown option --devel (scripts/setup.sh [--dev|--slurm])" in result.stderr
