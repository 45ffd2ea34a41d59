// kit::check_matmul with its term map, on the device: a tiled kernel with one of the chapter's
// mistakes, whose failure the values alone cannot explain, gets the cause the map proves.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>

#include "kit/cuda_check.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/testing.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

enum class Mistake {
  none,
  phases_rounded_down,
  m_without_phase_offset,
  int_sum,
  no_zero_fill,  // guarded loads that leave the tile slot as it was
  nds_over_mds,  // Nds carved at the buffer's start, where Mds lies
};

// The book's tiled kernel for rectangular matrices, TILE_WIDTH = blockDim.x, with `mistake`.
__global__ void tiled(const float* M, const float* N, float* P, int rows, int inner, int cols,
                      Mistake mistake) {
  extern __shared__ float tiles[];
  const int tile = blockDim.x;
  float* Mds = tiles;
  float* Nds = mistake == Mistake::nds_over_mds ? tiles : tiles + tile * tile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * tile + ty, col = blockIdx.x * tile + tx;
  const int phases =
      mistake == Mistake::phases_rounded_down ? inner / tile : (inner + tile - 1) / tile;
  float Pvalue = 0.0f;
  int truncated = 0;  // Mistake::int_sum keeps the sum here
  for (int ph = 0; ph < phases; ++ph) {
    const int m_col = (mistake == Mistake::m_without_phase_offset ? 0 : ph * tile) + tx;
    const int n_row = ph * tile + ty;
    if (mistake == Mistake::no_zero_fill) {
      if (row < rows && m_col < inner) Mds[ty * tile + tx] = M[row * inner + m_col];
      if (n_row < inner && col < cols) Nds[ty * tile + tx] = N[n_row * cols + col];
    } else {
      Mds[ty * tile + tx] = row < rows && m_col < inner ? M[row * inner + m_col] : 0.0f;
      Nds[ty * tile + tx] = n_row < inner && col < cols ? N[n_row * cols + col] : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < tile; ++k) {
      if (mistake == Mistake::int_sum) {
        truncated += Mds[ty * tile + k] * Nds[k * tile + tx];
      } else {
        Pvalue += Mds[ty * tile + k] * Nds[k * tile + tx];
      }
    }
    __syncthreads();
  }
  if (mistake == Mistake::int_sum) Pvalue = static_cast<float>(truncated);
  if (row < rows && col < cols) P[row * cols + col] = Pvalue;
}

kit::MatmulLaunch launch(int rows, int inner, int cols, int tile, Mistake mistake) {
  return [=](const float* d_M, const float* d_N, float* d_P) {
    const dim3 block(tile, tile), grid((cols + tile - 1) / tile, (rows + tile - 1) / tile);
    tiled<<<grid, block, 2 * tile * tile * sizeof(float)>>>(d_M, d_N, d_P, rows, inner, cols,
                                                            mistake);
    KIT_CUDA_CHECK(cudaGetLastError());
  };
}

std::string first_hint(const std::string& report) {
  const auto at = report.find("hint: ");
  return at == std::string::npos ? "" : report.substr(at, report.find('\n', at) - at);
}

}  // namespace

TEST_CASE("a phase loop that rounds down is told so by the term map and not by cannot tell why",
          "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem p = kit::make_matmul_problem(20, 20, 12, 41);  // phases 0-7 8-15 16-19
  const kit::Comparison cmp =
      kit::check_matmul(p, launch(20, 20, 12, 8, Mistake::phases_rounded_down), 8);
  CAPTURE(cmp.report);
  CHECK_FALSE(cmp.ok);
  CHECK_THAT(first_hint(cmp.report), ContainsSubstring("inner index 16 to 19") &&
                                         ContainsSubstring("the phase loop stops one phase short"));
  CHECK_THAT(cmp.report, !ContainsSubstring(kit::kCannotTellWhy));
}

TEST_CASE("a load of M without its phase offset is told so by the term map",
          "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem p = kit::make_matmul_problem(12, 24, 20, 42);
  const kit::Comparison cmp =
      kit::check_matmul(p, launch(12, 24, 20, 8, Mistake::m_without_phase_offset), 8);
  CAPTURE(cmp.report);
  CHECK_THAT(first_hint(cmp.report), ContainsSubstring("M's column index lacks the phase offset"));
  // Once a map has named the cause, later checks in the test case make none: the values' own
  // account stands.
  kit::check_matmul(p, launch(12, 24, 20, 8, Mistake::m_without_phase_offset), 8);
  const kit::Comparison third =
      kit::check_matmul(p, launch(12, 24, 20, 8, Mistake::m_without_phase_offset), 8);
  CHECK_THAT(first_hint(third.report), ContainsSubstring(kit::kCannotTellWhy));
}

// This test case and the ones below (the tile written over the other among them) are alike in
// shape only: each names one mistake, its own problem and the hint it must get.
TEST_CASE("a sum kept in an int is told so because it is right on whole numbers",
          "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem p = kit::make_matmul_problem(20, 20, 12, 44);
  const kit::Comparison cmp = kit::check_matmul(p, launch(20, 20, 12, 8, Mistake::int_sum), 8);
  CAPTURE(cmp.report);
  CHECK_THAT(first_hint(cmp.report), ContainsSubstring("right when the inputs are whole numbers") &&
                                         ContainsSubstring("a sum kept in an int"));
}

TEST_CASE("a correct tiled kernel passes with no term map", "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem p = kit::make_matmul_problem(20, 20, 12, 43);
  const kit::Comparison cmp = kit::check_matmul(p, launch(20, 20, 12, 8, Mistake::none), 8);
  CAPTURE(cmp.report);
  CHECK(cmp.ok);
}

TEST_CASE("tile slots that keep the last phase's values are told to be filled with 0",
          "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem p = kit::make_matmul_problem(20, 20, 12, 45);  // phases 0-7 8-15 16-19
  const kit::Comparison cmp = kit::check_matmul(p, launch(20, 20, 12, 8, Mistake::no_zero_fill), 8);
  CAPTURE(cmp.report);
  CHECK_THAT(first_hint(cmp.report), ContainsSubstring("inner index 12 to 15 twice") &&
                                         ContainsSubstring("fill 0 into the tile"));
}

TEST_CASE("a tile written over the other is given no cause the codes only seem to prove",
          "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem p = kit::make_matmul_problem(20, 20, 12, 46);
  const kit::Comparison cmp = kit::check_matmul(p, launch(20, 20, 12, 8, Mistake::nds_over_mds), 8);
  CAPTURE(cmp.report);
  CHECK_FALSE(cmp.ok);
  CHECK_THAT(first_hint(cmp.report), ContainsSubstring(kit::kCannotTellWhy));
}
