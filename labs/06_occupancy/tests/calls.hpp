// Lab 06's API as it crosses from the tests (the judge) to the student's calculator (the
// worker): each call's arguments in order, and how the structs cross. The judge's side is
// tests/calls_judge.cpp, the worker's tests/worker/serve.cpp (kit/remote.hpp).
#pragma once

#include "kit/remote.hpp"
#include "occupancy.h"

namespace lab06 {

// DeviceLimits holds a name, so it crosses field by field (kit::remote::has_fields); the other
// structs are plain values.
template <class Wire>
void fields(Wire& w, DeviceLimits& d) {
  w.value(d.name), w.value(d.cc_major), w.value(d.cc_minor), w.value(d.multiprocessors);
  w.value(d.warp_size), w.value(d.max_threads_per_block), w.value(d.max_threads_per_sm);
  w.value(d.max_blocks_per_sm), w.value(d.registers_per_sm), w.value(d.max_registers_per_block);
  w.value(d.max_registers_per_thread), w.value(d.register_allocation_unit);
  w.value(d.register_granularity), w.value(d.warp_allocation_granularity);
  w.value(d.shared_memory_per_sm), w.value(d.max_shared_memory_per_block);
  w.value(d.shared_memory_allocation_unit), w.value(d.reserved_shared_memory_per_block);
}

}  // namespace lab06

namespace lab06_calls {

struct Occupancy {
  static constexpr const char* name = "lab06::occupancy";
  template <class Wire>
  static void args(Wire& w, lab06::DeviceLimits& device, lab06::KernelUsage& kernel) {
    w.value(device), w.value(kernel);
  }
};

struct BestBlockSize {
  static constexpr const char* name = "lab06::best_block_size";
  template <class Wire>
  static void args(Wire& w, lab06::DeviceLimits& device, int& registers_per_thread,
                   int& shared_memory_per_block) {
    w.value(device), w.value(registers_per_thread), w.value(shared_memory_per_block);
  }
};

}  // namespace lab06_calls
