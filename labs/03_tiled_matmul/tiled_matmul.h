// Lab 03, part B: the API of the tiled matrix multiplication. The implementation is in
// tiled_matmul.cu.
#pragma once

namespace lab03 {

#ifdef __CUDACC__
// P = M * N for width x width row-major matrices, width a multiple of TILE_WIDTH; one block per
// TILE_WIDTH x TILE_WIDTH tile of P. tiled_matmul.cu instantiates it for TILE_WIDTH 16 and 32.
// Declared here so that the tests can ask the CUDA runtime what the compiler gave it.
template <int TILE_WIDTH>
__global__ void tiled_matmul_kernel(const float* M, const float* N, float* P, int width);
#endif

// Launches tiled_matmul_kernel<tile_width> on device buffers: P = M * N for width x width
// row-major matrices. Throws std::invalid_argument unless tile_width is 16 or 32 and width is a
// positive multiple of it. Checks the launch; does not synchronise.
void launch_tiled_matmul(const float* d_M, const float* d_N, float* d_P, int width, int tile_width);

// The whole host side: allocates device memory, copies M and N in, launches, checks, copies P
// out and frees. Throws std::invalid_argument for a null pointer and for the widths and tiles
// launch_tiled_matmul refuses, and kit::CudaError when a CUDA call fails.
void tiled_matmul(const float* h_M, const float* h_N, float* h_P, int width, int tile_width);

}  // namespace lab03
