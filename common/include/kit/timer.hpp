// Timing kernels with device events: warm up, repeat, report the median.
#pragma once

#include <functional>
#include <vector>

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

// One call that is not timed (a warm-up, kit::time_ratio's readying call) but given its inputs
// and checked like a timed one: `hooks.before(call)`, the launch, the device idle, `hooks.after`.
void untimed_call(const std::function<void()>& launch, const TimedCallHooks& hooks, int call);

// `launch` enqueues the work and checks its own launch. Each repeat is timed alone between
// two events on the default stream, queued behind a short kernel that holds the stream until
// the host has queued them: the time is the GPU's alone, not the host's delay in launching,
// which grows when the machine is busy. The L2 cache is flushed before each repeat and no
// L2 is set aside for persisting accesses, so no call finds the last one's data waiting; and
// a repeat whose work outlasts its stop event (on another stream) is timed until the whole
// device is idle (docs/design/tests.md, "Timing").
Timing time_on_device(const std::function<void()>& launch, TimingOptions options = {},
                      const TimedCallHooks& hooks = {});

// Two launches timed in turns, repeat by repeat (first then second, then second then first), each
// repeat as time_on_device times it, within one ExclusiveGpu. Whatever slows the machine for a
// while (another GPU's work in the driver, a busy host) then lands on both sides of a turn, where
// timing one launch's repeats and then the other's put it on one side alone (docs/design/tests.md,
// "Timing"). median_ratio is the median over the repeats of second's time over first's in the
// same turn. Each side's calls are numbered from 0 for its own hooks.
struct TimedTurns {
  Timing first;
  Timing second;
  double median_ratio = 0;
};
TimedTurns time_in_turns(const std::function<void()>& first, const std::function<void()>& second,
                         TimingOptions options = {}, const TimedCallHooks& first_hooks = {},
                         const TimedCallHooks& second_hooks = {});

// The median of the values (the mean of the middle two for an even count); throws when empty.
double median_of(std::vector<double> values);

}  // namespace kit
