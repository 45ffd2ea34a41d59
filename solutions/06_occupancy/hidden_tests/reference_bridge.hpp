// The hidden tests' door to the reference calculator: the library lab06_reference, the
// reference occupancy.cu compiled with its namespace renamed so that it links next to the
// student's. Plain types here, so that this header can sit beside occupancy.h.
#pragma once

#include <string>

namespace lab06_tests {

struct ReferenceOccupancy {
  int warps_per_block, registers_per_block, shared_memory_per_block;
  int blocks_by_warps, blocks_by_registers, blocks_by_shared_memory, blocks_by_sm_limit;
  int active_blocks, active_warps;
  double occupancy;
  unsigned limited_by;
};

// The reference answer on the preset of compute capability `cc` ("1.3", "9.0", ...).
ReferenceOccupancy reference_occupancy(const std::string& cc, int threads_per_block,
                                       int registers_per_thread, int shared_memory_per_block);

}  // namespace lab06_tests
