"""collect.py: submissions as folders and archives, and everything that must be refused."""

import gzip
import io
import os
import re
import tarfile
import time
import zipfile
import zlib
from pathlib import Path
from typing import Literal

import pytest

from grader.errors import GraderError
from grader.pipeline.collect import (
    MAX_DEPTH,
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    MAX_ID_BYTES,
    MAX_RATIO,
    MAX_REFUSALS,
    collect_submission,
    find_submissions,
    student_id_for,
    upload_of,
)
from grader.rubric import find_kit_root, load_kit

GOOD = b'#include "demo.h"\nint demo_host(int width) { return width; }\n'
OTHER = b"int other() { return 3; }\n"


def make_zip(path: Path, entries: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16
            archive.writestr(info, target)
    return path


def make_tar(
    path: Path,
    entries: dict[str, bytes],
    mode: Literal["w", "w:gz"] = "w:gz",
    links: dict[str, str] | None = None,
) -> Path:
    with tarfile.open(path, mode) as archive:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return path


def make_folder(path: Path, entries: dict[str, bytes]) -> Path:
    for name, data in entries.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


def reasons(submission) -> dict[str, str]:
    return {item.path: item.reason for item in submission.refused}


def test_a_flat_folder_is_accepted(fake_kit, tmp_path):
    folder = make_folder(tmp_path / "alice", {"demo.cu": GOOD, "other.cu": OTHER})
    submission = collect_submission(folder, fake_kit.kit)
    assert submission.student_id == "alice"
    assert submission.files == {"02_demo": {"demo.cu": GOOD}, "03_other": {"other.cu": OTHER}}
    assert submission.refused == []


@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar", "w")])
def test_tar_archives_at_kit_paths_are_accepted(fake_kit, tmp_path, suffix, mode):
    path = make_tar(tmp_path / f"bob{suffix}", {"labs/02_demo/demo.cu": GOOD}, mode)
    submission = collect_submission(path, fake_kit.kit)
    assert submission.student_id == "bob"
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}
    assert submission.missing_files(fake_kit.kit.labs[1]) == ["other.cu"]


def test_a_zipped_folder_is_unwrapped_and_os_junk_ignored(fake_kit, tmp_path):
    path = make_zip(
        tmp_path / "carol.zip",
        {
            "carol-lab/demo.cu": GOOD,
            "carol-lab/.DS_Store": b"junk",
            "__MACOSX/carol-lab/._demo.cu": b"junk",
            "carol-lab/Thumbs.db": b"junk",
        },
    )
    submission = collect_submission(path, fake_kit.kit)
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}
    assert submission.refused == []


@pytest.mark.parametrize("name", ["Demo.cu", "demo (1).cu", "demo.cu.txt", "dmeo.cu"])
def test_an_oddly_named_file_is_refused_with_a_suggestion(fake_kit, tmp_path, name):
    folder = make_folder(tmp_path / "dave", {name: GOOD})
    submission = collect_submission(folder, fake_kit.kit)
    assert submission.files == {}
    assert "did you mean demo.cu?" in reasons(submission)[name]


def test_an_extra_file_is_refused_and_the_rest_graded(fake_kit, tmp_path):
    folder = make_folder(
        tmp_path / "erin", {"demo.cu": GOOD, "notes.txt": b"hello", "tests/test_demo.cpp": b"x"}
    )
    submission = collect_submission(folder, fake_kit.kit)
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}
    assert "not a file of any lab" in reasons(submission)["notes.txt"]
    assert "tests/test_demo.cpp" in reasons(submission)


def test_a_lab_file_in_an_odd_folder_is_refused_with_where_to_put_it(fake_kit, tmp_path):
    folder = make_folder(tmp_path / "fay", {"src/demo.cu": GOOD, "other.cu": OTHER})
    assert "put it at the top" in reasons(collect_submission(folder, fake_kit.kit))["src/demo.cu"]


