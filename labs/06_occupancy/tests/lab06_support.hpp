// Lab 06's test helpers: the toolkit's own calculator (cuda_occupancy.h, header-only, no GPU
// needed) fed from a preset, and a comparison that says which allocation rule went wrong.
#pragma once

#include <cuda_occupancy.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "device_presets.h"
#include "occupancy.h"

namespace lab06_tests {

using lab06::DeviceLimits;
using lab06::KernelUsage;
using lab06::Occupancy;

// cuda_occupancy.h's view of a preset: what cudaGetDeviceProperties would report.
inline cudaOccDeviceProp toolkit_device(const DeviceLimits& d) {
  cudaOccDeviceProp p;
  p.computeMajor = d.cc_major;
  p.computeMinor = d.cc_minor;
  p.maxThreadsPerBlock = d.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = d.max_threads_per_sm;
  p.regsPerBlock = d.max_registers_per_block;
  p.regsPerMultiprocessor = d.registers_per_sm;
  p.warpSize = d.warp_size;
  // Without opting in, a block may use 48 KB; the kernel below opts in to the maximum.
  p.sharedMemPerBlock = static_cast<size_t>(std::min(d.max_shared_memory_per_block, 48 * 1024));
  p.sharedMemPerMultiprocessor = static_cast<size_t>(d.shared_memory_per_sm);
  p.numSms = d.multiprocessors;
  p.sharedMemPerBlockOptin = static_cast<size_t>(d.max_shared_memory_per_block);
  p.reservedSharedMemPerBlock = static_cast<size_t>(d.reserved_shared_memory_per_block);
  return p;
}

// A kernel that uses `registers` per thread and takes all its shared memory dynamically, opted
// in to the device's per-block maximum (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline cudaOccFuncAttributes toolkit_kernel(const DeviceLimits& d, int registers) {
  cudaOccFuncAttributes a;
  a.maxThreadsPerBlock = d.max_threads_per_block;
  a.numRegs = registers;
  a.sharedSizeBytes = 0;
  a.partitionedGCConfig = PARTITIONED_GC_OFF;
  a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  a.maxDynamicSharedSizeBytes = static_cast<size_t>(d.max_shared_memory_per_block);
  a.numBlockBarriers = 1;  // __syncthreads() uses one; as cudaFuncAttributes converts
  a.virtualResourceCount = 0;
  return a;
}

inline int warps_for(const DeviceLimits& d, int threads) {
  return (threads + d.warp_size - 1) / d.warp_size;
}

// The toolkit's result in the lab's terms (barriers and virtual resources never bind here).
inline Occupancy occupancy_from_toolkit(const cudaOccResult& r, const DeviceLimits& d,
                                        int threads_per_block) {
  Occupancy o;
  o.warps_per_block = warps_for(d, threads_per_block);
  o.registers_per_block = r.allocatedRegistersPerBlock;
  o.shared_memory_per_block = static_cast<int>(r.allocatedSharedMemPerBlock);
  o.blocks_by_warps = r.blockLimitWarps;
  o.blocks_by_registers = r.blockLimitRegs;
  o.blocks_by_shared_memory = r.blockLimitSharedMem;
  o.blocks_by_sm_limit = r.blockLimitBlocks;
  o.active_blocks = r.activeBlocksPerMultiprocessor;
  o.active_warps = o.active_blocks * o.warps_per_block;
  o.occupancy = static_cast<double>(o.active_warps) / d.max_warps_per_sm();
  o.limited_by = r.limitingFactors & (lab06::kLimitWarps | lab06::kLimitRegisters |
                                      lab06::kLimitSharedMemory | lab06::kLimitBlocks);
  return o;
}

// cudaOccMaxActiveBlocksPerMultiprocessor for a preset and a configuration.
inline Occupancy toolkit_occupancy(const DeviceLimits& d, const KernelUsage& k) {
  const cudaOccDeviceProp prop = toolkit_device(d);
  const cudaOccFuncAttributes attr = toolkit_kernel(d, k.registers_per_thread);
  const cudaOccDeviceState state;
  cudaOccResult result{};
  const cudaOccError status =
      cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, k.threads_per_block,
                                              static_cast<size_t>(k.shared_memory_per_block));
  if (status != CUDA_OCC_SUCCESS) {
    throw std::runtime_error("cudaOccMaxActiveBlocksPerMultiprocessor failed with status " +
                             std::to_string(static_cast<int>(status)) + " for " + d.name);
  }
  return occupancy_from_toolkit(result, d, k.threads_per_block);
}

struct ToolkitBlockSize {
  int threads_per_block = 0;
  int min_grid_size = 0;
};

