"""Stage 3a, build once per run: the harness.

Everything but the students' files is compiled once per grading run: the kit is configured
with -DKIT_RECORD_COMMANDS=ON (and the skeletons as student files) and built. That build
leaves two records, which become the recipes the per-submission build (build.py) follows:

- compile_commands.json: how each student file compiles (flags, includes, architectures);
- kit-link-commands/<executable>.link (cmake/kit-record-link): how each lab executable links,
  with the lab's kernel library (lib<labNN>_kernels.a) among its inputs, which a submission's
  own objects replace.

The test listing of each lab also comes from here, the kit's own build, never from a binary
built with student code; so do the data files the tests read (the answers sheet) and the
probe they run under compute-sanitizer, found in the tests' compile definitions.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..confine.inspect import ObjectTools
from ..confine.proc import run_limited
from ..errors import GraderError
from ..rubric import Kit, Lab, check_rubric_against_listing
from .build import BUILD_OUTPUT_LIMIT, BuildConfig, configure_command, trim_log
from .recipes import CompileRecipe, LabHarness, LinkRecipe
from .run import RunConfig, list_tests

LINK_RECORDS = "kit-link-commands"
# Compile definitions of the tests that name a file the grader points at a submission's own.
PATH_DEFINE = re.compile(r'^-D(KIT_ANSWERS_PATH|KIT_PROBE_PATH)="?(.*?)"?$')


@dataclass(frozen=True)
class Harness:
    build_dir: Path
    labs: dict[str, LabHarness]
    fingerprint: str  # changes when any recipe changes: part of every cache key
    duration: float = 0.0


# The one target the harness build asks for: the CMake project makes it of KIT_HARNESS_TARGETS.
HARNESS_TARGET = "kit_harness"


def harness_config(config: BuildConfig, labs: list[Lab]) -> BuildConfig:
    """Every setting the harness depends on is passed on every run, since CMake keeps a -D in its
    cache: a grading run without a GPU (-DKIT_PROBES=OFF) must not leave a later one with a GPU
    without the probes its sanitizer and profiler tests run."""
    defines = {
        "KIT_PROBES": "ON",
        **config.defines,
        "KIT_RECORD_COMMANDS": "ON",
        "KIT_HARNESS_TARGETS": ";".join(harness_targets(labs)),
    }
    return replace(config, kernels="student", defines=defines)


def harness_targets(labs: list[Lab]) -> list[str]:
    """What grading these labs needs built: each lab's test executable (with its kernels, its
    reference and, where built, its probe) and the program its charts run. Not the kit's own
    tests of common/ or the staff benchmarks (23 s of the 176 s of compiling on two cores), nor
    the labs not graded."""
    targets = []
    for lab in labs:
        targets.append(lab.executable)  # a split lab's workers are among its dependencies
        if lab.charts is not None:
            targets.append(lab.charts.target)
    return targets


def prepare_harness(
    kit: Kit,
    labs: list[Lab],
    build_dir: Path,
    config: BuildConfig,
    run_config: RunConfig,
    progress: Callable[[str], None] = lambda message: None,
) -> Harness:
    """Configures and builds the kit once, then reads its records; raises GraderError when the
    kit itself does not build (no student's fault, and nothing could be graded)."""
    config = harness_config(config, labs)
    build_dir.mkdir(parents=True, exist_ok=True)
    progress(f"configuring the harness in {build_dir}")
    duration = _kit_step(
        kit,
        configure_command(kit.root, build_dir, config),
        config.timeout,
        "kit problem: CMake could not configure the kit for grading (not a student's fault):\n",
    )
    progress("building the harness: the kit's tests, references and skeletons, once for the run")
    duration += _kit_step(
        kit,
        [config.cmake, "--build", str(build_dir), "-j", str(config.jobs), "--target", HARNESS_TARGET],
        config.timeout,
        "kit problem: the kit's own build failed, so nothing can be graded; run make build to see why:\n",
    )
    compiles = _read_compile_commands(build_dir)
    links = _read_link_records(build_dir / LINK_RECORDS)
    tools = _object_tools(build_dir)
    lab_harnesses = {
        lab.id: replace(_lab_harness(kit, lab, build_dir, compiles, links, run_config), tools=tools)
        for lab in labs
    }
    recipes = [
        [list(c.argv) for c in h.compiles] + [list(link.argv) for link in h.links]
        for h in lab_harnesses.values()
    ]
    fingerprint = hashlib.sha256(json.dumps(recipes).encode()).hexdigest()[:16]
    return Harness(build_dir, lab_harnesses, fingerprint, duration)


def _kit_step(kit: Kit, command: list[str], timeout: float, failure: str) -> float:
    """Runs one CMake step on the kit; its seconds, or GraderError with the trimmed log."""
    done = run_limited(command, cwd=kit.root, timeout=timeout, output_limit=BUILD_OUTPUT_LIMIT)
    if done.timed_out or done.returncode != 0:
        raise GraderError(failure + trim_log(done.output, kit.root))
    return done.duration


def _object_tools(build_dir: Path) -> ObjectTools:
    """nm and readelf as the kit's CMake found them (its cache), else by name on PATH."""
    found = {}
    cache = build_dir / "CMakeCache.txt"
    for line in cache.read_text(errors="replace").splitlines() if cache.is_file() else []:
        key, _, value = line.partition("=")
        if (
            key in ("CMAKE_NM:FILEPATH", "CMAKE_READELF:FILEPATH")
            and value
            and not value.endswith("NOTFOUND")
        ):
            found[key.split(":")[0]] = value
    return ObjectTools(nm=found.get("CMAKE_NM", "nm"), readelf=found.get("CMAKE_READELF", "readelf"))


def _read_compile_commands(build_dir: Path) -> list[dict]:
    path = build_dir / "compile_commands.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise GraderError(
            f"kit problem: {path} is missing or unreadable ({error}); the harness must be "
            "configured with -DKIT_RECORD_COMMANDS=ON"
        ) from None


