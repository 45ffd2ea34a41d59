"""grader/confine/gate.py on its own: the bytes a test process writes, and what the gate opens."""

from __future__ import annotations

import os
import select
import time
from contextlib import contextmanager

from grader.confine.gate import GpuGate


def _wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _granted(grant: int) -> bool:
    """Whether the gate answered 'G' within 5 s (a gate that stopped serving never does)."""
    ready, _, _ = select.select([grant], [], [], 5.0)
    return bool(ready) and os.read(grant, 1) == b"G"


def test_a_stray_give_back_is_ignored_and_a_turn_closes_on_its_give_back():
    # A judge writes 'R' after every run of Nsight Compute (kit::release_hold_of_ended_child),
    # whether or not its probe still held the turn: with nothing held, the gate must ignore it.
    events: list[str] = []

    @contextmanager
    def turn(cancelled):
        events.append("open")
        try:
            yield True
        finally:
            events.append("close")

    with GpuGate(open_window=turn, open_profiler_turn=turn) as gate:
        request, grant = gate.child_fds()
        os.write(request, b"R")  # nothing held: ignored
        os.write(request, b"P")  # the probe asks for the turn
        assert _granted(grant)
        assert events == ["open"]
        os.write(request, b"R")  # the judge gives it back for the probe ncu killed
        assert _wait_for(lambda: events == ["open", "close"])
        os.write(request, b"R")  # and once more: still nothing held
        os.write(request, b"P")
        assert _granted(grant)
        assert _wait_for(lambda: events == ["open", "close", "open"])
    assert events == ["open", "close", "open", "close"]  # the process ended holding it: closed