def test_path_traversal_and_absolute_paths_are_refused(fake_kit, tmp_path):
    path = make_zip(
        tmp_path / "mallory.zip", {"../../demo.cu": GOOD, "/etc/demo.cu": GOOD, "other.cu": OTHER}
    )
    submission = collect_submission(path, fake_kit.kit)
    refused = reasons(submission)
    assert "escapes the submission" in refused["../../demo.cu"]
    assert "absolute path" in refused["/etc/demo.cu"]
    assert submission.files == {"03_other": {"other.cu": OTHER}}


def test_symbolic_links_are_refused_in_folders_zips_and_tars(fake_kit, tmp_path):
    folder = make_folder(tmp_path / "sym", {"other.cu": OTHER})
    os.symlink("/etc/passwd", folder / "demo.cu")
    os.symlink("/etc", folder / "etc_dir")
    refused = reasons(collect_submission(folder, fake_kit.kit))
    assert "link" in refused["demo.cu"] and "link" in refused["etc_dir"]
    zipped = collect_submission(
        make_zip(tmp_path / "z.zip", {}, links={"demo.cu": "/etc/passwd"}), fake_kit.kit
    )
    assert "link" in reasons(zipped)["demo.cu"] and zipped.files == {}
    tarred = collect_submission(
        make_tar(tmp_path / "t.tgz", {}, links={"demo.cu": "/etc/passwd"}), fake_kit.kit
    )
    assert "link" in reasons(tarred)["demo.cu"] and tarred.files == {}


def test_an_oversized_file_is_refused(fake_kit, tmp_path):
    folder = make_folder(tmp_path / "big", {"demo.cu": b"//" + b"x" * MAX_FILE_BYTES})
    submission = collect_submission(folder, fake_kit.kit)
    assert "over the" in reasons(submission)["demo.cu"] and submission.files == {}


def test_duplicates_with_different_contents_are_all_refused(fake_kit, tmp_path):
    path = make_zip(tmp_path / "dup.zip", {"demo.cu": GOOD, "labs/02_demo/demo.cu": GOOD + b"// changed\n"})
    submission = collect_submission(path, fake_kit.kit)
    assert submission.files == {}
    assert all("duplicate" in reason for reason in reasons(submission).values())
    assert len(submission.refused) == 2


def test_identical_duplicates_keep_one_copy(fake_kit, tmp_path):
    path = make_zip(tmp_path / "dup.zip", {"demo.cu": GOOD, "labs/02_demo/demo.cu": GOOD})
    submission = collect_submission(path, fake_kit.kit)
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}
    assert len(submission.refused) == 1 and "same contents" in submission.refused[0].reason


def test_a_screened_source_is_refused_with_line_and_token(fake_kit, tmp_path):
    bad = b'#include "demo.h"\n#include <thread>\nint demo_host(int w) { exit(1); return w; }\n'
    submission = collect_submission(make_folder(tmp_path / "eve", {"demo.cu": bad}), fake_kit.kit)
    reason = reasons(submission)["demo.cu"]
    assert submission.files == {}
    assert "line 2" in reason and "<thread>" in reason
    assert "line 3" in reason and "`exit`" in reason and "submit again" in reason


def test_a_binary_file_is_refused(fake_kit, tmp_path):
    submission = collect_submission(make_folder(tmp_path / "bin", {"demo.cu": b"\x7fELF\0\0"}), fake_kit.kit)
    assert "not a text file" in reasons(submission)["demo.cu"]


def test_a_corrupt_archive_is_one_refusal_naming_it(fake_kit, tmp_path):
    path = tmp_path / "broken.zip"
    path.write_bytes(b"this is not a zip")
    submission = collect_submission(path, fake_kit.kit)
    (refusal,) = submission.refused
    assert refusal.whole and refusal.path == "broken.zip" and submission.files == {}
    assert (
        refusal.reason.startswith("cannot be read as a zip archive")
        and "zip the files again" in refusal.reason
    )


