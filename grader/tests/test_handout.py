"""handout.py: KIT:TODO regions become TODO comments and skeleton lines; --check writes nothing."""

from pathlib import Path

import pytest

from grader.errors import GraderError
from grader.staff.handout import generate, make_skeleton, make_student_kit

SOURCE = Path("solutions/02_demo/demo.cu")

REFERENCE = """\
#include "demo.h"

__global__ void kernel(float* P, int width) {
    // KIT:TODO(begin) Compute row and col of the P element this thread owns, return if it
    // KIT:TODO        lies outside the matrix, then accumulate the dot product (README, 3):
    // KIT:TODO          - row from the y indices,
    // KIT:TODO
    // KIT:TODO        and store it.
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    P[row] = 0.0f;
    // KIT:TODO(end)
}

int host(int width) {
  // KIT:TODO(begin) Return the width.
  // KIT:SKELETON if (width < 0) {
  // KIT:SKELETON   return -1;
  // KIT:SKELETON }
  // KIT:SKELETON return 0;
  return width;
  // KIT:TODO(end)
}
"""

SKELETON = """\
#include "demo.h"

__global__ void kernel(float* P, int width) {
    // TODO: Compute row and col of the P element this thread owns, return if it
    //       lies outside the matrix, then accumulate the dot product (README, 3):
    //         - row from the y indices,
    //
    //       and store it.
}

int host(int width) {
  // TODO: Return the width.
  if (width < 0) {
    return -1;
  }
  return 0;
}
"""


def test_regions_become_todo_comments_then_skeleton_lines():
    assert make_skeleton(REFERENCE, SOURCE) == SKELETON


def test_hash_comment_files_keep_their_leader():
    answers = """\
[q1]
# KIT:TODO(begin) Q1: would the kernel gain from shared memory ("yes" or
# KIT:TODO        "no")?
benefits = "no"
# KIT:SKELETON benefits =
# KIT:TODO(end)
"""
    wanted = (
        '[q1]\n# TODO: Q1: would the kernel gain from shared memory ("yes" or\n#       "no")?\nbenefits =\n'
    )
    assert make_skeleton(answers, Path("answers.toml")) == wanted


def test_crlf_line_endings_are_kept():
    assert make_skeleton(REFERENCE.replace("\n", "\r\n"), SOURCE) == SKELETON.replace("\n", "\r\n")


@pytest.mark.parametrize(
    "text, words",
    [
        ("a\n// KIT:TODO(begin) x\nb\n", ["demo.cu:2", "never closed"]),
        ("// KIT:TODO(begin) x\n// KIT:TODO(begin) y\n// KIT:TODO(end)\n", ["demo.cu:2", "opened at line 1"]),
        ("a\n// KIT:TODO(end)\n", ["demo.cu:2", "without a KIT:TODO(begin)"]),
        ("// KIT:SKELETON return;\n", ["demo.cu:1", "KIT:SKELETON outside"]),
        ("// KIT:TODO   stray\n", ["demo.cu:1", "continuation outside"]),
        ("// KIT:TODO(begin) x\n// KIT:TOOD y\n// KIT:TODO(end)\n", ["demo.cu:2", "unknown marker KIT:TOOD"]),
        ("// KIT:TODO(begin)\n// KIT:TODO(end)\n", ["demo.cu:1", "has no text"]),
        ("int main() { return 0; }\n", ["no KIT:TODO(begin) region"]),
    ],
)
def test_bad_markers_are_errors_naming_file_and_line(text, words):
    with pytest.raises(GraderError) as caught:
        make_skeleton(text, SOURCE)
    for word in words:
        assert word in str(caught.value)


def test_generate_writes_the_skeletons_and_check_finds_none_stale(fake_kit):
    stale = generate(fake_kit.kit)
    assert sorted(path.name for path in stale) == ["demo.cu", "other.cu"]
    skeleton = (fake_kit.root / "labs/02_demo/demo.cu").read_text()
    assert "// TODO: Return the width." in skeleton and "  return 0;" in skeleton
    assert "return width;" not in skeleton
    assert generate(fake_kit.kit, check=True) == []


def test_check_mode_lists_a_stale_skeleton_and_writes_nothing(fake_kit):
    generate(fake_kit.kit)
    target = fake_kit.root / "labs/03_other/other.cu"
    target.write_text("edited by hand\n")
    assert generate(fake_kit.kit, check=True) == [target]
    assert target.read_text() == "edited by hand\n"


def test_a_missing_solution_file_is_named(fake_kit):
    (fake_kit.root / "solutions/03_other/other.cu").unlink()
    with pytest.raises(GraderError, match="solutions/03_other/other.cu is missing"):
        generate(fake_kit.kit, check=True)


def test_student_kit_leaves_out_solutions_and_build_folders(fake_kit, tmp_path):
    generate(fake_kit.kit)
    (fake_kit.root / "build").mkdir(exist_ok=True)
    (fake_kit.root / "build" / "junk.o").write_text("object")
    out = tmp_path / "student-kit"
    files = make_student_kit(fake_kit.kit, out)
    relative = {path.relative_to(out).as_posix() for path in files}
    assert "labs/02_demo/demo.cu" in relative
    assert (out / "labs/02_demo/demo.cu").read_text() == (fake_kit.root / "labs/02_demo/demo.cu").read_text()
    assert not any(name.startswith(("solutions/", "bench/", "build/")) for name in relative)
    assert not (out / "solutions").exists()


def test_student_kit_refuses_stale_skeletons_and_an_existing_folder(fake_kit, tmp_path):
    generate(fake_kit.kit)
    (fake_kit.root / "labs/02_demo/demo.cu").write_text("// edited by hand\n")
    with pytest.raises(GraderError, match="run make handout first"):
        make_student_kit(fake_kit.kit, tmp_path / "kit-a")
    assert not (tmp_path / "kit-a").exists()
    generate(fake_kit.kit)
    (tmp_path / "kit-b").mkdir()
    with pytest.raises(GraderError, match="already exists"):
        make_student_kit(fake_kit.kit, tmp_path / "kit-b")
