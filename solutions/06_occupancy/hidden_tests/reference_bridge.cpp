// Declares the lab's API under the reference library's namespace (lab06_reference, as
// cmake/KitLab.cmake compiles it) and forwards to it.
#define lab06 lab06_reference
#include "device_presets.h"
#include "occupancy.h"
#undef lab06

#include "reference_bridge.hpp"

namespace lab06_tests {

ReferenceOccupancy reference_occupancy(const std::string& cc, int threads_per_block,
                                       int registers_per_thread, int shared_memory_per_block) {
  const lab06_reference::Occupancy o = lab06_reference::occupancy(
      lab06_reference::device_preset(cc),
      lab06_reference::KernelUsage{threads_per_block, registers_per_thread,
                                   shared_memory_per_block});
  return ReferenceOccupancy{o.warps_per_block,    o.registers_per_block, o.shared_memory_per_block,
                            o.blocks_by_warps,    o.blocks_by_registers, o.blocks_by_shared_memory,
                            o.blocks_by_sm_limit, o.active_blocks,       o.active_warps,
                            o.occupancy,          o.limited_by};
}

}  // namespace lab06_tests
