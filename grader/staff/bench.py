"""`python -m grader bench`: the grader's own speed, as a benchmark figure (never a timed test).

Grades a synthetic class, N copies of the sample students (the reference on every lab, each
mutant on its own lab) or, with --whole-students N, N students who each hand in every lab,
serially (one process at a time: one CPU slot, one GPU slot, one submission in flight, each test
in a process of its own: the grading every other is held to) and with the engine's settings, in
the same run, then prints student-labs per minute, where the time went and whether every score
matched. Each copy's or student's files differ by a comment, so that the build cache shares
nothing between them: the figure is that of a class of distinct submissions.

With --repeat K the engine grades the class K times more and reports, per student, whether all
K scores were the same (performance credit included).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

from ..engine.schedule import Span
from ..engine.timeline import Timeline, build_timeline, plot_timeline
from ..engine.usage import Usage, UsageSampler
from ..pipeline.collect import submission_from_files
from ..pipeline.grade import Engine, GradeOptions
from ..pipeline.harness import loads_counted_by
from ..pipeline.report import format_points, text_table
from ..pipeline.run import Status
from ..pipeline.score import SubmissionScore, TestScore
from ..progress import PlainProgress
from ..rubric import Kit, Lab
from .mutants import sample_students


@dataclass(frozen=True)
class SyntheticStudent:
    student_id: str
    files: dict[str, bytes]
    labs: list[Lab]


def synthetic_class(
    kit: Kit, labs: list[Lab], copies: int, only: list[str] | None = None
) -> list[SyntheticStudent]:
    students = sample_students(kit, labs, mutant_lab_only=True)
    if only:
        unknown = sorted(set(only) - {student.student_id for student in students})
        if unknown:
            names = ", ".join(student.student_id for student in students)
            raise SystemExit(f"grader bench: no sample student {', '.join(unknown)}; they are: {names}")
        students = [student for student in students if student.student_id in only]
    result = []
    for copy in range(1, copies + 1):
        for student in students:
            files = {path: data + _copy_mark(path, copy) for path, data in student.files.items()}
            result.append(SyntheticStudent(f"{student.student_id}-copy{copy}", files, list(student.labs)))
    return result


def whole_students_class(kit: Kit, labs: list[Lab], count: int) -> list[SyntheticStudent]:
    """`count` students who each hand in every lab, as a course's students do, where the sample
    class's mutants hand in one lab each: with the same number of submissions in flight, a class
    of whole submissions puts about as many times the student-labs in flight as there are labs,
    so it is the class the goal of 1,200 student-labs (200 students on six labs) is measured on.
    Half of each lab's submissions are the reference and half its mutants in turn (the reference
    alone where a lab has none), alternating from lab to lab, so that a student hands in about
    half of the labs right, as a class has right and wrong work alike; how a real class divides
    its work, and so how fast it grades, differs. Each student's files carry a mark of its own,
    so that the build cache shares nothing."""
    samples = sample_students(kit, labs, mutant_lab_only=True)
    reference = samples[0]
    mutants = {
        lab.id: [s for s in samples[1:] if [graded.id for graded in s.labs] == [lab.id]] for lab in labs
    }
    result = []
    for index in range(count):
        files: dict[str, bytes] = {}
        for order, lab in enumerate(labs):
            turn = index + order  # a student's right labs alternate with its wrong ones
            wrong = mutants[lab.id]
            picked = reference if turn % 2 == 0 or not wrong else wrong[(turn // 2) % len(wrong)]
            prefix = f"labs/{lab.slug}/"
            files |= {path: data for path, data in picked.files.items() if path.startswith(prefix)}
        marked = {path: data + _mark(path, f"synthetic student {index + 1}") for path, data in files.items()}
        result.append(SyntheticStudent(f"student{index + 1:04d}", marked, list(labs)))
    return result


def _copy_mark(path: str, copy: int) -> bytes:
    return _mark(path, f"synthetic copy {copy}")


def _mark(path: str, text: str) -> bytes:
    comment = "#" if path.endswith(".toml") else "//"
    return f"\n{comment} {text}\n".encode()


@dataclass
class Pass:
    name: str
    wall: float
    student_labs: int
    harness: float
    build: float
    test_processes: float
    compiled: int
    linked: int
    most_at_once: dict[str, int]
    windows: int
    window_seconds: float
    parked_seconds: float
    profiler_turns: int
    first_report: float  # seconds from the pass's start to its first finished submission
    # The same for the first submission graded on every lab of the pass (the sample class's
    # reference; a mutant has one lab): a class of full submissions waits that long for its first
    # report. None when no submission had every lab's report written.
    first_full_report: float | None
    spans: list[Span] = field(repr=False)  # times from the pass's start
    scores: dict[str, SubmissionScore] = field(repr=False)
    usage: Usage | None = field(default=None, repr=False)  # how busy the CPUs and GPUs were
    # Who counted the locality tests' global loads: the kit's load counter where the harness has it
    # and --ncu-loads was not given, else Nsight Compute (kit/load_counter.hpp).
    loads_counted_by: str = "Nsight Compute"

    @property
    def timeline(self) -> Timeline:
        return build_timeline(self.spans, 0.0, self.wall)

    @property
    def per_minute(self) -> float:
        return self.student_labs / (self.wall / 60) if self.wall > 0 else 0.0

    @property
    def profiler_seconds(self) -> tuple[float, float]:
        """Profiler turns' seconds in all, and on the GPU that had the most (profiler_time)."""
        return profiler_time(self.spans)


