"""The benchmark's timeline: processes running at each moment, windows, and GPU idle time."""

import pytest

from grader.engine.schedule import Span
from grader.engine.timeline import build_timeline, plot_timeline
from grader.engine.usage import Usage


def test_a_parked_process_is_not_counted_as_running_and_idle_time_is_measured():
    spans = [
        Span("gpu", 10.0, 16.0, "0", "a"),  # runs 0-2, parked 2-4, window 4-5, runs to 6
        Span("parked", 12.0, 14.0, "0", "a"),
        Span("window", 14.0, 15.0, "0", "a"),
        Span("cpu", 11.0, 13.0, None, "compile"),
        Span("gpu", 17.0, 18.0, "0", "b"),
        Span("profiler", 17.2, 17.8, "0", "b"),
    ]
    timeline = build_timeline(spans, origin=10.0, wall=9.0)
    at = dict(zip(timeline.times, timeline.gpu_running, strict=True))
    assert at[0.0] == 1 and at[2.0] == 0 and at[4.0] == 1 and at[6.0] == 0 and at[7.0] == 1
    assert dict(zip(timeline.times, timeline.parked, strict=True))[2.0] == 1
    assert max(timeline.cpu_running) == 1
    assert timeline.windows == [(4.0, 5.0)]
    assert timeline.profiler_turns == [pytest.approx((7.2, 7.8))]
    # Idle: 2-4 (everyone parked, nothing granted yet), 6-7 and 8-9.
    assert timeline.gpu_idle_seconds == pytest.approx(4.0)
    assert timeline.mean_gpu_running == pytest.approx(5.0 / 9.0)


def test_spans_before_the_pass_started_count_for_nothing():
    timeline = build_timeline([Span("gpu", 0.0, 1.0, "0")], origin=5.0, wall=2.0)
    assert timeline.gpu_idle_seconds == pytest.approx(2.0)


@pytest.mark.parametrize("usage", [None, Usage([0.5, 1.0], [0.9, 0.4], {"0": [(0.5, 0.7)]}, cpus=2)])
def test_the_chart_is_drawn_or_says_why_not(tmp_path, usage):
    spans = [Span("gpu", 0.0, 1.0, "0"), Span("window", 0.2, 0.4, "0"), Span("profiler", 0.5, 0.9, "0")]
    timeline = build_timeline(spans, 0.0, 2.0)
    chart = tmp_path / "timeline.png"
    why_not = plot_timeline(timeline, "test", chart, usage)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib" in why_not and not chart.exists()
    else:
        assert why_not == "" and chart.read_bytes().startswith(b"\x89PNG")
