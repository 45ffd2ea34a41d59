"""build.py: the CMake commands, per-lab failures and trimmed compiler output (with a fake cmake)."""

from pathlib import Path

from grader.build import BuildConfig, build_command, build_labs, configure_command, trim_log
from grader.collect import Submission
from grader.stage import stage_submission


def staged(fake_kit, tmp_path, files=None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return stage_submission(fake_kit.kit, Submission("s", files=files or {}), list(fake_kit.kit.labs), work)


def test_configure_command_has_the_student_kernels_arch_and_defines(tmp_path):
    config = BuildConfig(cmake="cmake", generator="Ninja", cuda_arch="90", defines={"EXTRA": "1"})
    command = configure_command(tmp_path / "src", tmp_path / "b", config)
    assert command[:5] == ["cmake", "-S", str(tmp_path / "src"), "-B", str(tmp_path / "b")]
    for part in [
        "-DKIT_KERNELS=student",
        "-DCMAKE_CUDA_ARCHITECTURES=90",
        "-DEXTRA=1",
        "-DCMAKE_BUILD_TYPE=Release",
    ]:
        assert part in command
    assert command[command.index("-G") + 1] == "Ninja"


def test_an_existing_build_folder_keeps_its_generator(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "CMakeCache.txt").write_text("")
    command = configure_command(tmp_path, tmp_path / "b", BuildConfig(generator="Ninja"))
    assert "-G" not in command
    assert not any(part.startswith("-DCMAKE_CUDA_ARCHITECTURES") for part in command)


def test_build_command_builds_one_target():
    assert build_command(Path("b"), "lab02_tests", BuildConfig(cmake="c", jobs=3)) == [
        "c",
        "--build",
        "b",
        "--target",
        "lab02_tests",
        "-j",
        "3",
    ]


def test_every_lab_builds_with_the_fake_cmake(fake_kit, tmp_path):
    stage = staged(fake_kit, tmp_path)
    config = fake_kit.options().build
    results = build_labs(stage.root, stage.build_dir, list(fake_kit.kit.labs), config)
    assert all(result.ok for result in results.values())
    assert results["02"].exe_path == stage.build_dir / "bin" / "lab02_tests"
    assert "-DKIT_KERNELS=student" in (stage.build_dir / "CMakeCache.txt").read_text()


def test_a_compile_error_costs_only_its_lab_and_shows_the_error(fake_kit, tmp_path):
    broken = b'#include "demo.h"\n// FAKE-COMPILE-ERROR\nint demo_host(int w) { return w }\n'
    stage = staged(fake_kit, tmp_path, {"02_demo": {"demo.cu": broken}})
    results = build_labs(stage.root, stage.build_dir, list(fake_kit.kit.labs), fake_kit.options().build)
    assert not results["02"].ok and results["03"].ok
    assert results["02"].problem == "lab02 did not compile"
    assert 'labs/02_demo/demo.cu(2): error: expected a ";"' in results["02"].log_tail
    assert str(stage.root) not in results["02"].log_tail  # private paths are shortened


def test_a_failed_configure_fails_every_lab(fake_kit, tmp_path):
    stage = staged(fake_kit, tmp_path)
    (stage.root / "FAKE_CONFIGURE_FAIL").write_text("")
    results = build_labs(stage.root, stage.build_dir, list(fake_kit.kit.labs), fake_kit.options().build)
    assert {result.problem for result in results.values()} == {"CMake configure failed"}
    assert "No CMAKE_CUDA_COMPILER" in results["03"].log_tail


def test_a_build_past_its_time_limit_is_stopped(fake_kit, tmp_path):
    slow = tmp_path / "slow_cmake"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    stage = staged(fake_kit, tmp_path)
    results = build_labs(
        stage.root, stage.build_dir, [fake_kit.kit.labs[0]], BuildConfig(cmake=str(slow), timeout=0.5)
    )
    assert "timed out after" in results["02"].problem


def test_trim_log_keeps_the_errors_with_context_or_else_the_tail():
    log = "\n".join([f"line {i}" for i in range(50)] + ["/src/x.cu(3): error: bad", "  int x = ;", "      ^"])
    assert trim_log(log, Path("/src")) == "x.cu(3): error: bad\n  int x = ;\n      ^"
    assert trim_log("\n".join(f"line {i}" for i in range(100)), Path("/src")).splitlines()[0] == "line 70"
