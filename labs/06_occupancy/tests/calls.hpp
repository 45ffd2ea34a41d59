// Lab 06's API as it crosses from the tests (the judge) to the student's calculator (the
// worker): each call's arguments in order, and how the structs cross. The judge's side is
// tests/calls_judge.cpp, the worker's tests/worker/serve.cpp (kit/remote.hpp).
#pragma once

#include <cstddef>
#include <vector>

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

// The judge's own: occupancy(device, kernels[i]) for every i, in order, in one call to the
// worker. Tests that scan a range ask tens of thousands of configurations, and a round trip
// between two processes each cost far more than the calculator (on the 2-core machine one
// test went from 0.3 s before the judge and worker were split to 2.5 s a run).
std::vector<Occupancy> occupancy_of_each(const DeviceLimits& device,
                                         const std::vector<KernelUsage>& kernels);

}  // namespace lab06

namespace lab06_calls {

// The worker runs the student's occupancy() on each kernel and sends back every result; the
// judge reads them as it reads any call's results (their number is its own).
struct OccupancyOfEach {
  static constexpr const char* name = "lab06::occupancy_of_each";
  template <class Wire>
  static void args(Wire& w, lab06::DeviceLimits& device, int& count,
                   const lab06::KernelUsage*& kernels, lab06::Occupancy*& results) {
    w.value(device), w.value(count);
    w.host_in(kernels, static_cast<std::size_t>(count));
    w.host_out(results, static_cast<std::size_t>(count));
  }
};

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