def _read_link_records(folder: Path) -> list[tuple[Path, list[str]]]:
    records = []
    for path in sorted(folder.glob("*.link")):
        fields = path.read_bytes().split(b"\0")
        if fields and fields[-1] == b"":
            fields.pop()
        if len(fields) >= 2:
            records.append((Path(fields[0].decode()), [field.decode() for field in fields[1:]]))
    return records


def _argv(entry: dict) -> list[str]:
    argv = list(entry["arguments"]) if "arguments" in entry else shlex.split(entry["command"])
    return _inline_options_files(argv, Path(entry.get("directory", ".")))


def _inline_options_files(argv: list[str], cwd: Path) -> list[str]:
    """The arguments of each response file (`--options-file F`, nvcc's; `@F`) in its place.
    CMake's Makefile generator puts a lab's include folders in one, named relative to the build
    folder, which a confined compile cannot see (it sees only the folders its command names)."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        name = None
        if arg in ("--options-file", "-optf"):
            name = next(args, None)
        elif arg.startswith("--options-file="):
            name = arg.split("=", 1)[1]
        elif arg.startswith("@") and len(arg) > 1:
            name = arg[1:]
        if name is None:
            out.append(arg)
            continue
        path = cwd / name
        try:
            out += _inline_options_files(shlex.split(path.read_text()), cwd)
        except (OSError, ValueError) as error:
            raise GraderError(
                f"kit problem: cannot read the compiler's response file {path} ({error})"
            ) from None
    return out


def _lab_harness(
    kit: Kit,
    lab: Lab,
    build_dir: Path,
    compile_entries: list[dict],
    link_records: list[tuple[Path, list[str]]],
    run_config: RunConfig,
) -> LabHarness:
    lab_dir = kit.lab_dir(lab).resolve()
    compiles = []
    data_files: dict[str, str] = {}
    probe = None
    for entry in compile_entries:
        file = Path(entry["file"]).resolve()
        argv = _argv(entry)
        if file.parent == lab_dir and file.name in lab.student_files:
            output = argv[argv.index("-o") + 1] if "-o" in argv else entry.get("output", "")
            compiles.append(
                CompileRecipe(file.name, tuple(argv), Path(entry["directory"]), entry["file"], output)
            )
            continue
        # The tests' compile definitions name their data file and their probe.
        for arg in argv:
            match = PATH_DEFINE.match(arg)
            if match and f"/{lab.slug}/" in str(file):
                variable, value = match.groups()
                if variable == "KIT_PROBE_PATH":
                    probe = Path(value).name
                elif Path(value).name in lab.student_files:
                    data_files[variable] = Path(value).name
    kernels_name = f"lib{lab.tag}_kernels.a"
    # The records of earlier builds stay (a build with nothing to relink writes none), so only
    # the executables this one has: a probe built by an earlier run with a GPU is not relinked
    # for every submission of a run without one.
    worker = f"{lab.tag}_worker"
    wanted = {
        lab.executable,
        worker,
        *([lab.charts.target] if lab.charts is not None else []),
        *([probe] if probe else []),
    }
    links = []
    for cwd, argv in link_records:
        kernels = next((arg for arg in argv if Path(arg).name == kernels_name), None)
        if kernels is not None and "-o" in argv and Path(argv[argv.index("-o") + 1]).name in wanted:
            output = argv[argv.index("-o") + 1]
            links.append(LinkRecipe(Path(output).name, tuple(argv), cwd, kernels, output))
    split = any(link.executable == worker for link in links)
    exe = build_dir / "bin" / lab.executable
    harness = LabHarness(
        lab,
        tuple(sorted(compiles, key=lambda recipe: recipe.name)),
        tuple(sorted(links, key=lambda recipe: recipe.executable)),
        data_files=tuple(sorted(data_files.items())),
        probe=probe,
        worker=worker if split else None,
        judge=exe if split else None,
    )
    compiled = {recipe.name for recipe in compiles} | set(data_files.values())
    missing = [name for name in lab.student_files if name not in compiled]
    if missing or not any(link.executable in (lab.executable, worker) for link in links):
        what = (
            f"no compile command for {', '.join(missing)}"
            if missing
            else f"no link record for {lab.executable}"
        )
        return replace(harness, problem=f"kit problem, not yours: the harness build has {what}")
    try:
        listed = tuple(list_tests(exe, build_dir, run_config))
        check_rubric_against_listing(lab, {test.name for test in listed}, has_hidden_tests=kit.has_solutions)
    except GraderError as error:
        return replace(harness, problem=f"kit problem, not yours: {error}")
    return replace(harness, tests=listed)
