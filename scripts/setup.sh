#!/usr/bin/env bash
# Checks the kit's prerequisites and installs what is missing, once: the CUDA compiler,
# CMake >= 3.24, Catch2 >= 3.4 (from the system packages), a Python >= 3.11 for the grader and,
# where the network allows, cuobjdump for lab 01's machine-code test. That is all that grading,
# checking and building need.
#
#   scripts/setup.sh --dev   also what make test and make lint need: a Python that can run the
#                            grader's tests (a local .venv with pytest only when the system Python
#                            lacks it) and, where the network allows, the tools of make lint (ruff
#                            and mypy into that Python, clang-format from the system packages),
#                            which are optional: without them setup only says so.
#
#   scripts/setup.sh --slurm Debian's slurm-wlm and munge, as root, for the one-node Slurm of
#                            scripts/slurm-local.sh (trying make grade SLURM=1 here, and the
#                            grader's tests of it); nothing else.
#
# make grade on a fresh clone does not wait for the developers' tools (about 8 s of pip on the
# 2-core machine). A second run finds its stamp and does nothing. Every failure says what to do.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${KIT_BUILD_DIR:-$root/build}
dev=0
case ${1:-} in
  --dev) dev=1 ;;
  --slurm)
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
      exit 0
    fi
    [[ $(id -u) == 0 ]] || { printf 'setup: error: --slurm installs Debian packages: run it as root\n' >&2; exit 1; }
    mkdir -p "$build"
    if apt-get update -qq >"$build/setup-slurm.log" 2>&1 && env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq slurm-wlm munge >>"$build/setup-slurm.log" 2>&1; then
      printf 'setup: installed slurm-wlm and munge (scripts/slurm-local.sh starts a one-node Slurm)\n'
      exit 0
    fi
    tail -n 5 "$build/setup-slurm.log" >&2
    printf 'setup: error: could not install slurm-wlm and munge (log: %s)\n' "$build/setup-slurm.log" >&2
    exit 1
    ;;
  "") ;;
  *) printf 'setup: error: unknown option %s (scripts/setup.sh [--dev|--slurm])\n' "$1" >&2; exit 2 ;;
esac
stamp=$build/.kit-setup          # the prerequisites
dev_stamp=$build/.kit-setup-dev  # and the developers' tools
python_file=$build/.kit-python
mkdir -p "$build"

key=$(cat "$0" "$root/grader/requirements-dev.txt" 2>/dev/null | cksum | cut -d' ' -f1)
stamped() { [[ -f $1 && $(cat "$1") == "$key" && -f $python_file ]]; }
if stamped "$dev_stamp" || { [[ $dev == 0 ]] && stamped "$stamp"; }; then
  exit 0
fi

say() { printf 'setup: %s\n' "$*"; }
fail() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
  else return 1
  fi
}
version_at_least() {  # version_at_least HAVE WANT
  [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1) == "$2" ]]
}

# 1. The CUDA compiler.
if ! command -v nvcc >/dev/null; then
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    fail "nvcc is not on PATH but /usr/local/cuda/bin/nvcc exists: run 'export PATH=/usr/local/cuda/bin:\$PATH' and try again."
  fi
  fail "nvcc not found: install the CUDA toolkit (12.x or 13.x) and put its bin/ folder on PATH."
fi

# 2. CMake with CUDA as a language and the 'native'-free architecture logic of cmake/.
command -v cmake >/dev/null || fail "cmake not found: install CMake 3.24 or newer (apt-get install cmake, or pip install cmake)."
cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
version_at_least "$cmake_version" 3.24 \
  || fail "CMake $cmake_version is too old: the kit needs 3.24 or newer (pip install cmake gives a current one)."

