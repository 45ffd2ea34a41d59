"""bench.py on the fake kit: distinct copies, serial and engine passes, and the comparison."""

import json
from dataclasses import replace

import pytest

from grader.engine.schedule import Span
from grader.pipeline import score as scoring
from grader.pipeline.run import Status
from grader.pipeline.score import LabScore, SubmissionScore
from grader.staff import bench
from grader.staff.bench import (
    longest_runs,
    profiler_time,
    profiler_turns_by_test,
    repeated_turns,
    run_bench,
    score_differences,
    synthetic_class,
    turns_beside_starts,
    whole_students_class,
)
from grader.staff.mutants import sample_students


def test_copies_differ_so_that_the_cache_shares_nothing(fake_kit):
    students = synthetic_class(fake_kit.kit, list(fake_kit.kit.labs), copies=2)
    ids = [student.student_id for student in students]
    assert ids == [
        "reference-copy1",
        "lab02-broken-copy1",
        "lab02-transposed-copy1",
        "reference-copy2",
        "lab02-broken-copy2",
        "lab02-transposed-copy2",
    ]
    first, second = students[0].files, students[3].files
    assert first.keys() == second.keys() and all(first[path] != second[path] for path in first)
    assert [lab.id for lab in students[1].labs] == ["02"]  # a mutant is graded on its own lab


def test_whole_students_hand_in_every_lab_right_and_wrong_in_turn_and_share_no_file(fake_kit):
    labs = list(fake_kit.kit.labs)
    students = whole_students_class(fake_kit.kit, labs, 7)
    assert [s.student_id for s in students] == [f"student000{i}" for i in range(1, 8)]
    assert all([lab.id for lab in s.labs] == [lab.id for lab in labs] for s in students)
    samples = {s.student_id: s for s in sample_students(fake_kit.kit, labs, mutant_lab_only=True)}
    demo = "labs/02_demo/demo.cu"  # lab 02 (the first) has two mutants; lab 03 none

    def unmarked(student: int, path: str) -> bytes:
        comment = "#" if path.endswith(".toml") else "//"
        mark = f"\n{comment} synthetic student {student + 1}\n".encode()
        data = students[student].files[path]
        assert data.endswith(mark)
        return data[: -len(mark)]

    reference, broken, transposed = (
        samples[s].files[demo] for s in ("reference", "lab02-broken", "lab02-transposed")
    )
    # Every second student hands in lab 02 right, the others its mutants in turn, wrapping round.
    assert [unmarked(i, demo) for i in range(7)] == [
        reference,
        broken,
        reference,
        transposed,
        reference,
        broken,
        reference,
    ]
    other = [path for path in students[1].files if path.startswith("labs/03_")]
    assert other and all(
        unmarked(i, path) == samples["reference"].files[path] for i in range(7) for path in other
    )
    # Every student's files differ, so that the build cache shares nothing.
    assert students[0].files[demo] != students[2].files[demo]


def test_a_bench_of_whole_students_grades_every_lab_of_each(fake_kit, tmp_path, capsys):
    options = fake_kit.options()
    assert run_bench(fake_kit.kit, options, 1, False, 0, None, tmp_path, whole_students=3) == 0
    shown = capsys.readouterr().out
    assert "grader bench: 3 students, each on every lab, 6 student-labs" in shown
    engine = json.loads((tmp_path / "bench.json").read_text())["passes"][-1]
    totals = engine["totals"]
    assert engine["student_labs"] == 6 and sorted(totals) == ["student0001", "student0002", "student0003"]
    # The second hands in a mutant of lab 02 and loses points the reference's work keeps.
    assert totals["student0002"] < totals["student0001"] == totals["student0003"]
    assert engine["first_full_report_s"] == engine["first_report_s"]  # every submission is whole


def test_whole_students_make_a_class_of_their_own(fake_kit):
    from grader import cli
    from grader.errors import GraderError

    parse = cli.build_parser().parse_args
    for bad, why in (
        (["--whole-students", "0"], "at least 1"),
        (["--whole-students", "3", "--only", "reference"], "without --only"),
        (["--whole-students", "3", "--copies", "2"], "without --only and --copies"),
    ):
        with pytest.raises(GraderError, match=why):
            cli.run_bench_command(fake_kit.kit, parse(["bench", *bad]))


