"""Stage 1, collect: a submission (folder, .zip, .tar, .tar.gz, .tgz) becomes a checked set of files.

Nothing is extracted to disk: entries are read into memory and only names that map to a lab's
student file are kept, so an archive cannot write outside anything. Every other entry is
refused with a reason the student can act on; OS junk is ignored silently.
"""

from __future__ import annotations

import difflib
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath

from .errors import GraderError
from .rubric import Kit, Lab
from .screen import screen_source

MAX_FILE_BYTES = 1 << 20
MAX_ENTRIES = 2000  # an archive with more entries is not a submission of a few .cu files
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip", ".tar")
JUNK_FOLDERS = frozenset({"__MACOSX", ".git", ".vscode", ".idea"})
JUNK_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
# The files a class run writes beside the students' folders in --out (report.py, pipeline.py;
# a test checks the two agree): no student id may name one of them.
CLASS_FILES = frozenset({"gradebook.csv", "summary.txt", "grading.json"})
SCREEN_PROBLEMS_SHOWN = 3
# Files the compiler reads, and so the source screen checks.
SCREENED_SUFFIXES = frozenset(
    {".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl"}
)


@dataclass(frozen=True)
class Refusal:
    path: str
    reason: str


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


# ---------------------------------------------------------------------------------------------
# Which paths are submissions


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def student_id_for(path: Path) -> str:
    """The entry name without its archive extension, made safe as a folder name that is none
    of the class's own files (gradebook.csv.zip is graded as gradebook.csv-student)."""
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    safe = "".join(char if char.isalnum() or char in "._@-" else "_" for char in name).strip(".")
    if safe.lower() in CLASS_FILES:
        safe += "-student"
    return safe or "student"


def looks_like_submission(folder: Path, kit: Kit) -> bool:
    """A folder is one submission when it holds a lab's file or a labs/ folder; else a class."""
    student_names = {name.lower() for lab in kit.labs for name in lab.student_files}
    for child in folder.iterdir():
        if child.name == "labs" and child.is_dir():
            return True
        if (
            child.is_file()
            and not is_archive(child)
            and child.suffix.lower() in {".cu", ".cuh", ".h", ".hpp", ".cpp"}
        ):
            return True
        if child.name.lower() in student_names:
            return True
    return False


def find_submissions(paths: list[Path], kit: Kit, notes: list[str] | None = None) -> list[tuple[str, Path]]:
    """(student id, path) for every submission named, expanding class folders. Two submissions
    with one id (an LMS re-submission: alice.zip beside alice.tar.gz or an alice folder, or ids
    that differ only in case) are one student's: the latest is graded, and a line in `notes`
    says which was left out."""
    found: list[tuple[str, Path]] = []
    for path in paths:
        if not path.exists():
            raise GraderError(
                f"{path} does not exist; name a submission folder or archive, or a class folder"
            )
        if is_archive(path) or (path.is_dir() and looks_like_submission(path, kit)):
            found.append((student_id_for(path), path))
        elif path.is_dir():
            found.extend(_class_members(path))
        else:
            raise GraderError(f"{path} is neither a folder nor a .zip/.tar/.tar.gz/.tgz archive")
    by_id: dict[str, list[tuple[str, Path]]] = {}
    for entry in found:
        same = by_id.setdefault(entry[0].lower(), [])
        if all(entry[1].resolve() != other.resolve() for _, other in same):
            same.append(entry)
    kept = []
    for same in by_id.values():
        latest = max(same, key=lambda entry: (_modified(entry[1]), str(entry[1])))
        kept.append(latest)
        if len(same) > 1 and notes is not None:
            others = ", ".join(str(path) for entry_id, path in same if (entry_id, path) != latest)
            notes.append(
                f"{latest[0]}: {len(same)} submissions with one id; grading the latest, "
                f"{latest[1]}, and leaving out {others}"
            )
    order = {id(entry): index for index, entry in enumerate(found)}
    return sorted(kept, key=lambda entry: order[id(entry)])


def _modified(path: Path) -> float:
    """The newest modification time in a submission: an archive's own, a folder's newest file's."""
    if path.is_dir():
        times = [child.lstat().st_mtime for child in path.rglob("*") if not child.is_symlink()]
        return max(times, default=path.lstat().st_mtime)
    return path.lstat().st_mtime


def _class_members(folder: Path) -> list[tuple[str, Path]]:
    members = []
    for child in sorted(folder.iterdir()):
        if child.name.startswith(".") or child.name in JUNK_FOLDERS | JUNK_FILES or child.is_symlink():
            continue
        if child.is_dir() or is_archive(child):
            members.append((student_id_for(child), child))
    if not members:
        raise GraderError(f"{folder} holds no submission (no subfolder or archive, and no lab file)")
    return members


# ---------------------------------------------------------------------------------------------
# Reading a submission


def collect_submission(path: Path, kit: Kit, student_id: str | None = None) -> Submission:
    student_id = student_id or student_id_for(path)
    name = path.name.lower()
    if path.is_symlink():
        raise GraderError(f"{path} is a symbolic link; submit the folder or archive itself")
    if path.is_dir():
        return _accept(student_id, list(_folder_entries(path)), kit)
    if name.endswith(".zip"):
        with _open_zip(path) as archive:
            return _accept(student_id, list(_zip_entries(archive, path)), kit)
    if name.endswith((".tar", ".tar.gz", ".tgz")):
        with _open_tar(path) as archive:
            return _accept(student_id, list(_tar_entries(archive, path)), kit)
    raise GraderError(f"{path}: a submission is a folder, .zip, .tar, .tar.gz or .tgz")


