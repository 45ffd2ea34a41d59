// The least a GPU test process does: create its CUDA context, launch one kernel, wait for it.
// bench/context_rate.py starts many of these at once to measure how many such processes one
// GPU can start per second, the ceiling of the grader's test throughput. With --phases it
// prints how long each step took, to see which one that ceiling is made of.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "kit/cuda_check.hpp"

namespace {
__global__ void touch(int* value) { *value = 1; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  const bool phases = argc > 1 && std::strcmp(argv[1], "--phases") == 0;
  try {
    auto start = std::chrono::steady_clock::now();
    int count = 0;
    KIT_CUDA_CHECK(cudaGetDeviceCount(&count));  // loads the driver, no context yet
    const double init = seconds_since(start);
    start = std::chrono::steady_clock::now();
    int* value = nullptr;
    KIT_CUDA_CHECK(cudaMalloc(&value, sizeof(int)));  // creates the context
    const double context = seconds_since(start);
    start = std::chrono::steady_clock::now();
    touch<<<1, 1>>>(value);
    KIT_CHECK_LAUNCH();
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const double kernel = seconds_since(start);
    KIT_CUDA_CHECK(cudaFree(value));
    if (phases) {
      std::printf("driver %.3f s, context %.3f s, first kernel %.3f s\n", init, context, kernel);
    }
    return 0;
  } catch (const kit::CudaError& error) {
    std::fprintf(stderr, "context_probe: %s\n", error.what());
    return 1;
  }
}
