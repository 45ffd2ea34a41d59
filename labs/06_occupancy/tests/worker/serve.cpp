// Lab 06's worker: the calls it serves from the student's calculator (or, built as the
// reference worker, from the reference's). kit/remote.hpp's worker main does the rest.
#include "../calls.hpp"
#include "occupancy.h"

namespace {

// The kit's loop around the calculator for OccupancyOfEach: each result is the calculator's.
void occupancy_of_each(const lab06::DeviceLimits& device, int count,
                       const lab06::KernelUsage* kernels, lab06::Occupancy* results) {
  for (int i = 0; i < count; ++i) results[i] = lab06::occupancy(device, kernels[i]);
}

[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab06_calls::Occupancy>(&lab06::occupancy),
    kit::remote::serve<lab06_calls::OccupancyOfEach>(&occupancy_of_each),
    kit::remote::serve<lab06_calls::BestBlockSize>(&lab06::best_block_size),
};
}  // namespace