def submission_from_files(student_id: str, files: dict[str, bytes], kit: Kit) -> Submission:
    """A submission from in-memory files keyed by path (the sample class, validate's students)."""
    entries = [
        _Entry(path=name, kind="file", size=len(data), read=partial(_head_of, data))
        for name, data in files.items()
    ]
    return _accept(student_id, entries, kit)


def _folder_entries(root: Path) -> Iterator[_Entry]:
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in sorted(dirnames):
            if (base / name).is_symlink():
                yield _Entry(_relative(base / name, root), "link", 0, _no_read)
        for name in sorted(filenames):
            full = base / name
            info = full.lstat()
            kind = "link" if stat.S_ISLNK(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"
            yield _Entry(_relative(full, root), kind, info.st_size, partial(_read_head, full))


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _head_of(data: bytes, limit: int) -> bytes:
    return data[:limit]


def _read_head(path: Path, limit: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(limit)


def _no_read(limit: int) -> bytes:
    return b""


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise GraderError(
            f"{path.name} cannot be read as a zip archive ({error}); zip the files again"
        ) from None


def _zip_entries(archive: zipfile.ZipFile, path: Path) -> Iterator[_Entry]:
    infos = archive.infolist()
    _check_entry_count(path, len(infos))
    for info in infos:
        if info.is_dir():
            kind = "dir"
        elif stat.S_ISLNK(info.external_attr >> 16):
            kind = "link"
        else:
            kind = "file"
        yield _Entry(info.filename, kind, info.file_size, partial(_read_zip, archive, info))


def _read_zip(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    # zipfile raises NotImplementedError for a compression method it does not support (not a
    # stub): such an archive is the student's to re-zip, like a corrupt or encrypted one.
    try:
        with archive.open(info) as handle:
            return handle.read(limit)
    except (zipfile.BadZipFile, RuntimeError, OSError, NotImplementedError, EOFError) as error:
        raise GraderError(
            f"{info.filename} cannot be read from the zip archive ({error}); zip it again"
        ) from None


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise GraderError(
            f"{path.name} cannot be read as a tar archive ({error}); pack the files again"
        ) from None


def _tar_entries(archive: tarfile.TarFile, path: Path) -> Iterator[_Entry]:
    try:
        members = archive.getmembers()
    except (tarfile.TarError, OSError, EOFError) as error:
        raise GraderError(
            f"{path.name} cannot be read as a tar archive ({error}); pack the files again"
        ) from None
    _check_entry_count(path, len(members))
    for member in members:
        if member.isdir():
            kind = "dir"
        elif member.issym() or member.islnk():
            kind = "link"
        elif member.isfile():
            kind = "file"
        else:
            kind = "other"
        yield _Entry(member.name, kind, member.size, partial(_read_tar, archive, member))


def _read_tar(archive: tarfile.TarFile, member: tarfile.TarInfo, limit: int) -> bytes:
    try:
        handle = archive.extractfile(member)
        return b"" if handle is None else handle.read(limit)
    except (tarfile.TarError, OSError, EOFError) as error:
        raise GraderError(
            f"{member.name} cannot be read from the tar archive ({error}); pack it again"
        ) from None


def _check_entry_count(path: Path, count: int) -> None:
    if count > MAX_ENTRIES:
        raise GraderError(
            f"{path.name} holds {count} entries (at most {MAX_ENTRIES}); submit only the lab files"
        )


# ---------------------------------------------------------------------------------------------
# Deciding what is kept


def _accept(student_id: str, entries: list[_Entry], kit: Kit) -> Submission:
    submission = Submission(student_id=student_id)
    entries = [entry for entry in entries if entry.kind != "dir" and not _is_junk(entry.path)]
    prefix = _wrapper_folder(entries)
    placed = [(entry, *_place(entry.path.replace("\\", "/")[len(prefix) :], entry, kit)) for entry in entries]
    # A name several labs share (answers.toml) at the top of the submission is the file of the
    # lab that the rest of the submission belongs to: its place must not cost a lab's points.
    evidence = {target for _, where, target in placed if where is None}
    kept: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
    for entry, where, target in placed:
        shown = entry.path
        if isinstance(where, _Shared):
            reason, target = _place_shared(where, evidence)
        else:
            reason = where
        if reason is None:
            data = entry.read(MAX_FILE_BYTES + 1)
            reason = _content_problem(data, target, kit)
        if reason is not None:
            submission.refused.append(Refusal(shown, reason))
        else:
            kept.setdefault(target, []).append((shown, data))
    for (slug, name), copies in sorted(kept.items()):
        contents = {data for _, data in copies}
        if len(contents) > 1:
            # Different contents under one name: grading either could grade the wrong one.
            shown = ", ".join(path for path, _ in copies)
            for path, _ in copies:
                submission.refused.append(
                    Refusal(
                        path,
                        f"duplicate: {len(copies)} different files named {name} "
                        f"({shown}); keep one and submit again",
                    )
                )
            continue
        submission.files.setdefault(slug, {})[name] = copies[0][1]
        for path, _ in copies[1:]:
            submission.refused.append(Refusal(path, f"duplicate of {copies[0][0]} (same contents); ignored"))
    return submission


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
    name = parts[-1] if parts else ""
    allowed = [name for lab in kit.labs for name in lab.student_files]
    by_lower = {candidate.lower(): candidate for candidate in allowed}
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    if match:
        wanted = by_lower[match[0]]
        if wanted == name:
            return (
                f"{name} is in the folder {'/'.join(parts[:-1])}/; put it at the top of the submission "
                f"or at labs/<lab>/{name}"
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