# 3. Catch2 v3 from the system packages.
find_catch2() {
  local dirs=(/usr/lib/cmake/Catch2 /usr/lib/*/cmake/Catch2 /usr/local/lib/cmake/Catch2
              /usr/local/lib/*/cmake/Catch2 /usr/share/cmake/Catch2) prefix f
  local IFS=:
  for prefix in ${CMAKE_PREFIX_PATH:-}; do dirs+=("$prefix/lib/cmake/Catch2"); done
  for f in "${dirs[@]}"; do
    if [[ -f $f/Catch2ConfigVersion.cmake ]]; then
      sed -n 's/.*set(PACKAGE_VERSION "\([0-9.]*\)").*/\1/p' "$f/Catch2ConfigVersion.cmake" | head -n1
      return 0
    fi
  done
}
catch2_version=$(find_catch2)
if [[ -z $catch2_version ]] || ! version_at_least "$catch2_version" 3.4; then
  say "Catch2 >= 3.4 not found${catch2_version:+ (found $catch2_version)}; installing it from the system packages"
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  command -v apt-get >/dev/null \
    || fail "Catch2 3.4 or newer is missing and this is not a Debian/Ubuntu system: install Catch2 v3 and set CMAKE_PREFIX_PATH to its prefix."
  install_ok=1
  apt_log=$build/setup-apt.log
  if [[ $codename == bookworm ]]; then
    # Debian 12 has Catch2 v3 only in bookworm-backports.
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo 'deb http://deb.debian.org/debian bookworm-backports main' \
        | as_root tee /etc/apt/sources.list.d/kit-bookworm-backports.list >/dev/null || install_ok=0
    fi
    [[ $install_ok == 1 ]] && as_root apt-get update -qq >"$apt_log" 2>&1 && \
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports catch2 \
        >>"$apt_log" 2>&1 || install_ok=0
  else
    as_root apt-get update -qq >"$apt_log" 2>&1 && \
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq catch2 >>"$apt_log" 2>&1 \
      || install_ok=0
  fi
  catch2_version=$(find_catch2)
  if [[ $install_ok != 1 || -z $catch2_version ]] || ! version_at_least "$catch2_version" 3.4; then
    [[ -f $apt_log ]] && tail -n 5 "$apt_log" >&2
    fail "could not install Catch2 >= 3.4 (log: $apt_log). As root run: apt-get install catch2 (on Debian 12 first add bookworm-backports and use apt-get install -t bookworm-backports catch2)."
  fi
fi
say "Catch2 $catch2_version"

# 4. Python for the grader (standard library only) and, with --dev, its tests (pytest, and
#    pytest-xdist, with which make test runs them in several processes).
lint_pattern='^(ruff|mypy)=='  # the lines of grader/requirements-dev.txt for make lint: step 5
python=python3
command -v python3 >/dev/null || fail "python3 not found: install Python 3.11 or newer."
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || fail "$(python3 --version) is too old: the grader needs Python 3.11 or newer (for tomllib)."
if [[ $dev == 1 ]] && ! python3 -c 'import pytest, xdist' 2>/dev/null; then
  venv=$root/.venv
  python=$venv/bin/python
  if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import pytest, xdist, markdown, pygments, jinja2' 2>/dev/null; then
    say "the grader's test packages are not all importable; installing grader/requirements-dev.txt into $venv"
    if ! { python3 -m venv "$venv" \
      && grep -vE "$lint_pattern" "$root/grader/requirements-dev.txt" | "$venv/bin/python" -m pip install -q --retries 1 --timeout 15 -r /dev/stdin; }; then
      # Offline (the GPU image): the system's pytest, where it has one, runs the suite in one process.
      python3 -c 'import pytest' 2>/dev/null \
        || fail "could not install grader/requirements-dev.txt into $venv: check the network or pip install pytest yourself."
      say "note: could not install grader/requirements-dev.txt into $venv; the system's pytest runs the tests, in one process"
      python=python3
    fi
  fi
fi
command -v "$python" >/dev/null || [[ -x $python ]] || fail "no usable Python found"
say "Python: $python"
"$python" -c 'import jinja2' 2>/dev/null \
  || say "note: Jinja2 is not installed for $python: make grade writes no feedback.html or dashboard.html (pip install jinja2)"

# 5. With --dev, make lint's tools, optional: ruff and mypy at grader/requirements-dev.txt's
# pins, in the Python that runs pytest (the .venv above too), and clang-format from the system
# packages. An offline machine (the GPU image) goes on without them; make lint says what it
# skipped.
if [[ $dev == 1 ]]; then
  lint_pins=$(grep -E "$lint_pattern" "$root/grader/requirements-dev.txt" | paste -sd ' ' -)
  has_pins='import sys
from importlib.metadata import version
sys.exit(any(version(name) != want for name, want in (pin.split("==") for pin in sys.argv[1:])))'
  # shellcheck disable=SC2086 # $lint_pins: one word per pin
  if ! "$python" -c "$has_pins" $lint_pins 2>/dev/null; then
    if "$python" -m pip install -q --disable-pip-version-check --retries 1 --timeout 20 $lint_pins \
      >"$build/setup-pip.log" 2>&1; then
      say "installed $lint_pins for make lint"
    else
      say "note: could not install $lint_pins for make lint (offline, or a Python pip may not change; $build/setup-pip.log): make lint skips them"
    fi
  fi
  if ! command -v clang-format >/dev/null; then
    apt_log=$build/setup-apt.log
    apt_quick=(-o Acquire::Retries=0 -o Acquire::http::Timeout=20)
    if command -v apt-get >/dev/null && as_root apt-get "${apt_quick[@]}" update -qq >"$apt_log" 2>&1 \
      && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-format >>"$apt_log" 2>&1; then
      say "installed clang-format for make lint"
    else
      say "note: could not install clang-format for make lint (no apt, no root, or offline; $apt_log): make lint skips the C++ style"
    fi
  fi
