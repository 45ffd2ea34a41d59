// What this process holds of the device's memory through cudaMalloc, counted call by call, and
// the most it may hold.
//
// Every executable of the kit is linked with --wrap=cudaMalloc,--wrap=cudaFree (kit_common's
// link options), so each cudaMalloc and cudaFree of the process, the student's included, goes
// through src/device_memory.cpp first. cudaMalloc is the only way a lab's code may allocate
// device memory (the grader's object inspection refuses the others), so the count is exact:
// - lab 02's leak test asks what a call kept, instead of reading the device's free memory,
//   which every other process on the GPU moves too (and which a process parked by the grader,
//   holding all it took, could leave at zero);
// - no test process may hold more than device_memory_limit() bytes: one that grabs all it can
//   cannot leave a classmate's test, sharing the GPU, without memory (docs/design/tests.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kit {

struct DeviceMemoryUse {
  std::size_t bytes = 0;        // allocated through cudaMalloc and not yet freed
  std::size_t allocations = 0;  // how many such allocations
  std::size_t refused = 0;      // cudaMalloc calls refused for going over the limit
  std::uint64_t made = 0;       // allocations made since the process began, freed or not
};

DeviceMemoryUse device_memory_use();

// 2 GiB, or KIT_DEVICE_MEMORY_LIMIT_MIB when set (staff, for a kit test that needs more): no
// lab test needs a tenth of it. The grader's 12 GPU slots, and as many parked processes, all at
// the limit would need 48 GiB; a GPU of less memory is graded with fewer slots, one for each 4 GiB
// past 4 kept back (gpu_slots_for in grader/engine/gpus.py).
std::size_t device_memory_limit();

// Which allocation of this process starts at `base`: a number no other allocation of the
// process had, even one at the same address after a cudaFree; 0 for an address cudaMalloc did
// not return. A judge sends it with a buffer's IPC handle (kit/remote.hpp), because the driver
// can give a new allocation at a freed one's address the same handle.
std::uint64_t allocation_serial(const void* base);

// A judge's buffer handed to its worker as an IPC handle: a cudaFree of it is held back until
// release_held_device_memory, which the judge calls when that worker has ended.
void mark_exported(const void* base);
void release_held_device_memory();

}  // namespace kit