def profiler_time(spans: list[Span]) -> tuple[float, float]:
    """(seconds of profiler turns in all, seconds on the GPU with the most). A GPU takes its turns
    one at a time, so the second figure is a floor under the pass's wall time: where it comes
    near the wall, Nsight Compute's turns bound the rate, whatever else runs beside them."""
    per_gpu: dict[str | None, float] = {}
    for span in spans:
        if span.kind == "profiler":
            per_gpu[span.gpu] = per_gpu.get(span.gpu, 0.0) + span.end - span.start
    return sum(per_gpu.values()), max(per_gpu.values(), default=0.0)


def profiler_turns_by_test(spans: list[Span]) -> list[tuple[str, int, float, float]]:
    """(test, turns, median seconds, longest seconds) of the profiler turns, the most time first:
    a turn's floor is Nsight Compute's first profiled launch (about 0.65 s on an idle H200,
    bench/RESULTS.md, "Nsight Compute's lock and its first profiled launch"), so a test whose
    median sits far above it waits in its turn on something else."""
    turns: dict[str, list[float]] = {}
    for span in spans:
        if span.kind == "profiler":
            turns.setdefault(span.key or "?", []).append(span.end - span.start)
    ranked = sorted(turns.items(), key=lambda item: (-sum(item[1]), item[0]))
    return [(key, len(t), statistics.median(t), max(t)) for key, t in ranked]


def turns_beside_starts(spans: list[Span]) -> tuple[list[float], list[float]]:
    """The profiler turns' seconds, split by whether a GPU test process started on the same GPU
    from 1 s before the turn to 0.5 s into it (a new sandbox and CUDA context): on an H200 the
    first kind took about 1.15 s, the second about 2 s (bench/RESULTS.md, "Profiler turns beside
    starting processes"). What `--turn-slots` is meant to move."""
    starts = [span for span in spans if span.kind == "gpu"]
    quiet: list[float] = []
    beside: list[float] = []
    for turn in (span for span in spans if span.kind == "profiler"):
        near = any(
            s.gpu == turn.gpu
            and turn.start - 1.0 <= s.start <= turn.start + 0.5
            and (s.who, s.key) != (turn.who, turn.key)  # not the turn's own process
            for s in starts
        )
        (beside if near else quiet).append(turn.end - turn.start)
    return quiet, beside


