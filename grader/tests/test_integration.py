"""The one test that uses the real tools: lab 02's reference, built with CMake and nvcc, then run.

Skipped where nvcc, cmake or the lab are missing. Without a GPU the [gpu] tests are skipped by
the tests themselves; then only the CPU tests must pass. KIT_TEST_CUDA_ARCH picks the
architecture to compile for (default: the GPU's, or 75 alone when there is none, to be quick).
"""

import json
import shutil
from pathlib import Path

import pytest

from grader.pipeline.collect import submission_from_files
from grader.pipeline.grade import grade_submission
from grader.pipeline.harness import MANIFESTS, harness_config
from grader.rubric import find_kit_root, load_kit
from grader.staff.mutants import reference_files

from .conftest import REAL_HARNESS_LABS, RealHarness, kit_build_as_harness

KIT_ROOT = find_kit_root()
RUBRIC = KIT_ROOT / "labs" / "02_naive_matmul" / "rubric.toml"


@pytest.mark.integration
def test_lab02_reference_builds_runs_and_earns_every_point_that_can_run(tmp_path, real_harness):
    missing = [tool for tool in ("nvcc", "cmake") if not shutil.which(tool)]
    if missing or not RUBRIC.is_file() or not (KIT_ROOT / "solutions" / "02_naive_matmul").is_dir():
        pytest.skip(f"needs nvcc, cmake and lab 02 with its solution (missing: {missing or 'the lab'})")
    kit = load_kit(KIT_ROOT)
    lab = kit.select(["02"])[0]
    submission = submission_from_files("reference", reference_files(kit, [lab]), kit)
    assert submission.refused == [], "the source screen refuses the reference"

    options = real_harness.options([lab], tmp_path, test_limit=300)
    with real_harness.gpu_turn():
        score = grade_submission(kit, submission, options)

    assert score.error is None, score.error
    lab_score = score.labs[0]
    assert lab_score.problem is None, f"{lab_score.problem}\n{lab_score.build_log}"
    not_passed = [(t.name, t.status, t.reasons, t.details) for t in lab_score.tests if t.status != "passed"]
    assert all(status == "skipped" for _, status, _, _ in not_passed), not_passed
    if not not_passed:
        assert lab_score.points == lab_score.max_points, [(t.name, t.reasons) for t in lab_score.tests]
    # The student's file compiled as the build type says: -O3 in Release, where GPU tests are
    # timed, -Og in Untimed, where there is no GPU (CMakeLists.txt); no flag at all would be -O0.
    manifest = json.loads((real_harness.folder / "kit-manifests" / "lab02.json").read_text())
    flag = {"Release": "-O3", "Untimed": "-Xcompiler=-Og"}[options.build.build_type or ""]
    assert all(flag in entry["command"] for entry in manifest["compile"]), manifest["compile"]


def test_make_tests_build_serves_as_the_harness_only_when_configured_as_the_grader_would(tmp_path):
    harness = RealHarness(tmp_path / "unused", "75", tmp_path)
    config = harness_config(harness.build(timeout=1), [])
    settings = {
        "CMAKE_HOME_DIRECTORY:INTERNAL": str(KIT_ROOT.resolve()),
        "CMAKE_BUILD_TYPE:STRING": config.build_type,
        "CMAKE_CUDA_ARCHITECTURES:STRING": config.cuda_arch,
        "KIT_KERNELS:STRING": "reference",  # the one setting allowed to differ
        **{f"{key}:BOOL": value for key, value in config.defines.items() if key != "KIT_HARNESS_TARGETS"},
    }

    def build(changed: dict[str, str], manifests=REAL_HARNESS_LABS) -> Path:
        folder = tmp_path / f"build{len(list(tmp_path.iterdir()))}"
        (folder / MANIFESTS).mkdir(parents=True)
        lines = ["# This is the CMakeCache file.", "//A comment=with an equals sign"]
        lines += [f"{key}={value}" for key, value in {**settings, **changed}.items()]
        (folder / "CMakeCache.txt").write_text("\n".join(lines) + "\n")
        for lab in manifests:
            (folder / MANIFESTS / f"lab{lab}.json").write_text("{}")
        return folder

    assert kit_build_as_harness(build({}), harness)
    assert not kit_build_as_harness(build({}), RealHarness(tmp_path, None, tmp_path))
    assert not kit_build_as_harness(build({}, manifests=REAL_HARNESS_LABS[:1]), harness)
    assert not kit_build_as_harness(build({"CMAKE_CUDA_ARCHITECTURES:STRING": "75;90"}), harness)
    assert not kit_build_as_harness(build({"CMAKE_HOME_DIRECTORY:INTERNAL": str(tmp_path)}), harness)
    other_type = "Release" if config.build_type != "Release" else "Untimed"
    assert not kit_build_as_harness(build({"CMAKE_BUILD_TYPE:STRING": other_type}), harness)
    for key, value in config.defines.items():
        if key != "KIT_HARNESS_TARGETS":
            flipped = "ON" if value != "ON" else "OFF"
            assert not kit_build_as_harness(build({f"{key}:BOOL": flipped}), harness), key
