"""Stage 1, collect: a submission (folder, .zip, .tar, .tar.gz, .tgz) becomes a checked set of files.

Nothing is extracted to disk: entries are read into memory and only names that map to a lab's
student file are kept, so an archive cannot write outside anything. Every other entry is
refused with a reason the student can act on; OS junk is ignored silently.

Reading is bounded in every dimension before the work is done (docs/instructors.md, "Limits"):
a submission is read one entry at a time, an archive's stream is decompressed only as far as
it is read, and at the first limit crossed (entries, bytes decompressed, compression ratio)
the grader stops reading, grades what came before and says where it stopped. Whatever a
submission holds costs that submission alone: collect never raises for its contents.
"""

from __future__ import annotations

import bz2
import difflib
import gzip
import hashlib
import itertools
import lzma
import os
import re
import stat
import struct
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO, cast

from ..confine.screen import screen_source
from ..errors import GraderError
from ..escape import escaped, escaped_name
from ..rubric import Kit, Lab

# The limits of one submission, each checked before the work it bounds (docs/instructors.md).
MAX_FILE_BYTES = 1 << 20  # one file
MAX_ENTRIES = 2000  # files, folders and links: a submission is a few .cu files
MAX_DEPTH = 16  # folder levels below the top of the submission; deeper folders are not read
MAX_TOTAL_BYTES = 32 << 20  # read or decompressed from one submission, skipped entries included
MAX_RATIO = 100  # decompressed bytes per compressed byte (source code compresses 3-10 to 1) ...
RATIO_CHECKED_AFTER = 1 << 20  # ... once this much is decompressed: a small stream says little
MAX_ZIP_DIRECTORY_BYTES = 4 << 20  # a zip's list of entries, which is read whole before any entry
MAX_PATH_BYTES = 512  # one entry's path inside the submission, in UTF-8
MAX_REFUSALS = 50  # refusal lines kept per submission; one more line counts the rest
MAX_ID_BYTES = 64  # a student id in UTF-8: a folder name with room for the report's prefixes

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip", ".tar")
JUNK_FOLDERS = frozenset({"__MACOSX", ".git", ".vscode", ".idea"})
JUNK_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
# The files a class run writes beside the students' folders in --out (report.py, report_pages.py,
# gradebooks.py, grade.py; tests check they agree): no student id may name one of them.
LMS_GRADEBOOKS = frozenset(f"gradebook-{lms}.csv" for lms in ("canvas", "moodle", "blackboard"))
CLASS_FILES = frozenset({"gradebook.csv", "summary.txt", "grading.json", "dashboard.html"}) | LMS_GRADEBOOKS
SCREEN_PROBLEMS_SHOWN = 3
# Files the compiler reads, and so the source screen checks.
SCREENED_SUFFIXES = frozenset(
    {".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl"}
)
# Errors of a damaged or unusual archive (a truncated stream, a bad header, an encrypted or
# unsupported zip member): the student's to pack again, never the grader's.
_UNREADABLE = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    RuntimeError,
    NotImplementedError,
    UnicodeError,
    ValueError,
    struct.error,
)


@dataclass(frozen=True)
class Refusal:
    path: str  # as reports show it (grader/escape.py): never the raw name
    reason: str
    whole: bool = False  # about the submission itself: it could not be read, or not all of it


@dataclass
class Submission:
    student_id: str
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)  # lab slug -> name -> bytes
    refused: list[Refusal] = field(default_factory=list)

    def missing_files(self, lab: Lab) -> list[str]:
        present = self.files.get(lab.slug, {})
        return [name for name in lab.student_files if name not in present]


@dataclass(frozen=True)
class _Entry:
    """One archive or folder member, read lazily so that oversized files are never loaded."""

    path: str
    kind: str  # "file", "dir", "link" or "other"
    size: int
    read: Callable[[int], bytes]
    problem: str | None = None  # why it is refused whatever its name (found while listing)


class _Stop(Exception):
    """A limit of the whole submission was crossed: nothing after this point is read."""


