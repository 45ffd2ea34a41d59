#!/usr/bin/env python3
"""A stand-in for cmake, with a stand-in compiler (fake_cc.py) and linker (fake_ld.py).

- configure (-S SRC -B BUILD): records its arguments.
- --build BUILD --target T (the student's in-place build, `check`): compiles the lab's *.cu of
  T's lab and links T.
- --build BUILD [--target T ...]: as above for every target named (kit_harness: the labs of
  the labNN_manifest targets in -DKIT_HARNESS_TARGETS that the fake kit has, as the grader's
  harness build asks), else every target of
  <SRC>/fake_kit.json ({target: {"slug", "tests": [...], "data_files": {variable: name}}}),
  and writes each lab's manifest, kit-manifests/labNN.json, as cmake/KitManifest.cmake does.

A student file steers the outcome with comment lines the screen lets through:
    // FAKE-OUTCOME: <behaviour> | <test name>     (see fake_catch2.py for behaviours)
    // FAKE-COMPILE-ERROR                           (fake_cc.py fails like nvcc)
A <SRC>/FAKE_CONFIGURE_FAIL file makes configure fail.
"""

import json
import os
import sys
from pathlib import Path

HERE = Path(os.path.realpath(__file__)).parent


def run(argv: list[str], cwd: Path) -> int:
    """argv's exit code, run in cwd: fork and exec, as importing subprocess took 41 ms of each
    of the hundreds of starts of this fake in a test run."""
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def configure(args):
    source = Path(args[args.index("-S") + 1])
    build = Path(args[args.index("-B") + 1])
    if (source / "FAKE_CONFIGURE_FAIL").exists():
        print("CMake Error at CMakeLists.txt:3 (project): No CMAKE_CUDA_COMPILER could be found.")
        return 1
    build.mkdir(parents=True, exist_ok=True)
    binutils = HERE / "fake_binutils.py"
    tools = [f"CMAKE_NM:FILEPATH={binutils}", f"CMAKE_READELF:FILEPATH={binutils}"]
    (build / "CMakeCache.txt").write_text("\n".join(args + tools))
    (build / "fake_source").write_text(str(source))
    return 0


def build_target(source, build_dir, target, spec):
    lab_dir = source / "labs" / spec["slug"]
    tag = "lab" + spec["slug"][:2]
    objects = []
    compiles = []
    for student_file in sorted(lab_dir.glob("*.cu")):
        obj = f"labs/{spec['slug']}/{student_file.name}.o"
        argv = [str(HERE / "fake_cc.py"), "-c", str(student_file), "-o", obj]
        compiles.append(
            {"directory": str(build_dir), "command": " ".join(argv), "file": str(student_file), "output": obj}
        )
        (build_dir / obj).parent.mkdir(parents=True, exist_ok=True)
        code = run(argv, build_dir)
        if code != 0:
            return code
        objects.append(build_dir / obj)
    library = build_dir / "labs" / spec["slug"] / f"lib{tag}_kernels.a"
    library.write_text("".join(path.read_text() for path in objects))
    argv = [
        str(HERE / "fake_ld.py"),
        "--spec",
        str(source / "fake_kit.json"),
        "--target",
        target,
        f"labs/{spec['slug']}/{library.name}",
        "-o",
        f"bin/{target}",
    ]
    answers = sorted(spec.get("data_files", {}).values())
    manifest = {
        "format": 1,
        "lab": spec["slug"][:2],
        "slug": spec["slug"],
        "sources": [entry["file"] for entry in compiles],
        "kernels": str(library),
        "tests": str(build_dir / "bin" / target),
        "worker": "",
        "probe": "",
        "answers": answers[0] if answers else "",
        "programs": [target],
        "compile": compiles,
        "link": [{"directory": str(build_dir), "arguments": argv, "program": target}],
    }
    manifests = build_dir / "kit-manifests"
    manifests.mkdir(exist_ok=True)
    (manifests / f"{tag}.json").write_text(json.dumps(manifest, indent=1))
    return run(argv, build_dir)


def build(args):
    build_dir = Path(args[args.index("--build") + 1])
    source = Path((build_dir / "fake_source").read_text())
    specs = json.loads((source / "fake_kit.json").read_text())
    cache = (build_dir / "CMakeCache.txt").read_text().splitlines()
    targets = sorted(specs)
    if "--target" in args:
        named = args[args.index("--target") + 1 :]
        targets = named[: next((i for i, arg in enumerate(named) if arg.startswith("-")), len(named))]
    if targets == ["kit_harness"]:
        # As the kit's CMakeLists.txt makes it: the labs of the named manifests that exist.
        listed = next(
            (line.split("=", 1)[1] for line in cache if line.startswith("-DKIT_HARNESS_TARGETS=")), ""
        )
        wanted = [name.replace("_manifest", "_tests") for name in listed.split(";")]
        targets = [target for target in wanted if target in specs]
    for target in targets:
        if target not in specs:
            print(f"ninja: error: unknown target '{target}'")
            return 1
        code = build_target(source, build_dir, target, specs[target])
        if code != 0:
            return code
    return 0


args = sys.argv[1:]
sys.exit(build(args) if "--build" in args else configure(args))
