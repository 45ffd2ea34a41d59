// Lab 02's public tests: correctness on awkward widths, safety, resources, speed.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
#include "kit/remote.hpp"
#include "kit/speed.hpp"
#include "kit/testing.hpp"
#include "naive_matmul.h"
#include "reference_launch.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

kit::MatmulLaunch naive(int width, int block_size) {
  return kit::WorkerLaunch{[=](const float* d_M, const float* d_N, float* d_P) {
    lab02::launch_naive_matmul(d_M, d_N, d_P, width, block_size);
  }};
}

// Each width gets its own inputs; both block shapes run on them.
void check_widths_with_both_blocks(int width) {
  const kit::MatmulProblem problem = kit::make_square_problem(width, 2000 + width);
  for (int block : {16, 32}) {
    CAPTURE(width, block, problem.seed);
    KIT_CHECK_MATRIX(kit::check_matmul(problem, naive(width, block)));
  }
}

}  // namespace

TEST_CASE("naive result matches the host reference for small widths", "[lab02][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  check_widths_with_both_blocks(GENERATE(1, 7, 16, 31));
}

TEST_CASE("naive result matches the host reference when the width is not a multiple of the block",
          "[lab02][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  check_widths_with_both_blocks(GENERATE(100, 1000));
}

TEST_CASE("naive result matches the host reference when the width is a multiple of the block",
          "[lab02][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  check_widths_with_both_blocks(GENERATE(64, 1024));
}

TEST_CASE("host function returns the product of its host matrices", "[lab02][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(1, 45, 128);
  const kit::MatmulProblem problem = kit::make_square_problem(width, 3000 + width);
  std::vector<float> P(problem.ref.value.size(), kit::poison_value());
  CAPTURE(width, problem.seed);
  lab02::naive_matmul(problem.M.data(), problem.N.data(), P.data(), width, 16);
  KIT_CHECK_MATRIX(kit::compare_with_diagnoses(P, problem));
}

TEST_CASE("naive kernel does not write outside the output matrix", "[lab02][safety][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(33, 100);
  const int block = GENERATE(16, 32);
  CAPTURE(width, block);
  const kit::MatmulProblem problem = kit::make_square_problem(width, 4000 + width);
  // P with its sentinel bands, staged whole for the worker's call (kit::HostGuarded): the judge
  // makes no CUDA context (docs/design/engine.md).
  kit::HostGuarded P_guarded(problem.M.size());
  P_guarded.poison_data();
  {
    const kit::remote::StagedArrays arrays({kit::remote::staged(problem.M),
                                            kit::remote::staged(problem.N),
                                            {P_guarded.storage(), P_guarded.storage_bytes()}});
    lab02::launch_naive_matmul(problem.M.data(), problem.N.data(), P_guarded.data(), width, block);
  }
  if (!kit::fully_written(P_guarded.values())) return;
  const std::string damage = P_guarded.damaged_guards();
  INFO(damage);
  INFO(
      "hint: threads outside the matrix must not store; check the bounds condition "
      "(row < width && col < width) before the write.");
  CHECK(damage.empty());
}

TEST_CASE("host function rejects a width that is zero or negative", "[lab02][safety]") {
  std::vector<float> M(4), N(4), P(4);
  const int width = GENERATE(0, -1, -1000);
  CAPTURE(width);
  CHECK_THROWS_WITH(lab02::naive_matmul(M.data(), N.data(), P.data(), width, 16),
                    ContainsSubstring("width") && ContainsSubstring("at least 1"));
}

