#include "kit/timer.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/gpu_gate.hpp"

namespace kit {
namespace {

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

}  // namespace

Timing time_on_device(const std::function<void()>& launch, TimingOptions options) {
  if (options.repeats < 1 || options.warmup < 0) {
    throw std::invalid_argument("time_on_device: repeats must be at least 1 and warmup at least 0");
  }
  const ExclusiveGpu alone;  // no other process's work in the timings
  for (int i = 0; i < options.warmup; ++i) launch();
  KIT_CUDA_CHECK(cudaDeviceSynchronize());

  EventPair events;
  std::vector<double> times;
  times.reserve(options.repeats);
  for (int i = 0; i < options.repeats; ++i) {
    KIT_CUDA_CHECK(cudaEventRecord(events.start));
    launch();
    KIT_CUDA_CHECK(cudaEventRecord(events.stop));
    KIT_CUDA_CHECK(cudaEventSynchronize(events.stop));
    float ms = 0;
    KIT_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  Timing t;
  t.repeats = options.repeats;
  t.min_ms = times.front();
  t.max_ms = times.back();
  const std::size_t mid = times.size() / 2;
  t.median_ms = times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
  return t;
}

}  // namespace kit
