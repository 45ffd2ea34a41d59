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

// The fields of an Occupancy, as bits, so that a test of one rule compares only that rule's
// fields: a mistake in another rule then cannot fail it, nor bring that rule's hints.
enum Field : unsigned {
  kWarpsPerBlock = 1u << 0,
  kRegistersPerBlock = 1u << 1,
  kSharedMemoryPerBlock = 1u << 2,
  kBlocksByWarps = 1u << 3,
  kBlocksByRegisters = 1u << 4,
  kBlocksBySharedMemory = 1u << 5,
  kBlocksBySmLimit = 1u << 6,
  kActiveBlocks = 1u << 7,
  kActiveWarps = 1u << 8,
  kOccupancy = 1u << 9,
  kLimitedBy = 1u << 10,
  kAllFields = (1u << 11) - 1,
  // One rule each (README section 4).
  kWarpFields = kWarpsPerBlock | kBlocksByWarps,
  kRegisterFields = kRegistersPerBlock | kBlocksByRegisters,
  kSharedMemoryFields = kSharedMemoryPerBlock | kBlocksBySharedMemory,
  kAnswerFields = kBlocksBySmLimit | kActiveBlocks | kActiveWarps | kOccupancy,
};

// The Limit bit of every one of `o`'s own limits that equals its own active_blocks.
inline unsigned limits_equal_to_answer(const Occupancy& o) {
  unsigned bits = 0;
  if (o.blocks_by_warps == o.active_blocks) bits |= lab06::kLimitWarps;
  if (o.blocks_by_registers == o.active_blocks) bits |= lab06::kLimitRegisters;
  if (o.blocks_by_shared_memory == o.active_blocks) bits |= lab06::kLimitSharedMemory;
  if (o.blocks_by_sm_limit == o.active_blocks) bits |= lab06::kLimitBlocks;
  return bits;
}

