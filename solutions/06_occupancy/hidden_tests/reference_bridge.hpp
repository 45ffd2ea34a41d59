// The hidden tests' door to the reference calculator: the library lab06_reference, the
// reference occupancy.cu compiled with its namespace renamed so that it links next to the
// student's. Plain types here, so that this header can sit beside occupancy.h.
#pragma once

#include <string>
#include <vector>

namespace lab06_tests {

struct ReferenceOccupancy {
  int warps_per_block, registers_per_block, shared_memory_per_block;
  int blocks_by_warps, blocks_by_registers, blocks_by_shared_memory, blocks_by_sm_limit;
  int active_blocks, active_warps;
  double occupancy;
  unsigned limited_by;
};

// The reference answers for many kernels on the preset of compute capability `cc` ("1.3",
// "9.0", ...), in one call to the reference's worker (a call each is a round trip: 16,500 of
// them took 0.6 s). Each kernel is {threads per block, registers per thread, shared memory per
// block}.
struct ReferenceKernel {
  int threads_per_block, registers_per_thread, shared_memory_per_block;
};
std::vector<ReferenceOccupancy> reference_occupancy_of_each(
    const std::string& cc, const std::vector<ReferenceKernel>& kernels);

}  // namespace lab06_tests
