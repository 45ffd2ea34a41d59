"""How many test processes share each GPU of a run: the engine's GPU slots a lane, from the GPUs'
memory where --gpu-slots does not say (docs/design/engine.md, "The scheduler")."""

from __future__ import annotations

import subprocess

# GPU slots a lane gets unless --gpu-slots says: 12 where the GPUs have the memory for them. Each
# test process may hold 2 GiB of device memory (kit/device_memory.hpp), and as many processes as
# run may be parked beside them, so a slot wants 4 GiB, after 4 GiB left to the driver, the
# judges' own contexts and a worker's allowance past its limit; a GPU of less than 52 GiB gets
# fewer (a 40 GB one 9).
GPU_SLOTS = 12
GIB_A_GPU_SLOT = 4
GIB_KEPT_BACK = 4


def gpu_slots_for(memory_mib: list[int]) -> int:
    """The engine's GPU slots a lane for GPUs of `memory_mib` MiB each (the smallest one counts),
    GPU_SLOTS where that is not known; at least 2."""
    if not memory_mib:
        return GPU_SLOTS
    usable = min(memory_mib) - GIB_KEPT_BACK * 1024
    return max(2, min(GPU_SLOTS, usable // (GIB_A_GPU_SLOT * 1024)))


def lane_slots(given: int | None, gpus: list[str]) -> int:
    """The GPU slots a lane: `given` (--gpu-slots), else gpu_slots_for the run's GPUs (none asked
    where the run has no GPU, whose slots nothing takes)."""
    if given is not None:
        return given
    return gpu_slots_for(gpu_memory_mib(gpus)) if gpus else 1


def gpu_memory_mib(gpus: list[str]) -> list[int]:
    """The memory of `gpus` (CUDA_VISIBLE_DEVICES values: nvidia-smi's numbers or UUIDs) as
    nvidia-smi lists it, in MiB; [] where it cannot say, or for a MIG instance, whose share of its
    GPU's memory nvidia-smi's query does not give."""
    if any(gpu.startswith("MIG-") for gpu in gpus):
        return []
    try:
        listed = subprocess.run(
            [
                "nvidia-smi",
                f"--id={','.join(gpus)}",
                "--query-gpu=memory.total",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if listed.returncode != 0:
        return []
    sizes = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    return [int(size) for size in sizes] if all(size.isdigit() for size in sizes) else []
