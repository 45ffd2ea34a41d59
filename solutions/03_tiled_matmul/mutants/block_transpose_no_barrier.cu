// kit-mutant: block_transpose_no_barrier
// kit-file: block_transpose.cu
// kit-expect-loss: 8
// kit-expect-hint: between the store to blockA and the read of blockA
// kit-description: the textbook's BlockTranspose as printed: no barrier between staging the tile in shared memory and reading it back mirrored, so threads of one warp read elements other warps have not stored yet
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "block_transpose.h"
#include "kit/args.hpp"
#include "kit/cuda_check.hpp"

namespace lab03 {

// One block per BLOCK_WIDTH x BLOCK_WIDTH tile of A, one thread per element: each thread stages
// its element in shared memory, then writes back the element mirrored across the tile's
// diagonal. A_height is unused: the grid alone says how many tiles there are.
template <int BLOCK_WIDTH>
__global__ void block_transpose_kernel(float* A_elements, int A_width, int A_height) {
  __shared__ float blockA[BLOCK_WIDTH][BLOCK_WIDTH];

  int baseIdx = blockIdx.x * BLOCK_WIDTH + threadIdx.x;
  baseIdx += (blockIdx.y * BLOCK_WIDTH + threadIdx.y) * A_width;

  blockA[threadIdx.y][threadIdx.x] = A_elements[baseIdx];
  A_elements[baseIdx] = blockA[threadIdx.x][threadIdx.y];
}

namespace {

template <int BLOCK_WIDTH>
void launch_with_block(float* d_A, int A_width, int A_height) {
  dim3 block(BLOCK_WIDTH, BLOCK_WIDTH);
  dim3 grid(A_width / BLOCK_WIDTH, A_height / BLOCK_WIDTH);
  block_transpose_kernel<BLOCK_WIDTH><<<grid, block>>>(d_A, A_width, A_height);
  KIT_CHECK_LAUNCH();
}

void require_multiple(const char* where, const char* name, int value, int block_width) {
  if (value % block_width == 0) return;
  throw std::invalid_argument(std::string(where) + ": " + name + " must be a multiple of " +
                              "block_width (" + std::to_string(block_width) + "), got " +
                              std::to_string(value));
}

}  // namespace

void launch_block_transpose(float* d_A, int A_width, int A_height, int block_width) {
  const char* where = "lab03::launch_block_transpose";
  if (block_width != 4 && block_width != 8 && block_width != 16 && block_width != 32) {
    throw std::invalid_argument(std::string(where) + ": block_width must be 4, 8, 16 or 32, got " +
                                std::to_string(block_width));
  }
  kit::require_positive(where, "A_width", A_width);
  kit::require_positive(where, "A_height", A_height);
  require_multiple(where, "A_width", A_width, block_width);
  require_multiple(where, "A_height", A_height, block_width);
  kit::require_not_null(where, "d_A", d_A);

  switch (block_width) {
    case 4: launch_with_block<4>(d_A, A_width, A_height); break;
    case 8: launch_with_block<8>(d_A, A_width, A_height); break;
    case 16: launch_with_block<16>(d_A, A_width, A_height); break;
    default: launch_with_block<32>(d_A, A_width, A_height); break;
  }
}

}  // namespace lab03
