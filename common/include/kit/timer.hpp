// Timing kernels with device events: warm up, repeat, report the median.
#pragma once

#include <functional>

namespace kit {

struct TimingOptions {
  int warmup = 5;
  int repeats = 21;
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int repeats = 0;
};

// `launch` enqueues the work on the default stream and checks its own launch. Each repeat is
// timed alone between two events, queued behind a short kernel that holds the stream until the
// host has queued them: the time is the GPU's alone, not the host's delay in launching, which
// grows when the machine is busy (docs/architecture.md, "Timing").
Timing time_on_device(const std::function<void()>& launch, TimingOptions options = {});

}  // namespace kit
