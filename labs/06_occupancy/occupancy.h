// Lab 06's API: an occupancy calculator. The implementations live in occupancy.cu; the
// device presets (the limits of real GPUs) are in device_presets.h.
#pragma once

#include <limits>
#include <string>

namespace lab06 {

// How a GPU hands out registers: to each warp on its own (compute capability 2.0 and newer)
// or to a whole block at once (1.x).
enum class RegisterGranularity { kPerWarp, kPerBlock };

// What one streaming multiprocessor (SM) of a GPU can hold, and how it rounds allocations.
// The fields are the inputs of NVIDIA's occupancy calculator spreadsheet (README section 3).
struct DeviceLimits {
  std::string name;  // e.g. "H100 SXM (compute capability 9.0)"
  int cc_major = 0;  // compute capability, e.g. 9 and 0
  int cc_minor = 0;
  int multiprocessors = 0;           // SMs on the whole GPU (for grid sizes only)
  int warp_size = 32;                // threads per warp
  int max_threads_per_block = 0;     // largest block a kernel may launch with
  int max_threads_per_sm = 0;        // resident threads per SM (max warps x warp size)
  int max_blocks_per_sm = 0;         // resident blocks per SM, however small they are
  int registers_per_sm = 0;          // 32-bit registers in one SM's register file
  int max_registers_per_block = 0;   // registers one block may use at most
  int max_registers_per_thread = 0;  // the most the compiler may give a thread
  int register_allocation_unit = 0;  // registers are handed out in multiples of this
  RegisterGranularity register_granularity = RegisterGranularity::kPerWarp;
  int warp_allocation_granularity = 1;       // per warp: warps fitted by registers round down
                                             // to this; per block: warps round up to it first
  int shared_memory_per_sm = 0;              // bytes of shared memory in one SM
  int max_shared_memory_per_block = 0;       // bytes one block may use (the opt-in maximum)
  int shared_memory_allocation_unit = 0;     // shared memory is handed out in multiples of this
  int reserved_shared_memory_per_block = 0;  // bytes the driver adds to every block (8.0+)

  int max_warps_per_sm() const { return max_threads_per_sm / warp_size; }
};

// What a kernel launch asks of an SM for each of its blocks.
struct KernelUsage {
  int threads_per_block = 0;
  int registers_per_thread = 0;     // from cudaFuncGetAttributes().numRegs or ptxas -v
  int shared_memory_per_block = 0;  // bytes: static plus dynamic
};

// Which resources hold the number of resident blocks down. Several may at once (a tie);
// the bits have the values of cuda_occupancy.h's cudaOccLimitingFactor.
enum Limit : unsigned {
  kLimitWarps = 0x1,         // the SM's warp (thread) slots
  kLimitRegisters = 0x2,     // the register file
  kLimitSharedMemory = 0x4,  // shared memory
  kLimitBlocks = 0x8,        // the SM's cap on resident blocks
};

// A per-resource block limit that a kernel does not touch (no registers, no shared memory).
constexpr int kUnlimited = std::numeric_limits<int>::max();

// The calculator's answer for one configuration: the spreadsheet's "GPU occupancy data".
struct Occupancy {
  int warps_per_block = 0;          // warps one block occupies
  int registers_per_block = 0;      // registers allocated to one block, after rounding
  int shared_memory_per_block = 0;  // bytes allocated to one block: reserved bytes included,
                                    // after rounding
  int blocks_by_warps = 0;          // resident blocks each limit would allow on its own
  int blocks_by_registers = 0;      //   (kUnlimited when the kernel uses none of it)
  int blocks_by_shared_memory = 0;
  int blocks_by_sm_limit = 0;
  int active_blocks = 0;    // resident blocks per SM: the smallest of the four
  int active_warps = 0;     // resident warps per SM
  double occupancy = 0.0;   // active_warps / max warps per SM, from 0 to 1
  unsigned limited_by = 0;  // Limit bits of every limit equal to active_blocks
};

// Resident blocks, warps and occupancy for one kernel configuration on one device, with the
// limit that binds. Throws std::invalid_argument for a device with impossible limits, a
// block size below 1 or above the device's maximum, a register count below 0 or above the
// per-thread maximum, and shared memory below 0 or above the per-block maximum.
Occupancy occupancy(const DeviceLimits& device, const KernelUsage& kernel);

// The block size that keeps the most warps resident for a kernel with the given registers
// per thread and shared memory per block (the same for every block size).
struct BlockSizeChoice {
  int threads_per_block = 0;  // a multiple of the warp size; the largest of the best ones
  int active_blocks = 0;      // per SM, at that block size
  int active_warps = 0;
  double occupancy = 0.0;
  int min_grid_size = 0;  // active_blocks x multiprocessors: blocks that fill the GPU
};

// Tries every multiple of the warp size up to the device's maximum block size. Throws
// std::invalid_argument for the same register and shared memory values as occupancy().
BlockSizeChoice best_block_size(const DeviceLimits& device, int registers_per_thread,
                                int shared_memory_per_block);

// "warps and registers": the names of the Limit bits that are set, for messages.
inline std::string limit_names(unsigned limited_by) {
  std::string out;
  const struct {
    unsigned bit;
    const char* name;
  } names[] = {{kLimitWarps, "warps"},
               {kLimitRegisters, "registers"},
               {kLimitSharedMemory, "shared memory"},
               {kLimitBlocks, "the block limit"}};
  for (const auto& n : names) {
    if ((limited_by & n.bit) == 0) continue;
    if (!out.empty()) out += " and ";
    out += n.name;
  }
  return out.empty() ? "nothing" : out;
}

}  // namespace lab06
