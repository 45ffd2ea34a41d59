"""mutants.py: mutants declared as edits of the reference, and the sample students made from them."""

import pytest

from grader.errors import GraderError
from grader.rubric import find_kit_root, load_kit
from grader.staff.mutants import (
    find_mutants,
    load_mutants,
    load_skeleton,
    sample_students,
    strip_markers,
    write_sample_class,
)


def declare(fake_kit, text: str):
    (fake_kit.root / "solutions/02_demo/mutants.toml").write_text(text)
    kit = fake_kit.reload().kit
    return load_mutants(kit, kit.labs[0])


ONE_EDIT = """\
[[mutant]]
name = "no_bounds_check"
expect_loss = 5
expect_hint = "bounds"
description = "drops the bounds check"
[[mutant.edit]]
find = "  if (row >= width) return;\\n"
replace = ""
"""


def test_a_mutant_is_the_reference_without_markers_and_with_its_edits(fake_kit):
    (mutant,) = declare(fake_kit, ONE_EDIT)
    assert (mutant.name, mutant.kit_file, mutant.expect_loss, mutant.expect_hint) == (
        "no_bounds_check",
        "demo.cu",
        5,
        "bounds",
    )
    assert mutant.description == "drops the bounds check" and mutant.student_id == "lab02-no_bounds_check"
    reference = (fake_kit.root / "solutions/02_demo/demo.cu").read_text()
    assert mutant.source.decode() == strip_markers(reference).replace("  if (row >= width) return;\n", "")
    assert b"KIT:" not in mutant.source


def test_all_means_every_point_of_the_lab(fake_kit):
    (mutant,) = declare(fake_kit, ONE_EDIT.replace("expect_loss = 5", 'expect_loss = "all"'))
    assert mutant.expect_loss is None and mutant.expected_loss_points() == 40


@pytest.mark.parametrize(
    "change, words",
    [
        (("expect_loss = 5", "expect_los = 5"), ["'no_bounds_check'", "unknown key expect_los"]),
        (("expect_loss = 5", 'expect_loss = "lots"'), ["expect_loss must be a number", "'lots'"]),
        (("expect_loss = 5", "expect_loss = 0"), ["more than 0"]),
        (("expect_loss = 5", 'file = "nope.cu"\nexpect_loss = 5'), ["'nope.cu' is not a student file"]),
        (("if (row >= width) return;", "if (row > width) return;"), ["edit 1", "occurs 0 times", "not once"]),
        (("  if (row >= width) return;\\n", "width"), ["edit 1", "times in demo.cu", "not once"]),
        (("[[mutant.edit]]\nfind", "[[mutant.edits]]\nfind"), ["unknown key edits"]),
        (('replace = ""', ""), ["an edit is find"]),
        (('name = "no_bounds_check"', 'name = "no bounds"'), ["name must be letters"]),
        (("[[mutant]]", "[[mutant]"), ["not valid TOML"]),
    ],
)
def test_declaration_errors_name_the_file_the_mutant_and_the_edit(fake_kit, change, words):
    with pytest.raises(GraderError) as caught:
        declare(fake_kit, ONE_EDIT.replace(*change))
    assert "mutants.toml" in str(caught.value)
    for word in words:
        assert word in str(caught.value)


def test_two_mutants_may_not_share_a_name(fake_kit):
    with pytest.raises(GraderError, match="two mutants are named 'no_bounds_check'"):
        declare(fake_kit, ONE_EDIT + ONE_EDIT)


def test_sample_students_are_the_reference_and_one_per_mutant(fake_kit):
    kit = fake_kit.kit
    assert [m.name for m in find_mutants(kit, list(kit.labs))] == ["broken", "transposed"]
    students = sample_students(kit, list(kit.labs), mutant_lab_only=True)
    assert [s.student_id for s in students] == ["reference", "lab02-broken", "lab02-transposed"]
    reference, _, transposed = students
    assert set(reference.files) == {"labs/02_demo/demo.cu", "labs/03_other/other.cu"}
    assert set(transposed.files) == {"labs/02_demo/demo.cu"} and [lab.id for lab in transposed.labs] == ["02"]
    assert b"FAKE-OUTCOME: fail:mismatch |" in transposed.files["labs/02_demo/demo.cu"]
    whole = sample_students(kit, list(kit.labs), mutant_lab_only=False)[2]
    assert set(whole.files) == {"labs/02_demo/demo.cu", "labs/03_other/other.cu"}


def test_the_sample_class_is_written_as_submission_folders(fake_kit, tmp_path):
    students = sample_students(fake_kit.kit, list(fake_kit.kit.labs), mutant_lab_only=False)
    entries = write_sample_class(students, tmp_path / "class")
    assert [sid for sid, _ in entries] == ["reference", "lab02-broken", "lab02-transposed"]
    assert (
        (tmp_path / "class/reference/labs/03_other/other.cu").read_text().startswith("// Lab 03 reference.")
    )


