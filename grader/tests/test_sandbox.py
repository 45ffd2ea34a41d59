"""sandbox.py: what a confined test can see, write and leave behind, and the engine's refusal
to grade student code where no sandbox can be set up."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from grader.confine import sandbox as sandbox_module
from grader.confine.sandbox import LaneGpu, Sandbox, SandboxCheck, build_init, detect, gpu_nodes
from grader.engine.schedule import visible_gpus
from grader.errors import GraderError
from grader.pipeline import grade as pipeline
from grader.pipeline.run import WORKER_SCRATCH_BYTES, RunConfig, run_test, worker_env

from .conftest import write_fake_catch2


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    check = detect((tmp_path / "hidden",))
    if check.sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
    return check.sandbox


def confined(sandbox: Sandbox, script: str, folder: Path, *readable: Path) -> subprocess.CompletedProcess:
    command = sandbox.wrap(["/bin/sh", "-c", script], folder, readable)
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=60, check=False)


def test_a_confined_process_writes_only_its_folder_and_sees_nothing_hidden(sandbox, tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "reference.cu").write_text("the answer")
    submission, other = tmp_path / "submission", tmp_path / "other"
    mine = submission / "test-1"  # a test's folder in its submission's, which it may only read
    mine.mkdir(parents=True)
    other.mkdir()
    (other / "classmate.cu").write_text("someone else's work")
    done = confined(
        sandbox,
        f"echo mine > out.txt; cat {hidden}/reference.cu; cat {other}/classmate.cu; "
        f"touch {Path(pipeline.__file__).parent}/planted.py {submission}/planted.cu; echo end",
        mine,
        submission,
    )
    assert done.stdout.splitlines() == ["end"], done.stderr
    assert (mine / "out.txt").read_text() == "mine\n"
    assert not (submission / "planted.cu").exists()
    assert not (Path(pipeline.__file__).parent / "planted.py").exists()
    assert "Read-only file system" in done.stderr


# What a confined process's root may hold: the sandbox's allowlist, and the first folder of each
# path it was given (the test's folder and what it reads).
SYSTEM_FOLDERS = {
    "usr",
    "bin",
    "sbin",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "etc",
    "opt",
    "sys",
    "proc",
    "dev",
    "tmp",
}


def test_a_confined_process_sees_the_system_and_its_paths_and_nothing_else_of_the_machine(sandbox, tmp_path):
    kit = Path(pipeline.__file__).resolve().parents[1]  # the kit's checkout, its history included
    folder = tmp_path / "w"
    folder.mkdir()
    outside = [kit / ".git", kit / "README.md", Path.home(), Path("/var"), Path("/run"), Path("/srv")]
    done = confined(
        sandbox,
        "ls -A /; for p in " + " ".join(str(p) for p in outside) + "; do test -e $p && echo seen $p; done; "
        "test -x /usr/bin/env && test -r /etc/passwd && test -c /dev/null && echo system",
        folder,
    )
    lines = done.stdout.split()
    assert done.returncode == 0 and lines[-1] == "system", done.stderr
    assert "seen" not in lines, done.stdout
    allowed = SYSTEM_FOLDERS | {folder.parts[1]}
    assert set(lines[:-1]) <= allowed, f"the root shows more than the allowlist: {set(lines[:-1]) - allowed}"
    cgroups = confined(sandbox, "ls -A /sys/fs/cgroup | wc -l", folder)
    assert cgroups.stdout.strip() == "0", "a test could leave its cgroup through /sys/fs/cgroup"


def test_tmp_is_private_to_each_process_and_there_is_no_network(sandbox, tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    first = confined(sandbox, "echo left > /tmp/for-the-next; echo left > /dev/shm/too; ls /tmp", folder)
    assert first.returncode == 0 and "for-the-next" in first.stdout
    second = confined(sandbox, "ls -A /tmp /dev/shm", folder)
    assert second.returncode == 0 and "for-the-next" not in second.stdout and "too" not in second.stdout
    interfaces = confined(sandbox, "tail -n +3 /proc/net/dev", folder).stdout.split("\n")
    assert [line.split(":")[0].strip() for line in interfaces if line.strip()] == ["lo"]


def test_every_process_of_a_confined_test_is_gone_when_it_ends(sandbox, tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    marker = f"kit-daemon-{time.monotonic_ns()}"
    done = confined(sandbox, f"(setsid sh -c 'exec -a {marker} sleep 60' &); echo started", folder)
    assert done.stdout.strip() == "started"
    time.sleep(0.3)
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert marker not in listed


def test_a_test_graded_confined_reads_its_executable_and_passes(sandbox, tmp_path):
    exe = write_fake_catch2(
        tmp_path / "bin",
        "lab02_tests",
        [
            {"name": "passes", "tags": "[lab02]", "behaviour": "pass"},
            {"name": "leaves a daemon", "tags": "[lab02]", "behaviour": "daemon"},
        ],
    )
    work = tmp_path / "work"
    work.mkdir()
    config = RunConfig(timeout=20, sandbox=sandbox)
    assert run_test(exe, "passes", work, config).status == "passed"
    start = time.monotonic()
    assert run_test(exe, "leaves a daemon", work, config).status == "passed"
    assert time.monotonic() - start < 10
    time.sleep(0.3)
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert "leaves a daemon" not in listed


def test_the_engine_refuses_student_code_where_there_is_no_sandbox(fake_kit, monkeypatch):
    monkeypatch.setattr(
        pipeline, "detect", lambda hidden, tools=(): SandboxCheck(None, "unshare is not installed")
    )
    with pytest.raises(GraderError, match="unshare is not installed.*--unconfined"):
        pipeline.Engine(fake_kit.kit, fake_kit.options(confine=True))
    with pipeline.Engine(fake_kit.kit, fake_kit.options(confine=False)) as engine:
        assert engine.run_config.sandbox is None


def test_a_confined_process_has_no_privilege_left_to_undo_its_confinement(sandbox, tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "reference.cu").write_text("the answer")
    folder = tmp_path / "w"
    folder.mkdir()
    script = (
        f"umount {hidden} 2>/dev/null; cat {hidden}/reference.cu 2>/dev/null; "
        "mount -o remount,rw / 2>/dev/null && echo remounted; "
        "for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; do "
        "echo $$ > $f 2>/dev/null && echo escaped; done; "
        "echo x > /proc/sys/kernel/core_pattern 2>/dev/null && echo sysctl-written; "
        "echo h > /proc/sysrq-trigger 2>/dev/null && echo sysrq-written; "
        "echo /proc-writable > /proc/self/comm && echo comm-written; "
        "ls /run /dev; grep -E '^(Cap(Prm|Eff|Bnd)|NoNewPrivs)' /proc/self/status; "
        "echo ok > mine.txt && cat mine.txt; echo end"
    )
    done = confined(sandbox, script, folder)
    lines = done.stdout.splitlines()
    assert lines[-1] == "end", done.stderr
    assert "comm-written" in lines  # its own /proc files stay writable (CUDA needs some)
    for escape in ("the answer", "remounted", "escaped", "sysctl-written", "sysrq-written"):
        assert escape not in lines, (escape, done.stdout)
    status = {line.split(":")[0]: line.split()[1] for line in lines if line.startswith(("Cap", "NoNew"))}
    assert status == {"CapPrm": "0" * 16, "CapEff": "0" * 16, "CapBnd": "0" * 16, "NoNewPrivs": "1"}
    assert "ok" in lines  # its own folder stays writable
    # /dev holds only the nodes a CUDA test uses: no disk, no memory, no log socket.
    assert not {"sda", "vda", "mem", "kmsg", "log", "loop0"} & set(lines)
    assert "null" in lines and "urandom" in lines


def test_the_init_is_compiled_once_per_version_of_its_source(tmp_path, monkeypatch):
    source = tmp_path / "grader" / "sandbox_init.c"
    source.parent.mkdir()
    source.write_bytes(sandbox_module.INIT_SOURCE.read_bytes())
    monkeypatch.setattr(sandbox_module, "INIT_SOURCE", source)
    first, problem = build_init()
    assert first is not None, problem
    assert first.parent == source.parent / "__pycache__" and first.stat().st_mode & 0o111
    assert build_init()[0] == first  # kept: not compiled again
    source.write_bytes(source.read_bytes() + b"\n/* another version */\n")
    second, _ = build_init()
    assert second is not None and second != first  # a changed source is compiled again
    assert sorted(path.name.startswith(".") for path in first.parent.iterdir()) == [False, False]


def test_an_init_that_does_not_compile_leaves_no_sandbox_and_says_why(tmp_path, monkeypatch):
    source = tmp_path / "confine" / "sandbox_init.c"
    source.parent.mkdir()
    source.write_text("int main(void) { return syntax error; }\n")
    monkeypatch.setattr(sandbox_module, "INIT_SOURCE", source)
    check = detect()
    assert check.sandbox is None
    assert check.reason.startswith("could not compile grader/confine/sandbox_init.c (")


def test_a_setup_failure_inside_the_sandbox_is_exit_code_125_with_the_reason(sandbox, tmp_path):
    done = subprocess.run(sandbox.wrap([str(tmp_path / "missing")], tmp_path), capture_output=True, text=True)
    assert done.returncode == 125
    assert "kit sandbox: could not set up the test's file system: executing" in done.stderr


def test_a_lane_is_placed_on_its_gpus_device_node_by_its_pci_address(tmp_path):
    listing = (
        "0, GPU-aaaa, 00000000:00:06.0\n"
        "1, GPU-bbbb, 00000000:00:07.0\n"
        "2, GPU-cccc, 00000001:0A:00.0\n"
        "3, GPU-dddd, 00000000:00:09.0\n"
    )
    for address, minor in (("0000:00:06.0", 0), ("0000:00:07.0", 5), ("0001:0a:00.0", 2)):
        (tmp_path / address).mkdir()
        (tmp_path / address / "information").write_text(f"Model: \t NVIDIA H200\nDevice Minor: \t {minor}\n")
    # By index or by UUID; GPU 3 has no folder of the driver's, and "MIG-x" no row: both left out.
    assert gpu_nodes(["1", "GPU-cccc", "0", "3", "MIG-x"], listing, tmp_path) == (
        LaneGpu("1", "nvidia5", "00000000:00:07.0"),
        LaneGpu("GPU-cccc", "nvidia2", "00000001:0A:00.0"),
        LaneGpu("0", "nvidia0", "00000000:00:06.0"),
    )
    assert gpu_nodes(["0"], "", tmp_path) == ()


def test_a_process_on_a_placed_lane_is_started_with_its_node_and_others_are_not(tmp_path):
    sandbox = Sandbox(tmp_path / "init", gpu_nodes=(LaneGpu("1", "nvidia5", "00000000:00:07.0"),))
    command = sandbox.wrap(["true"], tmp_path, gpu="1")
    at = command.index(str(tmp_path / "init"))
    assert command[at + 1 : at + 3] == ["--gpu-node", "nvidia5"]
    for gpu in ("0", None):
        assert "--gpu-node" not in sandbox.wrap(["true"], tmp_path, gpu=gpu)


def test_only_a_placed_lanes_processes_are_told_their_gpus_pci_address(tmp_path):
    sandbox = Sandbox(tmp_path / "init", gpu_nodes=(LaneGpu("1", "nvidia5", "00000000:00:07.0"),))
    assert sandbox.lane_env("1") == {"KIT_GPU_BUS_ID": "00000000:00:07.0"}
    # A lane not placed may show its worker every GPU, so its judge must watch them all.
    for gpu in ("0", None):
        assert sandbox.lane_env(gpu) == {}


def test_both_workers_of_a_judge_on_a_lane_are_confined_to_its_gpu_each_in_a_folder_of_its_own(tmp_path):
    # The reference's worker is the kit's own code, confined so that its CUDA start sees its
    # lane's GPU alone, as the student's does; it reads the judge's folder, where it is built.
    sandbox = Sandbox(tmp_path / "init", gpu_nodes=(LaneGpu("0", "nvidia3", "00000000:00:06.0"),))
    judge, worker = tmp_path / "harness" / "bin" / "lab02_tests", tmp_path / "cache" / "lab02_worker"
    run_dir = tmp_path / "work" / "test-1"
    run_dir.mkdir(parents=True)
    variables = worker_env(worker, judge, run_dir, RunConfig(sandbox=sandbox), {"CUDA_VISIBLE_DEVICES": "0"})
    for prefix, folder, readable in (
        ("KIT_WORKER", "test-1-worker", worker.parent),
        ("KIT_REFERENCE_WORKER", "test-1-reference", judge.parent),
    ):
        command = variables[f"{prefix}_COMMAND"].split("\n")
        assert command[command.index("--gpu-node") + 1] == "nvidia3"
        assert str(readable.resolve()) in command
        assert variables[f"{prefix}_HOME"] == str(tmp_path / "work" / folder)
        assert (tmp_path / "work" / folder).is_dir()
    assert str(judge.parent.resolve()) not in variables["KIT_WORKER_COMMAND"].split("\n")


def test_the_init_refuses_a_gpu_node_that_is_not_there_or_not_a_gpus(sandbox, tmp_path):
    for node, why in (("nvidia977", "the lane's GPU node /dev/nvidia977"), ("sda", "not a GPU's node name")):
        lane = Sandbox(
            sandbox.init,
            sandbox.hidden,
            sandbox.unshare,
            sandbox.user_namespace,
            gpu_nodes=(LaneGpu("0", node, "00000000:00:06.0"),),
        )
        done = subprocess.run(lane.wrap(["true"], tmp_path, gpu="0"), capture_output=True, text=True)
        assert done.returncode == 125 and why in done.stderr, done.stderr


@pytest.mark.skipif(not visible_gpus(), reason="needs a GPU")
def test_on_a_gpu_lane_a_confined_process_sees_that_gpu_alone_as_device_0(sandbox, tmp_path):
    placed = gpu_nodes(visible_gpus())
    assert placed, "nvidia-smi and the driver placed no GPU on its device node"
    lane, node = placed[-1].lane, placed[-1].node
    confined_lane = Sandbox(
        sandbox.init, sandbox.hidden, sandbox.unshare, sandbox.user_namespace, gpu_nodes=placed
    )
    script = (
        "ls /dev | grep -E '^nvidia[0-9]+$'; echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; nvidia-smi -L"
    )
    command = confined_lane.wrap(["/bin/sh", "-c", script], tmp_path, gpu=lane)
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    lines = done.stdout.splitlines()
    assert lines[:2] == [node, "CUDA_VISIBLE_DEVICES=0"], done.stdout + done.stderr
    assert len([line for line in lines if line.startswith("GPU ")]) == 1, done.stdout


JUDGE_TESTS = Path(os.environ.get("KIT_BUILD_DIR", "/nonexistent")) / "bin" / "remote_tests"


@pytest.mark.skipif(
    not JUDGE_TESTS.is_file(), reason="KIT_BUILD_DIR has no remote_tests (make test builds it)"
)
def test_a_split_labs_worker_is_confined_and_sees_nothing_of_its_judge(tmp_path):
    """A split lab's test process is the kit's judge and runs as it is; the student's code runs
    in the worker it starts, confined by the command run_test gives it: the worker writes its own
    folder and reads its executable's, and sees neither the judge nor the judge's folder."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "classmate.cu").write_text("someone else's work")
    check = detect((work, JUDGE_TESTS.parent))
    if check.sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
    spy_dir = tmp_path / "spy"
    spy_dir.mkdir()
    spy = spy_dir / "lab00_worker"
    spy.write_text(
        "#!/bin/sh\n"
        f"for p in {JUDGE_TESTS} {work}/classmate.cu {spy}; do\n"
        '  if test -r "$p"; then echo "spy: reads $p" >&2; else echo "spy: cannot read $p" >&2; fi\n'
        "done\n"
        'echo "spy: home $HOME" >&2; echo mine > spy.txt && echo "spy: wrote its folder" >&2\n'
        'head -c 100000000 /dev/zero > big 2>/dev/null; echo "spy: big has $(wc -c < big) bytes" >&2\n'
    )
    spy.chmod(0o755)
    config = RunConfig(timeout=30, sandbox=check.sandbox)
    name = "values and host arrays and struct results cross to the worker and back"
    outcome = run_test(JUDGE_TESTS, name, work, config, worker=spy)
    assert outcome.status == "failed"  # the spy serves no call: the judge says its worker ended
    assert "worker running your lab's code exited" in "\n".join(outcome.messages), outcome.messages
    assert f"spy: cannot read {JUDGE_TESTS}" in outcome.output
    assert f"spy: cannot read {work}/classmate.cu" in outcome.output
    assert f"spy: reads {spy}" in outcome.output
    [worker_dir] = [path for path in work.iterdir() if path.name.endswith("-worker")]
    assert f"spy: home {worker_dir}" in outcome.output
    # Its folder is a file system of its own, WORKER_SCRATCH_BYTES at most, and nothing of it
    # reaches the disk.
    assert "spy: wrote its folder" in outcome.output
    # (The judge starts a new worker for each call the spy fails, so each line comes more than once.)
    written = [int(line.split()[3]) for line in outcome.output.splitlines() if line.startswith("spy: big")]
    assert written and all(0 < size <= WORKER_SCRATCH_BYTES for size in written), written
    assert list(worker_dir.iterdir()) == []


