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
  int sm_count = 0;
};

// Checks that a device exists, that the driver accepts this runtime, and, except in a judge
// (kit/remote.hpp), that a kernel built into this binary launches on it (a missing architecture
// shows up here, not in every test). A judge's answer makes no CUDA context (common/src/gpu.cu).
const GpuStatus& gpu_status();

// Whether this process has made its CUDA context on the current device, as the driver says
// (cuDevicePrimaryCtxGetState, which makes none); false where that cannot be asked.
bool has_cuda_context();

}  // namespace kit