def test_student_ids_are_normalised_folder_names():
    assert student_id_for(Path("alice.tar.gz")) == "alice"
    assert student_id_for(Path("Bob Smith.zip")) == "bob_smith"
    assert student_id_for(Path("carol")) == "carol"
    assert student_id_for(Path("\uff21lice.zip")) == "alice"  # NFKC: a fullwidth A is an A
    assert student_id_for(Path("Stra\u00dfe")) == "strasse"  # case folded, not only lowered
    assert student_id_for(Path("-rf.zip")) == "rf" and student_id_for(Path("@sum.zip")) == "sum"
    assert student_id_for(Path("a\nb\x1b[2J.zip")) == "a_b__2j"
    long = student_id_for(Path("x" * 250 + ".zip"))
    assert len(long.encode()) <= MAX_ID_BYTES and long.startswith("xxxx")
    assert long != student_id_for(Path("x" * 249 + ".zip"))  # cut, but still told apart


def test_a_class_folder_is_always_a_folder_of_submissions(fake_kit, tmp_path):
    klass = tmp_path / "class"
    make_folder(klass / "alice", {"demo.cu": GOOD})
    make_zip(klass / "bob.zip", {"demo.cu": GOOD})
    make_folder(klass / "labs", {"02_demo/demo.cu": GOOD})  # a student called labs
    (klass / "roster.csv").write_text("not a submission")
    (klass / "demo.cu").write_bytes(GOOD)  # a stray lab file: not a reason to see one submission
    single = make_folder(tmp_path / "zed", {"demo.cu": GOOD})
    notes: list[str] = []
    found = find_submissions([klass], notes, single=[single])
    assert [(sid, path.name) for sid, path in found] == [
        ("alice", "alice"),
        ("bob", "bob.zip"),
        ("labs", "labs"),
        ("zed", "zed"),
    ]
    assert len(notes) == 3 and all("--submission" in note for note in notes)
    assert notes[0].startswith("demo.cu: a file at the top of the class folder")
    assert notes[1].startswith("labs: graded as a student called labs")
    with pytest.raises(GraderError, match="holds no submission.*--submission"):
        find_submissions([single])


def upload(klass: Path, name: str, data: bytes = GOOD) -> Path:
    """An upload in the class folder, dated years ahead: file times must never decide."""
    klass.mkdir(parents=True, exist_ok=True)
    path = (
        make_zip(klass / name, {"demo.cu": data})
        if name.endswith(".zip")
        else make_folder(klass / name, {"demo.cu": data})
    )
    os.utime(path, (4_000_000_000, 4_000_000_000))
    return path


def test_the_latest_upload_is_the_one_whose_name_says_so_never_the_newest_file(fake_kit, tmp_path):
    klass = tmp_path / "class"
    upload(klass, "alice_attempt_2024-11-20-09-00-00.zip")
    make_zip(klass / "alice_attempt_2024-11-21-08-00-00.zip", {"demo.cu": GOOD})
    upload(klass, "bob.zip")
    make_zip(klass / "bob (2).zip", {"demo.cu": GOOD})
    upload(klass, "carol")
    make_zip(klass / "carol.zip", {"demo.cu": GOOD})
    notes: list[str] = []
    found = find_submissions([klass, klass / "carol.zip"], notes)  # carol.zip named twice: one upload
    assert [(sid, path.name) for sid, path in found] == [
        ("alice", "alice_attempt_2024-11-21-08-00-00.zip"),
        ("bob", "bob (2).zip"),
        ("carol", "carol.zip"),
    ]
    alice, bob, carol = notes
    assert alice.startswith("alice: 2 submissions of one student; grading alice_attempt_2024-11-21")
    assert "by the submission time or attempt number" in alice and alice.endswith(
        "alice_attempt_2024-11-20-09-00-00.zip"
    )
    assert "bob (2).zip" in bob and bob.endswith("leaving out bob.zip")
    # Nothing in carol's names says which is later: the last in name order, and the note says so.
    assert "nothing in their names says which is the latest" in carol and carol.endswith("leaving out carol")


