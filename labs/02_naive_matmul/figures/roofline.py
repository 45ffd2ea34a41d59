"""Draws roofline.png for section 6 of lab 02's write-up: the roofline of the A100-class GPU the
section uses (19,500 GFLOP/s FP32, 1555 GB/s), with the naive kernel at 0.25 FLOP/B and the
tiled kernels of lab 03 at 4 and 8 FLOP/B. The numbers are the section's; change them there and
here together, then run: python3 labs/02_naive_matmul/figures/roofline.py (needs matplotlib).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PEAK_GFLOPS = 19_500.0
BANDWIDTH_GBS = 1555.0
KERNELS = [("naive (lab 02)", 0.25), ("16 x 16 tiles (lab 03)", 4.0), ("32 x 32 tiles (lab 03)", 8.0)]


def attainable(intensity: float) -> float:
    return min(PEAK_GFLOPS, BANDWIDTH_GBS * intensity)


def main() -> None:
    ridge = PEAK_GFLOPS / BANDWIDTH_GBS
    xs = [0.05 * 1.1**i for i in range(80)]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    ax.loglog(xs, [attainable(x) for x in xs], color="#1f4e79", linewidth=2, label="what the GPU can reach")
    ax.axvline(ridge, color="#999999", linestyle=":", linewidth=1)
    ax.annotate(f"ridge: {ridge:.1f} FLOP/B", (ridge, 120), rotation=90, va="bottom", ha="right", fontsize=9)
    for (name, intensity), color in zip(KERNELS, ["#c0392b", "#e67e22", "#27ae60"], strict=True):
        rate = attainable(intensity)
        ax.plot([intensity], [rate], "o", color=color, markersize=7, label=f"{name}: {rate:,.0f} GFLOP/s")
    ax.set_xlabel("arithmetic intensity (FLOP per byte loaded from global memory)")
    ax.set_ylabel("best rate (GFLOP/s)")
    ax.set_title("Memory-bound below the ridge, compute-bound above it")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    fig.savefig(Path(__file__).with_name("roofline.png"))


if __name__ == "__main__":
    main()