def repeated_turns(spans: list[Span]) -> tuple[int, int, int]:
    """(test processes that took more than one profiler turn, the turns past each one's first,
    turns under 0.7 s that began within 0.05 s of another's end on their GPU). A test process
    takes another turn for another run of Nsight Compute: a count that runs its own modes after a
    shared run, the self-test after a run with no count, or a run tried again after "a driver
    resource was unavailable", which fails at once. The short turns right after another are what
    such a failure looked like in the H200 timelines (bench/RESULTS.md, "H200, 2026-11-28, the
    experiment run"); the timeline cannot say which they were."""
    turns = sorted((span for span in spans if span.kind == "profiler"), key=lambda span: span.start)
    per_process: dict[tuple[str | None, str | None], int] = {}
    for turn in turns:
        per_process[(turn.who, turn.key)] = per_process.get((turn.who, turn.key), 0) + 1
    again = [count for count in per_process.values() if count > 1]
    short = 0
    last_end: dict[str | None, float] = {}  # a GPU's turns come one at a time: the one before ended
    for turn in turns:
        before = last_end.get(turn.gpu)
        if turn.end - turn.start < 0.7 and before is not None and turn.start - before <= 0.05:
            short += 1
        last_end[turn.gpu] = turn.end
    return len(again), sum(count - 1 for count in again), short


def grade_pass(kit: Kit, name: str, options: GradeOptions, students: list[SyntheticStudent]) -> Pass:
    by_id = {student.student_id: student for student in students}
    jobs = [
        (student.student_id, partial(submission_from_files, student.student_id, student.files, kit))
        for student in students
    ]
    progress = PlainProgress(stages=False)
    with Engine(kit, options, progress) as engine:
        harness = engine.harness()  # outside the timed part: built once per run, reused by every pass
        counted_by = loads_counted_by(harness.build_dir, options.load_counter)
        progress.log(f"pass {name}:")
        progress.start(len(jobs), 0)  # a line per student graded, and what runs every 30 s
        finished: list[float] = []
        every_lab = {lab.id for student in students for lab in student.labs}
        finished_full: list[float] = []

        def done(score: SubmissionScore) -> None:
            finished.append(time.monotonic())
            if {lab.id for lab in by_id[score.student_id].labs} == every_lab:
                finished_full.append(finished[-1])
            progress.finished(
                score.student_id, f"{format_points(score.points)}/{format_points(score.max_points)}"
            )

        try:
            with UsageSampler() as sampler:
                start = sampler.started
                scores = engine.grade_all(jobs, done=done, labs_for=lambda student_id: by_id[student_id].labs)
                wall = time.monotonic() - start
        finally:
            progress.close()
        return Pass(
            name=name,
            wall=wall,
            student_labs=sum(len(student.labs) for student in students),
            harness=engine.timings["harness"],
            loads_counted_by=counted_by,
            build=engine.timings["build"],
            test_processes=engine.timings["test_processes"],
            compiled=engine.cache.compiled,
            linked=engine.cache.linked,
            most_at_once=dict(engine.scheduler.stats.most_at_once),
            windows=engine.scheduler.stats.started.get("window", 0),
            profiler_turns=engine.scheduler.stats.started.get("profiler", 0),
            first_report=min(finished, default=start + wall) - start,
            first_full_report=min(finished_full) - start if finished_full else None,
            window_seconds=engine.scheduler.stats.window_seconds,
            parked_seconds=engine.scheduler.stats.parked_seconds,
            spans=[
                replace(span, start=span.start - start, end=span.end - start)
                for span in engine.scheduler.stats.spans
                if span.end >= start
            ],
            scores=scores,
            usage=sampler.usage(),
        )


