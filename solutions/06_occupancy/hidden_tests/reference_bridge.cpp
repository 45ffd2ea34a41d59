// Declares the lab's API under the reference library's namespace (lab06_reference, as
// cmake/KitLab.cmake compiles it) and forwards to it.
#define lab06 lab06_reference
#include "calls.hpp"  // lab06_reference::occupancy_of_each, a call to the reference's worker
#include "device_presets.h"
#include "occupancy.h"
#undef lab06

#include "reference_bridge.hpp"

namespace lab06_tests {

namespace {

ReferenceOccupancy plain(const lab06_reference::Occupancy& o) {
  return ReferenceOccupancy{o.warps_per_block,    o.registers_per_block, o.shared_memory_per_block,
                            o.blocks_by_warps,    o.blocks_by_registers, o.blocks_by_shared_memory,
                            o.blocks_by_sm_limit, o.active_blocks,       o.active_warps,
                            o.occupancy,          o.limited_by};
}

}  // namespace

std::vector<ReferenceOccupancy> reference_occupancy_of_each(
    const std::string& cc, const std::vector<ReferenceKernel>& kernels) {
  std::vector<lab06_reference::KernelUsage> usages;
  for (const ReferenceKernel& k : kernels) {
    usages.push_back({k.threads_per_block, k.registers_per_thread, k.shared_memory_per_block});
  }
  std::vector<ReferenceOccupancy> answers;
  for (const lab06_reference::Occupancy& o :
       lab06_reference::occupancy_of_each(lab06_reference::device_preset(cc), usages)) {
    answers.push_back(plain(o));
  }
  return answers;
}

}  // namespace lab06_tests