def test_serial_and_engine_passes_agree_and_repeats_are_compared(fake_kit, tmp_path, capsys):
    options = fake_kit.options()
    assert run_bench(fake_kit.kit, options, copies=1, serial=True, repeat=1, only=None, out=tmp_path) == 0
    shown = capsys.readouterr().out
    assert "scores identical to serial grading: yes" in shown
    assert "every score the same every time" in shown
    report = json.loads((tmp_path / "bench.json").read_text())
    assert [p["name"] for p in report["passes"]] == ["serial", "engine", "engine again (1)"]
    assert report["settings"] == {
        "exclusive_windows": True,
        "quiet_windows": False,
        "turn_slots": None,
        "max_defer": 20.0,
        "load_counter": True,
        "modes_together": True,
        "in_flight": None,
    }
    assert report["passes"][0]["most_at_once"].get("cpu", 0) == 1  # serial means one at a time
    assert report["passes"][1]["cuda_processes_by_test"] == []  # the fake kit's tests log no CUDA start
    assert report["passes"][1]["totals"]["reference-copy1"] == 60
    tests = report["passes"][1]["tests"]["lab02-broken-copy1"]  # each test's points, for a comparison
    assert sum(t["points"] for t in tests.values()) == report["passes"][1]["totals"]["lab02-broken-copy1"]
    assert any(t["status"] != "passed" for t in tests.values()) and all(k.startswith("lab02 ") for k in tests)
    # A test that lost points keeps the first line of what it reported; one with full marks keeps none.
    assert all(("why" in t) == (t["status"] != "passed" or t["points"] == 0) for t in tests.values())
    assert any(t.get("why") for t in tests.values())
    # No GPU in the fake kit: its GPU tests run on CPU slots, so a GPU did nothing all along.
    engine = report["passes"][1]
    assert engine["wall_s"] > 0 and abs(engine["gpu_idle_s"] - engine["wall_s"]) <= 0.01
    assert "GPU idle (no test process running, no window open)" in shown
    assert "the test processes that ran longest, parked time left out (engine pass):" in shown
    assert "reference-copy1: lab02_" in shown  # the engine named each job's submission
    assert "timeline" in shown
    spans = json.loads((tmp_path / "timeline-engine.json").read_text())
    assert spans and {"kind", "start", "end", "gpu", "key"} <= spans[0].keys()
    assert all(span["end"] >= 0 for span in spans)


def test_a_changed_point_is_reported_with_its_test_and_metric():
    def one(points):
        test = scoring.TestScore("speed", points, 10, Status.PASSED, metrics={"time_ratio": 2.0})
        return {"s": SubmissionScore("s", labs=[LabScore("02", "02_demo", "Demo", [test])])}

    assert score_differences(one(10), one(10)) == []
    (line,) = score_differences(one(10), one(6.5))
    assert "s lab02 'speed': 10 vs 6.5" in line and "time_ratio" in line


def test_the_longest_runs_name_their_student_and_leave_out_parked_time():
    spans = [
        Span("gpu", 0.0, 30.0, "0", "lab02_tests/speed", "ann"),  # 28 s of it parked
        Span("parked", 1.0, 29.0, "0", "lab02_tests/speed", "ann"),
        Span("gpu", 0.0, 21.5, "0", "lab03_tests/race", "bob"),
        Span("gpu", 2.0, 4.0, "0", "lab03_tests/race", "ann"),
        Span("parked", 5.0, 6.0, "0", "lab03_tests/race", "ann"),  # another process's wait
        Span("cpu", 0.0, 50.0, None, None, None),  # the harness's build: no submission
    ]
    assert longest_runs(spans, most=2) == [(21.5, "bob: lab03_tests/race"), (2.0, "ann: lab02_tests/speed")]
    assert [run for _, run in longest_runs(spans)] == [
        "bob: lab03_tests/race",
        "ann: lab02_tests/speed",
        "ann: lab03_tests/race",
    ]


def test_profiler_turns_are_summed_by_test_with_their_median_and_longest():
    spans = [
        Span("profiler", 0.0, 1.0, "0", "lab05_tests/sizes", "ann"),
        Span("profiler", 2.0, 3.0, "0", "lab05_tests/sizes", "bob"),
        Span("profiler", 6.0, 10.0, "0", "lab05_tests/sizes", "cy"),  # 6 s in all, median 1 s
        Span("profiler", 11.0, 13.5, "1", "lab03_tests/loads", "ann"),
        Span("profiler", 14.0, 16.5, "1", "lab03_tests/loads", "bob"),  # 5 s in all, median 2.5 s
        Span("profiler", 17.0, 17.5, "0", None, None),
        Span("gpu", 0.0, 30.0, "0", "lab05_tests/sizes", "ann"),  # the process, not its turn
    ]
    assert profiler_turns_by_test(spans) == [
        ("lab05_tests/sizes", 3, 1.0, 4.0),
        ("lab03_tests/loads", 2, 2.5, 2.5),
        ("?", 1, 0.5, 0.5),
    ]
    assert profiler_turns_by_test([]) == []


