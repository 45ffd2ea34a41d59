#!/usr/bin/env python3
"""A stand-in for cmake: configure records its arguments; --build writes a fake Catch2 executable.

The executable's tests come from <source>/fake_kit.json ({target: {"slug", "tests": [...]}}), and
a student file can change them with comment lines the screen lets through:
    // FAKE-OUTCOME: <behaviour> | <test name>
    // FAKE-COMPILE-ERROR          (the build fails with a compiler-like message)
A <source>/FAKE_CONFIGURE_FAIL file makes configure fail.
"""

import json
import os
import shutil
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
    (build / "CMakeCache.txt").write_text("\n".join(args))
    (build / "fake_source").write_text(str(source))
    return 0


def build(args):
    build_dir = Path(args[args.index("--build") + 1])
    target = args[args.index("--target") + 1]
    source = Path((build_dir / "fake_source").read_text())
    spec = json.loads((source / "fake_kit.json").read_text())[target]
    tests = [dict(test) for test in spec["tests"]]
    for student_file in sorted((source / "labs" / spec["slug"]).glob("*.cu")):
        for number, line in enumerate(student_file.read_text().splitlines(), start=1):
            if "FAKE-COMPILE-ERROR" in line:
                print(f"[1/3] Building CUDA object {source}/labs/{spec['slug']}/{student_file.name}.o")
                print(f'{source}/labs/{spec["slug"]}/{student_file.name}({number}): error: expected a ";"')
                print("1 error detected in the compilation of naive_matmul.cu.")
                return 1
            if "FAKE-OUTCOME:" in line:
                behaviour, _, name = line.split("FAKE-OUTCOME:", 1)[1].partition("|")
                behaviour = behaviour.replace("\\n", "\n")
                for test in tests:
                    if test["name"] == name.strip():
                        test["behaviour"] = behaviour.strip()
    exe = build_dir / "bin" / target
    exe.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "fake_catch2.py", exe)
    exe.chmod(0o755)
    (build_dir / "bin" / f"{target}.json").write_text(json.dumps({"tests": tests}))
    return 0


args = sys.argv[1:]
sys.exit(build(args) if "--build" in args else configure(args))
