"""Charts a lab draws from the student's own code (lab 06: the occupancy calculator's three
charts), for the student's feedback. Part of the run stage: it runs student-built code, with
the same process limits as a test.

A lab asks for charts in its rubric:

    [lab.charts]
    target = "lab06_curves"          # a CMake target built from the student's files
    script = "plot_occupancy.py"     # in the lab folder; called with --build DIR --out DIR

The script writes PNG files into --out; exit code 3 means matplotlib is missing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from .build import BuildConfig, build_command
from .proc import run_limited
from .rubric import Lab

CHART_TIMEOUT = 120.0
CHART_OUTPUT_LIMIT = 64 * 1024
MISSING_MATPLOTLIB = 3  # the scripts' exit code when matplotlib cannot be imported


@dataclass
class Charts:
    files: dict[str, bytes] = field(default_factory=dict)  # PNG name -> contents
    note: str = ""  # why there are none, or what to look at


def draw_charts(lab: Lab, source: Path, build_dir: Path, out_dir: Path, config: BuildConfig) -> Charts:
    """Builds the lab's chart target and runs its script; never raises for a student's failure."""
    if lab.charts is None:
        return Charts()
    built = run_limited(build_command(build_dir, lab.charts.target, config), cwd=source,
                        timeout=config.timeout, output_limit=CHART_OUTPUT_LIMIT)
    if built.timed_out or built.returncode != 0:
        return Charts(note=f"charts not drawn: {lab.charts.target} did not build")
    script = source / "labs" / lab.slug / lab.charts.script
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn = run_limited([sys.executable, str(script), "--build", str(build_dir), "--out", str(out_dir)],
                        cwd=source, timeout=CHART_TIMEOUT, output_limit=CHART_OUTPUT_LIMIT)
    if drawn.returncode == MISSING_MATPLOTLIB:
        return Charts(note="charts not drawn: matplotlib is not installed where the grader runs")
    if drawn.timed_out or drawn.returncode != 0:
        last = drawn.output.strip().splitlines()[-1:] or ["no output"]
        return Charts(note=f"charts not drawn: {lab.charts.script} failed: {last[0]}")
    files = {path.name: path.read_bytes() for path in sorted(out_dir.glob("*.png"))}
    return Charts(files=files, note="" if files else f"charts not drawn: {lab.charts.script} wrote no PNG")
