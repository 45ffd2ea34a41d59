#!/usr/bin/env python3
"""Draws the three charts of NVIDIA's occupancy spreadsheet from your calculator.

Runs lab06_curves (built from your occupancy.cu), which prints the sweeps as CSV, and writes
into the output folder:

    curves.csv                                  the sweeps, always
    occupancy_vs_threads_per_block.png          the three charts, when matplotlib is installed
    occupancy_vs_registers_per_thread.png
    occupancy_vs_shared_memory_per_block.png

Each chart varies one input and keeps the other two at your configuration, which is marked
with a red triangle as in the spreadsheet. Example (README section 8):

    cmake --build build --target lab06_curves
    python3 labs/06_occupancy/tools/plot_occupancy.py --build build --out build/plots/lab06 \\
        --preset 9.0 --threads 256 --registers 32 --shared 2048
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SWEEPS = {
    # sweep name in the CSV: (file stem, x-axis label, chart title)
    "threads_per_block": (
        "occupancy_vs_threads_per_block",
        "threads per block",
        "Impact of varying block size",
    ),
    "registers_per_thread": (
        "occupancy_vs_registers_per_thread",
        "registers per thread",
        "Impact of varying register count per thread",
    ),
    "shared_memory_per_block": (
        "occupancy_vs_shared_memory_per_block",
        "shared memory per block (bytes)",
        "Impact of varying shared memory usage per block",
    ),
}


@dataclass(frozen=True)
class Point:
    value: int
    active_blocks: int
    active_warps: int
    occupancy: float
    limited_by: str


@dataclass
class Sweep:
    points: list[Point]
    current: Point | None = None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--build",
        type=Path,
        default=Path("build"),
        help="the kit's build folder, which holds bin/lab06_curves (default: build)",
    )
    parser.add_argument(
        "--curves", type=Path, default=None, help="the lab06_curves program (default: BUILD/bin/lab06_curves)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for the CSV and PNGs (default: BUILD/plots/lab06)"
    )
    parser.add_argument(
        "--preset",
        default="9.0",
        help="compute capability of a device preset, e.g. 3.5 or 9.0 (default: 9.0)",
    )
    parser.add_argument("--threads", type=int, default=256, help="threads per block (default: 256)")
    parser.add_argument("--registers", type=int, default=32, help="registers per thread (default: 32)")
    parser.add_argument(
        "--shared", type=int, default=2048, help="bytes of shared memory per block (default: 2048)"
    )
    return parser.parse_args(argv)


def run_curves(program: Path, args: argparse.Namespace) -> str:
    if not program.is_file():
        raise SystemExit(
            f"plot_occupancy.py: {program} does not exist; build it first with "
            f"'cmake --build {args.build} --target lab06_curves'"
        )
    command = [
        str(program),
        "--preset",
        args.preset,
        "--threads",
        str(args.threads),
        "--registers",
        str(args.registers),
        "--shared",
        str(args.shared),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise SystemExit(f"plot_occupancy.py: {' '.join(command)} failed:\n{done.stderr.strip()}")
    return done.stdout


def parse_curves(text: str) -> dict[str, Sweep]:
    sweeps = {name: Sweep([]) for name in SWEEPS}
    for row in csv.DictReader(io.StringIO(text)):
        point = Point(
            int(row["value"]),
            int(row["active_blocks"]),
            int(row["active_warps"]),
            float(row["occupancy"]),
            row["limited_by"],
        )
        sweep = sweeps[row["sweep"]]
        if row["current"] == "1":
            sweep.current = point
        else:
            sweep.points.append(point)
    return sweeps


def max_warps(sweeps: dict[str, Sweep]) -> int:
    """The SM's warp slots, recovered from any point with a non-zero occupancy."""
    for sweep in sweeps.values():
        for p in sweep.points:
            if p.occupancy > 0:
                return round(p.active_warps / p.occupancy)
    return 64


def plot(sweeps: dict[str, Sweep], args: argparse.Namespace, out: Path, device: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy  # comes with matplotlib

    slots = max_warps(sweeps)
    written = []
    for name, (stem, xlabel, title) in SWEEPS.items():
        sweep = sweeps[name]
        xs = [p.value for p in sweep.points]
        ys = [p.active_warps for p in sweep.points]
        fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
        if name == "threads_per_block":
            ax.plot(xs, ys, color="#1f5fa8", marker="o", markersize=3, linewidth=1.2)
        else:
            ax.step(xs, ys, where="post", color="#1f5fa8", linewidth=1.5)
        if sweep.current is not None:
            c = sweep.current
            label = (
                f"your configuration: {c.value} -> {c.active_warps} warps "
                f"({c.occupancy:.0%}),\nlimited by {c.limited_by}"
            )
            ax.plot(
                [c.value],
                [c.active_warps],
                marker="^",
                color="#d62728",
                markersize=12,
                linestyle="none",
                label=label,
                zorder=5,
            )
            ax.legend(loc="best", fontsize=9, framealpha=0.95)
        ax.set_xlim(left=0)
        ax.set_ylim(0, slots * 1.08)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("active warps per SM")
        ax.grid(True, alpha=0.3)

        def to_percent(warps: Any) -> Any:
            return 100 * numpy.asarray(warps) / slots

        def to_warps(percent_: Any) -> Any:
            return numpy.asarray(percent_) * slots / 100

        percent = ax.secondary_yaxis("right", functions=(to_percent, to_warps))
        percent.set_ylabel("occupancy (%)")
        ax.set_title(
            f"{title}\n{device}: {args.threads} threads, {args.registers} registers, "
            f"{args.shared} bytes of shared memory per block",
            fontsize=10,
        )
        fig.tight_layout()
        path = out / f"{stem}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def device_name(program: Path, preset: str) -> str:
    listing = subprocess.run([str(program), "--list"], capture_output=True, text=True, check=False)
    for line in listing.stdout.splitlines():
        cc, _, name = line.partition("  ")
        if cc.strip() == preset:
            return name.strip()
    return f"compute capability {preset}"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    program = args.curves or args.build / "bin" / "lab06_curves"
    out = args.out or args.build / "plots" / "lab06"
    text = run_curves(program, args)
    out.mkdir(parents=True, exist_ok=True)
    (out / "curves.csv").write_text(text)
    sweeps = parse_curves(text)
    try:
        import matplotlib  # noqa: F401  (only to see whether it is installed)
    except ImportError:
        print(
            f"plot_occupancy.py: wrote {out / 'curves.csv'}, but drawing the charts needs "
            "matplotlib, which this Python lacks: install it with "
            "'python3 -m pip install matplotlib' (or apt-get install python3-matplotlib) "
            "and run this again.",
            file=sys.stderr,
        )
        return 3
    for path in plot(sweeps, args, out, device_name(program, args.preset)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