def test_a_hidden_folder_that_is_the_system_temporary_folder_leaves_tmp_usable(tmp_path):
    # A grading run's work root is often in /tmp, so /tmp is among the folders to hide: the
    # sandbox's own fresh /tmp must stay as big as it is, not become a tiny cover.
    check = detect((Path("/tmp"),))
    if check.sandbox is None:
        pytest.skip(f"no sandbox on this machine: {check.reason}")
    folder = tmp_path / "w"
    folder.mkdir()
    done = confined(check.sandbox, "head -c 1048576 /dev/zero > /tmp/one-mib && echo wrote", folder)
    assert done.stdout.strip() == "wrote", done.stderr


def test_a_students_worker_and_probes_read_the_probes_folder_and_the_load_counters(tmp_path):
    # The judge runs the probe confined as the worker is, with the load counter preloaded: both
    # folders must be in the view, the counter's (in the harness build) and nothing else of it.
    sandbox = Sandbox(tmp_path / "init")
    judge, worker = tmp_path / "harness" / "bin" / "lab03_tests", tmp_path / "cache" / "lab03_worker"
    probe = tmp_path / "cache" / "probe" / "lab03_probe"
    counter = tmp_path / "harness" / "load_counter" / "libkit_load_counter.so"
    run_dir = tmp_path / "work" / "test-1"
    run_dir.mkdir(parents=True)
    env = {"KIT_PROBE_PATH": str(probe), "KIT_LOAD_COUNTER_PATH": str(counter)}
    command = worker_env(worker, judge, run_dir, RunConfig(sandbox=sandbox), env)["KIT_WORKER_COMMAND"].split(
        "\n"
    )
    for folder in (worker.parent, probe.parent, counter.parent):
        assert str(folder.resolve()) in command
    assert str(judge.parent.resolve()) not in command
    # Counting with Nsight Compute (the counter set empty): no folder for it.
    env["KIT_LOAD_COUNTER_PATH"] = ""
    (tmp_path / "work" / "test-1-worker").rmdir()
    (tmp_path / "work" / "test-1-reference").rmdir()
    command = worker_env(worker, judge, run_dir, RunConfig(sandbox=sandbox), env)["KIT_WORKER_COMMAND"].split(
        "\n"
    )
    assert str(counter.parent.resolve()) not in command