def score_differences(a: dict[str, SubmissionScore], b: dict[str, SubmissionScore]) -> list[str]:
    """Every test whose points differ between two passes, as lines."""
    # Alike in shape only to the case loop of the hostile-submissions test in tests/test_hostile.py:
    # both walk scores by student and lab, but this one compares two passes and that one a case's verdict.
    lines = []
    for student_id, score in a.items():
        other = b.get(student_id)
        if other is None:
            lines.append(f"{student_id}: graded in one pass only")
            continue
        for lab, other_lab in zip(score.labs, other.labs, strict=True):
            for test, other_test in zip(lab.tests, other_lab.tests, strict=True):
                if test.points != other_test.points:
                    lines.append(
                        f"{student_id} lab{lab.lab_id} {test.name!r}: {format_points(test.points)} vs "
                        f"{format_points(other_test.points)} ({test.status} vs {other_test.status}; "
                        f"{test.metrics or ''} vs {other_test.metrics or ''})"
                    )
    return lines


def slowest_tests(scores: dict[str, SubmissionScore], most: int = 10) -> list[tuple[str, float, int]]:
    """(lab and test name, seconds summed over submissions, runs), the costliest first."""
    totals: dict[str, list[float]] = {}
    for score in scores.values():
        for lab in score.labs:
            for test in lab.tests:
                if test.status is not Status.NOT_BUILT:
                    totals.setdefault(f"lab{lab.lab_id}: {test.name}", []).append(test.duration)
    ranked = sorted(
        ((name, sum(times), len(times)) for name, times in totals.items()), key=lambda row: -row[1]
    )
    return ranked[:most]


@dataclass(frozen=True)
class CudaStarts:
    """The processes the judges of a pass started for CUDA work (kit/process_log.hpp), by kind and
    by test: a node starts CUDA processes largely one after another whatever its GPUs
    (bench/RESULTS.md, "Every GPU of a node"), so they bound the rate. A worker counts when it is
    started (one serving host calls alone never starts CUDA). Only settled outcomes carry counts:
    a group's run whose case ran again alone, the crashed or timed-out case of a group, and a run
    tried again after running out of memory are not counted, nor chart programs."""

    by_kind: dict[str, int]
    by_test: list[tuple[str, int, dict[str, int]]]  # (lab and test, processes, by kind), most first
    student_labs: int
    workers_without_cuda: int = 0  # workers that served host calls alone: not in the counts

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def summary(self) -> str:
        kinds = ", ".join(
            f"{kind} {count}" for kind, count in sorted(self.by_kind.items(), key=lambda kv: -kv[1])
        )
        per = self.total / self.student_labs if self.student_labs else 0.0
        besides = (
            f"; besides, {self.workers_without_cuda} workers that never started CUDA"
            if self.workers_without_cuda
            else ""
        )
        return f"{self.total} in all, {per:.1f} a student-lab ({kinds or 'none logged'}){besides}"

    def by_test_json(self) -> list[dict]:
        """Every test's starts, the most first, for bench.json: a pass prints only the first eight,
        and the next process to save may be further down."""
        return [{"test": name, "count": count, "kinds": kinds} for name, count, kinds in self.by_test]


# What a judge logs of a worker it stops that never started CUDA (kit/process_log.hpp): the
# worker was logged at its start too, so it comes off its kind's count here.
WITHOUT_CUDA = " without CUDA"


def _cuda_kinds(logged: dict[str, int]) -> tuple[dict[str, int], int]:
    """A test's logged kinds as CUDA starts by kind, and the workers that never started CUDA."""
    kinds = {kind: count for kind, count in logged.items() if not kind.endswith(WITHOUT_CUDA)}
    without = 0
    for kind, count in logged.items():
        if kind.endswith(WITHOUT_CUDA):
            base = kind[: -len(WITHOUT_CUDA)]
            taken = min(count, kinds.get(base, 0))
            kinds[base] = kinds.get(base, 0) - taken
            without += taken
    return {kind: count for kind, count in kinds.items() if count > 0}, without