def test_the_pass_the_engine_is_compared_with_runs_each_test_alone(fake_kit, tmp_path, capsys, monkeypatch):
    real = bench.grade_pass
    per_process: dict[str, int] = {}

    def recorded(kit, name, options, students):
        per_process[name] = options.run.tests_per_process
        return real(kit, name, options, students)

    monkeypatch.setattr(bench, "grade_pass", recorded)
    options = fake_kit.options()
    run_bench(fake_kit.kit, options, copies=1, serial=True, repeat=0, only=None, out=None)
    run_bench(fake_kit.kit, options, copies=1, serial=False, repeat=0, only=None, out=None, each_alone=True)
    assert per_process == {"serial": 1, "each test alone": 1, "engine": options.run.tests_per_process}
    assert options.run.tests_per_process != 1  # the engine's default shares a judge process
    assert "scores identical to grading each test alone: yes" in capsys.readouterr().out


def test_profiler_turns_are_summed_and_the_busiest_gpus_share_is_the_floor_under_the_wall():
    spans = [
        Span("profiler", 0.0, 2.0, "0", "lab05_tests/loads"),
        Span("profiler", 2.5, 4.0, "0", "lab05_tests/launches"),
        Span("profiler", 1.0, 2.0, "1", "lab04_tests/loads"),
        Span("window", 4.0, 5.0, "0", "lab05_tests/speed"),
        Span("gpu", 0.0, 9.0, "0", "lab05_tests/speed"),
    ]
    assert profiler_time(spans) == (4.5, 3.5)
    assert profiler_time([]) == (0.0, 0.0)


def test_a_pass_on_fewer_gpus_is_compared_with_the_engines_and_each_pass_says_when_its_first_report_came(
    fake_kit, tmp_path, capsys, monkeypatch
):
    real = bench.grade_pass
    gpus_of: dict[str, tuple[str, ...] | None] = {}

    def recorded(kit, name, options, students):
        gpus_of[name] = options.gpus
        return real(kit, name, options, students)

    monkeypatch.setattr(bench, "grade_pass", recorded)
    options = fake_kit.options(gpus=["0", "1"])
    run_bench(
        fake_kit.kit, options, copies=1, serial=False, repeat=0, only=None, out=tmp_path, also_gpus=("1",)
    )
    assert gpus_of == {"engine": ("0", "1"), "engine on GPU 1": ("1",)}
    shown = capsys.readouterr().out
    assert "pass done: engine on GPU 1: 4 student-labs in" in shown
    assert "scores identical: yes" in shown
    report = json.loads((tmp_path / "bench.json").read_text())
    assert [p["name"] for p in report["passes"]] == ["engine", "engine on GPU 1"]
    assert report["scaling"]["gpus"] == ["1"] and report["scaling"]["identical"] is True
    for p in report["passes"]:
        assert 0 < p["first_report_s"] <= p["wall_s"]
        # The reference is the one sample student with both labs: its report is the first full one.
        assert p["first_report_s"] <= p["first_full_report_s"] <= p["wall_s"]
    assert "the first of a submission with every lab after" in shown
    assert (tmp_path / "timeline-engine-on-GPU-1.json").is_file()  # each pass has its timeline


def test_profiler_turns_are_told_apart_by_test_processes_starting_on_their_gpu_near_them():
    spans = [
        Span("profiler", 10.0, 11.0, "0", "lab03_tests/loads", "ann"),  # quiet: nothing started near
        Span("gpu", 5.0, 30.0, "0", "lab03_tests/loads", "ann"),  # its own process, long before
        Span("profiler", 20.0, 22.0, "0", "lab04_tests/loads", "bob"),
        Span("gpu", 19.2, 25.0, "0", "lab04_tests/speed", "cy"),  # started 0.8 s before the turn
        Span("profiler", 40.0, 42.5, "0", "lab05_tests/sizes", "cy"),
        Span("gpu", 40.4, 41.0, "0", "lab05_tests/race", "dee"),  # 0.4 s into it
        Span("profiler", 50.0, 51.2, "1", "lab03_tests/loads", "eve"),
        Span("gpu", 50.1, 55.0, "0", "lab03_tests/race", "fay"),  # near, but on another GPU
        Span("gpu", 51.0, 55.0, "1", "lab03_tests/race", "gus"),  # its GPU, 1 s in: too late
        Span("gpu", 49.5, 52.0, "1", "lab03_tests/loads", "eve"),  # the turn's own process
    ]
    quiet, beside = turns_beside_starts(spans)
    assert quiet == pytest.approx([1.0, 1.2])
    assert beside == [2.0, 2.5]
    assert turns_beside_starts([]) == ([], [])


