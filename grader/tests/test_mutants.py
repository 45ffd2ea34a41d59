"""mutants.py: mutant headers and the sample students made from them."""

import pytest

from grader.errors import GraderError
from grader.mutants import find_mutants, parse_mutant, sample_students, write_sample_class

HEADER = """\
// kit-mutant: transposed
// kit-file: demo.cu
// kit-expect-loss: 20
// kit-expect-hint: looks transposed
// kit-description: reads N transposed
#include "demo.h"
// kit-expect-loss: 99   (below the header: ordinary code comment, ignored)
"""


def write(tmp_path, text, name="transposed.cu"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_parses_the_header(fake_kit, tmp_path):
    mutant = parse_mutant(write(tmp_path, HEADER), fake_kit.kit.labs[0])
    assert (mutant.name, mutant.kit_file, mutant.expect_loss, mutant.expect_hint) == (
        "transposed",
        "demo.cu",
        20,
        "looks transposed",
    )
    assert mutant.description == "reads N transposed"
    assert mutant.student_id == "lab02-transposed"


def test_all_means_every_point_of_the_lab_and_kit_file_is_optional_with_one_file(fake_kit, tmp_path):
    mutant = parse_mutant(
        write(tmp_path, "// kit-mutant: transposed\n// kit-expect-loss: all\n"), fake_kit.kit.labs[0]
    )
    assert mutant.expect_loss is None and mutant.expected_loss_points() == 40
    assert mutant.kit_file == "demo.cu" and mutant.expect_hint is None


@pytest.mark.parametrize(
    "text, words",
    [
        (
            "// kit-mutant: transposed\n// kit-expect-los: 3\n",
            ["transposed.cu:2", "unknown header key kit-expect-los"],
        ),
        (
            "// kit-mutant: transposed\n// kit-expect-loss: lots\n",
            ["transposed.cu:2", "'lots' is not a number"],
        ),
        ("// kit-mutant: transposed\n// kit-expect-loss: 0\n", ["transposed.cu:2", "more than 0"]),
        ("// kit-mutant: other_name\n// kit-expect-loss: 3\n", ["transposed.cu:1", "make them equal"]),
        (
            "// kit-mutant: transposed\n// kit-file: nope.cu\n// kit-expect-loss: 3\n",
            ["transposed.cu:2", "'nope.cu'"],
        ),
        ("// kit-mutant: transposed\n// kit-mutant: transposed\n", ["transposed.cu:2", "given twice"]),
        ("// kit-mutant: transposed\n", ["missing // kit-expect-loss"]),
    ],
)
def test_header_errors_name_file_and_line(fake_kit, tmp_path, text, words):
    with pytest.raises(GraderError) as caught:
        parse_mutant(write(tmp_path, text), fake_kit.kit.labs[0])
    for word in words:
        assert word in str(caught.value)


def test_sample_students_are_the_reference_and_one_per_mutant(fake_kit):
    kit = fake_kit.kit
    assert [m.name for m in find_mutants(kit, list(kit.labs))] == ["broken", "transposed"]
    students = sample_students(kit, list(kit.labs), mutant_lab_only=True)
    assert [s.student_id for s in students] == ["reference", "lab02-broken", "lab02-transposed"]
    reference, _, transposed = students
    assert set(reference.files) == {"labs/02_demo/demo.cu", "labs/03_other/other.cu"}
    assert set(transposed.files) == {"labs/02_demo/demo.cu"} and [lab.id for lab in transposed.labs] == ["02"]
    assert b"kit-mutant: transposed" in transposed.files["labs/02_demo/demo.cu"]
    whole = sample_students(kit, list(kit.labs), mutant_lab_only=False)[2]
    assert set(whole.files) == {"labs/02_demo/demo.cu", "labs/03_other/other.cu"}


def test_the_sample_class_is_written_as_submission_folders(fake_kit, tmp_path):
    students = sample_students(fake_kit.kit, list(fake_kit.kit.labs), mutant_lab_only=False)
    entries = write_sample_class(students, tmp_path / "class")
    assert [sid for sid, _ in entries] == ["reference", "lab02-broken", "lab02-transposed"]
    assert (
        (tmp_path / "class/reference/labs/03_other/other.cu").read_text().startswith("// Lab 03 reference.")
    )
