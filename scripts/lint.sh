#!/usr/bin/env bash
# make lint: the kit's conventions, checked. Every Python file (grader/, scripts/, bench/ and the
# labs' tools and figures; grader/tests/test_repository.py checks that none is left out) with
# ruff (lint and format) and mypy, as pyproject.toml configures them, and the C++ style with
# clang-format once the kit has a .clang-format. A tool that is not installed is skipped with a
# note (setup installs them where it can; the GPU image is offline); every step runs, and the
# exit status is non-zero if any step found a problem.
#   KIT_PYTHON: the interpreter setup chose (build/.kit-python); ruff and mypy are its modules.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${KIT_PYTHON:-python3}
python_paths=(grader scripts bench labs)
# A kit handed out may lack some of them (bench/): check those it has.
present=()
for folder in "${python_paths[@]}"; do [[ -d $folder ]] && present+=("$folder"); done
python_paths=("${present[@]}")
failed=()
skipped=0

say() { printf 'lint: %s\n' "$*"; }
skip() { say "$*"; skipped=$((skipped + 1)); }
pin() { grep -E "^$1==" grader/requirements-dev.txt || echo "$1"; }  # as setup installs it
step() {  # step NAME COMMAND...: runs one check, remembers a failure
  say "$1"
  "${@:2}" || failed+=("$1")
}

for tool in ruff mypy; do
  if ! "$python" -m "$tool" --version >/dev/null 2>&1; then
    skip "$tool not installed, skipped (install with: $python -m pip install $(pin "$tool"))"
  elif [[ $tool == ruff ]]; then
    step "ruff check" "$python" -m ruff check --quiet "${python_paths[@]}"
    step "ruff format --check" "$python" -m ruff format --check --quiet "${python_paths[@]}"
  else
    step "mypy" "$python" -m mypy "${python_paths[@]}"
  fi
done

if [[ ! -f .clang-format ]]; then
  skip "no .clang-format yet, C++ style not checked"
elif ! command -v clang-format >/dev/null; then
  skip "clang-format not installed, skipped (install with: apt-get install clang-format)"
elif ! sources=$(git ls-files '*.cu' '*.cpp' '*.hpp' '*.h' '*.c' 2>/dev/null) || [[ -z $sources ]]; then
  skip "not a git checkout, so no list of the C++ files: C++ style not checked"
else
  mapfile -t cxx_files <<<"$sources"
  step "clang-format --dry-run -Werror (${#cxx_files[@]} files)" clang-format --dry-run -Werror "${cxx_files[@]}"
fi

if ((${#failed[@]})); then
  say "FAILED: $(printf '%s; ' "${failed[@]}" | sed 's/; $//')"
  exit 1
fi
say "clean$( ((skipped)) && echo " ($skipped skipped, above)")"