def cuda_starts(scores: dict[str, SubmissionScore], student_labs: int) -> CudaStarts:
    by_kind: dict[str, int] = {}
    by_test: dict[str, dict[str, int]] = {}
    without_cuda = 0
    for score in scores.values():
        for lab in score.labs:
            for test in lab.tests:
                started, without = _cuda_kinds(test.processes)
                without_cuda += without
                for kind, count in started.items():
                    by_kind[kind] = by_kind.get(kind, 0) + count
                    kinds = by_test.setdefault(f"lab{lab.lab_id}: {test.name}", {})
                    kinds[kind] = kinds.get(kind, 0) + count
    ranked = sorted(((name, sum(k.values()), k) for name, k in by_test.items()), key=lambda row: -row[1])
    return CudaStarts(by_kind, ranked, student_labs, without_cuda)


def longest_runs(spans: list[Span], most: int = 8) -> list[tuple[float, str]]:
    """(seconds, 'student: test') of the test processes that ran longest, not counting the time
    they were parked for a window or a profiler turn, the longest first: one that runs for many
    seconds (a sanitizer's run of a racy kernel) slows every process beside it on its GPU, and the
    sums of slowest_tests hide which submission it was. Only jobs the engine named a submission
    for (Span.who): not the harness's build."""
    parked: dict[tuple[str, str | None], list[Span]] = {}
    for span in spans:
        if span.kind == "parked" and span.who is not None:
            parked.setdefault((span.who, span.key), []).append(span)
    runs = []
    for span in spans:
        if span.kind not in ("gpu", "cpu") or span.who is None or span.key is None:
            continue
        waits = parked.get((span.who, span.key), [])
        waited = sum(w.end - w.start for w in waits if w.start >= span.start and w.end <= span.end)
        runs.append((span.end - span.start - waited, f"{span.who}: {span.key}"))
    return sorted(runs, key=lambda run: -run[0])[:most]


@dataclass(frozen=True)
class LabStretch:
    """One lab's tests in a pass: how many student-labs ran them, from the first test's start to
    the last one's end, each student-lab's own stretch (its first test to its last) at the
    median, and the profiler turns its tests held. In a class graded lab after lab (the sample
    class, or a course graded a lab at a time) it says which lab bounds the rate, and why."""

    lab: str
    student_labs: int
    first: float
    last: float
    median_stretch: float
    turns: int
    turn_seconds: float

    @property
    def per_minute(self) -> float:
        return 60.0 * self.student_labs / (self.last - self.first) if self.last > self.first else 0.0


def lab_stretches(spans: list[Span]) -> list[LabStretch]:
    """LabStretch for each lab whose test processes the spans hold (keys "labNN_tests/...")."""
    runs: dict[str, dict[str, list[float]]] = {}  # lab -> submission -> [first start, last end]
    turns: dict[str, list[float]] = {}
    for span in spans:
        if span.key is None or span.who is None or "/" not in span.key:
            continue
        lab = span.key.split("/", 1)[0].removesuffix("_tests")
        if span.kind == "profiler":
            turns.setdefault(lab, []).append(span.end - span.start)
        if span.kind not in ("gpu", "cpu"):
            continue
        stretch = runs.setdefault(lab, {}).setdefault(span.who, [span.start, span.end])
        stretch[0], stretch[1] = min(stretch[0], span.start), max(stretch[1], span.end)
    stretches = []
    for lab in sorted(runs):
        each = runs[lab].values()
        stretches.append(
            LabStretch(
                lab,
                len(each),
                min(first for first, _ in each),
                max(last for _, last in each),
                statistics.median(last - first for first, last in each),
                len(turns.get(lab, [])),
                sum(turns.get(lab, [])),
            )
        )
    return stretches


def format_passes(passes: list[Pass]) -> str:
    header = (
        "pass",
        "student-labs",
        "wall s",
        "per minute",
        "build s",
        "test processes s",
        "compiles",
        "links",
        "most at once",
    )
    rows = [
        (
            p.name,
            str(p.student_labs),
            f"{p.wall:.1f}",
            f"{p.per_minute:.1f}",
            f"{p.build:.1f}",
            f"{p.test_processes:.1f}",
            str(p.compiled),
            str(p.linked),
            " ".join(f"{key}={value}" for key, value in sorted(p.most_at_once.items())),
        )
        for p in passes
    ]
    return text_table(header, rows)


