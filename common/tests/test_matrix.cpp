// The harness's inputs and reference must be right before any lab's verdict can be trusted.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <cmath>
#include <stdexcept>

#include "kit/matrix.hpp"
#include "kit/testing.hpp"

TEST_CASE("random matrices are reproducible from their seed and differ between seeds", "[common]") {
  const auto a = kit::random_matrix(17, 9, 1234);
  const auto b = kit::random_matrix(17, 9, 1234);
  const auto c = kit::random_matrix(17, 9, 1235);
  REQUIRE(a.size() == 17u * 9u);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("random matrix values lie between -1 and 1 and are not all alike", "[common]") {
  const auto a = kit::random_matrix(64, 64, 7);
  float lo = 1, hi = -1;
  for (float v : a) {
    REQUIRE(v >= -1.0f);
    REQUIRE(v < 1.0f);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo < -0.9f);
  CHECK(hi > 0.9f);
}

TEST_CASE("random matrix rejects an empty shape", "[common]") {
  CHECK_THROWS_AS(kit::random_matrix(0, 3, 1), std::invalid_argument);
  CHECK_THROWS_AS(kit::random_matrix(3, -1, 1), std::invalid_argument);
}

TEST_CASE("host reference multiplies a small rectangular product exactly", "[common]") {
  // M is 2 x 3, N is 3 x 2.
  const std::vector<float> M = {1, 2, 3, 4, 5, 6};
  const std::vector<float> N = {7, -8, 9, 10, -11, 12};
  const auto ref = kit::reference_matmul(M, N, 2, 3, 2);
  REQUIRE(ref.rows == 2);
  REQUIRE(ref.cols == 2);
  CHECK(ref.value == std::vector<double>{1 * 7 + 2 * 9 - 3 * 11, -1 * 8 + 2 * 10 + 3 * 12,
                                         4 * 7 + 5 * 9 - 6 * 11, -4 * 8 + 5 * 10 + 6 * 12});
  CHECK(ref.magnitude == std::vector<double>{7 + 18 + 33, 8 + 20 + 36, 28 + 45 + 66, 32 + 50 + 72});
}

TEST_CASE("product values alone are the values of the host reference to the bit", "[common]") {
  const int rows = GENERATE(1, 17, 64), inner = GENERATE(1, 33), cols = GENERATE(5, 40);
  CAPTURE(rows, inner, cols);
  const auto M = kit::random_matrix(rows, inner, 21);
  const auto N = kit::random_matrix(inner, cols, 22);
  const std::vector<double> values = kit::reference_values(M, N, rows, inner, cols);
  CHECK(values == kit::reference_matmul(M, N, rows, inner, cols).value);
  CHECK(kit::product_values(M, N, rows, inner, cols) == values);
  CHECK_THROWS_AS(kit::reference_values(M, N, rows, inner + 1, cols), std::invalid_argument);
}

namespace {

// M * N summed element by element in the order of k, as one plain loop: what any split of the
// host reference's rows must give to the bit.
kit::MatmulReference plain_product(const std::vector<float>& M, const std::vector<float>& N,
                                   int rows, int inner, int cols) {
  kit::MatmulReference ref{rows, cols, std::vector<double>(static_cast<std::size_t>(rows) * cols),
                           std::vector<double>(static_cast<std::size_t>(rows) * cols)};
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      double v = 0.0, a = 0.0;
      for (int k = 0; k < inner; ++k) {
        const double term = static_cast<double>(M[i * inner + k]) * N[k * cols + j];
        v += term;
        a += std::fabs(term);
      }
      ref.value[static_cast<std::size_t>(i) * cols + j] = v;
      ref.magnitude[static_cast<std::size_t>(i) * cols + j] = a;
    }
  }
  return ref;
}

}  // namespace

