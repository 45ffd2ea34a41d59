"""Global loads counted two ways, on a GPU: Nsight Compute (what the locality tests read today)
and the load counter of this folder (README.md). Builds the counter and the labs' probes, then
prints, for the reference and a few mutants, each probe's loads modes counted both ways, how long
each run took, and what eight counter runs at once do. Run from the kit's root:
    python3 bench/load_counter/compare.py --out DIR
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# The metric the locality tests read (kit::profiler::kGlobalLoads), and the L1's requests for
# global loads beside it.
_PROFILER = (ROOT / "common" / "include" / "kit" / "profiler.hpp").read_text(encoding="utf-8")
METRIC = _PROFILER.split('kGlobalLoads = "', 1)[1].split('"', 1)[0]
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
PROBES = {"03": "lab03_probe", "04": "lab04_probe", "05": "lab05_probe"}
MODES = ("loads-16", "loads-32")
MUTANTS = ("no_shared_memory", "tiles_loaded_but_M_read_from_global")  # lab 03's, by name


def sanitizer_dir() -> Path:
    """Where the Compute Sanitizer API's headers and library are: KIT_SANITIZER_DIR, else beside
    compute-sanitizer, else the toolkit's usual folder."""
    tool = shutil.which("compute-sanitizer")
    candidates = [Path(os.environ["KIT_SANITIZER_DIR"])] if os.environ.get("KIT_SANITIZER_DIR") else []
    candidates += [Path(os.path.realpath(tool)).parent] if tool else []
    candidates += [Path("/usr/local/cuda/compute-sanitizer")]
    for folder in candidates:
        if (folder / "include" / "sanitizer.h").is_file():
            return folder
    sys.exit(
        f"no include/sanitizer.h in {', '.join(map(str, candidates))}: the Compute Sanitizer API is needed"
    )


def build_counter(work: Path) -> Path:
    san = sanitizer_dir()
    found = [
        p for p in (san / "libsanitizer-public.so", san / "lib" / "libsanitizer-public.so") if p.is_file()
    ]
    if not found:
        sys.exit(f"no libsanitizer-public.so in {san} or {san / 'lib'}")
    lib = found[0]
    subprocess.run(
        [
            "nvcc",
            "--fatbin",
            "--keep-device-functions",
            "-Xptxas",
            "--compile-as-tools-patch",
            "-arch=sm_90",
            f"-I{san / 'include'}",
            str(HERE / "load_count_patch.cu"),
            "-o",
            str(work / "load_count_patch.fatbin"),
        ],
        check=True,
    )
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-O2",
            "-fPIC",
            "-shared",
            f"-I{san / 'include'}",
            "-I/usr/local/cuda/include",
            str(HERE / "load_counter.cpp"),
            "-o",
            str(work / "libkit_load_counter.so"),
            f"-L{lib.parent}",
            "-lsanitizer-public",
            f"-Wl,-rpath,{lib.parent}",
            "-ldl",
        ],
        check=True,
    )
    return work / "libkit_load_counter.so"


