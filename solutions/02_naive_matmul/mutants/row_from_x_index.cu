// kit-mutant: row_from_x_index
// kit-file: naive_matmul.cu
// kit-expect-loss: 10
// kit-expect-hint: time_ratio
// kit-description: takes row from the x indices and col from the y indices: still correct, but neighbouring threads of a warp read N down a column, so loads are not coalesced
#include <cuda_runtime.h>

#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "naive_matmul.h"

namespace lab02 {

// P = M * N for width x width row-major matrices; each thread computes one P element.
__global__ void naive_matmul_kernel(const float* M, const float* N, float* P, int width) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  // The grid is rounded up, so threads past the edge have no element to compute.
  if (row >= width || col >= width) return;

  float Pvalue = 0.0f;
  for (int k = 0; k < width; ++k) {
    Pvalue += M[row * width + k] * N[k * width + col];
  }
  P[row * width + col] = Pvalue;
}

void launch_naive_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int block_size) {
  dim3 block(block_size, block_size);
  int blocks = (width + block_size - 1) / block_size;
  dim3 grid(blocks, blocks);
  naive_matmul_kernel<<<grid, block>>>(d_M, d_N, d_P, width);
  KIT_CHECK_LAUNCH();
}

void naive_matmul(const float* h_M, const float* h_N, float* h_P, int width, int block_size) {
  const char* where = "lab02::naive_matmul";
  kit::require_positive(where, "width", width);
  kit::require_in_range(where, "block_size", block_size, 1, 32);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  const size_t count = static_cast<size_t>(width) * width;
  kit::DeviceBuffer<float> d_M(count), d_N(count), d_P(count);
  d_M.copy_from_host(h_M);
  d_N.copy_from_host(h_N);
  launch_naive_matmul(d_M.data(), d_N.data(), d_P.data(), width, block_size);
  // Launches are asynchronous: errors inside the kernel surface only here.
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  d_P.copy_to_host(h_P);
}

}  // namespace lab02
