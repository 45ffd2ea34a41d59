"""Handouts: generate each lab's skeleton (labs/NN/<file>) from its reference (solutions/NN/<file>).

A reference marks each region the student writes:

    // KIT:TODO(begin) What to write, first line
    // KIT:TODO        continuation lines, aligned under the first line's text
    ...reference code...
    // KIT:SKELETON return;          (kept, uncommented, so the skeleton still compiles)
    // KIT:TODO(end)

and the skeleton gets, at the begin marker's indentation:

    // TODO: What to write, first line
    //       continuation lines, aligned under the first line's text
    return;

Files whose comments start with # (a TOML answer sheet) use the same markers after `#`, and
their TODO lines keep `#`.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import GraderError
from ..rubric import Kit

# Never copied into a student kit: version control, builds and grades, environments and caches.
SKIPPED_AT_TOP = ("build*", "grades", ".venv", "venv", ".git")
SKIPPED_ANYWHERE = ("__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache")

MARKER = re.compile(r"^(?P<indent>[ \t]*)(?P<leader>//|#)[ \t]*KIT:(?P<kind>[A-Z]+)(?P<rest>.*?)\r?$")
BEGIN = "(begin)"
END = "(end)"


@dataclass(frozen=True)
class HandoutFile:
    source: Path  # solutions/NN_slug/<file>
    target: Path  # labs/NN_slug/<file>


def handout_files(kit: Kit) -> list[HandoutFile]:
    if not kit.has_solutions:
        raise GraderError(
            "the handout is generated from solutions/, which this kit does not have "
            "(a student kit); run it in the staff repository"
        )
    files = []
    for lab in kit.labs:
        for name in lab.student_files:
            source = kit.solution_dir(lab) / name
            if not source.is_file():
                raise GraderError(f"{source} is missing; lab {lab.id}'s skeleton {name} is generated from it")
            files.append(HandoutFile(source, kit.lab_dir(lab) / name))
    return files


def make_skeleton(text: str, source: Path) -> str:
    """The skeleton of one reference file; errors name the file and line."""
    out: list[str] = []
    region: _Region | None = None
    regions = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        marker = MARKER.match(line)
        if marker is None:
            if region is None:
                out.append(line)
            continue
        kind, rest = marker.group("kind"), marker.group("rest")
        ending = "\r\n" if line.endswith("\r\n") else "\n"
        if kind == "TODO" and rest.startswith(BEGIN):
            if region is not None:
                raise GraderError(
                    f"{source}:{number}: KIT:TODO(begin) inside the region opened at line "
                    f"{region.line}; add // KIT:TODO(end) before it"
                )
            indent = marker.group("indent")
            region = _Region.open(source, number, indent, marker.group("leader"), rest[len(BEGIN) :], ending)
        elif kind == "TODO" and rest.startswith(END):
            if region is None:
                raise GraderError(f"{source}:{number}: KIT:TODO(end) without a KIT:TODO(begin) before it")
            out += region.lines()
            regions += 1
            region = None
        elif kind == "TODO":
            _require_region(region, source, number, "KIT:TODO continuation").add_todo(rest)
        elif kind == "SKELETON":
            _require_region(region, source, number, "KIT:SKELETON").add_skeleton(rest)
        else:
            raise GraderError(
                f"{source}:{number}: unknown marker KIT:{kind}; use KIT:TODO(begin), "
                "KIT:TODO, KIT:SKELETON or KIT:TODO(end)"
            )
    if region is not None:
        raise GraderError(f"{source}:{region.line}: KIT:TODO(begin) is never closed; add // KIT:TODO(end)")
    if regions == 0:
        raise GraderError(
            f"{source}: no KIT:TODO(begin) region, so the skeleton would be the whole solution; "
            "mark what the student writes"
        )
    return "".join(out)


def _require_region(region: _Region | None, source: Path, number: int, what: str) -> _Region:
    if region is None:
        raise GraderError(f"{source}:{number}: {what} outside a KIT:TODO(begin)/(end) region; move it inside")
    return region


@dataclass
class _Region:
    line: int
    indent: str
    leader: str  # the comment leader of the begin marker, // or #, used for the TODO lines
    align: int  # columns from "KIT:TODO" to the first line's text: continuation text lines up there
    ending: str
    todo: list[str]
    skeleton: list[str]

    @classmethod
    def open(
        cls, source: Path, line: int, indent: str, leader: str, after_begin: str, ending: str
    ) -> _Region:
        text = after_begin.strip()
        if not text:
            raise GraderError(
                f"{source}:{line}: KIT:TODO(begin) has no text; say what the student must write"
            )
        align = len(BEGIN) + len(after_begin) - len(after_begin.lstrip())
        return cls(line, indent, leader, align, ending, [text], [])

    def add_todo(self, rest: str) -> None:
        # Keep any indentation beyond the alignment column (a nested list, say); drop the rest.
        spaces = len(rest) - len(rest.lstrip(" "))
        text = rest.strip()
        self.todo.append(" " * max(spaces - self.align, 0) + text if text else "")

    def add_skeleton(self, rest: str) -> None:
        self.skeleton.append(rest[1:].rstrip() if rest.startswith(" ") else rest.rstrip())

    def lines(self) -> list[str]:
        head = f"{self.indent}{self.leader}"
        # Continuations line up under the first line's text: "// TODO: " and "//       ".
        out = [f"{head} TODO: {self.todo[0]}{self.ending}"]
        out += [
            f"{head}       {text}{self.ending}" if text else f"{head}{self.ending}" for text in self.todo[1:]
        ]
        out += [f"{self.indent}{code}{self.ending}" if code else self.ending for code in self.skeleton]
        return out


def generate(kit: Kit, check: bool = False) -> list[Path]:
    """Writes every skeleton (or, with check, writes nothing); returns the files out of sync."""
    stale = []
    for item in handout_files(kit):
        # Bytes, not read_text: line endings must survive so that --check compares what git sees.
        wanted = make_skeleton(item.source.read_bytes().decode("utf-8"), item.source)
        current = item.target.read_bytes().decode("utf-8", "replace") if item.target.is_file() else None
        if current != wanted:
            stale.append(item.target)
            if not check:
                item.target.write_bytes(wanted.encode("utf-8"))
    return stale


# What only staff may see or need: never in a student kit.
STAFF_ONLY = ("solutions", "bench")


def make_student_kit(kit: Kit, out: Path) -> list[Path]:
    """Copies the kit without solutions/ and bench/ into the new folder `out`; returns its files.

    Only files git tracks are copied when the kit is a git checkout, so nothing a TA has lying
    around (builds, notes, a class's submissions) reaches students. The skeletons must be in
    sync with the solutions first: a student kit is where a stale skeleton would hurt.
    """
    if not kit.has_solutions:
        raise GraderError("a student kit is made from the staff repository, which has solutions/")
    if out.exists():
        raise GraderError(f"{out} already exists; name a new folder (nothing was written)")
    stale = generate(kit, check=True)
    if stale:
        names = ", ".join(str(path.relative_to(kit.root)) for path in stale)
        raise GraderError(f"skeletons differ from their solutions ({names}); run make handout first")
    copied = []
    for relative in _kit_files(kit.root):
        if relative.parts[0] in STAFF_ONLY:
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(kit.root / relative, target)
        copied.append(target)
    return copied


def _kit_files(root: Path) -> list[Path]:
    """The kit's files, relative to root: git's tracked files, or a walk that skips builds."""
    if (root / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=False)
        if listed.returncode == 0:
            names = listed.stdout.decode().split("\0")
            return [Path(name) for name in names if name and (root / name).is_file()]
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        top_skipped = any(fnmatch.fnmatch(relative.parts[0], p) for p in SKIPPED_AT_TOP)
        any_skipped = any(fnmatch.fnmatch(part, p) for part in relative.parts for p in SKIPPED_ANYWHERE)
        if path.is_file() and not top_skipped and not any_skipped:
            files.append(relative)
    return files
