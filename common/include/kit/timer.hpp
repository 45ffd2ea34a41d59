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
  // Repeats whose work went on after the stop event (on another stream), timed instead until
  // the whole device was idle.
  int device_wide_repeats = 0;
};

// Work done around each call (warm-ups included), outside the time measured: `before` may
// give the call fresh inputs, `after` checks what the call computed and throws when it is
// wrong. Both get the call's number, from 0.
struct TimedCallHooks {
  std::function<void(int call)> before;
  std::function<void(int call)> after;
};

// `launch` enqueues the work and checks its own launch. Each repeat is timed alone between
// two events on the default stream, queued behind a short kernel that holds the stream until
// the host has queued them: the time is the GPU's alone, not the host's delay in launching,
// which grows when the machine is busy. The L2 cache is flushed before each repeat and no
// L2 is set aside for persisting accesses, so no call finds the last one's data waiting; and
// a repeat whose work outlasts its stop event (on another stream) is timed until the whole
// device is idle (docs/design/tests.md, "Timing").
Timing time_on_device(const std::function<void()>& launch, TimingOptions options = {},
                      const TimedCallHooks& hooks = {});

}  // namespace kit
