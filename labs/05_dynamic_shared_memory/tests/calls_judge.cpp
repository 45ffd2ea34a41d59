// Lab 05's API on the judge's side: each function sends its call to a worker (kit/remote.hpp).
// Compiled twice: as lab05, served by the student's worker, and, with lab05 renamed
// lab05_reference (cmake/KitLab.cmake), served by the reference's.
#include "calls.hpp"
#include "dynamic_matmul.h"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);
}  // namespace

namespace lab05 {

std::size_t shared_bytes_for(int tile_width, int strip_depth) {
  return kit::remote::call<lab05_calls::SharedBytesFor, std::size_t>(role, tile_width, strip_depth);
}

DeviceLimits device_limits() {
  return kit::remote::call<lab05_calls::DeviceLimits, DeviceLimits>(role);
}

int blocks_per_sm(int tile_width, std::size_t shared_bytes) {
  return kit::remote::call<lab05_calls::BlocksPerSm, int>(role, tile_width, shared_bytes);
}

void check_config(const DeviceLimits& limits, int tile_width, int strip_depth) {
  kit::remote::call<lab05_calls::CheckConfig>(role, limits, tile_width, strip_depth);
}

Config choose_config(const DeviceLimits& limits, const OccupancyQuery& occupancy) {
  return kit::remote::call<lab05_calls::ChooseConfigFor, Config>(role, limits, occupancy);
}

Config choose_config() { return kit::remote::call<lab05_calls::ChooseConfig, Config>(role); }

void launch_dynamic_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                           int tile_width, int strip_depth) {
  kit::remote::call<lab05_calls::LaunchDynamicMatmul>(role, d_M, d_N, d_P, I, J, K, tile_width,
                                                      strip_depth);
}

Config dynamic_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K) {
  return kit::remote::call<lab05_calls::DynamicMatmul, Config>(role, h_M, h_N, h_P, I, J, K);
}

}  // namespace lab05
