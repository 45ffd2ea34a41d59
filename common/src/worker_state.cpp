// What a test case leaves in a worker that a new worker would not have, beyond its memory: the
// grader runs a lab's cases one after another in one judge process, and a case keeps the workers
// of the case before it (common/src/fresh_workers.cpp), so a case must meet its worker as a new
// one would meet it, or its verdict could differ from its verdict alone.
//
// - The runtime's last error. A call that failed (a cudaFuncSetAttribute the device refused)
//   leaves it set, and the student's KIT_CHECK_LAUNCH in the next case found it there: lab 05's
//   `no_check_before_launch` lost a case it passes alone. Each case's end takes it back.
// - Settings that outlive a call: a kernel's attributes (cudaFuncSetAttribute: lab 05 raises
//   cudaFuncAttributeMaxDynamicSharedMemorySize for strips past 48 KB, and a launch a case makes
//   without raising it would pass after another case raised it, fail alone: `static_tiles_kept`
//   passed a case so), its cache preference, the device's limits and cache preference. Setting
//   one back would not do either: the student's code may remember that it set it (a static
//   flag), and a new worker would set it again. So a worker whose student's code set any of them
//   serves no further case: the judge starts a new one.
//
// The worker's link wraps the runtime's setters (common/CMakeLists.txt), the student's calls
// included; calls through the driver API are not seen (a graded build refuses them:
// grader/confine/inspect.py). Only a call that succeeded is noted: a refused one set nothing,
// though code that remembers having tried would skip the call in the next case where a new
// worker would make it.
#include <cuda_runtime.h>

#include "kit/remote.hpp"

namespace kit::remote {
namespace {

bool settings_changed = false;
thread_local int own_calls = 0;  // the kit's own settings (the shared-memory fill's kernel)

void note(cudaError_t result) {
  if (result == cudaSuccess && own_calls == 0) settings_changed = true;
}

}  // namespace

KitsOwnSettings::KitsOwnSettings() { ++own_calls; }
KitsOwnSettings::~KitsOwnSettings() { --own_calls; }

bool settings_kept_since_start() { return !settings_changed; }

}  // namespace kit::remote

extern "C" {
cudaError_t __real_cudaFuncSetAttribute(const void*, cudaFuncAttribute, int);
cudaError_t __real_cudaFuncSetCacheConfig(const void*, cudaFuncCache);
cudaError_t __real_cudaDeviceSetLimit(cudaLimit, size_t);
cudaError_t __real_cudaDeviceSetCacheConfig(cudaFuncCache);

cudaError_t __wrap_cudaFuncSetAttribute(const void* function, cudaFuncAttribute attribute,
                                        int value) {
  const cudaError_t result = __real_cudaFuncSetAttribute(function, attribute, value);
  kit::remote::note(result);
  return result;
}

cudaError_t __wrap_cudaFuncSetCacheConfig(const void* function, cudaFuncCache preference) {
  const cudaError_t result = __real_cudaFuncSetCacheConfig(function, preference);
  kit::remote::note(result);
  return result;
}

cudaError_t __wrap_cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  const cudaError_t result = __real_cudaDeviceSetLimit(limit, value);
  kit::remote::note(result);
  return result;
}

cudaError_t __wrap_cudaDeviceSetCacheConfig(cudaFuncCache preference) {
  const cudaError_t result = __real_cudaDeviceSetCacheConfig(preference);
  kit::remote::note(result);
  return result;
}
}