TEST_CASE("the host reference gives the same bits however its rows are split between threads",
          "[common]") {
  const int rows = GENERATE(1, 2, 3, 257), threads = GENERATE(1, 2, 3, 4, 5);
  const int inner = 19, cols = 7;
  CAPTURE(rows, threads);
  const auto M = kit::random_matrix(rows, inner, 41);
  const auto N = kit::random_matrix(inner, cols, 42);
  const kit::MatmulReference want = plain_product(M, N, rows, inner, cols);
  std::vector<double> value(want.value.size(), 0.0), magnitude(want.value.size(), 0.0);
  kit::accumulate_product(M, N, rows, inner, cols, value.data(), magnitude.data(), threads);
  CHECK(value == want.value);
  CHECK(magnitude == want.magnitude);
  std::vector<double> alone(want.value.size(), 0.0);
  kit::accumulate_product(M, N, rows, inner, cols, alone.data(), nullptr, threads);
  CHECK(alone == want.value);
}

TEST_CASE("a large host reference is the plain loop's to the bit", "[common]") {
  // Above 2^24 terms, where the host reference splits its rows between the CPUs it may use.
  const int rows = 257, inner = 256, cols = 256;
  const auto M = kit::random_matrix(rows, inner, 43);
  const auto N = kit::random_matrix(inner, cols, 44);
  const kit::MatmulReference want = plain_product(M, N, rows, inner, cols);
  const kit::MatmulReference ref = kit::reference_matmul(M, N, rows, inner, cols);
  CHECK(ref.value == want.value);
  CHECK(ref.magnitude == want.magnitude);
  CHECK(kit::reference_values(M, N, rows, inner, cols) == want.value);
}

TEST_CASE("host reference rejects inputs whose size does not match the shape", "[common]") {
  const std::vector<float> M(6), N(5);
  CHECK_THROWS_AS(kit::reference_matmul(M, N, 2, 3, 2), std::invalid_argument);
}

TEST_CASE("reference check accepts the host reference and refuses a changed value or magnitude",
          "[common]") {
  const int rows = 37, inner = 50, cols = 23;
  const auto M = kit::random_matrix(rows, inner, 11);
  const auto N = kit::random_matrix(inner, cols, 12);
  const kit::MatmulReference ref = kit::reference_matmul(M, N, rows, inner, cols);
  CHECK_NOTHROW(kit::verify_reference(M, N, ref, inner));
  // A change far below the grading tolerance (2e-5 of the magnitude) is still seen.
  kit::MatmulReference value_off = ref;
  value_off.value[5 * cols + 7] += 1e-7 * ref.magnitude[5 * cols + 7];
  CHECK_THROWS_AS(kit::verify_reference(M, N, value_off, inner), std::logic_error);
  kit::MatmulReference magnitude_off = ref;
  magnitude_off.magnitude.back() *= 1.001;
  CHECK_THROWS_AS(kit::verify_reference(M, N, magnitude_off, inner), std::logic_error);
  CHECK_THROWS_AS(kit::verify_reference(M, N, ref, inner + 1), std::invalid_argument);
}

TEST_CASE("device reference matches the host reference on awkward shapes", "[common][gpu]") {
  KIT_REQUIRE_GPU();
  struct Shape {
    int rows, inner, cols;
  };
  const Shape s = GENERATE(Shape{1, 1, 1}, Shape{17, 33, 5}, Shape{64, 64, 64}, Shape{100, 257, 31},
                           Shape{3, 1000, 2}, Shape{129, 16, 130});
  CAPTURE(s.rows, s.inner, s.cols);
  const auto M = kit::random_matrix(s.rows, s.inner, 21 + s.rows);
  const auto N = kit::random_matrix(s.inner, s.cols, 22 + s.cols);
  const kit::MatmulReference host = kit::reference_matmul(M, N, s.rows, s.inner, s.cols);
  const kit::MatmulReference device =
      kit::reference_matmul_on_device(M, N, s.rows, s.inner, s.cols);
  REQUIRE(device.rows == host.rows);
  REQUIRE(device.cols == host.cols);
  REQUIRE(device.value.size() == host.value.size());
  double worst = 0;  // relative to the magnitude, which bounds the rounding of either order
  for (std::size_t i = 0; i < host.value.size(); ++i) {
    worst = std::max(worst, std::fabs(device.value[i] - host.value[i]) / host.magnitude[i]);
    REQUIRE(std::fabs(device.magnitude[i] - host.magnitude[i]) <= 1e-12 * host.magnitude[i]);
  }
  CAPTURE(worst);
  CHECK(worst < 1e-12);
}
