#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/gpu_gate.hpp"
#include "kit/remote.hpp"
#include "kit/timer.hpp"

namespace kit {
namespace {

// Longest a repeat holds its stream: long enough for any host delay in queueing the timed
// work, short enough that a launcher which waits for the stream itself costs little.
constexpr unsigned long long kMaxHoldNs = 200ull * 1000 * 1000;

// How far the host's clock (launch to an idle device) may exceed the events' time before a
// repeat counts as work done outside the events: the host's own delays in launching and
// waking up, which a busy machine stretches, stay well inside it.
constexpr double kDeviceWideSlackMs = 0.5;
constexpr double kDeviceWideSlackShare = 0.25;

// Holds the stream until the host has queued the timed work, so that the time between the two
// events is the GPU's alone. Without it the start event fires at once and the delay before the
// host launches the work is counted too: a few microseconds on an idle machine, more on a busy
// one, which made a ratio depend on what else the grader was running. Gives up after max_ns
// in case the timed launch waits for the stream (a launcher that synchronises).
__global__ void hold_stream(const volatile int* release, unsigned long long max_ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    if (*release) return;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < max_ns);
}

// The host-side flag that releases hold_stream, in pinned memory the device reads directly.
struct ReleaseFlag {
  volatile int* host = nullptr;
  int* device = nullptr;
  ReleaseFlag() {
    KIT_CUDA_CHECK(cudaHostAlloc(const_cast<int**>(&host), sizeof(int), cudaHostAllocMapped));
    KIT_CUDA_CHECK(
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), const_cast<int*>(host), 0));
  }
  ~ReleaseFlag() {
    set(1);  // a hold still spinning (the timed launch threw) ends before the flag is freed
    cudaFreeHost(const_cast<int*>(host));
  }
  void set(int value) {
    *host = value;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
};

// Destroys the two events however the timing loop ends.
struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  EventPair() {
    KIT_CUDA_CHECK(cudaEventCreate(&start));
    KIT_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// Turns persisting L2 off for the timings (no lines set aside that would keep one call's data
// for the next) and flushes the cache before each repeat by writing a buffer twice its size, so
// that every repeat starts from memory, whatever the call before it (or the check after it) read.
class L2Reset {
 public:
  L2Reset() {
    int device = 0;
    KIT_CUDA_CHECK(cudaGetDevice(&device));
    int l2_bytes = 0, persisting_max = 0;
    KIT_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    KIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&persisting_max, cudaDevAttrMaxPersistingL2CacheSize, device));
    persisting_ = persisting_max > 0;
    if (persisting_) {
      KIT_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
      KIT_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    }
    bytes_ = 2 * static_cast<std::size_t>(l2_bytes);
    if (bytes_ > 0) KIT_CUDA_CHECK(cudaMalloc(&scratch_, bytes_));
  }
  ~L2Reset() { cudaFree(scratch_); }
  L2Reset(const L2Reset&) = delete;
  L2Reset& operator=(const L2Reset&) = delete;

  void flush(int repeat) const {
    if (scratch_) KIT_CUDA_CHECK(cudaMemsetAsync(scratch_, repeat & 0xFF, bytes_));
  }

  // A launcher may not set L2 aside for its own data between timed calls.
  void require_no_persisting_lines() const {
    if (!persisting_) return;
    std::size_t limit = 0;
    KIT_CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    if (limit != 0) {
      throw std::runtime_error(
          "time_on_device: the timed code set aside " + std::to_string(limit) +
          " bytes of L2 cache for persisting accesses (cudaLimitPersistingL2CacheSize); kernels "
          "are timed with the cache as every other kernel finds it, so leave that limit alone");
    }
  }

 private:
  void* scratch_ = nullptr;
  std::size_t bytes_ = 0;
  bool persisting_ = false;
};

// Times one repeat at a time, each the same way: the L2 flushed first, then either between two
// events behind a held stream, or (in a judge) by the host clock from request to reply.
class RepeatTimer {
 public:
  RepeatTimer() : remote_(remote::calls_are_remote()) {
    if (!remote_) {
      events_.emplace();
      release_.emplace();
    }
  }