@pytest.mark.parametrize(
    ("name", "student", "when", "attempt"),
    [
        ("alice_attempt_2024-11-20-14-30-05.zip", "alice", "20241120143005", 0),
        ("alice-2024-11-20T14.30.tgz", "alice", "20241120143000", 0),
        ("Alice_20241120T143005", "alice", "20241120143005", 0),
        ("alice_2024-11-20", "alice", "20241120000000", 0),
        ("alice_attempt_3.zip", "alice", "", 3),
        ("alice (2).zip", "alice", "", 2),
        ("jdoe_20150312.zip", "jdoe_20150312", "", 0),  # a student number, not a date
        ("jdoe_2015-13-45.zip", "jdoe_2015-13-45", "", 0),  # no such date
        ("2024-11-20.zip", "2024-11-20", "", 0),  # nothing else: a name, not a time
    ],
)
def test_a_submission_time_or_attempt_at_the_end_of_a_name_orders_uploads(name, student, when, attempt):
    upload = upload_of(Path(name))
    assert (upload.student_id, upload.when, upload.attempt) == (student, when, attempt)


def test_ids_that_differ_only_in_case_are_one_student(fake_kit, tmp_path):
    (tmp_path / "class").mkdir()
    make_zip(tmp_path / "class" / "Carol.zip", {"demo.cu": GOOD})
    make_zip(tmp_path / "class" / "carol.zip", {"demo.cu": GOOD})
    notes: list[str] = []
    found = find_submissions([tmp_path / "class"], notes)
    assert [(sid, path.name) for sid, path in found] == [("carol", "carol.zip")] and len(notes) == 1


def test_names_that_make_one_id_are_different_students_with_ids_of_their_own(fake_kit, tmp_path):
    klass = tmp_path / "class"
    make_folder(klass / "o'brien", {"demo.cu": GOOD})
    upload(klass, "o brien")  # files dated years ahead: still not a re-submission of o'brien's
    make_folder(klass / "o_brien", {"demo.cu": GOOD})
    upload(klass, "\uff41lice.zip")  # a fullwidth look-alike of alice, dated years ahead
    make_zip(klass / "alice.zip", {"demo.cu": GOOD})
    notes: list[str] = []
    found = find_submissions([klass], notes)
    ids = {path.name: sid for sid, path in found}
    assert len(found) == 5 and len(set(ids.values())) == 5, ids
    assert ids["o_brien"] == "o_brien" and ids["alice.zip"] == "alice"  # their own spelling
    assert re.fullmatch(r"o_brien-[0-9a-f]{6}", ids["o'brien"]) and re.fullmatch(
        r"o_brien-[0-9a-f]{6}", ids["o brien"]
    )
    assert re.fullmatch(r"alice-[0-9a-f]{6}", ids["\uff41lice.zip"])
    assert found == find_submissions([klass])  # the same ids in every run
    assert sum("different students" in note for note in notes) == 2


def test_no_student_id_is_one_of_the_class_files():
    assert student_id_for(Path("gradebook.csv.zip")) == "gradebook.csv-student"
    assert student_id_for(Path("Summary.TXT")) == "summary.txt-student"
    assert student_id_for(Path("grading.json.tgz")) == "grading.json-student"


def test_a_data_file_is_not_screened_as_source(fake_kit, tmp_path):
    rubric = fake_kit.root / "labs/03_other/rubric.toml"
    rubric.write_text(rubric.read_text().replace('["other.cu"]', '["other.cu", "answers.toml"]'))
    kit = fake_kit.reload().kit
    answers = b'[q1]\nexit_code = "system"\n'  # words the screen refuses in code
    submission = collect_submission(
        make_folder(tmp_path / "amy", {"answers.toml": answers, "other.cu": OTHER}), kit
    )
    assert submission.refused == []
    assert submission.files == {"03_other": {"other.cu": OTHER, "answers.toml": answers}}


