// The limits of real GPUs, one preset per compute capability, for lab 06's calculator.
// 1.3 to 3.5: NVIDIA's occupancy calculator spreadsheet of the CUDA 5 era (the article in
// README section 3 shows it). 7.5 and newer: cudaGetDeviceProperties of those GPUs and the
// per-architecture constants in the toolkit's cuda_occupancy.h (README section 3.3).
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "occupancy.h"

namespace lab06 {

namespace preset_detail {

// A modern GPU: registers per warp in units of 256, four SM sub-partitions (so warps fitted
// by registers come in fours), 255 registers per thread at most.
inline DeviceLimits modern(const char* name, int major, int minor, int sms, int threads_per_sm,
                           int blocks_per_sm, int shared_per_sm, int shared_per_block,
                           int shared_unit, int reserved) {
  DeviceLimits d;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  d.multiprocessors = sms;
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = threads_per_sm;
  d.max_blocks_per_sm = blocks_per_sm;
  d.registers_per_sm = 65536;
  d.max_registers_per_block = 65536;
  d.max_registers_per_thread = 255;
  d.register_allocation_unit = 256;
  d.register_granularity = RegisterGranularity::kPerWarp;
  d.warp_allocation_granularity = 4;
  d.shared_memory_per_sm = shared_per_sm;
  d.max_shared_memory_per_block = shared_per_block;
  d.shared_memory_allocation_unit = shared_unit;
  d.reserved_shared_memory_per_block = reserved;
  return d;
}

// A CUDA 5 era GPU, with the spreadsheet's values.
inline DeviceLimits classic(const char* name, int major, int minor, int sms, int max_block,
                            int threads_per_sm, int blocks_per_sm, int registers,
                            int regs_per_thread, int reg_unit, RegisterGranularity granularity,
                            int warp_granularity, int shared, int shared_unit) {
  DeviceLimits d;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  d.multiprocessors = sms;
  d.warp_size = 32;
  d.max_threads_per_block = max_block;
  d.max_threads_per_sm = threads_per_sm;
  d.max_blocks_per_sm = blocks_per_sm;
  d.registers_per_sm = registers;
  d.max_registers_per_block = registers;
  d.max_registers_per_thread = regs_per_thread;
  d.register_allocation_unit = reg_unit;
  d.register_granularity = granularity;
  d.warp_allocation_granularity = warp_granularity;
  d.shared_memory_per_sm = shared;
  d.max_shared_memory_per_block = shared;
  d.shared_memory_allocation_unit = shared_unit;
  d.reserved_shared_memory_per_block = 0;
  return d;
}

}  // namespace preset_detail

// Every preset, oldest first. The README's table in section 3.3 lists the same values.
inline const std::vector<DeviceLimits>& device_presets() {
  using preset_detail::classic;
  using preset_detail::modern;
  constexpr auto kWarp = RegisterGranularity::kPerWarp;
  constexpr auto kBlock = RegisterGranularity::kPerBlock;
  // clang-format off
  static const std::vector<DeviceLimits> presets = {
      // name, cc, SMs, max block, threads/SM, blocks/SM, registers/SM, max registers/thread,
      // register unit, register granularity, warp granularity, shared/SM, shared unit
      classic("GTX 280 (compute capability 1.3)", 1, 3, 30, 512, 1024, 8, 16384, 128, 512, kBlock, 2, 16384, 512),
      classic("GTX 480 (compute capability 2.0)", 2, 0, 15, 1024, 1536, 8, 32768, 63, 64, kWarp, 2, 49152, 128),
      classic("GTX 680 (compute capability 3.0)", 3, 0, 8, 1024, 2048, 16, 65536, 63, 256, kWarp, 4, 49152, 256),
      classic("GTX Titan (compute capability 3.5)", 3, 5, 14, 1024, 2048, 16, 65536, 255, 256, kWarp, 4, 49152, 256),
      // name, cc, SMs, threads/SM, blocks/SM, shared/SM, max shared/block, shared unit, reserved
      modern("T4 (compute capability 7.5)", 7, 5, 40, 1024, 16, 65536, 65536, 256, 0),
      modern("A100 (compute capability 8.0)", 8, 0, 108, 2048, 32, 167936, 166912, 128, 1024),
      modern("RTX 3090 (compute capability 8.6)", 8, 6, 82, 1536, 16, 102400, 101376, 128, 1024),
      modern("L4 (compute capability 8.9)", 8, 9, 58, 1536, 24, 102400, 101376, 128, 1024),
      modern("H100 SXM (compute capability 9.0)", 9, 0, 132, 2048, 32, 233472, 232448, 128, 1024),
      modern("B200 (compute capability 10.0)", 10, 0, 148, 2048, 32, 233472, 232448, 128, 1024),
      modern("RTX 5090 (compute capability 12.0)", 12, 0, 170, 1536, 24, 102400, 101376, 128, 1024),
  };
  // clang-format on
  return presets;
}

// "9.0" -> the compute capability 9.0 preset. Throws std::invalid_argument naming the presets.
inline const DeviceLimits& device_preset(const std::string& compute_capability) {
  std::string known;
  for (const DeviceLimits& d : device_presets()) {
    const std::string cc = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    if (cc == compute_capability) return d;
    known += (known.empty() ? "" : " ") + cc;
  }
  throw std::invalid_argument("lab06::device_preset: no preset for compute capability '" +
                              compute_capability + "'; the presets are " + known);
}

// The presets that the toolkit's cuda_occupancy.h can also compute (3.0 and newer).
inline std::vector<DeviceLimits> toolkit_presets() {
  std::vector<DeviceLimits> out;
  for (const DeviceLimits& d : device_presets()) {
    if (d.cc_major >= 3) out.push_back(d);
  }
  return out;
}

// A preset for the GPU a program runs on: the limits from cudaGetDeviceProperties, the
// allocation rules (which no property reports) from cuda_occupancy.h for its architecture.
inline DeviceLimits device_limits_from_properties(const cudaDeviceProp& prop) {
  DeviceLimits d = preset_detail::modern(
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.maxThreadsPerMultiProcessor,
      prop.maxBlocksPerMultiProcessor, static_cast<int>(prop.sharedMemPerMultiprocessor),
      static_cast<int>(prop.sharedMemPerBlockOptin), prop.major >= 8 ? 128 : 256,
      static_cast<int>(prop.reservedSharedMemPerBlock));
  d.name = std::string(prop.name) + " (compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + ")";
  d.warp_size = prop.warpSize;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.registers_per_sm = prop.regsPerMultiprocessor;
  d.max_registers_per_block = prop.regsPerBlock;
  return d;
}

}  // namespace lab06
