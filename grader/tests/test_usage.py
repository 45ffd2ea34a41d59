"""The benchmark's load sampler: /proc/stat's CPU figures and nvidia-smi's GPU lines."""

import time

import pytest

from grader.engine.usage import Usage, UsageSampler, parse_gpu_line, read_cpu_times


def test_cpu_times_are_busy_and_total_jiffies_without_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu  100 5 20 800 50 3 2 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n", encoding="ascii")
    assert read_cpu_times(stat) == (130, 980)


def test_cpu_times_are_none_where_proc_stat_is_missing_or_foreign(tmp_path):
    assert read_cpu_times(tmp_path / "missing") is None
    foreign = tmp_path / "stat"
    foreign.write_text("intr 1 2 3\n", encoding="ascii")
    assert read_cpu_times(foreign) is None


def test_gpu_lines_give_the_index_and_a_share_and_skip_what_is_not_a_number():
    sample = parse_gpu_line("0, 87\n")
    assert sample is not None and sample[0] == "0" and sample[1] == pytest.approx(0.87)
    assert parse_gpu_line("1, [N/A]") is None
    assert parse_gpu_line("garbage") is None


def test_the_summary_says_how_busy_the_cpus_were_and_how_often_they_were_full():
    usage = Usage([0.5, 1.0, 1.5, 2.0], [0.95, 0.5, 1.0, 0.3], {"0": [(0.5, 0.8), (1.0, 0.4)]}, cpus=16)
    assert usage.mean_cpu_busy == pytest.approx(0.6875)
    assert usage.cpu_saturated_share() == pytest.approx(0.5)
    assert usage.mean_gpu_busy == {"0": pytest.approx(0.6)}
    text = usage.summary()
    assert (
        "CPUs (16) busy 69%" in text and "50% of the samples" in text and "GPU 0 running a kernel 60%" in text
    )
    assert usage.as_json()["cpu_saturated_share"] == 0.5


def test_the_sampler_sees_a_busy_loop_on_this_machine():
    with UsageSampler(interval=0.1) as sampler:
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            pass
    usage = sampler.usage()
    if read_cpu_times() is None:
        pytest.skip("no Linux /proc/stat here")
    assert len(usage.cpu_busy) >= 3
    # One core of `cpus` spun the whole time (other work on the machine only adds to it).
    assert usage.mean_cpu_busy >= 0.5 / usage.cpus
