#!/usr/bin/env python3
"""How many GPU test processes can start per second, 1 to N at a time: the ceiling on the
grader's test throughput on one GPU (bench/RESULTS.md, "Starting CUDA processes").

    python3 bench/context_rate.py [--build-dir build] [--concurrency 1,4,8,16] [--processes 48]
                                  [--connections N] [--gpus 0,1,2,3] [--mps] [-- COMMAND ...]

By default each process is build/bin/context_probe (create a context, launch one kernel); after
`--` any command, e.g. one lab test:  -- build/bin/lab02_tests "naive result matches ...".
Prints, per concurrency, the processes per second and the mean seconds each process took, and
for the probe the mean of its phases (loading the driver, creating the context, the kernel).
--connections N sets CUDA_DEVICE_MAX_CONNECTIONS (hardware queues a context; CUDA's default is
8, the grader's test processes get 1: grader/pipeline/run.py).
--gpus runs the same on each GPU of the list at once (each process sees one GPU through
CUDA_VISIBLE_DEVICES), a line per GPU and one for them all: whether a node starts more processes
a second on several GPUs than on one (bench/RESULTS.md, "Every GPU of a node").
--mps starts a CUDA MPS control daemon of its own for the run (nvidia-cuda-mps-control -d, its
pipe and log folders fresh and given to every process) and stops it after: whether the processes
start faster as clients of one server than with a context each. (The grader does not use MPS: a
fault in one client ends another's kernel; bench/RESULTS.md, "CUDA MPS, tried". This measures
what that costs in starts.)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rate:
    concurrency: int
    processes: int
    wall: float
    mean_process: float
    failed: int
    phases: tuple[float, float, float] | None = None  # mean driver, context, kernel seconds

    @property
    def per_second(self) -> float:
        return self.processes / self.wall if self.wall > 0 else 0.0


# What `context_probe --phases` prints.
PHASES = re.compile(r"driver ([0-9.]+) s, context ([0-9.]+) s, first kernel ([0-9.]+) s")


def measure(command: list[str], concurrency: int, processes: int, env: dict[str, str] | None = None) -> Rate:
    def one(_: int) -> tuple[float, int, str]:
        start = time.monotonic()
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, check=False
        )
        return time.monotonic() - start, done.returncode, done.stdout

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(one, range(processes)))
    wall = time.monotonic() - start
    found = [match.groups() for *_, out in results if (match := PHASES.search(out))]
    phases = None
    if found:
        driver, context, kernel = (sum(float(row[i]) for row in found) / len(found) for i in range(3))
        phases = (driver, context, kernel)
    return Rate(
        concurrency,
        processes,
        wall,
        sum(seconds for seconds, *_ in results) / processes,
        sum(1 for _, code, _ in results if code != 0),
        phases,
    )


def measure_on(
    gpus: list[str], command: list[str], concurrency: int, processes: int, env: dict[str, str]
) -> list[Rate]:
    """measure() on every GPU of `gpus` at once, each process seeing its GPU alone."""
    with ThreadPoolExecutor(max_workers=len(gpus)) as pool:
        runs = [
            pool.submit(measure, command, concurrency, processes, {**env, "CUDA_VISIBLE_DEVICES": gpu})
            for gpu in gpus
        ]
        return [run.result() for run in runs]


@contextmanager
def mps_daemon(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A CUDA MPS control daemon for the block's length, with pipe and log folders of its own;
    yields the processes' environment, which names them. Raises RuntimeError where there is no
    nvidia-cuda-mps-control or it does not start."""
    control = shutil.which("nvidia-cuda-mps-control", path=env.get("PATH"))
    if control is None:
        raise RuntimeError("nvidia-cuda-mps-control is not on PATH: CUDA MPS is not installed here")
    # "quit" does not wait for the daemon to end: its folders may still be written as they go.
    with tempfile.TemporaryDirectory(prefix="context-rate-mps-", ignore_cleanup_errors=True) as folder:
        mps = {
            **env,
            "CUDA_MPS_PIPE_DIRECTORY": str(Path(folder) / "pipe"),
            "CUDA_MPS_LOG_DIRECTORY": str(Path(folder) / "log"),
        }
        for name in ("pipe", "log"):
            (Path(folder) / name).mkdir()
        # The daemon sees every GPU, so that a client's CUDA_VISIBLE_DEVICES means what it does
        # without MPS.
        daemon = {key: value for key, value in mps.items() if key != "CUDA_VISIBLE_DEVICES"}
        started = _quiet([control, "-d"], daemon)
        if started.returncode != 0:
            raise RuntimeError(
                f"nvidia-cuda-mps-control -d failed (exit code {started.returncode}; its log: {folder}/log)"
            )
        try:
            yield mps
        finally:
            _quiet([control], daemon, b"quit\n")


