"""Scores to render pages from: a student whose lab 03 fails (a phase's inner loop stopping at
half the tile, as the kit diagnoses it) and whose lab 06 passes with its charts, and a small class
around them. The hint texts are the kit's own wording (common/src/term_map.cpp, the rubrics)."""

from __future__ import annotations

import io

from grader.pipeline.charts import Charts
from grader.pipeline.collect import Refusal
from grader.pipeline.run import Status
from grader.pipeline.score import NOT_SUBMITTED, LabScore, SubmissionScore, masks_in, without_masks
from grader.pipeline.score import TestScore as Scored

HIDDEN_TEST = "result matches the host reference on hidden widths"
HALF_TILE = (
    "on inputs that say where each term came from: every element of P lacks, in every phase, the terms "
    "at k = 8 to 15 of the tile (inner index 8 to 15, 24 to 31): the loop over k inside a phase stops "
    "at k = 8; run it while k < TILE_WIDTH"
)
# A 40 x 40 P whose last 8 rows and columns were never written and whose first 32 x 32 are wrong.
MASK = "kit-mask 40x40 32x32 " + "".join(
    "u" if r >= 26 or c >= 26 else "x" for r in range(32) for c in range(32)
)
DETAILS = (
    "tile := 16\nwidth := 40\nresult differs from the host reference at 1600 of 1600 elements (40 x 40): "
    "576 never written, 0 NaN or infinite, 1024 wrong\n  P[0][0]: got 1.25, expected 3.5\n"
    "  P[0][1]: got -0.5, expected 0.75\n" + MASK + "\nhint: " + HALF_TILE
)


def chart_png() -> bytes:
    """A small chart as lab 06 draws one (matplotlib where installed, else a 1 x 1 PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a1d5a2e70000000049454e44ae426082"
        )
    figure, axes = plt.subplots(figsize=(5, 3), dpi=80)
    axes.plot([32, 64, 128, 256, 512, 1024], [50, 100, 100, 100, 100, 66.7], marker="o")
    axes.set_xlabel("threads per block")
    axes.set_ylabel("occupancy (%)")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def lab03(failing: bool) -> LabScore:
    if not failing:
        tests = [
            Scored("tiled result matches the host reference for every tile width", 15, 15, Status.PASSED),
            Scored(
                "tiled kernel speed is close to the reference kernel",
                10,
                10,
                Status.PASSED,
                metrics={"time_ratio": 1.04},
            ),
            Scored("block transpose shares no element between warps without a barrier", 3, 3, Status.PASSED),
            Scored(HIDDEN_TEST, 10, 10, Status.PASSED, visibility="hidden"),
        ]
        return LabScore("03", "03_tiled_matmul", "Tiled matrix multiplication", tests)
    tests = [
        Scored(
            "tiled result matches the host reference for every tile width",
            0,
            15,
            Status.FAILED,
            reasons=["failed"],
            hints=[
                HALF_TILE,
                HALF_TILE.replace("k = 8", "k = 16").replace("8 to 15", "16 to 31"),
                "README section 5: row and col, the phase offset ph * TILE_WIDTH in both loads, Mds[ty][k] * Nds[k][tx].",
            ],
            failure_hints=2,
            details=[without_masks(DETAILS)],
            masks=masks_in([DETAILS]),
        ),
        Scored(
            "tiled kernel speed is close to the reference kernel",
            4,
            10,
            Status.PASSED,
            reasons=["time_ratio = 1.92: 4 of 10 points"],
            metrics={"time_ratio": 1.92},
        ),
        Scored(
            "block transpose shares no element between warps without a barrier",
            3,
            3,
            Status.PASSED,
        ),
        Scored(
            HIDDEN_TEST,
            0,
            10,
            Status.FAILED,
            reasons=["failed"],
            visibility="hidden",
            details=["width 1000: secret"],
        ),
    ]
    return LabScore("03", "03_tiled_matmul", "Tiled matrix multiplication", tests)


def lab06() -> LabScore:
    tests = [
        Scored("16x16 blocks fill an SM at compute capability 1.3 and 2.0 and 3.0", 5, 5, Status.PASSED),
        Scored("registers are allocated per warp in units of the allocation size", 4, 4, Status.PASSED),
        Scored(
            "the calculator agrees with the CUDA runtime for real kernels on this GPU", 5, 5, Status.PASSED
        ),
    ]
    charts = Charts(files={"occupancy_vs_block_size.png": chart_png()})
    return LabScore("06", "06_occupancy", "Occupancy", tests, charts=charts)


def student(name: str = "alice", failing: bool = True) -> SubmissionScore:
    return SubmissionScore(
        name,
        [lab03(failing), lab06()],
        refused=[Refusal("notes.txt", "not a file of any lab")] if failing else [],
    )


def unbuilt(name: str) -> SubmissionScore:
    lab = lab03(True)
    for test in lab.tests:
        test.points, test.status, test.reasons = 0, Status.NOT_BUILT, ["not run: lab03 did not compile"]
        test.hints, test.failure_hints, test.details = [], 0, []
    lab.problem = "lab03 did not compile"
    lab.build_log = 'tiled_matmul.cu(41): error: identifier "Mds" is undefined\n1 error detected'
    missing = LabScore(
        "06",
        "06_occupancy",
        "Occupancy",
        [Scored(t.name, 0, t.max_points, Status.NOT_BUILT) for t in lab06().tests],
        problem=f"{NOT_SUBMITTED}: no occupancy.cu",
    )
    return SubmissionScore(name, [lab, missing])


def small_class() -> list[SubmissionScore]:
    return [student("alice"), student("bob", failing=False), student("carol"), unbuilt("dave")]
