# The kit's front door. Every target first runs scripts/setup.sh, which installs what is
# missing once and is silent afterwards (make test and make lint: with --dev, which adds pytest
# and the lint tools).
#
#   make grade [SUBMISSIONS="class/ alice.zip"] [LABS=02]   grade (default: the sample class)
#   make grade SUBMISSION=path/to/bob                       grade one submission folder on its own
#   make grade ... GRADEBOOK=canvas ROSTER=export.csv       also the LMS's grade import (canvas, moodle, blackboard)
#   make grade SLURM=1 SUBMISSIONS=class/ [TASKS=4 PARTITION=gpu GRES=gpu:1 TIME=02:00:00]
#                                                           grade a class as a Slurm job array (docs/instructors.md)
#   make report OUT=grades/<run> [GRADEBOOK=.. ROSTER=..]   the class files again from the reports in a graded folder
#   make test                                               lint, then build and run every test
#   make lint                                               ruff, mypy and clang-format, where installed
#   make check LAB=02                                       a student checks one lab
#   make validate [LABS=02]                                 reference and mutants, one table
#   make handout                                            regenerate skeletons from solutions/
#   make student-kit [OUT=dir]                              the kit without solutions/, for students
#   make submit LAB=02                                      a student packs a lab's files into the zip to hand in
#   make release [OUT=dir]                                  staff: student-kit.tar.gz and the write-ups as pages
#   make plots LAB=06                                       occupancy charts from your calculator
#   make bench [OUT=dir]                                    staff: reference kernels vs cuBLAS, GFLOP/s
#   make grade-bench [LABS=..] [COPIES=1|WHOLE=N] [REPEAT=0] staff: the grader's own speed, serial vs engine
#   make grade-bench-against REV=d1f6efa [LABS=02]          staff: speed and scores against an earlier kit, here

BUILD ?= build
LAB ?=
LABS ?=
SUBMISSIONS ?=
SUBMISSION ?=
OUT ?=
GRADEBOOK ?=
ROSTER ?=
ROSTER_ID ?=
SLURM ?=
TASKS ?=
PARTITION ?=
GRES ?=
TIME ?=
CMAKE_ARGS ?=
export PATH := $(PATH):/usr/local/cuda/bin

# The interpreter setup chose (python3, or, after setup --dev, .venv/bin/python when python3
# lacks pytest). A recursive variable, so it is read after the setup prerequisite has run.
PY = $(shell cat $(BUILD)/.kit-python 2>/dev/null || echo python3)
GENERATOR = $(if $(shell command -v ninja),-G Ninja,)
labs_arg = $(if $(LABS),--labs $(LABS),)
# make test's pytest in one process more than the CPUs, up to four, where pytest-xdist is
# installed (setup-dev installs it): much of the suite waits on processes it starts (on two
# cores, three processes took 290 s against 322 s for two, one after the other;
# bench/RESULTS.md), and the tests that share the real kit's harness take turns at the GPU
# where there is one (grader/tests/conftest.py). A process is sent one test at a time past its
# first two (--maxschedchunk 1), so that none holds a queue of tests behind a long one while
# the others run out. Elsewhere in one process.
pytest_workers = $(shell $(PY) -c 'import os, xdist; print(f"-n {min((os.cpu_count() or 1) + 1, 4)} --maxschedchunk 1")' 2>/dev/null)
# pytest and the grader processes its tests start keep their compiled bytecode (__pycache__/,
# ignored by git) even where the environment asks Python not to write it: without it every
# pytest process rewrote and compiled each test module again (1.2 s of CPU a process), and each
# `python -m grader` a test runs compiled the grader again (0.17 s each).
keep_bytecode = $(if $(PYTHONDONTWRITEBYTECODE),env -u PYTHONDONTWRITEBYTECODE,)
out_arg = $(if $(OUT),--out $(OUT),)
harness_arg = $(if $(HARNESS),--harness-dir $(HARNESS),) $(if $(filter-out 0,$(HARNESS_BUILT)),--harness-built,)
submission_arg = $(if $(SUBMISSION),--submission $(SUBMISSION),)
# make grade SLURM=1 [TASKS= PARTITION= GRES= TIME=]: the class as a Slurm job array.
slurm_arg = $(if $(SLURM),--slurm $(if $(TASKS),--tasks $(TASKS),) $(if $(PARTITION),--partition $(PARTITION),) \
  $(if $(GRES),--gres $(GRES),) $(if $(TIME),--time $(TIME),),)
