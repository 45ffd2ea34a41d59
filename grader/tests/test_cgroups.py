"""Per-test cgroups (grader/confine/cgroups.py): a test's processes together stay under the memory and
process limits, and the cgroup is gone when the test ends. Runs where cgroups can be set up (as
root on this machine's cgroup v1, CI included); skipped with the reason elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.confine.cgroups import Limits, detect
from grader.confine.proc import run_limited


def cgroups_or_skip(limits: Limits):
    check = detect(limits)
    if check.cgroups is None:
        pytest.skip(f"no cgroups here: {check.reason}")
    return check.cgroups


def run_in_cgroup(cgroups, command: list[str], tmp_path: Path):
    with cgroups.for_test() as cgroup:
        result = run_limited(command, cwd=tmp_path, timeout=20, output_limit=1 << 16, cgroup=cgroup.procs)
        hit = cgroup.limits_hit()
    return result, cgroup.folders, hit


def test_a_test_cannot_start_more_processes_than_its_limit(tmp_path):
    cgroups = cgroups_or_skip(Limits(max_processes=16))
    try:
        script = "for i in $(seq 40); do (sleep 2 &) 2>/dev/null || echo refused; done; wait"
        result, folders, hit = run_in_cgroup(cgroups, ["/bin/sh", "-c", script], tmp_path)
        assert result.output.count("refused") >= 20, result.output
        assert hit == [
            "the test's processes tried to start more than 16 processes and threads, their limit, and were refused"
        ]
        assert not any(folder.exists() for folder in folders)  # removed once its processes ended
    finally:
        cgroups.close()
    assert not any(folder.exists() for folder in cgroups.folders)


def test_a_test_that_takes_more_memory_than_its_limit_is_killed(tmp_path):
    cgroups = cgroups_or_skip(Limits(memory_bytes=64 << 20))
    try:
        grab = "x = bytearray(256 << 20); x[::4096] = b'1' * len(x[::4096]); print('kept it')"
        result, _, hit = run_in_cgroup(cgroups, [sys.executable, "-c", grab], tmp_path)
        assert "kept it" not in result.output
        assert result.returncode is not None and result.returncode != 0
        assert hit == [
            "the test's processes together used more than 64 MiB of memory, their limit, and were killed"
        ]
    finally:
        cgroups.close()


def test_a_well_behaved_test_runs_as_before_inside_its_cgroup(tmp_path):
    cgroups = cgroups_or_skip(Limits())
    try:
        result, _, hit = run_in_cgroup(
            cgroups, ["/bin/sh", "-c", "echo fine; ulimit -t; ulimit -n"], tmp_path
        )
        assert result.returncode == 0
        assert hit == []
        # CPU seconds: twice the 20 s wall limit plus 10; open files: the kit's cap.
        assert result.output.split() == ["fine", "50", "4096"]
    finally:
        cgroups.close()


def test_without_a_cgroup_hierarchy_detect_says_why(tmp_path):
    own = tmp_path / "cgroup"
    own.write_text("0::/\n")
    check = detect(root=tmp_path / "nothing", own=own)
    assert check.cgroups is None
    assert "no cgroup v1 memory hierarchy" in check.reason


def test_folders_left_by_a_killed_grader_are_removed_by_the_next_run(tmp_path):
    first = cgroups_or_skip(Limits())
    stale = [folder.with_name("kit-grader-999999999") for folder in first.folders]
    first.close()
    for folder in stale:
        (folder / "test-left-behind").mkdir(parents=True)
    second = cgroups_or_skip(Limits())
    try:
        assert not any(folder.exists() for folder in stale)
    finally:
        second.close()


def test_a_test_whose_cgroup_cannot_be_made_runs_without_one_instead_of_stopping_the_class(tmp_path):
    from grader.confine.cgroups import Cgroups

    gone = Cgroups((tmp_path / "hierarchy-gone" / "kit-grader-1",), 2, Limits())
    with gone.for_test() as cgroup:
        result = run_limited(["/bin/true"], cwd=tmp_path, timeout=5, output_limit=1024, cgroup=cgroup.procs)
        assert cgroup.limits_hit() == []
    assert cgroup.procs == ()
    assert result.returncode == 0
    assert len(gone.failures) == 1 and "ran without its cgroup" in gone.failures[0]


def fake_v2_tree(tmp_path: Path, levels: dict[str, tuple[str, str]]) -> Path:
    """A cgroup v2 hierarchy of plain folders: each level's (controllers, subtree_control)."""
    root = tmp_path / "cgroup"
    for level, (controllers, enabled) in levels.items():
        folder = root / level if level else root
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cgroup.controllers").write_text(controllers + "\n")
        (folder / "cgroup.subtree_control").write_text(enabled + "\n")
    return root


def detect_in(tmp_path: Path, root: Path, own: str, monkeypatch):
    import grader.confine.cgroups as cgroups

    # Plain folders cannot take a process: the trial run is the real hierarchy's test.
    monkeypatch.setattr(cgroups, "_tried", lambda made: cgroups.CgroupCheck(made))
    membership = tmp_path / "self-cgroup"
    membership.write_text(f"0::{own}\n")
    return detect(root=root, own=membership)


