// What lab 04's public and hidden tests share: launching the student's kernels, the shapes,
// the diagnosis of a phase loop that stops short, and runs inside guard bands.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "boundary_matmul.h"
#include "kit/compare.hpp"
#include "kit/cuda_check.hpp"
#include "kit/kernel_attributes.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
#include "kit/testing.hpp"

namespace lab04_tests {

// Defined in kernel_attributes_lab04.cpp: the student's kernels as the compiler built them, read
// from the worker's executable.
kit::KernelAttributes square_kernel_attributes(int tile_width);
kit::KernelAttributes rect_kernel_attributes(int tile_width);

// M is I x J, N is J x K, P is I x K.
struct Shape {
  int I, J, K;
};

inline kit::MatmulLaunch square(int width, int tile_width) {
  return kit::WorkerLaunch{[=](const float* d_M, const float* d_N, float* d_P) {
    lab04::launch_tiled_matmul(d_M, d_N, d_P, width, tile_width);
  }};
}

inline kit::MatmulLaunch rect(Shape s, int tile_width) {
  return kit::WorkerLaunch{[=](const float* d_M, const float* d_N, float* d_P) {
    lab04::launch_rect_matmul(d_M, d_N, d_P, s.I, s.J, s.K, tile_width);
  }};
}

inline kit::MatmulProblem make_problem(Shape s, std::uint64_t seed) {
  return kit::make_matmul_problem(s.I, s.J, s.K, seed);
}

// The kernels that handle a shape, named: the rectangular one always, the square one too when
// the shape is square.
inline std::vector<std::pair<const char*, kit::MatmulLaunch>> kernels_for(Shape s, int tile) {
  std::vector<std::pair<const char*, kit::MatmulLaunch>> kernels;
  if (s.I == s.J && s.J == s.K) kernels.push_back({"tiled_matmul_kernel", square(s.I, tile)});
  kernels.push_back({"rect_matmul_kernel", rect(s, tile)});
  return kernels;
}

// The product a kernel computes when its phase loop runs width / TILE_WIDTH times, rounded
// down: the terms of the last, partial phase are missing (all of them when J < TILE_WIDTH).
// Empty when J is a multiple of the tile, where that mistake changes nothing.
inline std::vector<kit::Alternative> phase_mistakes(const kit::MatmulProblem& p, int tile) {
  std::vector<kit::Alternative> mistakes;
  const int full = p.inner / tile * tile;
  if (full == p.inner) return mistakes;
  // The product without the last, partial phase: the reference less the terms k >= full, which
  // costs the phase's terms instead of a whole product (a second of the host's time at width
  // 1025, for each tile width of a wrong result); exactly 0 where no phase ran.
  std::vector<double> truncated = full == 0
                                      ? std::vector<double>(p.ref.value.size(), 0.0)
                                      : kit::without_terms(p.M, p.N, p.ref, p.inner, full, p.inner);
  const int ran = p.inner / tile;
  const std::string what = ran == 0 ? "no phase ran at all" : "the last, partial phase is missing";
  const std::string count = "the phase loop ran floor(" + std::to_string(p.inner) + " / " +
                            std::to_string(tile) + ") = " + std::to_string(ran) +
                            (ran == 1 ? " time" : " times");
  // In a rectangular product the same count may be P's tiles along its columns or rows, and the
  // values cannot tell which of the two loops was written: the hint names both.
  const auto tiles = [tile](int side) { return (side + tile - 1) / tile; };
  const bool square = p.rows == p.inner && p.cols == p.inner;
  const char* side = square                 ? nullptr
                     : ran == tiles(p.cols) ? "columns (K)"
                     : ran == tiles(p.rows) ? "rows (I)"
                                            : nullptr;
  mistakes.push_back(
      {side == nullptr
           ? count + ": " + what +
                 ". Round the number of phases up: (width + TILE_WIDTH - 1) / TILE_WIDTH "
                 "(README section 3)."
           : count + ", which is also the number of P's tiles along its " + side + ": " + what +
                 ". Phases run along J, the inner dimension, rounded up: (J + TILE_WIDTH - 1) / "
                 "TILE_WIDTH (README sections 3 and 5).",
       std::move(truncated)});
  return mistakes;
}

// Runs a launch on poisoned output and compares with the host reference; when the result is
// wrong, tries the phase-count mistake and (for square problems) the usual index mistakes.
inline kit::Comparison check_launch(const kit::MatmulProblem& p, const kit::MatmulLaunch& launch,
                                    int tile) {
  return kit::check_matmul(p, launch, tile,
                           [tile](const kit::MatmulProblem& q) { return phase_mistakes(q, tile); });
}

// Each width gets its own inputs; both tile widths run on them.
inline void check_square_with_both_tiles(int width, std::uint64_t seed) {
  const kit::MatmulProblem problem = kit::make_square_problem(width, seed);
  for (int tile : {16, 32}) {
    CAPTURE(width, tile, problem.seed);
    KIT_CHECK_MATRIX(check_launch(problem, square(width, tile), tile));
  }
}

inline void check_rect_with_both_tiles(Shape s, std::uint64_t seed) {
  const kit::MatmulProblem problem = make_problem(s, seed);
  for (int tile : {16, 32}) {
    CAPTURE(s.I, s.J, s.K, tile, problem.seed);
    KIT_CHECK_MATRIX(check_launch(problem, rect(s, tile), tile));
  }
}

// The shapes the guard-band and memcheck tests use: none a multiple of either tile.
inline std::vector<Shape> guard_shapes() {
  return {{1, 1, 1},   {17, 17, 17}, {33, 33, 33}, {100, 100, 100},
          {17, 33, 5}, {5, 40, 47},  {33, 17, 100}};
}

}  // namespace lab04_tests
