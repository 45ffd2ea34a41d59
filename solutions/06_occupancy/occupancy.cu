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
  // KIT:TODO(begin) Step 1, warps (README section 4.1): set result.warps_per_block (a block
  // KIT:TODO        of threads_per_block threads fills whole warps, the last one maybe only
  // KIT:TODO        in part), result.blocks_by_warps (how many such blocks fit in the SM's
  // KIT:TODO        warp slots) and result.blocks_by_sm_limit (the SM's block cap).
  result.warps_per_block = (kernel.threads_per_block + device.warp_size - 1) / device.warp_size;
  result.blocks_by_warps = device.max_warps_per_sm() / result.warps_per_block;
  result.blocks_by_sm_limit = device.max_blocks_per_sm;
  // KIT:TODO(end)

  // KIT:TODO(begin) Step 2, registers (README section 4.2): set result.registers_per_block
  // KIT:TODO        and result.blocks_by_registers. Per warp: a warp's registers round up
  // KIT:TODO        to the allocation unit, the warps that fit in the register file round
  // KIT:TODO        down to the warp allocation granularity. Per block: the block's warps
  // KIT:TODO        round up to the warp allocation granularity and the block's registers
  // KIT:TODO        round up to the allocation unit. A kernel without registers gives
  // KIT:TODO        kUnlimited; a block above max_registers_per_block cannot launch (0).
  const int r = kernel.registers_per_thread;
  if (device.register_granularity == RegisterGranularity::kPerWarp) {
    const int per_warp = round_up(r * device.warp_size, device.register_allocation_unit);
    result.registers_per_block = per_warp * result.warps_per_block;
    if (r == 0) {
      result.blocks_by_registers = kUnlimited;
    } else {
      const int warps_that_fit =
          round_down(device.registers_per_sm / per_warp, device.warp_allocation_granularity);
      result.blocks_by_registers = warps_that_fit / result.warps_per_block;
    }
  } else {
    const int warps = round_up(result.warps_per_block, device.warp_allocation_granularity);
    result.registers_per_block =
        round_up(warps * device.warp_size * r, device.register_allocation_unit);
    result.blocks_by_registers =
        r == 0 ? kUnlimited : device.registers_per_sm / result.registers_per_block;
  }
  if (result.registers_per_block > device.max_registers_per_block) result.blocks_by_registers = 0;
  // KIT:TODO(end)

  // KIT:TODO(begin) Step 3, shared memory (README section 4.3): set
  // KIT:TODO        result.shared_memory_per_block (the kernel's bytes plus the bytes the
  // KIT:TODO        driver reserves per block, rounded up to the allocation unit) and
  // KIT:TODO        result.blocks_by_shared_memory (kUnlimited when that is 0 bytes).
  result.shared_memory_per_block =
      round_up(kernel.shared_memory_per_block + device.reserved_shared_memory_per_block,
               device.shared_memory_allocation_unit);
  result.blocks_by_shared_memory =
      result.shared_memory_per_block == 0
          ? kUnlimited
          : device.shared_memory_per_sm / result.shared_memory_per_block;
  // KIT:TODO(end)

  // KIT:TODO(begin) Step 4, the answer (README section 4.4): set result.active_blocks (the
  // KIT:TODO        smallest of the four limits), result.active_warps, result.occupancy
  // KIT:TODO        (a fraction of the SM's warp slots) and result.limited_by (the Limit
  // KIT:TODO        bit of every limit equal to active_blocks).
  result.active_blocks = std::min({result.blocks_by_warps, result.blocks_by_registers,
                                   result.blocks_by_shared_memory, result.blocks_by_sm_limit});
  result.active_warps = result.active_blocks * result.warps_per_block;
  result.occupancy = static_cast<double>(result.active_warps) / device.max_warps_per_sm();
  if (result.blocks_by_warps == result.active_blocks) result.limited_by |= kLimitWarps;
  if (result.blocks_by_registers == result.active_blocks) result.limited_by |= kLimitRegisters;
  if (result.blocks_by_shared_memory == result.active_blocks) {
    result.limited_by |= kLimitSharedMemory;
  }
  if (result.blocks_by_sm_limit == result.active_blocks) result.limited_by |= kLimitBlocks;
  // KIT:TODO(end)
  return result;
}

BlockSizeChoice best_block_size(const DeviceLimits& device, int registers_per_thread,
                                int shared_memory_per_block) {
  const char* where = "lab06::best_block_size";
  check_device(where, device);
  check_registers_and_shared_memory(where, device, registers_per_thread, shared_memory_per_block);

  BlockSizeChoice best;
  // KIT:TODO(begin) Exercise 2 (README section 6): call occupancy() for every multiple of
  // KIT:TODO        the warp size from warp_size to max_threads_per_block and keep the block
  // KIT:TODO        size with the most active warps; on a tie keep the larger block. Fill
  // KIT:TODO        every field of best (min_grid_size: active blocks on all SMs).
  for (int threads = device.warp_size; threads <= device.max_threads_per_block;
       threads += device.warp_size) {
    const Occupancy o =
        occupancy(device, KernelUsage{threads, registers_per_thread, shared_memory_per_block});
    // >= so that a later, larger block wins a tie: fewer, larger blocks launch faster.
    if (o.active_warps > 0 && o.active_warps >= best.active_warps) {
      best.threads_per_block = threads;
      best.active_blocks = o.active_blocks;
      best.active_warps = o.active_warps;
      best.occupancy = o.occupancy;
      best.min_grid_size = o.active_blocks * device.multiprocessors;
    }
  }
  // KIT:TODO(end)
  return best;
}

}  // namespace lab06
