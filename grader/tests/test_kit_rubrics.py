"""The real kit's rubrics against the real test executables that `make test` built.

`make test` sets KIT_BUILD_DIR to its build folder (reference kernels, hidden tests included),
so every rubric is checked against its executable's listing on every CI run: a test renamed,
added or removed without its rubric line fails here, not at grading time. Also checks the
tag rules the grader relies on (docs/architecture.md, "Tests").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.rubric import check_rubric_against_listing, find_kit_root, load_kit
from grader.run import RunConfig, list_tests

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
        assert tags <= KINDS | {lab.tag, "gpu"}, f"{test.name!r} has unknown tags {sorted(tags - KINDS)}"