def run_bench(
    kit: Kit,
    options: GradeOptions,
    copies: int,
    serial: bool,
    repeat: int,
    only: list[str] | None,
    out: Path | None,
    each_alone: bool = False,
    also_gpus: tuple[str, ...] | None = None,
    whole_students: int = 0,
) -> int:
    """`each_alone` (with `serial` off): the pass the engine's is compared with grades with the
    engine's slots, each test in a process of its own: the serial pass's scores, sooner.
    `also_gpus`: one more engine pass on these GPUs alone (e.g. one of a node's four), after the
    engine's, to which its rate and scores are compared: the scaling over GPUs in one run.
    `whole_students`: grade that many students who each hand in every lab instead of the sample
    class's copies (whole_students_class)."""
    if whole_students > 0:
        students = whole_students_class(kit, options.labs, whole_students)
        made = "students, each on every lab"
    else:
        students = synthetic_class(kit, options.labs, copies, only)
        made = f"synthetic students ({copies} copies)"
    print(
        f"grader bench: {len(students)} {made}, "
        f"{sum(len(s.labs) for s in students)} student-labs, labs {', '.join(lab.id for lab in options.labs)}"
    )
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as work:
        options = replace(options, work_root=Path(work))
        passes = []
        alone = replace(options.run, tests_per_process=1)
        if serial:
            one_at_a_time = replace(options, cpu_slots=1, gpu_slots=1, in_flight=1, run=alone)
            passes.append(grade_pass(kit, "serial", one_at_a_time, students))
        elif each_alone:
            passes.append(grade_pass(kit, "each test alone", replace(options, run=alone), students))
        passes.append(grade_pass(kit, "engine", options, students))
        print(_pass_line(passes[-1], None), flush=True)
        fewer = None
        if also_gpus is not None:
            fewer = grade_pass(
                kit, f"engine on GPU {','.join(also_gpus)}", replace(options, gpus=also_gpus), students
            )
            print(_pass_line(fewer, passes[-1]), flush=True)
        repeats = []
        for i in range(1, repeat + 1):
            repeats.append(grade_pass(kit, f"engine again ({i})", options, students))
            print(_pass_line(repeats[-1], passes[-1]), flush=True)
    engine = passes[-1]
    every_pass = passes + ([fewer] if fewer else []) + repeats
    print("\n" + format_passes(every_pass))
    print(f"\nharness (configure and build once per run): {engine.harness:.1f} s")
    print(f"global loads of labs 03-05 counted by {engine.loads_counted_by}")
    print(
        f"measuring windows (a GPU alone): {engine.windows}, open {engine.window_seconds:.1f} s in all; "
        f"processes waited {engine.parked_seconds:.1f} s in all for them and for profiler turns "
        f"({engine.profiler_turns} turns)"
    )
    turns, busiest = engine.profiler_seconds
    if engine.profiler_turns:
        print(
            f"profiler turns (one at a time on a GPU): {turns:.1f} s in all; the busiest GPU's took "
            f"{busiest:.1f} s of the {engine.wall:.1f} s pass ({100 * busiest / engine.wall:.0f} %)"
        )
        for key, count, median, longest in profiler_turns_by_test(engine.spans):
            print(f"  {count:3d} turns, median {median:.2f} s, longest {longest:.2f} s: {key}")
        quiet, beside = turns_beside_starts(engine.spans)
        print(
            "  turns with no test process starting on their GPU near their start: "
            f"{_count_and_median(quiet)}; with one or more: {_count_and_median(beside)}"
        )
        processes, extra, short = repeated_turns(engine.spans)
        print(
            f"  test processes that took more than one turn: {processes} ({extra} turns past their "
            f"first); turns under 0.7 s that began as another ended: {short}"
        )
    print(
        f"GPU idle (no test process running, no window open): {engine.timeline.gpu_idle_seconds:.1f} s "
        f"of {engine.wall:.1f} s; GPU test processes running: {engine.timeline.mean_gpu_running:.1f} "
        "on average"
    )
    if engine.usage is not None:
        print(f"machine load (engine pass): {engine.usage.summary()}")
    print("\nby lab (engine pass): from its first test to its last, and a student-lab's own stretch")
    for lab in lab_stretches(engine.spans):
        print(
            f"  {lab.lab}: {lab.student_labs} student-labs, {lab.first:.0f}-{lab.last:.0f} s "
            f"({lab.per_minute:.1f} a minute over it), each {lab.median_stretch:.1f} s at the median; "
            f"profiler turns {lab.turns}, {lab.turn_seconds:.1f} s"
        )
    print("where the test processes' time went (engine pass, summed over submissions):")
    for name, seconds, count in slowest_tests(engine.scores):
        print(f"  {seconds:7.1f} s  {count:3d} runs  {name}")
    print("the test processes that ran longest, parked time left out (engine pass):")
    for seconds, run in longest_runs(engine.spans):
        print(f"  {seconds:7.1f} s  {run}")
    starts = cuda_starts(engine.scores, engine.student_labs)
    print(f"processes the judges started for CUDA work (engine pass): {starts.summary()}")
    for name, count, kinds in starts.by_test[:8]:
        detail = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
        print(f"  {count:5d}  {name} ({detail})")
    report: dict = {
        "passes": [_pass_json(p) for p in every_pass],
        # How the tests ran, so that benches compared later (scripts/bench_against.py) say it.
        "settings": {
            "exclusive_windows": options.exclusive_windows,
            "quiet_windows": options.quiet_windows,
            "turn_slots": options.turn_slots,
            "max_defer": options.max_defer,
            "load_counter": options.load_counter,
            "modes_together": options.modes_together,
            "in_flight": options.in_flight,  # None: the engine's own, the CPU slots, at most 16 a GPU
        },
    }
    if fewer is not None:
        scaling, differences = _compared(fewer, engine)
        print(
            f"the engine pass against the pass on GPU {','.join(also_gpus or ())}: {scaling:.2f}x the rate; "
            f"scores identical: {'yes' if not differences else 'NO'}"
        )
        _print_differences(differences)
        report["scaling"] = {
            "gpus": list(also_gpus or ()),
            "speedup": round(scaling, 3),
            "identical": not differences,
        }
    if serial or each_alone:
        baseline = "serial grading" if serial else "grading each test alone"
        speedup, differences = _compared(passes[0], engine)
        print(f"engine speed-up over {baseline}: {speedup:.2f}x")
        print(f"scores identical to {baseline}: {'yes' if not differences else 'NO'}")
        _print_differences(differences)
        report["identical_to_serial" if serial else "identical_to_each_test_alone"] = not differences
        report["differences"] = differences
    if repeats:
        unstable = sorted(
            {line.split(" ", 1)[0] for r in repeats for line in score_differences(engine.scores, r.scores)}
        )
        print(
            f"the same {len(students)} submissions graded {repeat + 1} times: "
            + (
                "every score the same every time"
                if not unstable
                else f"{len(unstable)} changed: {', '.join(unstable)}"
            )
        )
        for r in repeats:
            for line in score_differences(engine.scores, r.scores):
                print(f"  {r.name}: {line}")
        report["unstable"] = unstable
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nfigures in {out / 'bench.json'}")
        for p in every_pass:
            (out / f"timeline-{_file_name(p.name)}.json").write_text(
                json.dumps([asdict(span) for span in p.spans]) + "\n", encoding="utf-8"
            )
            chart = out / f"timeline-{_file_name(p.name)}.png"
            why_not = plot_timeline(p.timeline, f"{p.name} pass", chart, p.usage)
            print(why_not or f"timeline of the {p.name} pass in {chart}")
    return 0


