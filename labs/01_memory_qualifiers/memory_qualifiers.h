// Lab 01's API: what the tests call. The implementations live in memory_qualifiers.cu, one part
// per memory a variable can live in (README sections 3 to 6).
#pragma once

namespace lab01 {

// Part 1 (README section 3): polynomial coefficients in __constant__ memory.
// The __constant__ array holds up to this many coefficients, c[0] + c[1] x + c[2] x^2 + ...
constexpr int kMaxCoefficients = 16;
// Threads per block of every launcher of this lab except launch_count_above, which takes its own.
constexpr int kThreadsPerBlock = 256;

// Copies `count` coefficients from host memory into the __constant__ array. Throws
// std::invalid_argument for a null pointer or a count outside 1..kMaxCoefficients.
void set_polynomial(const float* h_coefficients, int count);

// The __constant__ array as host code names it (its address in host code), so that the tests
// can ask cudaGetSymbolSize about it and copy into it and out of it themselves.
const void* polynomial_symbol();

// y[i] = c[0] + c[1] x[i] + ... + c[count - 1] x[i]^(count - 1) for 0 <= i < n, with the
// coefficients last copied into the __constant__ array. Checks the launch; does not synchronise.
void launch_evaluate_polynomial(const float* d_x, float* d_y, int n, int count);

// Part 2 (README section 4): a counter in global memory, declared __device__.
// The counter as host code names it.
const void* counter_symbol();
// Sets the counter to 0.
void reset_counter();
// The counter's value (waits for the kernels launched before it).
unsigned int read_counter();
// Adds to the counter how many of x[0..n-1] are greater than threshold; block_size threads per
// block (1 to 1024) and enough blocks to cover n. Checks the launch; does not synchronise.
void launch_count_above(const float* d_x, int n, float threshold, int block_size);

// Part 3 (README section 5): a partial sum per block in __shared__ memory.
// block_sums[b] = x[b * kThreadsPerBlock] + ... + x[b * kThreadsPerBlock + kThreadsPerBlock - 1],
// the elements at n and beyond counting as 0, for each of the ceil(n / kThreadsPerBlock) blocks.
void launch_block_sums(const float* d_x, float* d_block_sums, int n);

// Part 4 (README section 6): a private array that stays in registers.
// Values in [0, 1) fall into kBins bins of width 1 / kBins (a value outside goes to the nearest
// end bin); each thread counts the values of one chunk of kChunk consecutive elements.
constexpr int kBins = 8;
constexpr int kChunk = 32;
// counts[t * kBins + b] = how many of x[t * kChunk .. t * kChunk + kChunk - 1] (those below n) fall
// into bin b, for each of the ceil(n / kChunk) chunks t. Its counts stay in registers.
void launch_chunk_histograms(const float* d_x, int n, unsigned int* d_counts);
// The same counts from a kernel whose counts live in local memory (README section 6 says why).
void launch_chunk_histograms_local(const float* d_x, int n, unsigned int* d_counts);

#ifdef __CUDACC__
// Declared here so that the tests can ask the CUDA runtime what the compiler gave each kernel.
__global__ void evaluate_polynomial_kernel(const float* x, float* y, int n, int count);
__global__ void count_above_kernel(const float* x, int n, float threshold);
__global__ void block_sums_kernel(const float* x, float* block_sums, int n);
__global__ void chunk_histograms_kernel(const float* x, int n, unsigned int* counts);
__global__ void chunk_histograms_local_kernel(const float* x, int n, unsigned int* counts);
#endif

}  // namespace lab01
