"""rubric.py: loading, validation messages, and the cross-check against the executable's list."""

from pathlib import Path

import pytest

from grader.errors import GraderError
from grader.rubric import check_rubric_against_listing, load_kit, load_rubric

from .conftest import LAB02_RUBRIC


def write_rubric(tmp_path: Path, text: str, folder: str = "02_demo") -> Path:
    path = tmp_path / "labs" / folder / "rubric.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_loads_the_lab_and_its_tests(tmp_path):
    lab = load_rubric(write_rubric(tmp_path, LAB02_RUBRIC))
    assert (lab.id, lab.slug, lab.executable, lab.student_files) == (
        "02",
        "02_demo",
        "lab02_tests",
        ("demo.cu",),
    )
    assert lab.max_points == 40
    assert (lab.tests[0].hint or "").startswith("README section 3")
    assert lab.tests[2].visibility == "visible"  # the default
    assert lab.tests[4].visibility == "hidden"
    speed = lab.test("kernel speed is close to the reference kernel")
    assert speed is not None and speed.partial is not None
    assert speed.partial.metric == "time_ratio" and speed.partial.full_at == 1.25


TEST_HEAD = LAB02_RUBRIC.split("[[test]]")[0]


@pytest.mark.parametrize(
    "tests, words",
    [
        ('[[test]]\nname = "a"\npoints = -1\n', ["points", "negative", ">= 0"]),
        ('[[test]]\nname = "a"\npoints = "ten"\n', ["points", "not a number"]),
        ('[[test]]\nname = "a"\npoints = true\n', ["points", "not a number"]),
        (
            '[[test]]\nname = "a"\npoints = 1\nvisibility = "public"\n',
            ["visibility", "'public'", "after_due_date"],
        ),
        (
            '[[test]]\nname = "a"\npoints = 1\nvisiblity = "hidden"\n',
            ["unknown key 'visiblity'", "visibility"],
        ),
        ("[[test]]\npoints = 1\n", ["missing the key 'name'"]),
        ('[[test]]\nname = "a"\n', ["missing the key 'points'"]),
        ('[[test]]\nname = "a, b"\npoints = 1\n', ["name contains ,", "rename"]),
        ('[[test]]\nname = "uses [brackets]"\npoints = 1\n', ["name contains [ ]"]),
        ('[[test]]\nname = "a \\"quoted\\" name"\npoints = 1\n', ['name contains "']),
        ('[[test]]\nname = "-starts with dash"\npoints = 1\n', ["must not start with '-'"]),
        (
            '[[test]]\nname = "a"\npoints = 1\n[[test]]\nname = "a"\npoints = 2\n',
            ["#2", "repeats the name 'a'"],
        ),
        (
            '[[test]]\nname = "a"\npoints = 1\n[test.partial]\nmetric = "time_ratio"\nfull_at = 3.0\nzero_at = 1.0\n',
            ["full_at = 3.0 must be less than zero_at = 1.0"],
        ),
        (
            '[[test]]\nname = "a"\npoints = 1\n[test.partial]\nmetric = "time_ratio"\nzero_at = 1.0\n',
            ["missing the key 'full_at'"],
        ),
        (
            '[[test]]\nname = "a"\npoints = 1\n[test.partial]\nmetric = "time ratio"\nfull_at = 1\nzero_at = 2\n',
            ["metric = 'time ratio'"],
        ),
        (
            '[[test]]\nname = "a"\npoints = 1\n[test.partial]\nmetric = "t"\n'
            "full_at = 1\nzero_at = 2\nstep = 0\n",
            ["step = 0.0 must be greater than 0", "step = 0.5"],
        ),
        ("", ["no [[test]] entries"]),
    ],
)
def test_rejects_a_bad_test_entry_naming_file_key_and_fix(tmp_path, tests, words):
    path = write_rubric(tmp_path, TEST_HEAD + tests)
    with pytest.raises(GraderError) as caught:
        load_rubric(path)
    message = str(caught.value)
    assert str(path) in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    "change, words",
    [
        (("[lab]", '[lab]\nid = "02"'), ["[lab] id comes from the folder name '02_demo'", "remove the line"]),
        (("[lab]", '[lab]\nslug = "02_demo"'), ["[lab] slug comes from the folder name"]),
        (("[lab]", '[lab]\nexecutable = "lab02_tests"'), ["executable lab02_tests", "remove the line"]),
        (('student_files = ["demo.cu"]', "student_files = []"), ["student_files", "non-empty list"]),
        (('student_files = ["demo.cu"]', 'student_files = ["../x.cu"]'), ["'../x.cu'", "plain file name"]),
        (('title = "Demo matmul"\n', ""), ["missing the key 'title'"]),
        (("[lab]", '[lab]\nauthor = "me"'), ["unknown key 'author' in [lab]"]),
    ],
)
def test_rejects_a_bad_lab_table(tmp_path, change, words):
    path = write_rubric(tmp_path, LAB02_RUBRIC.replace(*change))
    with pytest.raises(GraderError) as caught:
        load_rubric(path)
    for word in [str(path)] + words:
        assert word in str(caught.value)


def test_id_slug_and_executable_come_from_the_folder_name(tmp_path):
    lab = load_rubric(write_rubric(tmp_path, LAB02_RUBRIC, folder="07_other_lab"))
    assert (lab.id, lab.slug, lab.executable) == ("07", "07_other_lab", "lab07_tests")
    with pytest.raises(GraderError, match="not named NN_slug"):
        load_rubric(write_rubric(tmp_path, LAB02_RUBRIC, folder="7_lab"))


def test_rejects_invalid_toml_with_the_file_name(tmp_path):
    path = write_rubric(tmp_path, LAB02_RUBRIC + "\n[[test]\nname = ")
    with pytest.raises(GraderError, match="not valid TOML"):
        load_rubric(path)


def test_kit_discovers_labs_in_order_and_selects_by_many_spellings(fake_kit):
    kit = fake_kit.kit
    assert [lab.id for lab in kit.labs] == ["02", "03"]
    assert [lab.id for lab in kit.select(["3", "lab02", "03_other"])] == ["03", "02"]
    assert kit.lab_headers(kit.labs[0]) == {"demo.h"}
    with pytest.raises(GraderError, match="no lab '07'.*02, 03"):
        kit.select(["07"])


def test_a_folder_without_labs_is_not_a_kit(tmp_path):
    with pytest.raises(GraderError, match="--kit"):
        load_kit(tmp_path)


def test_cross_check_accepts_a_matching_listing(fake_kit):
    lab = fake_kit.kit.labs[0]
    check_rubric_against_listing(lab, [test.name for test in lab.tests], has_hidden_tests=True)


def test_cross_check_refuses_a_test_the_executable_lacks_and_an_unscored_one(fake_kit):
    lab = fake_kit.kit.labs[0]
    listed = [test.name for test in lab.tests][1:] + ["a test nobody scores"]
    with pytest.raises(GraderError) as caught:
        check_rubric_against_listing(lab, listed, has_hidden_tests=True)
    message = str(caught.value)
    assert (
        "'result matches the host reference for small widths', which lab02_tests does not contain" in message
    )
    assert "'a test nobody scores', which no [[test]] entry scores" in message


def test_cross_check_in_a_student_kit_ignores_hidden_entries(fake_kit):
    lab = fake_kit.kit.labs[0]
    visible = [test.name for test in lab.tests if test.visibility == "visible"]
    check_rubric_against_listing(lab, visible, has_hidden_tests=False)
    with pytest.raises(GraderError, match="hidden widths"):
        check_rubric_against_listing(lab, visible, has_hidden_tests=True)
