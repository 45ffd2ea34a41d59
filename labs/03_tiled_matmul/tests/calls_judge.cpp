// Lab 03's API on the judge's side: each function sends its call to a worker (kit/remote.hpp).
// Compiled twice: as lab03, served by the student's worker, and, with lab03 renamed
// lab03_reference (cmake/KitLab.cmake), served by the reference's.
#include "block_transpose.h"
#include "calls.hpp"
#include "tiled_matmul.h"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);
}  // namespace

namespace lab03 {

void launch_block_transpose(float* d_A, int A_width, int A_height, int block_width) {
  kit::remote::call<lab03_calls::LaunchBlockTranspose>(role, d_A, A_width, A_height, block_width);
}

void launch_tiled_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int tile_width) {
  kit::remote::call<lab03_calls::LaunchTiledMatmul>(role, d_M, d_N, d_P, width, tile_width);
}

void tiled_matmul(const float* h_M, const float* h_N, float* h_P, int width, int tile_width) {
  kit::remote::call<lab03_calls::TiledMatmul>(role, h_M, h_N, h_P, width, tile_width);
}

}  // namespace lab03
