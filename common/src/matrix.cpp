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

MatmulReference reference_matmul(const std::vector<float>& M, const std::vector<float>& N, int rows,
                                 int inner, int cols) {
  require_matmul_shape(M, N, rows, inner, cols);
  MatmulReference ref;
  ref.rows = rows;
  ref.cols = cols;
  ref.value.assign(static_cast<std::size_t>(rows) * cols, 0.0);
  ref.magnitude.assign(ref.value.size(), 0.0);
  // i-k-j order walks N and P along rows, which keeps the host reference fast enough for
  // widths in the low thousands.
  for (int i = 0; i < rows; ++i) {
    double* value_row = &ref.value[static_cast<std::size_t>(i) * cols];
    double* magnitude_row = &ref.magnitude[static_cast<std::size_t>(i) * cols];
    for (int k = 0; k < inner; ++k) {
      const double m = M[static_cast<std::size_t>(i) * inner + k];
      const float* n_row = &N[static_cast<std::size_t>(k) * cols];
      for (int j = 0; j < cols; ++j) {
        const double term = m * n_row[j];
        value_row[j] += term;
        magnitude_row[j] += std::fabs(term);
      }
    }
  }
  return ref;
}

}  // namespace kit
