"""Stage 3a, build once per run: the harness.

Everything but the students' files is compiled once per grading run: the kit is configured
with the skeletons as student files and built. Each lab's build ends by writing its manifest,
<build>/kit-manifests/labNN.json (cmake/KitManifest.cmake; docs/design/build.md, "The lab
manifest"): the one record of how CMake builds the lab that the grader reads. It names the
lab's targets, how each student file compiles and how each program that links the student's
kernels links, which become the recipes the per-submission build (build.py) follows.

The test listing of each lab also comes from here, the kit's own build, never from a binary
built with student code; so do the data file the tests read (the answers sheet) and the probe
they run under compute-sanitizer, both named in the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
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

MANIFESTS = "kit-manifests"
MANIFEST_FORMAT = 1
# The tests' variable naming the answers sheet, which the grader points at a submission's own.
ANSWERS_VARIABLE = "KIT_ANSWERS_PATH"


@dataclass(frozen=True)
class Harness:
    build_dir: Path
    labs: dict[str, LabHarness]
    fingerprint: str  # changes when any recipe changes: part of every cache key
    duration: float = 0.0


# The one target the harness build asks for: the CMake project makes it of KIT_HARNESS_TARGETS.
HARNESS_TARGET = "kit_harness"


# The kit's load counter in the harness build, where CMake found the Compute Sanitizer API
# (common/load_counter/CMakeLists.txt): unless told --ncu-loads, the judges count global loads
# with it, over kit_device_count (its folder's), which the sandbox shows them.
LOAD_COUNTER = Path("load_counter") / "libkit_load_counter.so"
DEVICE_COUNT = "kit_device_count"  # beside the counter: what it counts (common/load_counter/)


def load_counter(harness: Harness) -> Path | None:
    """The harness's load counter, or None where it was not built (no Compute Sanitizer API)."""
    path = harness.build_dir / LOAD_COUNTER
    return path if path.is_file() else None


def loads_counted_by(build_dir: Path, asked: bool) -> str:
    """Who counts the locality tests' global loads in a harness built in `build_dir`: the kit's
    load counter where it was built with kit_device_count beside it and not turned off (`asked`
    False: --ncu-loads), else Nsight Compute (kit/load_counter.hpp, device_count_path)."""
    counter = build_dir / LOAD_COUNTER
    device_count = counter.parent / DEVICE_COUNT
    # As the judges decide (kit::profiler::load_counter_path, device_count_path): a readable
    # counter whose path LD_PRELOAD would not split, and the program beside it executable.
    usable = (
        counter.is_file()
        and os.access(counter, os.R_OK)
        and not any(c in str(counter) for c in " :")
        and os.access(device_count, os.X_OK)
    )
    if asked and usable:
        return "the kit's load counter (Nsight Compute where it could not count)"
    return "Nsight Compute"


def harness_config(config: BuildConfig, labs: list[Lab]) -> BuildConfig:
    """Every setting the harness depends on is passed on every run, since CMake keeps a -D in its
    cache: a grading run without a GPU (-DKIT_PROBES=OFF) must not leave a later one with a GPU
    without the probes its sanitizer and profiler tests run."""
    defines = {
        "KIT_PROBES": "ON",
        **config.defines,
        "KIT_HARNESS_TARGETS": ";".join(harness_targets(labs)),
    }
    return replace(config, kernels="student", defines=defines)


def harness_targets(labs: list[Lab]) -> list[str]:
    """What grading these labs needs built: each lab's manifest, which depends on every program
    that links the student's kernels (the tests or the worker, the probe, a chart program), and
    so on the tests and the reference. Not the kit's own tests of common/ or the staff
    benchmarks (23 s of the 176 s of compiling on two cores), nor the labs not graded."""
    return [f"{lab.tag}_manifest" for lab in labs]


