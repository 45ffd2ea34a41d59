"""grader/ shows its architecture: packages in layers, imports running one way between them, and
no import cycle between modules (docs/architecture.md draws the layers)."""

from __future__ import annotations

import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parents[1]

# Lower layers never import higher ones; packages of one layer never import each other.
LAYERS: list[set[str]] = [
    {"errors", "escape", "rubric", "progress"},  # the kit's model and the plainest helpers
    {"confine", "engine"},  # starting and bounding processes; scheduling them
    {"pipeline"},  # collect, stage, build, run, score, report
    {"staff", "cluster"},  # validate, mutants, handout, release, pages, bench; Slurm
    {"cli", "cli_slurm", "options", "submit", "__main__"},  # the commands
]


PACKAGES = {"confine", "engine", "pipeline", "staff", "cluster"}


def modules() -> dict[str, Path]:
    """Every module of the grader but its tests, by dotted name under grader."""
    found = {}
    for path in GRADER.rglob("*.py"):
        parts = path.relative_to(GRADER).with_suffix("").parts
        if parts[0] == "tests" or parts == ("__init__",):
            continue
        found[".".join(part for part in parts if part != "__init__")] = path
    return found


def imports(name: str, path: Path) -> set[str]:
    """What a module imports of the grader, type-checking and function-level imports included."""
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            elif node.module and node.module.startswith("grader."):
                target = node.module.removeprefix("grader.")
            else:
                continue
            found.add(target)
        elif isinstance(node, ast.Import):
            found |= {
                alias.name.removeprefix("grader.") for alias in node.names if alias.name.startswith("grader.")
            }
    return {target for target in found if target}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {
        name: {target for target in imports(name, path) if target in known} for name, path in known.items()
    }


def layer(name: str) -> int:
    top = name.split(".")[0]
    return next(index for index, members in enumerate(LAYERS) if top in members)


def test_every_module_belongs_to_a_layer():
    unplaced = [name for name in modules() if not any(name.split(".")[0] in members for members in LAYERS)]
    assert unplaced == [], f"put these in a package of a layer (LAYERS): {unplaced}"


def test_imports_run_one_way_between_the_layers():
    wrong = []
    for name, targets in graph().items():
        for target in targets:
            # One package, or modules of grader/ itself in one layer (rubric raises errors'
            # GraderError; __main__ runs cli, cli runs submit).
            first, other = name.split(".")[0], target.split(".")[0]
            plain = first not in PACKAGES and other not in PACKAGES
            together = first == other or (plain and layer(name) == layer(target))
            if not together and layer(target) >= layer(name):
                wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_no_module_imports_itself_through_others():
    edges = graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_checks_see_the_imports_they_judge():
    # A layering rule that finds no import would pass vacuously.
    edges = graph()
    assert "pipeline.build" in edges["pipeline.harness"]
    assert "confine.sandbox" in edges["pipeline.run"]
    assert "pipeline.recipes" in edges["pipeline.build"]
    assert "engine.schedule" in edges["engine.timeline"]
