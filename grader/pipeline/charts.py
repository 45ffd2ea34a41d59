"""Charts a lab draws from the student's own code (lab 06: the occupancy calculator's three
charts), for the student's feedback. Part of the run stage: it runs student-built code, with
the same process limits as a test and, when grading, in the same sandbox (grader/confine/sandbox.py)
with a scrubbed environment: the script sees its own folder, the student's program and the
charts folder, which is all it may write.

A lab asks for charts in its rubric:

    [lab.charts]
    target = "lab06_curves"          # a CMake target built from the student's files
    script = "plot_occupancy.py"     # in the lab folder; called with --build DIR --out DIR

The script writes PNG files into --out; exit code 3 means matplotlib is missing.
"""

from __future__ import annotations

import re
import sys
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from ..confine.cgroups import Cgroups
from ..confine.proc import run_limited
from ..confine.sandbox import Sandbox
from ..rubric import Lab
from .build import BuildConfig, build_command
from .run import scrubbed_env

CHART_TIMEOUT = 120.0
CHART_OUTPUT_LIMIT = 64 * 1024
MAX_CHARTS = 8  # PNG files kept per lab
MAX_CHART_BYTES = 4 << 20  # a bigger PNG is left out of the feedback
MISSING_MATPLOTLIB = 3  # the scripts' exit code when matplotlib cannot be imported


@dataclass
class Charts:
    files: dict[str, bytes] = field(default_factory=dict)  # PNG name -> contents
    note: str = ""  # why there are none, or what to look at


def draw_charts(lab: Lab, source: Path, build_dir: Path, out_dir: Path, config: BuildConfig) -> Charts:
    """`make check`: builds the lab's chart target in place, then plots; never raises for a
    student's failure."""
    if lab.charts is None:
        return Charts()
    built = run_limited(
        build_command(build_dir, lab.charts.target, config),
        cwd=source,
        timeout=config.timeout,
        output_limit=CHART_OUTPUT_LIMIT,
    )
    if built.timed_out or built.returncode != 0:
        return Charts(note=f"charts not drawn: {lab.charts.target} did not build")
    return plot_charts(lab, source, build_dir / "bin" / lab.charts.target, out_dir)


# Alike in shape only to BuildCache.__init__ in pipeline/build.py: both take the optional sandbox and
# cgroups that confine what they start, as every step that runs student code does.
def plot_charts(
    lab: Lab,
    kit_root: Path,
    program: Path,
    out_dir: Path,
    sandbox: Sandbox | None = None,
    cgroups: Cgroups | None = None,
) -> Charts:
    """Runs the lab's script on an already linked chart program (the grader links it per
    submission); the PNGs it writes become the charts. With a sandbox, confined as a test is."""
    assert lab.charts is not None
    script = kit_root / "labs" / lab.slug / lab.charts.script
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        str(script),
        "--curves",
        str(program),
        "--build",
        str(out_dir),
        "--out",
        str(out_dir),
    ]
    # matplotlib keeps its cache under its config folder: in the charts folder, not in a HOME
    # that other processes share.
    env = scrubbed_env(out_dir, {"MPLCONFIGDIR": str(out_dir / ".matplotlib")})
    if sandbox is not None:
        # The interpreter's own trees too (a virtual environment and its packages, the Python it
        # was made from): outside the system's folders, they are not in the sandbox's view.
        python = (Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent)
        command = sandbox.wrap(command, out_dir, (script.parent, program.parent, *python))
    # The chart program runs the student's calculator: in a cgroup of its own, as a test is.
    with cgroups.for_test() if cgroups is not None else nullcontext() as cgroup:
        drawn = run_limited(
            command,
            cwd=out_dir,
            timeout=CHART_TIMEOUT,
            output_limit=CHART_OUTPUT_LIMIT,
            env=env,
            cgroup=cgroup.procs if cgroup is not None else (),
        )
    if drawn.returncode == MISSING_MATPLOTLIB:
        return Charts(note="charts not drawn: matplotlib is not installed where the grader runs")
    if drawn.timed_out or drawn.returncode != 0:
        last = drawn.output.strip().splitlines()[-1:] or ["no output"]
        line = without_paths(
            last[0], {program: program.name, out_dir: "the charts folder", kit_root: "the kit"}
        )
        return Charts(note=f"charts not drawn: {lab.charts.script} failed: {line}")
    # Plain files only: a link the program left there could point at anything on this machine.
    pngs = [
        path
        for path in sorted(out_dir.glob("*.png"))
        if not path.is_symlink() and path.is_file() and path.stat().st_size <= MAX_CHART_BYTES
    ]
    files = {path.name: path.read_bytes() for path in pngs[:MAX_CHARTS]}
    return Charts(files=files, note="" if files else f"charts not drawn: {lab.charts.script} wrote no PNG")


# An absolute path of two or more parts (/a/b, /tmp/x.png); a lone "/" (as in "1/2") is not one.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~-])/(?:[^\s/:'\"]+/)+([^\s/:'\"]*)")


def without_paths(text: str, known: dict[Path, str]) -> str:
    """`text` for a student's feedback: the grading machine's folders are not theirs to see (and
    mean nothing to them). Each known path becomes its name for them, any other absolute path
    its last part."""
    for path, name in sorted(known.items(), key=lambda item: -len(str(item[0]))):
        text = text.replace(str(path), name)
    return _ABSOLUTE_PATH.sub(lambda match: match.group(1) or "/", text)
