// Lab 02's API on the judge's side: each function sends its call to a worker (kit/remote.hpp).
// Compiled twice: as lab02, served by the student's worker, and, with lab02 renamed
// lab02_reference (cmake/KitLab.cmake), served by the reference's.
#include "calls.hpp"
#include "naive_matmul.h"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);
}  // namespace

namespace lab02 {

void launch_naive_matmul(const float* d_M, const float* d_N, float* d_P, int width,
                         int block_size) {
  kit::remote::call<lab02_calls::LaunchNaiveMatmul>(role, d_M, d_N, d_P, width, block_size);
}

void naive_matmul(const float* h_M, const float* h_N, float* h_P, int width, int block_size) {
  kit::remote::call<lab02_calls::NaiveMatmul>(role, h_M, h_N, h_P, width, block_size);
}

}  // namespace lab02
