"""What a long grading run shows while it works: submissions done, what each one in flight is
doing, and the time left. A live table (rich) on a terminal; plain lines otherwise (CI, logs)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Protocol, TextIO


class Progress(Protocol):
    def start(self, total: int, done: int) -> None: ...
    def stage(self, student: str, what: str, lab: str | None = None) -> None: ...
    def finished(self, student: str, line: str) -> None: ...
    def log(self, message: str) -> None: ...
    def close(self) -> None: ...


class _Counter:
    """Submissions done and the time left, from the rate of those graded in this run."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.done_here = 0
        self.started = time.monotonic()

    def eta(self) -> str:
        if self.done_here == 0:
            return "time left: estimating"
        rate = self.done_here / (time.monotonic() - self.started)
        left = (self.total - self.done) / rate
        return f"time left: about {_duration(left)}"


class _InFlight:
    """What each submission in flight is doing. A submission's labs are graded side by side, each
    saying its own stage (`lab`), so the line shown for it joins them in lab order: the stage a lab
    said last would hide the others. A stage without a lab (staging) is the whole submission's."""

    def __init__(self) -> None:
        self.stages: dict[str, dict[str, str]] = {}  # student -> lab ("" for none) -> stage

    def stage(self, student: str, what: str, lab: str | None) -> None:
        if lab is None:
            self.stages[student] = {"": what}
        else:
            labs = self.stages.setdefault(student, {})
            labs.pop("", None)
            labs[lab] = what

    def finished(self, student: str) -> None:
        self.stages.pop(student, None)

    def shown(self) -> list[tuple[str, str]]:
        """(student, what it is doing), in the order the submissions were first seen; ", " between
        labs, as a plain log's heartbeat puts "; " between submissions."""
        return [
            (student, ", ".join(labs[lab] for lab in sorted(labs))) for student, labs in self.stages.items()
        ]


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


# How often a plain log says what is running while no submission finishes: a log read later (CI,
# a cluster's job output) shows where a long run stood, and that it still moved.
HEARTBEAT = 30.0


class PlainProgress:
    """One line per finished submission (and per stage change with `stages`), and, every
    `heartbeat` seconds, a line with the submissions in flight and what each is doing."""

    def __init__(
        self, stream: TextIO | None = None, stages: bool = True, heartbeat: float = HEARTBEAT
    ) -> None:
        self.stream = stream or sys.stdout
        self.stages = stages
        self.heartbeat = heartbeat
        self.counter = _Counter()
        self.lock = threading.Lock()
        self.running = _InFlight()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _print(self, line: str) -> None:
        with self.lock:
            print(line, file=self.stream, flush=True)

    def start(self, total: int, done: int) -> None:
        self.counter.total, self.counter.done = total, done
        self._print(f"grading {total} submissions" + (f" ({done} already graded: kept)" if done else ""))
        if self.heartbeat > 0 and self._beat is None:
            self._beat = threading.Thread(target=self._beats, daemon=True)
            self._beat.start()

    def stage(self, student: str, what: str, lab: str | None = None) -> None:
        with self.lock:
            self.running.stage(student, what, lab)
        if self.stages:
            self._print(f"  {student}: {what}")

    def finished(self, student: str, line: str) -> None:
        with self.lock:
            self.running.finished(student)
            self.counter.done += 1
            self.counter.done_here += 1
            done, total, eta = self.counter.done, self.counter.total, self.counter.eta()
        self._print(f"[{done}/{total}] {student}: {line}  ({eta})")

    def log(self, message: str) -> None:
        self._print(message)

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=1)

    def _beats(self) -> None:
        while not self._stop.wait(self.heartbeat):
            with self.lock:
                running = sorted(self.running.shown())
                done, total, eta = self.counter.done, self.counter.total, self.counter.eta()
            if running:
                shown = "; ".join(f"{student}: {what}" for student, what in running[:8])
                more = f"; and {len(running) - 8} more" if len(running) > 8 else ""
                self._print(f"[{done}/{total}] grading {len(running)}: {shown}{more}  ({eta})")


class RichProgress:
    """A bar with the time left and a table of the submissions in flight, redrawn in place."""

    def __init__(self) -> None:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar
        from rich.table import Table

        self._group, self._table_type = Group, Table
        self.console = Console()
        self.bar = Bar(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("time left"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.bar.add_task("grading", total=1)
        self.running = _InFlight()
        self.lock = threading.Lock()
        self.live = Live(self._render(), console=self.console, refresh_per_second=4)
        self.live.start()

    def _render(self):  # type: ignore[no-untyped-def]
        table = self._table_type(box=None, show_header=False, padding=(0, 2))
        # The earliest first: they are the next to finish (the scheduler serves them first).
        running = self.running.shown()
        for student, what in running[:12]:
            table.add_row(student, what)
        if len(running) > 12:
            table.add_row(f"and {len(running) - 12} more", "")
        return self._group(self.bar, table)

    def _refresh(self) -> None:
        self.live.update(self._render())

    def start(self, total: int, done: int) -> None:
        self.bar.update(self.task, total=total, completed=done)
        self._refresh()

    def stage(self, student: str, what: str, lab: str | None = None) -> None:
        with self.lock:
            self.running.stage(student, what, lab)
            self._refresh()

    def finished(self, student: str, line: str) -> None:
        with self.lock:
            self.running.finished(student)
            self.bar.advance(self.task)
            self.live.console.print(f"{student}: {line}")
            self._refresh()

    def log(self, message: str) -> None:
        self.live.console.print(message)

    def close(self) -> None:
        self.live.stop()


def make_progress(stream: TextIO | None = None) -> Progress:
    """rich's live display on a terminal where rich is importable; plain lines otherwise."""
    stream = stream or sys.stdout
    if stream.isatty():
        try:
            return RichProgress()
        except ImportError:
            pass
    return PlainProgress(stream, stages=False)


class QuietProgress(PlainProgress):
    def __init__(self) -> None:
        super().__init__(stream=None, stages=False, heartbeat=0)

    def _print(self, line: str) -> None:
        pass
