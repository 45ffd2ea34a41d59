#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
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

}  // namespace

namespace {

Timing summarize(std::vector<double>& times, Timing t, int repeats) {
  std::sort(times.begin(), times.end());
  t.repeats = repeats;
  t.min_ms = times.front();
  t.max_ms = times.back();
  const std::size_t mid = times.size() / 2;
  t.median_ms = times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
  return t;
}

}  // namespace

Timing time_on_device(const std::function<void()>& launch, TimingOptions options,
                      const TimedCallHooks& hooks) {
  if (options.repeats < 1 || options.warmup < 0) {
    throw std::invalid_argument("time_on_device: repeats must be at least 1 and warmup at least 0");
  }
  const ExclusiveGpu alone;  // no other process's work in the timings
  const L2Reset l2;
  int call = 0;
  for (int i = 0; i < options.warmup; ++i, ++call) {
    if (hooks.before) hooks.before(call);
    launch();
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    if (hooks.after) hooks.after(call);
  }

  std::vector<double> times;
  times.reserve(options.repeats);
  Timing t;
  if (remote::calls_are_remote()) {
    // A judge's calls run in a worker's CUDA context, which this process's events cannot see:
    // each is timed by the host clock from request to reply, which comes after the worker's
    // device is idle (kit/remote.hpp). The reference is timed the same way in its own worker.
    // The worker leaves shared memory as it is during these calls: its fill is not timed.
    const remote::TimedCalls timed;
    for (int i = 0; i < options.repeats; ++i, ++call) {
      if (hooks.before) hooks.before(call);
      l2.flush(i);
      KIT_CUDA_CHECK(cudaDeviceSynchronize());
      const auto start = std::chrono::steady_clock::now();
      launch();
      KIT_CUDA_CHECK(cudaDeviceSynchronize());
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
      ++t.device_wide_repeats;
      if (hooks.after) hooks.after(call);
    }
    return summarize(times, t, options.repeats);
  }
  EventPair events;
  ReleaseFlag release;
  for (int i = 0; i < options.repeats; ++i, ++call) {
    if (hooks.before) hooks.before(call);
    l2.flush(i);
    release.set(0);
    hold_stream<<<1, 1>>>(release.device, kMaxHoldNs);
    KIT_CHECK_LAUNCH();
    KIT_CUDA_CHECK(cudaEventRecord(events.start));
    const auto host_start = std::chrono::steady_clock::now();
    launch();
    KIT_CUDA_CHECK(cudaEventRecord(events.stop));
    release.set(1);
    KIT_CUDA_CHECK(cudaEventSynchronize(events.stop));
    float ms = 0;
    KIT_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    // Work on a stream that does not wait for the default one is not between the events; the
    // host clock from the launch to an idle device is then the honest, if noisier, figure.
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start)
            .count();
    if (host_ms > ms + kDeviceWideSlackMs + kDeviceWideSlackShare * ms) {
      times.push_back(host_ms);
      ++t.device_wide_repeats;
    } else {
      times.push_back(ms);
    }
    l2.require_no_persisting_lines();
    if (hooks.after) hooks.after(call);
  }
  return summarize(times, t, options.repeats);
}

}  // namespace kit