def test_every_mutant_of_the_kit_applies_to_its_reference_and_changes_it():
    root = find_kit_root()
    if not (root / "solutions").is_dir():
        pytest.skip("a student kit has no solutions/ and no mutants")
    kit = load_kit(root)
    mutants = find_mutants(kit, list(kit.labs))
    assert len(mutants) >= 20
    for mutant in mutants:
        reference = strip_markers((kit.solution_dir(mutant.lab) / mutant.kit_file).read_text())
        assert mutant.source.decode() != reference, mutant.name


def test_a_variant_is_a_correct_rewrite_with_no_expected_loss(fake_kit):
    variant = ONE_EDIT.replace("[[mutant]]", "[[variant]]").replace("[[mutant.edit]]", "[[variant.edit]]")
    with pytest.raises(GraderError, match="variant 'no_bounds_check': unknown key expect_hint, expect_loss"):
        declare(fake_kit, variant)
    plain = variant.replace("expect_loss = 5\n", "").replace('expect_hint = "bounds"\n', "")
    (mutant, declared) = declare(fake_kit, ONE_EDIT + plain)
    assert not mutant.is_variant and declared.is_variant
    assert declared.student_id == "lab02-variant-no_bounds_check" and declared.expected_loss_points() == 0


def test_an_edit_that_changes_nothing_is_refused(fake_kit):
    with pytest.raises(GraderError, match="leave the reference as it was"):
        declare(fake_kit, ONE_EDIT.replace('replace = ""', 'replace = "  if (row >= width) return;\\n"'))


SKELETON = """\
[skeleton]

[[skeleton.may_pass]]
test = "host function rejects a width of zero"
reason = "the skeleton's host function already checks its arguments"

"""


def test_a_skeleton_table_lists_the_tests_it_may_pass_with_their_reasons(fake_kit):
    mutants = declare(fake_kit, SKELETON + ONE_EDIT)  # the mutants around it are unaffected
    assert [mutant.name for mutant in mutants] == ["no_bounds_check"]
    kit = fake_kit.reload().kit
    skeleton = load_skeleton(kit, kit.labs[0])
    assert skeleton.may_pass == {
        "host function rejects a width of zero": "the skeleton's host function already checks its arguments"
    }
    assert skeleton.student_id == "lab02-skeleton"
    # Without the table (or without a mutants.toml) a skeleton may pass nothing.
    assert load_skeleton(kit, kit.labs[1]).may_pass == {}


@pytest.mark.parametrize(
    "change, words",
    [
        (
            ("host function rejects", "host function refuses"),
            ["rubric scores no test", "labs/02_demo/rubric.toml"],
        ),
        (('reason = "the skeleton', 'why = "the skeleton'), ["may_pass 1", "test = "]),
        (
            ('reason = "the skeleton\'s host function already checks its arguments"', 'reason = " "'),
            ["non-empty"],
        ),
        (("[skeleton]\n", "[skeleton]\nmay_fail = []\n"), ["its only key is may_pass"]),
    ],
)
def test_skeleton_declaration_errors_say_what_to_write(fake_kit, change, words):
    declare(fake_kit, SKELETON.replace(*change))
    kit = fake_kit.reload().kit
    with pytest.raises(GraderError) as caught:
        load_skeleton(kit, kit.labs[0])
    assert "mutants.toml: [skeleton]" in str(caught.value)
    for word in words:
        assert word in str(caught.value)


def test_a_test_listed_twice_is_refused(fake_kit):
    declare(fake_kit, SKELETON + SKELETON.replace("[skeleton]\n", ""))
    kit = fake_kit.reload().kit
    with pytest.raises(GraderError, match="listed twice"):
        load_skeleton(kit, kit.labs[0])


def test_validate_grades_each_labs_skeleton_as_handed_out_on_its_lab(fake_kit):
    kit = fake_kit.kit
    students = sample_students(kit, list(kit.labs), mutant_lab_only=True, skeletons=True)
    skeletons = [student for student in students if student.skeleton is not None]
    assert [s.student_id for s in skeletons] == ["lab02-skeleton", "lab03-skeleton"]
    assert skeletons[0].files == {"labs/02_demo/demo.cu": (kit.root / "labs/02_demo/demo.cu").read_bytes()}
    assert [lab.id for lab in skeletons[1].labs] == ["03"] and skeletons[1].mutant is None
    # The sample class that make grade grades has no skeletons.
    assert all(s.skeleton is None for s in sample_students(kit, list(kit.labs), mutant_lab_only=False))


def test_every_skeleton_table_of_the_kit_names_tests_of_its_lab():
    root = find_kit_root()
    if not (root / "solutions").is_dir():
        pytest.skip("a student kit has no solutions/")
    kit = load_kit(root)
    for lab in kit.labs:
        for reason in load_skeleton(kit, lab).may_pass.values():
            assert len(reason) > 20, lab.id