def test_turns_taken_again_are_counted_per_test_process_and_short_ones_right_after_another():
    spans = [
        Span("profiler", 10.0, 11.5, "0", "lab05_tests/17 tests", "ann"),
        Span("profiler", 11.5, 11.8, "0", "lab05_tests/17 tests", "bob"),  # short, as ann's ended
        Span("profiler", 14.0, 15.2, "0", "lab05_tests/17 tests", "bob"),  # bob's run again
        Span("profiler", 15.2, 16.6, "0", "lab05_tests/17 tests", "ann"),  # long: a run of its own
        Span("profiler", 16.6, 17.0, "1", "lab03_tests/loads", "cy"),  # short, but first on GPU 1
        Span("profiler", 30.0, 30.3, "0", "lab03_tests/loads", "dee"),  # short, 13 s after the last
        Span("profiler", 31.0, 32.0, "0", "lab03_tests/loads", "ann"),  # ann's other test: its own
        Span("gpu", 9.0, 20.0, "0", "lab05_tests/17 tests", "ann"),  # not a turn
    ]
    assert repeated_turns(spans) == (2, 2, 1)
    assert repeated_turns([]) == (0, 0, 0)


def test_cuda_starts_are_summed_by_kind_and_by_test_the_most_first():
    def student(worker_starts: int) -> SubmissionScore:
        tests = [
            scoring.TestScore(
                "speed", 5, 5, Status.PASSED, processes={"judge": 1, "worker": 1, "reference worker": 1}
            ),
            scoring.TestScore("race", 8, 8, Status.PASSED, processes={"tool": 2}),
            scoring.TestScore("results", 10, 10, Status.FAILED, processes={"worker": worker_starts}),
            scoring.TestScore("answers", 2, 2, Status.PASSED),
        ]
        return SubmissionScore("s", labs=[LabScore("03", "03_demo", "Demo", tests)])

    starts = bench.cuda_starts({"a": student(1), "b": student(4)}, student_labs=2)
    assert starts.by_kind == {"judge": 2, "worker": 7, "reference worker": 2, "tool": 4}
    assert starts.total == 15
    assert [(name, count) for name, count, _ in starts.by_test] == [
        ("lab03: speed", 6),
        ("lab03: results", 5),
        ("lab03: race", 4),
    ]
    assert starts.summary() == "15 in all, 7.5 a student-lab (worker 7, tool 4, judge 2, reference worker 2)"
    assert starts.by_test_json()[2] == {"test": "lab03: race", "count": 4, "kinds": {"tool": 4}}
    assert bench.cuda_starts({}, student_labs=0).summary() == "0 in all, 0.0 a student-lab (none logged)"


def test_workers_that_never_started_cuda_come_off_the_cuda_starts():
    # kit/process_log.hpp: a worker is logged at its start, and again when it is stopped without
    # ever having opened the GPU (lab 06's calculator).
    tests = [
        scoring.TestScore(
            "calculator",
            5,
            5,
            Status.PASSED,
            processes={"worker": 3, "worker without CUDA": 2, "reference worker without CUDA": 1},
        ),
        scoring.TestScore("race", 8, 8, Status.PASSED, processes={"tool": 1}),
    ]
    score = SubmissionScore("s", labs=[LabScore("06", "06_demo", "Demo", tests)])
    starts = bench.cuda_starts({"a": score}, student_labs=1)
    # One worker started CUDA; the reference's marker has no start to come off (a log cut short).
    assert starts.by_kind == {"worker": 1, "tool": 1}
    assert starts.workers_without_cuda == 2
    assert starts.summary() == (
        "2 in all, 2.0 a student-lab (worker 1, tool 1); besides, 2 workers that never started CUDA"
    )
    # bench.json's entry for each test counts the same way.
    assert bench._test_points(score)["lab06 calculator"]["processes"] == {"worker": 1}


