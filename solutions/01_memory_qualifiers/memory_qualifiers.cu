// Lab 01: memory qualifiers, where each variable lives. Four small kernels, each keeping its data
// in one kind of memory for a reason: __constant__ coefficients every thread reads, a __device__
// counter every thread adds to, a __shared__ partial sum per block, and a private array that
// stays in registers. The write-up is labs/01_memory_qualifiers/README.md; the tests call the
// functions of memory_qualifiers.h.
#include <cuda_runtime.h>

#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "memory_qualifiers.h"

namespace lab01 {

// ---- Part 1: coefficients in constant memory (README section 3) ----

// KIT:TODO(begin) Declare polynomial_coefficients: kMaxCoefficients floats in __constant__
// KIT:TODO        memory, at file scope (README section 3).
__constant__ float polynomial_coefficients[kMaxCoefficients];
// KIT:TODO(end)

const void* polynomial_symbol() {
  // KIT:TODO(begin) Return the address of polynomial_coefficients (host code may take it; it is
  // KIT:TODO        what cudaMemcpyToSymbol and cudaGetSymbolSize accept).
  return &polynomial_coefficients;
  // KIT:SKELETON return nullptr;
  // KIT:TODO(end)
}

void set_polynomial(const float* h_coefficients, int count) {
  const char* where = "lab01::set_polynomial";
  kit::require_not_null(where, "h_coefficients", h_coefficients);
  kit::require_in_range(where, "count", count, 1, kMaxCoefficients);
  // KIT:TODO(begin) Copy the count coefficients into polynomial_coefficients, checked with
  // KIT:TODO        KIT_CUDA_CHECK. README section 3 says which call reaches __constant__ memory.
  KIT_CUDA_CHECK(
      cudaMemcpyToSymbol(polynomial_coefficients, h_coefficients, count * sizeof(float)));
  // KIT:TODO(end)
}

// y[i] = p(x[i]) by Horner's rule: every thread of a warp reads the same coefficient at the same
// time, which constant memory serves to the whole warp at once (a broadcast).
__global__ void evaluate_polynomial_kernel(const float* x, float* y, int n, int count) {
  // KIT:TODO(begin) One thread per element: compute i, return if i >= n, then evaluate the
  // KIT:TODO        polynomial at x[i] from polynomial_coefficients by Horner's rule, keeping
  // KIT:TODO        the running value in an automatic variable, and store it in y[i].
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xi = x[i];
  // An automatic scalar: each thread has its own, in a register.
  float value = polynomial_coefficients[count - 1];
  for (int k = count - 2; k >= 0; --k) {
    value = value * xi + polynomial_coefficients[k];
  }
  y[i] = value;
  // KIT:TODO(end)
}

void launch_evaluate_polynomial(const float* d_x, float* d_y, int n, int count) {
  const char* where = "lab01::launch_evaluate_polynomial";
  kit::require_positive(where, "n", n);
  kit::require_in_range(where, "count", count, 1, kMaxCoefficients);
  // KIT:TODO(begin) Launch evaluate_polynomial_kernel with kThreadsPerBlock threads per block and
  // KIT:TODO        enough blocks to cover n (round up), then KIT_CHECK_LAUNCH().
  const int blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  evaluate_polynomial_kernel<<<blocks, kThreadsPerBlock>>>(d_x, d_y, n, count);
  KIT_CHECK_LAUNCH();
  // KIT:TODO(end)
}

// ---- Part 2: a counter in global memory (README section 4) ----

// KIT:TODO(begin) Declare counter: one unsigned int in global memory, declared __device__ at
// KIT:TODO        file scope (README section 4).
__device__ unsigned int counter;
// KIT:TODO(end)

const void* counter_symbol() {
  // KIT:TODO(begin) Return the address of counter.
  return &counter;
  // KIT:SKELETON return nullptr;
  // KIT:TODO(end)
}

void reset_counter() {
  // KIT:TODO(begin) Set counter to 0 from the host (checked with KIT_CUDA_CHECK).
  const unsigned int zero = 0;
  KIT_CUDA_CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof zero));
  // KIT:TODO(end)
}

unsigned int read_counter() {
  // KIT:TODO(begin) Copy counter's value to the host and return it (the copy waits for the
  // KIT:TODO        kernels launched before it).
  unsigned int value = 0;
  KIT_CUDA_CHECK(cudaMemcpyFromSymbol(&value, counter, sizeof value));
  return value;
  // KIT:SKELETON return 0;
  // KIT:TODO(end)
}

__global__ void count_above_kernel(const float* x, int n, float threshold) {
  // KIT:TODO(begin) One thread per element: if x[i] > threshold, add 1 to counter. Thousands of
  // KIT:TODO        threads add to it at once; README section 4 says how not to lose any.
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > threshold) {
    // A read-modify-write that no other thread's can interleave with.
    atomicAdd(&counter, 1u);
  }
  // KIT:TODO(end)
}

void launch_count_above(const float* d_x, int n, float threshold, int block_size) {
  const char* where = "lab01::launch_count_above";
  kit::require_positive(where, "n", n);
  kit::require_in_range(where, "block_size", block_size, 1, 1024);
  // KIT:TODO(begin) Launch count_above_kernel with block_size threads per block and enough
  // KIT:TODO        blocks to cover n, then KIT_CHECK_LAUNCH().
  const int blocks = (n + block_size - 1) / block_size;
  count_above_kernel<<<blocks, block_size>>>(d_x, n, threshold);
  KIT_CHECK_LAUNCH();
  // KIT:TODO(end)
}