# make grade GRADEBOOK=canvas ROSTER=roster.csv [ROSTER_ID="SIS Login ID"]: the LMS's import file too.
gradebook_arg = $(if $(GRADEBOOK),--gradebook $(GRADEBOOK),) $(if $(ROSTER),--roster $(ROSTER),) \
  $(if $(ROSTER_ID),--roster-id "$(ROSTER_ID)",)

.PHONY: help setup setup-dev build lint test check submit grade report grade-bench grade-bench-against validate handout student-kit release plots bench clean

help:
	@sed -n 's/^#   //p' Makefile

setup:
	@KIT_BUILD_DIR=$(abspath $(BUILD)) scripts/setup.sh

# What only make test and make lint need as well: pytest, ruff, mypy and clang-format.
setup-dev:
	@KIT_BUILD_DIR=$(abspath $(BUILD)) scripts/setup.sh --dev

$(BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD) $(GENERATOR) $(CMAKE_ARGS) $(test_cmake_args)

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $$(nproc)

# The Python of grader/ and scripts/ (ruff, mypy; settings in pyproject.toml) and the C++ style
# (clang-format, once there is a .clang-format); a tool that is not installed is skipped with a
# note. make test lints first: it takes seconds, and a convention broken fails CI before the
# minutes of building and testing rather than after them.
lint: setup-dev
	@echo "== lint =="
	@KIT_PYTHON=$(PY) scripts/lint.sh

# make test on a machine without a GPU configures its build for one architecture, sm_75, the
# oldest of the documented list, and without the labs' probes, unless CMAKE_ARGS names either or
# the build folder is configured already: CTest runs no kernel there, CUDA source that compiles
# for sm_75 compiles for every newer architecture (the per-block limits ptxas checks are the same
# or larger), and every test that runs a probe needs a GPU and skips before it would (the
# grader's harness builds its own probes). The seven architectures took more than twice as long
# on the 2-core machine, and the probes about 20 s of its CPU (bench/RESULTS.md, "The kit's own
# tests"). make build keeps the documented list and the probes.
no_gpu := $(if $(shell nvidia-smi -L 2>/dev/null | grep '^GPU '),,yes)
no_gpu_arch = $(if $(no_gpu),$(if $(findstring CMAKE_CUDA_ARCHITECTURES,$(CMAKE_ARGS)),,-DCMAKE_CUDA_ARCHITECTURES=75) $(if $(findstring KIT_PROBES,$(CMAKE_ARGS)),,-DKIT_PROBES=OFF))
# With a GPU, make test builds optimised (Release), as the grader's harness does: the GPU tests'
# host references and checks ran several times slower unoptimised (lab 03's largest correctness
# case 17.6 s in CTest on an H100). Without one, no test is timed and it builds as the grader
# does there: the kit's Untimed build type (-Og; CMakeLists.txt), which compiles sooner on two
# cores.
gpu_build_type = $(if $(findstring CMAKE_BUILD_TYPE,$(CMAKE_ARGS)),,-DCMAKE_BUILD_TYPE=$(if $(no_gpu),Untimed,Release))
test: test_cmake_args = $(no_gpu_arch) $(gpu_build_type)
test: lint build
	@echo "== Catch2 suites (CTest) =="
	cd $(BUILD) && ctest --output-on-failure -j $$(nproc) --output-junit ctest-results.xml
	@$(PY) scripts/ctest_summary.py $(BUILD)/ctest-results.xml
	@if [ -d solutions ]; then echo "== handout in sync with solutions/ =="; $(PY) -m grader handout --check; fi
	@echo "== grader tests (pytest) =="
	KIT_BUILD_DIR=$(abspath $(BUILD)) $(keep_bytecode) $(PY) -m pytest $(pytest_workers) --durations=15 grader scripts/tests $(wildcard bench/tests)

