// The check-then-measure harness every matrix-multiply lab uses: a problem with seeded inputs
// and its host reference, a run on poisoned device buffers, and a timed comparison.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kit/compare.hpp"
#include "kit/matrix.hpp"
#include "kit/timer.hpp"

namespace kit {

// P (rows x cols) = M (rows x inner) * N (inner x cols), row-major, with its reference.
struct MatmulProblem {
  int rows = 0, inner = 0, cols = 0;
  std::uint64_t seed = 0;
  std::vector<float> M, N;
  MatmulReference ref;
};

MatmulProblem make_matmul_problem(int rows, int inner, int cols, std::uint64_t seed);
inline MatmulProblem make_square_problem(int width, std::uint64_t seed) {
  return make_matmul_problem(width, width, width, seed);
}

// Launches a kernel on device pointers d_M, d_N, d_P (it checks its own launch).
using MatmulLaunch = std::function<void(const float* d_M, const float* d_N, float* d_P)>;

// A launch that is one call of a lab's worker (kit/remote.hpp) and touches its pointers only
// through that call: run_matmul may then hand it the judge's host arrays, staged as device memory
// (kit::remote::StagedArrays), so that the call's copies run in the worker's CUDA context with its
// kernel. A lab's tests make their launches of the student's code with it.
struct WorkerLaunch {
  std::function<void(const float* d_M, const float* d_N, float* d_P)> call;
  void operator()(const float* d_M, const float* d_N, float* d_P) const { call(d_M, d_N, d_P); }
};

// Copies the inputs in, poisons P, launches, synchronises and returns P. A WorkerLaunch in a judge
// gets the inputs and a poisoned P as staged host arrays instead of device buffers.
std::vector<float> run_matmul(const MatmulProblem& problem, const MatmulLaunch& launch);

// A lab's own mistakes, as alternatives for compare_matrix (kit/compare.hpp): the results a
// kernel with each mistake computes on this problem.
using MistakeCatalogue = std::function<std::vector<Alternative>(const MatmulProblem&)>;

// Runs the launch on poisoned output and compares with the reference (tile-shaped diagnoses
// when tile > 0). Only when the result is wrong, since each costs host work, does it try the
// lab's own mistakes, the loop-bound mistakes (matmul_term_mistakes), then for square problems
// the usual index mistakes, to explain why. When none reproduces the values and the shape is
// small enough, it runs the launch again on inputs that say where each term came from
// (kit/term_map.hpp, at most twice a test case) and reports the cause that map proves.
Comparison check_matmul(const MatmulProblem& problem, const MatmulLaunch& launch, int tile = 0,
                        const MistakeCatalogue& lab_mistakes = {});

// The comparison half of check_matmul, for a P the test obtained itself (a host function's
// result): the same diagnoses, tried only when P is wrong.
Comparison compare_with_diagnoses(const std::vector<float>& P, const MatmulProblem& problem,
                                  int tile = 0, const MistakeCatalogue& lab_mistakes = {});

// Times two kernels in this process: candidate's median / baseline's. Every call gets fresh
// random inputs of the problem's shape and a poisoned P, and its result is spot-checked after
// it (kit/timed_matmul.hpp); a wrong one throws std::runtime_error saying which call and where.
// The timing's buffers are made first (in a judge, its CUDA context with them), then each side
// makes one untimed, checked call (a worker's start, its mappings of the buffers), and only then
// does the timing (kit::time_in_turns) ask for the GPU alone: that driver work happens while the
// GPU is shared. `ready`, when given, runs before the timing: a caller that holds the GPU alone
// over several timings takes it there (kit::SpeedComparison), after the first one's start; the
// later ones make their buffers and readying calls inside it.
struct TimeRatio {
  Timing candidate;
  Timing baseline;
  double median_ratio = 0;  // of the candidate's time over the baseline's, turn by turn
  double ratio() const { return median_ratio; }
};
TimeRatio time_ratio(const MatmulProblem& problem, const MatmulLaunch& candidate,
                     const MatmulLaunch& baseline, TimingOptions options = {},
                     const std::function<void()>& ready = {});

// 2 * rows * inner * cols floating-point operations in `ms` milliseconds, in GFLOP/s.
double gflops(const MatmulProblem& problem, double ms);

}  // namespace kit