// cudaOccMaxPotentialOccupancyBlockSize for a preset, registers and shared memory per block.
inline ToolkitBlockSize toolkit_best_block_size(const DeviceLimits& d, int registers,
                                                int shared_memory_per_block) {
  const cudaOccDeviceProp prop = toolkit_device(d);
  const cudaOccFuncAttributes attr = toolkit_kernel(d, registers);
  const cudaOccDeviceState state;
  ToolkitBlockSize out;
  const cudaOccError status = cudaOccMaxPotentialOccupancyBlockSize(
      &out.min_grid_size, &out.threads_per_block, &prop, &attr, &state,
      static_cast<size_t>(shared_memory_per_block));
  if (status != CUDA_OCC_SUCCESS) {
    throw std::runtime_error("cudaOccMaxPotentialOccupancyBlockSize failed with status " +
                             std::to_string(static_cast<int>(status)) + " for " + d.name);
  }
  return out;
}

inline std::string describe(const DeviceLimits& d, const KernelUsage& k) {
  std::ostringstream s;
  s << k.threads_per_block << " threads per block, " << k.registers_per_thread
    << " registers per thread, " << k.shared_memory_per_block
    << " bytes of shared memory per block on " << d.name;
  return s.str();
}

inline std::string show_limit(int blocks) {
  return blocks == lab06::kUnlimited ? std::string("kUnlimited") : std::to_string(blocks);
}

inline int round_up(int x, int unit) { return (x + unit - 1) / unit * unit; }

