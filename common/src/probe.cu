#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"

namespace kit::probe {
namespace {

// Shared memory written, a barrier, then read by other threads: race-free and in bounds by
// construction, so any report on it means the sanitizer itself does not work here.
__global__ void selftest_kernel(float* out) {
  __shared__ float staged[64];
  staged[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = staged[63 - threadIdx.x];
}

int run_selftest() {
  DeviceBuffer<float> d_out(64);
  selftest_kernel<<<1, 64>>>(d_out.data());
  KIT_CHECK_LAUNCH();
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}

}  // namespace

int main(int argc, char** argv, const std::string& program, const std::vector<Mode>& modes) {
  const std::string mode = argc == 2 ? argv[1] : "";
  try {
    if (mode == "selftest") return run_selftest();
    for (const Mode& m : modes) {
      if (m.name == mode) return m.run();
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s %s: %s\n", program.c_str(), mode.c_str(), error.what());
    return 1;
  }
  std::string usage = "selftest";
  for (const Mode& m : modes) usage += "|" + m.name;
  std::fprintf(stderr, "usage: %s %s\n", program.c_str(), usage.c_str());
  return 2;
}

long long first_unwritten(const float* d_out, std::size_t count) {
  std::vector<float> got(count);
  KIT_CUDA_CHECK(cudaMemcpy(got.data(), d_out, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < count; ++i) {
    if (is_poison(got[i])) return static_cast<long long>(i);
  }
  return -1;
}

}  // namespace kit::probe
