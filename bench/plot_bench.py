#!/usr/bin/env python3
"""Draws GFLOP/s against matrix width from the CSV that matmul_bench writes.

python3 bench/plot_bench.py bench.csv bench.png
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, help="the CSV matmul_bench --csv wrote")
    parser.add_argument("png", type=Path, help="the picture to write")
    args = parser.parse_args(argv)

    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print(
            f"plot_bench.py: matplotlib is not installed, so no picture was drawn; install it "
            f"(python3 -m pip install matplotlib) and run this again. The numbers are in {args.csv}.",
            file=sys.stderr,
        )
        return 3
    if not args.csv.is_file():
        print(
            f"plot_bench.py: {args.csv} does not exist; run matmul_bench --csv {args.csv} first",
            file=sys.stderr,
        )
        return 2

    rows = read_rows(args.csv)
    if not rows:
        print(f"plot_bench.py: {args.csv} holds no measurements", file=sys.stderr)
        return 2
    series: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for row in rows:
        tile = "" if row["kernel"] == "cublas" else row["tile"]
        series[(row["lab"], tile)].append((int(row["width"]), float(row["gflops"])))

    # Widths as evenly spaced categories in increasing order: 4000 and 4096 stay apart.
    widths = sorted({int(row["width"]) for row in rows})
    position = {w: i for i, w in enumerate(widths)}
    figure, axes = plt.subplots(figsize=(8, 5))
    # One colour and marker per lab, one line style per tile width. Lab 04's kernel runs as fast
    # as lab 03's, so its lines lie on top of them: hollow markers keep both visible.
    labs = sorted({lab for lab, _ in series})
    markers = "osD^v<>"
    for (lab, tile), points in sorted(series.items()):
        points.sort()
        index = labs.index(lab)
        axes.plot(
            [position[w] for w, _ in points],
            [g for _, g in points],
            color=f"C{index}",
            marker=markers[index % len(markers)],
            markersize=8 if "boundary" in lab else 6,
            markerfacecolor="none" if "boundary" in lab else f"C{index}",
            linestyle="--" if tile == "32" else "-",
            label=f"{lab}, {tile}" if tile else lab,
        )
    axes.set_xticks(range(len(widths)))
    axes.set_xticklabels([str(w) for w in widths])
    # A log scale: cuBLAS runs several times faster than the labs' kernels, and on a linear
    # axis it would flatten the differences between them that the labs are about.
    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axes.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axes.set_xlabel("width W (W x W times W x W, FP32)")
    axes.set_ylabel("GFLOP/s (median run, log scale)")
    axes.set_title(f"Matrix multiplication on {rows[0]['device']}", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, title="kernel, tile or block width (32 dashed)", title_fontsize=8)
    figure.tight_layout()
    figure.savefig(args.png, dpi=120)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