// What each wrong field among `fields` means, from the rules in README section 4. Empty when
// `got` and `want` agree in every one of them. A hint names a cause only when the values prove
// it (yours equal what that mistake gives); a field that is wrong only because a field it is
// computed from is wrong gets no hint of its own.
inline std::string diagnose(const DeviceLimits& d, const KernelUsage& k, const Occupancy& got,
                            const Occupancy& want, unsigned fields = kAllFields) {
  std::ostringstream table, hints;
  bool any = false;
  const auto differs = [&](Field f, long long mine, long long right) {
    return (fields & f) != 0 && mine != right;
  };
  const auto row = [&](Field f, const char* name, const std::string& mine,
                       const std::string& right) {
    if ((fields & f) == 0 || mine == right) return;
    any = true;
    table << "  " << name << ": yours " << mine << ", expected " << right << "\n";
  };
  row(kWarpsPerBlock, "warps_per_block", std::to_string(got.warps_per_block),
      std::to_string(want.warps_per_block));
  row(kRegistersPerBlock, "registers_per_block", std::to_string(got.registers_per_block),
      std::to_string(want.registers_per_block));
  row(kSharedMemoryPerBlock, "shared_memory_per_block", std::to_string(got.shared_memory_per_block),
      std::to_string(want.shared_memory_per_block));
  row(kBlocksByWarps, "blocks_by_warps", show_limit(got.blocks_by_warps),
      show_limit(want.blocks_by_warps));
  row(kBlocksByRegisters, "blocks_by_registers", show_limit(got.blocks_by_registers),
      show_limit(want.blocks_by_registers));
  row(kBlocksBySharedMemory, "blocks_by_shared_memory", show_limit(got.blocks_by_shared_memory),
      show_limit(want.blocks_by_shared_memory));
  row(kBlocksBySmLimit, "blocks_by_sm_limit", show_limit(got.blocks_by_sm_limit),
      show_limit(want.blocks_by_sm_limit));
  row(kActiveBlocks, "active_blocks", std::to_string(got.active_blocks),
      std::to_string(want.active_blocks));
  row(kActiveWarps, "active_warps", std::to_string(got.active_warps),
      std::to_string(want.active_warps));
  const bool occupancy_ok = std::abs(got.occupancy - want.occupancy) < 1e-9;
  if (!occupancy_ok) {
    row(kOccupancy, "occupancy", std::to_string(got.occupancy), std::to_string(want.occupancy));
  }
  row(kLimitedBy, "limited_by", lab06::limit_names(got.limited_by),
      lab06::limit_names(want.limited_by));
  if (!any) return "";

  const int threads = k.threads_per_block, regs = k.registers_per_thread;
  const int shared = k.shared_memory_per_block, reserved = d.reserved_shared_memory_per_block;
  const int unit = d.shared_memory_allocation_unit;
  const int warps = want.warps_per_block;
  const bool per_warp = d.register_granularity == lab06::RegisterGranularity::kPerWarp;
  const bool warps_ok = got.warps_per_block == want.warps_per_block;
  const std::string cc = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);

  // Step 1, warps (README 4.1).
  if (differs(kWarpsPerBlock, got.warps_per_block, want.warps_per_block)) {
    if (got.warps_per_block == threads / d.warp_size) {
      hints << "hint: warps per block must be rounded up, not down: a block of " << threads
            << " threads fills " << warps
            << " warps, the last one only in part, and a part-filled warp still takes a "
               "whole warp slot (README 4.1).\n";
    } else {
      hints << "hint: warps_per_block is threads_per_block / warp_size rounded up (README 4.1).\n";
    }
  } else if (warps_ok && differs(kBlocksByWarps, got.blocks_by_warps, want.blocks_by_warps)) {
    const int slots_per_block_cap = d.max_threads_per_block / d.warp_size;
    if (got.blocks_by_warps == d.max_threads_per_sm / threads) {
      hints << "hint: the SM's " << d.max_threads_per_sm << " threads / " << threads
            << " threads per block gives " << got.blocks_by_warps
            << ", but threads take whole warp slots: divide the SM's " << d.max_warps_per_sm()
            << " warp slots by the block's " << warps << " warps (README 4.1).\n";
    } else if (warps > 0 && got.blocks_by_warps == slots_per_block_cap / warps) {
      hints << "hint: the SM's warp slots are max_threads_per_sm / warp_size ("
            << d.max_warps_per_sm() << " here), not max_threads_per_block / warp_size ("
            << slots_per_block_cap << "): one SM holds several of the largest blocks "
            << "(README 4.1).\n";
    } else {
      hints << "hint: blocks_by_warps is the SM's warp slots (" << d.max_warps_per_sm()
            << " here) divided by warps per block, rounded down (README 4.1).\n";
    }
  }

  // Step 2, registers (README 4.2), judged only where the block's warps are right.
  const int raw_warp = regs * d.warp_size;
  const int unit_warp = round_up(raw_warp, d.register_allocation_unit);
  const int block_warps = round_up(warps, d.warp_allocation_granularity);
  const int per_block_rule = round_up(block_warps * raw_warp, d.register_allocation_unit);
  if (warps_ok && differs(kRegistersPerBlock, got.registers_per_block, want.registers_per_block)) {
    if (per_warp && got.registers_per_block == raw_warp * warps) {
      hints << "hint: registers must be allocated in units of " << d.register_allocation_unit
            << " per warp: " << regs << " registers x " << d.warp_size << " threads = " << raw_warp
            << " registers round up to " << unit_warp << " for each warp, and a "
            << "block of " << warps << " warps gets " << want.registers_per_block
            << " (README 4.2).\n";
    } else if (per_warp && got.registers_per_block == per_block_rule) {
      hints << "hint: at compute capability " << cc << " registers are allocated per warp, not "
            << "per block: each warp's " << raw_warp << " registers round up to " << unit_warp
            << ", and a block of " << warps << " warps gets " << want.registers_per_block
            << " (README 4.2).\n";
    } else if (per_warp && d.warp_size > 1 &&
               got.registers_per_block == round_up(regs, d.register_allocation_unit) * warps) {
      // Seen, not proven: at most one allocation unit of registers a thread, every warp got one
      // unit, as a count of one thread's registers gives; the rule follows.
      hints << "hint: your registers_per_block is one allocation unit ("
            << d.register_allocation_unit
            << " registers) per warp; a warp's registers are every thread's: " << regs
            << " registers x " << d.warp_size << " threads = " << raw_warp << ", rounded up to "
            << unit_warp << " (README 4.2).\n";
    } else if (per_warp) {
      hints << "hint: registers_per_block is each warp's " << regs << " x " << d.warp_size
            << " registers rounded up to a multiple of " << d.register_allocation_unit << " ("
            << unit_warp << "), times the block's " << warps << " warps (README 4.2).\n";
    } else if (got.registers_per_block == unit_warp * warps) {
      hints << "hint: at compute capability " << cc << " registers are allocated per block, "
            << "not per warp: the block's " << warps << " warps round up to " << block_warps
            << ", then " << block_warps << " x " << d.warp_size << " x " << regs
            << " registers round up to " << want.registers_per_block << " (README 4.2).\n";
    } else if (got.registers_per_block == round_up(warps * raw_warp, d.register_allocation_unit) &&
               block_warps != warps) {
      hints << "hint: round the block's " << warps << " warps up to the warp allocation "
            << "granularity first (" << d.warp_allocation_granularity << ": " << block_warps
            << " warps), then " << block_warps << " x " << d.warp_size << " x " << regs
            << " registers round up to " << want.registers_per_block << " (README 4.2).\n";
    } else if (got.registers_per_block == block_warps * raw_warp) {
      hints << "hint: registers must be allocated in units of " << d.register_allocation_unit
            << " per block at compute capability " << cc << ": " << block_warps << " x "
            << d.warp_size << " x " << regs << " = " << block_warps * raw_warp
            << " registers round up to " << want.registers_per_block << " (README 4.2).\n";
    } else {
      hints << "hint: at compute capability " << cc << " a block's registers are its warps "
            << "rounded up to the warp allocation granularity (" << block_warps << ") x "
            << d.warp_size << " x " << regs << ", rounded up to a multiple of "
            << d.register_allocation_unit << " (README 4.2).\n";
    }
  } else if (warps_ok && got.registers_per_block == want.registers_per_block &&
             differs(kBlocksByRegisters, got.blocks_by_registers, want.blocks_by_registers)) {
    const int granularity = d.warp_allocation_granularity;
    const int fit = unit_warp > 0 ? d.registers_per_sm / unit_warp : 0;
    const int fit_down = fit / granularity * granularity;
    if (regs == 0) {
      hints << "hint: a kernel that uses no registers is not limited by them: "
               "blocks_by_registers is kUnlimited (README 4.2).\n";
    } else if (want.blocks_by_registers == 0) {
      hints << "hint: a block of " << want.registers_per_block << " registers needs more than "
            << "the " << d.max_registers_per_block << " one block may have "
            << "(max_registers_per_block): it cannot launch, so blocks_by_registers is 0 "
               "(README 4.2).\n";
    } else if (per_warp && fit != fit_down &&
               (got.blocks_by_registers == fit / warps ||
                got.blocks_by_registers == round_up(fit, granularity) / warps)) {
      // Rounded up, or not rounded: where both give the count seen, the values cannot tell which,
      // and the hint says both.
      const bool up = got.blocks_by_registers == round_up(fit, granularity) / warps;
      const bool unrounded = got.blocks_by_registers == fit / warps;
      hints << "hint: the warps that fit in the register file round down to the warp "
            << "allocation granularity (" << granularity << " at compute capability " << cc << ")"
            << (up ? ", never up" : "") << (up && unrounded ? " nor left unrounded" : "") << ": "
            << d.registers_per_sm << " registers hold " << fit << " warps of " << unit_warp
            << ", rounded down to " << fit_down << ", which hold " << want.blocks_by_registers
            << " blocks of " << warps << " warps (README 4.2).\n";
    } else if (per_warp) {
      hints << "hint: " << d.registers_per_sm << " registers hold " << fit << " warps of "
            << unit_warp << " registers; round that down to the warp allocation granularity ("
            << granularity << ": " << fit_down << " warps) before dividing by the " << warps
            << " warps of a block (README 4.2).\n";
    } else {
      hints << "hint: at compute capability 1.x blocks_by_registers is the SM's "
            << d.registers_per_sm << " registers divided by the registers of one block, "
            << "rounded down (README 4.2).\n";
    }
  }

  // Step 3, shared memory (README 4.3).
  if (differs(kSharedMemoryPerBlock, got.shared_memory_per_block, want.shared_memory_per_block)) {
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
  } else if (got.shared_memory_per_block == want.shared_memory_per_block &&
             differs(kBlocksBySharedMemory, got.blocks_by_shared_memory,
                     want.blocks_by_shared_memory)) {
    const int per_block = want.shared_memory_per_block;
    if (per_block > 0 &&
        got.blocks_by_shared_memory == (d.shared_memory_per_sm + per_block - 1) / per_block) {
      hints << "hint: blocks_by_shared_memory must be rounded down, not up: "
            << d.shared_memory_per_sm << " bytes hold " << want.blocks_by_shared_memory
            << " whole blocks of " << per_block << " bytes, and part of a block's shared "
            << "memory is no room for a block (README 4.3).\n";
    } else {
      hints << "hint: blocks_by_shared_memory is shared_memory_per_sm (" << d.shared_memory_per_sm
            << ") divided by the bytes allocated to one block, rounded down, and kUnlimited "
               "when a block gets 0 bytes (README 4.3).\n";
    }
  }

  // Step 4, the answer (README 4.4): judged on your own four limits, so that a mistake in
  // one of them is told once, at that limit.
  const int own_three =
      std::min({got.blocks_by_warps, got.blocks_by_registers, got.blocks_by_shared_memory});
  const int own_min = std::min(own_three, got.blocks_by_sm_limit);
  const bool cap_missing = (fields & (kBlocksBySmLimit | kActiveBlocks)) != 0 &&
                           got.active_blocks == own_three &&
                           got.active_blocks > got.blocks_by_sm_limit;
  if (differs(kBlocksBySmLimit, got.blocks_by_sm_limit, want.blocks_by_sm_limit) || cap_missing) {
    hints << "hint: an SM holds at most " << d.max_blocks_per_sm
          << " blocks (max_blocks_per_sm) however small they are: that limit belongs in the "
             "minimum (README 4.4).\n";
  } else if (differs(kActiveBlocks, got.active_blocks, want.active_blocks) &&
             got.active_blocks != own_min) {
    hints << "hint: active_blocks is the smallest of blocks_by_warps, blocks_by_registers, "
             "blocks_by_shared_memory and blocks_by_sm_limit; yours are "
          << show_limit(got.blocks_by_warps) << ", " << show_limit(got.blocks_by_registers) << ", "
          << show_limit(got.blocks_by_shared_memory) << " and "
          << show_limit(got.blocks_by_sm_limit) << ", and your active_blocks is "
          << got.active_blocks << " (README 4.4).\n";
  }
  const bool own_warps_wrong = got.active_warps != got.active_blocks * got.warps_per_block;
  const bool own_occupancy_wrong =
      got.active_warps >= 0 && std::abs(got.occupancy - static_cast<double>(got.active_warps) /
                                                            d.max_warps_per_sm()) >= 1e-9;
  if ((differs(kActiveWarps, got.active_warps, want.active_warps) && own_warps_wrong) ||
      ((fields & kOccupancy) != 0 && !occupancy_ok && own_occupancy_wrong)) {
    hints << "hint: active_warps = active_blocks x warps_per_block, and occupancy = "
             "active_warps / the SM's "
          << d.max_warps_per_sm() << " warp slots, a fraction from 0 to 1 (README 4.4).\n";
  }
  if (differs(kLimitedBy, got.limited_by, want.limited_by) &&
      got.limited_by != limits_equal_to_answer(got)) {
    hints << "hint: limited_by needs the Limit bit of every limit equal to active_blocks; a "
             "tie sets several bits (README 4.4).\n";
  }
  if (hints.str().empty()) {
    hints << "hint: the fields above follow from others that are wrong; README section 4 "
             "gives each rule, in the order the calculator applies them.\n";
  }
  return "for " + describe(d, k) + ":\n" + table.str() + hints.str();
}