def shared_answers_kit(fake_kit):
    """The fake kit with an answers.toml in both labs, as labs 03 and 06 of the real kit have."""
    for slug, code in (("02_demo", "demo.cu"), ("03_other", "other.cu")):
        rubric = fake_kit.root / f"labs/{slug}/rubric.toml"
        rubric.write_text(rubric.read_text().replace(f'["{code}"]', f'["{code}", "answers.toml"]'))
    return fake_kit.reload().kit


ANSWERS = b'naive_flop_per_byte = "0.25"\n'


@pytest.mark.parametrize("container", ["zip", "folder", "zipped folder", "tar"])
def test_a_flat_answers_file_goes_to_the_lab_of_the_other_files(fake_kit, tmp_path, container):
    kit = shared_answers_kit(fake_kit)
    files = {"other.cu": OTHER, "answers.toml": ANSWERS}
    if container == "zip":
        path = make_zip(tmp_path / "amy.zip", files)
    elif container == "tar":
        path = make_tar(tmp_path / "amy.tgz", files)
    elif container == "folder":
        path = make_folder(tmp_path / "amy", files)
    else:
        path = make_zip(tmp_path / "amy.zip", {f"my lab/{name}": data for name, data in files.items()})
    submission = collect_submission(path, kit)
    assert submission.refused == []
    assert submission.files == {"03_other": {"other.cu": OTHER, "answers.toml": ANSWERS}}


def test_a_flat_answers_file_follows_code_at_kit_paths_and_code_the_screen_refused(fake_kit, tmp_path):
    kit = shared_answers_kit(fake_kit)
    at_kit_path = collect_submission(
        make_zip(tmp_path / "a.zip", {"labs/02_demo/demo.cu": GOOD, "answers.toml": ANSWERS}), kit
    )
    assert at_kit_path.files == {"02_demo": {"demo.cu": GOOD, "answers.toml": ANSWERS}}
    # The code is refused for what it does, but it still says which lab the student worked on.
    screened = b"#include <cstdlib>\nint other() { exit(1); }\n"
    refused_code = collect_submission(
        make_zip(tmp_path / "b.zip", {"other.cu": screened, "answers.toml": ANSWERS}), kit
    )
    assert refused_code.files == {"03_other": {"answers.toml": ANSWERS}}
    assert list(reasons(refused_code)) == ["other.cu"]


def test_a_flat_answers_file_beside_code_of_both_its_labs_is_refused_naming_the_kit_paths(fake_kit, tmp_path):
    kit = shared_answers_kit(fake_kit)
    submission = collect_submission(
        make_zip(tmp_path / "c.zip", {"demo.cu": GOOD, "other.cu": OTHER, "answers.toml": ANSWERS}), kit
    )
    reason = reasons(submission)["answers.toml"]
    assert "labs/02_demo/answers.toml or labs/03_other/answers.toml" in reason
    assert "cannot tell which lab" in reason and "other files of each" in reason
    # The code of both labs is kept and graded.
    assert submission.files == {"02_demo": {"demo.cu": GOOD}, "03_other": {"other.cu": OTHER}}


def test_a_flat_answers_file_alone_is_refused_naming_the_kit_paths(fake_kit, tmp_path):
    kit = shared_answers_kit(fake_kit)
    submission = collect_submission(make_folder(tmp_path / "d", {"answers.toml": ANSWERS}), kit)
    reason = reasons(submission)["answers.toml"]
    assert "no other file of either" in reason
    assert "labs/02_demo/answers.toml or labs/03_other/answers.toml" in reason
    assert submission.files == {}


