// Lab 06's API on the judge's side: each function sends its call to a worker (kit/remote.hpp).
// Compiled twice: as lab06, served by the student's worker, and, with lab06 renamed
// lab06_reference (cmake/KitLab.cmake), served by the reference's.
#include "calls.hpp"
#include "occupancy.h"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);
}  // namespace

namespace lab06 {

Occupancy occupancy(const DeviceLimits& device, const KernelUsage& kernel) {
  return kit::remote::call<lab06_calls::Occupancy, Occupancy>(role, device, kernel);
}

std::vector<Occupancy> occupancy_of_each(const DeviceLimits& device,
                                         const std::vector<KernelUsage>& kernels) {
  std::vector<Occupancy> results(kernels.size());
  kit::remote::call<lab06_calls::OccupancyOfEach>(role, device, static_cast<int>(kernels.size()),
                                                  kernels.data(), results.data());
  return results;
}

BlockSizeChoice best_block_size(const DeviceLimits& device, int registers_per_thread,
                                int shared_memory_per_block) {
  return kit::remote::call<lab06_calls::BestBlockSize, BlockSizeChoice>(
      role, device, registers_per_thread, shared_memory_per_block);
}

}  // namespace lab06
