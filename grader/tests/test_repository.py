"""The repository stands alone: a reader of any file needs nothing outside it. No file points
at the project's issue tracker or at the working sessions and borrowed machines the kit was
built with; a measurement names its card and its date instead (bench/RESULTS.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What only a reader of the tracker or of a work log would understand. Process sessions
# (setsid, start_new_session) are not meant, nor a known issue of a tool in general.
OUTSIDE_REFERENCES = re.compile(
    r"\bissue ?#?\d+"
    r"|\bthe issue's\b|\bthis issue\b"
    r"|\b(?:this|next|earlier|later|another|previous|last) session\b"
    r"|\bsession's (?:start|first|end)\b"
    r"|\blent (?:h100|h200|gpu|machine)s?\b|\bthe lent\b",
    re.IGNORECASE,
)
SUFFIXES = {".md", ".py", ".cpp", ".hpp", ".cu", ".h", ".c", ".toml", ".txt", ".cmake", ".sh", ".j2", ".yml"}
NAMES = {"Makefile", "CMakeLists.txt", "run"}


def repository_files() -> list[Path]:
    """The files git tracks, or, outside a git checkout (an unpacked kit), every file here."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode()
        paths = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        paths = [path for path in ROOT.rglob("*") if ".git" not in path.parts]
    skipped = {"build", ".venv", "node_modules"}
    return [
        path
        for path in paths
        if path.is_file()
        and not skipped & set(path.relative_to(ROOT).parts)
        and (path.suffix in SUFFIXES or path.name in NAMES)
    ]


def outside_references(text: str) -> list[str]:
    return [match.group(0) for match in OUTSIDE_REFERENCES.finditer(text)]


def test_the_pattern_finds_what_only_the_tracker_or_a_work_log_explains():
    # The examples are put together here, so that this file holds none of the phrases it bans
    # (the quick checks outside the test suite grep every file, this one included).
    issue, this, lent = "iss" + "ue", "th" + "is", "le" + "nt"
    assert outside_references(f"as {issue} 27 asks") == [f"{issue} 27"]
    assert outside_references(f"fixed {this} session; the {lent} H100") == [f"{this} session", f"the {lent}"]
    assert outside_references(f"short of the {issue}'s 0.8") == [f"the {issue}'s"]
    # A process session and a tool's known issue are the code's own words.
    assert outside_references("start_new_session=True, a session of its own, a known issue") == []


def test_no_file_refers_to_issues_sessions_or_lent_machines():
    files = repository_files()
    assert len(files) > 100  # the listing found the repository, not an empty folder
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in files
        if (found := outside_references(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert not offenders, (
        f"these files mention what only the tracker or a work log explains: {offenders}; say what was "
        "measured, on which card and when, so that each file stands alone"
    )


def test_the_readmes_table_of_labs_has_a_row_for_each_folder_of_labs_and_no_other():
    folders = sorted(path.name for path in (ROOT / "labs").iterdir() if (path / "rubric.toml").is_file())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[(\d\d_\w+)\]\(labs/(\d\d_\w+)/README\.md\) \|", readme, re.MULTILINE)
    assert len(folders) >= 6
    assert [name for name, _ in rows] == folders, "README.md's table of labs differs from labs/"
    assert all(name == link for name, link in rows), "a row of README.md's table links to another lab"


# A citation of a document's section, as the code and the docs write it:
# (bench/RESULTS.md, "Shared memory and barriers"), docs/design/engine.md, "Judge and worker", or
# [design/tests.md](design/tests.md), "Tests" (a link's target, then the section).
CITATION = re.compile(
    r"(bench/RESULTS\.md|architecture\.md|tas\.md|design/[\w-]+\.md)\)?,\s+[\"']([A-Z`][^\"']+)[\"']"
)


def test_every_section_a_file_cites_is_a_heading_of_that_document():
    documents = {
        "bench/RESULTS.md": ROOT / "bench/RESULTS.md",
        "architecture.md": ROOT / "docs/architecture.md",
        "tas.md": ROOT / "docs/tas.md",
        **{f"design/{path.name}": path for path in sorted((ROOT / "docs/design").glob("*.md"))},
    }
    assert len(documents) > 2, "docs/design/ holds no design document"
    headings = {
        name: [
            line.lstrip("#").strip()
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")
        ]
        for name, path in documents.items()
    }
    missing = set()
    for path in repository_files():
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        # A citation may run over two lines of a comment: the comment marks go, then the breaks.
        text = re.sub(r"\s+", " ", " ".join(re.sub(r"^\s*(?://|#|\*)\s?", "", line) for line in lines))
        for document, section in CITATION.findall(text):
            if not any(heading.startswith(section) for heading in headings.get(document, [])):
                missing.add(f"{path.relative_to(ROOT)}: {document}, {section!r}")
    assert not missing, f"citations of sections that do not exist: {sorted(missing)}"


def test_lint_and_mypy_read_every_python_file_of_the_kit():
    # make lint (scripts/lint.sh) and mypy (pyproject.toml) name the folders they check; a Python
    # file outside them, such as a lab's plotting script that students run, goes unchecked.
    lint = (ROOT / "scripts/lint.sh").read_text(encoding="utf-8")
    folders = re.search(r"^python_paths=\(([^)]*)\)", lint, re.MULTILINE)
    assert folders is not None, "scripts/lint.sh no longer sets python_paths=(...)"
    linted = folders.group(1).split()
    mypy_files = re.search(
        r"^files = \[([^\]]*)\]", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE
    )
    assert mypy_files is not None and sorted(re.findall(r'"([^"]+)"', mypy_files.group(1))) == sorted(linted)
    python = [path.relative_to(ROOT) for path in repository_files() if path.suffix == ".py"]
    assert python, "no Python file found"
    unchecked = [str(path) for path in python if path.parts[0] not in linted]
    assert unchecked == [], f"make lint does not read {unchecked}: add their folder to python_paths"


def test_no_catch2_test_name_holds_a_comma():
    # Catch2 reads a comma in a test spec as "or": CTest runs each case by its name
    # (cmake/KitDiscoverTests.cmake), so a case whose name holds one matches nothing and fails,
    # on CI too, and the grader could not select it either.
    sources = [*ROOT.glob("common/**/*.c*"), *ROOT.glob("labs/**/*.c*"), *ROOT.glob("labs/**/*.hpp")]
    names = [
        name
        for path in sources
        for name in re.findall(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"', path.read_text(encoding="utf-8"))
    ]
    assert len(names) > 100  # the pattern finds the kit's cases
    assert [name for name in names if "," in name] == []