// What each wrong field usually means, from the rules in README section 4. Empty when
// `got` and `want` agree in every field.
inline std::string diagnose(const DeviceLimits& d, const KernelUsage& k, const Occupancy& got,
                            const Occupancy& want) {
  std::ostringstream table, hints;
  bool any = false;
  const auto row = [&](const char* field, const std::string& mine, const std::string& right) {
    if (mine == right) return;
    any = true;
    table << "  " << field << ": yours " << mine << ", expected " << right << "\n";
  };
  row("warps_per_block", std::to_string(got.warps_per_block), std::to_string(want.warps_per_block));
  row("registers_per_block", std::to_string(got.registers_per_block),
      std::to_string(want.registers_per_block));
  row("shared_memory_per_block", std::to_string(got.shared_memory_per_block),
      std::to_string(want.shared_memory_per_block));
  row("blocks_by_warps", show_limit(got.blocks_by_warps), show_limit(want.blocks_by_warps));
  row("blocks_by_registers", show_limit(got.blocks_by_registers),
      show_limit(want.blocks_by_registers));
  row("blocks_by_shared_memory", show_limit(got.blocks_by_shared_memory),
      show_limit(want.blocks_by_shared_memory));
  row("blocks_by_sm_limit", show_limit(got.blocks_by_sm_limit),
      show_limit(want.blocks_by_sm_limit));
  row("active_blocks", std::to_string(got.active_blocks), std::to_string(want.active_blocks));
  row("active_warps", std::to_string(got.active_warps), std::to_string(want.active_warps));
  const bool occupancy_ok = std::abs(got.occupancy - want.occupancy) < 1e-9;
  if (!occupancy_ok) {
    row("occupancy", std::to_string(got.occupancy), std::to_string(want.occupancy));
  }
  row("limited_by", lab06::limit_names(got.limited_by), lab06::limit_names(want.limited_by));
  if (!any) return "";

  const int threads = k.threads_per_block, regs = k.registers_per_thread;
  const int shared = k.shared_memory_per_block, reserved = d.reserved_shared_memory_per_block;
  const int unit = d.shared_memory_allocation_unit;
  const bool per_warp = d.register_granularity == lab06::RegisterGranularity::kPerWarp;

  if (got.warps_per_block != want.warps_per_block) {
    if (got.warps_per_block == threads / d.warp_size) {
      hints << "hint: warps per block must be rounded up, not down: a block of " << threads
            << " threads fills " << want.warps_per_block
            << " warps, the last one only in part, and a part-filled warp still takes a "
               "whole warp slot (README 4.1).\n";
    } else {
      hints << "hint: warps_per_block is threads_per_block / warp_size rounded up (README 4.1).\n";
    }
  } else if (got.blocks_by_warps != want.blocks_by_warps) {
    hints << "hint: blocks_by_warps is the SM's warp slots (" << d.max_warps_per_sm()
          << " here) divided by warps per block, rounded down (README 4.1).\n";
  }

  if (got.registers_per_block != want.registers_per_block) {
    if (per_warp) {
      const int raw = regs * d.warp_size;
      hints << "hint: registers must be allocated in units of " << d.register_allocation_unit
            << " per warp: " << regs << " registers x " << d.warp_size << " threads = " << raw
            << " registers round up to " << round_up(raw, d.register_allocation_unit)
            << " for each warp, and a block of " << want.warps_per_block << " warps gets "
            << want.registers_per_block << " (README 4.2).\n";
    } else {
      const int warps = round_up(want.warps_per_block, d.warp_allocation_granularity);
      hints << "hint: registers must be allocated in units of " << d.register_allocation_unit
            << " per block at compute capability " << d.cc_major << "." << d.cc_minor
            << ": the block's " << want.warps_per_block << " warps round up to " << warps
            << " (warp allocation granularity " << d.warp_allocation_granularity << "), then "
            << warps << " x " << d.warp_size << " x " << regs << " = " << warps * d.warp_size * regs
            << " registers round up to " << want.registers_per_block << " (README 4.2).\n";
    }
  } else if (got.blocks_by_registers != want.blocks_by_registers) {
    if (regs == 0) {
      hints << "hint: a kernel that uses no registers is not limited by them: "
               "blocks_by_registers is kUnlimited (README 4.2).\n";
    } else if (per_warp) {
      const int per_warp_regs = round_up(regs * d.warp_size, d.register_allocation_unit);
      const int fit = d.registers_per_sm / per_warp_regs;
      hints << "hint: " << d.registers_per_sm << " registers hold " << fit << " warps of "
            << per_warp_regs << " registers; round that down to the warp allocation "
            << "granularity (" << d.warp_allocation_granularity << ": "
            << fit / d.warp_allocation_granularity * d.warp_allocation_granularity
            << " warps) before dividing by the " << want.warps_per_block
            << " warps of a block, and give 0 when a block needs more than "
            << d.max_registers_per_block << " registers (README 4.2).\n";
    } else {
      hints << "hint: at compute capability 1.x blocks_by_registers is the SM's "
            << d.registers_per_sm << " registers divided by the registers of one block "
            << "(README 4.2).\n";
    }
  }

  if (got.shared_memory_per_block != want.shared_memory_per_block) {
    const int with_reserved = shared + reserved;
    if (got.shared_memory_per_block == with_reserved) {
      hints << "hint: shared memory is allocated in units of " << unit << " bytes: the "
            << with_reserved << " bytes of a block round up to " << want.shared_memory_per_block
            << " (README 4.3).\n";
    } else if (reserved > 0 && (got.shared_memory_per_block == round_up(shared, unit) ||
                                got.shared_memory_per_block == shared)) {
      hints << "hint: the driver reserves " << reserved << " bytes of shared memory for every "
            << "block on compute capability 8.0 and newer: add "
               "reserved_shared_memory_per_block to the kernel's bytes before rounding to the "
            << unit << "-byte unit (" << shared << " + " << reserved << " -> "
            << want.shared_memory_per_block << ", README 4.3).\n";
    } else {
      hints << "hint: shared_memory_per_block is the kernel's bytes plus "
               "reserved_shared_memory_per_block, rounded up to a multiple of "
            << unit << " (README 4.3).\n";
    }
  } else if (got.blocks_by_shared_memory != want.blocks_by_shared_memory) {
    hints << "hint: blocks_by_shared_memory is shared_memory_per_sm (" << d.shared_memory_per_sm
          << ") divided by the bytes allocated to one block, rounded down, and kUnlimited when "
             "a block gets 0 bytes (README 4.3).\n";
  }

  if (got.blocks_by_sm_limit != want.blocks_by_sm_limit ||
      got.active_blocks > d.max_blocks_per_sm) {
    hints << "hint: an SM holds at most " << d.max_blocks_per_sm
          << " blocks (max_blocks_per_sm) however small they are: that limit belongs in the "
             "minimum (README 4.4).\n";
  } else if (got.active_blocks != want.active_blocks) {
    hints << "hint: active_blocks is the smallest of blocks_by_warps, blocks_by_registers, "
             "blocks_by_shared_memory and blocks_by_sm_limit (README 4.4).\n";
  }
  if (got.active_blocks == want.active_blocks && got.warps_per_block == want.warps_per_block &&
      (got.active_warps != want.active_warps || !occupancy_ok)) {
    hints << "hint: active_warps = active_blocks x warps_per_block, and occupancy = "
             "active_warps / the SM's "
          << d.max_warps_per_sm() << " warp slots, a fraction from 0 to 1 (README 4.4).\n";
  }
  if (got.limited_by != want.limited_by && got.active_blocks == want.active_blocks) {
    hints << "hint: limited_by needs the Limit bit of every limit equal to active_blocks; a "
             "tie sets several bits (README 4.4).\n";
  }
  return "for " + describe(d, k) + ":\n" + table.str() + hints.str();
}

}  // namespace lab06_tests