  // The call's time in milliseconds; `launch` has its inputs already. The first one marks a
  // judge's calls timed from then on (remote::TimedCalls): not the warm-ups, which the worker
  // serves as any other call (its fill of shared memory, the judge's watch of its memory).
  double time(const std::function<void()>& launch, int repeat, Timing& t) {
    if (remote_ && !timed_) timed_.emplace();
    l2_.flush(repeat);
    if (remote_) {
      // A judge's calls run in a worker's CUDA context, which this process's events cannot see:
      // each is timed by the host clock from request to reply, which comes after the worker's
      // device is idle (kit/remote.hpp). The reference is timed the same way in its own worker.
      // The worker leaves shared memory as it is during these calls: its fill is not timed.
      KIT_CUDA_CHECK(cudaDeviceSynchronize());
      const auto start = std::chrono::steady_clock::now();
      launch();
      KIT_CUDA_CHECK(cudaDeviceSynchronize());
      ++t.device_wide_repeats;
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
    }
    release_->set(0);
    hold_stream<<<1, 1>>>(release_->device, kMaxHoldNs);
    KIT_CHECK_LAUNCH();
    KIT_CUDA_CHECK(cudaEventRecord(events_->start));
    const auto host_start = std::chrono::steady_clock::now();
    launch();
    KIT_CUDA_CHECK(cudaEventRecord(events_->stop));
    release_->set(1);
    KIT_CUDA_CHECK(cudaEventSynchronize(events_->stop));
    float ms = 0;
    KIT_CUDA_CHECK(cudaEventElapsedTime(&ms, events_->start, events_->stop));
    // Work on a stream that does not wait for the default one is not between the events; the
    // host clock from the launch to an idle device is then the honest, if noisier, figure.
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start)
            .count();
    l2_.require_no_persisting_lines();
    if (host_ms > ms + kDeviceWideSlackMs + kDeviceWideSlackShare * ms) {
      ++t.device_wide_repeats;
      return host_ms;
    }
    return ms;
  }

 private:
  bool remote_;
  L2Reset l2_;
  std::optional<remote::TimedCalls> timed_;
  std::optional<EventPair> events_;
  std::optional<ReleaseFlag> release_;
};

// One timed call with its hooks around it.
double timed_call(RepeatTimer& timer, const std::function<void()>& launch,
                  const TimedCallHooks& hooks, int call, int repeat, Timing& t) {
  if (hooks.before) hooks.before(call);
  const double ms = timer.time(launch, repeat, t);
  if (hooks.after) hooks.after(call);
  return ms;
}

void check_options(const TimingOptions& options, const char* who) {
  if (options.repeats < 1 || options.warmup < 0) {
    throw std::invalid_argument(std::string(who) +
                                ": repeats must be at least 1 and warmup at least 0");
  }
}

Timing summarize(std::vector<double> times, Timing t, int repeats) {
  t.repeats = repeats;
  t.min_ms = *std::min_element(times.begin(), times.end());
  t.max_ms = *std::max_element(times.begin(), times.end());
  t.median_ms = median_of(std::move(times));
  return t;
}

}  // namespace

void untimed_call(const std::function<void()>& launch, const TimedCallHooks& hooks, int call) {
  if (hooks.before) hooks.before(call);
  launch();
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  if (hooks.after) hooks.after(call);
}

double median_of(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median_of: no values");
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

Timing time_on_device(const std::function<void()>& launch, TimingOptions options,
                      const TimedCallHooks& hooks) {
  check_options(options, "time_on_device");
  const ExclusiveGpu alone;  // no other process's work in the timings
  RepeatTimer timer;
  int call = 0;
  for (int i = 0; i < options.warmup; ++i) untimed_call(launch, hooks, call++);
  std::vector<double> times;
  times.reserve(options.repeats);
  Timing t;
  for (int i = 0; i < options.repeats; ++i) {
    times.push_back(timed_call(timer, launch, hooks, call++, i, t));
  }
  return summarize(std::move(times), t, options.repeats);
}

TimedTurns time_in_turns(const std::function<void()>& first, const std::function<void()>& second,
                         TimingOptions options, const TimedCallHooks& first_hooks,
                         const TimedCallHooks& second_hooks) {
  check_options(options, "time_in_turns");
  const ExclusiveGpu alone;
  RepeatTimer timer;
  int first_call = 0, second_call = 0;
  for (int i = 0; i < options.warmup; ++i) {
    untimed_call(first, first_hooks, first_call++);
    untimed_call(second, second_hooks, second_call++);
  }
  std::vector<double> a, b, ratios;
  TimedTurns turns;
  for (int i = 0; i < options.repeats; ++i) {
    // First then second, then the other way round: neither always runs right after the other,
    // so a clock still ramping up, or a cache or driver warmed by the one before, favours
    // neither side.
    double first_ms = 0, second_ms = 0;
    if (i % 2 == 0) {
      first_ms = timed_call(timer, first, first_hooks, first_call++, i, turns.first);
      second_ms = timed_call(timer, second, second_hooks, second_call++, i, turns.second);
    } else {
      second_ms = timed_call(timer, second, second_hooks, second_call++, i, turns.second);
      first_ms = timed_call(timer, first, first_hooks, first_call++, i, turns.first);
    }
    a.push_back(first_ms);
    b.push_back(second_ms);
    ratios.push_back(second_ms / first_ms);
  }
  turns.first = summarize(std::move(a), turns.first, options.repeats);
  turns.second = summarize(std::move(b), turns.second, options.repeats);
  turns.median_ratio = median_of(std::move(ratios));
  return turns;
}

}  // namespace kit
