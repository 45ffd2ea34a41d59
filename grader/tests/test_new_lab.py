"""A lab added by following docs/tas.md, "Adding a lab", alone: a small lab 07 written into a
copy of the kit, its skeleton made by `handout` and the lab validated, with the grader run from
this checkout and no file of grader/ touched.

Runs wherever nvcc, cmake and the sandbox are (CI included). The lab's one test runs on the CPU,
so that without a GPU the reference, the skeleton and the mutant are still told apart.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.rubric import find_kit_root

from .conftest import skip_unless_the_real_kit_grades_here

KIT_ROOT = find_kit_root()
GRADER_ROOT = Path(__file__).resolve().parents[2]
SLUG = "07_vector_scale"

# Each file the steps name, with NN_slug for the lab's folder (as the section writes it). Alike in
# shape to the labs' own files (labs/*/tests/calls.hpp and the rest), as the steps say to copy them.
LAB_FILES = {
    "labs/NN_slug/CMakeLists.txt": "kit_add_lab()\n",
    "labs/NN_slug/<name>.h": """\
// Lab 07: how many blocks cover a vector.
#pragma once

namespace lab07 {

// The number of blocks of block_size threads that cover n elements, one element a thread.
int blocks_for(int n, int block_size);

}  // namespace lab07
""",
    "solutions/NN_slug/<file>.cu": """\
// Lab 07's reference.
#include "vector_scale.h"

namespace lab07 {

int blocks_for(int n, int block_size) {
  // KIT:TODO(begin) Return the number of blocks that cover n elements: round up. README section 1.
  return (n + block_size - 1) / block_size;
  // KIT:SKELETON return 0;
  // KIT:TODO(end)
}

}  // namespace lab07
""",
    "labs/NN_slug/tests/calls.hpp": """\
// Lab 07's API as it crosses from the tests (the judge) to the student's code (the worker).
#pragma once

#include "kit/remote.hpp"

namespace lab07_calls {

struct BlocksFor {
  static constexpr const char* name = "lab07::blocks_for";
  template <class Wire>
  static void args(Wire& w, int& n, int& block_size) {
    w.value(n), w.value(block_size);
  }
};

}  // namespace lab07_calls
""",
    "labs/NN_slug/tests/calls_judge.cpp": """\
// Lab 07's API on the judge's side: each function sends its call to a worker.
#include "calls.hpp"
#include "vector_scale.h"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);
}  // namespace

namespace lab07 {

int blocks_for(int n, int block_size) {
  return kit::remote::call<lab07_calls::BlocksFor, int>(role, n, block_size);
}

}  // namespace lab07
""",
    "labs/NN_slug/tests/worker/serve.cpp": """\
// Lab 07's worker: the calls it serves from the student's code.
#include "../calls.hpp"
#include "vector_scale.h"

namespace {
[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab07_calls::BlocksFor>(&lab07::blocks_for),
};
}  // namespace
""",
    "labs/NN_slug/tests/test_<slug>.cpp": """\
// Lab 07's test, on the CPU.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "vector_scale.h"

TEST_CASE("the blocks cover every element with less than one block to spare", "[lab07][correctness]") {
  const int n = GENERATE(1, 255, 256, 257, 100000);
  CAPTURE(n);
  const int blocks = lab07::blocks_for(n, 256);
  CHECK(blocks * 256 >= n);
  CHECK((blocks - 1) * 256 < n);
}
""",
    "labs/NN_slug/rubric.toml": """\
[lab]
title = "Vector scale"
student_files = ["vector_scale.cu"]

[[test]]
name = "the blocks cover every element with less than one block to spare"
points = 100
visibility = "visible"
hint = "README section 1: round up."
""",
    "solutions/NN_slug/mutants.toml": """\
[skeleton]

[[mutant]]
name = "rounds_down"
file = "vector_scale.cu"
expect_loss = 100
expect_hint = "round up"
description = "divides without rounding up"

[[mutant.edit]]
find = "  return (n + block_size - 1) / block_size;\\n"
replace = "  return n / block_size;\\n"
""",
    "labs/NN_slug/README.md": "# Lab 07: vector scale\n\n## 1. Blocks\n\nRound up.\n",
}
NAMES = {"<name>": "vector_scale", "<file>": "vector_scale", "<slug>": "vector_scale", "NN_slug": SLUG}


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_steps_name_every_file_and_command_this_test_uses():
    steps = section((KIT_ROOT / "docs" / "tas.md").read_text(encoding="utf-8"), "Adding a lab")
    for path in LAB_FILES:
        assert f"`{path}`" in steps, f"docs/tas.md, 'Adding a lab', does not name {path}"
    for words in ("kit_add_lab()", "make handout", "make validate LABS=NN", "make test"):
        assert words in steps, f"docs/tas.md, 'Adding a lab', does not say {words}"


def copy_kit(destination: Path) -> None:
    """What of the kit builds and grades a lab, as a TA's checkout has it; the grader runs from
    here."""
    destination.mkdir(parents=True)
    shutil.copy2(KIT_ROOT / "CMakeLists.txt", destination)
    for folder in ("cmake", "common", "labs", "solutions"):
        shutil.copytree(KIT_ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))


def grader(kit: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grader", *args, "--kit", str(kit)],
        cwd=GRADER_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.integration
def test_a_lab_added_by_the_steps_alone_builds_and_validates(tmp_path):
    skip_unless_the_real_kit_grades_here()
    kit = tmp_path / "kit"
    copy_kit(kit)
    for pattern, text in LAB_FILES.items():
        path = kit / re.sub("|".join(re.escape(key) for key in NAMES), lambda m: NAMES[m.group(0)], pattern)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    handout = grader(kit, "handout")
    assert handout.returncode == 0, handout.stdout + handout.stderr
    skeleton = (kit / "labs" / SLUG / "vector_scale.cu").read_text()
    assert "return 0;" in skeleton and "block_size - 1" not in skeleton

    validated = grader(kit, "validate", "--labs", "07", "--timeout", "60")
    table = validated.stdout + validated.stderr
    assert validated.returncode == 0, table
    rows = [line for line in table.splitlines() if "rounds_down" in line or "reference" in line]
    assert any("rounds_down" in row and "ok" in row for row in rows), table
