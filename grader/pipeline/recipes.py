"""What the harness build leaves for the per-submission build: how each student file compiles,
how each lab executable links, and what else a lab's tests need (their listing, data files,
probe and worker). harness.py makes these from the kit's own build; build.py follows them for
every submission. Plain data: both import it, neither imports the other's workings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..confine.inspect import ObjectTools
from ..rubric import Lab
from .run import ListedTest


@dataclass(frozen=True)
class CompileRecipe:
    name: str  # the student file, "naive_matmul.cu"
    argv: tuple[str, ...]
    cwd: Path
    source: str  # the kit's path of the file in argv; the submission's copy replaces it
    output: str  # the object file in argv; the submission's object replaces it

    def command(self, source: Path, output: Path) -> list[str]:
        command = []
        for arg in self.argv:
            if arg == self.source:
                command.append(str(source))
            else:
                command.append(arg.replace(self.output, str(output)) if self.output in arg else arg)
        return command


@dataclass(frozen=True)
class LinkRecipe:
    executable: str  # "lab02_tests"
    argv: tuple[str, ...]
    cwd: Path
    kernels: str  # the lab's kernel library in argv; the submission's objects replace it
    output: str  # the -o argument

    def command(self, objects: list[Path], output: Path) -> list[str]:
        command: list[str] = []
        for arg in self.argv:
            if arg == self.kernels:
                command += [str(path) for path in objects]
            elif arg == self.output:
                command.append(str(output))
            else:
                command.append(arg)
        return command


@dataclass(frozen=True)
class LabHarness:
    lab: Lab
    compiles: tuple[CompileRecipe, ...] = ()
    links: tuple[LinkRecipe, ...] = ()
    tests: tuple[ListedTest, ...] = ()  # listed by the kit's own executable
    data_files: tuple[tuple[str, str], ...] = ()  # (environment variable, student file name)
    probe: str | None = None  # the executable the tests run under compute-sanitizer
    # A split lab (docs/design/engine.md, "Judge and worker"): the executable built from the
    # student's files, which the tests (the judge, built once here) start and call; None where
    # the tests themselves link the student's files.
    worker: str | None = None
    judge: Path | None = None  # the tests of a split lab: the harness's own, never relinked
    problem: str | None = None  # a kit problem: the lab cannot be graded
    tools: ObjectTools = ObjectTools()  # the toolchain's nm and readelf, to inspect objects
