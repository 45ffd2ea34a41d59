// The one lab 05 test file that nvcc compiles: it names the student's __global__ templates,
// which only CUDA code can, so that the Catch2 tests (plain C++) can read their attributes and
// ask the occupancy API about them independently of the student's host code.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "dynamic_matmul.h"
#include "kit/cuda_check.hpp"
#include "kit/kernel_attributes.hpp"

namespace lab05_tests {

kit::KernelAttributes kernel_attributes(int tile_width) {
  switch (tile_width) {
    case 8: return kit::kernel_attributes(&lab05::dynamic_matmul_kernel<8>);
    case 16: return kit::kernel_attributes(&lab05::dynamic_matmul_kernel<16>);
    case 32: return kit::kernel_attributes(&lab05::dynamic_matmul_kernel<32>);
    default:
      throw std::invalid_argument("kernel_attributes: no kernel for tile width " +
                                  std::to_string(tile_width));
  }
}

namespace {

template <int TILE_WIDTH>
int occupancy(std::size_t shared_bytes) {
  int blocks = 0;
  KIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, lab05::dynamic_matmul_kernel<TILE_WIDTH>, TILE_WIDTH * TILE_WIDTH, shared_bytes));
  return blocks;
}

}  // namespace

int expected_blocks_per_sm(int tile_width, std::size_t shared_bytes) {
  switch (tile_width) {
    case 8: return occupancy<8>(shared_bytes);
    case 16: return occupancy<16>(shared_bytes);
    case 32: return occupancy<32>(shared_bytes);
    default:
      throw std::invalid_argument("expected_blocks_per_sm: no kernel for tile width " +
                                  std::to_string(tile_width));
  }
}

}  // namespace lab05_tests
