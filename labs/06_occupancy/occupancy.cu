// Lab 06: an occupancy calculator, the rules of NVIDIA's occupancy spreadsheet in code.
// The write-up is labs/06_occupancy/README.md; the tests call the functions of occupancy.h.
#include <algorithm>

#include "kit/args.hpp"
#include "occupancy.h"

namespace lab06 {
namespace {

// x rounded up to a multiple of unit (unit >= 1).
[[maybe_unused]] int round_up(int x, int unit) { return (x + unit - 1) / unit * unit; }

// x rounded down to a multiple of unit (unit >= 1).
[[maybe_unused]] int round_down(int x, int unit) { return x / unit * unit; }

// Every field the calculator divides by or rounds to must be positive; a hand-made preset
// with a zero there would otherwise crash or give nonsense.
void check_device(const char* where, const DeviceLimits& d) {
  kit::require_positive(where, "device.warp_size", d.warp_size);
  kit::require_positive(where, "device.max_threads_per_block", d.max_threads_per_block);
  kit::require_positive(where, "device.max_threads_per_sm / device.warp_size",
                        d.max_warps_per_sm());
  kit::require_positive(where, "device.max_blocks_per_sm", d.max_blocks_per_sm);
  kit::require_positive(where, "device.registers_per_sm", d.registers_per_sm);
  kit::require_positive(where, "device.max_registers_per_block", d.max_registers_per_block);
  kit::require_positive(where, "device.max_registers_per_thread", d.max_registers_per_thread);
  kit::require_positive(where, "device.register_allocation_unit", d.register_allocation_unit);
  kit::require_positive(where, "device.warp_allocation_granularity", d.warp_allocation_granularity);
  kit::require_positive(where, "device.shared_memory_per_sm", d.shared_memory_per_sm);
  kit::require_in_range(where, "device.max_shared_memory_per_block", d.max_shared_memory_per_block,
                        0, d.shared_memory_per_sm);
  kit::require_positive(where, "device.shared_memory_allocation_unit",
                        d.shared_memory_allocation_unit);
  kit::require_in_range(where, "device.reserved_shared_memory_per_block",
                        d.reserved_shared_memory_per_block, 0, d.shared_memory_per_sm);
}

void check_registers_and_shared_memory(const char* where, const DeviceLimits& d,
                                       int registers_per_thread, int shared_memory_per_block) {
  kit::require_in_range(where, "registers_per_thread", registers_per_thread, 0,
                        d.max_registers_per_thread);
  kit::require_in_range(where, "shared_memory_per_block", shared_memory_per_block, 0,
                        d.max_shared_memory_per_block);
}

}  // namespace

Occupancy occupancy(const DeviceLimits& device, const KernelUsage& kernel) {
  const char* where = "lab06::occupancy";
  check_device(where, device);
  kit::require_in_range(where, "threads_per_block", kernel.threads_per_block, 1,
                        device.max_threads_per_block);
  check_registers_and_shared_memory(where, device, kernel.registers_per_thread,
                                    kernel.shared_memory_per_block);

  Occupancy result;
  // TODO: Step 1, warps (README section 4.1): set result.warps_per_block (a block
  //       of threads_per_block threads fills whole warps, the last one maybe only
  //       in part), result.blocks_by_warps (how many such blocks fit in the SM's
  //       warp slots) and result.blocks_by_sm_limit (the SM's block cap).

  // TODO: Step 2, registers (README section 4.2): set result.registers_per_block
  //       and result.blocks_by_registers. Per warp: a warp's registers round up
  //       to the allocation unit, the warps that fit in the register file round
  //       down to the warp allocation granularity. Per block: the block's warps
  //       round up to the warp allocation granularity and the block's registers
  //       round up to the allocation unit. A kernel without registers gives
  //       kUnlimited; a block above max_registers_per_block cannot launch (0).

  // TODO: Step 3, shared memory (README section 4.3): set
  //       result.shared_memory_per_block (the kernel's bytes plus the bytes the
  //       driver reserves per block, rounded up to the allocation unit) and
  //       result.blocks_by_shared_memory (kUnlimited when that is 0 bytes).

  // TODO: Step 4, the answer (README section 4.4): set result.active_blocks (the
  //       smallest of the four limits), result.active_warps, result.occupancy
  //       (a fraction of the SM's warp slots) and result.limited_by (the Limit
  //       bit of every limit equal to active_blocks).
  return result;
}

BlockSizeChoice best_block_size(const DeviceLimits& device, int registers_per_thread,
                                int shared_memory_per_block) {
  const char* where = "lab06::best_block_size";
  check_device(where, device);
  check_registers_and_shared_memory(where, device, registers_per_thread, shared_memory_per_block);

  BlockSizeChoice best;
  // TODO: Exercise 2 (README section 6): call occupancy() for every multiple of
  //       the warp size from warp_size to max_threads_per_block and keep the block
  //       size with the most active warps; on a tie keep the larger block. Fill
  //       every field of best (min_grid_size: active blocks on all SMs).
  return best;
}

}  // namespace lab06
