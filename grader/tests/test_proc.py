"""run_limited's start of a process (grader/confine/proc.py): the compiled launcher (grader/confine/launch.c)
sets the limits and joins the cgroup, so that no process start forks the grader; where it
cannot be compiled, a preexec_fn does the same."""

from __future__ import annotations

import errno
import resource
import subprocess
import sys

import pytest

import grader.confine.proc as proc
from grader.confine.proc import compile_helper, launcher, run_limited

# core, CPU s, files, file 512-byte blocks, data KiB
LIMITS_SCRIPT = "ulimit -c; ulimit -t; ulimit -n; ulimit -f; ulimit -d"


@pytest.fixture
def launch():
    found = launcher()
    if found is None:
        pytest.skip(f"no launcher here: {compile_helper(proc.LAUNCH_SOURCE)[1]}")
    return found


def test_a_process_starts_through_the_launcher_without_a_preexec_fn(launch, tmp_path, monkeypatch):
    started: list[tuple[list[str], dict]] = []
    real_popen = subprocess.Popen

    def recording_popen(args, **kwargs):
        started.append((list(args), kwargs))
        return real_popen(args, **kwargs)

    monkeypatch.setattr(proc.subprocess, "Popen", recording_popen)
    done = run_limited(["/bin/echo", "hello"], cwd=tmp_path, timeout=30, output_limit=1024)
    assert done.returncode == 0 and done.output == "hello\n"
    ((args, kwargs),) = started
    assert args[0] == str(launch) and args[-3:] == ["--", "/bin/echo", "hello"]
    assert kwargs["preexec_fn"] is None  # so Python starts it with vfork, not a fork of the grader


@pytest.mark.parametrize("data_bytes", [None, 3 << 30])
def test_the_launcher_and_the_preexec_fallback_set_the_same_limits(launch, tmp_path, monkeypatch, data_bytes):
    def limits() -> str:
        done = run_limited(
            ["/bin/sh", "-c", LIMITS_SCRIPT],
            cwd=tmp_path,
            timeout=30,
            output_limit=1024,
            data_bytes=data_bytes,
        )
        assert done.returncode == 0, done.output
        return done.output

    through_launcher = limits()
    monkeypatch.setattr(proc, "launcher", lambda: None)
    assert limits() == through_launcher
    core, cpu, files, blocks, data = through_launcher.split()
    own_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert core == "0" and cpu == str(2 * 30 + 10)
    assert int(files) == min(proc.MAX_OPEN_FILES, own_files)
    assert int(blocks) * 512 == proc.MAX_FILE_WRITE_BYTES
    own_data = resource.getrlimit(resource.RLIMIT_DATA)[0]
    if data_bytes is None:
        assert data == ("unlimited" if own_data == resource.RLIM_INFINITY else str(own_data // 1024))
    else:  # lowered to the limit asked for, never above the grader's own
        assert int(data) * 1024 == (
            data_bytes if own_data == resource.RLIM_INFINITY else min(data_bytes, own_data)
        )


def test_an_allocation_past_the_data_limit_fails_at_once_instead_of_filling_memory(launch, tmp_path):
    # 2 GiB of private memory (what malloc maps), which any machine hands out unused: refused to
    # a process held to 1 GiB, where without the limit a process that went on to fill it would
    # take pages until its cgroup stopped it.
    program = "import mmap\ntry:\n    mmap.mmap(-1, 2 << 30, flags=mmap.MAP_PRIVATE)\n    print('mapped')\nexcept OSError as e:\n    print(e.errno)\n"

    def asked(data_bytes: int | None) -> str:
        done = run_limited(
            [sys.executable, "-c", program],
            cwd=tmp_path,
            timeout=30,
            output_limit=1024,
            data_bytes=data_bytes,
        )
        assert done.returncode == 0, done.output
        return done.output.strip()

    assert asked(None) == "mapped"
    assert asked(1 << 30) == str(errno.ENOMEM)


def test_a_command_that_cannot_be_executed_exits_127_and_says_which(launch, tmp_path):
    done = run_limited([str(tmp_path / "missing")], cwd=tmp_path, timeout=30, output_limit=1024)
    assert done.returncode == 127
    assert f"kit launch: could not execute {tmp_path / 'missing'}: No such file or directory" in done.output


@pytest.mark.parametrize(
    "argument, said",
    [
        ("cpu=10", "kit launch: cpu=10 is not name=SOFT:HARD"),
        ("cpu=ten:20", "kit launch: cpu=ten:20 is not name=SOFT:HARD"),
        ("stack=1:1", "kit launch: unknown argument stack=1:1"),
        ("nofile=10:5", "kit launch: could not set the limit nofile=10:5: Invalid argument"),
    ],
)
def test_the_launcher_refuses_a_limit_it_cannot_set_with_exit_126(launch, argument, said):
    done = subprocess.run(
        [str(launch), argument, "--", "/bin/true"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 126
    assert done.stderr.strip() == said


def test_a_helper_that_does_not_compile_says_why(tmp_path):
    source = tmp_path / "confine" / "broken.c"
    source.parent.mkdir()
    source.write_text("int main(void) { return syntax error; }\n")
    helper, problem = compile_helper(source)
    assert helper is None
    assert problem.startswith("could not compile grader/confine/broken.c (")
