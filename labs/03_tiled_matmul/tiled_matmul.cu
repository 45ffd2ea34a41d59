// Lab 03, part B: tiled matrix multiplication through shared memory, for widths that are a
// multiple of the tile. The write-up is labs/03_tiled_matmul/README.md; the tests call the
// functions of tiled_matmul.h.
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
  // TODO: Step 1 (README section 5): declare the two tiles in shared memory, Mds and
  //       Nds, each TILE_WIDTH x TILE_WIDTH floats.

  // TODO: Step 2: compute the row and col of the P element this thread owns (a block
  //       is one tile, TILE_WIDTH threads wide), and start Pvalue at 0.

  // TODO: Step 3: loop over the phases, ph = 0 to width / TILE_WIDTH - 1. In each,
  //       copy one element of M into Mds[ty][tx] and one of N into Nds[ty][tx],
  //       wait for the whole block, add this phase's TILE_WIDTH products to Pvalue,
  //       and wait again. Say why in a comment at each __syncthreads() (section 6).

  // TODO: Step 4: store Pvalue in P.
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
  // TODO: Launch tiled_matmul_kernel<TILE_WIDTH> with TILE_WIDTH x TILE_WIDTH threads
  //       per block and width / TILE_WIDTH blocks in x and in y (one block per tile
  //       of P), then check the launch with KIT_CHECK_LAUNCH(). README section 7.
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