fi

# 6. cuobjdump, optional: lab 01's machine-code test reads the compiled kernels with it and needs
# no GPU, so it runs in CI too. The toolkit's bin/ has it where the toolkit is complete; where it
# is not (nvcc alone), NVIDIA's pip wheels bring it into the kit's .venv
# (site-packages/nvidia/cu13/bin/cuobjdump, found there by the test). Without it the test SKIPs.
cuobjdump_pins="nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37"
cuda_bin=$(dirname "$(command -v nvcc)")
wheel_cuobjdump() { compgen -G "$root/.venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump" >/dev/null; }
if ! command -v cuobjdump >/dev/null && [[ ! -x $cuda_bin/cuobjdump ]] && ! wheel_cuobjdump; then
  venv=$root/.venv
  pip_log=$build/setup-pip-cuobjdump.log
  # shellcheck disable=SC2086 # $cuobjdump_pins: one word per pin
  if { [[ -x $venv/bin/python ]] || python3 -m venv "$venv" >"$pip_log" 2>&1; } \
    && "$venv/bin/python" -m pip install -q --disable-pip-version-check --retries 1 --timeout 20 \
      $cuobjdump_pins >>"$pip_log" 2>&1 && wheel_cuobjdump; then
    say "installed cuobjdump ($cuobjdump_pins) into $venv for lab 01's machine-code test"
  else
    say "note: no cuobjdump in $cuda_bin and could not install it into $venv (offline, or no venv module; $pip_log): lab 01's machine-code test skips"
  fi
fi

# 7. The Compute Sanitizer API, optional: the kit's load counter (common/load_counter/) is built
# with it, and the locality tests of labs 03-05 then count global loads with it, over the kernel
# launched by the kit alone, instead of Nsight Compute (docs/design/tests.md, "The load counter");
# its CPU tests run in CI. The toolkit has it in
# compute-sanitizer/include where it is complete; where it is not, NVIDIA's pip wheel brings the
# headers and the library into the kit's .venv (site-packages/nvidia/cu13/{include,lib}, found
# there by CMake). Without it the counter is not built, and Nsight Compute counts the loads.
# The wheel is CUDA 13's: on an older toolkit (and its driver) it is left out.
sanitizer_api_pin="nvidia-cuda-sanitizer-api==13.0.85"
cuda_major=$("$cuda_bin/nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p' | head -1)
wheel_sanitizer_api() { compgen -G "$root/.venv/lib/python3*/site-packages/nvidia/cu*/include/sanitizer.h" >/dev/null; }
if [[ $cuda_major == 13 && ! -f $cuda_bin/../compute-sanitizer/include/sanitizer.h && -z ${KIT_SANITIZER_DIR:-} ]] \
  && ! wheel_sanitizer_api; then
  venv=$root/.venv
  pip_log=$build/setup-pip-sanitizer-api.log
  if { [[ -x $venv/bin/python ]] || python3 -m venv "$venv" >"$pip_log" 2>&1; } \
    && "$venv/bin/python" -m pip install -q --disable-pip-version-check --retries 1 --timeout 20 \
      "$sanitizer_api_pin" >>"$pip_log" 2>&1 && wheel_sanitizer_api; then
    say "installed the Compute Sanitizer API ($sanitizer_api_pin) into $venv for the load counter"
  else
    say "note: no Compute Sanitizer API beside $cuda_bin and could not install it into $venv (offline, or no venv module; $pip_log): the load counter is not built, and the locality tests of labs 03-05 count with Nsight Compute"
  fi
fi

printf '%s\n' "$python" >"$python_file"
printf '%s\n' "$key" >"$stamp"
if [[ $dev == 1 ]]; then
  printf '%s\n' "$key" >"$dev_stamp"
  say "done; later runs skip these checks (delete $dev_stamp to run them again)"
else
  say "done; later runs skip these checks (delete $stamp to run them again; make test and make lint add the developers' tools)"
fi
