// The facts of kit/remote.hpp that the rest of kit_common reads: whether this process's lab calls
// go to a worker (the timer; set by the judge's side when it starts one), which of its host arrays
// are staged as device memory (the harness's run_matmul), and whether this process has started
// CUDA, which both sides ask before a call that would start it.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "kit/remote.hpp"

namespace kit::remote {
namespace {
std::atomic<bool> remote{false};
}  // namespace

bool calls_are_remote() { return remote; }
void mark_calls_remote() { remote = true; }

namespace {
std::atomic<bool> timed{false};
}  // namespace

namespace {

struct StagedRegistry {
  std::mutex mutex;
  std::vector<StagedArray> arrays;
};

StagedRegistry& staged_registry() {
  static StagedRegistry registry;
  return registry;
}

}  // namespace

StagedArrays::StagedArrays(std::initializer_list<StagedArray> arrays) : arrays_(arrays) {
  // Only a judge's calls stage: elsewhere a launch would be handed these host addresses.
  if (!calls_are_remote()) {
    throw std::logic_error(
        "kit::remote::StagedArrays outside a judge: this process's lab calls "
        "do not go to a worker, so host arrays cannot cross as device memory");
  }
  StagedRegistry& r = staged_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.arrays.insert(r.arrays.end(), arrays_.begin(), arrays_.end());
}

StagedArrays::~StagedArrays() {
  StagedRegistry& r = staged_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const StagedArray& mine : arrays_) {
    for (auto a = r.arrays.begin(); a != r.arrays.end(); ++a) {
      if (a->data == mine.data) {
        r.arrays.erase(a);
        break;
      }
    }
  }
}

bool find_staged(const void* pointer, StagedArray& found) {
  StagedRegistry& r = staged_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto* p = static_cast<const char*>(pointer);
  for (const StagedArray& a : r.arrays) {
    const auto* start = static_cast<const char*>(a.data);
    if (p >= start && p < start + a.bytes) {
      found = a;
      return true;
    }
  }
  return false;
}

bool calls_are_timed() { return timed; }
TimedCalls::TimedCalls() { timed = true; }
TimedCalls::~TimedCalls() { timed = false; }

bool cuda_started() {
  static std::atomic<bool> started{false};
  using Count = CUresult (*)(int*);
  static std::atomic<Count> count{nullptr};  // the driver's, once it is loaded (never unloaded)
  if (started) return true;                  // nothing stops it again
  if (count == nullptr) {
    // First the link map, in memory: dlopen(RTLD_NOLOAD) would search the library path for a
    // library not loaded, a dozen failed opens on every call of a host-only test.
    const int loaded = ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void*) -> int {
          if (info->dlpi_name == nullptr) return 0;
          const char* slash = std::strrchr(info->dlpi_name, '/');
          const char* name = slash != nullptr ? slash + 1 : info->dlpi_name;
          return std::strncmp(name, "libcuda.so", 10) == 0 ? 1 : 0;
        },
        nullptr);
    if (loaded == 0) return false;
    void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // kept: it stays loaded
    if (driver == nullptr) return false;
    count = reinterpret_cast<Count>(::dlsym(driver, "cuDeviceGetCount"));
    if (count == nullptr) return false;
  }
  // Loaded is not started: NVML loads libcuda too (the judge's watch of its worker's device
  // memory). Until cuInit the driver answers cuDeviceGetCount with CUDA_ERROR_NOT_INITIALIZED,
  // and the asking starts nothing.
  int devices = 0;
  if (count.load()(&devices) == CUDA_ERROR_NOT_INITIALIZED) return false;
  started = true;
  return true;
}

void* driver_function(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();  // no driver here (CI): no later check inherits the error
    return nullptr;
  }
  return function;
}

}  // namespace kit::remote
