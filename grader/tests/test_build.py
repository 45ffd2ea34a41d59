"""build.py and harness.py: the harness built once, a submission's files compiled and relinked,
the in-place build of check, and trimmed compiler output (with a fake cmake, compiler and linker)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from grader.engine.schedule import Scheduler
from grader.errors import GraderError
from grader.pipeline.build import (
    BuildCache,
    BuildConfig,
    build_command,
    build_labs,
    build_submission_lab,
    configure_command,
    trim_log,
)
from grader.pipeline.harness import harness_targets, lab_harness, prepare_harness

from .conftest import read_spec


def harness_for(fake_kit, tmp_path, config=None):
    options = fake_kit.options()
    return prepare_harness(
        fake_kit.kit, list(fake_kit.kit.labs), tmp_path / "harness", config or options.build, options.run
    )


def cache_for(fake_kit, tmp_path):
    return BuildCache(tmp_path / "cache", Scheduler(2, [], 1), fake_kit.options().build)


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


def test_the_students_in_place_build_configures_then_builds_each_lab(fake_kit, tmp_path):
    config = fake_kit.options().build
    results = build_labs(fake_kit.root, tmp_path / "b", list(fake_kit.kit.labs), config)
    assert all(result.ok for result in results.values())
    assert results["02"].exe_path == tmp_path / "b" / "bin" / "lab02_tests"
    assert "-DKIT_KERNELS=student" in (tmp_path / "b" / "CMakeCache.txt").read_text()


def test_a_failed_configure_fails_every_lab_of_the_in_place_build(fake_kit, tmp_path):
    (fake_kit.root / "FAKE_CONFIGURE_FAIL").write_text("")
    results = build_labs(fake_kit.root, tmp_path / "b", list(fake_kit.kit.labs), fake_kit.options().build)
    assert {result.problem for result in results.values()} == {"CMake configure failed"}
    assert "No CMAKE_CUDA_COMPILER" in results["03"].log_tail


def test_the_harness_records_each_labs_compile_and_link_and_lists_its_tests(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    lab02 = harness.labs["02"]
    assert lab02.problem is None
    assert [recipe.name for recipe in lab02.compiles] == ["demo.cu"]
    assert [recipe.executable for recipe in lab02.links] == ["lab02_tests"]
    assert lab02.links[0].kernels.endswith("liblab02_kernels.a")
    assert "kernel speed is close to the reference kernel" in {test.name for test in lab02.tests}
    speed = next(test for test in lab02.tests if test.name == "kernel speed is close to the reference kernel")
    assert speed.tags == ("lab02", "performance", "gpu")


def test_the_harness_builds_only_what_the_graded_labs_need(fake_kit, tmp_path):
    options = fake_kit.options()
    lab02 = [lab for lab in fake_kit.kit.labs if lab.id == "02"]
    harness = prepare_harness(fake_kit.kit, lab02, tmp_path / "harness", options.build, options.run)
    assert harness.labs["02"].problem is None
    manifests = sorted(path.name for path in (tmp_path / "harness" / "kit-manifests").iterdir())
    assert manifests == ["lab02.json"]  # lab 03 was not built
    assert harness_targets(lab02) == ["lab02_manifest"]
    cache = (tmp_path / "harness" / "CMakeCache.txt").read_text().splitlines()
    assert "-DKIT_HARNESS_TARGETS=lab02_manifest" in cache


def test_every_harness_run_says_whether_to_build_the_probes(fake_kit, tmp_path):
    # CMake keeps a -D in its cache: a run without a GPU must not leave the next one without probes.
    options = fake_kit.options()
    labs = list(fake_kit.kit.labs)
    without = replace(options.build, defines={**options.build.defines, "KIT_PROBES": "OFF"})
    prepare_harness(fake_kit.kit, labs, tmp_path / "harness", without, options.run)
    assert "-DKIT_PROBES=OFF" in (tmp_path / "harness" / "CMakeCache.txt").read_text().splitlines()
    prepare_harness(fake_kit.kit, labs, tmp_path / "harness", options.build, options.run)
    assert "-DKIT_PROBES=ON" in (tmp_path / "harness" / "CMakeCache.txt").read_text().splitlines()


def test_a_graded_lab_the_kit_does_not_build_is_that_labs_problem_only(fake_kit, tmp_path):
    spec = json.loads((fake_kit.root / "fake_kit.json").read_text())
    del spec["lab03_tests"]  # as a lab folder with a rubric and no CMakeLists.txt
    (fake_kit.root / "fake_kit.json").write_text(json.dumps(spec))
    harness = harness_for(fake_kit, tmp_path)
    assert harness.labs["02"].problem is None
    assert harness.labs["03"].problem  # graded as a kit problem; lab 02 is graded as usual


def test_a_lab_whose_manifest_is_missing_or_of_another_format_is_that_labs_problem(fake_kit, tmp_path):
    harness_for(fake_kit, tmp_path)
    manifests = tmp_path / "harness" / "kit-manifests"
    (manifests / "lab03.json").unlink()
    manifest = json.loads((manifests / "lab02.json").read_text())
    (manifests / "lab02.json").write_text(json.dumps({**manifest, "format": 0}))
    kit = fake_kit.kit
    labs = {lab.id: lab_harness(kit, lab, tmp_path / "harness", fake_kit.options().run) for lab in kit.labs}
    assert "wrote no manifest for lab 03" in (labs["03"].problem or "")
    assert "not of format 1" in (labs["02"].problem or "")


def test_a_kit_that_does_not_configure_stops_the_run_as_a_kit_problem(fake_kit, tmp_path):
    (fake_kit.root / "FAKE_CONFIGURE_FAIL").write_text("")
    with pytest.raises(GraderError, match="(?s)kit problem.*No CMAKE_CUDA_COMPILER"):
        harness_for(fake_kit, tmp_path)


def test_a_submission_compiles_its_own_file_and_relinks(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    cache = cache_for(fake_kit, tmp_path)
    files = {"demo.cu": b"// FAKE-OUTCOME: fail:no | result matches on hidden widths\nint x;\n"}
    result = build_submission_lab(harness.labs["02"], harness.fingerprint, files, cache)
    assert result.ok and result.exe_path is not None and result.exe_path.name == "lab02_tests"
    spec = read_spec(result.exe_path)
    behaviours = {test["name"]: test["behaviour"] for test in spec["tests"]}
    assert behaviours["result matches on hidden widths"] == "fail:no"
    assert not str(result.exe_path).startswith(str(tmp_path / "harness"))  # the harness's own stays


def test_identical_files_compile_and_link_once(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    cache = cache_for(fake_kit, tmp_path)
    same = {"demo.cu": b"int demo_host(int w) { return w; }\n"}
    first = build_submission_lab(harness.labs["02"], harness.fingerprint, same, cache)
    second = build_submission_lab(harness.labs["02"], harness.fingerprint, dict(same), cache)
    other = build_submission_lab(harness.labs["02"], harness.fingerprint, {"demo.cu": b"int y;\n"}, cache)
    assert first.exe_path == second.exe_path != other.exe_path
    assert (cache.compiled, cache.linked) == (2, 2)


def test_a_compile_error_costs_only_its_lab_and_names_only_the_students_file(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    cache = cache_for(fake_kit, tmp_path)
    broken = {"demo.cu": b'#include "demo.h"\n// FAKE-COMPILE-ERROR\nint demo_host(int w) { return w }\n'}
    result = build_submission_lab(harness.labs["02"], harness.fingerprint, broken, cache)
    assert not result.ok and result.problem == "lab02 did not compile"
    assert result.log_tail.startswith('demo.cu(2): error: expected a ";"')
    assert str(tmp_path) not in result.log_tail  # no private path of the grading machine
    assert build_submission_lab(harness.labs["03"], harness.fingerprint, {"other.cu": b"int z;\n"}, cache).ok


def test_objects_that_use_what_a_lab_may_not_are_refused_before_linking(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    cache = cache_for(fake_kit, tmp_path)
    assert harness.labs["02"].tools.nm.endswith("fake_binutils.py")  # from the kit's CMake cache
    forged = {"demo.cu": b"// FAKE-SYMBOL U fopen\n// FAKE-SYMBOL T lab02::demo_host(int)\n"}
    result = build_submission_lab(harness.labs["02"], harness.fingerprint, forged, cache)
    assert not result.ok and "defines or uses what a lab may not" in str(result.problem)
    assert result.log_tail.startswith("demo.cu: uses fopen, which a lab's code may use only")
    assert "lab02::demo_host" not in result.log_tail  # its own namespace: allowed
    assert cache.linked == 0  # refused before anything linked them


def test_a_link_error_is_the_students_and_says_so(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    cache = cache_for(fake_kit, tmp_path)
    result = build_submission_lab(
        harness.labs["02"], harness.fingerprint, {"demo.cu": b"// FAKE-LINK-ERROR\n"}, cache
    )
    assert not result.ok and "did not link" in str(result.problem)
    assert "undefined reference" in result.log_tail


def test_a_compile_past_its_time_limit_is_stopped(fake_kit, tmp_path):
    harness = harness_for(fake_kit, tmp_path)
    cache = BuildCache(tmp_path / "cache", Scheduler(1, [], 1), BuildConfig(student_timeout=0.5))
    result = build_submission_lab(
        harness.labs["02"], harness.fingerprint, {"demo.cu": b"// FAKE-COMPILE-HANG\n"}, cache
    )
    assert not result.ok and "stopped after" in result.log_tail


def test_trim_log_keeps_the_errors_with_context_or_else_the_tail():
    log = "\n".join([f"line {i}" for i in range(50)] + ["/src/x.cu(3): error: bad", "  int x = ;", "      ^"])
    assert trim_log(log, Path("/src")) == "x.cu(3): error: bad\n  int x = ;\n      ^"
    assert trim_log("\n".join(f"line {i}" for i in range(100)), Path("/src")).splitlines()[0] == "line 70"


def test_a_students_compile_in_the_sandbox_reads_the_kit_headers_and_nothing_hidden(tmp_path):
    from grader.confine.sandbox import detect
    from grader.pipeline.recipes import CompileRecipe

    secret, include, harness = tmp_path / "solutions", tmp_path / "include", tmp_path / "harness"
    for folder in (secret, include, harness):
        folder.mkdir()
    (secret / "answer.h").write_text("int answer() { return 42; }\n")
    (include / "api.h").write_text("int api();\n")
    check = detect((secret, harness))
    if check.sandbox is None:
        pytest.skip(f"no sandbox here: {check.reason}")
    recipe = CompileRecipe(
        "student.cpp",
        ("g++", f"-I{include}", "-c", "student.cpp", "-o", "student.o"),
        harness,
        "student.cpp",
        "student.o",
    )
    confined = BuildCache(tmp_path / "cache", Scheduler(1, [], 1), BuildConfig(), check.sandbox)
    obj, log = confined.compile("f", recipe, b'#include "api.h"\nint api() { return 1; }\n')
    assert obj is not None and obj.is_file(), log
    stolen = f'#include "{secret}/answer.h"\n'.encode()
    obj, log = confined.compile("f", recipe, stolen)
    assert obj is None and "answer.h" in log
    # Unconfined (make check), the same file compiles: the sandbox is what refused it.
    unconfined = BuildCache(tmp_path / "cache2", Scheduler(1, [], 1), BuildConfig())
    obj, _ = unconfined.compile("f", recipe, stolen)
    assert obj is not None


def test_a_compile_whose_include_folders_are_in_a_response_file_reads_them_confined(tmp_path):
    # CMake's Makefile generator (no ninja) puts include folders in a response file named
    # relative to the build folder, which a confined compile cannot see: the recipe inlines it.
    from grader.confine.sandbox import detect
    from grader.pipeline.harness import _argv

    include, harness = tmp_path / "include", tmp_path / "harness"
    include.mkdir()
    (harness / "CMakeFiles").mkdir(parents=True)
    (include / "api.h").write_text("int api();\n")
    (harness / "CMakeFiles" / "includes_CXX.rsp").write_text(f'-I"{include}" -DKIT_X=1\n')
    entry = {
        "directory": str(harness),
        "command": "g++ @CMakeFiles/includes_CXX.rsp -c student.cpp -o student.o",
    }
    argv = _argv(entry)
    assert argv == ["g++", f"-I{include}", "-DKIT_X=1", "-c", "student.cpp", "-o", "student.o"]
    nvcc = {"directory": str(harness), "arguments": ["nvcc", "--options-file", "CMakeFiles/includes_CXX.rsp"]}
    assert _argv(nvcc) == ["nvcc", f"-I{include}", "-DKIT_X=1"]
    check = detect((harness,))
    if check.sandbox is None:
        pytest.skip(f"no sandbox here: {check.reason}")
    from grader.pipeline.recipes import CompileRecipe

    recipe = CompileRecipe("student.cpp", tuple(argv), harness, "student.cpp", "student.o")
    confined = BuildCache(tmp_path / "cache", Scheduler(1, [], 1), BuildConfig(), check.sandbox)
    obj, log = confined.compile("f", recipe, b'#include "api.h"\nint api() { return KIT_X; }\n')
    assert obj is not None and obj.is_file(), log
