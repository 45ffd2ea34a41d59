// The double-precision reference computed on the GPU by a kit kernel: the tests' reference for
// every large matrix product, because the host loop is O(rows * inner * cols) on one CPU core and
// cost most of a grading run. The host loop stays as the check of this kernel (common/tests), as
// the reference for small products (matmul_reference, below, says why) and as the reference where
// no GPU is usable.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/gpu.hpp"
#include "kit/matrix.hpp"

namespace kit {
namespace {

constexpr int kTile = 16;

// One thread per element of P, as in lab 04's tiled kernel, but in double and with a second
// accumulator for the sum of |terms| that sets the tolerance.
__global__ void reference_matmul_kernel(const float* M, const float* N, double* value,
                                        double* magnitude, int rows, int inner, int cols) {
  __shared__ double Mds[kTile][kTile];
  __shared__ double Nds[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty;
  const int col = blockIdx.x * kTile + tx;
  double sum = 0.0, abs_sum = 0.0;
  for (int ph = 0; ph < (inner + kTile - 1) / kTile; ++ph) {
    const int m_col = ph * kTile + tx, n_row = ph * kTile + ty;
    Mds[ty][tx] =
        row < rows && m_col < inner ? M[static_cast<std::size_t>(row) * inner + m_col] : 0.0;
    Nds[ty][tx] =
        n_row < inner && col < cols ? N[static_cast<std::size_t>(n_row) * cols + col] : 0.0;
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < kTile; ++k) {
      const double term = Mds[ty][k] * Nds[k][tx];  // exact: a product of two floats
      sum += term;
      abs_sum += fabs(term);
    }
    __syncthreads();  // everyone is done with the tiles before they are overwritten
  }
  if (row < rows && col < cols) {
    value[static_cast<std::size_t>(row) * cols + col] = sum;
    magnitude[static_cast<std::size_t>(row) * cols + col] = abs_sum;
  }
}

// x_j in [0.5, 1.5): positive, so that it also checks the magnitudes, and never zero.
std::vector<double> probe_vector(std::size_t size) {
  std::vector<double> x(size);
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  for (double& v : x) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = 0.5 + static_cast<double>(state >> 11) / 9007199254740992.0;
  }
  return x;
}

}  // namespace

MatmulReference reference_matmul_on_device(const std::vector<float>& M, const std::vector<float>& N,
                                           int rows, int inner, int cols) {
  require_matmul_shape(M, N, rows, inner, cols);
  DeviceBuffer<float> d_M(M.size()), d_N(N.size());
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  DeviceBuffer<double> d_value(count), d_magnitude(count);
  d_M.copy_from_host(M.data());
  d_N.copy_from_host(N.data());
  const dim3 block(kTile, kTile);
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  reference_matmul_kernel<<<grid, block>>>(d_M.data(), d_N.data(), d_value.data(),
                                           d_magnitude.data(), rows, inner, cols);
  KIT_CHECK_LAUNCH();
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  MatmulReference ref;
  ref.rows = rows;
  ref.cols = cols;
  ref.value.resize(count);
  ref.magnitude.resize(count);
  d_value.copy_to_host(ref.value.data());
  d_magnitude.copy_to_host(ref.magnitude.data());
  verify_reference(M, N, ref, inner);
  return ref;
}

namespace {

// Whether matmul_reference and product_values compute a product on the host. A judge whose calls
// all go to its worker has no CUDA context, and making one for the reference costs more than the
// host loop up to 2^31 terms: the loop (i-k-j order, -O3) took 39 ms for 512^3 and 0.31 s for
// 1000^3 on a 2-core build machine, while a context costs a test process 0.4 s (median) with
// eight test processes on the GPU, and slows every other process there (bench/RESULTS.md, "Where
// a split test's time goes"; timed again on another day in "A wrong result's diagnosis, on the
// host", the loop took 0.63-0.70 s for 1024^3). Where a context exists anyway (a timed test, a
// process that is not a judge), the GPU kernel takes products above 2^24 terms. Both sum every
// element's exact terms in the order of k, so they agree to the bit.
bool on_host(int rows, int inner, int cols) {
  constexpr double kHostTerms = 16777216.0;                  // 2^24
  constexpr double kHostTermsWithoutContext = 2147483648.0;  // 2^31: 1290^3
  const double terms = static_cast<double>(rows) * inner * cols;
  return terms <= kHostTerms || !gpu_status().usable ||
         (terms <= kHostTermsWithoutContext && !has_cuda_context());
}

}  // namespace

MatmulReference matmul_reference(const std::vector<float>& M, const std::vector<float>& N, int rows,
                                 int inner, int cols) {
  if (on_host(rows, inner, cols)) return reference_matmul(M, N, rows, inner, cols);
  return reference_matmul_on_device(M, N, rows, inner, cols);
}

std::vector<double> product_values(const std::vector<float>& M, const std::vector<float>& N,
                                   int rows, int inner, int cols) {
  if (on_host(rows, inner, cols)) return reference_values(M, N, rows, inner, cols);
  return std::move(reference_matmul_on_device(M, N, rows, inner, cols).value);
}

void verify_reference(const std::vector<float>& M, const std::vector<float>& N,
                      const MatmulReference& ref, int inner) {
  // Freivalds' check, O(size) instead of O(rows * inner * cols): value * x must equal
  // M * (N * x), and magnitude * x must equal |M| * (|N| * x). Both sides are double sums of
  // exact products, so they differ by rounding alone: far below the tests' tolerance.
  const int rows = ref.rows, cols = ref.cols;
  require_matmul_shape(M, N, rows, inner, cols);
  const std::vector<double> x = probe_vector(cols);
  std::vector<double> Nx(inner, 0.0), absNx(inner, 0.0);
  for (int k = 0; k < inner; ++k) {
    for (int j = 0; j < cols; ++j) {
      const double n = N[static_cast<std::size_t>(k) * cols + j];
      Nx[k] += n * x[j];
      absNx[k] += std::fabs(n) * x[j];
    }
  }
  for (int i = 0; i < rows; ++i) {
    double want = 0, want_abs = 0, got = 0, got_abs = 0;
    for (int k = 0; k < inner; ++k) {
      const double m = M[static_cast<std::size_t>(i) * inner + k];
      want += m * Nx[k];
      want_abs += std::fabs(m) * absNx[k];
    }
    for (int j = 0; j < cols; ++j) {
      got += ref.value[static_cast<std::size_t>(i) * cols + j] * x[j];
      got_abs += ref.magnitude[static_cast<std::size_t>(i) * cols + j] * x[j];
    }
    const double bound = 1e-9 * want_abs + 1e-300;
    if (!(std::fabs(got - want) <= bound) || !(std::fabs(got_abs - want_abs) <= bound)) {
      std::ostringstream out;
      out << "kit problem: the device reference fails its host check in row " << i << " (value "
          << got << " vs " << want << ", magnitude " << got_abs << " vs " << want_abs
          << "); the grade cannot be trusted: tell the course staff";
      throw std::logic_error(out.str());
    }
  }
}

}  // namespace kit
