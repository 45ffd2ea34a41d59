// What the load counter's device callback adds to for one kernel launch (load_count_patch.cu),
// and the host library reads back after it (load_counter.cpp).
#pragma once

namespace kit_load_counter {

struct Counts {
  unsigned long long warp_loads;    // global load instructions executed, one per warp each
  unsigned long long thread_loads;  // the threads' loads among them
};

}  // namespace kit_load_counter