def test_a_submission_with_files_of_two_labs_places_each_answers_file(fake_kit, tmp_path):
    kit = shared_answers_kit(fake_kit)
    other_answers = b'cc13_blocks_per_sm = "8"\n'
    # Lab 02's answers at its kit path, lab 03's flat: the flat one is lab 03's, the only lab
    # with other files that does not have its answers yet.
    submission = collect_submission(
        make_zip(
            tmp_path / "e.zip",
            {
                "labs/02_demo/demo.cu": GOOD,
                "labs/02_demo/answers.toml": ANSWERS,
                "other.cu": OTHER,
                "answers.toml": other_answers,
            },
        ),
        kit,
    )
    assert submission.refused == []
    assert submission.files == {
        "02_demo": {"demo.cu": GOOD, "answers.toml": ANSWERS},
        "03_other": {"other.cu": OTHER, "answers.toml": other_answers},
    }


def test_the_kits_lab_03_submitted_flat_keeps_its_answers(tmp_path):
    # A case seen from an LMS export: tiled_matmul.cu, block_transpose.cu and answers.toml at the top of
    # a zip; answers.toml is a file of labs 03 and 06, and the rest is lab 03's.
    kit = load_kit(find_kit_root())
    lab03 = kit.solution_dir(kit.select(["03"])[0])
    names = ["tiled_matmul.cu", "block_transpose.cu", "answers.toml"]
    files = {name: (lab03 / name).read_bytes() for name in names}
    submission = collect_submission(make_zip(tmp_path / "student.zip", files), kit)
    assert submission.refused == []
    assert submission.files == {"03_tiled_matmul": files}


# ---------------------------------------------------------------------------------------------
# Bounded in every dimension: each case is built here, at run time, small on disk.


def deep_folder(root: Path, levels: int) -> Path:
    """`levels` nested folders under root, made one level at a time (a single path of 1,100
    levels is too long for one system call)."""
    here = Path(os.getcwd())
    os.makedirs(root, exist_ok=True)
    try:
        os.chdir(root)
        for _ in range(levels):
            os.mkdir("d")
            os.chdir("d")
        Path("demo.cu").write_bytes(GOOD)
    finally:
        os.chdir(here)
    return root


def remove_deep_folder(root: Path) -> None:
    """rmtree recurses once per level; this does not."""
    depth = 0
    while (root / ("d/" * (depth + 1))).is_dir():
        depth += 1
    (root / ("d/" * depth) / "demo.cu").unlink()
    for level in range(depth, 0, -1):
        os.rmdir(root / ("d/" * level))


def test_a_folder_1100_levels_deep_is_read_to_the_depth_limit_only(fake_kit, tmp_path):
    root = deep_folder(tmp_path / "deep", 1100)
    try:
        (root / "other.cu").write_bytes(OTHER)
        start = time.monotonic()
        submission = collect_submission(root, fake_kit.kit)
        assert time.monotonic() - start < 2
        assert submission.files == {"03_other": {"other.cu": OTHER}}  # what is in reach is graded
        ((path, reason),) = reasons(submission).items()
        assert path == "d/" * (MAX_DEPTH - 1) + "d" and f"more than {MAX_DEPTH} levels deep" in reason
        klass = tmp_path / "class"
        klass.mkdir()
        os.rename(root, klass / "deep")
        assert [sid for sid, _ in find_submissions([klass])] == ["deep"]  # and no walk of it
    finally:
        remove_deep_folder(klass / "deep" if (tmp_path / "class" / "deep").exists() else root)


def test_a_folder_of_thousands_of_files_stops_at_the_entry_limit_with_one_line(fake_kit, tmp_path):
    root = make_folder(tmp_path / "many", {"demo.cu": GOOD, "build/a.txt": b""})
    for index in range(MAX_ENTRIES + 500):
        (root / "build" / f"junk{index:05d}.txt").write_bytes(b"")
    start = time.monotonic()
    submission = collect_submission(root, fake_kit.kit)
    assert time.monotonic() - start < 5
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}  # read before the limit
    ((path, reason),) = reasons(submission).items()
    assert path == "many" and submission.refused[0].whole
    assert reason.startswith(f"the folder build/ holds more than {MAX_ENTRIES} entries: the grader stopped")
    # Across folders, the count stops the reading as well; the refusals are capped.
    for index in range(MAX_ENTRIES + 500):
        (root / f"junk{index % 3}").mkdir(exist_ok=True)
        (root / "build" / f"junk{index:05d}.txt").rename(root / f"junk{index % 3}" / f"{index:05d}.txt")
    submission = collect_submission(root, fake_kit.kit)
    assert submission.refused[0].whole and f"more than {MAX_ENTRIES} entries" in submission.refused[0].reason
    assert (
        len(submission.refused) == MAX_REFUSALS
        and "more entries were refused" in submission.refused[-1].reason
    )
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}


