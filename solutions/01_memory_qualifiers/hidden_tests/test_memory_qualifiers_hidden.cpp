// Lab 01's hidden tests of the code: sizes, seeds, coefficient counts and block sizes the public
// tests do not use.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <string>
#include <vector>

#include "kit/device_buffer.hpp"
#include "kit/testing.hpp"
#include "lab01_support.hpp"
#include "memory_qualifiers.h"

TEST_CASE("all four kernels match the host reference on hidden sizes and seeds",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = GENERATE(2, 129, 4097, 777777);
  CAPTURE(n);
  for (int count : {2, 9}) {
    CAPTURE(count);
    const std::vector<float> c = lab01_tests::random_values(count, 91000 + count);
    lab01::set_polynomial(c.data(), count);
    const std::vector<float> x = lab01_tests::random_values(n, 91100 + n);
    const std::string problem =
        lab01_tests::polynomial_problem(x, c, lab01_tests::run_polynomial(x, count));
    if (!problem.empty()) FAIL_CHECK(problem);
  }
  const std::vector<float> x = lab01_tests::random_values(n, 92000 + n);
  kit::DeviceBuffer<float> d_x(x.size());
  d_x.copy_from_host(x.data());
  for (int block : {1, 64, 1000}) {
    if (block == 1 && n > 5000) continue;  // a million one-thread blocks prove nothing more
    CAPTURE(block);
    lab01::reset_counter();
    lab01::launch_count_above(d_x.data(), n, -0.5f, block);
    CHECK(lab01::read_counter() == lab01_tests::host_count_above(x, -0.5f));
  }
  const std::string sums = lab01_tests::block_sums_problem(x, lab01_tests::run_block_sums(x));
  if (!sums.empty()) FAIL_CHECK(sums);
  const std::vector<float> u = lab01_tests::unit_values(n, 93000 + n);
  const std::string histograms = lab01_tests::histograms_problem(
      u, lab01_tests::run_histograms(u, lab01::launch_chunk_histograms));
  if (!histograms.empty()) FAIL_CHECK(histograms);
}