// The block size a search over multiples of the warp size finds by the student's own
// occupancy(): from warp_size up to `largest`, the most active warps, on a tie the larger
// (`larger_on_tie`) or the smaller. 0 when no size keeps a warp resident.
inline int searched_block_size(const DeviceLimits& d, int registers, int shared, int largest,
                               bool larger_on_tie) {
  int best_threads = 0, best_warps = 0;
  for (int threads = d.warp_size; threads <= largest; threads += d.warp_size) {
    const int warps = lab06::occupancy(d, {threads, registers, shared}).active_warps;
    if (warps > 0 && (warps > best_warps || (larger_on_tie && warps == best_warps))) {
      best_threads = threads;
      best_warps = warps;
    }
  }
  return best_threads;
}

// A hint that names the search's mistake when the student's choice is exactly what that mistake
// finds (by the student's own occupancy(), so that a wrong occupancy() is never blamed on the
// search), and the right search does not: a search that stops one warp short of
// max_threads_per_block, or one that keeps the smaller block on a tie. "" when neither proves it.
inline std::string search_mistake(const DeviceLimits& d, int registers, int shared,
                                  int chosen_threads) {
  const int right = searched_block_size(d, registers, shared, d.max_threads_per_block, true);
  if (chosen_threads == right) return "";
  const bool stops_short =
      chosen_threads ==
      searched_block_size(d, registers, shared, d.max_threads_per_block - d.warp_size, true);
  const bool keeps_smaller =
      chosen_threads == searched_block_size(d, registers, shared, d.max_threads_per_block, false);
  const std::string largest = std::to_string(d.max_threads_per_block);
  if (stops_short && keeps_smaller) {
    return "hint: your search kept " + std::to_string(chosen_threads) +
           " threads, as one that never tries " + largest +
           " would, and as one that keeps the smaller block on a tie would: try every multiple "
           "of the warp size up to and including max_threads_per_block, and on a tie keep the "
           "larger (README 6).";
  }
  if (stops_short) {
    return "hint: your search never tried max_threads_per_block (" + largest +
           " threads), the best size here: it kept what the sizes below it give. Loop while "
           "threads <= max_threads_per_block (README 6).";
  }
  if (keeps_smaller) {
    return "hint: several block sizes keep the most warps resident and your search kept the "
           "smallest of them, " +
           std::to_string(chosen_threads) +
           " threads: on a tie keep the largest, as the toolkit does (README 6).";
  }
  return "";
}

}  // namespace lab06_tests
