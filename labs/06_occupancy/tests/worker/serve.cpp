// Lab 06's worker: the calls it serves from the student's calculator (or, built as the
// reference worker, from the reference's). kit/remote.hpp's worker main does the rest.
#include "../calls.hpp"
#include "occupancy.h"

namespace {
[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab06_calls::Occupancy>(&lab06::occupancy),
    kit::remote::serve<lab06_calls::BestBlockSize>(&lab06::best_block_size),
};
}  // namespace
