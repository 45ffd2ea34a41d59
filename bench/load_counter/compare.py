"""Global loads counted three ways, on a GPU: Nsight Compute over the probe, the kit's load
counter (common/load_counter/) over the probe, and the counter over the lesson's kernel launched
by the kit alone (kit_device_count, what grading counts where the counter is built: README.md).
Builds the counter and the labs' probes with the kit's CMake, then prints, for the reference and
a few mutants, each probe's loads modes counted each way, how long each run took, and what eight
counter runs at once do. Run from the kit's root:
    python3 bench/load_counter/compare.py --out DIR
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The metric the locality tests read (kit::profiler::kGlobalLoads), and the L1's requests for
# global loads beside it.
_PROFILER = (ROOT / "common" / "include" / "kit" / "profile.hpp").read_text(encoding="utf-8")
METRIC = _PROFILER.split('kGlobalLoads = "', 1)[1].split('"', 1)[0]
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
PROBES = {"03": "lab03_probe", "04": "lab04_probe", "05": "lab05_probe"}
# Each lab's kernel as kit_device_count launches it: its name and strip depth (the locality tests'
# kit::LoadCountLesson).
KERNELS = {
    "03": ("lab03::tiled_matmul_kernel", 0),
    "04": ("lab04::tiled_matmul_kernel", 0),
    "05": ("lab05::dynamic_matmul_kernel", 64),
}
CUOBJDUMP = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
MODES = ("loads-16", "loads-32")
MUTANTS = ("no_shared_memory", "tiles_loaded_but_M_read_from_global")  # lab 03's, by name


def build_probes(
    kit: Path, build: Path, kernels: str, labs: list[str], more: list[str] | None = None
) -> None:
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
        [
            "cmake",
            "--build",
            str(build),
            "-j",
            "16",
            "--target",
            "kit_load_counter",
            *(more or []),
            *[PROBES[lab] for lab in labs],
        ],
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


# The descriptors the load counter reads its token from and writes its lines to, as the judge
# gives them (kit::profiler::count_loads); made in the parent one run at a time.
TOKEN_FD, LINES_FD = 1000, 1001
_spawning = threading.Lock()


def with_counter(
    probe: Path,
    mode: str,
    counter: Path,
    confine: Callable[[list[str]], list[str]] | None = None,
    program: list[str] | None = None,
) -> tuple[float | None, float, str]:
    """The probe's loads as the judge counts them with the kit's load counter: preloaded, its
    token on one pipe and its lines on another. `confine`: wraps the command as the grader's
    sandbox runs a worker (sandboxed_counter). `program`: another command counted instead of
    `probe mode` (kit_device_count's)."""
    token = secrets.token_hex(16)
    # Named on the probe's own command line only: a wrapper preloading the counter would take the
    # token first.
    settings = {
        "LD_PRELOAD": str(counter),
        "CUDA_INJECTION64_PATH": str(counter),
        "CUDA_MODULE_LOADING": "EAGER",
        "KIT_LOAD_COUNT_TOKEN_FD": str(TOKEN_FD),
        "KIT_LOAD_COUNT_FD": str(LINES_FD),
    }
    run = program if program is not None else [str(probe), mode]
    command = ["/usr/bin/env", *(f"{k}={v}" for k, v in settings.items()), *run]
    if confine is not None:
        command = confine(command)
    token_read, token_write = os.pipe()
    os.write(token_write, (token + "\n").encode())
    os.close(token_write)
    lines_read, lines_write = os.pipe()
    start = time.monotonic()
    with _spawning:
        os.dup2(token_read, TOKEN_FD)
        os.dup2(lines_write, LINES_FD)
        try:
            child = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                pass_fds=(TOKEN_FD, LINES_FD),
            )
        finally:
            for fd in (TOKEN_FD, LINES_FD, token_read, lines_write):
                os.close(fd)
    lines: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(lines_read, lines))
    reader.start()
    output, _ = child.communicate()
    reader.join()
    os.close(lines_read)
    seconds = time.monotonic() - start
    text = b"".join(lines).decode(errors="replace")
    total, problem = _read_lines(text, token)
    if child.returncode != 0 or problem:
        return None, seconds, f"exit code {child.returncode}; {problem}\n{output[-400:]}"
    return total, seconds, ""


def _drain(fd: int, into: list[bytes]) -> None:
    while chunk := os.read(fd, 1 << 16):
        into.append(chunk)


def _read_lines(text: str, token: str) -> tuple[float, str]:
    """The student's kernels' loads from the counter's lines, and "" or what spoils them (the
    rules of kit::profiler::parse_counter)."""
    total, launches, ended = 0.0, 0, False
    for line in text.splitlines():
        if ended or not line.startswith(token + " "):
            return 0.0, f"unexpected line {line!r}"
        words = line[len(token) + 1 :].split(" ", 2)
        if words[0] == "end":
            ended = words[1:] == [str(launches), str(launches)]
            if not ended:
                return 0.0, f"end line {line!r} after {launches} launches"
            continue
        if words[0] != str(launches + 1) or len(words) != 3:
            return 0.0, f"malformed line {line!r}"
        launches += 1
        if student_kernel(words[2]):
            total += float(words[1])
    return (total, "") if ended else (0.0, "no end line")


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


def compare(label: str, lab: str, probe: Path, counter: Path, out: list[str], device_count: Path) -> None:
    """Each loads mode of `probe` counted by ncu and by the counter, and the lesson's kernel taken
    out of the probe and launched by the kit alone (`device_count`), counted."""
    for mode in MODES:
        ncu, ncu_s, ncu_why = with_ncu(probe, mode)
        requests, _, _ = with_ncu(probe, mode, REQUESTS)
        mine, mine_s, mine_why = with_counter(probe, mode, counter)
        same = "same" if ncu is not None and ncu == mine else "DIFFERENT"
        line = (
            f"{label:45s} {mode:9s} ncu {ncu} ({ncu_s:.2f} s; L1 requests {requests})  "
            f"counter {mine} ({mine_s:.2f} s)  {same}"
        )
        whys = [ncu_why, mine_why]
        kernel, depth = KERNELS[lab]
        alone, alone_s, alone_why = with_counter(
            probe, mode, counter, program=[str(device_count), CUOBJDUMP, str(probe), kernel, str(depth), mode]
        )
        line += f"  kernel alone {alone} ({alone_s:.2f} s) {'same' if alone == ncu else 'DIFFERENT'}"
        whys.append(alone_why)
        print(line, flush=True)
        out.append(line)
        for why in whys:
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
        build_probes(ROOT, work / "reference", "reference", list(PROBES), ["kit_device_count"])
        counter = work / "reference" / "load_counter" / "libkit_load_counter.so"
        device_count = work / "reference" / "load_counter" / "kit_device_count"
        if not counter.is_file():
            sys.exit("the kit's build made no load counter: no Compute Sanitizer API (set KIT_SANITIZER_DIR)")
        for lab, program in PROBES.items():
            compare(
                f"reference, lab {lab}",
                lab,
                work / "reference" / "bin" / program,
                counter,
                lines,
                device_count,
            )
        for name, lab, kit in mutant_kits(work):
            build_probes(kit, work / f"build-{name}", "student", [lab])
            compare(
                f"lab {lab} {name}",
                lab,
                work / f"build-{name}" / "bin" / PROBES[lab],
                counter,
                lines,
                device_count,
            )
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
