"""The benchmark's timeline of a grading pass, from the scheduler's spans (grader/engine/schedule.py):
how many processes ran on the GPUs and the CPUs at each moment, when windows were open and
how long the GPUs sat idle, as figures and as a chart (timeline.png) a person reads at a glance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .schedule import Span
from .usage import Usage


@dataclass(frozen=True)
class Timeline:
    times: list[float]  # seconds from the pass's start; each value holds until the next time
    gpu_running: list[int]  # GPU test processes running (parked ones not counted)
    cpu_running: list[int]  # compiles, links and CPU tests running
    parked: list[int]  # processes waiting for a window
    windows: list[tuple[float, float]]  # (start, end) of every window
    wall: float
    # (start, end) of every profiler turn: one at a time on a GPU, so where they run back to back
    # Nsight Compute bounds the pass (bench/RESULTS.md, "A lab's tests in one judge process").
    profiler_turns: list[tuple[float, float]] = field(default_factory=list)

    @property
    def gpu_idle_seconds(self) -> float:
        """Time in which no GPU test process ran and no window was open: the GPU did nothing."""
        idle = 0.0
        for i, running in enumerate(self.gpu_running):
            end = self.times[i + 1] if i + 1 < len(self.times) else self.wall
            if running == 0:
                idle += max(end - self.times[i], 0.0)
        return idle

    @property
    def mean_gpu_running(self) -> float:
        total = 0.0
        for i, running in enumerate(self.gpu_running):
            end = self.times[i + 1] if i + 1 < len(self.times) else self.wall
            total += running * max(end - self.times[i], 0.0)
        return total / self.wall if self.wall > 0 else 0.0


def build_timeline(spans: list[Span], origin: float, wall: float) -> Timeline:
    steps: dict[float, list[int]] = {}  # time -> changes of (gpu, cpu, parked)

    def change(at: float, gpu: int = 0, cpu: int = 0, parked: int = 0) -> None:
        delta = steps.setdefault(min(max(at - origin, 0.0), wall), [0, 0, 0])
        delta[0] += gpu
        delta[1] += cpu
        delta[2] += parked

    windows, turns = [], []
    for span in spans:
        if span.kind == "gpu":
            change(span.start, gpu=1)
            change(span.end, gpu=-1)
        elif span.kind == "cpu":
            change(span.start, cpu=1)
            change(span.end, cpu=-1)
        elif span.kind == "parked":
            # A parked process does no work, but is one of the GPU spans until it ends.
            change(span.start, gpu=-1, parked=1)
            change(span.end, gpu=1, parked=-1)
        elif span.kind == "window":
            windows.append((span.start - origin, span.end - origin))
        elif span.kind == "profiler":
            turns.append((span.start - origin, span.end - origin))
    times, gpu, cpu, parked = [0.0], [0], [0], [0]
    for at in sorted(steps):
        d_gpu, d_cpu, d_parked = steps[at]
        if at == times[-1]:
            gpu[-1] += d_gpu
            cpu[-1] += d_cpu
            parked[-1] += d_parked
        else:
            times.append(at)
            gpu.append(gpu[-1] + d_gpu)
            cpu.append(cpu[-1] + d_cpu)
            parked.append(parked[-1] + d_parked)
    return Timeline(times, gpu, cpu, parked, sorted(windows), wall, sorted(turns))


def plot_timeline(timeline: Timeline, title: str, path: Path, usage: Usage | None = None) -> str:
    """Writes the chart, with the CPUs' and GPUs' load under it when `usage` is given; returns ''
    or why it could not (matplotlib missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not importable: no timeline.png (pip install matplotlib)"
    if usage is None:
        figure, axes = plt.subplots(figsize=(11, 4.2))
    else:
        figure, (axes, load) = plt.subplots(
            2, 1, figsize=(11, 6.4), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
        )
        load.plot(usage.times, [100 * b for b in usage.cpu_busy], label=f"CPUs busy ({usage.cpus} cores)")
        for gpu, samples in usage.gpu_busy.items():
            load.plot(
                [t for t, _ in samples], [100 * b for _, b in samples], label=f"GPU {gpu} running a kernel"
            )
        load.set_ylim(0, 105)
        load.set_ylabel("% of the time")
        load.set_xlabel("seconds since the pass started")
        load.legend(loc="lower right", fontsize="small")
    axes.step(timeline.times, timeline.gpu_running, where="post", label="GPU test processes running")
    axes.step(timeline.times, timeline.cpu_running, where="post", label="compiles, links, CPU tests")
    axes.step(
        timeline.times,
        timeline.parked,
        where="post",
        label="parked, waiting for a window or a profiler turn",
        alpha=0.7,
    )
    for number, (start, end) in enumerate(timeline.windows):
        label = "window (a GPU alone)" if number == 0 else None
        axes.axvspan(start, max(end, start + 0.05), color="red", alpha=0.35, label=label)
    for number, (start, end) in enumerate(timeline.profiler_turns):
        # A strip along the bottom: turns run beside other tests, so they do not shade the chart.
        label = "profiler turn (one at a time on a GPU)" if number == 0 else None
        axes.axvspan(start, max(end, start + 0.05), ymax=0.04, color="purple", alpha=0.6, label=label)
    axes.set_xlim(0, timeline.wall)
    if usage is None:
        axes.set_xlabel("seconds since the pass started")
    axes.set_ylabel("processes")
    axes.set_title(
        f"{title}: GPU idle {timeline.gpu_idle_seconds:.1f} s of {timeline.wall:.1f} s, "
        f"{timeline.mean_gpu_running:.1f} GPU processes running on average"
    )
    axes.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return ""