@dataclass
class _Budget:
    """The bytes one submission may still cost to read or decompress (MAX_TOTAL_BYTES)."""

    left: int = MAX_TOTAL_BYTES

    def charge(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise _Stop(
                f"more than {_size(MAX_TOTAL_BYTES)} to read or decompress (the most the grader "
                "reads of one submission)"
            )


def _size(count: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} bytes"


# ---------------------------------------------------------------------------------------------
# Which paths are submissions, and whose


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


# A submission time at the end of an upload's name, as LMS exports write it (Blackboard's
# "_attempt_2024-11-20-14-30-05", or "-2024-11-20T14.30" or "-20241120T143005"), and an attempt
# number ("_attempt_2", or the " (2)" of a second download of one name). Only these forms, with
# a real date: a student number at the end of a name (jdoe_20150312) is part of the name.
_WHEN = re.compile(
    r"[ _-]+(?:attempt[ _-]*)?"
    r"(?:(?P<date>(?:19|20)\d\d-\d\d-\d\d)(?:[ _T-](?P<time>\d\d[-:.]\d\d(?:[-:.]\d\d)?))?"
    r"|(?P<compact>(?:19|20)\d{6}T\d{6}))$",
    re.IGNORECASE,
)
_ATTEMPT = re.compile(r"(?:[ _-]+attempt[ _-]*(?P<attempt>\d{1,6})|\s*\((?P<copy>\d{1,6})\))$", re.IGNORECASE)


def _submission_time(found: re.Match[str]) -> str:
    """The time a _WHEN match names, as 14 digits (YYYYMMDDHHMMSS), or "" if it is no real time."""
    digits = re.sub(r"\D", "", found["compact"] or found["date"] + (found["time"] or "")).ljust(14, "0")
    try:
        datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        return ""
    return digits


@dataclass(frozen=True)
class Upload:
    """One entry of a class folder (or one --submission): whose it is, and where it stands among
    that student's uploads by what its name says (never by file times, which a student sets)."""

    path: Path
    name: str  # the student's name in it: no archive suffix, time or attempt; NFC, case folded
    student_id: str  # that name as a safe folder name (student_id_for)
    when: str  # the digits of the submission time in its name, "" when it has none
    attempt: int  # the attempt number in its name, 0 when it has none


def upload_of(path: Path) -> Upload:
    stem = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    when, attempt = "", 0
    if (found := _WHEN.search(stem)) and found.start() > 0 and (when := _submission_time(found)):
        stem = stem[: found.start()]
    elif (found := _ATTEMPT.search(stem)) and found.start() > 0:
        attempt = int(found["attempt"] or found["copy"])
        stem = stem[: found.start()]
    # Two names are one student's when they are the same text apart from letter case: canonical
    # equivalents (NFC) are the same text, compatibility look-alikes (NFKC: a fullwidth "ａ") are not.
    name = unicodedata.normalize("NFC", stem).casefold()
    return Upload(path, name, _safe_id(stem), when, attempt)


def student_id_for(path: Path) -> str:
    """The id of a submission named `path` (upload_of; find_submissions makes ids unique)."""
    return upload_of(path).student_id


def id_of_name(name: str) -> str:
    """The student id a submission named `name` (no suffix, no date) is graded under: how a
    roster's login or email is matched to a submission (grader/pipeline/gradebooks.py)."""
    return _safe_id(name)


def _safe_id(stem: str) -> str:
    """The name normalised (NFKC, case folded) into a folder name: letters, digits and `._@-`,
    the rest as `_`; starting with neither `.` nor `-` nor `@` (a hidden file, an option, a
    spreadsheet formula); at most MAX_ID_BYTES; none of the class's own files
    (gradebook.csv.zip is graded as gradebook.csv-student)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", stem).casefold())
    safe = "".join(char if char.isalnum() or char in "._@-" else "_" for char in folded)
    safe = safe.lstrip(".-@").rstrip(".")
    if len(safe.encode()) > MAX_ID_BYTES:
        cut = safe.encode()[: MAX_ID_BYTES - 9].decode(errors="ignore")
        safe = f"{cut}-{_digest(stem, 8)}"
    if safe in CLASS_FILES:
        safe += "-student"
    return safe or "student"


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def find_submissions(
    paths: Iterable[Path], notes: list[str] | None = None, single: Iterable[Path] = ()
) -> list[tuple[str, Path]]:
    """(student id, path) for every submission: each archive in `paths` is one, each folder in
    it is a class (a folder of submissions, always), each path in `single` is one (--submission).
    A file at the top of a class that is not an archive is refused with a line in `notes`.

    Uploads whose names are one student's (alice.zip, Alice.tar.gz, a folder alice, alice (2).zip)
    are graded once, on the latest by the time or attempt number in their names, and a line in
    `notes` says which were left out. Uploads that differ in their names but map to one id
    (o'brien and o brien) are different students: each gets the id with a suffix of its own."""
    notes = notes if notes is not None else []
    uploads: list[Upload] = []
    for path in paths:
        if not path.exists():
            raise GraderError(
                f"{escaped(str(path))} does not exist; name a class folder, a submission archive, "
                "or a submission folder with --submission"
            )
        if is_archive(path):
            uploads.append(upload_of(path))
        elif path.is_dir():
            uploads += _class_members(path, notes)
        else:
            raise GraderError(
                f"{escaped(str(path))} is neither a class folder nor a .zip/.tar/.tar.gz/.tgz archive"
            )
    for path in single:
        if not (path.is_dir() or is_archive(path)):
            raise GraderError(
                f"--submission {escaped(str(path))}: a submission is a folder or a "
                ".zip/.tar/.tar.gz/.tgz archive"
            )
        uploads.append(upload_of(path))
    by_name: dict[str, list[Upload]] = {}
    for upload in uploads:
        same = by_name.setdefault(upload.name, [])
        if all(upload.path.resolve() != other.path.resolve() for other in same):  # named twice
            same.append(upload)
    latest = [_latest(same, notes) for same in by_name.values()]
    ids = _unique_ids(latest, notes)
    graded = {id(upload) for upload in latest}  # by identity: one path named twice is one upload
    return [(ids[upload.name], upload.path) for upload in uploads if id(upload) in graded]


def _latest(same: list[Upload], notes: list[str]) -> Upload:
    """The student's latest upload: by the submission time, else the attempt number, in the
    names (an upload without either is the first). When no name says which is the latest, the
    last in name order, and the note says so."""
    if len(same) == 1:
        return same[0]
    ordered = sorted(same, key=lambda upload: (upload.when, upload.attempt, upload.path.name))
    chosen = ordered[-1]
    others = ", ".join(escaped_name(upload.path.name) for upload in ordered[:-1])
    known = (ordered[-2].when, ordered[-2].attempt) != (chosen.when, chosen.attempt)
    why = (
        "the latest by the submission time or attempt number in its name"
        if known
        else "the last in name order, since nothing in their names says which is the latest (no "
        "submission time or attempt number; file times are not used); remove the uploads not to "
        "grade from the class folder"
    )
    notes.append(
        f"{chosen.student_id}: {len(same)} submissions of one student; grading "
        f"{escaped_name(chosen.path.name)}, {why}; leaving out {others}"
    )
    return chosen


def _unique_ids(uploads: list[Upload], notes: list[str]) -> dict[str, str]:
    """Student name -> id, one id per name: where names differ but their ids would be one
    (o'brien, o brien, a look-alike), each name whose id is not its own spelling gets a suffix
    from its name, the same in every run."""
    by_id: dict[str, list[Upload]] = {}
    for upload in uploads:
        by_id.setdefault(upload.student_id, []).append(upload)
    ids = {}
    for student_id, same in by_id.items():
        for upload in same:
            plain = len(same) == 1 or upload.name == student_id
            ids[upload.name] = student_id if plain else f"{student_id}-{_digest(upload.name, 6)}"
        if len(same) > 1:
            # Spelt in ASCII: a look-alike must look different here.
            shown = "; ".join(f"{ascii(escaped_name(u.path.name))[1:-1]} as {ids[u.name]}" for u in same)
            notes.append(
                f"{student_id}: {len(same)} different names make this id; they are different "
                f"students: {shown}"
            )
    return ids


def _class_members(folder: Path, notes: list[str]) -> list[Upload]:
    members = []
    for child in sorted(folder.iterdir()):
        shown = escaped_name(child.name)
        if child.name.startswith(".") or child.name in JUNK_FOLDERS | JUNK_FILES:
            continue
        if child.is_symlink():
            notes.append(
                f"{shown}: a symbolic link in the class folder {escaped(str(folder))}: not followed, "
                "not graded; put the submission itself there"
            )
        elif child.is_dir() or is_archive(child):
            members.append(upload_of(child))
            if child.name == "labs":  # most likely a submission named as a class by mistake
                notes.append(
                    f"labs: graded as a student called labs; if {escaped(str(folder))} is one "
                    "submission, grade it with --submission PATH"
                )
        else:
            notes.append(
                f"{shown}: a file at the top of the class folder {escaped(str(folder))}, not a "
                "submission (a folder or a .zip, .tar, .tar.gz or .tgz archive per student): not "
                "graded; to grade one submission folder on its own, use --submission PATH"
            )
    if not members:
        raise GraderError(
            f"{escaped(str(folder))} holds no submission: a class folder holds one folder or archive "
            "per student; to grade one submission folder, use --submission PATH"
        )
    return members


# ---------------------------------------------------------------------------------------------
# Reading a submission


def collect_submission(path: Path, kit: Kit, student_id: str | None = None) -> Submission:
    """The submission at `path`. Never raises for what the submission holds: a submission that
    cannot be read (a damaged archive, a link) is one refusal, and the grader grades nothing."""
    student_id = student_id or student_id_for(path)
    shown = escaped_name(path.name)
    name = path.name.lower()
    budget = _Budget()
    try:
        if path.is_symlink():
            raise _Unreadable("a symbolic link; submit the folder or archive itself")
        if path.is_dir():
            return _accept(student_id, shown, _folder_entries(path, budget), kit)
        if name.endswith(".zip"):
            with _open_zip(path) as archive:
                return _accept(student_id, shown, _zip_entries(archive, budget), kit)
        if name.endswith((".tar", ".tar.gz", ".tgz")):
            with open(path, "rb") as raw:
                wanted = frozenset(name for lab in kit.labs for name in lab.student_files)
                return _accept(student_id, shown, _tar_entries(raw, budget, wanted), kit)
        raise _Unreadable("a submission is a folder, .zip, .tar, .tar.gz or .tgz")
    except _Unreadable as problem:
        return Submission(student_id, refused=[Refusal(shown, str(problem), whole=True)])


class _Unreadable(Exception):
    """The submission as a whole cannot be read; the message says why and what to do."""


def submission_from_files(student_id: str, files: dict[str, bytes], kit: Kit) -> Submission:
    """A submission from in-memory files keyed by path (the sample class, validate's students)."""
    entries = [
        _Entry(path=name, kind="file", size=len(data), read=partial(_head_of, data))
        for name, data in files.items()
    ]
    return _accept(student_id, "", iter(entries), kit)


def _folder_entries(root: Path, budget: _Budget) -> Iterator[_Entry]:
    """Depth first, each folder's entries in name order, without following links; a folder
    deeper than MAX_DEPTH is refused, not entered. Of one folder at most MAX_ENTRIES + 1 names
    are listed: one with more stops the reading there, before any of its entries, since which
    of them the system lists first is not the student's order."""
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                children = list(itertools.islice(listing, MAX_ENTRIES + 1))
        except OSError as error:
            yield _Entry(prefix or ".", "other", 0, _no_read, f"folder cannot be read ({error.strerror})")
            continue
        if len(children) > MAX_ENTRIES:
            raise _Stop(
                f"the folder {escaped_name(prefix or root.name)} holds more than {MAX_ENTRIES} entries"
            )
        children.sort(key=lambda child: child.name)
        subfolders = []
        for child in children:
            path = prefix + child.name
            try:
                mode = child.stat(follow_symlinks=False)
            except OSError as error:
                yield _Entry(path, "other", 0, _no_read, f"cannot be read ({error.strerror})")
                continue
            if stat.S_ISDIR(mode.st_mode):
                if depth + 1 >= MAX_DEPTH:
                    yield _Entry(
                        path,
                        "other",
                        0,
                        _no_read,
                        f"a folder more than {MAX_DEPTH} levels deep: not read; submit the lab files "
                        "at the top of the submission or at their kit path",
                    )
                else:
                    yield _Entry(path, "dir", 0, _no_read)
                    subfolders.append((Path(child.path), path + "/", depth + 1))
            elif stat.S_ISLNK(mode.st_mode):
                yield _Entry(path, "link", 0, _no_read)
            elif stat.S_ISREG(mode.st_mode):
                yield _Entry(path, "file", mode.st_size, partial(_read_head, Path(child.path), budget))
            else:
                yield _Entry(path, "other", 0, _no_read)
        stack += reversed(subfolders)


def _head_of(data: bytes, limit: int) -> bytes:
    return data[:limit]


def _read_head(path: Path, budget: _Budget, limit: int) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(limit)
    budget.charge(len(data))
    return data


def _no_read(limit: int) -> bytes:
    return b""


def _open_zip(path: Path) -> zipfile.ZipFile:
    """The zip, once its end record says that its list of entries is within the limits: the
    zipfile module reads and parses that list whole when it opens an archive."""
    try:
        entries, directory_bytes = _zip_directory_claims(path)
        if entries > MAX_ENTRIES or directory_bytes > MAX_ZIP_DIRECTORY_BYTES:
            raise _Unreadable(
                f"the archive lists {entries} entries in {_size(directory_bytes)} (at most {MAX_ENTRIES} "
                f"in {_size(MAX_ZIP_DIRECTORY_BYTES)}): not read; submit only the lab files"
            )
        return zipfile.ZipFile(path)
    except _UNREADABLE as error:
        raise _Unreadable(
            f"cannot be read as a zip archive ({escaped(str(error))}); zip the files again"
        ) from None


def _zip_directory_claims(path: Path) -> tuple[int, int]:
    """(entries, bytes) of a zip's central directory, from its end record (zip64's included)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        tail_bytes = min(size, 22 + 0xFFFF)  # the end record, and a comment of at most 64 KiB
        handle.seek(size - tail_bytes)
        tail = handle.read(tail_bytes)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            raise zipfile.BadZipFile("no end of central directory")
        entries, directory_bytes = struct.unpack_from("<HL", tail, at + 10)
        locator = at - 20
        if (entries == 0xFFFF or directory_bytes == 0xFFFFFFFF) and tail[
            locator : locator + 4
        ] == b"PK\x06\x07":
            handle.seek(struct.unpack_from("<Q", tail, locator + 8)[0])
            record = handle.read(56)
            if record[:4] != b"PK\x06\x06":
                raise zipfile.BadZipFile("a zip64 locator without its end record")
            entries, directory_bytes = struct.unpack_from("<QQ", record, 32)
        return entries, directory_bytes


def _zip_entries(archive: zipfile.ZipFile, budget: _Budget) -> Iterator[_Entry]:
    for info in archive.infolist():
        if info.is_dir():
            kind = "dir"
        elif stat.S_ISLNK(info.external_attr >> 16):
            kind = "link"
        else:
            kind = "file"
        yield _Entry(info.filename, kind, info.file_size, partial(_read_zip, archive, info, budget))


def _read_zip(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget, limit: int) -> bytes:
    # The zipfile module never inflates a member past the size the directory claims for it,
    # and refuses a compression method it does not support (NotImplementedError).
    with archive.open(info) as handle:
        data = handle.read(limit)
    budget.charge(len(data))
    return data


class _CountedStream:
    """The decompressed bytes of a tar stream, counted as tarfile reads them: past the budget or
    the compression ratio, reading stops (_Stop) before the decompressor does more work."""

    def __init__(self, raw: BinaryIO, budget: _Budget) -> None:
        self.raw = raw
        self.budget = budget
        self.total = 0
        magic = raw.read(6)
        raw.seek(0)
        self.stream: BinaryIO | gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile = raw
        if magic.startswith(b"\x1f\x8b"):
            self.stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif magic.startswith(b"BZh"):
            self.stream = bz2.BZ2File(raw)
        elif magic.startswith(b"\xfd7zXZ\x00"):
            self.stream = lzma.LZMAFile(raw)

    def read(self, size: int = -1) -> bytes:
        wanted = self.budget.left + 1 if size < 0 else min(size, self.budget.left + 1)
        data = self.stream.read(wanted)
        self.total += len(data)
        self.budget.charge(len(data))
        if self.total > RATIO_CHECKED_AFTER and self.total > MAX_RATIO * max(self.raw.tell(), 1):
            raise _Stop(
                f"compressed more than {MAX_RATIO} to 1 (a compression bomb?): the grader does not "
                "decompress it further"
            )
        return data


def _tar_entries(raw: BinaryIO, budget: _Budget, wanted: frozenset[str]) -> Iterator[_Entry]:
    """A tar's members in stream order, each lab file among them read as it passes (a compressed
    stream cannot go back). Before tarfile skips a member, the bytes it would decompress to do
    so are checked against the budget: a member claiming 40 GiB stops the reading at once."""
    try:
        archive = tarfile.open(fileobj=cast(IO[bytes], _CountedStream(raw, budget)), mode="r|")
    except _UNREADABLE as error:
        raise _Unreadable(
            f"cannot be read as a tar archive ({escaped(str(error))}); pack the files again"
        ) from None
    while (member := archive.next()) is not None:
        if member.isdir():
            kind = "dir"
        elif member.issym() or member.islnk():
            kind = "link"
        elif member.isfile() and not member.issparse():
            kind = "file"
        else:
            kind = "other"
        data = b""
        if kind == "file" and member.size <= MAX_FILE_BYTES and PurePosixPath(member.name).name in wanted:
            handle = archive.extractfile(member)
            data = handle.read(MAX_FILE_BYTES + 1) if handle is not None else b""
        yield _Entry(member.name, kind, member.size, partial(_head_of, data))
        if archive.offset > MAX_TOTAL_BYTES:
            raise _Stop(
                f"{escaped_name(member.name)} is {_size(member.size)}: past it lies more than "
                f"{_size(MAX_TOTAL_BYTES)} of the archive, the most the grader decompresses of one "
                "submission"
            )


def _listed(entries: Iterator[_Entry]) -> tuple[list[_Entry], str | None]:
    """The entries up to the first limit crossed, and, if one was, why reading stopped there."""
    listed: list[_Entry] = []
    try:
        for entry in entries:
            if len(listed) == MAX_ENTRIES:
                return listed, f"more than {MAX_ENTRIES} entries (files and folders)"
            listed.append(entry)
    except _Stop as stop:
        return listed, str(stop)
    except _UNREADABLE as error:
        return listed, f"the archive is damaged ({escaped(str(error))})"
    return listed, None


def _stopped_line(why: str, where: str) -> str:
    return (
        f"{why}: the grader stopped reading {where}, graded what came before, and read nothing "
        "after; submit only the lab files, in a plain .zip or .tar.gz"
    )


# ---------------------------------------------------------------------------------------------
# Deciding what is kept


def _accept(student_id: str, where: str, entries: Iterator[_Entry], kit: Kit) -> Submission:
    """The submission's lab files, and a refusal for everything else. `where` names the
    submission (its folder or archive) in the line that says where reading stopped, if it did."""
    listed, stopped = _listed(entries)
    refused: list[Refusal] = []
    if stopped is not None:
        refused.append(Refusal(where, _stopped_line(stopped, _after(listed)), whole=True))
    listed = [entry for entry in listed if entry.kind != "dir" and not _is_junk(entry.path)]
    prefix = _wrapper_folder(listed)
    placed = [(entry, *_place(entry.path.replace("\\", "/")[len(prefix) :], entry, kit)) for entry in listed]
    # A name several labs share (answers.toml) at the top of the submission is the file of the
    # lab that the rest of the submission belongs to: its place must not cost a lab's points.
    evidence = {target for _, where_placed, target in placed if where_placed is None}
    kept: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
    for entry, where_placed, target in placed:
        shown = escaped_name(entry.path)
        if isinstance(where_placed, _Shared):
            reason, target = _place_shared(where_placed, evidence)
        else:
            reason = where_placed
        if reason is None:
            try:
                data = entry.read(MAX_FILE_BYTES + 1)
            except _Stop as stop:
                refused.append(Refusal(shown, _stopped_line(str(stop), f"at {shown}"), whole=True))
                break
            except _UNREADABLE as error:
                reason = f"cannot be read from the archive ({escaped(str(error))}); pack it again"
            else:
                reason = _content_problem(data, target, kit)
        if reason is not None:
            refused.append(Refusal(shown, reason))
        else:
            kept.setdefault(target, []).append((shown, data))
    submission = Submission(student_id=student_id)
    for (slug, name), copies in sorted(kept.items()):
        contents = {data for _, data in copies}
        if len(contents) > 1:
            # Different contents under one name: grading either could grade the wrong one.
            shown = ", ".join(path for path, _ in copies)
            for path, _ in copies:
                refused.append(
                    Refusal(
                        path,
                        f"duplicate: {len(copies)} different files named {name} "
                        f"({shown}); keep one and submit again",
                    )
                )
            continue
        submission.files.setdefault(slug, {})[name] = copies[0][1]
        for path, _ in copies[1:]:
            refused.append(Refusal(path, f"duplicate of {copies[0][0]} (same contents); ignored"))
    submission.refused = _capped(refused)
    return submission


def _after(listed: list[_Entry]) -> str:
    return f"after {escaped_name(listed[-1].path)}" if listed else "at its start"


def _capped(refused: list[Refusal]) -> list[Refusal]:
    """At most MAX_REFUSALS lines: past a few, more lines tell the student nothing new."""
    if len(refused) <= MAX_REFUSALS:
        return refused
    more = len(refused) - (MAX_REFUSALS - 1)
    return refused[: MAX_REFUSALS - 1] + [
        Refusal(f"({more} more)", f"{more} more entries were refused too; submit only the lab files")
    ]


def _is_junk(path: str) -> bool:
    parts = PurePosixPath(path.replace("\\", "/")).parts
    name = parts[-1] if parts else ""
    return any(part in JUNK_FOLDERS for part in parts[:-1]) or name in JUNK_FILES or name.startswith("._")


def _wrapper_folder(entries: list[_Entry]) -> str:
    """The one folder every entry sits in ("alice/..."), stripped so that a zipped folder works."""
    tops = {entry.path.replace("\\", "/").lstrip("/").split("/", 1)[0] for entry in entries}
    if len(tops) != 1 or any("/" not in entry.path.replace("\\", "/").lstrip("/") for entry in entries):
        return ""
    top = tops.pop()
    if top in ("labs", "..", ".", "") or any(
        entry.path.replace("\\", "/").startswith("/") for entry in entries
    ):
        return ""
    return top + "/"


@dataclass(frozen=True)
class _Shared:
    """A file at the top of the submission whose name is a file of several labs (answers.toml):
    _place_shared settles which lab's it is."""

    name: str
    owners: tuple[Lab, ...]


def _place_shared(shared: _Shared, evidence: set[tuple[str, str]]) -> tuple[str | None, tuple[str, str]]:
    """The lab of a shared name, by the labs that the submission's other files belong to (placed
    by their names or kit paths, whatever their contents): when exactly one of its owners has
    other files there (and, of several, one lacks this file at its kit path), it is that lab's.
    With none or several, it is refused naming the kit paths to use, and the code of each lab
    is graded without it."""
    with_code = [
        lab
        for lab in shared.owners
        if any(slug == lab.slug and name != shared.name for slug, name in evidence)
    ]
    # A lab whose own copy sits at its kit path is not the one this copy is missing from.
    candidates = [lab for lab in with_code if (lab.slug, shared.name) not in evidence] or with_code
    if len(candidates) == 1:
        return None, (candidates[0].slug, shared.name)
    among = candidates or list(shared.owners)
    paths = " or ".join(f"labs/{lab.slug}/{shared.name}" for lab in among)
    labs = " and ".join(lab.id for lab in among)
    if candidates:
        why = "the submission holds other files of each"
    else:
        why = "the submission holds no other file of " + ("either" if len(among) == 2 else "any of them")
    return (
        f"{shared.name} is a file of labs {labs}, and {why}, so the grader cannot tell which lab's "
        f"it is; put it at its kit path ({paths}) and submit again",
        ("", ""),
    )


def _place(path: str, entry: _Entry, kit: Kit) -> tuple[str | _Shared | None, tuple[str, str]]:
    """(reason to refuse, nowhere) or (None, (lab slug, file name)) for one entry, or a _Shared
    for a name several labs share, placed by the rest of the submission (_place_shared)."""
    nowhere = ("", "")
    if entry.problem is not None:
        return entry.problem, nowhere
    if any(0xDC80 <= ord(char) <= 0xDCFF for char in entry.path):
        return "the name is not UTF-8 text: rename the file (letters, digits, ._-) and submit again", nowhere
    length = len(entry.path.encode("utf-8", "surrogatepass"))
    if length > MAX_PATH_BYTES:
        return f"a name of {length} bytes (at most {MAX_PATH_BYTES}): rename it and submit again", nowhere
    if path.count("/") >= MAX_DEPTH:
        return (
            f"more than {MAX_DEPTH} folders deep: submit the lab files at the top or at their kit path",
            nowhere,
        )
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "absolute path: submit files at the top of the archive or at their kit path", nowhere
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        return "path escapes the submission (contains ..): submit files at the top of the archive", nowhere
    if entry.kind == "link":
        return "symbolic or hard link: submit the file itself", nowhere
    if entry.kind != "file":
        return "not a regular file", nowhere
    if entry.size > MAX_FILE_BYTES:
        return f"file is {entry.size} bytes, over the {MAX_FILE_BYTES} byte limit", nowhere
    owners = [lab for lab in kit.labs if parts and parts[-1] in lab.student_files]
    if len(parts) == 1 and len(owners) == 1:
        return None, (owners[0].slug, parts[0])
    if len(parts) == 1 and len(owners) > 1:
        return _Shared(parts[0], tuple(owners)), nowhere
    if len(parts) == 3 and parts[0] == "labs":
        lab = next((lab for lab in kit.labs if lab.slug == parts[1]), None)
        if lab is not None and parts[2] in lab.student_files:
            return None, (lab.slug, parts[2])
    return _unknown_name_reason(parts, kit), nowhere


def _unknown_name_reason(parts: list[str], kit: Kit) -> str:
    name = escaped_name(parts[-1]) if parts else ""
    allowed = [name for lab in kit.labs for name in lab.student_files]
    by_lower = {candidate.lower(): candidate for candidate in allowed}
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    if match:
        wanted = by_lower[match[0]]
        if wanted == name:
            return (
                f"{name} is in the folder {escaped_name('/'.join(parts[:-1]))}/; put it at the top of "
                f"the submission or at labs/<lab>/{name}"
            )
        return f"unknown file name; did you mean {wanted}? rename it and submit again"
    return "not a file of any lab (a submission holds only: " + ", ".join(allowed) + ")"


def _content_problem(data: bytes, target: tuple[str, str], kit: Kit) -> str | None:
    if len(data) > MAX_FILE_BYTES:
        return f"file is over the {MAX_FILE_BYTES} byte limit"
    if b"\0" in data:
        return "not a text file (contains NUL bytes); submit the source file"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (byte {error.start}); save the file as UTF-8 and submit again"
    if PurePosixPath(target[1]).suffix.lower() not in SCREENED_SUFFIXES:
        return None  # data such as an answers.toml is read by the tests, never compiled
    lab = next(lab for lab in kit.labs if lab.slug == target[0])
    problems = screen_source(text, kit.lab_headers(lab))
    if not problems:
        return None
    shown = "; ".join(str(problem) for problem in problems[:SCREEN_PROBLEMS_SHOWN])
    more = len(problems) - SCREEN_PROBLEMS_SHOWN
    return "refused by the source screen: " + shown + (f" (and {more} more)" if more > 0 else "")
