// kit::gpu_status(), the first CUDA call of every [gpu] test (KIT_REQUIRE_GPU).
#include <cuda_runtime_api.h>

#include <catch2/catch_test_macros.hpp>

#include "kit/testing.hpp"

TEST_CASE("a test process waits for its GPU asleep and leaves its CPU core to the other processes",
          "[common][gpu]") {
  KIT_REQUIRE_GPU();
  unsigned int flags = 0;
  REQUIRE(cudaGetDeviceFlags(&flags) == cudaSuccess);
  CAPTURE(flags);
  // Spinning (CUDA's default here) would take a core for every test process the grader runs at
  // once on the GPU, from the compiles and sanitizers beside them.
  CHECK((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync);
  CHECK(cudaGetLastError() == cudaSuccess);
}
