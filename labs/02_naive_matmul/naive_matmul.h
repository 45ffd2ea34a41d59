// Lab 02's API: what the tests call. The implementations live in naive_matmul.cu.
#pragma once

namespace lab02 {

// Launches naive_matmul_kernel on device buffers: P = M * N for width x width row-major
// matrices, with block_size x block_size threads per block and enough blocks to cover P.
// Checks the launch; does not synchronise.
void launch_naive_matmul(const float* d_M, const float* d_N, float* d_P, int width, int block_size);

// The whole host side: allocates device memory, copies M and N in, launches, checks,
// copies P out and frees. Throws std::invalid_argument for a width below 1, a null pointer
// or a block size outside 1..32, and kit::CudaError when a CUDA call fails.
void naive_matmul(const float* h_M, const float* h_N, float* h_P, int width, int block_size);

}  // namespace lab02
