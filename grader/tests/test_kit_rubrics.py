"""The real kit's rubrics against the real test executables that `make test` built.

`make test` sets KIT_BUILD_DIR to its build folder (reference kernels, hidden tests included),
so every rubric is checked against its executable's listing on every CI run: a test renamed,
added or removed without its rubric line fails here, not at grading time. Also checks the
tag rules the grader relies on (docs/design/tests.md, "Tests").
"""

from __future__ import annotations

import os
import re
import subprocess
from itertools import zip_longest
from pathlib import Path

import pytest

from grader.pipeline.harness import lab_harness
from grader.pipeline.run import ALONE_TAG, RunConfig, list_tests
from grader.rubric import check_rubric_against_listing, find_kit_root, load_kit

KINDS = {"correctness", "performance", "safety", "resources", "concepts"}
BUILD = os.environ.get("KIT_BUILD_DIR", "")
KIT = load_kit(find_kit_root())

pytestmark = pytest.mark.skipif(not BUILD, reason="KIT_BUILD_DIR is not set (make test sets it)")


@pytest.mark.parametrize("lab", KIT.labs, ids=lambda lab: lab.tag)
def test_every_rubric_matches_its_executable_and_tags_follow_the_rules(lab, tmp_path: Path) -> None:
    exe = Path(BUILD) / "bin" / lab.executable
    if not exe.is_file():
        pytest.fail(f"{exe} was not built; run make build first")
    listed = list_tests(exe, tmp_path, RunConfig(timeout=60))
    check_rubric_against_listing(lab, {test.name for test in listed}, has_hidden_tests=KIT.has_solutions)
    for test in listed:
        tags = set(test.tags)
        assert lab.tag in tags, f"{test.name!r} lacks the tag [{lab.tag}]"
        assert len(tags & KINDS) == 1, f"{test.name!r} needs exactly one kind tag of {sorted(KINDS)}"
        assert tags <= KINDS | {lab.tag, "gpu", ALONE_TAG}, (
            f"{test.name!r} has unknown tags {sorted(tags - KINDS)}"
        )
        if ALONE_TAG in tags:
            assert "gpu" in tags, (
                f"{test.name!r}: [{ALONE_TAG}] is for [gpu] tests; the others run alone anyway"
            )
        elif "gpu" in tags:
            assert not TOOL_IN_NAME.search(test.name), (
                f"{test.name!r} runs a sanitizer: tag it [{ALONE_TAG}] (grader/pipeline/run.py)"
            )
    for name in gpu_tests_that_must_run_alone(lab):
        tags = next(set(test.tags) for test in listed if test.name == name)
        assert ALONE_TAG in tags, (
            f"{name!r} runs a sanitizer, times kernels or counts the worker's device "
            f"memory: tag it [{ALONE_TAG}] (grader/pipeline/run.py)"
        )


# What a test's name ends with when it runs a sanitizer, and what in its body shows it runs a
# sanitizer over the student's code, times kernels (a measuring window) or counts the worker's
# device memory: the tests that must not share a judge process with others (grader/pipeline/
# run.py, ALONE_TAG). A count of Nsight Compute may share one: it asks for the GPU's profiling
# turn in the middle of its case, as it would alone, and tests that count the same probe share
# one run of ncu there (kit::profiler::profile).
TOOL_IN_NAME = re.compile(r"under (racecheck|synccheck|memcheck|initcheck)$")
NEEDS_ALONE = re.compile(
    r"sanitizer::run|require_compute_sanitizer|SpeedComparison|time_ratio|time_on_device"
    r"|ExclusiveGpu|racecheck|synccheck|memcheck|device_memory\("
)
TEST_CASE = re.compile(r"\bTEST_CASE\(\s*((?:\"[^\"]*\"\s*)+),[^{]*\{")


def gpu_tests_that_must_run_alone(lab) -> list[str]:
    """The names of the lab's [gpu] tests whose source calls for a process of their own."""
    sources = [*KIT.lab_dir(lab).glob("tests/*.c*")]
    if KIT.has_solutions:
        sources += KIT.solution_dir(lab).glob("hidden_tests/*.c*")
    names = []
    for source in sources:
        text = source.read_text()
        cases = list(TEST_CASE.finditer(text))
        for case, after in zip_longest(cases, cases[1:]):
            body = text[case.end() : after.start() if after else len(text)]
            if "[gpu]" in case.group(0) and NEEDS_ALONE.search(body):
                names.append(re.sub(r'"\s*"', "", case.group(1)).strip().strip('"'))
    return names


def test_the_alone_rule_reads_the_test_cases_that_need_it() -> None:
    lab = next(lab for lab in KIT.labs if lab.id == "05")
    names = gpu_tests_that_must_run_alone(lab)
    assert "dynamic kernel lets every thread reach each barrier under synccheck" in names
    assert "dynamic kernel speed is close to the reference kernel" in names
    assert "each launch asks for exactly the dynamic shared memory its configuration needs" not in names
    assert "dynamic kernel reads and writes nothing outside its matrices" not in names


@pytest.mark.parametrize("lab", KIT.labs, ids=lambda lab: lab.tag)
def test_every_labs_manifest_gives_the_grader_what_it_needs_to_rebuild_the_lab(lab, tmp_path: Path) -> None:
    """The contract between CMake and the grader (docs/design/build.md, "The lab manifest"): the
    grader's harness reads only the manifest, so every lab's must name a compile command for each
    student file and a link command that, followed with the kernels library in place of a
    submission's objects, links the program again."""
    harness = lab_harness(KIT, lab, Path(BUILD), RunConfig(timeout=60))
    assert harness.problem is None, harness.problem
    code_files = sorted(name for name in lab.student_files if not name.endswith(".toml"))
    assert [recipe.name for recipe in harness.compiles] == code_files
    for recipe in harness.compiles:
        assert Path(recipe.source).is_file() and Path(recipe.source).parent.name == lab.slug
        assert recipe.source in recipe.argv and any(recipe.output in arg for arg in recipe.argv)
    programs = {link.executable for link in harness.links}
    assert (harness.worker or lab.executable) in programs
    if lab.charts is not None:
        assert lab.charts.target in programs
    answers = [name for name in lab.student_files if name.endswith(".toml")]
    assert [name for _, name in harness.data_files] == answers
    for link in harness.links:
        kernels = (link.cwd / link.kernels).resolve()
        relinked = tmp_path / link.executable
        done = subprocess.run(
            link.command([kernels], relinked), cwd=link.cwd, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and relinked.is_file(), done.stderr[-2000:]
