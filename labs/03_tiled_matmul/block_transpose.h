// Lab 03, part A: the API of the BlockTranspose warm-up. The implementation is in
// block_transpose.cu.
#pragma once

namespace lab03 {

// Transposes in place every block_width x block_width tile of d_A, a row-major matrix of
// A_height rows and A_width columns in device memory: element (r, c) of each tile trades places
// with element (c, r) of the same tile. One block per tile, one thread per element.
// Throws std::invalid_argument unless block_width is 4, 8, 16 or 32, A_width and A_height are
// positive multiples of it and d_A is not null. Checks the launch; does not synchronise.
void launch_block_transpose(float* d_A, int A_width, int A_height, int block_width);

}  // namespace lab03
