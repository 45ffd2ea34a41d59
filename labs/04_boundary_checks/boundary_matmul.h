// Lab 04's API: the tiled matrix multiplication with boundary checks, for matrices of any
// shape. The implementation is in boundary_matmul.cu.
#pragma once

namespace lab04 {

#ifdef __CUDACC__
// P = M * N for width x width row-major matrices of any width: ceil(width / TILE_WIDTH) phases,
// loads outside the matrices fill the tiles with 0, and only threads inside P store.
template <int TILE_WIDTH>
__global__ void tiled_matmul_kernel(const float* M, const float* N, float* P, int width);

// P = M * N for row-major M of I x J, N of J x K and P of I x K, any positive I, J and K.
template <int TILE_WIDTH>
__global__ void rect_matmul_kernel(const float* M, const float* N, float* P, int I, int J, int K);
#endif

// Launches tiled_matmul_kernel<tile_width> on device buffers with enough blocks to cover P.
// Throws std::invalid_argument unless width >= 1 and tile_width is 16 or 32. Checks the
// launch; does not synchronise.
void launch_tiled_matmul(const float* d_M, const float* d_N, float* d_P, int width, int tile_width);

// Launches rect_matmul_kernel<tile_width> on device buffers with enough blocks to cover the
// I x K matrix P. Throws std::invalid_argument unless I, J, K >= 1 and tile_width is 16 or 32.
// Checks the launch; does not synchronise.
void launch_rect_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                        int tile_width);

// The whole host side for P = M * N with M of I x J and N of J x K: allocates, copies in,
// launches, checks, copies P out and frees. Throws std::invalid_argument for a null pointer
// and for what launch_rect_matmul refuses, and kit::CudaError when a CUDA call fails.
void rect_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K,
                 int tile_width);

}  // namespace lab04