def tar_header(name: str, size: int) -> bytes:
    """A ustar header claiming `size` bytes (GNU base-256 for sizes past 8 GiB)."""
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def test_a_tar_member_claiming_40_gib_stops_the_reading_before_anything_is_inflated(fake_kit, tmp_path):
    good = make_tar(tmp_path / "x.tar", {"demo.cu": GOOD}, "w").read_bytes()[:1024]  # header + data
    bomb = tmp_path / "bomb.tar"  # named .tar, but gzip inside, as an upload may be
    bomb.write_bytes(gzip.compress(good + tar_header("zeros.bin", 40 << 30) + b"\0" * 8192))
    assert bomb.stat().st_size < 2000
    start = time.monotonic()
    submission = collect_submission(bomb, fake_kit.kit)
    assert time.monotonic() - start < 1
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}
    stop = submission.refused[0]
    assert (
        stop.whole
        and "zeros.bin is 40 GiB" in stop.reason
        and "stopped reading after zeros.bin" in stop.reason
    )


def test_a_compression_bomb_stops_at_the_ratio_limit(fake_kit, tmp_path):
    """16 MiB of zeros in a tar.gz of 16 KiB: the grader decompresses about two megabytes of it."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip format
    parts = [packer.compress(tar_header("zeros.bin", 16 << 20))]
    zeros = bytes(1 << 20)
    parts += [packer.compress(zeros) for _ in range(16)]
    data = make_tar(tmp_path / "x.tar", {"demo.cu": GOOD}, "w").read_bytes()
    parts += [packer.compress(data), packer.flush()]
    bomb = tmp_path / "bomb.tgz"
    bomb.write_bytes(b"".join(parts))
    start = time.monotonic()
    submission = collect_submission(bomb, fake_kit.kit)
    assert time.monotonic() - start < 2
    stop = submission.refused[0]
    assert stop.whole and f"more than {MAX_RATIO} to 1" in stop.reason and submission.files == {}


def test_names_that_are_not_utf8_too_long_or_hold_control_characters_are_refused_and_shown_escaped(
    fake_kit, tmp_path
):
    forged = "x.cu\nScore: 100/100\x1b[2J\u202e"
    path = tmp_path / "names.tar"
    with tarfile.open(path, "w", encoding="utf-8", errors="surrogateescape") as archive:
        for name, data in (
            ("na\udcefve.cu", GOOD),
            ("y" * 600 + ".cu", GOOD),
            (forged, GOOD),
            ("demo.cu", GOOD),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    submission = collect_submission(path, fake_kit.kit)
    assert submission.files == {"02_demo": {"demo.cu": GOOD}}
    refused = reasons(submission)
    assert "not UTF-8" in refused["na\\xefve.cu"]
    (long,) = [path for path in refused if path.startswith("yyy")]
    assert len(long) < 200 and "a name of 603 bytes" in refused[long]
    assert "x.cu\\nScore: 100/100\\x1b[2J\\u202e" in refused
    for path, reason in refused.items():
        assert (path + reason).isprintable(), (path, reason)


def test_a_zip_whose_directory_lists_too_many_entries_is_not_opened(fake_kit, tmp_path):
    path = make_zip(tmp_path / "many.zip", {f"f{index}": b"" for index in range(MAX_ENTRIES + 1)})
    (refusal,) = collect_submission(path, fake_kit.kit).refused
    assert refusal.whole and f"lists {MAX_ENTRIES + 1} entries" in refusal.reason
