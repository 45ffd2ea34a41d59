// Lab 04's API on the judge's side: each function sends its call to a worker (kit/remote.hpp).
// Compiled twice: as lab04, served by the student's worker, and, with lab04 renamed
// lab04_reference (cmake/KitLab.cmake), served by the reference's.
#include "boundary_matmul.h"
#include "calls.hpp"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);
}  // namespace

namespace lab04 {

void launch_tiled_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int tile_width) {
  kit::remote::call<lab04_calls::LaunchTiledMatmul>(role, d_M, d_N, d_P, width, tile_width);
}

void launch_rect_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                        int tile_width) {
  kit::remote::call<lab04_calls::LaunchRectMatmul>(role, d_M, d_N, d_P, I, J, K, tile_width);
}

void rect_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K,
                 int tile_width) {
  kit::remote::call<lab04_calls::RectMatmul>(role, h_M, h_N, h_P, I, J, K, tile_width);
}

}  // namespace lab04
