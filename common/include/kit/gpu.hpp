// Is there a GPU this build can run on? Asked once per process; the answer says why not.
#pragma once

#include <string>

namespace kit {

struct GpuStatus {
  bool usable = false;
  std::string reason;  // why not usable; empty when usable
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;  // 0 in a judge told its GPU by the grader (it asks NVML, which has no count)
};

// Checks that a device exists, that the driver accepts this runtime, and, except in a judge
// (kit/remote.hpp), that a kernel built into this binary launches on it (a missing architecture
// shows up here, not in every test). A judge's answer makes no CUDA context (common/src/gpu.cu).
const GpuStatus& gpu_status();

// Sets blocking sync on the device's primary context before the context exists (once a process):
// a thread waiting for the GPU sleeps instead of spinning on a core. gpu_status does it, but for a
// judge told its GPU by the grader, which starts no CUDA there; such a judge calls it before the
// context it makes for a timing (kit::time_ratio).
void wait_for_the_gpu_asleep();

// Whether this process has made its CUDA context on the current device, as the driver says
// (cuDevicePrimaryCtxGetState, which makes none); false where that cannot be asked.
bool has_cuda_context();

}  // namespace kit