def build_probes(kit: Path, build: Path, kernels: str, labs: list[str]) -> None:
    subprocess.run(
        [
            "cmake",
            "-S",
            str(kit),
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CUDA_ARCHITECTURES=90",
            f"-DKIT_KERNELS={kernels}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        ["cmake", "--build", str(build), "-j", "16", "--target", *[PROBES[lab] for lab in labs]],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def student_kernel(name: str) -> bool:
    return not (name.startswith("kit::") or name.startswith("_ZN3kit") or "trial_end" in name)


def with_ncu(probe: Path, mode: str, metric: str = METRIC) -> tuple[float | None, float, str]:
    start = time.monotonic()
    run = subprocess.run(
        [
            "ncu",
            "--metrics",
            metric,
            "--csv",
            "--print-units",
            "base",
            "--clock-control",
            "none",
            "--cache-control",
            "none",
            "--print-kernel-base",
            "mangled",
            str(probe),
            mode,
        ],
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    lines = [line for line in run.stdout.splitlines() if line.startswith('"')]
    total = None
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") == metric and student_kernel(row.get("Kernel Name", "")):
            total = (total or 0.0) + float(row["Metric Value"].replace(",", ""))
    return total, seconds, (run.stdout + run.stderr)[-400:] if total is None else ""


def with_counter(
    probe: Path, mode: str, counter: Path, confine: Callable[[list[str]], list[str]] | None = None
) -> tuple[float | None, float, str]:
    """`confine`: wraps the command as the grader's sandbox runs a worker (sandboxed_counter)."""
    # Every module loaded at the start, so that none is loaded lazily past the patching.
    env = dict(os.environ, CUDA_INJECTION64_PATH=str(counter), CUDA_MODULE_LOADING="EAGER")
    command = [str(probe), mode]
    if confine is not None:  # the sandbox passes the environment on; named in the command too
        command = confine(
            [
                "/usr/bin/env",
                *(f"{k}={env[k]}" for k in ("CUDA_INJECTION64_PATH", "CUDA_MODULE_LOADING")),
                *command,
            ]
        )
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if "==KIT-LOADS-ERROR==" in run.stderr or run.returncode != 0:
        return None, seconds, (run.stdout + run.stderr)[-400:]
    total = None
    for line in run.stderr.splitlines():
        if line.startswith("==KIT-LOADS== "):
            _grid, rest = line.removeprefix("==KIT-LOADS== ").split(",", 1)
            name, warp_loads, _threads = rest.rsplit(",", 2)  # a kernel's name may hold commas
            if student_kernel(name):
                total = (total or 0.0) + float(warp_loads)
    return total, seconds, "" if total is not None else (run.stdout + run.stderr)[-400:]


def sandboxed_counter(work: Path, probe: Path, counter: Path) -> Callable[[list[str]], list[str]] | None:
    """The grader's sandbox as it runs a worker, showing the probe's and the counter's folders and
    the toolkit's read-only (the kit's build is hidden from a worker: README.md), or None where
    the sandbox cannot be set up here."""
    sys.path.insert(0, str(ROOT))
    from grader.confine.sandbox import detect, tool_folders

    check = detect(tools=tool_folders(ROOT))
    if check.sandbox is None:
        print(f"no sandbox here: {check.reason}", flush=True)
        return None
    sandbox = check.sandbox
    scratch = work / "sandbox-scratch"
    scratch.mkdir(exist_ok=True)
    folders = tuple(dict.fromkeys((probe.parent, counter.parent)))
    return lambda command: sandbox.wrap(command, scratch, folders)


def compare(label: str, probe: Path, counter: Path, out: list[str]) -> None:
    for mode in MODES:
        ncu, ncu_s, ncu_why = with_ncu(probe, mode)
        requests, _, _ = with_ncu(probe, mode, REQUESTS)
        mine, mine_s, mine_why = with_counter(probe, mode, counter)
        same = "same" if ncu is not None and ncu == mine else "DIFFERENT"
        line = (
            f"{label:45s} {mode:9s} ncu {ncu} ({ncu_s:.2f} s; L1 requests {requests})  "
            f"counter {mine} ({mine_s:.2f} s)  {same}"
        )
        print(line, flush=True)
        out.append(line)
        for why in (ncu_why, mine_why):
            if why:
                print("    " + why.replace("\n", "\n    "), flush=True)


def mutant_kits(work: Path) -> list[tuple[str, str, Path]]:
    sys.path.insert(0, str(ROOT))
    from grader.rubric import load_kit
    from grader.staff.mutants import find_mutants

    kit = load_kit(ROOT)
    found = []
    for mutant in find_mutants(kit, [lab for lab in kit.labs if lab.id == "03"]):
        if mutant.name not in MUTANTS:
            continue
        copy = work / f"kit-{mutant.name}"
        copy.mkdir()
        subprocess.run(f"git -C '{ROOT}' archive HEAD | tar -x -C '{copy}'", shell=True, check=True)
        (copy / "labs" / mutant.lab.slug / mutant.kit_file).write_bytes(mutant.source)
        found.append((mutant.name, mutant.lab.id, copy))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="load-counter-") as folder:
        work = Path(folder)
        counter = build_counter(work)
        build_probes(ROOT, work / "reference", "reference", list(PROBES))
        for lab, program in PROBES.items():
            compare(f"reference, lab {lab}", work / "reference" / "bin" / program, counter, lines)
        for name, lab, kit in mutant_kits(work):
            build_probes(kit, work / f"build-{name}", "student", [lab])
            compare(f"lab {lab} {name}", work / f"build-{name}" / "bin" / PROBES[lab], counter, lines)
        probe = work / "reference" / "bin" / PROBES["03"]
        confine = sandboxed_counter(work, probe, counter)
        if confine is not None:
            count, seconds, why = with_counter(probe, "loads-16", counter, confine)
            line = f"in the grader's sandbox, lab03_probe loads-16: counter {count} ({seconds:.2f} s) {why}"
            print(line, flush=True)
            lines.append(line)
        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: with_counter(probe, "loads-16", counter), range(8)))
        line = (
            f"eight counter runs of lab03_probe loads-16 at once: {time.monotonic() - start:.2f} s, "
            f"counts {sorted({r[0] for r in results}, key=str)}, each {[round(r[1], 2) for r in results]}"
        )
        print(line)
        lines.append(line)
    (args.out / "load_counter.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