def prepare_harness(
    kit: Kit,
    labs: list[Lab],
    build_dir: Path,
    config: BuildConfig,
    run_config: RunConfig,
    progress: Callable[[str], None] = lambda message: None,
    built: bool = False,
) -> Harness:
    """Configures and builds the kit once, then reads its records; raises GraderError when the
    kit itself does not build (no student's fault, and nothing could be graded). With `built`,
    the harness was built before by another process (the command that split a class over Slurm
    tasks, which all read it at once): it is only read, never configured or built again."""
    config = harness_config(config, labs)
    duration = 0.0
    if built:
        if not (build_dir / "CMakeCache.txt").is_file():
            raise GraderError(
                f"no harness in {build_dir}: the command that split the class builds it there "
                "first; run that command again"
            )
    else:
        build_dir.mkdir(parents=True, exist_ok=True)
        progress(f"configuring the harness in {build_dir}")
        duration += _kit_step(
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
    tools = _object_tools(build_dir)
    lab_harnesses = {
        lab.id: replace(lab_harness(kit, lab, build_dir, run_config), tools=tools) for lab in labs
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


def read_manifest(build_dir: Path, lab: Lab) -> dict:
    """The lab's manifest as the kit's build wrote it; GraderError when it is missing, of
    another format, or not the lab's."""
    path = build_dir / MANIFESTS / f"{lab.tag}.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GraderError(
            f"the kit's build wrote no manifest for lab {lab.id} ({path}): its CMakeLists.txt must "
            "call kit_add_lab() (docs/tas.md, 'Adding a lab')"
        ) from None
    except (OSError, ValueError) as error:
        raise GraderError(f"the manifest of lab {lab.id} ({path}) is unreadable: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise GraderError(
            f"the manifest of lab {lab.id} ({path}) is not of format {MANIFEST_FORMAT}; "
            "rebuild the kit with this grader's cmake/ folder"
        )
    if manifest.get("lab") != lab.id or manifest.get("slug") != lab.slug:
        raise GraderError(f"{path} describes lab {manifest.get('slug')}, not {lab.slug}")
    return manifest


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


def lab_harness(kit: Kit, lab: Lab, build_dir: Path, run_config: RunConfig) -> LabHarness:
    try:
        manifest = read_manifest(build_dir, lab)
    except GraderError as error:
        return LabHarness(lab, problem=f"kit problem, not yours: {error}")
    compiles = []
    for entry in manifest["compile"]:
        argv = _argv(entry)
        compiles.append(
            CompileRecipe(
                Path(entry["file"]).name,
                tuple(argv),
                Path(entry["directory"]),
                entry["file"],
                entry["output"],
            )
        )
    kernels = Path(manifest["kernels"])
    links = []
    for entry in manifest["link"]:
        argv = entry["arguments"]
        cwd = Path(entry["directory"])
        # The kernel library as the link names it (often relative to its folder).
        library = next((arg for arg in argv if (cwd / arg).resolve() == kernels.resolve()), None)
        output = argv[argv.index("-o") + 1] if "-o" in argv else None
        if library is None or output is None:
            return LabHarness(
                lab,
                problem=f"kit problem, not yours: the manifest's link of {entry['program']} names "
                f"no {kernels.name} or no -o",
            )
        links.append(LinkRecipe(entry["program"], tuple(argv), cwd, library, output))
    worker = Path(manifest["worker"]).name if manifest["worker"] else None
    tests = Path(manifest["tests"])
    harness = LabHarness(
        lab,
        tuple(sorted(compiles, key=lambda recipe: recipe.name)),
        tuple(sorted(links, key=lambda recipe: recipe.executable)),
        data_files=((ANSWERS_VARIABLE, manifest["answers"]),) if manifest["answers"] else (),
        probe=Path(manifest["probe"]).name if manifest["probe"] else None,
        worker=worker,
        judge=tests if worker else None,
    )
    compiled = {recipe.name for recipe in compiles} | {manifest["answers"]}
    missing = [name for name in lab.student_files if name not in compiled and not _is_header(name)]
    if missing:
        return replace(
            harness,
            problem="kit problem, not yours: the lab's manifest compiles no "
            + ", ".join(missing)
            + " (rubric.toml's student_files and the lab's build disagree)",
        )
    try:
        listed = tuple(list_tests(tests, build_dir, run_config))
        check_rubric_against_listing(lab, {test.name for test in listed}, has_hidden_tests=kit.has_solutions)
    except GraderError as error:
        return replace(harness, problem=f"kit problem, not yours: {error}")
    return replace(harness, tests=listed)


def _is_header(name: str) -> bool:
    return Path(name).suffix in (".h", ".hpp", ".cuh")
