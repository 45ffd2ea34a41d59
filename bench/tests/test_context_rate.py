"""context_rate.py: counts every process, and its failures, at each concurrency."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import context_rate  # noqa: E402


def test_every_process_runs_and_failures_are_counted() -> None:
    ok = context_rate.measure(["true"], concurrency=3, processes=7)
    failing = context_rate.measure(["false"], concurrency=2, processes=4)
    assert (ok.processes, ok.failed) == (7, 0) and ok.per_second > 0
    assert failing.failed == 4


def test_a_command_after_the_dashes_replaces_the_probe(capsys: pytest.CaptureFixture[str]) -> None:
    assert context_rate.main(["--concurrency", "1,2", "--processes", "3", "--", "true"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[1].split()[:2] == ["1", "3"] and lines[2].split()[:2] == ["2", "3"]


def test_a_missing_probe_says_how_to_build_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert context_rate.main(["--build-dir", str(tmp_path)]) == 2
    assert "make build" in capsys.readouterr().err


def test_the_probes_phases_are_averaged_and_connections_reach_the_processes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A stand-in for context_probe --phases that also shows the connections it was given.
    script = (
        'echo "driver 0.100 s, context 0.300 s, first kernel 0.002 s"; '
        'test "$CUDA_DEVICE_MAX_CONNECTIONS" = 1'
    )
    rate = context_rate.measure(
        ["sh", "-c", script], concurrency=2, processes=4, env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    )
    assert rate.failed == 0 and rate.phases == pytest.approx((0.1, 0.3, 0.002))
    assert context_rate.measure(["sh", "-c", script], concurrency=1, processes=1, env={}).failed == 1
    assert (
        context_rate.main(
            ["--processes", "2", "--concurrency", "1", "--connections", "1", "--", "sh", "-c", script]
        )
        == 0
    )
    assert "(driver 0.100 s, context 0.300 s, kernel 0.002 s)" in capsys.readouterr().out


def test_each_gpu_of_the_list_gets_its_processes_and_a_line_and_all_of_them_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = 'case "$CUDA_VISIBLE_DEVICES" in 2|5) ;; *) exit 1;; esac'
    assert (
        context_rate.main(
            ["--processes", "3", "--concurrency", "2", "--gpus", "2,5", "--", "sh", "-c", script]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in lines[1:]] == ["2", "5", "GPUs"]
    assert all(line.split()[5] == "0" for line in lines[1:3])  # none failed: each saw its GPU
    assert lines[3].split()[0] == "6"  # both GPUs' processes in the last line


def test_mps_runs_the_processes_as_clients_of_a_daemon_of_its_own_and_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stand-in control program: records its arguments, its standard input and its pipe folder.
    log = tmp_path / "calls"
    control = tmp_path / "nvidia-cuda-mps-control"
    control.write_text(f'#!/bin/sh\necho "args:$* pipe:$CUDA_MPS_PIPE_DIRECTORY" >>{log}\ncat >>{log}\n')
    control.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    script = 'test -d "$CUDA_MPS_PIPE_DIRECTORY" && test -d "$CUDA_MPS_LOG_DIRECTORY"'
    assert (
        context_rate.main(["--mps", "--processes", "2", "--concurrency", "1", "--", "sh", "-c", script]) == 0
    )
    assert capsys.readouterr().out.splitlines()[1].split()[5] == "0"  # the processes saw its folders
    calls = log.read_text().splitlines()
    assert (
        calls[0].startswith("args:-d pipe:/") and calls[1].startswith("args: pipe:/") and calls[2] == "quit"
    )
    assert calls[0].split("pipe:")[1] == calls[1].split("pipe:")[1]  # the daemon it started


def test_mps_without_its_control_program_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert context_rate.main(["--mps", "--", "true"]) == 2
    assert "nvidia-cuda-mps-control is not on PATH" in capsys.readouterr().err
