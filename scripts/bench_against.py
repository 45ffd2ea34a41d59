#!/usr/bin/env python3
"""The grader's speed and scores against an earlier version of the kit, on this machine, in one
command: `make grade-bench-against REV=d1f6efa [LABS=02,03]`.

Unpacks the kit at REV (git archive) into a temporary folder, runs its engine's bench there, then
this checkout's, each with `--no-serial` and the same labs, and prints both rates, their ratio
and every sample student whose total differs. Both benches must run on the same machine for the
ratio to mean anything (a GPU of the same kind elsewhere differs by more than the changes do).

REV may also be the earlier kit itself, as a folder or a .tar.gz of one (`git archive REV | gzip`
made where the history is), for a machine whose checkout has no git history.

`--head-args` gives this checkout's bench more arguments: with REV `.` (this checkout, copied),
it compares a setting of the engine with its default on the same start, e.g.
`scripts/bench_against.py . --labs 03,04,05 --head-args="--turn-slots 4"` (with `=`: a value
that starts with a dash is otherwise taken for an option of this script's).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def engine_pass(bench_json: Path) -> dict:
    passes = json.loads(bench_json.read_text(encoding="utf-8"))["passes"]
    return next(p for p in passes if p["name"] == "engine")


def compare(base: dict, head: dict, base_name: str) -> list[str]:
    """Lines saying how the head's engine pass compares with the base's."""
    ratio = head["student_labs_per_minute"] / base["student_labs_per_minute"]
    lines = [
        f"{base_name}: {base['student_labs']} student-labs, {base['student_labs_per_minute']:.1f} a minute",
        f"this checkout: {head['student_labs']} student-labs, {head['student_labs_per_minute']:.1f} a minute",
        f"rate: {ratio:.2f} of {base_name}'s ({(ratio - 1) * 100:+.0f} %)",
    ]
    common = sorted(set(base["totals"]) & set(head["totals"]))
    differ = [name for name in common if abs(base["totals"][name] - head["totals"][name]) > 1e-9]
    lines.append(f"scores: {len(common) - len(differ)} of {len(common)} sample students' totals identical")
    for name in differ:
        lines.append(f"  {name}: {base['totals'][name]:g} -> {head['totals'][name]:g}")
        lines += [f"    {line}" for line in moved_tests(base.get("tests", {}), head.get("tests", {}), name)]
    only = sorted(set(base["totals"]) ^ set(head["totals"]))
    if only:
        lines.append(f"  in one of the two only (a mutant added or removed): {', '.join(only)}")
    return lines


def moved_tests(base: dict, head: dict, name: str) -> list[str]:
    """The tests whose points differ for one student, where both benches kept each test's points
    (a bench before they did keeps only totals)."""
    if name not in base or name not in head:
        return []
    lines = []
    for test in sorted(set(base[name]) | set(head[name])):
        a, b = base[name].get(test), head[name].get(test)
        if a is None or b is None:
            lines.append(f"{test}: in one of the two only")
        elif abs(a["points"] - b["points"]) > 1e-9:
            lines.append(f"{test}: {a['points']:g} ({a['status']}) -> {b['points']:g} ({b['status']})")
            # What the side that lost points reported (benches since it is kept), so that a
            # machine's trouble is told from a change of the kit without another run.
            lower, side = (a, "base") if a["points"] < b["points"] else (b, "head")
            if lower.get("why"):
                lines.append(f"  {side}: {lower['why']}")
    return lines


def bench(kit: Path, out: Path, labs: str | None, more: list[str] | None = None) -> Path:
    command = [sys.executable, "-m", "grader", "bench", "--no-serial", "--out", str(out)]
    command += ["--labs", labs] if labs else []
    command += more or []
    print(f"== bench in {kit}", flush=True)
    subprocess.run(command, cwd=kit, check=True)
    return out / "bench.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "rev",
        help="the earlier version: a commit, tag or branch of this checkout, or a kit's folder or .tar.gz",
    )
    parser.add_argument("--labs", help="comma-separated labs (default: all)")
    parser.add_argument("--out", type=Path, help="keep both bench.json files here")
    parser.add_argument(
        "--head-args",
        default="",
        help='more arguments for this checkout\'s bench, given with "=": --head-args="--turn-slots 4"',
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kit-bench-base-") as scratch:
        base_kit = Path(scratch) / "kit"
        problem = unpack_base(args.rev, base_kit)
        if problem:
            print(f"bench_against: {problem}", file=sys.stderr)
            return 2
        out = args.out or Path(scratch) / "out"
        base = engine_pass(bench(base_kit, out / "base", args.labs))
        head = engine_pass(bench(ROOT, out / "head", args.labs, shlex.split(args.head_args)))
    print("\n".join(compare(base, head, args.rev)))
    return 0


def unpack_base(rev: str, base_kit: Path) -> str:
    """The earlier kit into `base_kit` (which must not exist), or why it could not be."""
    given = Path(rev)
    if given.is_dir():
        if not (given / "grader" / "__main__.py").is_file():
            return f"{rev} is a folder but not a kit (no grader/__main__.py)"
        shutil.copytree(given, base_kit, symlinks=True, ignore=shutil.ignore_patterns("build", ".venv"))
        return ""
    base_kit.mkdir()
    if given.is_file() and rev.endswith((".tar.gz", ".tgz")):
        subprocess.run(["tar", "-xzf", str(given), "-C", str(base_kit)], check=True)
    else:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=False)
        if archive.returncode != 0:
            why = archive.stderr.decode().strip()
            return f"git archive {rev} failed: {why} (name a commit, or a kit's folder or .tar.gz)"
        subprocess.run(["tar", "-x", "-C", str(base_kit)], input=archive.stdout, check=True)
    if not (base_kit / "grader" / "__main__.py").is_file():
        return f"{rev} holds no kit (no grader/__main__.py at its top)"
    return ""


if __name__ == "__main__":
    sys.exit(main())
