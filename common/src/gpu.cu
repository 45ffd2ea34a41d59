#include <cuda_runtime.h>

#include <string>

#include "kit/gpu.hpp"

namespace kit {
namespace {

__global__ void probe_kernel(int* out) { *out = 42; }

std::string error_text(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
}

GpuStatus probe() {
  GpuStatus s;
  // Wait for the device asleep, not spinning (CUDA's default with fewer contexts than cores):
  // the grader runs eight test processes on one GPU beside compiles, sanitizers and Nsight
  // Compute, and a process spinning on a core while its kernels wait their turn on the GPU takes
  // that core from them. Timings are unaffected: they are taken with events on the device.
  // Before the context exists, so that it is created with the flag; a failure here (no device)
  // is reported by the calls below, and cleared so that no later error check inherits it.
  if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();
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