// ---- Part 3: a partial sum per block in shared memory (README section 5) ----

// Block b adds x[b * kThreadsPerBlock ...] in a tree: each step, the lower half of the active
// threads adds the upper half's partial sums to its own.
__global__ void block_sums_kernel(const float* x, float* block_sums, int n) {
  // KIT:TODO(begin) Declare partial, kThreadsPerBlock floats in __shared__ memory. Each thread
  // KIT:TODO        stores its element (0 past n) in partial[threadIdx.x]; then, for stride =
  // KIT:TODO        kThreadsPerBlock / 2 down to 1, threads below stride add partial[tid + stride]
  // KIT:TODO        to partial[tid]; thread 0 stores partial[0] in block_sums[blockIdx.x]. Put a
  // KIT:TODO        __syncthreads() wherever a thread reads what another stored (README section 5).
  __shared__ float partial[kThreadsPerBlock];
  const int tid = threadIdx.x;
  const int i = blockIdx.x * kThreadsPerBlock + tid;
  partial[tid] = i < n ? x[i] : 0.0f;
  // Read-after-write: the tree reads the elements other threads just stored.
  __syncthreads();
  for (int stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    // Read-after-write again: the next step reads the sums this step stored.
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
  // KIT:TODO(end)
}

void launch_block_sums(const float* d_x, float* d_block_sums, int n) {
  kit::require_positive("lab01::launch_block_sums", "n", n);
  // KIT:TODO(begin) Launch block_sums_kernel with kThreadsPerBlock threads per block and one
  // KIT:TODO        block per sum (round up), then KIT_CHECK_LAUNCH().
  const int blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  block_sums_kernel<<<blocks, kThreadsPerBlock>>>(d_x, d_block_sums, n);
  KIT_CHECK_LAUNCH();
  // KIT:TODO(end)
}

// ---- Part 4: a private array in registers (README section 6) ----

// The bin of a value: [0, 1) cut into kBins equal bins, values outside it in the end bins.
// Clamped with min and max: nvcc 13 for sm_90 compiled the same clamp written with ?: inside the
// unrolled bin loop below so that the last bin counted every value (seen on the H100).
__device__ __forceinline__ int bin_of(float value) {
  return min(max(static_cast<int>(value * kBins), 0), kBins - 1);
}

__global__ void chunk_histograms_kernel(const float* x, int n, unsigned int* counts) {
  const int chunk = blockIdx.x * blockDim.x + threadIdx.x;
  const long long first = static_cast<long long>(chunk) * kChunk;
  if (first >= n) return;
  // KIT:TODO(begin) Count the chunk's values (those below n) per bin in a private array of kBins
  // KIT:TODO        counts that stays in registers: index it only with numbers the compiler
  // KIT:TODO        knows, after unrolling (README section 6). Then store the kBins counts in
  // KIT:TODO        counts[chunk * kBins + b].
  unsigned int local_counts[kBins] = {};
  for (int j = 0; j < kChunk && first + j < n; ++j) {
    const int bin = bin_of(x[first + j]);
    // Unrolled, b is a constant in each copy of the body, so local_counts[b] names a register.
#pragma unroll
    for (int b = 0; b < kBins; ++b) {
      local_counts[b] += b == bin ? 1u : 0u;
    }
  }
#pragma unroll
  for (int b = 0; b < kBins; ++b) {
    counts[static_cast<long long>(chunk) * kBins + b] = local_counts[b];
  }
  // KIT:TODO(end)
}

// The same counts, written the short way: local_counts[bin] with bin known only at run time. A
// register has no address to compute, so the compiler puts this array in local memory.
__global__ void chunk_histograms_local_kernel(const float* x, int n, unsigned int* counts) {
  const int chunk = blockIdx.x * blockDim.x + threadIdx.x;
  const long long first = static_cast<long long>(chunk) * kChunk;
  if (first >= n) return;
  unsigned int local_counts[kBins] = {};
  for (int j = 0; j < kChunk && first + j < n; ++j) {
    ++local_counts[bin_of(x[first + j])];
  }
#pragma unroll
  for (int b = 0; b < kBins; ++b) {
    counts[static_cast<long long>(chunk) * kBins + b] = local_counts[b];
  }
}

namespace {

// One thread per chunk of kChunk values.
int chunk_blocks(int n) {
  const int chunks = (n + kChunk - 1) / kChunk;
  return (chunks + kThreadsPerBlock - 1) / kThreadsPerBlock;
}

}  // namespace

void launch_chunk_histograms(const float* d_x, int n, unsigned int* d_counts) {
  kit::require_positive("lab01::launch_chunk_histograms", "n", n);
  chunk_histograms_kernel<<<chunk_blocks(n), kThreadsPerBlock>>>(d_x, n, d_counts);
  KIT_CHECK_LAUNCH();
}

void launch_chunk_histograms_local(const float* d_x, int n, unsigned int* d_counts) {
  kit::require_positive("lab01::launch_chunk_histograms_local", "n", n);
  chunk_histograms_local_kernel<<<chunk_blocks(n), kThreadsPerBlock>>>(d_x, n, d_counts);
  KIT_CHECK_LAUNCH();
}

}  // namespace lab01
