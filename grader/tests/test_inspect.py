"""inspect.py on objects nvcc really compiled: a fair lab file passes, and each forgery of the
hardening issue is refused with the symbol and the rule; the kit's own solutions pass too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from grader.confine.inspect import ObjectTools, inspect_objects

from .conftest import made_once

CASES = Path(__file__).parent / "inspect_cases"
KIT = Path(__file__).resolve().parents[2]
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

pytestmark = pytest.mark.skipif(
    not Path(NVCC).exists(), reason="nvcc is not installed: these tests compile real objects"
)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, Path]:
    sources = {
        "fair.cu": CASES / "fair.cu",
        "hostile.cu": CASES / "hostile.cu",
        "naive_matmul.cu": KIT / "solutions" / "02_naive_matmul" / "naive_matmul.cu",
    }

    def compile_all(out: Path) -> None:
        for name, source in sources.items():
            if source.exists():
                subprocess.run(
                    [NVCC, "-c", "-std=c++17", "-arch=sm_90", "-I", str(KIT / "common" / "include"),
                     "-I", str(KIT / "labs" / "02_naive_matmul"), str(source), "-o", str(out / f"{name}.o")],
                    check=True, capture_output=True, timeout=300,
                )  # fmt: skip

    out = made_once(tmp_path_factory, "inspect-objects", compile_all)
    return {name: out / f"{name}.o" for name in sources if (out / f"{name}.o").exists()}


def test_a_fair_lab_file_and_the_reference_solution_pass(compiled):
    assert inspect_objects(ObjectTools(), "lab02", {"fair.cu": compiled["fair.cu"]}) == []
    if "naive_matmul.cu" in compiled:
        assert inspect_objects(ObjectTools(), "lab02", {"naive_matmul.cu": compiled["naive_matmul.cu"]}) == []


@pytest.mark.parametrize(
    "words",
    [
        ["uses lab02_reference::launch_naive_matmul", "the kit's checks"],
        ["defines kit::time_on_device", "outside namespace lab02", "may not replace the kit's"],
        ["uses fopen"],
        ["uses std::basic_ofstream"],
        ["uses cudaEventElapsedTime"],
        ["defines global_counter outside namespace lab02"],
        ["runs before main (.init_array", "global object with a constructor"],
    ],
)
def test_each_forgery_is_refused_naming_the_file_the_symbol_and_the_rule(compiled, words):
    problems = inspect_objects(ObjectTools(), "lab02", {"hostile.cu": compiled["hostile.cu"]})
    assert any(all(word in problem for word in words) for problem in problems), "\n".join(problems)
    assert all(problem.startswith("hostile.cu: ") for problem in problems)


def test_both_code_that_runs_before_main_is_counted(compiled):
    problems = inspect_objects(ObjectTools(), "lab02", {"hostile.cu": compiled["hostile.cu"]})
    assert len([p for p in problems if "runs before main" in p]) == 2  # the object, the attribute


def test_the_c_library_of_the_accepted_headers_is_allowed_but_not_files_or_processes():
    from grader.confine.inspect import Symbol, allowed_use

    for name in ("malloc", "free", "strtol", "qsort", "abs"):
        assert allowed_use(Symbol(name, name, "U")), name
    for name in ("fopen", "getenv", "system", "fork", "clock_gettime"):
        assert not allowed_use(Symbol(name, name, "U")), name


def test_the_inspection_tools_run_in_a_process_group_of_their_own():
    # A Ctrl-C goes to the grader's process group: a tool in it died before the grader noted the
    # stop, and failed the submission under inspection with a report a resumed run kept.
    import os

    from grader.confine import inspect

    shown = inspect._run(["sh", "-c", "cut -d ' ' -f 5 /proc/$$/stat"])  # pgrp: "pid (sh) S ppid pgrp"
    assert shown and int(shown[0].strip()) != os.getpgrp()
