#!/usr/bin/env python3
"""How many GPU test processes can start per second, 1 to N at a time: the ceiling on the
grader's test throughput on one GPU (bench/RESULTS.md, "Starting CUDA processes").

    python3 bench/context_rate.py [--build-dir build] [--concurrency 1,4,8,16] [--processes 48]
                                  [--connections N] [-- COMMAND ...]

By default each process is build/bin/context_probe (create a context, launch one kernel); after
`--` any command, e.g. one lab test:  -- build/bin/lab02_tests "naive result matches ...".
Prints, per concurrency, the processes per second and the mean seconds each process took, and
for the probe the mean of its phases (loading the driver, creating the context, the kernel).
--connections N sets CUDA_DEVICE_MAX_CONNECTIONS (hardware queues a context; CUDA's default is
8, the grader's test processes get 1: grader/pipeline/run.py).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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


def main(argv: list[str]) -> int:
    own, command = _split(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build", help="where context_probe was built")
    parser.add_argument("--concurrency", default="1,2,4,8,16", help="comma-separated")
    parser.add_argument("--processes", type=int, default=48, help="processes per concurrency")
    parser.add_argument(
        "--connections", type=int, help="CUDA_DEVICE_MAX_CONNECTIONS for the processes (default: unset)"
    )
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
    print(
        f"{'at once':>8} {'processes':>10} {'wall s':>8} {'per second':>11} {'mean s each':>12} {'failed':>7}"
    )
    for level in levels:
        rate = measure(command, level, args.processes, env)
        line = (
            f"{rate.concurrency:>8} {rate.processes:>10} {rate.wall:>8.2f} {rate.per_second:>11.2f} "
            f"{rate.mean_process:>12.3f} {rate.failed:>7}"
        )
        if rate.phases is not None:
            driver, context, kernel = rate.phases
            line += f"  (driver {driver:.3f} s, context {context:.3f} s, kernel {kernel:.3f} s)"
        print(line, flush=True)
    return 0


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The script's own options, and the command after `--` (empty without one)."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
