// kit-mutant: no_shared_memory
// kit-file: tiled_matmul.cu
// kit-expect-loss: 10
// kit-expect-hint: declare Mds and Nds as __shared__
// kit-description: the naive kernel dressed as the tiled one: the phase loop reads M and N straight from global memory and never uses the tiles
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "tiled_matmul.h"

namespace lab03 {

// P = M * N for width x width row-major matrices, width a multiple of TILE_WIDTH. Each block
// computes one TILE_WIDTH x TILE_WIDTH tile of P, one element per thread, in width / TILE_WIDTH
// phases: in each phase the block copies one tile of M and one tile of N into shared memory,
// and every element copied is then read TILE_WIDTH times from there instead of from DRAM.
template <int TILE_WIDTH>
__global__ void tiled_matmul_kernel(const float* M, const float* N, float* P, int width) {

  int bx = blockIdx.x, by = blockIdx.y;
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = by * TILE_WIDTH + ty;
  int col = bx * TILE_WIDTH + tx;
  float Pvalue = 0.0f;

  for (int ph = 0; ph < width / TILE_WIDTH; ++ph) {

#pragma unroll
    for (int k = 0; k < TILE_WIDTH; ++k) {
      Pvalue += M[row * width + ph * TILE_WIDTH + k] * N[(ph * TILE_WIDTH + k) * width + col];
    }
  }

  P[row * width + col] = Pvalue;
}

namespace {

// The shapes this lab's kernel handles: a tile width it is instantiated for, and a width that
// is a positive multiple of it (lab 04 handles every width).
void require_tiled_shape(const char* where, int width, int tile_width) {
  kit::require_positive(where, "width", width);
  if (tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument(std::string(where) + ": tile_width must be 16 or 32, got " +
                                std::to_string(tile_width));
  }
  if (width % tile_width != 0) {
    throw std::invalid_argument(std::string(where) + ": width must be a multiple of tile_width (" +
                                std::to_string(tile_width) + "), got " + std::to_string(width) +
                                "; lab 04 handles the other widths");
  }
}

template <int TILE_WIDTH>
void launch_with_tile(const float* d_M, const float* d_N, float* d_P, int width) {
  dim3 block(TILE_WIDTH, TILE_WIDTH);
  dim3 grid(width / TILE_WIDTH, width / TILE_WIDTH);
  tiled_matmul_kernel<TILE_WIDTH><<<grid, block>>>(d_M, d_N, d_P, width);
  KIT_CHECK_LAUNCH();
}

}  // namespace

void launch_tiled_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int tile_width) {
  require_tiled_shape("lab03::launch_tiled_matmul", width, tile_width);
  if (tile_width == 16) {
    launch_with_tile<16>(d_M, d_N, d_P, width);
  } else {
    launch_with_tile<32>(d_M, d_N, d_P, width);
  }
}

void tiled_matmul(const float* h_M, const float* h_N, float* h_P, int width, int tile_width) {
  const char* where = "lab03::tiled_matmul";
  require_tiled_shape(where, width, tile_width);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  const size_t count = static_cast<size_t>(width) * width;
  kit::DeviceBuffer<float> d_M(count), d_N(count), d_P(count);
  d_M.copy_from_host(h_M);
  d_N.copy_from_host(h_N);
  launch_tiled_matmul(d_M.data(), d_N.data(), d_P.data(), width, tile_width);
  // Launches are asynchronous: errors inside the kernel surface only here.
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  d_P.copy_to_host(h_P);
}

// The two tile widths, compiled even while launch_with_tile does not launch them yet, because
// the tests read the kernel's attributes (its shared memory) through tiled_matmul.h.
template __global__ void tiled_matmul_kernel<16>(const float*, const float*, float*, int);
template __global__ void tiled_matmul_kernel<32>(const float*, const float*, float*, int);

}  // namespace lab03
