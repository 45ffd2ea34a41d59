"""Confinement of the processes that run student code (the run stage's tests), with what the
GPU image and Debian 12 both have: util-linux `unshare` and `mount`, no bubblewrap.

Each confined process runs in new PID, network, IPC and mount namespaces:
- PID: the test is its namespace's first process; when it ends, the kernel kills every process
  left in the namespace, daemons (setsid, double fork) included, so none outlives its test or
  keeps a CUDA context on the GPU.
- network: only a loopback interface, down: no network at all.
- mount: the root file system read-only; a fresh, private /tmp; the grader's own folders
  (solutions/, the kit's build with the harness, the grading output, the work folders of other
  submissions) hidden under empty read-only file systems. Only the paths the test needs stay
  visible: its own folder writable, its executables read-only.

Where it cannot be set up (no unshare, no right to create namespaces) `Sandbox.detect` says
why, and the engine refuses to grade unless told to run unconfined (docs/design/confinement.md).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .proc import compile_helper

INIT_SOURCE = Path(__file__).resolve().parent / "sandbox_init.c"


@dataclass(frozen=True)
class LaneGpu:
    """A GPU lane placed on its GPU: the lane's CUDA_VISIBLE_DEVICES value, the GPU's device node
    (a confined process on the lane sees it alone) and its PCI address as nvidia-smi gives it."""

    lane: str
    node: str
    bus_id: str


@dataclass(frozen=True)
class Sandbox:
    """How a grading run confines the processes that run student code; `hidden` are the
    folders no such process may see (solutions/, the kit's build, the output, the work root)."""

    init: Path  # the compiled grader/confine/sandbox_init.c (build_init)
    hidden: tuple[Path, ...] = ()
    unshare: str = "unshare"
    user_namespace: bool = False  # not root: map the user to root in a new user namespace
    tools: tuple[Path, ...] = ()  # read-only in every view: tools outside the system's folders
    # Each GPU lane whose node is known (gpu_nodes): a process on that lane sees that GPU's node alone.
    gpu_nodes: tuple[LaneGpu, ...] = ()

    def wrap(
        self,
        command: list[str],
        writable: Path,
        readable: tuple[Path, ...] = (),
        scratch_bytes: int | None = None,
        gpu: str | None = None,
    ) -> list[str]:
        """`command`, to run confined, seeing `writable` (its folder) and `readable` (its
        executables and data) and nothing of the hidden folders. With `scratch_bytes`, `writable`
        is an empty file system of that size in the process's view (its pages count in the
        test's memory), and nothing it writes reaches the disk. `gpu`, the process's
        CUDA_VISIBLE_DEVICES: where its node is known, the only GPU in the view."""
        mode = f"tmpfs:{scratch_bytes}" if scratch_bytes is not None else "rw"
        named = dict.fromkeys([*readable, *self.tools])
        visible = [(writable, mode)] + [(path, "ro") for path in named if path != writable]
        pairs = [part for path, mode in visible for part in (str(path.resolve()), mode)]
        placed = self.placed(gpu)
        node = placed.node if placed is not None else None
        return [
            *self._unshare(),
            str(self.init),
            *(["--gpu-node", node] if node else []),
            str(len(visible)),
            *pairs,
            *(str(path) for path in self.hidden),
            "--",
            *command,
        ]

    def placed(self, gpu: str | None) -> LaneGpu | None:
        """Lane `gpu` as placed on its GPU, or None (a CPU slot, a lane not placed)."""
        return next((placed for placed in self.gpu_nodes if placed.lane == gpu), None) if gpu else None

    def lane_env(self, gpu: str | None) -> dict[str, str]:
        """What a test process on lane `gpu` is told of its GPU beside CUDA_VISIBLE_DEVICES: its PCI
        address (KIT_GPU_BUS_ID), where the lane is placed, so that the judge, which runs unconfined
        and could open every GPU's node, asks NVML about that GPU alone and leaves the CUDA driver
        unstarted until a test needs a context (common/src/gpu.cu). Where a lane is not placed, the
        worker may see every GPU, and the judge's watch of its device memory asks about each."""
        placed = self.placed(gpu)
        return {"KIT_GPU_BUS_ID": placed.bus_id} if placed is not None else {}

    def _unshare(self) -> list[str]:
        flags = ["--fork", "--pid", "--kill-child", "--mount-proc", "--net", "--ipc", "--mount"]
        if self.user_namespace:
            flags += ["--user", "--map-root-user"]
        return [self.unshare, *flags, "--"]


@dataclass(frozen=True)
class SandboxCheck:
    sandbox: Sandbox | None
    reason: str = ""  # why there is none


def tool_folders(kit_root: Path) -> tuple[Path, ...]:
    """The folders of the tools a judge runs confined (cuobjdump, compute-sanitizer, ncu) where
    they lie outside the system's folders the sandbox shows anyway: the CUDA toolkit nvcc is in,
    and the NVIDIA wheels scripts/setup.sh installs into the kit's .venv (cuobjdump, where the
    toolkit has none)."""
    found: list[Path] = []
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if Path(nvcc).is_file():
        found.append(Path(nvcc).resolve().parent.parent)
    found += sorted(kit_root.glob(".venv/lib/python3*/site-packages/nvidia/*/bin"))
    return tuple(dict.fromkeys(path.resolve() for path in found if path.is_dir()))


def detect(hidden: tuple[Path, ...] = (), tools: tuple[Path, ...] = ()) -> SandboxCheck:
    """A sandbox that works on this machine, tried once with a command that needs every part of
    it, or why there is none. `tools` stay visible in every view (tool_folders)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return SandboxCheck(None, "util-linux unshare is not installed")
    init, problem = build_init()
    if init is None:
        return SandboxCheck(None, problem)
    sandbox = Sandbox(
        init,
        tuple(path.resolve() for path in hidden),
        unshare,
        user_namespace=os.geteuid() != 0,
        tools=tuple(path for path in tools if path.is_dir()),
    )
    probe = Path(__file__).resolve().parent
    command = sandbox.wrap(["/bin/sh", "-c", "test ! -w / && test -d " + shlex.quote(str(probe))], probe)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return SandboxCheck(None, f"unshare could not be run: {error}")
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        return SandboxCheck(None, f"unshare failed ({why[-1] if why else f'exit code {done.returncode}'})")
    return SandboxCheck(sandbox)


def gpu_nodes(
    gpus: list[str], listing: str | None = None, driver: Path = Path("/proc/driver/nvidia/gpus")
) -> tuple[LaneGpu, ...]:
    """Each of `gpus` (CUDA_VISIBLE_DEVICES values: an index as nvidia-smi numbers the GPUs, or a
    GPU's UUID) placed on the node the driver names for it: nvidia-smi gives
    the lane's PCI address, the driver's folder for that address its minor number. A lane it
    cannot place (a MIG instance, no nvidia-smi) is left out and keeps every node in view.
    `listing`: nvidia-smi's CSV, for tests."""
    if listing is None:
        try:
            done = subprocess.run(
                ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return ()
        listing = done.stdout if done.returncode == 0 else ""
    found = []
    rows = [
        [field.strip() for field in line.split(",")] for line in listing.splitlines() if line.count(",") == 2
    ]
    for gpu in gpus:
        row = next((row for row in rows if gpu in (row[0], row[1])), None)
        if row is None:
            continue
        domain, _, rest = row[2].lower().partition(":")  # 00000000:00:06.0 -> 0000:00:06.0
        information = driver / f"{domain[-4:]}:{rest}" / "information"
        try:
            text = information.read_text()
        except OSError:
            continue
        minor = next(
            (line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Device Minor")),
            "",
        )
        if minor.isdigit():
            found.append(LaneGpu(gpu, f"nvidia{minor}", row[2]))
    return tuple(found)


def build_init() -> tuple[Path | None, str]:
    """grader/confine/sandbox_init.c compiled (or None, and why), once per version of the source
    (grader/confine/proc.py's compile_helper)."""
    return compile_helper(INIT_SOURCE)