check: setup
	@test -n "$(LAB)" || { echo "make check: say which lab, e.g. make check LAB=02"; exit 2; }
	$(PY) -m grader check --lab $(LAB)

submit: setup
	@test -n "$(LAB)" || { echo "make submit: say which lab, e.g. make submit LAB=02"; exit 2; }
	$(PY) -m grader submit --lab $(LAB)

grade: setup
	$(PY) -m grader grade $(labs_arg) $(out_arg) $(submission_arg) $(gradebook_arg) $(harness_arg) $(slurm_arg) $(SUBMISSIONS)

# make report OUT=grades/run [GRADEBOOK=canvas ROSTER=roster.csv]: the class files again, from the
# reports in OUT (a class graded in parts and copied together, or a new roster).
report: setup
	@test -n "$(OUT)" || { echo "make report: say which graded folder, e.g. make report OUT=grades/20261127-0100"; exit 2; }
	$(PY) -m grader report $(OUT) $(gradebook_arg)

validate: setup
	$(PY) -m grader validate $(labs_arg)

handout: setup
	$(PY) -m grader handout

# Builds the kit first: the release checks every rubric against its tests' listing. Rendering
# the pages needs Python-Markdown and Pygments (setup-dev installs them); the PDFs need Chromium
# (apt-get install chromium), without which the pages are HTML only.
release: setup-dev build
	$(PY) -m grader release --build-dir $(BUILD) $(out_arg)

student-kit: setup
	$(PY) -m grader handout --student-kit $(if $(OUT),$(OUT),$(BUILD)/student-kit)

# The occupancy calculator's three charts, drawn from the lab 06 calculator being built
# (yours in a student kit). Needs matplotlib; without it the script says how to get it.
PLOT_ARGS ?= --preset 9.0 --threads 256 --registers 32 --shared 2048
plots: build
	@test "$(LAB)" = "06" || { echo "make plots: only lab 06 draws charts: make plots LAB=06"; exit 2; }
	cmake --build $(BUILD) --target lab06_curves
	$(PY) labs/06_occupancy/tools/plot_occupancy.py --build $(BUILD) --out $(BUILD)/plots/lab06 $(PLOT_ARGS)

# Staff only (needs solutions/): GFLOP/s of the matrix labs' reference kernels and cuBLAS,
# a plot, and ncu's load counts where ncu exists (bench/README.md).
bench: build
	$(PY) bench/run_bench.py $(if $(OUT),$(OUT),$(BUILD)/bench) --build-dir $(BUILD)

# Staff only: grades a synthetic class serially and with the engine in one run, and prints
# student-labs per minute and whether every score matched (grader/staff/bench.py).
COPIES ?= 1
REV ?=
REPEAT ?= 0
# make grade-bench WHOLE=N: N students who each hand in every lab instead of COPIES of the sample class.
WHOLE ?=
grade-bench: setup
	$(PY) -m grader bench $(labs_arg) $(if $(WHOLE),--whole-students $(WHOLE),--copies $(COPIES)) --repeat $(REPEAT) $(out_arg)

grade-bench-against: setup
	@test -n "$(REV)" || { echo "make grade-bench-against: say which version, e.g. REV=d1f6efa"; exit 2; }
	$(PY) scripts/bench_against.py $(REV) $(labs_arg) $(out_arg)

clean:
	rm -rf $(BUILD)
