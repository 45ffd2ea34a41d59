"""How busy the machine was while a benchmark pass ran: the CPUs (all cores together, from
/proc/stat) and each GPU (nvidia-smi's utilization, the share of time a kernel ran), sampled
twice a second. It tells whether a pass waited on the GPU or on the CPUs, which the
scheduler's spans alone cannot: eight test processes on a GPU may be running kernels or
spinning on a CPU core while they wait for one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

INTERVAL = 0.5  # seconds between samples


@dataclass(frozen=True)
class Usage:
    times: list[float]  # seconds from the sampler's start
    cpu_busy: list[float]  # share of all cores busy (0 to 1) since the sample before
    gpu_busy: dict[str, list[tuple[float, float]]]  # GPU index -> (time, share of time a kernel ran)
    cpus: int

    @property
    def mean_cpu_busy(self) -> float:
        return sum(self.cpu_busy) / len(self.cpu_busy) if self.cpu_busy else 0.0

    def cpu_saturated_share(self, threshold: float = 0.9) -> float:
        """The share of samples in which the CPUs were at least `threshold` busy."""
        if not self.cpu_busy:
            return 0.0
        return sum(1 for busy in self.cpu_busy if busy >= threshold) / len(self.cpu_busy)

    @property
    def mean_gpu_busy(self) -> dict[str, float]:
        return {
            gpu: sum(b for _, b in samples) / len(samples)
            for gpu, samples in self.gpu_busy.items()
            if samples
        }

    def summary(self) -> str:
        line = (
            f"CPUs ({self.cpus}) busy {100 * self.mean_cpu_busy:.0f}% on average, "
            f"at least 90% busy in {100 * self.cpu_saturated_share():.0f}% of the samples"
        )
        gpus = self.mean_gpu_busy
        if gpus:
            line += "; GPU " + ", ".join(
                f"{gpu} running a kernel {100 * b:.0f}% of the time" for gpu, b in gpus.items()
            )
        else:
            line += "; no GPU utilization (nvidia-smi is missing or reported none)"
        return line

    def as_json(self) -> dict:
        return {
            "cpus": self.cpus,
            "mean_cpu_busy": round(self.mean_cpu_busy, 3),
            "cpu_saturated_share": round(self.cpu_saturated_share(), 3),
            "mean_gpu_busy": {gpu: round(b, 3) for gpu, b in self.mean_gpu_busy.items()},
            "samples": {
                "times": [round(t, 2) for t in self.times],
                "cpu_busy": [round(b, 3) for b in self.cpu_busy],
                "gpu_busy": {gpu: [[round(t, 2), b] for t, b in s] for gpu, s in self.gpu_busy.items()},
            },
        }


def read_cpu_times(stat: Path = Path("/proc/stat")) -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores together, or None where /proc/stat is not Linux's."""
    try:
        first = stat.read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:9]]
    idle = values[3] + values[4]  # idle and iowait
    return sum(values) - idle, sum(values)


def parse_gpu_line(line: str) -> tuple[str, float] | None:
    """'0, 87' (nvidia-smi --query-gpu=index,utilization.gpu, csv, noheader, nounits)."""
    parts = [part.strip() for part in line.split(",")]
    if len(parts) != 2:
        return None
    try:
        return parts[0], float(parts[1]) / 100
    except ValueError:
        return None  # "[N/A]" on a GPU that does not report it


@dataclass
class UsageSampler:
    """with UsageSampler() as sampler: ...; then sampler.usage()."""

    interval: float = INTERVAL
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    _times: list[float] = field(default_factory=list)
    _cpu: list[float] = field(default_factory=list)
    _gpu: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _smi: subprocess.Popen[str] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    started: float = 0.0  # time.monotonic() at the start: sample times count from it

    def __enter__(self) -> UsageSampler:
        self.started = time.monotonic()
        self._threads.append(threading.Thread(target=self._sample_cpus, daemon=True))
        smi = shutil.which("nvidia-smi")
        if smi is not None:
            try:
                self._smi = subprocess.Popen(
                    [
                        smi,
                        "--query-gpu=index,utilization.gpu",
                        "--format=csv,noheader,nounits",
                        f"-lms={int(self.interval * 1000)}",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                self._threads.append(threading.Thread(target=self._read_gpus, daemon=True))
            except OSError:
                self._smi = None
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._smi is not None:
            self._smi.terminate()
            try:
                self._smi.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._smi.kill()
                try:
                    self._smi.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass  # stuck in the driver: left behind with its reader, never waited for again
        for thread in self._threads:
            thread.join(timeout=5)

    def usage(self) -> Usage:
        with self._lock:  # a thread that did not end in time may still be adding samples
            return Usage(
                list(self._times), list(self._cpu), {g: list(s) for g, s in self._gpu.items()}, self.cpus
            )

    def _sample_cpus(self) -> None:
        before = read_cpu_times()
        while before is not None and not self._stop.wait(self.interval):
            now = read_cpu_times()
            if now is None:
                return
            busy, total = now[0] - before[0], now[1] - before[1]
            if total > 0:
                with self._lock:
                    self._times.append(time.monotonic() - self.started)
                    self._cpu.append(busy / total)
            before = now

    def _read_gpus(self) -> None:
        assert self._smi is not None and self._smi.stdout is not None
        for line in self._smi.stdout:
            sample = parse_gpu_line(line)
            if sample is not None:
                with self._lock:
                    self._gpu.setdefault(sample[0], []).append((time.monotonic() - self.started, sample[1]))
