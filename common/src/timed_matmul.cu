// Fresh inputs and spot checks for timed matrix products (kit/timed_matmul.hpp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "kit/compare.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/poison.hpp"
#include "kit/timed_matmul.hpp"

namespace kit {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

// splitmix64's finaliser: element i of seed s is a function of (s, i) alone, so any thread can
// draw any element and the host can draw the same sample places.
__host__ __device__ std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__host__ __device__ std::uint64_t draw(std::uint64_t seed, std::uint64_t i) {
  return mix(seed + (i + 1) * 0x9E3779B97F4A7C15ull);
}

__global__ void fill_kernel(float* data, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    // 24 random bits, as random_matrix draws them: every float in [-1, 1) on a grid of 2^-23.
    const double unit = static_cast<double>(draw(seed, i) >> 40) / 16777216.0;
    data[i] = static_cast<float>(2.0 * unit - 1.0);
  }
}

__global__ void find_unwritten_kernel(const float* P, std::size_t count,
                                      unsigned long long* first) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (__float_as_uint(P[i]) == kPoisonBits) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

struct Sample {
  long long index;
  float got;
  double want;
  double magnitude;
};

// One warp per sampled element: the exact sum of products and of their magnitudes, in double.
__global__ void sample_kernel(const float* M, const float* N, const float* P, int rows, int inner,
                              int cols, std::uint64_t seed, Sample* out, int samples) {
  const int s = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (s >= samples) return;
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  const std::size_t e = draw(seed, static_cast<std::uint64_t>(s)) % count;
  const int row = static_cast<int>(e / cols), col = static_cast<int>(e % cols);
  double sum = 0, abs_sum = 0;
  for (int k = lane; k < inner; k += 32) {
    const double term = static_cast<double>(M[static_cast<std::size_t>(row) * inner + k]) *
                        N[static_cast<std::size_t>(k) * cols + col];
    sum += term;
    abs_sum += fabs(term);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    abs_sum += __shfl_down_sync(0xFFFFFFFFu, abs_sum, offset);
  }
  if (lane == 0) out[s] = {static_cast<long long>(e), P[e], sum, abs_sum};
}

int blocks_for(std::size_t count) {
  const std::size_t wanted = (count + kThreads - 1) / kThreads;
  return static_cast<int>(wanted < kMaxBlocks ? (wanted > 0 ? wanted : 1) : kMaxBlocks);
}

}  // namespace

void fill_fresh_inputs(float* d_data, std::size_t count, std::uint64_t seed) {
  fill_kernel<<<blocks_for(count), kThreads>>>(d_data, count, seed);
  KIT_CHECK_LAUNCH();
}

SpotCheck spot_check_matmul(const float* d_M, const float* d_N, const float* d_P, int rows,
                            int inner, int cols, std::uint64_t seed, int samples) {
  if (rows < 1 || inner < 1 || cols < 1 || samples < 1) {
    throw std::invalid_argument("spot_check_matmul: dimensions and samples must be at least 1");
  }
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  SpotCheck check;
  check.samples = samples;

  DeviceBuffer<unsigned long long> d_first(1);
  KIT_CUDA_CHECK(cudaMemset(d_first.data(), 0xFF, sizeof(unsigned long long)));
  find_unwritten_kernel<<<blocks_for(count), kThreads>>>(d_P, count, d_first.data());
  KIT_CHECK_LAUNCH();
  unsigned long long first = 0;
  d_first.copy_to_host(&first);
  if (first != ~0ull) check.unwritten = static_cast<long long>(first);

  DeviceBuffer<Sample> d_samples(samples);
  const int warps_per_block = kThreads / 32;
  sample_kernel<<<(samples + warps_per_block - 1) / warps_per_block, kThreads>>>(
      d_M, d_N, d_P, rows, inner, cols, seed, d_samples.data(), samples);
  KIT_CHECK_LAUNCH();
  std::vector<Sample> got(samples);
  d_samples.copy_to_host(got.data());
  const Tolerance tol;  // the correctness tests' rule, so a kernel that passes them passes this
  for (const Sample& s : got) {
    const double error = std::fabs(static_cast<double>(s.got) - s.want);
    if (!(error <= tol.atol + tol.rtol * s.magnitude)) {  // a NaN is wrong too
      check.wrong = s.index;
      check.got = s.got;
      check.want = s.want;
      break;
    }
  }
  return check;
}

std::string describe_spot_check(const SpotCheck& check, int cols, int call,
                                const std::string& who) {
  std::ostringstream out;
  const long long element = check.unwritten >= 0 ? check.unwritten : check.wrong;
  if (call < 0) {
    out << "the untimed call of " << who << " before the timing";
  } else {
    out << "timed call " << call << " of " << who;
  }
  out << ": P[" << element / cols << "][" << element % cols << "] ";
  if (check.unwritten >= 0) {
    out << "was never written.";
  } else {
    out << "is " << check.got << ", expected " << check.want << ".";
  }
  out << " Every timed call gets new random inputs and a poisoned P, and its result is checked "
         "afterwards, so the kernel must compute all of P from M and N on every call (a result "
         "kept from an earlier call, or work skipped when the pointers repeat, shows up here).";
  return out.str();
}

}  // namespace kit
