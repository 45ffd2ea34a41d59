// Lab 02: naive matrix multiplication, one thread per element of P.
// The write-up is labs/02_naive_matmul/README.md; the tests call the functions of
// naive_matmul.h.
#include <cuda_runtime.h>

#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "naive_matmul.h"

namespace lab02 {

// P = M * N for width x width row-major matrices; each thread computes one P element.
__global__ void naive_matmul_kernel(const float* M, const float* N, float* P, int width) {
  // TODO: Compute this thread's row (from the y indices) and col (from the x
  //       indices), return if either lies outside the matrix, then accumulate
  //       Pvalue over k and store it in P[row * width + col]. README section 3.
}

void launch_naive_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int block_size) {
  // TODO: Make a block_size x block_size block and a grid with enough blocks to
  //       cover width in x and in y (round up), launch naive_matmul_kernel and
  //       check the launch with KIT_CHECK_LAUNCH(). README section 4.
}

void naive_matmul(const float* h_M, const float* h_N, float* h_P, int width, int block_size) {
  const char* where = "lab02::naive_matmul";
  kit::require_positive(where, "width", width);
  kit::require_in_range(where, "block_size", block_size, 1, 32);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  // TODO: Allocate d_M, d_N and d_P on the device (kit::DeviceBuffer<float>),
  //       copy M and N in, call launch_naive_matmul, wait for the kernel with
  //       KIT_CUDA_CHECK(cudaDeviceSynchronize()), copy P out. README section 5.
}

}  // namespace lab02
