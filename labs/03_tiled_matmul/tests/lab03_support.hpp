// What lab 03's public and hidden tests share: launching the student's kernels, the host
// references, and the diagnoses of the mistakes that are particular to tiling.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "kit/compare.hpp"
#include "kit/kernel_attributes.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/testing.hpp"
#include "tiled_matmul.h"

namespace lab03_tests {

// Defined in kernel_attributes_lab03.cpp: the student's tiled_matmul_kernel<tile_width> as the
// compiler built it, read from the worker's executable.
kit::KernelAttributes tiled_kernel_attributes(int tile_width);

inline kit::MatmulLaunch tiled(int width, int tile_width) {
  return kit::WorkerLaunch{[=](const float* d_M, const float* d_N, float* d_P) {
    lab03::launch_tiled_matmul(d_M, d_N, d_P, width, tile_width);
  }};
}

// The matrix with every tile x tile tile transposed in place: what BlockTranspose computes,
// and what a tiled kernel multiplies by when it stores or reads a tile transposed.
inline std::vector<float> tiles_transposed(const std::vector<float>& A, int width, int height,
                                           int tile) {
  std::vector<float> out(A.size());
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      const int tile_r = r / tile * tile, tile_c = c / tile * tile;
      const int from_r = tile_r + (c - tile_c), from_c = tile_c + (r - tile_r);
      out[static_cast<std::size_t>(r) * width + c] =
          A[static_cast<std::size_t>(from_r) * width + from_c];
    }
  }
  return out;
}

// Columns [first, first + tile) of the rows x cols matrix A, as a rows x tile matrix; with `fold`,
// the sum of all its column blocks of that width instead (block j's column k added into column k).
inline std::vector<float> column_block(const std::vector<float>& A, int rows, int cols, int first,
                                       int tile, bool fold) {
  std::vector<double> out(static_cast<std::size_t>(rows) * tile, 0.0);
  for (int r = 0; r < rows; ++r) {
    for (int c = fold ? 0 : first; c < (fold ? cols : first + tile); ++c) {
      out[static_cast<std::size_t>(r) * tile + (c - first) % tile] +=
          A[static_cast<std::size_t>(r) * cols + c];
    }
  }
  return std::vector<float>(out.begin(), out.end());
}

// Rows [first, first + tile) of the rows x cols matrix A, as a tile x cols matrix; with `fold`,
// the sum of all its row blocks of that height.
inline std::vector<float> row_block(const std::vector<float>& A, int rows, int cols, int first,
                                    int tile, bool fold) {
  std::vector<double> out(static_cast<std::size_t>(tile) * cols, 0.0);
  for (int r = fold ? 0 : first; r < (fold ? rows : first + tile); ++r) {
    for (int c = 0; c < cols; ++c) {
      out[static_cast<std::size_t>((r - first) % tile) * cols + c] +=
          A[static_cast<std::size_t>(r) * cols + c];
    }
  }
  return std::vector<float>(out.begin(), out.end());
}

// The mistakes particular to a tiled kernel, as alternatives for kit::compare_matrix: a tile of
// M or of N used transposed (stored as Mds[tx][ty], or read as Mds[k][ty] or Nds[tx][k]); with
// two phases or more, a load without the phase offset (every phase then uses the first tile of M,
// or of N) and a phase loop one phase short. Empty above max_width, where the extra products
// would cost too much.
inline std::vector<kit::Alternative> tile_mistakes(const kit::MatmulProblem& p, int tile,
                                                   int max_width = 512) {
  std::vector<kit::Alternative> mistakes;
  const int w = p.rows;
  if (w > max_width || p.inner != w || p.cols != w || w % tile != 0) return mistakes;
  const std::vector<float> M_t = tiles_transposed(p.M, w, w, tile);
  const std::vector<float> N_t = tiles_transposed(p.N, w, w, tile);
  mistakes.push_back(
      {"the tile of M is used transposed: the result is M with every tile "
       "transposed, times N. Store Mds[ty][tx] = M[row * width + ph * TILE_WIDTH + tx] "
       "and read Mds[ty][k] in the inner product (README section 5).",
       kit::product_values(M_t, p.N, w, w, w)});
  mistakes.push_back(
      {"the tile of N is used transposed: the result is M times N with every tile "
       "transposed. Store Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * width + col] "
       "and read Nds[k][tx] in the inner product (README section 5).",
       kit::product_values(p.M, N_t, w, w, w)});
  if (w / tile < 2) return mistakes;  // one phase: these mistakes change nothing
  // Mds[ty][tx] = M[row * width + tx]: every phase multiplies M's first tile column by the
  // phase's tile of N, so P = M[:, 0:tile] times the sum of N's row blocks.
  mistakes.push_back(
      {"every phase used the first tile of M: the result is M's first TILE_WIDTH columns times "
       "the sum of N's tiles down each column. The load of Mds misses the phase offset: "
       "M[row * width + ph * TILE_WIDTH + tx] (README section 5).",
       kit::product_values(column_block(p.M, w, w, 0, tile, false),
                           row_block(p.N, w, w, 0, tile, true), w, tile, w)});
  mistakes.push_back(
      {"every phase used the first tile of N: the result is the sum of M's tiles along each row "
       "times N's first TILE_WIDTH rows. The load of Nds misses the phase offset: "
       "N[(ph * TILE_WIDTH + ty) * width + col] (README section 5).",
       kit::product_values(column_block(p.M, w, w, 0, tile, true),
                           row_block(p.N, w, w, 0, tile, false), w, tile, w)});
  // The last phase's terms missing from every element: the reference minus that phase.
  mistakes.push_back({"every element misses exactly the terms of the last phase (k = " +
                          std::to_string(w - tile) + " to " + std::to_string(w - 1) +
                          "): the phase loop stops one phase short. Run it while ph < width / "
                          "TILE_WIDTH (README section 5).",
                      kit::without_terms(p.M, p.N, p.ref, w, w - tile, w)});
  return mistakes;
}

// Runs the student's kernel on poisoned output and compares it with the host reference; when
// it is wrong, tries the tiling mistakes and the usual index mistakes to explain why.
inline kit::Comparison check_tiled(const kit::MatmulProblem& problem, int tile_width) {
  return kit::check_matmul(
      problem, tiled(problem.rows, tile_width), tile_width,
      [tile_width](const kit::MatmulProblem& p) { return tile_mistakes(p, tile_width); });
}

// Each width gets its own inputs; every tile width that divides it runs on them.
inline void check_width_with_both_tiles(int width, std::uint64_t seed) {
  const kit::MatmulProblem problem = kit::make_square_problem(width, seed);
  for (int tile : {16, 32}) {
    if (width % tile != 0) continue;
    CAPTURE(width, tile, problem.seed);
    KIT_CHECK_MATRIX(check_tiled(problem, tile));
  }
}

}  // namespace lab03_tests
