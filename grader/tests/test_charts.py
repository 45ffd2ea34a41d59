"""Charts drawn from the student's code: built, run, collected, or explained when they fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.errors import GraderError
from grader.pipeline.build import BuildConfig
from grader.pipeline.charts import draw_charts, without_paths
from grader.pipeline.report import feedback_text, write_submission_report
from grader.pipeline.score import LabScore, SubmissionScore
from grader.rubric import load_rubric

RUBRIC = """\
[lab]
title = "Demo charts"
student_files = ["calc.cu"]

[lab.charts]
target = "lab06_curves"
script = "plot.py"

[[test]]
name = "calculator works"
points = 1
"""


def make_kit(tmp_path: Path, script: str, cmake_rc: int = 0) -> tuple[Path, Path, BuildConfig]:
    lab_dir = tmp_path / "kit" / "labs" / "06_demo"
    lab_dir.mkdir(parents=True)
    (lab_dir / "rubric.toml").write_text(RUBRIC)
    (lab_dir / "plot.py").write_text(textwrap.dedent(script))
    cmake = tmp_path / "fake-cmake"
    cmake.write_text(f"#!/bin/sh\nexit {cmake_rc}\n")
    cmake.chmod(0o755)
    return tmp_path / "kit", lab_dir / "rubric.toml", BuildConfig(cmake=str(cmake), timeout=30)


WRITES_TWO_PNGS = """\
    import argparse, pathlib
    parser = argparse.ArgumentParser()
    parser.add_argument("--build"); parser.add_argument("--out"); parser.add_argument("--curves")
    out = pathlib.Path(parser.parse_args().out)
    (out / "b.png").write_bytes(b"png-b"); (out / "a.png").write_bytes(b"png-a")
    (out / "curves.csv").write_text("x,y")
"""


def test_charts_are_collected_and_written_beside_the_feedback(tmp_path: Path) -> None:
    kit, rubric, config = make_kit(tmp_path, WRITES_TWO_PNGS)
    lab = load_rubric(rubric)
    charts = draw_charts(lab, kit, kit / "build", tmp_path / "out", config)
    assert charts.files == {"a.png": b"png-a", "b.png": b"png-b"}
    assert charts.note == ""

    score = SubmissionScore("alice", labs=[LabScore("06", lab.slug, lab.title, [], charts=charts)])
    write_submission_report(tmp_path / "report", score)
    assert (tmp_path / "report" / "lab06" / "a.png").read_bytes() == b"png-a"
    assert "Charts drawn from your code: lab06/a.png, lab06/b.png" in feedback_text(score)


def test_a_chart_target_that_does_not_build_is_explained(tmp_path: Path) -> None:
    kit, rubric, config = make_kit(tmp_path, WRITES_TWO_PNGS, cmake_rc=2)
    charts = draw_charts(load_rubric(rubric), kit, kit / "build", tmp_path / "out", config)
    assert charts.files == {}
    assert charts.note == "charts not drawn: lab06_curves did not build"


def test_missing_matplotlib_is_named(tmp_path: Path) -> None:
    kit, rubric, config = make_kit(tmp_path, "raise SystemExit(3)\n")
    charts = draw_charts(load_rubric(rubric), kit, kit / "build", tmp_path / "out", config)
    assert "matplotlib is not installed" in charts.note


def test_a_failing_script_shows_its_last_line(tmp_path: Path) -> None:
    kit, rubric, config = make_kit(tmp_path, "import sys\nprint('curves: bad preset')\nsys.exit(1)\n")
    charts = draw_charts(load_rubric(rubric), kit, kit / "build", tmp_path / "out", config)
    assert charts.note == "charts not drawn: plot.py failed: curves: bad preset"


def test_a_rubric_naming_a_missing_chart_script_is_refused(tmp_path: Path) -> None:
    _, rubric, _ = make_kit(tmp_path, WRITES_TWO_PNGS)
    (rubric.parent / "plot.py").unlink()
    with pytest.raises(GraderError, match=r"\[lab.charts\] script = 'plot.py' is not a file"):
        load_rubric(rubric)


def test_a_failing_script_never_shows_the_grading_machines_paths(tmp_path: Path) -> None:
    script = """\
        import sys
        program = sys.argv[sys.argv.index("--curves") + 1]
        print(f"plot_occupancy.py: {program} --preset 9.0 failed in /srv/grading/work/x/run.py")
        sys.exit(1)
    """
    kit, rubric, config = make_kit(tmp_path, script)
    charts = draw_charts(load_rubric(rubric), kit, kit / "build", tmp_path / "out", config)
    assert str(tmp_path) not in charts.note and "/srv" not in charts.note
    assert (
        charts.note
        == "charts not drawn: plot.py failed: plot_occupancy.py: lab06_curves --preset 9.0 failed in run.py"
    )


def test_without_paths_keeps_ratios_and_names_known_folders() -> None:
    known = {Path("/w/alice/charts"): "the charts folder"}
    assert (
        without_paths("wrote /w/alice/charts/a.png, 3/4 done", known)
        == "wrote the charts folder/a.png, 3/4 done"
    )
    assert without_paths("see /usr/lib/python3/x.py", {}) == "see x.py"


PLOTS_WHAT_IT_CAN = """\
    import argparse, os, pathlib, subprocess
    parser = argparse.ArgumentParser()
    parser.add_argument("--build"); parser.add_argument("--out"); parser.add_argument("--curves")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    subprocess.run([args.curves], check=True)  # the student's program, confined with the script
    (out / "chart.png").write_bytes(b"png")
    (out / "secret.png").symlink_to("/etc/hostname")
    (out / "env.txt").write_text(" ".join(sorted(os.environ)))
    try:
        pathlib.Path(args.curves).with_name("planted.png").write_bytes(b"x")
        (out / "wrote-outside.txt").write_text("yes")
    except OSError:
        pass
"""


def test_the_chart_step_runs_confined_with_a_scrubbed_environment_and_keeps_only_plain_pngs(
    tmp_path: Path, monkeypatch
) -> None:
    from grader.confine.sandbox import detect
    from grader.pipeline.charts import plot_charts

    check = detect((tmp_path / "hidden",))
    if check.sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
    kit, rubric, _ = make_kit(tmp_path, PLOTS_WHAT_IT_CAN)
    lab = load_rubric(rubric)
    program = tmp_path / "student-build" / "lab06_curves"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho curves\n")
    program.chmod(0o755)
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "do-not-leak")
    out = tmp_path / "charts"
    charts = plot_charts(lab, kit, program, out, check.sandbox)
    assert charts.files == {"chart.png": b"png"}, charts.note  # the link is left out
    assert "GRADER_SECRET_TOKEN" not in (out / "env.txt").read_text()
    assert not (program.parent / "planted.png").exists()  # the program's folder is read-only
    assert not (out / "wrote-outside.txt").exists()
