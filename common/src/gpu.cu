#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "kit/gpu.hpp"
#include "kit/nvml.hpp"
#include "kit/remote.hpp"

namespace kit {
namespace {

__global__ void probe_kernel(int* out) { *out = 42; }

std::string error_text(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
}

// The driver's handle of this process's current device, asked through the driver's entry points
// (remote::driver_function), which make no context; false where it cannot be had.
bool current_device(CUdevice& device) {
  using DeviceGet = CUresult (*)(CUdevice*, int);
  const auto device_get = reinterpret_cast<DeviceGet>(remote::driver_function("cuDeviceGet"));
  int ordinal = 0;
  const bool found = device_get != nullptr && cudaGetDevice(&ordinal) == cudaSuccess &&
                     device_get(&device, ordinal) == CUDA_SUCCESS;
  (void)cudaGetLastError();  // so that no later error check inherits one from here
  return found;
}

// Wait for the device asleep, not spinning (CUDA's default with fewer contexts than cores): the
// grader runs eight test processes on one GPU beside compiles, sanitizers and Nsight Compute, and
// a process spinning on a core while its kernels wait their turn on the GPU takes that core from
// them. Timings are unaffected: they are taken with events on the device. Set before the context
// exists, so that it is made with the flag, and through the driver: cudaSetDeviceFlags makes the
// context at once (seen with CUDA 13), and a judge should make none it does not need (below).
void wait_asleep() {
  using SetFlags = CUresult (*)(CUdevice, unsigned int);
  const auto set_flags =
      reinterpret_cast<SetFlags>(remote::driver_function("cuDevicePrimaryCtxSetFlags"));
  CUdevice device = 0;
  if (set_flags != nullptr && current_device(device)) {
    (void)set_flags(device, CU_CTX_SCHED_BLOCKING_SYNC);  // a failure costs a spinning core only
  }
}

}  // namespace

void wait_for_the_gpu_asleep() {
  static const bool done = (wait_asleep(), true);
  (void)done;
}

bool has_cuda_context() {
  // Before CUDA has started there is no context, and asking the driver would start it.
  if (!remote::cuda_started()) return false;
  using GetState = CUresult (*)(CUdevice, unsigned int*, int*);
  const auto get_state =
      reinterpret_cast<GetState>(remote::driver_function("cuDevicePrimaryCtxGetState"));
  CUdevice device = 0;
  unsigned int flags = 0;
  int active = 0;
  return get_state != nullptr && current_device(device) &&
         get_state(device, &flags, &active) == CUDA_SUCCESS && active != 0;
}

namespace {

GpuStatus probe() {
  GpuStatus s;
  // A judge whose grader named its lane's GPU asks NVML about that GPU alone, and leaves the CUDA
  // driver unstarted until a test needs a context: a process that can open every GPU's node of a
  // node initializes all of them when CUDA starts, three times the driver's work of a process
  // that sees one, and the driver does that work for the whole node largely one process after
  // another (bench/RESULTS.md, "Every GPU of a node"). The worker, which runs the lab's code,
  // sees its lane's node alone.
  if (remote::calls_are_remote() && nvml::lane_gpu(s.name, s.cc_major, s.cc_minor)) {
    s.usable = true;
    return s;
  }
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    s.reason = "cudaGetDeviceCount failed: " + error_text(code);
    return s;
  }
  if (count == 0) {
    s.reason = "no CUDA device is visible to this process";
    return s;
  }
  wait_for_the_gpu_asleep();
  cudaDeviceProp prop{};
  code = cudaGetDeviceProperties(&prop, 0);
  if (code != cudaSuccess) {
    s.reason = "cudaGetDeviceProperties failed: " + error_text(code);
    return s;
  }
  s.name = prop.name;
  s.cc_major = prop.major;
  s.cc_minor = prop.minor;
  s.sm_count = prop.multiProcessorCount;

  // A judge stops here, before its first CUDA context: most of a lab's tests then never make one
  // in the judge, which costs as much as the worker's while other test processes share the GPU
  // (bench/RESULTS.md, "A judge without a context"). None of the queries above makes one. The
  // price: a build without code for this GPU is not reported here as a skip; its first launch,
  // in the worker or a kit kernel of the judge's, fails with cudaErrorNoKernelImageForDevice.
  // The grader builds for the GPU it grades on, so only a hand-made build can meet that.
  if (remote::calls_are_remote()) {
    s.usable = true;
    return s;
  }

  int* d_out = nullptr;
  code = cudaMalloc(&d_out, sizeof(int));
  if (code != cudaSuccess) {
    s.reason = "cudaMalloc on " + s.name + " failed: " + error_text(code);
    return s;
  }
  probe_kernel<<<1, 1>>>(d_out);
  code = cudaGetLastError();
  if (code == cudaSuccess) code = cudaDeviceSynchronize();
  int value = 0;
  if (code == cudaSuccess) code = cudaMemcpy(&value, d_out, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d_out);
  if (code == cudaErrorNoKernelImageForDevice || code == cudaErrorInvalidDeviceFunction) {
    s.reason = "this build has no code for " + s.name + " (sm_" + std::to_string(prop.major) +
               std::to_string(prop.minor) +
               "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(prop.major) +
               std::to_string(prop.minor);
    return s;
  }
  if (code != cudaSuccess || value != 42) {
    s.reason = "a test kernel failed on " + s.name + ": " + error_text(code);
    return s;
  }
  s.usable = true;
  return s;
}

}  // namespace

const GpuStatus& gpu_status() {
  static const GpuStatus status = probe();
  return status;
}

}  // namespace kit