def _compared(baseline: Pass, engine: Pass) -> tuple[float, list[str]]:
    """How many times the baseline's wall time the engine pass took less, and every test whose
    points differ between them."""
    return (baseline.wall / engine.wall if engine.wall else 0.0), score_differences(
        baseline.scores, engine.scores
    )


def _print_differences(differences: list[str]) -> None:
    for line in differences:
        print(f"  differs: {line}")


def _pass_line(p: Pass, first: Pass | None) -> str:
    """A line as each pass ends, so that a run cut short still tells what it measured."""
    line = f"pass done: {p.name}: {p.student_labs} student-labs in {p.wall:.1f} s"
    line += f" ({p.per_minute:.1f} per minute, the first report after {p.first_report:.1f} s"
    if p.first_full_report is not None:
        line += f", the first of a submission with every lab after {p.first_full_report:.1f} s"
    line += ")"
    if first is not None:
        same = not score_differences(first.scores, p.scores)
        line += f"; scores {'the same as' if same else 'DIFFERENT from'} the first engine pass"
    return line


def _count_and_median(seconds: list[float]) -> str:
    return f"{len(seconds)}, median {statistics.median(seconds):.2f} s" if seconds else "none"


def _file_name(pass_name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in pass_name).strip("-").replace("--", "-")


