// Lab 03 part A's public tests: the BlockTranspose warm-up, its result and its race.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "block_transpose.h"
#include "kit/cuda_check.hpp"
#include "kit/matrix.hpp"
#include "kit/remote.hpp"
#include "kit/testing.hpp"
#include "lab03_support.hpp"
#include "racecheck.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Transposes A's tiles on the device and says what is wrong with the result (empty when right).
// A transpose only moves floats, so the result must match bit for bit.
std::string transpose_problem(const std::vector<float>& A, int width, int height, int block) {
  // Staged for the worker's call: the judge makes no CUDA context (docs/design/engine.md).
  std::vector<float> got = A;
  {
    const kit::remote::StagedArrays arrays({kit::remote::staged(got)});
    lab03::launch_block_transpose(got.data(), width, height, block);
  }

  const std::vector<float> want = lab03_tests::tiles_transposed(A, width, height, block);
  long long wrong = 0, unchanged = 0;
  std::ostringstream shown;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (same_bits(got[i], want[i])) continue;
    if (same_bits(got[i], A[i])) ++unchanged;
    if (wrong++ < 5) {
      shown << "  A[" << i / width << "][" << i % width << "]: got " << got[i] << ", expected "
            << want[i] << "\n";
    }
  }
  if (wrong == 0) return "";
  std::ostringstream out;
  out << wrong << " of " << got.size() << " elements are wrong (" << height << " x " << width
      << ", block " << block << " x " << block << ")\n"
      << shown.str();
  const long long off_diagonal = static_cast<long long>(got.size() - got.size() / block);
  if (unchanged == wrong && wrong == off_diagonal) {
    out << "hint: every element off the tiles' diagonals kept its old value: each thread must "
           "write back blockA[threadIdx.x][threadIdx.y], the element mirrored across the "
           "diagonal.\n";
  } else if (block * block > 32) {
    out << "hint: the indexing is the textbook's, yet some elements are wrong: a thread read "
           "blockA[threadIdx.x][threadIdx.y] before the thread that owns that element (perhaps "
           "in another warp) had stored it. Put __syncthreads() between the store to blockA and "
           "the read of blockA (README section 3).\n";
  } else {
    out << "hint: compare the kernel with the textbook's BlockTranspose (README section 3): "
           "stage A_elements[baseIdx] in blockA[threadIdx.y][threadIdx.x], wait, then write "
           "blockA[threadIdx.x][threadIdx.y] back.\n";
  }
  return out.str();
}

}  // namespace

TEST_CASE("block transpose result matches the host reference for block widths 4 to 32",
          "[lab03][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int block = GENERATE(4, 8, 16, 32);
  // A small matrix, then a large one run several times: a race shows more often with many
  // blocks in flight.
  struct Shape {
    int width, height, runs;
  };
  for (const Shape s : {Shape{96, 64, 1}, Shape{2048, 1024, 4}}) {
    const std::uint64_t seed = 1300 + block + s.width;
    const std::vector<float> A = kit::random_matrix(s.height, s.width, seed);
    for (int run = 0; run < s.runs; ++run) {
      CAPTURE(block, s.width, s.height, seed, run);
      const std::string problem = transpose_problem(A, s.width, s.height, block);
      if (!problem.empty()) FAIL(problem);
    }
  }
}

TEST_CASE("block transpose has no shared-memory race under racecheck",
          "[lab03][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string tool = lab03_tests::find_racecheck();
  kit::require_only_the_labs_kernels("README section 12");
  const kit::sanitizer::Run r = lab03_tests::racecheck_probe(tool, "transpose");
  CAPTURE(r.command, r.exit_code);
  if (r.exit_code == 0) {
    SUCCEED("racecheck found no hazard in block_transpose_kernel at block widths 4 to 32");
  } else if (r.exit_code == kit::sanitizer::kErrorsFound) {
    FAIL("racecheck found shared-memory hazards in block_transpose_kernel:\n"
         << kit::sanitizer::race_lines(r.output)
         << "hint: a thread reads blockA[threadIdx.x][threadIdx.y] before the thread that "
            "stores it has done so (read-after-write). Put __syncthreads() between the store "
            "to blockA and the read of blockA (README section 3).");
  } else if (r.exit_code == kit::sanitizer::kWrongResult) {
    FAIL(
        "racecheck found no hazard, but the transposed matrix is wrong, so there was nothing "
        "to judge:\n"
        << kit::sanitizer::tail(r.output, 4)
        << "hint: make the block transpose correctness test pass first; this test judges only "
           "a kernel that transposes.");
  } else {
    lab03_tests::skip_if_racecheck_unusable(tool);
    FAIL("the probe failed under racecheck (exit code "
         << r.exit_code << "):\n"
         << kit::sanitizer::tail(r.output)
         << "hint: the kernel or its launch failed; the correctness test shows how.");
  }
}

TEST_CASE("block transpose rejects block widths and shapes it does not support",
          "[lab03][safety]") {
  // Never dereferenced: every call below must throw before it touches the buffer.
  std::vector<float> A(64 * 64);
  float* d_A = A.data();
  for (int block : {0, 2, 3, 12, 64}) {
    CAPTURE(block);
    CHECK_THROWS_WITH(lab03::launch_block_transpose(d_A, 64, 64, block),
                      ContainsSubstring("block_width"));
  }
  CHECK_THROWS_WITH(lab03::launch_block_transpose(d_A, 0, 64, 16), ContainsSubstring("A_width"));
  CHECK_THROWS_WITH(lab03::launch_block_transpose(d_A, 64, -16, 16), ContainsSubstring("A_height"));
  CHECK_THROWS_WITH(lab03::launch_block_transpose(d_A, 40, 64, 16),
                    ContainsSubstring("A_width") && ContainsSubstring("multiple"));
  CHECK_THROWS_WITH(lab03::launch_block_transpose(d_A, 64, 24, 16),
                    ContainsSubstring("A_height") && ContainsSubstring("multiple"));
  CHECK_THROWS_WITH(lab03::launch_block_transpose(nullptr, 64, 64, 16), ContainsSubstring("d_A"));
}