def _quiet(
    command: list[str], env: dict[str, str], given: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The MPS control program run with its output to nothing (so that a daemon keeping a pipe open
    holds up nothing) and a time limit."""
    return subprocess.run(
        command,
        env=env,
        input=given,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


def _line(label: str, rate: Rate) -> str:
    line = (
        f"{label:>8} {rate.processes:>10} {rate.wall:>8.2f} {rate.per_second:>11.2f} "
        f"{rate.mean_process:>12.3f} {rate.failed:>7}"
    )
    if rate.phases is not None:
        driver, context, kernel = rate.phases
        line += f"  (driver {driver:.3f} s, context {context:.3f} s, kernel {kernel:.3f} s)"
    return line


def main(argv: list[str]) -> int:
    own, command = _split(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build", help="where context_probe was built")
    parser.add_argument("--concurrency", default="1,2,4,8,16", help="comma-separated")
    parser.add_argument("--processes", type=int, default=48, help="processes per concurrency")
    parser.add_argument(
        "--connections", type=int, help="CUDA_DEVICE_MAX_CONNECTIONS for the processes (default: unset)"
    )
    parser.add_argument("--gpus", metavar="LIST", help="comma-separated GPUs to start processes on at once")
    parser.add_argument("--mps", action="store_true", help="start a CUDA MPS daemon of its own for the run")
    args = parser.parse_args(own)
    env = dict(os.environ)
    if args.connections is not None:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = str(args.connections)
    if not command:
        probe = Path(args.build_dir) / "bin" / "context_probe"
        if not probe.is_file():
            print(f"context_rate: {probe} is missing; build it first (make build)", file=sys.stderr)
            return 2
        command = [str(probe), "--phases"]
    levels = [int(level) for level in args.concurrency.split(",") if level.strip()]
    if not levels or min(levels) < 1 or args.processes < 1:
        print("context_rate: --concurrency and --processes must be positive", file=sys.stderr)
        return 2
    gpus = [gpu.strip() for gpu in args.gpus.split(",") if gpu.strip()] if args.gpus else []
    try:
        with mps_daemon(env) if args.mps else _unchanged(env) as run_env:
            if args.mps:  # the server starts with its first client: not a measured one
                subprocess.run(
                    command, env=run_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
                )
            _print_rates(command, levels, args.processes, run_env, gpus)
    except RuntimeError as error:
        print(f"context_rate: {error}", file=sys.stderr)
        return 2
    return 0


@contextmanager
def _unchanged(env: dict[str, str]) -> Iterator[dict[str, str]]:
    yield env


def _print_rates(
    command: list[str], levels: list[int], processes: int, env: dict[str, str], gpus: list[str]
) -> None:
    print(
        f"{'at once':>8} {'processes':>10} {'wall s':>8} {'per second':>11} {'mean s each':>12} {'failed':>7}"
    )
    for level in levels:
        if not gpus:
            print(_line(str(level), measure(command, level, processes, env)), flush=True)
            continue
        rates = measure_on(gpus, command, level, processes, env)
        for gpu, rate in zip(gpus, rates, strict=True):
            print(_line(str(level), rate) + f"  GPU {gpu}", flush=True)
        wall = max(rate.wall for rate in rates)
        total = sum(rate.processes for rate in rates)
        failed = sum(rate.failed for rate in rates)
        per_second = total / wall if wall > 0 else 0.0
        line = f"{'':>8} {total:>10} {wall:>8.2f} {per_second:>11.2f} {'':>12} {failed:>7}"
        print(f"{line}  all {len(gpus)} GPUs", flush=True)


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The script's own options, and the command after `--` (empty without one)."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