def _pass_json(p: Pass) -> dict:
    starts = cuda_starts(p.scores, p.student_labs)
    return {
        "name": p.name,
        "student_labs": p.student_labs,
        "wall_s": round(p.wall, 2),
        "student_labs_per_minute": round(p.per_minute, 2),
        "first_report_s": round(p.first_report, 2),
        "first_full_report_s": round(p.first_full_report, 2) if p.first_full_report is not None else None,
        "loads_counted_by": p.loads_counted_by,
        "build_s": round(p.build, 2),
        "test_processes_s": round(p.test_processes, 2),
        "compiles": p.compiled,
        "links": p.linked,
        "most_at_once": p.most_at_once,
        "windows": p.windows,
        "profiler_turns": p.profiler_turns,
        "profiler_s": round(p.profiler_seconds[0], 2),
        "profiler_busiest_gpu_s": round(p.profiler_seconds[1], 2),
        "window_s": round(p.window_seconds, 2),
        "parked_s": round(p.parked_seconds, 2),
        "gpu_idle_s": round(p.timeline.gpu_idle_seconds, 2),
        "mean_gpu_running": round(p.timeline.mean_gpu_running, 2),
        "usage": p.usage.as_json() if p.usage is not None else None,
        "cuda_processes": starts.by_kind,
        "cuda_processes_by_test": starts.by_test_json(),
        "workers_without_cuda": starts.workers_without_cuda,
        "totals": {student_id: score.points for student_id, score in p.scores.items()},
        # Each test's points and status, so that a total that moved between two benches
        # (scripts/bench_against.py) says which test moved it.
        "tests": {student_id: _test_points(score) for student_id, score in p.scores.items()},
    }


def _test_points(score: SubmissionScore) -> dict[str, dict]:
    points: dict[str, dict] = {}
    for lab in score.labs:
        for test in lab.tests:
            entry: dict = {"points": test.points, "status": str(test.status)}
            if not test.full_marks:
                entry["why"] = _why(test)
            # The CUDA processes the test's judge started, by kind, so that a cut in them is seen
            # per test and per mistake, not only in the pass's sum.
            started, _ = _cuda_kinds(test.processes)
            if started:
                entry["processes"] = started
            points[f"lab{lab.lab_id} {test.name}"] = entry
    return points


def _why(test: TestScore) -> str:
    """The first line of what a test that lost points reported, cut at 240 characters: enough to
    tell a student's mistake from a machine's trouble when a total moves between two benches (a
    pass in which the GPU stalled failed tests that pass in every other)."""
    for text in test.reasons + test.details:
        line = next((line.strip() for line in text.splitlines() if line.strip()), "")
        if line:
            return line if len(line) <= 240 else line[:239] + "…"
    return ""
