#include "kit/matrix.hpp"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace kit {
namespace {

// splitmix64: tiny, well mixed, and specified, so every platform draws the same matrices.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void require_shape(const char* what, std::size_t size, int rows, int cols) {
  if (rows < 1 || cols < 1 || size != static_cast<std::size_t>(rows) * cols) {
    throw std::invalid_argument(std::string("reference_matmul: ") + what + " has " +
                                std::to_string(size) + " elements, expected " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  }
}

}  // namespace

std::vector<float> random_matrix(int rows, int cols, std::uint64_t seed) {
  if (rows < 1 || cols < 1) {
    throw std::invalid_argument("random_matrix: rows and cols must be at least 1, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  }
  std::vector<float> values(static_cast<std::size_t>(rows) * cols);
  std::uint64_t state = seed;
  for (float& v : values) {
    // 24 random bits give every float in [-1, 1) on a grid of 2^-23.
    const double unit = static_cast<double>(splitmix64(state) >> 40) / 16777216.0;
    v = static_cast<float>(2.0 * unit - 1.0);
  }
  return values;
}

void require_matmul_shape(const std::vector<float>& M, const std::vector<float>& N, int rows,
                          int inner, int cols) {
  require_shape("M", M.size(), rows, inner);
  require_shape("N", N.size(), inner, cols);
}

namespace {

// P = M * N in i-k-j order, which walks N and P along rows and keeps the host loop fast enough for
// widths in the low thousands; each element's exact terms are summed in the order of k. With
// `magnitude` null, only the values: what a failure's diagnoses compare against, at two thirds of
// the time.
void accumulate_product(const std::vector<float>& M, const std::vector<float>& N, int rows,
                        int inner, int cols, double* value, double* magnitude) {
  for (int i = 0; i < rows; ++i) {
    double* value_row = value + static_cast<std::size_t>(i) * cols;
    double* magnitude_row =
        magnitude == nullptr ? nullptr : magnitude + static_cast<std::size_t>(i) * cols;
    for (int k = 0; k < inner; ++k) {
      const double m = M[static_cast<std::size_t>(i) * inner + k];
      const float* n_row = &N[static_cast<std::size_t>(k) * cols];
      if (magnitude_row == nullptr) {
        for (int j = 0; j < cols; ++j) value_row[j] += m * n_row[j];
        continue;
      }
      for (int j = 0; j < cols; ++j) {
        const double term = m * n_row[j];
        value_row[j] += term;
        magnitude_row[j] += std::fabs(term);
      }
    }
  }
}

}  // namespace

MatmulReference reference_matmul(const std::vector<float>& M, const std::vector<float>& N, int rows,
                                 int inner, int cols) {
  require_matmul_shape(M, N, rows, inner, cols);
  MatmulReference ref;
  ref.rows = rows;
  ref.cols = cols;
  ref.value.assign(static_cast<std::size_t>(rows) * cols, 0.0);
  ref.magnitude.assign(ref.value.size(), 0.0);
  accumulate_product(M, N, rows, inner, cols, ref.value.data(), ref.magnitude.data());
  return ref;
}

std::vector<double> reference_values(const std::vector<float>& M, const std::vector<float>& N,
                                     int rows, int inner, int cols) {
  require_matmul_shape(M, N, rows, inner, cols);
  std::vector<double> value(static_cast<std::size_t>(rows) * cols, 0.0);
  accumulate_product(M, N, rows, inner, cols, value.data(), nullptr);
  return value;
}

}  // namespace kit
