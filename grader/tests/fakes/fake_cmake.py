#!/usr/bin/env python3
"""A stand-in for cmake, with a stand-in compiler (fake_cc.py) and linker (fake_ld.py).

- configure (-S SRC -B BUILD): records its arguments.
- --build BUILD --target T (the student's in-place build, `check`): compiles the lab's *.cu of
  T's lab and links T.
- --build BUILD [--target T ...]: as above for every target named (kit_harness: those of
  -DKIT_HARNESS_TARGETS that the fake kit has, as the grader's harness build asks), else every
  target of
  <SRC>/fake_kit.json ({target: {"slug", "tests": [...], "data_files": {variable: name}}}),
  and leaves the records the real harness build leaves: compile_commands.json and
  kit-link-commands/<target>.link.

A student file steers the outcome with comment lines the screen lets through:
    // FAKE-OUTCOME: <behaviour> | <test name>     (see fake_catch2.py for behaviours)
    // FAKE-COMPILE-ERROR                           (fake_cc.py fails like nvcc)
A <SRC>/FAKE_CONFIGURE_FAIL file makes configure fail.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(os.path.realpath(__file__)).parent


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


def build_target(source, build_dir, target, spec, commands):
    lab_dir = source / "labs" / spec["slug"]
    tag = "lab" + spec["slug"][:2]
    objects = []
    for student_file in sorted(lab_dir.glob("*.cu")):
        obj = f"labs/{spec['slug']}/{student_file.name}.o"
        argv = [str(HERE / "fake_cc.py"), "-c", str(student_file), "-o", obj]
        commands.append({"directory": str(build_dir), "command": " ".join(argv), "file": str(student_file)})
        (build_dir / obj).parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(argv, cwd=build_dir)
        if done.returncode != 0:
            return done.returncode
        objects.append(build_dir / obj)
    # A lab's data files (an answers sheet): named to the tests by a compile definition, as the
    # kit's CMake does; the tests' source is not compiled here.
    for variable, name in sorted(spec.get("data_files", {}).items()):
        tests = lab_dir / "tests" / "test_data.cpp"
        argv = [str(HERE / "fake_cc.py"), f'-D{variable}="{lab_dir / name}"', "-c", str(tests), "-o", "t.o"]
        commands.append({"directory": str(build_dir), "arguments": argv, "file": str(tests)})
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
    records = build_dir / "kit-link-commands"
    records.mkdir(exist_ok=True)
    (records / f"{target}.link").write_bytes(
        b"\0".join(part.encode() for part in [str(build_dir), *argv]) + b"\0"
    )
    return subprocess.run(argv, cwd=build_dir).returncode


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
        # As the kit's CMakeLists.txt makes it: the named targets that exist.
        listed = next(
            (line.split("=", 1)[1] for line in cache if line.startswith("-DKIT_HARNESS_TARGETS=")), ""
        )
        targets = [target for target in listed.split(";") if target in specs]
    commands: list[dict[str, str]] = []
    for target in targets:
        if target not in specs:
            print(f"ninja: error: unknown target '{target}'")
            return 1
        code = build_target(source, build_dir, target, specs[target], commands)
        if code != 0:
            return code
    if "-DKIT_RECORD_COMMANDS=ON" in cache:
        (build_dir / "compile_commands.json").write_text(json.dumps(commands, indent=1))
    return 0


args = sys.argv[1:]
sys.exit(build(args) if "--build" in args else configure(args))