TEST_CASE("host function rejects null matrices and block sizes outside 1 to 32",
          "[lab02][safety]") {
  std::vector<float> M(4), N(4), P(4);
  CHECK_THROWS_WITH(lab02::naive_matmul(nullptr, N.data(), P.data(), 2, 16),
                    ContainsSubstring("h_M"));
  CHECK_THROWS_WITH(lab02::naive_matmul(M.data(), nullptr, P.data(), 2, 16),
                    ContainsSubstring("h_N"));
  CHECK_THROWS_WITH(lab02::naive_matmul(M.data(), N.data(), nullptr, 2, 16),
                    ContainsSubstring("h_P"));
  CHECK_THROWS_WITH(lab02::naive_matmul(M.data(), N.data(), P.data(), 2, 0),
                    ContainsSubstring("block_size"));
  CHECK_THROWS_WITH(lab02::naive_matmul(M.data(), N.data(), P.data(), 2, 33),
                    ContainsSubstring("block_size"));
}

TEST_CASE("host function frees every device buffer it allocates",
          "[lab02][resources][alone][gpu]") {
  KIT_REQUIRE_GPU();
  // The student's code runs in its own process (the worker), and what it holds of the device is
  // read from the driver (NVML), outside that process. Where the kit has the reference, its
  // worker makes the same calls and is the yardstick (a context and its kernels, nothing kept);
  // else the count starts after a first call of width 1, which loads the kernel.
  const int width = 1024;  // 12 MiB of device memory per call
  const kit::MatmulProblem problem = kit::make_matmul_problem(width, width, width, 5000);
  std::vector<float> P(problem.M.size(), kit::poison_value());
  std::vector<float> one(1, 1.0f), one_out(1, kit::poison_value());
  const int calls = 9;
  auto make_calls = [&](const auto& matmul) {
    std::fill(P.begin(), P.end(), kit::poison_value());  // the result checked is this worker's
    matmul(one.data(), one.data(), one_out.data(), 1, 1);
    for (int i = 0; i < calls; ++i) matmul(problem.M.data(), problem.N.data(), P.data(), width, 32);
  };
  std::string why;
  long long yardstick = -1;
  if (lab02_tests::reference_host_matmul(one.data(), one.data(), one_out.data(), 1, 1)) {
    make_calls(lab02_tests::reference_host_matmul);
    yardstick = kit::remote::process_device_memory(
        kit::remote::worker_pid(kit::remote::Role::reference), &why);
  }
  lab02::naive_matmul(one.data(), one.data(), one_out.data(), 1, 1);
  if (yardstick < 0) yardstick = kit::remote::worker_device_memory(&why);
  if (yardstick < 0)
    SKIP("the driver's count of a process's device memory is not readable here: " << why);
  make_calls(lab02::naive_matmul);
  {
    // A host function that allocates nothing frees everything: judge only one that computes P.
    INFO(
        "this test judges only a host function that returns the product: make the "
        "correctness tests pass first.");
    KIT_REQUIRE_MATRIX(kit::compare_with_diagnoses(P, problem));
  }
  const long long held = kit::remote::worker_device_memory(&why);
  if (held < 0) FAIL("the driver's count of the worker's device memory could not be read: " << why);
  const double kept_mib = static_cast<double>(held - yardstick) / (1 << 20);
  CAPTURE(kept_mib);
  INFO("hint: " << calls + 1 << " calls kept " << kept_mib
                << " MiB of device memory after they returned; every cudaMalloc needs a "
                   "cudaFree (kit::DeviceBuffer frees automatically).");
  // One 1024 x 1024 matrix is 4 MiB: a call that keeps any of its buffers keeps at least that
  // much. Less than one buffer in all is the driver's own bookkeeping.
  CHECK(kept_mib < 4.0);
}

TEST_CASE("naive kernel speed is close to the reference kernel",
          "[lab02][performance][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = 1024, block = 16;
  const kit::MatmulProblem problem = kit::make_square_problem(width, 6000);
  KIT_REQUIRE_MATRIX(kit::check_matmul(problem, naive(width, block)));
  kit::SpeedComparison speed("reference kernel");
  speed.time("16 x 16 blocks", problem, naive(width, block),
             lab02_tests::reference_naive(width, block));
  kit::report_speed(speed);
}