def test_v2_uses_the_graders_own_cgroup_where_it_can_hand_both_controllers_on(tmp_path, monkeypatch):
    root = fake_v2_tree(tmp_path, {"": ("memory pids", "memory pids"), "job": ("memory pids", "")})
    check = detect_in(tmp_path, root, "/job", monkeypatch)
    assert check.cgroups is not None and check.cgroups.note == ""
    assert check.cgroups.folders[0].parent == root / "job"
    assert (root / "job" / "cgroup.subtree_control").read_text() == "+memory +pids"


def test_v2_goes_up_to_a_cgroup_that_hands_both_on_when_its_own_lacks_one_and_says_so(tmp_path, monkeypatch):
    # As on the GPU image: the grader's cgroup has only memory, its parent too, the root both.
    root = fake_v2_tree(
        tmp_path,
        {
            "": ("cpu memory pids", "cpu memory pids"),
            "api": ("cpu memory pids", "memory"),
            "api/job": ("memory", ""),
        },
    )
    check = detect_in(tmp_path, root, "/api/job", monkeypatch)
    assert check.cgroups is not None
    assert check.cgroups.folders[0].parent == root
    assert "not in the grader's own cgroup" in check.cgroups.note
    assert "pids controller is not delegated" in check.cgroups.note
    assert (root / "api" / "cgroup.subtree_control").read_text() == "memory\n"  # left as it was


def test_v2_never_reconfigures_a_cgroup_above_its_own(tmp_path, monkeypatch):
    root = fake_v2_tree(
        tmp_path, {"": ("memory pids", "memory"), "api": ("memory pids", ""), "api/job": ("memory", "")}
    )
    check = detect_in(tmp_path, root, "/api/job", monkeypatch)
    assert check.cgroups is None
    assert "pids controller is not delegated" in check.reason
    assert (root / "api" / "cgroup.subtree_control").read_text() == "\n"
    assert (root / "cgroup.subtree_control").read_text() == "memory\n"


def test_detect_finds_limits_that_cannot_be_set_at_the_start_not_during_the_class(tmp_path):
    cgroups_or_skip(Limits()).close()  # where there are cgroups at all
    check = detect(Limits(memory_bytes=-5))
    assert check.cgroups is None
    assert "cannot run a process in a test's cgroup" in check.reason


def test_the_sweep_of_stale_folders_never_kills_a_process_and_a_swept_grader_makes_its_folder_again(
    tmp_path,
):
    import contextlib
    import subprocess

    first = cgroups_or_skip(Limits())
    first.close()
    # Another grader's folder, whose pid means nothing here (another PID namespace), with a
    # test still running in it.
    other = [folder.with_name("kit-grader-999999998") for folder in first.folders]
    tests = [folder / "test-running" for folder in other]
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # Made and joined again until the sleeper is in: a grader running beside this test (make
        # test runs several pytest processes) sweeps the folders while they are still empty.
        for _ in range(50):
            try:
                for test in tests:
                    test.mkdir(parents=True, exist_ok=True)
                    (test / "cgroup.procs").write_text(f"{sleeper.pid}\n")
                if all(str(sleeper.pid) in (test / "cgroup.procs").read_text().split() for test in tests):
                    break
            except OSError:
                continue
        second = cgroups_or_skip(Limits())  # sweeps
        assert sleeper.poll() is None, "the sweep killed another grader's test"
        assert all(test.is_dir() for test in tests)
        # This grader's own folder swept by someone else: the next test makes it again.
        for folder in second.folders:
            folder.rmdir()
        with second.for_test() as cgroup:
            assert cgroup.folders and all(folder.is_dir() for folder in cgroup.folders)
        assert second.failures == []
        second.close()
    finally:
        sleeper.kill()
        sleeper.wait()
        for folder in [*tests, *other]:  # unless a grader beside this test swept them first
            with contextlib.suppress(FileNotFoundError):
                folder.rmdir()


def test_memory_and_swap_together_are_limited_where_v1_counts_swap(tmp_path):
    cgroups = cgroups_or_skip(Limits(memory_bytes=64 << 20))
    checked = 0
    try:
        with cgroups.for_test() as cgroup:
            for folder in cgroup.folders:
                memsw = folder / "memory.memsw.limit_in_bytes"
                if memsw.exists():
                    assert int(memsw.read_text()) == 64 << 20
                    checked += 1
                swap_v2 = folder / "memory.swap.max"
                if swap_v2.exists():
                    assert swap_v2.read_text().strip() == "0"
                    checked += 1
    finally:
        cgroups.close()
    if not checked:
        pytest.skip("this hierarchy does not count swap")


def test_a_students_compile_runs_in_a_cgroup_of_its_own(tmp_path):
    """The compiler reads the student's source, which can make it use any amount of memory: each
    compile and link of a submission runs in a test-like cgroup (grader/pipeline/build.py's BuildCache)."""
    from grader.engine.schedule import Scheduler
    from grader.pipeline.build import BuildCache, BuildConfig

    cgroups = cgroups_or_skip(Limits())
    cache = BuildCache(tmp_path / "cache", Scheduler(1, [], 1), BuildConfig(), cgroups=cgroups)
    done = cache._run(["/bin/sh", "-c", "cat /proc/self/cgroup"], tmp_path)
    assert done.returncode == 0
    assert "/test-" in done.output, done.output
