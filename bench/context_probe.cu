// The least a GPU test process does: create its CUDA context, launch one kernel, wait for it.
// bench/context_rate.py starts many of these at once to measure how many such processes one
// GPU can start per second, the ceiling of the grader's test throughput.
#include <cstdio>

#include "kit/cuda_check.hpp"

namespace {
__global__ void touch(int* value) { *value = 1; }
}  // namespace

int main() {
  try {
    int* value = nullptr;
    KIT_CUDA_CHECK(cudaMalloc(&value, sizeof(int)));  // creates the context
    touch<<<1, 1>>>(value);
    KIT_CHECK_LAUNCH();
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    KIT_CUDA_CHECK(cudaFree(value));
    return 0;
  } catch (const kit::CudaError& error) {
    std::fprintf(stderr, "context_probe: %s\n", error.what());
    return 1;
  }
}