def test_each_labs_stretch_says_how_long_its_tests_took_and_its_turns():
    spans = [
        Span("cpu", 0.0, 1.0, None, "lab01_tests/answers", "ann"),
        Span("gpu", 1.0, 3.0, "0", "lab01_tests/3 tests from ...", "ann"),
        Span("gpu", 2.0, 12.0, "0", "lab03_tests/12 tests from ...", "bob"),
        Span("parked", 4.0, 6.0, "0", "lab03_tests/12 tests from ...", "bob"),  # not a test's run
        Span("profiler", 6.0, 7.5, "0", "lab03_tests/12 tests from ...", "bob"),
        Span("gpu", 5.0, 20.0, "0", "lab03_tests/tiled kernel speed", "cat"),
        Span("cpu", 0.5, 30.0, None, None, "cat"),  # a compile: no lab's test
    ]
    one, three = bench.lab_stretches(spans)
    assert (one.lab, one.student_labs, one.first, one.last, one.median_stretch) == ("lab01", 1, 0.0, 3.0, 3.0)
    assert (one.turns, one.turn_seconds) == (0, 0.0)
    assert (three.lab, three.student_labs, three.first, three.last) == ("lab03", 2, 2.0, 20.0)
    assert three.median_stretch == 12.5  # bob 10 s, cat 15 s
    assert (three.turns, three.turn_seconds) == (1, 1.5)
    assert three.per_minute == 60.0 * 2 / 18.0


def test_bench_takes_max_defer_into_the_engines_scheduler(fake_kit, monkeypatch):
    # --max-defer is a bench experiment: it reaches the scheduler the engine makes, and a negative
    # value is refused before anything is graded.
    from grader import cli
    from grader.errors import GraderError
    from grader.pipeline import grade as pipeline

    parser = cli.build_parser()
    assert parser.parse_args(["bench", "--max-defer", "5"]).max_defer == 5.0
    assert parser.parse_args(["bench"]).max_defer is None
    options = replace(fake_kit.options(confine=False), max_defer=5.0)
    with pipeline.Engine(fake_kit.kit, options) as engine:
        assert engine.scheduler.max_defer == 5.0
    for bad in ("-1", "inf", "nan"):
        with pytest.raises(GraderError, match="max-defer"):
            cli.run_bench_command(fake_kit.kit, parser.parse_args(["bench", "--max-defer", bad]))
    # What the command hands the bench: the value given, or the engine's own without one.
    seen: list[float] = []

    def run_bench(kit, options, *rest, **named) -> int:
        seen.append(options.max_defer)
        return 0

    monkeypatch.setattr(cli, "run_bench", run_bench)
    monkeypatch.setattr(cli.grading, "grade_options", lambda kit, args: fake_kit.options(confine=False))
    cli.run_bench_command(fake_kit.kit, parser.parse_args(["bench", "--max-defer", "5"]))
    cli.run_bench_command(fake_kit.kit, parser.parse_args(["bench"]))
    assert seen == [5.0, 20.0]


def test_the_bench_says_who_counted_the_global_loads(tmp_path, fake_kit, capsys):
    from grader.pipeline.harness import DEVICE_COUNT, LOAD_COUNTER, loads_counted_by

    assert loads_counted_by(tmp_path, True) == "Nsight Compute"  # no counter built
    (tmp_path / LOAD_COUNTER).parent.mkdir(parents=True)
    (tmp_path / LOAD_COUNTER).write_bytes(b"")
    assert loads_counted_by(tmp_path, True) == "Nsight Compute"  # no kit_device_count beside it
    device_count = (tmp_path / LOAD_COUNTER).parent.joinpath(DEVICE_COUNT)
    device_count.write_bytes(b"")
    assert loads_counted_by(tmp_path, True) == "Nsight Compute"  # not executable: the judges say ncu
    device_count.chmod(0o755)
    counter = "the kit's load counter (Nsight Compute where it could not count)"
    assert loads_counted_by(tmp_path, True) == counter
    spaced = tmp_path / "a b"
    (spaced / LOAD_COUNTER).parent.mkdir(parents=True)
    (spaced / LOAD_COUNTER).write_bytes(b"")
    (spaced / LOAD_COUNTER).parent.joinpath(DEVICE_COUNT).write_bytes(b"")
    (spaced / LOAD_COUNTER).parent.joinpath(DEVICE_COUNT).chmod(0o755)
    assert loads_counted_by(spaced, True) == "Nsight Compute"  # LD_PRELOAD would split the path
    assert loads_counted_by(tmp_path, False) == "Nsight Compute"  # --ncu-loads
    # A pass records it, and the bench prints it: the fake kit's harness has no counter.
    out = tmp_path / "out"
    assert (
        run_bench(fake_kit.kit, fake_kit.options(), copies=1, serial=False, repeat=0, only=None, out=out) == 0
    )
    assert "global loads of labs 03-05 counted by Nsight Compute" in capsys.readouterr().out
    report = json.loads((out / "bench.json").read_text())
    assert {p["loads_counted_by"] for p in report["passes"]} == {"Nsight Compute"}
