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
  // KIT:TODO(begin) Compute this thread's row (from the y indices) and col (from the x
  // KIT:TODO        indices), return if either lies outside the matrix, then accumulate
  // KIT:TODO        Pvalue over k and store it in P[row * width + col]. README section 3.
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  // The grid is rounded up, so threads past the edge have no element to compute.
  if (row >= width || col >= width) return;

  float Pvalue = 0.0f;
  for (int k = 0; k < width; ++k) {
    Pvalue += M[row * width + k] * N[k * width + col];
  }
  P[row * width + col] = Pvalue;
  // KIT:TODO(end)
}

void launch_naive_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int block_size) {
  // KIT:TODO(begin) Make a block_size x block_size block and a grid with enough blocks to
  // KIT:TODO        cover width in x and in y (round up), launch naive_matmul_kernel and
  // KIT:TODO        check the launch with KIT_CHECK_LAUNCH(). README section 4.
  dim3 block(block_size, block_size);
  int blocks = (width + block_size - 1) / block_size;
  dim3 grid(blocks, blocks);
  naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);
  KIT_CHECK_LAUNCH();
  // KIT:TODO(end)
}

void naive_matmul(const float* h_M, const float* h_N, float* h_P, int width, int block_size) {
  const char* where = "lab02::naive_matmul";
  kit::require_positive(where, "width", width);
  kit::require_in_range(where, "block_size", block_size, 1, 32);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  // KIT:TODO(begin) Allocate d_M, d_N and d_P on the device (kit::DeviceBuffer<float>),
  // KIT:TODO        copy M and N in, call launch_naive_matmul, wait for the kernel with
  // KIT:TODO        KIT_CUDA_CHECK(cudaDeviceSynchronize()), copy P out. README section 5.
  const size_t count = static_cast<size_t>(width) * width;
  kit::DeviceBuffer<float> d_M(count), d_N(count), d_P(count);
  d_M.copy_from_host(h_M);
  d_N.copy_from_host(h_N);
  launch_naive_matmul(d_M.data(), d_N.data(), d_P.data(), width, block_size);
  // Launches are asynchronous: errors inside the kernel surface only here.
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  d_P.copy_to_host(h_P);
  // KIT:TODO(end)
}

}  // namespace lab02
