// Another process using the device, as the other students' tests do while a class is graded:
// kernels that write 0 into all of every SM's shared memory, back to back, for the seconds given.
// It prints "ready" once its first kernel has run, so that a test can start its calls after it.
// The remote tests run the worker's calls beside it (test_remote.cpp).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void zero_shared(int floats) {
  extern __shared__ float slots[];
  for (int i = threadIdx.x; i < floats; i += blockDim.x) slots[i] = 0.0f;
}

bool check(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return true;
  std::fprintf(stderr, "shared_memory_busy: %s failed: %s\n", what, cudaGetErrorString(code));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  int device = 0, optin = 0, sms = 0;
  if (!check(cudaGetDevice(&device), "cudaGetDevice") ||
      !check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             "cudaDeviceGetAttribute") ||
      !check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute") ||
      !check(cudaFuncSetAttribute(zero_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
             "cudaFuncSetAttribute")) {
    return 1;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool told = false;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 64; ++i) zero_shared<<<2 * sms, 1024, optin>>>(optin / 4);
    if (!check(cudaGetLastError(), "the launch") ||
        !check(cudaDeviceSynchronize(), "the kernels")) {
      return 1;
    }
    if (!told) std::printf("ready\n"), std::fflush(stdout), told = true;
  }
  return 0;
}
