// Lab 04: the tiled matrix multiplication of lab 03 made safe for any shape: square matrices of
// any width first, then rectangular ones. The write-up is labs/04_boundary_checks/README.md;
// the tests call the functions of boundary_matmul.h.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "boundary_matmul.h"
#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"

namespace lab04 {

// P = M * N for width x width row-major matrices of any width. Lab 03's kernel with the three
// changes of README section 3: ceil(width / TILE_WIDTH) phases, loads that fill the tiles with
// 0 where they fall outside M or N, and a store only from threads inside P.
template <int TILE_WIDTH>
__global__ void tiled_matmul_kernel(const float* M, const float* N, float* P, int width) {
  // TODO: Part A (README sections 2 to 4): your lab 03 kernel, changed so that it
  //       is right for every width: run ceil(width / TILE_WIDTH) phases, load 0.0f
  //       into Mds[ty][tx] or Nds[ty][tx] where the element lies outside the
  //       matrix, and store Pvalue only where row and col lie inside P. Every
  //       thread must reach both __syncthreads() of every phase: do not return early.
}

// P = M * N for row-major M of I x J, N of J x K and P of I x K. The block grid covers P, so
// rows are bounded by I and columns by K; the phases walk the shared dimension J.
template <int TILE_WIDTH>
__global__ void rect_matmul_kernel(const float* M, const float* N, float* P, int I, int J, int K) {
  // TODO: Part B (README section 5): the same kernel for M of I x J and N of J x K.
  //       Rows of P are bounded by I and its columns by K; the phases run along J.
  //       M has J columns and N has K columns, which their indexing must use.
}

namespace {

void require_tile(const char* where, int tile_width) {
  if (tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument(std::string(where) + ": tile_width must be 16 or 32, got " +
                                std::to_string(tile_width));
  }
}

template <int TILE_WIDTH>
void launch_square(const float* d_M, const float* d_N, float* d_P, int width) {
  // TODO: Launch tiled_matmul_kernel<TILE_WIDTH> with TILE_WIDTH x TILE_WIDTH
  //       threads per block and enough blocks to cover P in x and y: round up,
  //       (width + TILE_WIDTH - 1) / TILE_WIDTH. Then KIT_CHECK_LAUNCH().
}

template <int TILE_WIDTH>
void launch_rect(const float* d_M, const float* d_N, float* d_P, int I, int J, int K) {
  // TODO: Launch rect_matmul_kernel<TILE_WIDTH> with TILE_WIDTH x TILE_WIDTH
  //       threads per block and enough blocks to cover the I x K matrix P: x runs
  //       along the K columns, y along the I rows (README section 5).
}

}  // namespace

void launch_tiled_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int tile_width) {
  const char* where = "lab04::launch_tiled_matmul";
  kit::require_positive(where, "width", width);
  require_tile(where, tile_width);
  if (tile_width == 16) {
    launch_square<16>(d_M, d_N, d_P, width);
  } else {
    launch_square<32>(d_M, d_N, d_P, width);
  }
}

void launch_rect_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                        int tile_width) {
  const char* where = "lab04::launch_rect_matmul";
  kit::require_positive(where, "I", I);
  kit::require_positive(where, "J", J);
  kit::require_positive(where, "K", K);
  require_tile(where, tile_width);
  if (tile_width == 16) {
    launch_rect<16>(d_M, d_N, d_P, I, J, K);
  } else {
    launch_rect<32>(d_M, d_N, d_P, I, J, K);
  }
}

void rect_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K,
                 int tile_width) {
  const char* where = "lab04::rect_matmul";
  kit::require_positive(where, "I", I);
  kit::require_positive(where, "J", J);
  kit::require_positive(where, "K", K);
  require_tile(where, tile_width);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  kit::DeviceBuffer<float> d_M(static_cast<size_t>(I) * J);
  kit::DeviceBuffer<float> d_N(static_cast<size_t>(J) * K);
  kit::DeviceBuffer<float> d_P(static_cast<size_t>(I) * K);
  d_M.copy_from_host(h_M);
  d_N.copy_from_host(h_N);
  launch_rect_matmul(d_M.data(), d_N.data(), d_P.data(), I, J, K, tile_width);
  // Launches are asynchronous: errors inside the kernel surface only here.
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  d_P.copy_to_host(h_P);
}

// Both tile widths of both kernels, compiled even while the launches above are still TODOs,
// because the tests read the kernels' attributes (their shared memory) through the header.
template __global__ void tiled_matmul_kernel<16>(const float*, const float*, float*, int);
template __global__ void tiled_matmul_kernel<32>(const float*, const float*, float*, int);
template __global__ void rect_matmul_kernel<16>(const float*, const float*, float*, int, int, int);
template __global__ void rect_matmul_kernel<32>(const float*, const float*, float*, int, int, int);

}  // namespace lab04
