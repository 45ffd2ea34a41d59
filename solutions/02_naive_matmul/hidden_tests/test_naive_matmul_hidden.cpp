// Lab 02's hidden tests: sizes, seeds and block shapes the public tests do not use.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "kit/matmul_harness.hpp"
#include "kit/testing.hpp"
#include "naive_matmul.h"

namespace {

kit::MatmulLaunch naive(int width, int block_size) {
  return [=](const float* d_M, const float* d_N, float* d_P) {
    lab02::launch_naive_matmul(d_M, d_N, d_P, width, block_size);
  };
}

}  // namespace

TEST_CASE("naive result matches the host reference on hidden widths and seeds",
          "[lab02][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(2, 3, 17, 45, 129, 513, 777);
  const kit::MatmulProblem problem = kit::make_square_problem(width, 91000 + 7 * width);
  for (int block : {16, 32}) {
    CAPTURE(width, block, problem.seed);
    KIT_CHECK_MATRIX(kit::check_matmul(problem, naive(width, block)));
  }
}

TEST_CASE("naive result matches the host reference with 8x8 and 1x1 blocks",
          "[lab02][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(9, 50);
  const kit::MatmulProblem problem = kit::make_square_problem(width, 92000 + width);
  for (int block : {8, 1}) {
    CAPTURE(width, block, problem.seed);
    KIT_CHECK_MATRIX(kit::check_matmul(problem, naive(width, block)));
  }
}
