// Lab 05: lab 04's tiled matrix multiplication with its tiles in dynamic shared memory, sized at
// run time for the device at hand. The write-up is labs/05_dynamic_shared_memory/README.md; the
// tests call the functions of dynamic_matmul.h.
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "dynamic_matmul.h"
#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"

namespace lab05 {

// P = M * N, lab 04's rectangular kernel with the two tiles carved from one extern buffer
// (README section 3) and phases strip_depth deep along J (README section 5).
template <int TILE_WIDTH>
__global__ void dynamic_matmul_kernel(const float* M, const float* N, float* P, int I, int J, int K,
                                      int strip_depth) {
  // Keep this line. strip_depth is a multiple of TILE_WIDTH (launch_dynamic_matmul checks), so
  // it changes no value, only what the compiler knows: that every row of Mds starts a multiple
  // of 16 bytes into the buffer. The inner product can then read four floats of Mds with one
  // instruction, as it does from lab 04's static tile; without it the kernel is about a fifth
  // slower (README section 8).
  strip_depth = strip_depth / TILE_WIDTH * TILE_WIDTH;
  // TODO: Parts A and B (README sections 3 to 5): declare one extern __shared__
  //       float buffer and carve Mds (TILE_WIDTH rows of strip_depth floats) at
  //       its start and Nds (strip_depth rows of TILE_WIDTH floats) right after
  //       it. Each phase loads strip_depth / TILE_WIDTH sub-tiles of each matrix
  //       (0.0f outside M or N, as in lab 04), waits, adds strip_depth products,
  //       and waits again; ceil(J / strip_depth) phases; store only inside P.
  //       Part A is the case strip_depth == TILE_WIDTH.
}

namespace {

void require_tile_and_depth(const char* where, int tile_width, int strip_depth) {
  if (tile_width != 8 && tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument(std::string(where) + ": tile_width must be 8, 16 or 32, got " +
                                std::to_string(tile_width));
  }
  if (strip_depth < tile_width || strip_depth % tile_width != 0) {
    throw std::invalid_argument(
        std::string(where) + ": strip_depth must be a positive multiple of " +
        std::to_string(tile_width) + " (tile_width), got " + std::to_string(strip_depth));
  }
}

template <int TILE_WIDTH>
int occupancy_of(std::size_t shared_bytes) {
  // TODO: Part C (README section 7): ask the occupancy API how many blocks of
  //       dynamic_matmul_kernel<TILE_WIDTH>, with TILE_WIDTH * TILE_WIDTH threads
  //       and shared_bytes of dynamic shared memory, fit on one SM.
  return 0;
}

template <int TILE_WIDTH>
void launch(const DeviceLimits& limits, const float* d_M, const float* d_N, float* d_P, int I,
            int J, int K, int strip_depth) {
  // TODO: Parts A and B (README sections 3 and 4): compute the bytes the
  //       configuration needs; above limits.shared_per_block, raise the kernel's
  //       cudaFuncAttributeMaxDynamicSharedMemorySize to them first. Launch
  //       TILE_WIDTH x TILE_WIDTH threads per block, enough blocks to cover the
  //       I x K matrix P, and the bytes as the third launch parameter. Then
  //       KIT_CHECK_LAUNCH().
}

}  // namespace

std::size_t shared_bytes_for(int tile_width, int strip_depth) {
  // TODO: Part A (README section 3): the bytes Mds and Nds need together.
  return 0;
}

DeviceLimits device_limits() {
  // TODO: Part C (README section 7): fill the three limits from the current
  //       device's cudaDeviceProp (cudaGetDevice, cudaGetDeviceProperties).
  return {};
}

int blocks_per_sm(int tile_width, std::size_t shared_bytes) {
  switch (tile_width) {
    case 8: return occupancy_of<8>(shared_bytes);
    case 16: return occupancy_of<16>(shared_bytes);
    case 32: return occupancy_of<32>(shared_bytes);
    default:
      throw std::invalid_argument("lab05::blocks_per_sm: tile_width must be 8, 16 or 32, got " +
                                  std::to_string(tile_width));
  }
}

void check_config(const DeviceLimits& limits, int tile_width, int strip_depth) {
  const char* where = "lab05::check_config";
  require_tile_and_depth(where, tile_width, strip_depth);
  // TODO: Part B (README section 4): throw std::invalid_argument when the block
  //       has more threads than limits.max_threads_per_block, or needs more bytes
  //       than limits.shared_per_block_optin; name what was asked and the limit.
}

Config choose_config(const DeviceLimits& limits, const OccupancyQuery& occupancy) {
  // TODO: Part C (README section 7): among tile widths 8, 16, 32 and strip depths
  //       that are multiples of the tile, keep what the device can run (threads,
  //       shared memory after opting in, at least one block per SM by
  //       `occupancy`), choose one, fill every field of Config and explain the
  //       choice in reason with the numbers behind it.
  return {};
}

Config choose_config() {
  // A lambda rather than blocks_per_sm itself: std::function would otherwise record the type of
  // a plain function pointer, a symbol outside namespace lab05 that the grader refuses.
  return choose_config(device_limits(),
                       [](int tile, std::size_t bytes) { return blocks_per_sm(tile, bytes); });
}

void launch_dynamic_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                           int tile_width, int strip_depth) {
  const char* where = "lab05::launch_dynamic_matmul";
  kit::require_positive(where, "I", I);
  kit::require_positive(where, "J", J);
  kit::require_positive(where, "K", K);
  require_tile_and_depth(where, tile_width, strip_depth);
  // Too many threads or too much shared memory is the caller's mistake, said before launching,
  // not a launch failure to decode afterwards.
  const DeviceLimits limits = device_limits();
  check_config(limits, tile_width, strip_depth);
  if (tile_width == 8) {
    launch<8>(limits, d_M, d_N, d_P, I, J, K, strip_depth);
  } else if (tile_width == 16) {
    launch<16>(limits, d_M, d_N, d_P, I, J, K, strip_depth);
  } else {
    launch<32>(limits, d_M, d_N, d_P, I, J, K, strip_depth);
  }
}

Config dynamic_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K) {
  const char* where = "lab05::dynamic_matmul";
  kit::require_positive(where, "I", I);
  kit::require_positive(where, "J", J);
  kit::require_positive(where, "K", K);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  const Config config = choose_config();
  kit::DeviceBuffer<float> d_M(static_cast<std::size_t>(I) * J);
  kit::DeviceBuffer<float> d_N(static_cast<std::size_t>(J) * K);
  kit::DeviceBuffer<float> d_P(static_cast<std::size_t>(I) * K);
  d_M.copy_from_host(h_M);
  d_N.copy_from_host(h_N);
  launch_dynamic_matmul(d_M.data(), d_N.data(), d_P.data(), I, J, K, config.tile_width,
                        config.strip_depth);
  // Launches are asynchronous: errors inside the kernel surface only here.
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  d_P.copy_to_host(h_P);
  return config;
}

// All three tile widths, compiled even while the launches above are still TODOs, because the
// tests read the kernels' attributes through the header.
template __global__ void dynamic_matmul_kernel<8>(const float*, const float*, float*, int, int, int,
                                                  int);
template __global__ void dynamic_matmul_kernel<16>(const float*, const float*, float*, int, int,
                                                   int, int);
template __global__ void dynamic_matmul_kernel<32>(const float*, const float*, float*, int, int,
                                                   int, int);

}  // namespace lab05
