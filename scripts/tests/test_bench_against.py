"""scripts/bench_against.py: how two benches' engine passes are compared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_against import compare, engine_pass, unpack_base  # noqa: E402


def _pass(rate: float, totals: dict[str, float]) -> dict:
    return {"name": "engine", "student_labs": len(totals), "student_labs_per_minute": rate, "totals": totals}


def test_the_rate_ratio_and_every_differing_total_are_reported() -> None:
    base = _pass(30.0, {"reference": 600.0, "lab02-a": 30.0, "lab04-b": 34.0, "gone": 1.0})
    head = _pass(24.0, {"reference": 600.0, "lab02-a": 30.0, "lab04-b": 85.0, "new": 94.0})
    lines = compare(base, head, "d1f6efa")
    assert "rate: 0.80 of d1f6efa's (-20 %)" in lines
    assert "scores: 2 of 3 sample students' totals identical" in lines
    assert "  lab04-b: 34 -> 85" in lines
    assert any("gone" in line and "new" in line for line in lines)


def test_a_total_that_moved_names_the_tests_that_moved_it_where_both_benches_kept_them() -> None:
    base = _pass(30.0, {"lab04-b": 88.0, "lab05-c": 99.0})
    head = _pass(30.0, {"lab04-b": 83.0, "lab05-c": 99.5})
    base["tests"] = {
        "lab04-b": {
            "lab04 loads": {"points": 5, "status": "passed"},
            "lab04 speed": {"points": 4, "status": "passed"},
        }
    }
    head["tests"] = {
        "lab04-b": {
            "lab04 loads": {"points": 0, "status": "failed", "why": "the probe failed under Nsight Compute"},
            "lab04 speed": {"points": 4, "status": "passed"},
        }
    }
    lines = compare(base, head, "fa867ec")
    at = lines.index("  lab04-b: 88 -> 83")
    assert lines[at + 1] == "    lab04 loads: 5 (passed) -> 0 (failed)"
    assert (
        lines[at + 2] == "      head: the probe failed under Nsight Compute"
    )  # what the side that lost said
    assert "speed" not in " ".join(lines)  # a test that did not move is not listed
    assert lines[at + 3] == "  lab05-c: 99 -> 99.5"  # the base kept no tests for this student


def test_the_engine_pass_is_read_from_bench_json(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"passes": [{"name": "serial"}, _pass(12.5, {"reference": 1.0})]}))
    assert engine_pass(path)["student_labs_per_minute"] == 12.5


def _kit(folder: Path) -> Path:
    (folder / "grader").mkdir(parents=True)
    (folder / "grader" / "__main__.py").write_text("# the earlier kit's grader\n")
    return folder


def test_the_earlier_kit_may_be_a_folder_or_a_tarball_where_there_is_no_history(tmp_path: Path) -> None:
    import subprocess

    earlier = _kit(tmp_path / "earlier")
    assert unpack_base(str(earlier), tmp_path / "a") == ""
    assert (tmp_path / "a" / "grader" / "__main__.py").is_file()
    subprocess.run(["tar", "-czf", str(tmp_path / "earlier.tar.gz"), "-C", str(earlier), "."], check=True)
    assert unpack_base(str(tmp_path / "earlier.tar.gz"), tmp_path / "b") == ""
    assert (tmp_path / "b" / "grader" / "__main__.py").is_file()


def test_a_folder_that_is_not_a_kit_or_an_unknown_revision_is_refused_with_what_to_give(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty").mkdir()
    assert "not a kit" in unpack_base(str(tmp_path / "empty"), tmp_path / "a")
    assert "name a commit, or a kit's folder or .tar.gz" in unpack_base(
        "no-such-revision-xyz", tmp_path / "b"
    )


def test_head_args_go_to_this_checkouts_bench_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench_against

    benches: list[tuple[Path, list[str] | None]] = []

    def fake_bench(kit: Path, out: Path, labs: str | None, more: list[str] | None = None) -> Path:
        benches.append((kit, more))
        out.mkdir(parents=True)
        (out / "bench.json").write_text(json.dumps({"passes": [_pass(20.0, {"reference": 1.0})]}))
        return out / "bench.json"

    monkeypatch.setattr(bench_against, "unpack_base", lambda rev, kit: "")
    monkeypatch.setattr(bench_against, "bench", fake_bench)
    args = [".", "--labs", "03", "--out", str(tmp_path), "--head-args=--turn-slots 4"]
    assert bench_against.main(args) == 0
    assert [more for _, more in benches] == [None, ["--turn-slots", "4"]]
    assert benches[1][0] == bench_against.ROOT


def test_a_bench_command_ends_with_its_labs_and_the_more_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bench_against

    recorded: list[list[str]] = []
    monkeypatch.setattr(bench_against.subprocess, "run", lambda command, **_: recorded.append(command))
    bench_against.bench(tmp_path, tmp_path / "out", "03,05", ["--turn-slots", "4"])
    assert recorded[0][-4:] == ["--labs", "03,05", "--turn-slots", "4"]
    assert recorded[0][1:5] == ["-m", "grader", "bench", "--no-serial"]
